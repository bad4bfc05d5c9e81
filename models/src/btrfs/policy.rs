//! Kernel policies: which of the fixes R1–R7 are applied, and deliberately broken mutants.
//!
//! R1–R6 are Filipe Manana's tree-log series (the btrfs dbench thread, patches 1/6–6/6,
//! merged for 5.11); R7 is the 2015 fast-fsync regression fix (the btrfs sysbench thread),
//! present in 5.10. Where each switch comes from is in `switches::SWITCHES`.

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

    /// The patch title, as posted.
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
    /// No inode lock anywhere (write, fsync, setattr, truncate, fallocate, punch hole,
    /// setxattr): one task's write and logging overlap another's logging of the same inode,
    /// as in the model before issue 26 (the inode's log_mutex is still taken; breaks S2).
    NoInodeLock,
    /// btrfs_log_inode copies a new inode's refs without btrfs_check_ref_name_override /
    /// log_conflicting_inodes: an inode that held one of its names in the commit root is
    /// not logged, and replay leaves it without a name (breaks S2; xfstests generic/342).
    NoConflictingInodes,
    /// A fast fsync logs no extent items past i_size but the changed ones (no
    /// btrfs_log_prealloc_extents): replay's truncate to the logged size drops committed
    /// preallocated extents past EOF (breaks S2; xfstests generic/483).
    NoPreallocExtentLogging,
    /// A growing truncate, or a write past EOF, leaves the new range without a hole (no
    /// btrfs_cont_expand hole item or extent map): the fsync logs no hole and replay keeps
    /// bytes truncated away before (breaks S2; xfstests generic/101).
    GrowingTruncateNoHole,
    /// Unlinking one name of a file with several hard links leaves the remaining inode
    /// untouched (no btrfs_update_inode in btrfs_unlink_inode): its last_trans stays
    /// committed, the next fsync is skipped and the removed name comes back from the
    /// committed tree (breaks S2; xfstests generic/039, 106, 107, 336).
    UnlinkNoInodeUpdate,
    /// An inode evicted and read back in the transaction that last changed it does not get
    /// BTRFS_INODE_NEEDS_FULL_SYNC (btrfs_read_locked_inode's check skipped): its next
    /// fsync takes the fast path over the new, empty modified-extents list and logs none of
    /// the extents written before the eviction (breaks S2).
    EvictNoFullSync,
    /// A clone leaves the destination without BTRFS_INODE_NEEDS_FULL_SYNC (the set_bit at
    /// the end of btrfs_punch_hole_range / btrfs_replace_file_extents skipped): its next
    /// fsync takes the fast path over the modified list, where no cloned extent is, and
    /// the cloned range is lost (breaks S2; xfstests generic/501, 588, btrfs/098).
    CloneNoFullSync,
    /// log_new_dir_dentries logs a new symlink LOG_INODE_EXISTS like any other
    /// non-directory (its `type == BTRFS_FT_SYMLINK` clause dropped, the fix "Btrfs: fix
    /// empty symlink after creating symlink and fsync parent dir", 4.7): a directory's
    /// fsync logs the symlink's inode item without its inline extent and replay leaves it
    /// empty (breaks S2; xfstests generic/348).
    SymlinkLoggedExists,
    /// A buffered write past EOF neither expands the file (no btrfs_cont_expand hole) nor
    /// lands at its offset: its pages are appended at i_size, as the model wrote such a
    /// write before (the file comes back short; xfstests generic/322).
    EofWriteAppends,
    /// A direct write past EOF leaves disk_i_size where it was at ordered-extent
    /// completion (no btrfs_inode_safe_disk_i_size_write in btrfs_finish_ordered_io): the
    /// logged and committed inode keeps its old size and the new bytes read as past EOF
    /// (xfstests generic/552).
    DioNoSizeUpdate,
}

