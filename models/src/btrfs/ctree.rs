//! The filesystem instance (struct btrfs_fs_info, fs/btrfs/ctree.h): its state, locks and
//! wait queues, counters, named points, and the dispatch of VFS operations to the functions
//! that model them (inode.c, file.c, block-group.c, transaction.c). Each function names the
//! kernel function it models (Linux 5.10/5.11, fs/btrfs/) and the policy switches of fixes
//! R1–R7. Named points (`trans:unblocked`, `fsync:joined`, …) are where scripts order tasks
//! and exploration strategies choose.

use super::costs::Costs;
use super::counters::Counters;
use super::policy::{Fix, LogPatch, Mutant, Policy};
use super::state::*;
use crate::device::Device;
use crate::vfs::metrics::{Metrics, OpLatency, Violation};
use crate::vfs::{Op, OpError};
use sim::{Handle, Mutex, WaitQueue};
use std::cell::RefCell;
use std::rc::Rc;

/// Commits between two compactions of the state in long workload runs.
pub(super) const COMPACT_EVERY: u32 = 64;

/// Slots of the direct-mapped point-label cache (`Inner::label_slots`).
pub(super) const LABEL_SLOTS: usize = 128;

/// Virtual time between two compactions when commits are rarer than that.
pub(super) const COMPACT_INTERVAL: sim::Nanos = sim::S;

/// (state version, image version) and the recovery verdict for them.
pub(super) type CrashMemo = ((u64, u64), Result<(), String>);

