//! The journal (fs/jbd2 for ext4, fs/jbd for ext3), as in Linux 2.6.36–2.6.39: one running
//! transaction that handles join, kjournald2 committing it (running → locked → flush →
//! commit → finished), ordered data, log blocks in batches, the commit block, checkpointing
//! when the log fills, and the write type of the commit's log writes per kernel version
//! (seed 003, MODELS-J1-F1-H1.md J1).
//!
//! Files mirror the kernel's: `transaction.rs` (handles: start_this_handle,
//! jbd2_journal_stop, get_write_access/dirty_metadata), `journal.rs` (kjournald2, the commit
//! timer, jbd2_log_start_commit / jbd2_log_wait_commit, log space and checkpointing),
//! `commit.rs` (jbd2_journal_commit_transaction), `recovery.rs` (what journal replay keeps).

mod commit;
mod journal;
pub mod recovery;
mod transaction;

use crate::device::Device;
use sim::{Handle, Mutex, Nanos, TaskId, WaitQueue};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

pub use transaction::JHandle;

/// A dirty data buffer range filed on a transaction: (device offset, length, token).
pub type DataBuf = (u64, u64, u64);

/// Transaction id (tid_t).
pub type Tid = u64;

/// Block size of the modelled filesystems and their journals: 4 KiB.
pub const BLOCK: u64 = 4096;

/// How the commit's log (descriptor, metadata copy) blocks are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CommitWriteOp {
    /// `WRITE` unless a handle was synchronous (`WRITE_SYNC_PLUG`): v2.6.36
    /// (fs/jbd2/commit.c:jbd2_journal_commit_transaction@v2.6.36).
    Write,
    /// `WRITE_SYNC` (sync, noidle, unplug per bio), `WRITE_SYNC_PLUG` for synchronous
    /// handles: v2.6.37 and v2.6.38 (749ef9f8423054e326f).
    WriteSync,
    /// Jan Kara's RFC (seed 003): `WRITE` unless someone will wait for this commit
    /// (`j_commit_waited ≥ tid`, raised by `__jbd2_log_start_commit(will_wait)`), decided
    /// once at T_LOCKED.
    WaitedAtLock,
    /// The merged jbd refinement (2db938bee32e, ≥ 2.6.39, ext3's jbd only): `WRITE` unless
    /// `log_wait_commit` raised `j_commit_waited ≥ tid`, decided at commit phase 2.
    WaitedAtFlush,
}

impl CommitWriteOp {
    /// Name used in policy listings.
    pub fn name(self) -> &'static str {
        match self {
            CommitWriteOp::Write => "WRITE",
            CommitWriteOp::WriteSync => "WRITE_SYNC",
            CommitWriteOp::WaitedAtLock => "sync-if-waited@T_LOCKED",
            CommitWriteOp::WaitedAtFlush => "sync-if-waited@T_FLUSH",
        }
    }
}

/// The journal's version-dependent behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct JournalPolicy {
    /// ext4's jbd2.
    pub jbd2: CommitWriteOp,
    /// ext3's jbd.
    pub jbd: CommitWriteOp,
    /// ext4_sync_file waits only when its jbd2_log_start_commit started the commit (2.6.37
    /// to 3.0; otherwise it issues a flush and returns, fs/ext4/fsync.c:ext4_sync_file@v2.6.37).
    pub ext4_fsync_waits_only_if_started: bool,
}

impl JournalPolicy {
    /// Modern kernels: REQ_SYNC log writes (fs/jbd2/commit.c@v5.17), fsync always waits.
    pub const MODERN: JournalPolicy = JournalPolicy {
        jbd2: CommitWriteOp::WriteSync,
        jbd: CommitWriteOp::WaitedAtFlush,
        ext4_fsync_waits_only_if_started: false,
    };
}

impl Default for JournalPolicy {
    /// `JournalPolicy::MODERN`.
    fn default() -> Self {
        JournalPolicy::MODERN
    }
}

/// Which journal code: ext3's fs/jbd or ext4's fs/jbd2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// fs/jbd (ext3): in data=ordered kjournald writes the transaction's dirty data buffers
    /// itself, with the commit's write type (fs/jbd/commit.c:journal_submit_data_buffers).
    Jbd,
    /// fs/jbd2 (ext4): ordered inodes are waited on; delalloc writeback wrote their data.
    Jbd2,
}

