//! Direct writes into preallocated extents without COW: btrfs_get_blocks_direct_write and
//! can_nocow_extent (fs/btrfs/inode.c@v5.10, moved to direct-io.c in 6.1), and
//! btrfs_mark_extent_written (fs/btrfs/file.c@v5.10) at the ordered extent's completion.
//!
//! What the kernel does (v5.10–v5.16) and this mirrors:
//! - btrfs_get_blocks_direct_write: an extent map flagged PREALLOC is written in place
//!   when can_nocow_extent says so: the file extent item looked up in the subvolume tree
//!   (btrfs_lookup_file_extent), the extent item in the extent tree (btrfs_cross_ref_exist
//!   → check_committed_ref) and the checksums of the range in the csum tree
//!   (csum_exist_in_range). The data space reserved up front is given back
//!   (btrfs_free_reserved_data_space_noquota: "use the existing or preallocated extent"),
//!   no extent is allocated, and the ordered extent is BTRFS_ORDERED_PREALLOC.
//! - btrfs_finish_ordered_io → btrfs_mark_extent_written: the prealloc item is split
//!   around the written range (btrfs_duplicate_item), each new item adding a reference to
//!   the same extent (btrfs_inc_extent_ref) and each item merged into a written neighbour
//!   of the same extent dropping one (btrfs_free_extent); the refs of one extent share one
//!   delayed ref head per transaction. The checksums go in (add_pending_csums) and the
//!   inode is updated.
//! - A written range is a regular extent afterwards: the next direct write over it COWs.
//!
//! Simplifications: the file's extent list keeps the extent whole and `prealloc` (as the
//! COW path keeps its extent map unsplit: the durability of data written inside the file
//! by a direct write is not part of the crash check); what was written is a bitmap per
//! extent. A key that btrfs_set_item_key_safe moves in place is priced as a delete and an
//! insert. Not modelled: NODATACOW inodes, shared (cloned or snapshotted) extents, which
//! btrfs_cross_ref_exist sends to COW — once a clone has run, every direct write COWs.

use super::ctree::Btrfs;
use super::ctree_btree::{extent_ops, key_type, size, tree_id, Key, TreeOp, EXTENT_CSUM_OBJECTID};
use super::state::{FsState, Ino, TransId};

/// The sectors of one preallocated extent that direct writes have written.
#[derive(Clone, Debug, Default)]
pub struct PreallocWritten {
    /// One bit per sector, set when a direct write of it is submitted.
    bits: Vec<u64>,
    /// Sectors in the extent.
    sectors: u64,
    /// The last transaction whose delayed ref head for this extent exists.
    head_trans: TransId,
}

impl PreallocWritten {
    /// An extent of `sectors` sectors, none written.
    pub fn new(sectors: u64) -> Self {
        PreallocWritten {
            bits: vec![0; sectors.div_ceil(64) as usize],
            sectors,
            head_trans: 0,
        }
    }

    /// Whether sector `s` has been written.
    pub fn get(&self, s: u64) -> bool {
        self.bits[(s / 64) as usize] >> (s % 64) & 1 == 1
    }

    /// Whether any of sectors [s, s + n) has been written.
    pub fn any(&self, s: u64, n: u64) -> bool {
        self.next_set(s).is_some_and(|x| x < s + n)
    }

    /// Marks sectors [s, s + n) written.
    pub fn set(&mut self, s: u64, n: u64) {
        sim::check!(s + n <= self.sectors, "a write past its extent");
        for x in s..s + n {
            self.bits[(x / 64) as usize] |= 1 << (x % 64);
        }
    }

    /// The first written sector at or after `s`.
    pub fn next_set(&self, s: u64) -> Option<u64> {
        self.next_with(s, false)
    }

    /// The last written sector before `s`.
    pub fn prev_set(&self, s: u64) -> Option<u64> {
        self.prev_with(s, false)
    }

    /// The last unwritten sector before `s`.
    pub fn prev_clear(&self, s: u64) -> Option<u64> {
        self.prev_with(s, true)
    }

    /// The first sector at or after `s` whose bit is 1 (`invert`: 0).
    fn next_with(&self, s: u64, invert: bool) -> Option<u64> {
        let flip = if invert { u64::MAX } else { 0 };
        let mut w = (s / 64) as usize;
        let mut word = (self.bits.get(w)? ^ flip) & (u64::MAX << (s % 64));
        loop {
            if word != 0 {
                let x = w as u64 * 64 + u64::from(word.trailing_zeros());
                return (x < self.sectors).then_some(x);
            }
            w += 1;
            word = self.bits.get(w)? ^ flip;
        }
    }

