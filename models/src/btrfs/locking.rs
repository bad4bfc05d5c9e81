//! Extent buffer tree locks (fs/btrfs/locking.c; taken by ctree.c:btrfs_search_slot,
//! v5.10–v5.15): which blocks of which trees a change locks, in which mode, and for how
//! long; the waits are the classes `tree_lock.<tree>.level<L>`.
//!
//! What btrfs_search_slot does (ctree.c@v5.10) and this mirrors:
//! - `write_lock_level`: levels at or below it are write-locked on the way down, levels
//!   above read-locked: 1 for an insert (`ins_len > 0`, "a write lock on level 1 so we can
//!   update keys"), 2 for a delete (`ins_len < 0`), 0 for an in-place update (cow, no
//!   insert), none for a read-only search (`cow = 0`).
//! - COW: a block not yet COWed in the running transaction (`should_cow_block`) is COWed
//!   with write locks on it and on its parent ("must have write locks on this node and the
//!   parent"; the search restarts with `write_lock_level = level + 1`).
//! - unlock_up: at each level of the descent, once a node is searched, the levels above
//!   it at or above `lowest_unlock` are released (lock coupling); at the leaf (locked,
//!   COWed, searched, split if full) the remaining ones are, before the caller changes the
//!   leaf (setup_items_for_insert, btrfs_del_items). Here levels 2 and up are held for
//!   the searches in the internal nodes, level 1 also for the leaf's COW, search and
//!   split, and the leaf for all that plus the item moves.
//! - `lowest_unlock` is 1, except for a search with `ins_len < 0` (a delete, and the
//!   searches of btrfs_drop_extents and btrfs_mark_extent_written: `TreeOp::InsertDelPath`,
//!   `UpdateDelPath`), where it is 2 ("when we are removing items, we might have to go up
//!   to level two as we update tree pointers"): the leaf's parent at level 1 stays
//!   write-locked with the leaf until btrfs_release_path — in a two-level tree, the root.
//!
//! The log tree is locked the same way for btrfs_log_inode's copy (its inserts, and its
//! searches of the subvolume and csum trees), with the log's own COW state (`LogCow`: a
//! block an earlier log sync wrote is COWed again); the log's deletions are not locked.
//!
//! Simplifications, stated: one call's tree operations (a create's five items, say) hold
//! their locks together, acquired top-down in (tree, level, block) order and released
//! after the call's CPU, where the kernel searches once per item; the levels from 2 up
//! are held through all the node searches (the kernel lets each go once the node below
//! it is searched), and a node's COW (once per transaction) counts with the leaf's part
//! of the descent; internal nodes are not
//! stored (ctree_btree.rs), so a leaf's ancestor at level L is its block id divided by
//! the fan-out to the L (the root: block 0). A change runs on a core it keeps until its
//! locks are released; its waits for a lock spin on that core (the CPU a spinning waiter
//! burns) and are granted in FIFO order, as one model of both 5.10's spinning/blocking
//! btrfs locks and the rw_semaphore of 5.11+ (196d59ab9ccc "btrfs: switch extent buffer
//! tree lock to rw_semaphore"): neither 5.10's switch to blocking mode nor rwsem's sleep
//! after spinning, reader/writer lock stealing or handoff rules are modelled.

use super::ctree_blocks::Leaf;
use super::ctree_btree::{TreeOp, Trees};
use super::state::Transaction;
use sim::Nanos;

/// One extent buffer lock a change takes: (tree, level, block) and its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeLock {
    /// Tree id (`ctree_btree::tree_id`).
    pub tree: u8,
    /// Level (0: a leaf).
    pub level: u32,
    /// Block id at that level (the root: 0).
    pub block: u64,
    /// Write (`btrfs_tree_lock`) rather than read (`btrfs_tree_read_lock`).
    pub write: bool,
    /// Held through the leaf work, not released by unlock_up (below `lowest_unlock`).
    pub keep: bool,
}

impl TreeLock {
    /// Acquisition order: tree, then top-down, then block.
    fn order(&self) -> (u8, u32, u64) {
        (self.tree, u32::MAX - self.level, self.block)
    }
}

/// The blocks whose locks are held or waited for: (tree, level, block) → the block's
/// rwsem and how many tasks hold or wait for it.
pub type HeldLocks = super::state::FastMap<(u8, u32, u64), (sim::RwSem, u32)>;

