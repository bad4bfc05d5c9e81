//! fs/btrfs/xattr.c: setting an extended attribute.

use super::ctree::Btrfs;
use super::ctree_btree::{inode_key, key_type, name_hash, size, tree_id, Key, TreeOp};
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
            i.xattrs.insert(name.to_string(), t);
            i.item_trans = t;
            i.copy_everything = true;
            i.xattr_seq += 1;
            // The XATTR_ITEM (a btrfs_dir_item with the name; the value is not modelled)
            // keyed by the name's hash, and the inode item.
            let key = Key::new(ino, key_type::XATTR_ITEM, name_hash(name));
            let ops = [
                TreeOp::Insert(tree_id::FS, key, size::DIR_ITEM + name.len() as u32),
                TreeOp::Update(tree_id::FS, inode_key(ino), size::INODE_ITEM),
            ];
            Self::tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(cpu).await;
        Self::set_inode_last_trans(&mut self.st_mut(), ino, t);
        self.end(th);
        Ok(())
    }
}