pub(super) struct Inner {
    pub(super) h: Handle,
    pub(super) dev: Device,
    pub(super) policy: Policy,
    pub(super) costs: Costs,
    pub(super) st: RefCell<FsState>,
    /// Bumped at every mutable borrow of `st` (keys the crash-check memo).
    pub(super) st_version: std::cell::Cell<u64>,
    /// The last crash check: (state version, image version) and its verdict.
    pub(super) crash_memo: RefCell<Option<CrashMemo>>,
    pub(super) m: RefCell<Counters>,
    pub(super) lat: RefCell<OpLatency>,
    pub(super) record_latency: std::cell::Cell<bool>,
    /// The `ssd` mount option.
    pub(super) ssd: std::cell::Cell<bool>,
    /// The NO_HOLES incompat feature (mkfs.btrfs -O no-holes).
    pub(super) no_holes: std::cell::Cell<bool>,
    /// Point ids by the addresses of their static labels.
    pub(super) labels: RefCell<FastMap<usize, sim::PointId>>,
    /// A direct-mapped cache in front of `labels`: (label address, id) per slot.
    pub(super) label_slots: [std::cell::Cell<(usize, sim::PointId)>; LABEL_SLOTS],
    pub(super) violations: RefCell<Vec<Violation>>,
    pub(super) tree_log_mutex: Mutex,
    pub(super) reloc_mutex: Mutex,
    pub(super) log_mutex: Mutex,
    pub(super) tree_root_log_mutex: Mutex,
    pub(super) log_root_tree_mutex: Mutex,
    pub(super) trans_wait: WaitQueue,
    pub(super) commit_wait: WaitQueue,
    pub(super) writers_wait: WaitQueue,
    pub(super) log_writers_wait: WaitQueue,
    pub(super) log_commit_wait: WaitQueue,
    /// fs_info->chunk_mutex (chunk allocation).
    pub(super) chunk_mutex: Mutex,
    /// Tasks waiting for a metadata reservation ticket (`ticket->wait`).
    pub(super) ticket_wait: WaitQueue,
    /// The endio-write workqueue: completed direct-I/O ordered extents waiting for
    /// btrfs_finish_ordered_io, its idle workers, and how many workers exist (made at the
    /// first direct write, so runs without one are unchanged).
    pub(super) endio: RefCell<std::collections::VecDeque<super::file::OrderedDone>>,
    /// See `endio`.
    pub(super) endio_wait: RefCell<Option<WaitQueue>>,
    /// See `endio`.
    pub(super) endio_workers: std::cell::Cell<u32>,
    /// Ordered extents not finished, per inode, that a writeback, fsync or truncate waits
    /// for: direct writes past EOF and buffered ranges (extent_io.rs). How many, and the
    /// in-memory i_size direct writes set (btrfs_get_blocks_direct_write's i_size_write).
    pub(super) dio_pending: RefCell<FastMap<Ino, (u32, u64)>>,
    /// Tasks waiting for those ordered extents (btrfs_wait_ordered_range), made at the
    /// first such write.
    pub(super) dio_ordered_wait: RefCell<Option<WaitQueue>>,
    /// Each inode's i_rwsem (inode->i_rwsem, taken by inode_lock / btrfs_inode_lock), made
    /// at its first use; all of them report their waits as the one class `inode_lock`.
    pub(super) inode_locks: RefCell<FastMap<Ino, Mutex>>,
    /// Each inode's BTRFS_I(inode)->log_mutex, made at its first use; their waits are the
    /// class `inode.log_mutex`.
    pub(super) inode_log_mutexes: RefCell<FastMap<Ino, Mutex>>,
    /// Each inode's BTRFS_I(inode)->i_mmap_lock (5.13+), made at its first use; their waits
    /// are the class `inode.i_mmap_lock`.
    pub(super) inode_mmap_locks: RefCell<FastMap<Ino, sim::RwSem>>,
    /// The extent buffer locks held or waited for, by (tree, level, block), with their
    /// holders and waiters (locking.rs).
    pub(super) tree_locks: RefCell<super::locking::HeldLocks>,
    /// References running operations hold on inodes (an open file's i_count), by inode:
    /// `evict` leaves a referenced inode in the cache (evict.rs).
    pub(super) inode_refs: RefCell<FastMap<Ino, u32>>,
    /// delayed_root->wait: tasks waiting in btrfs_balance_delayed_items.
    pub(super) delayed_wait: WaitQueue,
    /// Idle delayed-meta workers.
    pub(super) delayed_idle: WaitQueue,
    /// The delayed-meta workqueue.
    pub(super) delayed_wq: RefCell<super::delayed_inode::DelayedWq>,
    /// The mutexes of delayed nodes being run (delayed_node->mutex), by inode, with how
    /// many tasks hold or wait for each; an entry goes when the last of them is done.
    pub(super) node_mutexes: RefCell<FastMap<Ino, (Mutex, u32)>>,
    /// The space counters a trace shows, as last logged (made at the first traced op).
    pub(super) space_values: RefCell<Option<super::space_info::SpaceValues>>,
}

/// A simulated btrfs filesystem on one device; clone it into every task.
#[derive(Clone)]
pub struct Btrfs {
    pub(super) inner: Rc<Inner>,
}

/// What `btrfs_log_inode_parent` decided.
pub(super) enum LogResult {
    /// Logged; sync the log of this log sub-transaction.
    Logged(u64),
    /// Fall back to a full transaction commit.
    FullCommit,
    /// Nothing logged, nothing to sync (BTRFS_NO_LOG_SYNC: an inode with no names).
    NoLogSync,
}

impl Btrfs {
    /// A filesystem for unit tests: linux-5.15's switches on an NVMe disk of `sim`.
    #[cfg(test)]
    pub(crate) fn for_test(sim: &mut sim::Sim) -> Self {
        let mut streams = sim::RngStreams::new(1);
        let cfg = crate::block::DiskConfig::resolve("nvme").unwrap();
        let dev = crate::block::add_disk(sim, cfg, &mut streams, false);
        let policy = super::switches::release((5, 15));
        Self::new(&sim.handle(), dev, policy, Costs::default())
    }

