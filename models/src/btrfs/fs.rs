//! The btrfs commit and fsync paths as simulated tasks.
//!
//! Each function names the kernel function it models (Linux 5.10/5.11, fs/btrfs/) and the
//! policy switches of fixes R1–R7. Named points (`commit:unblocked`, `fsync:joined`, …) are
//! where scripts order tasks and exploration strategies choose.

use super::costs::Costs;
use super::metrics::{Metrics, OpLatency, Violation};
use super::oracle;
use super::policy::{Fix, Mutant, Policy};
use super::state::*;
use crate::device::{Device, Request};
use sim::{Handle, Mutex, Nanos, WaitQueue};
use std::cell::RefCell;
use std::rc::Rc;

/// One filesystem operation a task performs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Create a regular file.
    Create(String),
    /// Create a directory.
    Mkdir(String),
    /// Buffered write of `bytes` at the end of the file.
    Write(String, u64),
    /// Write back dirty pages and wait (filemap_write_and_wait, no log).
    Writeback(String),
    /// fsync(2).
    Fsync(String),
    /// link(2) src → dst.
    Link(String, String),
    /// rename(2) src → dst.
    Rename(String, String),
    /// unlink(2).
    Unlink(String),
    /// rmdir(2).
    Rmdir(String),
    /// A new block group is allocated (btrfs_make_block_group → log full commit).
    NewBlockGroup,
    /// Commit the running transaction (btrfs_commit_transaction, e.g. sync(2)).
    Commit,
    /// Sleep.
    Sleep(Nanos),
}

impl Op {
    /// Operation kind name (used in point labels and latency reports).
    pub fn kind(&self) -> &'static str {
        self.names().0
    }
}

/// Each operation kind's name and its static `KIND:start` and `KIND:done` labels.
macro_rules! op_names {
    ($op:expr, $($variant:pat => $kind:literal),* $(,)?) => {
        match $op {
            $($variant => ($kind, concat!($kind, ":start"), concat!($kind, ":done")),)*
        }
    };
}

impl Op {
    /// The named points at the start and end of the operation.
    pub fn labels(&self) -> (&'static str, &'static str) {
        let (_, start, done) = self.names();
        (start, done)
    }

    fn names(&self) -> (&'static str, &'static str, &'static str) {
        op_names!(self,
            Op::Create(_) => "create",
            Op::Mkdir(_) => "mkdir",
            Op::Write(..) => "write",
            Op::Writeback(_) => "writeback",
            Op::Fsync(_) => "fsync",
            Op::Link(..) => "link",
            Op::Rename(..) => "rename",
            Op::Unlink(_) => "unlink",
            Op::Rmdir(_) => "rmdir",
            Op::NewBlockGroup => "new-block-group",
            Op::Commit => "commit",
            Op::Sleep(_) => "sleep",
        )
    }
}

/// Formats a byte size the way scenario files write it (`4k`, `1m`, `4097`).
fn size_text(n: u64) -> String {
    for (shift, unit) in [(30, "g"), (20, "m"), (10, "k")] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

/// The scenario-file line of an operation; `scenario::parse_op` reads it back.
impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let k = self.kind();
        match self {
            Op::Create(p)
            | Op::Mkdir(p)
            | Op::Writeback(p)
            | Op::Fsync(p)
            | Op::Unlink(p)
            | Op::Rmdir(p) => write!(f, "{k} {p}"),
            Op::Write(p, n) => write!(f, "{k} {p} {}", size_text(*n)),
            Op::Link(a, b) | Op::Rename(a, b) => write!(f, "{k} {a} {b}"),
            Op::NewBlockGroup | Op::Commit => write!(f, "{k}"),
            Op::Sleep(d) => write!(f, "{k} {d}ns"),
        }
    }
}

/// An operation that could not run (bad path and the like).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError(pub String);

/// Commits between two compactions of the state in long workload runs.
const COMPACT_EVERY: u32 = 64;

/// (state version, image version) and the recovery verdict for them.
type CrashMemo = ((u64, u64), Result<(), String>);

struct Inner {
    h: Handle,
    dev: Device,
    policy: Policy,
    costs: Costs,
    st: RefCell<FsState>,
    /// Bumped at every mutable borrow of `st` (keys the crash-check memo).
    st_version: std::cell::Cell<u64>,
    /// The last crash check: (state version, image version) and its verdict.
    crash_memo: RefCell<Option<CrashMemo>>,
    m: RefCell<Metrics>,
    lat: RefCell<OpLatency>,
    record_latency: std::cell::Cell<bool>,
    /// Point ids by the addresses of their static labels.
    labels: RefCell<Vec<(usize, sim::PointId)>>,
    violations: RefCell<Vec<Violation>>,
    tree_log_mutex: Mutex,
    reloc_mutex: Mutex,
    log_mutex: Mutex,
    tree_root_log_mutex: Mutex,
    log_root_tree_mutex: Mutex,
    trans_wait: WaitQueue,
    commit_wait: WaitQueue,
    writers_wait: WaitQueue,
    log_writers_wait: WaitQueue,
    log_commit_wait: WaitQueue,
}

/// A simulated btrfs filesystem on one device; clone it into every task.
#[derive(Clone)]
pub struct Btrfs {
    inner: Rc<Inner>,
}

/// What `btrfs_log_inode_parent` decided.
enum LogResult {
    /// Logged; sync the log of this log sub-transaction.
    Logged(u64),
    /// Fall back to a full transaction commit.
    FullCommit,
}

