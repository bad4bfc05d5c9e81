//! fs/btrfs/space-info.c and delalloc-space.c: reserving data space for buffered writes
//! (`bytes_may_use`), and what happens when the data space_info is full.

use super::ctree::Btrfs;
use crate::vfs::OpError;

impl Btrfs {
    /// btrfs_check_data_free_space → btrfs_reserve_data_bytes (v5.10): data never
    /// overcommits, so a reservation is granted while used + pinned + may_use + bytes fits
    /// in the block groups. Otherwise the ticket's reclaim (btrfs_async_reclaim_data_space)
    /// allocates chunks while the device has unallocated space, then commits the
    /// transaction to unpin freed extents; ENOSPC when neither helps.
    pub(super) async fn reserve_data(&self, bytes: u64) -> Result<(), OpError> {
        let mut committed = false;
        loop {
            {
                let mut st = self.st_mut();
                if st.data.in_use() + bytes <= st.data.total() {
                    st.data.may_use += bytes;
                    return Ok(());
                }
            }
            // fs_info->chunk_mutex serialises allocators; re-check after taking it.
            let g = self.inner.chunk_mutex.lock().await;
            let fits = {
                let st = self.inner.st.borrow();
                st.data.in_use() + bytes <= st.data.total()
            };
            if fits {
                continue;
            }
            if self.alloc_data_chunk().await {
                drop(g);
                continue;
            }
            drop(g);
            let pinned: u64 = {
                let st = self.inner.st.borrow();
                st.data.bgs.values().map(|b| b.pinned).sum()
            };
            if committed || pinned == 0 {
                return Err(OpError("no space left on device".into()));
            }
            // COMMIT_TRANS: a commit unpins what the running transaction freed.
            let th = self.start_transaction().await;
            self.commit(th).await;
            committed = true;
        }
    }
}
