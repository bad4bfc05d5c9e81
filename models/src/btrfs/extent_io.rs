//! Writeback of a file's separate dirty ranges, each an ordered extent of its own, as fio's
//! random buffered writes leave them (extent_io.c:extent_write_cache_pages →
//! writepage_delalloc → inode.c:btrfs_run_delalloc_range → cow_file_range@v5.10, one call
//! per delalloc range; btrfs_finish_ordered_io for each ordered extent in the endio-write
//! workers).
//!
//! `write-range PATH OFFSET SIZE` records its range (`MetaSpace::range_list`). At
//! writeback the ranges, sorted and merged where adjacent (one delalloc range in the io
//! tree), are each reserved an extent, an extent map and an ordered extent by the flusher
//! (cow_file_range: one b-tree item's CPU each, as a direct write's), written in file order
//! to consecutive disk bytes (find_free_extent's cluster: one request), and finished one
//! by one by the endio-write workers: btrfs_drop_extents over the range (the hole or
//! extent item there trimmed, split or dropped) and the new file extent item
//! (insert_reserved_file_extent), the extent item's delayed ref (one head per range), the
//! checksums appended to the writeback's csum item (btrfs_csum_file_blocks extends the
//! item that ends where the range's bytes begin) and the inode item; each releases its
//! share of the inode's delalloc metadata. `RangeItems` holds the fs tree's items these
//! completions made, so a later range finds what it replaces.
//!
//! Simplification: the file's extent map (what an fsync logs and the crash check reads)
//! gets one extent per writeback, placed as a `write-range` without an offset is; the
//! trees get an item per range. Not modelled: a replaced range's checksums deleted from
//! the middle of a csum item, and the bookend references of a split extent (a refcount
//! update of its extent item stands for both).

use super::ctree::Btrfs;
use super::ctree_btree::{
    extent_ops, inode_update, key_type, size, tree_id, Key, TreeOp, EXTENT_CSUM_OBJECTID,
};
use super::file::{OrderedDone, OrderedKind};
use super::state::Ino;
use std::collections::BTreeMap;

/// The file extent items of a file's written-back ranges: file offset → (length, the
/// extent's bytenr and length), the extent being the one the item refers to (a trimmed or
/// split item refers to part of it).
pub type RangeItems = BTreeMap<u64, (u64, Ext)>;

/// An extent's (disk bytenr, length): its extent item's key.
pub type Ext = (u64, u64);

/// `ranges` sorted by offset, overlapping and adjacent ones merged (the io tree's
/// EXTENT_DELALLOC bits make one delalloc range of touching dirty pages).
pub fn merge_ranges(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (o, l) in ranges {
        match out.last_mut() {
            Some(last) if o <= last.0 + last.1 => {
                last.1 = last.1.max(o + l - last.0);
            }
            _ => out.push((o, l)),
        }
    }
    out
}

/// The fs-tree work of one range's insert_reserved_file_extent (inode.c@v5.10):
/// btrfs_drop_extents over [offset, offset + len) — an item reaching in from the left is
/// trimmed (and split when it also reaches past the end: a new item at the end), items
/// inside are deleted (an extent no other item refers to is freed: its extent item's
/// delete), one reaching past the end has its key moved to the end — then the new item.
/// Without NO_HOLES the range lies in a hole item when no range item covers it: the hole
/// (from the end of the range item before, or 0) is trimmed and its tail re-inserted at
/// the end unless a range item or `i_size` is there.
pub fn range_item_ops(
    items: &mut RangeItems,
    holes: bool,
    i_size: u64,
    ino: Ino,
    (offset, len): (u64, u64),
    bytenr: u64,
    ops: &mut Vec<TreeOp>,
) {
    let end = offset + len;
    let fkey = |o: u64| Key::new(ino, key_type::EXTENT_DATA, o);
    let mut covered = false;
    // The item before `offset` that reaches into the range.
    if let Some((&k, &(l, ext))) = items.range(..offset).next_back() {
        if k + l > offset {
            covered = true;
            ops.push(TreeOp::Update(tree_id::FS, fkey(k), size::FILE_EXTENT));
            items.insert(k, (offset - k, ext));
            if k + l > end {
                tail_item(items, ino, (end, k + l - end), ext, ops);
            }
            ops.push(ref_update(ext));
        } else if holes {
            hole_trim(k + l, offset, ino, ops);
        }
    } else if holes {
        hole_trim(0, offset, ino, ops);
    }
    // Items starting inside the range.
    let inside: Vec<(u64, (u64, Ext))> = items.range(offset..end).map(|(&k, &v)| (k, v)).collect();
    for (k, (l, ext)) in inside {
        covered = true;
        items.remove(&k);
        if k != offset {
            ops.push(TreeOp::Delete(tree_id::FS, fkey(k)));
        }
        if k + l > end {
            tail_item(items, ino, (end, k + l - end), ext, ops);
            ops.push(ref_update(ext));
        } else if l == ext.1 || !shared(items, k, ext) {
            // The extent's last reference: __btrfs_free_extent deletes its item.
            ops.push(TreeOp::Delete(tree_id::EXTENT, ext_key(ext)));
        } else {
            ops.push(ref_update(ext));
        }
    }
    if holes && !covered && end < i_size && !items.contains_key(&end) {
        // The hole's tail after the range.
        ops.push(TreeOp::Insert(tree_id::FS, fkey(end), size::FILE_EXTENT));
    }
    // The range's own item, inserted in btrfs_drop_extents' path (replace_extent).
    ops.push(TreeOp::InsertDelPath(
        tree_id::FS,
        fkey(offset),
        size::FILE_EXTENT,
    ));
    items.insert(offset, (len, (bytenr, len)));
}