/// The locks of one change, in acquisition order.
pub type TreeLocks = smallvec::SmallVec<[TreeLock; 8]>;

/// The CPU of one call's tree work and the locks it holds meanwhile.
#[derive(Clone, Debug, Default)]
pub struct TreeWork {
    /// CPU of the searches in internal nodes (every level held).
    pub node_cpu: Nanos,
    /// CPU of the rest of the descent: the leaf's search, the COWs, the splits (level 1
    /// and the leaves held).
    pub path_cpu: Nanos,
    /// CPU of the item moves in the leaves (only the leaves held).
    pub leaf_cpu: Nanos,
    /// `leaf_cpu` per tree, in the order the call first changes each (more than one: each
    /// tree's path is released once its items are moved, btrfs_release_path, before the
    /// next tree's are).
    pub leaf_trees: LeafSplit,
    /// The locks, in acquisition order (empty: none modelled).
    pub locks: TreeLocks,
    /// The inodes whose delayed node mutex the call takes for the items it queued.
    pub nodes: super::delayed_inode::NodeInos,
}

/// A call's leaf work per tree: (tree id, CPU).
pub type LeafSplit = smallvec::SmallVec<[(u8, Nanos); 3]>;

impl TreeWork {
    /// Work that takes no lock.
    pub fn unlocked(cpu: Nanos) -> TreeWork {
        TreeWork {
            path_cpu: cpu,
            ..TreeWork::default()
        }
    }

    /// Its whole CPU.
    pub fn cpu(&self) -> Nanos {
        self.node_cpu + self.path_cpu + self.leaf_cpu
    }
}

/// The lock class of a tree's level (`tree_lock.<tree>.level<L>`; levels above 2 share
/// level 2's).
pub fn class(tree: u8, level: u32) -> &'static str {
    use super::ctree_btree::tree_id;
    const FS: [&str; 3] = [
        "tree_lock.fs.level0",
        "tree_lock.fs.level1",
        "tree_lock.fs.level2",
    ];
    const EXTENT: [&str; 3] = [
        "tree_lock.extent.level0",
        "tree_lock.extent.level1",
        "tree_lock.extent.level2",
    ];
    const CSUM: [&str; 3] = [
        "tree_lock.csum.level0",
        "tree_lock.csum.level1",
        "tree_lock.csum.level2",
    ];
    const LOG: [&str; 3] = [
        "tree_lock.log.level0",
        "tree_lock.log.level1",
        "tree_lock.log.level2",
    ];
    let l = level.min(2) as usize;
    match tree {
        tree_id::FS => FS[l],
        tree_id::EXTENT => EXTENT[l],
        tree_id::CSUM => CSUM[l],
        tree_id::LOG => LOG[l],
        _ => "tree_lock.other",
    }
}

/// btrfs_search_slot's `write_lock_level` for an operation (None: a read-only search).
fn write_lock_level(op: &TreeOp) -> Option<u32> {
    match op {
        TreeOp::Insert(..) => Some(1),
        TreeOp::Delete(..)
        | TreeOp::InsertDelPath(..)
        | TreeOp::UpdateDelPath(..)
        | TreeOp::SearchDelPath(..) => Some(2),
        TreeOp::Update(..) => Some(0),
        TreeOp::Search(..) => None,
    }
}

/// btrfs_search_slot's `lowest_unlock`: the lowest level unlock_up releases before the
/// leaf work (ctree.c@v5.10: 2 when `ins_len < 0`, else 1).
fn lowest_unlock(op: &TreeOp) -> u32 {
    match op {
        TreeOp::Delete(..)
        | TreeOp::InsertDelPath(..)
        | TreeOp::UpdateDelPath(..)
        | TreeOp::SearchDelPath(..) => 2,
        TreeOp::Insert(..) | TreeOp::Update(..) | TreeOp::Search(..) => 1,
    }
}

/// Which blocks a change COWs (ctree.c:should_cow_block@v5.10), as the trees' state says.
pub trait CowState {
    /// Whether changing leaf `leaf` of tree `t` COWs it (before the change's leaves are
    /// marked dirty).
    fn leaf_cows(&self, t: u8, leaf: u64) -> bool;
    /// Whether changing node `block` at `level` of tree `t` COWs it; marks it COWed.
    fn node_cows(&mut self, t: u8, level: u32, block: u64) -> bool;
}

