//! fs/btrfs/disk_io.c: the transaction kthread and the superblock writes.

use super::ctree::Btrfs;
use sim::{Handle, Nanos};

impl Btrfs {
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
}
