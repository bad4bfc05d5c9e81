//! btrfs's counters: what the model counts as it runs (waste judged by the oracle, totals,
//! lock waits), the wait classes of its locks and wait queues, and how each is reported
//! (`vfs::Metrics` by name; `fsyncsim list --metrics`).

use super::space_info::FlushState;
use crate::vfs::metrics::{Family, Metrics};
use std::collections::BTreeMap;

/// btrfs's counters of one run; reported by name through `Counters::to_metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Inode logs (btrfs_log_inode calls), all causes.
    pub inode_logs: u64,
    /// Inode logs of an inode version already captured by a commit ordered before the log (R1).
    pub unnecessary_inode_logs: u64,
    /// File extent items logged.
    pub extent_logs: u64,
    /// Extent items logged although a commit ordered before the log captured them (R2).
    pub unnecessary_extent_logs: u64,
    /// Checksum bytes logged.
    pub csum_bytes: u64,
    /// Checksum bytes logged with unnecessary extent items (R2).
    pub unnecessary_csum_bytes: u64,
    /// Ancestor directories logged.
    pub ancestor_logs: u64,
    /// Ancestors logged although a commit ordered before the log captured them (R3).
    pub unnecessary_ancestor_logs: u64,
    /// Log syncs (superblock written for a log).
    pub log_syncs: u64,
    /// Log syncs whose log held nothing a commit had not already captured (R7).
    pub unnecessary_log_syncs: u64,
    /// Fsyncs that fell back to a full transaction commit.
    pub full_commits: u64,
    /// Fallbacks with no event in the running transaction that the log could not express (R4, R5).
    pub unnecessary_full_commits: u64,
    /// Unnecessary fallbacks split by cause.
    pub unnecessary_full_commits_by_cause: BTreeMap<String, u64>,
    /// All fallbacks split by the rule that made them (`last_unlink_trans.inode|parent|
    /// ancestor`, `log_full_commit_flag`, `stale_log_full_commit_check`).
    pub full_commits_by_cause: BTreeMap<String, u64>,
    /// Transaction commits (all, including periodic and explicit).
    pub transaction_commits: u64,
    /// Nanoseconds commits spent from COMMIT_START to UNBLOCKED, summed (new START and
    /// ATTACH handles wait in it).
    pub commit_blocking_ns: u64,
    /// Nanoseconds commits spent from UNBLOCKED to COMPLETED, summed: a new transaction
    /// runs while `last_trans_committed` is the one before (the window R1–R5's races need).
    pub commit_unblocked_ns: u64,
    /// Times log start waited for tree_log_mutex (R6).
    pub tree_log_mutex_waits: u64,
    /// Nanoseconds log start waited for tree_log_mutex (R6).
    pub tree_log_mutex_wait_ns: u64,
    /// Times a log sync waited for tree_log_mutex before its superblock.
    pub sync_log_super_waits: u64,
    /// Nanoseconds a log sync waited for tree_log_mutex before its superblock.
    pub sync_log_super_wait_ns: u64,
    /// Bytes written to the device.
    pub device_bytes_written: u64,
    /// Cache flushes (FLUSH requests and PREFLUSH writes).
    pub flushes: u64,
    /// Transactions marked for a full commit by a link or rename (btrfs_log_new_name's
    /// parent walk), so later fsyncs in them commit.
    pub new_name_full_commit_marks: u64,
    /// Fsyncs that skipped logging (inode already in the log, or changed only in
    /// committed transactions).
    pub fsync_skips: u64,
    /// One-jiffy batching sleeps in btrfs_sync_log (non-ssd mounts only).
    pub log_batch_sleeps: u64,
    /// Data block groups made by chunk allocation (each marks its transaction for full
    /// commits).
    pub data_block_groups_created: u64,
    /// Empty data block groups deleted after commits.
    pub data_block_groups_deleted: u64,
    /// Inodes logged in full again although unchanged since they entered this
    /// transaction's log (waste the oracle judges against the current log).
    pub relogged_inodes: u64,
    /// Ancestor directories logged again, unchanged since they entered this log.
    pub relogged_ancestors: u64,
    /// Parent directories (btrfs_log_all_parents) logged again, unchanged since.
    pub relogged_dir_items: u64,
    /// Parent directories logged although nothing in them changed in this transaction.
    pub unnecessary_dir_logs: u64,
    /// Logged directories' inode items searched for and updated in the log (i_size
    /// decreased) by an unlink that removed a name from the log (ddffcf6fb5ac removes it).
    pub logged_dir_isize_updates: u64,
    /// Shared-mapping writes whose stamp read root->last_log_commit after a log sync had
    /// committed the sub-transaction just stamped (bc0939fcfab0's race window).
    pub torn_log_stamps: u64,
    /// File extent items an ordered extent inserted in a file while a full fsync logged it,
    /// after copy_inode_items_to_log and before btrfs_log_holes (885f46d87f29's race).
    pub log_copy_raced_extents: u64,
    /// Xattr items copied into the log by btrfs_log_all_xattrs although this transaction's
    /// log already held every xattr of the inode, none changed since (b590b839720c, 5.14).
    pub relogged_xattrs: u64,
    /// Full-sync fsyncs forced by a truncate that removed or trimmed no file extent item
    /// (0d7d316597c0, 5.14, sets the flag only when one was).
    pub unneeded_full_syncs: u64,
    /// CPU ns of those updates (a log-tree search, under the directory's log_mutex).
    pub logged_dir_isize_update_ns: u64,
    /// inode_get_bytes calls of fill_inode_item for a log copy, each taking the inode's
    /// i_lock (e593e54ed1f6 removes them).
    pub log_nbytes_i_lock_takes: u64,
    /// ns those i_lock acquisitions and holds cost (spinlock acquire + release).
    pub log_nbytes_i_lock_ns: u64,
    /// Metadata reservations that had to wait in a ticket.
    pub metadata_tickets: u64,
    /// Async metadata reclaim episodes (a ticket started the flusher).
    pub async_reclaim_episodes: u64,
    /// Passes of the preemptive reclaim worker (each flushes something).
    pub preempt_flushes: u64,
    /// Preemptive passes that flushed delalloc.
    pub preempt_delalloc_flushes: u64,
    /// Preemptive passes that committed the transaction.
    pub preempt_commits: u64,
    /// Preemptive passes that ran delayed items or refs.
    pub preempt_delayed_flushes: u64,
    /// Delayed items queued (dir index insertions and deletions, inode item updates).
    pub delayed_items: u64,
    /// Delayed nodes run by the delayed-meta workers.
    pub delayed_nodes_run_async: u64,
    /// Delayed nodes run by btrfs_log_inode.
    pub delayed_nodes_run_fsync: u64,
    /// Delayed nodes run by transaction commits.
    pub delayed_nodes_run_commit: u64,
    /// Delayed nodes written by a metadata space flush.
    pub delayed_nodes_run_flush: u64,
    /// Operations that waited in btrfs_balance_delayed_items (512 items pending).
    pub delayed_balance_waits: u64,
    /// Time they waited.
    pub delayed_balance_wait_ns: u64,
    /// Extent and csum tree changes run from delayed data refs by commits.
    pub delayed_refs_run: u64,
    /// Preemptive passes in a transaction no metadata ticket waited in (the space was not needed).
    pub unnecessary_preempt_flushes: u64,
    /// Transaction commits a space flusher made.
    pub space_commits: u64,
    /// Inodes written back by a space flusher (shrink_delalloc).
    pub delalloc_flushed_inodes: u64,
    /// Metadata block groups made by a space flusher's ALLOC_CHUNK or forced by a tree block
    /// allocation.
    pub meta_block_groups_created: u64,
    /// Metadata reservations that waited in a priority ticket (BTRFS_RESERVE_FLUSH_EVICT /
    /// FLUSH_LIMIT: the caller flushes itself, served before the normal tickets).
    pub priority_tickets: u64,
    /// Per-ticket reservation wait, normal and priority tickets: median, 99th percentile
    /// and largest, ns (0 when no ticket waited).
    pub metadata_ticket_wait_p50_ns: u64,
    /// See `metadata_ticket_wait_p50_ns`.
    pub metadata_ticket_wait_p99_ns: u64,
    /// See `metadata_ticket_wait_p50_ns`.
    pub metadata_ticket_wait_max_ns: u64,
    /// Dirty data bytes the preemptive worker wrote back (flushed before any reservation
    /// needed the space).
    pub preempt_flushed_bytes: u64,
    /// flush_space calls per state (FLUSH_DELALLOC, COMMIT_TRANS, …), all flushers:
    /// reported as `flushes.<STATE>`.
    pub flushes_by_state: BTreeMap<String, u64>,
    /// Deletion searches of the log tree by drop_inode_items (a directory, LOG_INODE_EXISTS,
    /// BTRFS_INODE_COPY_EVERYTHING) for an inode of which this transaction's log held no
    /// item (88e221cdacc5, 5.16, skips them when inode_logged() is false).
    pub unneeded_log_drops: u64,
    /// Deletion searches of the log tree by a full fsync's truncate_inode_items for a file of
    /// which this transaction's log held no item (4934a8150214, 5.16).
    pub unneeded_log_truncates: u64,
    /// Delayed inode items of regular files a full-sync fsync wrote into the subvolume tree
    /// (btrfs_commit_inode_delayed_inode), although the log copies the in-memory inode
    /// (f6df27dd2707, 5.16, no longer writes them).
    pub fsync_delayed_inode_commits: u64,
    /// Leaves COWed (a leaf of an earlier transaction changed for the first time in the
    /// running one: btrfs_cow_block allocates a block, copies, frees the old).
    pub cowed_leaves: u64,
    /// Log tree blocks COWed: a block an earlier log sync of the transaction wrote, changed
    /// again (should_cow_block's BTRFS_HEADER_FLAG_WRITTEN test).
    pub log_blocks_cowed: u64,
    /// Log tree blocks the log syncs wrote (btrfs_write_marked_extents of the blocks
    /// dirtied since the previous sync).
    pub log_blocks_written: u64,
}

