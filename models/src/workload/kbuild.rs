//! kbuild with ccache (seed 003, J1.7): `make -j` jobs, each taking the next compilation
//! unit and running it through ccache whose cache lives on the modelled filesystem (the
//! seed's ext3 root, /dev/sda1). The kernel tree and its objects are on another disk on
//! another controller (#7) and are not modelled: reading sources and writing the object into
//! the build tree cost CPU only.
//!
//! Per unit, as ccache 3.x does it (ccache.c: calculate_result_and_manifest_hash,
//! from_cache, to_cache, manifest_put; stats.c: stats_update_size):
//! - `preprocess`: hash the source and its headers (direct mode), CPU only;
//! - a hit: `lookup` reads the manifest, `fetch` reads the cached object (then copies it into
//!   the build tree: CPU); an entry already in the page cache costs CPU only (`page_cache`);
//! - a miss: `compile` runs cc1 (CPU), `store` writes the object to a temporary file and
//!   renames it into the cache, `manifest` does the same for the manifest;
//! - `stats`: the cache directory's stats file is rewritten (temporary file + rename).
//!
//! kbuild calls no fsync (#32): what reaches the disk is what the journal's commits and the
//! flusher write, and the reads of cold cache entries.

use super::fsload::{op_index, Ctx};
use super::spec::{Kind, Spec};
use crate::vfs::Op;
use rand::Rng;
use rand_distr::{Distribution, Exp1};
use sim::{Nanos, RngStreams};
use std::cell::Cell;

/// Operation kinds a kbuild run reports, in report order.
pub const OPS: [&str; 7] = [
    "preprocess",
    "lookup",
    "fetch",
    "compile",
    "store",
    "manifest",
    "stats",
];

/// ccache 3.x's cache_dir_levels default: two levels of one hex digit (16 × 16 directories).
const FANOUT: u64 = 16;

/// Bytes of a ccache stats file: its counters as decimal text, one per line (stats.c:
/// write_stats@ccache-3.1; about 20 counters). A guess within the one block it occupies.
const STATS_BYTES: u64 = 128;

/// One compilation unit: whether ccache has it, whether its entry is in the page cache, and
/// what compiling it costs.
struct Unit {
    hit: bool,
    resident: bool,
    compile: Nanos,
}

/// The build both sides of a comparison share: units drawn from the seed, not the policy.
pub(crate) struct Build {
    units: Vec<Unit>,
    /// Units started so far over all passes (the next unit is `next % units`).
    next: Cell<u64>,
    /// The order the cache entries were laid out in (`setup_ops`).
    layout: Vec<usize>,
}

impl Build {
    /// Draws the units from the `workload.kbuild.units` stream of `streams`: a hit with
    /// probability `hit_ratio`, its entry in the page cache with probability `page_cache`, a
    /// compile time exponential around the `[cpu] compile` mean.
    pub(crate) fn new(spec: &Spec, streams: &mut RngStreams) -> Build {
        let mut rng = streams.stream("workload.kbuild.units");
        let mean = spec.cpu_of("compile") as f64;
        let units: Vec<Unit> = (0..spec.units)
            .map(|_| {
                let hit = rng.random::<f64>() < spec.hit_ratio;
                let resident = rng.random::<f64>() < spec.page_cache;
                let x: f64 = Exp1.sample(&mut rng);
                Unit {
                    hit,
                    resident,
                    compile: (x * mean) as Nanos,
                }
            })
            .collect();
        // Entries in different hash directories sit in different block groups (ext3's Orlov
        // allocator spreads directories: fs/ext3/ialloc.c:find_group_orlov@v2.6.37); the
        // model allocates in order, so it lays the entries out in a random order instead.
        let mut layout: Vec<usize> = (0..units.len()).collect();
        for i in (1..layout.len()).rev() {
            let j = rng.random_range(0..=i);
            layout.swap(i, j);
        }
        Build {
            units,
            next: Cell::new(0),
            layout,
        }
    }
}

/// The hash directory of unit `k`.
fn dir(k: usize) -> String {
    let k = k as u64;
    format!("/ccache/{:x}/{:x}", k % FANOUT, (k / FANOUT) % FANOUT)
}

/// The stats file of unit `k`'s top-level directory.
fn stats(k: usize) -> String {
    format!("/ccache/{:x}/stats", k as u64 % FANOUT)
}

/// The cache before the build: the hash directories, their stats files and the entries of
/// the units that hit, on disk and not cached (the seed dropped no caches it says; a kbuild
/// of a tree bigger than what stays cached reads its entries from disk).
pub(crate) fn setup_ops(spec: &Spec, build: &Build) -> Vec<Op> {
    let mut ops = vec![Op::Mkdir("/ccache".into())];
    for a in 0..FANOUT {
        ops.push(Op::Mkdir(format!("/ccache/{a:x}").into()));
        ops.push(Op::Populate(
            format!("/ccache/{a:x}/stats").into(),
            STATS_BYTES,
        ));
        for b in 0..FANOUT {
            ops.push(Op::Mkdir(format!("/ccache/{a:x}/{b:x}").into()));
        }
    }
    for &k in &build.layout {
        if build.units[k].hit {
            let d = dir(k);
            ops.push(Op::Populate(
                format!("{d}/u{k}.manifest").into(),
                spec.manifest_size,
            ));
            ops.push(Op::Populate(format!("{d}/u{k}.o").into(), spec.object_size));
        }
    }
    ops
}

