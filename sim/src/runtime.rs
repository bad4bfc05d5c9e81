//! The executor: virtual clock, event queue, tasks, wait accounting and the run loop.
//!
//! Tasks are `async` blocks polled by a single-threaded loop. A task is polled only when the
//! one thing it waits for has happened (timer fired, lock handed over, permit granted,
//! queue notified, parked task unparked, paused point released), so every primitive's
//! future returns `Pending` once and `Ready` on its next poll. Wakers are not used: the engine
//! itself knows which task to resume, which keeps the per-event path free of allocation and
//! reference counting.
//!
//! Event order is (time, insertion sequence): timers live in a `TimerQueue` (a 4-ary heap
//! of packed keys that pops same-instant timers in insertion order); wake-ups at the current
//! instant go to a FIFO ready queue, which runs after the timers of the same instant (those
//! were inserted earlier, so they have smaller sequence numbers).

use crate::error::SimError;
use crate::queue::TimerQueue;
use crate::ring::Ring;
use crate::sched::{ChoiceView, Fifo, PausedTask, Pick, Scheduler};
use crate::time::Nanos;
use crate::trace::{Trace, TraceKind, TraceRecord};
use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Index of a simulated task.
pub type TaskId = u32;
/// Index of a resource (mutex, semaphore, wait queue).
pub type ResId = u32;
/// Index of a wait class: the name a wait is attributed to ("cpu", "tree_log_mutex", …).
pub type ClassId = u16;
/// Index of a named point label.
pub type PointId = u32;

const TASK_BITS: u32 = 24;

/// Wait class 0: CPU time spent by `Handle::cpu`.
pub const CLASS_CPU: ClassId = 0;
/// Wait class 1: plain sleeps (`Handle::sleep`, think time).
pub const CLASS_SLEEP: ClassId = 1;
/// Wait class 2: held at a named point by the scheduler.
pub const CLASS_POINT: ClassId = 2;

type BoxFuture = Pin<Box<dyn Future<Output = ()>>>;

/// What a task is doing, as the engine sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    /// In the heap or the ready queue, or being polled.
    Ready,
    /// Waiting for a timer; the time is attributed to the class.
    Sleeping(ClassId),
    /// Waiting for a resource.
    Blocked(ResId),
    /// Parked until another task unparks it; attributed to the class.
    Parked(ClassId),
    /// Paused at a named point until the scheduler releases it.
    Paused(PointId),
    /// Finished.
    Done,
}

pub(crate) struct Task {
    pub(crate) name: Rc<str>,
    pub(crate) daemon: bool,
    pub(crate) state: TaskState,
    pub(crate) wait_since: Nanos,
    /// Nanoseconds spent waiting, per wait class.
    pub(crate) acct: Vec<Nanos>,
    /// The model's estimate of the steps the task has left (0: unknown).
    pub(crate) remaining: u32,
    /// While queued for a core (`Cpu`): the quantum to run once granted, which the run loop
    /// starts itself when it picks the task (0: none). See `dispatch`.
    pub(crate) cpu_q: Nanos,
}

/// What kind of primitive a resource is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    /// A mutex with FIFO hand-off.
    Mutex,
    /// A counting semaphore with FIFO grants.
    Semaphore,
    /// A wait queue (condition variable).
    WaitQueue,
}

pub(crate) enum ResState {
    Mutex {
        owner: Option<TaskId>,
        waiters: Ring<TaskId>,
    },
    Semaphore {
        permits: u64,
        capacity: u64,
        waiters: Ring<(TaskId, u64)>,
    },
    WaitQueue {
        waiters: Ring<TaskId>,
    },
}

pub(crate) struct Resource {
    pub(crate) name: Rc<str>,
    pub(crate) class: ClassId,
    pub(crate) acquisitions: u64,
    pub(crate) waits: u64,
    pub(crate) wait_ns: Nanos,
    pub(crate) max_wait_ns: Nanos,
    pub(crate) state: ResState,
    /// Live `Mutex` values naming it (counted for recyclable resources only).
    pub(crate) handles: u32,
    /// Whether its slot goes back to `Core::free` when its last handle drops.
    pub(crate) recyclable: bool,
}

/// Counters of one resource after (or during) a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceStats {
    /// The resource's name.
    pub name: String,
    /// Mutex, semaphore or wait queue.
    pub kind: ResourceKind,
    /// Grants (lock acquisitions, permits granted, wake-ups delivered).
    pub acquisitions: u64,
    /// Grants that had to wait.
    pub waits: u64,
    /// Total nanoseconds waited.
    pub wait_ns: Nanos,
    /// Longest single wait.
    pub max_wait_ns: Nanos,
}

/// A name table with stable, insertion-ordered ids.
#[derive(Default)]
pub(crate) struct Interner {
    pub(crate) names: Vec<Label>,
}

/// An interned name: borrowed when static, so interning model labels allocates nothing.
pub(crate) type Label = std::borrow::Cow<'static, str>;

