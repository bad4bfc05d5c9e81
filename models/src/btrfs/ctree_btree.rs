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

/// Key types (include/uapi/linux/btrfs_tree.h@v5.10).
pub mod key_type {
    /// BTRFS_INODE_ITEM_KEY.
    pub const INODE_ITEM: u8 = 1;
    /// BTRFS_INODE_REF_KEY.
    pub const INODE_REF: u8 = 12;
    /// BTRFS_ORPHAN_ITEM_KEY.
    pub const ORPHAN_ITEM: u8 = 48;
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
    /// An orphan item has no data (btrfs_insert_orphan_item inserts an empty item).
    pub const ORPHAN_ITEM: u32 = 0;
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
    /// struct btrfs_dir_log_item (end 8): a directory range item of the log.
    pub const DIR_LOG_ITEM: u32 = 8;
}

/// What btrfs_log_inode copies of one inode (the inputs of its tree work).
#[derive(Clone, Copy, Debug, Default)]
pub struct LogCopy {
    /// The inode.
    pub ino: u64,
    /// The fast path: only the inode item (no full sync, a file logged before).
    pub fast: bool,
    /// Created in the running transaction (its ref names are checked for overrides).
    pub new_inode: bool,
    /// LOG_INODE_ALL: xattrs copied too.
    pub all: bool,
    /// Xattrs copied.
    pub xattrs: u64,
    /// A full sync of a file: btrfs_log_holes runs.
    pub holes: bool,
    /// A directory logged with its entries.
    pub dir: bool,
    /// The deletion search of the inode's earlier log items (drop_inode_items or
    /// truncate_inode_items) is skipped: 5.16's inode_logged() check found the inode not
    /// logged in this transaction (88e221cdacc5, 4934a8150214).
    pub skip_log_drop: bool,
}

/// One btrfs_log_inode copy's tree work, gathered step by step (`log_copy_ops`) and run
/// with its locks at the end (`finish_log_copy`).
#[derive(Debug, Default)]
pub struct LogTreeWork {
    /// The work units of its searches and inserts.
    pub w: Work,
    /// Its searches and changes, in order.
    pub ops: smallvec::SmallVec<[TreeOp; 12]>,
    /// The leaf each change landed in, in order.
    pub leaves: super::ctree_blocks::Leaves,
    /// The trees' next leaf ids before its first step (None: no step yet).
    pub marks: Option<[u64; 6]>,
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
    /// Item data offsets rewritten: the items after an insert's or a delete's slot
    /// (setup_items_for_insert, btrfs_del_items, btrfs_extend_item) and the items a push or
    /// a split moves to another leaf (__push_leaf_left/right, copy_for_split), one token
    /// get and set each (ctree.c@v5.10).
    pub fixups: u64,
    /// Of `levels`, the internal nodes visited by searches (levels above the leaves).
    pub node_levels: u64,
    /// Of `compares`, those of the searches in internal nodes.
    pub node_compares: u64,
}

impl Work {
    /// Adds another's work to this.
    pub fn add(&mut self, o: Work) {
        self.levels += o.levels;
        self.compares += o.compares;
        self.moved += o.moved;
        self.splits += o.splits;
        self.fixups += o.fixups;
        self.node_levels += o.node_levels;
        self.node_compares += o.node_compares;
    }
}

#[derive(Clone, Debug, Default)]
struct LeafInfo {
    /// The leaf's items: key and data size, in key order (what nritems counts).
    items: Vec<(Key, u32)>,
    /// Bytes used: item headers + data.
    used: u32,
    /// The block's id, stable over its life (what dirty sets hold).
    id: u64,
}

impl LeafInfo {
    /// Bytes (headers + data) of the items from slot `i` on: what an insert or delete at
    /// `i` memmoves. Summed over the shorter side of `i` (`used` is the whole).
    fn bytes_from(&self, i: usize) -> u64 {
        let one = |&(_, s): &(Key, u32)| u64::from(s + size::ITEM);
        if i < self.items.len() / 2 {
            u64::from(self.used) - self.items[..i].iter().map(one).sum::<u64>()
        } else {
            self.items[i..].iter().map(one).sum()
        }
    }

    /// Inserts the item `key` of `data` bytes (`need` with its header) at slot `i`
    /// (setup_items_for_insert): the items from `i` on move and have their offsets
    /// rewritten, and the new item's are set.
    fn insert_at(&mut self, i: usize, key: Key, data: u32, need: u32, w: &mut Work) {
        w.moved += self.bytes_from(i);
        w.fixups += (self.items.len() - i) as u64 + 1;
        self.items.insert(i, (key, data));
        self.used += need;
    }
}

/// ⌊log2 n⌋ + 1 for n ≥ 1 (generic_bin_search's comparisons), 0 for an empty node.
fn bin_search_compares(n: u64) -> u64 {
    u64::from(64 - n.leading_zeros())
}

/// How many items, taken in order, fit in `room` bytes.
fn fits(items: impl Iterator<Item = u32>, room: u32) -> usize {
    let (mut k, mut bytes) = (0usize, 0u32);
    for s in items {
        if bytes + s + size::ITEM > room {
            break;
        }
        k += 1;
        bytes += s + size::ITEM;
    }
    k
}

/// One leaf of a forward walk (`Tree::walk`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkLeaf {
    /// The leaf's id.
    pub leaf: u64,
    /// Items of the walked range it holds.
    pub items: u32,
    /// Their data bytes.
    pub bytes: u64,
    /// The search's work down to it (as `Tree::search_key` does it).
    pub work: Work,
}

/// One b-tree: its leaves by first key, each with its items' keys and sizes.
#[derive(Clone, Debug)]
pub struct Tree {
    /// Each leaf's first key (the leftmost: the least key) → its slot in `slab`.
    index: BTreeMap<Key, u32>,
    slab: Vec<LeafInfo>,
    free: Vec<u32>,
    /// The leaf the last lookup found (first key, slot); cleared when `index` changes.
    hint: Option<(Key, u32)>,
    /// The rightmost leaf's first key.
    last_lo: Key,
    nitems: usize,
    next_id: u64,
    /// BTRFS_LEAF_DATA_SIZE: nodesize − header.
    leaf_data: u32,
    /// BTRFS_NODEPTRS_PER_BLOCK: (nodesize − header) / key pointer.
    fanout: u64,
    height: u32,
    node_compares: u64,
    /// Extent buffers: the leaves and the internal nodes above them.
    blocks: u64,
}

