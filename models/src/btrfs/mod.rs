//! The btrfs commit/fsync model: transactions, the log tree, fsync's fast and full paths,
//! namespace operations, the policy switches of races R1–R7, the waste oracle and the
//! crash-consistency check.

pub mod costs;
pub mod fs;
pub mod metrics;
pub mod oracle;
pub mod policy;
pub mod state;

pub use costs::Costs;
pub use fs::{Btrfs, Op, OpError};
pub use metrics::{Metrics, OpLatency, Violation};
pub use policy::{Fix, Mutant, Policy};
