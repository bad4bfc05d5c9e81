//! B-trees of extent buffers, structure only (fs/btrfs/ctree.c@v5.10): each tree is a
//! sorted set of item keys with their on-disk sizes, cut into leaves by the kernel's
//! rules, so leaf fill, splits, merges and tree height come from the workload. No item
//! bytes are stored. The CPU of an operation is counted in work units (key comparisons,
//! tree levels visited, bytes moved inside leaves, leaves split) and priced by the
//! hardware rates in `Costs`.
//!
//! What the kernel does and this mirrors:
//! - btrfs_search_slot: one binary search per level (generic_bin_search@v5.10:
//!   ⌊log2 n⌋ + 1 key comparisons over n keys), root to leaf.
//! - setup_items_for_insert / btrfs_del_items: the item headers and data of the items after
//!   the slot are memmoved (memmove_extent_buffer).
//! - split_leaf: a full leaf first pushes items to its left and right neighbours
//!   (push_leaf_left / push_leaf_right) and is split in the middle
//!   (`mid = (nritems + 1) / 2`) only when neither has room; btrfs_del_items pushes a leaf
//!   under a third full into its neighbours and frees it when it empties.
//!
//! Simplifications: internal nodes are not stored. The tree's height is the least number of
//! levels whose nodes (BTRFS_NODEPTRS_PER_BLOCK key pointers each) hold the leaves, and an
//! internal node's binary search runs over the leaves spread evenly over that level's nodes.
//! Pushes go to any neighbour leaf (the kernel only pushes within one parent). DIR_ITEM
//! offsets are a 64-bit FNV-1a hash of the name, not crc32c (only their spread matters).

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};

/// Key types (include/uapi/linux/btrfs_tree.h@v5.10).
pub mod key_type {
    /// BTRFS_INODE_ITEM_KEY.
    pub const INODE_ITEM: u8 = 1;
    /// BTRFS_INODE_REF_KEY.
    pub const INODE_REF: u8 = 12;
    /// BTRFS_XATTR_ITEM_KEY.
    pub const XATTR_ITEM: u8 = 24;
    /// BTRFS_DIR_ITEM_KEY.
    pub const DIR_ITEM: u8 = 84;
    /// BTRFS_DIR_INDEX_KEY.
    pub const DIR_INDEX: u8 = 96;
    /// BTRFS_EXTENT_DATA_KEY (file extent items).
    pub const EXTENT_DATA: u8 = 108;
    /// BTRFS_EXTENT_CSUM_KEY.
    pub const EXTENT_CSUM: u8 = 128;
    /// BTRFS_ROOT_ITEM_KEY.
    pub const ROOT_ITEM: u8 = 132;
    /// BTRFS_EXTENT_ITEM_KEY.
    pub const EXTENT_ITEM: u8 = 168;
    /// BTRFS_METADATA_ITEM_KEY (skinny metadata extent items, the mkfs default since 3.10).
    pub const METADATA_ITEM: u8 = 169;
}

