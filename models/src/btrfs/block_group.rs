//! fs/btrfs/block-group.c: a new block group forces the next fsyncs to commit.

use super::ctree::Btrfs;

impl Btrfs {
    /// btrfs_make_block_group → btrfs_set_log_full_commit(trans).
    pub(super) async fn new_block_group(&self) {
        let th = self.start_transaction().await;
        let t = th.id;
        self.inner.h.cpu(self.inner.costs.btree_item * 4).await;
        {
            let mut st = self.st_mut();
            st.last_trans_log_full_commit = t;
            st.trans.get_mut(&t).unwrap().forced_by_event = true;
            Self::dirty(&mut st, t, 2);
        }
        self.end(th);
    }
}