/// The part of an item after a range: an item of its own at the range's end (a split, or
/// a key moved by btrfs_set_item_key_safe), still referring to `ext`.
fn tail_item(items: &mut RangeItems, ino: Ino, (at, len): Ext, ext: Ext, ops: &mut Vec<TreeOp>) {
    let k = Key::new(ino, key_type::EXTENT_DATA, at);
    ops.push(TreeOp::Insert(tree_id::FS, k, size::FILE_EXTENT));
    items.insert(at, (len, ext));
}

/// A reference count change of `ext`'s extent item (a delayed ref run at the commit).
fn ref_update(ext: Ext) -> TreeOp {
    TreeOp::Update(tree_id::EXTENT, ext_key(ext), size::EXTENT_DATA_ITEM)
}

/// Whether an item other than the one at `k` (removed) refers to `ext`: the parts of a
/// split extent lie within its length of each other.
fn shared(items: &RangeItems, k: u64, ext: Ext) -> bool {
    let lo = k.saturating_sub(ext.1);
    items.range(lo..k + ext.1).any(|(_, v)| v.1 == ext)
}

/// An extent's extent item key.
pub fn ext_key((bytenr, len): Ext) -> Key {
    Key::new(bytenr, key_type::EXTENT_ITEM, len)
}

/// A hole item starting at `hole` trimmed to end at `offset` (nothing when it starts
/// there: the range's own item replaces it).
fn hole_trim(hole: u64, offset: u64, ino: Ino, ops: &mut Vec<TreeOp>) {
    if hole < offset {
        let k = Key::new(ino, key_type::EXTENT_DATA, hole);
        ops.push(TreeOp::Update(tree_id::FS, k, size::FILE_EXTENT));
    }
}

/// Where one range's checksums go: the writeback's csum item (keyed by its first byte)
/// and that item's size once this range's sums are appended.
#[derive(Clone, Copy, Debug)]
pub struct RangeCsum {
    /// Disk bytenr of the writeback's first byte (the csum item's key).
    pub start: u64,
    /// The csum item's data bytes with this range's sums.
    pub bytes: u32,
}

impl Btrfs {
    /// `write-range PATH OFFSET SIZE`: a buffered write of a dirty range of its own at
    /// `at`, inside the file's written size, under the inode lock as `write`. The file
    /// may hold other such ranges, no other dirty pages.
    pub(super) async fn write_range_at(
        &self,
        path: &str,
        at: u64,
        bytes: u64,
    ) -> Result<(), crate::vfs::OpError> {
        let (ino, _ilock) = self.lock_path(path).await?;
        {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            // Other writes are refused while the file has listed ranges, so its dirty
            // pages are all listed when it has any.
            if i.dirty_bytes > 0 && !st.meta.range_list.contains_key(&ino) {
                return Err(crate::vfs::OpError(format!(
                    "write-range {path} {at} {bytes}: the file has other dirty pages than ranges at offsets (the model writes those back as one extent): write them back first"
                )));
            }
            if i.is_dir {
                return Err(crate::vfs::OpError(format!("is a directory: {path}")));
            }
            if at + bytes > i.disk_size {
                return Err(crate::vfs::OpError(format!(
                    "write-range {path} {at} {bytes}: the range ends past the file's written size ({}): a range at an offset lies inside the file",
                    i.disk_size
                )));
            }
        }
        self.reserve_dirty(ino, bytes, true).await?;
        {
            let mut st = self.st_mut();
            st.meta.range_list.entry(ino).or_default().push((at, bytes));
        }
        self.stamp_buffered_write(ino, bytes);
        Ok(())
    }

