//! The btrfs state the model keeps, with the kernel's names (fs/btrfs/ctree.h,
//! btrfs_inode.h, transaction.h), plus the history the oracle needs to judge waste and to
//! recover the filesystem after a simulated power loss.

use std::collections::{BTreeMap, BTreeSet};

/// A transaction id (`trans->transid`, `fs_info->generation`).
pub type TransId = u64;
/// An inode number.
pub type Ino = u64;

/// The top directory's inode number (BTRFS_FIRST_FREE_OBJECTID).
pub const ROOT_INO: Ino = 256;
/// Transaction committed by mkfs; the first transaction of a run is 1000, as in the patch logs.
pub const MKFS_GENERATION: TransId = 999;
/// A fixed, fast word-at-a-time hash (FxHash's multiply-rotate) for the name and directory
/// maps that are only looked up, never iterated in an order that reaches the output.
#[derive(Default, Clone, Copy)]
pub struct WordHash(u64);

impl WordHash {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for WordHash {
    #[inline]
    fn finish(&self) -> u64 {
        // The product's well-mixed high bits down to the low bits the table indexes by (keys
        // differing only in high bits, like a directory's leaf numbers, would collide).
        self.0.rotate_left(26)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // Byte by byte: a copy into a word buffer would call memcpy.
            let w = rest
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, &b)| w | u64::from(b) << (8 * i));
            self.add(w);
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// A hash map with `WordHash` (deterministic; used for lookups only).
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<WordHash>>;

/// One (directory, name) entry: the inode its live version names (0: none live) and its
/// versions, oldest first — side by side, so that the lookup of a name and the change of its
/// versions read the same bucket.
#[derive(Clone, Debug, Default)]
pub struct DirSlot {
    /// The inode the live version names, or 0 (no inode is numbered 0).
    live: Ino,
    /// The entry's versions, oldest first (a live one is the last).
    versions: Versions,
}

/// A directory's entries by interned name — live ones and removed ones whose versions are
/// still kept — and how many are live (looked up by name; `FsState::entries_of` sorts them by
/// name, nothing walks them in hash order where it can reach a result).
#[derive(Clone, Debug, Default)]
pub struct DirEntries {
    slots: FastMap<NameId, DirSlot>,
    live: usize,
}

impl DirEntries {
    /// The inode live entry `id` names.
    #[inline]
    fn live(&self, id: NameId) -> Option<Ino> {
        self.slots.get(&id).map(|s| s.live).filter(|&i| i != 0)
    }
}

/// An interned entry name (`Names`).
pub type NameId = u32;

/// Entry names, each distinct name stored once under a small id, so that the entry indexes
/// are keyed by integers: a lookup compares no string and touches no name's memory. A name
/// lives as long as some (directory, name) entry keeps versions of it (`FsState::dirs`);
/// `compact` gives the others back and their ids are reused.
#[derive(Clone, Debug, Default)]
pub struct Names {
    ids: FastMap<std::rc::Rc<str>, NameId>,
    /// By id: the name and the number of (directory, name) entries holding it.
    slots: Vec<(Option<std::rc::Rc<str>>, u32)>,
    free: Vec<NameId>,
}

impl Names {
    /// The id of `name`, if some entry holds it.
    #[inline]
    pub fn find(&self, name: &str) -> Option<NameId> {
        self.ids.get(name).copied()
    }

    /// The name of id `id`.
    #[inline]
    pub fn get(&self, id: NameId) -> &str {
        self.slots[id as usize]
            .0
            .as_deref()
            .expect("a live name id")
    }

    /// The id of `name` for one more entry holding it (interned if new).
    fn acquire(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.ids.get(name) {
            self.slots[id as usize].1 += 1;
            return id;
        }
        let rc: std::rc::Rc<str> = name.into();
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = (Some(rc.clone()), 1);
                id
            }
            None => {
                self.slots.push((Some(rc.clone()), 1));
                self.slots.len() as NameId - 1
            }
        };
        self.ids.insert(rc, id);
        id
    }

    /// One entry holding `id` is gone; the name is dropped with the last.
    fn release(&mut self, id: NameId) {
        let slot = &mut self.slots[id as usize];
        slot.1 -= 1;
        if slot.1 == 0 {
            let name = slot.0.take().expect("a live name id");
            self.ids.remove(&name);
            self.free.push(id);
        }
    }

    /// Asserts that each name's count is the number of `holders` (entry keys) naming it and
    /// that no other name is interned (debug builds, after `compact`).
    fn check(&self, holders: impl Iterator<Item = NameId>) {
        let mut counts = vec![0u32; self.slots.len()];
        for id in holders {
            counts[id as usize] += 1;
        }
        for (id, (name, refs)) in self.slots.iter().enumerate() {
            assert_eq!(*refs, counts[id], "name id {id} ({name:?}) miscounted");
            assert_eq!(
                name.is_some(),
                *refs > 0,
                "name id {id} held but given back"
            );
        }
        assert_eq!(self.ids.len(), counts.iter().filter(|&&c| c > 0).count());
    }

    /// Names held by some entry.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no name is held.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// An inode's live (dir, name) pairs, sorted; inline for the usual single name (no
/// allocation per created file).
pub type LiveNames = smallvec::SmallVec<[(Ino, NameId); 1]>;

/// A hash set with `WordHash` (deterministic; sorted before anything reads its order).
pub type FastSet<T> = std::collections::HashSet<T, std::hash::BuildHasherDefault<WordHash>>;

/// Inodes by number: hashed for the lookups every operation makes; `values` walks them in
/// number order, as a `BTreeMap` would. Stored in the table itself (not boxed): a lookup
/// then reads the inode from the bucket it found, one cache miss less per random inode,
/// and creating or evicting one allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct InodeMap(FastMap<Ino, Inode>);

impl InodeMap {
    /// The inode numbered `ino`.
    #[inline]
    pub fn get(&self, ino: &Ino) -> Option<&Inode> {
        self.0.get(ino)
    }

    /// The inode numbered `ino`, for changing it.
    #[inline]
    pub fn get_mut(&mut self, ino: &Ino) -> Option<&mut Inode> {
        self.0.get_mut(ino)
    }

    /// Adds (or replaces) inode `ino`.
    pub fn insert(&mut self, ino: Ino, inode: Inode) -> Option<Inode> {
        self.0.insert(ino, inode)
    }

    /// Whether inode `ino` exists.
    #[inline]
    pub fn contains_key(&self, ino: &Ino) -> bool {
        self.0.contains_key(ino)
    }

    /// Number of inodes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Keeps the inodes `keep` accepts (it must not depend on the order of the calls).
    pub fn retain(&mut self, mut keep: impl FnMut(&Ino, &mut Inode) -> bool) {
        self.0.retain(|ino, i| keep(ino, i))
    }

    /// Every inode, in inode-number order.
    pub fn values(&self) -> impl Iterator<Item = &Inode> {
        let mut v: Vec<&Inode> = self.0.values().collect();
        v.sort_unstable_by_key(|i| i.ino);
        v.into_iter()
    }

    /// Every inode for changing it, in no particular order (for order-independent updates).
    pub fn values_mut_unordered(&mut self) -> impl Iterator<Item = &mut Inode> {
        self.0.values_mut()
    }
}

impl std::ops::Index<&Ino> for InodeMap {
    type Output = Inode;
    #[inline]
    fn index(&self, ino: &Ino) -> &Inode {
        self.0.get(ino).expect("no such inode")
    }
}

/// The position of the last `/` in `s` (a plain byte scan: names are short, and `memrchr`'s
/// setup costs more than the scan).
#[inline]
pub fn last_slash(s: &str) -> Option<usize> {
    s.as_bytes().iter().rposition(|&b| b == b'/')
}

/// Committed extents a file keeps on its modified list across compactions.
const MAX_OLD_MODIFIED: usize = 256;
/// Byte offset of the primary superblock.
pub const SUPER_OFFSET: u64 = 64 << 10;

/// `enum btrfs_trans_state` (5.10, plus SUPER_COMMITTED from 5.12, selectable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TransState {
    /// TRANS_STATE_RUNNING.
    Running,
    /// TRANS_STATE_COMMIT_START.
    CommitStart,
    /// TRANS_STATE_COMMIT_DOING.
    CommitDoing,
    /// TRANS_STATE_UNBLOCKED: running_transaction = NULL, the next transaction may start.
    Unblocked,
    /// TRANS_STATE_SUPER_COMMITTED (5.12+): superblocks written.
    SuperCommitted,
    /// TRANS_STATE_COMPLETED.
    Completed,
}

