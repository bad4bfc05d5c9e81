//! fs/btrfs/space-info.c and delalloc-space.c: reserving data space for buffered writes
//! (`bytes_may_use`), and what happens when the data space_info is full; metadata
//! reservations with tickets, the async reclaim and the preemptive reclaim worker (5.12+,
//! seed 004's seven patches and two follow-ups as policy switches).

use super::ctree::Btrfs;
use super::policy::{Policy, SpacePatch};
use super::state::*;
use crate::vfs::OpError;

/// BTRFS_MAX_EXTENT_SIZE (ctree.h@v5.13): 128 MiB, the largest extent an outstanding
/// extent covers (count_max_extents).
const BTRFS_MAX_EXTENT_SIZE: u64 = 128 << 20;

impl Btrfs {
    /// btrfs_check_data_free_space → btrfs_reserve_data_bytes (v5.10): data never
    /// overcommits, so a reservation is granted while used + pinned + may_use + bytes fits
    /// in the block groups. Otherwise the ticket's reclaim (btrfs_async_reclaim_data_space)
    /// allocates chunks while the device has unallocated space, then commits the
    /// transaction to unpin freed extents; ENOSPC when neither helps.
    pub(super) async fn reserve_data(&self, bytes: u64) -> Result<(), OpError> {
        let mut committed = false;
        loop {
            {
                let mut st = self.st_mut();
                if st.data.in_use() + bytes <= st.data.total() {
                    st.data.may_use += bytes;
                    return Ok(());
                }
            }
            // fs_info->chunk_mutex serialises allocators; re-check after taking it.
            let g = self.inner.chunk_mutex.lock().await;
            let fits = {
                let st = self.inner.st.borrow();
                st.data.in_use() + bytes <= st.data.total()
            };
            if fits {
                continue;
            }
            if self.alloc_data_chunk().await {
                drop(g);
                continue;
            }
            drop(g);
            let pinned: u64 = {
                let st = self.inner.st.borrow();
                st.data.pinned()
            };
            if committed || pinned == 0 {
                return Err(OpError("no space left on device".into()));
            }
            // COMMIT_TRANS: a commit unpins what the running transaction freed.
            let th = self.start_transaction().await;
            self.commit(th).await;
            committed = true;
        }
    }
}

/// The space counters a trace shows as counter tracks, named after the kernel's fields
/// (fs_info->delalloc_bytes and ordered_bytes, the data and metadata space_infos' bytes_*),
/// and the metadata tickets waiting (tickets + priority_tickets).
const SPACE_VALUES: [&str; 8] = [
    "btrfs delalloc_bytes",
    "btrfs ordered_bytes",
    "btrfs data bytes_used",
    "btrfs data bytes_pinned",
    "btrfs data bytes_may_use",
    "btrfs metadata bytes_may_use",
    "btrfs metadata bytes_pinned",
    "btrfs metadata tickets",
];

/// The trace's space counters: their point ids and the values last logged.
pub(super) struct SpaceValues {
    ids: [sim::ValueId; SPACE_VALUES.len()],
    last: [u64; SPACE_VALUES.len()],
}

impl Btrfs {
    /// Logs the space counters that changed since the last call, for a trace's counter
    /// tracks (`Handle::value`: not hashed); nothing unless a trace is kept.
    pub(super) fn trace_space(&self) {
        let h = &self.inner.h;
        if !h.tracing() {
            return;
        }
        let now = {
            let st = self.inner.st.borrow();
            let tickets = st.meta.tickets.len() + st.meta.priority_tickets.len();
            [
                st.meta.delalloc_bytes,
                st.meta.ordered_bytes,
                st.data.used(),
                st.data.pinned(),
                st.data.may_use,
                st.meta.may_use,
                st.meta.pinned,
                tickets as u64,
            ]
        };
        let mut values = self.inner.space_values.borrow_mut();
        let v = values.get_or_insert_with(|| SpaceValues {
            ids: SPACE_VALUES.map(|n| h.value_id_static(n)),
            last: [u64::MAX; SPACE_VALUES.len()],
        });
        for (i, &x) in now.iter().enumerate() {
            if v.last[i] != x {
                v.last[i] = x;
                h.value(v.ids[i], x);
            }
        }
    }
}

/// A flush_space state (enum btrfs_flush_state, fs/btrfs/ctree.h@v5.12), in the order the
/// async reclaim walks them; FORCE_COMMIT_TRANS is the preemptive worker's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushState {
    /// FLUSH_DELAYED_ITEMS_NR.
    DelayedItemsNr,
    /// FLUSH_DELAYED_ITEMS.
    DelayedItems,
    /// FLUSH_DELAYED_REFS_NR.
    DelayedRefsNr,
    /// FLUSH_DELAYED_REFS.
    DelayedRefs,
    /// FLUSH_DELALLOC.
    Delalloc,
    /// FLUSH_DELALLOC_WAIT.
    DelallocWait,
    /// ALLOC_CHUNK.
    AllocChunk,
    /// ALLOC_CHUNK_FORCE.
    AllocChunkForce,
    /// RUN_DELAYED_IPUTS.
    RunDelayedIputs,
    /// COMMIT_TRANS.
    CommitTrans,
    /// FORCE_COMMIT_TRANS.
    ForceCommitTrans,
}