impl CowState for Transaction {
    /// A leaf not yet in the transaction's dirty set.
    fn leaf_cows(&self, t: u8, leaf: u64) -> bool {
        !self.dirty.contains(&(t, leaf))
    }

    /// A node not yet COWed in the transaction.
    fn node_cows(&mut self, t: u8, level: u32, block: u64) -> bool {
        self.cowed_nodes.insert((t, level, block))
    }
}

/// The log tree's COW state: the blocks dirtied in the running log transaction and those
/// an earlier log sync of the transaction wrote (state.rs `log_dirty`, `log_written`).
pub struct LogCow<'a> {
    /// Dirtied in the running log transaction: changed in place.
    pub dirty: &'a super::state::FastSet<(u32, u64)>,
    /// Written by an earlier sync: COWed when changed again.
    pub written: &'a super::state::FastSet<(u32, u64)>,
}

impl CowState for LogCow<'_> {
    /// A leaf an earlier sync wrote and not yet dirtied again.
    fn leaf_cows(&self, _: u8, leaf: u64) -> bool {
        self.written.contains(&(0, leaf)) && !self.dirty.contains(&(0, leaf))
    }

    /// A node an earlier sync wrote and not yet dirtied again (marked by the caller).
    fn node_cows(&mut self, _: u8, level: u32, block: u64) -> bool {
        self.written.contains(&(level, block)) && !self.dirty.contains(&(level, block))
    }
}

/// The locks `ops` take, given the leaves their changes landed in (`leaves`, one per
/// changing op, in order) and the COW state of the trees they change (`cow`: for the
/// running transaction, its COWed leaves before this change's are added and its COWed
/// nodes, to which this change's are added).
pub fn lock_set(
    trees: &mut Trees,
    cow: &mut impl CowState,
    ops: &[TreeOp],
    leaves: &[Leaf],
) -> TreeLocks {
    let mut out = TreeLocks::new();
    let mut changed = leaves.iter();
    for op in ops {
        let (t, key) = op.target();
        let wll = write_lock_level(op);
        let lowest = lowest_unlock(op);
        let leaf = match wll {
            Some(_) => changed.next().expect("a leaf per changing op").1,
            None => trees.get_mut(t).leaf_of(key),
        };
        let tree = trees.get_mut(t);
        let (h, fanout) = (tree.height(), tree.fanout());
        // COW runs from the root down: a block is COWed with its parent write-locked.
        let leaf_cow = wll.is_some() && cow.leaf_cows(t, leaf);
        let mut child_cow = leaf_cow;
        let mut path: smallvec::SmallVec<[TreeLock; 4]> = smallvec::SmallVec::new();
        path.push(TreeLock {
            tree: t,
            level: 0,
            block: leaf,
            write: wll.is_some(),
            keep: true,
        });
        let mut div = 1u64;
        for level in 1..h {
            div = div.saturating_mul(fanout);
            let block = if level + 1 == h { 0 } else { leaf / div };
            let cows = wll.is_some() && cow.node_cows(t, level, block);
            let write = wll.is_some_and(|w| level <= w) || cows || child_cow;
            path.push(TreeLock {
                tree: t,
                level,
                block,
                write,
                keep: level < lowest,
            });
            child_cow = cows;
        }
        for l in path {
            match out.iter_mut().find(|o| o.order() == l.order()) {
                Some(o) => {
                    o.write |= l.write;
                    o.keep |= l.keep;
                }
                None => out.push(l),
            }
        }
    }
    out.sort_unstable_by_key(TreeLock::order);
    out
}

/// The locks of a read-only search (`TreeOp::Search`) of tree `t` that ends at `leaf` in a
/// tree of `height` levels and `fanout` pointers per node, as `lock_set` takes them:
/// every level read-locked, the leaf kept, top-down.
pub fn read_path(t: u8, leaf: u64, height: u32, fanout: u64) -> TreeLocks {
    let mut out = TreeLocks::new();
    let mut div = 1u64;
    let mut below: smallvec::SmallVec<[u64; 4]> = smallvec::smallvec![leaf];
    for level in 1..height {
        div = div.saturating_mul(fanout);
        below.push(if level + 1 == height { 0 } else { leaf / div });
    }
    for (level, &block) in below.iter().enumerate().rev() {
        out.push(TreeLock {
            tree: t,
            level: level as u32,
            block,
            write: false,
            keep: level == 0,
        });
    }
    out
}

