//! fs/btrfs/inode.c: namespace operations (create, mkdir, link, rename, unlink, rmdir).

use super::ctree::Btrfs;
use super::ctree_btree::{
    drop_extent_ops, inode_key, inode_update, key_type, link_ops, orphan_key, size, tree_id,
    unlink_ops, Key, TreeOp,
};
use super::policy::{LogPatch, Mutant};
use super::state::*;
use crate::vfs::OpError;

/// A held inode lock (i_rwsem taken exclusively, and with BTRFS_ILOCK_MMAP the inode's
/// i_mmap_lock taken for writing); unlocks when dropped. `None`s under the `no-inode-lock`
/// mutant.
pub(super) struct InodeLock {
    rwsem: Option<sim::Mutex>,
    mmap: Option<sim::RwSem>,
}

impl Drop for InodeLock {
    fn drop(&mut self) {
        // btrfs_inode_unlock (inode.c@v5.13): up_write(i_mmap_lock), then inode_unlock.
        if let Some(s) = &self.mmap {
            s.up_write();
        }
        if let Some(m) = &self.rwsem {
            m.unlock();
        }
    }
}

/// Transaction handles btrfs_evict_inode@v5.10 takes: btrfs_commit_inode_delayed_inode's
/// join, and evict_refill_and_join for the truncation and for btrfs_orphan_del.
pub(super) const EVICT_HANDLES: u64 = 3;

impl Btrfs {
    /// The inode's i_rwsem, made at its first use (one engine mutex per inode; the class
    /// `inode_lock` sums their waits).
    fn inode_rwsem(&self, ino: Ino) -> sim::Mutex {
        self.inner
            .inode_locks
            .borrow_mut()
            .entry(ino)
            .or_insert_with(|| sim::Mutex::recyclable(&self.inner.h, "inode_lock"))
            .clone()
    }

    /// The inode's log_mutex (struct btrfs_inode, btrfs_inode.h@v5.10), made at its first
    /// use (the class `inode.log_mutex` sums their waits).
    pub(super) fn inode_log_mutex(&self, ino: Ino) -> sim::Mutex {
        self.inner
            .inode_log_mutexes
            .borrow_mut()
            .entry(ino)
            .or_insert_with(|| sim::Mutex::recyclable(&self.inner.h, "inode.log_mutex"))
            .clone()
    }

    /// The inode's i_mmap_lock (struct btrfs_inode, btrfs_inode.h@v5.13, from 8318ba79eeeb
    /// "btrfs: add a i_mmap_lock to our inode"), made at its first use (the class
    /// `inode.i_mmap_lock` sums their waits).
    pub(super) fn inode_mmap_lock(&self, ino: Ino) -> sim::RwSem {
        self.inner
            .inode_mmap_locks
            .borrow_mut()
            .entry(ino)
            .or_insert_with(|| sim::RwSem::recyclable(&self.inner.h, "inode.i_mmap_lock"))
            .clone()
    }

    /// Drops the locks of inodes compaction removed from the state (evicted: nothing can
    /// reach them), so their engine slots serve later inodes.
    pub(super) fn drop_gone_inode_locks(&self, st: &FsState) {
        for map in [&self.inner.inode_locks, &self.inner.inode_log_mutexes] {
            drop_gone(&mut map.borrow_mut(), st);
        }
        drop_gone(&mut self.inner.inode_mmap_locks.borrow_mut(), st);
        self.prune_tree_locks();
    }

    /// inode_lock(inode) (include/linux/fs.h: down_write(&inode->i_rwsem)); from 5.11 btrfs
    /// calls it through btrfs_inode_lock (inode.c), from 5.13 with BTRFS_ILOCK_MMAP
    /// (`mmap`): then down_write(i_mmap_lock) too, which excludes page_mkwrite
    /// (`mmap_write`). Taken before any transaction handle or log mutex, as every caller in
    /// the kernel does (write, fsync, setattr/truncate, fallocate, punch hole, setxattr).
    pub(super) async fn lock_inode_flags(&self, ino: Ino, mmap: bool) -> InodeLock {
        if self.mutant(super::policy::Mutant::NoInodeLock) {
            return InodeLock {
                rwsem: None,
                mmap: None,
            };
        }
        let m = self.inode_rwsem(ino);
        std::mem::forget(m.lock().await);
        let mmap = if mmap {
            let s = self.inode_mmap_lock(ino);
            s.down_write().await;
            Some(s)
        } else {
            None
        };
        InodeLock {
            rwsem: Some(m),
            mmap,
        }
    }

    /// The inode `path` names, locked. The path is looked up once, when the call starts, as
    /// a descriptor pins its inode: the call goes on with that inode even if the name is
    /// unlinked or renamed while the task waits for the lock.
    pub(super) async fn lock_path(&self, path: &str) -> Result<(Ino, InodeLock), OpError> {
        self.lock_path_flags(path, false).await
    }

