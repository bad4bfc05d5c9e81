//! fs/btrfs/disk_io.c: the transaction kthread and the superblock writes.

use super::ctree::Btrfs;
use super::policy::Kernel;
use super::state::TransState;
use sim::{Handle, Nanos};

impl Btrfs {
    /// Starts transaction_kthread (fs/btrfs/disk_io.c:transaction_kthread@v5.10): it
    /// commits the running transaction once it is `interval` old (the `commit=` mount
    /// option, 30 s by default), measured in the whole seconds of `ktime_get_seconds`.
    /// 5.10 re-checks a younger transaction every 5 s; 5.11 sleeps until about one second
    /// past its deadline (`delay = commit_interval - (delta - 1)`, capped at the interval,
    /// transaction_kthread@v5.11). With nothing running it sleeps the whole interval; after
    /// a commit it loops at once while a commit is still blocking (btrfs_transaction_blocked).
    pub fn spawn_committer(&self, h: &Handle, interval: Nanos) {
        let fs = self.clone();
        let secs = |ns: Nanos| ns / sim::S;
        h.spawn_daemon("btrfs-transaction", async move {
            loop {
                let mut delay = interval;
                let cur = {
                    let st = fs.inner.st.borrow();
                    st.running
                        .map(|t| (t, st.trans[&t].state, st.trans[&t].start_time))
                };
                if let Some((t, state, start)) = cur {
                    let age = secs(fs.inner.h.now()).saturating_sub(secs(start));
                    if state < TransState::CommitStart && age < secs(interval) {
                        delay = if fs.inner.policy.kernel >= Kernel::V5_11 {
                            (interval - age * sim::S + sim::S).min(interval)
                        } else {
                            5 * sim::S
                        };
                    } else if let Some(th) = fs.attach_transaction().await {
                        if th.id == t {
                            fs.commit(th).await;
                        } else {
                            fs.end(th);
                        }
                    }
                }
                let blocked = {
                    let st = fs.inner.st.borrow();
                    st.running.is_some_and(|t| {
                        let s = st.trans[&t].state;
                        s >= TransState::CommitStart && s < TransState::Unblocked
                    })
                };
                if !blocked {
                    fs.inner.h.sleep(delay).await;
                }
            }
        });
    }
}