/// On-disk sizes in bytes (include/uapi/linux/btrfs_tree.h@v5.10, packed structs).
pub mod size {
    /// struct btrfs_header: csum 32 + fsid 16 + bytenr 8 + flags 8 + chunk_tree_uuid 16 +
    /// generation 8 + owner 8 + nritems 4 + level 1.
    pub const HEADER: u32 = 101;
    /// struct btrfs_item: btrfs_disk_key 17 + offset 4 + size 4.
    pub const ITEM: u32 = 25;
    /// struct btrfs_key_ptr: btrfs_disk_key 17 + blockptr 8 + generation 8.
    pub const KEY_PTR: u32 = 33;
    /// struct btrfs_inode_item.
    pub const INODE_ITEM: u32 = 160;
    /// struct btrfs_inode_ref (index 8 + name_len 2), followed by the name.
    pub const INODE_REF: u32 = 10;
    /// struct btrfs_dir_item (location 17 + transid 8 + data_len 2 + name_len 2 + type 1),
    /// followed by the name (and for xattrs the value).
    pub const DIR_ITEM: u32 = 30;
    /// struct btrfs_file_extent_item, regular extent (21 B header + disk_bytenr,
    /// disk_num_bytes, offset, num_bytes).
    pub const FILE_EXTENT: u32 = 53;
    /// struct btrfs_extent_item (refs, generation, flags) + one inline
    /// BTRFS_EXTENT_DATA_REF (type 1 + struct btrfs_extent_data_ref 28).
    pub const EXTENT_DATA_ITEM: u32 = 24 + 29;
    /// Checksum bytes per sector (crc32c, BTRFS_CSUM_TYPE_CRC32 the mkfs default).
    pub const CSUM_PER_SECTOR: u32 = 4;
    /// struct btrfs_root_item.
    pub const ROOT_ITEM: u32 = 439;
}

/// BTRFS_EXTENT_CSUM_OBJECTID (-10ULL).
pub const EXTENT_CSUM_OBJECTID: u64 = -10i64 as u64;

/// A key (struct btrfs_key), ordered as btrfs_comp_cpu_keys orders them: objectid, type,
/// offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Key {
    /// Object id (inode number, bytenr, tree id).
    pub objectid: u64,
    /// Item type.
    pub ty: u8,
    /// Offset (parent inode, name hash, index, file offset, length).
    pub offset: u64,
}

impl Key {
    /// The key (objectid, ty, offset).
    pub const fn new(objectid: u64, ty: u8, offset: u64) -> Key {
        Key {
            objectid,
            ty,
            offset,
        }
    }
}

/// The work a sequence of tree operations did, in the units `Costs` prices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Tree levels visited (extent buffers found and locked, root to leaf).
    pub levels: u64,
    /// Key comparisons of the binary searches.
    pub compares: u64,
    /// Bytes moved inside or between leaves (memmove/copy of item headers and data).
    pub moved: u64,
    /// Leaves split (a new tree block allocated).
    pub splits: u64,
}

impl Work {
    /// Adds another's work to this.
    pub fn add(&mut self, o: Work) {
        self.levels += o.levels;
        self.compares += o.compares;
        self.moved += o.moved;
        self.splits += o.splits;
    }
}

#[derive(Clone, Copy, Debug)]
struct LeafInfo {
    /// Items in the leaf (nritems).
    n: u32,
    /// Bytes used: item headers + data.
    used: u32,
    /// The block's id, stable over its life (what dirty sets hold).
    id: u64,
}

/// ⌊log2 n⌋ + 1 for n ≥ 1 (generic_bin_search's comparisons), 0 for an empty node.
fn bin_search_compares(n: u64) -> u64 {
    u64::from(64 - n.leading_zeros())
}

/// One b-tree: its items' keys and sizes, and its leaves by first key.
#[derive(Clone, Debug)]
pub struct Tree {
    items: BTreeMap<Key, u32>,
    leaves: BTreeMap<Key, LeafInfo>,
    next_id: u64,
    /// BTRFS_LEAF_DATA_SIZE: nodesize − header.
    leaf_data: u32,
    /// BTRFS_NODEPTRS_PER_BLOCK: (nodesize − header) / key pointer.
    fanout: u64,
    height: u32,
    node_compares: u64,
}

impl Tree {
    /// An empty tree (one empty root leaf) of `nodesize`-byte blocks.
    pub fn new(nodesize: u64) -> Tree {
        let data = nodesize.saturating_sub(u64::from(size::HEADER)).max(256) as u32;
        let mut t = Tree {
            items: BTreeMap::new(),
            leaves: BTreeMap::new(),
            next_id: 1,
            leaf_data: data,
            fanout: (u64::from(data) / u64::from(size::KEY_PTR)).max(2),
            height: 1,
            node_compares: 0,
        };
        t.leaves.insert(
            Key::default(),
            LeafInfo {
                n: 0,
                used: 0,
                id: 0,
            },
        );
        t
    }

