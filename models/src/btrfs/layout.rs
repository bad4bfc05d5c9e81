//! The physical layout of a populated single-device btrfs, for scrub: chunks with device
//! addresses, data extents, and the leaves and level-1 nodes of the extent, csum and fs trees
//! with addresses in the metadata chunk, so that every read has a real seek distance.
//!
//! Population (seed 002, Qu Wenruo's fio job): `nrfiles` files of a uniform random size in
//! `[min_size, max_size]`, then one file in `delete_every` removed at random.
//!
//! Derivations (kernel v5.15 unless noted; guesses marked):
//! - Device: 1 MiB reserved, a DUP system chunk (2 × 8 MiB), the DUP metadata chunk (two 1 GiB
//!   stripes, `volumes.c:init_alloc_chunk_ctl_policy_regular`: 1 GiB metadata chunks on
//!   filesystems over 50 GiB; mkfs places the first chunks at the start, guess for the order),
//!   then 1 GiB data chunks (`BTRFS_MAX_DATA_CHUNK_SIZE` stripe) filled in ascending order
//!   (`extent-tree.c:find_free_extent`, clustered allocation on rotational devices). Logical
//!   addresses equal the physical address of a chunk's first stripe.
//! - One data extent per file, rounded up to 4 KiB (delalloc writeback of a fully dirty file;
//!   fragmentation by writeback racing fio is not modelled).
//! - Items: data extent item 78 bytes (item header 25 + `btrfs_extent_item` 24 + inline
//!   `EXTENT_DATA_REF` 29); skinny metadata item 58 (25 + 24 + 9); block group item 49; one
//!   csum item per extent, 25 + 4 bytes per 4 KiB (crc32c); fs tree per file: inode item 185,
//!   inode ref 48, dir item 68, dir index 68, file extent item 78 (names of 13 bytes).
//!   Leaf data 16,283 bytes (16 KiB nodesize − 101 header), node fanout 493.
//! - Fill: extent and csum trees grow by appends in ascending key order, which btrfs splits by
//!   starting a new leaf (`ctree.c:split_leaf`, mid == nritems), so leaves are full until the
//!   deletion removes 1 in `delete_every` of their items: fill 1 − 1/delete_every. The fs tree
//!   has dir items inserted in hash order (random inserts: ln 2 ≈ 0.69 fill, Yao 1978).
//! - Addresses: leaves keep the addresses of their last COW. Leaves not touched by the
//!   deletion keep their population-time place: all trees' leaves in the order their keys were
//!   filled (data address for extent/csum leaves, creation order for fs leaves), one after the
//!   other. The deletion transaction COWs (a) fs tree leaves in the random order of the
//!   unlinks, then at commit (b) extent and csum leaves as the delayed refs of the freed
//!   extents run in ascending bytenr (`delayed-ref.c`: heads in an rbtree by bytenr;
//!   `__btrfs_free_extent` deletes the extent item, then `btrfs_del_csums`), each allocated
//!   after the previous (clustered allocation), a parent node just before its first COWed
//!   child. Freed old copies stay as holes in the first region.
//! - Not modelled: root, chunk, device and free-space trees (a few leaves), inline extents.

use rand::seq::SliceRandom;
use rand::Rng;

/// Tree block size (mkfs default nodesize).
pub const NODESIZE: u64 = 16 * 1024;
/// Leaf bytes for items (nodesize − header).
pub const LEAF_DATA: u64 = NODESIZE - 101;
/// Key pointers per node.
pub const NODE_FANOUT: u64 = (NODESIZE - 101) / 33;
/// Data block size.
pub const SECTOR: u64 = 4096;
/// Data chunk length.
pub const DATA_CHUNK: u64 = 1 << 30;
/// Metadata chunk length (per stripe).
pub const META_CHUNK: u64 = 1 << 30;
const RESERVED: u64 = 1 << 20;
const SYSTEM_STRIPE: u64 = 8 << 20;

