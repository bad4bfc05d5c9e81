//! Which metadata tree blocks a change dirties (fs/btrfs/ctree.c: btrfs_cow_block COWs a
//! block once per transaction — `should_cow_block` is false for a block already created in
//! the running transaction and not yet written). A transaction's dirty set is what its
//! commit writes (btrfs_write_and_wait_transaction) and later unpins.
//!
//! The leaves are the b-tree leaves (ctree_btree.rs) the item changes landed in, by block id.

use super::costs::Costs;
use super::state::FastSet;

/// Tree ids of the dirty-set keys.
pub mod tree {
    /// Subvolume (fs) tree: inode, inode ref and file extent items.
    pub const FS: u8 = 0;
    /// Extent tree.
    pub const EXTENT: u8 = 2;
    /// Checksum tree.
    pub const CSUM: u8 = 3;
    /// Root tree.
    pub const ROOT: u8 = 4;
    /// Chunk and device trees (one block each is enough at this scale).
    pub const CHUNK: u8 = 6;
}

/// A leaf of one tree: (tree id, block id).
pub type Leaf = (u8, u64);

/// The leaves one operation dirties (inline for the usual handful).
pub type Leaves = smallvec::SmallVec<[Leaf; 8]>;

/// Blocks a commit writes for a dirty set: the leaves, on each leaf's path the nodes above
/// it up to the root of its tree (`heights`, by tree id), and the root tree's leaf. Internal nodes are not
/// stored (ctree_btree.rs): a leaf's ancestor at level L is taken as its block id divided
/// by BTRFS_NODEPTRS_PER_BLOCK^L (nodesize / 33-byte key pointers), ids in split order.
pub fn blocks_to_write(c: &Costs, dirty: &FastSet<Leaf>, heights: [u32; 8]) -> u64 {
    let fanout = (c.nodesize / 33).max(2);
    let mut nodes: Vec<(u8, u32, u64)> = Vec::with_capacity(dirty.len() * 2);
    for &(t, i) in dirty {
        let h = heights.get(usize::from(t)).copied().unwrap_or(1).max(1);
        let mut up = i;
        for level in 1..h {
            up /= fanout;
            nodes.push((t, level, up));
        }
    }
    nodes.sort_unstable();
    nodes.dedup();
    // commit_cowonly_roots / commit_fs_roots update the changed trees' root items: the root
    // tree's leaf.
    let root_leaf = u64::from(!dirty.is_empty() && !dirty.iter().any(|l| l.0 == tree::ROOT));
    dirty.len() as u64 + nodes.len() as u64 + root_leaf
}
