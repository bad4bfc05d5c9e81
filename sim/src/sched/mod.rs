//! Decision-makers asked at named points: which paused task runs next.
//!
//! One file per strategy, behind the small `Scheduler` trait (after Shuttle's design).
//!
//! A choice's candidates are `ready` (runnable now, FIFO order) followed by `paused` (held
//! at named points); a recorded decision is the candidate's index in that order.

mod dfs;
mod fifo;
mod pct;
mod prefix;
mod random;
mod replay;
mod script;
mod urw;

pub use dfs::Dfs;
pub use fifo::Fifo;
pub use pct::Pct;
pub use prefix::ScriptThen;
pub use random::RandomWalk;
pub use replay::Replay;
pub use script::Script;
pub use urw::Urw;

use crate::task::{Label, PointId, Task, TaskId};
use crate::time::Nanos;

/// A task held at a named point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PausedTask {
    /// The task.
    pub task: TaskId,
    /// The point it reached.
    pub point: PointId,
    /// When it reached it.
    pub since: Nanos,
}

/// What the scheduler sees when asked.
#[derive(Clone, Copy)]
pub struct ChoiceView<'a> {
    /// Current virtual time.
    pub now: Nanos,
    /// Paused tasks, in arrival order.
    pub paused: &'a [PausedTask],
    /// Tasks runnable at this instant, FIFO order (only for schedulers that choose ties).
    pub ready: &'a [TaskId],
    /// Time of the next pending timer, if any (None: holding everyone means stuck).
    pub next_event: Option<Nanos>,
    pub(crate) task_names: &'a [Task],
    pub(crate) point_names: &'a [Label],
}

impl ChoiceView<'_> {
    /// Name of a task.
    pub fn task_name(&self, t: TaskId) -> &str {
        &self.task_names[t as usize].name
    }

    /// The model's estimate of the steps task `t` has left (0: unknown).
    pub fn remaining(&self, t: TaskId) -> u32 {
        self.task_names[t as usize].remaining
    }

    /// Whether the task named `name` waits for a resource (a lock, a semaphore, a queue)
    /// and every other task but daemons is held at a point or waits for a resource too (no
    /// such task can move by itself: it neither runs, sleeps nor waits for a completion).
    pub fn blocked_among_held(&self, name: &str) -> bool {
        use crate::task::TaskState as S;
        let mut named = false;
        for t in self.task_names {
            if &*t.name == name {
                named |= matches!(t.state, S::Blocked(_));
            } else if !t.daemon && !matches!(t.state, S::Blocked(_) | S::Paused(_) | S::Done) {
                return false;
            }
        }
        named
    }

    /// Label of a point.
    pub fn point_name(&self, p: PointId) -> &str {
        &self.point_names[p as usize]
    }
}

/// The scheduler's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Release `paused[i]`; it runs at the current instant.
    Release(usize),
    /// Run `ready[i]` next.
    Ready(usize),
    /// Keep every paused task held; time advances to the next event.
    Hold,
}

/// A pluggable decision-maker for named points.
pub trait Scheduler {
    /// Whether tasks pause at named points; if false, a point is a plain FIFO yield.
    fn pauses_at_points(&self) -> bool;
    /// Whether it also chooses among tasks runnable at the same instant (ties).
    fn chooses_ties(&self) -> bool {
        false
    }
    /// The decisions made so far, as indices into the candidates of each choice.
    fn decisions(&self) -> Vec<u32> {
        Vec::new()
    }
    /// The number of candidates of each decision, aligned with `decisions` (empty when
    /// the strategy does not record them).
    fn widths(&self) -> Vec<u32> {
        Vec::new()
    }
    /// Chooses among the paused tasks once nothing else can run at this instant.
    fn pick(&mut self, view: &ChoiceView<'_>) -> Pick;
    /// Explains a `Hold` when nothing else can happen (for the stuck report).
    fn describe_hold(&self, _view: &ChoiceView<'_>) -> String {
        "the scheduler held every paused task".to_string()
    }
    /// After a run: what the scheduler expected and never saw (e.g. unplayed script steps).
    fn unfinished(&self) -> Option<String> {
        None
    }
    /// After a run: the optional script steps it skipped (0-based), in order.
    fn skipped_steps(&self) -> Vec<usize> {
        Vec::new()
    }
}
