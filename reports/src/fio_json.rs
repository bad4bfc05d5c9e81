//! fio 3.x's JSON output (`--output-format=json` and `json+`) as typed structs, field for
//! field as fio's stat.c writes them (`show_thread_status_json`, `add_ddir_status_json`,
//! `add_ddir_lat_json`, `json_array_add_disk_util`), and their construction from fsyncsim's
//! results: `fsyncsim fio --json` / `--json-plus` is one such document; `workload --json`
//! and compare's results carry a `jobs` array of [`Job`]s.
//!
//! Determinism: the timestamps are those of virtual time 0 (the Unix epoch), never the wall
//! clock, and every map is ordered (fio's order where fio has one, else sorted).

use crate::latency::FIO_PERCENTILES;
use hdrhistogram::Histogram;
use models::workload::exact::{Exact, LAT_BUCKETS};
use models::workload::fio::{DirStats, FioResult, AVG_TIME};
use models::workload::fsload::{OpResult, WorkloadResult};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::collections::BTreeMap;

/// A JSON object whose keys keep the order they were pushed in (fio's percentile and
/// bucket order is not alphabetical).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `"fio version"`: what fsyncsim writes there.
pub const FIO_VERSION: &str = concat!("fsyncsim-", env!("CARGO_PKG_VERSION"));

/// The whole document (`fio --output-format=json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FioOutput {
    /// fio's version string (here fsyncsim's).
    #[serde(rename = "fio version")]
    pub fio_version: String,
    /// Seconds since the epoch when the report was written: virtual time 0.
    pub timestamp: u64,
    /// The same in ms.
    pub timestamp_ms: u64,
    /// The same as ctime(3) prints it.
    pub time: String,
    /// The `[global]` section's options.
    #[serde(rename = "global options")]
    pub global_options: BTreeMap<String, String>,
    /// One entry per job (one per job group with group_reporting).
    pub jobs: Vec<Job>,
    /// Per disk the run used.
    pub disk_util: Vec<DiskUtil>,
}

/// ctime(3) of the epoch, the `time` of every document.
pub const EPOCH_CTIME: &str = "Thu Jan  1 00:00:00 1970";

impl FioOutput {
    /// A document at virtual time 0 with these jobs and disks.
    pub fn new(name: &str, jobs: Vec<Job>, disk_util: Vec<DiskUtil>) -> FioOutput {
        FioOutput {
            fio_version: FIO_VERSION.to_string(),
            timestamp: 0,
            timestamp_ms: 0,
            time: EPOCH_CTIME.to_string(),
            global_options: BTreeMap::from([("name".to_string(), name.to_string())]),
            jobs,
            disk_util,
        }
    }
}

/// One job's results (`show_thread_status_json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Job {
    /// `name=`.
    pub jobname: String,
    /// Reporting group.
    pub groupid: u32,
    /// When the job started, ms after the run started.
    pub job_start: u64,
    /// errno of the first error (0: none).
    pub error: i32,
    /// Seconds left (0: done).
    pub eta: u64,
    /// Seconds the run took.
    pub elapsed: u64,
    /// The job's options as given.
    #[serde(rename = "job options")]
    pub job_options: BTreeMap<String, String>,
    /// Reads.
    pub read: Dir,
    /// Writes.
    pub write: Dir,
    /// Trims (fsyncsim issues none).
    pub trim: Dir,
    /// fsync/fdatasync (`fsync=N`), here cache flushes or the workload's fsyncs.
    pub sync: SyncDir,
    /// Run time summed over the job's threads, ms.
    pub job_runtime: u64,
    /// User CPU, % of job_runtime.
    pub usr_cpu: f64,
    /// System CPU, % of job_runtime.
    pub sys_cpu: f64,
    /// Context switches.
    pub ctx: u64,
    /// Major faults.
    pub majf: u64,
    /// Minor faults.
    pub minf: u64,
    /// % of I/Os issued at each queue depth (1, 2, 4, … , >=64).
    pub iodepth_level: Ordered<f64>,
    /// % of submit calls by how many I/Os each carried (0, 4, 8, … , >=64).
    pub iodepth_submit: Ordered<f64>,
    /// % of completion reaps by how many I/Os each returned.
    pub iodepth_complete: Ordered<f64>,
    /// % of I/Os whose completion latency fell in each ns range.
    pub latency_ns: Ordered<f64>,
    /// The same for µs ranges.
    pub latency_us: Ordered<f64>,
    /// The same for ms ranges.
    pub latency_ms: Ordered<f64>,
    /// Queue depth the latency target allowed (the iodepth without one).
    pub latency_depth: u32,
    /// latency_target, ns (0: none).
    pub latency_target: u64,
    /// latency_percentile.
    pub latency_percentile: f64,
    /// latency_window, µs.
    pub latency_window: u64,
}

