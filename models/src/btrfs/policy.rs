//! Kernel policies: which of the fixes R1–R7 are applied, and deliberately broken mutants.
//!
//! R1–R6 are Filipe Manana's tree-log series (seed 000, patches 1/6–6/6, merged for 5.11);
//! R7 is the 2015 fast-fsync regression fix (seed 001), present in 5.10.

use std::collections::BTreeSet;

/// One of the races fsyncsim replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fix {
    /// btrfs_log_new_name: compare logged_trans with trans->transid, not last_trans_committed.
    R1,
    /// btrfs_log_changed_extents: skip extent maps with generation < trans->transid.
    R2,
    /// log_new_ancestors: log an ancestor only if generation >= trans->transid.
    R3,
    /// last_unlink_trans compared with trans->transid everywhere.
    R4,
    /// btrfs_log_inode_parent: drop the last_trans_log_full_commit > last_trans_committed check.
    R5,
    /// start_log_trans creates the log root tree under the tree root's log_mutex;
    /// tree_log_mutex is taken only in btrfs_sync_log before writing the superblock.
    R6,
    /// btrfs_sync_file: skip the log sync when nothing changed since the last commit.
    R7,
}

impl Fix {
    /// All fixes, in order.
    pub const ALL: [Fix; 7] = [
        Fix::R1,
        Fix::R2,
        Fix::R3,
        Fix::R4,
        Fix::R5,
        Fix::R6,
        Fix::R7,
    ];

    /// "R1".."R7".
    pub fn name(self) -> &'static str {
        ["R1", "R2", "R3", "R4", "R5", "R6", "R7"][self as usize]
    }

    /// Parses "R1".."R7" (case-insensitive).
    pub fn parse(s: &str) -> Option<Fix> {
        Fix::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
    }

    /// The patch title, as posted (seed 000 patches 1/6–6/6; seed 001).
    pub fn title(self) -> &'static str {
        match self {
            Fix::R1 => "btrfs: fix race causing unnecessary inode logging during link and rename",
            Fix::R2 => "btrfs: fix race that results in logging old extents during a fast fsync",
            Fix::R3 => "btrfs: fix race that causes unnecessary logging of ancestor inodes",
            Fix::R4 => "btrfs: fix race that makes inode logging fallback to transaction commit",
            Fix::R5 => {
                "btrfs: fix race leading to unnecessary transaction commit when logging inode"
            }
            Fix::R6 => "btrfs: do not block inode logging for so long during transaction commit",
            Fix::R7 => "Btrfs: avoid syncing log in the fast fsync path when not necessary",
        }
    }
}

/// Deliberately broken variants that the invariant checks must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutant {
    /// btrfs_sync_log writes its superblock without taking tree_log_mutex, i.e. without
    /// waiting for the previous transaction's superblock (breaks S1, and S2 on a crash).
    SyncLogNoSuperWait,
    /// btrfs_sync_log skips the cache flush before its superblock (PREFLUSH dropped): the
    /// log blocks may not be durable when the superblock pointing at them is (breaks S2).
    SyncLogNoPreflush,
    /// btrfs_sync_file skips logging whenever the inode was logged in an earlier
    /// transaction, even with new changes (breaks S2).
    SkipLogWhenLoggedBefore,
    /// The commit takes the subvolume's log_mutex while holding tree_log_mutex, the opposite
    /// order of start_log_trans and btrfs_sync_log (deadlocks: S3).
    CommitTakesLogMutex,
    /// A directory's fsync logs only its inode item: no dir entries, no new dentries'
    /// inodes (breaks S2: a new name the fsync promised is lost in a crash).
    DirFsyncLogsItemOnly,
    /// Unlink and rename leave the removed name in a log that holds the directory or the
    /// inode (no btrfs_del_dir_entries_in_log / btrfs_del_inode_ref_in_log): replay brings
    /// the name back (breaks S2).
    UnlinkKeepsLoggedNames,
    /// A hole punch adds no hole extent map to the modified list (fill_holes skipped): a
    /// fast fsync leaves the old data in the punched range (breaks S2).
    PunchHoleLogsNoHole,
    /// A fast fsync logs the inode without its xattrs (btrfs_log_all_xattrs skipped):
    /// an xattr set before a returned fsync is lost (breaks S2).
    FsyncSkipsXattrs,
}

impl Mutant {
    /// All mutants.
    pub const ALL: [Mutant; 8] = [
        Mutant::SyncLogNoSuperWait,
        Mutant::SyncLogNoPreflush,
        Mutant::SkipLogWhenLoggedBefore,
        Mutant::CommitTakesLogMutex,
        Mutant::DirFsyncLogsItemOnly,
        Mutant::UnlinkKeepsLoggedNames,
        Mutant::PunchHoleLogsNoHole,
        Mutant::FsyncSkipsXattrs,
    ];

