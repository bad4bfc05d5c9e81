//! `fsyncsim validate`: every seed experiment the model covers, run under the seed's two
//! kernels and set beside the seed's published figures (relative changes, and the
//! baseline's absolute level), plus R7's regression as a function of the ratio between a
//! sysbench round and the commit interval.
//!
//! The seed values are copied from the threads in `shared/seeds/` (file and line cited per
//! experiment); nothing here is tuned to them.

use crate::block::DiskConfig;
use crate::kernel::parse_policy;
use crate::kernel::Policy;
use crate::workload::compare::{compare, run_all, OnTick, RunJob};
use crate::workload::fsload::WorkloadResult;
use crate::workload::spec::Spec;

/// What a figure measures in a workload result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// dbench throughput, MB/s.
    Throughput,
    /// sysbench requests (writes) per second.
    PerSecond,
    /// Largest operation latency, ms.
    MaxLatency,
    /// Mean latency of one operation kind, ms.
    AvgLat(&'static str),
    /// Largest latency of one operation kind, ms (dbench's MaxLat column, what fsperf's
    /// DbenchTest records).
    MaxLat(&'static str),
    /// Readers' throughput, KiB/s (fio's "bsr" figure).
    ReaderKiBps,
    /// A fio field as fsperf names it (write_bw_bytes, write_clat_ns_p99, …).
    Fio(&'static str),
    /// An `iostat -x` column over the window (kbuild).
    Iostat(&'static str),
}

impl Measure {
    /// The value in a result (None when the operation never ran in the window).
    pub fn of(self, r: &WorkloadResult) -> Option<f64> {
        match self {
            Measure::Throughput => Some(r.mb_per_s()),
            Measure::PerSecond => Some(r.per_s()),
            Measure::MaxLatency => Some(r.max_latency() as f64 / 1e6),
            Measure::AvgLat(op) => r
                .op(op)
                .filter(|o| !o.hist.is_empty())
                .map(|o| o.hist.mean() / 1e6),
            Measure::MaxLat(op) => r
                .op(op)
                .filter(|o| !o.hist.is_empty())
                .map(|o| o.hist.max() as f64 / 1e6),
            Measure::ReaderKiBps => r
                .op("read")
                .filter(|o| !o.hist.is_empty())
                .map(|o| o.bytes as f64 / 1024.0 / (r.measured as f64 / 1e9)),
            Measure::Fio(f) => r.fio_field(f),
            Measure::Iostat(c) => {
                let i = crate::block::iostat::COLUMNS.iter().position(|x| *x == c)?;
                r.iostat.map(|io| io.values()[i])
            }
        }
    }

    /// Unit of the absolute value.
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Throughput => "MB/s",
            Measure::PerSecond => "req/s",
            Measure::MaxLatency | Measure::AvgLat(_) | Measure::MaxLat(_) => "ms",
            Measure::ReaderKiBps => "KiB/s",
            Measure::Fio(f) if f.contains("_ns") => "ns",
            Measure::Fio(f) if f.ends_with("bw_bytes") => "B/s",
            Measure::Fio(f) if f.ends_with("iops") => "IOPS",
            Measure::Fio(_) => "",
            Measure::Iostat(c) if c.ends_with("/s") => "/s",
            Measure::Iostat("%util") => "%",
            Measure::Iostat("await" | "svctm") => "ms",
            Measure::Iostat(_) => "",
        }
    }

    /// Name in row ids.
    pub fn name(self) -> String {
        match self {
            Measure::Throughput => "throughput".into(),
            Measure::PerSecond => "requests_per_s".into(),
            Measure::MaxLatency => "max_latency".into(),
            Measure::AvgLat(op) => format!("{op}_avg_lat"),
            Measure::MaxLat(op) => format!("{op}_max_lat"),
            Measure::ReaderKiBps => "reader_kib_per_s".into(),
            Measure::Fio(f) => f.to_string(),
            Measure::Iostat(c) => format!("iostat {c}"),
        }
    }
}

/// One seed experiment: a workload under a baseline and a current policy, and the seed's
/// figures for both.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// Short id (row ids start with it).
    pub id: &'static str,
    /// Seed thread and where its figures are.
    pub seed: &'static str,
    /// Built-in workload.
    pub workload: &'static str,
    /// Baseline policy spec.
    pub baseline: &'static str,
    /// Current policy spec.
    pub current: &'static str,
    /// (measure, seed baseline value, seed current value).
    pub figures: Vec<(Measure, f64, f64)>,
    /// The measures whose baseline level is also reported.
    pub levels: Vec<Measure>,
    /// Levels reported without a change row: (measure, the seed's baseline value), for a
    /// figure whose model baseline can be 0 (no percentage change from 0).
    pub level_only: Vec<(Measure, f64)>,
}

/// The experiments the model covers today.
pub fn experiments() -> Vec<Experiment> {
    [btrfs_seeds(), jbd_seeds(), kbuild_seeds(), fsperf_seeds()].concat()
}

/// Seeds 000 (dbench) and 001 (sysbench): btrfs 5.10/5.11.
fn btrfs_seeds() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "000-dbench64",
            seed: "000 (lines 722-768): dbench -t 300 64, NVMe, 12 cores, 5.10 vs patches 1-6",
            workload: "dbench",
            baseline: "linux-5.10",
            current: "linux-5.11",
            figures: vec![
                (Measure::Throughput, 1179.19, 1339.32),
                (Measure::MaxLatency, 676.240, 623.265),
                (Measure::AvgLat("Flush"), 14.115, 13.014),
                (Measure::AvgLat("Rename"), 1.935, 1.444),
                (Measure::AvgLat("Unlink"), 0.770, 0.559),
                (Measure::AvgLat("NTCreateX"), 0.250, 0.171),
                (Measure::AvgLat("Sfileinfo"), 0.061, 0.008),
                (Measure::AvgLat("Deltree"), 15.732, 11.499),
                (Measure::AvgLat("WriteX"), 0.047, 0.045),
                (Measure::AvgLat("Find"), 0.341, 0.408),
                (Measure::AvgLat("Qpathinfo"), 0.056, 0.061),
            ],
            levels: vec![
                Measure::Throughput,
                Measure::MaxLatency,
                Measure::AvgLat("Flush"),
                Measure::AvgLat("Rename"),
                Measure::AvgLat("Find"),
            ],
            level_only: vec![],
        },
        Experiment {
            id: "001-sysbench",
            seed: "001 (lines 31-50): sysbench fileio rndwr, 4 threads, 1024 files, 600 s",
            workload: "sysbench-fileio",
            baseline: "linux-5.11:-R7",
            current: "linux-5.11",
            figures: vec![(Measure::PerSecond, 3.39, 16.04)],
            levels: vec![Measure::PerSecond],
            level_only: vec![],
        },
    ]
}