    /// `lock_path` with BTRFS_ILOCK_MMAP when `mmap` (see `lock_inode_flags`).
    pub(super) async fn lock_path_flags(
        &self,
        path: &str,
        mmap: bool,
    ) -> Result<(Ino, InodeLock), OpError> {
        let ino = self.resolve(path)?;
        Ok((ino, self.lock_inode_flags(ino, mmap).await))
    }

    pub(super) async fn create(&self, path: &str, is_dir: bool) -> Result<(), OpError> {
        let (dir, name) = self.split(path)?;
        if self.inner.st.borrow().live_entry(dir, name).is_some() {
            return Err(OpError(format!("file exists: {path}")));
        }
        // btrfs_create / btrfs_mkdir (inode.c@v5.10): btrfs_start_transaction(root, 5).
        let th = self.start_transaction_items(5).await?;
        let t = th.id;
        self.inner.h.cpu(self.inner.costs.new_inode_cpu()).await;
        let cpu = {
            // btrfs_new_inode inserts the inode item and its ref; btrfs_create and
            // btrfs_mkdir (inode.c@v5.10) then btrfs_update_inode the new inode (a delayed
            // inode item: the new inode gets its delayed node); btrfs_add_link the dir item
            // and index, and updates the directory's inode item. The tree work is applied
            // before its CPU passes, the inode's state after (the order the model had with
            // a constant cost).
            let mut st = self.st_mut();
            let ino = st.next_ino;
            let item = TreeOp::Insert(tree_id::FS, inode_key(ino), size::INODE_ITEM);
            let mut ops = vec![item, inode_update(ino)];
            ops.extend(link_ops(&mut st.trees, ino, dir, name));
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        if self.inner.st.borrow().live_entry(dir, name).is_some() {
            // Another task created it while this one waited.
            self.end(th);
            return Err(OpError(format!("file exists: {path}")));
        }
        {
            let mut st = self.st_mut();
            let ino = st.next_ino;
            st.next_ino += 1;
            st.inodes.insert(ino, Inode::new(ino, is_dir, t));
            st.add_dentry(dir, name, ino, t);
            Self::set_inode_last_trans(&mut st, ino, t);
            Self::set_inode_last_trans(&mut st, dir, t);
            st.inodes.get_mut(&dir).unwrap().item_trans = t;
        }
        self.end(th);
        Ok(())
    }

    pub(super) async fn link_or_rename(
        &self,
        src: &str,
        dst: &str,
        rename: bool,
    ) -> Result<(), OpError> {
        let (ino, old_dir, old_name) = self.resolve_split(src)?;
        let (new_dir, new_name) = self.split(dst)?;
        let target = self.link_target(src, dst, ino, (new_dir, new_name), rename)?;
        if target == Some(ino) {
            // vfs_rename (fs/namei.c@v5.10): `if (source == target) return 0;` — two names
            // of one inode: nothing happens.
            return Ok(());
        }
        let _locks = self.lock_link_inodes(ino, target, rename).await;
        // btrfs_rename: trans_num_items = 11; btrfs_link: 5 (inode.c@v5.10).
        let th = self
            .start_transaction_items(if rename { 11 } else { 5 })
            .await?;
        let t = th.id;
        let (kind, joined) = if rename {
            ("rename", "rename:joined")
        } else {
            ("link", "link:joined")
        };
        self.point(joined).await;
        {
            let st = self.inner.st.borrow();
            if st.live_entry(old_dir, old_name) != Some(ino)
                || st.live_entry(new_dir, new_name) != target
            {
                drop(st);
                self.end(th);
                return Err(OpError(format!(
                    "{src} or {dst} changed while {kind} waited"
                )));
            }
        }
        let (cpu, evicted) = self.rename_state(
            t,
            ino,
            (old_dir, old_name),
            (new_dir, new_name),
            target,
            rename,
        );
        self.run_tree_work(cpu).await;
        if rename {
            // __btrfs_unlink_inode of the old name (inode.c@v5.10).
            self.del_name_in_log(t, ino, old_dir, old_name).await;
            self.st_mut()
                .finish_removal(old_dir, old_name, ino, t, self.inner.h.now());
        }
        if let Some(tg) = target {
            // btrfs_unlink_inode → __btrfs_unlink_inode of the replaced name.
            self.del_name_in_log(t, tg, new_dir, new_name).await;
            self.st_mut()
                .finish_removal(new_dir, new_name, tg, t, self.inner.h.now());
        }
        // btrfs_log_new_name (R1).
        self.log_new_name(t, ino, rename.then_some(old_dir)).await;
        self.end(th);
        if evicted {
            self.final_iput(EVICT_HANDLES).await;
        }
        Ok(())
    }

    /// The inode locks a link or rename takes before its transaction (fs/namei.c@v5.10..v5.16):
    /// vfs_link inode_lock(source); vfs_rename lock_two_nondirectories(source, target) for a
    /// non-directory source (ordered, here by inode number), else inode_lock(target).
    async fn lock_link_inodes(
        &self,
        ino: Ino,
        target: Option<Ino>,
        rename: bool,
    ) -> Vec<InodeLock> {
        let src_dir = self.inner.st.borrow().inodes[&ino].is_dir;
        let mut inos: Vec<Ino> = (!rename || !src_dir).then_some(ino).into_iter().collect();
        inos.extend(target.filter(|_| rename));
        inos.sort_unstable();
        let mut held = Vec::new();
        for i in inos {
            held.push(self.lock_inode_flags(i, false).await);
        }
        held
    }

    /// The tree work and state change of a link or rename in transaction `t`, before its
    /// CPU passes: the old name's removal (rename), the target's unlink
    /// (btrfs_unlink_inode), the new name (btrfs_add_link) and the inode item. Returns the
    /// work and whether the target was evicted (its last name gone, no descriptor).
    fn rename_state(
        &self,
        t: TransId,
        ino: Ino,
        (old_dir, old_name): (Ino, &str),
        (new_dir, new_name): (Ino, &str),
        target: Option<Ino>,
        rename: bool,
    ) -> (super::locking::TreeWork, bool) {
        let mut evicted = false;
        let mut st = self.st_mut();
        let mut ops: smallvec::SmallVec<[TreeOp; 9]> = smallvec::SmallVec::new();
        if rename {
            ops.extend(unlink_ops(&mut st.trees, ino, old_dir, old_name));
        }
        if let Some(tg) = target {
            // btrfs_rename (inode.c@v5.10..v5.16): `if (new_inode)` →
            // btrfs_unlink_inode(new_dir, new_inode, new name), after the old name.
            ops.extend(unlink_ops(&mut st.trees, tg, new_dir, new_name));
            ops.extend(Self::unlinked_inode_ops(&st, tg));
        }
        ops.extend(link_ops(&mut st.trees, ino, new_dir, new_name));
        ops.push(inode_update(ino));
        let cpu = Self::tree_ops(&mut st, &self.inner.costs, t, &ops);
        if rename {
            st.remove_dentry(old_dir, old_name, t, self.inner.h.now());
            // btrfs_rename (inode.c@v5.10) calls btrfs_record_unlink_dir(for_rename = 1)
            // only when the parents differ (tree-log.c:btrfs_record_unlink_dir@v5.10):
            // the inode always, the old directory unless it or the inode is already
            // logged in this transaction. A rename within one directory marks nothing
            // here (btrfs_log_new_name marks a non-directory inode, below).
            if old_dir != new_dir {
                st.inodes.get_mut(&ino).unwrap().last_unlink_trans = t;
                let dir_logged = st.inodes[&old_dir].logged_trans == t;
                let ino_logged = st.inodes[&ino].logged_trans == t;
                if !dir_logged && !ino_logged {
                    st.inodes.get_mut(&old_dir).unwrap().last_unlink_trans = t;
                }
            }
            Self::set_inode_last_trans(&mut st, old_dir, t);
        }
        if let Some(tg) = target {
            st.remove_dentry(new_dir, new_name, t, self.inner.h.now());
            evicted = self.drop_name_of(&mut st, tg, t);
        }
        st.add_dentry(new_dir, new_name, ino, t);
        st.inodes.get_mut(&ino).unwrap().item_trans = t;
        st.inodes.get_mut(&new_dir).unwrap().item_trans = t;
        Self::set_inode_last_trans(&mut st, ino, t);
        Self::set_inode_last_trans(&mut st, new_dir, t);
        (cpu, evicted)
    }

    /// What is at `dst` for a link or rename (vfs_rename / btrfs_rename checks, fs/namei.c
    /// and inode.c@v5.10): nothing; for a rename, an inode to replace — a file by a file,
    /// an empty directory by a directory, or the source itself; else the error. A rename
    /// of a directory into its own subtree is EINVAL.
    fn link_target(
        &self,
        src: &str,
        dst: &str,
        ino: Ino,
        (new_dir, new_name): (Ino, &str),
        rename: bool,
    ) -> Result<Option<Ino>, OpError> {
        let st = self.inner.st.borrow();
        let is_dir = st.inodes[&ino].is_dir;
        let target = st.live_entry(new_dir, new_name);
        if target.is_some() && !rename {
            return Err(OpError(format!("file exists: {dst}")));
        }
        if !rename && is_dir {
            return Err(OpError(format!("cannot hard-link a directory: {src}")));
        }
        if let Some(tg) = target.filter(|&tg| tg != ino) {
            let tg_dir = st.inodes[&tg].is_dir;
            let err = if is_dir && !tg_dir {
                Some("not a directory")
            } else if !is_dir && tg_dir {
                Some("is a directory")
            } else if tg_dir && st.has_children(tg) {
                Some("directory not empty")
            } else {
                None
            };
            if let Some(e) = err {
                return Err(OpError(format!("{e}: {dst}")));
            }
        }
        if rename && target != Some(ino) {
            // rename(2) of a directory into its own subtree: EINVAL.
            let mut cur = new_dir;
            for _ in 0..64 {
                if cur == ino {
                    return Err(OpError(format!(
                        "cannot move a directory into itself: {src} -> {dst}"
                    )));
                }
                match st.parent_of(cur) {
                    Some(p) => cur = p,
                    None => break,
                }
            }
        }
        Ok(target)
    }

    /// The inode-side tree work of removing one name of a file (its name items aside),
    /// from the state before the removal: at nlink 0 an orphan item (btrfs_orphan_add,
    /// inode.c@v5.10: btrfs_unlink, btrfs_rename); the last name of a file no descriptor
    /// holds takes the final iput with it (`evict_ops`); otherwise the inode item's nlink
    /// and ctime (btrfs_update_inode), and the orphan item waits for the final iput at
    /// `close`. A directory's: its inode item (an empty one is replaced by rename).
    pub(super) fn unlinked_inode_ops(st: &FsState, ino: Ino) -> Vec<TreeOp> {
        let i = &st.inodes[&ino];
        let last = !i.is_dir && st.live.get(&ino).is_none_or(|l| l.len() <= 1);
        let mut ops = Vec::new();
        if last && !st.is_open(ino) {
            ops.push(TreeOp::Insert(
                tree_id::FS,
                orphan_key(ino),
                size::ORPHAN_ITEM,
            ));
            ops.extend(Self::evict_ops(st, ino));
            return ops;
        }
        ops.push(inode_update(ino));
        if last {
            ops.push(TreeOp::Insert(
                tree_id::FS,
                orphan_key(ino),
                size::ORPHAN_ITEM,
            ));
        }
        ops
    }

    /// The final iput's tree work on a file with no names (btrfs_evict_inode,
    /// inode.c@v5.10): btrfs_commit_inode_delayed_inode writes the inode item the removal
    /// left in its delayed node (a search of the item to update in place), then
    /// btrfs_truncate_inode_items deletes the file extent items (their extents and
    /// checksums with them) and the inode item, and btrfs_orphan_del the orphan item.
    pub(super) fn evict_ops(st: &FsState, ino: Ino) -> Vec<TreeOp> {
        let i = &st.inodes[&ino];
        let mut ops = vec![TreeOp::Search(tree_id::FS, inode_key(ino))];
        for e in i.extents.iter().filter(|e| !e.hole) {
            ops.extend(drop_extent_ops(ino, e.offset, e.data_offset, e.len));
        }
        // The items of ranges written back at their offsets and the hole items after
        // them (extent_io.rs).
        for (&off, &(len, ext)) in st.range_items.get(&ino).into_iter().flatten() {
            for k in [off, off + len] {
                let key = Key::new(ino, key_type::EXTENT_DATA, k);
                ops.push(TreeOp::Delete(tree_id::FS, key));
            }
            ops.push(TreeOp::Delete(
                tree_id::EXTENT,
                super::extent_io::ext_key(ext),
            ));
        }
        ops.push(TreeOp::Delete(tree_id::FS, inode_key(ino)));
        ops.push(TreeOp::Delete(tree_id::FS, orphan_key(ino)));
        ops
    }

    /// After a name of `ino` was removed in `t` (btrfs_unlink_inode: drop_nlink, then
    /// btrfs_update_inode): a file left with no name and no descriptor is evicted — its data
    /// freed, pinned in `t`, its dirty pages dropped with their reservation; otherwise its
    /// inode item is updated (`update_unlinked_inode`). Returns whether it was evicted.
    pub(super) fn drop_name_of(&self, st: &mut FsState, ino: Ino, t: TransId) -> bool {
        if st.inodes[&ino].is_dir || st.has_names(ino) || st.is_open(ino) {
            self.update_unlinked_inode(st, ino, t);
            return false;
        }
        Self::drop_unlinked_data(st, ino, t);
        true
    }

    /// The final iput's truncation of a file with no names (btrfs_evict_inode →
    /// btrfs_truncate_inode_items, inode.c@v5.10): its data extents freed in `t` (pinned),
    /// its dirty pages dropped with their delalloc reservations, data and metadata:
    /// truncate_inode_pages_final → btrfs_invalidatepage clears EXTENT_DELALLOC with
    /// EXTENT_DO_ACCOUNTING, and btrfs_clear_delalloc_extent (inode.c@v5.10) gives the
    /// range's data space back (btrfs_free_reserved_data_space_noquota: bytes_may_use).
    pub(super) fn drop_unlinked_data(st: &mut FsState, ino: Ino, t: TransId) {
        Self::free_data_extents(st, ino, t);
        let dirty = std::mem::take(&mut st.inodes.get_mut(&ino).unwrap().dirty_bytes);
        st.meta.delalloc_bytes -= dirty;
        sim::check!(
            st.data.may_use >= dirty,
            "dropped dirty pages were reserved"
        );
        st.data.may_use -= dirty;
        st.meta.range_dirty.remove(&ino);
        st.meta.range_at.remove(&ino);
        st.meta.range_list.remove(&ino);
        st.meta.dirty_at.remove(&ino);
        let rsv = st.meta.delalloc_rsv.remove(&ino).unwrap_or(0);
        st.meta.may_use -= rsv;
    }

    /// The final iput: btrfs_evict_inode → evict_refill_and_join (inode.c@v5.12) refills
    /// its block reserve with BTRFS_RESERVE_FLUSH_EVICT — a priority ticket when the space
    /// is full — for one item update plus its delayed refs, and gives it back when the
    /// truncation is done. The truncation itself is modelled in the transaction that
    /// dropped the last reference. Failing it (ENOSPC) leaves an orphan in the kernel;
    /// here the removal has already succeeded. Its CPU outside the trees is
    /// `Costs::final_iput_cpu` with `handles` of btrfs_evict_inode's three transaction
    /// handles the caller has not charged.
    pub(super) async fn final_iput(&self, handles: u64) {
        self.inner
            .h
            .cpu(self.inner.costs.final_iput_cpu(handles))
            .await;
        let bytes = self.inner.costs.nodesize * 8 + self.meta_items(1);
        if self.reserve_metadata_evict(bytes).await.is_ok() {
            self.release_metadata(bytes);
        }
    }

    pub(super) async fn remove(&self, path: &str, dir: bool) -> Result<(), OpError> {
        let (ino, parent, name) = self.resolve_split(path)?;
        {
            let st = self.inner.st.borrow();
            if st.inodes[&ino].is_dir != dir {
                return Err(OpError(format!(
                    "{}: {path}",
                    if dir {
                        "not a directory"
                    } else {
                        "is a directory"
                    }
                )));
            }
            if dir && st.has_children(ino) {
                return Err(OpError(format!("directory not empty: {path}")));
            }
        }
        // __unlink_start_trans (inode.c@v5.10): 5 items, falling back to the global
        // reserve (modelled as the plain reservation).
        let th = self.start_transaction_items(5).await?;
        let t = th.id;
        let cpu = {
            // The tree work is applied before its CPU passes, the unlink's state after (the
            // order the model had with a constant cost).
            let mut st = self.st_mut();
            let mut ops: Vec<TreeOp> = unlink_ops(&mut st.trees, ino, parent, name).to_vec();
            if !dir {
                ops.extend(Self::unlinked_inode_ops(&st, ino));
            } else {
                // The inode item's nlink and ctime (btrfs_update_inode).
                ops.push(inode_update(ino));
            }
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        if self.inner.st.borrow().live_entry(parent, name) != Some(ino) {
            self.end(th);
            return Err(OpError(format!("{path} changed while it waited")));
        }
        let mut evicted = false;
        {
            let mut st = self.st_mut();
            st.remove_dentry(parent, name, t, self.inner.h.now());
            if dir {
                // btrfs_rmdir (inode.c@v5.10/v5.11) does not call btrfs_record_unlink_dir:
                // the parent inherits the removed directory's own last_unlink_trans, and
                // only when that is of the running transaction (`>= trans->transid`).
                let removed = st.inodes[&ino].last_unlink_trans;
                if removed >= t {
                    st.inodes.get_mut(&parent).unwrap().last_unlink_trans = removed;
                }
            } else {
                // btrfs_unlink → btrfs_record_unlink_dir(for_rename = 0): the inode always;
                // the directory never (tree-log.c@v5.10).
                st.inodes.get_mut(&ino).unwrap().last_unlink_trans = t;
                // The last name gone and no descriptor: eviction truncates the data.
                evicted = self.drop_name_of(&mut st, ino, t);
            }
            st.inodes.get_mut(&parent).unwrap().item_trans = t;
            Self::set_inode_last_trans(&mut st, parent, t);
        }
        // __btrfs_unlink_inode (inode.c@v5.10), for unlink and rmdir alike.
        self.del_name_in_log(t, ino, parent, name).await;
        self.st_mut()
            .finish_removal(parent, name, ino, t, self.inner.h.now());
        self.end(th);
        if evicted {
            self.final_iput(EVICT_HANDLES).await;
        }
        Ok(())
    }

    /// btrfs_unlink_inode (inode.c@v5.10..v5.15): after __btrfs_unlink_inode removed the
    /// name, drop_nlink and btrfs_update_inode of the inode that keeps other names (its
    /// nlink and ctime, in the running transaction; btrfs_update_inode →
    /// btrfs_set_inode_last_trans, inode.c@v5.10). So a later fsync of the file is not
    /// skipped as "committed" (btrfs_sync_file compares last_trans with
    /// last_trans_committed) and logs the inode with its remaining refs and, as
    /// last_unlink_trans is this transaction, all its parents (btrfs_log_all_parents):
    /// replay drops the removed name (xfstests generic/039, 106, 107, 336). The item's tree
    /// update is in the unlink's tree work above; `unlink-no-inode-update` skips this.
    fn update_unlinked_inode(&self, st: &mut FsState, ino: Ino, t: TransId) {
        if self.mutant(Mutant::UnlinkNoInodeUpdate) {
            return;
        }
        st.inodes.get_mut(&ino).unwrap().item_trans = t;
        Self::set_inode_last_trans(st, ino, t);
    }

    /// btrfs_setattr without a size change (inode.c@v5.10): setattr_copy, then
    /// btrfs_dirty_inode → btrfs_join_transaction (TRANS_JOIN: not blocked in COMMIT_START)
    /// → btrfs_update_inode, which stamps last_trans (btrfs_set_inode_last_trans).
    /// Under the inode lock: chmod_common, utimes_common and notify_change's callers take
    /// inode_lock around it (fs/open.c, fs/utimes.c@v5.10).
    pub(super) async fn setattr(&self, path: &str) -> Result<(), OpError> {
        let (ino, _ilock) = self.lock_path(path).await?;
        let th = self.join_transaction().await;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            st.inodes.get_mut(&ino).unwrap().item_trans = t;
            let op = inode_update(ino);
            Self::tree_ops(&mut st, &self.inner.costs, t, &[op])
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }

    /// btrfs_cont_expand (inode.c@v5.10..v5.15), from btrfs_setsize growing a file: each
    /// range of [ALIGN(oldsize), ALIGN(newsize)) that no extent maps gets a hole (a hole
    /// file extent item via maybe_insert_hole without NO_HOLES, and a hole extent map
    /// added with add_extent_mapping(modified = 1), so on the modified list of the fast
    /// fsync too); a full sync copies the new hole item. Replay drops the range, so bytes
    /// truncated away before do not come back (xfstests generic/101). With NO_HOLES
    /// (`mkfs = "no-holes"`) no item is inserted; the full fsync's btrfs_log_holes logs
    /// the gap.
    pub(super) fn cont_expand(
        &self,
        st: &mut FsState,
        ino: Ino,
        (old, new): (u64, u64),
        t: TransId,
        ops: &mut Vec<TreeOp>,
    ) {
        let sector = self.inner.costs.sectorsize;
        let (start, end) = (old.next_multiple_of(sector), new.next_multiple_of(sector));
        let mut mapped: Vec<(u64, u64)> = st.inodes[&ino]
            .extents
            .iter()
            .filter(|e| e.offset < end && e.end() > start)
            .map(|e| (e.offset, e.end()))
            .collect();
        mapped.sort_unstable();
        let mut gaps = Vec::new();
        let mut cur = start;
        for (a, b) in mapped {
            if a > cur {
                gaps.push((cur, a));
            }
            cur = cur.max(b);
        }
        if cur < end {
            gaps.push((cur, end));
        }
        for (a, b) in gaps {
            Self::insert_hole(st, ino, t, a, b);
            if !self.inner.no_holes.get() {
                // The hole's file extent item (btrfs_insert_file_extent).
                let k = Key::new(ino, key_type::EXTENT_DATA, a);
                ops.push(TreeOp::Insert(tree_id::FS, k, size::FILE_EXTENT));
            }
        }
    }

    /// btrfs_setattr with ATTR_SIZE → btrfs_setsize (inode.c@v5.10). Growing: a started
    /// transaction updates i_size in the item (no extents; the range reads as a hole).
    /// Shrinking or the same size (`newsize <= oldsize`): btrfs_truncate waits for ordered
    /// extents past the new size, sets BTRFS_INODE_NEEDS_FULL_SYNC ("so if we truncate and
    /// then write and fsync we normally would just write the extents that changed, which is
    /// a problem if we need to first truncate that entire inode") and
    /// btrfs_truncate_inode_items drops the extents past it and trims the one crossing it.
    /// From 0d7d316597c0 (5.14, `full-sync-if-extents-dropped`) the flag is set only if
    /// btrfs_truncate_inode_items found such a file extent item (`extents_found > 0`). The
    /// model writes the dirty tail back first in both cases. Under the inode lock:
    /// do_truncate takes inode_lock around notify_change (fs/open.c@v5.10).
    pub(super) async fn truncate(&self, path: &str, size: u64) -> Result<(), OpError> {
        let (ino, _ilock) = self.lock_path(path).await?;
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        self.writeback(ino).await;
        // btrfs_truncate: btrfs_start_transaction(root, 2); growing (btrfs_setsize): 1.
        let shrink = size <= self.inner.st.borrow().inodes[&ino].disk_size;
        let th = self
            .start_transaction_items(if shrink { 2 } else { 1 })
            .await?;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let old = st.inodes[&ino].disk_size;
            let mut ops = vec![inode_update(ino)];
            if size <= old {
                // btrfs_truncate_inode_items: the items of the extents past the new size.
                let i = &st.inodes[&ino];
                for e in i.extents.iter().filter(|e| !e.hole && e.offset >= size) {
                    ops.extend(drop_extent_ops(ino, e.offset, e.data_offset, e.len));
                }
                // extents_found: the file extent items it deletes or trims, i.e. that end
                // past the new size (item_end >= new_size); a hole has an item only
                // without NO_HOLES.
                let found = i
                    .extents
                    .iter()
                    .filter(|e| e.end() > size && !(e.hole && self.inner.no_holes.get()))
                    .count();
                self.drop_extents(&mut st, ino, size, u64::MAX, t);
                let i = st.inodes.get_mut(&ino).unwrap();
                // The oracle: a full sync is needed after a truncate only if it removed or
                // trimmed an item (the log could hold it); set for nothing else, the flag
                // only makes the next fsync copy again what the fast path would not.
                if found > 0 {
                    i.full_sync_needless = false;
                } else if !i.needs_full_sync {
                    i.full_sync_needless = true;
                }
                if found > 0 || !self.log_patch(LogPatch::FullSyncIfExtentsDropped) {
                    i.needs_full_sync = true;
                } else {
                    i.full_sync_needless = false;
                }
            } else if size > old && !self.mutant(Mutant::GrowingTruncateNoHole) {
                self.cont_expand(&mut st, ino, (old, size), t, &mut ops);
            }
            let keep = st.keep_history;
            let i = st.inodes.get_mut(&ino).unwrap();
            i.disk_size = size;
            if keep {
                i.size_hist.push((t, size));
            }
            i.item_trans = t;
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }

    /// Reads directory `path` to its end (`Op::Readdir`): iterate_dir (fs/readdir.c@v5.10)
    /// calls btrfs_real_readdir (inode.c@v5.10) for the entries, from ctx->pos 2 (after
    /// dir_emit_dots; a directory's first index is 2), and again, as the second getdents64
    /// (its system call charged here), from INT_MAX, where the first call left ctx->pos
    /// once it emitted the last entry, to find none.
    ///
    /// - iterate_dir holds i_rwsem shared. When the directory has a delayed node —
    ///   attached at its first delayed item, kept while the inode is in memory, pending
    ///   items or not (`DelayedRoot::attached`) — btrfs_readdir_get_delayed_items
    ///   (delayed-inode.c@v5.10) drops it and takes it exclusively ("we can only do one
    ///   readdir with delayed items at a time") until the call returns
    ///   (btrfs_readdir_put_delayed_items downgrades it; the VFS releases it), and lists
    ///   the node's pending insertions and deletions under the node's mutex (waiting for a
    ///   run of the node in progress), one reference each. Without a node the read waits
    ///   for a holder of i_rwsem and goes on (the model's i_rwsem is exclusive only: a
    ///   shared holder does not keep a later writer out).
    /// - Each call walks the dir index items from its position leaf by leaf under read
    ///   locks (`readdir_walk`), skips the pending deletions
    ///   (btrfs_should_delete_dir_index) and, the path released, emits the pending
    ///   insertions (btrfs_readdir_delayed_dir_index, `readdir_item_ps` each).
    /// - Past i_rwsem both calls run on one core (nothing in them sleeps; a tree lock's
    ///   waiter spins), with i_rwsem held across the return to user space between them.
    ///   The CPU before each call's walk (the delayed node's lookups; for the second call
    ///   also its system call entry and the first call's insertions emitted) is spent on
    ///   that core before the walk takes its first lock.
    ///
    /// Not modelled: the release and search again when the private buffer's page fills (a
    /// directory of ~200 entries).
    pub(super) async fn readdir(&self, path: &str) -> Result<(), OpError> {
        let dir = self.resolve(path)?;
        if !self.inner.st.borrow().inodes[&dir].is_dir {
            return Err(OpError(format!("not a directory: {path}")));
        }
        let c = &self.inner.costs;
        let node = c.delayed_items != 0 && self.inner.st.borrow().delayed.attached(dir);
        let _held = if node {
            let held = self.lock_inode_flags(dir, false).await;
            self.wait_running_nodes(&[dir]).await;
            Some(held)
        } else {
            drop(self.lock_inode_flags(dir, false).await);
            None
        };
        let pending = self.inner.st.borrow().delayed.index_items(dir);
        let (ins, del) = pending.unwrap_or((0, 0));
        // btrfs_get_delayed_node's lookup under the root's inode_lock and its reference;
        // with a node, its mutex and one reference per pending item; per call.
        let lookup = (2 + if node { 2 + ins + del } else { 0 }) * c.spinlock_ps;
        let emit = ins * c.readdir_item_ps;
        let core = self.inner.h.take_core().await;
        self.real_readdir(dir, 2, lookup.div_ceil(1000)).await;
        // The first call's pending insertions emitted, the second call's entry and lookup.
        let second = c.syscall + (emit + lookup).div_ceil(1000);
        self.real_readdir(dir, i32::MAX as u64, second).await;
        drop(core);
        Ok(())
    }

    /// One btrfs_real_readdir@v5.10 call's walk of `dir`'s index items from `pos`, on the
    /// core the caller holds, after `before` of CPU spent with no tree lock held.
    async fn real_readdir(&self, dir: Ino, pos: u64, before: sim::Nanos) {
        if before > 0 {
            self.inner.h.busy(before).await;
        }
        for w in &self.readdir_walk(dir, pos) {
            self.tree_work_on_core(w).await;
        }
    }
}

/// Removes from `map` the locks of inodes no longer in the state, in inode order (slots are
/// reused in the order they are freed).
fn drop_gone<L>(map: &mut FastMap<Ino, L>, st: &FsState) {
    let mut gone: Vec<Ino> = map
        .keys()
        .copied()
        .filter(|i| !st.inodes.contains_key(i))
        .collect();
    gone.sort_unstable();
    for ino in gone {
        map.remove(&ino);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btrfs::state::Transaction;

    /// dbench's pattern: a file written (its pages dirty, data space reserved) and unlinked
    /// before writeback. Evicting it gives the reservation back; otherwise bytes_may_use
    /// grows with every such file and each reservation that no longer fits allocates a new
    /// data chunk (and forces that transaction's fsyncs to a full commit).
    #[test]
    fn an_evicted_files_dirty_pages_return_their_data_reservation() {
        let mut st = FsState::mkfs();
        let t = st.last_trans_committed + 1;
        st.trans.insert(t, Transaction::running(t, 0, 0));
        let mut i = st.inodes.get(&ROOT_INO).unwrap().clone();
        i.ino = 300;
        i.is_dir = false;
        i.extents.clear();
        i.dirty_bytes = 65536;
        st.inodes.insert(300, i);
        st.data.may_use += 65536;
        st.meta.delalloc_bytes += 65536;
        let before = st.data.in_use();
        Btrfs::drop_unlinked_data(&mut st, 300, t);
        assert_eq!(st.data.may_use, 0);
        assert_eq!(st.meta.delalloc_bytes, 0);
        assert_eq!(st.data.in_use(), before - 65536);
    }

    /// btrfs_unlink of a file's last name adds an orphan item; with no descriptor open the
    /// final iput follows: the delayed inode item written (a search), the inode item and the
    /// orphan item deleted (btrfs_evict_inode@v5.10). With a descriptor open only the orphan
    /// item and the inode update; `close` evicts.
    #[test]
    fn the_last_unlink_adds_an_orphan_item_and_eviction_deletes_it() {
        let mut st = FsState::mkfs();
        let mut i = st.inodes.get(&ROOT_INO).unwrap().clone();
        i.ino = 300;
        i.is_dir = false;
        i.extents.clear();
        st.inodes.insert(300, i);
        let orphan = orphan_key(300);
        let ops = Btrfs::unlinked_inode_ops(&st, 300);
        assert_eq!(
            ops,
            vec![
                TreeOp::Insert(tree_id::FS, orphan, size::ORPHAN_ITEM),
                TreeOp::Search(tree_id::FS, inode_key(300)),
                TreeOp::Delete(tree_id::FS, inode_key(300)),
                TreeOp::Delete(tree_id::FS, orphan),
            ]
        );
        st.fds.insert("f".into(), 300);
        let open = Btrfs::unlinked_inode_ops(&st, 300);
        assert_eq!(
            open,
            vec![
                inode_update(300),
                TreeOp::Insert(tree_id::FS, orphan, size::ORPHAN_ITEM)
            ]
        );
    }
}