/// Journal parameters (mount options and on-disk geometry).
#[derive(Clone, Debug)]
pub struct JournalConfig {
    /// ext3 or ext4 journal code.
    pub flavor: Flavor,
    /// Byte offset of the journal area on the device.
    pub offset: u64,
    /// Journal length in blocks (mke2fs default for a ≥ 4 GiB filesystem: 32768 blocks =
    /// 128 MiB, lib/ext2fs/mkjournal.c:ext2fs_default_journal_size@e2fsprogs-1.41).
    pub blocks: u64,
    /// `commit=` (JBD2_DEFAULT_MAX_COMMIT_AGE 5 s, include/linux/jbd2.h@v2.6.37).
    pub commit_interval: Nanos,
    /// `barrier=1` (ext4 default; ext3's default is 0 in 2.6.37, fs/ext3/super.c).
    pub barrier: bool,
    /// The write-type policy.
    pub policy: JournalPolicy,
    /// CPU per metadata buffer the commit copies into the log (jbd2_journal_write_metadata_buffer:
    /// a 4 KiB copy plus list moves; guess: 2 us).
    pub copy_per_block: Nanos,
}

/// A transaction's life (include/linux/jbd2.h: t_state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TState {
    /// Accepting handles.
    Running,
    /// No new handles; waiting for t_updates to drain.
    Locked,
    /// Ordered data being written (the next transaction may start).
    Flush,
    /// Log blocks being written (then the transaction leaves the list: T_FINISHED).
    Commit,
}

/// One transaction (transaction_t).
#[derive(Clone, Debug)]
pub struct Transaction {
    /// t_tid.
    pub tid: Tid,
    /// t_state.
    pub state: TState,
    /// Handles open (t_updates).
    pub updates: u32,
    /// Credits of open handles (t_outstanding_credits).
    pub outstanding: u64,
    /// Metadata blocks (home block numbers) in this transaction (t_buffers).
    pub buffers: BTreeSet<u64>,
    /// Inodes with ordered data (t_inode_list, jbd2).
    pub inodes: BTreeSet<u64>,
    /// Dirty data buffers filed on the transaction (t_sync_datalist, jbd): ino → (byte
    /// offset on the device, length, content token).
    pub data: BTreeMap<u64, Vec<(u64, u64, u64)>>,
    /// t_start_time.
    pub start: Nanos,
    /// t_expires.
    pub expires: Nanos,
    /// t_synchronous_commit: a handle was synchronous (O_SYNC, dirsync).
    pub synchronous: bool,
}

impl Transaction {
    /// Moves the transaction to the next commit state, asserting the one it leaves as
    /// fs/jbd2/commit.c:jbd2_journal_commit_transaction@v2.6.37 does (J_ASSERT on t_state):
    /// a transaction is locked only while running, flushed only when locked, committed only
    /// when flushed.
    pub fn advance(&mut self, to: TState) {
        let from = match to {
            TState::Running => unreachable!("a transaction is created running"),
            TState::Locked => TState::Running,
            TState::Flush => TState::Locked,
            TState::Commit => TState::Flush,
        };
        assert_eq!(
            self.state, from,
            "jbd2: transaction {} to {to:?} from {:?}",
            self.tid, self.state
        );
        self.state = to;
    }
}

/// Counters of the journal (reported under the `ext4.` names).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Commits finished.
    pub commits: u64,
    /// Commits whose log writes were REQ_SYNC.
    pub sync_commits: u64,
    /// Commits whose log writes were plain WRITE (async).
    pub async_commits: u64,
    /// Commits of a transaction someone waited for (fsync, sync) that were written async.
    pub waited_async_commits: u64,
    /// Commits started by the commit timer (t_expires).
    pub timer_commits: u64,
    /// Log blocks written (descriptors + metadata copies + commit blocks).
    pub log_blocks: u64,
    /// ns from T_LOCKED to T_FINISHED, summed.
    pub commit_ns: u64,
    /// Longest commit, ns.
    pub commit_max_ns: u64,
    /// ns handles waited for a locked transaction (j_wait_transaction_locked).
    pub handle_wait_ns: u64,
    /// ns callers waited in jbd2_log_wait_commit, summed.
    pub commit_wait_ns: u64,
    /// jbd2_log_wait_commit calls that waited.
    pub commit_waits: u64,
    /// Checkpoints forced by a full log (__jbd2_log_wait_for_space).
    pub checkpoints: u64,
    /// fsyncs that returned after only a cache flush because the commit had already been
    /// requested (ext4_sync_file@v2.6.37, start_commit returned 0).
    pub fsync_flush_only: u64,
    /// fsyncs that waited for a commit.
    pub fsync_commit_waits: u64,
    /// Data bytes kjournald wrote for data=ordered (jbd).
    pub ordered_data_bytes: u64,
}