    /// Levels from the root to the leaves (1: the root is a leaf).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        self.leaves.len()
    }

    /// Number of items.
    pub fn items(&self) -> usize {
        self.items.len()
    }

    /// Items per leaf, in key order.
    pub fn leaf_items(&self) -> Vec<u32> {
        self.leaves.values().map(|l| l.n).collect()
    }

    /// Bytes of a leaf's data area (BTRFS_LEAF_DATA_SIZE).
    pub fn leaf_data_size(&self) -> u32 {
        self.leaf_data
    }

    /// The id of the leaf that holds (or would hold) `key`.
    pub fn leaf_of(&self, key: Key) -> u64 {
        self.find(key).1.id
    }

    fn find(&self, key: Key) -> (Key, LeafInfo) {
        let (k, l) = self
            .leaves
            .range(..=key)
            .next_back()
            .expect("leftmost leaf");
        (*k, *l)
    }

    fn next_leaf(&self, lk: Key) -> Option<(Key, LeafInfo)> {
        self.leaves
            .range((Excluded(lk), Unbounded))
            .next()
            .map(|(k, l)| (*k, *l))
    }

    fn prev_leaf(&self, lk: Key) -> Option<(Key, LeafInfo)> {
        self.leaves.range(..lk).next_back().map(|(k, l)| (*k, *l))
    }

    /// Height and per-level search comparisons above the leaves, after the leaf count
    /// changed.
    fn reshape(&mut self) {
        let mut below = self.leaves.len() as u64;
        let (mut h, mut cmp) = (1, 0);
        while below > 1 {
            let nodes = below.div_ceil(self.fanout);
            cmp += bin_search_compares(below.div_ceil(nodes));
            below = nodes;
            h += 1;
        }
        self.height = h;
        self.node_compares = cmp;
    }

    /// btrfs_search_slot's work to reach `key`'s leaf holding `n` items.
    fn search(&self, n: u32, w: &mut Work) {
        w.levels += u64::from(self.height);
        w.compares += self.node_compares + bin_search_compares(u64::from(n));
    }

    /// Bytes (headers + data) of the leaf's items from `from` (exclusive) to the leaf's end.
    fn bytes_after(&self, from: Key, end: Option<Key>) -> u64 {
        let r = match end {
            Some(e) => self.items.range((Excluded(from), Excluded(e))),
            None => self.items.range((Excluded(from), Unbounded)),
        };
        r.map(|(_, s)| u64::from(s + size::ITEM)).sum()
    }

    /// Inserts (or, if present, resizes) the item `key` of `data` bytes; returns the id of
    /// the leaf it lands in.
    pub fn insert(&mut self, key: Key, data: u32, w: &mut Work) -> u64 {
        let (mut lk, mut leaf) = self.find(key);
        self.search(leaf.n, w);
        if let Some(old) = self.items.get(&key).copied() {
            // btrfs_extend_item / btrfs_truncate_item: the data after it shifts.
            let end = self.next_leaf(lk).map(|x| x.0);
            w.moved += self.bytes_after(key, end);
            let l = self.leaves.get_mut(&lk).unwrap();
            l.used = (l.used + data).saturating_sub(old);
            self.items.insert(key, data);
            return l.id;
        }
        let need = data + size::ITEM;
        // split_leaf may push the key's place into a neighbour: look again, at most twice.
        for attempt in 0..4 {
            if leaf.used + need <= self.leaf_data || leaf.n < 2 {
                break;
            }
            if attempt == 0 {
                self.make_room(lk, need, w);
            } else {
                let end = self.next_leaf(lk).map(|x| x.0);
                self.split(lk, end, w);
            }
            (lk, leaf) = self.find(key);
        }
        let end = self.next_leaf(lk).map(|x| x.0);
        w.moved += self.bytes_after(key, end);
        self.items.insert(key, data);
        let l = self.leaves.get_mut(&lk).unwrap();
        l.n += 1;
        l.used += need;
        debug_assert_eq!(l.id, leaf.id);
        l.id
    }

    /// Deletes the item `key` if present; returns the id of the leaf searched.
    pub fn delete(&mut self, key: Key, w: &mut Work) -> u64 {
        let (lk, leaf) = self.find(key);
        self.search(leaf.n, w);
        let Some(data) = self.items.remove(&key) else {
            return leaf.id;
        };
        let next = self.next_leaf(lk);
        w.moved += self.bytes_after(key, next.map(|x| x.0));
        let l = self.leaves.get_mut(&lk).unwrap();
        l.n -= 1;
        l.used -= data + size::ITEM;
        let (n, used) = (l.n, l.used);
        if used < self.leaf_data / 3 {
            self.merge(lk, n, used, next, w);
        }
        leaf.id
    }

    /// Finds `key`'s item and rewrites it in place (btrfs_update_inode's lookup and
    /// write_extent_buffer); inserts it if the tree does not hold it yet (an item the model
    /// did not create, such as the root directory's). Returns the leaf's id.
    pub fn update(&mut self, key: Key, data: u32, w: &mut Work) -> u64 {
        if self.items.contains_key(&key) {
            let (_, leaf) = self.find(key);
            self.search(leaf.n, w);
            leaf.id
        } else {
            self.insert(key, data, w)
        }
    }

    /// split_leaf for an insert of `need` bytes into the full leaf at `lk`: push to the
    /// left neighbour, then the right, else split in the middle.
    fn make_room(&mut self, lk: Key, need: u32, w: &mut Work) {
        let leaf = self.leaves[&lk];
        let end = self.next_leaf(lk);
        // push_leaf_left: the leaf's first items into the left neighbour's free space.
        if let Some((pk, prev)) = self.prev_leaf(lk) {
            // Both leaves keep room for the new item, wherever its key lands.
            let room = self.leaf_data.saturating_sub(prev.used + need);
            let (k, bytes, first) = self.prefix_fitting(lk, end.map(|x| x.0), room);
            if k > 0 && leaf.used - bytes + need <= self.leaf_data {
                w.moved += u64::from(bytes) + u64::from(leaf.used - bytes);
                let p = self.leaves.get_mut(&pk).unwrap();
                p.n += k;
                p.used += bytes;
                let mut l = self.leaves.remove(&lk).unwrap();
                l.n -= k;
                l.used -= bytes;
                self.leaves.insert(first.unwrap_or(lk), l);
                return;
            }
        }
        // push_leaf_right: the leaf's last items into the right neighbour's free space.
        if let Some((nk, next)) = end {
            let room = self.leaf_data.saturating_sub(next.used + need);
            let (k, bytes, first) = self.suffix_fitting(lk, nk, room);
            if k > 0 && leaf.used - bytes + need <= self.leaf_data {
                w.moved += u64::from(bytes) + u64::from(next.used);
                let mut r = self.leaves.remove(&nk).unwrap();
                r.n += k;
                r.used += bytes;
                self.leaves.insert(first.expect("pushed items"), r);
                let l = self.leaves.get_mut(&lk).unwrap();
                l.n -= k;
                l.used -= bytes;
                return;
            }
        }
        self.split(lk, end.map(|x| x.0), w);
    }

    /// How many of the leaf's first items fit in `room` bytes: (count, bytes, the first
    /// key left behind).
    fn prefix_fitting(&self, lk: Key, end: Option<Key>, room: u32) -> (u32, u32, Option<Key>) {
        let (mut k, mut bytes) = (0, 0);
        let n = self.leaves[&lk].n;
        for (key, s) in self.items_of(lk, end) {
            if bytes + s + size::ITEM > room || k + 1 >= n {
                return (k, bytes, Some(key));
            }
            k += 1;
            bytes += s + size::ITEM;
        }
        (k, bytes, None)
    }

    /// How many of the leaf's last items fit in `room` bytes: (count, bytes, the first
    /// pushed key).
    fn suffix_fitting(&self, lk: Key, end: Key, room: u32) -> (u32, u32, Option<Key>) {
        let (mut k, mut bytes, mut first) = (0, 0, None);
        let n = self.leaves[&lk].n;
        for (key, s) in self.items.range(lk..end).rev() {
            if bytes + s + size::ITEM > room || k + 1 >= n {
                break;
            }
            k += 1;
            bytes += s + size::ITEM;
            first = Some(*key);
        }
        (k, bytes, first)
    }

    fn items_of(&self, lk: Key, end: Option<Key>) -> impl Iterator<Item = (Key, u32)> + '_ {
        let r = match end {
            Some(e) => self.items.range(lk..e),
            None => self.items.range(lk..),
        };
        r.map(|(k, s)| (*k, *s))
    }

    /// Splits the leaf at `lk` at `mid = (nritems + 1) / 2` (copy_for_split).
    fn split(&mut self, lk: Key, end: Option<Key>, w: &mut Work) {
        let n = self.leaves[&lk].n;
        let mid = n.div_ceil(2);
        let mut right = LeafInfo {
            n: n - mid,
            used: 0,
            id: self.next_id,
        };
        let mut mid_key = None;
        for (i, (key, s)) in self.items_of(lk, end).enumerate() {
            if i as u32 == mid {
                mid_key = Some(key);
            }
            if i as u32 >= mid {
                right.used += s + size::ITEM;
            }
        }
        let Some(mk) = mid_key else { return };
        self.next_id += 1;
        let l = self.leaves.get_mut(&lk).unwrap();
        l.n = mid;
        l.used -= right.used;
        // copy_for_split copies the right half; insert_ptr shifts half a parent's pointers.
        w.moved += u64::from(right.used) + self.fanout / 2 * u64::from(size::KEY_PTR);
        w.splits += 1;
        w.levels += 1;
        right.id = self.next_id - 1;
        self.leaves.insert(mk, right);
        self.reshape();
    }

    /// btrfs_del_items on a leaf under a third full: push everything into the left or the
    /// right neighbour if it fits there and free the leaf (btrfs_del_leaf).
    fn merge(&mut self, lk: Key, n: u32, used: u32, next: Option<(Key, LeafInfo)>, w: &mut Work) {
        if self.leaves.len() == 1 {
            return;
        }
        let prev = self.prev_leaf(lk);
        if let Some((pk, _)) = prev.filter(|(_, p)| p.used + used <= self.leaf_data) {
            self.leaves.remove(&lk);
            let p = self.leaves.get_mut(&pk).unwrap();
            p.n += n;
            p.used += used;
        } else if let Some((nk, r)) = next.filter(|(_, r)| r.used + used <= self.leaf_data) {
            self.leaves.remove(&nk);
            let l = self.leaves.get_mut(&lk).unwrap();
            l.n += r.n;
            l.used += r.used;
        } else {
            return;
        }
        w.moved += u64::from(used);
        self.reshape();
    }
}