/// Seed 003's fs_mark runs and the jbd commit 2db938bee32e's own figures: ext3/ext4.
fn jbd_seeds() -> Vec<Experiment> {
    vec![
        // Seed 003 (J1), Jeff Moyer's runs: vanilla (WRITE_SYNC commits) vs Jan Kara's jbd
        // and jbd2 patches; requests/s is fs_mark's files/s.
        Experiment {
            id: "003-fsmark-ext4",
            seed: "003 (Jeff Moyer, #21): fs_mark 64 KB + fsync, 1 thread, and a fio buffered sequential reader, ext4",
            workload: "fs-mark-fio-ext4",
            baseline: "linux-2.6.37",
            current: "jan-rfc",
            figures: vec![
                (Measure::PerSecond, 408.547, 342.813),
                (Measure::ReaderKiBps, 277_130.0, 294_655.0),
            ],
            levels: vec![Measure::PerSecond, Measure::ReaderKiBps],
            level_only: vec![],
        },
        Experiment {
            id: "003-fsmark-ext3",
            seed: "003 (Jeff Moyer, #21): fs_mark 64 KB + fsync, 1 thread, and a fio buffered sequential reader, ext3",
            workload: "fs-mark-fio-ext3",
            baseline: "linux-2.6.37",
            current: "jan-rfc",
            figures: vec![
                (Measure::PerSecond, 517.535, 540.34),
                (Measure::ReaderKiBps, 178_187.0, 182_312.0),
            ],
            levels: vec![Measure::PerSecond, Measure::ReaderKiBps],
            level_only: vec![],
        },
        // Not a seed thread: the merged jbd patch's own message (2db938bee32e, 2.6.39), one
        // fs_mark thread with a streaming reader on ext3; the mean of its four loops.
        Experiment {
            id: "2db938b-fsmark",
            seed: "2db938bee32e (jbd commit message, not a seed): fs_mark -n 100 -s 16384 -S 1 -L 4 + a streaming reader, ext3, fsyncs/s mean of 4 loops",
            workload: "fs-mark-fio-jbd-refine",
            baseline: "linux-2.6.38",
            current: "linux-2.6.39",
            figures: vec![(Measure::PerSecond, 7.2, 6.15)],
            levels: vec![Measure::PerSecond],
            level_only: vec![],
        },
        Experiment {
            id: "2db938b-readlat",
            seed: "2db938bee32e (jbd commit message, not a seed): read 1 MB after sleeping, under streaming writes, ext3; mean of 90 reads",
            workload: "read-latency-jbd-refine",
            baseline: "linux-2.6.38",
            current: "linux-2.6.39",
            figures: vec![(Measure::AvgLat("read"), 619.377, 82.180)],
            levels: vec![Measure::AvgLat("read")],
            level_only: vec![],
        },
    ]
}

/// Seed 003's kbuild: units/s and iostat -x.
fn kbuild_seeds() -> Vec<Experiment> {
    vec![
        // Seed 003's kbuild (#0, #14, #34): units/s has only relative figures (written as
        // 100 → 85 for "drop about 15%"); iostat -x is #0's 2.6.37 and reverted rows.
        Experiment {
            id: "003-kbuild",
            seed: "003 (Alex Shi, #0/#34): kbuild -j through ccache on an ext3 root, 64-LCPU NHM-EX, CFQ; 2.6.37 with the WRITE_SYNC commit reverted vs 2.6.37",
            workload: "kbuild",
            baseline: "linux-2.6.36",
            current: "linux-2.6.37",
            figures: vec![
                (Measure::PerSecond, 100.0, 85.0),
                (Measure::Iostat("r/s"), 107.875, 92.3742),
                (Measure::Iostat("wrqm/s"), 80.21, 96.46),
                (Measure::Iostat("rMB/s"), 1.51415, 1.0048),
                (Measure::Iostat("avgrq-sz"), 41.3275, 34.8557),
                (Measure::Iostat("%util"), 3.22323, 2.94302),
            ],
            // w/s is a level: the model's 2.6.36 writes nothing in the window (a change from 0
            // has no percentage), the seed's reverted kernel 6 per second.
            levels: vec![
                Measure::Iostat("r/s"),
                Measure::Iostat("w/s"),
                Measure::Iostat("%util"),
            ],
            level_only: vec![(Measure::Iostat("w/s"), 6.03538)],
        },
        Experiment {
            id: "003-kbuild-rfc",
            seed: "003 (Alex Shi, #34: \"about 3% improving\"; #12 said 10 %): kbuild as above, 2.6.37 vs Jan Kara's RFC with ext3",
            workload: "kbuild",
            baseline: "linux-2.6.37",
            current: "jan-rfc",
            figures: vec![
                (Measure::PerSecond, 100.0, 103.0),
                (Measure::Iostat("r/s"), 92.3742, 96.164521),
                (Measure::Iostat("w/s"), 14.747, 6.748493),
            ],
            levels: vec![],
            level_only: vec![],
        },
    ]
}