    /// Kebab-case name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::SyncLogNoSuperWait => "sync-log-no-super-wait",
            Mutant::SyncLogNoPreflush => "sync-log-no-preflush",
            Mutant::SkipLogWhenLoggedBefore => "skip-log-when-logged-before",
            Mutant::CommitTakesLogMutex => "commit-takes-log-mutex",
            Mutant::DirFsyncLogsItemOnly => "dir-fsync-logs-item-only",
            Mutant::UnlinkKeepsLoggedNames => "unlink-keeps-logged-names",
            Mutant::PunchHoleLogsNoHole => "punch-hole-logs-no-hole",
            Mutant::FsyncSkipsXattrs => "fsync-skips-xattrs",
        }
    }

    /// What it breaks.
    pub fn description(self) -> &'static str {
        match self {
            Mutant::SyncLogNoSuperWait => "log sync writes its superblock without waiting for the previous commit's superblock (S1)",
            Mutant::SyncLogNoPreflush => "log sync writes its superblock without a preceding cache flush (S2)",
            Mutant::SkipLogWhenLoggedBefore => "fsync skips logging an inode changed since it was last logged (S2)",
            Mutant::CommitTakesLogMutex => "commit takes log_mutex inside tree_log_mutex, the reverse of the log paths (S3)",
            Mutant::DirFsyncLogsItemOnly => "a directory's fsync logs its inode item but not its entries or new dentries (S2)",
            Mutant::UnlinkKeepsLoggedNames => "unlink and rename leave the removed name in the log (no btrfs_del_dir_entries_in_log / btrfs_del_inode_ref_in_log) (S2)",
            Mutant::PunchHoleLogsNoHole => "a hole punch puts no hole extent map on the modified list: a fast fsync keeps the old data (S2)",
            Mutant::FsyncSkipsXattrs => "an fsync logs the inode without its xattrs (S2)",
        }
    }

    /// Parses a mutant name.
    pub fn parse(s: &str) -> Option<Mutant> {
        Mutant::ALL.into_iter().find(|m| m.name() == s.trim())
    }
}

/// The kernel release whose behaviour outside the fixes R1–R7 a policy follows (changes
/// between releases that are not one of the races: transaction_kthread's sleep, where
/// `log_batch` is counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kernel {
    /// Linux 5.10.
    V5_10,
    /// Linux 5.11.
    V5_11,
}

/// One change to btrfs's preemptive metadata flushing (seed 004, F1): Josef Bacik's seven
/// patches merged for 5.14, and two 5.15 follow-ups kept apart (../shared/MODELS-J1-F1-H1.md
/// F1.6; fs/btrfs/space-info.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpacePatch {
    /// 1/7: check `work_busy()` before need_preemptive_reclaim (CPU only).
    CheckWorkerFirst,
    /// 2/7: maybe_clamp_preempt only when a ticket starts an async episode.
    ClampOnce,
    /// 3/7: the global reserve counts in the "almost full" test (U+R+G ≥ 98 %).
    GlobalRsvFull,
    /// 4/7: the global reserve is taken out of the free space in the threshold.
    GlobalRsvThresh,
    /// 5/7: the global reserve is not counted in the preemptive "used" amount.
    GlobalRsvUsed,
    /// 6/7: ordered counted at half before comparing with delalloc.
    HalfOrdered,
    /// 7/7: preemptive delalloc flushing starts once, without waiting for ordered extents.
    OneShotDelalloc,
    /// 5.15 follow-up 93c60b17f2b5: the "almost full" test at 90 %.
    Full90,
    /// 5.15 follow-up 114623979405: no preemptive flushing when the global reserve is the
    /// majority of what is used.
    GlobalMajority,
}

impl SpacePatch {
    /// All, in order.
    pub const ALL: [SpacePatch; 9] = [
        SpacePatch::CheckWorkerFirst,
        SpacePatch::ClampOnce,
        SpacePatch::GlobalRsvFull,
        SpacePatch::GlobalRsvThresh,
        SpacePatch::GlobalRsvUsed,
        SpacePatch::HalfOrdered,
        SpacePatch::OneShotDelalloc,
        SpacePatch::Full90,
        SpacePatch::GlobalMajority,
    ];

    /// The seven patches of the 5.14 series (the first seven of `ALL`).
    pub const SERIES: &'static [SpacePatch] = SpacePatch::ALL.split_at(7).0;