impl Btrfs {
    /// A freshly made filesystem (generation 999 committed) on `dev`.
    pub fn new(h: &Handle, dev: Device, policy: Policy, costs: Costs) -> Self {
        Btrfs {
            inner: Rc::new(Inner {
                h: h.clone(),
                dev,
                policy,
                costs,
                st: RefCell::new(FsState::mkfs()),
                st_version: std::cell::Cell::new(0),
                crash_memo: RefCell::new(None),
                m: RefCell::new(Metrics::default()),
                lat: RefCell::new(OpLatency::default()),
                record_latency: std::cell::Cell::new(true),
                labels: RefCell::new(Vec::new()),
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
            }),
        }
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
        m
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

    /// Announces a named point; its id is cached per label address.
    async fn point(&self, label: &'static str) {
        let key = label.as_ptr() as usize;
        let cached = self
            .inner
            .labels
            .borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, id)| *id);
        let id = match cached {
            Some(id) => id,
            None => {
                let id = self.inner.h.point_id_static(label);
                self.inner.labels.borrow_mut().push((key, id));
                id
            }
        };
        self.inner.h.point(id).await;
    }

    /// The filesystem state, for changing it (bumps the version the crash memo keys on).
    fn st_mut(&self) -> std::cell::RefMut<'_, FsState> {
        self.inner.st_version.set(self.inner.st_version.get() + 1);
        self.inner.st.borrow_mut()
    }

    fn has(&self, f: Fix) -> bool {
        self.inner.policy.has(f)
    }

    fn mutant(&self, m: Mutant) -> bool {
        self.inner.policy.mutant(m)
    }

    fn violation(&self, invariant: &str, message: String) {
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

    /// Starts the periodic committer (transaction_kthread): every `interval` it commits the
    /// running transaction, if any (the `commit=` mount option, 30 s by default).
    pub fn spawn_committer(&self, h: &Handle, interval: Nanos) {
        let fs = self.clone();
        h.spawn_daemon("btrfs-transaction", async move {
            loop {
                fs.inner.h.sleep(interval).await;
                let running = fs.inner.st.borrow().running.is_some();
                if running {
                    let t = fs.join().await;
                    fs.commit(t).await;
                }
            }
        });
    }

    /// Runs one operation and records its latency.
    pub async fn run_op(&self, op: &Op) -> Result<(), OpError> {
        let start = self.inner.h.now();
        let kind = op.kind();
        let (start_label, done_label) = op.labels();
        self.point(start_label).await;
        match op {
            Op::Create(p) => self.create(p, false).await?,
            Op::Mkdir(p) => self.create(p, true).await?,
            Op::Write(p, bytes) => self.write(p, *bytes).await?,
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
                let t = self.join_nostart().await;
                self.commit(t).await;
            }
            Op::Sleep(d) => self.inner.h.sleep(*d).await,
        }
        self.point(done_label).await;
        if self.inner.record_latency.get() {
            let ns = self.inner.h.now() - start;
            self.inner.lat.borrow_mut().record(kind, ns);
        }
        Ok(())
    }

    fn resolve(&self, path: &str) -> Result<Ino, OpError> {
        self.inner
            .st
            .borrow()
            .lookup(path)
            .ok_or_else(|| OpError(format!("no such file or directory: {path}")))
    }

    fn split(&self, path: &str) -> Result<(Ino, String), OpError> {
        let trimmed = path.trim_end_matches('/');
        let (dir, name) = trimmed.rsplit_once('/').unwrap_or(("", trimmed));
        if name.is_empty() {
            return Err(OpError(format!("not a file path: {path}")));
        }
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

    // ---- transactions (fs/btrfs/transaction.c) ----

    /// btrfs_start_transaction (TRANS_START): join the running transaction, or start a new
    /// one once the previous commit is past UNBLOCKED (wait_current_trans).
    async fn join(&self) -> TransId {
        self.join_kind(TransState::Running).await
    }

    /// btrfs_join_transaction (TRANS_JOIN): may also join a transaction in COMMIT_START,
    /// which the commit then waits for.
    async fn join_nostart(&self) -> TransId {
        self.join_kind(TransState::CommitStart).await
    }

    async fn join_kind(&self, latest: TransState) -> TransId {
        loop {
            {
                let mut st = self.st_mut();
                match st.running {
                    Some(t) if st.trans[&t].state <= latest => {
                        st.trans.get_mut(&t).unwrap().writers += 1;
                        return t;
                    }
                    Some(_) => {}
                    None => {
                        let t = st.generation + 1;
                        st.generation = t;
                        st.running = Some(t);
                        st.trans.insert(
                            t,
                            Transaction {
                                transid: t,
                                state: TransState::Running,
                                writers: 1,
                                dirty_blocks: 0,
                                super_done: false,
                                removals_in: Default::default(),
                                forced_by_event: false,
                                marked_unnecessarily: false,
                            },
                        );
                        return t;
                    }
                }
            }
            self.inner.trans_wait.wait().await;
        }
    }

    /// btrfs_end_transaction.
    fn end(&self, t: TransId) {
        let mut st = self.st_mut();
        let tr = st.trans.get_mut(&t).expect("transaction");
        tr.writers -= 1;
        drop(st);
        self.inner.writers_wait.notify_all();
    }

    /// btrfs_set_inode_last_trans.
    fn set_inode_last_trans(st: &mut FsState, ino: Ino, t: TransId) {
        let (log_transid, last_log_commit) = (st.log_transid, st.last_log_commit);
        let i = st.inodes.get_mut(&ino).expect("inode");
        i.last_trans = t;
        i.last_sub_trans = log_transid;
        let _ = last_log_commit;
    }

    fn dirty(st: &mut FsState, t: TransId, blocks: u64) {
        st.trans.get_mut(&t).expect("transaction").dirty_blocks += blocks;
    }

    /// btrfs_commit_transaction of `t`, called with a handle on it.
    pub async fn commit(&self, t: TransId) {
        let h = &self.inner.h;
        let already = self.inner.st.borrow().trans[&t].state >= TransState::CommitStart;
        if already {
            // Step 1: another task is committing it: end our handle and wait (5.12+ waiters
            // may return once the superblocks are written).
            self.end(t);
            let until = if self.inner.policy.super_committed {
                TransState::SuperCommitted
            } else {
                TransState::Completed
            };
            while self.inner.st.borrow().trans[&t].state < until {
                self.inner.commit_wait.wait().await;
            }
            return;
        }
        self.inner.m.borrow_mut().transaction_commits += 1;
        // Step 2: COMMIT_START; wait for the previous transaction's commit.
        self.st_mut().trans.get_mut(&t).unwrap().state = TransState::CommitStart;
        self.point("trans:commit_start").await;
        loop {
            let prev_done = {
                let st = self.inner.st.borrow();
                st.trans
                    .range(..t)
                    .next_back()
                    .is_none_or(|(_, p)| p.state == TransState::Completed)
            };
            if prev_done {
                break;
            }
            self.inner.commit_wait.wait().await;
        }
        // Steps 3-4: COMMIT_DOING once we are the only writer.
        while self.inner.st.borrow().trans[&t].writers > 1 {
            self.inner.writers_wait.wait().await;
        }
        self.st_mut().trans.get_mut(&t).unwrap().state = TransState::CommitDoing;
        self.point("trans:commit_doing").await;
        // Step 5-6: tree_log_mutex is held from here until the superblocks are written.
        let tree_log = self.inner.tree_log_mutex.lock().await;
        {
            let _reloc = self.inner.reloc_mutex.lock().await;
            h.cpu(self.inner.costs.commit_cpu).await;
            // commit_fs_roots frees the log trees: the commit captures everything logged;
            // entries never synced are judged now.
            self.judge(t, None);
            let mut st = self.st_mut();
            if st.log_tree_of == Some(t) {
                st.log_tree_of = None;
            }
            if st.log_root_tree_of == Some(t) {
                st.log_root_tree_of = None;
            }
            st.log_dirty_bytes = 0;
            st.super_generation = t;
        }
        {
            let mut st = self.st_mut();
            st.trans.get_mut(&t).unwrap().state = TransState::Unblocked;
            st.running = None;
        }
        self.inner.trans_wait.notify_all();
        self.point("trans:unblocked").await;
        let log_mutex = if self.mutant(Mutant::CommitTakesLogMutex) {
            Some(self.inner.log_mutex.lock().await)
        } else {
            None
        };
        // Step 7: write and wait the dirty extent buffers, then the superblocks.
        let (blocks, nodesize) = {
            let st = self.inner.st.borrow();
            (st.trans[&t].dirty_blocks.max(1), self.inner.costs.nodesize)
        };
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::CommitBlocks { transid: t }, blocks * nodesize);
        self.inner
            .dev
            .submit(Request::write(off, blocks * nodesize).with_token(tok))
            .await;
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::CommitSuper { transid: t }, 4096);
        let sb = Request {
            fua: true,
            ..Request::preflush_write(off, 4096)
        };
        self.inner.dev.submit(sb.with_token(tok)).await;
        self.st_mut().trans.get_mut(&t).unwrap().super_done = true;
        self.point("trans:supers_written").await;
        drop(log_mutex);
        drop(tree_log);
        self.st_mut().trans.get_mut(&t).unwrap().state = TransState::SuperCommitted;
        if self.inner.policy.super_committed {
            self.inner.commit_wait.notify_all();
        }
        // Step 9: unpin extents, then last_trans_committed = transid, COMPLETED.
        self.point("trans:unpin").await;
        let pinned = {
            let st = self.inner.st.borrow();
            st.trans[&t].dirty_blocks * self.inner.costs.pinned_per_block
        };
        h.cpu(pinned * self.inner.costs.unpin_per_extent).await;
        self.point("trans:unpinned").await;
        {
            let mut st = self.st_mut();
            st.last_trans_committed = st.last_trans_committed.max(t);
            let tr = st.trans.get_mut(&t).unwrap();
            tr.state = TransState::Completed;
            tr.writers -= 1;
            if !st.keep_history {
                // Amortised: the state holds at most this many commits of history.
                st.commits_since_compact += 1;
                if st.commits_since_compact >= COMPACT_EVERY {
                    st.commits_since_compact = 0;
                    st.compact();
                }
            }
        }
        self.inner.commit_wait.notify_all();
        self.inner.writers_wait.notify_all();
        self.point("trans:completed").await;
    }

    // ---- namespace operations (fs/btrfs/inode.c) ----

    async fn create(&self, path: &str, is_dir: bool) -> Result<(), OpError> {
        let (dir, name) = self.split(path)?;
        if self.inner.st.borrow().live_entry(dir, &name).is_some() {
            return Err(OpError(format!("file exists: {path}")));
        }
        let t = self.join().await;
        self.inner.h.cpu(self.inner.costs.namespace_op).await;
        if self.inner.st.borrow().live_entry(dir, &name).is_some() {
            // Another task created it while this one waited.
            self.end(t);
            return Err(OpError(format!("file exists: {path}")));
        }
        {
            let mut st = self.st_mut();
            let ino = st.next_ino;
            st.next_ino += 1;
            st.inodes.insert(
                ino,
                Inode {
                    ino,
                    is_dir,
                    generation: t,
                    logged_trans: 0,
                    last_trans: t,
                    last_unlink_trans: 0,
                    last_sub_trans: 0,
                    last_log_commit: 0,
                    needs_full_sync: true,
                    item_trans: t,
                    extents: Vec::new(),
                    modified_extents: Vec::new(),
                    dirty_bytes: 0,
                },
            );
            st.add_dentry(dir, name, ino, t);
            Self::set_inode_last_trans(&mut st, ino, t);
            Self::set_inode_last_trans(&mut st, dir, t);
            st.inodes.get_mut(&dir).unwrap().item_trans = t;
            Self::dirty(&mut st, t, self.inner.costs.blocks_per_namespace_op);
        }
        self.end(t);
        Ok(())
    }

    async fn write(&self, path: &str, bytes: u64) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        if self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("is a directory: {path}")));
        }
        let pages = bytes.div_ceil(self.inner.costs.sectorsize);
        self.inner
            .h
            .cpu(pages * self.inner.costs.write_per_page)
            .await;
        // file_update_time/i_size: the inode item changes in the running transaction.
        let t = self.join().await;
        {
            let mut st = self.st_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            i.dirty_bytes += bytes;
            i.item_trans = t;
            Self::set_inode_last_trans(&mut st, ino, t);
            Self::dirty(&mut st, t, 1);
        }
        self.end(t);
        Ok(())
    }

    /// start_ordered_ops + btrfs_wait_ordered_range: write dirty pages as one ordered
    /// extent; btrfs_finish_ordered_io inserts the file extent item in the running transaction
    /// and sets the extent map's generation to it.
    async fn writeback(&self, ino: Ino) {
        let bytes = std::mem::take(&mut self.st_mut().inodes.get_mut(&ino).unwrap().dirty_bytes);
        if bytes == 0 {
            return;
        }
        let id = {
            let mut st = self.st_mut();
            let id = st.next_extent;
            st.next_extent += 1;
            id
        };
        let (tok, off) = self
            .st_mut()
            .new_write(WriteKind::Data { ino, extent: id }, bytes);
        self.inner
            .dev
            .submit(Request::write(off, bytes).with_token(tok))
            .await;
        let t = self.join_nostart().await;
        self.inner.h.cpu(self.inner.costs.btree_item * 3).await;
        {
            let mut st = self.st_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            i.extents.push(Extent {
                id,
                len: bytes,
                generation: t,
                data_token: tok,
                data_offset: off,
            });
            i.modified_extents.push(id);
            i.item_trans = t;
            Self::set_inode_last_trans(&mut st, ino, t);
            Self::dirty(&mut st, t, self.inner.costs.blocks_per_extent);
        }
        self.end(t);
    }

    async fn link_or_rename(&self, src: &str, dst: &str, rename: bool) -> Result<(), OpError> {
        let ino = self.resolve(src)?;
        let (old_dir, old_name) = self.split(src)?;
        let (new_dir, new_name) = self.split(dst)?;
        if self
            .inner
            .st
            .borrow()
            .live_entry(new_dir, &new_name)
            .is_some()
        {
            return Err(OpError(format!("file exists: {dst}")));
        }
        if !rename && self.inner.st.borrow().inodes[&ino].is_dir {
            return Err(OpError(format!("cannot hard-link a directory: {src}")));
        }
        if rename {
            // rename(2) of a directory into its own subtree: EINVAL.
            let st = self.inner.st.borrow();
            let mut cur = new_dir;
            for _ in 0..64 {
                if cur == ino {
                    return Err(OpError(format!(
                        "cannot move a directory into itself: {src} -> {dst}"
                    )));
                }
                match st.parent_of(cur) {
                    Some(p) => cur = p,
                    None => break,
                }
            }
        }
        let t = self.join().await;
        let (kind, joined) = if rename {
            ("rename", "rename:joined")
        } else {
            ("link", "link:joined")
        };
        self.point(joined).await;
        self.inner.h.cpu(self.inner.costs.namespace_op).await;
        {
            let st = self.inner.st.borrow();
            if st.live_entry(old_dir, &old_name) != Some(ino)
                || st.live_entry(new_dir, &new_name).is_some()
            {
                drop(st);
                self.end(t);
                return Err(OpError(format!(
                    "{src} or {dst} changed while {kind} waited"
                )));
            }
        }
        {
            let mut st = self.st_mut();
            if rename {
                st.remove_dentry(old_dir, &old_name, t);
                // btrfs_rename → btrfs_record_unlink_dir(for_rename) only when the parents
                // differ: the inode always, the old directory unless it or the inode is
                // already logged in this transaction.
                if old_dir != new_dir {
                    st.inodes.get_mut(&ino).unwrap().last_unlink_trans = t;
                    let dir_logged = st.inodes[&old_dir].logged_trans == t;
                    let ino_logged = st.inodes[&ino].logged_trans == t;
                    if !dir_logged && !ino_logged {
                        st.inodes.get_mut(&old_dir).unwrap().last_unlink_trans = t;
                        st.trans.get_mut(&t).unwrap().removals_in.insert(old_dir);
                    }
                }
                Self::set_inode_last_trans(&mut st, old_dir, t);
            } else if !st.inodes[&ino].is_dir {
                // btrfs_link: a new hard link makes later fsyncs log all parents.
                st.inodes.get_mut(&ino).unwrap().last_unlink_trans = t;
            }
            st.add_dentry(new_dir, new_name, ino, t);
            st.inodes.get_mut(&ino).unwrap().item_trans = t;
            st.inodes.get_mut(&new_dir).unwrap().item_trans = t;
            Self::set_inode_last_trans(&mut st, ino, t);
            Self::set_inode_last_trans(&mut st, new_dir, t);
            Self::dirty(&mut st, t, self.inner.costs.blocks_per_namespace_op);
        }
        // btrfs_log_new_name (R1).
        self.log_new_name(t, ino, rename.then_some(old_dir)).await;
        self.end(t);
        Ok(())
    }

    async fn remove(&self, path: &str, dir: bool) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        let (parent, name) = self.split(path)?;
        {
            let st = self.inner.st.borrow();
            if st.inodes[&ino].is_dir != dir {
                return Err(OpError(format!(
                    "{}: {path}",
                    if dir {
                        "not a directory"
                    } else {
                        "is a directory"
                    }
                )));
            }
            if dir && st.has_children(ino) {
                return Err(OpError(format!("directory not empty: {path}")));
            }
        }
        let t = self.join().await;
        self.inner.h.cpu(self.inner.costs.namespace_op).await;
        if self.inner.st.borrow().live_entry(parent, &name) != Some(ino) {
            self.end(t);
            return Err(OpError(format!("{path} changed while it waited")));
        }
        {
            let mut st = self.st_mut();
            st.remove_dentry(parent, &name, t);
            st.inodes.get_mut(&ino).unwrap().last_unlink_trans = t;
            if dir {
                // btrfs_rmdir: the parent inherits the removed directory's last_unlink_trans;
                // a plain unlink (for_rename = 0) leaves the directory alone.
                st.inodes.get_mut(&parent).unwrap().last_unlink_trans = t;
                st.trans.get_mut(&t).unwrap().removals_in.insert(parent);
            }
            st.inodes.get_mut(&parent).unwrap().item_trans = t;
            Self::set_inode_last_trans(&mut st, parent, t);
            Self::dirty(&mut st, t, self.inner.costs.blocks_per_namespace_op);
        }
        self.end(t);
        Ok(())
    }

    /// btrfs_make_block_group → btrfs_set_log_full_commit(trans).
    async fn new_block_group(&self) {
        let t = self.join().await;
        self.inner.h.cpu(self.inner.costs.btree_item * 4).await;
        {
            let mut st = self.st_mut();
            st.last_trans_log_full_commit = t;
            st.trans.get_mut(&t).unwrap().forced_by_event = true;
            Self::dirty(&mut st, t, 2);
        }
        self.end(t);
    }

    // ---- fsync (fs/btrfs/file.c, tree-log.c) ----

    /// btrfs_inode_in_log.
    fn inode_in_log(st: &FsState, ino: Ino) -> bool {
        let i = &st.inodes[&ino];
        i.logged_trans == st.generation
            && i.last_sub_trans <= i.last_log_commit
            && i.last_sub_trans < st.last_log_commit
            && i.modified_extents.is_empty()
    }

    /// btrfs_sync_file.
    async fn fsync(&self, path: &str) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        self.writeback(ino).await;
        // What this fsync promises: the names and extents the inode has once its data is
        // written back (later changes by other tasks are not covered).
        let (names, extents) = {
            let st = self.inner.st.borrow();
            (
                st.names_of(ino),
                st.inodes[&ino]
                    .extents
                    .iter()
                    .map(|e| e.id)
                    .collect::<Vec<_>>(),
            )
        };
        let skip = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            let full_sync = i.needs_full_sync;
            // No ordered extents remain: writeback waited for them.
            let committed = i.last_trans <= st.last_trans_committed;
            let shortcut = if self.has(Fix::R7) {
                committed
            } else {
                // 3a8b36f378060d: the shortcut applied only to full syncs.
                full_sync && committed
            };
            Self::inode_in_log(&st, ino)
                || shortcut
                || (self.mutant(Mutant::SkipLogWhenLoggedBefore) && i.logged_trans > 0)
        };
        if !skip {
            let t = self.join().await;
            self.point("fsync:joined").await;
            match self.log_inode_parent(t, ino).await {
                LogResult::Logged(log_transid) => {
                    self.point("fsync:logged").await;
                    if self.sync_log(t, log_transid).await {
                        self.end(t);
                    } else {
                        let necessary =
                            oracle::full_commit_flag_is_real(&self.inner.st.borrow(), t);
                        self.count_full_commit(t, FullCommitCause::LogFullCommitFlag, necessary);
                        self.point("fsync:full_commit").await;
                        self.commit(t).await;
                    }
                }
                LogResult::FullCommit => {
                    self.point("fsync:full_commit").await;
                    self.commit(t).await;
                }
            }
        }
        // fsync returned success: record what must survive and check a crash now (S2).
        {
            let mut st = self.st_mut();
            let rec = FsyncRecord {
                ino,
                path: path.to_string(),
                names,
                extents,
                at: self.inner.h.now(),
            };
            if st.keep_history {
                st.fsyncs.push(rec);
            }
        }
        self.check_crash("fsync returned");
        Ok(())
    }

    /// Judges and counts a fallback to a full commit.
    fn count_full_commit(&self, _t: TransId, cause: FullCommitCause, necessary: bool) {
        let mut m = self.inner.m.borrow_mut();
        m.full_commits += 1;
        if !necessary {
            m.unnecessary_full_commits += 1;
            *m.unnecessary_full_commits_by_cause
                .entry(cause.name().to_string())
                .or_default() += 1;
        }
    }

    /// Ancestors of `ino` up to the top directory, nearest first.
    fn ancestors(st: &FsState, ino: Ino) -> Vec<Ino> {
        let mut out = Vec::new();
        let mut cur = ino;
        while let Some(p) = st.parent_of(cur) {
            out.push(p);
            if p == ROOT_INO || out.len() > 64 {
                break;
            }
            cur = p;
        }
        out
    }

    /// btrfs_log_inode_parent.
    async fn log_inode_parent(&self, t: TransId, ino: Ino) -> LogResult {
        let last_committed = self.inner.st.borrow().last_trans_committed;
        // The check R5 removes.
        if !self.has(Fix::R5) {
            let flagged = self.inner.st.borrow().last_trans_log_full_commit;
            if flagged > last_committed {
                let necessary = oracle::full_commit_flag_is_real(&self.inner.st.borrow(), t);
                self.count_full_commit(t, FullCommitCause::StaleFullCommitCheck, necessary);
                return LogResult::FullCommit;
            }
        }
        // check_parent_dirs_for_sync (R4 changes its comparisons).
        let bound = if self.has(Fix::R4) {
            t
        } else {
            last_committed + 1
        };
        let (walk, ancestors) = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            let early_out = !i.is_dir && i.generation < bound && i.last_unlink_trans < bound;
            (!early_out, Self::ancestors(&st, ino))
        };
        if walk {
            let is_dir = self.inner.st.borrow().inodes[&ino].is_dir;
            let dirs: Vec<Ino> = is_dir
                .then_some(ino)
                .into_iter()
                .chain(ancestors.iter().copied())
                .collect();
            for &dir in &dirs {
                let must = self.inner.st.borrow().inodes[&dir].last_unlink_trans >= bound;
                if must {
                    // btrfs_must_commit_transaction → btrfs_set_log_full_commit(trans).
                    let necessary =
                        oracle::removal_in_current_trans(&self.inner.st.borrow(), &dirs, t);
                    {
                        let mut st = self.st_mut();
                        st.last_trans_log_full_commit = t;
                        st.trans.get_mut(&t).unwrap().marked_unnecessarily = !necessary;
                    }
                    self.count_full_commit(t, FullCommitCause::UnlinkTrans, necessary);
                    return LogResult::FullCommit;
                }
            }
        }
        let log_transid = match self.start_log_trans(t).await {
            Some(x) => x,
            None => {
                let necessary = oracle::full_commit_flag_is_real(&self.inner.st.borrow(), t);
                self.count_full_commit(t, FullCommitCause::LogFullCommitFlag, necessary);
                return LogResult::FullCommit;
            }
        };
        self.log_inode(t, ino, log_transid, LogKind::Fsync).await;
        // btrfs_log_all_parents for an inode that lost or gained a name recently (R4 site 4).
        let parents: Vec<Ino> = {
            let st = self.inner.st.borrow();
            if st.inodes[&ino].last_unlink_trans >= bound {
                let mut p: Vec<Ino> = st.names_of(ino).into_iter().map(|(d, _)| d).collect();
                p.dedup();
                p
            } else {
                Vec::new()
            }
        };
        for dir in parents {
            self.log_inode(t, dir, log_transid, LogKind::Parent).await;
        }
        // The regular-file early-out before logging new ancestors (R4 site 3).
        let log_ancestors = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            !(!i.is_dir && i.generation < bound && i.last_unlink_trans < bound)
        };
        if log_ancestors {
            // log_all_new_ancestors / log_new_ancestors(_fast) (R3).
            for &dir in &ancestors {
                if dir == ROOT_INO {
                    continue;
                }
                let gen = self.inner.st.borrow().inodes[&dir].generation;
                let new = if self.has(Fix::R3) {
                    gen >= t
                } else {
                    gen > last_committed
                };
                if new {
                    self.log_inode(t, dir, log_transid, LogKind::Ancestor).await;
                }
            }
        }
        self.end_log_trans();
        LogResult::Logged(log_transid)
    }

    /// start_log_trans: returns the log sub-transaction joined, or None for -EAGAIN.
    async fn start_log_trans(&self, t: TransId) -> Option<u64> {
        let h = &self.inner.h;
        let wait_class = h.class_static("tree_log_mutex");
        let me = h.current();
        let waited_before = h.account_of(me, wait_class);
        if self.has(Fix::R6) {
            // The log root tree is created under the tree root's log_mutex.
            let need = self.inner.st.borrow().log_root_tree_of != Some(t);
            if need {
                let _g = self.inner.tree_root_log_mutex.lock().await;
                let mut st = self.st_mut();
                if st.log_root_tree_of != Some(t) {
                    st.log_root_tree_of = Some(t);
                }
            }
        }
        let g = self.inner.log_mutex.lock().await;
        let has_log = self.inner.st.borrow().log_tree_of == Some(t);
        // btrfs_need_log_full_commit is checked only when the log tree already exists;
        // otherwise the log is created and btrfs_sync_log bails out later.
        if has_log && self.inner.st.borrow().last_trans_log_full_commit == t {
            drop(g);
            return None;
        }
        if !has_log {
            if !self.has(Fix::R6) {
                // Pre-6/6: tree_log_mutex around creating the log root tree, under log_mutex.
                let _tl = self.inner.tree_log_mutex.lock().await;
                let mut st = self.st_mut();
                if st.log_root_tree_of != Some(t) {
                    st.log_root_tree_of = Some(t);
                }
            }
            self.st_mut().log_tree_of = Some(t);
        }
        h.cpu(self.inner.costs.log_start).await;
        let log_transid = {
            let mut st = self.st_mut();
            st.log_writers += 1;
            st.log_transid
        };
        drop(g);
        let waited = h.account_of(me, wait_class) - waited_before;
        if waited > 0 {
            let mut m = self.inner.m.borrow_mut();
            m.tree_log_mutex_waits += 1;
            m.tree_log_mutex_wait_ns += waited;
        }
        Some(log_transid)
    }

    /// btrfs_end_log_trans.
    fn end_log_trans(&self) {
        self.st_mut().log_writers -= 1;
        self.inner.log_writers_wait.notify_all();
    }

    /// btrfs_log_inode: the inode item and its changed extents (R2) into the log.
    async fn log_inode(&self, t: TransId, ino: Ino, log_transid: u64, kind: LogKind) {
        let c = &self.inner.costs;
        let last_committed = self.inner.st.borrow().last_trans_committed;
        let (full_sync, extents, is_dir, names, mut versions, new_name_needed) = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            let ext: Vec<Extent> = if i.needs_full_sync {
                i.extents.clone()
            } else {
                i.extents
                    .iter()
                    .filter(|e| i.modified_extents.contains(&e.id))
                    .cloned()
                    .collect()
            };
            // The versions this log entry carries: the item (or, for an ancestor, its
            // creation) and its names.
            let mut versions = vec![match kind {
                LogKind::Ancestor => i.generation,
                _ => i.item_trans,
            }];
            versions.extend(oracle::name_versions(&st, ino));
            let new_name_needed = match kind {
                LogKind::NewName(old_dir) => {
                    oracle::in_current_log(&st, ino, t)
                        || old_dir.is_some_and(|d| oracle::in_current_log(&st, d, t))
                }
                _ => false,
            };
            (
                i.needs_full_sync,
                ext,
                i.is_dir,
                st.names_of(ino),
                versions,
                new_name_needed,
            )
        };
        let mut cpu = c.log_inode_item;
        let mut bytes = c.log_bytes_inode;
        let mut facts = vec![LogFact::Inode { ino, names, is_dir }];
        let mut judgments = Vec::new();
        for e in &extents {
            let old = if full_sync {
                // copy_items: a full sync copies only items of the running transaction.
                e.generation < t
            } else if self.has(Fix::R2) {
                // btrfs_log_changed_extents, the generation test R2 changes.
                e.generation < t
            } else {
                e.generation <= last_committed
            };
            if old {
                continue;
            }
            let csum = e.len.div_ceil(c.sectorsize) * c.csum_per_block;
            cpu += c.log_extent_item + csum * c.log_csum_per_byte;
            bytes += c.log_bytes_extent + csum;
            facts.push(LogFact::Extent { ino, extent: e.id });
            versions.push(e.generation);
            judgments.push(Judgment {
                transid: t,
                log_transid,
                what: Judged::Extent { csum },
                versions: vec![e.generation],
            });
        }
        {
            let mut m = self.inner.m.borrow_mut();
            m.inode_logs += 1;
            m.extent_logs += judgments.len() as u64;
            m.csum_bytes += judgments
                .iter()
                .map(|j| match j.what {
                    Judged::Extent { csum } => csum,
                    _ => 0,
                })
                .sum::<u64>();
            match kind {
                LogKind::Ancestor => m.ancestor_logs += 1,
                // R1's oracle: a new name must go into the log only if the inode or the
                // directory it left is already in this transaction's log.
                LogKind::NewName(_) if !new_name_needed => m.unnecessary_inode_logs += 1,
                _ => {}
            }
        }
        match kind {
            LogKind::Ancestor => judgments.push(Judgment {
                transid: t,
                log_transid,
                what: Judged::Ancestor,
                versions,
            }),
            LogKind::Fsync | LogKind::Parent => judgments.push(Judgment {
                transid: t,
                log_transid,
                what: Judged::Inode,
                versions,
            }),
            LogKind::NewName(_) => {}
        }
        self.inner.h.cpu(cpu).await;
        let mut st = self.st_mut();
        if new_name_needed {
            st.log_new_content.insert((t, log_transid));
        }
        st.judgments.extend(judgments);
        st.log_dirty_bytes += bytes;
        st.log_facts
            .entry((t, log_transid))
            .or_default()
            .extend(facts);
        let i = st.inodes.get_mut(&ino).unwrap();
        i.logged_trans = t;
        i.last_log_commit = i.last_sub_trans;
        i.needs_full_sync = false;
        i.modified_extents.clear();
    }

    /// Judges the logged entries of transaction `t` (up to log sub-transaction `upto`) by
    /// the state now: an entry was unnecessary when every version it carries belongs to a
    /// transaction whose commit superblock is already on disk. Returns whether any was
    /// necessary.
    fn judge(&self, t: TransId, upto: Option<u64>) -> bool {
        let mut st = self.st_mut();
        let (now, later): (Vec<Judgment>, Vec<Judgment>) = std::mem::take(&mut st.judgments)
            .into_iter()
            .partition(|j| j.transid == t && upto.is_none_or(|k| j.log_transid <= k));
        st.judgments = later;
        let mut any =
            upto.is_some_and(|k| st.log_new_content.range((t, 0)..=(t, k)).next().is_some());
        let mut m = self.inner.m.borrow_mut();
        for j in now {
            let necessary = j.versions.iter().any(|&v| !oracle::captured(&st, v));
            any |= necessary;
            if necessary {
                continue;
            }
            match j.what {
                Judged::Inode => m.unnecessary_inode_logs += 1,
                Judged::Ancestor => m.unnecessary_ancestor_logs += 1,
                Judged::Extent { csum } => {
                    m.unnecessary_extent_logs += 1;
                    m.unnecessary_csum_bytes += csum;
                }
            }
        }
        any
    }

    /// Judges every entry still pending (at the end of a run).
    pub fn finish(&self) {
        let ts: std::collections::BTreeSet<TransId> = self
            .inner
            .st
            .borrow()
            .judgments
            .iter()
            .map(|j| j.transid)
            .collect();
        for t in ts {
            self.judge(t, None);
        }
    }

    /// btrfs_log_new_name (link, rename): R1's early return.
    async fn log_new_name(&self, t: TransId, ino: Ino, old_dir: Option<Ino>) {
        let skip = {
            let st = self.inner.st.borrow();
            let logged = |i: Ino| st.inodes[&i].logged_trans;
            if self.has(Fix::R1) {
                logged(ino) < t && old_dir.is_none_or(|d| logged(d) < t)
            } else {
                let lc = st.last_trans_committed;
                logged(ino) <= lc && old_dir.is_none_or(|d| logged(d) <= lc)
            }
        };
        if skip {
            return;
        }
        if let Some(log_transid) = self.start_log_trans(t).await {
            self.log_inode(t, ino, log_transid, LogKind::NewName(old_dir))
                .await;
            self.end_log_trans();
        }
    }

    /// btrfs_sync_log: returns false when the log must fall back to a full commit.
    async fn sync_log(&self, t: TransId, log_transid: u64) -> bool {
        let h = &self.inner.h;
        let c = &self.inner.costs;
        let mut g = self.inner.log_mutex.lock().await;
        loop {
            let (done, ours_running, prev_running) = {
                let st = self.inner.st.borrow();
                (
                    st.last_log_commit > log_transid,
                    st.log_committing.contains(&log_transid),
                    log_transid > 0 && st.log_committing.contains(&(log_transid - 1)),
                )
            };
            if done {
                // Another task already synced the log sub-transaction we logged into.
                return true;
            }
            if !ours_running && !prev_running {
                break;
            }
            // wait_log_commit: sleep without root->log_mutex until that log commit ends.
            drop(g);
            self.inner.log_commit_wait.wait().await;
            g = self.inner.log_mutex.lock().await;
        }
        while self.inner.st.borrow().log_writers > 0 {
            self.inner.log_writers_wait.wait().await;
        }
        if self.inner.st.borrow().last_trans_log_full_commit == t {
            drop(g);
            return false;
        }
        self.st_mut().log_committing.insert(log_transid);
        self.point("sync_log:start").await;
        // Write the log tree's dirty blocks.
        let bytes = {
            let mut st = self.st_mut();
            std::mem::take(&mut st.log_dirty_bytes)
        };
        let blocks = bytes.div_ceil(c.nodesize).max(1);
        let (tok, off) = self.st_mut().new_write(
            WriteKind::LogBlocks {
                transid: t,
                log_transid,
            },
            blocks * c.nodesize,
        );
        self.inner
            .dev
            .submit(Request::write(off, blocks * c.nodesize).with_token(tok))
            .await;
        self.st_mut().log_transid += 1;
        // Later loggers start the next log sub-transaction while this one is committed.
        drop(g);
        // The log root tree, under its log_mutex.
        {
            let _lr = self.inner.log_root_tree_mutex.lock().await;
            let (tok, off) = self.st_mut().new_write(
                WriteKind::LogRoot {
                    transid: t,
                    log_transid,
                },
                c.nodesize,
            );
            self.inner
                .dev
                .submit(Request::write(off, c.nodesize).with_token(tok))
                .await;
        }
        self.point("sync_log:write_super").await;
        // 6/6: tree_log_mutex just before writing the superblock.
        let me = h.current();
        let class = h.class_static("tree_log_mutex");
        let before = h.account_of(me, class);
        let tl = if self.has(Fix::R6) && !self.mutant(Mutant::SyncLogNoSuperWait) {
            Some(self.inner.tree_log_mutex.lock().await)
        } else {
            None
        };
        let waited = h.account_of(me, class) - before;
        if waited > 0 {
            let mut m = self.inner.m.borrow_mut();
            m.sync_log_super_waits += 1;
            m.sync_log_super_wait_ns += waited;
        }
        // S1: the previous transaction's superblock must be on disk before ours is issued.
        let s1 = {
            let st = self.inner.st.borrow();
            st.trans
                .range(..t)
                .next_back()
                .filter(|(_, p)| !p.super_done)
                .map(|(id, _)| *id)
        };
        if let Some(prev) = s1 {
            self.violation(
                "S1",
                format!(
                    "log sync of transaction {t} issued its superblock before transaction {prev}'s superblock write completed"
                ),
            );
        }
        // The oracle judges this log's entries against what is on disk as the log's
        // superblock is issued.
        let necessary = self.judge(t, Some(log_transid));
        let base = self.inner.st.borrow().super_generation;
        let (tok, off) = self.st_mut().new_write(
            WriteKind::LogSuper {
                transid: t,
                log_transid,
                base,
            },
            4096,
        );
        let sb = if self.mutant(Mutant::SyncLogNoPreflush) {
            Request::fua_write(off, 4096)
        } else {
            Request {
                fua: true,
                ..Request::preflush_write(off, 4096)
            }
        };
        self.inner.dev.submit(sb.with_token(tok)).await;
        drop(tl);
        self.check_crash("a log superblock was written");
        {
            let mut m = self.inner.m.borrow_mut();
            m.log_syncs += 1;
            if !necessary {
                m.unnecessary_log_syncs += 1;
            }
        }
        {
            let mut st = self.st_mut();
            st.last_log_commit = st.last_log_commit.max(log_transid + 1);
            st.log_committing.remove(&log_transid);
        }
        self.inner.log_commit_wait.notify_all();
        true
    }

    /// Checks what a power loss now would leave (S2).
    pub fn check_crash(&self, when: &str) {
        if !self.inner.st.borrow().keep_history {
            return;
        }
        // Recovery is a pure function of the state and the durable image: reuse the last
        // verdict while neither changed.
        let key = (
            self.inner.st_version.get(),
            self.inner.dev.durable_version(),
        );
        let memo = self.inner.crash_memo.borrow().clone();
        let res = match memo {
            Some((k, res)) if k == key => res,
            _ => {
                let res = self.inner.dev.with_durable_image(|image| match image {
                    Some(image) => oracle::check_recovery(&self.inner.st.borrow(), image),
                    None => oracle::check_recovery(
                        &self.inner.st.borrow(),
                        &std::collections::BTreeMap::new(),
                    ),
                });
                *self.inner.crash_memo.borrow_mut() = Some((key, res.clone()));
                res
            }
        };
        if let Err(msg) = res {
            self.violation("S2", format!("crash when {when}: {msg}"));
        }
    }
}

/// The last trace lines of the filesystem's tasks (crash-point checks left out).
pub fn timeline(h: &Handle) -> Vec<String> {
    let lines: Vec<String> = h
        .recent_trace(400)
        .into_iter()
        .filter(|l| !l.contains(" crash-points "))
        .collect();
    lines[lines.len().saturating_sub(40)..].to_vec()
}

/// What a pending judgment is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The fsynced inode's item.
    Inode,
    /// A new ancestor directory.
    Ancestor,
    /// A file extent item with its checksum bytes.
    Extent {
        /// Checksum bytes logged with it.
        csum: u64,
    },
}

/// A logged entry waiting for the oracle's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgment {
    /// Transaction of the log.
    pub transid: TransId,
    /// Log sub-transaction it went into.
    pub log_transid: u64,
    /// What was logged.
    pub what: Judged,
    /// Transactions of the versions it carries.
    pub versions: Vec<TransId>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LogKind {
    Fsync,
    Ancestor,
    /// btrfs_log_all_parents.
    Parent,
    /// btrfs_log_new_name, with the rename's old directory.
    NewName(Option<Ino>),
}