    /// The last sector before `s` whose bit is 1 (`invert`: 0).
    fn prev_with(&self, s: u64, invert: bool) -> Option<u64> {
        if s == 0 {
            return None;
        }
        let flip = if invert { u64::MAX } else { 0 };
        let last = s - 1;
        let mut w = (last / 64) as usize;
        let keep = u64::MAX >> (63 - last % 64);
        let mut word = (self.bits[w] ^ flip) & keep;
        loop {
            if word != 0 {
                return Some(w as u64 * 64 + 63 - u64::from(word.leading_zeros()));
            }
            if w == 0 {
                return None;
            }
            w -= 1;
            word = self.bits[w] ^ flip;
        }
    }
}

/// A direct write that goes into a preallocated extent in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nocow {
    /// The extent's model id.
    pub extent: u64,
    /// Its file offset.
    pub file_offset: u64,
    /// Its length.
    pub len: u64,
    /// Its disk bytenr.
    pub disk: u64,
}

impl Nocow {
    /// The extent item's key in the extent tree.
    fn extent_key(&self) -> Key {
        Key::new(self.disk, key_type::EXTENT_ITEM, self.len)
    }

    /// The disk bytenr of file offset `offset` inside the extent.
    pub fn disk_at(&self, offset: u64) -> u64 {
        self.disk + (offset - self.file_offset)
    }
}

impl Btrfs {
    /// btrfs_get_blocks_direct_write's choice for a write of [offset, offset + bytes) of
    /// `ino`: the preallocated extent that holds the whole range unwritten, when
    /// can_nocow_extent allows writing it in place; the sectors are then marked written.
    pub(super) fn claim_nocow(
        st: &mut FsState,
        ino: Ino,
        offset: u64,
        bytes: u64,
        sector: u64,
    ) -> Option<Nocow> {
        if sector == 0
            || st.shared_data
            || offset % sector != 0
            || bytes % sector != 0
            || bytes == 0
        {
            return None;
        }
        let i = st.inodes.get(&ino)?;
        let at = i.extents.partition_point(|e| e.end() <= offset);
        let e = i.extents.get(at)?;
        if !e.prealloc || e.hole || e.offset > offset || offset + bytes > e.end() {
            return None;
        }
        let n = Nocow {
            extent: e.id,
            file_offset: e.offset,
            len: e.len,
            disk: e.data_offset,
        };
        let sectors = n.len.div_ceil(sector);
        let w = st
            .prealloc_written
            .entry(n.extent)
            .or_insert_with(|| PreallocWritten::new(sectors));
        if w.sectors != sectors {
            // Compaction merged the extent into a longer one under the same id.
            *w = PreallocWritten::new(sectors);
        }
        let (s, k) = ((offset - n.file_offset) / sector, bytes / sector);
        if w.any(s, k) {
            return None;
        }
        w.set(s, k);
        Some(n)
    }

    /// can_nocow_extent's searches for a write at `offset` into `n`: the file extent item,
    /// the extent item (check_committed_ref) and the range's checksums.
    pub(super) fn nocow_check_ops(ino: Ino, n: &Nocow, offset: u64) -> [TreeOp; 3] {
        [
            TreeOp::Search(tree_id::FS, Key::new(ino, key_type::EXTENT_DATA, offset)),
            TreeOp::Search(tree_id::EXTENT, n.extent_key()),
            TreeOp::Search(
                tree_id::CSUM,
                Key::new(
                    EXTENT_CSUM_OBJECTID,
                    key_type::EXTENT_CSUM,
                    n.disk_at(offset),
                ),
            ),
        ]
    }