/// Tree ids of the dirty-set leaves (`ctree_blocks::Leaf`'s first field).
pub mod tree_id {
    /// Subvolume (fs) tree.
    pub const FS: u8 = 0;
    /// Extent tree.
    pub const EXTENT: u8 = 2;
    /// Checksum tree.
    pub const CSUM: u8 = 3;
    /// Root tree.
    pub const ROOT: u8 = 4;
    /// The subvolume's log tree.
    pub const LOG: u8 = 5;
}

/// The trees the model touches.
#[derive(Clone, Debug)]
pub struct Trees {
    /// The subvolume (fs) tree: inode, inode ref, dir item/index, xattr, file extent items.
    pub fs: Tree,
    /// The extent tree: data extent items.
    pub extent: Tree,
    /// The checksum tree: csum items.
    pub csum: Tree,
    /// The root tree: root items.
    pub root: Tree,
    /// The subvolume's log tree (freed at each commit).
    pub log: Tree,
    /// DIR_INDEX offsets of live entries, by (directory, name hash), and each directory's
    /// next index (btrfs_inode.index_cnt, from 2: btrfs_set_inode_index_count).
    dir_index: BTreeMap<(u64, u64), u64>,
    index_cnt: BTreeMap<u64, u64>,
    nodesize: u64,
}

