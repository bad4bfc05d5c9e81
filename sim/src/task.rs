//! Leaf types of the engine: task, resource, class and point ids, the wait classes the
//! engine itself uses, and a task's record (`Task`, `TaskState`).

use crate::time::Nanos;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// Index of a simulated task.
pub type TaskId = u32;
/// Index of a resource (mutex, semaphore, wait queue).
pub type ResId = u32;
/// Index of a wait class: the name a wait is attributed to ("cpu", "tree_log_mutex", …).
pub type ClassId = u16;
/// Index of a named point label.
pub type PointId = u32;
/// Index of a model counter's name (`Handle::value`), interned apart from points so that
/// logging values never shifts point ids (which the trace hash folds in).
pub type ValueId = u32;

/// Bits of a task id (`Core::register` refuses more tasks).
pub(crate) const TASK_BITS: u32 = 24;

/// Wait class 0: CPU time spent by `Handle::cpu`.
pub const CLASS_CPU: ClassId = 0;
/// Wait class 1: plain sleeps (`Handle::sleep`, think time).
pub const CLASS_SLEEP: ClassId = 1;
/// Wait class 2: held at a named point by the scheduler.
pub const CLASS_POINT: ClassId = 2;

/// A task's future, as the run loop owns it.
pub(crate) type BoxFuture = Pin<Box<dyn Future<Output = ()>>>;

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

/// A task's record: name, state, current wait and per-class wait account.
pub(crate) struct Task {
    pub(crate) name: Rc<str>,
    pub(crate) daemon: bool,
    /// A task of the harness (progress, trace drain), not of the simulated system.
    pub(crate) helper: bool,
    pub(crate) state: TaskState,
    pub(crate) wait_since: Nanos,
    /// Nanoseconds spent waiting, per wait class.
    pub(crate) acct: Vec<Nanos>,
    /// The model's estimate of the steps the task has left (0: unknown).
    pub(crate) remaining: u32,
    /// While queued for a core (`Cpu`): the quantum to run once granted, which the run loop
    /// starts itself when it picks the task (0: none). See `dispatch`.
    pub(crate) cpu_q: Nanos,
    /// CPU the task owes for its context switches and the wake-ups it made
    /// (`Handle::set_switch_cost`), spent at the start of its next `Handle::cpu`.
    pub(crate) owed: Nanos,
    /// Times the task was woken from a block (a resource other than the cores, or a park)
    /// while a switch cost was set.
    pub(crate) switches: u64,
}

/// CPU charged per block and wake-up (`Handle::set_switch_cost`): the woken task's switch
/// out and back in, and the waker's wake-up. Waits for a core (class `free_class`) and
/// timers are not blocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SwitchCost {
    /// Whether either cost is above 0 (the wake path's one test when off).
    pub(crate) on: bool,
    pub(crate) wakee: Nanos,
    pub(crate) waker: Nanos,
    /// The cores' wait class (`Handle::set_cpus`): a grant of a core is not a wake-up.
    pub(crate) free_class: ClassId,
}

impl Default for SwitchCost {
    fn default() -> Self {
        SwitchCost {
            on: false,
            wakee: 0,
            waker: 0,
            free_class: ClassId::MAX,
        }
    }
}

/// An interned name: borrowed when static, so interning model labels allocates nothing.
pub(crate) type Label = std::borrow::Cow<'static, str>;