/// Why a log attempt had to fall back to a full transaction commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FullCommitCause {
    /// `btrfs_must_commit_transaction` on a directory with a recent `last_unlink_trans`
    /// (R4), and which one it was.
    UnlinkTrans(UnlinkRelation),
    /// `last_trans_log_full_commit > last_trans_committed` in `btrfs_log_inode_parent` (R5).
    StaleFullCommitCheck,
    /// `btrfs_need_log_full_commit(trans)`: the transaction is marked (new block group, or an
    /// earlier fallback in it).
    LogFullCommitFlag,
}

/// Which directory's `last_unlink_trans` made check_parent_dirs_for_sync mark the
/// transaction, relative to the fsynced inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnlinkRelation {
    /// The fsynced inode is that directory.
    Inode,
    /// The fsynced inode's parent.
    Parent,
    /// An older ancestor (the log would hold no entries of it).
    Ancestor,
}

impl FullCommitCause {
    /// The rule with its detail, e.g. `last_unlink_trans.parent`.
    pub fn rule(self) -> &'static str {
        match self {
            FullCommitCause::UnlinkTrans(UnlinkRelation::Inode) => "last_unlink_trans.inode",
            FullCommitCause::UnlinkTrans(UnlinkRelation::Parent) => "last_unlink_trans.parent",
            FullCommitCause::UnlinkTrans(UnlinkRelation::Ancestor) => "last_unlink_trans.ancestor",
            other => other.name(),
        }
    }

    /// The trace mark of a fallback for this cause (its argument: the transid).
    pub fn trace_label(self) -> &'static str {
        match self {
            FullCommitCause::UnlinkTrans(UnlinkRelation::Inode) => {
                "full commit: last_unlink_trans of the inode, transid"
            }
            FullCommitCause::UnlinkTrans(UnlinkRelation::Parent) => {
                "full commit: last_unlink_trans of its parent, transid"
            }
            FullCommitCause::UnlinkTrans(UnlinkRelation::Ancestor) => {
                "full commit: last_unlink_trans of an older ancestor, transid"
            }
            FullCommitCause::StaleFullCommitCheck => {
                "full commit: last_trans_log_full_commit > last_trans_committed, transid"
            }
            FullCommitCause::LogFullCommitFlag => {
                "full commit: transaction marked (btrfs_need_log_full_commit), transid"
            }
        }
    }

    /// JSON key.
    pub fn name(self) -> &'static str {
        match self {
            FullCommitCause::UnlinkTrans(_) => "last_unlink_trans",
            FullCommitCause::StaleFullCommitCheck => "stale_log_full_commit_check",
            FullCommitCause::LogFullCommitFlag => "log_full_commit_flag",
        }
    }
}

/// One transaction.
#[derive(Clone, Debug)]
pub struct Transaction {
    /// `transid`.
    pub transid: TransId,
    /// State.
    pub state: TransState,
    /// Handles joined (`num_writers`).
    pub writers: u32,
    /// START and ATTACH handles joined (`num_extwriters`).
    pub extwriters: u32,
    /// When it was created (`start_time`, which the kernel keeps in whole seconds).
    pub start_time: sim::Nanos,
    /// Metadata blocks its commit writes (computed from `dirty` when it commits).
    pub dirty_blocks: u64,
    /// Leaves COWed in it (each once per transaction).
    pub dirty: FastSet<crate::btrfs::ctree_blocks::Leaf>,
    /// Whether its superblock write has completed.
    pub super_done: bool,
    /// A real event (new block group) forced every log in this transaction to a full commit.
    pub forced_by_event: bool,
    /// Delayed data refs queued in it (an extent allocated or freed: one
    /// btrfs_add_delayed_data_ref each), run by its commit.
    pub delayed_refs: u64,
    /// Delayed ref heads queued in it and not yet run (data refs, and two per COWed
    /// block: the new block's and the old one's), each adding
    /// btrfs_calc_insert_metadata_size(1) to `delayed_refs_rsv.size`
    /// (delayed-ref.c:btrfs_update_delayed_refs_rsv@v5.13).
    pub ref_heads: u64,
    /// Data extents freed in it: (block group, bytes), unpinned when its commit completes.
    pub pinned: Vec<(u64, u64)>,
    /// Metadata bytes pinned in it (old copies of the leaves it COWed).
    pub meta_pinned: u64,
    /// Set when this transaction was marked log-full-commit by a decision the oracle judged
    /// unnecessary (R4), so later fallbacks it causes are unnecessary too.
    pub marked_unnecessarily: bool,
    /// Internal nodes COWed in it: (tree, level, block), for the tree locks' modes.
    pub cowed_nodes: FastSet<(u8, u32, u64)>,
    /// Its delayed refs' extent and csum tree changes, by (tree, key); run by its commit
    /// (delayed-ref.c).
    pub ref_ops: BTreeMap<(u8, crate::btrfs::ctree_btree::Key), crate::btrfs::delayed_ref::RefOp>,
}

impl Transaction {
    /// A new RUNNING transaction `transid` created at `start_time` with one handle
    /// (`extwriters` of them START/ATTACH), nothing in it yet.
    pub fn running(transid: TransId, start_time: sim::Nanos, extwriters: u32) -> Self {
        Transaction {
            transid,
            state: TransState::Running,
            writers: 1,
            extwriters,
            start_time,
            dirty_blocks: 0,
            dirty: FastSet::default(),
            super_done: false,
            forced_by_event: false,
            delayed_refs: 0,
            ref_heads: 0,
            pinned: Vec::new(),
            meta_pinned: 0,
            marked_unnecessarily: false,
            cowed_nodes: FastSet::default(),
            ref_ops: BTreeMap::new(),
        }
    }
}

/// An extent map of a file (`struct extent_map`) and its on-disk data.
#[derive(Clone, Debug)]
pub struct Extent {
    /// Model id (an extent version: trimming or splitting one makes new ids).
    pub id: u64,
    /// File offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Extent map generation: the transaction whose ordered-extent completion (or
    /// fallocate, or hole punch) created it; a split or trimmed piece keeps it
    /// (btrfs_drop_extent_cache@v5.10).
    pub generation: TransId,
    /// Transaction that wrote its file extent item as it is now (a trimmed piece's item is
    /// rewritten by btrfs_drop_extents in the transaction that trimmed it).
    pub item_trans: TransId,
    /// A hole (punched: no data, replay drops the range) rather than data.
    pub hole: bool,
    /// Preallocated (fallocate): space allocated, no data written (reads return zeros).
    pub prealloc: bool,
    /// Device token of the data write.
    pub data_token: u64,
    /// Device offset of the data write.
    pub data_offset: u64,
    /// Where its bytes were allocated: (block group, bytes) pieces.
    pub pieces: Vec<(u64, u64)>,
}

impl Extent {
    /// An explicit hole item `id` over [start, end), made in transaction `t`.
    pub fn hole(id: u64, start: u64, end: u64, t: TransId) -> Extent {
        Extent {
            id,
            offset: start,
            len: end - start,
            generation: t,
            item_trans: t,
            hole: true,
            prealloc: false,
            data_token: 0,
            data_offset: 0,
            pieces: Vec::new(),
        }
    }

    /// A data extent `id` over [offset, offset + len), written in transaction `t` by device
    /// write `token` at `data_offset`, holding `pieces` of the data space.
    pub fn data(
        id: u64,
        (offset, len): (u64, u64),
        t: TransId,
        token: u64,
        data_offset: u64,
        pieces: Vec<(u64, u64)>,
    ) -> Extent {
        Extent {
            id,
            offset,
            len,
            generation: t,
            item_trans: t,
            hole: false,
            prealloc: false,
            data_token: token,
            data_offset,
            pieces,
        }
    }

    /// One past the last byte it covers.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// An extent version no longer in the file: dropped whole, or replaced by trimmed pieces.
#[derive(Clone, Debug)]
pub struct DeadExtent {
    /// The version as it was.
    pub ext: Extent,
    /// Transaction that dropped it.
    pub removed: TransId,
    /// Virtual time it was dropped.
    pub removed_at: sim::Nanos,
}

/// A data block group (`struct btrfs_block_group`): its size and what is allocated in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockGroup {
    /// `length`.
    pub size: u64,
    /// `used`: bytes of live extents.
    pub used: u64,
    /// `pinned`: bytes freed in a transaction not yet committed (reusable after unpin).
    pub pinned: u64,
    /// On `fs_info->unused_bgs`: something was freed in it since it was last used.
    pub unused_marked: bool,
}

