//! fs/btrfs/block-group.c: chunk allocation makes a new block group, which forces every
//! later fsync of the running transaction to a full commit; empty block groups are deleted
//! after a commit.

use super::ctree::Btrfs;
use super::ctree_blocks::{tree, Leaf};
use super::state::*;

/// A new chunk dirties the chunk and device trees and the block-group item's leaf.
const CHUNK_LEAVES: [Leaf; 3] = [(tree::CHUNK, 1), (tree::CHUNK, 2), (tree::EXTENT, u64::MAX)];

impl Btrfs {
    /// The `new-block-group` operation: btrfs_make_block_group → btrfs_set_log_full_commit.
    pub(super) async fn new_block_group(&self) {
        let th = self.start_transaction().await;
        let t = th.id;
        self.inner.h.cpu(self.inner.costs.btree_item * 4).await;
        {
            let mut st = self.st_mut();
            Self::mark_new_block_group(&mut st, t);
            Self::dirty(&mut st, t, &[], &CHUNK_LEAVES);
        }
        self.end(th);
    }

    /// btrfs_make_block_group(trans) (block-group.c@v5.10): unconditionally
    /// `btrfs_set_log_full_commit(trans)`; the oracle records the event as real.
    pub(super) fn mark_new_block_group(st: &mut FsState, t: TransId) {
        st.last_trans_log_full_commit = t;
        st.trans.get_mut(&t).unwrap().forced_by_event = true;
    }

    /// flush_space(ALLOC_CHUNK_FORCE) for data (space-info.c@v5.10): join the running
    /// transaction (TRANS_JOIN), btrfs_chunk_alloc → btrfs_alloc_chunk (a data chunk of
    /// `data_chunk_size`, volumes.c:init_alloc_chunk_ctl_policy_regular@v5.10, or what is
    /// left of the device) → btrfs_make_block_group. Returns false when the device has no
    /// unallocated space left (`space_info->full`).
    pub(super) async fn alloc_data_chunk(&self) -> bool {
        let size = {
            let st = self.inner.st.borrow();
            self.inner.costs.data_chunk_size.min(st.data.unallocated)
        };
        if size < self.inner.costs.sectorsize {
            return false;
        }
        let th = self.join_transaction().await;
        let t = th.id;
        // Chunk item, device extent, block-group item.
        self.inner.h.cpu(self.inner.costs.btree_item * 4).await;
        {
            let mut st = self.st_mut();
            let size = size.min(st.data.unallocated);
            st.data.unallocated -= size;
            st.data.add_group(size);
            Self::mark_new_block_group(&mut st, t);
            Self::dirty(&mut st, t, &[], &CHUNK_LEAVES);
        }
        // btrfs_make_block_group (block-group.c@v5.10) → btrfs_update_global_block_rsv.
        if self.inner.costs.global_rsv_resize != 0 {
            self.resize_global_rsv();
        }
        self.inner.m.borrow_mut().data_block_groups_created += 1;
        self.end(th);
        true
    }

    /// btrfs_delete_unused_bgs (block-group.c@v5.10, run by the cleaner after a commit):
    /// a group on the unused list with nothing used, pinned or reserved returns its space to
    /// the device — except the last group of its profile (`list_is_singular`).
    pub(super) fn delete_unused_bgs(&self, st: &mut FsState) {
        let mut spare = st.data.total().saturating_sub(st.data.in_use());
        let empty: Vec<u64> = st
            .data
            .groups()
            .filter(|(_, b)| b.unused_marked && b.used == 0 && b.pinned == 0)
            .map(|(id, _)| id)
            .collect();
        for id in empty {
            let size = st.data.group(id).expect("listed").size;
            if size > spare || st.data.group_count() == 1 {
                // Reservations (may_use) still count on this space, or it is the last one.
                break;
            }
            spare -= size;
            st.data.remove_group(id);
            st.data.unallocated += size;
            self.inner.m.borrow_mut().data_block_groups_deleted += 1;
        }
    }
}
