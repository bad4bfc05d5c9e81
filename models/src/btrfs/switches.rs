//! btrfs's switch registry: every change the model can turn on or off, declared once with
//! its upstream origin, the release that merged it and the metric that measures what it
//! removes. Release presets (`crate::kernel`), `list --policies`, sweep targets, the race
//! summary and the tests read this table; a new switch is its model change plus one entry.

use super::policy::{Fix, LogPatch, Policy, SpacePatch};

/// What a switch turns on in `btrfs::Policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toggle {
    /// One of the races R1–R7.
    Fix(Fix),
    /// Commit waiters return at TRANS_STATE_SUPER_COMMITTED.
    SuperCommitted,
    /// The preemptive metadata reclaim worker.
    PreemptWorker,
    /// One change to preemptive flushing (needs the worker).
    Space(SpacePatch),
    /// One of the 5.12 tree-log changes.
    Log(LogPatch),
}

/// One registry entry.
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// What it turns on.
    pub toggle: Toggle,
    /// The mainline commit id (12 hex digits) where verified, else None (see `source`).
    pub commit: Option<&'static str>,
    /// The first release whose preset includes it, as (major, minor).
    pub since: (u8, u8),
    /// The release that merged it, as a reader would say it.
    pub merged: &'static str,
    /// Where the change was posted or which kernel function it changes.
    pub source: &'static str,
    /// The metric that measures what it removes (the race's key metric).
    pub metric: &'static str,
    /// Further metrics it also removes.
    pub also: &'static [&'static str],
    /// Whether a non-zero `metric` in a run is waste (a sweep hit target).
    pub hit: bool,
}

/// The posting of Filipe Manana's six-patch series (the btrfs dbench thread, 2020-11-25,
/// merged for 5.11); mainline ids are not in the thread and were not verified here.
const SERIES_5_11: &str = "linux-btrfs 2020-11-25 \"[PATCH n/6]\" (cover.1606305501.git.fdmanana@suse.com), merged for 5.11";