/// The data `space_info` (fs/btrfs/space-info.h) and the device's unallocated space.
///
/// The block groups are private so that the space_info's sums (`total_bytes`, and the used
/// and pinned bytes `btrfs_space_info_used` adds) are kept beside them, as the kernel keeps
/// `space_info->bytes_used` / `bytes_pinned` instead of walking its groups.
#[derive(Clone, Debug, Default)]
pub struct DataSpace {
    /// Block groups as (id, group), in allocation (= id) order.
    bgs: Vec<(u64, BlockGroup)>,
    /// Next block-group id.
    pub next_bg: u64,
    /// `bytes_may_use`: reserved by buffered writes, not yet allocated.
    pub may_use: u64,
    /// Device bytes not in any chunk.
    pub unallocated: u64,
    /// `total_bytes`: the sum of the groups' sizes.
    size_sum: u64,
    /// `bytes_used`: the sum of the groups' used bytes.
    used_sum: u64,
    /// `bytes_pinned`: the sum of the groups' pinned bytes.
    pinned_sum: u64,
}

impl DataSpace {
    /// `total_bytes` of the space_info.
    #[inline]
    pub fn total(&self) -> u64 {
        self.check_sums();
        self.size_sum
    }

    /// `btrfs_space_info_used(.., true)`: used + pinned + may_use.
    #[inline]
    pub fn in_use(&self) -> u64 {
        self.check_sums();
        self.used_sum + self.pinned_sum + self.may_use
    }

    /// `bytes_used`: allocated to extents.
    #[inline]
    pub fn used(&self) -> u64 {
        self.check_sums();
        self.used_sum
    }

    /// `bytes_pinned`: freed in uncommitted transactions.
    #[inline]
    pub fn pinned(&self) -> u64 {
        self.check_sums();
        self.pinned_sum
    }

    /// The sums equal what the groups hold (debug builds walk the groups).
    #[inline]
    fn check_sums(&self) {
        if sim::check::invariants() {
            let (mut size, mut used, mut pinned) = (0, 0, 0);
            for (_, b) in &self.bgs {
                size += b.size;
                used += b.used;
                pinned += b.pinned;
                sim::check!(b.used + b.pinned <= b.size, "block group over-full: {b:?}");
            }
            sim::check_eq!(
                (size, used, pinned),
                (self.size_sum, self.used_sum, self.pinned_sum),
                "data space_info sums drifted from its block groups"
            );
        }
    }

    /// The block groups, as (id, group) in allocation order.
    pub fn groups(&self) -> impl Iterator<Item = (u64, &BlockGroup)> {
        self.bgs.iter().map(|(id, b)| (*id, b))
    }

    /// Number of block groups.
    pub fn group_count(&self) -> usize {
        self.bgs.len()
    }

    /// Block group `id`, if it exists.
    pub fn group(&self, id: u64) -> Option<&BlockGroup> {
        self.index(id).map(|i| &self.bgs[i].1)
    }

    fn index(&self, id: u64) -> Option<usize> {
        self.bgs.binary_search_by_key(&id, |(i, _)| *i).ok()
    }

    /// Adds an empty block group of `size` bytes under the next id; returns the id.
    pub fn add_group(&mut self, size: u64) -> u64 {
        let id = self.next_bg;
        self.next_bg += 1;
        sim::check!(self.bgs.last().is_none_or(|(last, _)| *last < id));
        self.bgs.push((
            id,
            BlockGroup {
                size,
                used: 0,
                pinned: 0,
                unused_marked: false,
            },
        ));
        self.size_sum += size;
        id
    }

    /// Removes block group `id` (its space goes nowhere: the caller returns it).
    pub fn remove_group(&mut self, id: u64) -> Option<BlockGroup> {
        let b = self.bgs.remove(self.index(id)?).1;
        self.size_sum -= b.size;
        self.used_sum -= b.used;
        self.pinned_sum -= b.pinned;
        Some(b)
    }

    /// find_free_extent for data: first fit over the groups in order, split across groups
    /// when no single one has room; returns the (group, bytes) pieces.
    pub fn alloc(&mut self, bytes: u64) -> Vec<(u64, u64)> {
        if let Some((id, b)) = self
            .bgs
            .iter_mut()
            .find(|(_, b)| b.size - b.used - b.pinned >= bytes)
        {
            b.used += bytes;
            b.unused_marked = false;
            self.used_sum += bytes;
            return vec![(*id, bytes)];
        }
        let mut left = bytes;
        let mut pieces = Vec::new();
        for (id, b) in self.bgs.iter_mut() {
            let take = (b.size - b.used - b.pinned).min(left);
            if take > 0 {
                b.used += take;
                b.unused_marked = false;
                pieces.push((*id, take));
                left -= take;
            }
            if left == 0 {
                break;
            }
        }
        self.used_sum += bytes - left;
        pieces
    }

    /// btrfs_free_extent of `len` bytes in group `bg`: used → pinned until the commit; a
    /// group whose `used` drops to 0 goes on the unused list (btrfs_update_block_group →
    /// btrfs_mark_bg_unused).
    pub fn free(&mut self, bg: u64, len: u64) {
        if let Some(i) = self.index(bg) {
            let b = &mut self.bgs[i].1;
            b.used -= len;
            b.pinned += len;
            b.unused_marked |= b.used == 0;
            self.used_sum -= len;
            self.pinned_sum += len;
        }
    }

    /// unpin_extent_range of `len` bytes in group `bg`.
    pub fn unpin(&mut self, bg: u64, len: u64) {
        if let Some(i) = self.index(bg) {
            self.bgs[i].1.pinned -= len;
            self.pinned_sum -= len;
        }
    }
}

/// A metadata reservation waiting in `space_info->tickets` (`struct reserve_ticket`).
#[derive(Clone, Debug)]
pub struct Ticket {
    /// Queue order.
    pub id: u64,
    /// Bytes wanted.
    pub bytes: u64,
}

/// The metadata `space_info` (fs/btrfs/space-info.h@v5.12) with its reservations: the
/// counters `__reserve_bytes` and the flushers read (MODELS-J1-F1-H1.md F1.2).
#[derive(Clone, Debug, Default)]
pub struct MetaSpace {
    /// Tree block size (nodesize).
    pub nodesize: u64,
    /// `total_bytes` of the metadata block groups.
    pub total: u64,
    /// `bytes_used`: tree blocks.
    pub used: u64,
    /// `bytes_reserved`.
    pub reserved: u64,
    /// `bytes_pinned`: old tree-block copies freed in a running transaction.
    pub pinned: u64,
    /// `bytes_readonly`.
    pub readonly: u64,
    /// `bytes_may_use`, including the global reserve's `global_rsv`.
    pub may_use: u64,
    /// The global block reserve's size (kept full, so also its reserved bytes).
    pub global_rsv: u64,
    /// Bytes of the extent, csum and root trees outside the modelled trees (mkfs's, an
    /// aged filesystem's csums, `fill-metadata`): the global reserve's base.
    pub global_base: u64,
    /// Blocks of the modelled extent, csum and root trees when `global_base` was set.
    pub global_blocks0: u64,
    /// The global reserve's floor and cap (btrfs_update_global_block_rsv).
    pub global_min_max: (u64, u64),
    /// Reserved by delayed inode items (`delayed_block_rsv.reserved`).
    pub delayed_block: u64,
    /// Reserved for delayed refs (`delayed_refs_rsv.reserved`).
    pub delayed_refs: u64,
    /// What the delayed refs queued and not yet run need (`delayed_refs_rsv.size`).
    pub delayed_refs_size: u64,
    /// Reserved by open transaction handles (`trans_block_rsv.reserved`).
    pub trans: u64,
    /// `fs_info->delalloc_bytes`: dirty data not yet under writeback.
    pub delalloc_bytes: u64,
    /// `fs_info->ordered_bytes`: data under writeback.
    pub ordered_bytes: u64,
    /// `reclaim_size`: bytes the queued tickets want.
    pub reclaim_size: u64,
    /// `tickets` (FIFO).
    pub tickets: std::collections::VecDeque<Ticket>,
    /// `priority_tickets` (FIFO; BTRFS_RESERVE_FLUSH_EVICT / FLUSH_LIMIT reservations whose
    /// callers flush themselves; granted before `tickets`).
    pub priority_tickets: std::collections::VecDeque<Ticket>,
    /// Per-ticket wait, ns (created at the first ticket).
    pub ticket_waits: Option<hdrhistogram::Histogram<u64>>,
    /// `tickets_id`: bumped per granted ticket.
    pub tickets_id: u64,
    /// Next ticket id.
    pub next_ticket: u64,
    /// `flush`: an async reclaim episode is running.
    pub flush: bool,
    /// `clamp` (1..=8): the preemptive threshold's shift.
    pub clamp: u32,
    /// The preemptive worker is running (`work_busy`).
    pub preempt_busy: bool,
    /// A ticket was queued in the running transaction (the oracle for preemptive flushes).
    pub ticket_in_trans: Option<TransId>,
    /// Preemptive flushes done in each transaction, judged when it commits.
    pub preempt_flushes_in: BTreeMap<TransId, u64>,
    /// Tickets served: id → granted (true) or failed with ENOSPC (false).
    pub done: BTreeMap<u64, bool>,
    /// Tree blocks (`Trees::blocks`) counted in `used`.
    pub tree_blocks: u64,
    /// Size of the chunk a tree block allocation forces when no block group has room.
    pub chunk_size: u64,
    /// Metadata chunks forced by tree block allocations (find_free_extent).
    pub forced_chunks: u64,
    /// Leaves COWed: a leaf of an earlier transaction changed for the first time in this
    /// one (btrfs_cow_block).
    pub cowed_leaves: u64,
    /// Delalloc metadata reserved per inode (one outstanding extent and its inode update).
    /// Ordered: the flusher walks it in inode order and stops once it has enough (sorting a
    /// hashed map on every flush made dbench with 1,536+ clients spend 80% of its time there).
    pub delalloc_rsv: BTreeMap<Ino, u64>,
    /// Dirty bytes per inode that `write-range` wrote inside the file's size (random
    /// overwrites: written back without growing the file).
    pub range_dirty: FastMap<Ino, u64>,
    /// The file offset of those bytes when the op said it (`mmap-write PATH OFFSET SIZE`):
    /// writeback places them there instead of in the first gap that fits.
    pub range_at: FastMap<Ino, u64>,
    /// The dirty ranges `write-range PATH OFFSET SIZE` wrote, (offset, bytes) in write
    /// order: each its own delalloc range, written back as its own ordered extent
    /// (extent_io.rs).
    pub range_list: FastMap<Ino, Vec<(u64, u64)>>,
    /// The file offset where a file's dirty run starts when a write past EOF put it there
    /// (`write PATH OFFSET SIZE` with OFFSET past i_size, after btrfs_cont_expand's hole):
    /// writeback places the whole run there instead of at `disk_size`.
    pub dirty_at: FastMap<Ino, u64>,
}

