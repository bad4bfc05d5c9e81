//! What a scenario or workload mounts: the filesystem kinds (`fs = "btrfs"`, as
//! fs/filesystems.c registers file_system_types), their mount options (`mount = "ssd"`), and
//! `Mounted`, the mounted filesystem of any kind.
//!
//! Scenarios, workloads, sweeps, shrink and the crash check drive a filesystem only through
//! `Mounted` (static dispatch: one `match` per operation, no boxed futures). This module sits
//! above the filesystems (it imports them); they import only `vfs`.

use crate::btrfs::{Btrfs, Costs};
use crate::device::Device;
use crate::ext4::Ext4;
use crate::kernel::Policy;
use crate::vfs::{Filesystem, Metrics, Op, OpError, OpLatency, Recovered, Violation};
use sim::{Handle, Nanos};

/// Which filesystem a scenario or workload runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FsKind {
    /// btrfs (fs/btrfs, Linux 5.10–5.12).
    #[default]
    Btrfs,
    /// ext4 on jbd2 (Linux 2.6.36–2.6.39).
    Ext4,
    /// ext3 on jbd, data=ordered (Linux 2.6.36–2.6.39).
    Ext3,
}

impl FsKind {
    /// Every kind with its file spelling.
    pub const ALL: [(FsKind, &'static str); 3] = [
        (FsKind::Btrfs, "btrfs"),
        (FsKind::Ext4, "ext4"),
        (FsKind::Ext3, "ext3"),
    ];

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

    /// The named points `op` reaches on this filesystem (its own vocabulary).
    pub fn points_of(self, op: &Op) -> Vec<String> {
        match self {
            FsKind::Btrfs => crate::btrfs::ctree::points_of(op),
            FsKind::Ext4 | FsKind::Ext3 => crate::ext4::points_of(op),
        }
    }

    /// Whether `name` is one of this filesystem's counters (its own vocabulary).
    pub fn is_metric(self, name: &str) -> bool {
        match self {
            FsKind::Btrfs => crate::btrfs::ctree::is_metric(name),
            FsKind::Ext4 | FsKind::Ext3 => crate::ext4::is_metric(name),
        }
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
    /// ext3/ext4 `data=writeback` (true) or `data=ordered` (false, the default).
    pub data_writeback: bool,
    /// ext3/ext4 `barrier=0|1`; None = the kernel's default (ext4 on, ext3 off in 2.6.37).
    pub barrier: Option<bool>,
}

impl MountOptions {
    /// Parses a comma-separated option list (`"ssd,commit=5"`) for filesystem `fs`.
    pub fn parse_for(fs: FsKind, text: &str) -> Result<MountOptions, String> {
        let o = Self::parse(text)?;
        let ext = matches!(fs, FsKind::Ext3 | FsKind::Ext4);
        if ext && o.ssd.is_some() {
            return Err(format!(
                "mount option ssd/nossd is btrfs's: expected data=ordered|writeback, barrier=0|1 or commit=SECONDS for {}",
                fs.name()
            ));
        }
        if fs == FsKind::Ext3 && o.data_writeback {
            return Err(
                "mount option 'data=writeback' is not modelled for ext3: expected data=ordered"
                    .into(),
            );
        }
        if !ext && (o.data_writeback || o.barrier.is_some()) {
            return Err(
                "mount options data= and barrier= are ext3/ext4's: expected ssd, nossd or commit=SECONDS for btrfs"
                    .into(),
            );
        }
        Ok(o)
    }

    /// Parses a comma-separated option list (`"ssd,commit=5"`).
    pub fn parse(text: &str) -> Result<MountOptions, String> {
        let mut o = MountOptions::default();
        for opt in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match opt.split_once('=') {
                None if opt == "ssd" => o.ssd = Some(true),
                None if opt == "nossd" => o.ssd = Some(false),
                None if opt == "barrier" => o.barrier = Some(true),
                None if opt == "nobarrier" => o.barrier = Some(false),
                Some(("barrier", "0")) => o.barrier = Some(false),
                Some(("barrier", "1")) => o.barrier = Some(true),
                Some(("data", "ordered")) => o.data_writeback = false,
                Some(("data", "writeback")) => o.data_writeback = true,
                Some(("data", "journal")) => {
                    return Err("mount option 'data=journal' is not modelled: expected data=ordered or data=writeback".into())
                }
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
                        "unknown mount option '{opt}': expected ssd, nossd, commit=SECONDS, data=ordered|writeback or barrier=0|1"
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
        if self.data_writeback {
            v.push("data=writeback".to_string());
        }
        if let Some(b) = self.barrier {
            v.push(format!("barrier={}", u8::from(b)));
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
    /// ext3/ext4: the machine's dirtyable memory in bytes, which sets the dirty thresholds;
    /// None = dirty throttling not modelled.
    pub memory: Option<u64>,
    /// btrfs: made with the NO_HOLES incompat feature (`mkfs.btrfs -O no-holes`; the
    /// btrfs-progs default from v5.15): holes are implicit, no file extent items.
    pub no_holes: bool,
}

/// A mounted filesystem of any kind; clone it into every task.
#[derive(Clone)]
pub enum Mounted {
    /// btrfs.
    Btrfs(Btrfs),
    /// ext3 or ext4.
    Ext4(Ext4),
}

/// Evaluates `$e` with `$fs` bound to whichever filesystem is mounted (static dispatch;
/// also used by callers that await an operation without `Mounted::run_op`'s future layer).
macro_rules! dispatch {
    ($self:expr, $fs:ident => $e:expr) => {
        match $self {
            $crate::mount::Mounted::Btrfs($fs) => $e,
            $crate::mount::Mounted::Ext4($fs) => $e,
        }
    };
}
pub(crate) use dispatch;

impl Mounted {
    /// Makes a fresh filesystem of `mount.fs` on `dev` and mounts it.
    pub fn mount(h: &Handle, dev: Device, mount: &Mount, policy: Policy, costs: Costs) -> Self {
        match mount.fs {
            FsKind::Btrfs => {
                let ssd = mount.options.ssd.unwrap_or(!dev.rotational());
                let fs = Btrfs::new(h, dev, policy.btrfs, costs);
                fs.set_ssd(ssd);
                fs.set_no_holes(mount.no_holes);
                Mounted::Btrfs(fs)
            }
            FsKind::Ext4 | FsKind::Ext3 => {
                let o = &mount.options;
                let ext3 = mount.fs == FsKind::Ext3;
                let cfg = crate::ext4::ExtConfig {
                    variant: if ext3 {
                        crate::ext4::Variant::Ext3
                    } else {
                        crate::ext4::Variant::Ext4
                    },
                    fs_size: costs.fs_size,
                    journal_blocks: 32_768,
                    commit_interval: o.commit.unwrap_or(5 * sim::S),
                    barrier: o.barrier.unwrap_or(!ext3),
                    data_writeback: o.data_writeback,
                    policy: policy.journal,
                    syscall: costs.syscall,
                    per_page: costs.write_per_page,
                    namespace_op: costs.namespace_op,
                    writeback_interval: 5 * sim::S,
                    dirty_expire: 30 * sim::S,
                    dirty_limits: mount.memory.map(crate::ext4::ExtConfig::dirty_limits_of),
                };
                let fs = Ext4::new(h, dev, cfg);
                fs.start_daemons();
                Mounted::Ext4(fs)
            }
        }
    }
}

impl Filesystem for Mounted {
    async fn run_op(&self, op: &Op) -> Result<(), OpError> {
        dispatch!(self, fs => fs.run_op(op).await)
    }
    async fn power_fail(&self) -> Result<(), OpError> {
        dispatch!(self, fs => fs.power_fail().await)
    }
    fn spawn_committer(&self, h: &Handle, interval: Nanos) {
        dispatch!(self, fs => fs.spawn_committer(h, interval))
    }
    fn check_crash(&self, when: &str) {
        dispatch!(self, fs => fs.check_crash(when))
    }
    fn recovered(&self) -> Result<Recovered, String> {
        dispatch!(self, fs => fs.recovered())
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
