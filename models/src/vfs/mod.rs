//! The filesystem boundary: the operations tasks perform (`Op`), the interface every
//! simulated filesystem implements (`Filesystem`), what a run counts (`Metrics`, by name)
//! and what recovery keeps (`Recovered`). It names no filesystem: each one imports this
//! module and implements `Filesystem`; `crate::mount` composes them (`Mounted`).

pub mod metrics;
pub mod op;
pub mod recovered;

pub use metrics::{Family, Metrics, OpLatency, Violation};
pub use op::{Op, OpError, OpPath};
pub use recovered::Recovered;

use sim::{Handle, Nanos};
use std::future::Future;

/// What every simulated filesystem offers the scenario and workload runners.
pub trait Filesystem: Clone + 'static {
    /// Runs one operation (its `KIND:start`/`KIND:done` points included) and records its
    /// latency.
    fn run_op(&self, op: &Op) -> impl Future<Output = Result<(), OpError>>;
    /// Starts the periodic commit daemon (btrfs: transaction_kthread; jbd2: kjournald2).
    fn spawn_committer(&self, h: &Handle, interval: Nanos);
    /// Checks what recovery from the device's durable image would keep now (S2).
    fn check_crash(&self, when: &str);
    /// What recovery from the device's durable image keeps after a power failure now
    /// (Err: recovery fails or the model cannot say).
    fn recovered(&self) -> Result<Recovered, String>;
    /// Settles judgments still pending at the end of a run.
    fn finish(&self);
    /// A copy of the counters.
    fn metrics(&self) -> Metrics;
    /// Latency per operation kind.
    fn latency(&self) -> OpLatency;
    /// Invariant violations so far.
    fn violations(&self) -> Vec<Violation>;
    /// Turns per-operation latency histograms on or off.
    fn set_latency(&self, on: bool);
    /// Keeps or drops the history crash checks need (off for long workload runs).
    fn set_history(&self, keep: bool);
    /// A power failure and the mount after it (`power-fail`), without the operation's
    /// points: the caller has quiesced every task (Err: not modelled, or the mount fails).
    fn power_fail(&self) -> impl Future<Output = Result<(), OpError>>;
}

/// Splits a path into its directory part and last name (`"/d/f"` → `("/d", "f")`; the
/// root's own directory part is `""`).
pub fn split_path(path: &str) -> Result<(&str, &str), OpError> {
    let trimmed = path.trim_end_matches('/');
    // A byte scan from the end: names are short, and `rsplit_once`'s memrchr costs more.
    let (dir, name) = match trimmed.as_bytes().iter().rposition(|&b| b == b'/') {
        Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
        None => ("", trimmed),
    };
    if name.is_empty() {
        return Err(OpError(format!("not a file path: {path}")));
    }
    Ok((dir, name))
}

/// The last trace lines of the filesystem's tasks (crash-point checks left out), for a
/// violation's timeline.
pub fn timeline(h: &Handle) -> Vec<String> {
    let lines: Vec<String> = h
        .recent_trace(400)
        .into_iter()
        .filter(|l| !l.contains(" crash-points "))
        .collect();
    lines[lines.len().saturating_sub(40)..].to_vec()
}