impl FlushState {
    /// Every state, in enum btrfs_flush_state's order.
    pub const ALL: [FlushState; 11] = [
        FlushState::DelayedItemsNr,
        FlushState::DelayedItems,
        FlushState::DelayedRefsNr,
        FlushState::DelayedRefs,
        FlushState::Delalloc,
        FlushState::DelallocWait,
        FlushState::AllocChunk,
        FlushState::AllocChunkForce,
        FlushState::RunDelayedIputs,
        FlushState::CommitTrans,
        FlushState::ForceCommitTrans,
    ];

    /// The kernel's name (`flushes.<NAME>` metrics).
    pub fn name(self) -> &'static str {
        match self {
            FlushState::DelayedItemsNr => "FLUSH_DELAYED_ITEMS_NR",
            FlushState::DelayedItems => "FLUSH_DELAYED_ITEMS",
            FlushState::DelayedRefsNr => "FLUSH_DELAYED_REFS_NR",
            FlushState::DelayedRefs => "FLUSH_DELAYED_REFS",
            FlushState::Delalloc => "FLUSH_DELALLOC",
            FlushState::DelallocWait => "FLUSH_DELALLOC_WAIT",
            FlushState::AllocChunk => "ALLOC_CHUNK",
            FlushState::AllocChunkForce => "ALLOC_CHUNK_FORCE",
            FlushState::RunDelayedIputs => "RUN_DELAYED_IPUTS",
            FlushState::CommitTrans => "COMMIT_TRANS",
            FlushState::ForceCommitTrans => "FORCE_COMMIT_TRANS",
        }
    }
}

/// evict_flush_states (space-info.c@v5.12): what a BTRFS_RESERVE_FLUSH_EVICT caller runs
/// itself in priority_reclaim_metadata_space.
const EVICT_STATES: [FlushState; 8] = [
    FlushState::DelayedItemsNr,
    FlushState::DelayedItems,
    FlushState::DelayedRefsNr,
    FlushState::DelayedRefs,
    FlushState::Delalloc,
    FlushState::DelallocWait,
    FlushState::AllocChunk,
    FlushState::CommitTrans,
];

/// The async reclaim's walk (btrfs_async_reclaim_metadata_space@v5.12).
const ASYNC_STATES: [FlushState; 10] = [
    FlushState::DelayedItemsNr,
    FlushState::DelayedItems,
    FlushState::DelayedRefsNr,
    FlushState::DelayedRefs,
    FlushState::Delalloc,
    FlushState::DelallocWait,
    FlushState::AllocChunk,
    FlushState::AllocChunkForce,
    FlushState::RunDelayedIputs,
    FlushState::CommitTrans,
];

/// calc_available_free_space (space-info.c@v5.12) for FLUSH_ALL: the unallocated device
/// space over the metadata profile's factor (DUP: 2), shifted right by 3.
fn available(st: &FsState) -> u64 {
    (st.data.unallocated / 2) >> 3
}

/// btrfs_can_overcommit (space-info.c@v5.12).
fn can_overcommit(st: &FsState, bytes: u64) -> bool {
    st.meta.in_use() + bytes < st.meta.total + available(st)
}

/// btrfs_can_overcommit for a flush other than FLUSH_ALL (the priority list, granted with
/// BTRFS_RESERVE_NO_FLUSH by btrfs_try_granting_tickets@v5.12): calc_available_free_space
/// shifts by 1 instead of 3.
fn can_overcommit_priority(st: &FsState, bytes: u64) -> bool {
    st.meta.in_use() + bytes < st.meta.total + ((st.data.unallocated / 2) >> 1)
}

/// calc_inode_reservations (delalloc-space.c@v5.13) for `bytes` of new data:
/// btrfs_calc_insert_metadata_size(nr_extents + csum_leaves) for the file extent items
/// (count_max_extents: one per BTRFS_MAX_EXTENT_SIZE, 128 MiB) and the csum leaves
/// (btrfs_csum_bytes_to_leaves: csums_per_leaf = BTRFS_MAX_ITEM_SIZE / csum_size), plus
/// btrfs_calc_metadata_size(1) = nodesize × BTRFS_MAX_LEVEL for finish_ordered_io's inode
/// update. What a direct write reserves (btrfs_dio_iomap_begin →
/// btrfs_delalloc_reserve_space, inode.c@v5.13 and @v5.14: 640 KiB for 4 KiB at 16 KiB
/// nodes) and what a file's first dirty range holds
/// (btrfs_calculate_inode_block_rsv_size@v5.13).
pub fn calc_inode_reservations(c: &super::Costs, bytes: u64) -> u64 {
    let extents = bytes.div_ceil(BTRFS_MAX_EXTENT_SIZE);
    // BTRFS_MAX_ITEM_SIZE = nodesize - sizeof(struct btrfs_header) (101) -
    // sizeof(struct btrfs_item) (25) (ctree.h@v5.13).
    let per_leaf = ((c.nodesize - 101 - 25) / c.csum_per_block.max(1)).max(1);
    let csum_leaves = (bytes / c.sectorsize.max(1)).div_ceil(per_leaf);
    c.meta_item() * (extents + csum_leaves) + c.nodesize * 8
}

