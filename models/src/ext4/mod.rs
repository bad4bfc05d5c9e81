//! ext4 and ext3 (data=ordered) on the journal of `crate::jbd2`, as in Linux 2.6.36–2.6.39
//! (seed 003). Files mirror fs/ext4: `inode.rs` (namespace operations, buffered write,
//! ext4_da_writepages / ext3's block_write_full_page, reads with readahead), `fsync.rs`
//! (ext4_sync_file, ext3_sync_file), `super_.rs` (the flusher: bdi writeback of
//! fs/fs-writeback.c and sync_fs), `recovery.rs` (what a crash keeps: journal replay plus
//! the data on the platter; the S2 check).
//!
//! One model serves both: `fs = "ext4"` runs jbd2 with delayed allocation (data written at
//! writeback, the inode filed as ordered); `fs = "ext3"` runs jbd with blocks allocated at
//! write time and the dirty data buffers filed on the transaction, so kjournald writes them
//! at commit with the commit's write type (fs/jbd/commit.c@v2.6.37).

pub mod counters;
mod fsync;
mod inode;
mod recovery;
mod super_;

use crate::device::Device;
use crate::jbd2::{Flavor, InflightIo, Journal, JournalConfig, JournalPolicy, Tid, BLOCK};
use crate::vfs::metrics::{Metrics, OpLatency, Violation};
use crate::vfs::{Op, OpError};
use sim::{Handle, Nanos};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Inode number.
pub type Ino = u64;

/// The root directory's inode number (EXT4_ROOT_INO).
pub const ROOT_INO: Ino = 2;

/// Blocks per block group at 4 KiB blocks (8 × blocksize bits in one block bitmap).
const BLOCKS_PER_GROUP: u64 = 32_768;
/// Inodes per block group: mke2fs's default bytes-per-inode 16384 (mke2fs.conf@1.41)
/// → 32768 × 4096 / 16384.
const INODES_PER_GROUP: u64 = 8_192;
/// Inodes per inode-table block: 256-byte inodes (mke2fs.conf inode_size = 256).
const INODES_PER_BLOCK: u64 = BLOCK / 256;
/// Largest bio the queue accepts: BLK_DEF_MAX_SECTORS 1024 × 512 B (include/linux/blkdev.h@v2.6.37).
pub const MAX_BIO: u64 = 512 * 1024;
/// VM_MAX_READAHEAD: 128 KiB (include/linux/mm.h@v2.6.37).
pub const READAHEAD: u64 = 128 * 1024;

/// ext3 or ext4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// ext3: jbd, block allocation at write time, data=ordered through kjournald.
    Ext3,
    /// ext4: jbd2, delayed allocation.
    Ext4,
}

/// Mount-time parameters of an ext3/ext4 filesystem.
#[derive(Clone, Debug)]
pub struct ExtConfig {
    /// ext3 or ext4.
    pub variant: Variant,
    /// Filesystem size in bytes (guess: 1 TiB).
    pub fs_size: u64,
    /// Journal blocks (mke2fs default for ≥ 4 GiB: 32768 = 128 MiB,
    /// lib/ext2fs/mkjournal.c:ext2fs_default_journal_size@e2fsprogs-1.41).
    pub journal_blocks: u64,
    /// `commit=` (5 s default).
    pub commit_interval: Nanos,
    /// `barrier=` (ext4 on, ext3 off by default in 2.6.37: fs/ext4/super.c sets BARRIER,
    /// fs/ext3/super.c does not).
    pub barrier: bool,
    /// `data=writeback` (ext4 only): no ordered-data wait at commit.
    pub data_writeback: bool,
    /// The kernel's version-dependent journal behaviour.
    pub policy: JournalPolicy,
    /// CPU of entering and leaving the kernel.
    pub syscall: Nanos,
    /// CPU of a buffered write or read copy per 4 KiB page.
    pub per_page: Nanos,
    /// CPU of a namespace operation's own work.
    pub namespace_op: Nanos,
    /// dirty_writeback_centisecs: the flusher wakes every 5 s (mm/page-writeback.c@v2.6.37).
    pub writeback_interval: Nanos,
    /// dirty_expire_centisecs: data dirty for 30 s is written (mm/page-writeback.c@v2.6.37).
    pub dirty_expire: Nanos,
    /// (background, dirty) thresholds in bytes: dirty_background_ratio 10 % and
    /// vm_dirty_ratio 20 % of the dirtyable memory (mm/page-writeback.c:global_dirty_limits
    /// @v2.6.37); None = dirty throttling not modelled (the machine's memory not given).
    pub dirty_limits: Option<(u64, u64)>,
}