/// btrfs's locks and wait queues whose waits every run reports.
pub const WAIT_CLASSES: [&str; 28] = [
    "wait_current_trans",
    "metadata_ticket",
    "wait_for_commit",
    "wait_writers",
    "wait_log_writers",
    "wait_log_commit",
    "log_mutex",
    "tree_log_mutex",
    "reloc_mutex",
    "tree_root.log_mutex",
    "log_root_tree.log_mutex",
    "chunk_mutex",
    // Every inode's i_rwsem (inode_lock), summed over inodes.
    "inode_lock",
    // Every inode's BTRFS_I(inode)->log_mutex, summed over inodes.
    "inode.log_mutex",
    // Every inode's BTRFS_I(inode)->i_mmap_lock (5.13+), summed over inodes.
    "inode.i_mmap_lock",
    // Every delayed node's mutex (delayed_node->mutex) while the node is run, summed.
    "delayed_node.mutex",
    // btrfs's extent buffer locks (btrfs_tree_lock / btrfs_tree_read_lock) per tree and
    // level, summed over blocks (levels above 2 count as level 2).
    "tree_lock.fs.level0",
    "tree_lock.fs.level1",
    "tree_lock.fs.level2",
    "tree_lock.extent.level0",
    "tree_lock.extent.level1",
    "tree_lock.extent.level2",
    "tree_lock.csum.level0",
    "tree_lock.csum.level1",
    "tree_lock.csum.level2",
    "tree_lock.log.level0",
    "tree_lock.log.level1",
    "tree_lock.log.level2",
];

