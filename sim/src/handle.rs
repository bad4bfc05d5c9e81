//! `Handle`: what tasks hold to reach the engine (time, names, spawning, parking, accounts,
//! the trace). Its futures are in `futures` (sleep, delay, point, park) and `cpu`.

use crate::core::Core;
use crate::task::{ClassId, PointId, ResId, TaskId, TaskState};
use crate::time::Nanos;
use crate::trace::{TraceKind, TraceRecord};
use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::rc::Rc;

/// A cheap, clonable handle tasks use to reach the engine: time, sleeping, points, spawning.
#[derive(Clone)]
pub struct Handle {
    pub(crate) core: Rc<RefCell<Core>>,
}

impl Handle {
    #[inline]
    pub(crate) fn core(&self) -> RefMut<'_, Core> {
        self.core.borrow_mut()
    }

    /// Current virtual time.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.core.borrow().now
    }

    /// The running task.
    #[inline]
    pub fn current(&self) -> TaskId {
        self.core.borrow().current
    }

    /// Name of a task.
    pub fn task_name(&self, t: TaskId) -> Rc<str> {
        self.core.borrow().tasks[t as usize].name.clone()
    }

    /// Interns a wait-class name ("tree_log_mutex", "device:service", …).
    pub fn class(&self, name: &str) -> ClassId {
        self.core().classes.intern(name) as ClassId
    }

    /// Interns a named-point label.
    pub fn point_id(&self, label: &str) -> PointId {
        self.core().points.intern(label)
    }

    /// Interns a static named-point label (no allocation).
    pub fn point_id_static(&self, label: &'static str) -> PointId {
        self.core().points.intern_static(label)
    }

    /// Interns a static wait class (no allocation).
    pub fn class_static(&self, name: &'static str) -> ClassId {
        self.core().classes.intern_static(name) as ClassId
    }

    /// Resumes a parked task at the current instant (no effect unless it is parked).
    pub fn unpark(&self, t: TaskId) {
        let mut c = self.core();
        if matches!(c.tasks[t as usize].state, TaskState::Parked(_)) {
            c.wake(t);
            let cur = c.current;
            c.record(cur, TraceKind::Unpark, u64::from(t));
        }
    }

    /// Changes the class that the rest of a parked task's wait is attributed to.
    pub fn reclassify(&self, t: TaskId, class: ClassId) {
        self.core().reclassify(t, class);
    }

    /// Whether task `t` is parked.
    pub fn is_parked(&self, t: TaskId) -> bool {
        matches!(
            self.core.borrow().tasks[t as usize].state,
            TaskState::Parked(_)
        )
    }

    /// Starts a new task at the current instant.
    pub fn spawn(&self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let mut c = self.core();
        let id = c.register(name, false);
        c.spawned.push((id, Box::pin(fut)));
        id
    }

    /// Starts a daemon: a task whose being blocked at the end is not a deadlock and that
    /// does not keep the run alive.
    pub fn spawn_daemon(&self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let mut c = self.core();
        let id = c.register(name, true);
        c.spawned.push((id, Box::pin(fut)));
        id
    }

    /// Starts a helper: a daemon of the harness (a progress tick, a trace drain, a timer
    /// that ends the run) rather than of the simulated system; traces leave it out.
    pub fn spawn_helper(&self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.spawn_daemon(name, fut);
        self.core().tasks[id as usize].helper = true;
        id
    }

    /// Appends to `names` the task, class, resource and point names added since it was
    /// last brought up to date (names are never removed, so ids stay valid).
    pub fn update_names(&self, names: &mut crate::trace::TraceNames) {
        self.core.borrow().update_names(names);
    }

    /// Tells exploring schedulers how many steps task `t` has left (0: unknown).
    pub fn set_remaining(&self, t: TaskId, steps: u32) {
        self.core().tasks[t as usize].remaining = steps;
    }

    /// Ends the run after the current poll, whatever is still pending.
    pub fn stop(&self) {
        let mut c = self.core();
        c.stop = true;
        c.slow = true;
    }

    /// Adds a model-defined mark to the trace (and its hash).
    pub fn mark(&self, label: PointId, arg: u64) {
        let mut c = self.core();
        let cur = c.current;
        c.record(cur, TraceKind::Mark(label), arg);
    }

    /// Whether trace records are kept (a trace is being written): what only a trace shows
    /// need not be computed otherwise.
    pub fn tracing(&self) -> bool {
        self.core.borrow().trace.keep
    }

    /// Interns a model counter's name for `value` (apart from points: no point id moves).
    pub fn value_id_static(&self, name: &'static str) -> crate::task::ValueId {
        self.core().values.intern_static(name)
    }

    /// Logs a model-defined counter's value at this instant for the trace (not hashed, so
    /// a traced run keeps its hash; nothing when no trace is kept).
    pub fn value(&self, label: crate::task::ValueId, value: u64) {
        let mut c = self.core();
        let (now, cur) = (c.now, c.current);
        c.trace.log_value(now, cur, label, value);
    }

    /// The last `n` kept trace records, rendered (empty unless the trace is kept).
    pub fn recent_trace(&self, n: usize) -> Vec<String> {
        let c = self.core.borrow();
        let recs: Vec<&crate::trace::TraceRecord> = c
            .trace
            .records
            .iter()
            .rev()
            .filter(|r| !matches!(r.kind, TraceKind::Value(_)))
            .take(n)
            .collect();
        recs.iter().rev().map(|r| c.render(r)).collect()
    }

    /// Copies task `t`'s waits per class (index = class id) into `out`, reusing its buffer.
    pub fn account_into(&self, t: TaskId, out: &mut Vec<Nanos>) {
        let c = self.core.borrow();
        out.clear();
        out.extend_from_slice(&c.tasks[t as usize].acct);
    }

    /// Calls `f` with task `t`'s waits per class (index = class id), without copying them.
    /// `f` may read the engine (`now`, names) but must not change it.
    pub fn with_account<R>(&self, t: TaskId, f: impl FnOnce(&[Nanos]) -> R) -> R {
        let c = self.core.borrow();
        f(&c.tasks[t as usize].acct)
    }

    /// Name of a wait class.
    pub fn class_name(&self, c: ClassId) -> String {
        self.core.borrow().classes.names[c as usize].to_string()
    }

    /// Name of a named point or mark label.
    pub fn point_name(&self, p: PointId) -> String {
        self.core.borrow().points.names[p as usize].to_string()
    }

    /// Name of a lock or wait queue.
    pub fn resource_name(&self, r: ResId) -> String {
        self.core.borrow().resources[r as usize].name.to_string()
    }

    /// Moves the kept trace records into `out` (streaming a long run's trace to disk).
    pub fn drain_trace(&self, out: &mut Vec<TraceRecord>) {
        out.append(&mut self.core().trace.records);
    }

    /// Nanoseconds task `t` has waited so far, per wait class (index = class id).
    pub fn account(&self, t: TaskId) -> Vec<Nanos> {
        self.core.borrow().tasks[t as usize].acct.clone()
    }

    /// Nanoseconds task `t` has waited in `class` so far.
    pub fn account_of(&self, t: TaskId, class: ClassId) -> Nanos {
        self.core.borrow().tasks[t as usize]
            .acct
            .get(class as usize)
            .copied()
            .unwrap_or(0)
    }
}