impl MetaSpace {
    /// btrfs_space_info_used(s, false): bytes in extents, reserved, pinned or read-only.
    pub fn allocated(&self) -> u64 {
        self.used + self.reserved + self.pinned + self.readonly
    }

    /// Pins `bytes` of freed tree blocks in transaction `tr` until its commit unpins them
    /// (btrfs_free_tree_block → pin_down_extent@v5.10).
    pub fn pin(&mut self, tr: &mut Transaction, bytes: u64) {
        self.pinned += bytes;
        tr.meta_pinned += bytes;
    }

    /// btrfs_space_info_used(s, true).
    pub fn in_use(&self) -> u64 {
        self.allocated() + self.may_use
    }
}

/// An inode (`struct btrfs_inode`).
#[derive(Clone, Debug, Default)]
pub struct Inode {
    /// Inode number.
    pub ino: Ino,
    /// Directory or regular file.
    pub is_dir: bool,
    /// Transaction that created it.
    pub generation: TransId,
    /// Last transaction it was logged in.
    pub logged_trans: TransId,
    /// Last transaction that changed it.
    pub last_trans: TransId,
    /// Last transaction that unlinked or renamed it, or removed a name in it (directory).
    pub last_unlink_trans: TransId,
    /// Log sub-transaction of its last change.
    pub last_sub_trans: u64,
    /// Log sub-transaction in which it was last logged.
    pub last_log_commit: u64,
    /// BTRFS_INODE_NEEDS_FULL_SYNC.
    pub needs_full_sync: bool,
    /// Transaction of the last change of the inode item.
    pub item_trans: TransId,
    /// Extent maps.
    pub extents: Vec<Extent>,
    /// Extent ids on the modified-extents list (not yet logged).
    pub modified_extents: Vec<u64>,
    /// Dirty page-cache bytes not yet written back (appended after `disk_size`).
    pub dirty_bytes: u64,
    /// `disk_i_size`: the size in the inode item (i_size is this plus `dirty_bytes`).
    pub disk_size: u64,
    /// (transaction, disk_size) at each change of the item's size, oldest first (crash
    /// recovery reads the size as of the committed generation).
    pub size_hist: Vec<(TransId, u64)>,
    /// Extent versions dropped from the file (kept only with the history).
    pub dead_extents: Vec<DeadExtent>,
    /// Extended attributes: name → transaction that first set it (BTRFS_XATTR_ITEM_KEY
    /// items; a replace keeps the name in every generation committed since).
    pub xattrs: BTreeMap<String, TransId>,
    /// Bumped by every change of the inode: item, names, entries, extents (the oracle's
    /// version of it within a transaction).
    pub change_seq: u64,
    /// (transaction, change_seq) when it was last logged in full (an fsync's
    /// LOG_INODE_ALL, or a directory logged as ancestor or parent).
    pub logged_full: Option<(TransId, u64)>,
    /// (transaction, change_seq) when it was last logged in any mode (the oracle's view of
    /// what this transaction's log already holds of it).
    pub logged_any: Option<(TransId, u64)>,
    /// BTRFS_INODE_COPY_EVERYTHING: an xattr changed since it was last logged
    /// (xattr.c:btrfs_setxattr_trans sets it; btrfs_log_inode clears it).
    pub copy_everything: bool,
    /// Bumped by every xattr change (the oracle's version of the inode's xattr set).
    pub xattr_seq: u64,
    /// (transaction, xattr_seq) when its xattrs were last copied into the log: the oracle's
    /// view of whether this transaction's log holds the current set.
    pub xattrs_logged: Option<(TransId, u64)>,
    /// The oracle: `needs_full_sync` was set only by truncates that removed or trimmed no
    /// file extent item (a full sync then re-copies items for nothing).
    pub full_sync_needless: bool,
}

impl Inode {
    /// A new inode made in transaction `t` (btrfs_new_inode, inode.c@v5.10: generation =
    /// transid, BTRFS_INODE_NEEDS_FULL_SYNC set).
    pub fn new(ino: Ino, is_dir: bool, t: TransId) -> Inode {
        Inode {
            ino,
            is_dir,
            generation: t,
            last_trans: t,
            needs_full_sync: true,
            item_trans: t,
            ..Default::default()
        }
    }
}

/// The versions of one (directory, name) entry, oldest first (inline for the usual one).
pub type Versions = smallvec::SmallVec<[Dentry; 1]>;

/// A directory entry version.
#[derive(Clone, Debug)]
pub struct Dentry {
    /// The inode it names.
    pub ino: Ino,
    /// Transaction that created it.
    pub created: TransId,
    /// The directory's `change_seq` just after the entry was added: a full log of the
    /// directory at a later or equal sequence copied it.
    pub created_seq: u64,
    /// Transaction that removed it.
    pub removed: Option<TransId>,
    /// Virtual time its removal ended: __btrfs_unlink_inode returned, so the name is also
    /// out of any log transaction it joined (`finish_removal`).
    pub removed_at: Option<sim::Nanos>,
}

/// What a device write carries (the token is an index into `FsState::writes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// File data of an extent.
    Data {
        /// Inode.
        ino: Ino,
        /// Extent id.
        extent: u64,
    },
    /// Dirty extent buffers of a transaction's commit.
    CommitBlocks {
        /// Transaction.
        transid: TransId,
    },
    /// The superblock of a transaction's commit.
    CommitSuper {
        /// Transaction.
        transid: TransId,
    },
    /// Log tree blocks of one log sync.
    LogBlocks {
        /// Transaction.
        transid: TransId,
        /// Log sub-transaction.
        log_transid: u64,
    },
    /// The log root tree block of one log sync.
    LogRoot {
        /// Transaction.
        transid: TransId,
        /// Log sub-transaction.
        log_transid: u64,
    },
    /// The superblock written by a log sync: generation `base` plus the log root.
    LogSuper {
        /// Transaction of the log.
        transid: TransId,
        /// Log sub-transaction.
        log_transid: u64,
        /// Generation in the superblock copy (the last commit whose superblock was filled).
        base: TransId,
        /// Virtual time the log sync closed its log sub-transaction (btrfs_sync_log's
        /// root->log_transid++ under root->log_mutex, after waiting for the log writers):
        /// names whose removal ended before it must not come back from this log.
        at: sim::Nanos,
    },
    /// A tree, log or superblock write made before a power failure the filesystem was
    /// remounted from (remount.rs): the mount's commit replaced what it pointed at, so
    /// recovery no longer reads it.
    BeforeRemount,
}