impl Mutant {
    /// All mutants.
    pub const ALL: [Mutant; 18] = [
        Mutant::SyncLogNoSuperWait,
        Mutant::SyncLogNoPreflush,
        Mutant::SkipLogWhenLoggedBefore,
        Mutant::CommitTakesLogMutex,
        Mutant::DirFsyncLogsItemOnly,
        Mutant::UnlinkKeepsLoggedNames,
        Mutant::PunchHoleLogsNoHole,
        Mutant::FsyncSkipsXattrs,
        Mutant::NoInodeLock,
        Mutant::NoConflictingInodes,
        Mutant::NoPreallocExtentLogging,
        Mutant::GrowingTruncateNoHole,
        Mutant::UnlinkNoInodeUpdate,
        Mutant::EvictNoFullSync,
        Mutant::CloneNoFullSync,
        Mutant::SymlinkLoggedExists,
        Mutant::EofWriteAppends,
        Mutant::DioNoSizeUpdate,
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
            Mutant::NoInodeLock => "no-inode-lock",
            Mutant::NoConflictingInodes => "no-conflicting-inodes",
            Mutant::NoPreallocExtentLogging => "no-prealloc-extent-logging",
            Mutant::GrowingTruncateNoHole => "growing-truncate-no-hole",
            Mutant::UnlinkNoInodeUpdate => "unlink-no-inode-update",
            Mutant::EvictNoFullSync => "evict-no-full-sync",
            Mutant::CloneNoFullSync => "clone-no-full-sync",
            Mutant::SymlinkLoggedExists => "symlink-logged-exists",
            Mutant::EofWriteAppends => "eof-write-appends",
            Mutant::DioNoSizeUpdate => "dio-no-size-update",
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
            Mutant::NoInodeLock => "no inode lock (i_rwsem) in write, fsync, setattr, truncate, fallocate, punch hole, setxattr: two fsyncers of one file log it at once (S2)",
            Mutant::NoConflictingInodes => "a new inode's names are logged without logging the inode that held them in the commit root (no log_conflicting_inodes): that inode loses its name (S2)",
            Mutant::NoPreallocExtentLogging => "a fast fsync copies no extent items past i_size but the changed ones (no btrfs_log_prealloc_extents): replay drops committed preallocated extents past EOF (S2)",
            Mutant::GrowingTruncateNoHole => "a growing truncate or a write past EOF makes no hole (no btrfs_cont_expand): bytes truncated away before come back after replay (S2)",
            Mutant::UnlinkNoInodeUpdate => "unlinking a hard link does not update the remaining inode (no btrfs_update_inode): its fsync is skipped and the removed name comes back (S2)",
            Mutant::EvictNoFullSync => "an inode evicted and read back in the transaction that changed it gets no NEEDS_FULL_SYNC: its fsync logs none of the extents written before the eviction (S2)",
            Mutant::CloneNoFullSync => "a clone does not set NEEDS_FULL_SYNC on the destination: its fast fsync logs none of the cloned extents (S2)",
            Mutant::SymlinkLoggedExists => "a directory's fsync logs a new symlink LOG_INODE_EXISTS (no inline extent): it comes back empty (S2)",
            Mutant::EofWriteAppends => "a buffered write past EOF makes no hole (no btrfs_cont_expand) and appends its pages at i_size: the file comes back short",
            Mutant::DioNoSizeUpdate => "a direct write past EOF leaves disk_i_size unchanged at ordered-extent completion: the new bytes are past EOF after recovery",
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kernel {
    /// Linux 5.10.
    #[default]
    V5_10,
    /// Linux 5.11.
    V5_11,
}

/// One change to btrfs's preemptive metadata flushing (the btrfs fsperf thread): Josef
/// Bacik's seven patches merged for 5.14, and two 5.15 follow-ups kept apart
/// (fs/btrfs/space-info.c:need_preemptive_reclaim).
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

/// The 5.12 tree-log changes of Filipe Manana's series "btrfs: more performance
/// improvements for dbench workloads" that change what an fsync logs or when it falls back
/// to a full commit (the series' other switch is `super_committed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogPatch {
    /// log_new_ancestors(_fast): an ancestor new in this transaction is logged only if
    /// need_log_inode says it is not already logged (ab12313a9f56).
    SkipLoggedAncestors,
    /// btrfs_log_all_parents: a parent directory already logged in this transaction is
    /// skipped (3e6a86a193b0).
    SkipLoggedParents,
    /// log_new_dir_dentries: an inode of a new entry already logged is skipped
    /// (0e44cb3f9428).
    SkipLoggedNewEntries,
    /// check_parent_dirs_for_sync removed: only a directory logged in full whose
    /// last_unlink_trans is this transaction makes the fsync fall back (64d6b281ba4d).
    NoParentDirsCheck,
    /// btrfs_del_dir_entries_in_log no longer updates the logged directory's inode item
    /// (its i_size) after deleting a name from the log (ddffcf6fb5ac).
    NoDirIsizeUpdate,
    /// fill_inode_item no longer sets nbytes in the log copy (inode_get_bytes, which
    /// takes the inode's i_lock, is no longer called) (e593e54ed1f6).
    NoLogNbytes,
    /// need_log_inode: a directory not changed in the running transaction (last_trans
    /// older) is not logged (8be2ba2e0e11, 5.15).
    SkipUnchangedDirs,
    /// A full fsync logs the extent items at or past i_size with btrfs_log_prealloc_extents
    /// too, as the fast fsync does (d99478874355, 5.17; stable 5.10.104, 5.15.27): in no
    /// release preset.
    PreallocFullFsync,
    /// btrfs_set_inode_last_trans sets last_log_commit to last_sub_trans - 1 and
    /// btrfs_page_mkwrite sets only last_sub_trans, under i_lock (bc0939fcfab0, 5.13).
    SubTransStamp,
    /// The inode's i_mmap_lock: btrfs_page_mkwrite takes it shared, fallocate and punch
    /// hole (BTRFS_ILOCK_MMAP) exclusive (8318ba79eeeb, 8d9b4a162a37; 5.13).
    IMmapLock,
    /// btrfs_sync_file takes i_mmap_lock exclusive with the inode lock (BTRFS_ILOCK_MMAP),
    /// so no mapped write dirties a page while the inode is logged (885f46d87f29, 5.13;
    /// needs `i-mmap-lock`).
    MmapLockFsync,
    /// btrfs_log_inode: a fast fsync (LOG_INODE_ALL, no full sync) of an inode already
    /// logged in this transaction with no BTRFS_INODE_COPY_EVERYTHING skips
    /// btrfs_log_all_xattrs (b590b839720c, 5.14).
    SkipUnchangedXattrs,
    /// btrfs_truncate sets BTRFS_INODE_NEEDS_FULL_SYNC only if btrfs_truncate_inode_items
    /// removed or trimmed a file extent item (0d7d316597c0, 5.14).
    FullSyncIfExtentsDropped,
    /// btrfs_clone: a clone whose range ends in a source gap (NO_HOLES: no item) at or
    /// past the destination's i_size sets BTRFS_INODE_NEEDS_FULL_SYNC before punching the
    /// gap, so the full fsync's btrfs_log_holes logs the hole (3660d0bcdb82, 5.12).
    CloneHoleFullSync,
    /// drop_inode_items (a directory, LOG_INODE_EXISTS, BTRFS_INODE_COPY_EVERYTHING) makes
    /// no deletion search of the log tree when inode_logged() says the inode was not logged
    /// in this transaction (88e221cdacc5, 5.16).
    DropIfLogged,
    /// A full sync of a file calls truncate_inode_items on the log tree only when
    /// inode_logged() says it was logged in this transaction (4934a8150214, 5.16).
    TruncateIfLogged,
    /// btrfs_log_inode no longer commits a regular file's delayed inode item into the
    /// subvolume tree on a full sync: the log's copy comes from the in-memory inode
    /// (f6df27dd2707, 5.16).
    KeepDelayedInode,
    /// btrfs_log_inode: LOG_INODE_EXISTS never updates the inode's last_log_commit, not
    /// only after the inode was loaded (full sync flag); a later fsync of it is not skipped
    /// (9acc8103ab59, 5.12).
    ExistsKeepsLogCommit,
    /// btrfs_log_inode: a directory logged as an ancestor of a new name (link, rename) gets
    /// logged_trans like any logged inode; before, it was left unmarked (130341be7ffa,
    /// 5.16).
    NewNameLoggedTrans,
}

impl LogPatch {
    /// All: the 5.12 series in series order, then the later changes.
    pub const ALL: [LogPatch; 19] = [
        LogPatch::SkipLoggedAncestors,
        LogPatch::SkipLoggedParents,
        LogPatch::SkipLoggedNewEntries,
        LogPatch::NoParentDirsCheck,
        LogPatch::NoDirIsizeUpdate,
        LogPatch::NoLogNbytes,
        LogPatch::SkipUnchangedDirs,
        LogPatch::PreallocFullFsync,
        LogPatch::SubTransStamp,
        LogPatch::IMmapLock,
        LogPatch::MmapLockFsync,
        LogPatch::SkipUnchangedXattrs,
        LogPatch::FullSyncIfExtentsDropped,
        LogPatch::CloneHoleFullSync,
        LogPatch::DropIfLogged,
        LogPatch::TruncateIfLogged,
        LogPatch::KeepDelayedInode,
        LogPatch::ExistsKeepsLogCommit,
        LogPatch::NewNameLoggedTrans,
    ];