impl ExtConfig {
    /// The (background, dirty) thresholds of `memory` bytes of dirtyable memory.
    pub fn dirty_limits_of(memory: u64) -> (u64, u64) {
        (memory / 10, memory / 5)
    }
}

/// One inode.
#[derive(Clone, Debug, Default)]
pub struct Inode {
    /// Directory.
    pub is_dir: bool,
    /// i_size.
    pub size: u64,
    /// Links.
    pub nlink: u32,
    /// Bytes written into the page cache and not yet submitted.
    pub dirty: u64,
    /// When the oldest dirty byte was dirtied.
    pub dirtied_at: Nanos,
    /// Data on the device: (file offset, device offset, length, token), in file order.
    pub extents: Vec<(u64, u64, u64, u64)>,
    /// ext3: bytes allocated but not yet written (file offset of the first such byte).
    pub unwritten_from: Option<u64>,
    /// Bytes at the start of the file already in the page cache (reads hit below this).
    pub cached: u64,
    /// The sequential read position.
    pub read_pos: u64,
    /// i_sync_tid.
    pub sync_tid: Tid,
    /// i_datasync_tid.
    pub datasync_tid: Tid,
    /// The directory's block (directories only).
    pub dir_block: u64,
}

/// An fsync that returned, for the crash check: the inode, the tid its metadata needed,
/// and the data (device offset, token) it covered.
#[derive(Clone, Debug)]
pub struct Synced {
    /// Path at the time.
    pub path: String,
    /// Tid that had to be durable.
    pub tid: Tid,
    /// Data writes that had to be durable.
    pub data: Vec<(u64, u64)>,
    /// When the fsync returned.
    pub at: Nanos,
}

/// The filesystem's state.
#[derive(Clone, Debug, Default)]
pub struct ExtState {
    /// Inodes.
    pub inodes: BTreeMap<Ino, Inode>,
    /// Directory entries: (parent, name) → inode.
    pub dentries: BTreeMap<(Ino, String), Ino>,
    /// The next inode number.
    pub next_ino: Ino,
    /// The next free data block (a bump allocator after the first group's metadata).
    pub next_block: u64,
    /// The next content token for data.
    pub next_token: u64,
    /// fsyncs that returned (kept while history is on).
    pub synced: Vec<Synced>,
    /// Keep `synced` (off for long workload runs).
    pub keep_history: bool,
}

pub(crate) struct Inner {
    h: Handle,
    dev: Device,
    cfg: ExtConfig,
    journal: Journal,
    io: Rc<InflightIo>,
    st: RefCell<ExtState>,
    lat: RefCell<OpLatency>,
    record_latency: std::cell::Cell<bool>,
    violations: RefCell<Vec<Violation>>,
    /// Readers' device reads: (bytes, ns waited).
    reads: std::cell::Cell<(u64, u64)>,
    /// Background writeback (above dirty_background_ratio) is running.
    background: std::cell::Cell<bool>,
}

/// A simulated ext3/ext4 filesystem on one device; clone it into every task.
#[derive(Clone)]
pub struct Ext4 {
    inner: Rc<Inner>,
}

