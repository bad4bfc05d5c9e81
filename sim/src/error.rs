//! Errors a run can end with.

use crate::time::Nanos;

/// Why a run could not finish normally.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// No event is pending and tasks are still blocked; one line per blocked task.
    #[error("deadlock at t={at}ns: no event pending and {} task(s) blocked:\n  {}", .blocked.len(), .blocked.join("\n  "))]
    Deadlock {
        /// Virtual time of detection.
        at: Nanos,
        /// "task 'B' waits for mutex 'm' held by 'A'" lines.
        blocked: Vec<String>,
    },
    /// The scheduler held every paused task while nothing else could run.
    #[error("stuck at t={at}ns: {reason}; paused: {}", .paused.join(", "))]
    Stuck {
        /// Virtual time of detection.
        at: Nanos,
        /// What the scheduler was waiting for.
        reason: String,
        /// "task 'A' at point 'p'" entries.
        paused: Vec<String>,
    },
    /// The virtual-time limit passed before all tasks finished.
    #[error("time limit {limit}ns reached with {live} task(s) unfinished")]
    TimeLimit {
        /// The limit.
        limit: Nanos,
        /// Unfinished non-daemon tasks.
        live: usize,
    },
}
