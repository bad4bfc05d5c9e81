//! fs/btrfs/transaction.c: joining, ending and committing transactions.

use super::ctree::{Btrfs, COMPACT_EVERY, COMPACT_INTERVAL};
use super::policy::Mutant;
use super::state::*;
use crate::device::Request;
use crate::vfs::OpError;

/// A transaction handle (`struct btrfs_trans_handle`): the transaction it joined and
/// whether it counts in `num_extwriters` (TRANS_START and TRANS_ATTACH handles,
/// `TRANS_EXTWRITERS`, fs/btrfs/transaction.h@v5.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trans {
    /// `trans->transid`.
    pub id: TransId,
    /// Counted in `num_extwriters`.
    pub ext: bool,
    /// `trans->in_fsync`: the handle of an fsync (5.12 lets it stop waiting for a commit at
    /// SUPER_COMMITTED).
    pub in_fsync: bool,
    /// Metadata bytes reserved for it (`trans->bytes_reserved`), released when it ends.
    pub reserved: u64,
}

/// How a caller reaches the running transaction (`enum btrfs_trans_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JoinKind {
    /// TRANS_START (btrfs_start_transaction): waits out a blocked commit
    /// (wait_current_trans: COMMIT_START..UNBLOCKED), may create a transaction, extwriter.
    Start,
    /// TRANS_JOIN (btrfs_join_transaction): joins in RUNNING and COMMIT_START, blocked from
    /// COMMIT_DOING until UNBLOCKED, may create a transaction.
    Join,
    /// TRANS_ATTACH (btrfs_attach_transaction): blocked like START, extwriter, never creates
    /// a transaction (-ENOENT).
    Attach,
}

impl Btrfs {
    /// btrfs_start_transaction(root, 0) (TRANS_START).
    pub(super) async fn start_transaction(&self) -> Trans {
        self.join_kind(JoinKind::Start)
            .await
            .expect("start creates")
    }

    /// btrfs_start_transaction(root, items): reserves `items` × the insert size of
    /// metadata (FLUSH_ALL, may wait in a ticket) before joining; the handle gives back what
    /// it holds when it ends. start_transaction@v5.13: while delayed_refs_rsv is not full
    /// it reserves twice that at once ("assuming we'll do 2 x num_items worth of delayed
    /// refs updates") and migrates the second half to the delayed refs rsv
    /// (btrfs_migrate_to_delayed_refs_rsv; beyond its size, freed).
    pub(super) async fn start_transaction_items(&self, items: u64) -> Result<Trans, OpError> {
        let bytes = self.meta_items(items);
        let refs = if Self::delayed_refs_full(&self.inner.st.borrow()) {
            0
        } else {
            bytes
        };
        self.reserve_metadata(bytes + refs).await?;
        self.migrate_to_delayed_refs(refs);
        self.st_mut().meta.trans += bytes;
        let mut th = self.start_transaction().await;
        th.reserved = bytes;
        Ok(th)
    }

    /// btrfs_join_transaction (TRANS_JOIN): btrfs_dirty_inode, btrfs_finish_ordered_io.
    pub(super) async fn join_transaction(&self) -> Trans {
        self.join_kind(JoinKind::Join).await.expect("join creates")
    }

    /// btrfs_attach_transaction (TRANS_ATTACH): None when no transaction is running.
    pub(super) async fn attach_transaction(&self) -> Option<Trans> {
        self.join_kind(JoinKind::Attach).await
    }

    /// start_transaction → join_transaction (fs/btrfs/transaction.c@v5.10):
    /// `btrfs_blocked_trans_types` — START and ATTACH are blocked from COMMIT_START,
    /// JOIN from COMMIT_DOING; a blocked caller waits until UNBLOCKED (wait_current_trans)
    /// and retries, by which time `running_transaction` is NULL.
    pub(super) async fn join_kind(&self, kind: JoinKind) -> Option<Trans> {
        // The handle's own work, its end's included (`Costs::trans_handle_ps`).
        let handle = self.inner.costs.trans_handle_ps.div_ceil(1000);
        if handle > 0 {
            self.inner.h.cpu(handle).await;
        }
        let latest = match kind {
            JoinKind::Start | JoinKind::Attach => TransState::Running,
            JoinKind::Join => TransState::CommitStart,
        };
        let ext = kind != JoinKind::Join;
        loop {
            {
                let mut st = self.st_mut();
                match st.running {
                    Some(t) if st.trans[&t].state <= latest => {
                        let tr = st.trans.get_mut(&t).unwrap();
                        tr.writers += 1;
                        tr.extwriters += u32::from(ext);
                        return Some(Trans {
                            id: t,
                            ext,
                            in_fsync: false,
                            reserved: 0,
                        });
                    }
                    Some(_) => {}
                    None if kind == JoinKind::Attach => return None,
                    None => {
                        let t = st.generation + 1;
                        st.generation = t;
                        st.running = Some(t);
                        let now = self.inner.h.now();
                        st.trans
                            .insert(t, Transaction::running(t, now, u32::from(ext)));
                        return Some(Trans {
                            id: t,
                            ext,
                            in_fsync: false,
                            reserved: 0,
                        });
                    }
                }
            }
            self.inner.trans_wait.wait().await;
        }
    }

