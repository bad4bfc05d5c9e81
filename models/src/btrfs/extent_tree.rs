//! fs/btrfs/extent-tree.c: allocating data extents in block groups (find_free_extent),
//! pinning freed extents, and unpinning them when the transaction commits
//! (btrfs_finish_extent_commit).

use super::ctree::Btrfs;
use super::state::*;

impl Btrfs {
    /// find_free_extent for a data extent of `bytes` whose space was reserved (may_use):
    /// first fit over the block groups in order, split across groups when no single one
    /// has room (the reservation guarantees the total).
    pub(super) fn alloc_data_extent(st: &mut FsState, bytes: u64) -> Vec<(u64, u64)> {
        st.data.may_use = st.data.may_use.saturating_sub(bytes);
        st.data.alloc(bytes)
    }

    /// Frees an inode's data extents in transaction `t` (btrfs_free_extent → pinned until
    /// the commit of `t` unpins them).
    pub(super) fn free_data_extents(st: &mut FsState, ino: Ino, t: TransId) {
        // Taken, not copied: a task that still has the unlinked file open may truncate or
        // fallocate it afterwards, and must not free the same pieces again.
        let pieces: Vec<(u64, u64)> = st
            .inodes
            .get_mut(&ino)
            .expect("inode")
            .extents
            .iter_mut()
            .flat_map(|e| std::mem::take(&mut e.pieces))
            .collect();
        Self::free_pieces(st, pieces, t);
    }

    /// Frees allocated (block group, bytes) pieces in transaction `t`: pinned until its
    /// commit, one delayed data ref each.
    pub(super) fn free_pieces(st: &mut FsState, pieces: Vec<(u64, u64)>, t: TransId) {
        if pieces.is_empty() {
            return;
        }
        for &(bg, len) in &pieces {
            st.data.free(bg, len);
        }
        let tr = st.trans.get_mut(&t).unwrap();
        let heads = pieces.len() as u64;
        tr.delayed_refs += heads;
        tr.pinned.extend(pieces);
        Self::add_ref_heads(st, t, heads);
    }

    /// btrfs_finish_extent_commit → unpin_extent_range for transaction `t`.
    pub(super) fn unpin_data(st: &mut FsState, t: TransId) {
        let pinned = std::mem::take(&mut st.trans.get_mut(&t).unwrap().pinned);
        for (bg, len) in pinned {
            st.data.unpin(bg, len);
        }
    }
}