impl Ext4 {
    /// A freshly made filesystem with its journal on `dev`.
    pub fn new(h: &Handle, dev: Device, cfg: ExtConfig) -> Self {
        let io = InflightIo::new(h);
        // The journal sits in the middle block group (lib/ext2fs/mkjournal.c@e2fsprogs-1.41
        // picks the group at half the filesystem; unverified for every 1.41 release).
        let groups = (cfg.fs_size / BLOCK / BLOCKS_PER_GROUP).max(2);
        let jcfg = JournalConfig {
            flavor: match cfg.variant {
                Variant::Ext3 => Flavor::Jbd,
                Variant::Ext4 => Flavor::Jbd2,
            },
            offset: (groups / 2) * BLOCKS_PER_GROUP * BLOCK,
            blocks: cfg.journal_blocks,
            commit_interval: cfg.commit_interval,
            barrier: cfg.barrier,
            policy: cfg.policy,
            copy_per_block: 2 * sim::US,
        };
        let journal = Journal::new(h, dev.clone(), jcfg, io.clone());
        let mut st = ExtState {
            next_ino: 12,    // EXT4_GOOD_OLD_FIRST_INO: 11 is lost+found
            next_block: 600, // after group 0's superblock, GDT, bitmaps and inode table
            next_token: 1,
            keep_history: true,
            ..ExtState::default()
        };
        let root_block = st.next_block;
        st.next_block += 1;
        st.inodes.insert(
            ROOT_INO,
            Inode {
                is_dir: true,
                nlink: 2,
                dir_block: root_block,
                ..Inode::default()
            },
        );
        Ext4 {
            inner: Rc::new(Inner {
                h: h.clone(),
                dev,
                journal,
                io,
                st: RefCell::new(st),
                lat: RefCell::new(OpLatency::default()),
                record_latency: std::cell::Cell::new(true),
                violations: RefCell::new(Vec::new()),
                reads: std::cell::Cell::new((0, 0)),
                background: std::cell::Cell::new(false),
                cfg,
            }),
        }
    }

    /// The journal.
    pub fn journal(&self) -> &Journal {
        &self.inner.journal
    }

    /// A copy of the state.
    pub fn state(&self) -> ExtState {
        self.inner.st.borrow().clone()
    }

    /// The inode table block of `ino` (group layout: bitmaps, then the table).
    fn itable_block(ino: Ino) -> u64 {
        let g = ino / INODES_PER_GROUP;
        g * BLOCKS_PER_GROUP + 4 + (ino % INODES_PER_GROUP) / INODES_PER_BLOCK
    }

    /// The inode bitmap block of `ino`'s group.
    fn inode_bitmap(ino: Ino) -> u64 {
        (ino / INODES_PER_GROUP) * BLOCKS_PER_GROUP + 3
    }

    /// The block bitmap block of `block`'s group.
    fn block_bitmap(block: u64) -> u64 {
        (block / BLOCKS_PER_GROUP) * BLOCKS_PER_GROUP + 2
    }

    /// The group descriptor block (GDT, block 1: 128 descriptors of 32 B per block).
    fn gdt_block(group: u64) -> u64 {
        1 + group / 128
    }

    /// Allocates `bytes` of data blocks contiguously (mballoc's goal: right after the
    /// previous allocation); returns the first block.
    fn alloc_blocks(st: &mut ExtState, bytes: u64, journal_area: (u64, u64)) -> u64 {
        let n = bytes.div_ceil(BLOCK).max(1);
        let mut b = st.next_block;
        let (js, je) = journal_area;
        if b + n > js && b < je {
            b = je;
        }
        // Skip each group's own metadata (bitmaps and inode table at its start).
        let in_group = b % BLOCKS_PER_GROUP;
        let meta = 4 + INODES_PER_GROUP / INODES_PER_BLOCK;
        if in_group < meta {
            b += meta - in_group;
        }
        st.next_block = b + n;
        b
    }

    /// ENOSPC when `bytes` more data (plus ext4's delayed-allocation reservations) would not
    /// fit in the filesystem: blocks are never reused by the model's bump allocator, so this
    /// counts every block handed out (ext4_da_reserve_space / ext3_new_blocks fail the same
    /// way on a full filesystem).
    fn check_space(&self, bytes: u64) -> Result<(), OpError> {
        let used = self.inner.st.borrow().next_block * BLOCK;
        let delalloc = match self.inner.cfg.variant {
            Variant::Ext4 => self.inner.io.dirty(),
            Variant::Ext3 => 0,
        };
        if used
            .saturating_add(delalloc)
            .saturating_add(bytes.next_multiple_of(BLOCK))
            > self.inner.cfg.fs_size
        {
            return Err(OpError(format!(
                "no space left on device: {} bytes more on a {}-byte filesystem ({} used)",
                bytes,
                self.inner.cfg.fs_size,
                used + delalloc
            )));
        }
        Ok(())
    }

    fn journal_area(&self) -> (u64, u64) {
        let c = self.inner.journal.config();
        (c.offset / BLOCK, c.offset / BLOCK + c.blocks)
    }

    /// Starts kjournald2, its commit timer and the flusher (at mount).
    pub fn start_daemons(&self) {
        self.inner.journal.spawn_daemons();
        self.spawn_flusher();
    }

