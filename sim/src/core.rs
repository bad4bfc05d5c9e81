//! The engine state shared by the run loop and every primitive: clock, timer heap, ready
//! queue, task records, resources, name tables, paused tasks and the trace; the wait
//! accounting every wake-up goes through.

use crate::queue::TimerQueue;
use crate::resource::{ResState, Resource};
use crate::ring::Ring;
use crate::sched::PausedTask;
use crate::task::{BoxFuture, ClassId, Label, PointId, ResId, SwitchCost, Task, TaskId, TaskState};
use crate::task::{CLASS_POINT, TASK_BITS};
use crate::time::Nanos;
use crate::trace::{Trace, TraceKind, TraceRecord};
use std::rc::Rc;

/// A name table with stable, insertion-ordered ids.
#[derive(Default)]
pub(crate) struct Interner {
    pub(crate) names: Vec<Label>,
}

impl Interner {
    /// The id of `name`; tables are small (tens of labels), so a scan beats a tree.
    fn find(&self, name: &str) -> Option<u32> {
        self.names
            .iter()
            .position(|n| n.len() == name.len() && n.as_ref() == name)
            .map(|i| i as u32)
    }

    /// The id of `name`, added (copied) if new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        match self.find(name) {
            Some(id) => id,
            None => {
                self.names.push(Label::Owned(name.to_string()));
                self.names.len() as u32 - 1
            }
        }
    }

    /// The id of a static `name`, added (borrowed) if new.
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
    /// The cores' occupancy integrals.
    pub(crate) cpu_meter: crate::meter::CpuMeter,
    pub(crate) now: Nanos,
    pub(crate) heap: TimerQueue,
    pub(crate) ready: Ring<TaskId>,
    pub(crate) tasks: Vec<Task>,
    pub(crate) live: usize,
    pub(crate) current: TaskId,
    pub(crate) resources: Vec<Resource>,
    /// Idle recyclable resources by class, for `add_recyclable` to reuse (a model that makes
    /// one lock per object keeps the engine's memory bounded by the objects alive).
    free: Vec<Vec<ResId>>,
    pub(crate) classes: Interner,
    pub(crate) points: Interner,
    /// Names of the model counters logged with `Handle::value`.
    pub(crate) values: Interner,
    pub(crate) paused: Vec<PausedTask>,
    /// Points released so far, in order (kept with the trace log only).
    pub(crate) released: Vec<(TaskId, PointId)>,
    pub(crate) pauses_at_points: bool,
    /// Whether a named point yields (FIFO) when no scheduler pauses there.
    pub(crate) points_yield: bool,
    /// The scheduler chooses among all tasks runnable at an instant (exploration).
    pub(crate) explores_ties: bool,
    pub(crate) spawned: Vec<(TaskId, BoxFuture)>,
    pub(crate) trace: Trace,
    /// Whether waits are added to the tasks' per-class accounts (`Sim::set_wait_accounting`).
    pub(crate) accounting: bool,
    pub(crate) stop: bool,
    /// Whether the run loop must take its general path: something was spawned, a task
    /// stopped the run, the scheduler explores, a task is paused at a point, or no live task
    /// is left. Set wherever one of these may become true; recomputed by the run loop.
    pub(crate) slow: bool,
    /// Set while the simulation is dropped: releases by dropped guards are ignored.
    pub(crate) tearing_down: bool,
    /// Tasks with a quantum for the run loop to start (`Task::cpu_q` set): while 0, a
    /// dispatch does not look at the task.
    pub(crate) cpu_starts: u32,
    pub(crate) dispatches: u64,
    /// CPU charged per block and wake-up (`Handle::set_switch_cost`; off by default).
    pub(crate) switch: SwitchCost,
}