    /// btrfs_end_transaction: drops num_writers (and num_extwriters) and wakes the commit.
    pub(super) fn end(&self, th: Trans) {
        let mut st = self.st_mut();
        let tr = st.trans.get_mut(&th.id).expect("transaction");
        tr.writers -= 1;
        tr.extwriters -= u32::from(th.ext);
        st.meta.trans -= th.reserved;
        drop(st);
        // btrfs_trans_release_metadata → btrfs_block_rsv_release: to delayed refs first.
        self.release_to_delayed_refs(th.reserved);
        self.inner.writers_wait.notify_all();
    }

    /// btrfs_set_inode_last_trans (transaction.h@v5.10), under the inode's spinlock:
    /// last_trans = transid, last_sub_trans = root->log_transid, and last_log_commit =
    /// root->last_log_commit (the kernel's root field is the last committed log transid;
    /// `FsState::last_log_commit` is one past it, hence `root_last_log_commit`).
    /// Atomic here, as in the kernel: the three stores run under inode->lock (a spinlock, so
    /// the task cannot be preempted between the two unlocked reads of the root), and
    /// btrfs_sync_log moves those root fields a log write apart (log_transid++ before
    /// writing the log, last_log_commit after), so no task can read one before and one
    /// after. btrfs_page_mkwrite@v5.10 does the same reads without the spinlock: that
    /// window is the point `page_mkwrite:last_sub_trans_set`.
    pub(super) fn set_inode_last_trans(st: &mut FsState, ino: Ino, t: TransId) {
        let (log_transid, last_log_commit) = (st.log_transid, st.root_last_log_commit());
        // bc0939fcfab0 (5.13, transaction.h:btrfs_set_inode_last_trans): the stamp no
        // longer reads root->last_log_commit, which a log sync may have moved past
        // last_sub_trans between the two reads.
        let last_log_commit = if st.sub_trans_stamp {
            log_transid.wrapping_sub(1)
        } else {
            last_log_commit
        };
        let i = st.inodes.get_mut(&ino).expect("inode");
        i.last_trans = t;
        i.last_sub_trans = log_transid;
        i.last_log_commit = last_log_commit;
        i.change_seq += 1;
    }

    /// The leaves a change made (`born`, by splits: allocated in this transaction, so
    /// never COWed in it) and btrfs_cow_block on each leaf it touched (`leaves`): each
    /// joins the transaction's dirty set once. The old copy of each newly COWed leaf is
    /// pinned until the commit (metadata `bytes_pinned`). Returns how many leaves were
    /// newly COWed.
    pub(super) fn dirty(
        st: &mut FsState,
        t: TransId,
        born: &[crate::btrfs::ctree_blocks::Leaf],
        leaves: &[crate::btrfs::ctree_blocks::Leaf],
    ) -> u64 {
        let nodesize = st.meta.nodesize;
        let tr = st.trans.get_mut(&t).expect("transaction");
        let before = tr.dirty.len();
        tr.dirty.extend(born.iter().copied());
        let made = (tr.dirty.len() - before) as u64;
        tr.dirty.extend(leaves.iter().copied());
        let cowed = (tr.dirty.len() - before) as u64 - made;
        st.meta.pin(tr, cowed * nodesize);
        st.meta.cowed_leaves += cowed;
        // btrfs_alloc_tree_block makes a delayed ref head per block, btrfs_free_tree_block
        // one per COWed block's old copy.
        Self::add_ref_heads(st, t, made + 2 * cowed);
        Self::account_tree_blocks(st, t);
        cowed
    }

