//! fs/btrfs/reflink.c: FICLONERANGE (btrfs_remap_file_range → btrfs_clone_files →
//! btrfs_clone), Linux 5.10–5.16. The destination range gets file extent items that refer
//! to the source's extents (the same disk bytes, one more reference each); the extent
//! stays allocated while any file extent item refers to it.

use super::ctree::Btrfs;
use super::ctree_btree::{inode_update, key_type, size, tree_id, Key, TreeOp};
use super::policy::{LogPatch, Mutant};
use super::state::*;
use crate::vfs::op::CLONE_BLOCK;
use crate::vfs::OpError;

/// A clone request as the model runs it: source and destination inode and offset, the
/// length asked for and the block-rounded length btrfs_clone works on.
#[derive(Clone, Copy, Debug)]
struct CloneRange {
    src: Ino,
    src_off: u64,
    dst: Ino,
    dst_off: u64,
    /// `olen`: what the caller asked for (i_size grows to dst_off + olen at most).
    olen: u64,
    /// `len` of btrfs_clone_files: olen, or rounded up to the block when the source range
    /// ends at an unaligned EOF.
    len: u64,
}

impl Btrfs {
    /// btrfs_remap_file_range without REMAP_FILE_DEDUP (reflink.c@v5.10..v5.16): both
    /// inodes locked (lock_two_nondirectories, or inode_lock once for one file; from 5.13
    /// with BTRFS_ILOCK_MMAP, 8d9b4a162a37), btrfs_remap_file_range_prep writes both files'
    /// dirty pages back and waits for their ordered extents, generic_remap_checks refuses
    /// bad ranges (EINVAL), then btrfs_clone_files: btrfs_cont_expand when the destination
    /// starts past its EOF, and btrfs_clone. Simplification: one transaction for the whole
    /// range (the kernel starts one per source extent in btrfs_punch_hole_range /
    /// btrfs_replace_file_extents and ends it in clone_finish_inode_update, so a commit can
    /// fall between two cloned extents).
    pub(super) async fn clone_range(
        &self,
        (src, src_off): (&str, u64),
        (dst, dst_off): (&str, u64),
        olen: u64,
    ) -> Result<(), OpError> {
        let (s, d) = (self.resolve(src)?, self.resolve(dst)?);
        for (ino, p) in [(s, src), (d, dst)] {
            if self.inner.st.borrow().inodes[&ino].is_dir {
                return Err(OpError(format!("is a directory: {p} (EISDIR)")));
            }
        }
        let mmap = self.log_patch(LogPatch::IMmapLock);
        // lock_two_nondirectories: in a fixed order (the model: lower inode number first).
        let (first, second) = (s.min(d), s.max(d));
        let _l1 = self.lock_inode_flags(first, mmap).await;
        let _l2 = if second != first {
            Some(self.lock_inode_flags(second, mmap).await)
        } else {
            None
        };
        // btrfs_remap_file_range_prep: filemap_flush + btrfs_wait_ordered_range on both.
        self.writeback(s).await;
        if d != s {
            self.writeback(d).await;
        }
        let r = self.remap_checks((src, s, src_off), (dst, d, dst_off), olen)?;
        let dst_size = self.inner.st.borrow().inodes[&d].disk_size;
        // btrfs_clone_files: "if (destoff > inode->i_size) btrfs_cont_expand(...)" (one
        // transaction of its own, as a growing truncate's).
        if r.dst_off > dst_size {
            let th = self.start_transaction_items(1).await?;
            let cpu = {
                let mut st = self.st_mut();
                let mut ops = vec![inode_update(d)];
                self.cont_expand(&mut st, d, (dst_size, r.dst_off), th.id, &mut ops);
                Self::tree_ops(&mut st, &self.inner.costs, th.id, &ops)
            };
            self.run_tree_work(cpu).await;
            Self::set_inode_last_trans(&mut self.st_mut(), d, th.id);
            self.end(th);
        }
        self.btrfs_clone(r).await
    }