impl Core {
    /// An empty engine at t=0 with the engine's own wait classes interned.
    pub(crate) fn new() -> Self {
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
            values: Interner::default(),
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
            cpu_meter: Default::default(),
            dispatches: 0,
            switch: SwitchCost::default(),
        }
    }

    /// Brings the cores' occupancy integrals up to `now` (before their semaphore changes).
    #[inline(always)]
    pub(crate) fn tick_cpu_meter(&mut self, now: Nanos) {
        if let Some((id, _)) = self.cpus {
            self.cpu_meter.tick(now, &self.resources[id as usize]);
        }
    }

    /// Remembers a released point (only when the trace log is kept).
    #[inline]
    pub(crate) fn note_release(&mut self, p: PausedTask) {
        if self.trace.keep {
            self.released.push((p.task, p.point));
        }
    }

    /// Adds an event of `task` at the current instant to the trace (and its hash).
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
                crate::check!(false, "waking a task that is not waiting");
                return 0;
            }
        };
        let waker = self.current;
        wake_task(
            &mut self.tasks,
            &mut self.ready,
            self.now,
            self.accounting,
            t,
            class,
            (self.switch, waker),
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

    /// What task `t` waits for, in words (for the deadlock report).
    pub(crate) fn describe_wait(&self, t: TaskId) -> String {
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

    /// Adds a task record, runnable at the current instant (its future is in `spawned`).
    pub(crate) fn register(&mut self, name: &str, daemon: bool) -> TaskId {
        let id = self.tasks.len() as TaskId;
        assert!(id < (1 << TASK_BITS), "too many tasks");
        self.tasks.push(Task {
            name: Rc::from(name),
            daemon,
            helper: false,
            state: TaskState::Ready,
            wait_since: self.now,
            acct: Vec::new(),
            remaining: 0,
            cpu_q: 0,
            owed: 0,
            switches: 0,
        });
        if !daemon {
            self.live += 1;
        }
        self.ready.push_back(id);
        self.slow = true;
        self.record(id, TraceKind::Spawn, 0);
        id
    }

    /// Adds a resource whose waits are attributed to class `class_name`.
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
            crate::check!(r.recyclable && r.handles == 0 && &*r.name == class_name);
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

    /// Appends the names added since `names` was last brought up to date.
    pub(crate) fn update_names(&self, names: &mut crate::trace::TraceNames) {
        for t in &self.tasks[names.tasks.len().min(self.tasks.len())..] {
            names.tasks.push((t.name.clone(), t.helper));
        }
        for r in &self.resources[names.resources.len().min(self.resources.len())..] {
            names.resources.push(r.name.clone());
        }
        let rest = |have: usize, all: &[Label]| -> Vec<Rc<str>> {
            all[have.min(all.len())..]
                .iter()
                .map(|n| Rc::from(n.as_ref()))
                .collect()
        };
        let classes = rest(names.classes.len(), &self.classes.names);
        names.classes.extend(classes);
        let points = rest(names.points.len(), &self.points.names);
        names.points.extend(points);
        let values = rest(names.values.len(), &self.values.names);
        names.values.extend(values);
    }

    /// Renders a trace record as a text line, with task, class, resource and point names.
    pub(crate) fn render(&self, r: &TraceRecord) -> String {
        crate::trace::render(
            r,
            &self.tasks,
            &self.resources,
            &self.classes.names,
            (&self.points.names, &self.values.names),
        )
    }
}

/// Closes a task's current wait at `now`: its length, added to the task's account of `class`
/// when `accounting` is on.
#[inline(always)]
pub(crate) fn close_wait(task: &mut Task, now: Nanos, accounting: bool, class: ClassId) -> Nanos {
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
    (switch, waker): (SwitchCost, TaskId),
) -> Nanos {
    if switch.on && class != switch.free_class {
        charge_switch(tasks, t, switch, waker);
    }
    let task = &mut tasks[t as usize];
    let dt = close_wait(task, now, accounting, class);
    task.state = TaskState::Ready;
    ready.push_back(t);
    dt
}

/// A block ends in a wake-up (not a timer, a point or a core's grant): the woken task owes
/// its switch out and back in, the waker its wake-up.
#[cold]
#[inline(never)]
fn charge_switch(tasks: &mut [Task], t: TaskId, s: SwitchCost, waker: TaskId) {
    let task = &mut tasks[t as usize];
    if !matches!(task.state, TaskState::Blocked(_) | TaskState::Parked(_)) {
        return;
    }
    task.owed += s.wakee;
    task.switches += 1;
    if waker != t {
        tasks[waker as usize].owed += s.waker;
    }
}