/// Seed 004: fsperf before and after the preemptive-flushing patches.
fn fsperf_seeds() -> Vec<Experiment> {
    vec![
        // Seed 004 (lines 28-143): fsperf before and after the seven preemptive-flushing
        // patches; the series was merged for 5.14, so 5.13 vs 5.14.
        Experiment {
            id: "004-dio4kbs16threads",
            seed: "004 (lines 91-109): fsperf dio4kbs16threads, 16 jobs O_DIRECT 4k randwrite",
            workload: "dio4kbs16threads",
            baseline: "linux-5.13",
            current: "linux-5.14",
            figures: vec![
                (Measure::Fio("write_bw_bytes"), 74302497.38, 90667585.0),
                (Measure::Fio("write_iops"), 18140.26, 22135.64),
                (Measure::Fio("write_clat_ns_p50"), 243968.0, 238592.0),
                (Measure::Fio("write_clat_ns_p99"), 21094400.0, 15007744.0),
                (Measure::Fio("write_lat_ns_max"), 1.68e9, 8.46e8),
            ],
            levels: vec![
                Measure::Fio("write_iops"),
                Measure::Fio("write_clat_ns_p50"),
                Measure::Fio("write_clat_ns_p99"),
            ],
            level_only: vec![],
        },
        Experiment {
            id: "004-randwrite2xram",
            seed: "004 (lines 112-130): fsperf randwrite2xram, 4 jobs buffered 4k randwrite",
            workload: "randwrite2xram",
            baseline: "linux-5.13",
            current: "linux-5.14",
            figures: vec![
                (Measure::Fio("write_bw_bytes"), 93268100.75, 1.16e8),
                (Measure::Fio("write_clat_ns_p50"), 13168.0, 16512.0),
                (Measure::Fio("write_clat_ns_p99"), 39360.0, 125440.0),
                (Measure::Fio("write_lat_ns_max"), 4.05e10, 2.73e10),
            ],
            levels: vec![
                Measure::Fio("write_bw_bytes"),
                Measure::Fio("write_clat_ns_p50"),
            ],
            level_only: vec![],
        },
        Experiment {
            id: "004-dbench60",
            seed: "004 (lines 28-46): fsperf dbench60 (dbench 60 clients, 600 s), MaxLat ms",
            workload: "dbench60",
            baseline: "linux-5.13",
            current: "linux-5.14",
            // fsperf's DbenchTest keeps the Throughput line's MB/sec and each operation's
            // MaxLat (the table's fourth column), in the seed's row order.
            figures: vec![
                (Measure::MaxLat("Qpathinfo"), 11.53, 13.25),
                (Measure::Throughput, 446.23, 434.52),
                (Measure::MaxLat("Flush"), 2502.92, 1682.43),
                (Measure::MaxLat("Qfileinfo"), 0.92, 1.17),
                (Measure::MaxLat("NTCreateX"), 1359.76, 519.42),
                (Measure::MaxLat("Qfsinfo"), 1.77, 3.76),
                (Measure::MaxLat("Close"), 1.90, 1.64),
                (Measure::MaxLat("Sfileinfo"), 209.76, 76.43),
                (Measure::MaxLat("Rename"), 1110.08, 518.40),
                (Measure::MaxLat("Find"), 13.84, 13.13),
                (Measure::MaxLat("Unlink"), 1192.89, 521.53),
                (Measure::MaxLat("WriteX"), 1713.39, 1321.39),
                (Measure::MaxLat("Deltree"), 280.34, 296.33),
                (Measure::MaxLat("ReadX"), 3.16, 2.91),
                (Measure::MaxLat("Mkdir"), 0.03, 0.02),
                (Measure::MaxLat("LockX"), 0.78, 0.20),
                (Measure::MaxLat("UnlockX"), 0.16, 0.12),
            ],
            levels: vec![Measure::Throughput, Measure::MaxLat("Flush")],
            level_only: vec![],
        },
        Experiment {
            id: "004-emptyfiles500k",
            seed: "004 (lines 49-67): fsperf emptyfiles500k, one job creates 31,250 files",
            workload: "emptyfiles500k",
            baseline: "linux-5.13",
            current: "linux-5.14",
            figures: vec![
                (Measure::Fio("write_iops"), 43763.97, 45093.80),
                (Measure::Fio("write_clat_ns_p50"), 17728.0, 17280.0),
                (Measure::Fio("write_clat_ns_p99"), 72704.0, 68096.0),
            ],
            levels: vec![Measure::Fio("write_iops")],
            level_only: vec![],
        },
    ]
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `<experiment>/<measure>` (`…/level` for absolute baseline values).
    pub id: String,
    /// Seed thread.
    pub seed: String,
    /// What is compared, in words.
    pub figure: String,
    /// The seed's value.
    pub seed_value: f64,
    /// The model's value (mean over the paired seeds).
    pub model_value: f64,
    /// 95 % interval of the model's value over the seeds (None with one seed).
    pub model_ci: Option<(f64, f64)>,
    /// `%` for changes, the measure's unit for levels.
    pub unit: String,
    /// Whether the model's change has the seed's sign (None for levels).
    pub direction_match: Option<bool>,
    /// model / seed.
    pub ratio: f64,
}

impl Row {
    /// A row from the model's samples: their mean and 95 % interval against the seed's
    /// value; `change` rows (in %) also say whether the signs agree.
    pub fn from_samples(
        id: String,
        seed: String,
        figure: String,
        seed_value: f64,
        samples: &[f64],
        unit: &str,
        change: bool,
    ) -> Row {
        let (mean, ci) = mean_ci(samples);
        Row {
            id,
            seed,
            figure,
            seed_value,
            model_value: mean,
            model_ci: ci,
            unit: unit.into(),
            direction_match: change.then_some(same_direction(mean, seed_value)),
            ratio: mean / seed_value,
        }
    }
}

impl Row {
    /// Whether the model's 95 % interval excludes 0 (None for levels or with one seed).
    pub fn ci_excludes_zero(&self) -> Option<bool> {
        self.direction_match?;
        self.model_ci.map(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// The fidelity counts of a validation (issue 27's "done when" measures).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Score {
    /// Rows that compare a change (A/B delta rows).
    pub deltas: usize,
    /// Delta rows whose change has the seed's direction.
    pub same_direction: usize,
    /// Delta rows with an interval (two or more seeds).
    pub with_interval: usize,
    /// Delta rows in the seed's direction whose 95 % interval excludes 0.
    pub same_direction_ci: usize,
    /// Delta rows within ±50 % of the seed's change (model/seed in [0.5, 1.5]).
    pub within_half: usize,
    /// Absolute-level rows.
    pub levels: usize,
    /// Level rows within 2× of the seed's (model/seed in [0.5, 2]).
    pub levels_within_2x: usize,
}

impl Validation {
    /// Counts the rows by the fidelity measures.
    pub fn score(&self) -> Score {
        let mut s = Score::default();
        for r in &self.rows {
            match r.direction_match {
                Some(same) => {
                    s.deltas += 1;
                    s.same_direction += usize::from(same);
                    s.with_interval += usize::from(r.model_ci.is_some());
                    s.same_direction_ci += usize::from(same && r.ci_excludes_zero() == Some(true));
                    s.within_half += usize::from((0.5..=1.5).contains(&r.ratio));
                }
                None => {
                    s.levels += 1;
                    s.levels_within_2x += usize::from((0.5..=2.0).contains(&r.ratio));
                }
            }
        }
        s
    }
}

/// Whether a model change has the seed's direction: the same sign, and no change (exactly
/// 0, e.g. a policy switch the workload never reaches) only matches no change.
pub fn same_direction(model: f64, seed: f64) -> bool {
    if model == 0.0 || seed == 0.0 {
        model == seed
    } else {
        (model > 0.0) == (seed > 0.0)
    }
}

/// One point of a curve.
#[derive(Clone, Debug, PartialEq)]
pub struct CurvePoint {
    /// The varied parameter's value.
    pub param: String,
    /// x.
    pub x: f64,
    /// y.
    pub y: f64,
}

/// A curve: the model's points and the seed's.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// Id.
    pub id: String,
    /// x in words.
    pub x: String,
    /// y in words.
    pub y: String,
    /// The model's points.
    pub points: Vec<CurvePoint>,
    /// The seed's point (x, y) and how its x was derived.
    pub seed_point: Option<(f64, f64, String)>,
}

/// Everything `fsyncsim validate` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    /// Quick mode (shorter runs, two seeds).
    pub quick: bool,
    /// Run lengths used, in words.
    pub setup: String,
    /// The rows.
    pub rows: Vec<Row>,
    /// The curves.
    pub curves: Vec<Curve>,
    /// Each delta row's change with each model mechanism off (`--ablate`).
    pub ablation: Option<Ablation>,
    /// The rows' runs that broke an invariant, one line each (empty when all ran clean).
    pub failures: Vec<String>,
}