impl Interner {
    /// The id of `name`; tables are small (tens of labels), so a scan beats a tree.
    fn find(&self, name: &str) -> Option<u32> {
        self.names
            .iter()
            .position(|n| n.len() == name.len() && n.as_ref() == name)
            .map(|i| i as u32)
    }

    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        match self.find(name) {
            Some(id) => id,
            None => {
                self.names.push(Label::Owned(name.to_string()));
                self.names.len() as u32 - 1
            }
        }
    }

    pub(crate) fn intern_static(&mut self, name: &'static str) -> u32 {
        match self.find(name) {
            Some(id) => id,
            None => {
                self.names.push(Label::Borrowed(name));
                self.names.len() as u32 - 1
            }
        }
    }
}

/// The engine state shared by the run loop and every primitive.
pub(crate) struct Core {
    /// The CPU cores `Handle::cpu` runs on, as (semaphore resource, round-robin quantum);
    /// None = unlimited CPU (a task's CPU time never waits).
    pub(crate) cpus: Option<(ResId, Nanos)>,
    pub(crate) now: Nanos,
    heap: TimerQueue,
    pub(crate) ready: Ring<TaskId>,
    pub(crate) tasks: Vec<Task>,
    live: usize,
    pub(crate) current: TaskId,
    pub(crate) resources: Vec<Resource>,
    /// Idle recyclable resources by class, for `add_recyclable` to reuse (a model that makes
    /// one lock per object keeps the engine's memory bounded by the objects alive).
    free: Vec<Vec<ResId>>,
    pub(crate) classes: Interner,
    pub(crate) points: Interner,
    pub(crate) paused: Vec<PausedTask>,
    /// Points released so far, in order (kept with the trace log only).
    released: Vec<(TaskId, PointId)>,
    pub(crate) pauses_at_points: bool,
    /// Whether a named point yields (FIFO) when no scheduler pauses there.
    points_yield: bool,
    /// The scheduler chooses among all tasks runnable at an instant (exploration).
    pub(crate) explores_ties: bool,
    spawned: Vec<(TaskId, BoxFuture)>,
    pub(crate) trace: Trace,
    /// Whether waits are added to the tasks' per-class accounts (`Sim::set_wait_accounting`).
    pub(crate) accounting: bool,
    stop: bool,
    /// Whether the run loop must take its general path: something was spawned, a task
    /// stopped the run, the scheduler explores, a task is paused at a point, or no live task
    /// is left. Set wherever one of these may become true; recomputed by the run loop.
    slow: bool,
    /// Set while the simulation is dropped: releases by dropped guards are ignored.
    pub(crate) tearing_down: bool,
    /// Tasks with a quantum for the run loop to start (`Task::cpu_q` set): while 0, a
    /// dispatch does not look at the task.
    pub(crate) cpu_starts: u32,
    dispatches: u64,
}

impl Core {
    fn new() -> Self {
        let mut classes = Interner::default();
        classes.intern("cpu");
        classes.intern("sleep");
        classes.intern("point");
        Core {
            now: 0,

            heap: TimerQueue::new(),
            ready: Ring::new(),
            tasks: Vec::new(),
            live: 0,
            current: 0,
            resources: Vec::new(),
            free: Vec::new(),
            classes,
            points: Interner::default(),
            paused: Vec::new(),
            released: Vec::new(),
            pauses_at_points: false,
            points_yield: true,
            explores_ties: false,
            spawned: Vec::new(),
            trace: Trace::default(),
            accounting: true,
            stop: false,
            slow: true,
            tearing_down: false,
            cpu_starts: 0,
            cpus: None,
            dispatches: 0,
        }
    }

    /// Remembers a released point (only when the trace log is kept).
    #[inline]
    fn note_release(&mut self, p: PausedTask) {
        if self.trace.keep {
            self.released.push((p.task, p.point));
        }
    }

    #[inline]
    pub(crate) fn record(&mut self, task: TaskId, kind: TraceKind, arg: u64) {
        self.trace.record(self.now, task, kind, arg);
    }

    /// Schedules `task` to resume at `at` (> now) through the heap.
    #[inline]
    pub(crate) fn push_timer(&mut self, at: Nanos, task: TaskId) {
        self.heap.push(self.now, at, task);
    }

    /// Puts the current task to sleep for `d`, attributing the time to `class`.
    #[inline(always)]
    pub(crate) fn sleep_current(&mut self, d: Nanos, class: ClassId) {
        let t = self.current;
        let now = self.now;
        let task = &mut self.tasks[t as usize];
        task.state = TaskState::Sleeping(class);
        task.wait_since = now;
        if d == 0 {
            self.ready.push_back(t);
        } else {
            self.push_timer(now + d, t);
        }
    }

    /// `sleep_current` with the trace record of a delay (`Handle::delay`, `Handle::cpu`).
    #[inline(always)]
    pub(crate) fn delay_current(&mut self, d: Nanos, class: ClassId) {
        let cur = self.current;
        self.record(cur, TraceKind::Sleep(class), d);
        self.sleep_current(d, class);
    }

    /// Marks the current task as waiting (state set by the caller) from now.
    #[inline]
    pub(crate) fn block_current(&mut self, state: TaskState) -> TaskId {
        let t = self.current;
        let task = &mut self.tasks[t as usize];
        task.state = state;
        task.wait_since = self.now;
        t
    }

    /// Closes the current wait of `t`, adding its duration to the task's account of `class`.
    #[inline]
    fn close_wait(&mut self, t: TaskId, class: ClassId) -> Nanos {
        close_wait(
            &mut self.tasks[t as usize],
            self.now,
            self.accounting,
            class,
        )
    }

