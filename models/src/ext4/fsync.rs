//! fsync (fs/ext4/fsync.c:ext4_sync_file, fs/ext3/fsync.c:ext3_sync_file @v2.6.37) and
//! ext4_force_commit.

use super::{Ext4, Synced, Variant};
use crate::jbd2::BLOCK;
use crate::vfs::OpError;

impl Ext4 {
    /// vfs_fsync_range: filemap_write_and_wait (WB_SYNC_ALL from the caller), then the
    /// filesystem's fsync. ext4 (2.6.37–3.0): jbd2_log_start_commit(tid); if it started the
    /// commit, wait for it; otherwise (already requested or done) only a cache flush when
    /// barriers are on. ext3: start the commit and always wait, then a flush if the commit
    /// will not send one. With the fixed ext4 (`ext4_fsync_waits_only_if_started = false`)
    /// it always waits.
    pub(super) async fn fsync(&self, path: &str, datasync: bool) -> Result<(), OpError> {
        let ino = self.resolve(path)?;
        self.writeback_inode(ino, true).await;
        self.point("fsync:data_written").await;
        let j = self.inner.journal.clone();
        let tid = {
            let st = self.inner.st.borrow();
            let i = &st.inodes[&ino];
            if datasync {
                i.datasync_tid
            } else {
                i.sync_tid
            }
        };
        let barrier = j.config().barrier;
        let committed = tid <= j.commit_sequence();
        match self.inner.cfg.variant {
            Variant::Ext4 => {
                let started = j.start_commit(tid, true);
                self.inner.h.mark(
                    self.inner.h.point_id_static("fsync:start_commit"),
                    u64::from(started),
                );
                if started || !self.inner.cfg.policy.ext4_fsync_waits_only_if_started {
                    j.wait_commit(tid).await;
                    sim::check!(j.commit_sequence() >= tid, "fsync returned before {tid}");
                    j.note_fsync(!committed);
                } else {
                    if barrier {
                        j.issue_flush().await;
                    }
                    j.note_fsync(committed);
                }
            }
            Variant::Ext3 => {
                // journal_trans_will_send_data_barrier: a commit still to come sends one.
                let needs_barrier = barrier && committed;
                j.start_commit(tid, true);
                j.wait_commit(tid).await;
                sim::check!(j.commit_sequence() >= tid, "fsync returned before {tid}");
                j.note_fsync(!committed);
                if needs_barrier {
                    j.issue_flush().await;
                }
            }
        }
        self.record_synced(ino, path, tid);
        self.check_crash("an fsync returned");
        Ok(())
    }

    /// Remembers what a returned fsync promised (for the crash check).
    fn record_synced(&self, ino: super::Ino, path: &str, tid: crate::jbd2::Tid) {
        let now = self.inner.h.now();
        let mut st = self.inner.st.borrow_mut();
        if !st.keep_history {
            return;
        }
        let data: Vec<(u64, u64)> = st.inodes[&ino]
            .extents
            .iter()
            .filter(|e| e.3 != 0)
            .flat_map(|e| {
                let blocks = e.2.div_ceil(BLOCK);
                (0..blocks).map(move |k| (e.1 + k * BLOCK, e.3))
            })
            .collect();
        st.synced.push(Synced {
            path: path.to_string(),
            tid,
            data,
            at: now,
        });
    }

    /// ext4_force_commit / sync: commit the running transaction and wait.
    pub(super) async fn force_commit(&self) {
        let j = &self.inner.journal;
        if let Some(t) = j.running() {
            j.start_commit(t, true);
            j.wait_commit(t).await;
        }
    }
}