/// How long each experiment runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lengths {
    /// dbench measured time.
    pub dbench: sim::Nanos,
    /// dbench warmup.
    pub dbench_warmup: sim::Nanos,
    /// sysbench measured time.
    pub sysbench: sim::Nanos,
    /// Paired seeds per experiment.
    pub seeds: u64,
    /// sysbench time per point of the R7 curve.
    pub curve: sim::Nanos,
    /// fsperf tests' measured time without ramp — (direct-I/O tests, the others) — or
    /// None: each test's own runtime and ramp_time.
    pub fsperf: Option<(sim::Nanos, sim::Nanos)>,
    /// Device sizes (GiB) of the fsperf curves: each seed-004 figure's change against the
    /// device's size, one seed per point.
    pub fsperf_sizes: &'static [u64],
}

/// Device sizes (GiB) of the fsperf curves. fsperf's device is not given (seed 004,
/// fsperf's local-cfg-example: "/dev/nvme0n1"); dio4kbs16threads' 16 × 1 GiB of files need
/// more than 16 GiB, so the curves start at 32 GiB and end at the model's default 1 TiB.
pub const FSPERF_SIZES_GIB: [u64; 6] = [32, 64, 128, 256, 512, 1024];

/// `--quick`'s fsperf curve sizes (GiB): the ends and the middle of `FSPERF_SIZES_GIB`.
pub const FSPERF_SIZES_QUICK_GIB: [u64; 3] = [32, 128, 1024];

/// Longest run (ramp included) of an fsperf random-write test at the tests' own lengths
/// (the full validate): randwrite2xram's 4 jobs peak at 2.6 GB after 60 s.
pub const FSPERF_RANDWRITE_MAX: sim::Nanos = 60 * sim::S;

/// The fsperf curves' run lengths when the rows run at the tests' own lengths (the full
/// validate): the quick lengths, so that six sizes × two kernels stay affordable.
const FSPERF_CURVE_LENGTHS: (sim::Nanos, sim::Nanos) = (sim::S, 5 * sim::S);

impl Lengths {
    /// `--quick`: under two minutes on two cores.
    pub fn quick() -> Self {
        Lengths {
            dbench: 20 * sim::S,
            dbench_warmup: 4 * sim::S,
            sysbench: 60 * sim::S,
            seeds: 2,
            curve: 60 * sim::S,
            // The model's NVMe completes ~1 M direct writes per simulated second (2.5 s of
            // wall time each): 1 s of dio4kbs16threads, 5 s of the others.
            fsperf: Some((sim::S, 5 * sim::S)),
            fsperf_sizes: &FSPERF_SIZES_QUICK_GIB,
        }
    }

    /// The full run: the seeds' own lengths (dbench -t 300 with its 60 s warmup, sysbench
    /// --max-time=600).
    pub fn full() -> Self {
        Lengths {
            dbench: 300 * sim::S,
            dbench_warmup: 60 * sim::S,
            sysbench: 600 * sim::S,
            seeds: 1,
            curve: 300 * sim::S,
            fsperf: None,
            fsperf_sizes: &FSPERF_SIZES_GIB,
        }
    }
}

/// Mean and (with ≥ 2 values) a Student-t 95 % interval.
pub(crate) fn mean_ci(v: &[f64]) -> (f64, Option<(f64, f64)>) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n.max(1.0);
    if v.len() < 2 {
        return (mean, None);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let t = crate::workload::compare::t975(v.len() - 1);
    let h = t * (var / n).sqrt();
    (mean, Some((mean - h, mean + h)))
}

/// Runs every experiment (`quick`: shorter runs, two paired seeds; `ablate`: again with each
/// of `ABLATIONS` switched off) on `jobs` threads;
/// `progress` is told the simulated time planned and done. Deterministic for any `jobs`.
pub fn validate(
    quick: bool,
    ablate: bool,
    only: &Selection,
    jobs: usize,
    progress: &OnTick,
) -> Result<Validation, String> {
    let l = if quick {
        Lengths::quick()
    } else {
        Lengths::full()
    };
    validate_selected(l, quick, ablate, only, jobs, progress)
}

/// The scrub thread's experiment id (its rows are not a workload `Experiment`).
pub const SCRUB_ID: &str = "002-scrub";

/// Which experiments a run covers: all, or those whose id starts with one of the terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection(Vec<String>);

impl Selection {
    /// Every experiment.
    pub fn all() -> Self {
        Selection(Vec::new())
    }

    /// Comma-separated id prefixes (`000-dbench64`, `004`, `2db938b-readlat`); each must
    /// select at least one experiment.
    pub fn parse(terms: &str) -> Result<Self, String> {
        let mut ids: Vec<&str> = experiments().iter().map(|e| e.id).collect();
        ids.push(SCRUB_ID);
        ids.sort_unstable();
        let mut out = Vec::new();
        for t in terms.split(',').map(str::trim) {
            if t.is_empty() || !ids.iter().any(|id| id.starts_with(t)) {
                return Err(format!(
                    "'{t}' selects no experiment; expected an id or a prefix of one of: {}",
                    ids.join(", ")
                ));
            }
            out.push(t.to_string());
        }
        Ok(Selection(out))
    }

    /// Whether the experiment `id` is selected.
    pub fn has(&self, id: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|t| id.starts_with(t.as_str()))
    }
}

