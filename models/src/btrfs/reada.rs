//! Metadata reads for scrub: the extent buffer cache, synchronous tree searches, and the two
//! readahead mechanisms of seed 002.
//!
//! - The removed framework, `fs/btrfs/reada.c@v5.15.16` (`btrfs_reada_add`,
//!   `reada_start_machine_dev`, `btrfs_reada_wait`): given a key range of a tree, walk it from
//!   the root, a completed node enqueueing its children inside the range; per device, read in
//!   ascending logical order with at most `MAX_IN_FLIGHT` = 6 reads outstanding, `REQ_META`,
//!   from `readahead_workers` at `IOPRIO_CLASS_IDLE` (no effect under the `none` scheduler).
//! - Its replacement, `fs/btrfs/ctree.c:reada_for_search@v5.17-rc5` with
//!   `path->reada = READA_FORWARD`: on a cache miss of a leaf read from a level-1 node, start
//!   asynchronous reads of the following slots whose address is within 64 KiB of the missed
//!   leaf, stopping after more than 64 KiB issued or 32 slots scanned; then read the missed
//!   leaf synchronously (`read_block_for_search`).
//!
//! Every tree block read here stays cached (seed 002: 4 GiB of guest memory against ~60 MiB
//! of metadata); the cache is empty at the start (caches dropped, remounted). Tree roots are
//! read at mount (`disk_io.c:btrfs_read_roots`) and start cached.

use super::layout::{Layout, NODESIZE};
use crate::device::{Device, Request};
use sim::{Handle, Semaphore, WaitQueue};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// `reada.c` MAX_IN_FLIGHT: reads outstanding per device.
pub const MAX_IN_FLIGHT: u64 = 6;
/// `reada_for_search`: distance of a sibling from the missed leaf, and bytes issued, bounds.
pub const PATH_READA_WINDOW: u64 = 65536;
/// `reada_for_search`: slots scanned at most (stops when more than 32 were scanned).
pub const PATH_READA_SCAN: u64 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eb {
    Absent,
    Reading,
    Cached,
}

/// Counters of metadata reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaStats {
    /// Synchronous reads (the scrub thread waited for them).
    pub sync_reads: u64,
    /// Asynchronous sibling reads (`reada_for_search`).
    pub path_reada: u64,
    /// Reads by the readahead framework.
    pub framework_reads: u64,
    /// Time the scrub thread spent waiting for tree blocks, ns.
    pub blocked_ns: u64,
}

/// The extent buffer cache and the reads that fill it.
#[derive(Clone)]
pub struct MetaIo {
    h: Handle,
    dev: Device,
    layout: Rc<Layout>,
    state: Rc<RefCell<Vec<Eb>>>,
    done: WaitQueue,
    stats: Rc<Cell<MetaStats>>,
}