    /// Makes a waiting task runnable at the current instant, accounting its wait.
    #[inline]
    pub(crate) fn wake(&mut self, t: TaskId) -> Nanos {
        let class = match self.tasks[t as usize].state {
            TaskState::Sleeping(c) | TaskState::Parked(c) => c,
            TaskState::Blocked(r) => self.resources[r as usize].class,
            TaskState::Paused(_) => CLASS_POINT,
            TaskState::Ready | TaskState::Done => {
                debug_assert!(false, "waking a task that is not waiting");
                return 0;
            }
        };
        wake_task(
            &mut self.tasks,
            &mut self.ready,
            self.now,
            self.accounting,
            t,
            class,
        )
    }

    /// Re-attributes the rest of a parked task's wait to another class (e.g. a device
    /// request leaving the device queue and entering service).
    pub(crate) fn reclassify(&mut self, t: TaskId, class: ClassId) {
        if let TaskState::Parked(old) = self.tasks[t as usize].state {
            self.close_wait(t, old);
            self.tasks[t as usize].state = TaskState::Parked(class);
        }
    }

    fn describe_wait(&self, t: TaskId) -> String {
        let task = &self.tasks[t as usize];
        let who = |o: TaskId| format!("'{}'", self.tasks[o as usize].name);
        let what = match task.state {
            TaskState::Blocked(r) => {
                let res = &self.resources[r as usize];
                match &res.state {
                    ResState::Mutex { owner, .. } => format!(
                        "mutex '{}' held by {}",
                        res.name,
                        owner.map_or("nobody".to_string(), who)
                    ),
                    ResState::Semaphore {
                        permits, capacity, ..
                    } => format!(
                        "semaphore '{}' ({permits} of {capacity} permits free)",
                        res.name
                    ),
                    ResState::WaitQueue { .. } => {
                        format!("wait queue '{}' (nobody left to notify it)", res.name)
                    }
                }
            }
            TaskState::Parked(c) => format!(
                "'{}' (parked; nobody left to unpark it)",
                self.classes.names[c as usize]
            ),
            TaskState::Paused(p) => format!("release at point '{}'", self.points.names[p as usize]),
            TaskState::Sleeping(_) => "a timer".to_string(),
            TaskState::Ready | TaskState::Done => "nothing".to_string(),
        };
        format!(
            "task '{}'{} waits for {what}",
            task.name,
            if task.daemon { " (daemon)" } else { "" }
        )
    }

    fn register(&mut self, name: &str, daemon: bool) -> TaskId {
        let id = self.tasks.len() as TaskId;
        assert!(id < (1 << TASK_BITS), "too many tasks");
        self.tasks.push(Task {
            name: Rc::from(name),
            daemon,
            state: TaskState::Ready,
            wait_since: self.now,
            acct: Vec::new(),
            remaining: 0,
            cpu_q: 0,
        });
        if !daemon {
            self.live += 1;
        }
        self.ready.push_back(id);
        self.slow = true;
        self.record(id, TraceKind::Spawn, 0);
        id
    }

    pub(crate) fn add_resource(&mut self, name: &str, class_name: &str, state: ResState) -> ResId {
        let class = self.classes.intern(class_name) as ClassId;
        let id = self.resources.len() as ResId;
        self.resources.push(Resource {
            name: Rc::from(name),
            class,
            acquisitions: 0,
            waits: 0,
            wait_ns: 0,
            max_wait_ns: 0,
            state,
            handles: 1,
            recyclable: false,
        });
        id
    }

    /// A resource named after its class whose slot is reused once its last handle drops:
    /// an idle slot of the same class if there is one (its counters keep adding up, so
    /// per-name sums are those of one resource per object), else a new one.
    pub(crate) fn add_recyclable(&mut self, class_name: &str, state: ResState) -> ResId {
        let class = self.classes.intern(class_name) as ClassId;
        if let Some(id) = self.free.get_mut(class as usize).and_then(Vec::pop) {
            let r = &mut self.resources[id as usize];
            debug_assert!(r.recyclable && r.handles == 0 && &*r.name == class_name);
            r.state = state;
            r.handles = 1;
            return id;
        }
        let id = self.add_resource(class_name, class_name, state);
        self.resources[id as usize].recyclable = true;
        id
    }

    /// Counts one more handle of recyclable resource `r`.
    pub(crate) fn hold_handle(&mut self, r: ResId) {
        let res = &mut self.resources[r as usize];
        if res.recyclable {
            res.handles += 1;
        }
    }

    /// Drops one handle of `r`; the last one of a recyclable resource frees its slot.
    pub(crate) fn drop_handle(&mut self, r: ResId) {
        let res = &mut self.resources[r as usize];
        if !res.recyclable {
            return;
        }
        assert!(res.handles > 0, "resource handle count underflow");
        res.handles -= 1;
        if res.handles > 0 {
            return;
        }
        // No handle left means no task can hold it or wait on it (both borrow a handle).
        assert!(res.is_idle(), "a recyclable resource dropped while in use");
        let class = res.class as usize;
        if self.free.len() <= class {
            self.free.resize_with(class + 1, Vec::new);
        }
        self.free[class].push(r);
    }

