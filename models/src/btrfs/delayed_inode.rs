//! fs/btrfs/delayed-inode.c: directory index items and inode item updates batched per inode
//! (delayed nodes) and written into the fs tree later — by the delayed-meta workers when
//! too many are pending, by an fsync that needs them in the tree, and by the commit.
//!
//! What the kernel does (v5.10) and this mirrors:
//! - btrfs_insert_dir_item inserts the DIR_ITEM into the tree and hands the DIR_INDEX to
//!   btrfs_insert_delayed_dir_index; btrfs_delete_delayed_dir_index cancels a pending
//!   insertion of the same key or queues a deletion; btrfs_update_inode copies the inode
//!   item into the delayed node (btrfs_delayed_update_inode), counted once per node.
//! - btrfs_balance_delayed_items, after each namespace operation, setattr and buffered write
//!   (btrfs_btree_balance_dirty): nothing below BTRFS_DELAYED_BACKGROUND (128) pending items
//!   or when the workqueue is congested; a work item of BTRFS_DELAYED_BATCH (16) nodes
//!   otherwise; at BTRFS_DELAYED_WRITEBACK (512) an unbounded one, and the caller waits
//!   until 16 more items are done or fewer than 128 are pending (could_end_wait).
//! - btrfs_async_run_delayed_root: joins the running transaction, runs the first prepared
//!   node (inserts, then deletions, then the inode item: __btrfs_commit_inode_delayed_items),
//!   until fewer than 64 items are pending or its node count is reached.
//! - btrfs_log_inode (tree-log.c@v5.10, 5aa7d1a7f4a2): a directory's delayed items are run
//!   first (btrfs_commit_inode_delayed_items), a file's delayed inode item only with
//!   BTRFS_INODE_NEEDS_FULL_SYNC (btrfs_commit_inode_delayed_inode).
//! - btrfs_commit_transaction: btrfs_run_delayed_items before and after waiting for the
//!   external writers, and again in the critical section (under reloc_mutex).
//! - Eviction of a removed inode drops its node (btrfs_kill_delayed_inode_items); its
//!   pending index deletions are deleted with its items (btrfs_truncate_inode_items).
//!
//! - The node's mutex (delayed_node->mutex) is held by the task running the node around its
//!   tree work and taken by every change to the node (btrfs_insert_delayed_dir_index,
//!   btrfs_delete_delayed_dir_index, btrfs_delayed_update_inode,
//!   btrfs_kill_delayed_inode_items) and by btrfs_readdir_get_delayed_items, so those wait
//!   for a run in progress (class `delayed_node.mutex`).
//!
//! Simplifications: a node's index insertions are applied one by one (the kernel inserts a
//! run of consecutive keys into one leaf with one search: btrfs_batch_insert_items); a node
//! being run is taken out of the root (a concurrent change makes a new node, which waits
//! for the run's mutex before it can run); the run holds the mutex across all its tree work
//! (the kernel drops it between its batches); a waiter for it sleeps (the kernel's mutex
//! spins while the owner runs); the delayed-meta workqueue's `max_active` is 8
//! (min(num_online_cpus() + 2, 8), disk-io.c@v5.10, for 6 CPUs or more).

use super::ctree::Btrfs;
use super::ctree_btree::{inode_update, key_type, tree_id, Key, TreeOp};
use super::state::{Ino, TransId};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// BTRFS_DELAYED_WRITEBACK (delayed-inode.c@v5.10).
pub const WRITEBACK: u64 = 512;
/// BTRFS_DELAYED_BACKGROUND (delayed-inode.c@v5.10).
pub const BACKGROUND: u64 = 128;
/// BTRFS_DELAYED_BATCH (delayed-inode.c@v5.10).
pub const BATCH: u64 = 16;
/// The delayed-meta workqueue's max_active: min(num_online_cpus() + 2, 8) (disk-io.c:
/// btrfs_init_workqueues@v5.10 with thread_pool_size's default).
pub const MAX_ACTIVE: u32 = 8;
/// DFT_THRESHOLD (async-thread.c@v5.10): a workqueue made with thresh 0 gets 32, starts
/// with one active worker and adjusts it every thresh / 4 executions (thresh_exec_hook).
pub const THRESH: u32 = 32;

