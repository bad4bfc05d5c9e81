//! fs/btrfs/file.c: buffered writes, ordered writeback and fsync (btrfs_sync_file).

use super::ctree::{Btrfs, LogResult};
use super::ctree_btree::{
    drop_extent_ops, extent_ops, inode_update, key_type, size, tree_id, Key, TreeOp,
};
use super::oracle;
use super::policy::{Fix, LogPatch, Mutant};
use super::state::*;
use crate::device::Request;
use crate::vfs::OpError;

/// Workers of the endio-write workqueue: fs_info->thread_pool_size = min(online CPUs + 2,
/// 8) (disk-io.c:btrfs_init_fs_info@v5.11, the max_active btrfs_init_workqueues gives
/// "endio-write"), 8 on any machine with 6 or more CPUs.
const ENDIO_WORKERS: u32 = 8;

/// What a finished ordered extent's btrfs_finish_ordered_io does.
#[derive(Clone, Copy, Debug)]
pub enum OrderedKind {
    /// A direct write's COW extent inside the file: the file extent item replaced.
    Cow,
    /// A direct write past EOF: a new extent at the offset, i_size moved at completion.
    PastEof,
    /// A direct write in place into a preallocated extent (direct_io.rs).
    Nocow(super::direct_io::Nocow),
    /// A buffered range's ordered extent (extent_io.rs): where its checksums go.
    Range(super::extent_io::RangeCsum),
}

/// An ordered extent whose data is on the device, waiting for btrfs_finish_ordered_io.
#[derive(Clone, Copy, Debug)]
pub struct OrderedDone {
    /// Inode.
    pub ino: Ino,
    /// File offset.
    pub offset: u64,
    /// Bytes.
    pub bytes: u64,
    /// Extent id.
    pub id: u64,
    /// Device offset of the data.
    pub dev_offset: u64,
    /// Metadata reserved for it.
    pub rsv: u64,
    /// The data write's device token.
    pub tok: u64,
    /// What its completion does.
    pub kind: OrderedKind,
}

impl Btrfs {
    /// What a buffered and a mapped write share: the file (not a directory), the page-copy
    /// CPU, and the data-space reservation (btrfs_check_data_free_space /
    /// btrfs_delalloc_reserve_space).
    async fn dirty_pages(&self, path: &str, bytes: u64) -> Result<Ino, OpError> {
        let ino = self.resolve(path)?;
        self.dirty_pages_range(ino, path, bytes, false).await
    }

    /// `dirty_pages`; `new_range`: the pages are not adjacent to the file's other dirty
    /// pages, so they are an outstanding extent of their own (one more insert reserved).
    async fn dirty_pages_range(
        &self,
        ino: Ino,
        path: &str,
        bytes: u64,
        new_range: bool,
    ) -> Result<Ino, OpError> {
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        if self.inner.st.borrow().meta.range_list.contains_key(&ino) {
            return Err(OpError(format!(
                "{path}: the file has dirty ranges written at offsets (`write-range PATH OFFSET SIZE`, each written back as its own ordered extent): write them back first"
            )));
        }
        self.reserve_dirty(ino, bytes, new_range).await?;
        Ok(ino)
    }

    /// The reservations and page-copy CPU of `bytes` dirtied in `ino` (see
    /// `dirty_pages_range`).
    pub(super) async fn reserve_dirty(
        &self,
        ino: Ino,
        bytes: u64,
        new_range: bool,
    ) -> Result<(), OpError> {
        // btrfs_buffered_write@v5.10 reserves data and metadata space for each chunk
        // before prepare_pages and btrfs_copy_from_user: the copy's CPU comes after.
        self.reserve_data(bytes).await?;
        // btrfs_delalloc_reserve_metadata (delalloc-space.c@v5.13): the inode's reserve is
        // sized by btrfs_calculate_inode_block_rsv_size — an insert per outstanding extent,
        // one inode update (nodesize × 8) and the csum leaves — and held until the ordered
        // extent completes: a clean file's first range holds calc_inode_reservations of its
        // bytes, each further separate range one more insert; an appended range merges
        // into its outstanding extent. (The call reserves calc_inode_reservations and gives
        // the excess back at once; that transient is not modelled.)
        let first = self.inner.st.borrow().inodes[&ino].dirty_bytes == 0;
        let rsv = if first {
            self.delalloc_meta_size(bytes)
        } else {
            self.meta_items(u64::from(new_range))
        };
        if rsv > 0 {
            // btrfs_delalloc_reserve_space (delalloc-space.c@v5.10): when the metadata
            // cannot be reserved, the data reservation is freed again.
            if let Err(e) = self.reserve_metadata(rsv).await {
                self.st_mut().data.may_use -= bytes;
                return Err(e);
            }
            *self.st_mut().meta.delalloc_rsv.entry(ino).or_default() += rsv;
        }
        self.st_mut().meta.delalloc_bytes += bytes;
        let pages = bytes.div_ceil(self.inner.costs.sectorsize);
        self.inner
            .h
            .cpu(pages * self.inner.costs.write_per_page)
            .await;
        Ok(())
    }

    /// btrfs_file_write_iter → btrfs_buffered_write: a buffered write of `bytes`.
    pub(super) async fn write(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        self.buffered_write(path, bytes, false).await
    }

