//! Namespace operations, buffered writes, writeback and reads (fs/ext4/inode.c, namei.c,
//! ialloc.c, page-io.c, mm/readahead.c @v2.6.37; fs/ext3/inode.c for ext3).

use super::{Ext4, Ino, Inode, Variant, MAX_BIO, READAHEAD};
use crate::device::{IoClass, Request};
use crate::jbd2::{Journal, BLOCK};
use crate::vfs::OpError;

/// Credits of a namespace operation: EXT4_DATA_TRANS_BLOCKS (8 + 6 − 2 = 12 without quota)
/// + EXT4_INDEX_EXTRA_TRANS_BLOCKS (8) + 3 (fs/ext4/namei.c:ext4_create@v2.6.37).
const NAMESPACE_CREDITS: u64 = 23;
/// ext4_dirty_inode's handle: 2 credits (fs/ext4/inode.c@v2.6.37).
const DIRTY_INODE_CREDITS: u64 = 2;
/// A writeback allocation's handle (ext4_da_writepages_trans_blocks for one extent: a
/// bitmap, a group descriptor, the inode, an extent block, the superblock; guess 8).
const WRITEPAGES_CREDITS: u64 = 8;

/// What a rename moves: from (directory, name) to (directory, name), and the inode.
#[derive(Debug, PartialEq, Eq)]
struct RenamePlan {
    sp: Ino,
    sname: String,
    dp: Ino,
    dname: String,
    ino: Ino,
}

impl Ext4 {
    /// The parent directory and name of `path`, which must not exist yet.
    fn free_name(&self, path: &str) -> Result<(Ino, String), OpError> {
        let (parent, name) = self.split(path)?;
        let taken = self
            .inner
            .st
            .borrow()
            .dentries
            .contains_key(&(parent, name.clone()));
        if taken {
            return Err(OpError(format!("file exists: {path}")));
        }
        Ok((parent, name))
    }

    /// ext4_create / ext4_mkdir: a new inode in its group, a directory entry.
    pub(super) async fn create(&self, path: &str, dir: bool) -> Result<(), OpError> {
        let (parent, name) = self.free_name(path)?;
        self.inner.h.cpu(self.inner.cfg.namespace_op).await;
        let j = &self.inner.journal;
        let h = j.start(NAMESPACE_CREDITS).await;
        let area = self.journal_area();
        {
            let mut st = self.inner.st.borrow_mut();
            let ino = st.next_ino;
            st.next_ino += 1;
            let dir_block = if dir {
                Ext4::alloc_blocks(&mut st, BLOCK, area)
            } else {
                0
            };
            st.inodes.insert(
                ino,
                Inode {
                    is_dir: dir,
                    nlink: if dir { 2 } else { 1 },
                    dir_block,
                    sync_tid: h.tid,
                    datasync_tid: h.tid,
                    ..Inode::default()
                },
            );
            st.dentries.insert((parent, name), ino);
            let p = st.inodes.get_mut(&parent).unwrap();
            p.sync_tid = h.tid;
            p.datasync_tid = h.tid;
            if dir {
                p.nlink += 1;
            }
            let pblock = p.dir_block;
            j.dirty_metadata(&h, Ext4::inode_bitmap(ino));
            j.dirty_metadata(&h, Ext4::itable_block(ino));
            j.dirty_metadata(&h, Ext4::gdt_block(ino / super::INODES_PER_GROUP));
            j.dirty_metadata(&h, pblock);
            j.dirty_metadata(&h, Ext4::itable_block(parent));
            if dir {
                j.dirty_metadata(&h, Ext4::block_bitmap(dir_block));
                j.dirty_metadata(&h, dir_block);
            }
        }
        j.stop(h).await;
        Ok(())
    }