/// need_preemptive_reclaim (space-info.c@v5.12/5.13, MODELS-J1-F1-H1.md F1.6), with the
/// F1 changes the policy applies.
pub fn need_preemptive_reclaim(st: &FsState, p: &Policy) -> bool {
    let m = &st.meta;
    let g = m.global_rsv;
    let pct = if p.space(SpacePatch::Full90) { 90 } else { 98 };
    let full_used = m.used
        + m.reserved
        + if p.space(SpacePatch::GlobalRsvFull) {
            g
        } else {
            0
        };
    if full_used as u128 * 100 >= m.total as u128 * pct {
        return false;
    }
    if m.reclaim_size != 0 {
        return false;
    }
    if p.space(SpacePatch::GlobalMajority) {
        let used = m.may_use + m.pinned;
        if g >= used || used - g <= 128 << 20 {
            return false;
        }
    }
    let taken = m.used
        + m.reserved
        + m.readonly
        + if p.space(SpacePatch::GlobalRsvThresh) {
            g
        } else {
            0
        };
    let free = m.total.saturating_sub(taken);
    let thresh = (available(st) + free) >> m.clamp.clamp(1, 8);
    let ordered = if p.space(SpacePatch::HalfOrdered) {
        m.ordered_bytes / 2
    } else {
        m.ordered_bytes
    };
    let used = m.pinned
        + if ordered >= m.delalloc_bytes {
            m.delayed_refs + m.delayed_block
        } else if p.space(SpacePatch::GlobalRsvUsed) {
            m.may_use.saturating_sub(g)
        } else {
            m.may_use
        };
    used >= thresh
}

impl Btrfs {
    /// btrfs_calc_insert_metadata_size (ctree.h@v5.12): nodesize × BTRFS_MAX_LEVEL (8) × 2
    /// per item.
    pub(super) fn meta_items(&self, items: u64) -> u64 {
        self.inner.costs.meta_item() * items
    }

    /// `calc_inode_reservations` with this filesystem's sizes.
    pub(super) fn delalloc_meta_size(&self, bytes: u64) -> u64 {
        calc_inode_reservations(&self.inner.costs, bytes)
    }

    /// btrfs_update_delayed_refs_rsv (delayed-ref.c@v5.13): `heads` new delayed ref heads
    /// (add_delayed_ref_head: trans->delayed_ref_updates++) queued in transaction `t` grow
    /// `delayed_refs_rsv.size` by btrfs_calc_insert_metadata_size(heads); nothing is
    /// reserved here — released reservations fill it (`release_to_delayed_refs`).
    pub(super) fn add_ref_heads(st: &mut FsState, t: TransId, heads: u64) {
        if let Some(tr) = st.trans.get_mut(&t) {
            tr.ref_heads += heads;
        }
        st.meta.delayed_refs_size += heads * st.meta.nodesize * 8 * 2;
    }

    /// btrfs_block_rsv_release (block-rsv.c@v5.13) of a transaction handle's or an inode's
    /// reserve: while delayed_refs_rsv is not full the released bytes fill it up to its
    /// size (block_rsv_release_bytes with the delayed refs rsv as target); the rest goes
    /// back to the space_info.
    pub(super) fn release_to_delayed_refs(&self, bytes: u64) {
        let fill = {
            let mut st = self.st_mut();
            let m = &mut st.meta;
            let fill = m
                .delayed_refs_size
                .saturating_sub(m.delayed_refs)
                .min(bytes);
            m.delayed_refs += fill;
            fill
        };
        self.release_metadata(bytes - fill);
    }

    /// `delayed_refs_rsv.full` (block-rsv.h@v5.13): reserved covers size.
    pub(super) fn delayed_refs_full(st: &FsState) -> bool {
        st.meta.delayed_refs >= st.meta.delayed_refs_size
    }

    /// btrfs_migrate_to_delayed_refs_rsv (delayed-ref.c@v5.13): `bytes` already in
    /// bytes_may_use move to delayed_refs_rsv up to its size; the excess is freed.
    pub(super) fn migrate_to_delayed_refs(&self, bytes: u64) {
        self.release_to_delayed_refs(bytes);
    }

    /// Runs up to `heads` delayed ref heads of transaction `t` (btrfs_run_delayed_refs →
    /// btrfs_delayed_refs_rsv_release@v5.13): the rsv's size drops by their insert size and
    /// what it then holds above its size is released (to the global reserve, which the
    /// model keeps full, so to the space_info). Returns the heads run.
    pub(super) fn run_ref_heads(&self, t: TransId, heads: u64) -> u64 {
        let (n, excess) = {
            let mut st = self.st_mut();
            let item = st.meta.nodesize * 8 * 2;
            let Some(tr) = st.trans.get_mut(&t) else {
                return 0;
            };
            let n = tr.ref_heads.min(heads);
            tr.ref_heads -= n;
            let m = &mut st.meta;
            m.delayed_refs_size = m.delayed_refs_size.saturating_sub(n * item);
            let excess = m.delayed_refs.saturating_sub(m.delayed_refs_size);
            m.delayed_refs -= excess;
            (n, excess)
        };
        self.release_metadata(excess);
        n
    }

