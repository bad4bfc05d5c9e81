//! fs/btrfs/inode.c's inode cache side: an inode evicted (btrfs_evict_inode, reached from
//! `echo 2 > /proc/sys/vm/drop_caches`) and read back from disk by btrfs_iget →
//! btrfs_read_locked_inode, with the in-memory logging state that costs.

use super::ctree::Btrfs;
use super::policy::Mutant;
use super::state::*;
use crate::vfs::OpError;

/// Why an inode stays in the inode cache when asked to leave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvictRefusal {
    /// The root directory: the superblock's root dentry holds it.
    Root,
    /// Dirty pages, writeback in flight or an ordered extent not finished.
    Dirty,
    /// Another operation is running on it (an open file: i_count > 0).
    InUse,
}

impl Btrfs {
    /// Takes a reference on the inode an operation works on while it runs, as an open file
    /// holds one (dropped when the guard is dropped); `evict` leaves a referenced inode in
    /// the cache. `evict` itself takes none.
    pub(super) fn pin_op_inode(&self, op: &crate::vfs::Op) -> InodePin<'_> {
        use crate::vfs::Op;
        // The file it acts on (not close's, which drops the reference), and the source of
        // a link or rename.
        let path = match op {
            Op::Link(p, _) | Op::Rename(p, _) | Op::Clone { dst: p, .. } => Some(p),
            Op::Close(_) => None,
            _ => op.file(),
        };
        let ino = path.and_then(|p| self.inner.st.borrow().lookup(p));
        if let Some(ino) = ino {
            *self.inner.inode_refs.borrow_mut().entry(ino).or_default() += 1;
        }
        InodePin { fs: self, ino }
    }

    /// Whether `evict` would leave the inode in the cache, and why: prune_icache_sb →
    /// inode_lru_isolate (fs/inode.c@v5.10) skips an inode with a reference (i_count) and
    /// one that is dirty — inode_add_lru keeps I_DIRTY_ALL and I_SYNC inodes off the LRU,
    /// and an ordered extent holds a reference (igrab in __btrfs_add_ordered_extent,
    /// ordered-data.c@v5.10) until btrfs_finish_ordered_io drops it. The root directory is
    /// held by the superblock's root dentry.
    pub fn evict_refusal(&self, ino: Ino) -> Option<EvictRefusal> {
        if ino == ROOT_INO {
            return Some(EvictRefusal::Root);
        }
        let st = self.inner.st.borrow();
        let dirty = st.inodes.get(&ino).is_some_and(|i| i.dirty_bytes > 0)
            || st.meta.delalloc_rsv.contains_key(&ino)
            || self.inner.endio.borrow().iter().any(|j| j.ino == ino)
            || self.inner.dio_pending.borrow().contains_key(&ino);
        if dirty {
            Some(EvictRefusal::Dirty)
        } else if st.is_open(ino)
            || self
                .inner
                .inode_refs
                .borrow()
                .get(&ino)
                .is_some_and(|&n| n > 0)
        {
            Some(EvictRefusal::InUse)
        } else {
            None
        }
    }

    /// `evict PATH`: the inode leaves the inode cache and is read back at its next use. A
    /// dirty or referenced inode stays cached, as drop_caches leaves it (`evict_refusal`;
    /// a trace note says which). Otherwise what the in-memory btrfs_inode held is lost and
    /// the new one is what btrfs_alloc_inode + btrfs_read_locked_inode make of the inode
    /// item (inode.c@v5.10, unchanged through v5.15):
    /// - btrfs_alloc_inode: logged_trans = 0, last_sub_trans = 0, last_log_commit = 0,
    ///   runtime_flags = 0 (no NEEDS_FULL_SYNC, no COPY_EVERYTHING), an empty extent map
    ///   tree (so no modified extents);
    /// - btrfs_read_locked_inode: last_trans = btrfs_inode_transid(leaf, inode_item), the
    ///   transaction of the item's last update (the model's `item_trans`; a delayed inode
    ///   item carries the same transid); "If we were modified in the current generation and
    ///   evicted from memory and then re-read we need to do a full sync since we don't have
    ///   any idea about which extents were modified before we were evicted from cache":
    ///   NEEDS_FULL_SYNC iff last_trans == fs_info->generation; and last_unlink_trans =
    ///   last_trans ("We don't persist the id of the transaction where an unlink operation
    ///   against the inode was last made", 803f0f64d177).
    ///
    /// What the log tree already holds of the inode stays there (the oracle's record of it
    /// too). The eviction itself costs no simulated time (drop_caches runs in another
    /// context; the reload's tree search is not priced).
    pub(super) fn evict(&self, path: &str) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        if let Some(why) = self.evict_refusal(ino) {
            let label = match why {
                EvictRefusal::Root => "evict: the root directory stays cached (sb->s_root), ino",
                EvictRefusal::Dirty => {
                    "evict: dirty or under writeback, not on the inode LRU (inode_add_lru), stays cached, ino"
                }
                EvictRefusal::InUse => {
                    "evict: referenced by a running operation or an open descriptor (inode_lru_isolate), stays cached, ino"
                }
            };
            self.note(label, ino);
            return Ok(());
        }
        let full_sync_rule = !self.mutant(Mutant::EvictNoFullSync);
        {
            let mut st = self.st_mut();
            let generation = st.generation;
            let i = st.inodes.get_mut(&ino).expect("resolved");
            i.last_trans = i.item_trans;
            i.logged_trans = 0;
            i.last_sub_trans = 0;
            i.last_log_commit = 0;
            i.last_unlink_trans = i.item_trans;
            i.needs_full_sync = full_sync_rule && i.item_trans == generation;
            i.full_sync_needless = false;
            i.copy_everything = false;
            i.modified_extents.clear();
        }
        self.note(
            "evict: inode evicted and read back (btrfs_read_locked_inode), ino",
            ino,
        );
        Ok(())
    }
}