    /// pwrite(2) of `bytes` at `at`, under the inode lock as `write`: at the file's end an
    /// append (as `write`); past it a write past EOF (`write_past_eof`); else the range
    /// must lie inside the written file (the model's dirty pages past i_size are one
    /// appended run) and the file have no other dirty pages (they are written back as one
    /// extent), and writeback puts the extent exactly there.
    pub(super) async fn write_at(&self, path: &str, at: u64, bytes: u64) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        let size = self.i_size(ino);
        if at == size {
            return self.buffered_write(path, bytes, false).await;
        }
        let (ino, _ilock) = self.lock_path(path).await?;
        if at > self.i_size(ino) {
            return self.write_past_eof(ino, path, at, bytes).await;
        }
        self.check_range_inside("write", path, ino, at, bytes)?;
        self.dirty_pages_range(ino, path, bytes, true).await?;
        {
            let mut st = self.st_mut();
            *st.meta.range_dirty.entry(ino).or_default() += bytes;
            st.meta.range_at.insert(ino, at);
        }
        self.stamp_buffered_write(ino, bytes);
        Ok(())
    }

    /// The in-memory i_size: the written size plus the dirty run after it, which starts at
    /// `dirty_at` when a write past EOF put it there.
    fn i_size(&self, ino: Ino) -> u64 {
        let st = self.inner.st.borrow();
        let i = &st.inodes[&ino];
        let start = match st.meta.dirty_at.get(&ino) {
            Some(&at) => at,
            None => self.dio_i_size(ino),
        };
        start + i.dirty_bytes
    }

    /// A buffered write at `at` past i_size (inode lock held): btrfs_write_check
    /// (file.c@v5.12..v5.16; the same lines in btrfs_file_write_iter@v5.10/v5.11) runs
    /// btrfs_cont_expand(inode, oldsize, round_up(pos + count)) when round_down(pos) is
    /// past oldsize (`expand_for_write`), then btrfs_buffered_write dirties the pages at
    /// `at` (i_size becomes at + bytes; disk_i_size at the ordered extent's completion).
    /// The model writes a file's dirty pages back as one run: a file with other dirty
    /// pages is refused.
    async fn write_past_eof(
        &self,
        ino: Ino,
        path: &str,
        at: u64,
        bytes: u64,
    ) -> Result<(), OpError> {
        let (dirty, is_dir) = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            (i.dirty_bytes > 0, i.is_dir)
        };
        if is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        if dirty {
            return Err(OpError(format!(
                "write {path} {at} {bytes} past EOF: the file has other dirty pages (the model writes a file's dirty pages back as one extent): write them back first"
            )));
        }
        let appends = self.mutant(Mutant::EofWriteAppends);
        if !appends {
            self.expand_for_write(ino, at).await?;
        }
        self.dirty_pages_range(ino, path, bytes, false).await?;
        if !appends {
            self.st_mut().meta.dirty_at.insert(ino, at);
        }
        self.stamp_buffered_write(ino, bytes);
        Ok(())
    }

    /// btrfs_write_check's hole (file.c@v5.12; btrfs_file_write_iter@v5.10): `start_pos =
    /// round_down(pos, sectorsize); if (start_pos > oldsize) btrfs_cont_expand(inode,
    /// oldsize, end_pos)`. btrfs_cont_expand (inode.c@v5.10) gives each unmapped range a
    /// hole through maybe_insert_hole — its own btrfs_start_transaction(root, 1), the hole
    /// item and btrfs_update_inode; with NO_HOLES no transaction, only the inode's
    /// last_trans = fs_info->generation — and a hole extent map on the modified list: the
    /// growing truncate's `cont_expand`, over [ALIGN(oldsize), ALIGN(pos)) here (the
    /// kernel's hole also covers the written range, which the ordered extent's
    /// btrfs_drop_extents replaces at writeback).
    pub(super) async fn expand_for_write(&self, ino: Ino, at: u64) -> Result<(), OpError> {
        let sector = self.inner.costs.sectorsize;
        let old = self.inner.st.borrow().inodes[&ino].disk_size;
        // `growing-truncate-no-hole` removes btrfs_cont_expand's holes here too.
        if at / sector * sector <= old || self.mutant(Mutant::GrowingTruncateNoHole) {
            return Ok(());
        }
        if self.inner.no_holes.get() {
            let mut st = self.st_mut();
            let g = st.generation;
            self.cont_expand(&mut st, ino, (old, at), g, &mut Vec::new());
            Self::set_inode_last_trans(&mut st, ino, g);
            return Ok(());
        }
        let th = self.start_transaction_items(1).await?;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let mut ops = vec![inode_update(ino)];
            self.cont_expand(&mut st, ino, (old, at), t, &mut ops);
            st.inodes.get_mut(&ino).unwrap().item_trans = t;
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }

    /// A buffered write of `bytes` to a range of the file not adjacent to its other dirty
    /// pages (fio randwrite): btrfs_delalloc_reserve_metadata reserves one more outstanding
    /// extent for it (delalloc-space.c@v5.12: count_max_extents per separate delalloc
    /// range), held until writeback. The model's file still grows by `bytes` and its dirty
    /// ranges are written back as one extent.
    pub(super) async fn write_range(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        self.buffered_write(path, bytes, true).await
    }

    /// The write under the inode lock: btrfs_file_write_iter takes inode_lock before
    /// copying the pages and reserving space and drops it before generic_write_sync
    /// (file.c@v5.10; btrfs_buffered_write → btrfs_inode_lock from 5.11), so an O_SYNC
    /// write's fsync takes it again.
    async fn buffered_write(&self, path: &str, bytes: u64, range: bool) -> Result<(), OpError> {
        let (ino, _ilock) = self.lock_path(path).await?;
        self.dirty_pages_range(ino, path, bytes, range).await?;
        if range {
            // Inside a file laid out to its size (fio's ftruncate): an overwrite or a hole
            // filled at a random offset, which does not change i_size.
            let mut st = self.st_mut();
            let inside = {
                let i = &st.inodes[&ino];
                i.disk_size >= i.dirty_bytes + bytes && !st.meta.dirty_at.contains_key(&ino)
            };
            if inside {
                *st.meta.range_dirty.entry(ino).or_default() += bytes;
            }
        }
        self.stamp_buffered_write(ino, bytes);
        Ok(())
    }

    /// The end of a buffered write: `bytes` more dirty pages and the inode stamped. No
    /// transaction here: update_time_for_write changes the times in memory only
    /// (file.c:btrfs_file_write_iter@v5.10); the inode item is updated when the ordered
    /// extent completes (btrfs_finish_ordered_io, in `writeback`).
    pub(super) fn stamp_buffered_write(&self, ino: Ino, bytes: u64) {
        let mut st = self.st_mut();
        let log_transid = st.log_transid;
        let i = st.inodes.get_mut(&ino).unwrap();
        i.dirty_bytes += bytes;
        // "We also have to set last_sub_trans to the current log transid, otherwise
        // subsequent syncs to a file that's been synced in this transaction will appear to
        // have already occurred" (btrfs_file_write_iter@v5.10, under the inode's spinlock).
        i.last_sub_trans = log_transid;
        i.change_seq += 1;
    }

    /// btrfs_page_mkwrite (inode.c@v5.10): a write through a shared mapping reserves data
    /// space, dirties the pages and stamps the inode without a transaction and without the
    /// inode's spinlock: last_trans = generation, last_sub_trans = root->log_transid, then
    /// last_log_commit = root->last_log_commit. The point between the last two reads is where
    /// a concurrent btrfs_sync_log can move both root fields (a torn read).
    /// From 5.13 (8318ba79eeeb, switch `i-mmap-lock`) it holds the inode's i_mmap_lock
    /// shared from after the space reservation until the stamps are set (the model's page
    /// copy CPU comes before it). With `offset` the pages overwrite [offset, offset + bytes)
    /// inside the file and writeback puts their extent there (`range_at`).
    pub(super) async fn mmap_write(
        &self,
        path: &str,
        offset: Option<u64>,
        bytes: u64,
    ) -> Result<(), OpError> {
        let ino = match offset {
            None => self.dirty_pages(path, bytes).await?,
            Some(at) => self.mmap_dirty_range(path, at, bytes).await?,
        };
        let mmap_lock = self
            .log_patch(LogPatch::IMmapLock)
            .then(|| self.inode_mmap_lock(ino));
        if let Some(l) = &mmap_lock {
            l.down_read().await;
        }
        if let Some(at) = offset {
            let mut st = self.st_mut();
            *st.meta.range_dirty.entry(ino).or_default() += bytes;
            st.meta.range_at.insert(ino, at);
        }
        let r = self.mkwrite_stamp(ino, bytes).await;
        if let Some(l) = &mmap_lock {
            l.up_read();
        }
        r
    }

    /// The checks and reservations of a mapped write at `at`: the range lies inside the
    /// written file (a fault past EOF is SIGBUS) and the file has no other dirty range (the
    /// model writes a file's dirty pages back as one extent).
    async fn mmap_dirty_range(&self, path: &str, at: u64, bytes: u64) -> Result<Ino, OpError> {
        let ino = self.resolve(path)?;
        self.check_range_inside("mmap-write", path, ino, at, bytes)?;
        self.dirty_pages_range(ino, path, bytes, true).await
    }

    /// A write at `at` (not an append) must lie inside the written file and the file have no
    /// other dirty pages (see `write_at`, `mmap_write`).
    fn check_range_inside(
        &self,
        op: &str,
        path: &str,
        ino: Ino,
        at: u64,
        bytes: u64,
    ) -> Result<(), OpError> {
        let st = self.inner.st.borrow();
        let i = &st.inodes[&ino];
        if i.dirty_bytes > 0 {
            return Err(OpError(format!(
                "{op} {path} at an offset: the file has other dirty pages (the model writes a file's dirty pages back as one extent): write them back first"
            )));
        }
        if !i.is_dir && at + bytes > i.disk_size {
            let why = if op == "write" {
                "a write at an offset overwrites inside the file or appends at its end (the model does not write past EOF leaving a hole)"
            } else {
                "a shared mapping cannot extend a file"
            };
            return Err(OpError(format!(
                "{op} {path} {at} {bytes}: the range ends past the file's written size ({}): {why}",
                i.disk_size
            )));
        }
        Ok(())
    }

    /// btrfs_page_mkwrite's part under i_mmap_lock: the page dirtied and the inode stamped.
    async fn mkwrite_stamp(&self, ino: Ino, bytes: u64) -> Result<(), OpError> {
        let fixed = self.log_patch(LogPatch::SubTransStamp);
        {
            let mut st = self.st_mut();
            let (generation, log_transid) = (st.generation, st.log_transid);
            let i = st.inodes.get_mut(&ino).unwrap();
            i.dirty_bytes += bytes;
            if !fixed {
                i.last_trans = generation;
            }
            i.last_sub_trans = log_transid;
            i.change_seq += 1;
        }
        self.point("page_mkwrite:last_sub_trans_set").await;
        if fixed {
            // bc0939fcfab0 (5.13): btrfs_set_inode_last_sub_trans, under i_lock — only
            // last_sub_trans, as buffered and direct writes do (the point stays, so a
            // script runs under both releases).
            return Ok(());
        }
        let mut st = self.st_mut();
        let last_log_commit = st.root_last_log_commit();
        let i = st.inodes.get_mut(&ino).unwrap();
        i.last_log_commit = last_log_commit;
        if last_log_commit >= i.last_sub_trans {
            // The torn read: a log sync committed the sub-transaction just stamped, so the
            // inode reads as logged with this change (btrfs_inode_in_log's test).
            self.inner.m.borrow_mut().torn_log_stamps += 1;
        }
        Ok(())
    }

    /// crc32c of `bytes` submitted for writing, on the submitting task's CPU: data
    /// (btrfs_csum_one_bio: the fsync's sync_writers submit inline; the flusher's bios go
    /// to the csum workers on the same cores, charged here to the flusher) and metadata
    /// blocks (btree_csum_one_bio, inline).
    pub(super) async fn checksum(&self, bytes: u64) {
        let csum = self.inner.costs.csum_cpu(bytes);
        if csum > 0 {
            self.inner.h.cpu(csum).await;
        }
    }

    /// `blocks` metadata blocks written back (btrfs_write_marked_extents →
    /// btree_write_cache_pages, extent_io.c@v5.10): their crc32c, then the page and
    /// extent-buffer work of submitting them and of their completion and wait, on the
    /// submitting task's CPU.
    pub(super) async fn write_back_blocks(&self, blocks: u64) {
        let c = &self.inner.costs;
        let cpu = c.csum_cpu(blocks * c.nodesize) + c.eb_writeback_cpu(blocks);
        if cpu > 0 {
            self.inner.h.cpu(cpu).await;
        }
    }

    /// An ordered extent's data: a new extent id, the bytes checksummed, written to new
    /// disk bytes and waited for; returns the id, the write's token and its device offset.
    pub(super) async fn write_data(&self, ino: Ino, bytes: u64) -> (u64, u64, u64) {
        let id = {
            let mut st = self.st_mut();
            let id = st.next_extent;
            st.next_extent += 1;
            id
        };
        // The pages' crc32c (btrfs_csum_one_bio) and their writeback (extent_write_cache_pages
        // → __extent_writepage, extent_io.c@v5.10), on the submitting task's CPU.
        let c = &self.inner.costs;
        let cpu = c.csum_cpu(bytes) + c.data_writeback_cpu(bytes);
        if cpu > 0 {
            self.inner.h.cpu(cpu).await;
        }
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::Data { ino, extent: id }, bytes);
        self.inner
            .dev
            .submit(Request::write(off, bytes).with_token(tok))
            .await;
        (id, tok, off)
    }

    /// start_ordered_ops + btrfs_wait_ordered_range: write dirty pages as one ordered
    /// extent; btrfs_finish_ordered_io inserts the file extent item in the running transaction
    /// and sets the extent map's generation to it.
    pub(super) async fn writeback(&self, ino: Ino) {
        self.writeback_wait(ino, true).await;
    }

    /// `writeback`; without `wait` the ordered extents of ranges written at their offsets
    /// are left to the endio-write workers (filemap_fdatawrite without the wait).
    pub(super) async fn writeback_wait(&self, ino: Ino, wait: bool) {
        let ranges = self.inner.st.borrow().meta.range_list.contains_key(&ino);
        if !self.inner.dio_pending.borrow().is_empty() && (wait || !ranges) {
            self.wait_dio_ordered(ino).await;
        }
        let bytes = std::mem::take(&mut self.st_mut().inodes.get_mut(&ino).unwrap().dirty_bytes);
        let inside = self.st_mut().meta.range_dirty.remove(&ino).unwrap_or(0);
        let at = self.st_mut().meta.range_at.remove(&ino);
        let eof_at = self.st_mut().meta.dirty_at.remove(&ino);
        if bytes == 0 {
            return;
        }
        let ranges = self.st_mut().meta.range_list.remove(&ino);
        if let Some(r) = ranges {
            return self.writeback_ranges(ino, bytes, r, wait).await;
        }
        {
            let mut st = self.st_mut();
            st.meta.delalloc_bytes -= bytes;
            st.meta.ordered_bytes += bytes;
        }
        let (id, tok, off) = self.write_data(ino, bytes).await;
        let th = self.join_transaction().await;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let keep = st.keep_history;
            let pieces = Self::alloc_data_extent(&mut st, bytes);
            st.trans.get_mut(&t).unwrap().delayed_refs += pieces.len() as u64;
            Self::add_ref_heads(&mut st, t, pieces.len() as u64);
            let w = Written {
                id,
                tok,
                off,
                bytes,
                at,
            };
            // insert_reserved_file_extent: the file extent item (its extent item via the
            // delayed ref), the checksums (add_pending_csums), the inode item.
            let (inside, mut ops) = match eof_at {
                Some(e) => (0, self.insert_past_eof(&mut st, ino, w, e, pieces, t)),
                None => self.insert_written(&mut st, ino, w, pieces, inside, t),
            };
            ops.push(inode_update(ino));
            let i = st.inodes.get_mut(&ino).unwrap();
            i.item_trans = t;
            // btrfs_inode_safe_disk_i_size_write at ordered-extent completion (writes inside
            // the file do not move it; a run past EOF ends the file).
            i.disk_size = match eof_at {
                Some(e) => i.disk_size.max(e + bytes),
                None => i.disk_size + bytes - inside,
            };
            if keep {
                i.size_hist.push((t, i.disk_size));
            }
            Self::set_inode_last_trans(&mut st, ino, t);
            st.meta.ordered_bytes -= bytes;
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        // The ordered extent is done: its delalloc metadata goes back.
        let rsv = self.st_mut().meta.delalloc_rsv.remove(&ino).unwrap_or(0);
        // btrfs_delalloc_release_metadata → btrfs_inode_rsv_release@v5.13.
        self.release_to_delayed_refs(rsv);
        self.end(th);
    }

    /// btrfs_direct_write → iomap_dio_rw (file.c, inode.c@v5.12): an O_DIRECT overwrite of
    /// `bytes` at `offset` inside the file. btrfs_dio_iomap_begin reserves data space and
    /// the outstanding extent's metadata (btrfs_delalloc_reserve_space; FLUSH_ALL, so it
    /// may wait in a ticket), btrfs_new_extent_direct allocates a new extent (COW) and adds
    /// an ordered extent (counted in ordered_bytes, no page cache, no delalloc); the bio goes
    /// to the device and the call returns when it completes. btrfs_finish_ordered_io then
    /// runs in the endio-write worker (a task of its own here): it joins the transaction,
    /// replaces the file extent item (the overwritten extent is freed and pinned until the
    /// commit), adds the checksums, updates the inode, and releases the metadata.
    /// A write whose range is still unwritten in a preallocated extent goes in place instead
    /// (btrfs_get_blocks_direct_write's NOCOW path, direct_io.rs). Simplification for a
    /// write inside the file: the file's extent map is not split (the new data's durability
    /// is not part of the crash check). A write that ends past EOF is `direct_write_past_eof`.
    pub(super) async fn direct_write(
        &self,
        path: &str,
        offset: u64,
        bytes: u64,
    ) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            if i.is_dir {
                return Err(OpError(format!("is a directory: {path}")));
            }
        }
        if offset + bytes > self.dio_i_size(ino) {
            return self.direct_write_past_eof(path, offset, bytes).await;
        }
        // Extent map lookup, lock_extent, the ordered extent (one btree-item's CPU).
        self.submit_dio(ino, offset, bytes, false).await
    }

    /// The common part of a direct write: the extent map work (one btree item's CPU), data
    /// and metadata reserved, the ordered extent's id (for a write past EOF, the pending
    /// in-memory i_size), the data's checksums, the bio submitted and waited for, and the
    /// completion handed to the endio-write workers.
    async fn submit_dio(
        &self,
        ino: Ino,
        offset: u64,
        bytes: u64,
        past_eof: bool,
    ) -> Result<(), OpError> {
        self.inner.h.cpu(self.inner.costs.btree_item).await;
        self.reserve_data(bytes).await?;
        let rsv = self.delalloc_meta_size(bytes);
        if let Err(e) = self.reserve_metadata(rsv).await {
            self.st_mut().data.may_use -= bytes;
            return Err(e);
        }
        let sector = self.inner.costs.sectorsize;
        let (id, nocow) = {
            let mut st = self.st_mut();
            st.meta.ordered_bytes += bytes;
            let id = st.next_extent;
            st.next_extent += 1;
            let nocow = if past_eof {
                None
            } else {
                Self::claim_nocow(&mut st, ino, offset, bytes, sector)
            };
            if nocow.is_some() {
                // btrfs_free_reserved_data_space_noquota: no new extent, the space is there.
                st.data.may_use -= bytes;
            }
            (id, nocow)
        };
        if let Some(n) = &nocow {
            let cpu = self.search_cpu(&Self::nocow_check_ops(ino, n, offset));
            self.inner.h.cpu(cpu).await;
        }
        if past_eof {
            let mut p = self.inner.dio_pending.borrow_mut();
            let e = p.entry(ino).or_default();
            *e = (e.0 + 1, e.1.max(offset + bytes));
        }
        self.checksum(bytes).await;
        let kind = WriteKind::Data { ino, extent: id };
        let (tok, off) = match &nocow {
            Some(n) => {
                let off = n.disk_at(offset);
                (self.st_mut().new_write_at(kind, off), off)
            }
            None => self.st_mut().new_write(kind, bytes),
        };
        self.inner
            .dev
            .submit(Request::write(off, bytes).with_token(tok))
            .await;
        self.inner.endio.borrow_mut().push_back(OrderedDone {
            ino,
            offset,
            bytes,
            id,
            dev_offset: off,
            rsv,
            tok,
            kind: match nocow {
                _ if past_eof => OrderedKind::PastEof,
                Some(n) => OrderedKind::Nocow(n),
                None => OrderedKind::Cow,
            },
        });
        self.wake_endio_worker();
        Ok(())
    }

    /// The in-memory i_size a direct write compares with: disk_i_size, or what an
    /// unfinished direct write past EOF set.
    fn dio_i_size(&self, ino: Ino) -> u64 {
        let size = self.inner.st.borrow().inodes[&ino].disk_size;
        let pending = self.inner.dio_pending.borrow().get(&ino).map_or(0, |p| p.1);
        size.max(pending)
    }

    /// A direct write that ends past EOF, under the inode lock (btrfs_file_write_iter@v5.10
    /// takes inode_lock for every write; btrfs_direct_write@v5.15 exclusive past EOF):
    /// btrfs_write_check's btrfs_cont_expand for a gap first (`expand_for_write`), then
    /// btrfs_dio_iomap_begin → btrfs_get_blocks_direct_write → btrfs_new_extent_direct
    /// (inode.c@v5.10): data and metadata reserved, a new extent allocated, an ordered
    /// extent added, i_size_write(start + len) in memory. The bio completes and the call
    /// returns; btrfs_finish_ordered_io in an endio-write worker inserts the file extent
    /// item, puts the extent (map) on the modified list and moves disk_i_size
    /// (btrfs_inode_safe_disk_i_size_write). An fsync, truncate or clone of the file waits
    /// for it (btrfs_wait_ordered_range, `wait_dio_ordered`). A file with dirty pages is
    /// refused (the model writes them back as one run after disk_i_size).
    async fn direct_write_past_eof(
        &self,
        path: &str,
        offset: u64,
        bytes: u64,
    ) -> Result<(), OpError> {
        let (ino, _ilock) = self.lock_path(path).await?;
        if self.inner.st.borrow().inodes[&ino].dirty_bytes > 0 {
            return Err(OpError(format!(
                "dio-write {path} {offset} {bytes} past EOF: the file has dirty pages (the model writes them back as one run at i_size): write them back first"
            )));
        }
        self.expand_for_write(ino, offset).await?;
        self.submit_dio(ino, offset, bytes, true).await
    }

    /// btrfs_wait_ordered_range over the whole file (btrfs_sync_file, btrfs_truncate,
    /// the clone's writeback; ordered-data.c@v5.10) for its direct writes past EOF.
    pub(super) async fn wait_dio_ordered(&self, ino: Ino) {
        while self.inner.dio_pending.borrow().contains_key(&ino) {
            let w = self
                .inner
                .dio_ordered_wait
                .borrow_mut()
                .get_or_insert_with(|| sim::WaitQueue::new(&self.inner.h, "wait_ordered_extent"))
                .clone();
            w.wait().await;
        }
    }

    /// Hands a completed ordered extent to the endio-write workqueue: an idle worker, or a
    /// new one while there are fewer than `ENDIO_WORKERS` (a busy one takes it otherwise).
    pub(super) fn wake_endio_worker(&self) {
        if self.inner.endio_wait.borrow().is_none() {
            *self.inner.endio_wait.borrow_mut() =
                Some(sim::WaitQueue::new(&self.inner.h, "endio_write"));
        }
        let woke = self
            .inner
            .endio_wait
            .borrow()
            .as_ref()
            .is_some_and(|w| w.notify_one());
        let n = self.inner.endio_workers.get();
        if !woke && n < ENDIO_WORKERS {
            self.inner.endio_workers.set(n + 1);
            let fs = self.clone();
            self.inner
                .h
                .spawn_daemon("btrfs-endio-write", async move { fs.endio_worker().await });
        }
    }

    /// One endio-write worker: finishes queued direct-I/O ordered extents, sleeps when
    /// there are none.
    async fn endio_worker(&self) {
        loop {
            let job = self.inner.endio.borrow_mut().pop_front();
            match job {
                Some(j) => self.finish_dio_ordered(j).await,
                None => {
                    let w = self
                        .inner
                        .endio_wait
                        .borrow()
                        .clone()
                        .expect("made with the first job");
                    w.wait().await;
                }
            }
        }
    }

    /// btrfs_finish_ordered_io for a direct-I/O write (inode.c@v5.12), see `direct_write`.
    async fn finish_dio_ordered(&self, j: OrderedDone) {
        match j.kind {
            OrderedKind::Range(c) => return self.finish_range_ordered(j, c).await,
            OrderedKind::PastEof => return self.finish_dio_past_eof(j).await,
            OrderedKind::Cow | OrderedKind::Nocow(_) => {}
        }
        let OrderedDone {
            ino,
            offset,
            bytes,
            dev_offset,
            rsv,
            kind,
            ..
        } = j;
        let th = self.join_transaction().await;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let sector = self.inner.costs.sectorsize;
            let mut ops = match kind {
                // BTRFS_ORDERED_PREALLOC: btrfs_mark_extent_written and the checksums; no
                // extent allocated or freed (direct_io.rs).
                OrderedKind::Nocow(n) => {
                    Self::mark_extent_written_ops(&mut st, t, ino, &n, offset, bytes, sector)
                }
                // insert_reserved_file_extent (with btrfs_drop_extents), the csum items.
                _ => {
                    let pieces = Self::alloc_data_extent(&mut st, bytes);
                    st.trans.get_mut(&t).unwrap().delayed_refs += pieces.len() as u64;
                    Self::add_ref_heads(&mut st, t, pieces.len() as u64);
                    // The overwritten extent's bytes: freed, pinned until the commit (the
                    // model frees the same amount from the new pieces; totals are what
                    // matter here).
                    Self::free_pieces(&mut st, pieces, t);
                    // The file extent item at `offset` is replaced (the map is not split
                    // here); the new extent's item and checksums go in.
                    extent_ops(ino, offset, dev_offset, bytes, sector).to_vec()
                }
            };
            if st.inodes.contains_key(&ino) {
                st.inodes.get_mut(&ino).unwrap().item_trans = t;
                Self::set_inode_last_trans(&mut st, ino, t);
            }
            ops.push(inode_update(ino));
            st.meta.ordered_bytes -= bytes;
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        // btrfs_delalloc_release_metadata → btrfs_inode_rsv_release@v5.13: the inode's
        // reserve fills delayed_refs_rsv first.
        self.release_to_delayed_refs(rsv);
        self.end(th);
    }

    /// btrfs_finish_ordered_io for a direct write past EOF (inode.c@v5.10):
    /// insert_reserved_file_extent (btrfs_drop_extents over the range: the cont_expand
    /// hole; the item, the extent's delayed ref, the checksums), unpin_extent_cache (the
    /// map's generation, on the modified list), btrfs_inode_safe_disk_i_size_write (the
    /// ordered extent's end) and btrfs_update_inode; then the waiters wake.
    async fn finish_dio_past_eof(&self, j: OrderedDone) {
        let th = self.join_transaction().await;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let pieces = Self::alloc_data_extent(&mut st, j.bytes);
            st.trans.get_mut(&t).unwrap().delayed_refs += pieces.len() as u64;
            Self::add_ref_heads(&mut st, t, pieces.len() as u64);
            st.meta.ordered_bytes -= j.bytes;
            let mut ops = Vec::new();
            if st.inodes.contains_key(&j.ino) {
                let w = Written {
                    id: j.id,
                    tok: j.tok,
                    off: j.dev_offset,
                    bytes: j.bytes,
                    at: None,
                };
                ops = self.insert_past_eof(&mut st, j.ino, w, j.offset, pieces, t);
                ops.push(inode_update(j.ino));
                let keep = st.keep_history;
                let i = st.inodes.get_mut(&j.ino).unwrap();
                i.item_trans = t;
                let end = j.offset + j.bytes;
                if end > i.disk_size && !self.mutant(Mutant::DioNoSizeUpdate) {
                    i.disk_size = end;
                    if keep {
                        i.size_hist.push((t, end));
                    }
                }
                Self::set_inode_last_trans(&mut st, j.ino, t);
            } else {
                Self::free_pieces(&mut st, pieces, t);
            }
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        self.release_to_delayed_refs(j.rsv);
        self.end(th);
        self.dio_ordered_done(j.ino);
    }

    /// One direct write past EOF of `ino` finished: the count drops and waiters wake.
    pub(super) fn dio_ordered_done(&self, ino: Ino) {
        let mut p = self.inner.dio_pending.borrow_mut();
        if let Some(e) = p.get_mut(&ino) {
            e.0 -= 1;
            if e.0 == 0 {
                p.remove(&ino);
            }
        }
        drop(p);
        if let Some(w) = self.inner.dio_ordered_wait.borrow().as_ref() {
            w.notify_all();
        }
    }

    /// btrfs_inode_in_log. The kernel's last_sub_trans and last_log_commit are `int`s, and
    /// from 5.13 (bc0939fcfab0) a stamp before a transaction's first log sets
    /// last_log_commit = 0 - 1 = -1: the comparison is signed (the model's u64 holds -1 as
    /// u64::MAX), so such an inode never reads as logged before its own LOG_INODE_ALL.
    pub(super) fn inode_in_log(st: &FsState, ino: Ino) -> bool {
        let i = &st.inodes[&ino];
        i.logged_trans == st.generation
            && (i.last_sub_trans as i64) <= (i.last_log_commit as i64)
            && i.last_sub_trans < st.last_log_commit
            && i.modified_extents.is_empty()
    }

    /// btrfs_sync_file. The inode lock is held from before the ordered extents are waited
    /// for until the inode is logged (or the skip checks pass), and dropped before
    /// btrfs_sync_log or the fallback commit: "we've logged all the items and now have a
    /// consistent version of the file in the log" (file.c:btrfs_sync_file@v5.10: inode_lock
    /// after the first start_ordered_ops, inode_unlock after btrfs_log_dentry_safe;
    /// btrfs_inode_lock(inode, BTRFS_ILOCK_MMAP) from 5.13). The model's writeback (start,
    /// wait, finish the ordered extent) runs under the lock: the kernel's first
    /// start_ordered_ops outside it only starts I/O that the second one, under it, waits for.
    pub(super) async fn fsync(&self, path: &str) -> Result<(), OpError> {
        // 885f46d87f29 (5.13): BTRFS_ILOCK_MMAP, so no mapped write dirties a page (whose
        // ordered extent could complete) while the inode is logged.
        let mmap = self.log_patch(LogPatch::MmapLockFsync);
        let (ino, ilock) = self.lock_path_flags(path, mmap).await?;
        self.writeback(ino).await;
        // What this fsync promises: the names and extents the inode has once its data is
        // written back (later changes by other tasks are not covered). Only kept with the
        // history crash checks read.
        let promise = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            // An inode with no names promises nothing (it can never be reached again).
            (st.keep_history && (st.has_names(ino) || ino == ROOT_INO)).then(|| {
                (
                    (st.names_of(ino), self.inner.h.now()),
                    i.extents.iter().map(|e| e.id).collect::<Vec<_>>(),
                    (i.disk_size, i.size_hist.len()),
                    i.xattrs.keys().cloned().collect::<Vec<_>>(),
                    // A directory's entries as this fsync logs them (taken when it returned,
                    // they included names another task created after the directory was
                    // logged: a false S2).
                    if i.is_dir {
                        st.entries_of(ino)
                    } else {
                        Vec::new()
                    },
                )
            })
        };
        // atomic_inc(&root->log_batch), before and after waiting for ordered extents
        // (btrfs_sync_file@v5.10).
        self.st_mut().log_batch += 2;
        let skip = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            let full_sync = i.needs_full_sync;
            // No ordered extents remain: writeback waited for them.
            let committed = i.last_trans <= st.last_trans_committed;
            let shortcut = if self.has(Fix::R7) {
                committed
            } else {
                // 3a8b36f378060d: the shortcut applied only to full syncs.
                full_sync && committed
            };
            if Self::inode_in_log(&st, ino) {
                Some("btrfs_sync_file skips: inode already in the log (btrfs_inode_in_log), ino")
            } else if shortcut {
                Some("btrfs_sync_file skips: every change committed (last_trans <= last_trans_committed), ino")
            } else if self.mutant(Mutant::SkipLogWhenLoggedBefore) && i.logged_trans > 0 {
                Some("btrfs_sync_file skips: logged before (mutant), ino")
            } else {
                None
            }
        };
        if let Some(why) = skip {
            self.note(why, ino);
            // "everything committed since we were modified": clear_bit(NEEDS_FULL_SYNC)
            // (btrfs_sync_file@v5.10/v5.11).
            let mut st = self.st_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            i.needs_full_sync = false;
            i.full_sync_needless = false;
            drop(st);
            self.inner.m.borrow_mut().fsync_skips += 1;
            drop(ilock);
        } else {
            let mut th = self.start_transaction().await;
            th.in_fsync = true;
            let t = th.id;
            self.point("fsync:joined").await;
            let logged = self.log_inode_parent(t, ino).await;
            drop(ilock);
            match logged {
                LogResult::Logged(log_transid) => {
                    self.point("fsync:logged").await;
                    if self.sync_log(t, log_transid).await {
                        self.end(th);
                    } else {
                        let necessary =
                            oracle::full_commit_flag_is_real(&self.inner.st.borrow(), t);
                        self.count_full_commit(t, FullCommitCause::LogFullCommitFlag, necessary);
                        self.point("fsync:full_commit").await;
                        self.commit(th).await;
                    }
                }
                LogResult::FullCommit => {
                    self.point("fsync:full_commit").await;
                    self.commit(th).await;
                }
                // btrfs_sync_file@v5.10: `if (ret == BTRFS_NO_LOG_SYNC) { ret =
                // btrfs_end_transaction(trans); goto out; }`.
                LogResult::NoLogSync => self.end(th),
            }
        }
        // fsync returned success: record what must survive and check a crash now (S2).
        {
            let mut st = self.st_mut();
            if let Some(((names, promised_at), extents, (size, size_changes), xattrs, entries)) =
                promise
            {
                let rec = FsyncRecord {
                    ino,
                    path: path.to_string(),
                    names,
                    promised_at,
                    extents,
                    size,
                    size_changes,
                    xattrs,
                    entries,
                    at: self.inner.h.now(),
                };
                st.fsyncs.push(rec);
            }
        }
        self.check_crash("fsync returned");
        Ok(())
    }

    /// Judges and counts a fallback to a full commit.
    pub(super) fn count_full_commit(&self, t: TransId, cause: FullCommitCause, necessary: bool) {
        self.note(cause.trace_label(), t);
        let mut m = self.inner.m.borrow_mut();
        m.full_commits += 1;
        *m.full_commits_by_cause
            .entry(cause.rule().to_string())
            .or_default() += 1;
        if !necessary {
            m.unnecessary_full_commits += 1;
            *m.unnecessary_full_commits_by_cause
                .entry(cause.name().to_string())
                .or_default() += 1;
        }
    }
}