impl Default for Trees {
    fn default() -> Self {
        Trees::new(16 << 10)
    }
}

/// btrfs_name_hash's stand-in: FNV-1a of the name (see the module comment).
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

impl Trees {
    /// Empty trees of `nodesize`-byte blocks.
    pub fn new(nodesize: u64) -> Trees {
        Trees {
            fs: Tree::new(nodesize),
            extent: Tree::new(nodesize),
            csum: Tree::new(nodesize),
            root: Tree::new(nodesize),
            log: Tree::new(nodesize),
            dir_index: BTreeMap::new(),
            index_cnt: BTreeMap::new(),
            nodesize,
        }
    }

    /// The tree of a `tree_id`.
    pub fn get_mut(&mut self, id: u8) -> &mut Tree {
        match id {
            tree_id::EXTENT => &mut self.extent,
            tree_id::CSUM => &mut self.csum,
            tree_id::ROOT => &mut self.root,
            tree_id::LOG => &mut self.log,
            _ => &mut self.fs,
        }
    }

    /// Heights indexed by tree id (1 for ids without a tree).
    pub fn heights(&self) -> [u32; 8] {
        let mut h = [1; 8];
        h[tree_id::FS as usize] = self.fs.height();
        h[tree_id::EXTENT as usize] = self.extent.height();
        h[tree_id::CSUM as usize] = self.csum.height();
        h[tree_id::ROOT as usize] = self.root.height();
        h[tree_id::LOG as usize] = self.log.height();
        h
    }