/// One inode's pending items (struct btrfs_delayed_node).
#[derive(Clone, Debug, Default)]
pub struct DelayedNode {
    /// Pending DIR_INDEX insertions (ins_root), by key, with their data size.
    ins: BTreeMap<Key, u32>,
    /// Pending DIR_INDEX deletions (del_root).
    del: BTreeSet<Key>,
    /// The inode item is dirty (BTRFS_DELAYED_NODE_INODE_DIRTY).
    inode_dirty: bool,
    /// Its place in the prepare list (stale entries of a node run since are skipped).
    seq: u64,
}

impl DelayedNode {
    /// Items it holds (delayed_node->count).
    fn count(&self) -> u64 {
        (self.ins.len() + self.del.len()) as u64 + u64::from(self.inode_dirty)
    }
}

/// fs_info->delayed_root: the nodes with pending items and their counts.
#[derive(Clone, Debug, Default)]
pub struct DelayedRoot {
    nodes: BTreeMap<Ino, DelayedNode>,
    /// Nodes in the order they were queued (prepare_list), with their `seq`.
    prepared: VecDeque<(Ino, u64)>,
    next_seq: u64,
    /// Pending items (delayed_root->items).
    pub items: u64,
    /// Items done since mount (delayed_root->items_seq).
    pub items_seq: u64,
    /// Items queued since mount.
    pub queued: u64,
    /// Inodes with a delayed node attached (btrfs_inode->delayed_node): made at an inode's
    /// first delayed item, it stays, empty or not, until the inode goes
    /// (btrfs_get_or_create_delayed_node keeps a reference for the inode; only
    /// btrfs_remove_delayed_node at eviction drops it).
    attached: std::collections::BTreeSet<Ino>,
}

/// The inodes whose delayed node mutex a call takes.
pub type NodeInos = smallvec::SmallVec<[Ino; 2]>;

/// Adds `ino` to `inos` once.
fn touch(inos: &mut NodeInos, ino: Ino) {
    if !inos.contains(&ino) {
        inos.push(ino);
    }
}

/// The tree changes a node's run makes, in the kernel's order.
pub type NodeOps = smallvec::SmallVec<[TreeOp; 8]>;

impl DelayedRoot {
    /// The node of `ino`, queued at the prepare list's tail when new.
    fn node(&mut self, ino: Ino) -> &mut DelayedNode {
        if !self.nodes.contains_key(&ino) {
            self.attached.insert(ino);
            self.next_seq += 1;
            self.prepared.push_back((ino, self.next_seq));
            let seq = self.next_seq;
            self.nodes.insert(
                ino,
                DelayedNode {
                    seq,
                    ..Default::default()
                },
            );
        }
        self.nodes.get_mut(&ino).expect("made above")
    }

    /// Takes the changes the delayed nodes hold from `ops` and returns the rest, which go
    /// to the trees now, and how many items were queued; `nodes` gets the inodes whose
    /// node mutex the kernel takes for them (btrfs_insert_delayed_dir_index,
    /// btrfs_delete_delayed_dir_index, btrfs_delayed_update_inode,
    /// btrfs_kill_delayed_inode_items).
    pub fn divert(&mut self, ops: &[TreeOp], direct: &mut NodeOps, nodes: &mut NodeInos) -> u64 {
        let mut queued = 0;
        for &op in ops {
            match op {
                TreeOp::Insert(tree_id::FS, k, s) if k.ty == key_type::DIR_INDEX => {
                    touch(nodes, k.objectid);
                    self.node(k.objectid).ins.insert(k, s);
                    queued += 1;
                    self.items += 1;
                }
                TreeOp::Delete(tree_id::FS, k) if k.ty == key_type::DIR_INDEX => {
                    touch(nodes, k.objectid);
                    let n = self.node(k.objectid);
                    if n.ins.remove(&k).is_some() {
                        // btrfs_delete_delayed_dir_index: the insertion never reached the
                        // tree; both go.
                        self.items -= 1;
                        self.drop_if_empty(k.objectid);
                    } else {
                        n.del.insert(k);
                        queued += 1;
                        self.items += 1;
                    }
                }
                TreeOp::Update(tree_id::FS, k, _) if k.ty == key_type::INODE_ITEM => {
                    touch(nodes, k.objectid);
                    let n = self.node(k.objectid);
                    if !n.inode_dirty {
                        n.inode_dirty = true;
                        queued += 1;
                        self.items += 1;
                    }
                }
                TreeOp::Delete(tree_id::FS, k) if k.ty == key_type::INODE_ITEM => {
                    if self.attached.contains(&k.objectid) {
                        touch(nodes, k.objectid);
                    }
                    self.kill(k.objectid, direct);
                    direct.push(op);
                }
                _ => direct.push(op),
            }
        }
        self.queued += queued;
        queued
    }

