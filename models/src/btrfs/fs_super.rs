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
        match self.attach_transaction().await {
            Some(th) => self.commit(th).await,
            None => {
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
            }
        }
        let now = self.inner.h.now();
        let mut st = self.st_mut();
        if st.keep_history {
            let recs: Vec<FsyncRecord> = st
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
            st.fsyncs.extend(recs);
        }
        drop(st);
        self.check_crash("sync returned");
    }
}