    /// __reserve_bytes (space-info.c@v5.12) for a FLUSH_ALL metadata reservation: granted
    /// if no ticket waits and it fits or may overcommit; else a ticket in FIFO order, the
    /// async reclaim started if it is not running, and the caller waits until the ticket is
    /// granted or fails (ENOSPC). A granted reservation may queue the preemptive worker.
    pub(super) async fn reserve_metadata(&self, bytes: u64) -> Result<(), OpError> {
        self.reserve_metadata_kind(bytes, false).await
    }

    /// __reserve_bytes with BTRFS_RESERVE_FLUSH_EVICT (btrfs_evict_inode →
    /// evict_refill_and_join@v5.12): only the priority list can make it wait; a ticket goes
    /// on `priority_tickets` and the caller runs the evict flush states itself
    /// (priority_reclaim_metadata_space), no async reclaim. ENOSPC after the last state.
    pub(super) async fn reserve_metadata_evict(&self, bytes: u64) -> Result<(), OpError> {
        self.reserve_metadata_kind(bytes, true).await
    }

    async fn reserve_metadata_kind(&self, bytes: u64, priority: bool) -> Result<(), OpError> {
        if bytes == 0 {
            return Ok(());
        }
        let ticket = {
            let mut st = self.st_mut();
            // FLUSH_ALL looks at both lists, a priority flusher at the priority list only.
            let pending =
                !st.meta.priority_tickets.is_empty() || (!priority && !st.meta.tickets.is_empty());
            let fits = !pending
                && (st.meta.in_use() + bytes <= st.meta.total
                    || if priority {
                        can_overcommit_priority(&st, bytes)
                    } else {
                        can_overcommit(&st, bytes)
                    });
            if fits {
                st.meta.may_use += bytes;
                None
            } else {
                let id = st.meta.next_ticket;
                st.meta.next_ticket += 1;
                st.meta.reclaim_size += bytes;
                st.meta.ticket_in_trans = Some(st.generation);
                let clamp_once = self.space(SpacePatch::ClampOnce);
                let start = !priority && !st.meta.flush;
                if !clamp_once || start {
                    Self::maybe_clamp_preempt(&mut st);
                }
                if priority {
                    st.meta.priority_tickets.push_back(Ticket { id, bytes });
                } else {
                    st.meta.tickets.push_back(Ticket { id, bytes });
                }
                if start {
                    st.meta.flush = true;
                }
                Some((id, start))
            }
        };
        let Some((id, start)) = ticket else {
            self.maybe_queue_preempt();
            return Ok(());
        };
        let since = self.inner.h.now();
        {
            let mut m = self.inner.m.borrow_mut();
            if priority {
                m.priority_tickets += 1;
            } else {
                m.metadata_tickets += 1;
            }
        }
        if start {
            let fs = self.clone();
            self.inner.h.spawn_daemon(
                "btrfs-async-reclaim",
                async move { fs.async_reclaim().await },
            );
        }
        if priority {
            self.priority_reclaim(id, bytes).await;
        }
        loop {
            let done = self.st_mut().meta.done.remove(&id);
            if let Some(granted) = done {
                let waited = self.inner.h.now() - since;
                self.st_mut()
                    .meta
                    .ticket_waits
                    .get_or_insert_with(crate::device::new_histogram)
                    .saturating_record(waited.max(1));
                return if granted {
                    Ok(())
                } else {
                    Err(OpError("no space left on device (metadata)".into()))
                };
            }
            self.inner.ticket_wait.wait().await;
        }
    }

    /// priority_reclaim_metadata_space (space-info.c@v5.12): the reserving task runs the
    /// evict flush states in order until its ticket is granted; after the last one the
    /// ticket fails (the model does not steal from the global reserve).
    async fn priority_reclaim(&self, id: u64, bytes: u64) {
        for state in EVICT_STATES {
            if self.st_mut().meta.done.contains_key(&id) {
                return;
            }
            self.flush_space(state, bytes, false).await;
            let mut st = self.st_mut();
            if Self::grant_tickets(&mut st) {
                drop(st);
                self.inner.ticket_wait.notify_all();
            }
        }
        let mut st = self.st_mut();
        if st.meta.done.contains_key(&id) {
            return;
        }
        if let Some(pos) = st.meta.priority_tickets.iter().position(|t| t.id == id) {
            st.meta.priority_tickets.remove(pos);
            st.meta.reclaim_size -= bytes;
            st.meta.done.insert(id, false);
        }
    }

    /// Returns metadata bytes to the space_info and grants what waits
    /// (btrfs_space_info_free_bytes_may_use → btrfs_try_granting_tickets, strict FIFO).
    pub(super) fn release_metadata(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut st = self.st_mut();
        st.meta.may_use = st.meta.may_use.saturating_sub(bytes);
        if Self::grant_tickets(&mut st) {
            drop(st);
            self.inner.ticket_wait.notify_all();
        }
    }

    /// The oracle's verdict on preemptive flushes done up to transaction `upto` (all, when
    /// None): a flush was unnecessary when no reservation had to wait for space in its
    /// transaction — the space it made was never needed.
    pub(super) fn judge_preempt(&self, upto: Option<TransId>) {
        let mut st = self.st_mut();
        let keys: Vec<TransId> = st
            .meta
            .preempt_flushes_in
            .keys()
            .copied()
            .filter(|&k| upto.is_none_or(|u| k <= u))
            .collect();
        let mut unnecessary = 0;
        for k in keys {
            let n = st.meta.preempt_flushes_in.remove(&k).unwrap_or(0);
            if st.meta.ticket_in_trans != Some(k) {
                unnecessary += n;
            }
        }
        drop(st);
        self.inner.m.borrow_mut().unnecessary_preempt_flushes += unnecessary;
    }