    /// A buffered write appended at the end of the file: the page-cache copy, then
    /// ext4_dirty_inode for the new i_size (ext4); ext3 allocates the blocks now and files
    /// the dirty data buffers on the transaction (ext3_ordered_write_end → journal_dirty_data).
    pub(super) async fn write(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        self.check_space(bytes)?;
        let pages = bytes.div_ceil(BLOCK).max(1);
        self.inner.h.cpu(self.inner.cfg.per_page * pages).await;
        let j = &self.inner.journal;
        match self.inner.cfg.variant {
            Variant::Ext4 => {
                let h = j.start(DIRTY_INODE_CREDITS).await;
                j.dirty_metadata(&h, Ext4::itable_block(ino));
                let now = self.inner.h.now();
                {
                    let mut st = self.inner.st.borrow_mut();
                    let i = st.inodes.get_mut(&ino).unwrap();
                    if i.dirty == 0 {
                        i.dirtied_at = now;
                    }
                    i.dirty += bytes;
                    i.size += bytes;
                    i.cached = i.size;
                    i.sync_tid = h.tid;
                }
                j.stop(h).await;
            }
            Variant::Ext3 => {
                let h = j.start(WRITEPAGES_CREDITS).await;
                let area = self.journal_area();
                let now = self.inner.h.now();
                let (dev_off, token) = {
                    let mut st = self.inner.st.borrow_mut();
                    let b = Ext4::alloc_blocks(&mut st, bytes, area);
                    let token = st.next_token;
                    st.next_token += 1;
                    let i = st.inodes.get_mut(&ino).unwrap();
                    if i.dirty == 0 {
                        i.dirtied_at = now;
                    }
                    let fo = i.size;
                    i.extents.push((fo, b * BLOCK, bytes, token));
                    // An indirect block per 1024 blocks beyond the 12 direct ones.
                    let before = fo / BLOCK;
                    let after = (fo + bytes).div_ceil(BLOCK);
                    let crosses = after > 12 && (before <= 12 || before / 1024 != after / 1024);
                    i.dirty += bytes;
                    i.size += bytes;
                    i.cached = i.size;
                    i.sync_tid = h.tid;
                    i.datasync_tid = h.tid;
                    j.dirty_metadata(&h, Ext4::block_bitmap(b));
                    j.dirty_metadata(&h, Ext4::gdt_block(b / super::BLOCKS_PER_GROUP));
                    j.dirty_metadata(&h, Ext4::itable_block(ino));
                    if crosses {
                        j.dirty_metadata(&h, b.saturating_sub(1));
                    }
                    (b * BLOCK, token)
                };
                j.file_data(&h, ino, dev_off, bytes, token);
                j.stop(h).await;
            }
        }
        self.inner.io.dirtied(bytes);
        self.balance_dirty_pages(ino).await;
        Ok(())
    }

    /// Writes the inode's dirty data: ext4_da_writepages (allocate in a handle, file the
    /// inode as ordered, submit bios of up to 512 KiB) or ext3's block_write_full_page (one
    /// bio per 4 KiB buffer). `sync` = WB_SYNC_ALL: WRITE_SYNC_PLUG from the caller's I/O
    /// context and a wait (filemap_write_and_wait); else WRITE, not waited.
    pub(super) async fn writeback_inode(&self, ino: Ino, sync: bool) {
        self.writeback_inode_upto(ino, u64::MAX, sync).await;
    }