impl MetaIo {
    /// An empty cache (roots cached, as after mount).
    pub fn new(h: &Handle, dev: Device, layout: Rc<Layout>) -> Self {
        let mut state = vec![Eb::Absent; layout.blocks.len()];
        for &r in &layout.roots {
            state[r] = Eb::Cached;
        }
        MetaIo {
            h: h.clone(),
            dev,
            state: Rc::new(RefCell::new(state)),
            done: WaitQueue::new(h, "scrub:eb_read"),
            stats: Rc::new(Cell::new(MetaStats::default())),
            layout,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> MetaStats {
        self.stats.get()
    }

    fn bump(&self, f: impl FnOnce(&mut MetaStats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }

    /// Whether block `id` is cached.
    pub fn cached(&self, id: usize) -> bool {
        self.state.borrow()[id] == Eb::Cached
    }

    async fn read_block(&self, id: usize) {
        let bytenr = self.layout.blocks[id].bytenr;
        self.dev.submit(Request::read(bytenr, NODESIZE)).await;
        self.state.borrow_mut()[id] = Eb::Cached;
        self.done.notify_all();
    }

    /// Reads block `id` and waits for it (`read_extent_buffer_pages(WAIT_COMPLETE)`).
    pub async fn read_sync(&self, id: usize) {
        let start = self.h.now();
        let st = self.state.borrow()[id];
        match st {
            Eb::Cached => return,
            Eb::Absent => {
                self.state.borrow_mut()[id] = Eb::Reading;
                self.bump(|s| s.sync_reads += 1);
                self.read_block(id).await;
            }
            Eb::Reading => {
                while !self.cached(id) {
                    self.done.wait().await;
                }
            }
        }
        let waited = self.h.now() - start;
        self.bump(|s| s.blocked_ns += waited);
    }

    /// Starts an asynchronous read of block `id` unless cached or being read; returns whether
    /// it started one. `done` is released when it completes.
    fn read_async(&self, id: usize, limit: Option<&Semaphore>) -> bool {
        if self.state.borrow()[id] != Eb::Absent {
            return false;
        }
        self.state.borrow_mut()[id] = Eb::Reading;
        let me = self.clone();
        let sem = limit.cloned();
        self.h.spawn("scrub.eb_read", async move {
            me.read_block(id).await;
            if let Some(s) = sem {
                s.release();
            }
        });
        true
    }

    /// `btrfs_search_slot` for `key` in `tree` (commit root, no locking): reads the level-1
    /// node and the leaf on a miss; with `path_reada` the leaf miss first starts
    /// `reada_for_search`'s sibling reads. Returns the leaf.
    pub async fn search(&self, tree: super::layout::Tree, key: u64, path_reada: bool) -> usize {
        let leaf = self.layout.leaf_for(tree, key);
        self.read_path(leaf, path_reada).await;
        leaf
    }

    /// Makes leaf `leaf` cached the way a search (or `btrfs_next_leaf`) reaches it.
    pub async fn read_path(&self, leaf: usize, path_reada: bool) {
        if self.cached(leaf) {
            return;
        }
        let mut chain = Vec::new();
        let mut p = self.layout.blocks[leaf].parent;
        while let Some(n) = p {
            chain.push(n);
            p = self.layout.blocks[n].parent;
        }
        for n in chain.into_iter().rev() {
            self.read_sync(n).await;
        }
        if path_reada && self.state.borrow()[leaf] == Eb::Absent {
            self.reada_for_search(leaf);
        }
        self.read_sync(leaf).await;
    }

    /// `ctree.c:reada_for_search@v5.17-rc5` at level 1, READA_FORWARD: siblings in the
    /// following slots of the same node within ±64 KiB of the missed leaf.
    fn reada_for_search(&self, leaf: usize) {
        let l = &self.layout;
        let target = l.blocks[leaf].bytenr;
        let parent = l.blocks[leaf].parent;
        let tree = l.blocks[leaf].tree as usize;
        let idx = l.leaf_index(leaf);
        let (mut nread, mut nscan) = (0u64, 0u64);
        for &sib in &l.leaves[tree][idx + 1..] {
            if l.blocks[sib].parent != parent {
                break; // nr >= nritems of this node
            }
            let search = l.blocks[sib].bytenr;
            if search.abs_diff(target) <= PATH_READA_WINDOW {
                if self.read_async(sib, None) {
                    self.bump(|s| s.path_reada += 1);
                }
                nread += NODESIZE;
            }
            nscan += 1;
            if nread > PATH_READA_WINDOW || nscan > PATH_READA_SCAN {
                break;
            }
        }
    }

    /// `btrfs_reada_add` + `btrfs_reada_wait` for key ranges of trees: every uncached node
    /// and leaf of the ranges, nodes first (their completion reveals the children), each level
    /// in ascending logical order with at most `MAX_IN_FLIGHT` reads outstanding.
    pub async fn reada_framework(&self, ranges: &[(super::layout::Tree, u64, u64)]) {
        let start = self.h.now();
        let l = &self.layout;
        let mut want: Vec<(u8, u64, usize)> = Vec::new();
        for &(tree, lo, hi) in ranges {
            let a = l.leaf_for(tree, lo);
            let b = l.leaf_for(tree, hi.saturating_sub(1));
            let (ia, ib) = (l.leaf_index(a), l.leaf_index(b));
            for &leaf in &l.leaves[tree as usize][ia..=ib] {
                let mut p = Some(leaf);
                while let Some(n) = p {
                    if !self.cached(n) {
                        want.push((u8::MAX - l.blocks[n].level, l.blocks[n].bytenr, n));
                    }
                    p = l.blocks[n].parent;
                }
            }
        }
        want.sort_unstable();
        want.dedup();
        let sem = Semaphore::new(&self.h, "scrub:reada_in_flight", MAX_IN_FLIGHT);
        let mut level = None;
        for &(lv, _, id) in &want {
            if level.is_some_and(|x| x != lv) {
                // The next level's blocks are known once this level's reads completed.
                sem.acquire_n(MAX_IN_FLIGHT).await.forget();
                sem.release_n(MAX_IN_FLIGHT);
            }
            level = Some(lv);
            sem.acquire().await.forget();
            if self.read_async(id, Some(&sem)) {
                self.bump(|s| s.framework_reads += 1);
            } else {
                sem.release();
            }
        }
        sem.acquire_n(MAX_IN_FLIGHT).await.forget();
        sem.release_n(MAX_IN_FLIGHT);
        for &(_, _, id) in &want {
            while !self.cached(id) {
                self.done.wait().await;
            }
        }
        let waited = self.h.now() - start;
        self.bump(|s| s.blocked_ns += waited);
    }
}