    /// btrfs_try_granting_tickets: serves the priority queue's head while it fits, then the
    /// normal queue's.
    pub(super) fn grant_tickets(st: &mut FsState) -> bool {
        let mut any = false;
        while let Some(t) = st.meta.priority_tickets.front() {
            let bytes = t.bytes;
            if !(st.meta.in_use() + bytes <= st.meta.total || can_overcommit_priority(st, bytes)) {
                break;
            }
            let t = st.meta.priority_tickets.pop_front().expect("front");
            st.meta.may_use += bytes;
            st.meta.reclaim_size -= bytes;
            st.meta.tickets_id += 1;
            st.meta.done.insert(t.id, true);
            any = true;
        }
        while let Some(t) = st.meta.tickets.front() {
            let bytes = t.bytes;
            if !(st.meta.in_use() + bytes <= st.meta.total || can_overcommit(st, bytes)) {
                break;
            }
            let t = st.meta.tickets.pop_front().expect("front");
            st.meta.may_use += bytes;
            st.meta.reclaim_size -= bytes;
            st.meta.tickets_id += 1;
            st.meta.done.insert(t.id, true);
            any = true;
        }
        any
    }

    /// maybe_clamp_preempt (space-info.c@v5.12): more delalloc than ordered means the
    /// preemptive flushing is not keeping up; make its threshold stricter.
    fn maybe_clamp_preempt(st: &mut FsState) {
        if st.meta.ordered_bytes < st.meta.delalloc_bytes {
            st.meta.clamp = (st.meta.clamp + 1).min(8);
        }
    }

    fn space(&self, p: SpacePatch) -> bool {
        self.inner.policy.space(p)
    }

    /// After a granted metadata reservation: queue the preemptive worker if
    /// need_preemptive_reclaim and it is not already running (5.12+).
    fn maybe_queue_preempt(&self) {
        if self.inner.policy.preempt.is_none() {
            return;
        }
        let go = {
            let st = self.inner.st.borrow();
            !st.meta.preempt_busy && need_preemptive_reclaim(&st, &self.inner.policy)
        };
        if go {
            self.st_mut().meta.preempt_busy = true;
            let fs = self.clone();
            self.inner
                .h
                .spawn_daemon("btrfs-preempt-reclaim", async move {
                    fs.preempt_reclaim().await
                });
        }
    }

    /// btrfs_preempt_reclaim_metadata_space (space-info.c@v5.12, F1.5): while
    /// need_preemptive_reclaim, pick what holds the most reservations and flush a quarter of
    /// it; one loop with no ticket relaxes the clamp.
    async fn preempt_reclaim(&self) {
        let mut loops = 0u64;
        loop {
            let (state, to_reclaim) = {
                let st = self.inner.st.borrow();
                if !need_preemptive_reclaim(&st, &self.inner.policy) {
                    break;
                }
                let m = &st.meta;
                let mut rsvs = m.global_rsv + m.delayed_block + m.delayed_refs + m.trans;
                let delalloc_size = m.may_use.saturating_sub(rsvs);
                rsvs -= m.global_rsv;
                let (state, bytes) = if delalloc_size > rsvs {
                    (FlushState::Delalloc, delalloc_size)
                } else if m.pinned > m.delayed_block + m.delayed_refs {
                    (FlushState::ForceCommitTrans, m.pinned)
                } else if m.delayed_block > m.delayed_refs {
                    (FlushState::DelayedItemsNr, m.delayed_block)
                } else {
                    (FlushState::DelayedRefsNr, m.delayed_refs)
                };
                (state, (bytes >> 2).max(self.meta_items(1)))
            };
            loops += 1;
            {
                let mut st = self.st_mut();
                // Keyed by the running (or, between transactions, the last) transaction.
                let t = st.generation;
                *st.meta.preempt_flushes_in.entry(t).or_default() += 1;
                let mut m = self.inner.m.borrow_mut();
                m.preempt_flushes += 1;
                match state {
                    FlushState::Delalloc => m.preempt_delalloc_flushes += 1,
                    FlushState::ForceCommitTrans => m.preempt_commits += 1,
                    _ => m.preempt_delayed_flushes += 1,
                }
            }
            // Summing the percpu counters and the reserves each loop.
            self.inner.h.cpu(self.inner.costs.preempt_loop).await;
            self.flush_space(state, to_reclaim, true).await;
        }
        let mut st = self.st_mut();
        if loops == 1 && st.meta.tickets.is_empty() {
            st.meta.clamp = st.meta.clamp.saturating_sub(1).max(1);
        }
        st.meta.preempt_busy = false;
    }

