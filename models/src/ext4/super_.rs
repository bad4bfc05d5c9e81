//! The flusher (bdi writeback, fs/fs-writeback.c:wb_do_writeback / wb_check_old_data_flush
//! @v2.6.37) and sync(2) (fs/sync.c + ext4_sync_fs).

use super::Ext4;

impl Ext4 {
    /// The per-device flusher: every dirty_writeback_centisecs it writes back inodes dirty
    /// for longer than dirty_expire_centisecs (WB_SYNC_NONE: plain WRITE from its own I/O
    /// context), then the expired checkpoint buffers of the journal. Background writeback
    /// above dirty_background_ratio is not modelled.
    pub(super) fn spawn_flusher(&self) {
        let fs = self.clone();
        self.inner.h.spawn_daemon("flush", async move {
            let (interval, expire) = (fs.inner.cfg.writeback_interval, fs.inner.cfg.dirty_expire);
            loop {
                fs.inner.h.sleep(interval).await;
                let now = fs.inner.h.now();
                let cutoff = now.saturating_sub(expire);
                let old: Vec<super::Ino> = fs
                    .inner
                    .st
                    .borrow()
                    .inodes
                    .iter()
                    .filter(|(_, i)| i.dirty > 0 && i.dirtied_at <= cutoff)
                    .map(|(&k, _)| k)
                    .collect();
                for ino in old {
                    fs.writeback_inode(ino, false).await;
                }
                fs.inner.journal.checkpoint_expired(cutoff).await;
            }
        });
    }

    /// sync(2): write back every dirty inode and wait, then commit and wait (ext4_sync_fs).
    pub(super) async fn sync_fs(&self) {
        let dirty: Vec<super::Ino> = self
            .inner
            .st
            .borrow()
            .inodes
            .iter()
            .filter(|(_, i)| i.dirty > 0)
            .map(|(&k, _)| k)
            .collect();
        for ino in dirty {
            self.writeback_inode(ino, true).await;
        }
        self.force_commit().await;
    }
}
