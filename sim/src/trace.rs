//! The run's event log and its 64-bit hash.
//!
//! Every engine event (task resumed, sleep, lock acquired or waited for, release, point
//! reached, model mark) is folded into a hash whether or not the log is kept, so two runs can
//! be compared by one number.

use crate::resource::Resource;
use crate::task::{ClassId, Label, PointId, ResId, Task, TaskId};
use crate::time::Nanos;
use std::rc::Rc;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// Task created.
    Spawn,
    /// Task resumed.
    Run,
    /// Task finished.
    Exit,
    /// Task sleeps `arg` ns attributed to a class.
    Sleep(ClassId),
    /// Task parks, attributed to a class.
    Park(ClassId),
    /// Task unparks task `arg`.
    Unpark,
    /// Task got the resource without waiting (`arg` = permits).
    Acquire(ResId),
    /// Task must wait for the resource.
    Block(ResId),
    /// Task released the resource; `arg` = task handed to + 1, or 0.
    Release(ResId),
    /// Task notified a wait queue; `arg` = tasks woken.
    Notify(ResId),
    /// Task reached a named point.
    Point(PointId),
    /// A model-defined mark with an argument.
    Mark(PointId),
    /// A model-defined counter's new value (`arg`): kept in the log, not hashed.
    Value(crate::task::ValueId),
}

impl TraceKind {
    fn code(self) -> u64 {
        let (tag, x): (u64, u64) = match self {
            TraceKind::Spawn => (1, 0),
            TraceKind::Run => (2, 0),
            TraceKind::Exit => (3, 0),
            TraceKind::Sleep(c) => (4, u64::from(c)),
            TraceKind::Park(c) => (5, u64::from(c)),
            TraceKind::Unpark => (6, 0),
            TraceKind::Acquire(r) => (7, u64::from(r)),
            TraceKind::Block(r) => (8, u64::from(r)),
            TraceKind::Release(r) => (9, u64::from(r)),
            TraceKind::Notify(r) => (10, u64::from(r)),
            TraceKind::Point(p) => (11, u64::from(p)),
            TraceKind::Mark(p) => (12, u64::from(p)),
            TraceKind::Value(p) => (13, u64::from(p)),
        };
        (x << 8) | tag
    }
}

/// One kept trace record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Virtual time.
    pub time: Nanos,
    /// Acting task.
    pub task: TaskId,
    /// What happened.
    pub kind: TraceKind,
    /// Kind-specific argument.
    pub arg: u64,
}

/// The names trace records refer to, indexed by id; brought up to date by
/// `Handle::update_names` (a run only ever adds names).
#[derive(Clone, Debug, Default)]
pub struct TraceNames {
    /// Each task's name and whether it is a helper of the harness (`Handle::spawn_helper`).
    pub tasks: Vec<(Rc<str>, bool)>,
    /// Wait classes.
    pub classes: Vec<Rc<str>>,
    /// Locks, semaphores and wait queues.
    pub resources: Vec<Rc<str>>,
    /// Named points and mark labels.
    pub points: Vec<Rc<str>>,
    /// Model counters' names (`Handle::value`).
    pub values: Vec<Rc<str>>,
}

/// Hash state and optional log.
#[derive(Default)]
pub(crate) struct Trace {
    h: u64,
    pub(crate) keep: bool,
    pub(crate) records: Vec<TraceRecord>,
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;

impl Trace {
    /// Folds an event into the hash (and the log, when kept).
    #[inline]
    pub(crate) fn record(&mut self, time: Nanos, task: TaskId, kind: TraceKind, arg: u64) {
        let x = time ^ (u64::from(task) << 40) ^ (kind.code() << 20) ^ arg.rotate_left(29);
        self.h = (self.h ^ x).wrapping_mul(K).rotate_left(23);
        if self.keep {
            self.records.push(TraceRecord {
                time,
                task,
                kind,
                arg,
            });
        }
    }

    /// Keeps a record in the log without hashing it (resumptions: the next hashed record
    /// of the task already carries the same time and order).
    #[inline]
    pub(crate) fn log_only(&mut self, time: Nanos, task: TaskId, kind: TraceKind) {
        if self.keep {
            self.records.push(TraceRecord {
                time,
                task,
                kind,
                arg: 0,
            });
        }
    }

    /// Keeps a counter's value in the log without hashing it: what the model measures
    /// along a run is no event of it, and tracing must not change the run's hash.
    #[inline]
    pub(crate) fn log_value(
        &mut self,
        time: Nanos,
        task: TaskId,
        label: crate::task::ValueId,
        value: u64,
    ) {
        if self.keep {
            self.records.push(TraceRecord {
                time,
                task,
                kind: TraceKind::Value(label),
                arg: value,
            });
        }
    }

    /// The run's 64-bit hash of every recorded event.
    pub(crate) fn hash(&self) -> u64 {
        // Final avalanche so that near-identical sequences give unrelated hashes.
        let mut z = self.h;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Renders a record as a text line, with the names of its task, class, resource or point.
pub(crate) fn render(
    r: &TraceRecord,
    tasks: &[Task],
    resources: &[Resource],
    classes: &[Label],
    (points, values): (&[Label], &[Label]),
) -> String {
    let res = |id: ResId| resources[id as usize].name.to_string();
    let class = |id: ClassId| classes[id as usize].to_string();
    let point = |id: PointId| points[id as usize].to_string();
    let task = |id: u64| {
        tasks
            .get(id as usize)
            .map_or_else(|| format!("#{id}"), |t| t.name.to_string())
    };
    let what = match r.kind {
        TraceKind::Spawn => "spawn".to_string(),
        TraceKind::Run => "run".to_string(),
        TraceKind::Exit => "exit".to_string(),
        TraceKind::Sleep(cl) => format!("{} {}", class(cl), crate::time::format_duration(r.arg)),
        TraceKind::Park(cl) => format!("park {}", class(cl)),
        TraceKind::Unpark => format!("unpark {}", task(r.arg)),
        TraceKind::Acquire(id) => format!("acquire {}", res(id)),
        TraceKind::Block(id) => format!("wait {}", res(id)),
        TraceKind::Release(id) if r.arg > 0 => {
            format!("release {} -> {}", res(id), task(r.arg - 1))
        }
        TraceKind::Release(id) => format!("release {}", res(id)),
        TraceKind::Notify(id) => format!("notify {} ({} woken)", res(id), r.arg),
        TraceKind::Point(p) => format!("point {}", point(p)),
        TraceKind::Mark(p) => format!("mark {} {}", point(p), r.arg),
        TraceKind::Value(v) => format!("value {} {}", values[v as usize], r.arg),
    };
    format!(
        "{:>14} {:<16} {}",
        crate::time::format_duration(r.time),
        tasks[r.task as usize].name,
        what
    )
}