    /// btrfs_kill_delayed_inode_items: the removed inode's node goes; its pending index
    /// deletions are deleted with the inode's items.
    fn kill(&mut self, ino: Ino, direct: &mut NodeOps) {
        self.attached.remove(&ino);
        if let Some(n) = self.nodes.remove(&ino) {
            self.items -= n.count();
            direct.extend(n.del.iter().map(|&k| TreeOp::Delete(tree_id::FS, k)));
        }
    }

    fn drop_if_empty(&mut self, ino: Ino) {
        if self.nodes.get(&ino).is_some_and(|n| n.count() == 0) {
            self.nodes.remove(&ino);
        }
    }

    /// Takes `ino`'s node: its changes (insertions, deletions, the inode item), counted as
    /// done.
    pub fn take(&mut self, ino: Ino) -> Option<NodeOps> {
        let n = self.nodes.remove(&ino)?;
        let c = n.count();
        assert!(self.items >= c, "delayed items {} < node's {c}", self.items);
        self.items -= c;
        self.items_seq += c;
        let mut ops = NodeOps::new();
        ops.extend(
            n.ins
                .iter()
                .map(|(&k, &s)| TreeOp::Insert(tree_id::FS, k, s)),
        );
        ops.extend(n.del.iter().map(|&k| TreeOp::Delete(tree_id::FS, k)));
        if n.inode_dirty {
            ops.push(inode_update(ino));
        }
        Some(ops)
    }

    /// Takes the first queued node (btrfs_first_prepared_delayed_node).
    pub fn take_first(&mut self) -> Option<(Ino, NodeOps)> {
        while let Some((ino, seq)) = self.prepared.pop_front() {
            if self.nodes.get(&ino).is_some_and(|n| n.seq == seq) {
                return self.take(ino).map(|ops| (ino, ops));
            }
        }
        None
    }

    /// The pending dir index insertions and deletions of directory `ino`'s node, if it
    /// has one (what btrfs_readdir_get_delayed_items lists).
    pub fn index_items(&self, ino: Ino) -> Option<(u64, u64)> {
        let n = self.nodes.get(&ino)?;
        Some((n.ins.len() as u64, n.del.len() as u64))
    }

    /// Whether `ino` has a delayed node attached (pending items or not).
    pub fn attached(&self, ino: Ino) -> bool {
        self.attached.contains(&ino)
    }

    /// Whether `ino` has pending items.
    pub fn has(&self, ino: Ino) -> bool {
        self.nodes.contains_key(&ino)
    }
}

/// Whether `op` ends in btrfs_btree_balance_dirty, which balances the delayed items
/// (inode.c@v5.10: btrfs_create, btrfs_mkdir, btrfs_link, btrfs_unlink, btrfs_rmdir,
/// btrfs_rename's end, btrfs_dirty_inode for setattr, btrfs_truncate, btrfs_fallocate's
/// and btrfs_punch_hole's ends; file.c: btrfs_buffered_write's page loop).
pub fn balances(op: &crate::vfs::Op) -> bool {
    use crate::vfs::Op;
    matches!(
        op,
        Op::Create(_)
            | Op::Mkdir(_)
            | Op::Link(..)
            | Op::Rename(..)
            | Op::Unlink(_)
            | Op::Rmdir(_)
            | Op::Setattr(_)
            | Op::Truncate(..)
            | Op::Fallocate { .. }
            | Op::PunchHole(..)
            | Op::Write(..)
            | Op::WriteAt(..)
            | Op::WriteRange(..)
            | Op::WriteRangeAt(..)
            | Op::WriteOsync(..)
            | Op::Symlink(..)
            | Op::Mknod(..)
            | Op::Mkfifo(_)
            | Op::Tmpfile(..)
            | Op::LinkFd(..)
            | Op::Chmod(..)
    )
}