    /// The journal's daemons run from mount with the `commit=` interval; nothing more to
    /// start.
    pub fn spawn_committer(&self, _h: &Handle, _interval: Nanos) {}

    /// Turns per-operation latency histograms on or off.
    pub fn set_latency(&self, on: bool) {
        self.inner.record_latency.set(on);
    }

    /// Keeps or drops the fsync history crash checks need.
    pub fn set_history(&self, keep: bool) {
        let mut st = self.inner.st.borrow_mut();
        st.keep_history = keep;
        if !keep {
            st.synced.clear();
        }
    }

    /// Counters, with the journal's under `ext4.*`.
    pub fn metrics(&self) -> Metrics {
        counters::metrics(
            &self.inner.journal.stats(),
            self.inner.dev.write_totals(),
            self.inner.reads.get(),
            crate::block::genhd::stats(&self.inner.dev).as_ref(),
        )
    }

    /// Latency per operation kind.
    pub fn latency(&self) -> OpLatency {
        self.inner.lat.borrow().clone()
    }

    /// Invariant violations so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.inner.violations.borrow().clone()
    }

    fn violation(&self, invariant: &str, message: String) {
        let mut v = self.inner.violations.borrow_mut();
        if v.iter().any(|x| x.invariant == invariant) {
            return;
        }
        v.push(Violation {
            invariant: invariant.to_string(),
            at: self.inner.h.now(),
            message,
            timeline: crate::vfs::timeline(&self.inner.h),
        });
    }

    /// Announces a named point.
    async fn point(&self, label: &'static str) {
        let id = self.inner.h.point_id_static(label);
        self.inner.h.point(id).await;
    }

    /// Runs one operation and records its latency.
    pub async fn run_op(&self, op: &Op) -> Result<(), OpError> {
        let start = self.inner.h.now();
        let (start_label, done_label) = op.labels();
        self.point(start_label).await;
        if self.inner.cfg.syscall > 0 && !matches!(op, Op::Sleep(_)) {
            self.inner.h.cpu(self.inner.cfg.syscall).await;
        }
        match op {
            Op::Create(p) => self.create(p, false).await?,
            Op::Mkdir(p) => self.create(p, true).await?,
            // ext4_symlink (a fast symlink: the target in the inode) and ext4_mknod journal
            // the new inode and its directory entry as ext4_create does; the journal replay
            // model keeps transaction ids only, so a create is what it can say.
            Op::Symlink(_, p) | Op::Mknod(p, _) | Op::Mkfifo(p) => self.create(p, false).await?,
            // ext4_setattr with ATTR_MODE: an inode update, as setattr.
            Op::Chmod(p, _) => self.setattr(p).await?,
            Op::Write(p, n)
            | Op::MmapWrite(p, n)
            | Op::MmapWriteAt(p, _, n)
            | Op::WriteAt(p, _, n) => self.write(p, *n).await?,
            Op::WriteOsync(p, n) => {
                self.write(p, *n).await?;
                self.fsync(p, false).await?;
            }
            Op::Read(p, n) => self.read(p, *n).await?,
            Op::Populate(p, n) => self.populate(p, *n)?,
            Op::Setattr(p) | Op::Setxattr(p, _) | Op::Removexattr(p, _) => {
                self.setattr(p).await?
            }
            Op::Stat(p) => {
                self.resolve(p)?;
            }
            // ext4_readdir (fs/ext4/dir.c): the directory's blocks from the page cache, no
            // journal; the model prices no directory-block work, only the second
            // getdents64's system call (the first is the operation's own).
            Op::Readdir(p) => {
                let d = self.resolve(p)?;
                if !self.inner.st.borrow().inodes[&d].is_dir {
                    return Err(OpError(format!("not a directory: {p}")));
                }
                self.inner.h.cpu(self.inner.cfg.syscall).await;
            }
            Op::Sync | Op::Syncfs => self.sync_fs().await,
            Op::Writeback(p) | Op::SyncFileRange(p) => {
                let ino = self.resolve(p)?;
                self.writeback_inode(ino, true).await;
            }
            Op::Fsync(p) => self.fsync(p, false).await?,
            Op::Fdatasync(p) => self.fsync(p, true).await?,
            // vfs_fsync_range of 2.6.36-2.6.39 writes back only the range
            // (filemap_write_and_wait_range) before ->fsync(file, datasync); the model's
            // writeback takes a file's dirty pages whole, so it cannot say that honestly.
            Op::FsyncRange(..) | Op::FdatasyncRange(..) => {
                return Err(OpError(format!(
                    "a ranged '{}' is modelled on btrfs only (ext3/ext4: vfs_fsync_range writes back only the range, the model's writeback takes the whole file): drop OFFSET LEN",
                    op.kind()
                )))
            }
            Op::Link(a, b) => self.link(a, b).await?,
            Op::Rename(a, b) => self.rename(a, b).await?,
            Op::Unlink(p) => self.remove(p, false).await?,
            Op::Rmdir(p) => self.remove(p, true).await?,
            Op::Commit => self.force_commit().await,
            Op::Truncate(p, size) => self.truncate(p, *size).await?,
            Op::Sleep(d) => self.inner.h.sleep(*d).await,
            Op::NewBlockGroup
            | Op::DirectWrite(..)
            | Op::WriteRange(..)
            | Op::WriteRangeAt(..)
            | Op::Fallocate { .. }
            | Op::PunchHole(..)
            | Op::FillMetadata(_)
            | Op::Open(..)
            | Op::Close(_)
            | Op::Clone { .. }
            | Op::Tmpfile(..)
            | Op::LinkFd(..)
            | Op::Evict(_)
            | Op::PowerFail => {
                return Err(OpError(format!(
                    "'{}' is not modelled on ext3/ext4",
                    op.kind()
                )))
            }
        }
        self.point(done_label).await;
        if self.inner.record_latency.get() {
            let ns = self.inner.h.now() - start;
            self.inner.lat.borrow_mut().record(op.kind(), ns);
        }
        Ok(())
    }

    fn resolve(&self, path: &str) -> Result<Ino, OpError> {
        let st = self.inner.st.borrow();
        let mut ino = ROOT_INO;
        for part in path.split('/').filter(|s| !s.is_empty()) {
            ino = *st
                .dentries
                .get(&(ino, part.to_string()))
                .ok_or_else(|| OpError(format!("no such file or directory: {path}")))?;
        }
        Ok(ino)
    }

    fn split(&self, path: &str) -> Result<(Ino, String), OpError> {
        let (dir, name) = crate::vfs::split_path(path)?;
        let d = if dir.is_empty() {
            ROOT_INO
        } else {
            self.resolve(dir)?
        };
        if !self.inner.st.borrow().inodes[&d].is_dir {
            return Err(OpError(format!("not a directory: {dir}")));
        }
        Ok((d, name.to_string()))
    }
}