impl Btrfs {
    /// The extents an ordered extent's completion inserts (btrfs_finish_ordered_io →
    /// insert_reserved_file_extent, inode.c@v5.10): the `inside` bytes a write-range wrote
    /// inside the file where `place_inside` puts them, the rest appended at i_size. Returns
    /// the inside bytes (at most i_size) and the new extents' item inserts.
    pub(super) fn insert_written(
        &self,
        st: &mut FsState,
        ino: Ino,
        w: Written,
        pieces: Pieces,
        inside: u64,
        t: TransId,
    ) -> (u64, Vec<TreeOp>) {
        let mut ops = Vec::with_capacity(7);
        let Written {
            id,
            tok,
            off,
            bytes,
            at,
        } = w;
        let size = st.inodes[&ino].disk_size;
        let inside = inside.min(bytes).min(size);
        let mut parts = Vec::with_capacity(2);
        if inside > 0 {
            let at = self.place_inside(st, ino, inside, at, t, &mut ops);
            parts.push((at, inside));
        }
        if bytes > inside {
            parts.push((size, bytes - inside));
        }
        let mut rest = pieces;
        let mut data_offset = off;
        for (k, (offset, len)) in parts.into_iter().enumerate() {
            let (mine, more) = split_pieces(rest, len);
            rest = more;
            if offset >= size {
                self.drop_past_eof(st, ino, (offset, offset + len), t, &mut ops);
            }
            let eid = if k == 0 {
                id
            } else {
                st.next_extent += 1;
                st.next_extent - 1
            };
            let i = st.inodes.get_mut(&ino).unwrap();
            let ext = Extent::data(eid, (offset, len), t, tok, data_offset, mine);
            ops.extend(extent_ops(
                ino,
                offset,
                data_offset,
                len,
                self.inner.costs.sectorsize,
            ));
            data_offset += len;
            if offset < size {
                // Inside the file: in file order among the others.
                let pos = i.extents.partition_point(|e| e.offset < offset);
                i.extents.insert(pos, ext);
            } else {
                i.extents.push(ext);
            }
            i.modified_extents.push(eid);
        }
        (inside, ops)
    }

