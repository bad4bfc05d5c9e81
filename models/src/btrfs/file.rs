//! fs/btrfs/file.c: buffered writes, ordered writeback and fsync (btrfs_sync_file).

use super::ctree::{Btrfs, LogResult};
use super::ctree_blocks as blocks;
use super::oracle;
use super::policy::{Fix, Mutant};
use super::state::*;
use crate::device::Request;
use crate::vfs::OpError;

impl Btrfs {
    /// What a buffered and a mapped write share: the file (not a directory), the page-copy
    /// CPU, and the data-space reservation (btrfs_check_data_free_space /
    /// btrfs_delalloc_reserve_space).
    async fn dirty_pages(&self, path: &str, bytes: u64) -> Result<Ino, OpError> {
        let ino = self.resolve(path)?;
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        let pages = bytes.div_ceil(self.inner.costs.sectorsize);
        self.inner
            .h
            .cpu(pages * self.inner.costs.write_per_page)
            .await;
        self.reserve_data(bytes).await?;
        Ok(ino)
    }

    /// btrfs_file_write_iter → btrfs_buffered_write: a buffered write of `bytes`.
    pub(super) async fn write(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        let ino = self.dirty_pages(path, bytes).await?;
        // No transaction here: update_time_for_write changes the times in memory only
        // (file.c:btrfs_file_write_iter@v5.10); the inode item is updated when the ordered
        // extent completes (btrfs_finish_ordered_io, in `writeback`).
        let mut st = self.st_mut();
        let log_transid = st.log_transid;
        let i = st.inodes.get_mut(&ino).unwrap();
        i.dirty_bytes += bytes;
        // "We also have to set last_sub_trans to the current log transid, otherwise
        // subsequent syncs to a file that's been synced in this transaction will appear to
        // have already occurred" (btrfs_file_write_iter@v5.10, under the inode's spinlock).
        i.last_sub_trans = log_transid;
        i.change_seq += 1;
        Ok(())
    }

    /// btrfs_page_mkwrite (inode.c@v5.10): a write through a shared mapping reserves data
    /// space, dirties the pages and stamps the inode without a transaction and without the
    /// inode's spinlock: last_trans = generation, last_sub_trans = root->log_transid, then
    /// last_log_commit = root->last_log_commit. The point between the last two reads is where
    /// a concurrent btrfs_sync_log can move both root fields (a torn read).
    pub(super) async fn mmap_write(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        let ino = self.dirty_pages(path, bytes).await?;
        {
            let mut st = self.st_mut();
            let (generation, log_transid) = (st.generation, st.log_transid);
            let i = st.inodes.get_mut(&ino).unwrap();
            i.dirty_bytes += bytes;
            i.last_trans = generation;
            i.last_sub_trans = log_transid;
            i.change_seq += 1;
        }
        self.point("page_mkwrite:last_sub_trans_set").await;
        let mut st = self.st_mut();
        let last_log_commit = st.root_last_log_commit();
        st.inodes.get_mut(&ino).unwrap().last_log_commit = last_log_commit;
        Ok(())
    }

    /// start_ordered_ops + btrfs_wait_ordered_range: write dirty pages as one ordered
    /// extent; btrfs_finish_ordered_io inserts the file extent item in the running transaction
    /// and sets the extent map's generation to it.
    pub(super) async fn writeback(&self, ino: Ino) {
        let bytes = std::mem::take(&mut self.st_mut().inodes.get_mut(&ino).unwrap().dirty_bytes);
        if bytes == 0 {
            return;
        }
        let id = {
            let mut st = self.st_mut();
            let id = st.next_extent;
            st.next_extent += 1;
            id
        };
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::Data { ino, extent: id }, bytes);
        self.inner
            .dev
            .submit(Request::write(off, bytes).with_token(tok))
            .await;
        let th = self.join_transaction().await;
        let t = th.id;
        self.inner.h.cpu(self.inner.costs.btree_item * 3).await;
        {
            let mut st = self.st_mut();
            let pieces = Self::alloc_data_extent(&mut st, bytes);
            st.trans.get_mut(&t).unwrap().delayed_refs += pieces.len() as u64;
            let i = st.inodes.get_mut(&ino).unwrap();
            i.extents.push(Extent {
                id,
                len: bytes,
                generation: t,
                data_token: tok,
                data_offset: off,
                pieces,
            });
            i.modified_extents.push(id);
            i.item_trans = t;
            Self::set_inode_last_trans(&mut st, ino, t);
            let c = &self.inner.costs;
            let leaves = [
                blocks::inode_leaf(c, ino),
                blocks::extent_leaf(c, id),
                blocks::csum_leaf(c, off),
            ];
            Self::dirty(&mut st, t, &leaves);
        }
        self.end(th);
    }

    /// btrfs_inode_in_log.
    pub(super) fn inode_in_log(st: &FsState, ino: Ino) -> bool {
        let i = &st.inodes[&ino];
        i.logged_trans == st.generation
            && i.last_sub_trans <= i.last_log_commit
            && i.last_sub_trans < st.last_log_commit
            && i.modified_extents.is_empty()
    }

    /// btrfs_sync_file.
    pub(super) async fn fsync(&self, path: &str) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        self.writeback(ino).await;
        // What this fsync promises: the names and extents the inode has once its data is
        // written back (later changes by other tasks are not covered).
        let (names, extents) = {
            let st = self.inner.st.borrow();
            (
                st.names_of(ino),
                st.inodes[&ino]
                    .extents
                    .iter()
                    .map(|e| e.id)
                    .collect::<Vec<_>>(),
            )
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
            Self::inode_in_log(&st, ino)
                || shortcut
                || (self.mutant(Mutant::SkipLogWhenLoggedBefore) && i.logged_trans > 0)
        };
        if skip {
            // "everything committed since we were modified": clear_bit(NEEDS_FULL_SYNC)
            // (btrfs_sync_file@v5.10/v5.11).
            self.st_mut().inodes.get_mut(&ino).unwrap().needs_full_sync = false;
            self.inner.m.borrow_mut().fsync_skips += 1;
        } else {
            let mut th = self.start_transaction().await;
            th.in_fsync = true;
            let t = th.id;
            self.point("fsync:joined").await;
            match self.log_inode_parent(t, ino).await {
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
            }
        }
        // fsync returned success: record what must survive and check a crash now (S2).
        {
            let mut st = self.st_mut();
            let rec = FsyncRecord {
                ino,
                path: path.to_string(),
                names,
                extents,
                entries: if st.inodes[&ino].is_dir {
                    st.entries_of(ino)
                } else {
                    Vec::new()
                },
                at: self.inner.h.now(),
            };
            if st.keep_history {
                st.fsyncs.push(rec);
            }
        }
        self.check_crash("fsync returned");
        Ok(())
    }

    /// Judges and counts a fallback to a full commit.
    pub(super) fn count_full_commit(&self, _t: TransId, cause: FullCommitCause, necessary: bool) {
        let mut m = self.inner.m.borrow_mut();
        m.full_commits += 1;
        if !necessary {
            m.unnecessary_full_commits += 1;
            *m.unnecessary_full_commits_by_cause
                .entry(cause.name().to_string())
                .or_default() += 1;
        }
    }
}
