//! Scrub of one device, `fs/btrfs/scrub.c@v5.15.16` (with the readahead framework) and
//! `@v5.17-rc5` (without it), seed 002.
//!
//! - `scrub_enumerate_chunks`: the device's dev extents in physical order; each goes through
//!   `scrub_chunk` → `scrub_stripe`; after each, submit the open bio and wait for
//!   `bios_in_flight == 0` (both versions).
//! - `scrub_stripe@v5.15.16`: first wait for no bio in flight, then `btrfs_reada_add` of the
//!   extent tree range and (data chunks) the csum tree range and `btrfs_reada_wait`
//!   (`reada::MetaIo::reada_framework`). `@v5.17-rc5`: `path->reada = READA_FORWARD` on the
//!   extent path instead (`reada::MetaIo::read_path`).
//! - The loop: per 64 KiB step (`map->stripe_len`, one-device RAID0 / single:
//!   increment = 64 KiB) `btrfs_search_slot(extent_root)` for the step's start, walk the extent
//!   items overlapping the step (`btrfs_next_leaf` at a leaf's end), trim each to the step;
//!   data: `btrfs_lookup_csums_range(csum_root)` (READA_FORWARD in both versions); then
//!   `scrub_extent` → `scrub_pages` → `scrub_add_page_to_rd_bio`: pages join the open bio while
//!   physically contiguous and below `SCRUB_PAGES_PER_RD_BIO` (32 pages, 128 KiB); starting a
//!   bio waits for one of `SCRUB_BIOS_PER_SCTX` (64) to be free.
//! - Not modelled: CPU of checksum verification (worker threads, off the submit path), the
//!   transaction-commit pause (the filesystem is idle), `btrfs_inc_block_group_ro` per chunk,
//!   the system chunk (16 MiB), the bandwidth limit, block-layer merging of adjacent bios.

use super::layout::{ChunkKind, Extent, Layout, LayoutParams, Tree};
use super::reada::{MetaIo, MetaStats};
use crate::block::DiskConfig;
use crate::device::hdd::HddStats;
use crate::device::{Device, Request};
use sim::{Handle, Nanos, RngStreams, Semaphore, Sim, WaitQueue};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// `map->stripe_len`: the step of `scrub_stripe`'s loop.
pub const STRIPE_LEN: u64 = 64 * 1024;
/// `SCRUB_PAGES_PER_RD_BIO` × 4 KiB.
pub const MAX_BIO: u64 = 32 * 4096;
/// `SCRUB_BIOS_PER_SCTX`.
pub const BIOS_PER_SCTX: u64 = 64;
/// CPU of one cached `btrfs_search_slot` plus the step's bookkeeping, ns (guess).
pub const SEARCH_CPU_NS: Nanos = 1_000;
/// CPU per extent item handled (`scrub_extent`, page allocation of a small extent), ns
/// (guess).
pub const EXTENT_CPU_NS: Nanos = 2_000;

/// How scrub reads the extent and csum trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScrubPolicy {
    /// v5.16 and before: `btrfs_reada_add` of the chunk's ranges, data drained, ≤6 in flight.
    ReadaFramework,
    /// v5.17: synchronous leaf reads with `reada_for_search`'s ±64 KiB siblings.
    PathReada,
    /// Neither: every leaf miss is one synchronous read (a lower bound for both).
    None,
}

impl ScrubPolicy {
    /// Names accepted by `--policy`.
    pub const NAMES: [&'static str; 3] = ["reada", "path-reada", "none"];
    /// All, in the order of `NAMES`.
    pub const ALL: [ScrubPolicy; 3] = [
        ScrubPolicy::ReadaFramework,
        ScrubPolicy::PathReada,
        ScrubPolicy::None,
    ];

    /// Parses a `--policy` value.
    pub fn parse(s: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|n| *n == s)
            .map(|i| Self::ALL[i])
    }

    /// The name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The kernel it stands for.
    pub fn kernel(self) -> &'static str {
        match self {
            ScrubPolicy::ReadaFramework => "v5.16 (reada.c)",
            ScrubPolicy::PathReada => "v5.17 (path reada)",
            ScrubPolicy::None => "no readahead",
        }
    }
}

/// Parameters of one scrub.
#[derive(Clone, Debug)]
pub struct ScrubParams {
    /// The filesystem.
    pub layout: LayoutParams,
    /// Readahead policy.
    pub policy: ScrubPolicy,
    /// The device.
    pub device: DiskConfig,
    /// Seed (the layout and any device draws).
    pub seed: u64,
}

