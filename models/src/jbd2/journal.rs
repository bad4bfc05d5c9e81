//! kjournald2, the commit timer, jbd2_log_start_commit / jbd2_log_wait_commit, and log
//! space (fs/jbd2/journal.c, fs/jbd2/checkpoint.c@v2.6.37).

use super::{CommitWriteOp, Flavor, Journal, Tid, BLOCK};
use crate::device::{IoClass, Request};

impl Journal {
    /// Starts kjournald2 and the commit timer as daemon tasks.
    pub fn spawn_daemons(&self) {
        let j = self.clone();
        let name = match self.inner.cfg.flavor {
            Flavor::Jbd => "kjournald",
            Flavor::Jbd2 => "kjournald2",
        };
        self.inner
            .h
            .spawn_daemon(name, async move { j.kjournald().await });
        let j = self.clone();
        self.inner
            .h
            .spawn_daemon("jbd2-commit-timer", async move { j.commit_timer().await });
    }

    /// kjournald2 (fs/jbd2/journal.c@v2.6.37): commits while j_commit_sequence lags
    /// j_commit_request, else sleeps on j_wait_commit.
    async fn kjournald(&self) {
        let inner = &self.inner;
        loop {
            let todo = {
                let st = inner.st.borrow();
                st.commit_sequence < st.commit_request && st.running.is_some()
            };
            if todo {
                self.commit_transaction().await;
                continue;
            }
            inner.wait_done.notify_all();
            inner.wait_commit.wait().await;
        }
    }

    /// commit_timeout + kjournald2's t_expires check: once the running transaction is older
    /// than the commit interval, its commit is requested.
    async fn commit_timer(&self) {
        let inner = &self.inner;
        loop {
            let (running, expires) = {
                let st = inner.st.borrow();
                match st.running {
                    Some(t) => (Some(t), st.trans[&t].expires),
                    None => (None, 0),
                }
            };
            let Some(tid) = running else {
                inner.wait_commit.wait().await;
                continue;
            };
            let now = inner.h.now();
            if now < expires {
                inner.h.sleep(expires - now).await;
                continue;
            }
            let requested = {
                let mut st = inner.st.borrow_mut();
                if st.commit_request < tid && st.running == Some(tid) {
                    st.commit_request = tid;
                    st.stats.timer_commits += 1;
                    true
                } else {
                    false
                }
            };
            if requested {
                inner.wait_commit.notify_all();
            }
            // Until this transaction stops running.
            while inner.st.borrow().running == Some(tid) {
                inner.wait_done.wait().await;
            }
        }
    }

    /// __jbd2_log_start_commit: asks kjournald2 to commit `tid` unless a commit of it or a
    /// newer one was already asked for; true if this call asked. `will_wait` raises
    /// j_commit_waited under Jan Kara's RFC.
    pub fn start_commit(&self, tid: Tid, will_wait: bool) -> bool {
        let inner = &self.inner;
        let mut st = inner.st.borrow_mut();
        if will_wait {
            st.waited_for = st.waited_for.max(tid);
        }
        if will_wait && self.write_op() == CommitWriteOp::WaitedAtLock {
            st.commit_waited = st.commit_waited.max(tid);
        }
        if st.commit_request < tid {
            st.commit_request = tid;
            drop(st);
            inner.wait_commit.notify_all();
            true
        } else {
            false
        }
    }

    /// jbd2_log_wait_commit: waits until `tid` has committed (j_commit_sequence ≥ tid).
    /// Under the merged jbd refinement it raises j_commit_waited first.
    pub async fn wait_commit(&self, tid: Tid) {
        let inner = &self.inner;
        if self.write_op() == CommitWriteOp::WaitedAtFlush {
            let mut st = inner.st.borrow_mut();
            st.commit_waited = st.commit_waited.max(tid);
        }
        {
            let mut st = inner.st.borrow_mut();
            st.waited_for = st.waited_for.max(tid);
        }
        let start = inner.h.now();
        let mut waited = false;
        while inner.st.borrow().commit_sequence < tid {
            waited = true;
            inner.wait_commit.notify_all();
            inner.wait_done.wait().await;
        }
        if waited {
            let mut st = inner.st.borrow_mut();
            st.stats.commit_waits += 1;
            st.stats.commit_wait_ns += inner.h.now() - start;
        }
    }