    /// btrfs_async_reclaim_metadata_space (space-info.c@v5.12, F1.4): walk the flush
    /// states from the cheapest while tickets wait; progress restarts the walk; after the
    /// third commit without progress every ticket fails.
    async fn async_reclaim(&self) {
        self.inner.m.borrow_mut().async_reclaim_episodes += 1;
        let mut i = 0usize;
        let mut commit_cycles = 0u32;
        loop {
            let (empty, last_id, to_reclaim) = {
                let st = self.inner.st.borrow();
                (
                    st.meta.tickets.is_empty(),
                    st.meta.tickets_id,
                    st.meta.reclaim_size,
                )
            };
            if empty {
                self.st_mut().meta.flush = false;
                return;
            }
            let state = ASYNC_STATES[i];
            self.inner.h.cpu(self.inner.costs.preempt_loop).await;
            self.flush_space(state, to_reclaim, false).await;
            let (empty, id) = {
                let st = self.inner.st.borrow();
                (st.meta.tickets.is_empty(), st.meta.tickets_id)
            };
            if empty {
                self.st_mut().meta.flush = false;
                return;
            }
            if id != last_id {
                i = 0;
                continue;
            }
            if state == FlushState::CommitTrans {
                commit_cycles += 1;
                if commit_cycles > 2 {
                    // maybe_fail_all_tickets.
                    let mut st = self.st_mut();
                    while let Some(t) = st.meta.tickets.pop_front() {
                        st.meta.reclaim_size -= t.bytes;
                        st.meta.done.insert(t.id, false);
                    }
                    st.meta.flush = false;
                    drop(st);
                    self.inner.ticket_wait.notify_all();
                    return;
                }
                i = 0;
                continue;
            }
            i += 1;
            if ASYNC_STATES[i] == FlushState::AllocChunkForce && commit_cycles == 0 {
                i += 1;
            }
        }
    }

    /// flush_space (space-info.c@v5.12) for one state. For the preemptive worker, a state
    /// with nothing to do costs one jiffy (the kernel's loop would spin on cond_resched), so
    /// a worker that cannot make progress still lets virtual time pass.
    async fn flush_space(&self, state: FlushState, to_reclaim: u64, for_preempt: bool) {
        *self
            .inner
            .m
            .borrow_mut()
            .flushes_by_state
            .entry(state.name().to_string())
            .or_default() += 1;
        let item = self.meta_items(1);
        let idle = {
            let m = &self.inner.st.borrow().meta;
            match state {
                FlushState::DelayedItemsNr | FlushState::DelayedItems => m.delayed_block == 0,
                FlushState::DelayedRefsNr | FlushState::DelayedRefs => m.delayed_refs_size == 0,
                FlushState::RunDelayedIputs => true,
                _ => false,
            }
        };
        if idle {
            if for_preempt {
                self.inner.h.sleep(self.inner.costs.jiffy).await;
            }
            return;
        }
        match state {
            FlushState::DelayedItemsNr | FlushState::DelayedItems => {
                // flush_space@v5.12: nr = calc_reclaim_items_nr(to_reclaim) * 2 nodes.
                let nodes = if state == FlushState::DelayedItemsNr {
                    2 * (to_reclaim / item).max(1)
                } else {
                    u64::MAX
                };
                self.flush_delayed_items(nodes).await;
            }
            FlushState::DelayedRefsNr | FlushState::DelayedRefs => {
                // flush_space@v5.13: btrfs_run_delayed_refs(trans, nr) with nr =
                // calc_reclaim_items_nr (to_reclaim / insert size, at least 1), or every
                // ready head for FLUSH_DELAYED_REFS; here the running transaction's heads.
                let nr = if state == FlushState::DelayedRefsNr {
                    (to_reclaim / item).max(1)
                } else {
                    u64::MAX
                };
                let running = self.inner.st.borrow().running;
                let Some(t) = running else {
                    if for_preempt {
                        self.inner.h.sleep(self.inner.costs.jiffy).await;
                    }
                    return;
                };
                let heads = self.inner.st.borrow().trans[&t].ref_heads.min(nr);
                self.inner.h.cpu(heads * self.inner.costs.delayed_ref).await;
                let run = self.run_ref_heads(t, heads);
                if let Some(tr) = self.st_mut().trans.get_mut(&t) {
                    // The commit has these data refs less to run.
                    tr.delayed_refs = tr.delayed_refs.saturating_sub(run);
                }
                if run == 0 && for_preempt {
                    self.inner.h.sleep(self.inner.costs.jiffy).await;
                }
            }
            FlushState::Delalloc | FlushState::DelallocWait => {
                let wait = state == FlushState::DelallocWait;
                self.shrink_delalloc(to_reclaim, for_preempt, wait).await;
            }
            FlushState::AllocChunk | FlushState::AllocChunkForce => {
                self.alloc_meta_chunk(state == FlushState::AllocChunkForce)
                    .await;
            }
            FlushState::RunDelayedIputs => {}
            FlushState::CommitTrans | FlushState::ForceCommitTrans => {
                if let Some(th) = self.attach_transaction().await {
                    self.inner.m.borrow_mut().space_commits += 1;
                    self.commit(th).await;
                } else {
                    // Nothing running to commit: the kernel's attach returns -ENOENT.
                    self.inner.h.sleep(self.inner.costs.jiffy).await;
                }
            }
        }
    }