    /// As `writeback_inode`, the oldest `max` dirty bytes at most (wbc.nr_to_write);
    /// returns the bytes submitted.
    pub(super) async fn writeback_inode_upto(&self, ino: Ino, max: u64, sync: bool) -> u64 {
        let inner = &self.inner;
        let ioc = Journal::ioc(&inner.h);
        let (class, noidle) = if sync {
            (IoClass::Sync, true)
        } else {
            (IoClass::Async, false)
        };
        // (bytes taken, file offset of the oldest of them)
        let (bytes, from) = {
            let mut st = inner.st.borrow_mut();
            match st.inodes.get_mut(&ino) {
                Some(i) => {
                    let from = i.size - i.dirty.min(i.size);
                    let n = i.dirty.min(max);
                    i.dirty -= n;
                    (n, from)
                }
                None => (0, 0),
            }
        };
        let mut reqs = Vec::new();
        let mut submitted = 0;
        match inner.cfg.variant {
            Variant::Ext4 if bytes > 0 => {
                let j = &inner.journal;
                let h = j.start(WRITEPAGES_CREDITS).await;
                let area = self.journal_area();
                let alloc = {
                    let mut st = inner.st.borrow_mut();
                    let b = Ext4::alloc_blocks(&mut st, bytes, area);
                    let token = st.next_token;
                    st.next_token += 1;
                    st.inodes.get_mut(&ino).map(|i| {
                        let fo = from.min(i.size);
                        i.extents.push((fo, b * BLOCK, bytes, token));
                        i.sync_tid = h.tid;
                        i.datasync_tid = h.tid;
                        (b, token)
                    })
                };
                let Some((b, token)) = alloc else {
                    j.stop(h).await;
                    return 0;
                };
                submitted = bytes;
                j.dirty_metadata(&h, Ext4::block_bitmap(b));
                j.dirty_metadata(&h, Ext4::gdt_block(b / super::BLOCKS_PER_GROUP));
                j.dirty_metadata(&h, Ext4::itable_block(ino));
                if !inner.cfg.data_writeback {
                    j.file_inode(&h, ino);
                }
                j.stop(h).await;
                let mut o = 0;
                while o < bytes {
                    let l = MAX_BIO.min(bytes - o);
                    reqs.push(
                        Request::write(b * BLOCK + o, l.next_multiple_of(BLOCK))
                            .with_token(token)
                            .with_class(class)
                            .with_hints(noidle, false)
                            .with_ioc(ioc),
                    );
                    o += l;
                }
            }
            Variant::Ext3 => {
                for b in inner.journal.take_data_upto(ino, max) {
                    submitted += b.1;
                    reqs.extend(crate::jbd2::buffer_writes(b, class, (noidle, false), ioc));
                }
            }
            _ => {}
        }
        if !reqs.is_empty() {
            inner.io.start(ino);
            inner.io.cleaned(submitted);
            if sync {
                crate::jbd2::submit_and_wait(&inner.dev, reqs).await;
                inner.io.written(submitted);
                inner.io.end(ino);
            } else {
                let (dev, io) = (inner.dev.clone(), inner.io.clone());
                inner.h.spawn_daemon("writeback-io", async move {
                    crate::jbd2::submit_and_wait(&dev, reqs).await;
                    io.written(submitted);
                    io.end(ino);
                });
            }
        }
        if sync {
            // filemap_fdatawait: also the writeback others started.
            inner.io.wait(ino).await;
        }
        submitted
    }

    /// A sequential buffered read of `bytes` from the file's read position (wrapping to the
    /// start at the end, with the start evicted: the reader's file is larger than memory).
    /// Missing pages come in 128 KiB readahead windows (VM_MAX_READAHEAD), one synchronous
    /// READ from the reader's I/O context each; async readahead pipelining is not modelled.
    pub(super) async fn read(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        let inner = &self.inner;
        let ioc = Journal::ioc(&inner.h);
        let (mut pos, size) = {
            let mut st = inner.st.borrow_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            if i.is_dir || i.size == 0 {
                return Err(OpError(format!("nothing to read: {path}")));
            }
            if i.read_pos >= i.size {
                i.read_pos = 0;
                i.cached = 0;
            }
            (i.read_pos, i.size)
        };
        let end = (pos + bytes).min(size);
        while pos < end {
            let (cached, dev_off) = {
                let st = inner.st.borrow();
                let i = &st.inodes[&ino];
                let dev = i
                    .extents
                    .iter()
                    .find(|e| e.0 <= pos && pos < e.0 + e.2)
                    .map(|e| e.1 + (pos - e.0));
                (i.cached, dev)
            };
            if pos < cached {
                pos = cached.min(end);
                continue;
            }
            let window = (pos / READAHEAD + 1) * READAHEAD;
            let len = window.min(size) - pos;
            if let Some(off) = dev_off {
                let t0 = inner.h.now();
                inner
                    .dev
                    .submit(
                        Request::read(off, len.next_multiple_of(BLOCK))
                            .with_class(IoClass::Sync)
                            .with_ioc(ioc),
                    )
                    .await;
                let (bytes, ns) = inner.reads.get();
                inner.reads.set((bytes + len, ns + (inner.h.now() - t0)));
            }
            let mut st = inner.st.borrow_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            i.cached = i.cached.max(pos + len);
            pos += len;
        }
        let pages = bytes.div_ceil(BLOCK).max(1);
        inner.h.cpu(inner.cfg.per_page * pages).await;
        inner.st.borrow_mut().inodes.get_mut(&ino).unwrap().read_pos = end;
        Ok(())
    }