    /// The extent of a dirty run a write past EOF put at `at` (insert_reserved_file_extent,
    /// inode.c@v5.10): btrfs_drop_extents over [at, at + bytes) drops or trims what is
    /// there (btrfs_cont_expand's hole, extents preallocated past EOF), then the data
    /// extent's items go in, the extent in file order and on the modified list.
    fn insert_past_eof(
        &self,
        st: &mut FsState,
        ino: Ino,
        w: Written,
        at: u64,
        pieces: Pieces,
        t: TransId,
    ) -> Vec<TreeOp> {
        let end = at + w.bytes;
        let mut ops = drop_range_ops(st, ino, at, end);
        self.drop_extents(st, ino, at, end, t);
        let sector = self.inner.costs.sectorsize;
        ops.extend(extent_ops(ino, at, w.off, w.bytes, sector));
        let i = st.inodes.get_mut(&ino).unwrap();
        let ext = Extent::data(w.id, (at, w.bytes), t, w.tok, w.off, pieces);
        let pos = i.extents.partition_point(|e| e.offset < at);
        i.extents.insert(pos, ext);
        i.modified_extents.push(w.id);
        ops
    }

    /// insert_reserved_file_extent's btrfs_drop_extents over an appended range
    /// (inode.c@v5.10): extents preallocated there, past i_size (`fallocate ... keep-size`),
    /// are dropped or trimmed. The kernel writes into a preallocated extent
    /// without COW (btrfs_mark_extent_written); the model replaces it, which leaves the same
    /// file contents. Only preallocated extents are looked for: dbench's appends also meet
    /// data extents there (why is not investigated yet); those are left as the model had
    /// them, so workload outputs do not change with this fix.
    fn drop_past_eof(
        &self,
        st: &mut FsState,
        ino: Ino,
        (start, end): (u64, u64),
        t: TransId,
        ops: &mut Vec<TreeOp>,
    ) {
        let there: Vec<(u64, u64, u64)> = st.inodes[&ino]
            .extents
            .iter()
            .filter(|e| e.prealloc && e.offset < end && e.end() > start)
            .map(|e| (e.offset, e.data_offset, e.len))
            .collect();
        if there.is_empty() {
            return;
        }
        for (off, data_off, len) in there {
            ops.extend(drop_extent_ops(ino, off, data_off, len));
        }
        self.drop_extents(st, ino, start, end, t);
    }