/// Parameters of the population.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutParams {
    /// Files written (seed 002: nrfiles=16384 × numjobs=4).
    pub files: u64,
    /// Smallest file, bytes (filesize=2k-512k).
    pub min_size: u64,
    /// Largest file, bytes.
    pub max_size: u64,
    /// One file in this many is deleted (seed: 1/16th).
    pub delete_every: u64,
    /// Metadata DUP (two copies on the device) or single.
    pub metadata_dup: bool,
}

impl Default for LayoutParams {
    fn default() -> Self {
        LayoutParams {
            files: 4 * 16384,
            min_size: 2 * 1024,
            max_size: 512 * 1024,
            delete_every: 16,
            metadata_dup: true,
        }
    }
}

/// Which tree a block belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tree {
    /// The extent tree (keys: logical addresses).
    Extent = 0,
    /// The csum tree (keys: logical addresses of data).
    Csum = 1,
    /// The fs tree (keys: inode numbers; only its size and place matter here).
    Fs = 2,
}

/// A tree block: its tree, level, logical address (== physical of stripe 0), key range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Block {
    /// Tree.
    pub tree: Tree,
    /// 0 for leaves, 1 for level-1 nodes, 2 for the root above them.
    pub level: u8,
    /// Logical address.
    pub bytenr: u64,
    /// First key covered (logical address for extent/csum trees).
    pub lo: u64,
    /// One past the last key covered.
    pub hi: u64,
    /// Index of the parent block (None for a root).
    pub parent: Option<usize>,
    /// Slot in the parent.
    pub slot: usize,
}

/// What a chunk holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkKind {
    /// Data.
    Data,
    /// Metadata (tree blocks).
    Metadata,
}

/// A chunk and its stripes on the device.
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    /// Data or metadata.
    pub kind: ChunkKind,
    /// Logical start.
    pub logical: u64,
    /// Length.
    pub len: u64,
    /// Physical start of each stripe (two for DUP).
    pub stripes: Vec<u64>,
}

/// A data extent (or, in metadata chunks, a tree block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Logical address.
    pub logical: u64,
    /// Bytes.
    pub len: u64,
}

/// The populated filesystem.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The parameters.
    pub params: LayoutParams,
    /// Chunks in device order.
    pub chunks: Vec<Chunk>,
    /// Data extents, ascending.
    pub data: Vec<Extent>,
    /// Tree blocks, indexed; each tree's leaves in key order.
    pub blocks: Vec<Block>,
    /// Leaf indices of each tree in key order ([Extent, Csum, Fs]).
    pub leaves: [Vec<usize>; 3],
    /// Root block of each tree.
    pub roots: [usize; 3],
}

/// Leaves COWed by the deletion transaction, in COW order.
struct Cow {
    order: Vec<(Tree, usize)>,
    done: [Vec<bool>; 3],
}

impl Cow {
    fn touch(&mut self, t: Tree, l: usize) {
        if !self.done[t as usize][l] {
            self.done[t as usize][l] = true;
            self.order.push((t, l));
        }
    }
}

/// Splits a sorted run of items (key, bytes) into leaves of at most `cap` bytes; returns each
/// leaf's first key.
fn pack(items: &[(u64, u64)], cap: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut used = 0;
    for &(k, b) in items {
        if out.is_empty() || used + b > cap {
            out.push(k);
            used = 0;
        }
        used += b;
    }
    out
}

/// Where a populated filesystem's chunks begin: the metadata chunk's logical address, its
/// copies (2 with DUP metadata), and the first data chunk's address.
#[derive(Clone, Copy)]
struct Bases {
    meta_logical: u64,
    meta_copies: u64,
    data_start: u64,
}

/// Leaves of each tree as their first keys: extent, csum, fs.
struct LeafKeys {
    ext: Vec<u64>,
    csum: Vec<u64>,
    fs: Vec<u64>,
    /// Metadata blocks the extent tree holds items for (an estimate from the other trees).
    n_meta_blocks: u64,
}

/// The index of the leaf holding `key`, of leaves with first keys `ls`.
fn leaf_of(ls: &[u64], key: u64) -> usize {
    ls.partition_point(|&l| l <= key).saturating_sub(1)
}