    /// A freshly made filesystem (generation 999 committed) on `dev`.
    pub fn new(h: &Handle, dev: Device, policy: Policy, costs: Costs) -> Self {
        let sub_trans_stamp = policy.log(LogPatch::SubTransStamp);
        let (mkfs_data, fs_size) = (costs.mkfs_data_chunk.min(costs.fs_size), costs.fs_size);
        let costs_age = costs.clone();
        let meta_chunk = costs.meta_chunk_size;
        let (meta, meta_used, nodesize, item, rsv_max) = (
            costs.mkfs_meta_chunk,
            costs.mkfs_meta_used,
            costs.nodesize,
            costs.meta_item(),
            costs.global_rsv_max,
        );
        Btrfs {
            inner: Rc::new(Inner {
                h: h.clone(),
                dev,
                policy,
                costs,
                st: RefCell::new({
                    let mut st = FsState::mkfs();
                    let mkfs = mkfs_data;
                    st.data.add_group(mkfs);
                    // mkfs's metadata block group (DUP: two copies on the device), its
                    // trees, and the global reserve they size.
                    st.data.unallocated = (fs_size - mkfs).saturating_sub(2 * meta);
                    st.meta.total = meta;
                    st.meta.nodesize = nodesize;
                    st.trees = super::ctree_btree::Trees::new(nodesize);
                    st.meta.used = meta_used;
                    st.meta.tree_blocks = st.trees.blocks();
                    st.meta.chunk_size = meta_chunk;
                    st.meta.clamp = 1;
                    Btrfs::age(&mut st, &costs_age);
                    Btrfs::set_global_rsv_base(&mut st, item * 13, rsv_max);
                    st.sub_trans_stamp = sub_trans_stamp;
                    st
                }),
                st_version: std::cell::Cell::new(0),
                crash_memo: RefCell::new(None),
                m: RefCell::new(Counters::default()),
                lat: RefCell::new(OpLatency::default()),
                record_latency: std::cell::Cell::new(true),
                ssd: std::cell::Cell::new(true),
                no_holes: std::cell::Cell::new(false),
                labels: RefCell::new(FastMap::default()),
                label_slots: std::array::from_fn(|_| std::cell::Cell::new((0, 0))),
                violations: RefCell::new(Vec::new()),
                tree_log_mutex: Mutex::new(h, "tree_log_mutex"),
                reloc_mutex: Mutex::new(h, "reloc_mutex"),
                log_mutex: Mutex::new(h, "log_mutex"),
                tree_root_log_mutex: Mutex::new(h, "tree_root.log_mutex"),
                log_root_tree_mutex: Mutex::new(h, "log_root_tree.log_mutex"),
                trans_wait: WaitQueue::new(h, "wait_current_trans"),
                commit_wait: WaitQueue::new(h, "wait_for_commit"),
                writers_wait: WaitQueue::new(h, "wait_writers"),
                log_writers_wait: WaitQueue::new(h, "wait_log_writers"),
                log_commit_wait: WaitQueue::new(h, "wait_log_commit"),
                chunk_mutex: Mutex::new(h, "chunk_mutex"),
                ticket_wait: WaitQueue::new(h, "metadata_ticket"),
                endio: RefCell::new(Default::default()),
                endio_wait: RefCell::new(None),
                endio_workers: std::cell::Cell::new(0),
                dio_pending: RefCell::new(FastMap::default()),
                dio_ordered_wait: RefCell::new(None),
                inode_locks: RefCell::new(FastMap::default()),
                inode_log_mutexes: RefCell::new(FastMap::default()),
                inode_mmap_locks: RefCell::new(FastMap::default()),
                tree_locks: RefCell::new(FastMap::default()),
                inode_refs: RefCell::new(FastMap::default()),
                delayed_wait: WaitQueue::new(h, "delayed_root.wait"),
                delayed_idle: WaitQueue::new(h, "delayed_meta_idle"),
                delayed_wq: RefCell::new(Default::default()),
                node_mutexes: RefCell::new(FastMap::default()),
                space_values: RefCell::new(None),
            }),
        }
    }