impl Counters {
    /// (name, value) of every scalar counter, in a stable order.
    pub fn scalars(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("unnecessary_inode_logs", self.unnecessary_inode_logs),
            ("unnecessary_extent_logs", self.unnecessary_extent_logs),
            ("unnecessary_csum_bytes", self.unnecessary_csum_bytes),
            ("unnecessary_ancestor_logs", self.unnecessary_ancestor_logs),
            ("unnecessary_full_commits", self.unnecessary_full_commits),
            ("unnecessary_log_syncs", self.unnecessary_log_syncs),
            ("tree_log_mutex_waits", self.tree_log_mutex_waits),
            ("tree_log_mutex_wait_ns", self.tree_log_mutex_wait_ns),
            ("inode_logs", self.inode_logs),
            ("extent_logs", self.extent_logs),
            ("csum_bytes", self.csum_bytes),
            ("ancestor_logs", self.ancestor_logs),
            ("log_syncs", self.log_syncs),
            ("full_commits", self.full_commits),
            ("transaction_commits", self.transaction_commits),
            ("commit_blocking_ns", self.commit_blocking_ns),
            ("commit_unblocked_ns", self.commit_unblocked_ns),
            ("sync_log_super_waits", self.sync_log_super_waits),
            ("sync_log_super_wait_ns", self.sync_log_super_wait_ns),
            ("device_bytes_written", self.device_bytes_written),
            ("flushes", self.flushes),
            (
                "new_name_full_commit_marks",
                self.new_name_full_commit_marks,
            ),
            ("fsync_skips", self.fsync_skips),
            ("log_batch_sleeps", self.log_batch_sleeps),
            ("data_block_groups_created", self.data_block_groups_created),
            ("data_block_groups_deleted", self.data_block_groups_deleted),
            ("relogged_inodes", self.relogged_inodes),
            ("relogged_ancestors", self.relogged_ancestors),
            ("relogged_dir_items", self.relogged_dir_items),
            ("unnecessary_dir_logs", self.unnecessary_dir_logs),
            ("logged_dir_isize_updates", self.logged_dir_isize_updates),
            ("torn_log_stamps", self.torn_log_stamps),
            ("log_copy_raced_extents", self.log_copy_raced_extents),
            ("relogged_xattrs", self.relogged_xattrs),
            ("unneeded_full_syncs", self.unneeded_full_syncs),
            (
                "logged_dir_isize_update_ns",
                self.logged_dir_isize_update_ns,
            ),
            ("log_nbytes_i_lock_takes", self.log_nbytes_i_lock_takes),
            ("log_nbytes_i_lock_ns", self.log_nbytes_i_lock_ns),
            ("metadata_tickets", self.metadata_tickets),
            ("async_reclaim_episodes", self.async_reclaim_episodes),
            ("preempt_flushes", self.preempt_flushes),
            ("preempt_delalloc_flushes", self.preempt_delalloc_flushes),
            ("preempt_commits", self.preempt_commits),
            ("preempt_delayed_flushes", self.preempt_delayed_flushes),
            ("delayed_items", self.delayed_items),
            ("delayed_nodes_run_async", self.delayed_nodes_run_async),
            ("delayed_nodes_run_fsync", self.delayed_nodes_run_fsync),
            ("delayed_nodes_run_commit", self.delayed_nodes_run_commit),
            ("delayed_nodes_run_flush", self.delayed_nodes_run_flush),
            ("delayed_balance_waits", self.delayed_balance_waits),
            ("delayed_balance_wait_ns", self.delayed_balance_wait_ns),
            ("delayed_refs_run", self.delayed_refs_run),
            (
                "unnecessary_preempt_flushes",
                self.unnecessary_preempt_flushes,
            ),
            ("space_commits", self.space_commits),
            ("delalloc_flushed_inodes", self.delalloc_flushed_inodes),
            ("meta_block_groups_created", self.meta_block_groups_created),
            ("priority_tickets", self.priority_tickets),
            (
                "metadata_ticket_wait_p50_ns",
                self.metadata_ticket_wait_p50_ns,
            ),
            (
                "metadata_ticket_wait_p99_ns",
                self.metadata_ticket_wait_p99_ns,
            ),
            (
                "metadata_ticket_wait_max_ns",
                self.metadata_ticket_wait_max_ns,
            ),
            ("preempt_flushed_bytes", self.preempt_flushed_bytes),
            ("unneeded_log_drops", self.unneeded_log_drops),
            ("unneeded_log_truncates", self.unneeded_log_truncates),
            (
                "fsync_delayed_inode_commits",
                self.fsync_delayed_inode_commits,
            ),
            ("cowed_leaves", self.cowed_leaves),
            ("log_blocks_cowed", self.log_blocks_cowed),
            ("log_blocks_written", self.log_blocks_written),
        ]
    }

    /// The counters as the filesystem boundary reports them: the scalars, the per-cause and
    /// per-rule fallbacks, flush_space calls per state, and every wait class at 0 (the
    /// runner fills them from the engine's resource statistics).
    pub fn to_metrics(&self) -> Metrics {
        let states = FlushState::ALL.iter().map(|f| f.name()).collect();
        Metrics {
            scalars: self.scalars(),
            families: vec![
                Family::open(
                    "unnecessary_full_commits",
                    "unnecessary_full_commits_by_cause",
                    &self.unnecessary_full_commits_by_cause,
                ),
                Family::open(
                    "full_commits",
                    "full_commits_by_cause",
                    &self.full_commits_by_cause,
                ),
                Family::closed("flushes", states, &self.flushes_by_state),
            ],
            waits: WAIT_CLASSES.iter().map(|&c| (c, 0, 0)).collect(),
            prefixed: Vec::new(),
        }
    }
}