    /// shrink_delalloc (space-info.c@v5.12): write back dirty data, the inodes in order,
    /// until the reservations they hold cover `to_reclaim`, up to three rounds (one for the
    /// preemptive worker with 7/7); with nothing to write it waits one jiffy (the kernel
    /// waits for ordered extents or sleeps). Only FLUSH_DELALLOC_WAIT (`wait_ordered`)
    /// waits for the ordered extents the writeback started (btrfs_wait_ordered_roots);
    /// the model's writeback of one extent finishes it inline either way, ranges written
    /// at their offsets are finished by the endio-write workers (extent_io.rs).
    async fn shrink_delalloc(&self, to_reclaim: u64, for_preempt: bool, wait_ordered: bool) {
        let rounds = if for_preempt && self.space(SpacePatch::OneShotDelalloc) {
            1
        } else {
            3
        };
        for _ in 0..rounds {
            let inodes: Vec<Ino> = {
                let st = self.inner.st.borrow();
                let mut got = 0;
                // In inode-number order, as the kernel's delalloc_inodes list is walked here.
                st.meta
                    .delalloc_rsv
                    .iter()
                    .take_while(|(_, &b)| {
                        let more = got < to_reclaim;
                        got += b;
                        more
                    })
                    .map(|(&i, _)| i)
                    .collect()
            };
            if inodes.is_empty() {
                self.inner.h.sleep(self.inner.costs.jiffy).await;
                return;
            }
            {
                let st = self.inner.st.borrow();
                let mut m = self.inner.m.borrow_mut();
                m.delalloc_flushed_inodes += inodes.len() as u64;
                if for_preempt {
                    m.preempt_flushed_bytes += inodes
                        .iter()
                        .filter_map(|i| st.inodes.get(i))
                        .map(|i| i.dirty_bytes)
                        .sum::<u64>();
                }
            }
            for ino in inodes {
                if self.inner.st.borrow().inodes.contains_key(&ino) {
                    self.writeback_wait(ino, wait_ordered).await;
                }
            }
            if self.inner.st.borrow().meta.tickets.is_empty() && !for_preempt {
                return;
            }
        }
    }

    /// ALLOC_CHUNK (`force` false: CHUNK_ALLOC_NO_FORCE) or ALLOC_CHUNK_FORCE for metadata:
    /// a DUP chunk of `meta_chunk_size` from the unallocated space (two copies), made under
    /// the running transaction like a data chunk (btrfs_make_block_group marks it for full
    /// commits). Without force, should_alloc_chunk (block-group.c@v5.12) allocates only when
    /// the space info's bytes other than may_use reach 80 % of its total, less 2 MiB.
    async fn alloc_meta_chunk(&self, force: bool) {
        let size = self.inner.costs.meta_chunk_size;
        if self.inner.st.borrow().data.unallocated < 2 * size {
            self.inner.h.sleep(self.inner.costs.jiffy).await;
            return;
        }
        if !force {
            let st = self.inner.st.borrow();
            let m = &st.meta;
            if m.allocated() + (2 << 20) < m.total * 8 / 10 {
                return;
            }
        }
        let th = self.join_transaction().await;
        self.inner.h.cpu(self.inner.costs.btree_item * 4).await;
        {
            let mut st = self.st_mut();
            if st.data.unallocated >= 2 * size {
                st.data.unallocated -= 2 * size;
                st.meta.total += size;
                Self::mark_new_block_group(&mut st, th.id);
                Self::grant_tickets(&mut st);
            }
        }
        // btrfs_make_block_group → btrfs_update_global_block_rsv (block-group.c@v5.10).
        if self.inner.costs.global_rsv_resize != 0 {
            self.resize_global_rsv();
        }
        self.inner.m.borrow_mut().meta_block_groups_created += 1;
        self.end(th);
        self.inner.ticket_wait.notify_all();
    }

    /// The `fill-metadata SIZE` setup step: SIZE bytes of existing tree blocks counted as
    /// used metadata (an aged filesystem), metadata chunks allocated for them, and what is
    /// left of the device given to data so no chunk can be allocated any more (a full
    /// filesystem, the setting of seed 004's report). The global reserve follows the trees.
    pub(super) fn fill_metadata(&self, bytes: u64) {
        let size = self.inner.costs.meta_chunk_size;
        let mut st = self.st_mut();
        st.meta.used += bytes;
        while st.meta.used > st.meta.total && st.data.unallocated >= 2 * size {
            st.data.unallocated -= 2 * size;
            st.meta.total += size;
        }
        st.meta.total = st.meta.total.max(st.meta.used);
        let left = st.data.unallocated;
        if left > 0 {
            st.data.add_group(left);
            st.data.unallocated = 0;
        }
        let min = self.meta_items(13);
        Self::set_global_rsv_base(&mut st, min, self.inner.costs.global_rsv_max);
    }

    /// An aged filesystem (`Costs::aged_data`): data chunks allocated and full while the
    /// device has room, and their checksums (csum_per_block per sector) counted as used
    /// metadata, metadata chunks allocated for them. Extent items and file trees of the
    /// aged data are not counted.
    pub(super) fn age(st: &mut FsState, c: &super::Costs) {
        let mut left = c.aged_data;
        while left > 0 && st.data.unallocated >= c.data_chunk_size.max(1) {
            let size = c.data_chunk_size.min(left).max(c.sectorsize);
            st.data.unallocated -= size;
            st.data.add_group(size);
            st.data.alloc(size);
            left = left.saturating_sub(size);
        }
        let aged = c.aged_data - left;
        st.meta.used += aged / c.sectorsize.max(1) * c.csum_per_block;
        while st.meta.used > st.meta.total && st.data.unallocated >= 2 * c.meta_chunk_size {
            st.data.unallocated -= 2 * c.meta_chunk_size;
            st.meta.total += c.meta_chunk_size;
        }
    }