    /// The writeback of `ino`'s ranges at offsets (`bytes` dirty): the flusher's
    /// cow_file_range for each merged range, one data write of them all, the file's extent
    /// map as one extent (the crash check's view), then an ordered extent per range handed
    /// to the endio-write workers and, with `wait`, waited for (btrfs_wait_ordered_range).
    pub(super) async fn writeback_ranges(
        &self,
        ino: Ino,
        bytes: u64,
        ranges: Vec<(u64, u64)>,
        wait: bool,
    ) {
        let ranges = merge_ranges(ranges);
        let total: u64 = ranges.iter().map(|r| r.1).sum();
        {
            let mut st = self.st_mut();
            st.meta.delalloc_bytes -= bytes;
            st.meta.ordered_bytes += total;
        }
        // cow_file_range per range: btrfs_reserve_extent, create_io_em, the ordered extent.
        let n = ranges.len() as u64;
        self.inner.h.cpu(n * self.inner.costs.btree_item).await;
        let (id, tok, off) = self.write_data(ino, total).await;
        let th = self.join_transaction().await;
        let t = th.id;
        {
            let mut st = self.st_mut();
            let pieces = Self::alloc_data_extent(&mut st, total);
            let w = super::file::Written::new(id, tok, off, total);
            // The extent map's view only: the trees get the ranges' items below.
            let _ = self.insert_written(&mut st, ino, w, pieces, total, t);
            st.inodes.get_mut(&ino).unwrap().item_trans = t;
            Self::set_inode_last_trans(&mut st, ino, t);
            // Pages dirtied twice were reserved twice and are written once.
            st.data.may_use = st.data.may_use.saturating_sub(bytes - total);
        }
        self.end(th);
        let rsv = self.st_mut().meta.delalloc_rsv.remove(&ino).unwrap_or(0);
        {
            let mut p = self.inner.dio_pending.borrow_mut();
            p.entry(ino).or_default().0 += n as u32;
        }
        let sector = self.inner.costs.sectorsize;
        let mut done = 0u64;
        for (k, &(offset, len)) in ranges.iter().enumerate() {
            let share = rsv / n + if k as u64 == n - 1 { rsv % n } else { 0 };
            done += len;
            let csum = RangeCsum {
                start: off,
                bytes: (done.div_ceil(sector) as u32) * size::CSUM_PER_SECTOR,
            };
            self.inner.endio.borrow_mut().push_back(OrderedDone {
                ino,
                offset,
                bytes: len,
                id,
                dev_offset: off + done - len,
                rsv: share,
                tok,
                kind: OrderedKind::Range(csum),
            });
            self.wake_endio_worker();
        }
        if wait {
            self.wait_dio_ordered(ino).await;
        }
    }