/// One direction (`add_ddir_status_json` for read, write, trim).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Dir {
    /// Bytes moved.
    pub io_bytes: u64,
    /// The same in KiB.
    pub io_kbytes: u64,
    /// Bandwidth, bytes/s (`1000 × io_bytes / runtime`).
    pub bw_bytes: u64,
    /// Bandwidth, KiB/s.
    pub bw: u64,
    /// I/Os per second.
    pub iops: f64,
    /// ms this direction ran (0 when unused).
    pub runtime: u64,
    /// I/Os completed.
    pub total_ios: u64,
    /// Short I/Os.
    pub short_ios: u64,
    /// Dropped I/Os.
    pub drop_ios: u64,
    /// Submission latency.
    pub slat_ns: Lat,
    /// Completion latency.
    pub clat_ns: Lat,
    /// Total latency.
    pub lat_ns: Lat,
    /// Smallest bandwidth sample, KiB/s.
    pub bw_min: u64,
    /// Largest bandwidth sample, KiB/s.
    pub bw_max: u64,
    /// bw_mean as % of the group's aggregate bandwidth.
    pub bw_agg: f64,
    /// Mean bandwidth sample, KiB/s.
    pub bw_mean: f64,
    /// Their standard deviation.
    pub bw_dev: f64,
    /// Bandwidth samples (one per job per 500 ms window with I/O).
    pub bw_samples: u64,
    /// Smallest IOPS sample.
    pub iops_min: u64,
    /// Largest IOPS sample.
    pub iops_max: u64,
    /// Mean IOPS sample.
    pub iops_mean: f64,
    /// Their standard deviation.
    pub iops_stddev: f64,
    /// IOPS samples.
    pub iops_samples: u64,
}

/// The sync direction: `total_ios` and `lat_ns` only.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SyncDir {
    /// Syncs completed.
    pub total_ios: u64,
    /// Their latency.
    pub lat_ns: Lat,
}

/// A latency set (`add_ddir_lat_json`): exact min/max/mean/stddev, and when it has samples
/// and fio would print them, percentiles and (json+) the histogram's bins.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Lat {
    /// Smallest sample, ns (exact).
    pub min: u64,
    /// Largest sample, ns (exact).
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Sample standard deviation, ns.
    pub stddev: f64,
    /// Samples.
    #[serde(rename = "N")]
    pub n: u64,
    /// fio's percentile list, keyed `"99.000000"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<Ordered<u64>>,
    /// json+: count per histogram bucket, keyed by the bucket's value in ns, ascending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<Ordered<u64>>,
}

/// One disk (`json_array_add_disk_util`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DiskUtil {
    /// Device name.
    pub name: String,
    /// Reads completed.
    pub read_ios: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Reads merged in the request queue.
    pub read_merges: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// ms spent on reads.
    pub read_ticks: u64,
    /// ms spent on writes.
    pub write_ticks: u64,
    /// ms requests spent in the queue and device, summed.
    pub in_queue: u64,
    /// % of the run with a request in flight.
    pub util: f64,
}