/// Writes `bytes` to a temporary file and renames it over `to` (ccache's tmp + rename).
async fn replace(cx: &Ctx, to: String, bytes: u64, job: u32) -> Result<(), String> {
    let tmp: crate::vfs::OpPath = format!("{to}.tmp.{job}").into();
    cx.fs(Op::Create(tmp.clone())).await?;
    cx.fs(Op::Write(tmp.clone(), bytes)).await?;
    cx.fs(Op::Rename(tmp, to.into())).await
}

/// One `make -j` job: compiles units until the run ends; a finished build starts over.
pub(crate) async fn job(cx: Ctx, id: u32, build: std::rc::Rc<Build>) {
    let k = Kind::Kbuild;
    let [pre, look, fetch, comp, store, man, st] = OPS.map(|o| op_index(k, o));
    let mut before = Vec::new();
    let n = build.units.len() as u64;
    loop {
        let u = build.next.get();
        build.next.set(u + 1);
        let unit = (u % n) as usize;
        let d = dir(unit);
        let (manifest, object) = (format!("{d}/u{unit}.manifest"), format!("{d}/u{unit}.o"));
        let spec = &cx.spec;
        let mut ok = cx.measure(pre, 0, &mut before, cx.cpu("preprocess")).await;
        if build.units[unit].hit && build.units[unit].resident {
            // In the page cache: copying it out is CPU time only.
            ok = ok
                && cx
                    .measure(look, spec.manifest_size, &mut before, cx.cpu("copy"))
                    .await
                && cx
                    .measure(fetch, spec.object_size, &mut before, async {
                        cx.cpu("copy").await?;
                        cx.cpu("copy").await
                    })
                    .await;
        } else if build.units[unit].hit {
            ok = ok
                && cx
                    .measure(
                        look,
                        spec.manifest_size,
                        &mut before,
                        cx.fs(Op::Read(manifest.into(), spec.manifest_size)),
                    )
                    .await
                && cx
                    .measure(fetch, spec.object_size, &mut before, async {
                        cx.fs(Op::Read(object.into(), spec.object_size)).await?;
                        cx.cpu("copy").await
                    })
                    .await;
        } else {
            let compile = build.units[unit].compile;
            ok = ok
                && cx
                    .measure(comp, 0, &mut before, async {
                        cx.h.cpu(compile).await;
                        cx.cpu("copy").await
                    })
                    .await
                && cx
                    .measure(
                        store,
                        spec.object_size,
                        &mut before,
                        replace(&cx, object, spec.object_size, id),
                    )
                    .await
                && cx
                    .measure(
                        man,
                        spec.manifest_size,
                        &mut before,
                        replace(&cx, manifest, spec.manifest_size, id),
                    )
                    .await;
        }
        ok = ok
            && cx
                .measure(
                    st,
                    0,
                    &mut before,
                    replace(&cx, stats(unit), STATS_BYTES, id),
                )
                .await;
        if !ok {
            return;
        }
        cx.unit_done();
    }
}

/// Seed 003's kbuild figures: units/s change (%) from 2.6.36 to 2.6.37 (#0: "drop about
/// 15%"; #14: "The original drop is 30%") and from 2.6.37 to Jan Kara's RFC on ext3 (#12:
/// "It increase 10%", #34: "about 3%"), as (what, policies, change %).
pub const SEED_CHANGES: [(&str, &str, &str, f64); 4] = [
    ("#0", "linux-2.6.36", "linux-2.6.37", -15.0),
    ("#14", "linux-2.6.36", "linux-2.6.37", -30.0),
    ("#12", "linux-2.6.37", "jan-rfc", 10.0),
    ("#34", "linux-2.6.37", "jan-rfc", 3.0),
];

/// Seed 003's `iostat -x` of the kbuild runs (#34; the device is unnamed), in
/// `block::iostat::COLUMNS` order, per kernel: 2.6.37, 2.6.37 with the WRITE_SYNC commit
/// reverted (2.6.36's behaviour), and 2.6.37 with Jan Kara's patches.
pub const SEED_IOSTAT: [(&str, &str, [f64; 11]); 3] = [
    (
        "2.6.37",
        "linux-2.6.37",
        [
            22.5772, 96.46, 92.3742, 14.747, 1.0048, 0.439474, 34.8557, 0.18078, 3.8076, 0.30447,
            2.94302,
        ],
    ),
    (
        "reverted",
        "linux-2.6.36",
        [
            26.6223, 80.21, 107.875, 6.03538, 1.51415, 0.0, 41.3275, 0.153385, 3.80569, 0.377231,
            3.22323,
        ],
    ),
    (
        "Jan",
        "jan-rfc",
        [
            23.419726, 87.450685, 96.164521, 6.748493, 1.046438, 0.370137, 45.182192, 0.200685,
            6.848767, 0.394110, 3.072192,
        ],
    ),
];