    /// Height of the tree of a `tree_id`.
    pub fn height(&mut self, id: u8) -> u32 {
        self.get_mut(id).height()
    }

    /// Frees the log tree (commit_fs_roots → btrfs_free_log).
    pub fn free_log(&mut self) {
        self.log = Tree::new(self.nodesize);
    }

    /// Adds the DIR_INDEX offset for a new entry `name` in `dir`; returns it.
    pub fn new_dir_index(&mut self, dir: u64, name: &str) -> u64 {
        let c = self.index_cnt.entry(dir).or_insert(2);
        let idx = *c;
        *c += 1;
        self.dir_index.insert((dir, name_hash(name)), idx);
        idx
    }

    /// Removes and returns the DIR_INDEX offset of `dir`'s entry `name` (one past the
    /// directory's last index if the model never indexed it).
    pub fn take_dir_index(&mut self, dir: u64, name: &str) -> u64 {
        self.dir_index
            .remove(&(dir, name_hash(name)))
            .unwrap_or_else(|| self.index_cnt.get(&dir).copied().unwrap_or(2))
    }
}

/// One item change in one tree.
#[derive(Clone, Copy, Debug)]
pub enum TreeOp {
    /// Insert (or resize) an item of this many data bytes.
    Insert(u8, Key, u32),
    /// Delete an item.
    Delete(u8, Key),
    /// Find and rewrite an item in place (inserted if the tree lacks it).
    Update(u8, Key, u32),
}