    /// btrfs_mark_extent_written@v5.10 for [offset, offset + bytes) of `n` in transaction
    /// `t`, with the checksums: the tree changes (the extent item's refcount as a delayed
    /// ref), the ref changes counted in `t` and, for the extent's first change in `t`, its
    /// delayed ref head.
    pub(super) fn mark_extent_written_ops(
        st: &mut FsState,
        t: TransId,
        ino: Ino,
        n: &Nocow,
        offset: u64,
        bytes: u64,
        sector: u64,
    ) -> Vec<TreeOp> {
        let sector = sector.max(1);
        let key = |s: u64| Key::new(ino, key_type::EXTENT_DATA, n.file_offset + s * sector);
        let Some(w) = st.prealloc_written.get_mut(&n.extent) else {
            return Vec::new();
        };
        let (b, k) = ((offset - n.file_offset) / sector, bytes / sector);
        let left = b > 0 && w.get(b - 1);
        let right = b + k < w.sectors && w.get(b + k);
        // The unwritten run [a, z) the range was cut from.
        let a = if left {
            b
        } else {
            w.prev_set(b).map_or(0, |x| x + 1)
        };
        let z = if right {
            b + k
        } else {
            w.next_set(b + k).unwrap_or(w.sectors)
        };
        let mut ops = Vec::with_capacity(6);
        let (mut inc, mut dec) = (0u64, 0u64);
        let fe = size::FILE_EXTENT;
        // The first change is made through the function's search with ins_len = -1.
        if a < b {
            // The prealloc item keeps [a, b); the written range gets a new item.
            ops.push(TreeOp::UpdateDelPath(tree_id::FS, key(a), fe));
            ops.push(TreeOp::Insert(tree_id::FS, key(b), fe));
            inc += 1;
        } else if left {
            // Merged into the written item on its left (extent_mergeable): that item grows.
            let lw = w.prev_clear(b).map_or(0, |x| x + 1);
            ops.push(TreeOp::UpdateDelPath(tree_id::FS, key(lw), fe));
            ops.push(TreeOp::Delete(tree_id::FS, key(b)));
            dec += 1;
        } else {
            // The prealloc item becomes the written one.
            ops.push(TreeOp::UpdateDelPath(tree_id::FS, key(b), fe));
        }
        if b + k < z {
            // The rest of the unwritten run: a new prealloc item after the range.
            ops.push(TreeOp::Insert(tree_id::FS, key(b + k), fe));
            inc += 1;
        } else if right {
            // The written item on the right merges in.
            ops.push(TreeOp::Delete(tree_id::FS, key(b + k)));
            dec += 1;
        }
        if inc + dec > 0 {
            ops.push(TreeOp::Update(
                tree_id::EXTENT,
                n.extent_key(),
                size::EXTENT_DATA_ITEM,
            ));
            let new_head = w.head_trans != t;
            w.head_trans = t;
            if let Some(tr) = st.trans.get_mut(&t) {
                tr.delayed_refs += inc + dec;
            }
            if new_head {
                Self::add_ref_heads(st, t, 1);
            }
        }
        // The checksum item, as a new extent's (extent_ops), at the range's bytes.
        ops.push(extent_ops(ino, offset, n.disk_at(offset), bytes, sector)[2]);
        ops
    }
}

#[cfg(test)]
mod tests {
    use super::PreallocWritten;
    use crate::btrfs::ctree::Btrfs;
    use crate::btrfs::ctree_btree::{apply, key_type, size, tree_id, Key, TreeOp, Work};
    use crate::btrfs::state::{Extent, FsState, Transaction, ROOT_INO};

    const MIB: u64 = 1 << 20;
    const K4: u64 = 4096;

    /// A file of one 1 MiB preallocated extent at disk bytenr 16 MiB, in a running
    /// transaction; returns the transaction.
    fn prealloc_file(st: &mut FsState) -> u64 {
        let t = st.last_trans_committed + 1;
        st.trans.insert(t, Transaction::running(t, 0, 0));
        let mut i = st.inodes.get(&ROOT_INO).unwrap().clone();
        i.ino = 300;
        i.is_dir = false;
        i.disk_size = MIB;
        i.extents = vec![Extent {
            id: 7,
            offset: 0,
            len: MIB,
            generation: 1,
            item_trans: 1,
            hole: false,
            prealloc: true,
            data_token: 0,
            data_offset: 16 * MIB,
            pieces: Vec::new(),
        }];
        st.inodes.insert(300, i);
        let fe = Key::new(300, key_type::EXTENT_DATA, 0);
        let mut w = Work::default();
        apply(
            &mut st.trees,
            &[TreeOp::Insert(tree_id::FS, fe, size::FILE_EXTENT)],
            &mut w,
            &mut Default::default(),
        );
        t
    }

    /// The file's file extent items.
    fn items(st: &FsState) -> usize {
        let lo = Key::new(300, key_type::EXTENT_DATA, 0);
        let hi = Key::new(300, key_type::EXTENT_DATA, u64::MAX);
        st.trees.fs.items_in(lo, hi)
    }

    /// Writes [off, off + len) in place when btrfs_get_blocks_direct_write would, and
    /// applies btrfs_mark_extent_written's changes; whether it went in place.
    fn write(st: &mut FsState, t: u64, off: u64, len: u64) -> Option<Vec<TreeOp>> {
        let n = Btrfs::claim_nocow(st, 300, off, len, K4)?;
        let ops = Btrfs::mark_extent_written_ops(st, t, 300, &n, off, len, K4);
        let fs: Vec<TreeOp> = ops
            .iter()
            .copied()
            .filter(|op| {
                matches!(
                    op,
                    TreeOp::Insert(tree_id::FS, ..)
                        | TreeOp::Update(tree_id::FS, ..)
                        | TreeOp::UpdateDelPath(tree_id::FS, ..)
                        | TreeOp::Delete(tree_id::FS, ..)
                )
            })
            .collect();
        apply(
            &mut st.trees,
            &fs,
            &mut Work::default(),
            &mut Default::default(),
        );
        Some(ops)
    }