    /// Where the `len` bytes a `write-range` wrote inside the file land when its ordered
    /// extent completes, and what they replace. The kernel's ordered extent covers the
    /// file range that was written, inside i_size, and insert_reserved_file_extent drops
    /// what the file had there first (inode.c:insert_reserved_file_extent →
    /// btrfs_drop_extents@v5.10). The model's op has no offset, so the bytes go into the
    /// first gap of the file's data large enough for them (after its last data extent when
    /// that fits), a hole filled: the overwritten share of the old data is freed by the
    /// random-offset estimate (`free_overwritten`), and hole extents there are dropped. A
    /// file with no such gap is overwritten from offset 0: btrfs_drop_extents over the range
    /// trims or drops the old extents (a trimmed extent keeps its allocation, as a bookend
    /// extent does). Before this placement the model put the bytes past i_size, where the
    /// next logged inode item's i_size cut them off in log replay: a false S2.
    /// A write that said its offset (`at`) overwrites there.
    fn place_inside(
        &self,
        st: &mut FsState,
        ino: Ino,
        len: u64,
        at: Option<u64>,
        t: TransId,
        ops: &mut Vec<TreeOp>,
    ) -> u64 {
        let (at, gap) = match at {
            Some(at) => (at, false),
            None => inside_offset(&st.inodes[&ino], len),
        };
        if gap {
            Self::free_overwritten(st, ino, len, t);
            let holes = st.inodes[&ino]
                .extents
                .iter()
                .any(|e| e.hole && e.offset < at + len && e.end() > at);
            if holes {
                ops.extend(drop_range_ops(st, ino, at, at + len));
                self.drop_extents(st, ino, at, at + len, t);
            }
        } else {
            ops.extend(drop_range_ops(st, ino, at, at + len));
            self.drop_extents(st, ino, at, at + len, t);
        }
        at
    }