impl Btrfs {
    /// `open PATH as NAME`: the descriptor `@NAME` takes a reference on the inode PATH
    /// names (do_sys_open → the dentry's inode, i_count; btrfs has no open hook that
    /// matters here: btrfs_file_open only checks flags). Later operations given `@NAME`
    /// act on that inode, whatever its names are then. No simulated time beyond the
    /// system call. A name already open is refused (a scenario's descriptors are named
    /// once at a time).
    pub(super) fn open_fd(&self, path: &str, fd: &crate::vfs::OpPath) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        let mut st = self.st_mut();
        if st.fds.contains_key(fd) {
            return Err(OpError(format!(
                "descriptor {fd} is already open: expected a 'close {fd}' before opening it again"
            )));
        }
        st.fds.insert(fd.clone(), ino);
        Ok(())
    }

    /// `close @NAME`: the descriptor's reference is dropped (fput → iput). The last
    /// reference on a file with no names is the final iput: btrfs_evict_inode
    /// (inode.c@v5.10) joins a transaction (evict_refill_and_join), truncates the items
    /// (`evict_ops`: the delayed inode item written, the file extent items with their
    /// extents pinned and checksums, the inode item and the orphan item deleted), and its
    /// dirty pages are dropped (truncate_inode_pages_final).
    pub(super) async fn close_fd(&self, fd: &str) -> Result<(), OpError> {
        let ino = self
            .st_mut()
            .fds
            .remove(fd)
            .ok_or_else(|| OpError(format!("bad file descriptor: {fd} is not open")))?;
        let last = {
            let st = self.inner.st.borrow();
            !st.inodes[&ino].is_dir && !st.has_names(ino) && !st.is_open(ino)
        };
        if !last {
            return Ok(());
        }
        let th = self.join_transaction().await;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let ops = Self::evict_ops(&st, ino);
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::drop_unlinked_data(&mut self.st_mut(), ino, t);
        self.note(
            "close: final iput of an unlinked inode (btrfs_evict_inode), ino",
            ino,
        );
        self.end(th);
        // close_fd joined one of btrfs_evict_inode's handles above.
        self.final_iput(super::inode::EVICT_HANDLES - 1).await;
        Ok(())
    }
}

/// A reference on an inode held by a running operation (see `Btrfs::pin_op_inode`).
pub(super) struct InodePin<'a> {
    fs: &'a Btrfs,
    ino: Option<Ino>,
}

impl Drop for InodePin<'_> {
    fn drop(&mut self) {
        if let Some(ino) = self.ino {
            let mut refs = self.fs.inner.inode_refs.borrow_mut();
            if let Some(n) = refs.get_mut(&ino) {
                *n -= 1;
                if *n == 0 {
                    refs.remove(&ino);
                }
            }
        }
    }
}