    /// Records a grant of `r` to `t` after `waited` ns (0 = uncontended).
    #[inline]
    pub(crate) fn note_grant(&mut self, r: ResId, waited: Option<Nanos>) {
        self.resources[r as usize].note_grant(waited);
    }
}

/// Closes a task's current wait at `now`: its length, added to the task's account of `class`
/// when `accounting` is on.
#[inline(always)]
fn close_wait(task: &mut Task, now: Nanos, accounting: bool, class: ClassId) -> Nanos {
    let dt = now - task.wait_since;
    task.wait_since = now;
    if accounting {
        match task.acct.get_mut(class as usize) {
            Some(a) => *a += dt,
            None => grow_account(&mut task.acct, class, dt),
        }
    }
    dt
}

/// First wait of a task in a class beyond its account's length.
#[cold]
#[inline(never)]
fn grow_account(acct: &mut Vec<Nanos>, class: ClassId, dt: Nanos) {
    acct.resize(class as usize + 1, 0);
    acct[class as usize] += dt;
}

/// Makes waiting task `t` runnable at `now` (FIFO after the wake-ups before it), closing
/// its wait in `class`; takes the core's fields apart so primitives can call it while they
/// hold their resource.
#[inline(always)]
pub(crate) fn wake_task(
    tasks: &mut [Task],
    ready: &mut Ring<TaskId>,
    now: Nanos,
    accounting: bool,
    t: TaskId,
    class: ClassId,
) -> Nanos {
    let task = &mut tasks[t as usize];
    let dt = close_wait(task, now, accounting, class);
    task.state = TaskState::Ready;
    ready.push_back(t);
    dt
}

impl Resource {
    /// Whether no task holds it or waits on it.
    fn is_idle(&self) -> bool {
        match &self.state {
            ResState::Mutex { owner, waiters } => owner.is_none() && waiters.is_empty(),
            ResState::Semaphore {
                permits,
                capacity,
                waiters,
            } => permits == capacity && waiters.is_empty(),
            ResState::WaitQueue { waiters } => waiters.is_empty(),
        }
    }

    /// Records a grant after `waited` ns (None = uncontended).
    #[inline(always)]
    pub(crate) fn note_grant(&mut self, waited: Option<Nanos>) {
        self.acquisitions += 1;
        if let Some(w) = waited {
            self.waits += 1;
            self.wait_ns += w;
            self.max_wait_ns = self.max_wait_ns.max(w);
        }
    }
}

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

    /// Sleeps for `d` of virtual time, attributed to plain sleep (think time).
    #[inline]
    pub fn sleep(&self, d: Nanos) -> Delay<'_> {
        self.delay(d, CLASS_SLEEP)
    }

    /// Spends `d` of CPU time (the task is busy, attributed to "cpu"). With `set_cpus`, the
    /// task first waits for a free core ("cpu_wait", FIFO run queue) and runs at most one
    /// quantum before queueing again (round robin).
    #[inline]
    pub fn cpu(&self, d: Nanos) -> Cpu<'_> {
        Cpu {
            h: self,
            left: d,
            q: 0,
            id: 0,
            quantum: 0,
            task: 0,
            step: CpuStep::Start,
        }
    }

    /// Takes a core and keeps it until the returned guard drops, for work that is not
    /// descheduled (a critical section, and the waiters spinning for it, which burn their
    /// core while they wait); waits for the core are "cpu_wait". None without `set_cpus`
    /// (CPU time is not contended).
    pub async fn take_core(&self) -> Option<HeldCore> {
        let id = self.core().cpus?.0;
        let s = crate::sync::Semaphore {
            h: self.clone(),
            id,
        };
        s.acquire().await.forget();
        Some(HeldCore(s))
    }

    /// Spends `d` of CPU time on a core the task holds (`take_core`), or anywhere without
    /// `set_cpus`: attributed to "cpu", never queued.
    #[inline]
    pub fn busy(&self, d: Nanos) -> Delay<'_> {
        self.delay(d, CLASS_CPU)
    }

    /// Makes CPU time contended: `cores` cores shared round-robin with time slices of
    /// `quantum`; waits for a core are attributed to "cpu_wait". Call before spawning tasks.
    pub fn set_cpus(&self, cores: u64, quantum: Nanos) {
        let s = crate::sync::Semaphore::with_class(self, "cpu", "cpu_wait", cores.max(1));
        self.core().cpus = Some((s.id, quantum.max(1)));
    }

    /// Waits for `d`, attributing the time to `class`.
    #[inline]
    pub fn delay(&self, d: Nanos, class: ClassId) -> Delay<'_> {
        Delay {
            h: self,
            d,
            class,
            started: false,
        }
    }

    /// Announces that the current task reached a labelled step; the scheduler may hold it
    /// here (under the default FIFO scheduler this is a plain yield).
    pub fn point(&self, label: PointId) -> Point<'_> {
        Point {
            h: self,
            label,
            started: false,
        }
    }

    /// Parks the current task until some other task calls `unpark` on it; the wait is
    /// attributed to `class`. Use it for completions (e.g. an I/O request).
    pub fn park(&self, class: ClassId) -> Park<'_> {
        Park {
            h: self,
            class,
            started: false,
        }
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

    /// The last `n` kept trace records, rendered (empty unless the trace is kept).
    pub fn recent_trace(&self, n: usize) -> Vec<String> {
        let c = self.core.borrow();
        let recs = &c.trace.records;
        recs[recs.len().saturating_sub(n)..]
            .iter()
            .map(|r| crate::trace::render(&c, r))
            .collect()
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

/// Future of `Handle::sleep`, `cpu` and `delay`.
pub struct Delay<'a> {
    h: &'a Handle,
    d: Nanos,
    class: ClassId,
    started: bool,
}

