//! jbd2_journal_commit_transaction (fs/jbd2/commit.c@v2.6.37; fs/jbd/commit.c for ext3).

use super::{CommitRecord, CommitWriteOp, Flavor, Journal, TState, Tid, BLOCK};
use crate::device::{IoClass, Request};
use sim::Nanos;

/// Block tags per descriptor block: (4096 − 12-byte header − 16-byte UUID) / 8-byte tags
/// (JBD2_TAG_SIZE32 without the 64bit feature, include/linux/jbd2.h@v2.6.37).
const TAGS_PER_DESCRIPTOR: u64 = (BLOCK - 12 - 16) / 8;

impl Journal {
    /// Commits the running transaction: T_LOCKED (choose the write type, wait for
    /// t_updates), T_FLUSH (the next transaction may start; ordered data), T_COMMIT
    /// (descriptor + metadata copies in batches of j_wbufsize, then the commit block with
    /// PREFLUSH|FUA when barriers are on), T_FINISHED (checkpoint list, wake waiters).
    pub(super) async fn commit_transaction(&self) {
        let inner = &self.inner;
        let h = &inner.h;
        let ioc = Journal::ioc(h);
        let tid = {
            let mut st = inner.st.borrow_mut();
            let Some(tid) = st.running else { return };
            // J_ASSERT(journal->j_committing_transaction == NULL): one commit at a time.
            assert_eq!(st.committing, None, "jbd2: commit of {tid} while one runs");
            st.trans.get_mut(&tid).unwrap().advance(TState::Locked);
            tid
        };
        let start = h.now();
        // Step 1: the write type.
        let (mut sync, mut unplug) = self.commit_write_type(tid);
        self.point_mark("jbd2:locked", u64::from(sync));
        while inner.st.borrow().trans[&tid].updates > 0 {
            inner.wait_updates.wait().await;
        }
        // Step 2: T_FLUSH; j_running_transaction = NULL, so handles start the next one.
        {
            let mut st = inner.st.borrow_mut();
            st.trans.get_mut(&tid).unwrap().advance(TState::Flush);
            st.running = None;
            st.committing = Some(tid);
        }
        inner.wait_locked.notify_all();
        // The merged jbd refinement decides at this point ("commit phase 2").
        if self.write_op() == CommitWriteOp::WaitedAtFlush {
            (sync, unplug) = self.commit_write_type(tid);
        }
        let class = if sync { IoClass::Sync } else { IoClass::Async };
        if inner.cfg.flavor == Flavor::Jbd {
            self.write_ordered_data(tid, class, (sync, unplug), ioc)
                .await;
        }
        let (mut record, total) = self.write_log_blocks(tid, class, (sync, unplug), ioc).await;
        // Step 8: the commit block. Always synchronous; PREFLUSH|FUA with barriers
        // (WRITE_SYNC_PLUG | WRITE_FLUSH_FUA when JBD2_BARRIER).
        let off = self.log_block_offset();
        let tok = self.token();
        record.commit = (off, tok);
        let mut cb = Request::write(off, BLOCK)
            .with_token(tok)
            .with_hints(true, true)
            .with_meta(false) // submit_bh(write_op): no REQ_META in 2.6.37
            .with_ioc(ioc);
        if inner.cfg.barrier {
            cb.preflush = true;
            cb.fua = true;
        }
        self.point_mark("jbd2:commit_block_submit", tid);
        inner.dev.submit(cb).await;
        self.finish_commit(tid, start, sync, total, record);
        self.point_mark("jbd2:commit_done", tid);
        inner.wait_done.notify_all();
    }

    /// The commit's write type as (REQ_SYNC, REQ_UNPLUG per bio). v2.6.36: WRITE; v2.6.37:
    /// WRITE_SYNC; both WRITE_SYNC_PLUG for a synchronous transaction. Jan Kara's RFC
    /// decides at T_LOCKED from j_commit_waited, the merged jbd refinement at T_FLUSH.
    fn commit_write_type(&self, tid: Tid) -> (bool, bool) {
        let st = self.inner.st.borrow();
        let (waited, synchronous) = (st.commit_waited >= tid, st.trans[&tid].synchronous);
        match self.write_op() {
            CommitWriteOp::Write => (synchronous, false),
            CommitWriteOp::WriteSync => (true, !synchronous),
            CommitWriteOp::WaitedAtLock | CommitWriteOp::WaitedAtFlush => {
                (waited || synchronous, false)
            }
        }
    }