impl Tree {
    /// An empty tree (one empty root leaf) of `nodesize`-byte blocks.
    pub fn new(nodesize: u64) -> Tree {
        let data = nodesize.saturating_sub(u64::from(size::HEADER)).max(256) as u32;
        let mut t = Tree {
            index: BTreeMap::new(),
            slab: vec![LeafInfo::default()],
            free: Vec::new(),
            hint: None,
            last_lo: Key::default(),
            nitems: 0,
            next_id: 1,
            leaf_data: data,
            fanout: (u64::from(data) / u64::from(size::KEY_PTR)).max(2),
            height: 1,
            node_compares: 0,
            blocks: 1,
        };
        t.index.insert(Key::default(), 0);
        t
    }

    /// Levels from the root to the leaves (1: the root is a leaf).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Extent buffers the tree occupies: its leaves and the internal nodes above them.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// The id the next leaf a split makes takes: leaves made after reading it have ids
    /// from it on.
    pub fn next_leaf_id(&self) -> u64 {
        self.next_id
    }

    /// BTRFS_NODEPTRS_PER_BLOCK: key pointers per internal node.
    pub fn fanout(&self) -> u64 {
        self.fanout
    }

    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        self.index.len()
    }

    /// Number of items.
    pub fn items(&self) -> usize {
        self.nitems
    }

    /// Number of items with keys in [lo, hi].
    pub fn items_in(&self, lo: Key, hi: Key) -> usize {
        let first = self.index.range(..=lo).next_back().map_or(lo, |(k, _)| *k);
        self.index
            .range(first..=hi)
            .flat_map(|(_, &s)| self.slab[s as usize].items.iter())
            .filter(|(k, _)| (lo..=hi).contains(k))
            .count()
    }

    /// The leaves a forward walk over the keys in [lo, hi] visits, in key order (at least the
    /// leaf `lo` lands in): btrfs_search_slot from `lo`, then btrfs_next_leaf's search from
    /// each next leaf's first key.
    pub fn walk(&self, lo: Key, hi: Key) -> smallvec::SmallVec<[WalkLeaf; 2]> {
        let mut out: smallvec::SmallVec<[WalkLeaf; 2]> = smallvec::SmallVec::new();
        // From the last leaf starting at or below `hi` back to the one holding `lo`.
        for (&k, &s) in self.index.range(..=hi.max(lo)).rev() {
            let leaf = &self.slab[s as usize];
            // The leaf's items are in key order: the range is one run of them.
            let from = leaf.items.partition_point(|x| x.0 < lo);
            let to = leaf.items.partition_point(|x| x.0 <= hi);
            let run = &leaf.items[from..to.max(from)];
            let mut work = Work::default();
            Self::search(self.height, self.node_compares, leaf.items.len(), &mut work);
            out.push(WalkLeaf {
                leaf: leaf.id,
                items: run.len() as u32,
                bytes: run.iter().map(|&(_, d)| u64::from(d)).sum(),
                work,
            });
            if k <= lo {
                break;
            }
        }
        out.reverse();
        out
    }

    /// Items per leaf, in key order.
    pub fn leaf_items(&self) -> Vec<u32> {
        self.index
            .values()
            .map(|&s| self.slab[s as usize].items.len() as u32)
            .collect()
    }

    /// Bytes of a leaf's data area (BTRFS_LEAF_DATA_SIZE).
    pub fn leaf_data_size(&self) -> u32 {
        self.leaf_data
    }

    /// The id of the leaf that holds (or would hold) `key`.
    pub fn leaf_of(&self, key: Key) -> u64 {
        let (_, &s) = self.index.range(..=key).next_back().expect("leftmost leaf");
        self.slab[s as usize].id
    }

    /// The leaf that holds (or would hold) `key`: its first key and slot. The last
    /// lookup's leaf is checked first: `key` belongs to it if it is not below the leaf's
    /// first key and not above its last item (the next leaf starts above that), or if
    /// the leaf is the rightmost.
    fn find(&mut self, key: Key) -> (Key, usize) {
        if let Some((lo, s)) = self.hint {
            let l = &self.slab[s as usize];
            if lo <= key && (lo == self.last_lo || l.items.last().is_some_and(|x| key <= x.0)) {
                return (lo, s as usize);
            }
        }
        let (&lo, &s) = self.index.range(..=key).next_back().expect("leftmost leaf");
        self.hint = Some((lo, s));
        (lo, s as usize)
    }

    /// After `index` changed: no hint, the rightmost leaf's key again.
    fn reindexed(&mut self) {
        self.hint = None;
        self.last_lo = *self.index.last_key_value().expect("a leaf").0;
    }

    /// A slot for a new leaf.
    fn alloc(&mut self, leaf: LeafInfo) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = leaf;
                s
            }
            None => {
                self.slab.push(leaf);
                (self.slab.len() - 1) as u32
            }
        }
    }

    /// Height and per-level search comparisons above the leaves, after the leaf count
    /// changed.
    fn reshape(&mut self) {
        let mut below = self.index.len() as u64;
        let (mut h, mut cmp, mut blocks) = (1, 0, below);
        while below > 1 {
            let nodes = below.div_ceil(self.fanout);
            cmp += bin_search_compares(below.div_ceil(nodes));
            below = nodes;
            blocks += nodes;
            h += 1;
        }
        self.height = h;
        self.node_compares = cmp;
        self.blocks = blocks;
    }

    /// btrfs_search_slot's work down to a leaf of `n` items.
    fn search(height: u32, node_compares: u64, n: usize, w: &mut Work) {
        w.levels += u64::from(height);
        w.compares += node_compares + bin_search_compares(n as u64);
        w.node_levels += u64::from(height - 1);
        w.node_compares += node_compares;
    }

    /// Inserts (or, if present, resizes) the item `key` of `data` bytes; returns the id of
    /// the leaf it lands in.
    ///
    /// An item is at most BTRFS_MAX_ITEM_SIZE (leaf data − one item header,
    /// ctree.h@v5.10): a longer one (the checksums of an extent over ~16 MiB, which the
    /// kernel spreads over several csum items, MAX_CSUM_ITEMS each) is stored as one item of
    /// that size, so such extents' csum bytes in the tree are undercounted.
    pub fn insert(&mut self, key: Key, data: u32, w: &mut Work) -> u64 {
        let (h, nc, ld) = (self.height, self.node_compares, self.leaf_data);
        let data = data.min(ld - size::ITEM);
        let need = data + size::ITEM;
        let (lk, s) = self.find(key);
        let l = &mut self.slab[s];
        Self::search(h, nc, l.items.len(), w);
        match l.items.binary_search_by_key(&key, |x| x.0) {
            Ok(i) => {
                // btrfs_extend_item / btrfs_truncate_item: the data after it shifts, and
                // the offsets from the slot on are rewritten.
                w.moved += l.bytes_from(i + 1);
                w.fixups += (l.items.len() - i) as u64;
                l.used = (l.used + data).saturating_sub(l.items[i].1);
                l.items[i].1 = data;
                return l.id;
            }
            Err(i) if l.used + need <= ld || l.items.len() < 2 => {
                l.insert_at(i, key, data, need, w);
                self.nitems += 1;
                return l.id;
            }
            Err(_) => {}
        }
        // split_leaf: push to the neighbours, else split; the key's place may move into
        // a neighbour: look again, then split that leaf if it is still full.
        self.make_room(lk, need, w);
        // Each split halves the leaf, so an item that fits an empty leaf finds room.
        loop {
            let (lk, s) = self.find(key);
            let l = &mut self.slab[s];
            if l.used + need <= ld || l.items.len() < 2 {
                let i = l.items.binary_search_by_key(&key, |x| x.0).unwrap_err();
                l.insert_at(i, key, data, need, w);
                self.nitems += 1;
                return l.id;
            }
            self.split(lk, w);
        }
    }

    /// Deletes the item `key` if present; returns the id of the leaf searched.
    pub fn delete(&mut self, key: Key, w: &mut Work) -> u64 {
        let (h, nc, ld) = (self.height, self.node_compares, self.leaf_data);
        let (lk, s) = self.find(key);
        let l = &mut self.slab[s];
        Self::search(h, nc, l.items.len(), w);
        let id = l.id;
        let Ok(i) = l.items.binary_search_by_key(&key, |x| x.0) else {
            return id;
        };
        let (_, data) = l.items.remove(i);
        l.used -= data + size::ITEM;
        w.moved += l.bytes_from(i);
        w.fixups += (l.items.len() - i) as u64;
        self.nitems -= 1;
        if l.used < ld / 3 {
            self.merge(lk, w);
        }
        id
    }

    /// Searches for `key` without changing the tree; returns the id of the leaf searched.
    pub fn search_key(&mut self, key: Key, w: &mut Work) -> u64 {
        let (h, nc) = (self.height, self.node_compares);
        let (_, s) = self.find(key);
        Self::search(h, nc, self.slab[s].items.len(), w);
        self.slab[s].id
    }

    /// Finds `key`'s item and rewrites it in place (btrfs_update_inode's lookup and
    /// write_extent_buffer); inserts it if the tree does not hold it yet (an item the model
    /// did not create, such as the root directory's). Returns the leaf's id.
    pub fn update(&mut self, key: Key, data: u32, w: &mut Work) -> u64 {
        let (h, nc) = (self.height, self.node_compares);
        let (_, s) = self.find(key);
        let l = &self.slab[s];
        if l.items.binary_search_by_key(&key, |x| x.0).is_ok() {
            Self::search(h, nc, l.items.len(), w);
            l.id
        } else {
            self.insert(key, data, w)
        }
    }

    /// split_leaf's pushes for an insert of `need` bytes into the full leaf at `lk`:
    /// push_leaf_left (the leaf's first items into the left neighbour), then
    /// push_leaf_right (its last items into the right one). Both leaves keep room for the
    /// new item wherever its key lands. Returns whether a push was made. A push copies the
    /// items' headers and data and rewrites the offsets of every item whose data moved:
    /// the pushed ones and the source's remaining ones for a left push, the whole right
    /// leaf for a right push (__push_leaf_left/__push_leaf_right@v5.10).
    fn make_room(&mut self, lk: Key, need: u32, w: &mut Work) -> bool {
        let ld = self.leaf_data;
        let s = self.index[&lk] as usize;
        let mut leaf = std::mem::take(&mut self.slab[s]);
        let n = leaf.items.len();
        let mut pushed = false;
        if let Some((_, &ps)) = self.index.range(..lk).next_back() {
            let prev = &mut self.slab[ps as usize];
            let room = ld.saturating_sub(prev.used + need);
            let k = fits(leaf.items.iter().map(|x| x.1), room).min(n - 1);
            let bytes: u32 = leaf.items[..k].iter().map(|x| x.1 + size::ITEM).sum();
            if k > 0 && leaf.used - bytes + need <= ld {
                prev.items.extend(leaf.items.drain(..k));
                prev.used += bytes;
                leaf.used -= bytes;
                w.moved += u64::from(bytes) + u64::from(leaf.used);
                w.fixups += (k + leaf.items.len()) as u64;
                self.index.remove(&lk);
                self.index.insert(leaf.items[0].0, s as u32);
                pushed = true;
            }
        }
        if !pushed {
            if let Some((&nk, &rs)) = self.index.range(lk..).nth(1) {
                let next = &mut self.slab[rs as usize];
                let room = ld.saturating_sub(next.used + need);
                let k = fits(leaf.items.iter().rev().map(|x| x.1), room).min(n - 1);
                let bytes: u32 = leaf.items[n - k..].iter().map(|x| x.1 + size::ITEM).sum();
                if k > 0 && leaf.used - bytes + need <= ld {
                    let mut moved = leaf.items.split_off(n - k);
                    w.moved += u64::from(bytes) + u64::from(next.used);
                    moved.append(&mut next.items);
                    next.items = moved;
                    next.used += bytes;
                    leaf.used -= bytes;
                    w.fixups += next.items.len() as u64;
                    self.index.remove(&nk);
                    self.index.insert(next.items[0].0, rs);
                    pushed = true;
                }
            }
        }
        self.slab[s] = leaf;
        self.reindexed();
        pushed
    }

    /// Splits the leaf at `lk` at `mid = (nritems + 1) / 2` (copy_for_split).
    fn split(&mut self, lk: Key, w: &mut Work) {
        let s = self.index[&lk] as usize;
        let l = &mut self.slab[s];
        let mid = l.items.len().div_ceil(2);
        let items = l.items.split_off(mid);
        let used: u32 = items.iter().map(|x| x.1 + size::ITEM).sum();
        l.used -= used;
        let id = self.next_id;
        self.next_id += 1;
        // copy_for_split copies the right half; insert_ptr shifts half a parent's pointers.
        w.moved += u64::from(used) + self.fanout / 2 * u64::from(size::KEY_PTR);
        w.fixups += items.len() as u64;
        w.splits += 1;
        w.levels += 1;
        let first = items[0].0;
        let slot = self.alloc(LeafInfo { items, used, id });
        self.index.insert(first, slot);
        self.reindexed();
        self.reshape();
    }

    /// btrfs_del_items on a leaf under a third full: push everything into the left or the
    /// right neighbour if it fits there and free the leaf (btrfs_del_leaf).
    fn merge(&mut self, lk: Key, w: &mut Work) {
        if self.index.len() == 1 {
            return;
        }
        let ld = self.leaf_data;
        let s = self.index[&lk];
        let used = self.slab[s as usize].used;
        if let Some((_, &ps)) = self.index.range(..lk).next_back() {
            if self.slab[ps as usize].used + used <= ld {
                let mut leaf = std::mem::take(&mut self.slab[s as usize]);
                let p = &mut self.slab[ps as usize];
                w.fixups += leaf.items.len() as u64;
                p.items.append(&mut leaf.items);
                p.used += used;
                w.moved += u64::from(used);
                self.index.remove(&lk);
                self.free.push(s);
                self.reindexed();
                self.reshape();
                return;
            }
        }
        if let Some((&nk, &rs)) = self.index.range(lk..).nth(1) {
            if self.slab[rs as usize].used + used <= ld {
                let mut r = std::mem::take(&mut self.slab[rs as usize]);
                let leaf = &mut self.slab[s as usize];
                leaf.items.append(&mut r.items);
                leaf.used += r.used;
                w.moved += u64::from(used);
                w.fixups += leaf.items.len() as u64;
                self.index.remove(&nk);
                self.free.push(rs);
                self.reindexed();
                self.reshape();
            }
        }
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
    sim::rng::fnv1a64(name.as_bytes())
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

    /// Each tree's `next_leaf_id`, by tree id: a mark for `leaves_since`.
    pub fn leaf_marks(&self) -> [u64; 6] {
        let mut m = [0; 6];
        for (id, t) in self.each() {
            m[id as usize] = t.next_leaf_id();
        }
        m
    }

    /// The leaves splits made since `marks` (`leaf_marks`), as (tree id, leaf id).
    pub fn leaves_since(&self, marks: &[u64; 6], out: &mut super::ctree_blocks::Leaves) {
        for (id, t) in self.each() {
            out.extend((marks[id as usize]..t.next_leaf_id()).map(|l| (id, l)));
        }
    }

    /// The modelled trees with their ids.
    fn each(&self) -> [(u8, &Tree); 5] {
        [
            (tree_id::FS, &self.fs),
            (tree_id::EXTENT, &self.extent),
            (tree_id::CSUM, &self.csum),
            (tree_id::ROOT, &self.root),
            (tree_id::LOG, &self.log),
        ]
    }

    /// Height of the tree of a `tree_id`.
    pub fn height(&mut self, id: u8) -> u32 {
        self.get_mut(id).height()
    }

    /// Extent buffers of every modelled tree, the log tree included.
    pub fn blocks(&self) -> u64 {
        [&self.fs, &self.extent, &self.csum, &self.root, &self.log]
            .iter()
            .map(|t| t.blocks())
            .sum()
    }

    /// Extent buffers of the trees the global reserve is sized from: extent, csum and root
    /// (btrfs_update_global_block_rsv@v5.10..v5.16 sums their root items' bytes_used).
    pub fn global_rsv_blocks(&self) -> u64 {
        self.extent.blocks() + self.csum.blocks() + self.root.blocks()
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeOp {
    /// Insert (or resize) an item of this many data bytes.
    Insert(u8, Key, u32),
    /// `Insert` through a path searched for deletion (`ins_len = -1`): a file extent item
    /// put in by btrfs_drop_extents with `replace_extent` (file.c@v5.10, whose
    /// btrfs_lookup_file_extent searches with `mod = -1`). Locked as a delete (locking.rs).
    InsertDelPath(u8, Key, u32),
    /// `Update` through a path searched for deletion: btrfs_mark_extent_written's
    /// (file.c@v5.10: btrfs_search_slot(trans, root, &key, path, -1, 1)).
    UpdateDelPath(u8, Key, u32),
    /// Delete an item.
    Delete(u8, Key),
    /// Find and rewrite an item in place (inserted if the tree lacks it).
    Update(u8, Key, u32),
    /// Find the leaf that holds (or would hold) a key, changing nothing
    /// (btrfs_search_slot with cow = 0, btrfs_search_forward).
    Search(u8, Key),
    /// A search for deletion (`ins_len = -1, cow = 1`) that changes no item: it COWs and
    /// write-locks its path as a delete does. drop_objectid_items and
    /// btrfs_truncate_inode_items@v5.10 on the log (the items they drop are the ones the
    /// copy inserts again), and btrfs_lookup_dir_index_item
    /// with `mod = -1` in btrfs_del_dir_entries_in_log@v5.11.
    SearchDelPath(u8, Key),
}

impl TreeOp {
    /// The tree and the key it changes or searches.
    pub fn target(&self) -> (u8, Key) {
        match *self {
            TreeOp::Insert(t, k, _)
            | TreeOp::InsertDelPath(t, k, _)
            | TreeOp::Delete(t, k)
            | TreeOp::Update(t, k, _)
            | TreeOp::UpdateDelPath(t, k, _)
            | TreeOp::Search(t, k)
            | TreeOp::SearchDelPath(t, k) => (t, k),
        }
    }

    /// The tree it changes or searches.
    pub fn tree(&self) -> u8 {
        self.target().0
    }
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
            TreeOp::Insert(t, k, s) | TreeOp::InsertDelPath(t, k, s) => {
                (t, trees.get_mut(t).insert(k, s, w))
            }
            TreeOp::Delete(t, k) => (t, trees.get_mut(t).delete(k, w)),
            TreeOp::Update(t, k, s) | TreeOp::UpdateDelPath(t, k, s) => {
                (t, trees.get_mut(t).update(k, s, w))
            }
            TreeOp::SearchDelPath(t, k) => (t, trees.get_mut(t).search_key(k, w)),
            TreeOp::Search(t, k) => {
                trees.get_mut(t).search_key(k, w);
                continue;
            }
        };
        out.push((t, leaf));
    }
}

