//! A fio-like synthetic load against one device: `numjobs` jobs, each keeping `iodepth`
//! requests in flight (one simulated submitter per slot, as libaio refills on completion),
//! sequential or random offsets in the job's own `size`-byte region, optional cache flush
//! every `fsync` writes (per job, like fio's `fsync=N`), for `runtime` of virtual time.

use super::exact::Exact;
use crate::block::DiskConfig;
use crate::device::{new_histogram, Device, DeviceStats, IoDone, Request};
use hdrhistogram::Histogram;
use rand::Rng;
use sim::{Nanos, RngStreams, Sim, SimError, Stream};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// fio's `rw=` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Random mixed reads and writes (`rwmixread` % reads).
    RandRw,
}

impl RwMode {
    /// Names accepted by `--rw`.
    pub const NAMES: [&'static str; 5] = ["read", "write", "randread", "randwrite", "randrw"];

    /// Parses a `--rw` value.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "randrw" => RwMode::RandRw,
            _ => return None,
        })
    }

    /// The fio name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    fn random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw)
    }
}

/// Parameters of a fio run.
#[derive(Clone, Debug)]
pub struct FioParams {
    /// Access pattern.
    pub rw: RwMode,
    /// Block size, bytes.
    pub bs: u64,
    /// Requests in flight per job.
    pub iodepth: u32,
    /// Jobs.
    pub numjobs: u32,
    /// Flush the device cache every this many writes per job (0: never).
    pub fsync: u32,
    /// Virtual run time.
    pub runtime: Nanos,
    /// Bytes each job addresses.
    pub size: u64,
    /// Percentage of reads for `randrw`.
    pub rwmixread: u32,
    /// Run seed.
    pub seed: u64,
}

impl Default for FioParams {
    fn default() -> Self {
        FioParams {
            rw: RwMode::RandRead,
            bs: 4096,
            iodepth: 1,
            numjobs: 1,
            fsync: 0,
            runtime: sim::S,
            size: 1 << 30,
            rwmixread: 50,
            seed: 1,
        }
    }
}

/// fio's `bw_avg_time` and `iops_avg_time` default: bandwidth and IOPS are sampled per job
/// over windows of this length.
pub const AVG_TIME: Nanos = 500 * sim::MS;

/// Latency statistics of one direction (read, write, or sync = flushes).
#[derive(Clone, Debug)]
pub struct DirStats {
    /// Completed requests.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Submission latency (waiting for a tag), ns.
    pub slat: Histogram<u64>,
    /// Completion latency (issue to completion), ns.
    pub clat: Histogram<u64>,
    /// Total latency, ns.
    pub lat: Histogram<u64>,
    /// `slat`'s exact statistics (the histogram rounds to its buckets).
    pub slat_exact: Exact,
    /// `clat`'s exact statistics.
    pub clat_exact: Exact,
    /// `lat`'s exact statistics.
    pub lat_exact: Exact,
    /// Per job, per [`AVG_TIME`] window of completion time that saw a completion (window
    /// index → (requests, bytes)); sparse, so a request that completes far in virtual time
    /// costs one entry.
    pub windows: Vec<std::collections::BTreeMap<u64, (u64, u64)>>,
}

impl DirStats {
    fn new() -> Self {
        DirStats {
            ios: 0,
            bytes: 0,
            slat: new_histogram(),
            clat: new_histogram(),
            lat: new_histogram(),
            slat_exact: Exact::default(),
            clat_exact: Exact::default(),
            lat_exact: Exact::default(),
            windows: Vec::new(),
        }
    }

    fn record(&mut self, d: &IoDone, bytes: u64, job: usize, now: Nanos) {
        self.ios += 1;
        self.bytes += bytes;
        self.slat.saturating_record(d.host_wait());
        self.clat.saturating_record(d.clat());
        self.lat.saturating_record(d.latency());
        self.slat_exact.record(d.host_wait());
        self.clat_exact.record(d.clat());
        self.lat_exact.record(d.latency());
        if self.windows.len() <= job {
            self.windows.resize(job + 1, Default::default());
        }
        let w = self.windows[job].entry(now / AVG_TIME).or_default();
        w.0 += 1;
        w.1 = w.1.saturating_add(bytes);
    }
}

/// What a fio run produced.
#[derive(Clone, Debug)]
pub struct FioResult {
    /// The parameters.
    pub params: FioParams,
    /// The device's name.
    pub device: String,
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Flushes issued by `fsync=N`.
    pub sync: DirStats,
    /// Virtual time from start to the last completion.
    pub elapsed: Nanos,
    /// Device counters.
    pub device_stats: DeviceStats,
    /// The request queue's and elevator's counters (None with `scheduler = "none"`).
    pub block_stats: Option<crate::block::BlockStats>,
    /// Hash of the run's event sequence.
    pub trace_hash: u64,
    /// Virtual time during which at least one request was in flight (fio's disk `util`).
    pub busy: Nanos,
}