/// Where a node's items were run (each counted in its own counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunBy {
    /// A delayed-meta worker.
    Worker,
    /// btrfs_log_inode.
    Fsync,
    /// btrfs_commit_transaction.
    Commit,
    /// A metadata space flush (FLUSH_DELAYED_ITEMS_NR, FLUSH_DELAYED_ITEMS).
    Flush,
}

impl Btrfs {
    /// Runs `ino`'s delayed node in transaction `t` if it has one.
    pub(super) async fn run_delayed_node(&self, t: TransId, ino: Ino, by: RunBy) -> bool {
        self.run_delayed(t, by, |d| d.take(ino).map(|ops| (ino, ops)))
            .await
    }

    /// Runs the first queued node in `t`; false when none is queued.
    async fn run_first_delayed_node(&self, t: TransId, by: RunBy) -> bool {
        self.run_delayed(t, by, |d| d.take_first()).await
    }

    /// Runs the node `take` takes out of the delayed root in `t`, as tree work under the
    /// tree locks with the node's mutex held (__btrfs_commit_inode_delayed_items takes it
    /// around each batch of insertions, of deletions and the inode item's update; held here
    /// across the node's whole run), and wakes the balance waiters; false when it takes
    /// none. The node's changes are in the trees when the run starts, as every tree change
    /// of the model is.
    async fn run_delayed(
        &self,
        t: TransId,
        by: RunBy,
        take: impl FnOnce(&mut DelayedRoot) -> Option<(Ino, NodeOps)>,
    ) -> bool {
        let (ino, work) = {
            let mut st = self.st_mut();
            let Some((ino, ops)) = take(&mut st.delayed) else {
                return false;
            };
            let work = Self::apply_tree_ops(&mut st, &self.inner.costs, t, &ops);
            if Self::sync_delayed_rsv(&mut st, self.inner.costs.meta_item()) {
                self.inner.ticket_wait.notify_all();
            }
            (ino, work)
        };
        self.count_delayed_run(by);
        let m = self.node_mutex(ino, true).expect("made for the run");
        std::mem::forget(m.lock().await);
        self.run_tree_work(work).await;
        m.unlock();
        self.node_mutex_done(ino);
        self.inner.delayed_wait.notify_all();
        true
    }

