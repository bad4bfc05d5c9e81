//! Handles (fs/jbd2/transaction.c@v2.6.37): start_this_handle, jbd2_journal_get_write_access
//! + jbd2_journal_dirty_metadata, jbd2_journal_file_inode, jbd2_journal_stop.

use super::{Journal, TState, Tid, Transaction};

/// What one pass of start_this_handle found.
enum Join {
    /// Joined this transaction.
    Joined(Tid),
    /// Started a new running transaction; look again.
    Started,
    /// The running transaction is locked for commit.
    Locked,
    /// Joining would exceed j_max_transaction_buffers.
    TooBig(Tid),
    /// The log lacks space for a full transaction.
    NoSpace,
}

/// An open handle (handle_t): the transaction it joined and its credits.
#[derive(Debug)]
pub struct JHandle {
    /// h_transaction's tid.
    pub tid: Tid,
    /// h_buffer_credits.
    pub credits: u64,
    /// h_sync: the caller waits for the commit at stop (O_SYNC, dirsync).
    pub sync: bool,
}

impl Journal {
    /// j_max_transaction_buffers = j_maxlen / 4 (fs/jbd2/journal.c:journal_reset@v2.6.37).
    pub fn max_transaction_buffers(&self) -> u64 {
        self.inner.cfg.blocks / 4
    }

    /// __jbd2_log_space_left: free log blocks less 32 reserved, less an eighth for
    /// descriptors (fs/jbd2/journal.c@v2.6.37).
    pub(super) fn space_left(st: &super::JState) -> u64 {
        let left = st.free.saturating_sub(32);
        left - (left >> 3)
    }

    /// jbd_space_needed: a full transaction plus the committing one's credits
    /// (include/linux/jbd2.h@v2.6.37).
    pub(super) fn space_needed(&self, st: &super::JState) -> u64 {
        let committing = st
            .committing
            .and_then(|t| st.trans.get(&t))
            .map_or(0, |t| t.outstanding);
        self.max_transaction_buffers() + committing
    }

    /// start_this_handle: joins the running transaction (starting one if none runs),
    /// waiting while it is locked, while it would exceed j_max_transaction_buffers, or while
    /// the log lacks space (then checkpointing).
    pub async fn start(&self, credits: u64) -> JHandle {
        let inner = &self.inner;
        let started = inner.h.now();
        loop {
            match self.try_join(credits) {
                Join::Joined(tid) => {
                    inner.st.borrow_mut().stats.handle_wait_ns += inner.h.now() - started;
                    return JHandle {
                        tid,
                        credits,
                        sync: false,
                    };
                }
                Join::Started => {
                    inner.wait_commit.notify_all();
                }
                Join::Locked => inner.wait_locked.wait().await,
                Join::TooBig(tid) => {
                    // Too big: ask for its commit and wait for the next transaction.
                    self.start_commit(tid, false);
                    inner.wait_locked.wait().await;
                }
                Join::NoSpace => self.wait_for_space().await,
            }
        }
    }

    /// One pass of start_this_handle's checks under j_state_lock.
    fn try_join(&self, credits: u64) -> Join {
        let inner = &self.inner;
        let mut st = inner.st.borrow_mut();
        let Some(tid) = st.running else {
            // jbd2_get_transaction: a new running transaction, expiring after the commit
            // interval (the commit timer is told through j_wait_commit).
            let tid = st.next_tid;
            st.next_tid += 1;
            let now = inner.h.now();
            st.trans.insert(
                tid,
                Transaction {
                    tid,
                    state: TState::Running,
                    updates: 0,
                    outstanding: 0,
                    buffers: Default::default(),
                    inodes: Default::default(),
                    data: Default::default(),
                    start: now,
                    expires: now + inner.cfg.commit_interval,
                    synchronous: false,
                },
            );
            st.running = Some(tid);
            return Join::Started;
        };
        if st.trans[&tid].state == TState::Locked {
            return Join::Locked;
        }
        if st.trans[&tid].outstanding + credits > self.max_transaction_buffers() {
            return Join::TooBig(tid);
        }
        if Self::space_left(&st) < self.space_needed(&st) {
            return Join::NoSpace;
        }
        let t = st.trans.get_mut(&tid).unwrap();
        t.outstanding += credits;
        t.updates += 1;
        Join::Joined(tid)
    }