    /// generic_remap_checks (fs/read_write.c@v5.10; fs/remap_range.c from 5.15) for
    /// FICLONERANGE, which does not pass REMAP_FILE_CAN_SHORTEN: a source range starting at
    /// or past its EOF, or ending past it, is EINVAL; a length that is not block aligned
    /// unless the range ends at the source's EOF is EINVAL; overlapping ranges of one inode
    /// (also through two names of it) are EINVAL; and the EOF block of an unaligned source
    /// may not land inside the destination (the protection btrfs_clone_files@v5.10's
    /// comment credits generic_remap_file_range_prep with).
    fn remap_checks(
        &self,
        (src, s, src_off): (&str, Ino, u64),
        (dst, d, dst_off): (&str, Ino, u64),
        olen: u64,
    ) -> Result<CloneRange, OpError> {
        let st = self.inner.st.borrow();
        let (ssize, dsize) = (st.inodes[&s].disk_size, st.inodes[&d].disk_size);
        let einval = |m: String| Err(OpError(format!("{m} (EINVAL: generic_remap_checks)")));
        if src_off >= ssize || src_off + olen > ssize {
            return einval(format!(
                "expected a source range inside {src}'s {ssize} bytes, got [{src_off}, {})",
                src_off + olen
            ));
        }
        let at_eof = src_off + olen == ssize;
        if !at_eof && olen % CLONE_BLOCK != 0 {
            return einval(format!(
                "expected a LEN aligned to the {CLONE_BLOCK}-byte block unless the range ends at {src}'s EOF ({ssize}), got {olen}"
            ));
        }
        let len = if at_eof {
            ssize.next_multiple_of(CLONE_BLOCK) - src_off
        } else {
            olen
        };
        if s == d && dst_off + len > src_off && dst_off < src_off + len {
            return einval(format!(
                "expected ranges of one inode that do not overlap ({src} and {dst}), got [{src_off}, {}) and [{dst_off}, {})",
                src_off + len,
                dst_off + len
            ));
        }
        if at_eof && ssize % CLONE_BLOCK != 0 && dst_off + len < dsize {
            return einval(format!(
                "expected the unaligned EOF block of {src} ({ssize} bytes) at or past {dst}'s EOF ({dsize}), got a range ending at {}",
                dst_off + len
            ));
        }
        Ok(CloneRange {
            src: s,
            src_off,
            dst: d,
            dst_off,
            olen,
            len,
        })
    }

    /// btrfs_clone (reflink.c@v5.10..v5.16): for each source extent item over the range,
    /// btrfs_punch_hole_range (file.c@v5.10; btrfs_replace_file_extents from 5.11) drops
    /// the destination's extents from the end of the previous one (so a source gap before
    /// the item, NO_HOLES, is dropped with it and gets no hole) and inserts a copy of the
    /// source item (same disk bytes and generation, data offset moved; a hole item is
    /// copied as a hole) plus a delayed ref adding a reference to the extent
    /// (btrfs_inc_extent_ref). No extent map is set up for the new items, so the function
    /// sets BTRFS_INODE_NEEDS_FULL_SYNC ("If we were cloning, force the next fsync to be a
    /// full one", `if (clone_info)`): the next fsync copies every item changed in the
    /// transaction and, with NO_HOLES, logs the gaps (btrfs_log_holes).
    /// clone_finish_inode_update grows i_size to the end of what was cloned (not past
    /// dst_off + olen) and updates the inode item. A gap at the range's end is punched
    /// without clone info (`tail_gap`). The source inode is not updated (its
    /// last_reflink_trans, set in 5.10–5.16 only for new extents, guards checksum items,
    /// which the model does not log apart from their extent).
    async fn btrfs_clone(&self, r: CloneRange) -> Result<(), OpError> {
        // btrfs_punch_hole_range's rsv_count: 1 + the inserted item and the inode (3).
        let th = self.start_transaction_items(3).await?;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let (dst_start, dst_end) = (r.dst_off, r.dst_off + r.len);
            let no_holes = self.inner.no_holes.get();
            let mut pieces = clone_pieces(&st.inodes[&r.src], &r, no_holes);
            let tail = pieces
                .last()
                .filter(|p| p.ext.is_none())
                .map(|p| (p.offset, p.offset + p.len));
            if tail.is_some() {
                pieces.pop();
            }
            let copied = !pieces.is_empty();
            let mut ops = vec![inode_update(r.dst)];
            ops.extend(super::file::drop_range_ops(&st, r.dst, dst_start, dst_end));
            self.drop_extents(&mut st, r.dst, dst_start, dst_end, t);
            let (refs, cloned_end) = self.insert_clone_pieces(&mut st, r.dst, pieces, t, &mut ops);
            st.trans.get_mut(&t).unwrap().delayed_refs += refs;
            Self::add_ref_heads(&mut st, t, refs);
            st.shared_data = true;
            // clone_finish_inode_update after the last copied item.
            let olen_end = r.dst_off + r.olen;
            let i_size = st.inodes[&r.dst].disk_size.max(cloned_end.min(olen_end));
            let mut full_sync = copied && !self.mutant(Mutant::CloneNoFullSync);
            if let Some(gap) = tail {
                full_sync |= self.tail_gap(&mut st, r.dst, gap, i_size, t, &mut ops);
            }
            let end = if tail.is_some() { dst_end } else { cloned_end };
            self.finish_clone_update(&mut st, r.dst, end.min(olen_end), full_sync, t);
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), r.dst, t);
        self.end(th);
        Ok(())
    }

    /// The source gap [a, b) at the end of the clone range: btrfs_clone's `if
    /// (last_dest_end < destoff + len)` calls btrfs_punch_hole_range with no clone info,
    /// whose fill_holes makes a hole (extent map on the modified list; an item unless
    /// NO_HOLES) only below the destination's i_size rounded up to the block
    /// (`cur_offset < ino_size`, file.c@v5.10); past it nothing, and no full sync. From
    /// 3660d0bcdb82 (5.12, `clone-hole-full-sync`) a gap starting at or past i_size sets
    /// NEEDS_FULL_SYNC first, so the fsync logs the hole (btrfs_log_holes). Returns whether
    /// the flag is to be set.
    fn tail_gap(
        &self,
        st: &mut FsState,
        dst: Ino,
        (a, b): (u64, u64),
        i_size: u64,
        t: TransId,
        ops: &mut Vec<TreeOp>,
    ) -> bool {
        let full_sync = a >= i_size && self.log_patch(LogPatch::CloneHoleFullSync);
        if a < i_size.next_multiple_of(CLONE_BLOCK) {
            Self::insert_hole(st, dst, t, a, b);
            if !self.inner.no_holes.get() {
                let k = Key::new(dst, key_type::EXTENT_DATA, a);
                ops.push(TreeOp::Insert(tree_id::FS, k, size::FILE_EXTENT));
            }
        }
        full_sync
    }

    /// clone_finish_inode_update (reflink.c@v5.10..v5.16): i_size grown to `end`, the
    /// inode item updated; NEEDS_FULL_SYNC set when `full_sync`.
    fn finish_clone_update(
        &self,
        st: &mut FsState,
        dst: Ino,
        end: u64,
        full_sync: bool,
        t: TransId,
    ) {
        let keep = st.keep_history;
        let i = st.inodes.get_mut(&dst).unwrap();
        if end > i.disk_size {
            i.disk_size = end;
            if keep {
                i.size_hist.push((t, end));
            }
        }
        if full_sync {
            i.needs_full_sync = true;
            i.full_sync_needless = false;
        }
        i.item_trans = t;
    }

    /// Inserts the destination's copies of source items (`clone_pieces` without the tail
    /// gap): they hold no allocation of their own (the source's pieces stay where they
    /// are; see `release_pieces`); a gap before an item is left without a hole (dropped by
    /// the item's btrfs_punch_hole_range, which has clone info). Returns how many data
    /// references were added and the end of the last copy (the range's start if none).
    fn insert_clone_pieces(
        &self,
        st: &mut FsState,
        dst: Ino,
        pieces: Vec<ClonePiece>,
        t: TransId,
        ops: &mut Vec<TreeOp>,
    ) -> (u64, u64) {
        let mut refs = 0;
        let mut end = 0;
        for p in pieces {
            let Some(e) = p.ext else {
                continue;
            };
            if !e.hole {
                refs += 1;
            }
            end = p.offset + p.len;
            let k = Key::new(dst, key_type::EXTENT_DATA, p.offset);
            ops.push(TreeOp::Insert(tree_id::FS, k, size::FILE_EXTENT));
            let id = st.next_extent;
            st.next_extent += 1;
            let i = st.inodes.get_mut(&dst).unwrap();
            i.extents.push(Extent {
                id,
                pieces: Vec::new(),
                item_trans: t,
                ..e
            });
        }
        let i = st.inodes.get_mut(&dst).unwrap();
        i.extents.sort_by_key(|e| e.offset);
        (refs, end)
    }
}