    /// Made with NO_HOLES (mkfs.btrfs -O no-holes): a full fsync logs holes with
    /// btrfs_log_holes instead of copying hole items.
    pub fn set_no_holes(&self, on: bool) {
        self.inner.no_holes.set(on);
    }

    /// Sets the `ssd` mount option (no log-batching sleep in btrfs_sync_log).
    pub fn set_ssd(&self, ssd: bool) {
        self.inner.ssd.set(ssd);
    }

    /// Turns per-operation latency histograms on or off (off for fast seed sweeps).
    pub fn set_latency(&self, on: bool) {
        self.inner.record_latency.set(on);
    }

    /// Keeps (true, the default) or drops the history crash checks need; without it the
    /// state is compacted at every commit and memory stays flat over long workload runs.
    pub fn set_history(&self, keep: bool) {
        self.st_mut().keep_history = keep;
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// A copy of the counters.
    pub fn metrics(&self) -> Metrics {
        let mut m = self.inner.m.borrow().clone();
        (m.device_bytes_written, m.flushes) = self.inner.dev.write_totals();
        m.delayed_items = self.inner.st.borrow().delayed.queued;
        m.meta_block_groups_created += self.inner.st.borrow().meta.forced_chunks;
        m.cowed_leaves = self.inner.st.borrow().meta.cowed_leaves;
        self.ticket_wait_metrics(&mut m);
        m.to_metrics()
    }

    /// Latency per operation kind.
    pub fn latency(&self) -> OpLatency {
        self.inner.lat.borrow().clone()
    }

    /// Invariant violations so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.inner.violations.borrow().clone()
    }

    /// A copy of the filesystem state.
    pub fn state(&self) -> FsState {
        self.inner.st.borrow().clone()
    }

    /// Announces a named point; its id is cached per label address. Not an `async fn`: the
    /// id is looked up at the call (every caller awaits the point at once) and the engine's
    /// point future is returned as is, one future layer less.
    pub(super) fn point(&self, label: &'static str) -> impl std::future::Future<Output = ()> + '_ {
        let id = self.label_id(label);
        self.inner.h.point(id)
    }

    /// Adds a semantic mark to the trace (what was logged, why an fsync skipped or fell
    /// back): `label` says what, `arg` the inode or value. Not a scheduling point.
    pub(super) fn note(&self, label: &'static str, arg: u64) {
        let id = self.label_id(label);
        self.inner.h.mark(id, arg);
    }

    /// The engine's id of `label`, cached per label address.
    fn label_id(&self, label: &'static str) -> sim::PointId {
        let key = label.as_ptr() as usize;
        let slot = &self.inner.label_slots[(key ^ (key >> 7)) % LABEL_SLOTS];
        let (k, id) = slot.get();
        let id = if k == key {
            id
        } else {
            let cached = self.inner.labels.borrow().get(&key).copied();
            let id = match cached {
                Some(id) => id,
                None => {
                    let id = self.inner.h.point_id_static(label);
                    self.inner.labels.borrow_mut().insert(key, id);
                    id
                }
            };
            slot.set((key, id));
            id
        };
        id
    }

    /// The filesystem state, for changing it (bumps the version the crash memo keys on).
    pub(super) fn st_mut(&self) -> std::cell::RefMut<'_, FsState> {
        self.inner.st_version.set(self.inner.st_version.get() + 1);
        self.inner.st.borrow_mut()
    }

    pub(super) fn has(&self, f: Fix) -> bool {
        self.inner.policy.has(f)
    }

    pub(super) fn log_patch(&self, p: LogPatch) -> bool {
        self.inner.policy.log(p)
    }

    pub(super) fn mutant(&self, m: Mutant) -> bool {
        self.inner.policy.mutant(m)
    }