/// Every switch, in listing order.
pub const SWITCHES: [Switch; 37] = [
    series_5_11(Fix::R1, "unnecessary_inode_logs", &[]),
    series_5_11(Fix::R2, "unnecessary_extent_logs", &["unnecessary_csum_bytes"]),
    series_5_11(Fix::R3, "unnecessary_ancestor_logs", &[]),
    series_5_11(Fix::R4, "unnecessary_full_commits", &[]),
    series_5_11(Fix::R5, "unnecessary_full_commits", &[]),
    series_5_11(Fix::R6, "tree_log_mutex_waits", &[]),
    Switch {
        toggle: Toggle::Fix(Fix::R7),
        commit: None,
        since: (5, 10),
        merged: "2015, before every modelled release",
        source: "the btrfs sysbench thread: the fix of the regression from 3a8b36f37806 (fs/btrfs/file.c:btrfs_sync_file)",
        metric: "unnecessary_log_syncs",
        also: &[],
        hit: true,
    },
    log_5_12(LogPatch::SkipLoggedAncestors, "ab12313a9f56", "relogged_ancestors"),
    log_5_12(LogPatch::SkipLoggedParents, "3e6a86a193b0", "relogged_dir_items"),
    log_5_12(LogPatch::SkipLoggedNewEntries, "0e44cb3f9428", "relogged_inodes"),
    log_5_12(LogPatch::NoParentDirsCheck, "64d6b281ba4d", "unnecessary_full_commits"),
    log_5_12(LogPatch::NoDirIsizeUpdate, "ddffcf6fb5ac", "logged_dir_isize_updates"),
    // Every inode logged before 5.12 takes i_lock once: a cost to compare, not a rare
    // event to hunt, so not a sweep hit target.
    Switch {
        hit: false,
        ..log_5_12(LogPatch::NoLogNbytes, "e593e54ed1f6", "log_nbytes_i_lock_takes")
    },
    // A correctness fix: it adds fsyncs that 5.10-5.11 skipped, it removes no waste.
    Switch {
        toggle: Toggle::Log(LogPatch::ExistsKeepsLogCommit),
        commit: Some("9acc8103ab59"),
        since: (5, 12),
        merged: "5.12",
        source: "fs/btrfs/tree-log.c:btrfs_log_inode (\"btrfs: fix unpersisted i_size on fsync after expanding truncate\", a 5.12-rc fix, CC stable 4.19+; the comment \"Don't update last_log_commit if we logged that an inode exists\" in tree-log.c@v5.15)",
        metric: "fsync_skips",
        also: &[],
        hit: false,
    },
    Switch {
        toggle: Toggle::SuperCommitted,
        commit: Some("d0c2f4fa555e"),
        since: (5, 12),
        merged: "5.12",
        source: "\"btrfs: make concurrent fsyncs wait less when waiting for a transaction commit\" (TRANS_STATE_SUPER_COMMITTED, fs/btrfs/transaction.h@v5.12)",
        metric: "wait_for_commit_ns",
        also: &[],
        hit: false,
    },
    Switch {
        toggle: Toggle::PreemptWorker,
        commit: Some("576fa34830af"),
        since: (5, 12),
        merged: "5.12",
        source: "fs/btrfs/space-info.c:btrfs_preempt_reclaim_metadata_space@v5.12",
        metric: "preempt_flushes",
        also: &[],
        hit: false,
    },
    space(SpacePatch::CheckWorkerFirst, None, (5, 14)),
    space(SpacePatch::ClampOnce, None, (5, 14)),
    space(SpacePatch::GlobalRsvFull, None, (5, 14)),
    space(SpacePatch::GlobalRsvThresh, None, (5, 14)),
    space(SpacePatch::GlobalRsvUsed, None, (5, 14)),
    space(SpacePatch::HalfOrdered, None, (5, 14)),
    space(SpacePatch::OneShotDelalloc, None, (5, 14)),
    space(SpacePatch::Full90, Some("93c60b17f2b5"), (5, 15)),
    space(SpacePatch::GlobalMajority, Some("114623979405"), (5, 15)),
    Switch {
        toggle: Toggle::Log(LogPatch::SkipUnchangedDirs),
        commit: Some("8be2ba2e0e11"),
        since: (5, 15),
        merged: "5.15",
        source: "linux-btrfs 2021-07-29 \"[PATCH] btrfs: avoid unnecessarily logging directories that had no changes\" (fs/btrfs/tree-log.c:need_log_inode), kdave/linux for-5.15",
        metric: "unnecessary_dir_logs",
        also: &[],
        hit: true,
    },
    Switch {
        toggle: Toggle::Log(LogPatch::SubTransStamp),
        commit: Some("bc0939fcfab0"),
        since: (5, 13),
        merged: "5.13 (stable 5.10.y backport posted 2021-08-28)",
        source: "fs/btrfs/transaction.h:btrfs_set_inode_last_trans, inode.c:btrfs_page_mkwrite (stable posting of \"btrfs: fix race between marking inode needs to be logged and log syncing\", Anand Jain, 2021-08-28)",
        metric: "torn_log_stamps",
        also: &[],
        hit: true,
    },
    // The lock itself is no waste remover: what it costs is its wait class.
    Switch {
        toggle: Toggle::Log(LogPatch::IMmapLock),
        commit: Some("8318ba79eeeb"),
        since: (5, 13),
        merged: "5.13",
        source: "linux-btrfs 2020-12-14 \"[PATCH 1/4] btrfs: add a i_mmap_lock to our inode\" (inode.c:btrfs_page_mkwrite, btrfs_inode_lock) and 8d9b4a162a37 \"btrfs: exclude mmap from happening during all fallocate operations\" (file.c:btrfs_fallocate, btrfs_punch_hole), Josef Bacik",
        metric: "inode.i_mmap_lock_ns",
        also: &[],
        hit: false,
    },
    Switch {
        toggle: Toggle::Log(LogPatch::MmapLockFsync),
        commit: Some("885f46d87f29"),
        since: (5, 13),
        merged: "5.13",
        source: "linux-btrfs 2021-02-23 \"[PATCH 1/3] btrfs: fix race between memory mapped writes and fsync\" (cover.1614081281.git.fdmanana@suse.com; file.c:btrfs_sync_file)",
        metric: "log_copy_raced_extents",
        also: &[],
        hit: true,
    },
    Switch {
        toggle: Toggle::Log(LogPatch::SkipUnchangedXattrs),
        commit: Some("b590b839720c"),
        since: (5, 14),
        merged: "5.14",
        source: "linux-btrfs 2021-05-28 \"btrfs: avoid unnecessary logging of xattrs during fast fsyncs\" (fs/btrfs/tree-log.c:btrfs_log_inode), Filipe Manana; in the 5.14 merge of kdave/linux",
        metric: "relogged_xattrs",
        also: &[],
        hit: true,
    },
    Switch {
        toggle: Toggle::Log(LogPatch::FullSyncIfExtentsDropped),
        commit: Some("0d7d316597c0"),
        since: (5, 14),
        merged: "5.14",
        source: "linux-btrfs 2021-05-24 \"[PATCH 3/3] btrfs: don't set the full sync flag when truncation does not touch extents\" (cover.1621851896.git.fdmanana@suse.com; inode.c:btrfs_truncate, btrfs_truncate_inode_items' extents_found)",
        metric: "unneeded_full_syncs",
        also: &[],
        hit: true,
    },
    // A correctness fix: a clone of a hole past EOF is logged; it removes no waste.
    Switch {
        toggle: Toggle::Log(LogPatch::CloneHoleFullSync),
        commit: Some("3660d0bcdb82"),
        since: (5, 12),
        merged: "5.12 (the 5.12-rc2 fixes pull, \"[GIT PULL] Btrfs updates for 5.12-rc2\"; stable 5.10.y, 5.11.y)",
        source: "linux-btrfs 2021-02-16 \"[PATCH] btrfs: fix stale data exposure after cloning a hole with NO_HOLES enabled\" (07067d184eb90be19874190df45cc83f06186307.1613473473.git.fdmanana@suse.com; fs/btrfs/reflink.c:btrfs_clone), xfstests btrfs/231",
        metric: "extent_logs",
        also: &[],
        hit: false,
    },
    log_5_16(
        LogPatch::DropIfLogged,
        "88e221cdacc5",
        "linux-btrfs 2021-08-31 \"[PATCH 05/10]\" of \"btrfs: set of small optimizations for inode logging\" (cover.1630419897.git.fdmanana@suse.com; fs/btrfs/tree-log.c:drop_inode_items, inode_logged), kdave/linux for-5.16-tag",
        "unneeded_log_drops",
    ),
    log_5_16(
        LogPatch::TruncateIfLogged,
        "4934a8150214",
        "linux-btrfs 2021-08-31 \"[PATCH 07/10]\" of \"btrfs: set of small optimizations for inode logging\" (cover.1630419897.git.fdmanana@suse.com; fs/btrfs/tree-log.c:btrfs_log_inode, truncate_inode_items), kdave/linux for-5.16-tag",
        "unneeded_log_truncates",
    ),
    log_5_16(
        LogPatch::KeepDelayedInode,
        "f6df27dd2707",
        "linux-btrfs 2021-08-31 \"[PATCH 10/10]\" of \"btrfs: set of small optimizations for inode logging\" (cover.1630419897.git.fdmanana@suse.com; fs/btrfs/tree-log.c:btrfs_log_inode, btrfs_commit_inode_delayed_inode), kdave/linux for-5.16-tag",
        "fsync_delayed_inode_commits",
    ),
    log_5_16(
        LogPatch::NewNameLoggedTrans,
        "130341be7ffa",
        "linux-btrfs 2021-08-31 \"[PATCH 04/10]\" of \"btrfs: set of small optimizations for inode logging\" (cover.1630419897.git.fdmanana@suse.com; fs/btrfs/tree-log.c:btrfs_log_inode, need_log_inode), kdave/linux for-5.16-tag",
        "inode_logs",
    ),
    Switch {
        toggle: Toggle::Log(LogPatch::PreallocFullFsync),
        commit: Some("d99478874355"),
        since: (5, 17),
        merged: "5.17 (stable 5.10.104, 5.15.27)",
        source: "fs/btrfs/tree-log.c:copy_inode_items_to_log (stable posting \"[PATCH 5.15 254/262]\", 2022-03-07)",
        metric: "extent_logs",
        also: &[],
        hit: false,
    },
];