/// One part of the destination range: a copy of (part of) a source extent placed at
/// `offset`, or a gap of the source (`ext` None).
struct ClonePiece {
    offset: u64,
    len: u64,
    ext: Option<Extent>,
}

/// The destination's new extents for `r`, in offset order: each source file extent item
/// (data, prealloc, or a hole item: not with NO_HOLES, whose holes are extent maps only)
/// crossing the source range, cut to it ("Subtract range a / b" of btrfs_clone) and moved
/// to the destination offset, keeping its disk bytes (data token, data offset moved by the
/// cut) and its generation (the copied item's); the gaps between them.
fn clone_pieces(src: &Inode, r: &CloneRange, no_holes: bool) -> Vec<ClonePiece> {
    let (start, end) = (r.src_off, r.src_off + r.len);
    let mut out = Vec::new();
    let mut cur = start;
    let items = src.extents.iter().filter(|e| !(e.hole && no_holes));
    for e in items.filter(|e| e.end() > start && e.offset < end) {
        let (a, b) = (e.offset.max(start), e.end().min(end));
        if a > cur {
            out.push(gap(r, cur, a));
        }
        let mut c = e.clone();
        c.offset = r.dst_off + (a - start);
        c.len = b - a;
        c.data_offset = e.data_offset + (a - e.offset);
        out.push(ClonePiece {
            offset: c.offset,
            len: c.len,
            ext: Some(c),
        });
        cur = b;
    }
    if cur < end {
        out.push(gap(r, cur, end));
    }
    out
}

/// The destination piece of the source gap [a, b).
fn gap(r: &CloneRange, a: u64, b: u64) -> ClonePiece {
    ClonePiece {
        offset: r.dst_off + (a - r.src_off),
        len: b - a,
        ext: None,
    }
}