    pub(super) fn violation(&self, invariant: &str, message: String) {
        let mut v = self.inner.violations.borrow_mut();
        // Keep the first of each invariant with its timeline.
        if v.iter().any(|x| x.invariant == invariant) {
            return;
        }
        v.push(Violation {
            invariant: invariant.to_string(),
            at: self.inner.h.now(),
            message,
            timeline: timeline(&self.inner.h),
        });
    }

    /// Runs one operation and records its latency.
    pub async fn run_op(&self, op: &Op) -> Result<(), OpError> {
        let start = self.inner.h.now();
        let kind = op.kind();
        let (start_label, done_label) = op.labels();
        let _pin = self.pin_op_inode(op);
        self.point(start_label).await;
        let syscall = self.inner.costs.syscall;
        if syscall > 0 && !matches!(op, Op::Sleep(_)) {
            // Entering and leaving the kernel.
            self.inner.h.cpu(syscall).await;
        }
        self.refuse_special(op)?;
        match op {
            Op::Create(p) => self.create(p, false).await?,
            Op::Mkdir(p) => self.create(p, true).await?,
            Op::Write(p, bytes) => self.write(p, *bytes).await?,
            Op::WriteAt(p, offset, bytes) => self.write_at(p, *offset, *bytes).await?,
            Op::WriteRange(p, bytes) => self.write_range(p, *bytes).await?,
            Op::WriteRangeAt(p, at, bytes) => self.write_range_at(p, *at, *bytes).await?,
            Op::DirectWrite(p, offset, bytes) => self.direct_write(p, *offset, *bytes).await?,
            Op::Setattr(p) => self.setattr(p).await?,
            // vfs_getattr: the inode is in memory; the lookup and the syscall are the cost.
            Op::Stat(p) => {
                self.resolve(p)?;
            }
            Op::Readdir(p) => {
                self.readdir(p).await?;
            }
            Op::MmapWrite(p, bytes) => self.mmap_write(p, None, *bytes).await?,
            Op::MmapWriteAt(p, offset, bytes) => self.mmap_write(p, Some(*offset), *bytes).await?,
            Op::WriteOsync(p, bytes) => {
                self.write(p, *bytes).await?;
                // generic_write_sync → vfs_fsync_range(datasync = 0) → btrfs_sync_file.
                self.fsync(p).await?;
            }
            Op::Sync => self.sync_fs().await,
            Op::Writeback(p) => {
                let ino = self.resolve(p)?;
                self.writeback(ino).await;
            }
            Op::Fsync(p) => self.fsync(p).await?,
            Op::Link(a, b) => self.link_or_rename(a, b, false).await?,
            Op::Rename(a, b) => self.link_or_rename(a, b, true).await?,
            Op::Unlink(p) => self.remove(p, false).await?,
            Op::Rmdir(p) => self.remove(p, true).await?,
            Op::NewBlockGroup => self.new_block_group().await,
            Op::Commit => {
                let th = self.join_transaction().await;
                self.commit(th).await;
            }
            Op::Truncate(p, size) => self.truncate(p, *size).await?,
            Op::Fallocate {
                path,
                offset,
                len,
                keep_size,
            } => self.fallocate(path, *offset, *len, *keep_size).await?,
            Op::PunchHole(p, offset, len) => self.punch_hole(p, *offset, *len).await?,
            Op::Setxattr(p, name) => self.setxattr(p, name).await?,
            // vfs_fsync_range(datasync = 1): btrfs_sync_file@v5.10/v5.11 only traces it.
            Op::Fdatasync(p) => self.fsync(p).await?,
            Op::FsyncRange(p, offset, len) | Op::FdatasyncRange(p, offset, len) => {
                self.fsync_range(p, *offset, *len).await?
            }
            Op::Evict(p) => self.evict(p)?,
            Op::Removexattr(p, name) => self.removexattr(p, name).await?,
            // ksys_sync_file_range (fs/sync.c@v5.10): filemap writeback and wait; btrfs has
            // no hook of its own, so ordered extents complete and nothing is logged.
            Op::SyncFileRange(p) => {
                let ino = self.resolve(p)?;
                self.writeback(ino).await;
            }
            // sync_filesystem (fs/sync.c@v5.10): writeback, then btrfs_sync_fs(wait = 1).
            Op::Syncfs => self.sync_fs().await,
            Op::FillMetadata(n) => self.fill_metadata(*n),
            Op::Sleep(d) => self.inner.h.sleep(*d).await,
            // The caller quiesces the other tasks (scenario.rs: a barrier).
            Op::PowerFail => self.power_fail().await?,
            Op::Open(p, fd) => self.open_fd(p, fd)?,
            Op::Close(fd) => self.close_fd(fd).await?,
            Op::Clone {
                src,
                src_off,
                dst,
                dst_off,
                len,
            } => {
                self.clone_range((src, *src_off), (dst, *dst_off), *len)
                    .await?
            }
            Op::Read(..) | Op::Populate(..) => {
                return Err(OpError(format!("'{kind}' is not modelled on btrfs")))
            }
            Op::Symlink(target, p) => {
                let k = super::special::SpecialKind::Symlink(target.to_string());
                self.make_special(p, k).await?
            }
            Op::Mknod(p, block) => {
                let k = if *block {
                    super::special::SpecialKind::BlockDev
                } else {
                    super::special::SpecialKind::CharDev
                };
                self.make_special(p, k).await?
            }
            Op::Mkfifo(p) => {
                self.make_special(p, super::special::SpecialKind::Fifo)
                    .await?
            }
            Op::Tmpfile(dir, fd) => self.tmpfile(dir, fd).await?,
            Op::LinkFd(fd, p) => self.link_fd(fd, p).await?,
            Op::Chmod(p, mode) => self.chmod(p, *mode).await?,
        }
        self.finish_op(op).await;
        self.trace_space();
        self.point(done_label).await;
        if self.inner.record_latency.get() {
            let ns = self.inner.h.now() - start;
            self.inner.lat.borrow_mut().record(kind, ns);
        }
        Ok(())
    }