    /// The trees' growth in metadata `bytes_used` (btrfs_alloc_tree_block, then
    /// alloc_reserved_tree_block → btrfs_update_block_group, extent-tree.c@v5.10) and their
    /// shrinkage into `bytes_pinned` until the commit (btrfs_free_tree_block). A new block
    /// that finds no metadata block group with room makes find_free_extent force a chunk
    /// (find_free_extent_update_loop, LOOP_ALLOC_CHUNK: btrfs_chunk_alloc with
    /// CHUNK_ALLOC_FORCE), which btrfs_make_block_group marks for full commits.
    pub(super) fn account_tree_blocks(st: &mut FsState, t: TransId) {
        let now = st.trees.blocks();
        let was = std::mem::replace(&mut st.meta.tree_blocks, now);
        let ns = st.meta.nodesize;
        if now >= was {
            st.meta.used += (now - was) * ns;
        } else {
            let freed = ((was - now) * ns).min(st.meta.used);
            st.meta.used -= freed;
            let tr = st.trans.get_mut(&t).expect("transaction");
            st.meta.pin(tr, freed);
        }
        let m = &st.meta;
        let size = m.chunk_size;
        if m.allocated() > m.total && size > 0 && st.data.unallocated >= 2 * size {
            st.data.unallocated -= 2 * size;
            st.meta.total += size;
            st.meta.forced_chunks += 1;
            Self::mark_new_block_group(st, t);
        }
    }

    /// btrfs_commit_transaction, called with a handle on `th.id`.
    pub async fn commit(&self, th: Trans) {
        let t = th.id;
        let already = self.inner.st.borrow().trans[&t].state >= TransState::CommitStart;
        // want_state (btrfs_commit_transaction@v5.12): an fsync's handle stops waiting for a
        // commit — another task's, or the previous transaction's — once its superblocks are
        // written; every other caller waits for COMPLETED.
        let want = if self.inner.policy.super_committed && th.in_fsync {
            TransState::SuperCommitted
        } else {
            TransState::Completed
        };
        if already {
            self.wait_for_other_commit(th, want).await;
            return;
        }
        let started = self.inner.h.now();
        self.commit_start(t, want).await;
        self.commit_wait_for_writers(th).await;
        // Step 5-6: tree_log_mutex is held from here until the superblocks are written.
        let tree_log = self.inner.tree_log_mutex.lock().await;
        self.commit_critical_section(t).await;
        self.commit_unblock(t).await;
        let unblocked = self.inner.h.now();
        self.inner.m.borrow_mut().commit_blocking_ns += unblocked - started;
        let log_mutex = if self.mutant(Mutant::CommitTakesLogMutex) {
            Some(self.inner.log_mutex.lock().await)
        } else {
            None
        };
        self.commit_write_tree_and_super(t).await;
        drop(log_mutex);
        drop(tree_log);
        self.st_mut().trans.get_mut(&t).unwrap().state = TransState::SuperCommitted;
        if self.inner.policy.super_committed {
            self.inner.commit_wait.notify_all();
        }
        self.commit_unpin_and_complete(t).await;
        let done = self.inner.h.now() - unblocked;
        self.inner.m.borrow_mut().commit_unblocked_ns += done;
    }

    /// Step 1 of the commit: another task is committing `th.id`; end our handle and wait
    /// for it to reach `want` (5.12+ waiters may return once the superblocks are written).
    async fn wait_for_other_commit(&self, th: Trans, want: TransState) {
        let t = th.id;
        self.end(th);
        while self.inner.st.borrow().trans[&t].state < want {
            self.inner.commit_wait.wait().await;
        }
    }

    /// Step 2 of the commit: COMMIT_START, then wait until the previous transaction's
    /// commit reaches `want`.
    async fn commit_start(&self, t: TransId, want: TransState) {
        self.inner.m.borrow_mut().transaction_commits += 1;
        self.st_mut().trans.get_mut(&t).unwrap().state = TransState::CommitStart;
        self.point("trans:commit_start").await;
        loop {
            let prev_done = {
                let st = self.inner.st.borrow();
                st.trans
                    .range(..t)
                    .next_back()
                    .is_none_or(|(_, p)| p.state >= want)
            };
            if prev_done {
                break;
            }
            self.inner.commit_wait.wait().await;
        }
    }