/// The journal's state (journal_t).
#[derive(Clone, Debug, Default)]
pub struct JState {
    /// Transactions not yet checkpointed, by tid (running and committing included).
    pub trans: BTreeMap<Tid, Transaction>,
    /// j_running_transaction.
    pub running: Option<Tid>,
    /// j_committing_transaction.
    pub committing: Option<Tid>,
    /// j_commit_sequence: the last finished commit.
    pub commit_sequence: Tid,
    /// j_commit_request: the newest tid asked to commit.
    pub commit_request: Tid,
    /// j_commit_waited (Jan Kara's refinement).
    pub commit_waited: Tid,
    /// The newest tid anyone asked to wait for (for the counters; every policy).
    pub waited_for: Tid,
    /// The next tid (j_transaction_sequence).
    pub next_tid: Tid,
    /// j_free: free log blocks.
    pub free: u64,
    /// j_head: next log block (index in the journal area).
    pub head: u64,
    /// j_average_commit_time, ns.
    pub average_commit_ns: Nanos,
    /// j_last_sync_writer.
    pub last_sync_writer: Option<TaskId>,
    /// Finished transactions whose metadata is not yet written home: tid → (blocks, log
    /// blocks to free, when it finished).
    pub checkpoint: BTreeMap<Tid, (BTreeSet<u64>, u64, Nanos)>,
    /// The tid whose commit block is at each log position (for recovery): tid → (commit
    /// block offset, token, first log offset, log block tokens).
    pub commit_blocks: BTreeMap<Tid, CommitRecord>,
    /// Highest tid whose metadata is durable at home (checkpointed, flushed).
    pub checkpointed: Tid,
    /// Counters.
    pub stats: JournalStats,
}

/// Where a transaction's commit landed in the log (what recovery scans).
#[derive(Clone, Debug, Default)]
pub struct CommitRecord {
    /// Offset and token of the commit block.
    pub commit: (u64, u64),
    /// Offsets and tokens of its descriptor and metadata copies.
    pub blocks: Vec<(u64, u64)>,
}

struct Inner {
    h: Handle,
    dev: Device,
    cfg: JournalConfig,
    st: RefCell<JState>,
    /// j_wait_transaction_locked.
    wait_locked: WaitQueue,
    /// j_wait_updates.
    wait_updates: WaitQueue,
    /// j_wait_commit: kjournald2 sleeps here.
    wait_commit: WaitQueue,
    /// j_wait_done_commit.
    wait_done: WaitQueue,
    /// j_checkpoint_mutex.
    checkpoint_mutex: Mutex,
    /// The next content token for a journal write.
    tokens: std::cell::Cell<u64>,
    /// Data writes in flight per inode (ordered-mode waits), shared with the filesystem.
    io: Rc<InflightIo>,
}

/// Data writes in flight per inode, and a queue to wait for them (filemap_fdatawait); and
/// the page cache's dirty and writeback bytes (NR_FILE_DIRTY, NR_WRITEBACK).
pub struct InflightIo {
    count: RefCell<BTreeMap<u64, u32>>,
    done: WaitQueue,
    dirty: std::cell::Cell<u64>,
    writeback: std::cell::Cell<u64>,
}

impl InflightIo {
    /// An empty tracker.
    pub fn new(h: &Handle) -> Rc<Self> {
        Rc::new(InflightIo {
            count: RefCell::new(BTreeMap::new()),
            done: WaitQueue::new(h, "wait_on_page_writeback"),
            dirty: std::cell::Cell::new(0),
            writeback: std::cell::Cell::new(0),
        })
    }
    /// Bytes dirty in the page cache and not yet submitted.
    pub fn dirty(&self) -> u64 {
        self.dirty.get()
    }
    /// Bytes submitted for writeback and not yet written.
    pub fn writeback(&self) -> u64 {
        self.writeback.get()
    }
    /// `n` bytes were dirtied.
    pub fn dirtied(&self, n: u64) {
        self.dirty.set(self.dirty.get() + n);
    }
    /// `n` dirty bytes were submitted for writeback.
    pub fn cleaned(&self, n: u64) {
        self.dirty.set(self.dirty.get().saturating_sub(n));
        self.writeback.set(self.writeback.get() + n);
    }
    /// `n` bytes under writeback reached the device.
    pub fn written(&self, n: u64) {
        self.writeback.set(self.writeback.get().saturating_sub(n));
    }
    /// `n` dirty bytes were dropped without being written (truncate, unlink).
    pub fn dropped(&self, n: u64) {
        self.dirty.set(self.dirty.get().saturating_sub(n));
    }
    /// A data write of `ino` was submitted.
    pub fn start(&self, ino: u64) {
        *self.count.borrow_mut().entry(ino).or_insert(0) += 1;
    }
    /// A data write of `ino` completed.
    pub fn end(&self, ino: u64) {
        let mut c = self.count.borrow_mut();
        let n = c.get_mut(&ino).expect("write in flight");
        *n -= 1;
        if *n == 0 {
            c.remove(&ino);
            drop(c);
            self.done.notify_all();
        }
    }
    /// Waits until `ino` has no data write in flight.
    pub async fn wait(&self, ino: u64) {
        while self.count.borrow().contains_key(&ino) {
            self.done.wait().await;
        }
    }
}