    /// jbd2_journal_get_write_access + jbd2_journal_dirty_metadata: files a metadata block
    /// (its home block number) on the handle's transaction once.
    pub fn dirty_metadata(&self, h: &JHandle, block: u64) {
        let mut st = self.inner.st.borrow_mut();
        st.trans.get_mut(&h.tid).unwrap().buffers.insert(block);
    }

    /// jbd2_journal_file_inode: the inode's data must be written before this commit.
    pub fn file_inode(&self, h: &JHandle, ino: u64) {
        let mut st = self.inner.st.borrow_mut();
        st.trans.get_mut(&h.tid).unwrap().inodes.insert(ino);
    }

    /// journal_dirty_data (fs/jbd, ext3 data=ordered): files a dirty data buffer range on
    /// the transaction; kjournald writes what is still dirty at commit.
    pub fn file_data(&self, h: &JHandle, ino: u64, off: u64, len: u64, token: u64) {
        let mut st = self.inner.st.borrow_mut();
        st.trans
            .get_mut(&h.tid)
            .unwrap()
            .data
            .entry(ino)
            .or_default()
            .push((off, len, token));
    }

    /// Takes the inode's dirty data buffers off the transactions that have not started
    /// writing them (the caller writes them: fsync, the flusher); kjournald then skips them.
    pub fn take_data(&self, ino: u64) -> Vec<(u64, u64, u64)> {
        self.take_data_upto(ino, u64::MAX)
    }

    /// As `take_data`, at most `max` bytes, oldest transaction and oldest buffer first (a
    /// range is split at the limit).
    pub fn take_data_upto(&self, ino: u64, max: u64) -> Vec<(u64, u64, u64)> {
        let mut st = self.inner.st.borrow_mut();
        let mut out = Vec::new();
        let mut left = max;
        for t in st.trans.values_mut() {
            if left == 0 {
                break;
            }
            if t.state > TState::Locked {
                continue;
            }
            let Some(v) = t.data.get_mut(&ino) else {
                continue;
            };
            let mut taken = 0;
            for b in v.iter_mut() {
                if left == 0 {
                    break;
                }
                if b.1 <= left {
                    left -= b.1;
                    out.push(*b);
                    taken += 1;
                } else {
                    out.push((b.0, left, b.2));
                    *b = (b.0 + left, b.1 - left, b.2);
                    left = 0;
                }
            }
            v.drain(..taken);
            if v.is_empty() {
                t.data.remove(&ino);
            }
        }
        out
    }

    /// jbd2_journal_stop: drops the handle; a synchronous handle sleeps up to the average
    /// commit time to batch other sync writers (unless it was the last sync writer), then
    /// starts the commit and waits for it; a too-old or too-big transaction is asked to
    /// commit.
    pub async fn stop(&self, h: JHandle) {
        let inner = &self.inner;
        let me = inner.h.current();
        if h.sync {
            let (batch, trans_age) = {
                let mut st = inner.st.borrow_mut();
                let batch = if st.last_sync_writer != Some(me) {
                    st.last_sync_writer = Some(me);
                    // min/max batch time 0 / 15 ms (fs/jbd2/journal.c@v2.6.37).
                    Some(st.average_commit_ns.min(15 * sim::MS))
                } else {
                    None
                };
                (batch, inner.h.now() - st.trans[&h.tid].start)
            };
            if let Some(b) = batch {
                if trans_age < b {
                    inner.h.sleep(b).await;
                }
            }
        }
        let (tid, too_old) = {
            let mut st = inner.st.borrow_mut();
            let now = inner.h.now();
            let max = self.max_transaction_buffers();
            let t = st.trans.get_mut(&h.tid).unwrap();
            if h.sync {
                t.synchronous = true;
            }
            t.outstanding -= h.credits;
            t.updates -= 1;
            let too_old = t.outstanding > max || now >= t.expires;
            if t.updates == 0 {
                drop(st);
                inner.wait_updates.notify_all();
            }
            (h.tid, too_old)
        };
        if h.sync || too_old {
            self.start_commit(tid, h.sync);
            if h.sync {
                self.wait_commit(tid).await;
            }
        }
    }
}