impl Future for Delay<'_> {
    type Output = ();
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.started {
            return Poll::Ready(());
        }
        self.started = true;
        self.h.core().delay_current(self.d, self.class);
        Poll::Pending
    }
}

/// A core taken by `Handle::take_core`; given back when dropped.
pub struct HeldCore(crate::sync::Semaphore);

impl Drop for HeldCore {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Where a `Cpu` future is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CpuStep {
    /// Not polled yet.
    Start,
    /// Unlimited CPU: sleeping the whole time.
    Sleeping,
    /// Queued for a core.
    Queued,
    /// On a core for one quantum.
    Running,
    /// Finished.
    Done,
}

/// Future of `Handle::cpu`: with cores, per quantum it takes a core (or queues for one),
/// sleeps the quantum and gives the core back, each step in one borrow of the engine and
/// with the same trace records as `Semaphore::acquire`, `Handle::delay` and
/// `Semaphore::release` would make.
pub struct Cpu<'a> {
    h: &'a Handle,
    /// CPU time not yet run.
    left: Nanos,
    /// The quantum being run.
    q: Nanos,
    /// The cores' semaphore and quantum (with `set_cpus`).
    id: ResId,
    quantum: Nanos,
    /// The task running this future (set when it first takes or queues for a core).
    task: TaskId,
    step: CpuStep,
}

impl Cpu<'_> {
    /// Takes a core for the next quantum and sleeps it, or queues for one.
    #[inline(always)]
    fn next_quantum(&mut self, c: &mut Core) -> Poll<()> {
        let q = self.left.min(self.quantum);
        self.q = q;
        if crate::sync::sem_acquire(c, self.id, 1) {
            self.step = CpuStep::Running;
            c.delay_current(q, CLASS_CPU);
        } else {
            // Granted later: the run loop starts this quantum when it picks the task (the
            // same records and timer as the `delay_current` above would make in a resumption,
            // without polling the task's futures down to here), so the next poll is the
            // quantum's end.
            c.tasks[self.task as usize].cpu_q = q;
            c.cpu_starts += 1;
            self.step = CpuStep::Queued;
        }
        Poll::Pending
    }

    /// A task dropped while queued holds a core only once the run loop started its quantum.
    #[cold]
    #[inline(never)]
    fn give_back_core_if_started(&mut self) {
        let started = self.h.core.borrow().tasks[self.task as usize].cpu_q == 0;
        if started {
            self.give_back_core();
        }
    }

    /// A task dropped while on a core gives it back (ignored while the simulation is
    /// dropped), as the permit of `Semaphore::acquire` would.
    #[cold]
    #[inline(never)]
    fn give_back_core(&mut self) {
        let mut c = self.h.core();
        if !c.tearing_down {
            crate::sync::sem_release(&mut c, self.id, 1);
        }
    }
}

impl Future for Cpu<'_> {
    type Output = ();
    #[inline]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        match this.step {
            CpuStep::Start => {
                let mut g = this.h.core();
                let c: &mut Core = &mut g;
                match c.cpus {
                    None => {
                        this.step = CpuStep::Sleeping;
                        c.delay_current(this.left, CLASS_CPU);
                        Poll::Pending
                    }
                    Some(_) if this.left == 0 => {
                        this.step = CpuStep::Done;
                        Poll::Ready(())
                    }
                    Some((id, quantum)) => {
                        this.id = id;
                        this.quantum = quantum;
                        this.task = c.current;
                        this.next_quantum(c)
                    }
                }
            }
            CpuStep::Queued | CpuStep::Running => {
                let mut g = this.h.core();
                let c: &mut Core = &mut g;
                debug_assert_eq!(c.tasks[c.current as usize].cpu_q, 0, "quantum not started");
                crate::sync::sem_release(c, this.id, 1);
                this.left -= this.q;
                if this.left == 0 {
                    this.step = CpuStep::Done;
                    Poll::Ready(())
                } else {
                    this.next_quantum(c)
                }
            }
            CpuStep::Sleeping | CpuStep::Done => {
                this.step = CpuStep::Done;
                Poll::Ready(())
            }
        }
    }
}

impl Drop for Cpu<'_> {
    #[inline]
    fn drop(&mut self) {
        match self.step {
            CpuStep::Running => self.give_back_core(),
            CpuStep::Queued => self.give_back_core_if_started(),
            _ => {}
        }
    }
}

/// Future of `Handle::point`.
pub struct Point<'a> {
    h: &'a Handle,
    label: PointId,
    started: bool,
}

impl Future for Point<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.started {
            return Poll::Ready(());
        }
        self.started = true;
        let mut c = self.h.core();
        let cur = c.current;
        c.record(cur, TraceKind::Point(self.label), 0);
        if !c.pauses_at_points && !c.points_yield {
            return Poll::Ready(());
        }
        if c.pauses_at_points {
            let t = c.block_current(TaskState::Paused(self.label));
            let since = c.now;
            c.slow = true;
            c.paused.push(PausedTask {
                task: t,
                point: self.label,
                since,
            });
        } else {
            c.sleep_current(0, CLASS_POINT);
        }
        Poll::Pending
    }
}