/// `validate` with explicit run lengths.
pub fn validate_with(
    l: Lengths,
    quick: bool,
    ablate: bool,
    jobs: usize,
    progress: &OnTick,
) -> Result<Validation, String> {
    validate_selected(l, quick, ablate, &Selection::all(), jobs, progress)
}

/// `validate_with` for the experiments `only` selects.
pub fn validate_selected(
    l: Lengths,
    quick: bool,
    ablate: bool,
    only: &Selection,
    jobs: usize,
    progress: &OnTick,
) -> Result<Validation, String> {
    let (db_dur, db_warm, sb_dur, seeds, curve_dur) =
        (l.dbench, l.dbench_warmup, l.sysbench, l.seeds, l.curve);
    let planned = experiments()
        .into_iter()
        .filter(|e| only.has(e.id))
        .map(|e| Planned::new(e, &l))
        .collect::<Result<Vec<_>, String>>()?;
    // Each experiment as planned, then (--ablate, btrfs) with each mechanism off.
    let specs = planned
        .iter()
        .map(|p| {
            let n = if ablate && p.ablates() {
                ABLATIONS.len() + 1
            } else {
                1
            };
            (0..n).map(|v| p.variant(v)).collect()
        })
        .collect::<Result<Vec<Vec<(Spec, DiskConfig)>>, String>>()?;
    // One pool for every run of every experiment (and ablation variant): the long dbench
    // runs overlap the short ones instead of each experiment waiting for its slowest run.
    let mut work = Vec::new();
    for (i, p) in planned.iter().enumerate() {
        for (v, (spec, dev)) in specs[i].iter().enumerate() {
            for k in 0..seeds {
                for side in 0..2 {
                    let pol = if side == 0 { &p.baseline } else { &p.current };
                    work.push(((i, v, side), (spec, pol, dev, spec.seed + k)));
                }
            }
        }
    }
    let jobs_list: Vec<RunJob> = work.iter().map(|w| w.1).collect();
    let mut results = run_all(&jobs_list, jobs, progress)?.into_iter();
    let mut runs: Vec<Vec<[Vec<WorkloadResult>; 2]>> = specs
        .iter()
        .map(|v| v.iter().map(|_| [Vec::new(), Vec::new()]).collect())
        .collect();
    let mut failures = Vec::new();
    for &((i, v, side), _) in &work {
        let r = results.next().expect("one result per run")?;
        if !r.violations.is_empty() {
            let what = match v {
                0 => planned[i].e.id.to_string(),
                _ => format!("{} with {} off", planned[i].e.id, ABLATIONS[v - 1].0),
            };
            failures.extend(r.violation_line(&what));
        }
        runs[i][v][side].push(r);
    }
    let mut rows = Vec::new();
    for (p, r) in planned.iter().zip(&runs) {
        rows.extend(p.rows(&r[0]));
    }
    let ablation = ablate.then(|| ablation_table(&planned, &runs));
    // Seed 002 (scrub with and without the readahead framework): its own rows.
    if only.has(SCRUB_ID) {
        rows.extend(seed002_rows(seeds)?);
    }
    let mut curves = Vec::new();
    if only.has("001-sysbench") {
        curves.push(r7_curve(curve_dur, jobs, progress, &mut failures)?);
    }
    curves.extend(fsperf_curves(&l, only, jobs, progress, &mut failures)?);
    Ok(Validation {
        quick,
        setup: format!(
            "dbench {} s after {} s warmup, sysbench {} s, {} paired seed(s) per experiment; R7 curve {} s per point{}{}",
            db_dur / sim::S,
            db_warm / sim::S,
            sb_dur / sim::S,
            seeds,
            curve_dur / sim::S,
            match l.fsperf {
                Some((d, o)) => format!(
                    "; fsperf tests without ramp, direct I/O {} s, others {} s",
                    d as f64 / sim::S as f64,
                    o as f64 / sim::S as f64
                ),
                None => format!(
                    "; fsperf tests at their own runtime, the random-write tests' cut to {} s with their ramp (their memory grows with their items)",
                    FSPERF_RANDWRITE_MAX / sim::S
                ),
            },
            if l.fsperf_sizes.is_empty() {
                String::new()
            } else {
                let (d, o) = l.fsperf.unwrap_or(FSPERF_CURVE_LENGTHS);
                format!(
                    "; fsperf curves at {} GiB, 1 seed, direct I/O {} s, others {} s",
                    l.fsperf_sizes
                        .iter()
                        .map(|g| g.to_string())
                        .collect::<Vec<_>>()
                        .join("/"),
                    d as f64 / sim::S as f64,
                    o as f64 / sim::S as f64
                )
            }
        ),
        rows,
        curves,
        ablation,
        failures,
    })
}

/// A model mechanism `validate --ablate` switches off: its name, the workload parameters
/// (`--vary` names) that switch it off, and what it is.
pub type Mechanism = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// The mechanisms of the btrfs model that `validate --ablate` switches off one at a time.
pub const ABLATIONS: [Mechanism; 10] = [
    (
        "tree_locks",
        &[("costs.tree_locks", "0")],
        "extent buffer tree locks (locking.rs)",
    ),
    (
        "delayed_items",
        &[("costs.delayed_items", "0")],
        "delayed dir index items and inode updates (delayed_inode.rs)",
    ),
    (
        "delayed_refs",
        &[("costs.delayed_refs", "0")],
        "delayed data refs run by the commit (delayed_ref.rs)",
    ),
    (
        "btree_cpu",
        &[
            ("costs.key_compare_ps", "0"),
            ("costs.tree_level_ps", "0"),
            ("costs.leaf_move_ps_per_byte", "0"),
            ("costs.item_offset_ps", "0"),
            ("costs.readdir_item_ps", "0"),
            ("costs.alloc_tree_block_ps", "0"),
            ("costs.free_tree_block_ps", "0"),
        ],
        "CPU of b-tree work: key compares, levels visited, bytes moved, item offsets rewritten, blocks allocated and freed (ctree_btree.rs)",
    ),
    (
        "switch_cpu",
        &[("costs.context_switch", "0"), ("costs.wakeup", "0")],
        "CPU of blocking: the woken task's switch, the waker's wake-up (costs.rs)",
    ),
    (
        "csum_cpu",
        &[("costs.crc32c_ps_per_byte", "0")],
        "crc32c of metadata blocks written and of data at writeback (costs.rs)",
    ),
    (
        "writeback_cpu",
        &[("costs.page_writeback_ps", "0"), ("costs.eb_writeback_ps", "0")],
        "CPU of writing back pages and metadata blocks: dirty and writeback marks, bios, completions (costs.rs)",
    ),
    (
        "global_rsv",
        &[("costs.global_rsv_resize", "0")],
        "the global reserve resized from the extent, csum and root trees (space_info.rs)",
    ),
    (
        "log_cow",
        &[("costs.log_cow", "0")],
        "log tree blocks COWed after each log sync, each sync writing the blocks it dirtied (ctree_btree.rs, tree_log.rs)",
    ),
    (
        "cpu_contention",
        &[("cpus", "unlimited")],
        "the workload's CPU cores (off: every task runs at once)",
    ),
];