    /// The mutex of `ino`'s delayed node if it is being run, or made (`make`) for a run;
    /// the caller counts as its user until `node_mutex_done`.
    fn node_mutex(&self, ino: Ino, make: bool) -> Option<sim::Mutex> {
        let mut map = self.inner.node_mutexes.borrow_mut();
        let e = match map.entry(ino) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) if make => v.insert((
                sim::Mutex::recyclable(&self.inner.h, "delayed_node.mutex"),
                0,
            )),
            std::collections::hash_map::Entry::Vacant(_) => return None,
        };
        e.1 += 1;
        Some(e.0.clone())
    }

    /// A user of `ino`'s node mutex is done; the last one drops it.
    fn node_mutex_done(&self, ino: Ino) {
        let mut map = self.inner.node_mutexes.borrow_mut();
        let e = map.get_mut(&ino).expect("a node mutex in use");
        e.1 -= 1;
        if e.1 == 0 {
            map.remove(&ino);
        }
    }

    /// Takes and releases the mutex of each node of `inos` being run: a client adding to
    /// or updating a node waits for its run (its own change is instant once it holds it).
    pub(super) async fn wait_running_nodes(&self, inos: &[Ino]) {
        for &ino in inos {
            if let Some(m) = self.node_mutex(ino, false) {
                drop(m.lock().await);
                self.node_mutex_done(ino);
            }
        }
    }

    fn count_delayed_run(&self, by: RunBy) {
        let mut m = self.inner.m.borrow_mut();
        match by {
            RunBy::Worker => m.delayed_nodes_run_async += 1,
            RunBy::Fsync => m.delayed_nodes_run_fsync += 1,
            RunBy::Commit => m.delayed_nodes_run_commit += 1,
            RunBy::Flush => m.delayed_nodes_run_flush += 1,
        }
    }

    /// `delayed_block_rsv` (delayed-inode.c@v5.10): each pending delayed item holds
    /// btrfs_calc_insert_metadata_size(1) (`item`) until it runs or is cancelled — a dir
    /// index insertion or deletion migrated from the handle's reservation
    /// (btrfs_delayed_item_reserve_metadata), the inode item migrated or reserved with
    /// NO_FLUSH (btrfs_delayed_inode_reserve_metadata), released by
    /// btrfs_delayed_item_release_metadata / btrfs_delayed_inode_release_metadata. Moves
    /// `may_use` by the change; true when the release granted a ticket. The handle's own
    /// reservation is given back whole when it ends, so while it lives the migrated bytes
    /// count twice (one operation's items, for microseconds).
    pub(super) fn sync_delayed_rsv(st: &mut super::state::FsState, item: u64) -> bool {
        let want = st.delayed.items * item;
        let have = std::mem::replace(&mut st.meta.delayed_block, want);
        if want >= have {
            st.meta.may_use += want - have;
            return false;
        }
        st.meta.may_use = st.meta.may_use.saturating_sub(have - want);
        Self::grant_tickets(st)
    }

    /// FLUSH_DELAYED_ITEMS_NR / FLUSH_DELAYED_ITEMS (flush_space@v5.12): join the running
    /// transaction and run up to `nodes` queued delayed nodes (btrfs_run_delayed_items_nr;
    /// all of them for FLUSH_DELAYED_ITEMS), releasing their items' reservations.
    pub(super) async fn flush_delayed_items(&self, nodes: u64) {
        let th = self.join_transaction().await;
        let mut n = 0;
        while n < nodes && self.run_first_delayed_node(th.id, RunBy::Flush).await {
            n += 1;
        }
        self.end(th);
    }

    /// btrfs_run_delayed_items: every queued node, in queue order, by the committer.
    pub(super) async fn run_delayed_items(&self, t: TransId) {
        if self.inner.costs.delayed_items == 0 {
            return;
        }
        while self.run_first_delayed_node(t, RunBy::Commit).await {}
    }

    /// btrfs_log_inode's delayed run: a directory's node, or a file's inode item when
    /// `full_sync` (btrfs_commit_inode_delayed_inode, until 5.16's f6df27dd2707 logs the
    /// in-memory inode without it: `keep-delayed-inode`).
    pub(super) async fn commit_inode_delayed(&self, t: TransId, ino: Ino, full_sync: bool) {
        if self.inner.st.borrow().inodes[&ino].is_dir {
            self.run_delayed_node(t, ino, RunBy::Fsync).await;
        } else if full_sync
            && !self.log_patch(super::policy::LogPatch::KeepDelayedInode)
            && self.run_delayed_node(t, ino, RunBy::Fsync).await
        {
            self.inner.m.borrow_mut().fsync_delayed_inode_commits += 1;
        }
    }

    /// btrfs_balance_delayed_items, after an operation that may have queued items.
    pub(super) async fn balance_delayed_items(&self) {
        let items = self.inner.st.borrow().delayed.items;
        if items < BACKGROUND || self.delayed_wq_congested() {
            return;
        }
        if items < WRITEBACK {
            self.queue_delayed_work(BATCH);
            return;
        }
        let seq = self.inner.st.borrow().delayed.items_seq;
        self.queue_delayed_work(0);
        let start = self.inner.h.now();
        loop {
            let done = {
                let d = &self.inner.st.borrow().delayed;
                d.items_seq >= seq + BATCH || d.items < BACKGROUND
            };
            if done {
                break;
            }
            self.inner.delayed_wait.wait().await;
        }
        let mut m = self.inner.m.borrow_mut();
        m.delayed_balance_waits += 1;
        m.delayed_balance_wait_ns += self.inner.h.now() - start;
    }

    /// btrfs_workqueue_normal_congested: more than 2 × thresh work items pending.
    fn delayed_wq_congested(&self) -> bool {
        self.inner.delayed_wq.borrow().queue.len() > 2 * THRESH as usize
    }

    /// btrfs_wq_run_delayed_node: queues a work item of `nr` nodes (0: up to 512) and
    /// wakes or starts a worker.
    fn queue_delayed_work(&self, nr: u64) {
        let mut wq = self.inner.delayed_wq.borrow_mut();
        wq.queue.push_back(nr);
        if wq.running >= wq.active {
            return;
        }
        if !self.inner.delayed_idle.notify_one() && wq.workers < MAX_ACTIVE {
            wq.workers += 1;
            drop(wq);
            let fs = self.clone();
            self.inner.h.spawn_daemon(
                "btrfs-delayed-meta",
                async move { fs.delayed_worker().await },
            );
        }
    }

    /// One delayed-meta worker: runs queued work items while the active limit allows.
    async fn delayed_worker(&self) {
        loop {
            let job = {
                let mut wq = self.inner.delayed_wq.borrow_mut();
                if wq.running < wq.active {
                    wq.queue.pop_front().inspect(|_| wq.running += 1)
                } else {
                    None
                }
            };
            match job {
                Some(nr) => {
                    self.async_run_delayed_root(nr).await;
                    self.inner.delayed_wq.borrow_mut().exec_hook();
                }
                None => self.inner.delayed_idle.wait().await,
            }
        }
    }

    /// btrfs_async_run_delayed_root: nodes until fewer than BACKGROUND / 2 items are
    /// pending or `nr` nodes are done (nr 0: WRITEBACK).
    async fn async_run_delayed_root(&self, nr: u64) {
        let mut done = 0;
        while self.inner.st.borrow().delayed.items >= BACKGROUND / 2 {
            let th = self.join_transaction().await;
            let ran = self.run_first_delayed_node(th.id, RunBy::Worker).await;
            self.end(th);
            if !ran {
                break;
            }
            done += 1;
            let limit = if nr == 0 { WRITEBACK } else { nr };
            if done >= limit {
                break;
            }
        }
        self.inner.delayed_wait.notify_all();
    }
}