impl super::ctree::Btrfs {
    /// Runs one call's tree work on a core it keeps throughout (kernel code holding tree
    /// locks is not descheduled): takes the locks top-down — a waiter spins on its core,
    /// as rwsem_optimistic_spin does while the owner runs (5.11+) and 5.10's
    /// btrfs_tree_lock did on a spinning lock — spends the descent's CPU, releases the
    /// upper levels unlock_up releases, spends the leaf moves' CPU, releases the rest
    /// (btrfs_release_path).
    pub(super) async fn run_tree_work(&self, w: TreeWork) {
        let h = &self.inner.h;
        if !w.nodes.is_empty() && !self.inner.node_mutexes.borrow().is_empty() {
            self.wait_running_nodes(&w.nodes).await;
        }
        if w.locks.is_empty() {
            h.cpu(w.cpu()).await;
            return;
        }
        let core = h.take_core().await;
        self.tree_work_on_core(&w).await;
        drop(core);
    }

    /// `run_tree_work`'s locks and CPU on a core the caller holds (`take_core`): the
    /// waits for a lock spin on it.
    pub(super) async fn tree_work_on_core(&self, w: &TreeWork) {
        let h = &self.inner.h;
        for l in &w.locks {
            self.tree_lock(l).await;
        }
        // Lock coupling: unlock_up at each node of the descent releases the levels above
        // it once the node below is searched, so levels 2 and up go after the node
        // searches, before the leaf's COW, search and split.
        let upper = |l: &&TreeLock| !l.keep && l.level >= 2;
        if w.locks.iter().any(|l| upper(&l)) {
            h.busy(w.node_cpu).await;
            for l in w.locks.iter().filter(upper) {
                self.tree_unlock(l);
            }
            h.busy(w.path_cpu).await;
        } else {
            h.busy(w.node_cpu + w.path_cpu).await;
        }
        for l in w.locks.iter().filter(|l| !l.keep && l.level < 2) {
            self.tree_unlock(l);
        }
        // Several trees changed: each tree's locks go once its own items are moved.
        let split = w.leaf_trees.len() > 1;
        if split {
            for &(t, cpu) in &w.leaf_trees {
                if cpu > 0 {
                    h.busy(cpu).await;
                }
                for l in w.locks.iter().filter(|l| l.keep && l.tree == t) {
                    self.tree_unlock(l);
                }
            }
        } else if w.leaf_cpu > 0 {
            h.busy(w.leaf_cpu).await;
        }
        let released = |l: &&TreeLock| split && w.leaf_trees.iter().any(|x| x.0 == l.tree);
        for l in w.locks.iter().filter(|l| l.keep && !released(l)) {
            self.tree_unlock(l);
        }
    }

    /// btrfs_tree_lock / btrfs_tree_read_lock on one block; the block's rwsem is made at
    /// its first use.
    async fn tree_lock(&self, l: &TreeLock) {
        let sem = {
            let mut m = self.inner.tree_locks.borrow_mut();
            let e = m.entry((l.tree, l.level, l.block)).or_insert_with(|| {
                (
                    sim::RwSem::recyclable(&self.inner.h, class(l.tree, l.level)),
                    0,
                )
            });
            e.1 += 1;
            e.0.clone()
        };
        if l.write {
            sem.down_write().await;
        } else {
            sem.down_read().await;
        }
    }

    /// btrfs_tree_unlock / btrfs_tree_read_unlock. The block's rwsem stays for the next
    /// change of the block (making one per lock would cost more than the change) until
    /// `prune_tree_locks`.
    fn tree_unlock(&self, l: &TreeLock) {
        let mut m = self.inner.tree_locks.borrow_mut();
        let e = m
            .get_mut(&(l.tree, l.level, l.block))
            .expect("a held tree lock");
        if l.write {
            e.0.up_write();
        } else {
            e.0.up_read();
        }
        sim::check!(e.1 > 0, "tree lock users underflow");
        e.1 -= 1;
    }

