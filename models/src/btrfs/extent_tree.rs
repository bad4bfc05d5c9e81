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
        let dropped: Vec<(DiskBytes, Vec<(u64, u64)>)> = st
            .inodes
            .get_mut(&ino)
            .expect("inode")
            .extents
            .iter_mut()
            .map(|e| (DiskBytes::of(e), std::mem::take(&mut e.pieces)))
            .collect();
        if st.shared_data {
            st.data_freed.insert(ino);
        }
        Self::release_pieces(st, dropped, Some(ino), t);
    }

    /// Frees the pieces of dropped extent versions in transaction `t`. After a clone
    /// (`FsState::shared_data`) an extent whose disk bytes another file extent item still
    /// refers to (outside inode `skip` and the inodes whose data was freed) is not freed:
    /// its pieces go to that item, as
    /// __btrfs_free_extent (extent-tree.c@v5.10..v5.16) removes the extent item only when
    /// its last reference is dropped.
    pub(super) fn release_pieces(
        st: &mut FsState,
        dropped: Vec<(DiskBytes, Vec<(u64, u64)>)>,
        skip: Option<Ino>,
        t: TransId,
    ) {
        if !st.shared_data {
            let pieces = dropped.into_iter().flat_map(|(_, p)| p).collect();
            return Self::free_pieces(st, pieces, t);
        }
        let mut inos: Vec<Ino> = st
            .inodes
            .values()
            .map(|i| i.ino)
            .filter(|i| !st.data_freed.contains(i))
            .collect();
        inos.sort_unstable();
        let mut freed = Vec::new();
        for (bytes, pieces) in dropped {
            if pieces.is_empty() {
                continue;
            }
            let holder = inos.iter().filter(|&&i| Some(i) != skip).find_map(|i| {
                let inode = st.inodes.get(i)?;
                inode
                    .extents
                    .iter()
                    .position(|x| bytes.shared_by(x))
                    .map(|p| (*i, p))
            });
            match holder {
                Some((i, p)) => st.inodes.get_mut(&i).unwrap().extents[p]
                    .pieces
                    .extend(pieces),
                None => freed.extend(pieces),
            }
        }
        Self::free_pieces(st, freed, t);
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

/// The disk bytes an extent version refers to, to find another file extent item that
/// refers to the same extent: overlapping disk bytes of the same data write (a
/// preallocated extent has token 0 and its own disk range).
#[derive(Clone, Copy, Debug)]
pub struct DiskBytes {
    token: u64,
    start: u64,
    len: u64,
    prealloc: bool,
    hole: bool,
}

impl DiskBytes {
    /// What `e` refers to.
    pub fn of(e: &Extent) -> DiskBytes {
        DiskBytes {
            token: e.data_token,
            start: e.data_offset,
            len: e.len,
            prealloc: e.prealloc,
            hole: e.hole,
        }
    }

    /// Whether `x` refers to (part of) the same extent.
    fn shared_by(&self, x: &Extent) -> bool {
        if self.hole || x.hole || self.prealloc != x.prealloc {
            return false;
        }
        // Written data: the same write and overlapping bytes (one write's extents in two
        // block groups are two extents). The model keeps no extent boundaries beyond
        // that: an item referring to another part of a trimmed extent is not found.
        x.data_token == self.token
            && x.data_offset < self.start + self.len
            && self.start < x.data_offset + x.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btrfs::state::Transaction;

    /// A data extent of `len` bytes at file offset 0 of a new inode `ino`, written by write
    /// `token` at device offset `disk`, holding `pieces`.
    fn file_with(st: &mut FsState, ino: Ino, token: u64, disk: u64, pieces: Vec<(u64, u64)>) {
        let mut i = st.inodes.get(&ROOT_INO).unwrap().clone();
        i.ino = ino;
        i.is_dir = false;
        i.extents = vec![Extent {
            id: ino,
            offset: 0,
            len: 65536,
            generation: 1,
            item_trans: 1,
            hole: false,
            prealloc: false,
            data_token: token,
            data_offset: disk,
            pieces,
        }];
        st.inodes.insert(ino, i);
    }

    /// After a clone the source's space goes to the extent that still refers to its bytes;
    /// freed only with the last reference (__btrfs_free_extent).
    #[test]
    fn the_last_reference_frees_a_shared_extent() {
        let mut st = FsState::mkfs();
        let t = st.last_trans_committed + 1;
        st.trans.insert(t, Transaction::running(t, 0, 0));
        let bg = st.data.add_group(1 << 20);
        let pieces = st.data.alloc(65536);
        assert_eq!(pieces, vec![(bg, 65536)]);
        let used = st.data.in_use();
        file_with(&mut st, 300, 7, 4096, pieces);
        // The clone: the same write and device bytes, no allocation of its own.
        file_with(&mut st, 301, 7, 4096, Vec::new());
        st.shared_data = true;
        Btrfs::free_data_extents(&mut st, 300, t);
        assert_eq!(st.data.in_use(), used, "the clone keeps the space");
        assert_eq!(
            st.inodes.get(&301).unwrap().extents[0].pieces,
            vec![(bg, 65536)]
        );
        Btrfs::free_data_extents(&mut st, 301, t);
        assert_eq!(
            st.trans[&t].pinned,
            vec![(bg, 65536)],
            "freed, pinned until the commit"
        );
        // Another write's extent is no reference to it.
        let pieces = st.data.alloc(65536);
        file_with(&mut st, 302, 8, 1 << 20, pieces.clone());
        file_with(&mut st, 303, 9, 1 << 20, Vec::new());
        Btrfs::free_data_extents(&mut st, 302, t);
        assert!(st.trans[&t].pinned.ends_with(&pieces));
    }
}