/// Filipe Manana's seven-patch series "btrfs: more performance improvements for dbench
/// workloads" (linux-btrfs 2021-01-27, cover.1611742865.git.fdmanana@suse.com); the ids are
/// those of David Sterba's for-5.12 branch (kdave/linux next-fixes, pushed 2021-02-22 on
/// v5.11-rc7), merged for 5.12.
const SERIES_5_12: &str = "linux-btrfs 2021-01-27 \"[PATCH n/7]\" (cover.1611742865.git.fdmanana@suse.com), kdave/linux for-5.12, merged for 5.12";

/// An entry of the 5.12 series that changes what is logged (waste: a hit when non-zero).
const fn log_5_12(p: LogPatch, commit: &'static str, metric: &'static str) -> Switch {
    Switch {
        toggle: Toggle::Log(p),
        commit: Some(commit),
        since: (5, 12),
        merged: "5.12",
        source: SERIES_5_12,
        metric,
        also: &[],
        hit: true,
    }
}

/// An entry of Filipe Manana's ten-patch series "btrfs: set of small optimizations for
/// inode logging" (linux-btrfs 2021-08-31, added to misc-next 2021-09-02), merged for 5.16
/// (David Sterba's "[GIT PULL] Btrfs updates for 5.16", for-5.16-tag; the ids are those of
/// the 5.16 merge window's shortlogs). Its metric is a cost every first log of an inode in
/// a transaction paid before, not a sweep hit target.
const fn log_5_16(
    p: LogPatch,
    commit: &'static str,
    source: &'static str,
    metric: &'static str,
) -> Switch {
    Switch {
        toggle: Toggle::Log(p),
        commit: Some(commit),
        since: (5, 16),
        merged: "5.16",
        source,
        metric,
        also: &[],
        hit: false,
    }
}