    /// Steps 3-4 of the commit, in the kernel's two phases (btrfs_commit_transaction@v5.10):
    /// drop our own extwriter count (extwriter_counter_dec), wait until no START/ATTACH
    /// handle is left (JOIN handles may still enter), then COMMIT_DOING, which blocks new
    /// JOINs, and wait until ours is the only handle (num_writers == 1).
    async fn commit_wait_for_writers(&self, th: Trans) {
        let t = th.id;
        if th.ext {
            self.st_mut().trans.get_mut(&t).unwrap().extwriters -= 1;
        }
        self.run_delayed_items(t).await;
        while self.inner.st.borrow().trans[&t].extwriters > 0 {
            self.inner.writers_wait.wait().await;
        }
        // "some pending stuffs might be added after the previous flush".
        self.run_delayed_items(t).await;
        self.st_mut().trans.get_mut(&t).unwrap().state = TransState::CommitDoing;
        while self.inner.st.borrow().trans[&t].writers > 1 {
            self.inner.writers_wait.wait().await;
        }
        self.point("trans:commit_doing").await;
    }

    /// The commit's critical section, under reloc_mutex (tree_log_mutex held by the
    /// caller): fix the dirty set, run the delayed refs, commit the fs roots (freeing the
    /// log trees) and set the superblock's generation.
    async fn commit_critical_section(&self, t: TransId) {
        let h = &self.inner.h;
        let _reloc = self.inner.reloc_mutex.lock().await;
        self.run_delayed_items(t).await;
        self.run_delayed_refs(t).await;
        // Nothing joins a transaction past COMMIT_DOING with one writer left: its dirty
        // set is final. Running its COWed blocks' delayed refs costs per block.
        let (blocks, refs, roots_cpu) = {
            let mut st = self.st_mut();
            let tr = st.trans.get_mut(&t).unwrap();
            let dirty = std::mem::take(&mut tr.dirty);
            let heights = st.trees.heights();
            let roots_cpu = commit_roots_cpu(&mut st, &dirty, &self.inner.costs);
            let tr = st.trans.get_mut(&t).unwrap();
            tr.dirty_blocks =
                crate::btrfs::ctree_blocks::blocks_to_write(&self.inner.costs, &dirty, heights)
                    .max(1);
            (tr.dirty_blocks, tr.delayed_refs, roots_cpu)
        };
        // btrfs_run_delayed_refs: one extent-tree update per COWed block (its new copy
        // and the freed old one count as one here) and, unless they ran as tree work
        // above, per data extent allocated or freed.
        let c = &self.inner.costs;
        let refs = if c.delayed_refs == 0 { refs } else { 0 };
        h.cpu(c.commit_cpu + (blocks + refs) * c.commit_cpu_per_block + roots_cpu)
            .await;
        self.run_ref_heads(t, u64::MAX);
        // commit_fs_roots frees the log trees: the commit captures everything logged;
        // entries never synced are judged now.
        self.judge(t, None);
        let mut st = self.st_mut();
        if st.log_tree_of == Some(t) {
            st.log_tree_of = None;
        }
        if st.log_root_tree_of == Some(t) {
            st.log_root_tree_of = None;
        }
        st.log_dirty_bytes = 0;
        st.log_unplaced_bytes = 0;
        st.log_dirty.clear();
        st.log_written.clear();
        st.trees.free_log();
        Self::account_tree_blocks(&mut st, t);
        st.super_generation = t;
        drop(st);
        // btrfs_prepare_extent_commit (extent-tree.c@v5.10..v5.14; switch_commit_roots
        // from 5.15) ends with btrfs_update_global_block_rsv.
        if self.inner.costs.global_rsv_resize != 0 {
            self.resize_global_rsv();
        }
    }

    /// UNBLOCKED: `running_transaction` becomes NULL and blocked joiners are woken.
    async fn commit_unblock(&self, t: TransId) {
        {
            let mut st = self.st_mut();
            st.trans.get_mut(&t).unwrap().state = TransState::Unblocked;
            st.running = None;
        }
        self.inner.trans_wait.notify_all();
        self.point("trans:unblocked").await;
    }