    /// btrfs_mark_extent_written@v5.10: a write inside the prealloc item splits it in
    /// three (two new items, each a reference to the same extent); a write next to a
    /// written range merges into it (extent_mergeable); a written range is a regular extent,
    /// so writing it again COWs. The refs of one extent share one head per transaction.
    #[test]
    fn a_direct_write_into_a_prealloc_extent_splits_its_item_and_merges_with_written_neighbours() {
        let mut st = FsState::mkfs();
        let t = prealloc_file(&mut st);
        let heads = st.trans[&t].ref_heads;
        assert_eq!(items(&st), 1);
        let key = |o: u64| Key::new(300, key_type::EXTENT_DATA, o);
        let ek = Key::new(16 * MIB, key_type::EXTENT_ITEM, MIB);
        let ck = |o: u64| {
            Key::new(
                super::EXTENT_CSUM_OBJECTID,
                key_type::EXTENT_CSUM,
                16 * MIB + o,
            )
        };
        let fe = size::FILE_EXTENT;
        let ops = write(&mut st, t, 64 << 10, K4).expect("in place");
        assert_eq!(
            ops,
            vec![
                TreeOp::UpdateDelPath(tree_id::FS, key(0), fe),
                TreeOp::Insert(tree_id::FS, key(64 << 10), fe),
                TreeOp::Insert(tree_id::FS, key(68 << 10), fe),
                TreeOp::Update(tree_id::EXTENT, ek, size::EXTENT_DATA_ITEM),
                TreeOp::Insert(tree_id::CSUM, ck(64 << 10), size::CSUM_PER_SECTOR),
            ]
        );
        assert_eq!(items(&st), 3);
        assert_eq!(st.trans[&t].delayed_refs, 2);
        // Next to the written range: merged, the prealloc item's key moves past it.
        let ops = write(&mut st, t, 68 << 10, K4).expect("in place");
        assert_eq!(
            ops[..3],
            [
                TreeOp::UpdateDelPath(tree_id::FS, key(64 << 10), fe),
                TreeOp::Delete(tree_id::FS, key(68 << 10)),
                TreeOp::Insert(tree_id::FS, key(72 << 10), fe),
            ]
        );
        assert_eq!(items(&st), 3);
        // From the file's start, up to the written range: the prealloc item becomes the
        // written one and the range on its right merges in.
        write(&mut st, t, 0, 64 << 10).expect("in place");
        assert_eq!(items(&st), 2);
        assert_eq!(st.trans[&t].ref_heads, heads + 1, "one head for the extent");
        // Written once: the next write of it COWs; so does a range reaching into it, an
        // unaligned one, and one past the extent.
        assert!(write(&mut st, t, 64 << 10, K4).is_none());
        assert!(write(&mut st, t, 68 << 10, 2 * K4).is_none());
        assert!(write(&mut st, t, 100 << 10, 512).is_none());
        assert!(write(&mut st, t, MIB - K4, 2 * K4).is_none());
        assert!(write(&mut st, t, MIB - K4, K4).is_some());
        assert_eq!(
            items(&st),
            3,
            "the last sector: split off the prealloc item's end"
        );
        // After a clone nothing is written in place (btrfs_cross_ref_exist).
        st.shared_data = true;
        assert!(write(&mut st, t, 200 << 10, K4).is_none());
    }

    #[test]
    fn the_bitmap_finds_the_runs_around_a_sector() {
        let mut w = PreallocWritten::new(200);
        assert_eq!(w.next_set(0), None);
        assert_eq!(w.prev_set(199), None);
        w.set(70, 2);
        w.set(130, 1);
        assert!(w.get(71) && !w.get(72));
        assert!(w.any(60, 11) && !w.any(72, 58) && w.any(72, 59));
        assert_eq!(w.next_set(72), Some(130));
        assert_eq!(w.next_set(131), None);
        assert_eq!(w.prev_set(130), Some(71));
        assert_eq!(w.prev_set(70), None);
        assert_eq!(w.prev_clear(72), Some(69));
        assert_eq!(w.prev_clear(64), Some(63));
        assert_eq!(w.prev_clear(0), None);
    }
}