    /// Switch name (`:+NAME` / `:-NAME` after a preset).
    pub fn name(self) -> &'static str {
        match self {
            SpacePatch::CheckWorkerFirst => "check-worker-first",
            SpacePatch::ClampOnce => "clamp-once",
            SpacePatch::GlobalRsvFull => "global-rsv-full",
            SpacePatch::GlobalRsvThresh => "global-rsv-thresh",
            SpacePatch::GlobalRsvUsed => "global-rsv-used",
            SpacePatch::HalfOrdered => "half-ordered",
            SpacePatch::OneShotDelalloc => "one-shot-delalloc",
            SpacePatch::Full90 => "full-90",
            SpacePatch::GlobalMajority => "global-majority",
        }
    }

    /// The patch title, as posted.
    pub fn title(self) -> &'static str {
        match self {
            SpacePatch::CheckWorkerFirst => "btrfs: check worker before need_preemptive_reclaim",
            SpacePatch::ClampOnce => "btrfs: only clamp the first time we have to start flushing",
            SpacePatch::GlobalRsvFull => "btrfs: take into account global rsv in need_preemptive_reclaim",
            SpacePatch::GlobalRsvThresh => "btrfs: use the global rsv size in the preemptive thresh calculation",
            SpacePatch::GlobalRsvUsed => "btrfs: don't include the global rsv size in the preemptive used amount",
            SpacePatch::HalfOrdered => "btrfs: only ignore delalloc if delalloc is much smaller than ordered",
            SpacePatch::OneShotDelalloc => "btrfs: handle preemptive delalloc flushing slightly differently",
            SpacePatch::Full90 => "5.15 follow-up 93c60b17f2b5: the almost-full test at 90 % instead of 98 %",
            SpacePatch::GlobalMajority => "5.15 follow-up 114623979405: do not do preemptive flushing if the majority is global rsv",
        }
    }

    /// Parses a switch name.
    pub fn parse(s: &str) -> Option<SpacePatch> {
        SpacePatch::ALL.into_iter().find(|p| p.name() == s.trim())
    }
}

/// The kernel behaviour a run simulates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Name shown in reports ("linux-5.11", "linux-5.11 without R1", …).
    pub name: String,
    /// Fixes applied.
    pub fixes: BTreeSet<Fix>,
    /// Mutants enabled.
    pub mutants: BTreeSet<Mutant>,
    /// Tasks waiting for another task's commit return at SUPER_COMMITTED (5.12+) instead
    /// of COMPLETED.
    pub super_committed: bool,
    /// The release the rest of the behaviour follows.
    pub kernel: Kernel,
    /// The preemptive metadata reclaim worker (5.12+) with the F1 changes applied; None
    /// before 5.12 (no preemptive worker).
    pub preempt: Option<BTreeSet<SpacePatch>>,
    /// ext3/ext4: how the journal writes its commits and how ext4's fsync waits (seed 003).
    pub journal: crate::jbd2::JournalPolicy,
}

/// Policy preset names (the 2.6 ones matter for ext3/ext4 runs only).
pub const PRESETS: [&str; 11] = [
    "linux-2.6.36",
    "linux-2.6.37",
    "linux-2.6.38",
    "jan-rfc",
    "linux-2.6.39",
    "linux-5.10",
    "linux-5.11",
    "linux-5.12",
    "linux-5.13",
    "linux-5.14",
    "linux-5.15",
];