impl Layout {
    /// Populates a filesystem with `p`, drawing sizes and deletions from `rng`.
    pub fn build(p: &LayoutParams, rng: &mut impl Rng) -> Layout {
        let meta_logical = RESERVED + 2 * SYSTEM_STRIPE;
        let meta_copies = if p.metadata_dup { 2 } else { 1 };
        let at = Bases {
            meta_logical,
            meta_copies,
            data_start: meta_logical + meta_copies * META_CHUNK,
        };
        let (files, n_data_chunks) = place_files(p, rng, at.data_start);
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.shuffle(rng);
        let n_del = (p.files / p.delete_every.max(1)) as usize;
        let deleted_in_order: Vec<usize> = order[..n_del].to_vec();
        let mut deleted = vec![false; files.len()];
        for &i in &deleted_in_order {
            deleted[i] = true;
        }
        let data: Vec<Extent> = files
            .iter()
            .zip(&deleted)
            .filter(|(_, &d)| !d)
            .map(|(e, _)| *e)
            .collect();
        let keys = leaf_keys(&files, at, n_data_chunks);
        // After deletion the leaves hold 1 − 1/delete_every of their bytes (the key ranges
        // are unchanged).
        let cow = cow_order(&files, &deleted_in_order, &keys, at);
        let (mut blocks, leaves, roots) = tree_blocks(&keys);
        place_blocks(&mut blocks, &leaves, cow, &keys, &files, at);
        Layout {
            params: p.clone(),
            chunks: chunks(at, n_data_chunks),
            data,
            blocks,
            leaves,
            roots,
        }
    }

    /// Tree blocks (metadata extents) in ascending logical order.
    pub fn tree_extents(&self) -> Vec<Extent> {
        let mut v: Vec<Extent> = self
            .blocks
            .iter()
            .map(|b| Extent {
                logical: b.bytenr,
                len: NODESIZE,
            })
            .collect();
        v.sort_unstable_by_key(|e| e.logical);
        v
    }

    /// The leaf of `tree` whose key range holds `key`.
    pub fn leaf_for(&self, tree: Tree, key: u64) -> usize {
        let ls = &self.leaves[tree as usize];
        let i = ls
            .partition_point(|&b| self.blocks[b].lo <= key)
            .saturating_sub(1);
        ls[i]
    }

    /// Position of leaf block `id` in its tree's key order.
    pub fn leaf_index(&self, id: usize) -> usize {
        let t = self.blocks[id].tree as usize;
        self.leaves[t]
            .binary_search_by_key(&self.blocks[id].lo, |&b| self.blocks[b].lo)
            .unwrap_or(0)
    }

    /// Bytes of all dev extents on the device (what btrfs-progs calls "Total to scrub").
    pub fn total_to_scrub(&self) -> u64 {
        let system = 2 * SYSTEM_STRIPE;
        system
            + self
                .chunks
                .iter()
                .map(|c| c.len * c.stripes.len() as u64)
                .sum::<u64>()
    }
}

/// Files in allocation order, each one extent in the current data chunk; and the number of
/// data chunks they fill.
fn place_files(p: &LayoutParams, rng: &mut impl Rng, data_start: u64) -> (Vec<Extent>, u64) {
    let mut files = Vec::with_capacity(p.files as usize);
    let mut chunk_end = data_start + DATA_CHUNK;
    let mut cursor = data_start;
    for _ in 0..p.files {
        let size = rng.random_range(p.min_size..=p.max_size.max(p.min_size));
        let len = size.div_ceil(SECTOR) * SECTOR;
        if cursor + len > chunk_end {
            cursor = chunk_end;
            chunk_end += DATA_CHUNK;
        }
        files.push(Extent {
            logical: cursor,
            len,
        });
        cursor += len;
    }
    (files, (chunk_end - data_start) / DATA_CHUNK)
}