/// Something a log contains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogFact {
    /// An inode item with the names it had when logged.
    Inode {
        /// Inode.
        ino: Ino,
        /// (directory, name) pairs.
        names: Vec<(Ino, String)>,
        /// Whether it is a directory.
        is_dir: bool,
        /// A regular file's i_size (replay drops extents beyond it first,
        /// tree-log.c:replay_one_buffer@v5.10).
        size: Option<u64>,
        /// Its xattr names when logged in full (btrfs_log_all_xattrs), or None.
        xattrs: Option<Vec<String>>,
        /// Logged LOG_INODE_ALL with BTRFS_INODE_NEEDS_FULL_SYNC: btrfs_log_inode first
        /// deleted the inode's items from the log (btrfs_truncate_inode_items on the log,
        /// tree-log.c@v5.10), extent items logged before included. Otherwise those stay in
        /// the log, and replay, which goes in key order (the inode item before its extent
        /// items: replay_one_buffer@v5.10), truncates before replaying them.
        drops_logged: bool,
    },
    /// btrfs_del_dir_entries_in_log: an entry removed from a directory the log holds.
    DelEntry {
        /// The directory.
        dir: Ino,
        /// The removed name.
        name: String,
    },
    /// btrfs_del_inode_ref_in_log: a name removed from an inode the log holds.
    DelRef {
        /// The inode.
        ino: Ino,
        /// The directory of the removed name.
        dir: Ino,
        /// The removed name.
        name: String,
    },
    /// A file extent item (data, prealloc or hole).
    Extent {
        /// Inode.
        ino: Ino,
        /// Extent id.
        extent: u64,
    },
    /// A hole item btrfs_log_holes inserted for a gap between the file's items (NO_HOLES):
    /// replay drops [start, end).
    Hole {
        /// Inode.
        ino: Ino,
        /// Range start.
        start: u64,
        /// Range end.
        end: u64,
    },
    /// A directory logged in full (LOG_INODE_ALL): all its entries (DIR_ITEM / DIR_INDEX);
    /// replay makes them the directory's entries (replay_dir_deletes removes the others).
    DirEntries {
        /// The directory.
        dir: Ino,
        /// Its entries when logged.
        entries: Vec<(String, Ino)>,
    },
    /// What an inode item logged for a special or chmod'ed inode carries besides
    /// `Inode` (special.rs): its mode and, for a symlink, whether its inline extent item
    /// was copied too.
    Special {
        /// Inode.
        ino: Ino,
        /// The permission bits when logged (None: never chmod'ed).
        mode: Option<u32>,
        /// A symlink's inline file extent item was copied (LOG_INODE_ALL).
        inline: bool,
        /// The inode item was copied with generation 0 (LOG_INODE_EXISTS of an item
        /// changed in this transaction): replay keeps an existing inode's item.
        gen_zero: bool,
    },
}

/// An fsync that returned success: what must survive a crash.
#[derive(Clone, Debug)]
pub struct FsyncRecord {
    /// The inode.
    pub ino: Ino,
    /// Path at fsync time.
    pub path: String,
    /// Names at fsync time.
    pub names: Vec<(Ino, String)>,
    /// Extent ids at fsync time.
    pub extents: Vec<u64>,
    /// A regular file's size in its inode item at fsync time.
    pub size: u64,
    /// How many size changes the inode had recorded then (`Inode::size_hist`): the size is
    /// unchanged since only while no change has been recorded after it.
    pub size_changes: usize,
    /// Xattr names at fsync time.
    pub xattrs: Vec<String>,
    /// For a directory: its entries at fsync time (each must survive unless removed since).
    pub entries: Vec<(String, Ino)>,
    /// Virtual time its promise was taken (`names` and the rest: after the writeback,
    /// under the inode lock); a name of the inode removed by then must stay removed.
    pub promised_at: sim::Nanos,
    /// Virtual time it returned.
    pub at: sim::Nanos,
}

/// The whole filesystem state.
#[derive(Clone, Debug)]
pub struct FsState {
    /// `fs_info->generation`.
    pub generation: TransId,
    /// `fs_info->last_trans_committed`.
    pub last_trans_committed: TransId,
    /// `fs_info->running_transaction`.
    pub running: Option<TransId>,
    /// Transactions by id.
    pub trans: BTreeMap<TransId, Transaction>,
    /// `fs_info->last_trans_log_full_commit`.
    pub last_trans_log_full_commit: TransId,
    /// Generation in the superblock copy (last commit that filled it).
    pub super_generation: TransId,
    /// Subvolume root: `log_transid`.
    pub log_transid: u64,
    /// Subvolume root: `last_log_commit`.
    pub last_log_commit: u64,
    /// Log sub-transactions being committed (`root->log_commit[]`).
    pub log_committing: BTreeSet<u64>,
    /// Subvolume root: tasks inside a log transaction (`log_writers`).
    pub log_writers: u32,
    /// Subvolume root: `log_batch`, bumped by every fsync (twice) and, in 5.10, by
    /// start_log_trans; btrfs_sync_log batches until it stops changing.
    pub log_batch: u64,
    /// Subvolume root: `log_start_pid`, the first task of the current log transaction.
    pub log_start_pid: Option<sim::TaskId>,
    /// Subvolume root: BTRFS_ROOT_MULTI_LOG_TASKS.
    pub multi_log_tasks: bool,
    /// Transaction whose log tree exists (root->log_root), if any.
    pub log_tree_of: Option<TransId>,
    /// Transaction whose log root tree exists (fs_info->log_root_tree), if any.
    pub log_root_tree_of: Option<TransId>,
    /// Bytes logged since the last log sync (the log's size with `costs.log_cow` off).
    pub log_dirty_bytes: u64,
    /// Bytes logged since the last log sync that the modelled log tree does not hold as
    /// items (a directory's copied entries, hole items): their blocks add to the write.
    pub log_unplaced_bytes: u64,
    /// Log tree blocks (level, block) dirtied in the running log transaction: what the
    /// next btrfs_sync_log writes (`dirty_log_pages`).
    pub log_dirty: FastSet<(u32, u64)>,
    /// Log tree blocks written by an earlier log sync of the running transaction
    /// (BTRFS_HEADER_FLAG_WRITTEN): changing one again COWs it.
    pub log_written: FastSet<(u32, u64)>,
    /// The b-trees' structure (ctree_btree.rs).
    pub trees: crate::btrfs::ctree_btree::Trees,
    /// Facts logged per (transaction, log sub-transaction) (kept only with the history).
    pub log_facts: BTreeMap<(TransId, u64), Vec<LogFact>>,
    /// Per transaction, the first log sub-transaction that received a new name the log
    /// needed (oracle, R1: only "is there one up to k" is asked; `note_new_content`).
    pub log_new_content: BTreeMap<TransId, u64>,
    /// Logged entries waiting for the oracle's verdict.
    pub judgments: Vec<crate::btrfs::oracle::Judgment>,
    /// Inodes.
    pub inodes: InodeMap,
    /// Entry names.
    pub names: Names,
    /// Directory entries by directory: name → the live inode and the versions, oldest first
    /// (hashed: `all_dentries` and `entries_of` sort them).
    pub dirs: FastMap<Ino, DirEntries>,
    /// Index of the live entries: inode → its (dir, name) pairs in (dir, name string) order
    /// (kept by `add_dentry` and `remove_dentry`).
    pub live: FastMap<Ino, LiveNames>,
    /// Directory path → inode, filled by `lookup`, cleared whenever a directory loses a name
    /// (only looked up, never iterated, so a hash map keeps runs deterministic).
    pub dir_cache: std::cell::RefCell<FastMap<Box<str>, Ino>>,
    /// Data space: block groups, reservations, unallocated device space.
    pub data: DataSpace,
    /// Metadata space and its reservations.
    pub meta: MetaSpace,
    /// Commits since the last `compact`.
    pub commits_since_compact: u32,
    /// Virtual time of the last `compact`.
    pub last_compact: sim::Nanos,
    /// Device writes by token - 1.
    pub writes: Vec<(WriteKind, u64)>,
    /// Fsyncs that returned success.
    pub fsyncs: Vec<FsyncRecord>,
    /// Next inode number.
    pub next_ino: Ino,
    /// Next extent id.
    pub next_extent: u64,
    /// Next free device byte (copy-on-write: every write goes to a new place).
    pub next_offset: u64,
    /// Device-write tokens handed out.
    pub tokens: u64,
    /// Whether device writes and returned fsyncs are kept for crash recovery (false in long
    /// workload runs, which then `compact` at every commit).
    pub keep_history: bool,
    /// bc0939fcfab0 (5.13): an inode's stamp sets last_log_commit = last_sub_trans - 1
    /// instead of reading root->last_log_commit (`LogPatch::SubTransStamp`).
    pub sub_trans_stamp: bool,
    /// Xattrs removed (removexattr), kept with the history: a committed image older than the
    /// removal still has them.
    pub removed_xattrs: Vec<RemovedXattr>,
    /// Delayed index items and inode items (delayed_inode.rs).
    pub delayed: crate::btrfs::delayed_inode::DelayedRoot,
    /// Open descriptors (`open PATH as NAME`) by `@NAME`: each holds a reference on its
    /// inode (i_count), which keeps it cached and, once unlinked, alive until `close`.
    pub fds: BTreeMap<std::sync::Arc<str>, Ino>,
    /// A clone has run: file extent items of different files (or offsets) may refer to the
    /// same disk bytes, so freeing an extent's space first looks for another reference
    /// (`Btrfs::release_pieces`).
    pub shared_data: bool,
    /// What direct writes have written of each preallocated extent, by extent id
    /// (direct_io.rs).
    pub prealloc_written: FastMap<u64, crate::btrfs::direct_io::PreallocWritten>,
    /// The file extent items ranges written back at their offsets put in the fs tree, per
    /// inode (extent_io.rs).
    pub range_items: FastMap<Ino, crate::btrfs::extent_io::RangeItems>,
    /// After a clone: the inodes whose data `free_data_extents` freed (their extent
    /// versions stay as history but refer to nothing any more).
    pub data_freed: BTreeSet<Ino>,
    /// Symlinks, fifos, device nodes, O_TMPFILE files and chmod'ed inodes: what the model
    /// keeps of them beyond `Inode` (special.rs).
    pub special: BTreeMap<Ino, crate::btrfs::special::Special>,
}