/// A journal on one device; clone it into every task.
#[derive(Clone)]
pub struct Journal {
    inner: Rc<Inner>,
}

impl Journal {
    /// A freshly created journal (mke2fs: tid 1 next, all log blocks free).
    pub fn new(h: &Handle, dev: Device, cfg: JournalConfig, io: Rc<InflightIo>) -> Self {
        let free = cfg.blocks;
        Journal {
            inner: Rc::new(Inner {
                h: h.clone(),
                dev,
                st: RefCell::new(JState {
                    next_tid: 1,
                    free,
                    ..JState::default()
                }),
                cfg,
                wait_locked: WaitQueue::new(h, "j_wait_transaction_locked"),
                wait_updates: WaitQueue::new(h, "j_wait_updates"),
                wait_commit: WaitQueue::new(h, "j_wait_commit"),
                wait_done: WaitQueue::new(h, "j_wait_done_commit"),
                checkpoint_mutex: Mutex::new(h, "j_checkpoint_mutex"),
                tokens: std::cell::Cell::new(1 << 48),
                io,
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &JournalConfig {
        &self.inner.cfg
    }

    /// A copy of the journal state.
    pub fn state(&self) -> JState {
        self.inner.st.borrow().clone()
    }

    /// The counters.
    pub fn stats(&self) -> JournalStats {
        self.inner.st.borrow().stats.clone()
    }

    /// The running transaction's tid, if one is running.
    pub fn running(&self) -> Option<Tid> {
        self.inner.st.borrow().running
    }

    /// j_commit_sequence.
    pub fn commit_sequence(&self) -> Tid {
        self.inner.st.borrow().commit_sequence
    }

    fn token(&self) -> u64 {
        let t = self.inner.tokens.get();
        self.inner.tokens.set(t + 1);
        t
    }

    /// The task's I/O context for CFQ (one per task; kernel threads have their own too).
    pub fn ioc(h: &Handle) -> u32 {
        h.current() + 1
    }
}

/// One WRITE bio per buffer_head (4 KiB) of a data range, as ext3's block_write_full_page
/// and jbd's journal_submit_data_buffers submit them (`submit_bh` per buffer).
pub fn buffer_writes(
    (off, len, token): DataBuf,
    class: crate::device::IoClass,
    (noidle, unplug): (bool, bool),
    ioc: u32,
) -> impl Iterator<Item = crate::device::Request> {
    (0..len.div_ceil(BLOCK)).map(move |k| {
        crate::device::Request::write(off + k * BLOCK, BLOCK.min(len - k * BLOCK))
            .with_token(token)
            .with_class(class)
            .with_hints(noidle, unplug)
            .with_ioc(ioc)
    })
}

/// Submits `reqs` back to back without waiting (`submit_bh` per buffer: the queue stays
/// plugged unless a request unplugs it), then waits for each (`wait_on_buffer`, which
/// unplugs).
pub async fn submit_and_wait(dev: &Device, reqs: Vec<crate::device::Request>) {
    let tickets: Vec<_> = reqs.into_iter().map(|r| dev.submit_nowait(r)).collect();
    for t in tickets {
        dev.wait(t).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(tid: Tid) -> Transaction {
        Transaction {
            tid,
            state: TState::Running,
            updates: 0,
            outstanding: 0,
            buffers: BTreeSet::new(),
            inodes: BTreeSet::new(),
            data: BTreeMap::new(),
            start: 0,
            expires: 0,
            synchronous: false,
        }
    }

    #[test]
    fn a_transaction_advances_through_the_commit_states_in_order() {
        let mut t = running(7);
        for s in [TState::Locked, TState::Flush, TState::Commit] {
            t.advance(s);
            assert_eq!(t.state, s);
        }
    }

    #[test]
    #[should_panic(expected = "jbd2: transaction 7 to Commit from Locked")]
    fn skipping_t_flush_is_caught() {
        let mut t = running(7);
        t.advance(TState::Locked);
        t.advance(TState::Commit);
    }
}