    /// An operation's last work before it returns: balancing the delayed items, and the
    /// CPU of the blocks it woke from (`costs.context_switch`) and the wake-ups it made.
    async fn finish_op(&self, op: &Op) {
        if super::delayed_inode::balances(op) && self.inner.costs.delayed_items != 0 {
            self.balance_delayed_items().await;
        }
        if self.inner.h.owes_cpu() {
            self.inner.h.cpu(0).await;
        }
    }

    pub(super) fn resolve(&self, path: &str) -> Result<Ino, OpError> {
        self.inner.st.borrow().lookup(path).ok_or_else(|| {
            OpError(if path.starts_with('@') {
                format!("bad file descriptor: {path} is not open")
            } else {
                format!("no such file or directory: {path}")
            })
        })
    }

    /// The directory holding `path` and its last name (`"/d/f"` → (inode of `/d`, `"f"`)).
    pub(super) fn split<'p>(&self, path: &'p str) -> Result<(Ino, &'p str), OpError> {
        let (dir, name) = crate::vfs::split_path(path)?;
        let st = self.inner.st.borrow();
        let d = if dir.is_empty() {
            ROOT_INO
        } else {
            // The whole directory path (cached), as `resolve(dir)` would walk it.
            st.lookup_dir(dir)
                .ok_or_else(|| OpError(format!("no such file or directory: {dir}")))?
        };
        if !st.inodes[&d].is_dir {
            return Err(OpError(format!("not a directory: {dir}")));
        }
        Ok((d, name))
    }

    /// `resolve(path)` then `split(path)` (the same results and errors), resolving the
    /// directory once: (inode, directory, last name).
    pub(super) fn resolve_split<'p>(&self, path: &'p str) -> Result<(Ino, Ino, &'p str), OpError> {
        let trimmed = path.trim_end_matches('/');
        if let Some(i) = last_slash(trimmed).filter(|&i| i > 0 && i + 1 < trimmed.len()) {
            // `lookup` resolves this path through its directory part, as `split` does.
            let (dir, name) = (&trimmed[..i], &trimmed[i + 1..]);
            let st = self.inner.st.borrow();
            let d = st.lookup_dir(dir);
            let ino = d
                .and_then(|d| st.live_entry(d, name))
                .ok_or_else(|| OpError(format!("no such file or directory: {path}")))?;
            let d = d.expect("found through it");
            if !st.inodes[&d].is_dir {
                return Err(OpError(format!("not a directory: {dir}")));
            }
            return Ok((ino, d, name));
        }
        let ino = self.resolve(path)?;
        let (d, name) = self.split(path)?;
        Ok((ino, d, name))
    }
}