/// Future of `Handle::park`.
pub struct Park<'a> {
    h: &'a Handle,
    class: ClassId,
    started: bool,
}

impl Future for Park<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.started {
            return Poll::Ready(());
        }
        self.started = true;
        let mut c = self.h.core();
        let t = c.block_current(TaskState::Parked(self.class));
        c.record(t, TraceKind::Park(self.class), 0);
        Poll::Pending
    }
}

/// How a run ended, with its counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// Virtual time at the end.
    pub end: Nanos,
    /// Task resumptions performed.
    pub dispatches: u64,
    /// 64-bit hash of the event sequence.
    pub trace_hash: u64,
    /// Whether a task called `Handle::stop`.
    pub stopped: bool,
}

/// A simulation: owns the tasks and runs them to completion in virtual time.
pub struct Sim {
    handle: Handle,
    futures: Vec<Option<BoxFuture>>,
    scheduler: Box<dyn Scheduler>,
    limit: Nanos,
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Unfinished tasks may hold guards; their drops must not touch engine state.
        self.handle.core().tearing_down = true;
        self.futures.clear();
    }
}

impl Default for Sim {
    fn default() -> Self {
        Self::new()
    }
}

impl Sim {
    /// An empty simulation at t=0 with the FIFO scheduler and no time limit.
    pub fn new() -> Self {
        Sim {
            handle: Handle {
                core: Rc::new(RefCell::new(Core::new())),
            },
            futures: Vec::new(),
            scheduler: Box::new(Fifo),
            limit: Nanos::MAX,
        }
    }

    /// The handle tasks use; clone it into each task.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Replaces the decision-maker asked at named points.
    pub fn set_scheduler(&mut self, s: Box<dyn Scheduler>) {
        self.handle.core().pauses_at_points = s.pauses_at_points();
        self.handle.core().explores_ties = s.chooses_ties();
        self.handle.core().slow = true;
        self.scheduler = s;
    }

    /// The decision-maker (to ask what it expected and never saw).
    pub fn scheduler(&self) -> &dyn Scheduler {
        self.scheduler.as_ref()
    }

    /// Makes named points plain trace marks that do not yield (long workload runs, where no
    /// scheduler decides at points); the default (true) yields like a zero sleep.
    pub fn set_points_yield(&mut self, on: bool) {
        self.handle.core().points_yield = on;
    }

    /// Stops the run with `SimError::TimeLimit` if virtual time would pass `limit`.
    pub fn set_time_limit(&mut self, limit: Nanos) {
        self.limit = limit;
    }

    /// Turns per-task wait accounts (`Handle::account_of`) on (the default) or off.
    pub fn set_wait_accounting(&mut self, on: bool) {
        // Resource statistics and the trace hash are kept either way.
        self.handle.core().accounting = on;
    }

    /// Keeps every trace record in memory (the hash is computed either way).
    pub fn keep_trace(&mut self, keep: bool) {
        self.handle.core().trace.keep = keep;
    }

    /// The (task, point) names of every released named point, in release order: the
    /// script that replays this run's interleaving (kept with the trace log only).
    pub fn point_releases(&self) -> Vec<(String, String)> {
        let c = self.handle.core.borrow();
        c.released
            .iter()
            .map(|&(t, p)| {
                (
                    c.tasks[t as usize].name.to_string(),
                    c.points.names[p as usize].to_string(),
                )
            })
            .collect()
    }

    /// The trace records kept so far.
    pub fn trace_records(&self) -> Vec<TraceRecord> {
        self.handle.core.borrow().trace.records.clone()
    }

    /// Renders trace records as text lines, with task, class, resource and point names.
    pub fn render_trace(&self) -> Vec<String> {
        let c = self.handle.core.borrow();
        c.trace
            .records
            .iter()
            .map(|r| crate::trace::render(&c, r))
            .collect()
    }

    /// Starts a task at t=0 (or at the current time, between runs).
    pub fn spawn(&mut self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.handle.spawn(name, fut);
        self.adopt_spawned();
        id
    }

    /// Starts a daemon task (see `Handle::spawn_daemon`).
    pub fn spawn_daemon(&mut self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.handle.spawn_daemon(name, fut);
        self.adopt_spawned();
        id
    }

    fn adopt_spawned(&mut self) {
        let mut c = self.handle.core();
        adopt(&mut self.futures, &mut c);
    }

    /// Counters of every resource, in creation order.
    pub fn resource_stats(&self) -> Vec<ResourceStats> {
        let c = self.handle.core.borrow();
        c.resources
            .iter()
            .map(|r| ResourceStats {
                name: r.name.to_string(),
                kind: match r.state {
                    ResState::Mutex { .. } => ResourceKind::Mutex,
                    ResState::Semaphore { .. } => ResourceKind::Semaphore,
                    ResState::WaitQueue { .. } => ResourceKind::WaitQueue,
                },
                acquisitions: r.acquisitions,
                waits: r.waits,
                wait_ns: r.wait_ns,
                max_wait_ns: r.max_wait_ns,
            })
            .collect()
    }