impl Policy {
    /// A preset: `linux-5.10` (R7 fixed, R1–R6 not), `linux-5.11` (all fixed) or
    /// `linux-5.12` (5.11 with SUPER_COMMITTED waiters).
    pub fn preset(name: &str) -> Option<Policy> {
        use crate::jbd2::{CommitWriteOp as W, JournalPolicy};
        // Seed 003 (MODELS-J1-F1-H1.md J1.1): jbd2/jbd commit write type per release;
        // ext4_sync_file waits only for a commit it started from 2.6.37 to 3.0
        // (fs/ext4/fsync.c@v2.6.37; "ext4: fix waiting and sending of a barrier in
        // ext4_sync_file", 3.0).
        let old = |jbd2: W, jbd: W| JournalPolicy {
            jbd2,
            jbd,
            ext4_fsync_waits_only_if_started: true,
        };
        let journal = match name {
            "linux-2.6.36" => old(W::Write, W::Write),
            "linux-2.6.37" | "linux-2.6.38" => old(W::WriteSync, W::WriteSync),
            "jan-rfc" => old(W::WaitedAtLock, W::WaitedAtLock),
            "linux-2.6.39" => old(W::WriteSync, W::WaitedAtFlush),
            _ => JournalPolicy::default(),
        };
        let (fixes, kernel, super_committed): (BTreeSet<Fix>, Kernel, bool) = match name {
            // btrfs of these releases is not modelled; their btrfs switches are 5.10's.
            "linux-2.6.36" | "linux-2.6.37" | "linux-2.6.38" | "jan-rfc" | "linux-2.6.39" => {
                ([Fix::R7].into(), Kernel::V5_10, false)
            }
            "linux-5.10" => ([Fix::R7].into(), Kernel::V5_10, false),
            "linux-5.11" => (Fix::ALL.into(), Kernel::V5_11, false),
            // 5.12: "btrfs: make concurrent fsyncs wait less when waiting for a transaction
            // commit" adds TRANS_STATE_SUPER_COMMITTED (fs/btrfs/transaction.h@v5.12).
            "linux-5.12" | "linux-5.13" | "linux-5.14" | "linux-5.15" => {
                (Fix::ALL.into(), Kernel::V5_11, true)
            }
            _ => return None,
        };
        // The preemptive worker arrives in 5.12 (576fa34830af); the seven F1 patches in
        // 5.14; the two follow-ups in 5.15 (MODELS-J1-F1-H1.md F1.1).
        let preempt = match name {
            "linux-5.12" | "linux-5.13" => Some(BTreeSet::new()),
            "linux-5.14" => Some(SpacePatch::SERIES.iter().copied().collect()),
            "linux-5.15" => Some(SpacePatch::ALL.into()),
            _ => None,
        };
        Some(Policy {
            name: name.to_string(),
            fixes,
            mutants: BTreeSet::new(),
            super_committed,
            kernel,
            preempt,
            journal,
        })
    }

    /// Whether a fix is applied.
    pub fn has(&self, f: Fix) -> bool {
        self.fixes.contains(&f)
    }

    /// Whether a mutant is enabled.
    pub fn mutant(&self, m: Mutant) -> bool {
        self.mutants.contains(&m)
    }

    /// This policy with `f` removed, renamed "<name> without <f>".
    pub fn without(&self, f: Fix) -> Policy {
        let mut p = self.clone();
        if p.fixes.remove(&f) {
            p.name = format!("{} without {}", p.name, f.name());
        }
        p
    }

    /// This policy with `f` added, renamed "<name> with <f>".
    pub fn with(&self, f: Fix) -> Policy {
        let mut p = self.clone();
        if p.fixes.insert(f) {
            p.name = format!("{} with {}", p.name, f.name());
        }
        p
    }

    /// This policy with a mutant enabled.
    pub fn with_mutant(&self, m: Mutant) -> Policy {
        let mut p = self.clone();
        if p.mutants.insert(m) {
            p.name = format!("{} +{}", p.name, m.name());
        }
        p
    }

    /// This policy with commit waiters released at SUPER_COMMITTED (5.12+).
    pub fn with_super_committed(&self) -> Policy {
        let mut p = self.clone();
        if !p.super_committed {
            p.super_committed = true;
            p.name = format!("{} +SUPER_COMMITTED", p.name);
        }
        p
    }

    /// Whether a preemptive-flushing change is applied.
    pub fn space(&self, p: SpacePatch) -> bool {
        self.preempt.as_ref().is_some_and(|s| s.contains(&p))
    }

    /// This policy with a preemptive-flushing change added (`+`) or removed (`-`).
    pub fn with_space(&self, p: SpacePatch, on: bool) -> Policy {
        let mut q = self.clone();
        let set = q.preempt.get_or_insert_with(BTreeSet::new);
        let changed = if on { set.insert(p) } else { set.remove(&p) };
        if changed {
            q.name = format!("{} {}{}", q.name, if on { "+" } else { "-" }, p.name());
        }
        q
    }

    /// "R1,R2,…" of the applied fixes.
    pub fn fix_list(&self) -> Vec<String> {
        self.fixes.iter().map(|f| f.name().to_string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_match_the_kernels() {
        let p10 = Policy::preset("linux-5.10").unwrap();
        assert!(p10.has(Fix::R7) && !p10.has(Fix::R1) && !p10.has(Fix::R6));
        let p11 = Policy::preset("linux-5.11").unwrap();
        assert!(Fix::ALL.iter().all(|&f| p11.has(f)));
        let pre = p11.without(Fix::R4);
        assert_eq!(pre.name, "linux-5.11 without R4");
        assert!(!pre.has(Fix::R4) && pre.has(Fix::R5));
        assert_eq!(Fix::parse("r6"), Some(Fix::R6));
        assert_eq!(Fix::parse("R8"), None);
        assert_eq!(
            Mutant::parse("sync-log-no-super-wait"),
            Some(Mutant::SyncLogNoSuperWait)
        );
    }
}