struct Totals {
    in_flight: u64,
    busy_since: Nanos,
    busy: Nanos,
    read: DirStats,
    write: DirStats,
    sync: DirStats,
}

struct Job {
    index: usize,
    base: u64,
    cursor: Cell<u64>,
    writes: Cell<u64>,
}

/// A request goes out: the device is busy from now if it was idle.
fn busy_start(h: &sim::Handle, totals: &RefCell<Totals>) {
    let mut t = totals.borrow_mut();
    if t.in_flight == 0 {
        t.busy_since = h.now();
    }
    t.in_flight += 1;
}

/// A request came back: the busy time ends when none is left in flight.
fn busy_end(h: &sim::Handle, totals: &RefCell<Totals>) {
    let mut t = totals.borrow_mut();
    t.in_flight -= 1;
    if t.in_flight == 0 {
        t.busy += h.now() - t.busy_since;
    }
}

async fn worker(
    h: sim::Handle,
    dev: Device,
    p: Rc<FioParams>,
    job: Rc<Job>,
    totals: Rc<RefCell<Totals>>,
    mut rng: Stream,
) {
    let blocks = (p.size / p.bs).max(1);
    while h.now() < p.runtime {
        let is_read = match p.rw {
            RwMode::Read | RwMode::RandRead => true,
            RwMode::Write | RwMode::RandWrite => false,
            RwMode::RandRw => rng.random_range(0..100) < p.rwmixread,
        };
        let block = if p.rw.random() {
            rng.random_range(0..blocks)
        } else {
            let b = job.cursor.get();
            job.cursor.set((b + 1) % blocks);
            b
        };
        let offset = job.base + block * p.bs;
        let req = if is_read {
            Request::read(offset, p.bs)
        } else {
            Request::write(offset, p.bs)
        };
        busy_start(&h, &totals);
        let done = dev.submit(req).await;
        busy_end(&h, &totals);
        {
            let mut t = totals.borrow_mut();
            if is_read {
                t.read.record(&done, p.bs, job.index, h.now());
            } else {
                t.write.record(&done, p.bs, job.index, h.now());
            }
        }
        if !is_read && p.fsync > 0 {
            let n = job.writes.get() + 1;
            job.writes.set(n);
            if n % u64::from(p.fsync) == 0 {
                busy_start(&h, &totals);
                let done = dev.submit(Request::flush()).await;
                busy_end(&h, &totals);
                totals
                    .borrow_mut()
                    .sync
                    .record(&done, 0, job.index, h.now());
            }
        }
    }
}

/// Runs the load on a device built from `cfg`.
pub fn run(p: &FioParams, cfg: impl Into<DiskConfig>) -> Result<FioResult, SimError> {
    let cfg = cfg.into();
    let mut sim = Sim::new();
    let h = sim.handle();
    let mut streams = RngStreams::new(p.seed);
    let device = cfg.name.clone();
    let dev = crate::block::add_disk(&mut sim, cfg, &mut streams, false);
    let totals = Rc::new(RefCell::new(Totals {
        in_flight: 0,
        busy_since: 0,
        busy: 0,
        read: DirStats::new(),
        write: DirStats::new(),
        sync: DirStats::new(),
    }));
    let params = Rc::new(p.clone());
    for j in 0..p.numjobs {
        let job = Rc::new(Job {
            index: j as usize,
            base: u64::from(j) * p.size,
            cursor: Cell::new(0),
            writes: Cell::new(0),
        });
        for w in 0..p.iodepth {
            let rng = streams.stream(&format!("fio.job{j}.slot{w}"));
            sim.spawn(
                &format!("job{j}.slot{w}"),
                worker(
                    h.clone(),
                    dev.clone(),
                    params.clone(),
                    job.clone(),
                    totals.clone(),
                    rng,
                ),
            );
        }
    }
    let summary = sim.run()?;
    let device_stats = dev.stats();
    let block_stats = crate::block::genhd::stats(&dev);
    drop(sim);
    let t = Rc::try_unwrap(totals)
        .ok()
        .expect("tasks dropped with the simulation")
        .into_inner();
    Ok(FioResult {
        params: p.clone(),
        device,
        read: t.read,
        write: t.write,
        sync: t.sync,
        elapsed: summary.end,
        device_stats,
        block_stats,
        trace_hash: summary.trace_hash,
        busy: t.busy,
    })
}