/// Applies `ops` to the trees: adds their work to `w` and the leaves they touch to `out`.
pub fn apply(
    trees: &mut Trees,
    ops: &[TreeOp],
    w: &mut Work,
    out: &mut super::ctree_blocks::Leaves,
) {
    for op in ops {
        let (t, leaf) = match *op {
            TreeOp::Insert(t, k, s) => (t, trees.get_mut(t).insert(k, s, w)),
            TreeOp::Delete(t, k) => (t, trees.get_mut(t).delete(k, w)),
            TreeOp::Update(t, k, s) => (t, trees.get_mut(t).update(k, s, w)),
        };
        out.push((t, leaf));
    }
}

/// The inode item's key.
pub fn inode_key(ino: u64) -> Key {
    Key::new(ino, key_type::INODE_ITEM, 0)
}

/// The items a new name `name` of `ino` in `dir` inserts (btrfs_add_link@v5.10: the inode
/// ref, DIR_ITEM and DIR_INDEX) and the directory's inode item update.
pub fn link_ops(trees: &mut Trees, ino: u64, dir: u64, name: &str) -> [TreeOp; 4] {
    let len = name.len() as u32;
    let idx = trees.new_dir_index(dir, name);
    [
        TreeOp::Insert(
            tree_id::FS,
            Key::new(ino, key_type::INODE_REF, dir),
            size::INODE_REF + len,
        ),
        TreeOp::Insert(
            tree_id::FS,
            Key::new(dir, key_type::DIR_ITEM, name_hash(name)),
            size::DIR_ITEM + len,
        ),
        TreeOp::Insert(
            tree_id::FS,
            Key::new(dir, key_type::DIR_INDEX, idx),
            size::DIR_ITEM + len,
        ),
        TreeOp::Update(tree_id::FS, inode_key(dir), size::INODE_ITEM),
    ]
}

/// The items removing the name deletes (__btrfs_unlink_inode@v5.10: the dir item, the dir
/// index, the inode ref) and the directory's inode item update.
pub fn unlink_ops(trees: &mut Trees, ino: u64, dir: u64, name: &str) -> [TreeOp; 4] {
    let idx = trees.take_dir_index(dir, name);
    [
        TreeOp::Delete(
            tree_id::FS,
            Key::new(dir, key_type::DIR_ITEM, name_hash(name)),
        ),
        TreeOp::Delete(tree_id::FS, Key::new(dir, key_type::DIR_INDEX, idx)),
        TreeOp::Delete(tree_id::FS, Key::new(ino, key_type::INODE_REF, dir)),
        TreeOp::Update(tree_id::FS, inode_key(dir), size::INODE_ITEM),
    ]
}

/// A written data extent's items: its file extent item, its extent item, its checksums
/// (one csum item per extent here; the kernel grows the previous item when contiguous).
pub fn extent_ops(ino: u64, file_off: u64, bytenr: u64, len: u64, sector: u64) -> [TreeOp; 3] {
    let csum = len.div_ceil(sector.max(1)) as u32 * size::CSUM_PER_SECTOR;
    [
        TreeOp::Insert(
            tree_id::FS,
            Key::new(ino, key_type::EXTENT_DATA, file_off),
            size::FILE_EXTENT,
        ),
        TreeOp::Insert(
            tree_id::EXTENT,
            Key::new(bytenr, key_type::EXTENT_ITEM, len),
            size::EXTENT_DATA_ITEM,
        ),
        TreeOp::Insert(
            tree_id::CSUM,
            Key::new(EXTENT_CSUM_OBJECTID, key_type::EXTENT_CSUM, bytenr),
            csum,
        ),
    ]
}

/// The deletions of a data extent's items (btrfs_drop_extents, the freed extent's delayed
/// ref, btrfs_del_csums).
pub fn drop_extent_ops(ino: u64, file_off: u64, bytenr: u64, len: u64) -> [TreeOp; 3] {
    [
        TreeOp::Delete(tree_id::FS, Key::new(ino, key_type::EXTENT_DATA, file_off)),
        TreeOp::Delete(
            tree_id::EXTENT,
            Key::new(bytenr, key_type::EXTENT_ITEM, len),
        ),
        TreeOp::Delete(
            tree_id::CSUM,
            Key::new(EXTENT_CSUM_OBJECTID, key_type::EXTENT_CSUM, bytenr),
        ),
    ]
}

