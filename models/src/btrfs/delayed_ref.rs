//! fs/btrfs/delayed-ref.c: the extent tree's changes for data extents wait as delayed refs
//! of the transaction and are run by its commit.
//!
//! What the kernel does (v5.10) and this mirrors:
//! - btrfs_alloc_reserved_file_extent (insert_reserved_file_extent) adds a delayed data ref
//!   instead of inserting the EXTENT_ITEM; btrfs_free_extent (btrfs_drop_extents, truncate,
//!   eviction) adds a dropping ref; the checksums of a freed data extent are deleted when its
//!   ref runs (__btrfs_free_extent → btrfs_del_csums).
//! - Refs of one extent merge in its head: an extent allocated and freed in one transaction
//!   leaves nothing to insert or delete (a head with must_insert_reserved and ref_mod 0).
//! - btrfs_run_delayed_refs(trans, (unsigned long)-1) in the commit's critical section
//!   (commit_cowonly_roots@v5.10, under reloc_mutex), heads in ascending bytenr order.
//!
//! Simplifications: the refs of COWed tree blocks (btrfs_add_delayed_tree_ref) are priced
//! per block by `commit_cpu_per_block`, not run as extent-tree work; refs run only at
//! commit (not by the space flushers' FLUSH_DELAYED_REFS_NR, nor by
//! btrfs_should_throttle_delayed_refs in truncate and eviction loops).

use super::ctree::Btrfs;
use super::ctree_btree::{key_type, tree_id, TreeOp};
use super::delayed_inode::NodeOps;
use super::state::{TransId, Transaction};

/// One queued change of an extent or csum tree item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefOp {
    /// The item inserted (a new extent's EXTENT_ITEM), of this many bytes.
    Insert(u32),
    /// The item's reference count changed in place (btrfs_inc_extent_ref or
    /// btrfs_free_extent of an extent other items still refer to), of this many bytes.
    Update(u32),
    /// The item deleted.
    Delete,
}

/// Takes the changes that are delayed refs from `ops` into `tr` and returns the rest; the
/// number of refs queued.
pub fn divert(tr: &mut Transaction, ops: &[TreeOp], direct: &mut NodeOps) -> u64 {
    let mut queued = 0;
    for &op in ops {
        match op {
            TreeOp::Insert(tree_id::EXTENT, k, s) if k.ty == key_type::EXTENT_ITEM => {
                tr.ref_ops.insert((tree_id::EXTENT, k), RefOp::Insert(s));
                queued += 1;
            }
            TreeOp::Update(tree_id::EXTENT, k, s) if k.ty == key_type::EXTENT_ITEM => {
                // Merges into whatever the head already holds for the extent.
                tr.ref_ops
                    .entry((tree_id::EXTENT, k))
                    .or_insert(RefOp::Update(s));
                queued += 1;
            }
            TreeOp::Delete(t @ (tree_id::EXTENT | tree_id::CSUM), k)
                if k.ty == key_type::EXTENT_ITEM || k.ty == key_type::EXTENT_CSUM =>
            {
                if let Some(RefOp::Insert(_)) = tr.ref_ops.get(&(t, k)) {
                    // Allocated in this transaction: the insertion merges away with the drop.
                    tr.ref_ops.remove(&(t, k));
                } else {
                    tr.ref_ops.insert((t, k), RefOp::Delete);
                }
                queued += 1;
            }
            _ => direct.push(op),
        }
    }
    queued
}

impl Btrfs {
    /// btrfs_run_delayed_refs(trans, -1) in the commit of `t`: every queued change, the
    /// extent tree's in key (bytenr) order, then the checksum deletions.
    pub(super) async fn run_delayed_refs(&self, t: TransId) {
        if self.inner.costs.delayed_refs == 0 {
            return;
        }
        let work = {
            let mut st = self.st_mut();
            let refs = std::mem::take(&mut st.trans.get_mut(&t).expect("transaction").ref_ops);
            if refs.is_empty() {
                return;
            }
            let ops: Vec<TreeOp> = refs
                .into_iter()
                .map(|((tree, k), op)| match op {
                    RefOp::Insert(s) => TreeOp::Insert(tree, k, s),
                    RefOp::Update(s) => TreeOp::Update(tree, k, s),
                    RefOp::Delete => TreeOp::Delete(tree, k),
                })
                .collect();
            self.inner.m.borrow_mut().delayed_refs_run += ops.len() as u64;
            Self::apply_tree_ops(&mut st, &self.inner.costs, t, &ops)
        };
        self.run_tree_work(work).await;
    }
}