    /// Names of the wait classes, indexed by class id.
    pub fn class_names(&self) -> Vec<String> {
        let c = self.handle.core.borrow();
        c.classes.names.iter().map(|n| n.to_string()).collect()
    }

    /// Runs until every non-daemon task has finished, a task calls `stop`, or an error.
    pub fn run(&mut self) -> Result<RunSummary, SimError> {
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        loop {
            // One borrow of the core per resumption: adopt what the last poll spawned, then
            // pick the next task.
            let t = {
                let mut c = self.handle.core.borrow_mut();
                if c.slow {
                    if !c.spawned.is_empty() {
                        adopt(&mut self.futures, &mut c);
                    }
                    if c.stop {
                        break;
                    }
                    c.slow = c.live == 0
                        || c.explores_ties
                        || !c.paused.is_empty()
                        || c.heap.due_in_heap(c.now);
                }
                match next_task(&mut c, self.scheduler.as_mut(), self.limit)? {
                    // `dispatch` started a granted CPU quantum: nothing to poll.
                    Some(STARTED_QUANTUM) => continue,
                    Some(t) => t,
                    None => break,
                }
            };
            let Some(fut) = self.futures[t as usize].as_mut() else {
                unreachable!("task {t} resumed without a future");
            };
            if fut.as_mut().poll(&mut cx).is_ready() {
                self.futures[t as usize] = None;
                let mut c = self.handle.core();
                c.record(t, TraceKind::Exit, 0);
                let task = &mut c.tasks[t as usize];
                task.state = TaskState::Done;
                if !task.daemon {
                    c.live -= 1;
                    c.slow |= c.live == 0;
                }
            }
        }
        let c = self.handle.core.borrow();
        Ok(RunSummary {
            end: c.now,
            dispatches: c.dispatches,
            trace_hash: c.trace.hash(),
            stopped: c.stop,
        })
    }
}

/// Moves the futures of tasks spawned since the last call into the run loop's table.
#[cold]
fn adopt(futures: &mut Vec<Option<BoxFuture>>, c: &mut Core) {
    for (id, fut) in c.spawned.drain(..) {
        let i = id as usize;
        if futures.len() <= i {
            futures.resize_with(i + 1, || None);
        }
        futures[i] = Some(fut);
    }
}

/// Picks the next task to resume, advancing the clock when the instant is exhausted.
#[inline(always)]
fn next_task(
    c: &mut Core,
    scheduler: &mut dyn Scheduler,
    limit: Nanos,
) -> Result<Option<TaskId>, SimError> {
    // The common case — no exploring scheduler, nobody paused at a point — in the order of
    // `next_task_general`: timers of this instant, then wake-ups, then the next instant.
    // Here every timer due now other than the one just popped is in the queue's tie list
    // (a real pop drains them there; `slow` is kept set while one is left in the heap), so
    // the heap is only looked at when nothing else can run now.
    if !c.slow {
        loop {
            if let Some(t) = c.heap.pop_tie() {
                return Ok(Some(resume_timer(c, t)));
            }
            if let Some(t) = c.ready.pop_front() {
                return Ok(Some(dispatch(c, t)));
            }
            match c.heap.pop_until(limit) {
                Some((at, Some(t))) => {
                    c.now = at;
                    return Ok(Some(resume_timer(c, t)));
                }
                // A long timer re-armed itself; nothing else is due before `at` and the
                // ready queue is empty, so the next pop keeps the order.
                Some((at, None)) => c.now = at,
                None => break, // time limit or deadlock: reported below
            }
        }
    }
    next_task_general(c, scheduler, limit)
}

/// `next_task` in full: exploring schedulers, paused tasks, the time limit, deadlocks.
#[inline(never)]
fn next_task_general(
    c: &mut Core,
    scheduler: &mut dyn Scheduler,
    limit: Nanos,
) -> Result<Option<TaskId>, SimError> {
    loop {
        if c.live == 0 {
            return Ok(None);
        }
        // 0. An exploring scheduler chooses among every task runnable at this instant.
        if c.explores_ties {
            if let Some(t) = explore_next(c, scheduler)? {
                return Ok(Some(t));
            }
            // Nothing runnable now (or every paused task held): advance the clock.
        }
        // 1. Heap events of the current instant (older than anything in `ready`).
        else if c.heap.peek_time() == Some(c.now) {
            match c.heap.pop() {
                Some((_, Some(t))) => return Ok(Some(resume_timer(c, t))),
                _ => continue, // a long timer re-armed itself
            }
        }
        // 2. Wake-ups of the current instant, FIFO.
        if let Some(t) = c.ready.pop_front() {
            return Ok(Some(dispatch(c, t)));
        }
        // 3. Tasks paused at named points: ask the scheduler.
        if !c.paused.is_empty() && !c.explores_ties {
            let next_event = c.heap.peek_time();
            let view = paused_view(c, next_event);
            match scheduler.pick(&view) {
                Pick::Release(i) if i < c.paused.len() => {
                    let p = c.paused.remove(i);
                    c.note_release(p);
                    c.wake(p.task);
                    continue;
                }
                Pick::Release(_) | Pick::Ready(_) | Pick::Hold => {
                    if next_event.is_none() {
                        let reason = scheduler.describe_hold(&view);
                        return Err(stuck(c, reason));
                    }
                }
            }
        }
        // 4. Advance the clock to the next timer.
        if c.explores_ties {
            // Move the clock only: every timer of the new instant becomes a candidate.
            if let Some(at) = c.heap.peek_time() {
                if at > limit {
                    return Err(SimError::TimeLimit {
                        limit,
                        live: c.live,
                    });
                }
                c.now = at;
                continue;
            }
        } else if let Some((at, task)) = c.heap.pop() {
            if at > limit {
                return Err(SimError::TimeLimit {
                    limit,
                    live: c.live,
                });
            }
            c.now = at;
            match task {
                Some(t) => return Ok(Some(resume_timer(c, t))),
                None => continue, // a long timer re-armed itself
            }
        }
        // 5. Nothing can happen any more.
        let blocked: Vec<String> = (0..c.tasks.len() as TaskId)
            .filter(|&t| c.tasks[t as usize].state != TaskState::Done)
            .filter(|&t| !c.tasks[t as usize].daemon)
            .map(|t| c.describe_wait(t))
            .collect();
        return Err(SimError::Deadlock { at: c.now, blocked });
    }
}