    /// btrfs_finish_ordered_io of one range's ordered extent (inode.c@v5.10): the fs tree's
    /// items (`range_item_ops`), the new extent's item by delayed ref, the checksums
    /// appended, the inode item; then the range's metadata share goes to the delayed refs
    /// reserve and waiters on the file's ordered extents wake.
    pub(super) async fn finish_range_ordered(&self, j: OrderedDone, csum: RangeCsum) {
        let th = self.join_transaction().await;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            st.meta.ordered_bytes -= j.bytes;
            let mut ops = Vec::with_capacity(10);
            if let Some(i) = st.inodes.get(&j.ino) {
                let size = i.disk_size;
                let holes = !self.inner.no_holes.get();
                let items = st.range_items.entry(j.ino).or_default();
                range_item_ops(
                    items,
                    holes,
                    size,
                    j.ino,
                    (j.offset, j.bytes),
                    j.dev_offset,
                    &mut ops,
                );
                let sector = self.inner.costs.sectorsize;
                // The extent item (extent_ops' own), via the delayed ref.
                ops.push(extent_ops(j.ino, j.offset, j.dev_offset, j.bytes, sector)[1]);
                let ck = Key::new(EXTENT_CSUM_OBJECTID, key_type::EXTENT_CSUM, csum.start);
                ops.push(TreeOp::Insert(tree_id::CSUM, ck, csum.bytes));
                ops.push(inode_update(j.ino));
                st.trans.get_mut(&t).unwrap().delayed_refs += 1;
                Self::add_ref_heads(&mut st, t, 1);
                st.inodes.get_mut(&j.ino).unwrap().item_trans = t;
                Self::set_inode_last_trans(&mut st, j.ino, t);
            }
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        self.release_to_delayed_refs(j.rsv);
        self.end(th);
        self.dio_ordered_done(j.ino);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_joins_touching_and_overlapping_ranges_only() {
        let got = merge_ranges(vec![
            (8192, 4096),
            (0, 4096),
            (4096, 4096),
            (20480, 4096),
            (22528, 4096),
        ]);
        assert_eq!(got, vec![(0, 12288), (20480, 6144)]);
    }

    #[test]
    fn a_range_inside_an_item_splits_it_and_frees_nothing() {
        let mut items = RangeItems::new();
        // One range's ops on the file (257, 1 MiB, holes) after clearing `ops`.
        let mut write = |range: Ext, bytenr: u64| {
            let mut ops = Vec::new();
            range_item_ops(&mut items, true, 1 << 20, 257, range, bytenr, &mut ops);
            ops
        };
        write((0, 65536), 1 << 30);
        // [16k, 20k) inside the 64 KiB extent: the left part trimmed, the right part a new
        // item at 20k still referring to the extent, the refcount updated, nothing freed.
        let ops = write((16384, 4096), 2 << 30);
        let fs_key = |o| Key::new(257, key_type::EXTENT_DATA, o);
        let old = ext_key((1 << 30, 65536));
        assert_eq!(
            ops,
            vec![
                TreeOp::Update(tree_id::FS, fs_key(0), size::FILE_EXTENT),
                TreeOp::Insert(tree_id::FS, fs_key(20480), size::FILE_EXTENT),
                TreeOp::Update(tree_id::EXTENT, old, size::EXTENT_DATA_ITEM),
                TreeOp::InsertDelPath(tree_id::FS, fs_key(16384), size::FILE_EXTENT),
            ]
        );
        // Overwriting both remaining parts frees the old extent with the last of them.
        let freed = TreeOp::Delete(tree_id::EXTENT, old);
        assert!(!write((0, 16384), 3 << 30).contains(&freed));
        assert!(write((20480, 45056), 4 << 30).contains(&freed));
        assert_eq!(items.len(), 3);
    }

    /// FLUSH_DELALLOC starts writeback and goes on; only a waiting writeback
    /// (FLUSH_DELALLOC_WAIT, fsync) returns after the ranges' ordered extents finished.
    #[test]
    fn a_writeback_without_wait_leaves_the_ranges_to_the_endio_workers() {
        for wait in [false, true] {
            let mut sim = sim::Sim::new();
            let fs = Btrfs::for_test(&mut sim);
            let f = fs.clone();
            let seen = std::rc::Rc::new(std::cell::Cell::new(u64::MAX));
            let out = seen.clone();
            sim.spawn("A", async move {
                use crate::vfs::Op;
                for op in [
                    Op::Create("/f".into()),
                    Op::Truncate("/f".into(), 1 << 20),
                    Op::WriteRangeAt("/f".into(), 0, 4096),
                    Op::WriteRangeAt("/f".into(), 65536, 4096),
                ] {
                    f.run_op(&op).await.unwrap();
                }
                f.writeback_wait(257, wait).await;
                out.set(f.inner.st.borrow().meta.ordered_bytes);
                // The workers finish them (an fsync would wait here).
                f.wait_dio_ordered(257).await;
            });
            sim.run().unwrap();
            assert_eq!(
                seen.get() == 0,
                wait,
                "ordered bytes at return: {}",
                seen.get()
            );
            assert_eq!(fs.inner.st.borrow().meta.ordered_bytes, 0);
        }
    }
}