    /// Drops the rwsems of blocks nobody holds or waits for, in block order (their engine
    /// slots serve later blocks), so long runs keep a bounded table.
    pub(super) fn prune_tree_locks(&self) {
        let mut m = self.inner.tree_locks.borrow_mut();
        let mut idle: Vec<(u8, u32, u64)> = m
            .iter()
            .filter(|(_, e)| e.1 == 0)
            .map(|(k, _)| *k)
            .collect();
        idle.sort_unstable();
        for k in idle {
            m.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btrfs::ctree_btree::{inode_key, key_type, tree_id, Key, Work};
    use crate::btrfs::state::FastSet;

    /// Applies `ops` as tree_ops does (locks from the state before the leaves join the
    /// dirty set) and returns the locks.
    fn locks_of(trees: &mut Trees, tr: &mut Transaction, ops: &[TreeOp]) -> TreeLocks {
        let mut w = Work::default();
        let mut leaves = crate::btrfs::ctree_blocks::Leaves::new();
        crate::btrfs::ctree_btree::apply(trees, ops, &mut w, &mut leaves);
        let l = lock_set(trees, tr, ops, &leaves);
        tr.dirty.extend(leaves.iter().copied());
        l
    }

    /// A subvolume tree of height 2: enough inode items for a few dozen leaves.
    fn two_level_tree() -> Trees {
        let mut trees = Trees::new(16 << 10);
        let mut w = Work::default();
        for ino in 256..20_256u64 {
            trees.fs.insert(inode_key(ino), 160, &mut w);
        }
        assert_eq!(trees.fs.height(), 2, "{} leaves", trees.fs.leaves());
        trees
    }

    fn mode(l: &TreeLocks, level: u32) -> Option<bool> {
        l.iter().find(|x| x.level == level).map(|x| x.write)
    }

    #[test]
    fn every_lock_class_is_a_reported_wait_class() {
        for t in [tree_id::FS, tree_id::EXTENT, tree_id::CSUM, tree_id::LOG] {
            for level in 0..4 {
                let c = class(t, level);
                assert!(
                    crate::btrfs::counters::WAIT_CLASSES.contains(&c),
                    "{c} is not reported"
                );
            }
        }
    }

    /// A search that COWs nothing (btrfs_search_slot with `cow = 0`): read-only walks such as
    /// readdir's, outside any transaction.
    pub struct NoCow;

    impl CowState for NoCow {
        /// Nothing is COWed.
        fn leaf_cows(&self, _: u8, _: u64) -> bool {
            false
        }

        /// Nothing is COWed.
        fn node_cows(&mut self, _: u8, _: u32, _: u64) -> bool {
            false
        }
    }

    #[test]
    fn a_read_path_is_what_lock_set_takes_for_a_search() {
        // Trees of 1 to 3 levels; every leaf's read path as lock_set builds it.
        let mut trees = Trees::new(16 << 10);
        let mut w = Work::default();
        let mut ino = 256u64;
        for want in 1..=3 {
            while trees.fs.height() < want {
                trees.fs.insert(inode_key(ino), 160, &mut w);
                ino += 1;
            }
            let (h, f) = (trees.fs.height(), trees.fs.fanout());
            for probe in (256..ino).step_by(97) {
                let key = inode_key(probe);
                let s = [TreeOp::Search(tree_id::FS, key)];
                let leaf = trees.fs.leaf_of(key);
                let want = lock_set(&mut trees, &mut NoCow, &s, &[]);
                assert_eq!(read_path(tree_id::FS, leaf, h, f), want, "height {h}");
            }
        }
    }

    #[test]
    fn a_log_leaf_an_earlier_sync_wrote_is_cowed_under_its_parents_write_lock() {
        let mut trees = Trees::new(16 << 10);
        let mut w = Work::default();
        for ino in 256..20_256u64 {
            trees.log.insert(inode_key(ino), 160, &mut w);
        }
        assert_eq!(trees.log.height(), 2);
        let upd = [TreeOp::Update(tree_id::LOG, inode_key(300), 160)];
        let mut leaves = crate::btrfs::ctree_blocks::Leaves::new();
        crate::btrfs::ctree_btree::apply(&mut trees, &upd, &mut w, &mut leaves);
        let leaf = leaves[0].1;
        let (mut dirty, mut written) = (FastSet::default(), FastSet::default());
        let mut locks = |dirty: &FastSet<(u32, u64)>, written: &FastSet<(u32, u64)>| {
            let mut cow = LogCow { dirty, written };
            let l = lock_set(&mut trees, &mut cow, &upd, &leaves);
            (mode(&l, 1), mode(&l, 0))
        };
        // Made in this log transaction, never written: changed in place, the root read.
        assert_eq!(locks(&dirty, &written), (Some(false), Some(true)));
        // Written by the last log sync: COWed, with the root write-locked for it.
        written.extend([(0, leaf), (1, 0)]);
        assert_eq!(locks(&dirty, &written), (Some(true), Some(true)));
        // Dirtied again in this log transaction: in place once more.
        dirty.extend([(0, leaf), (1, 0)]);
        assert_eq!(locks(&dirty, &written), (Some(false), Some(true)));
    }

    #[test]
    fn a_one_leaf_tree_locks_its_root_leaf_only() {
        let mut trees = Trees::new(16 << 10);
        let mut tr = Transaction::running(1000, 0, 0);
        let ins = [TreeOp::Insert(tree_id::FS, inode_key(300), 160)];
        let l = locks_of(&mut trees, &mut tr, &ins);
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].level, l[0].write), (0, true));
    }

    #[test]
    fn inserts_write_lock_level_one_and_the_first_cow_write_locks_the_path() {
        let mut trees = two_level_tree();
        let mut tr = Transaction::running(1000, 0, 0);
        // The first change of the transaction COWs the root and the leaf: both written.
        let ins = [TreeOp::Insert(tree_id::FS, inode_key(30_000), 160)];
        let l = locks_of(&mut trees, &mut tr, &ins);
        assert_eq!((mode(&l, 1), mode(&l, 0)), (Some(true), Some(true)));
        // An insert keeps write_lock_level 1: the root (level 1) is written again.
        let ins2 = [TreeOp::Insert(tree_id::FS, inode_key(30_001), 160)];
        let l = locks_of(&mut trees, &mut tr, &ins2);
        assert_eq!((mode(&l, 1), mode(&l, 0)), (Some(true), Some(true)));
        // An in-place update of an already COWed leaf (write_lock_level 0) reads the root.
        let upd = [TreeOp::Update(tree_id::FS, inode_key(30_000), 160)];
        let l = locks_of(&mut trees, &mut tr, &upd);
        assert_eq!((mode(&l, 1), mode(&l, 0)), (Some(false), Some(true)));
        // A read-only search reads every level.
        let s = [TreeOp::Search(tree_id::FS, inode_key(257))];
        let l = locks_of(&mut trees, &mut tr, &s);
        assert_eq!((mode(&l, 1), mode(&l, 0)), (Some(false), Some(false)));
    }

    #[test]
    fn an_update_that_cows_its_leaf_write_locks_the_parent() {
        let mut trees = two_level_tree();
        let mut tr = Transaction::running(1000, 0, 0);
        // The root is COWed by a first change elsewhere.
        let first = [TreeOp::Update(tree_id::FS, inode_key(20_000), 160)];
        locks_of(&mut trees, &mut tr, &first);
        // A leaf not yet COWed in the transaction: its parent is written for the COW.
        let upd = [TreeOp::Update(tree_id::FS, inode_key(256), 160)];
        let l = locks_of(&mut trees, &mut tr, &upd);
        assert_eq!((mode(&l, 1), mode(&l, 0)), (Some(true), Some(true)));
        // The same leaf again: COWed already, the root is only read.
        let again = [TreeOp::Update(tree_id::FS, inode_key(257), 160)];
        let l = locks_of(&mut trees, &mut tr, &again);
        assert_eq!((mode(&l, 1), mode(&l, 0)), (Some(false), Some(true)));
    }

    #[test]
    fn deletes_and_extent_replacements_keep_the_leafs_parent_through_the_leaf_work() {
        let mut trees = two_level_tree();
        let mut tr = Transaction::running(1000, 0, 0);
        let first = [TreeOp::Update(tree_id::FS, inode_key(300), 160)];
        locks_of(&mut trees, &mut tr, &first);
        let kept = |l: &TreeLocks, level| l.iter().find(|x| x.level == level).map(|x| x.keep);
        // ins_len > 0: unlock_up releases level 1 before the item moves.
        let ins = [TreeOp::Insert(tree_id::FS, inode_key(30_000), 160)];
        let l = locks_of(&mut trees, &mut tr, &ins);
        assert_eq!((kept(&l, 1), kept(&l, 0)), (Some(false), Some(true)));
        // ins_len < 0 (lowest_unlock 2): the root at level 1 stays with the leaf.
        let del = [TreeOp::Delete(tree_id::FS, inode_key(30_000))];
        let l = locks_of(&mut trees, &mut tr, &del);
        assert_eq!((kept(&l, 1), mode(&l, 1)), (Some(true), Some(true)));
        let fe = Key::new(300, key_type::EXTENT_DATA, 0);
        let rep = [TreeOp::InsertDelPath(tree_id::FS, fe, 53)];
        let l = locks_of(&mut trees, &mut tr, &rep);
        assert_eq!((kept(&l, 1), mode(&l, 1)), (Some(true), Some(true)));
        let upd = [TreeOp::UpdateDelPath(tree_id::FS, fe, 53)];
        let l = locks_of(&mut trees, &mut tr, &upd);
        assert_eq!(kept(&l, 1), Some(true));
        // A search for deletion that deletes nothing (drop_objectid_items, the log's dir
        // index lookup) locks as a delete: the leaf written, the root kept.
        let drop = [TreeOp::SearchDelPath(tree_id::FS, inode_key(300))];
        let l = locks_of(&mut trees, &mut tr, &drop);
        assert_eq!((kept(&l, 1), mode(&l, 0)), (Some(true), Some(true)));
        // A plain search read-locks the leaf and lets the root go.
        let l = locks_of(
            &mut trees,
            &mut tr,
            &[TreeOp::Search(tree_id::FS, inode_key(300))],
        );
        assert_eq!((kept(&l, 1), mode(&l, 0)), (Some(false), Some(false)));
        // The same item inserted plainly lets level 1 go.
        let fe2 = Key::new(300, key_type::EXTENT_DATA, 4096);
        let l = locks_of(&mut trees, &mut tr, &[TreeOp::Insert(tree_id::FS, fe2, 53)]);
        assert_eq!(kept(&l, 1), Some(false));
        // One call's locks: a delete among inserts keeps the shared root.
        let both = [
            TreeOp::Insert(tree_id::FS, inode_key(30_001), 160),
            TreeOp::Delete(tree_id::FS, inode_key(30_001)),
        ];
        let l = locks_of(&mut trees, &mut tr, &both);
        assert_eq!(kept(&l, 1), Some(true));
    }

    /// Two changes of different leaves under one root, started at once: B's end (ns).
    fn second_change_ends_at(keep_root: bool) -> u64 {
        let lock = |level, block, keep| TreeLock {
            tree: tree_id::FS,
            level,
            block,
            write: true,
            keep,
        };
        let work = |leaf| TreeWork {
            node_cpu: 0,
            path_cpu: 1_000,
            leaf_cpu: 10_000,
            leaf_trees: LeafSplit::new(),
            locks: [lock(1, 0, keep_root), lock(0, leaf, true)]
                .into_iter()
                .collect(),
            nodes: Default::default(),
        };
        two_changes_end_at([work(1), work(2)])
    }

    /// Runs `w` as two tasks, A and B, started at once; B's end (ns).
    fn two_changes_end_at(w: [TreeWork; 2]) -> u64 {
        let mut sim = sim::Sim::new();
        let h = sim.handle();
        let fs = super::super::ctree::Btrfs::for_test(&mut sim);
        let end = std::rc::Rc::new(std::cell::Cell::new(0));
        for (name, w) in ["A", "B"].into_iter().zip(w) {
            let (f, h, out) = (fs.clone(), h.clone(), end.clone());
            sim.spawn(name, async move {
                f.run_tree_work(w).await;
                if name == "B" {
                    out.set(h.now());
                }
            });
        }
        sim.run().unwrap();
        end.get()
    }

    #[test]
    fn the_root_of_a_three_level_tree_goes_once_the_node_searches_are_done() {
        // A and B share the root (level 2) and nothing else: 1 µs of node searches, 5 µs
        // of the leaf's COW and search, 5 µs of item moves each.
        let lock = |level, block| TreeLock {
            tree: tree_id::FS,
            level,
            block,
            write: true,
            keep: level == 0,
        };
        let work = |b| TreeWork {
            node_cpu: 1_000,
            path_cpu: 5_000,
            leaf_cpu: 5_000,
            leaf_trees: LeafSplit::new(),
            locks: [lock(2, 0), lock(1, b), lock(0, b)].into_iter().collect(),
            nodes: Default::default(),
        };
        // B takes the root when A's node searches are done (held to 6 µs before).
        assert_eq!(two_changes_end_at([work(1), work(2)]), 12_000);
        // Sharing level 1 too, B waits for A's leaf COW and search as well.
        let mut b = work(2);
        b.locks[1].block = 1;
        assert_eq!(two_changes_end_at([work(1), b]), 17_000);
    }

    #[test]
    fn a_calls_tree_is_released_once_its_own_items_are_moved() {
        let lock = |tree, level, block| TreeLock {
            tree,
            level,
            block,
            write: true,
            keep: true,
        };
        // A: a finished ordered extent — the file extent item under a kept subvolume
        // root (2 µs of item moves), then its checksums (8 µs) in the csum tree.
        let a = |split: bool| TreeWork {
            node_cpu: 0,
            path_cpu: 1_000,
            leaf_cpu: 10_000,
            leaf_trees: if split {
                [(tree_id::FS, 2_000), (tree_id::CSUM, 8_000)]
                    .into_iter()
                    .collect()
            } else {
                LeafSplit::new()
            },
            locks: [
                lock(tree_id::FS, 1, 0),
                lock(tree_id::FS, 0, 1),
                lock(tree_id::CSUM, 0, 5),
            ]
            .into_iter()
            .collect(),
            nodes: Default::default(),
        };
        // B: a change of another leaf under the same root.
        let b = TreeWork {
            node_cpu: 0,
            path_cpu: 1_000,
            leaf_cpu: 2_000,
            leaf_trees: LeafSplit::new(),
            locks: [lock(tree_id::FS, 1, 0), lock(tree_id::FS, 0, 2)]
                .into_iter()
                .collect(),
            nodes: Default::default(),
        };
        // B takes the root once A's file extent item is in (3 µs), not after its csums.
        assert_eq!(two_changes_end_at([a(true), b.clone()]), 6_000);
        assert_eq!(two_changes_end_at([a(false), b]), 14_000);
    }

    #[test]
    fn a_kept_parent_holds_the_other_change_until_the_leaf_work_is_done() {
        // Released by unlock_up: B descends once A has, and both move items at once.
        assert_eq!(second_change_ends_at(false), 12_000);
        // Kept (lowest_unlock 2): B waits for all of A's work.
        assert_eq!(second_change_ends_at(true), 22_000);
    }

    #[test]
    fn deletes_write_lock_up_to_level_two_and_locks_are_ordered_top_down() {
        let mut trees = two_level_tree();
        let mut tr = Transaction::running(1000, 0, 0);
        let first = [TreeOp::Update(tree_id::FS, inode_key(300), 160)];
        locks_of(&mut trees, &mut tr, &first);
        let ops = [
            TreeOp::Update(tree_id::FS, inode_key(300), 160),
            TreeOp::Delete(tree_id::FS, Key::new(300, key_type::INODE_ITEM, 0)),
            TreeOp::Search(tree_id::FS, inode_key(19_000)),
        ];
        let l = locks_of(&mut trees, &mut tr, &ops);
        // One root lock, written for the delete although the update and search read it.
        let roots: Vec<_> = l.iter().filter(|x| x.level == 1).collect();
        assert_eq!(roots.len(), 1);
        assert!(roots[0].write);
        assert_eq!(l[0].level, 1, "the root is taken first: {l:?}");
        assert!(l.windows(2).all(|p| p[0].order() < p[1].order()), "{l:?}");
        // Two leaves: the deleted item's (written) and the searched one's (read).
        let leaves: Vec<_> = l.iter().filter(|x| x.level == 0).map(|x| x.write).collect();
        assert_eq!(leaves.len(), 2);
        assert!(leaves.contains(&true) && leaves.contains(&false));
    }
}
