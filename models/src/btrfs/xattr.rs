//! fs/btrfs/xattr.c: setting an extended attribute.

use super::ctree::Btrfs;
use super::ctree_btree::{inode_update, key_type, name_hash, size, tree_id, Key, TreeOp};
use crate::vfs::OpError;

impl Btrfs {
    /// btrfs_setxattr_trans (xattr.c@v5.10): btrfs_start_transaction(root, 2), btrfs_setxattr
    /// inserts the BTRFS_XATTR_ITEM_KEY item next to the inode item, then inode_inc_iversion,
    /// ctime, set_bit(BTRFS_INODE_COPY_EVERYTHING) and btrfs_update_inode (which stamps
    /// last_trans). A later LOG_INODE_ALL logs every xattr
    /// (tree-log.c:btrfs_log_all_xattrs@v5.10). Under the inode lock: vfs_setxattr takes
    /// inode_lock around __vfs_setxattr_locked (fs/xattr.c@v5.10).
    pub(super) async fn setxattr(&self, path: &str, name: &str) -> Result<(), OpError> {
        let (ino, _ilock) = self.lock_path(path).await?;
        let th = self.start_transaction_items(2).await?;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let i = st.inodes.get_mut(&ino).unwrap();
            // A replace keeps the item's first transaction: btrfs_setxattr replaces an
            // existing item atomically ("at any point in time we have either the old or the
            // new xattr value in the tree", xattr.c:btrfs_setxattr@v5.10..v5.16), so every
            // generation committed since the first set has the name.
            i.xattrs.entry(name.to_string()).or_insert(t);
            i.item_trans = t;
            i.copy_everything = true;
            i.xattr_seq += 1;
            // The XATTR_ITEM (a btrfs_dir_item with the name; the value is not modelled)
            // keyed by the name's hash, and the inode item.
            let key = Key::new(ino, key_type::XATTR_ITEM, name_hash(name));
            let ops = [
                TreeOp::Insert(tree_id::FS, key, size::DIR_ITEM + name.len() as u32),
                inode_update(ino),
            ];
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }
}

impl Btrfs {
    /// removexattr(2): vfs_removexattr → btrfs_xattr_handler_set(value = NULL) →
    /// btrfs_setxattr_trans (xattr.c@v5.10..v5.15), the same transaction as a set: in
    /// btrfs_setxattr a NULL value looks the item up and deletes it (-ENODATA when there is
    /// none: the op fails), then inode_inc_iversion, ctime,
    /// set_bit(BTRFS_INODE_COPY_EVERYTHING) and btrfs_update_inode. A later LOG_INODE_ALL
    /// logs the remaining xattrs (btrfs_log_all_xattrs) and replay's replay_xattr_deletes
    /// (tree-log.c@v5.10) drops the xattrs the logged inode no longer has (the fix xfstests
    /// generic/066 guards). Under the inode lock, as vfs_removexattr takes it.
    pub(super) async fn removexattr(&self, path: &str, name: &str) -> Result<(), OpError> {
        let (ino, _ilock) = self.lock_path(path).await?;
        if !self.inner.st.borrow().inodes[&ino]
            .xattrs
            .contains_key(name)
        {
            return Err(OpError(format!(
                "removexattr {path} {name}: no such attribute (ENODATA)"
            )));
        }
        let th = self.start_transaction_items(2).await?;
        let t = th.id;
        let cpu = {
            let mut st = self.st_mut();
            let keep = st.keep_history;
            let i = st.inodes.get_mut(&ino).unwrap();
            let set = i.xattrs.remove(name);
            i.item_trans = t;
            i.copy_everything = true;
            i.xattr_seq += 1;
            if let (Some(set), true) = (set, keep) {
                st.removed_xattrs.push(super::state::RemovedXattr {
                    ino,
                    name: name.to_string(),
                    set,
                    removed: t,
                });
            }
            let key = Key::new(ino, key_type::XATTR_ITEM, name_hash(name));
            let ops = [TreeOp::Delete(tree_id::FS, key), inode_update(ino)];
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }
}