/// Marks the log tree blocks a call's log changes (`leaves`) dirtied, with the nodes on
/// their paths (a leaf's ancestor at level L: its id divided by the tree's fan-out to the
/// L, the root block 0, as locking.rs:lock_set takes them), and the leaves its splits made
/// (ids from `marks`), in the running log transaction; returns how many were COWed.
/// btrfs_search_slot COWs every block of the path it changes unless should_cow_block
/// (ctree.c@v5.10) finds it made in this transaction and not yet written: a block an
/// earlier log sync wrote (BTRFS_HEADER_FLAG_WRITTEN, set by lock_extent_buffer_for_io,
/// extent_io.c@v5.10) is COWed again when changed; a new block is not.
fn dirty_log_blocks(
    st: &mut super::state::FsState,
    marks: &[u64; 6],
    leaves: &[super::ctree_blocks::Leaf],
) -> u64 {
    let (height, fanout) = (st.trees.log.height(), st.trees.log.fanout());
    let made = marks[usize::from(tree_id::LOG)]..st.trees.log.next_leaf_id();
    st.log_dirty.extend(made.map(|l| (0, l)));
    let mut cowed = 0;
    for &(_, leaf) in leaves.iter().filter(|l| l.0 == tree_id::LOG) {
        let mut block = leaf;
        for level in 0..height {
            if level > 0 {
                block /= fanout;
            }
            if level > 0 && level + 1 == height {
                block = 0;
            }
            if st.log_dirty.insert((level, block)) && st.log_written.contains(&(level, block)) {
                cowed += 1;
            }
        }
    }
    cowed
}