/// The last trace lines of the filesystem's tasks (crash-point checks left out).
pub fn timeline(h: &Handle) -> Vec<String> {
    crate::vfs::timeline(h)
}

impl crate::vfs::Filesystem for Btrfs {
    async fn run_op(&self, op: &Op) -> Result<(), OpError> {
        Btrfs::run_op(self, op).await
    }
    async fn power_fail(&self) -> Result<(), OpError> {
        Btrfs::power_fail(self).await
    }
    fn spawn_committer(&self, h: &Handle, interval: sim::Nanos) {
        Btrfs::spawn_committer(self, h, interval)
    }
    fn check_crash(&self, when: &str) {
        Btrfs::check_crash(self, when)
    }
    fn recovered(&self) -> Result<crate::vfs::Recovered, String> {
        Btrfs::recovered(self)
    }
    fn finish(&self) {
        Btrfs::finish(self)
    }
    fn metrics(&self) -> Metrics {
        Btrfs::metrics(self)
    }
    fn latency(&self) -> OpLatency {
        Btrfs::latency(self)
    }
    fn violations(&self) -> Vec<Violation> {
        Btrfs::violations(self)
    }
    fn set_latency(&self, on: bool) {
        Btrfs::set_latency(self, on)
    }
    fn set_history(&self, keep: bool) {
        Btrfs::set_history(self, keep)
    }
}

pub use super::counters::is_metric;

/// Named points an operation reaches on btrfs (ctree.rs, tree_log.rs, transaction.rs
/// announce them).
pub fn points_of(op: &Op) -> Vec<String> {
    let (start, done) = op.labels();
    let mut v = vec![start.to_string(), done.to_string()];
    let commit = [
        "trans:commit_start",
        "trans:commit_doing",
        "trans:unblocked",
        "trans:supers_written",
        "trans:unpin",
        "trans:unpinned",
        "trans:completed",
    ];
    match op {
        // An O_SYNC write ends in btrfs_sync_file: the fsync's points.
        Op::Fsync(_)
        | Op::Fdatasync(_)
        | Op::FsyncRange(..)
        | Op::FdatasyncRange(..)
        | Op::WriteOsync(..) => {
            v.extend(
                [
                    "fsync:joined",
                    "log_inode:items_copied",
                    "fsync:logged",
                    "fsync:full_commit",
                    "sync_log:start",
                    "sync_log:write_super",
                ]
                .map(String::from),
            );
            v.extend(commit.map(String::from));
        }
        Op::Link(..) | Op::LinkFd(..) => v.push("link:joined".into()),
        Op::MmapWrite(..) | Op::MmapWriteAt(..) => v.push("page_mkwrite:last_sub_trans_set".into()),
        Op::Rename(..) => v.push("rename:joined".into()),
        Op::Commit | Op::Sync | Op::Syncfs => v.extend(commit.map(String::from)),
        _ => {}
    }
    v
}