    /// Step 7 of the commit: write and wait the dirty extent buffers, then the
    /// superblocks (preflush + FUA).
    async fn commit_write_tree_and_super(&self, t: TransId) {
        let (blocks, nodesize) = (
            self.inner.st.borrow().trans[&t].dirty_blocks,
            self.inner.costs.nodesize,
        );
        // btrfs_write_and_wait_transaction: the committer checksums every block it writes
        // (btree_submit_bio_hook, inline with crc32c) and writes back their pages.
        self.write_back_blocks(blocks).await;
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::CommitBlocks { transid: t }, blocks * nodesize);
        self.inner
            .dev
            .submit(Request::write(off, blocks * nodesize).with_token(tok))
            .await;
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::CommitSuper { transid: t }, 4096);
        let sb = Request {
            fua: true,
            ..Request::preflush_write(off, 4096)
        };
        self.inner.dev.submit(sb.with_token(tok)).await;
        self.st_mut().trans.get_mut(&t).unwrap().super_done = true;
        self.point("trans:supers_written").await;
    }

    /// Step 9 of the commit: unpin extents, then last_trans_committed = transid,
    /// COMPLETED, and wake the waiters.
    async fn commit_unpin_and_complete(&self, t: TransId) {
        let h = &self.inner.h;
        self.point("trans:unpin").await;
        let pinned = {
            let st = self.inner.st.borrow();
            st.trans[&t].dirty_blocks * self.inner.costs.pinned_per_block
        };
        h.cpu(pinned * self.inner.costs.unpin_per_extent).await;
        self.point("trans:unpinned").await;
        {
            let mut st = self.st_mut();
            Self::unpin_data(&mut st, t);
            // Metadata unpin, then the oracle's verdict on the preemptive flushes done in
            // this transaction: unnecessary if no reservation had to wait in it.
            let pinned = std::mem::take(&mut st.trans.get_mut(&t).unwrap().meta_pinned);
            st.meta.pinned -= pinned;
            if Self::grant_tickets(&mut st) {
                self.inner.ticket_wait.notify_all();
            }
            self.delete_unused_bgs(&mut st);
            st.last_trans_committed = st.last_trans_committed.max(t);
            let tr = st.trans.get_mut(&t).unwrap();
            tr.state = TransState::Completed;
            tr.writers -= 1;
            if !st.keep_history {
                self.compact_history(&mut st);
            }
        }
        self.inner.commit_wait.notify_all();
        self.inner.writers_wait.notify_all();
        self.judge_preempt(Some(t));
        self.trace_space();
        self.point("trans:completed").await;
    }

    /// After a commit completes: drop old history from the state, amortised — the state
    /// holds at most COMPACT_EVERY commits, or one second of virtual time, of history
    /// (commits can be seconds apart).
    fn compact_history(&self, st: &mut FsState) {
        st.commits_since_compact += 1;
        let now = self.inner.h.now();
        if st.commits_since_compact >= COMPACT_EVERY || now >= st.last_compact + COMPACT_INTERVAL {
            st.commits_since_compact = 0;
            st.last_compact = now;
            st.compact();
            self.drop_gone_inode_locks(st);
        }
    }
}