impl crate::vfs::Filesystem for Ext4 {
    async fn run_op(&self, op: &Op) -> Result<(), OpError> {
        Ext4::run_op(self, op).await
    }
    /// Refused as the other btrfs-only operations are: the journal replay model keeps
    /// transaction ids, not the names, sizes and data a mount would go on from.
    async fn power_fail(&self) -> Result<(), OpError> {
        Err(OpError(format!(
            "'{}' is not modelled on ext3/ext4",
            Op::PowerFail.kind()
        )))
    }
    fn spawn_committer(&self, h: &Handle, interval: Nanos) {
        Ext4::spawn_committer(self, h, interval)
    }
    fn check_crash(&self, when: &str) {
        Ext4::check_crash(self, when)
    }
    fn recovered(&self) -> Result<crate::vfs::Recovered, String> {
        Ext4::recovered(self)
    }
    fn finish(&self) {}
    fn metrics(&self) -> Metrics {
        Ext4::metrics(self)
    }
    fn latency(&self) -> OpLatency {
        Ext4::latency(self)
    }
    fn violations(&self) -> Vec<Violation> {
        Ext4::violations(self)
    }
    fn set_latency(&self, on: bool) {
        Ext4::set_latency(self, on)
    }
    fn set_history(&self, keep: bool) {
        Ext4::set_history(self, keep)
    }
}

pub use counters::is_metric;

/// Named points an operation reaches on ext3/ext4: its `KIND:start`/`KIND:done`, and an
/// fsync's `fsync:data_written` (fsync.rs, after filemap_write_and_wait).
pub fn points_of(op: &Op) -> Vec<String> {
    let (start, done) = op.labels();
    let mut v = vec![start.to_string(), done.to_string()];
    if matches!(op, Op::Fsync(_) | Op::Fdatasync(_) | Op::WriteOsync(..)) {
        v.push("fsync:data_written".into());
    }
    v
}