    /// The write-type policy of this journal's code (jbd or jbd2).
    pub(super) fn write_op(&self) -> CommitWriteOp {
        match self.inner.cfg.flavor {
            Flavor::Jbd => self.inner.cfg.policy.jbd,
            Flavor::Jbd2 => self.inner.cfg.policy.jbd2,
        }
    }

    /// Counts an fsync that returned after a flush without waiting for the commit.
    pub fn note_fsync(&self, waited: bool) {
        let mut st = self.inner.st.borrow_mut();
        if waited {
            st.stats.fsync_commit_waits += 1;
        } else {
            st.stats.fsync_flush_only += 1;
        }
    }

    /// blkdev_issue_flush: an empty FLUSH from the caller.
    pub async fn issue_flush(&self) {
        let ioc = Journal::ioc(&self.inner.h);
        self.inner.dev.submit(Request::flush().with_ioc(ioc)).await;
    }

    /// __jbd2_log_wait_for_space: checkpoints the oldest finished transactions (their
    /// metadata written home with WRITE, then a flush and the journal superblock,
    /// jbd2_cleanup_journal_tail@v2.6.37) until a full transaction fits; or waits for the
    /// committing transaction when nothing is left to checkpoint.
    pub(super) async fn wait_for_space(&self) {
        let inner = &self.inner;
        let _g = inner.checkpoint_mutex.lock().await;
        loop {
            let (short, oldest, committing) = {
                let st = inner.st.borrow();
                (
                    Journal::space_left(&st) < self.space_needed(&st),
                    st.checkpoint.keys().next().copied(),
                    st.committing,
                )
            };
            if !short {
                return;
            }
            match (oldest, committing) {
                (Some(tid), _) => {
                    inner.st.borrow_mut().stats.checkpoints += 1;
                    self.do_checkpoint(tid).await
                }
                (None, Some(t)) => self.wait_commit(t).await,
                // Nothing to free: the running transaction must commit first.
                (None, None) => {
                    if let Some(t) = self.running() {
                        self.start_commit(t, false);
                        self.wait_commit(t).await;
                    } else {
                        return;
                    }
                }
            }
        }
    }

    /// jbd2_log_do_checkpoint + jbd2_cleanup_journal_tail for the oldest transaction.
    async fn do_checkpoint(&self, tid: Tid) {
        let inner = &self.inner;
        let (blocks, log_blocks, _) = match inner.st.borrow_mut().checkpoint.remove(&tid) {
            Some(x) => x,
            None => return,
        };
        let ioc = Journal::ioc(&inner.h);
        let reqs: Vec<Request> = blocks
            .iter()
            .map(|&b| {
                Request::write(b * BLOCK, BLOCK)
                    .with_token(self.home_token(tid))
                    .with_class(IoClass::Async)
                    .with_ioc(ioc)
            })
            .collect();
        super::submit_and_wait(&inner.dev, reqs).await;
        if inner.cfg.barrier {
            self.issue_flush().await;
        }
        // The journal superblock records the new tail (write_dirty_buffer + wait).
        let sb = Request::write(inner.cfg.offset, BLOCK)
            .with_token(self.token())
            .with_ioc(ioc);
        inner.dev.submit(sb).await;
        let mut st = inner.st.borrow_mut();
        st.free += log_blocks;
        if inner.cfg.barrier || !inner.dev.config().write_cache {
            st.checkpointed = st.checkpointed.max(tid);
        }
        st.commit_blocks.remove(&tid);
    }

    /// The flusher's share of checkpointing: metadata of transactions finished before
    /// `cutoff` is written home (kupdate writes the block device's buffers dirty for
    /// dirty_expire, fs/fs-writeback.c@v2.6.37) and its log space released.
    pub async fn checkpoint_expired(&self, cutoff: sim::Nanos) {
        let inner = &self.inner;
        let _g = inner.checkpoint_mutex.lock().await;
        loop {
            let oldest = {
                let st = inner.st.borrow();
                st.checkpoint
                    .iter()
                    .next()
                    .filter(|(_, v)| v.2 <= cutoff)
                    .map(|(&t, _)| t)
            };
            match oldest {
                Some(t) => self.do_checkpoint(t).await,
                None => return,
            }
        }
    }

    /// The token of a metadata block written home by the checkpoint of `tid`.
    fn home_token(&self, tid: Tid) -> u64 {
        (1 << 47) + tid
    }
}