/// CPU of the commit's root updates: commit_cowonly_roots → update_cowonly_root and
/// commit_fs_roots (transaction.c@v5.10) call btrfs_update_root (root-tree.c@v5.10) for each
/// tree the transaction changed — a COW btrfs_search_slot of the root tree for the tree's
/// root item and write_extent_buffer of it (439 B), here on the model's root tree — then
/// switch_commit_roots (transaction.c@v5.10), under commit_root_sem (one lock and unlock,
/// `spinlock_ps`), drops each changed root's old commit root and takes a reference to its
/// new node (free_extent_buffer, btrfs_root_node: refcount atomics and cache-missing loads,
/// priced as one tree level visited, `tree_level_ps`), the root tree's own included.
/// Trees with a root item: fs (objectid 5), extent (2), csum (7), dev (4, changed with the
/// chunk tree); the root and chunk trees' roots go in the superblock.
fn commit_roots_cpu(
    st: &mut FsState,
    dirty: &FastSet<crate::btrfs::ctree_blocks::Leaf>,
    c: &crate::btrfs::Costs,
) -> sim::Nanos {
    use crate::btrfs::ctree_blocks::tree;
    use crate::btrfs::ctree_btree::{key_type, size, Key, Work};
    if dirty.is_empty() {
        return 0;
    }
    let mut w = Work::default();
    let mut roots = 1; // the root tree's own commit root
    for (id, objectid) in [
        (tree::FS, 5),
        (tree::EXTENT, 2),
        (tree::CSUM, 7),
        (tree::CHUNK, 4),
    ] {
        if dirty.iter().any(|l| l.0 == id) {
            let key = Key::new(objectid, key_type::ROOT_ITEM, 0);
            st.trees.root.update(key, size::ROOT_ITEM, &mut w);
            w.moved += u64::from(size::ROOT_ITEM);
            roots += 1;
        }
    }
    let ps = roots * c.tree_level_ps + c.spinlock_ps;
    c.tree_cpu(&w, 0) + ps.div_ceil(1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btrfs::ctree_blocks::tree;
    use crate::btrfs::Costs;

    #[test]
    fn a_commit_updates_the_changed_trees_root_items() {
        let c = Costs::default();
        let mut st = FsState::mkfs();
        let mut dirty = FastSet::default();
        assert_eq!(commit_roots_cpu(&mut st, &dirty, &c), 0);
        dirty.insert((tree::FS, 1));
        dirty.insert((tree::EXTENT, 1));
        let first = commit_roots_cpu(&mut st, &dirty, &c);
        // Two root items written into the root tree, three commit roots switched (fs,
        // extent, the root tree's own): at least their levels and the items' bytes.
        assert_eq!(st.trees.root.items(), 2);
        let floor = (3 * c.tree_level_ps + 2 * 439 * c.leaf_move_ps_per_byte) / 1000;
        assert!(first >= floor, "{first} < {floor}");
        // The next commit rewrites them in place; nothing is charged with b-tree CPU off.
        assert!(commit_roots_cpu(&mut st, &dirty, &c) > 0);
        assert_eq!(st.trees.root.items(), 2);
        let mut off = c.clone();
        (
            off.tree_level_ps,
            off.key_compare_ps,
            off.leaf_move_ps_per_byte,
            off.spinlock_ps,
        ) = (0, 0, 0, 0);
        assert_eq!(commit_roots_cpu(&mut st, &dirty, &off), 0);
    }
    /// A growing tree's new blocks are metadata `bytes_used`; once they no longer fit the
    /// block groups a chunk is forced and the transaction marked for full commits; a
    /// shrinking tree's freed blocks stay pinned until the commit.
    #[test]
    fn tree_blocks_are_metadata_used_and_force_a_chunk_when_they_do_not_fit() {
        use crate::btrfs::ctree_btree::{key_type, Key, Work};
        use crate::btrfs::state::Transaction;
        let mut st = FsState::mkfs();
        let t = st.last_trans_committed + 1;
        st.trans.insert(t, Transaction::running(t, 0, 0));
        let ns = 16 << 10;
        st.meta.nodesize = ns;
        (st.meta.total, st.meta.used, st.meta.chunk_size) = (64 * ns, 0, 1 << 30);
        st.meta.tree_blocks = st.trees.blocks();
        st.data.unallocated = 4 << 30;
        let mut w = Work::default();
        for i in 0..4000 {
            let key = Key::new(1000 + i, key_type::INODE_ITEM, 0);
            st.trees.fs.insert(key, 160, &mut w);
        }
        let grown = st.trees.blocks() - st.meta.tree_blocks;
        assert!(grown > 32, "{grown} blocks");
        Btrfs::account_tree_blocks(&mut st, t);
        assert_eq!(st.meta.used, grown * ns);
        assert_eq!(st.meta.forced_chunks, 0, "{grown} blocks fit 64");
        for i in 4000..12000 {
            let key = Key::new(1000 + i, key_type::INODE_ITEM, 0);
            st.trees.fs.insert(key, 160, &mut w);
        }
        Btrfs::account_tree_blocks(&mut st, t);
        assert!(st.meta.used > 64 * ns);
        assert_eq!(st.meta.forced_chunks, 1);
        assert_eq!(st.meta.total, 64 * ns + (1 << 30));
        assert_eq!(st.data.unallocated, 2 << 30);
        assert_eq!(st.last_trans_log_full_commit, t);
        let (used, pinned) = (st.meta.used, st.meta.pinned);
        for i in 0..12000 {
            st.trees
                .fs
                .delete(Key::new(1000 + i, key_type::INODE_ITEM, 0), &mut w);
        }
        Btrfs::account_tree_blocks(&mut st, t);
        let freed = used - st.meta.used;
        assert!(freed > 0);
        assert_eq!(st.meta.pinned - pinned, freed);
        assert_eq!(st.trans[&t].meta_pinned, freed);
    }
}