/// What a btrfs counter counts, one line (`fsyncsim list --metrics`).
pub fn describe(name: &str) -> Option<&'static str> {
    Some(match name {
        "unnecessary_inode_logs" => "inode logs whose every version a commit ordered before the log already captured (R1)",
        "unnecessary_extent_logs" => "extent items logged although a commit ordered before the log captured them (R2)",
        "unnecessary_csum_bytes" => "checksum bytes logged with unnecessary extent items (R2)",
        "unnecessary_ancestor_logs" => "ancestor directories logged although already captured (R3)",
        "unnecessary_full_commits" => "fallbacks to a full commit with no event the log could not express (R4, R5); .CAUSE splits them",
        "unnecessary_log_syncs" => "log syncs whose log held nothing a commit had not captured (R7)",
        "tree_log_mutex_waits" => "times log start waited for tree_log_mutex (R6)",
        "tree_log_mutex_wait_ns" => "nanoseconds log start waited for tree_log_mutex (R6)",
        "inode_logs" => "btrfs_log_inode calls, all causes",
        "extent_logs" => "file extent items logged",
        "csum_bytes" => "checksum bytes logged",
        "ancestor_logs" => "ancestor directories logged",
        "log_syncs" => "log syncs (a superblock written for a log)",
        "full_commits" => "fsyncs that fell back to a full transaction commit; .RULE splits them (last_unlink_trans.inode|parent|ancestor, log_full_commit_flag, stale_log_full_commit_check)",
        "transaction_commits" => "transaction commits (all: fsync fallbacks, kthread, explicit)",
        "commit_blocking_ns" => "nanoseconds commits spent from COMMIT_START to UNBLOCKED (new START/ATTACH handles wait), summed",
        "commit_unblocked_ns" => "nanoseconds commits spent from UNBLOCKED to COMPLETED (a new transaction runs while last_trans_committed is the one before: R1-R5's window), summed",
        "sync_log_super_waits" => "times a log sync waited for tree_log_mutex before its superblock",
        "sync_log_super_wait_ns" => "nanoseconds a log sync waited for tree_log_mutex before its superblock",
        "device_bytes_written" => "bytes written to the device",
        "flushes" => "cache flushes (FLUSH requests and PREFLUSH writes)",
        "new_name_full_commit_marks" => "transactions marked for a full commit by a link/rename's parent walk",
        "fsync_skips" => "fsyncs that skipped logging",
        "log_batch_sleeps" => "one-jiffy batching sleeps in btrfs_sync_log (nossd mounts)",
        "data_block_groups_created" => "data block groups made by chunk allocation (each marks its transaction)",
        "data_block_groups_deleted" => "empty data block groups deleted after commits",
        "relogged_inodes" => "inodes logged in full again, unchanged since they entered this transaction's log",
        "relogged_ancestors" => "ancestor directories logged again, unchanged since they entered this log",
        "relogged_dir_items" => "parent directories logged again (btrfs_log_all_parents), unchanged since",
        "unnecessary_dir_logs" => "parent directories logged (btrfs_log_all_parents) with no entry changed since the last commit",
        "logged_dir_isize_updates" => "logged directories' inode items updated in the log (i_size) by an unlink (btrfs_del_dir_entries_in_log before 5.12)",
        "torn_log_stamps" => "shared-mapping writes whose inode stamp read root->last_log_commit after a log sync committed the sub-transaction just stamped (btrfs_page_mkwrite before 5.13, bc0939fcfab0)",
        "log_copy_raced_extents" => "file extent items inserted by an ordered extent that completed while a full fsync logged the file, between its item copy and btrfs_log_holes (a shared-mapping write not excluded by i_mmap_lock, before 5.13's 885f46d87f29)",
        "unneeded_full_syncs" => "fsyncs that took the full-sync path only because a truncate (same size, or over an implicit hole) set BTRFS_INODE_NEEDS_FULL_SYNC without removing a file extent item (before 5.14's 0d7d316597c0)",
        "relogged_xattrs" => "xattr items copied into the log again (btrfs_log_all_xattrs) although this transaction's log held them all, unchanged since (before 5.14's b590b839720c)",
        "logged_dir_isize_update_ns" => "CPU ns of those log-tree inode item updates (under the directory's log_mutex)",
        "log_nbytes_i_lock_takes" => "i_lock acquisitions by fill_inode_item's inode_get_bytes for a log copy (before 5.12)",
        "log_nbytes_i_lock_ns" => "ns of those i_lock acquisitions and holds",
        "metadata_tickets" => "metadata reservations that waited in a ticket (space_info full)",
        "async_reclaim_episodes" => "async metadata reclaim episodes started by a ticket",
        "preempt_flushes" => "passes of the preemptive metadata reclaim worker (5.12+), all kinds",
        "preempt_delalloc_flushes" => "preemptive passes that wrote back delalloc",
        "preempt_commits" => "preemptive passes that committed the transaction (FORCE_COMMIT_TRANS)",
        "preempt_delayed_flushes" => "preemptive passes that ran delayed items or delayed refs",
        "delayed_items" => "delayed items queued: dir index insertions and deletions, inode item updates (delayed-inode.c)",
        "delayed_nodes_run_async" => "delayed nodes written into the fs tree by the delayed-meta workers",
        "delayed_nodes_run_fsync" => "delayed nodes written by btrfs_log_inode (a directory's items, a full sync's inode item)",
        "delayed_nodes_run_commit" => "delayed nodes written by transaction commits",
        "delayed_nodes_run_flush" => "delayed nodes written by a metadata space flush (FLUSH_DELAYED_ITEMS_NR, FLUSH_DELAYED_ITEMS)",
        "delayed_balance_waits" => "operations that waited in btrfs_balance_delayed_items (512 items pending)",
        "delayed_balance_wait_ns" => "time operations waited in btrfs_balance_delayed_items",
        "delayed_refs_run" => "extent and csum tree changes of delayed data refs run by commits (delayed-ref.c)",
        "unnecessary_preempt_flushes" => "preemptive passes in a transaction in which no reservation had to wait (judged at its commit)",
        "space_commits" => "transaction commits made by a space flusher (COMMIT_TRANS, FORCE_COMMIT_TRANS)",
        "delalloc_flushed_inodes" => "inodes written back by shrink_delalloc",
        "meta_block_groups_created" => "metadata block groups made by ALLOC_CHUNK or forced by a tree block allocation that found no room",
        "priority_tickets" => "metadata reservations that waited in a priority ticket (evict: the caller flushes, served first)",
        "metadata_ticket_wait_p50_ns" => "median wait of a metadata reservation ticket, ns (normal and priority)",
        "metadata_ticket_wait_p99_ns" => "99th percentile wait of a metadata reservation ticket, ns",
        "metadata_ticket_wait_max_ns" => "longest wait of a metadata reservation ticket, ns",
        "preempt_flushed_bytes" => "dirty data bytes the preemptive worker wrote back before any reservation needed the space",
        "unneeded_log_drops" => "deletion searches of the log tree by drop_inode_items (a directory, LOG_INODE_EXISTS, an xattr changed) for an inode of which this transaction's log held no item (before 5.16's 88e221cdacc5)",
        "unneeded_log_truncates" => "deletion searches of the log tree by a full fsync's truncate_inode_items for a file of which this transaction's log held no item (before 5.16's 4934a8150214)",
        "fsync_delayed_inode_commits" => "delayed inode items of regular files written into the subvolume tree by a full-sync fsync, which logs the in-memory inode anyway (before 5.16's f6df27dd2707)",
        "cowed_leaves" => "leaves COWed: a leaf of an earlier transaction changed for the first time in the running one (btrfs_cow_block)",
        "log_blocks_cowed" => "log tree blocks COWed: a block an earlier log sync of the transaction wrote, changed again (BTRFS_HEADER_FLAG_WRITTEN)",
        "log_blocks_written" => "log tree blocks written by the log syncs: those dirtied since the previous sync (btrfs_write_marked_extents)",
        n if n.starts_with("flushes.") => "flush_space calls in that state (FLUSH_DELALLOC, COMMIT_TRANS, ...), all flushers",
        n if n.ends_with("_count") || n.ends_with("_ns") => {
            "waits on that lock or wait queue (count) and the time they took (ns), all tasks"
        }
        _ => return None,
    })
}

/// Whether `name` is a btrfs counter.
pub fn is_metric(name: &str) -> bool {
    Counters::default().to_metrics().get(name).is_some()
}
