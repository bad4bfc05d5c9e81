//! The flusher (bdi writeback, fs/fs-writeback.c:wb_do_writeback / wb_check_old_data_flush
//! @v2.6.37) and sync(2) (fs/sync.c + ext4_sync_fs).

use super::Ext4;
use sim::Nanos;

/// One jiffy at HZ=1000 (Fedora's kernels of the era; CONFIG_HZ_1000).
const JIFFY: Nanos = sim::MS;

/// write_chunk: 1.5 × ratelimit_pages, which is 1024 pages (4 MiB) on any machine with
/// more than 128 MiB per CPU (mm/page-writeback.c:writeback_set_ratelimit,
/// sync_writeback_pages@v2.6.37).
const WRITE_CHUNK: u64 = 6 << 20;

/// Data the request queue holds before a submitter sleeps in get_request_wait: nr_requests
/// (128, BLKDEV_MAX_RQ) requests of at most max_sectors_kb (512 KiB), block/blk-core.c
/// @v2.6.37.
const QUEUE_BYTES: u64 = 128 * (512 << 10);

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

    /// balance_dirty_pages (mm/page-writeback.c@v2.6.37), called after each buffered write
    /// rather than every ratelimit_pages: while dirty + writeback bytes exceed the midpoint
    /// of the background and dirty thresholds and the dirty threshold itself, the writer
    /// writes back up to write_chunk of dirty data itself (WB_SYNC_NONE: plain WRITE from its
    /// own I/O context; the kernel picks the bdi's oldest inodes, the model the writer's
    /// own), and sleeps `pause` (1 jiffy doubling to HZ/10) while the device has not caught
    /// up; above the background threshold it starts the flusher's background writeback. In
    /// the kernel a writer is also held in get_request_wait once the queue's nr_requests are
    /// taken; here it waits while more than `QUEUE_BYTES` are under writeback.
    pub(super) async fn balance_dirty_pages(&self, ino: super::Ino) {
        let Some((bg, thresh)) = self.inner.cfg.dirty_limits else {
            return;
        };
        let io = &self.inner.io;
        let h = &self.inner.h;
        // task_dirty_limit: a task doing (nearly) all the dirtying gets 1/8 less.
        let limit = thresh - thresh / 8;
        let mut pause = JIFFY;
        loop {
            let (d, w) = (io.dirty(), io.writeback());
            if d + w <= limit.max((bg + thresh) / 2) {
                break;
            }
            if d > bg && !self.inner.background.get() {
                self.start_background_writeback(bg);
            }
            let mut wrote = 0;
            if d > 0 && w <= QUEUE_BYTES {
                // writeback_inodes_wb: the writer's own dirty data first, else the oldest.
                let own = self
                    .inner
                    .st
                    .borrow()
                    .inodes
                    .get(&ino)
                    .is_some_and(|i| i.dirty > 0);
                let pick = if own { Some(ino) } else { self.oldest_dirty() };
                if let Some(i) = pick {
                    wrote = self.writeback_inode_upto(i, WRITE_CHUNK, false).await;
                }
            }
            if wrote >= WRITE_CHUNK {
                break;
            }
            h.sleep(pause).await;
            pause = (pause * 2).min(100 * sim::MS);
        }
        if io.dirty() > bg && !self.inner.background.get() {
            self.start_background_writeback(bg);
        }
    }

    /// The dirty inode dirtied longest ago (the bdi's b_dirty list order).
    fn oldest_dirty(&self) -> Option<super::Ino> {
        self.inner
            .st
            .borrow()
            .inodes
            .iter()
            .filter(|(_, i)| i.dirty > 0)
            .min_by_key(|(&k, i)| (i.dirtied_at, k))
            .map(|(&k, _)| k)
    }

    /// bdi_start_background_writeback: the flusher writes the oldest dirty inodes, a
    /// MAX_WRITEBACK_PAGES chunk (4 MiB) at a time, until dirty bytes fall below the
    /// background threshold (fs/fs-writeback.c:wb_writeback, over_bground_thresh@v2.6.37).
    fn start_background_writeback(&self, bg: u64) {
        self.inner.background.set(true);
        let fs = self.clone();
        self.inner.h.spawn_daemon("flush-background", async move {
            let mut pause = JIFFY;
            while fs.inner.io.dirty() > bg {
                let Some(ino) = fs.oldest_dirty() else { break };
                let wrote = if fs.inner.io.writeback() <= QUEUE_BYTES {
                    fs.writeback_inode_upto(ino, 4 << 20, false).await
                } else {
                    0
                };
                if wrote == 0 {
                    // congestion_wait: the queue is full, or the data went with a commit.
                    fs.inner.h.sleep(pause).await;
                    pause = (pause * 2).min(100 * sim::MS);
                } else {
                    pause = JIFFY;
                }
            }
            fs.inner.background.set(false);
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