/// One choice of an exploring scheduler among the tasks runnable at this instant (timers of
/// the instant, wake-ups and tasks paused at points); None when nothing can run now.
#[inline(never)]
fn explore_next(c: &mut Core, scheduler: &mut dyn Scheduler) -> Result<Option<TaskId>, SimError> {
    while c.heap.peek_time() == Some(c.now) {
        if let Some((_, Some(t))) = c.heap.pop() {
            c.wake(t);
        }
    }
    let n = c.ready.len() + c.paused.len();
    if n > 1 || !c.paused.is_empty() {
        let next_event = c.heap.peek_time();
        let ready: &[TaskId] = c.ready.make_contiguous();
        let view = ChoiceView {
            now: c.now,
            paused: &c.paused,
            ready,
            next_event,
            task_names: &c.tasks,
            point_names: &c.points.names,
        };
        match scheduler.pick(&view) {
            Pick::Ready(i) if i < c.ready.len() => {
                let t = c.ready.remove(i).expect("index checked");
                return Ok(Some(dispatch(c, t)));
            }
            Pick::Release(i) if i < c.paused.len() => {
                let p = c.paused.remove(i);
                c.note_release(p);
                c.wake(p.task);
                let t = c.ready.pop_back().expect("just woken");
                return Ok(Some(dispatch(c, t)));
            }
            _ if !c.ready.is_empty() => {
                let t = c.ready.pop_front().expect("not empty");
                return Ok(Some(dispatch(c, t)));
            }
            _ => {
                if next_event.is_none() {
                    let view = paused_view(c, next_event);
                    let reason = scheduler.describe_hold(&view);
                    return Err(stuck(c, reason));
                }
            }
        }
    } else if let Some(t) = c.ready.pop_front() {
        return Ok(Some(dispatch(c, t)));
    }

    Ok(None)
}

/// What a scheduler sees of the tasks paused at named points (no ready candidates).
fn paused_view(c: &Core, next_event: Option<Nanos>) -> ChoiceView<'_> {
    ChoiceView {
        now: c.now,
        paused: &c.paused,
        ready: &[],
        next_event,
        task_names: &c.tasks,
        point_names: &c.points.names,
    }
}

/// What `dispatch` returns when it ran the task's resumption itself (never a task id: ids
/// have `TASK_BITS` bits).
const STARTED_QUANTUM: TaskId = TaskId::MAX;

/// Resumes `t` from the ready queue. A task granted a core while queued in `Cpu` would only
/// start its quantum (`Cpu::next_quantum`) in this resumption, so that is done here — the same
/// trace records, timer and accounting, without polling its futures — and `STARTED_QUANTUM`
/// returned.
#[inline(always)]
fn dispatch(c: &mut Core, t: TaskId) -> TaskId {
    c.current = t;
    c.dispatches += 1;
    c.trace.log_only(c.now, t, TraceKind::Run);
    if c.cpu_starts != 0 {
        let task = &mut c.tasks[t as usize];
        if task.cpu_q != 0 {
            let q = std::mem::take(&mut task.cpu_q);
            c.cpu_starts -= 1;
            c.delay_current(q, CLASS_CPU);
            return STARTED_QUANTUM;
        }
    }
    t
}

fn stuck(c: &Core, reason: String) -> SimError {
    let paused = c
        .paused
        .iter()
        .map(|p| {
            format!(
                "task '{}' at point '{}'",
                c.tasks[p.task as usize].name, c.points.names[p.point as usize]
            )
        })
        .collect();
    SimError::Stuck {
        at: c.now,
        reason,
        paused,
    }
}

#[inline(always)]
fn resume_timer(c: &mut Core, t: TaskId) -> TaskId {
    let task = &mut c.tasks[t as usize];
    let class = match task.state {
        TaskState::Sleeping(cl) => cl,
        s => unreachable!("timer fired for task {t} in state {s:?}"),
    };
    close_wait(task, c.now, c.accounting, class);
    task.state = TaskState::Ready;
    c.current = t;
    c.dispatches += 1;
    c.trace.log_only(c.now, t, TraceKind::Run);
    t
}
