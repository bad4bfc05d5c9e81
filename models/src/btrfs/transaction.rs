//! fs/btrfs/transaction.c: joining, ending and committing transactions.

use super::ctree::{Btrfs, COMPACT_EVERY};
use super::policy::Mutant;
use super::state::*;
use crate::device::Request;

impl Btrfs {
    /// btrfs_start_transaction (TRANS_START): join the running transaction, or start a new
    /// one once the previous commit is past UNBLOCKED (wait_current_trans).
    pub(super) async fn join(&self) -> TransId {
        self.join_kind(TransState::Running).await
    }

    /// btrfs_join_transaction (TRANS_JOIN): may also join a transaction in COMMIT_START,
    /// which the commit then waits for.
    pub(super) async fn join_nostart(&self) -> TransId {
        self.join_kind(TransState::CommitStart).await
    }

    pub(super) async fn join_kind(&self, latest: TransState) -> TransId {
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
    pub(super) fn end(&self, t: TransId) {
        let mut st = self.st_mut();
        let tr = st.trans.get_mut(&t).expect("transaction");
        tr.writers -= 1;
        drop(st);
        self.inner.writers_wait.notify_all();
    }

    /// btrfs_set_inode_last_trans.
    pub(super) fn set_inode_last_trans(st: &mut FsState, ino: Ino, t: TransId) {
        let (log_transid, last_log_commit) = (st.log_transid, st.last_log_commit);
        let i = st.inodes.get_mut(&ino).expect("inode");
        i.last_trans = t;
        i.last_sub_trans = log_transid;
        let _ = last_log_commit;
    }

    pub(super) fn dirty(st: &mut FsState, t: TransId, blocks: u64) {
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
}