impl super::ctree::Btrfs {
    /// Applies `ops` in transaction `t`: the touched leaves join its dirty set (COWed once
    /// per transaction) and the CPU of the work done is returned.
    pub(super) fn tree_ops(
        st: &mut super::state::FsState,
        c: &super::costs::Costs,
        t: u64,
        ops: &[TreeOp],
    ) -> sim::Nanos {
        let mut w = Work::default();
        let mut leaves = super::ctree_blocks::Leaves::new();
        apply(&mut st.trees, ops, &mut w, &mut leaves);
        let cowed = Self::dirty(st, t, &leaves);
        c.tree_cpu(&w, cowed)
    }

    /// btrfs_log_inode's copy of the inode item and its ref: found in the fs tree
    /// (btrfs_search_forward), copied into the log tree (copy_items / overwrite_item).
    pub(super) fn log_inode_copy_cpu(&self, ino: u64) -> sim::Nanos {
        let ops = [
            TreeOp::Update(tree_id::FS, inode_key(ino), size::INODE_ITEM),
            TreeOp::Insert(tree_id::LOG, inode_key(ino), size::INODE_ITEM),
            TreeOp::Insert(
                tree_id::LOG,
                Key::new(ino, key_type::INODE_REF, 0),
                size::INODE_REF + 12,
            ),
        ];
        self.log_tree_ops(&ops, u64::from(size::INODE_ITEM))
    }

    /// log_one_extent: the file extent item into the log tree, and the extent's checksums
    /// (`csum` bytes) looked up in the csum tree and copied into the log tree.
    pub(super) fn log_extent_copy_cpu(
        &self,
        ino: u64,
        e: &super::state::Extent,
        csum: u64,
    ) -> sim::Nanos {
        let item = Key::new(ino, key_type::EXTENT_DATA, e.offset);
        let sums = Key::new(EXTENT_CSUM_OBJECTID, key_type::EXTENT_CSUM, e.data_offset);
        let ops = [
            TreeOp::Insert(tree_id::LOG, item, size::FILE_EXTENT),
            TreeOp::Update(tree_id::CSUM, sums, csum as u32),
            TreeOp::Insert(tree_id::LOG, sums, csum as u32),
        ];
        let n = if csum == 0 { 1 } else { 3 };
        self.log_tree_ops(&ops[..n], u64::from(size::FILE_EXTENT) + csum)
    }

    /// btrfs_del_dir_entries_in_log / btrfs_del_inode_ref_in_log: the name's dir item and
    /// the inode ref deleted from the log tree.
    pub(super) fn log_del_name_cpu(&self, ino: u64, dir: u64, name: &str) -> sim::Nanos {
        let ops = [
            TreeOp::Delete(
                tree_id::LOG,
                Key::new(dir, key_type::DIR_ITEM, name_hash(name)),
            ),
            TreeOp::Delete(tree_id::LOG, Key::new(ino, key_type::INODE_REF, dir)),
        ];
        self.log_tree_ops(&ops, 0)
    }

    /// Log-tree work of copying items (copy_items / overwrite_item into the log tree, as
    /// btrfs_log_inode does): the CPU of the work done.
    fn log_tree_ops(&self, ops: &[TreeOp], copied: u64) -> sim::Nanos {
        let mut w = Work {
            moved: copied,
            ..Work::default()
        };
        let mut leaves = super::ctree_blocks::Leaves::new();
        apply(&mut self.st_mut().trees, ops, &mut w, &mut leaves);
        self.inner.costs.tree_cpu(&w, 0)
    }
}