/// What each mechanism moved: every btrfs delta row's model change with all mechanisms on
/// and with each of `ABLATIONS` off.
#[derive(Clone, Debug, PartialEq)]
pub struct Ablation {
    /// The mechanisms, in column order: (name, what it is).
    pub mechanisms: Vec<(String, String)>,
    /// The rows.
    pub rows: Vec<AblationRow>,
}

/// One delta row of the ablation table.
#[derive(Clone, Debug, PartialEq)]
pub struct AblationRow {
    /// The validate row's id.
    pub id: String,
    /// The seed's change, %.
    pub seed_value: f64,
    /// The model's mean change with every mechanism on, %.
    pub all_on: f64,
    /// The model's mean change with each mechanism off, %, in `mechanisms` order.
    pub off: Vec<f64>,
}

/// One experiment with its run lengths applied and its policies parsed.
struct Planned {
    e: Experiment,
    spec: Spec,
    dev: DiskConfig,
    baseline: Policy,
    current: Policy,
}

/// Each experiment's (warmup, measured duration) at the lengths `l`, in `experiments()` order.
pub fn run_lengths(l: &Lengths) -> Result<Vec<(&'static str, sim::Nanos, sim::Nanos)>, String> {
    experiments()
        .into_iter()
        .map(|e| Planned::new(e, l).map(|p| (p.e.id, p.spec.warmup, p.spec.duration)))
        .collect()
}

impl Planned {
    /// The experiment at the lengths `l` gives its workload kind.
    fn new(e: Experiment, l: &Lengths) -> Result<Planned, String> {
        let mut spec = Spec::load(e.workload).map_err(|x| x.to_string())?;
        if e.workload == "dbench" {
            spec.duration = l.dbench;
            spec.warmup = l.dbench_warmup;
        } else if e.workload.starts_with("fs-mark")
            || e.workload == "kbuild"
            || e.workload.starts_with("read-latency")
        {
            // Seed 003's blktrace runs lasted 300 s; the same lengths as dbench's.
            spec.duration = l.dbench;
        } else if e.id.starts_with("004-") {
            if let Some((dio, other)) = l.fsperf {
                spec.duration = if spec.direct { dio } else { other };
                spec.warmup = 0;
            } else if spec.kind == crate::workload::spec::Kind::Fio
                && spec.rw == crate::workload::spec::FioRw::RandWrite
            {
                // Their memory grows with their items (~10 MiB per thread-second buffered,
                // ~8 direct): at the tests' own 310 s two runs at once would not fit.
                let cap = FSPERF_RANDWRITE_MAX.saturating_sub(spec.warmup);
                spec.duration = spec.duration.min(cap);
            }
        } else {
            spec.duration = l.sysbench;
        }
        if spec.duration == 0 {
            return Err(format!("{}: the run would measure nothing", e.id));
        }
        let dev = DiskConfig::resolve(&spec.device).map_err(|x| x.to_string())?;
        let (baseline, current) = (parse_policy(e.baseline)?, parse_policy(e.current)?);
        Ok(Planned {
            e,
            spec,
            dev,
            baseline,
            current,
        })
    }

    /// Whether the ablation runs it: the mechanisms are btrfs's.
    fn ablates(&self) -> bool {
        self.spec.mount.fs == crate::mount::FsKind::Btrfs
    }

    /// Variant `v`: 0 as planned, `k` with `ABLATIONS[k - 1]` off.
    fn variant(&self, v: usize) -> Result<(Spec, DiskConfig), String> {
        let (mut s, mut d) = (self.spec.clone(), self.dev.clone());
        if v > 0 {
            for (name, value) in ABLATIONS[v - 1].1 {
                s.set(&mut d, name, value)?;
            }
        }
        Ok((s, d))
    }

    /// Each figure's paired changes, % (current against baseline, seed by seed).
    fn changes(&self, sides: &[Vec<WorkloadResult>; 2]) -> Vec<(Measure, f64, Vec<f64>)> {
        let mut out = Vec::new();
        for &(m, sb, sc) in &self.e.figures {
            let diffs: Vec<f64> = sides[0]
                .iter()
                .zip(&sides[1])
                .filter_map(|(x, y)| Some((m.of(x)?, m.of(y)?)))
                .map(|(x, y)| (y - x) / x * 100.0)
                .filter(|d| d.is_finite())
                .collect();
            if !diffs.is_empty() {
                out.push((m, (sc - sb) / sb * 100.0, diffs));
            }
        }
        out
    }

    /// The experiment's rows: each figure's change, then the baseline's levels.
    fn rows(&self, sides: &[Vec<WorkloadResult>; 2]) -> Vec<Row> {
        let e = &self.e;
        let seed = e.seed.split(' ').next().unwrap_or("").to_string();
        let mut rows = Vec::new();
        for (m, seed_change, diffs) in self.changes(sides) {
            rows.push(Row::from_samples(
                format!("{}/{}", e.id, m.name()),
                seed.clone(),
                format!("{} change, {} → {}", m.name(), e.baseline, e.current),
                seed_change,
                &diffs,
                "%",
                true,
            ));
        }
        for &m in &e.levels {
            let seed_level = e
                .figures
                .iter()
                .find(|f| f.0 == m)
                .map(|f| f.1)
                .or_else(|| e.level_only.iter().find(|l| l.0 == m).map(|l| l.1));
            let Some(sb) = seed_level else {
                continue;
            };
            let vals: Vec<f64> = sides[0].iter().filter_map(|r| m.of(r)).collect();
            if vals.is_empty() {
                continue;
            }
            rows.push(Row::from_samples(
                format!("{}/{}/level", e.id, m.name()),
                seed.clone(),
                format!("{} under {}", m.name(), e.baseline),
                sb,
                &vals,
                m.unit(),
                false,
            ));
        }
        rows
    }
}