/// The delayed-meta workqueue (struct __btrfs_workqueue with its threshold).
#[derive(Debug)]
pub struct DelayedWq {
    /// Queued work items (their node counts).
    pub queue: VecDeque<u64>,
    /// Workers made.
    pub workers: u32,
    /// Work items being run.
    pub running: u32,
    /// current_active.
    pub active: u32,
    /// Executions since the last adjustment (wq->count).
    count: u32,
}

impl Default for DelayedWq {
    fn default() -> Self {
        DelayedWq {
            queue: VecDeque::new(),
            workers: 0,
            running: 0,
            active: 1,
            count: 0,
        }
    }
}

impl DelayedWq {
    /// thresh_exec_hook (async-thread.c@v5.10): after a work item, every thresh / 4
    /// executions, one more active worker while more than thresh are pending, one fewer
    /// below thresh / 2, within 1..=MAX_ACTIVE.
    fn exec_hook(&mut self) {
        self.running -= 1;
        self.count = (self.count + 1) % (THRESH / 4);
        if self.count == 0 {
            return;
        }
        let pending = self.queue.len() as u32;
        let mut a = self.active;
        if pending > THRESH {
            a += 1;
        }
        if pending < THRESH / 2 {
            a = a.saturating_sub(1);
        }
        self.active = a.clamp(1, MAX_ACTIVE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btrfs::ctree_btree::inode_key;

    fn index(dir: u64, idx: u64) -> Key {
        Key::new(dir, key_type::DIR_INDEX, idx)
    }

    /// Each pending delayed item holds an insert's reservation in `may_use`; running items
    /// gives theirs back and a ticket that then fits is granted.
    #[test]
    fn pending_delayed_items_hold_a_reservation_each_until_they_run() {
        use crate::btrfs::state::{FsState, Ticket};
        let item = 256 << 10;
        let mut st = FsState::mkfs();
        st.data.unallocated = 0; // no overcommit: a ticket is granted only within `total`
        let base = st.meta.may_use;
        st.delayed.items = 3;
        assert!(!Btrfs::sync_delayed_rsv(&mut st, item));
        assert_eq!(st.meta.delayed_block, 3 * item);
        assert_eq!(st.meta.may_use, base + 3 * item);
        st.meta.total = st.meta.in_use();
        st.meta.tickets.push_back(Ticket {
            id: 7,
            bytes: 2 * item,
        });
        st.meta.reclaim_size += 2 * item;
        st.delayed.items = 2;
        assert!(
            !Btrfs::sync_delayed_rsv(&mut st, item),
            "one item's bytes do not fit 2"
        );
        st.delayed.items = 0;
        assert!(Btrfs::sync_delayed_rsv(&mut st, item));
        assert_eq!(st.meta.delayed_block, 0);
        assert_eq!(st.meta.may_use, base + 2 * item);
        assert_eq!(st.meta.done.get(&7), Some(&true));
    }

    #[test]
    fn divert_keeps_other_ops_and_counts_each_node_once_for_its_inode() {
        let mut d = DelayedRoot::default();
        let mut direct = NodeOps::new();
        let ops = [
            TreeOp::Insert(tree_id::FS, index(256, 2), 40),
            TreeOp::Insert(tree_id::FS, Key::new(257, key_type::INODE_REF, 256), 13),
            inode_update(256),
            inode_update(256),
        ];
        let mut nodes = NodeInos::new();
        assert_eq!(d.divert(&ops, &mut direct, &mut nodes), 2);
        assert_eq!((d.items, direct.len()), (2, 1));
        assert_eq!(
            nodes.as_slice(),
            &[256],
            "one node's mutex, taken for both items"
        );
        let run = d.take(256).expect("node");
        assert_eq!(run.len(), 2);
        assert_eq!((d.items, d.items_seq), (0, 2));
        assert!(
            d.take_first().is_none(),
            "the taken node's queue entry is stale"
        );
        assert!(d.attached(256), "a run node stays attached to its inode");
    }

    #[test]
    fn a_deletion_cancels_a_pending_insertion_and_killing_an_inode_deletes_its_rest() {
        let mut d = DelayedRoot::default();
        let mut direct = NodeOps::new();
        let mut n = NodeInos::new();
        let ins = [TreeOp::Insert(tree_id::FS, index(256, 2), 40)];
        d.divert(&ins, &mut direct, &mut n);
        let del = [TreeOp::Delete(tree_id::FS, index(256, 2))];
        d.divert(&del, &mut direct, &mut n);
        assert_eq!(d.items, 0);
        assert!(!d.has(256));
        let del = [TreeOp::Delete(tree_id::FS, index(256, 3))];
        d.divert(&del, &mut direct, &mut n);
        assert_eq!(d.items, 1);
        let kill = [TreeOp::Delete(tree_id::FS, inode_key(256))];
        d.divert(&kill, &mut direct, &mut n);
        assert_eq!(d.items, 0);
        assert_eq!(direct.len(), 2, "the pending deletion and the inode item");
        assert!(!d.attached(256), "the removed inode's node is gone");
    }

    #[test]
    fn the_workqueue_grows_only_past_its_threshold() {
        let mut wq = DelayedWq::default();
        wq.queue.extend(std::iter::repeat_n(BATCH, 40));
        for _ in 0..3 {
            wq.running += 1;
            wq.exec_hook();
        }
        assert!(wq.active > 1, "40 pending > 32: {}", wq.active);
        wq.queue.clear();
        for _ in 0..16 {
            wq.running += 1;
            wq.exec_hook();
        }
        assert_eq!(wq.active, 1);
    }
}
