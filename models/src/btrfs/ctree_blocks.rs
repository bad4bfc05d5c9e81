//! Which metadata tree blocks a change dirties (fs/btrfs/ctree.c: btrfs_cow_block COWs a
//! block once per transaction — `should_cow_block` is false for a block already created in
//! the running transaction and not yet written). A transaction's dirty set is what its
//! commit writes (btrfs_write_and_wait_transaction) and later unpins.
//!
//! Leaves are located by the item keys of fs/btrfs/ctree.h: an inode's items sit at its
//! inode number; a directory's entries at the directory's number, spread over as many
//! leaves as they fill; file extent items at the inode; extent items at the data
//! extent's byte number (allocated in order); checksums at the data's byte number. Items
//! per leaf come from the on-disk sizes in `Costs` and the nodesize.

use super::costs::Costs;
use super::state::*;

/// Tree ids of the dirty-set keys.
pub mod tree {
    /// Subvolume (fs) tree: inode, inode ref and file extent items.
    pub const FS: u8 = 0;
    /// Subvolume tree: directory item and index entries (keyed by the directory).
    pub const FS_DIR: u8 = 1;
    /// Extent tree.
    pub const EXTENT: u8 = 2;
    /// Checksum tree.
    pub const CSUM: u8 = 3;
    /// Root, chunk and device trees (one block each is enough at this scale).
    pub const ROOT: u8 = 4;
}

/// A leaf of one tree: (tree id, leaf index).
pub type Leaf = (u8, u64);

/// The leaves one operation dirties (inline for the usual handful).
pub type Leaves = smallvec::SmallVec<[Leaf; 8]>;

/// The leaf holding inode `ino`'s items.
pub fn inode_leaf(c: &Costs, ino: Ino) -> Leaf {
    (tree::FS, ino / (c.nodesize / c.item_bytes_per_inode).max(1))
}

/// The leaf holding directory `dir`'s entry for `name` (DIR_ITEM keys are name hashes, so
/// entries spread evenly over the leaves the directory fills).
pub fn dentry_leaf(c: &Costs, st: &FsState, dir: Ino, name: &str) -> Leaf {
    let per_leaf = (c.nodesize / c.item_bytes_per_dentry).max(1);
    let entries = st.child_count(dir) as u64;
    let leaves = entries / per_leaf + 1;
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (tree::FS_DIR, (dir << 20) | (h % leaves))
}

/// The fs-tree leaf holding `ino`'s file extent item at byte `offset` of a file
/// fragmented into `sectorsize` extents (keys (ino, EXTENT_DATA, offset); a direct-I/O
/// overwrite replaces the item there). Kept apart from the inode-item leaves by the top bit.
pub fn file_extent_leaf(c: &Costs, ino: Ino, offset: u64) -> Leaf {
    let per_leaf = (c.nodesize / c.item_bytes_per_extent).max(1) * c.sectorsize;
    (tree::FS, (1 << 63) | (ino << 24) | (offset / per_leaf))
}

/// The extent-tree leaf of data extent number `extent` (allocated in order).
pub fn extent_leaf(c: &Costs, extent: u64) -> Leaf {
    (
        tree::EXTENT,
        extent / (c.nodesize / c.item_bytes_per_extent).max(1),
    )
}

/// The checksum-tree leaf covering device byte `offset`.
pub fn csum_leaf(c: &Costs, offset: u64) -> Leaf {
    let per_leaf = (c.nodesize / c.csum_per_block.max(1)) * c.sectorsize;
    (tree::CSUM, offset / per_leaf.max(1))
}

/// Blocks a commit writes for a dirty set: the leaves, and on each leaf's path the nodes
/// above it — one per `BTRFS_NODEPTRS_PER_BLOCK` leaves (nodesize / 33-byte key pointers),
/// and each tree's root.
pub fn blocks_to_write(c: &Costs, dirty: &FastSet<Leaf>) -> u64 {
    let fanout = (c.nodesize / 33).max(2);
    let mut dirty: Vec<Leaf> = dirty.iter().copied().collect();
    dirty.sort_unstable();
    let mut nodes = 0u64;
    let mut last: Option<(u8, u64)> = None;
    let mut trees = 0u64;
    let mut last_tree: Option<u8> = None;
    for &(t, i) in &dirty {
        let n = (t, i / fanout);
        if last != Some(n) {
            nodes += 1;
            last = Some(n);
        }
        if last_tree != Some(t) {
            trees += 1;
            last_tree = Some(t);
        }
    }
    dirty.len() as u64 + nodes + trees
}