/// An entry of Filipe Manana's 5.11 series (R1–R6): waste metrics, a hit when non-zero.
const fn series_5_11(f: Fix, metric: &'static str, also: &'static [&'static str]) -> Switch {
    Switch {
        toggle: Toggle::Fix(f),
        commit: None,
        since: (5, 11),
        merged: "5.11",
        source: SERIES_5_11,
        metric,
        also,
        hit: true,
    }
}

/// A preemptive-flushing entry: Josef Bacik's seven patches (2021-04-28, merged for 5.14)
/// or a 5.15 follow-up (the btrfs fsperf thread).
const fn space(p: SpacePatch, commit: Option<&'static str>, since: (u8, u8)) -> Switch {
    Switch {
        toggle: Toggle::Space(p),
        commit,
        since,
        merged: if since.1 == 14 { "5.14" } else { "5.15" },
        source: "fs/btrfs/space-info.c:need_preemptive_reclaim (the btrfs fsperf thread)",
        metric: "unnecessary_preempt_flushes",
        also: &["preempt_flushes"],
        hit: false,
    }
}

impl Switch {
    /// The switch's name: `R1`…`R7`, `super-committed`, `preempt-worker` or the
    /// preemptive-flushing change's name.
    pub fn name(&self) -> &'static str {
        match self.toggle {
            Toggle::Fix(f) => f.name(),
            Toggle::SuperCommitted => "super-committed",
            Toggle::PreemptWorker => "preempt-worker",
            Toggle::Space(p) => p.name(),
            Toggle::Log(p) => p.name(),
        }
    }

    /// The title of the change, as posted.
    pub fn title(&self) -> &'static str {
        match self.toggle {
            Toggle::Fix(f) => f.title(),
            Toggle::SuperCommitted => {
                "btrfs: make concurrent fsyncs wait less when waiting for a transaction commit"
            }
            Toggle::PreemptWorker => "btrfs: introduce a preemptive metadata flushing worker",
            Toggle::Space(p) => p.title(),
            Toggle::Log(p) => p.title(),
        }
    }

    /// Whether `p` has this switch on.
    pub fn is_on(&self, p: &Policy) -> bool {
        match self.toggle {
            Toggle::Fix(f) => p.has(f),
            Toggle::SuperCommitted => p.super_committed,
            Toggle::PreemptWorker => p.preempt.is_some(),
            Toggle::Space(s) => p.space(s),
            Toggle::Log(l) => p.log(l),
        }
    }

    /// Turns this switch on in `p`.
    fn apply(&self, p: &mut Policy) {
        match self.toggle {
            Toggle::Fix(f) => {
                p.fixes.insert(f);
            }
            Toggle::SuperCommitted => p.super_committed = true,
            Toggle::PreemptWorker => {
                p.preempt.get_or_insert_with(Default::default);
            }
            Toggle::Space(s) => {
                p.preempt.get_or_insert_with(Default::default).insert(s);
            }
            Toggle::Log(l) => {
                p.log.insert(l);
            }
        }
    }
}