/// Builds a latency set from a histogram and its exact statistics.
pub fn lat(h: &Histogram<u64>, x: &Exact, percentiles: bool, plus: bool) -> Lat {
    let mut l = Lat {
        min: x.min(),
        max: x.max(),
        mean: x.mean(),
        stddev: x.stddev(),
        n: x.len(),
        percentile: None,
        bins: None,
    };
    if percentiles && !x.is_empty() && !h.is_empty() {
        l.percentile = Some(Ordered(
            FIO_PERCENTILES
                .iter()
                .map(|q| {
                    // The bucket's value, kept within the exact extremes.
                    let v = h.value_at_quantile(q / 100.0).clamp(x.min(), x.max());
                    (format!("{q:.6}"), v)
                })
                .collect(),
        ));
        if plus {
            l.bins = Some(Ordered(
                h.iter_recorded()
                    .map(|v| {
                        (
                            h.median_equivalent(v.value_iterated_to()).to_string(),
                            v.count_at_value(),
                        )
                    })
                    .collect(),
            ));
        }
    }
    l
}

/// `calc_lat` of a list of samples: (min, max, mean, stddev, n).
fn sample_stats(samples: &[u64]) -> (u64, u64, f64, f64, u64) {
    let mut x = Exact::default();
    for &s in samples {
        x.record(s);
    }
    (x.min(), x.max(), x.mean(), x.stddev(), x.len())
}

/// Bandwidth (KiB/s) and IOPS samples of one direction: per job, per full 500 ms window up
/// to `elapsed` that saw I/O (fio skips a window with none).
fn window_samples(d: &DirStats, elapsed: u64) -> (Vec<u64>, Vec<u64>) {
    let full = elapsed / AVG_TIME;
    let ms = u128::from(AVG_TIME / sim::MS);
    let rate = |x: u64| (u128::from(x) * 1000 / ms).min(u128::from(u64::MAX)) as u64;
    let mut bw = Vec::new();
    let mut iops = Vec::new();
    for job in &d.windows {
        for (_, &(ios, bytes)) in job.range(..full) {
            bw.push(rate(bytes) / 1024);
            iops.push(rate(ios));
        }
    }
    (bw, iops)
}

/// fio's bandwidth and IOPS over a direction's runtime: (bw_bytes, bw, iops).
fn rates(bytes: u64, ios: u64, runtime_ms: u64) -> (u64, u64, f64) {
    if runtime_ms == 0 {
        return (0, 0, 0.0);
    }
    let bw_bytes = (1000 * u128::from(bytes) / u128::from(runtime_ms)) as u64;
    (
        bw_bytes,
        bw_bytes / 1024,
        1000.0 * ios as f64 / runtime_ms as f64,
    )
}