    /// Switch name (`:+NAME` / `:-NAME` after a preset).
    pub fn name(self) -> &'static str {
        match self {
            LogPatch::SkipLoggedAncestors => "skip-logged-ancestors",
            LogPatch::SkipLoggedParents => "skip-logged-parents",
            LogPatch::SkipLoggedNewEntries => "skip-logged-new-entries",
            LogPatch::NoParentDirsCheck => "no-parent-dirs-check",
            LogPatch::NoDirIsizeUpdate => "no-dir-isize-update",
            LogPatch::NoLogNbytes => "no-log-nbytes",
            LogPatch::SkipUnchangedDirs => "skip-unchanged-dirs",
            LogPatch::PreallocFullFsync => "prealloc-full-fsync",
            LogPatch::SubTransStamp => "sub-trans-stamp",
            LogPatch::IMmapLock => "i-mmap-lock",
            LogPatch::MmapLockFsync => "mmap-lock-fsync",
            LogPatch::SkipUnchangedXattrs => "skip-unchanged-xattrs",
            LogPatch::FullSyncIfExtentsDropped => "full-sync-if-extents-dropped",
            LogPatch::CloneHoleFullSync => "clone-hole-full-sync",
            LogPatch::DropIfLogged => "drop-if-logged",
            LogPatch::TruncateIfLogged => "truncate-if-logged",
            LogPatch::KeepDelayedInode => "keep-delayed-inode",
            LogPatch::ExistsKeepsLogCommit => "exists-keeps-log-commit",
            LogPatch::NewNameLoggedTrans => "new-name-logged-trans",
        }
    }