    /// Random writes inside the file: with uniformly random offsets a block already holds
    /// data with probability (data bytes / size); that share of the `inside` bytes written
    /// replaces old extents' bytes, freed and pinned until the commit (COW).
    fn free_overwritten(st: &mut FsState, ino: Ino, inside: u64, t: TransId) {
        let (size, data) = {
            let i = &st.inodes[&ino];
            let data: u64 = i
                .extents
                .iter()
                .flat_map(|e| e.pieces.iter().map(|p| p.1))
                .sum();
            (i.disk_size.max(1), data)
        };
        let over = (u128::from(inside) * u128::from(data.min(size)) / u128::from(size)) as u64;
        let mut need = over;
        let mut freed = Vec::new();
        for e in st.inodes.get_mut(&ino).unwrap().extents.iter_mut() {
            for p in e.pieces.iter_mut() {
                let take = p.1.min(need);
                if take > 0 {
                    p.1 -= take;
                    need -= take;
                    freed.push((p.0, take));
                }
            }
            e.pieces.retain(|p| p.1 > 0);
            if need == 0 {
                break;
            }
        }
        Self::free_pieces(st, freed, t);
    }

    /// A hole extent map over [start, end) of `ino`, new in transaction `t` and on the
    /// modified list, so the next fsync logs it (a hole punch; a growing truncate's gaps,
    /// btrfs_cont_expand).
    pub(super) fn insert_hole(st: &mut FsState, ino: Ino, t: TransId, start: u64, end: u64) {
        let id = st.next_extent;
        st.next_extent += 1;
        let i = st.inodes.get_mut(&ino).unwrap();
        i.extents.push(Extent::hole(id, start, end, t));
        i.extents.sort_by_key(|e| e.offset);
        i.modified_extents.push(id);
    }