    /// Step 3 (jbd, ext3 data=ordered): kjournald writes the dirty data buffers filed on
    /// the transaction with the commit's write type and waits for them
    /// (fs/jbd/commit.c:journal_submit_data_buffers@v2.6.37).
    async fn write_ordered_data(&self, tid: Tid, class: IoClass, hints: (bool, bool), ioc: u32) {
        let inner = &self.inner;
        let data: Vec<(u64, Vec<super::DataBuf>)> = {
            let mut st = inner.st.borrow_mut();
            std::mem::take(&mut st.trans.get_mut(&tid).unwrap().data)
                .into_iter()
                .collect()
        };
        let mut reqs = Vec::new();
        let mut bytes = 0;
        for (_ino, bufs) in &data {
            for &b in bufs {
                reqs.extend(super::buffer_writes(b, class, hints, ioc));
                bytes += b.1;
            }
        }
        for (ino, _) in &data {
            inner.io.start(*ino);
        }
        inner.io.cleaned(bytes);
        super::submit_and_wait(&inner.dev, reqs).await;
        inner.io.written(bytes);
        for (ino, _) in &data {
            inner.io.end(*ino);
        }
        inner.st.borrow_mut().stats.ordered_data_bytes += bytes;
    }

    /// Step 4: T_COMMIT; descriptor blocks and the metadata copies, in log order, then the
    /// wait for them and for the ordered inodes' data. Returns the log blocks written and
    /// their number.
    async fn write_log_blocks(
        &self,
        tid: Tid,
        class: IoClass,
        (sync, unplug): (bool, bool),
        ioc: u32,
    ) -> (CommitRecord, u64) {
        let inner = &self.inner;
        let buffers: Vec<u64> = {
            let mut st = inner.st.borrow_mut();
            let t = st.trans.get_mut(&tid).unwrap();
            t.advance(TState::Commit);
            t.buffers.iter().copied().collect()
        };
        self.point_mark("jbd2:log_submit", buffers.len() as u64);
        let n = buffers.len() as u64;
        let descriptors = n.div_ceil(TAGS_PER_DESCRIPTOR).max(1);
        inner.h.cpu(inner.cfg.copy_per_block * n).await;
        let total = n + descriptors;
        let mut record = CommitRecord::default();
        let mut reqs = Vec::with_capacity(total as usize);
        for _ in 0..total {
            let off = self.log_block_offset();
            let tok = self.token();
            record.blocks.push((off, tok));
            reqs.push(
                Request::write(off, BLOCK)
                    .with_token(tok)
                    .with_class(class)
                    .with_hints(sync, unplug)
                    .with_meta(false) // submit_bh(write_op): no REQ_META in 2.6.37
                    .with_ioc(ioc),
            );
        }
        // submit_bh per buffer (the batches of j_wbufsize only bound what is locked at once;
        // nothing waits between them); step 5 (jbd2) waits for the ordered inodes' data
        // (journal_finish_inode_data_buffers), step 7 for the log blocks.
        let inodes: Vec<u64> = inner.st.borrow().trans[&tid]
            .inodes
            .iter()
            .copied()
            .collect();
        super::submit_and_wait(&inner.dev, reqs).await;
        for ino in inodes {
            inner.io.wait(ino).await;
        }
        (record, total)
    }

    /// Step 9: checkpoint list, T_FINISHED, j_commit_sequence, average commit time, and the
    /// commit's statistics.
    fn finish_commit(&self, tid: Tid, start: Nanos, sync: bool, total: u64, record: CommitRecord) {
        let now = self.inner.h.now();
        let mut st = self.inner.st.borrow_mut();
        // T_FINISHED: the transaction moves to the checkpoint list.
        let t = st.trans.remove(&tid).unwrap();
        assert_eq!(
            t.state,
            TState::Commit,
            "jbd2: {tid} finished from {:?}",
            t.state
        );
        assert_eq!(
            st.committing,
            Some(tid),
            "jbd2: {tid} finished, not committing"
        );
        st.checkpoint.insert(tid, (t.buffers, total + 1, now));
        st.commit_blocks.insert(tid, record);
        st.committing = None;
        st.commit_sequence = tid;
        let took = now - start;
        // j_average_commit_time = (commit_time + 3 × average) / 4.
        st.average_commit_ns = if st.average_commit_ns == 0 {
            took
        } else {
            (took + 3 * st.average_commit_ns) / 4
        };
        let waited = st.waited_for >= tid;
        let s = &mut st.stats;
        s.commits += 1;
        if sync {
            s.sync_commits += 1;
        } else {
            s.async_commits += 1;
            if waited {
                s.waited_async_commits += 1;
            }
        }
        s.log_blocks += total + 1;
        s.commit_ns += took;
        s.commit_max_ns = s.commit_max_ns.max(took);
    }

    /// The device offset of the next log block (the log wraps around the journal area; its
    /// first block is the journal superblock).
    fn log_block_offset(&self) -> u64 {
        let inner = &self.inner;
        let mut st = inner.st.borrow_mut();
        let area = inner.cfg.blocks - 1;
        let b = st.head;
        st.head = (st.head + 1) % area;
        st.free = st.free.saturating_sub(1);
        inner.cfg.offset + (1 + b) * BLOCK
    }

    /// Records a named mark in the trace (not a scheduling point).
    fn point_mark(&self, label: &'static str, arg: u64) {
        let id = self.inner.h.point_id_static(label);
        self.inner.h.mark(id, arg);
    }
}