/// The registry entry of a race fix.
pub fn of_fix(f: Fix) -> &'static Switch {
    SWITCHES
        .iter()
        .find(|s| s.toggle == Toggle::Fix(f))
        .expect("every Fix has a registry entry")
}

/// The switch named `name` (case-insensitive for R1–R7).
pub fn by_name(name: &str) -> Option<&'static Switch> {
    let n = name.trim();
    SWITCHES.iter().find(|s| s.name().eq_ignore_ascii_case(n))
}

/// The metrics whose non-zero value is waste (sweep and shrink targets), in registry
/// order without repeats.
pub fn waste_targets() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for s in SWITCHES.iter().filter(|s| s.hit) {
        for m in std::iter::once(s.metric).chain(s.also.iter().copied()) {
            if !v.contains(&m) {
                v.push(m);
            }
        }
    }
    v
}

/// btrfs of release `(major, minor)`: every switch merged by then (releases before 5.10
/// are not modelled for btrfs: they get 5.10's switches).
pub fn release(at: (u8, u8)) -> Policy {
    let at = at.max((5, 10));
    let mut p = Policy {
        kernel: if at >= (5, 11) {
            super::Kernel::V5_11
        } else {
            super::Kernel::V5_10
        },
        ..Policy::default()
    };
    for s in SWITCHES.iter().filter(|s| s.since <= at) {
        s.apply(&mut p);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fix_and_space_patch_has_exactly_one_entry() {
        let toggles = Fix::ALL
            .map(Toggle::Fix)
            .into_iter()
            .chain(SpacePatch::ALL.map(Toggle::Space))
            .chain(LogPatch::ALL.map(Toggle::Log));
        for t in toggles {
            let n = SWITCHES.iter().filter(|s| s.toggle == t).count();
            assert_eq!(n, 1, "{t:?}");
        }
    }

    #[test]
    fn a_release_has_the_switches_merged_by_then() {
        let p = release((5, 13));
        for s in &SWITCHES {
            assert_eq!(s.is_on(&p), s.since <= (5, 13), "{}", s.name());
        }
        assert_eq!(release((2, 6)), release((5, 10)));
    }
}