    /// btrfs_drop_extents + btrfs_drop_extent_cache (file.c@v5.10) over [start, end) of
    /// `ino` in transaction `t`: extents inside the range leave the file (their space is
    /// freed when no piece refers to it); an extent crossing an edge is trimmed into new
    /// versions whose items are rewritten in `t` and whose maps keep their generation and
    /// their place on the modified list.
    pub(super) fn drop_extents(
        &self,
        st: &mut FsState,
        ino: Ino,
        start: u64,
        end: u64,
        t: TransId,
    ) {
        let now = self.inner.h.now();
        let keep = st.keep_history;
        let mut next_id = st.next_extent;
        let mut freed = Vec::new();
        let i = st.inodes.get_mut(&ino).expect("inode");
        let mut out = Vec::with_capacity(i.extents.len() + 1);
        for e in std::mem::take(&mut i.extents) {
            if e.end() <= start || e.offset >= end {
                out.push(e);
                continue;
            }
            let mut pieces = Some(e.pieces.clone());
            let mut made = Vec::new();
            for (off, len) in [
                (e.offset, start.saturating_sub(e.offset)),
                (end, e.end().saturating_sub(end)),
            ] {
                if len == 0 {
                    continue;
                }
                made.push(Extent {
                    id: next_id,
                    offset: off,
                    len,
                    generation: e.generation,
                    item_trans: t,
                    hole: e.hole,
                    prealloc: e.prealloc,
                    data_token: e.data_token,
                    data_offset: e.data_offset + (off - e.offset),
                    pieces: pieces.take().unwrap_or_default(),
                });
                next_id += 1;
            }
            if let Some(p) = pieces {
                freed.push((super::extent_tree::DiskBytes::of(&e), p));
            }
            if let Some(pos) = i.modified_extents.iter().position(|&m| m == e.id) {
                i.modified_extents.remove(pos);
                i.modified_extents.extend(made.iter().map(|m| m.id));
            }
            out.extend(made);
            if keep {
                i.dead_extents.push(DeadExtent {
                    ext: e,
                    removed: t,
                    removed_at: now,
                });
            }
        }
        out.sort_by_key(|e| e.offset);
        i.extents = out;
        st.next_extent = next_id;
        Self::release_pieces(st, freed, None, t);
    }

    /// btrfs_fallocate (file.c@v5.10) with mode 0 or FALLOC_FL_KEEP_SIZE: waits for ordered
    /// extents in the range, reserves data space, then __btrfs_prealloc_file_range
    /// (inode.c@v5.10) allocates a preallocated extent for each hole of the range in a
    /// started transaction (its extent map, generation = transid, goes on the modified
    /// list) and, without KEEP_SIZE, moves i_size to the range's end. All of it under the
    /// inode lock: btrfs_fallocate takes inode_lock first (file.c@v5.10;
    /// btrfs_inode_lock(inode, BTRFS_ILOCK_MMAP) from 5.13).
    pub(super) async fn fallocate(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        keep_size: bool,
    ) -> Result<(), OpError> {
        // 8d9b4a162a37 (5.13): BTRFS_ILOCK_MMAP, mapped writes excluded.
        let mmap = self.log_patch(LogPatch::IMmapLock);
        let (ino, _ilock) = self.lock_path_flags(path, mmap).await?;
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        self.writeback(ino).await;
        let end = offset + len;
        let holes: Vec<(u64, u64)> = {
            let st = self.inner.st.borrow();
            let mut holes = Vec::new();
            let mut cur = offset;
            for e in st.inodes[&ino].extents.iter().filter(|e| !e.hole) {
                if e.end() <= cur || e.offset >= end {
                    continue;
                }
                if e.offset > cur {
                    holes.push((cur, e.offset - cur));
                }
                cur = cur.max(e.end());
            }
            if cur < end {
                holes.push((cur, end - cur));
            }
            holes
        };
        let bytes: u64 = holes.iter().map(|h| h.1).sum();
        if bytes > 0 {
            self.reserve_data(bytes).await?;
        }
        // insert_prealloc_file_extent: the inode, the removed range, the new extent (3).
        // btrfs_fallocate (file.c@v5.10) frees the data reservation when this fails.
        let th = match self.start_transaction_items(3).await {
            Ok(th) => th,
            Err(e) => {
                self.st_mut().data.may_use -= bytes;
                return Err(e);
            }
        };
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let mut ops = vec![inode_update(ino)];
            for (off, l) in holes {
                // Punched holes inside the range give way to the new extent.
                ops.extend(drop_range_ops(&st, ino, off, off + l));
                self.drop_extents(&mut st, ino, off, off + l, t);
                let pieces = Self::alloc_data_extent(&mut st, l);
                st.trans.get_mut(&t).unwrap().delayed_refs += pieces.len() as u64;
                Self::add_ref_heads(&mut st, t, pieces.len() as u64);
                let id = st.next_extent;
                st.next_extent += 1;
                // Its disk_bytenr: allocated, never written.
                let disk = st.next_offset;
                st.next_offset += l.next_multiple_of(4096);
                // A preallocated extent's file extent item and extent item (no checksums).
                ops.extend(
                    extent_ops(ino, off, disk, l, self.inner.costs.sectorsize)[..2]
                        .iter()
                        .copied(),
                );
                let i = st.inodes.get_mut(&ino).unwrap();
                i.extents.push(Extent {
                    id,
                    offset: off,
                    len: l,
                    generation: t,
                    item_trans: t,
                    hole: false,
                    prealloc: true,
                    data_token: 0,
                    data_offset: disk,
                    pieces,
                });
                i.extents.sort_by_key(|e| e.offset);
                i.modified_extents.push(id);
            }
            let keep = st.keep_history;
            let i = st.inodes.get_mut(&ino).unwrap();
            if !keep_size && end > i.disk_size {
                i.disk_size = end;
                if keep {
                    i.size_hist.push((t, end));
                }
            }
            i.item_trans = t;
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }

    /// btrfs_punch_hole (file.c@v5.10): waits for ordered extents in the range, then in a
    /// started transaction drops the extents inside it (btrfs_punch_hole_range →
    /// btrfs_drop_extents) and fill_holes puts a hole extent map (generation = transid) on
    /// the modified list, so a fast fsync logs the hole and replay drops the old data.
    /// i_size does not change; a range past it is cut at it. All of it under the inode
    /// lock: btrfs_punch_hole takes inode_lock first (file.c@v5.10;
    /// btrfs_inode_lock(inode, BTRFS_ILOCK_MMAP) from 5.13).
    pub(super) async fn punch_hole(
        &self,
        path: &str,
        offset: u64,
        len: u64,
    ) -> Result<(), OpError> {
        // 8d9b4a162a37 (5.13): BTRFS_ILOCK_MMAP, mapped writes excluded.
        let mmap = self.log_patch(LogPatch::IMmapLock);
        let (ino, _ilock) = self.lock_path_flags(path, mmap).await?;
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        self.writeback(ino).await;
        let end = (offset + len).min(self.inner.st.borrow().inodes[&ino].disk_size);
        if end <= offset {
            return Ok(());
        }
        // btrfs_punch_hole: rsv_count 3 without NO_HOLES, 2 with it (file.c@v5.10).
        let no_holes = self.inner.no_holes.get();
        let th = self
            .start_transaction_items(if no_holes { 2 } else { 3 })
            .await?;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            // btrfs_drop_extents: the items of the extents inside the range go (the ones
            // crossing its ends are trimmed: counted as rewrites of their items).
            let mut ops = vec![inode_update(ino)];
            ops.extend(drop_range_ops(&st, ino, offset, end));
            self.drop_extents(&mut st, ino, offset, end, t);
            if !self.mutant(Mutant::PunchHoleLogsNoHole) {
                Self::insert_hole(&mut st, ino, t, offset, end);
                // fill_holes: the hole's file extent item, none with NO_HOLES (the hole
                // extent map is made either way: file.c@v5.12).
                if !no_holes {
                    let k = Key::new(ino, key_type::EXTENT_DATA, offset);
                    ops.push(TreeOp::Insert(tree_id::FS, k, size::FILE_EXTENT));
                }
            }
            st.inodes.get_mut(&ino).unwrap().item_trans = t;
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }
}

/// The item work of btrfs_drop_extents (file.c@v5.10) over [start, end) of `ino`: the
/// items of extents inside the range are deleted (with the extent item and checksums of
/// the data they held); an extent that starts before the range keeps its item, trimmed
/// (rewritten); the part past the range's end gets an item at `end` — a copy of the item
/// when the extent also starts before the range (btrfs_duplicate_item), else the item
/// itself moved there (btrfs_set_item_key_safe: delete and insert here).
pub(super) fn drop_range_ops(st: &FsState, ino: Ino, start: u64, end: u64) -> Vec<TreeOp> {
    let mut ops = Vec::new();
    let key = |off| Key::new(ino, key_type::EXTENT_DATA, off);
    for e in st.inodes[&ino]
        .extents
        .iter()
        .filter(|e| e.offset < end && e.end() > start)
    {
        let (before, after) = (e.offset < start, e.end() > end);
        match (before, after) {
            (false, false) => ops.extend(drop_extent_ops(ino, e.offset, e.data_offset, e.len)),
            (true, _) => ops.push(TreeOp::Update(
                tree_id::FS,
                key(e.offset),
                size::FILE_EXTENT,
            )),
            (false, true) => ops.push(TreeOp::Delete(tree_id::FS, key(e.offset))),
        }
        if after {
            ops.push(TreeOp::Insert(tree_id::FS, key(end), size::FILE_EXTENT));
        }
    }
    ops
}

/// The first offset below i_size where `len` bytes fit between the file's data extents
/// (after the last one when they fit there), and whether it is such a gap; (0, false) when
/// there is none.
fn inside_offset(i: &Inode, len: u64) -> (u64, bool) {
    let size = i.disk_size;
    let data = || i.extents.iter().filter(|e| !e.hole && e.offset < size);
    let tail = data().map(|e| e.end()).max().unwrap_or(0);
    if tail + len <= size {
        return (tail, true);
    }
    let mut spans: Vec<(u64, u64)> = data().map(|e| (e.offset, e.end())).collect();
    spans.sort_unstable();
    let mut cur = 0;
    for (a, b) in spans {
        if a >= cur + len {
            return (cur, true);
        }
        cur = cur.max(b);
    }
    if cur + len <= size {
        return (cur, true);
    }
    (0, false)
}

/// An allocation's (block group, bytes) pieces.
type Pieces = Vec<(u64, u64)>;

/// One ordered extent's data write: the first extent id, the device token and offset, and
/// its bytes.
#[derive(Clone, Copy)]
pub(super) struct Written {
    id: u64,
    tok: u64,
    off: u64,
    bytes: u64,
    /// The file offset the write said (`mmap-write PATH OFFSET SIZE`), if it did.
    at: Option<u64>,
}

impl Written {
    /// An ordered extent's write of `bytes` at device offset `off` (token `tok`), placed
    /// by `insert_written`.
    pub(super) fn new(id: u64, tok: u64, off: u64, bytes: u64) -> Written {
        Written {
            id,
            tok,
            off,
            bytes,
            at: None,
        }
    }
}

/// The first `n` bytes of an allocation's pieces, and the rest.
fn split_pieces(pieces: Pieces, n: u64) -> (Pieces, Pieces) {
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    let mut need = n;
    for (bg, len) in pieces {
        let take = len.min(need);
        if take > 0 {
            first.push((bg, take));
            need -= take;
        }
        if len > take {
            rest.push((bg, len - take));
        }
    }
    (first, rest)
}

impl Btrfs {
    /// A ranged fsync or fdatasync (vfs_fsync_range(file, offset, offset + len - 1, ..)).
    /// btrfs_sync_file of v5.10..v5.15 throws the range away before anything else: "Always
    /// set the range to a full range, otherwise we can get into several problems, from
    /// missing file extent items to represent holes when not using the NO_HOLES feature, to
    /// log tree corruption due to races between hole detection during logging and
    /// completion of ordered extents outside the range, to missing checksums due to ordered
    /// extents for which we flushed only a subset of their pages" — `start = 0; end =
    /// LLONG_MAX;` (file.c:btrfs_sync_file@v5.10 and @v5.15, from 487781796d30 "btrfs: make
    /// fast fsyncs wait only for writeback", 5.10; before it, only a full sync or a
    /// filesystem without NO_HOLES widened the range). So start_ordered_ops and the ordered
    /// wait cover every dirty page of the file, and the fast path logs every extent on the
    /// modified list: the same run as `fsync PATH`, and S2 credits it with the whole file,
    /// which it did write back and log. The range is kept only as a trace mark.
    pub(super) async fn fsync_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
    ) -> Result<(), OpError> {
        self.note(
            "btrfs_sync_file: range set to the full file (start = 0, end = LLONG_MAX), was offset",
            offset,
        );
        self.note("btrfs_sync_file: ranged fsync length", len);
        self.fsync(path).await
    }
}