    /// The patch title, as posted.
    pub fn title(self) -> &'static str {
        match self {
            LogPatch::SkipLoggedAncestors => {
                "btrfs: avoid logging new ancestor inodes when logging new inode"
            }
            LogPatch::SkipLoggedParents => {
                "btrfs: skip logging directories already logged when logging all parents"
            }
            LogPatch::SkipLoggedNewEntries => {
                "btrfs: skip logging inodes already logged when logging new entries"
            }
            LogPatch::NoParentDirsCheck => "btrfs: remove unnecessary check_parent_dirs_for_sync()",
            LogPatch::NoDirIsizeUpdate => {
                "btrfs: remove unnecessary directory inode item update when deleting dir entry"
            }
            LogPatch::NoLogNbytes => {
                "btrfs: stop setting nbytes when filling inode item for logging"
            }
            LogPatch::SkipUnchangedDirs => {
                "btrfs: avoid unnecessarily logging directories that had no changes"
            }
            LogPatch::PreallocFullFsync => {
                "btrfs: fix lost prealloc extents beyond eof after full fsync"
            }
            LogPatch::SubTransStamp => {
                "btrfs: fix race between marking inode needs to be logged and log syncing"
            }
            LogPatch::IMmapLock => "btrfs: add a i_mmap_lock to our inode",
            LogPatch::MmapLockFsync => "btrfs: fix race between memory mapped writes and fsync",
            LogPatch::SkipUnchangedXattrs => {
                "btrfs: avoid unnecessary logging of xattrs during fast fsyncs"
            }
            LogPatch::FullSyncIfExtentsDropped => {
                "btrfs: don't set the full sync flag when truncation does not touch extents"
            }
            LogPatch::CloneHoleFullSync => {
                "btrfs: fix stale data exposure after cloning a hole with NO_HOLES enabled"
            }
            LogPatch::DropIfLogged => {
                "btrfs: avoid expensive search when dropping inode items from log"
            }
            LogPatch::TruncateIfLogged => {
                "btrfs: avoid expensive search when truncating inode items from the log"
            }
            LogPatch::KeepDelayedInode => {
                "btrfs: do not commit delayed inode when logging a file in full sync mode"
            }
            LogPatch::ExistsKeepsLogCommit => {
                "btrfs: fix unpersisted i_size on fsync after expanding truncate"
            }
            LogPatch::NewNameLoggedTrans => {
                "btrfs: always update the logged transaction when logging new names"
            }
        }
    }

    /// Parses a switch name.
    pub fn parse(s: &str) -> Option<LogPatch> {
        LogPatch::ALL.into_iter().find(|p| p.name() == s.trim())
    }
}

/// btrfs's part of a kernel policy: which of its switches are on (`switches::SWITCHES`
/// says where each comes from) and which mutants are enabled. Release presets are composed
/// by `crate::kernel`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
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
    /// The 5.12 tree-log changes applied.
    pub log: BTreeSet<LogPatch>,
}

impl Policy {
    /// Whether a fix is applied.
    pub fn has(&self, f: Fix) -> bool {
        self.fixes.contains(&f)
    }

    /// Whether a 5.12 tree-log change is applied.
    pub fn log(&self, p: LogPatch) -> bool {
        self.log.contains(&p)
    }

    /// Whether a mutant is enabled.
    pub fn mutant(&self, m: Mutant) -> bool {
        self.mutants.contains(&m)
    }

    /// Whether a preemptive-flushing change is applied.
    pub fn space(&self, p: SpacePatch) -> bool {
        self.preempt.as_ref().is_some_and(|s| s.contains(&p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        assert_eq!(Fix::parse("r6"), Some(Fix::R6));
        assert_eq!(Fix::parse("R8"), None);
        assert_eq!(
            Mutant::parse("sync-log-no-super-wait"),
            Some(Mutant::SyncLogNoSuperWait)
        );
        for p in SpacePatch::ALL {
            assert_eq!(SpacePatch::parse(p.name()), Some(p));
        }
    }
}