/// The ablation table from every variant's runs (`runs[experiment][variant]`).
fn ablation_table(planned: &[Planned], runs: &[Vec<[Vec<WorkloadResult>; 2]>]) -> Ablation {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut rows = Vec::new();
    for (p, r) in planned.iter().zip(runs).filter(|(p, _)| p.ablates()) {
        let all_on = p.changes(&r[0]);
        let off: Vec<Vec<(Measure, f64, Vec<f64>)>> =
            r[1..].iter().map(|sides| p.changes(sides)).collect();
        for (m, seed_value, diffs) in &all_on {
            let off_mean = |v: &Vec<(Measure, f64, Vec<f64>)>| {
                v.iter()
                    .find(|c| c.0 == *m)
                    .map_or(f64::NAN, |c| mean(&c.2))
            };
            rows.push(AblationRow {
                id: format!("{}/{}", p.e.id, m.name()),
                seed_value: *seed_value,
                all_on: mean(diffs),
                off: off.iter().map(off_mean).collect(),
            });
        }
    }
    Ablation {
        mechanisms: ABLATIONS
            .iter()
            .map(|(n, _, what)| (n.to_string(), what.to_string()))
            .collect(),
        rows,
    }
}

/// The model's result pairs of one fsperf test at each device size (GiB), one seed per
/// point; a size whose run fails (ENOSPC: the test's files do not fit) is None.
fn fsperf_runs(
    spec: &Spec,
    e: &Experiment,
    sizes: &[u64],
    jobs: usize,
    progress: &OnTick,
) -> Result<Vec<Option<crate::workload::compare::Pair>>, String> {
    let dev = DiskConfig::resolve(&spec.device).map_err(|x| x.to_string())?;
    let (b, c) = (parse_policy(e.baseline)?, parse_policy(e.current)?);
    let values: Vec<String> = sizes.iter().map(|g| format!("{g}g")).collect();
    let vary = ("fs_size".to_string(), values.clone());
    if let Ok(p) = compare(
        spec,
        &dev,
        &b,
        &c,
        spec.seed,
        1,
        Some(&vary),
        jobs,
        progress,
    ) {
        return Ok(p.into_iter().map(Some).collect());
    }
    // One size failed: run them one by one so the others still count.
    let mut out = Vec::new();
    for v in values {
        let one = ("fs_size".to_string(), vec![v]);
        let r = compare(spec, &dev, &b, &c, spec.seed, 1, Some(&one), jobs, progress);
        out.push(r.ok().and_then(|p| p.into_iter().next()));
    }
    Ok(out)
}

/// Each seed-004 figure's change (linux-5.13 → linux-5.14) against the device's size: the
/// seed does not give fsperf's device, so the rows' default (1 TiB) is one point of many.
/// A point whose change has the seed's direction is marked `(seed's direction)`.
fn fsperf_curves(
    l: &Lengths,
    only: &Selection,
    jobs: usize,
    progress: &OnTick,
    failures: &mut Vec<String>,
) -> Result<Vec<Curve>, String> {
    let mut curves = Vec::new();
    if l.fsperf_sizes.is_empty() {
        return Ok(curves);
    }
    let (dio, other) = l.fsperf.unwrap_or(FSPERF_CURVE_LENGTHS);
    for e in fsperf_seeds().into_iter().filter(|e| only.has(e.id)) {
        let mut spec = Spec::load(e.workload).map_err(|x| x.to_string())?;
        spec.duration = if spec.direct { dio } else { other };
        spec.warmup = 0;
        let runs = fsperf_runs(&spec, &e, l.fsperf_sizes, jobs, progress)?;
        for p in runs.iter().flatten() {
            failures.extend(p.violation_lines(&format!("{} curve", e.id)));
        }
        let failed: Vec<String> = l
            .fsperf_sizes
            .iter()
            .zip(&runs)
            .filter(|(_, r)| r.is_none())
            .map(|(g, _)| format!("{g}g"))
            .collect();
        for &(m, sb, sc) in &e.figures {
            let seed_change = (sc - sb) / sb * 100.0;
            let points = l
                .fsperf_sizes
                .iter()
                .zip(&runs)
                .filter_map(|(&g, r)| {
                    let p = r.as_ref()?;
                    let (x, y) = (m.of(&p.baseline[0])?, m.of(&p.current[0])?);
                    let change = (y - x) / x * 100.0;
                    change.is_finite().then(|| CurvePoint {
                        param: format!(
                            "fs_size={g}g{}",
                            if same_direction(change, seed_change) {
                                " (seed's direction)"
                            } else {
                                ""
                            }
                        ),
                        x: g as f64,
                        y: change,
                    })
                })
                .collect();
            curves.push(Curve {
                id: format!("{}/{}/vs-device-size", e.id, m.name()),
                x: if failed.is_empty() {
                    "device size, GiB".into()
                } else {
                    format!("device size, GiB (no run at {}: ENOSPC)", failed.join(", "))
                },
                y: format!(
                    "{} change {} → {}, % (seed: {seed_change:.2} %; the rows use 1 TiB)",
                    m.name(),
                    e.baseline,
                    e.current,
                ),
                points,
                seed_point: None,
            });
        }
    }
    Ok(curves)
}

/// Commit intervals of the R7 curve, in seconds.
pub const R7_INTERVALS: [u64; 5] = [1, 2, 5, 10, 30];

/// R7's regression (requests/s without the fix vs with it, %) against x = sysbench round
/// time / commit interval, one point per commit interval. A round is `fsync_freq` writes
/// (one global count) followed by one fsync of every file.
fn r7_curve(
    duration: u64,
    jobs: usize,
    progress: &OnTick,
    failures: &mut Vec<String>,
) -> Result<Curve, String> {
    let mut spec = Spec::load("sysbench-fileio").map_err(|x| x.to_string())?;
    spec.duration = duration;
    let dev = DiskConfig::resolve(&spec.device).map_err(|x| x.to_string())?;
    let (b, c) = (parse_policy("linux-5.11:-R7")?, parse_policy("linux-5.11")?);
    let values: Vec<String> = R7_INTERVALS.iter().map(|s| format!("{s}s")).collect();
    let vary = ("commit_interval".to_string(), values);
    let pairs = compare(
        &spec,
        &dev,
        &b,
        &c,
        spec.seed,
        1,
        Some(&vary),
        jobs,
        progress,
    )?;
    for p in &pairs {
        failures.extend(p.violation_lines("001-sysbench R7 curve"));
    }
    let mut points = Vec::new();
    for (p, secs) in pairs.iter().zip(R7_INTERVALS) {
        let (pre, post) = (&p.baseline[0], &p.current[0]);
        let rate = post.per_s();
        let round = spec.fsync_freq as f64 / rate.max(f64::MIN_POSITIVE);
        points.push(CurvePoint {
            param: format!("commit={secs}s"),
            x: round / secs as f64,
            y: (pre.per_s() - rate) / rate * 100.0,
        });
    }
    // Seed 001: 16.04 req/s with the fix, 3.39 without; sysbench counts writes as requests,
    // so a round of 100 writes takes 100 / 16.04 s against btrfs's 30 s commit interval.
    let seed_x = 100.0 / 16.04 / 30.0;
    Ok(Curve {
        id: "001-sysbench/r7-regression-vs-round-over-commit".into(),
        x: "sysbench round time / commit interval".into(),
        y: "requests/s change without R7's fix, %".into(),
        points,
        seed_point: Some((
            seed_x,
            (3.39 - 16.04) / 16.04 * 100.0,
            "round = 100 writes at 16.04 req/s (the btrfs sysbench thread, with the fix), commit interval 30 s"
                .into(),
        )),
    })
}