/// The CPU of work `w` with `cowed` blocks COWed, held under `locks`: split into the
/// node searches, the rest of the descent and the leaf work, the leaf work per tree
/// (`per_tree`, ps; empty when one tree changes).
fn tree_work(
    c: &super::costs::Costs,
    w: &Work,
    cowed: u64,
    locks: super::locking::TreeLocks,
    per_tree: &[(u8, u64)],
) -> super::locking::TreeWork {
    let cpu = c.tree_cpu(w, cowed);
    if locks.is_empty() {
        return super::locking::TreeWork::unlocked(cpu);
    }
    let leaf_cpu = c.leaf_ps(w).div_ceil(1000).min(cpu);
    let node_cpu = c.node_ps(w).div_ceil(1000).min(cpu - leaf_cpu);
    super::locking::TreeWork {
        node_cpu,
        path_cpu: cpu - leaf_cpu - node_cpu,
        leaf_cpu,
        leaf_trees: split_leaf_cpu(per_tree, leaf_cpu),
        locks,
        nodes: Default::default(),
    }
}

/// `leaf_cpu` (ns) split over the trees' leaf work `per_tree` (ps), rounding at the
/// running sums so that the parts add up to `leaf_cpu`; trees without leaf work
/// are left out.
fn split_leaf_cpu(per_tree: &[(u8, u64)], leaf_cpu: sim::Nanos) -> super::locking::LeafSplit {
    let mut out = super::locking::LeafSplit::new();
    let (mut sum, mut given) = (0u64, 0);
    for &(t, ps) in per_tree.iter().filter(|x| x.1 > 0) {
        sum += ps;
        let upto = sum.div_ceil(1000).min(leaf_cpu);
        out.push((t, upto - given));
        given = upto;
    }
    out
}