    /// The per-ticket wait percentiles into `m` (metadata_ticket_wait_*).
    pub(super) fn ticket_wait_metrics(&self, m: &mut super::counters::Counters) {
        if let Some(h) = &self.inner.st.borrow().meta.ticket_waits {
            m.metadata_ticket_wait_p50_ns = h.value_at_quantile(0.5);
            m.metadata_ticket_wait_p99_ns = h.value_at_quantile(0.99);
            m.metadata_ticket_wait_max_ns = h.max();
        }
    }

    /// Sets the global reserve's base so its size is the metadata `used` now (mkfs, an
    /// aged filesystem and `fill-metadata` count their trees there), its floor (13 items)
    /// and cap, and resizes it.
    pub(super) fn set_global_rsv_base(st: &mut FsState, min: u64, max: u64) {
        let blocks = st.trees.global_rsv_blocks();
        let m = &mut st.meta;
        m.global_blocks0 = blocks;
        m.global_base = m.used;
        m.global_min_max = (min, max);
        Self::update_global_rsv(st);
    }

    /// btrfs_update_global_block_rsv (block-rsv.c@v5.12): size = the extent, csum and root
    /// trees' bytes (the base plus what the modelled trees grew by since it was set), at
    /// least 13 items, at most 512 MiB; always full since "btrfs: always reserve our entire
    /// size for the global reserve" (5.4), so its bytes are in may_use. A shrink gives the
    /// difference back and grants what waits; returns whether it granted a ticket.
    pub(super) fn update_global_rsv(st: &mut FsState) -> bool {
        let grown = st
            .trees
            .global_rsv_blocks()
            .saturating_sub(st.meta.global_blocks0);
        let m = &mut st.meta;
        let (min, max) = m.global_min_max;
        let size = (m.global_base + grown * m.nodesize).clamp(min, max);
        let old = std::mem::replace(&mut m.global_rsv, size);
        if size >= old {
            m.may_use += size - old;
            return false;
        }
        m.may_use -= old - size;
        Self::grant_tickets(st)
    }

    /// update_global_rsv from a task: wakes what a shrink granted.
    pub(super) fn resize_global_rsv(&self) {
        let granted = Self::update_global_rsv(&mut self.st_mut());
        if granted {
            self.inner.ticket_wait.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btrfs::ctree_btree::{key_type, Key, Work};

    /// The global reserve follows the extent tree's growth (its size, in may_use), stays
    /// between its floor and cap, and gives back what a shrink frees.
    #[test]
    fn the_global_reserve_follows_the_extent_csum_and_root_trees() {
        let mut st = FsState::mkfs();
        let ns = 16 << 10;
        st.meta.nodesize = ns;
        st.meta.used = 4 * ns;
        Btrfs::set_global_rsv_base(&mut st, 2 * ns, 1 << 30);
        assert_eq!((st.meta.global_rsv, st.meta.may_use), (4 * ns, 4 * ns));
        let before = st.trees.global_rsv_blocks();
        let mut w = Work::default();
        for i in 0..6000 {
            let key = Key::new(1 << 20 | i << 12, key_type::EXTENT_ITEM, 4096);
            st.trees.extent.insert(key, 53, &mut w);
        }
        // The fs tree does not count.
        for i in 0..6000 {
            let key = Key::new(1000 + i, key_type::INODE_ITEM, 0);
            st.trees.fs.insert(key, 160, &mut w);
        }
        let grown = st.trees.global_rsv_blocks() - before;
        assert!(grown > 8, "{grown} blocks");
        assert!(!Btrfs::update_global_rsv(&mut st));
        assert_eq!(st.meta.global_rsv, (4 + grown) * ns);
        assert_eq!(st.meta.may_use, st.meta.global_rsv);
        st.meta.global_min_max.1 = 6 * ns;
        Btrfs::update_global_rsv(&mut st);
        assert_eq!((st.meta.global_rsv, st.meta.may_use), (6 * ns, 6 * ns));
        for i in 0..6000 {
            let key = Key::new(1 << 20 | i << 12, key_type::EXTENT_ITEM, 4096);
            st.trees.extent.delete(key, &mut w);
        }
        // A shrink gives its bytes back to a waiting ticket (no overcommit: only `total`).
        st.meta.global_min_max = (2 * ns, 1 << 30);
        st.data.unallocated = 0;
        st.meta.total = st.meta.in_use();
        st.meta
            .tickets
            .push_back(crate::btrfs::state::Ticket { id: 9, bytes: ns });
        st.meta.reclaim_size += ns;
        assert!(Btrfs::update_global_rsv(&mut st));
        assert!(st.meta.global_rsv <= 5 * ns, "{}", st.meta.global_rsv);
        assert_eq!(st.meta.may_use, st.meta.global_rsv + ns);
        assert_eq!(st.meta.done.get(&9), Some(&true));
    }
}