/// The btrfs scrub thread's rows for `fsyncsim validate`: the rate and duration changes
/// from the framework (v5.16) to path readahead (v5.17), and the framework's absolute rate
/// and duration, over
/// `seeds` filesystems (seeds 1..=n) on `hdd-smr-5400`, at the seed's full file count (a
/// scrub takes well under a second; scaled down, the metadata fits in the drive's read cache
/// and the difference disappears).
fn seed002_rows(seeds: u64) -> Result<Vec<Row>, String> {
    use crate::btrfs::layout::LayoutParams;
    use crate::btrfs::scrub::{compare, seed002, ScrubPolicy, ScrubResult};
    let device = DiskConfig::resolve("hdd-smr-5400").map_err(|e| e.to_string())?;
    let layout = LayoutParams::default();
    let pol = [ScrubPolicy::ReadaFramework, ScrubPolicy::PathReada];
    let mut runs = Vec::new();
    for seed in 1..=seeds.max(1) {
        let r = compare(&layout, &device, seed, &pol)?;
        runs.push((r[0].clone(), r[1].clone()));
    }
    let seed_tag = "002".to_string();
    let change = |f: &dyn Fn(&ScrubResult) -> f64| -> Vec<f64> {
        runs.iter()
            .map(|(a, b)| (f(b) / f(a) - 1.0) * 100.0)
            .collect()
    };
    let rate = |r: &ScrubResult| r.rate_mib_s();
    let dur = |r: &ScrubResult| r.duration as f64 / 1e9;
    let level =
        |f: &dyn Fn(&ScrubResult) -> f64| -> Vec<f64> { runs.iter().map(|(a, _)| f(a)).collect() };
    // (id, what, seed value, model samples, unit, a change row rather than a level)
    let table = [
        (
            "002-scrub/rate",
            "scrub rate change, reada → path-reada (hdd-smr-5400)",
            (seed002::RATE_AFTER / seed002::RATE_BEFORE - 1.0) * 100.0,
            change(&rate),
            "%",
            true,
        ),
        (
            "002-scrub/duration",
            "scrub duration change, reada → path-reada (the seed's \"-5.67 %\")",
            (seed002::DURATION_AFTER / seed002::DURATION_BEFORE - 1.0) * 100.0,
            change(&dur),
            "%",
            true,
        ),
        (
            "002-scrub/rate/level",
            "scrub rate under reada, MiB/s",
            seed002::RATE_BEFORE,
            level(&rate),
            "MiB/s",
            false,
        ),
        (
            "002-scrub/duration/level",
            "scrub duration under reada, s",
            seed002::DURATION_BEFORE,
            level(&dur),
            "s",
            false,
        ),
    ];
    let rows = table
        .into_iter()
        .map(|(id, what, seed_value, vals, unit, delta)| {
            Row::from_samples(
                id.into(),
                seed_tag.clone(),
                what.into(),
                seed_value,
                &vals,
                unit,
                delta,
            )
        })
        .collect();
    Ok(rows)
}

#[cfg(test)]
mod full_length_tests {
    use super::*;

    /// The full run keeps the fsperf tests' own lengths except the random-write tests',
    /// whose memory grows with their items: those stop at `FSPERF_RANDWRITE_MAX`.
    #[test]
    fn the_full_run_cuts_only_the_random_write_tests() {
        let l = Lengths::full();
        let mut cut = 0;
        for e in experiments()
            .into_iter()
            .filter(|e| e.id.starts_with("004-"))
        {
            let own = Spec::load(e.workload).unwrap();
            if own.kind != crate::workload::spec::Kind::Fio {
                continue;
            }
            let p = Planned::new(e, &l).unwrap();
            let total = p.spec.duration + p.spec.warmup;
            if p.spec.rw == crate::workload::spec::FioRw::RandWrite {
                assert!(total <= FSPERF_RANDWRITE_MAX, "{}", p.e.id);
                cut += usize::from(p.spec.duration < own.duration);
            } else {
                assert_eq!(p.spec.duration, own.duration, "{}", p.e.id);
            }
        }
        // randwrite2xram: 300 s after a 10 s ramp (dio4kbs16threads' 60 s fit).
        assert_eq!(cut, 1);
    }
}

#[cfg(test)]
mod curve_invariant_tests {
    use super::*;

    /// A curve's run that breaks an invariant is named with the curve, its point and its
    /// side; the release preset's runs at the same points give no line.
    #[test]
    fn a_curve_point_whose_run_breaks_an_invariant_is_named() {
        let mut spec = Spec::load("dbench").unwrap();
        spec.clients = 8;
        spec.duration = sim::S;
        spec.warmup = 0;
        let dev = DiskConfig::resolve(&spec.device).unwrap();
        let (b, c) = (
            parse_policy("linux-5.11").unwrap(),
            parse_policy("linux-5.11:+sync-log-no-super-wait").unwrap(),
        );
        let vary = ("commit_interval".to_string(), vec!["30s".to_string()]);
        let quiet = crate::workload::compare::no_progress();
        let pairs = compare(&spec, &dev, &b, &c, 1, 1, Some(&vary), 1, &quiet).unwrap();
        let failures = pairs[0].violation_lines("t curve");
        assert_eq!(failures.len(), 1, "{failures:?}");
        let named = format!("t curve at 30s under {}, seed 1: S1 at ", c.name);
        assert!(failures[0].starts_with(&named), "{failures:?}");
        let clean = compare(&spec, &dev, &b, &b, 1, 1, Some(&vary), 1, &quiet).unwrap();
        assert!(clean[0].violation_lines("t curve").is_empty());
    }
}