/// What one scrub produced (btrfs-progs `scrub status` fields and the model's counters).
#[derive(Clone, Debug)]
pub struct ScrubResult {
    /// Policy.
    pub policy: ScrubPolicy,
    /// Device name.
    pub device: String,
    /// Seed.
    pub seed: u64,
    /// Virtual duration, ns.
    pub duration: Nanos,
    /// Bytes read by scrub bios (data and tree blocks, every copy).
    pub bytes_scrubbed: u64,
    /// Of which data.
    pub data_bytes: u64,
    /// Dev extent bytes ("Total to scrub").
    pub total_to_scrub: u64,
    /// Data extents in the filesystem.
    pub data_extents: u64,
    /// Tree blocks in the filesystem (one copy).
    pub tree_blocks: u64,
    /// Leaves of the extent and csum trees.
    pub extent_leaves: u64,
    /// Leaves of the csum tree.
    pub csum_leaves: u64,
    /// Scrub bios submitted.
    pub bios: u64,
    /// Metadata read counters.
    pub meta: MetaStats,
    /// HDD mechanics counters.
    pub hdd: Option<HddStats>,
    /// Physical ranges read by scrub bios, in submission order (for checks).
    pub reads: Vec<(u64, u64)>,
}

impl ScrubResult {
    /// Rate over the exact duration, MiB/s.
    pub fn rate_mib_s(&self) -> f64 {
        self.bytes_scrubbed as f64 / (1 << 20) as f64 / (self.duration as f64 / 1e9)
    }
    /// Whole seconds, as btrfs-progs prints the duration.
    pub fn whole_seconds(&self) -> u64 {
        self.duration / sim::S
    }
    /// btrfs-progs' rate: bytes scrubbed over whole seconds, MiB/s.
    pub fn progs_rate_mib_s(&self) -> f64 {
        self.bytes_scrubbed as f64 / (1 << 20) as f64 / self.whole_seconds().max(1) as f64
    }
}

struct Bios {
    h: Handle,
    dev: Device,
    slots: Semaphore,
    drained: WaitQueue,
    open: Cell<Option<(u64, u64)>>,
    bytes: Cell<u64>,
    count: Cell<u64>,
    reads: RefCell<Vec<(u64, u64)>>,
}

impl Bios {
    /// `scrub_add_page_to_rd_bio` for a physically contiguous run of pages.
    async fn add(self: &Rc<Self>, mut phys: u64, mut len: u64) {
        while len > 0 {
            match self.open.get() {
                Some((s, l)) if s + l == phys && l < MAX_BIO => {
                    let take = len.min(MAX_BIO - l);
                    self.open.set(Some((s, l + take)));
                    phys += take;
                    len -= take;
                    if l + take == MAX_BIO {
                        self.submit();
                    }
                }
                _ => {
                    self.submit();
                    // A new bio needs a free one of the 64 (`wait_event(list_wait,
                    // first_free != -1)`).
                    self.slots.acquire().await.forget();
                    let take = len.min(MAX_BIO);
                    self.open.set(Some((phys, take)));
                    phys += take;
                    len -= take;
                    if take == MAX_BIO {
                        self.submit();
                    }
                }
            }
        }
    }

    /// `scrub_submit`: sends the open bio.
    fn submit(self: &Rc<Self>) {
        let Some((phys, len)) = self.open.take() else {
            return;
        };
        self.count.set(self.count.get() + 1);
        self.reads.borrow_mut().push((phys, len));
        let me = self.clone();
        self.h.spawn("scrub.bio", async move {
            me.dev.submit(Request::read(phys, len)).await;
            me.bytes.set(me.bytes.get() + len);
            me.slots.release();
            me.drained.notify_all();
        });
    }

    /// Submits the open bio and waits for `bios_in_flight == 0`.
    async fn drain(self: &Rc<Self>) {
        self.submit();
        while self.slots.available() < BIOS_PER_SCTX {
            self.drained.wait().await;
        }
    }
}

/// Extents of `list` (ascending) that overlap `[lo, hi)`.
fn overlapping(list: &[Extent], lo: u64, hi: u64) -> &[Extent] {
    let a = list.partition_point(|e| e.logical + e.len <= lo);
    let b = list.partition_point(|e| e.logical < hi);
    &list[a..b.max(a)]
}