    /// Setup: a file of `bytes` already on disk, committed and not cached (as a benchmark's
    /// layout phase followed by dropping caches leaves it).
    pub(super) fn populate(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        self.check_space(bytes)?;
        let (parent, name) = self.free_name(path)?;
        let area = self.journal_area();
        let mut st = self.inner.st.borrow_mut();
        let ino = st.next_ino;
        st.next_ino += 1;
        let b = Ext4::alloc_blocks(&mut st, bytes, area);
        st.inodes.insert(
            ino,
            Inode {
                nlink: 1,
                size: bytes,
                extents: vec![(0, b * BLOCK, bytes, 0)],
                ..Inode::default()
            },
        );
        st.dentries.insert((parent, name), ino);
        Ok(())
    }

    /// ext4_setattr / ext4_dirty_inode (also setxattr here: the inode and its in-inode
    /// xattr block).
    pub(super) async fn setattr(&self, path: &str) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        let j = &self.inner.journal;
        let h = j.start(DIRTY_INODE_CREDITS).await;
        j.dirty_metadata(&h, Ext4::itable_block(ino));
        self.inner
            .st
            .borrow_mut()
            .inodes
            .get_mut(&ino)
            .unwrap()
            .sync_tid = h.tid;
        j.stop(h).await;
        Ok(())
    }

    /// ext4_link: a second name.
    pub(super) async fn link(&self, from: &str, to: &str) -> Result<(), OpError> {
        let ino = self.resolve(from)?;
        let (parent, name) = self.free_name(to)?;
        self.inner.h.cpu(self.inner.cfg.namespace_op).await;
        let j = &self.inner.journal;
        let h = j.start(NAMESPACE_CREDITS).await;
        {
            let mut st = self.inner.st.borrow_mut();
            st.dentries.insert((parent, name), ino);
            let i = st.inodes.get_mut(&ino).unwrap();
            i.nlink += 1;
            i.sync_tid = h.tid;
            let p = st.inodes.get_mut(&parent).unwrap();
            p.sync_tid = h.tid;
            let pb = p.dir_block;
            j.dirty_metadata(&h, pb);
            j.dirty_metadata(&h, Ext4::itable_block(ino));
            j.dirty_metadata(&h, Ext4::itable_block(parent));
        }
        j.stop(h).await;
        Ok(())
    }

    /// ext4_rename: the entry moves (a target name is replaced and its inode dropped).
    pub(super) async fn rename(&self, from: &str, to: &str) -> Result<(), OpError> {
        let Some(plan) = self.rename_plan(from, to)? else {
            // Both names are links of one inode: rename(2) does nothing and succeeds.
            return Ok(());
        };
        self.inner.h.cpu(self.inner.cfg.namespace_op).await;
        let j = &self.inner.journal;
        let h = j.start(2 * NAMESPACE_CREDITS).await;
        // Other tasks ran while this one waited: the names must still mean the same.
        match self.rename_plan(from, to) {
            Ok(Some(now)) if now == plan => {}
            Ok(_) => {
                j.stop(h).await;
                return Err(OpError(format!(
                    "{from} or {to} changed while rename waited"
                )));
            }
            Err(e) => {
                j.stop(h).await;
                return Err(e);
            }
        }
        let RenamePlan {
            sp,
            sname,
            dp,
            dname,
            ino,
        } = plan;
        {
            let mut st = self.inner.st.borrow_mut();
            st.dentries.remove(&(sp, sname));
            if let Some(old) = st.dentries.insert((dp, dname), ino) {
                if old != ino {
                    let d = Ext4::drop_link(&mut st, old);
                    if self.inner.cfg.variant == Variant::Ext4 {
                        self.inner.io.dropped(d);
                    }
                }
            }
            for d in [sp, dp] {
                if let Some(p) = st.inodes.get_mut(&d) {
                    p.sync_tid = h.tid;
                    let pb = p.dir_block;
                    j.dirty_metadata(&h, pb);
                    j.dirty_metadata(&h, Ext4::itable_block(d));
                }
            }
            if let Some(i) = st.inodes.get_mut(&ino) {
                i.sync_tid = h.tid;
            }
            j.dirty_metadata(&h, Ext4::itable_block(ino));
        }
        j.stop(h).await;
        Ok(())
    }

    /// The inodes of the directories on `path`'s way from the root (the root first, `path`'s
    /// own inode left out).
    fn ancestors(&self, path: &str) -> Vec<Ino> {
        let st = self.inner.st.borrow();
        let dir = crate::vfs::split_path(path).map_or("", |(d, _)| d);
        let mut cur = super::ROOT_INO;
        let mut out = vec![cur];
        for part in dir.split('/').filter(|s| !s.is_empty()) {
            match st.dentries.get(&(cur, part.to_string())) {
                Some(&i) => {
                    cur = i;
                    out.push(i);
                }
                None => break,
            }
        }
        out
    }

    /// rename(2)'s checks, in the kernel's order (fs/namei.c:do_renameat2, vfs_rename,
    /// may_delete): what moves where, None when both names are links of one inode (nothing
    /// to do), or the error the kernel returns: EINVAL for a directory moved into its own
    /// subtree, ENOTEMPTY onto an ancestor of the source (`rename /d/f /d`) or a non-empty
    /// directory, EISDIR for a non-directory onto a directory, ENOTDIR the other way round.
    fn rename_plan(&self, from: &str, to: &str) -> Result<Option<RenamePlan>, OpError> {
        let (sp, sname) = self.split(from)?;
        let (dp, dname) = self.split(to)?;
        let ino = self.resolve(from)?;
        if self.ancestors(to).contains(&ino) {
            return Err(OpError(format!(
                "cannot move a directory into itself: {from} -> {to}"
            )));
        }
        let st = self.inner.st.borrow();
        if let Some(&old) = st.dentries.get(&(dp, dname.clone())) {
            if self.ancestors(from).contains(&old) {
                return Err(OpError(format!("directory not empty: {to}")));
            }
            if old == ino {
                return Ok(None);
            }
            let is_dir = |i: Ino| st.inodes.get(&i).is_some_and(|n| n.is_dir);
            match (is_dir(ino), is_dir(old)) {
                (false, true) => return Err(OpError(format!("is a directory: {to}"))),
                (true, false) => return Err(OpError(format!("not a directory: {to}"))),
                (true, true) => {
                    let empty = st
                        .dentries
                        .range((old, String::new())..)
                        .next()
                        .is_none_or(|((p, _), _)| *p != old);
                    if !empty {
                        return Err(OpError(format!("directory not empty: {to}")));
                    }
                }
                (false, false) => {}
            }
        }
        Ok(Some(RenamePlan {
            sp,
            sname,
            dp,
            dname,
            ino,
        }))
    }

    /// Drops one link; a last link frees the inode. Returns the dirty bytes it held (ext4's
    /// delayed data, dropped unwritten).
    fn drop_link(st: &mut super::ExtState, ino: Ino) -> u64 {
        if let Some(i) = st.inodes.get_mut(&ino) {
            i.nlink = i.nlink.saturating_sub(1);
            if i.nlink == 0 || (i.is_dir && i.nlink <= 1) {
                return st.inodes.remove(&ino).map_or(0, |i| i.dirty);
            }
        }
        0
    }

    /// ext4_unlink / ext4_rmdir: the entry goes; a last link frees the inode and its
    /// blocks (bitmaps, group descriptor).
    pub(super) async fn remove(&self, path: &str, dir: bool) -> Result<(), OpError> {
        let (parent, name) = self.split(path)?;
        let ino = self.resolve(path)?;
        {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            if i.is_dir != dir {
                return Err(OpError(format!(
                    "{}: {path}",
                    if dir {
                        "not a directory"
                    } else {
                        "is a directory"
                    }
                )));
            }
            if dir
                && st
                    .dentries
                    .range((ino, String::new())..)
                    .next()
                    .is_some_and(|(k, _)| k.0 == ino)
            {
                return Err(OpError(format!("directory not empty: {path}")));
            }
        }
        self.inner.h.cpu(self.inner.cfg.namespace_op).await;
        let j = &self.inner.journal;
        let h = j.start(NAMESPACE_CREDITS).await;
        {
            let mut st = self.inner.st.borrow_mut();
            st.dentries.remove(&(parent, name));
            let first = st.inodes[&ino].extents.first().map(|e| e.1 / BLOCK);
            let p = st.inodes.get_mut(&parent).unwrap();
            p.sync_tid = h.tid;
            if dir {
                p.nlink -= 1;
            }
            let pb = p.dir_block;
            j.dirty_metadata(&h, pb);
            j.dirty_metadata(&h, Ext4::itable_block(parent));
            j.dirty_metadata(&h, Ext4::itable_block(ino));
            j.dirty_metadata(&h, Ext4::inode_bitmap(ino));
            if let Some(b) = first {
                j.dirty_metadata(&h, Ext4::block_bitmap(b));
                j.dirty_metadata(&h, Ext4::gdt_block(b / super::BLOCKS_PER_GROUP));
            }
            let dropped = if dir {
                st.inodes.remove(&ino);
                0
            } else {
                Ext4::drop_link(&mut st, ino)
            };
            if self.inner.cfg.variant == Variant::Ext4 {
                self.inner.io.dropped(dropped);
            }
        }
        // Dirty data of a deleted file is dropped, not written.
        let gone: u64 = j.take_data(ino).iter().map(|b| b.1).sum();
        self.inner.io.dropped(gone);
        j.stop(h).await;
        Ok(())
    }

    /// ext4_setattr with a size: the inode, and the block bitmap when blocks are freed.
    pub(super) async fn truncate(&self, path: &str, size: u64) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        let j = &self.inner.journal;
        let h = j.start(NAMESPACE_CREDITS).await;
        {
            let mut st = self.inner.st.borrow_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            let shrink = size < i.size;
            if shrink {
                i.extents.retain(|e| e.0 < size);
                if self.inner.cfg.variant == Variant::Ext4 {
                    self.inner.io.dropped(i.dirty - i.dirty.min(size));
                }
                i.dirty = i.dirty.min(size);
                i.cached = i.cached.min(size);
            }
            i.size = size;
            i.sync_tid = h.tid;
            i.datasync_tid = h.tid;
            let first = i.extents.first().map(|e| e.1 / BLOCK);
            j.dirty_metadata(&h, Ext4::itable_block(ino));
            if let (true, Some(b)) = (shrink, first) {
                j.dirty_metadata(&h, Ext4::block_bitmap(b));
            }
        }
        j.stop(h).await;
        Ok(())
    }
}
