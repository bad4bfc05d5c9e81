//! The filesystem boundary: the operations tasks perform (`Op`), the interface every
//! simulated filesystem implements (`Filesystem`), and `Mounted`, the filesystem a scenario
//! or workload file selects (`fs = "btrfs"`) with its mount options (`mount = "ssd"`).
//!
//! Scenarios, workloads, sweeps, shrink and the crash check drive a filesystem only through
//! `Mounted`; a new filesystem is one more `FsKind` and one more `Mounted` arm (static
//! dispatch: one `match` per operation, no boxed futures).

pub mod metrics;
pub mod op;

pub use metrics::{Metrics, OpLatency, Violation, WAIT_CLASSES};
pub use op::{Op, OpError};

use crate::btrfs::{Btrfs, Costs, Policy};
use crate::device::Device;
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
}

/// Which filesystem a scenario or workload runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FsKind {
    /// btrfs (fs/btrfs, Linux 5.10–5.12).
    #[default]
    Btrfs,
}

impl FsKind {
    /// Every kind with its file spelling.
    pub const ALL: [(FsKind, &'static str); 1] = [(FsKind::Btrfs, "btrfs")];

    /// The kind spelled `name` in a file (`fs = "btrfs"`).
    pub fn parse(name: &str) -> Result<FsKind, String> {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(k, _)| *k)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|(_, n)| *n).collect();
                format!(
                    "unknown filesystem '{name}': expected one of {}",
                    names.join(", ")
                )
            })
    }

    /// The file spelling.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(k, _)| *k == self).unwrap().1
    }
}

/// Parses a commit interval: whole seconds from 1 s to 1 h, as the kernel keeps it
/// (`commit=` is an integer of seconds, fs/btrfs/super.c:btrfs_parse_options@v5.10, and
/// transaction_kthread compares ages in whole seconds).
pub fn parse_commit_interval(text: &str) -> Result<Nanos, String> {
    sim::parse_duration(text)
        .ok()
        .filter(|&d| d % sim::S == 0 && (sim::S..=3600 * sim::S).contains(&d))
        .ok_or_else(|| {
            format!("invalid commit_interval '{text}': expected whole seconds from 1s to 3600s, like 30s")
        })
}

/// Mount options that change the model (`mount = "ssd"` in a scenario or workload file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MountOptions {
    /// btrfs `ssd` / `nossd`; `None` = the kernel's default: `ssd` when the device is not
    /// rotational (fs/btrfs/disk_io.c:open_ctree@v5.10, `!fs_devices->rotating`).
    pub ssd: Option<bool>,
    /// `commit=N`: the periodic commit interval (overrides the file's `commit_interval`).
    pub commit: Option<Nanos>,
}

impl MountOptions {
    /// Parses a comma-separated option list (`"ssd,commit=5"`).
    pub fn parse(text: &str) -> Result<MountOptions, String> {
        let mut o = MountOptions::default();
        for opt in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match opt.split_once('=') {
                None if opt == "ssd" => o.ssd = Some(true),
                None if opt == "nossd" => o.ssd = Some(false),
                Some(("commit", v)) => {
                    // The kernel takes whole seconds (fs/btrfs/super.c:btrfs_parse_options).
                    let secs: u32 = v
                        .parse()
                        .ok()
                        .filter(|s| (1..=300).contains(s))
                        .ok_or_else(|| {
                            format!("invalid mount option '{opt}': expected commit=SECONDS (1-300)")
                        })?;
                    o.commit = Some(u64::from(secs) * sim::S);
                }
                _ => {
                    return Err(format!(
                        "unknown mount option '{opt}': expected ssd, nossd or commit=SECONDS"
                    ))
                }
            }
        }
        Ok(o)
    }

    /// The option list as a file writes it (empty when all are defaults).
    pub fn to_text(&self) -> String {
        let mut v = Vec::new();
        match self.ssd {
            Some(true) => v.push("ssd".to_string()),
            Some(false) => v.push("nossd".to_string()),
            None => {}
        }
        if let Some(c) = self.commit {
            v.push(format!("commit={}", c / sim::S));
        }
        v.join(",")
    }
}

/// What a file mounts: the filesystem and its options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    /// The filesystem.
    pub fs: FsKind,
    /// Its mount options.
    pub options: MountOptions,
}

/// A mounted filesystem of any kind; clone it into every task.
#[derive(Clone)]
pub enum Mounted {
    /// btrfs.
    Btrfs(Btrfs),
}

/// Calls the same method on whichever filesystem is mounted.
macro_rules! dispatch {
    ($self:expr, $fs:ident => $e:expr) => {
        match $self {
            Mounted::Btrfs($fs) => $e,
        }
    };
}

/// The waits on the filesystem's locks and wait queues over a whole run, from the engine's
/// resource statistics.
pub fn wait_totals(stats: &[sim::ResourceStats]) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut m = std::collections::BTreeMap::new();
    for r in stats {
        if WAIT_CLASSES.contains(&r.name.as_str()) {
            let e = m.entry(r.name.clone()).or_insert((0, 0));
            e.0 += r.waits;
            e.1 += r.wait_ns;
        }
    }
    m
}

impl Mounted {
    /// Makes a fresh filesystem of `mount.fs` on `dev` and mounts it.
    pub fn mount(h: &Handle, dev: Device, mount: &Mount, policy: Policy, costs: Costs) -> Self {
        match mount.fs {
            FsKind::Btrfs => {
                let ssd = mount.options.ssd.unwrap_or(!dev.rotational());
                let fs = Btrfs::new(h, dev, policy, costs);
                fs.set_ssd(ssd);
                Mounted::Btrfs(fs)
            }
        }
    }
}

impl Filesystem for Mounted {
    async fn run_op(&self, op: &Op) -> Result<(), OpError> {
        dispatch!(self, fs => fs.run_op(op).await)
    }
    fn spawn_committer(&self, h: &Handle, interval: Nanos) {
        dispatch!(self, fs => fs.spawn_committer(h, interval))
    }
    fn check_crash(&self, when: &str) {
        dispatch!(self, fs => fs.check_crash(when))
    }
    fn finish(&self) {
        dispatch!(self, fs => fs.finish())
    }
    fn metrics(&self) -> Metrics {
        dispatch!(self, fs => fs.metrics())
    }
    fn latency(&self) -> OpLatency {
        dispatch!(self, fs => fs.latency())
    }
    fn violations(&self) -> Vec<Violation> {
        dispatch!(self, fs => fs.violations())
    }
    fn set_latency(&self, on: bool) {
        dispatch!(self, fs => fs.set_latency(on))
    }
    fn set_history(&self, keep: bool) {
        dispatch!(self, fs => fs.set_history(keep))
    }
}