/// An xattr removed from an inode: its name, the transaction that set it and the one that
/// removed it.
#[derive(Clone, Debug)]
pub struct RemovedXattr {
    /// Inode.
    pub ino: Ino,
    /// Name.
    pub name: String,
    /// Transaction that set it.
    pub set: TransId,
    /// Transaction that removed it.
    pub removed: TransId,
}

impl FsState {
    /// A freshly made filesystem: committed generation 999, an empty top directory.
    pub fn mkfs() -> Self {
        // Sized for a small scenario's state: growing from empty rehashes at every doubling.
        let mut inodes = InodeMap(FastMap::with_capacity_and_hasher(16, Default::default()));
        // mkfs's top directory: committed, no full sync pending.
        let root = Inode {
            needs_full_sync: false,
            ..Inode::new(ROOT_INO, true, MKFS_GENERATION)
        };
        inodes.insert(ROOT_INO, root);
        let mut trans = BTreeMap::new();
        trans.insert(
            MKFS_GENERATION,
            Transaction {
                state: TransState::Completed,
                writers: 0,
                super_done: true,
                ..Transaction::running(MKFS_GENERATION, 0, 0)
            },
        );
        FsState {
            generation: MKFS_GENERATION,
            last_trans_committed: MKFS_GENERATION,
            running: None,
            trans,
            last_trans_log_full_commit: 0,
            super_generation: MKFS_GENERATION,
            log_transid: 0,
            last_log_commit: 0,
            log_committing: BTreeSet::new(),
            log_writers: 0,
            log_batch: 0,
            log_start_pid: None,
            multi_log_tasks: false,
            log_tree_of: None,
            log_root_tree_of: None,
            log_dirty_bytes: 0,
            log_unplaced_bytes: 0,
            log_dirty: FastSet::default(),
            log_written: FastSet::default(),
            trees: Default::default(),
            log_facts: BTreeMap::new(),
            log_new_content: BTreeMap::new(),
            judgments: Vec::new(),
            inodes,
            names: Names::default(),
            dirs: FastMap::with_capacity_and_hasher(8, Default::default()),
            live: FastMap::with_capacity_and_hasher(16, Default::default()),
            dir_cache: Default::default(),
            data: DataSpace::default(),
            meta: MetaSpace::default(),
            commits_since_compact: 0,
            last_compact: 0,
            writes: Vec::new(),
            fsyncs: Vec::new(),
            next_ino: ROOT_INO + 1,
            next_extent: 1,
            next_offset: 1 << 20,
            tokens: 0,
            keep_history: true,
            sub_trans_stamp: false,
            removed_xattrs: Vec::new(),
            delayed: Default::default(),
            fds: BTreeMap::new(),
            shared_data: false,
            prealloc_written: FastMap::default(),
            range_items: FastMap::default(),
            data_freed: BTreeSet::new(),
            special: BTreeMap::new(),
        }
    }

    /// Registers a device write; returns (token, offset).
    pub fn new_write(&mut self, kind: WriteKind, len: u64) -> (u64, u64) {
        let offset = match kind {
            WriteKind::CommitSuper { .. } | WriteKind::LogSuper { .. } => SUPER_OFFSET,
            _ => {
                let o = self.next_offset;
                self.next_offset += len.max(4096).next_multiple_of(4096);
                o
            }
        };
        (self.new_write_at(kind, offset), offset)
    }

    /// A write to `offset` (for a data write in place, a preallocated extent's disk bytes):
    /// its device token.
    pub fn new_write_at(&mut self, kind: WriteKind, offset: u64) -> u64 {
        self.tokens += 1;
        if self.keep_history {
            self.writes.push((kind, offset));
        }
        self.tokens
    }

    /// Drops history no later step can need, for long workload runs without crash checks:
    /// completed transactions, logs and removed names older than the last committed
    /// transaction, inodes that lost their last name before it, and (merged into one) the
    /// committed extents a file no longer has on its modified list. Keeps memory independent
    /// of the run's length.
    pub fn compact(&mut self) {
        sim::check!(
            !self.keep_history,
            "compacting would lose crash-recovery history"
        );
        let lc = self.last_trans_committed;
        self.trans
            .retain(|&t, tr| t >= lc || tr.state != TransState::Completed);
        self.log_facts.retain(|&(t, _), _| t >= lc);
        self.log_new_content.retain(|&t, _| t >= lc);
        let names = &mut self.names;
        self.dirs.retain(|_, e| {
            e.slots.retain(|&id, s| {
                s.versions.retain(|d| d.removed.is_none_or(|r| r > lc));
                if s.versions.is_empty() {
                    names.release(id);
                }
                !s.versions.is_empty()
            });
            !e.slots.is_empty()
        });
        if sim::check::invariants() {
            self.names
                .check(self.dirs.values().flat_map(|e| e.slots.keys().copied()));
            for e in self.dirs.values() {
                let live = e.slots.values().filter(|s| s.live != 0).count();
                assert_eq!(e.live, live, "a directory's live count drifted");
                for s in e.slots.values() {
                    let last = s.versions.last().filter(|d| d.removed.is_none());
                    assert_eq!(
                        s.live,
                        last.map_or(0, |d| d.ino),
                        "live inode != live version"
                    );
                }
            }
        }
        // Inodes named by a removed entry still kept (removed after `lc`).
        let mut named: Vec<Ino> = self
            .dirs
            .values()
            .flat_map(|e| e.slots.values())
            .flat_map(|s| {
                s.versions
                    .iter()
                    .filter(|d| d.removed.is_some())
                    .map(|d| d.ino)
            })
            .collect();
        named.sort_unstable();
        named.dedup();
        // An inode without names that nothing changed since `lc` is gone for good: no task can
        // reach it to fsync it (its dirty pages and modified extents die with it).
        let fds = &self.fds;
        self.inodes.retain(|ino, i| {
            *ino == ROOT_INO
                || self.live.contains_key(ino)
                || fds.values().any(|f| f == ino)
                || named.binary_search(ino).is_ok()
                || i.last_trans > lc
        });
        // A live file written again and again without an fsync keeps its committed extents on
        // the modified list (fast fsync would log them, R2); keep the newest MAX_OLD of them.
        for i in self.inodes.values_mut_unordered() {
            if i.modified_extents.len() > MAX_OLD_MODIFIED {
                let gens: BTreeMap<u64, TransId> =
                    i.extents.iter().map(|e| (e.id, e.generation)).collect();
                let old: Vec<u64> = i
                    .modified_extents
                    .iter()
                    .copied()
                    .filter(|id| gens.get(id).is_none_or(|&g| g <= lc))
                    .collect();
                if old.len() > MAX_OLD_MODIFIED {
                    let drop: BTreeSet<u64> = old[..old.len() - MAX_OLD_MODIFIED]
                        .iter()
                        .copied()
                        .collect();
                    i.modified_extents.retain(|id| !drop.contains(id));
                }
            }
        }
        for i in self.inodes.values_mut_unordered() {
            let old = |e: &Extent| e.generation <= lc && !i.modified_extents.contains(&e.id);
            if i.extents.iter().filter(|e| old(e)).count() > 1 {
                let (merged, keep): (Vec<Extent>, Vec<Extent>) =
                    std::mem::take(&mut i.extents).into_iter().partition(old);
                let last = merged.last().cloned().expect("two or more");
                let mut one = last;
                one.len = merged.iter().map(|e| e.len).sum();
                one.generation = merged.iter().map(|e| e.generation).max().unwrap_or(lc);
                i.extents = std::iter::once(one).chain(keep).collect();
            }
        }
        let prealloc: FastSet<u64> = self
            .inodes
            .values()
            .flat_map(|i| i.extents.iter().filter(|e| e.prealloc).map(|e| e.id))
            .collect();
        self.prealloc_written.retain(|id, _| prealloc.contains(id));
        let inodes = &self.inodes;
        self.range_items.retain(|ino, _| inodes.contains_key(ino));
    }