/// The inode item's key.
pub fn inode_key(ino: u64) -> Key {
    Key::new(ino, key_type::INODE_ITEM, 0)
}

/// The inode item rewritten in place (btrfs_update_inode → btrfs_update_inode_item).
pub fn inode_update(ino: u64) -> TreeOp {
    TreeOp::Update(tree_id::FS, inode_key(ino), size::INODE_ITEM)
}

/// The orphan item of `ino` (BTRFS_ORPHAN_OBJECTID = -5ULL, ORPHAN_ITEM, ino:
/// btrfs_insert_orphan_item, orphan.c@v5.10).
pub fn orphan_key(ino: u64) -> Key {
    Key::new(u64::MAX - 4, key_type::ORPHAN_ITEM, ino)
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
        inode_update(dir),
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
        inode_update(dir),
    ]
}

/// A written data extent's items: its file extent item, its extent item, its checksums
/// (one csum item per extent here; the kernel grows the previous item when contiguous).
pub fn extent_ops(ino: u64, file_off: u64, bytenr: u64, len: u64, sector: u64) -> [TreeOp; 3] {
    let csum = len.div_ceil(sector.max(1)) as u32 * size::CSUM_PER_SECTOR;
    [
        // insert_reserved_file_extent (inode.c@v5.10) puts the item in through
        // btrfs_drop_extents with replace_extent: a path searched with ins_len = -1.
        TreeOp::InsertDelPath(
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
    ) -> super::locking::TreeWork {
        if c.delayed_items == 0 && c.delayed_refs == 0 {
            return Self::apply_tree_ops(st, c, t, ops);
        }
        let mut direct = super::delayed_inode::NodeOps::new();
        let mut nodes = super::delayed_inode::NodeInos::new();
        let queued = if c.delayed_items != 0 {
            st.delayed.divert(ops, &mut direct, &mut nodes)
        } else {
            direct.extend_from_slice(ops);
            0
        };
        if c.delayed_refs != 0 {
            let rest = std::mem::take(&mut direct);
            let tr = st.trans.get_mut(&t).expect("transaction");
            super::delayed_ref::divert(tr, &rest, &mut direct);
        }
        let mut work = Self::apply_tree_ops(st, c, t, &direct);
        work.path_cpu += queued * c.delayed_item_cpu(st.delayed.items);
        work.nodes = nodes;
        // A cancelled insertion's release grants tickets at the next grant (no wake here).
        Self::sync_delayed_rsv(st, c.meta_item());
        work
    }

    /// Applies `ops` to the trees in transaction `t` as `tree_ops` does, none delayed.
    pub(super) fn apply_tree_ops(
        st: &mut super::state::FsState,
        c: &super::costs::Costs,
        t: u64,
        ops: &[TreeOp],
    ) -> super::locking::TreeWork {
        let mut w = Work::default();
        let mut leaves = super::ctree_blocks::Leaves::new();
        let marks = st.trees.leaf_marks();
        // Each op's leaf work (bytes moved, offsets rewritten) goes to its tree, when the
        // call changes more than one.
        let mut per_tree: smallvec::SmallVec<[(u8, u64); 3]> = smallvec::SmallVec::new();
        if ops.iter().all(|o| o.tree() == ops[0].tree()) {
            apply(&mut st.trees, ops, &mut w, &mut leaves);
        } else {
            for op in ops {
                let before = c.leaf_ps(&w);
                apply(&mut st.trees, std::slice::from_ref(op), &mut w, &mut leaves);
                let ps = c.leaf_ps(&w) - before;
                match per_tree.iter_mut().find(|x| x.0 == op.tree()) {
                    Some(x) => x.1 += ps,
                    None => per_tree.push((op.tree(), ps)),
                }
            }
        }
        let mut born = super::ctree_blocks::Leaves::new();
        st.trees.leaves_since(&marks, &mut born);
        let locks = if c.tree_locks == 0 {
            super::locking::TreeLocks::new()
        } else {
            let tr = st.trans.get_mut(&t).expect("transaction");
            super::locking::lock_set(&mut st.trees, tr, ops, &leaves)
        };
        let cowed = Self::dirty(st, t, &born, &leaves);
        tree_work(c, &w, cowed, locks, &per_tree)
    }

    /// The tree work of btrfs_log_inode@v5.10 copying one inode (`what`), without its file
    /// extents (log_extent_copy), added to `acc`: the searches and inserts the release
    /// makes, item by item (xattr items of ~48 B: a 16-byte name and value). Not modelled:
    /// the extref items of a file with many names (one ref counted).
    pub(super) fn log_inode_copy(&self, what: &LogCopy, acc: &mut LogTreeWork) {
        let ino = what.ino;
        let mut ops: smallvec::SmallVec<[TreeOp; 12]> = smallvec::SmallVec::new();
        let iref = Key::new(ino, key_type::INODE_REF, 0);
        if what.fast {
            // The fast path (no full sync, nothing to copy again): log_inode_item, the inode
            // item overwritten or inserted in the log.
            ops.push(TreeOp::Insert(
                tree_id::LOG,
                inode_key(ino),
                size::INODE_ITEM,
            ));
        } else {
            // drop_objectid_items or btrfs_truncate_inode_items on the log (tree-log.c,
            // inode.c@v5.10; both btrfs_search_slot(trans, log, &key, path, -1, 1)): the
            // inode's older log items are looked up for deletion (and dropped; the copy
            // below inserts them again); from 5.16 only for an inode inode_logged() says
            // was logged in this transaction.
            if !what.skip_log_drop {
                ops.push(TreeOp::SearchDelPath(tree_id::LOG, inode_key(ino)));
            }
            // copy_inode_items_to_log: btrfs_search_forward over the inode's items in the
            // subvolume tree, copy_items into the log (the item and its ref).
            ops.push(TreeOp::Search(tree_id::FS, inode_key(ino)));
            ops.push(TreeOp::Insert(
                tree_id::LOG,
                inode_key(ino),
                size::INODE_ITEM,
            ));
            ops.push(TreeOp::Insert(tree_id::LOG, iref, size::INODE_REF + 12));
        }
        if what.new_inode {
            // btrfs_check_ref_name_override for an inode created in this transaction: the
            // ref's name looked up in the parent's dir items (btrfs_lookup_dir_item).
            ops.push(TreeOp::Search(tree_id::FS, iref));
        }
        if what.all {
            // btrfs_log_all_xattrs: a search over the xattr items, each copied.
            let xk = Key::new(ino, key_type::XATTR_ITEM, 0);
            ops.push(TreeOp::Search(tree_id::FS, xk));
            for _ in 0..what.xattrs {
                ops.push(TreeOp::Insert(tree_id::LOG, xk, size::DIR_ITEM + 16));
            }
        }
        if what.holes {
            // btrfs_log_holes (full sync without the no_holes feature): a search over the
            // file extent items.
            let ek = Key::new(ino, key_type::EXTENT_DATA, 0);
            ops.push(TreeOp::Search(tree_id::FS, ek));
        }
        if what.dir {
            // log_directory_changes → log_dir_items for DIR_ITEM and DIR_INDEX: a search of
            // each range in the subvolume tree, the range's items copied, and its
            // BTRFS_DIR_LOG_*_KEY range item inserted (insert_dir_log_key).
            for ty in [key_type::DIR_ITEM, key_type::DIR_INDEX] {
                let k = Key::new(ino, ty, 0);
                ops.push(TreeOp::Search(tree_id::FS, k));
                ops.push(TreeOp::Insert(tree_id::LOG, k, size::DIR_LOG_ITEM));
            }
        }
        let copied = u64::from(size::INODE_ITEM) + what.xattrs * 48;
        self.log_copy_ops(acc, &ops, copied);
    }

    /// log_one_extent: the file extent item into the log tree, and the extent's checksums
    /// (`csum` bytes) looked up in the csum tree (btrfs_lookup_csums_range@v5.10, a
    /// read-only search) and copied into the log tree; added to `acc`.
    pub(super) fn log_extent_copy(
        &self,
        ino: u64,
        e: &super::state::Extent,
        csum: u64,
        acc: &mut LogTreeWork,
    ) {
        let item = Key::new(ino, key_type::EXTENT_DATA, e.offset);
        let sums = Key::new(EXTENT_CSUM_OBJECTID, key_type::EXTENT_CSUM, e.data_offset);
        let ops = [
            TreeOp::Insert(tree_id::LOG, item, size::FILE_EXTENT),
            TreeOp::Search(tree_id::CSUM, sums),
            TreeOp::Insert(tree_id::LOG, sums, csum as u32),
        ];
        let n = if csum == 0 { 1 } else { 3 };
        self.log_copy_ops(acc, &ops[..n], u64::from(size::FILE_EXTENT) + csum);
    }

    /// Applies one step of btrfs_log_inode's copy (`ops`, `copied` bytes written into log
    /// leaves) to the trees and adds its work to `acc`.
    fn log_copy_ops(&self, acc: &mut LogTreeWork, ops: &[TreeOp], copied: u64) {
        let mut st = self.st_mut();
        if acc.marks.is_none() {
            acc.marks = Some(st.trees.leaf_marks());
        }
        acc.w.moved += copied;
        apply(&mut st.trees, ops, &mut acc.w, &mut acc.leaves);
        acc.ops.extend_from_slice(ops);
    }

    /// The tree work of one btrfs_log_inode copy (`acc`): its CPU, the COWs of the log
    /// blocks it dirties (`dirty_log_blocks`), and the locks it holds meanwhile — write
    /// locks on the log tree's paths, read locks on the subvolume and csum trees' paths it
    /// searches (btrfs_search_slot and btrfs_search_forward as for any tree; the log tree's
    /// COW state from the log transaction). As for a call's changes elsewhere, the copy's
    /// searches and inserts hold their locks together; the kernel releases each path
    /// (btrfs_release_path) after its item is copied.
    pub(super) fn finish_log_copy(&self, acc: LogTreeWork) -> super::locking::TreeWork {
        let Some(marks) = acc.marks else {
            return super::locking::TreeWork::default();
        };
        let c = &self.inner.costs;
        let mut st = self.st_mut();
        let st = &mut *st;
        let locks = if c.tree_locks == 0 {
            super::locking::TreeLocks::new()
        } else {
            let mut cow = super::locking::LogCow {
                dirty: &st.log_dirty,
                written: &st.log_written,
            };
            super::locking::lock_set(&mut st.trees, &mut cow, &acc.ops, &acc.leaves)
        };
        let cowed = self.cow_log_blocks(st, &marks, &acc.leaves);
        tree_work(c, &acc.w, cowed, locks, &[])
    }

    /// Log-tree work of btrfs_del_inode_ref_in_log (tree-log.c@v5.11): btrfs_del_inode_ref
    /// (inode-item.c@v5.11) deletes the inode ref from the log through a search for
    /// deletion (`btrfs_search_slot(trans, log, &key, path, -1, 1)`), with its locks.
    pub(super) fn log_del_inode_ref(&self, ino: u64, dir: u64) -> super::locking::TreeWork {
        let ops = [TreeOp::Delete(
            tree_id::LOG,
            Key::new(ino, key_type::INODE_REF, dir),
        )];
        self.log_tree_change(&ops)
    }

    /// Log-tree work of btrfs_del_dir_entries_in_log (tree-log.c@v5.11): the name's dir
    /// item looked up with `mod = -1` and deleted, the path released, then its dir index
    /// item looked up with `mod = -1` (a search for deletion whether or not the log holds
    /// it). The model's log keeps a directory's index items as one range item
    /// (log_inode_copy), so the index search goes to the directory's first index key;
    /// the index item's delete is not priced. With its locks; each search's path is
    /// released before the next (btrfs_release_path), as here.
    pub(super) fn log_del_dir_entry(&self, dir: u64, name: &str) -> [super::locking::TreeWork; 2] {
        let item = [TreeOp::Delete(
            tree_id::LOG,
            Key::new(dir, key_type::DIR_ITEM, name_hash(name)),
        )];
        let index = [TreeOp::SearchDelPath(
            tree_id::LOG,
            Key::new(dir, key_type::DIR_INDEX, 0),
        )];
        [self.log_tree_change(&item), self.log_tree_change(&index)]
    }

    /// Log-tree work of btrfs_del_dir_entries_in_log@v5.11's update of a logged
    /// directory's inode item: `btrfs_search_slot(trans, log, &key, path, 0, 1)` (COWs
    /// and write-locks the leaf) and the item's i_size rewritten in place, with its locks.
    pub(super) fn log_dir_isize_update(&self, dir: u64) -> super::locking::TreeWork {
        let ops = [TreeOp::Update(
            tree_id::LOG,
            inode_key(dir),
            size::INODE_ITEM,
        )];
        self.log_tree_change(&ops)
    }

    /// One change of the log tree outside btrfs_log_inode's copy (`ops`, applied now):
    /// its work, the COWs of the log blocks it dirties and its locks, as the copy's.
    fn log_tree_change(&self, ops: &[TreeOp]) -> super::locking::TreeWork {
        let mut acc = LogTreeWork::default();
        self.log_copy_ops(&mut acc, ops, 0);
        self.finish_log_copy(acc)
    }

    /// The read-only walk of one btrfs_real_readdir@v5.10 call over directory `dir`'s
    /// index items from `pos` on: per leaf visited (btrfs_search_slot(NULL, root, key,
    /// path, 0, 0), then btrfs_next_leaf's search from the next key) its descent under
    /// read locks and, with the leaf still read-locked, the copy of its items
    /// (`readdir_item_ps` each, their data bytes — the dir item and its name — at
    /// `leaf_move_ps_per_byte`) into the private buffer: the work per leaf.
    pub(super) fn readdir_walk(
        &self,
        dir: u64,
        pos: u64,
    ) -> smallvec::SmallVec<[super::locking::TreeWork; 2]> {
        let c = &self.inner.costs;
        let lo = Key::new(dir, key_type::DIR_INDEX, pos);
        let hi = Key::new(dir, key_type::DIR_INDEX, u64::MAX);
        let st = self.inner.st.borrow();
        let tree = &st.trees.fs;
        let (height, fanout) = (tree.height(), tree.fanout());
        let mut out = smallvec::SmallVec::new();
        for l in tree.walk(lo, hi) {
            let locks = if c.tree_locks == 0 {
                super::locking::TreeLocks::new()
            } else {
                super::locking::read_path(tree_id::FS, l.leaf, height, fanout)
            };
            let mut work = tree_work(c, &l.work, 0, locks, &[]);
            let copy = u64::from(l.items) * c.readdir_item_ps + l.bytes * c.leaf_move_ps_per_byte;
            work.leaf_cpu = copy.div_ceil(1000);
            out.push(work);
        }
        out
    }

    /// The CPU of searches outside any transaction's changes (btrfs_search_slot with
    /// cow = 0): `ops` are all `TreeOp::Search`, so nothing is dirtied or COWed.
    pub(super) fn search_cpu(&self, ops: &[TreeOp]) -> sim::Nanos {
        sim::check!(
            ops.iter().all(|op| matches!(op, TreeOp::Search(..))),
            "search_cpu takes searches only"
        );
        let mut w = Work::default();
        let mut leaves = super::ctree_blocks::Leaves::new();
        apply(&mut self.st_mut().trees, ops, &mut w, &mut leaves);
        self.inner.costs.tree_cpu(&w, 0)
    }

    /// Marks the log blocks `leaves` dirtied and returns how many were COWed
    /// (`dirty_log_blocks`; none with `costs.log_cow` off), counted in `log_blocks_cowed`.
    /// The old copy of each COWed block was written by a log sync, so
    /// btrfs_free_tree_block (extent-tree.c@v5.10) pins it (pin_down_extent, for
    /// BTRFS_HEADER_FLAG_WRITTEN) until the log's transaction commits: metadata
    /// `bytes_pinned`, and a metadata chunk forced when the block groups run out
    /// (`Btrfs::account_tree_blocks`).
    fn cow_log_blocks(
        &self,
        st: &mut super::state::FsState,
        marks: &[u64; 6],
        leaves: &[super::ctree_blocks::Leaf],
    ) -> u64 {
        if self.inner.costs.log_cow == 0 {
            return 0;
        }
        let cowed = dirty_log_blocks(st, marks, leaves);
        self.inner.m.borrow_mut().log_blocks_cowed += cowed;
        if cowed > 0 {
            // A block a log sync wrote belongs to the running transaction's log tree
            // (btrfs_free_log clears both at the commit).
            let t = st
                .log_tree_of
                .expect("log blocks COWed outside a log transaction");
            let tr = st.trans.get_mut(&t).expect("the log's transaction");
            st.meta.pin(tr, cowed * st.meta.nodesize);
            Self::account_tree_blocks(st, t);
        }
        cowed
    }
}

#[cfg(test)]
mod tests {
    use super::{split_leaf_cpu, tree_id};

    #[test]
    fn the_log_blocks_a_change_dirties_are_the_ones_its_locks_cover() {
        // A three-level log tree: each leaf's path as dirty_log_blocks marks it is the path
        // lock_set locks (same fan-out, the root block 0), so the COW test of a node reads
        // the mark its own earlier change left.
        use super::{apply, dirty_log_blocks, inode_key, TreeOp, Work};
        let mut sim = sim::Sim::new();
        let fs = crate::btrfs::ctree::Btrfs::for_test(&mut sim);
        let mut st = fs.st_mut();
        let mut w = Work::default();
        for ino in 256..60_256u64 {
            st.trees.log.insert(inode_key(ino), 160, &mut w);
        }
        assert_eq!(st.trees.log.height(), 3);
        for ino in (256..60_256u64).step_by(97) {
            let op = [TreeOp::Update(tree_id::LOG, inode_key(ino), 160)];
            let mut leaves = crate::btrfs::ctree_blocks::Leaves::new();
            apply(&mut st.trees, &op, &mut w, &mut leaves);
            let marks = st.trees.leaf_marks();
            st.log_dirty.clear();
            dirty_log_blocks(&mut st, &marks, &leaves);
            let (dirty, written) = (Default::default(), Default::default());
            let mut cow = crate::btrfs::locking::LogCow {
                dirty: &dirty,
                written: &written,
            };
            let locks = crate::btrfs::locking::lock_set(&mut st.trees, &mut cow, &op, &leaves);
            let mut locked: Vec<(u32, u64)> = locks.iter().map(|l| (l.level, l.block)).collect();
            let mut marked: Vec<(u32, u64)> = st.log_dirty.iter().copied().collect();
            locked.sort_unstable();
            marked.sort_unstable();
            assert_eq!(marked, locked, "inode {ino}");
        }
    }

    #[test]
    fn a_cowed_log_block_a_sync_wrote_is_pinned_in_the_logs_transaction() {
        // btrfs_free_tree_block pins the old copy of a written log block: metadata
        // bytes_pinned and the log's transaction's pinned bytes grow by a block per COW;
        // a block no sync wrote is not COWed, so nothing is pinned.
        use crate::btrfs::state::Transaction;
        let mut sim = sim::Sim::new();
        let fs = crate::btrfs::ctree::Btrfs::for_test(&mut sim);
        let mut st = fs.st_mut();
        st.trans.insert(1000, Transaction::running(1000, 0, 0));
        st.log_tree_of = Some(1000);
        let nodesize = st.meta.nodesize;
        let marks = st.trees.leaf_marks();
        let leaf = st.trees.log.leaf_of(super::inode_key(256));
        let (before, tr_before) = (st.meta.pinned, st.trans[&1000].meta_pinned);
        let cowed = fs.cow_log_blocks(&mut st, &marks, &[(tree_id::LOG, leaf)]);
        assert_eq!(cowed, 0, "a block no sync wrote");
        assert_eq!(st.meta.pinned, before);
        // A log sync writes it; the next change COWs it and pins the written copy.
        let dirty: Vec<_> = st.log_dirty.drain().collect();
        st.log_written.extend(dirty);
        let cowed = fs.cow_log_blocks(&mut st, &marks, &[(tree_id::LOG, leaf)]);
        assert_eq!(cowed, 1);
        assert_eq!(st.meta.pinned, before + nodesize);
        assert_eq!(st.trans[&1000].meta_pinned, tr_before + nodesize);
    }

    #[test]
    fn a_calls_leaf_cpu_splits_over_its_trees_in_order_and_adds_up() {
        // 1.5 + 0 + 2.7 ns of moves: the ceilings of the running sums, 2 and 5.
        let per = [
            (tree_id::FS, 1_500),
            (tree_id::EXTENT, 0),
            (tree_id::CSUM, 2_700),
        ];
        let s = split_leaf_cpu(&per, 5);
        assert_eq!(s.as_slice(), &[(tree_id::FS, 2), (tree_id::CSUM, 3)]);
        // Capped at the call's leaf CPU (itself capped at the call's CPU).
        let s = split_leaf_cpu(&per, 4);
        assert_eq!(s.iter().map(|x| x.1).sum::<u64>(), 4);
        assert!(split_leaf_cpu(&[(tree_id::FS, 0)], 0).is_empty());
    }
}