/// Each tree's leaves, cut at population time (before the deletion).
fn leaf_keys(files: &[Extent], at: Bases, n_data_chunks: u64) -> LeafKeys {
    let cap_full = |fill: f64| ((LEAF_DATA as f64) * fill) as u64;
    // Extent tree items (before the deletion, so leaves are cut at population time).
    let csum_items: Vec<(u64, u64)> = files
        .iter()
        .map(|e| (e.logical, 25 + 4 * e.len / SECTOR))
        .collect();
    let csum_leaves = pack(&csum_items, LEAF_DATA);
    // fs tree: per file 447 bytes keyed by creation order; packed at ln 2.
    let fs_items: Vec<(u64, u64)> = (0..files.len() as u64).map(|i| (i, 447)).collect();
    let fs_leaves = pack(&fs_items, cap_full(std::f64::consts::LN_2));
    // Metadata items: one per tree block; estimate the count first from the other trees.
    let n_meta_blocks =
        (csum_leaves.len() + fs_leaves.len()) as u64 * (NODE_FANOUT + 1) / NODE_FANOUT + 64;
    let extent_leaf_guess = (files.len() as u64 * 78 + n_meta_blocks * 58) / LEAF_DATA + 1;
    let mut ext_items: Vec<(u64, u64)> = Vec::new();
    for i in 0..(n_meta_blocks + extent_leaf_guess) {
        ext_items.push((at.meta_logical + i * NODESIZE, 58));
    }
    for c in 0..n_data_chunks {
        ext_items.push((at.data_start + c * DATA_CHUNK, 49));
    }
    for e in files {
        ext_items.push((e.logical, 78));
    }
    ext_items.sort_unstable();
    LeafKeys {
        ext: pack(&ext_items, LEAF_DATA),
        csum: csum_leaves,
        fs: fs_leaves,
        n_meta_blocks,
    }
}

/// Which leaves the deletion COWs, and in what order.
fn cow_order(files: &[Extent], deleted_in_order: &[usize], keys: &LeafKeys, at: Bases) -> Cow {
    let mut cow = Cow {
        order: Vec::new(),
        done: [
            vec![false; keys.ext.len()],
            vec![false; keys.csum.len()],
            vec![false; keys.fs.len()],
        ],
    };
    // (a) unlinks in random order touch fs leaves.
    for &i in deleted_in_order {
        cow.touch(Tree::Fs, leaf_of(&keys.fs, i as u64));
    }
    // (b) delayed refs at commit, ascending bytenr: metadata items of the COWed blocks
    // first (their keys are in the metadata chunk), then each freed data extent's extent
    // item and csums.
    let first_meta_leaves = leaf_of(&keys.ext, at.meta_logical + keys.n_meta_blocks * NODESIZE);
    for l in 0..=first_meta_leaves {
        cow.touch(Tree::Extent, l);
    }
    let mut freed: Vec<usize> = deleted_in_order.to_vec();
    freed.sort_unstable();
    for i in freed {
        let e = files[i];
        cow.touch(Tree::Extent, leaf_of(&keys.ext, e.logical));
        let (a, b) = (
            leaf_of(&keys.csum, e.logical),
            leaf_of(&keys.csum, e.logical + e.len - 1),
        );
        for l in a..=b {
            cow.touch(Tree::Csum, l);
        }
    }
    cow
}