async fn scrub_dev(layout: Rc<Layout>, meta: MetaIo, bios: Rc<Bios>, policy: ScrubPolicy) {
    let h = bios.h.clone();
    let path_reada = policy == ScrubPolicy::PathReada;
    let tree_ext = layout.tree_extents();
    for chunk in &layout.chunks {
        let (lo, hi) = (chunk.logical, chunk.logical + chunk.len);
        let extents: &[Extent] = match chunk.kind {
            ChunkKind::Data => overlapping(&layout.data, lo, hi),
            ChunkKind::Metadata => overlapping(&tree_ext, lo, hi),
        };
        for &stripe in &chunk.stripes {
            if policy == ScrubPolicy::ReadaFramework {
                bios.drain().await;
                let mut ranges = vec![(Tree::Extent, lo, hi)];
                if chunk.kind == ChunkKind::Data {
                    ranges.push((Tree::Csum, lo, hi));
                }
                meta.reada_framework(&ranges).await;
            }
            let mut next = 0usize; // first extent not yet finished
            let mut cur_leaf;
            let mut step = lo;
            while step < hi {
                let end = step + STRIPE_LEN;
                h.cpu(SEARCH_CPU_NS).await;
                let leaf = meta.search(Tree::Extent, step, path_reada).await;
                cur_leaf = leaf;
                let mut i = next;
                while i < extents.len() && extents[i].logical < end {
                    let e = extents[i];
                    let item_leaf = layout.leaf_for(Tree::Extent, e.logical);
                    if item_leaf != cur_leaf {
                        // btrfs_next_leaf
                        meta.read_path(item_leaf, path_reada).await;
                        cur_leaf = item_leaf;
                    }
                    let (a, b) = (e.logical.max(step), (e.logical + e.len).min(end));
                    if b > a {
                        h.cpu(EXTENT_CPU_NS).await;
                        if chunk.kind == ChunkKind::Data {
                            let first = layout.leaf_for(Tree::Csum, a);
                            meta.read_path(first, path_reada).await;
                            let last = layout.leaf_for(Tree::Csum, b - 1);
                            if last != first {
                                let (ia, ib) = (layout.leaf_index(first), layout.leaf_index(last));
                                for k in ia + 1..=ib {
                                    let l = layout.leaves[Tree::Csum as usize][k];
                                    meta.read_path(l, path_reada).await;
                                }
                            }
                        }
                        bios.add(a - lo + stripe, b - a).await;
                    }
                    if e.logical + e.len <= end {
                        next = i + 1;
                    }
                    i += 1;
                }
                step = end;
                // Skip steps with nothing left in the chunk quickly, but still pay their
                // searches (the kernel searches every step up to the chunk's end).
                if next >= extents.len() && step < hi {
                    let steps = (hi - step) / STRIPE_LEN;
                    h.cpu(steps * SEARCH_CPU_NS).await;
                    break;
                }
            }
            bios.drain().await;
        }
    }
}

/// Runs one scrub.
pub fn run(p: &ScrubParams) -> Result<ScrubResult, String> {
    let mut streams = RngStreams::new(p.seed);
    let mut lrng = streams.stream("scrub.layout");
    let layout = Rc::new(Layout::build(&p.layout, &mut lrng));
    let mut sim = Sim::new();
    let dev = crate::block::add_disk(&mut sim, p.device.clone(), &mut streams, false);
    let h = sim.handle();
    let meta = MetaIo::new(&h, dev.clone(), layout.clone());
    let bios = Rc::new(Bios {
        h: h.clone(),
        dev: dev.clone(),
        slots: Semaphore::new(&h, "scrub:bios", BIOS_PER_SCTX),
        drained: WaitQueue::new(&h, "scrub:bios_in_flight"),
        open: Cell::new(None),
        bytes: Cell::new(0),
        count: Cell::new(0),
        reads: RefCell::new(Vec::new()),
    });
    let done = Rc::new(Cell::new(0));
    {
        let (layout, meta, bios, done, policy) = (
            layout.clone(),
            meta.clone(),
            bios.clone(),
            done.clone(),
            p.policy,
        );
        let h2 = h.clone();
        sim.spawn("scrub.dev0", async move {
            scrub_dev(layout, meta, bios, policy).await;
            done.set(h2.now());
        });
    }
    sim.run().map_err(|e| e.to_string())?;
    let data_bytes = layout.data.iter().map(|e| e.len).sum();
    let reads = bios.reads.borrow().clone();
    Ok(ScrubResult {
        policy: p.policy,
        device: p.device.name.clone(),
        seed: p.seed,
        duration: done.get(),
        bytes_scrubbed: bios.bytes.get(),
        data_bytes,
        total_to_scrub: layout.total_to_scrub(),
        data_extents: layout.data.len() as u64,
        tree_blocks: layout.blocks.len() as u64,
        extent_leaves: layout.leaves[Tree::Extent as usize].len() as u64,
        csum_leaves: layout.leaves[Tree::Csum as usize].len() as u64,
        bios: bios.count.get(),
        meta: meta.stats(),
        hdd: dev.hdd_stats(),
        reads,
    })
}

/// Seed 002's figures (shared/seeds/002, Qu Wenruo 2021-12-09, 8 runs each).
pub mod seed002 {
    /// Mean rate with the readahead framework, MiB/s.
    pub const RATE_BEFORE: f64 = 106.46;
    /// Mean rate without it, MiB/s.
    pub const RATE_AFTER: f64 = 100.74;
    /// Mean duration with it, s (2:26 2:25 2:25 2:26 2:25 2:25 2:26 2:25).
    pub const DURATION_BEFORE: f64 = 145.375;
    /// Mean duration without it, s (2:34 2:33 2:34 2:33 2:33 2:34 2:34 2:34).
    pub const DURATION_AFTER: f64 = 153.625;
    /// Bytes scrubbed (rate × duration in every run), MiB.
    pub const BYTES_MIB: f64 = 15_476.0;
}

/// Runs both policies of seed 002 (framework, then path readahead) on the same layout.
pub fn compare(
    layout: &LayoutParams,
    device: &DiskConfig,
    seed: u64,
    policies: &[ScrubPolicy],
) -> Result<Vec<ScrubResult>, String> {
    policies
        .iter()
        .map(|&policy| {
            run(&ScrubParams {
                layout: layout.clone(),
                policy,
                device: device.clone(),
                seed,
            })
        })
        .collect()
}