    /// What a token means.
    pub fn write_kind(&self, token: u64) -> Option<(WriteKind, u64)> {
        token
            .checked_sub(1)
            .and_then(|i| self.writes.get(i as usize))
            .copied()
    }

    /// The live name of a path component chain, or None; `@NAME` is the inode an open
    /// descriptor holds, whatever its names are now.
    pub fn lookup(&self, path: &str) -> Option<Ino> {
        if path.starts_with('@') {
            return self.fds.get(path).copied();
        }
        let path = path.trim_end_matches('/');
        match last_slash(path) {
            Some(i) if i > 0 && i + 1 < path.len() => {
                let d = self.lookup_dir(&path[..i])?;
                self.live_entry(d, &path[i + 1..])
            }
            _ => self.walk(path),
        }
    }

    /// The inode directory path `dir` names (the whole path walked, or the cache), or None.
    pub fn lookup_dir(&self, dir: &str) -> Option<Ino> {
        if let Some(&d) = self.dir_cache.borrow().get(dir) {
            return Some(d);
        }
        let d = self.walk(dir)?;
        if self.inodes.get(&d).is_some_and(|i| i.is_dir) {
            self.dir_cache.borrow_mut().insert(dir.into(), d);
        }
        Some(d)
    }

    fn walk(&self, path: &str) -> Option<Ino> {
        let mut cur = ROOT_INO;
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            cur = self.live_entry(cur, comp)?;
        }
        Some(cur)
    }

    /// The inode a live entry (dir, name) names.
    pub fn live_entry(&self, dir: Ino, name: &str) -> Option<Ino> {
        let id = self.names.find(name)?;
        self.dirs.get(&dir)?.live(id)
    }

    /// Live names of an inode, in (dir, name) order.
    pub fn names_of(&self, ino: Ino) -> Vec<(Ino, String)> {
        self.live.get(&ino).map_or_else(Vec::new, |v| {
            v.iter()
                .map(|&(d, n)| (d, self.names.get(n).to_string()))
                .collect()
        })
    }

    /// Whether inode `ino` has a live name.
    pub fn has_names(&self, ino: Ino) -> bool {
        self.live.contains_key(&ino)
    }

    /// How many live names inode `ino` has (its link count), without copying them.
    pub fn name_count(&self, ino: Ino) -> usize {
        self.live.get(&ino).map_or(0, |v| v.len())
    }

    /// Adds the live entry (dir, name) → ino, created in transaction `t`.
    pub fn add_dentry(&mut self, dir: Ino, name: &str, ino: Ino, t: TransId) {
        self.bump(ino);
        self.bump(dir);
        let created_seq = self.inodes.get(&dir).map_or(0, |i| i.change_seq);
        let entries = self.dirs.entry(dir).or_default();
        // The name's id: the entry's own if it has versions, else one more holder.
        let id = match self.names.find(name) {
            Some(id) if entries.slots.contains_key(&id) => id,
            _ => self.names.acquire(name),
        };
        let slot = entries.slots.entry(id).or_default();
        slot.versions.push(Dentry {
            ino,
            created: t,
            created_seq,
            removed: None,
            removed_at: None,
        });
        if slot.live == 0 {
            entries.live += 1;
        }
        slot.live = ino;
        // Sorted (dir, name) pairs; most inodes have one name.
        let strs = &self.names;
        let list = self.live.entry(ino).or_default();
        let pos = list.partition_point(|&(d, n)| (d, strs.get(n)) < (dir, name));
        if list.get(pos).is_none_or(|&(d, n)| (d, n) != (dir, id)) {
            list.insert(pos, (dir, id));
        }
    }

    /// The live entries of directory `dir` added in transaction `t` (the entry's dir item
    /// transid, btrfs_dir_transid, is `t`): (name, inode), by name.
    pub fn entries_added_in(&self, dir: Ino, t: TransId) -> Vec<(String, Ino)> {
        let Some(e) = self.dirs.get(&dir) else {
            return Vec::new();
        };
        let mut v: Vec<(String, Ino)> = e
            .slots
            .iter()
            .filter(|(_, s)| s.live != 0 && s.versions.last().is_some_and(|d| d.created == t))
            .map(|(&n, s)| (self.names.get(n).to_string(), s.live))
            .collect();
        // Names are unique in a directory.
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// The live entries of directory `dir`: (name, inode), by name.
    pub fn entries_of(&self, dir: Ino) -> Vec<(String, Ino)> {
        let mut v: Vec<(String, Ino)> = self.dirs.get(&dir).map_or_else(Vec::new, |e| {
            e.slots
                .iter()
                .filter(|(_, s)| s.live != 0)
                .map(|(&n, s)| (self.names.get(n).to_string(), s.live))
                .collect()
        });
        // Names are unique in a directory.
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// `root->last_log_commit` as the kernel keeps it: the last committed log transid (0
    /// before any), where `last_log_commit` here is one past it.
    pub fn root_last_log_commit(&self) -> u64 {
        self.last_log_commit.saturating_sub(1)
    }

    /// Notes that log sub-transaction `k` of transaction `t` received content the log needed.
    pub fn note_new_content(&mut self, t: TransId, k: u64) {
        let first = self.log_new_content.entry(t).or_insert(k);
        *first = (*first).min(k);
    }

    /// Whether a log sub-transaction of `t` up to `k` received content the log needed.
    pub fn new_content_upto(&self, t: TransId, k: u64) -> bool {
        self.log_new_content
            .get(&t)
            .is_some_and(|&first| first <= k)
    }

    /// Marks inode `ino` changed (see `Inode::change_seq`).
    pub fn bump(&mut self, ino: Ino) {
        if let Some(i) = self.inodes.get_mut(&ino) {
            i.change_seq += 1;
        }
    }

    /// Removes the live entry (dir, name) in transaction `t`.
    pub fn remove_dentry(&mut self, dir: Ino, name: &str, t: TransId, at: sim::Nanos) {
        self.bump(dir);
        let id = self.names.find(name).expect("removing a live entry");
        let entries = self.dirs.get_mut(&dir).expect("removing a live entry");
        let slot = entries.slots.get_mut(&id).expect("removing a live entry");
        let d = slot
            .versions
            .last_mut()
            .filter(|d| d.removed.is_none())
            .expect("removing a live entry");
        d.removed = Some(t);
        d.removed_at = Some(at);
        let ino = d.ino;
        slot.live = 0;
        entries.live -= 1;
        if self.inodes.get(&ino).is_none_or(|i| i.is_dir) {
            self.dir_cache.borrow_mut().clear();
        }
        if let Some(set) = self.live.get_mut(&ino) {
            set.retain(|&mut (d, n)| (d, n) != (dir, id));
            if set.is_empty() {
                self.live.remove(&ino);
            }
        }
    }

    /// Records that the removal of `ino`'s entry (dir, name) in transaction `t` ended at
    /// `at` (after its log updates: btrfs_del_inode_ref_in_log / _dir_entries_in_log). A
    /// version compaction dropped meanwhile is left alone.
    pub fn finish_removal(&mut self, dir: Ino, name: &str, ino: Ino, t: TransId, at: sim::Nanos) {
        let Some(id) = self.names.find(name) else {
            return;
        };
        let Some(slot) = self.dirs.get_mut(&dir).and_then(|e| e.slots.get_mut(&id)) else {
            return;
        };
        if let Some(d) = slot
            .versions
            .iter_mut()
            .rev()
            .find(|d| d.ino == ino && d.removed == Some(t))
        {
            sim::check!(
                d.removed_at.is_some_and(|r| r <= at),
                "a removal ends after it starts"
            );
            d.removed_at = Some(at);
        }
    }

    /// Whether an open descriptor holds `ino` (a reference: i_count > 0).
    pub fn is_open(&self, ino: Ino) -> bool {
        self.fds.values().any(|&i| i == ino)
    }

    /// Whether `ino`'s entry (dir, name), live or removed in transaction `t`, is in
    /// `t`'s log tree: the directory was logged in full in `t` after the entry was added
    /// (log_directory_changes copied it). Names logged only through other paths are not
    /// seen.
    pub fn name_in_log(&self, dir: Ino, name: &str, ino: Ino, t: TransId) -> bool {
        let Some((lt, seq)) = self.inodes.get(&dir).and_then(|i| i.logged_full) else {
            return false;
        };
        lt == t
            && self.dentry(dir, name).is_some_and(|v| {
                v.iter().rev().any(|d| {
                    d.ino == ino && d.removed.is_none_or(|r| r == t) && d.created_seq <= seq
                })
            })
    }

    /// The versions of entry (dir, name), oldest first.
    pub fn dentry(&self, dir: Ino, name: &str) -> Option<&[Dentry]> {
        self.dentry_id(dir, self.names.find(name)?)
    }

    /// The versions of entry (dir, interned name `id`), oldest first.
    pub fn dentry_id(&self, dir: Ino, id: NameId) -> Option<&[Dentry]> {
        self.dirs.get(&dir)?.slots.get(&id).map(|s| &s.versions[..])
    }

    /// Every entry's versions, in no particular order (for order-independent uses).
    pub fn dentries_unordered(&self) -> impl Iterator<Item = ((Ino, &str), &[Dentry])> {
        self.dirs.iter().flat_map(move |(&d, e)| {
            e.slots
                .iter()
                .map(move |(&n, s)| ((d, self.names.get(n)), &s.versions[..]))
        })
    }

    /// Every entry's versions, in (dir, name) order.
    pub fn all_dentries(&self) -> impl Iterator<Item = ((Ino, &str), &[Dentry])> {
        let mut v: Vec<((Ino, &str), &[Dentry])> = self.dentries_unordered().collect();
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v.into_iter()
    }

    /// Whether directory `dir` has a live entry.
    pub fn has_children(&self, dir: Ino) -> bool {
        self.dirs.get(&dir).is_some_and(|e| e.live > 0)
    }

    /// Number of live entries of directory `dir`.
    pub fn child_count(&self, dir: Ino) -> usize {
        self.dirs.get(&dir).map_or(0, |e| e.live)
    }

    /// The first parent directory of an inode (None for the top directory).
    pub fn parent_of(&self, ino: Ino) -> Option<Ino> {
        // No copy of the names: this runs on every fsync's and rename's parent walk.
        self.live.get(&ino)?.first().map(|(d, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Interned names: lookups by name, an inode's names in (dir, name) order, and names
    /// given back by `compact` once no entry keeps versions of them (ids reused), so that
    /// a long run over ever-new names keeps a bounded table.
    #[test]
    fn names_are_interned_ordered_and_given_back() {
        let mut st = FsState::mkfs();
        st.keep_history = false;
        let base = st.names.len();
        let t = st.last_trans_committed + 1;
        st.add_dentry(ROOT_INO, "b", 500, t);
        st.add_dentry(ROOT_INO, "a", 500, t);
        st.add_dentry(7, "a", 500, t);
        assert_eq!(
            st.names.len(),
            base + 2,
            "'a' is stored once for two entries"
        );
        // Directory 7 sorts before the top directory (256); within one, by name.
        assert_eq!(
            st.names_of(500),
            vec![
                (7, "a".to_string()),
                (ROOT_INO, "a".to_string()),
                (ROOT_INO, "b".to_string())
            ]
        );
        assert_eq!(st.live_entry(ROOT_INO, "a"), Some(500));
        assert_eq!(st.live_entry(ROOT_INO, "c"), None);
        for round in 0..50u64 {
            let name = format!("tmp{round}");
            st.add_dentry(ROOT_INO, &name, 1000 + round, t + round);
            st.remove_dentry(ROOT_INO, &name, t + round, 0);
            assert_eq!(st.live_entry(ROOT_INO, &name), None);
            st.last_trans_committed = t + round;
            st.compact();
        }
        assert_eq!(st.names.len(), base + 2, "removed names were given back");
        assert!(st.names.slots.len() <= base + 3, "ids were reused");
        assert_eq!(st.live_entry(7, "a"), Some(500));
        assert_eq!(st.dentry(ROOT_INO, "b").map(|v| v.len()), Some(1));
    }

    /// The per-directory entry table (`DirEntries`: live inode and versions side by side, a
    /// live count) answers as a plain list of (dir, name, ino, created, removed) versions
    /// does, through random creates, removals, re-creates under the same name and compactions:
    /// live lookups, a directory's entries by name, live counts, every entry's versions.
    #[test]
    fn dir_entries_match_a_version_list() {
        use rand::Rng;
        let mut rng = sim::RngStreams::new(11).stream("test.dirs");
        let mut st = FsState::mkfs();
        st.keep_history = false;
        let dirs = [ROOT_INO, 300, 301];
        let names = ["a", "b", "c", "d", "e"];
        // (dir, name, ino, created, removed)
        let mut model: Vec<(Ino, &str, Ino, TransId, Option<TransId>)> = Vec::new();
        let mut t = st.last_trans_committed + 1;
        let mut next = 1000;
        for step in 0..3000 {
            let (d, n) = (
                dirs[rng.random_range(0..dirs.len())],
                names[rng.random_range(0..names.len())],
            );
            let live = model
                .iter()
                .rposition(|v| (v.0, v.1) == (d, n) && v.4.is_none());
            match live {
                Some(i) if rng.random_bool(0.6) => {
                    st.remove_dentry(d, n, t, step);
                    model[i].4 = Some(t);
                }
                None => {
                    st.add_dentry(d, n, next, t);
                    model.push((d, n, next, t, None));
                    next += 1;
                }
                _ => {}
            }
            if rng.random_bool(0.1) {
                t += 1;
            }
            if rng.random_bool(0.02) {
                st.last_trans_committed = t - 1;
                st.compact();
                let lc = st.last_trans_committed;
                model.retain(|v| v.4.is_none_or(|r| r > lc));
            }
            for &d in &dirs {
                let mut want: Vec<(String, Ino)> = model
                    .iter()
                    .filter(|v| v.0 == d && v.4.is_none())
                    .map(|v| (v.1.to_string(), v.2))
                    .collect();
                want.sort();
                assert_eq!(st.entries_of(d), want, "entries of {d} at step {step}");
                assert_eq!(st.child_count(d), want.len());
                assert_eq!(st.has_children(d), !want.is_empty());
                for &n in &names {
                    let live = want.iter().find(|w| w.0 == n).map(|w| w.1);
                    assert_eq!(st.live_entry(d, n), live, "{d}/{n} at step {step}");
                    let versions: Vec<(Ino, TransId, Option<TransId>)> = model
                        .iter()
                        .filter(|v| (v.0, v.1) == (d, n))
                        .map(|v| (v.2, v.3, v.4))
                        .collect();
                    let got: Vec<(Ino, TransId, Option<TransId>)> = st
                        .dentry(d, n)
                        .unwrap_or(&[])
                        .iter()
                        .map(|x| (x.ino, x.created, x.removed))
                        .collect();
                    assert_eq!(got, versions, "versions of {d}/{n} at step {step}");
                }
            }
            let all = st.all_dentries().map(|(_, v)| v.len()).sum::<usize>();
            assert_eq!(all, model.len());
        }
    }
}