/// One direction of `fsyncsim fio` (clat percentiles on, slat and lat off: fio's defaults).
fn fio_dir(d: &DirStats, r: &FioResult, plus: bool) -> Dir {
    let runtime = if d.ios > 0 { r.elapsed / sim::MS } else { 0 };
    let (bw_bytes, bw, iops) = rates(d.bytes, d.ios, runtime);
    let (bw_s, iops_s) = window_samples(d, r.elapsed);
    let (bw_min, bw_max, bw_mean, bw_dev, bw_n) = sample_stats(&bw_s);
    let (iops_min, iops_max, iops_mean, iops_stddev, iops_n) = sample_stats(&iops_s);
    let bw_agg = if bw_n == 0 {
        0.0
    } else if bw_bytes > 1024 {
        (bw_mean.trunc() * 100.0 / (bw_bytes as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    };
    Dir {
        io_bytes: d.bytes,
        io_kbytes: d.bytes >> 10,
        bw_bytes,
        bw,
        iops,
        runtime,
        total_ios: d.ios,
        short_ios: 0,
        drop_ios: 0,
        slat_ns: lat(&d.slat, &d.slat_exact, false, plus),
        clat_ns: lat(&d.clat, &d.clat_exact, true, plus),
        lat_ns: lat(&d.lat, &d.lat_exact, false, plus),
        bw_min,
        bw_max,
        bw_agg,
        bw_mean,
        bw_dev,
        bw_samples: bw_n,
        iops_min,
        iops_max,
        iops_mean,
        iops_stddev,
        iops_samples: iops_n,
    }
}

/// fio's 7 `iodepth_level` buckets with 100 % at the one holding `depth` (a slot refills on
/// every completion, so the depth stays at `iodepth`).
fn iodepth_level(depth: u32, any: bool) -> Ordered<f64> {
    let idx = if depth >= 64 {
        6
    } else {
        31 - depth.max(1).leading_zeros() as usize
    };
    Ordered(
        (0..7)
            .map(|i| {
                let k = if i < 6 {
                    (1u32 << i).to_string()
                } else {
                    ">=64".to_string()
                };
                (k, if any && i == idx { 100.0 } else { 0.0 })
            })
            .collect(),
    )
}

/// `iodepth_submit` / `iodepth_complete`: every call carries one I/O (the 1–4 bucket).
fn iodepth_calls(any: bool) -> Ordered<f64> {
    let keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    Ordered(
        keys.iter()
            .enumerate()
            .map(|(i, k)| (k.to_string(), if any && i == 1 { 100.0 } else { 0.0 }))
            .collect(),
    )
}

/// `latency_ns`, `latency_us`, `latency_ms` from fio latency-range counts over `total`
/// I/Os (`stat_calc_lat`: a non-empty range below 0.01 % shows as 0.01).
fn latency_ranges(
    buckets: &[u64; LAT_BUCKETS],
    total: u64,
) -> (Ordered<f64>, Ordered<f64>, Ordered<f64>) {
    const KEYS: [&str; 12] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    let pct = |c: u64| {
        if total == 0 {
            return 0.0;
        }
        let p = c as f64 * 100.0 / total as f64;
        if p < 0.01 && c > 0 {
            0.01
        } else {
            p
        }
    };
    let scale = |from: usize, n: usize| {
        Ordered(
            (0..n)
                .map(|i| (KEYS[i].to_string(), pct(buckets[from + i])))
                .collect(),
        )
    };
    (scale(0, 10), scale(10, 10), scale(20, 12))
}

/// The job-level fields every job shares, around its directions.
struct JobParts {
    jobname: String,
    groupid: u32,
    elapsed_ns: u64,
    options: BTreeMap<String, String>,
    read: Dir,
    write: Dir,
    sync: SyncDir,
    depth: u32,
    sys_cpu: f64,
    buckets: [u64; LAT_BUCKETS],
}

fn job(p: JobParts) -> Job {
    let total = p.read.total_ios + p.write.total_ios;
    let (latency_ns, latency_us, latency_ms) = latency_ranges(&p.buckets, total);
    Job {
        jobname: p.jobname,
        groupid: p.groupid,
        job_start: 0,
        error: 0,
        eta: 0,
        elapsed: p.elapsed_ns.saturating_add(sim::S / 2) / sim::S,
        job_options: p.options,
        read: p.read,
        write: p.write,
        trim: Dir::default(),
        sync: p.sync,
        job_runtime: p.elapsed_ns / sim::MS,
        usr_cpu: 0.0,
        sys_cpu: p.sys_cpu,
        ctx: 0,
        majf: 0,
        minf: 0,
        iodepth_level: iodepth_level(p.depth, total > 0),
        iodepth_submit: iodepth_calls(total > 0),
        iodepth_complete: iodepth_calls(total > 0),
        latency_ns,
        latency_us,
        latency_ms,
        latency_depth: p.depth,
        latency_target: 0,
        latency_percentile: 100.0,
        latency_window: 0,
    }
}

/// The one job of `fsyncsim fio` (all jobs as one group, as with group_reporting).
pub fn fio_job(r: &FioResult, plus: bool) -> Job {
    let p = &r.params;
    let options = BTreeMap::from(
        [
            ("name", "fsyncsim".to_string()),
            ("ioengine", "fsyncsim".to_string()),
            ("rw", p.rw.name().to_string()),
            ("bs", p.bs.to_string()),
            ("iodepth", p.iodepth.to_string()),
            ("numjobs", p.numjobs.to_string()),
            ("fsync", p.fsync.to_string()),
            ("runtime", format!("{}ns", p.runtime)),
            ("size", p.size.to_string()),
            ("rwmixread", p.rwmixread.to_string()),
            ("seed", p.seed.to_string()),
            ("device", r.device.clone()),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    let mut buckets = r.read.clat_exact.buckets;
    for (b, w) in buckets.iter_mut().zip(r.write.clat_exact.buckets.iter()) {
        *b += w;
    }
    job(JobParts {
        jobname: "fsyncsim".into(),
        groupid: 0,
        elapsed_ns: r.elapsed,
        options,
        read: fio_dir(&r.read, r, plus),
        write: fio_dir(&r.write, r, plus),
        sync: SyncDir {
            total_ios: r.sync.ios,
            lat_ns: lat(&r.sync.lat, &r.sync.lat_exact, true, plus),
        },
        depth: p.iodepth,
        sys_cpu: 0.0,
        buckets,
    })
}

/// The device of a `fsyncsim fio` run as a `disk_util` entry.
pub fn fio_disk_util(r: &FioResult) -> DiskUtil {
    use models::device::ReqKind;
    let ds = &r.device_stats;
    let reads = [ReqKind::Read];
    let writes = [ReqKind::Write, ReqKind::FuaWrite, ReqKind::PreflushWrite];
    let sum = |ks: &[ReqKind], f: &dyn Fn(&models::device::KindStats) -> u128| -> u128 {
        ks.iter().map(|&k| f(ds.kind(k))).sum()
    };
    let ticks = |ks: &[ReqKind]| {
        (sum(ks, &|s| s.host_wait_ns + s.queue_wait_ns + s.service_ns) / 1_000_000) as u64
    };
    let merges =
        |dir: models::block::Dir| r.block_stats.as_ref().map_or(0, |b| b.merges[dir as usize]);
    let all: u128 = ds
        .kinds
        .iter()
        .map(|s| s.host_wait_ns + s.queue_wait_ns + s.service_ns)
        .sum();
    DiskUtil {
        name: r.device.clone(),
        read_ios: sum(&reads, &|s| u128::from(s.count)) as u64,
        write_ios: sum(&writes, &|s| u128::from(s.count)) as u64,
        read_sectors: (sum(&reads, &|s| u128::from(s.bytes)) / 512) as u64,
        write_sectors: (sum(&writes, &|s| u128::from(s.bytes)) / 512) as u64,
        read_merges: merges(models::block::Dir::Read),
        write_merges: merges(models::block::Dir::Write),
        read_ticks: ticks(&reads),
        write_ticks: ticks(&writes),
        in_queue: (all / 1_000_000) as u64,
        util: if r.elapsed == 0 {
            0.0
        } else {
            (100.0 * r.busy as f64 / r.elapsed as f64).min(100.0)
        },
    }
}

/// Which direction of a fio job a workload operation's latencies go in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Reads (`ReadX`, `read`).
    Read,
    /// Everything else that is not a sync.
    Write,
    /// fsync (`fsync`, dbench's `Flush`).
    Sync,
}

/// The direction of a workload operation.
pub fn direction(op: &str) -> Direction {
    match op {
        "ReadX" | "read" => Direction::Read,
        "fsync" | "Flush" => Direction::Sync,
        _ => Direction::Write,
    }
}

/// A workload operation as a read or write direction: its latency is clat and lat (a
/// system call has no separate submission), slat is zero.
fn op_dir(o: &OpResult, measured: u64) -> Dir {
    let runtime = measured / sim::MS;
    let (bw_bytes, bw, iops) = rates(o.bytes, o.exact.len(), runtime);
    Dir {
        io_bytes: o.bytes,
        io_kbytes: o.bytes >> 10,
        bw_bytes,
        bw,
        iops,
        runtime,
        total_ios: o.exact.len(),
        clat_ns: lat(&o.hist, &o.exact, true, false),
        lat_ns: lat(&o.hist, &o.exact, false, false),
        ..Dir::default()
    }
}

/// A workload run's fio jobs: one per operation that has samples (jobname the operation,
/// its latencies in the read, write or sync direction), in report order; `groupid` and
/// extra job options are the caller's (compare's side, point and seed).
pub fn workload_jobs(r: &WorkloadResult, groupid: u32, extra: &[(&str, String)]) -> Vec<Job> {
    let cpu = r.classes.iter().position(|c| c == "cpu");
    r.ops
        .iter()
        .filter(|o| !o.exact.is_empty())
        .map(|o| {
            let mut options = BTreeMap::from(
                [
                    ("name", r.workload.clone()),
                    ("ioengine", "fsyncsim".to_string()),
                    ("op", o.name.to_string()),
                    ("numjobs", r.clients.to_string()),
                    ("iodepth", "1".to_string()),
                    ("policy", r.policy.name.clone()),
                    ("device", r.device.clone()),
                    ("seed", r.seed.to_string()),
                ]
                .map(|(k, v)| (k.to_string(), v)),
            );
            for (k, v) in extra {
                options.insert(k.to_string(), v.clone());
            }
            let (read, write, sync) = match direction(o.name) {
                Direction::Read => (op_dir(o, r.measured), Dir::default(), SyncDir::default()),
                Direction::Write => (Dir::default(), op_dir(o, r.measured), SyncDir::default()),
                Direction::Sync => (
                    Dir::default(),
                    Dir::default(),
                    SyncDir {
                        total_ios: o.exact.len(),
                        lat_ns: lat(&o.hist, &o.exact, true, false),
                    },
                ),
            };
            // CPU time of the operation over the window and clients, as fio's sys_cpu.
            let sys_cpu = cpu.map_or(0.0, |c| {
                let ns = o.attribution.get(c).copied().unwrap_or(0);
                let run = r.measured as f64 * f64::from(r.clients.max(1));
                100.0 * ns as f64 / run
            });
            let buckets = if direction(o.name) == Direction::Sync {
                [0; LAT_BUCKETS]
            } else {
                o.exact.buckets
            };
            job(JobParts {
                jobname: o.name.to_string(),
                groupid,
                elapsed_ns: r.measured,
                options,
                read,
                write,
                sync,
                depth: 1,
                sys_cpu,
                buckets,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_maps_keep_fio_order() {
        let o = Ordered(vec![
            ("5.000000".to_string(), 1u64),
            ("10.000000".into(), 2),
        ]);
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"5.000000":1,"10.000000":2}"#
        );
    }

    #[test]
    fn an_empty_set_has_no_percentiles_and_a_full_one_exact_extremes() {
        let mut h = models::device::new_histogram();
        let mut x = Exact::default();
        let l = lat(&h, &x, true, true);
        assert!(l.percentile.is_none() && l.bins.is_none() && l.n == 0);
        for v in [1_234_567u64, 2_345_678, 9] {
            h.record(v).unwrap();
            x.record(v);
        }
        let l = lat(&h, &x, true, true);
        assert_eq!((l.min, l.max, l.n), (9, 2_345_678, 3));
        // The histogram's own max is rounded up to its bucket.
        assert_ne!(h.max(), 2_345_678);
        let bins = l.bins.unwrap();
        assert_eq!(bins.0.iter().map(|(_, c)| c).sum::<u64>(), 3);
        let keys: Vec<u64> = bins.0.iter().map(|(k, _)| k.parse().unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert_eq!(l.percentile.unwrap().0.len(), FIO_PERCENTILES.len());
    }

    #[test]
    fn iodepth_buckets_follow_fio() {
        let keys = |o: &Ordered<f64>| o.0.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        let l = iodepth_level(32, true);
        assert_eq!(keys(&l), ["1", "2", "4", "8", "16", "32", ">=64"]);
        assert_eq!(l.0[5].1, 100.0);
        assert_eq!(iodepth_level(3, true).0[1].1, 100.0);
        assert_eq!(iodepth_level(128, true).0[6].1, 100.0);
        assert_eq!(
            keys(&iodepth_calls(true)),
            ["0", "4", "8", "16", "32", "64", ">=64"]
        );
    }
}
