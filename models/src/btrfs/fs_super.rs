//! fs/btrfs/super.c (the file is `super.c`; `super` is a Rust keyword): btrfs_sync_fs, what
//! sync(2) reaches after the VFS wrote back every dirty inode (sync_inodes_sb).

use super::ctree::Btrfs;
use super::state::*;

impl Btrfs {
    /// sync(2): sync_inodes_sb writes back every dirty file and waits (btrfs_wait_ordered_roots),
    /// then btrfs_sync_fs@v5.10 attaches to the running transaction with
    /// btrfs_attach_transaction_barrier and commits it; with none running it waits for the
    /// newest committing transaction instead (btrfs_wait_for_commit). Afterwards every named
    /// file's data and names must survive a crash (S2).
    pub(super) async fn sync_fs(&self) {
        let dirty: Vec<Ino> = {
            let st = self.inner.st.borrow();
            st.inodes
                .values()
                .filter(|i| i.dirty_bytes > 0)
                .map(|i| i.ino)
                .collect()
        };
        for ino in dirty {
            self.writeback(ino).await;
        }
        // What the sync promises is the state its commit captures: taken once the handle
        // in the transaction to commit is held (or, with none running, before waiting for
        // the committing one), so a concurrent operation that lands in the next
        // transaction is not promised (a later change of a promised item is excused by
        // S2's "unchanged since" rules, as after an fsync).
        match self.attach_transaction().await {
            Some(th) => {
                let recs = self.sync_promises();
                self.commit(th).await;
                self.keep_sync_promises(recs);
            }
            None => {
                let recs = self.sync_promises();
                let committing = {
                    let st = self.inner.st.borrow();
                    st.trans
                        .values()
                        .rev()
                        .find(|t| t.state < TransState::Completed)
                        .map(|t| t.transid)
                };
                if let Some(t) = committing {
                    while self.inner.st.borrow().trans[&t].state < TransState::Completed {
                        self.inner.commit_wait.wait().await;
                    }
                }
                self.keep_sync_promises(recs);
            }
        }
        self.check_crash("sync returned");
    }

    /// Every named regular file's names, extents, size and xattrs now, as a sync promises
    /// them (None when the history is not kept).
    fn sync_promises(&self) -> Option<Vec<FsyncRecord>> {
        let now = self.inner.h.now();
        let st = self.inner.st.borrow();
        if !st.keep_history {
            return None;
        }
        let recs = st
            .inodes
            .values()
            .filter(|i| !i.is_dir)
            .filter_map(|i| {
                let names = st.names_of(i.ino);
                let (d, n) = names.first()?.clone();
                Some(FsyncRecord {
                    ino: i.ino,
                    path: format!("(sync) inode {} as {n} in directory {d}", i.ino),
                    names,
                    extents: i.extents.iter().map(|e| e.id).collect(),
                    size: i.disk_size,
                    size_changes: i.size_hist.len(),
                    xattrs: i.xattrs.keys().cloned().collect(),
                    entries: Vec::new(),
                    promised_at: now,
                    at: now,
                })
            })
            .collect();
        Some(recs)
    }

    /// Records a returned sync's promises (returned now).
    fn keep_sync_promises(&self, recs: Option<Vec<FsyncRecord>>) {
        let now = self.inner.h.now();
        let mut st = self.st_mut();
        for mut r in recs.into_iter().flatten() {
            r.at = now;
            st.fsyncs.push(r);
        }
    }
}