/// Blocks: leaves per tree, level-1 nodes over them, a root (no addresses yet); and each
/// tree's leaf indices and root.
fn tree_blocks(keys: &LeafKeys) -> (Vec<Block>, [Vec<usize>; 3], [usize; 3]) {
    let mut blocks: Vec<Block> = Vec::new();
    let mut leaves: [Vec<usize>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut roots = [0usize; 3];
    let node_cap = NODE_FANOUT as usize;
    for (t, ls) in [
        (Tree::Extent, &keys.ext),
        (Tree::Csum, &keys.csum),
        (Tree::Fs, &keys.fs),
    ] {
        let root = blocks.len();
        let n_nodes = ls.len().div_ceil(node_cap.max(2));
        roots[t as usize] = root;
        blocks.push(Block {
            tree: t,
            level: if n_nodes > 1 { 2 } else { 1 },
            bytenr: 0,
            lo: 0,
            hi: u64::MAX,
            parent: None,
            slot: 0,
        });
        let cap = node_cap.max(2);
        let first_key = |i: usize| if i == 0 { 0 } else { ls[i] };
        let mut node_ids = vec![root];
        if n_nodes > 1 {
            node_ids.clear();
            for k in 0..n_nodes {
                node_ids.push(blocks.len());
                blocks.push(Block {
                    tree: t,
                    level: 1,
                    bytenr: 0,
                    lo: first_key(k * cap),
                    hi: ls.get((k + 1) * cap).copied().unwrap_or(u64::MAX),
                    parent: Some(root),
                    slot: k,
                });
            }
        }
        for i in 0..ls.len() {
            leaves[t as usize].push(blocks.len());
            blocks.push(Block {
                tree: t,
                level: 0,
                bytenr: 0,
                lo: first_key(i),
                hi: ls.get(i + 1).copied().unwrap_or(u64::MAX),
                parent: Some(node_ids[(i / cap).min(node_ids.len() - 1)]),
                slot: i % cap,
            });
        }
    }
    (blocks, leaves, roots)
}

/// Addresses in the metadata chunk: region A, the population order of every leaf (COWed
/// ones leave holes there); region B, the deletion transaction's COWs, parents just before
/// their first COWed child; then the nodes not COWed.
fn place_blocks(
    blocks: &mut [Block],
    leaves: &[Vec<usize>; 3],
    cow: Cow,
    keys: &LeafKeys,
    files: &[Extent],
    at: Bases,
) {
    let Cow {
        order: cow_order,
        done: cowed,
    } = cow;
    let pop_key = |t: Tree, l: usize| -> u64 {
        match t {
            Tree::Extent => keys.ext[l].max(at.data_start),
            Tree::Csum => keys.csum[l],
            Tree::Fs => files[(keys.fs[l] as usize).min(files.len() - 1)].logical,
        }
    };
    let mut pop: Vec<(u64, u8, usize)> = Vec::new();
    for t in [Tree::Extent, Tree::Csum, Tree::Fs] {
        for l in 0..leaves[t as usize].len() {
            pop.push((pop_key(t, l), t as u8, l));
        }
    }
    pop.sort_unstable();
    let mut addr = at.meta_logical;
    for &(_, t, l) in &pop {
        if !cowed[t as usize][l] {
            let id = leaves[t as usize][l];
            blocks[id].bytenr = addr;
        }
        addr += NODESIZE;
    }
    let mut node_placed = vec![false; blocks.len()];
    for (t, l) in cow_order {
        let id = leaves[t as usize][l];
        let mut chain = Vec::new();
        let mut p = blocks[id].parent;
        while let Some(n) = p {
            if !node_placed[n] {
                chain.push(n);
            }
            p = blocks[n].parent;
        }
        for n in chain.into_iter().rev() {
            node_placed[n] = true;
            blocks[n].bytenr = addr;
            addr += NODESIZE;
        }
        blocks[id].bytenr = addr;
        addr += NODESIZE;
    }
    for (n, placed) in node_placed.iter().enumerate() {
        if !placed && blocks[n].level > 0 {
            blocks[n].bytenr = addr;
            addr += NODESIZE;
        }
    }
    sim::check!(
        addr <= at.meta_logical + META_CHUNK,
        "metadata chunk overflow"
    );
}

/// The metadata chunk (its DUP stripes), then the data chunks.
fn chunks(at: Bases, n_data_chunks: u64) -> Vec<Chunk> {
    let mut chunks = vec![Chunk {
        kind: ChunkKind::Metadata,
        logical: at.meta_logical,
        len: META_CHUNK,
        stripes: (0..at.meta_copies)
            .map(|k| at.meta_logical + k * META_CHUNK)
            .collect(),
    }];
    for c in 0..n_data_chunks {
        let l = at.data_start + c * DATA_CHUNK;
        chunks.push(Chunk {
            kind: ChunkKind::Data,
            logical: l,
            len: DATA_CHUNK,
            stripes: vec![l],
        });
    }
    chunks
}
