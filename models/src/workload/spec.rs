//! Workload files (`scenarios/workloads/*.toml`): a dbench-, sysbench-fileio- or fs_mark-like
//! load and its parameters, parsed with `file:line` errors and overridable from the CLI.

use crate::block::DiskConfig;
use serde::Deserialize;
use sim::Nanos;
use std::collections::BTreeMap;
use toml::Spanned;

/// The workload files shipped inside the binary: (file name, text).
pub const BUILTIN: [(&str, &str); 12] = [
    (
        "dbench.toml",
        include_str!("../../../scenarios/workloads/dbench.toml"),
    ),
    (
        "sysbench-fileio.toml",
        include_str!("../../../scenarios/workloads/sysbench-fileio.toml"),
    ),
    (
        "fs-mark.toml",
        include_str!("../../../scenarios/workloads/fs-mark.toml"),
    ),
    (
        "fs-mark-fio-ext4.toml",
        include_str!("../../../scenarios/workloads/fs-mark-fio-ext4.toml"),
    ),
    (
        "fs-mark-fio-ext3.toml",
        include_str!("../../../scenarios/workloads/fs-mark-fio-ext3.toml"),
    ),
    (
        "fs-mark-fio-jbd-refine.toml",
        include_str!("../../../scenarios/workloads/fs-mark-fio-jbd-refine.toml"),
    ),
    (
        "fsperf-dio4kbs16threads.toml",
        include_str!("../../../scenarios/workloads/fsperf-dio4kbs16threads.toml"),
    ),
    (
        "fsperf-randwrite2xram.toml",
        include_str!("../../../scenarios/workloads/fsperf-randwrite2xram.toml"),
    ),
    (
        "fsperf-emptyfiles500k.toml",
        include_str!("../../../scenarios/workloads/fsperf-emptyfiles500k.toml"),
    ),
    (
        "fsperf-dbench60.toml",
        include_str!("../../../scenarios/workloads/fsperf-dbench60.toml"),
    ),
    (
        "read-latency-jbd-refine.toml",
        include_str!("../../../scenarios/workloads/read-latency-jbd-refine.toml"),
    ),
    (
        "kbuild.toml",
        include_str!("../../../scenarios/workloads/kbuild.toml"),
    ),
];

/// The fsperf tests (seed 004) among the built-in workloads, in the seed's table order.
pub const FSPERF: [&str; 3] = ["emptyfiles500k", "dio4kbs16threads", "randwrite2xram"];

/// Which load generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// dbench 4 with the default loadfile's operation mix.
    Dbench,
    /// sysbench fileio, rndwr.
    SysbenchFileio,
    /// fs_mark: create, write, fsync, close per file.
    FsMark,
    /// fio (as fsperf runs it): `numjobs` threads doing `rw` over their own files.
    Fio,
    /// kbuild with ccache: `make -j` jobs compiling units through a ccache on this filesystem.
    Kbuild,
    /// Streaming writers and readers that sleep, then time one read (jbd commit 2db938bee32e).
    ReadLatency,
}

/// fio's `rw` for a fio workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioRw {
    /// rw=randwrite: random `bs` writes (buffered, or O_DIRECT with `direct = true`).
    RandWrite,
    /// ioengine=filecreate: create each file (open(O_CREAT) + close), no I/O.
    FileCreate,
}

impl Kind {
    /// Names accepted in `kind = "…"`.
    pub const NAMES: [&'static str; 6] = [
        "dbench",
        "sysbench-fileio",
        "fs-mark",
        "fio",
        "kbuild",
        "read-latency",
    ];

    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "dbench" => Kind::Dbench,
            "sysbench-fileio" => Kind::SysbenchFileio,
            "fs-mark" => Kind::FsMark,
            "fio" => Kind::Fio,
            "kbuild" => Kind::Kbuild,
            "read-latency" => Kind::ReadLatency,
            _ => return None,
        })
    }

    /// The name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Operations whose `[cpu]` time it spends, by name (the keys `[cpu]` accepts).
    pub fn cpu_ops(self) -> &'static [&'static str] {
        match self {
            Kind::Dbench => &DBENCH_CPU,
            Kind::FsMark => &["close"],
            Kind::Kbuild => &["preprocess", "compile", "copy"],
            Kind::SysbenchFileio | Kind::Fio | Kind::ReadLatency => &[],
        }
    }

    /// Operation kinds it reports, in report order.
    pub fn ops(self) -> &'static [&'static str] {
        match self {
            Kind::Dbench => &DBENCH_OPS,
            Kind::SysbenchFileio => &["write", "fsync"],
            Kind::FsMark => &["create", "write", "fsync", "close", "unlink", "read"],
            Kind::Fio => &["write", "create"],
            Kind::Kbuild => &crate::workload::kbuild::OPS,
            Kind::ReadLatency => &["write", "read"],
        }
    }
}

/// dbench's operations, in the order dbench prints them.
pub const DBENCH_OPS: [&str; 16] = [
    "NTCreateX",
    "Close",
    "Rename",
    "Unlink",
    "Deltree",
    "Mkdir",
    "Qpathinfo",
    "Qfileinfo",
    "Qfsinfo",
    "Sfileinfo",
    "Find",
    "WriteX",
    "ReadX",
    "LockX",
    "UnlockX",
    "Flush",
];

/// dbench's `[cpu]` keys: "open" (NTCreateX's open) and its operations.
const DBENCH_CPU: [&str; 17] = {
    let mut keys = ["open"; 17];
    let mut i = 0;
    while i < DBENCH_OPS.len() {
        keys[i + 1] = DBENCH_OPS[i];
        i += 1;
    }
    keys
};

/// A bad workload file: `file:line: what was expected` (the scenario files' error type).
pub type SpecError = crate::scenario::ScenarioError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: String,
    kind: Spanned<String>,
    title: String,
    clients: Option<Spanned<i64>>,
    threads: Option<Spanned<i64>>,
    duration: Spanned<String>,
    warmup: Option<Spanned<String>>,
    device: Option<Spanned<String>>,
    fs: Option<Spanned<String>>,
    mount: Option<Spanned<String>>,
    cpus: Option<Spanned<i64>>,
    commit_interval: Option<Spanned<String>>,
    seed: Option<u64>,
    sync_open: Option<bool>,
    files: Option<Spanned<i64>>,
    file_size: Option<Spanned<String>>,
    block_size: Option<Spanned<String>>,
    fsync_freq: Option<Spanned<i64>>,
    files_per_loop: Option<Spanned<i64>>,
    mix: Option<BTreeMap<String, Spanned<i64>>>,
    cpu: Option<BTreeMap<String, Spanned<String>>>,
    read_sizes: Option<Vec<Spanned<Vec<i64>>>>,
    write_sizes: Option<Vec<Spanned<Vec<i64>>>>,
    readers: Option<Spanned<i64>>,
    reader_file_size: Option<Spanned<String>>,
    reader_block: Option<Spanned<String>>,
    rw: Option<Spanned<String>>,
    direct: Option<bool>,
    units: Option<Spanned<i64>>,
    hit_ratio: Option<Spanned<f64>>,
    page_cache: Option<Spanned<f64>>,
    object_size: Option<Spanned<String>>,
    manifest_size: Option<Spanned<String>>,
    memory: Option<Spanned<String>>,
    baseline: Option<Spanned<String>>,
    current: Option<Spanned<String>>,
    read_size: Option<Spanned<String>>,
    read_interval: Option<Spanned<String>>,
    costs: Option<BTreeMap<String, Spanned<u64>>>,
}

/// A parsed, validated workload.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Workload name.
    pub name: String,
    /// Generator.
    pub kind: Kind,
    /// One-line description.
    pub title: String,
    /// Clients (dbench) or threads (sysbench, fs_mark).
    pub clients: u32,
    /// Measured virtual time.
    pub duration: Nanos,
    /// Virtual time run before measuring (dbench: duration / 5).
    pub warmup: Nanos,
    /// Device preset or file.
    pub device: String,
    /// btrfs commit interval (mount -o commit=, default 30 s).
    pub commit_interval: Nanos,
    /// The filesystem and its mount options (`fs`, `mount`).
    pub mount: crate::mount::Mount,
    /// CPU cores every simulated CPU cost runs on (round robin); None = unlimited.
    pub cpus: Option<u64>,
    /// Default seed.
    pub seed: u64,
    /// dbench -s: files opened O_SYNC, every WriteX synchronous.
    pub sync_open: bool,
    /// sysbench: number of files; fio: files per job (nrfiles); fs_mark: unused.
    pub files: u32,
    /// sysbench, fs_mark, fio: bytes per file (fio: size / nrfiles).
    pub file_size: u64,
    /// Bytes per write request.
    pub block_size: u64,
    /// sysbench --file-fsync-freq: fsync every file after this many writes (0: never).
    pub fsync_freq: u64,
    /// fs_mark -n: files per thread per loop (then unlinked).
    pub files_per_loop: u32,
    /// dbench: relative operation frequencies, by `DBENCH_OPS` index.
    pub mix: Vec<u64>,
    /// CPU time of operations that stay in the page cache or VFS, by name.
    pub cpu: BTreeMap<String, Nanos>,
    /// dbench ReadX sizes: (bytes, weight).
    pub read_sizes: Vec<(u64, u64)>,
    /// dbench WriteX sizes: (bytes, weight).
    pub write_sizes: Vec<(u64, u64)>,
    /// fs_mark: concurrent buffered sequential readers (fio, rw=read), ext3/ext4 only.
    pub readers: u32,
    /// Each reader's file (laid out before the run, not cached).
    pub reader_file_size: u64,
    /// Bytes per read(2) call (fio's bs; default 4 KiB, fio's default).
    pub reader_block: u64,
    /// fio: what each job does.
    pub rw: FioRw,
    /// fio --direct=1: O_DIRECT writes.
    pub direct: bool,
    /// kbuild: compilation units per build.
    pub units: u32,
    /// kbuild: share of units ccache finds in its cache (the rest compile and are stored).
    pub hit_ratio: f64,
    /// kbuild: share of cache entries already in the page cache when the build starts.
    pub page_cache: f64,
    /// kbuild: bytes of a cached object file.
    pub object_size: u64,
    /// kbuild: bytes of a ccache manifest.
    pub manifest_size: u64,
    /// btrfs: the device's size in bytes (mkfs on the whole device; None: the model's
    /// default, `btrfs::Costs::fs_size`). fsperf's device size is not known.
    pub fs_size: Option<u64>,
    /// btrfs: share (0..1) of the device already holding data when the run starts.
    pub fill: f64,
    /// btrfs: `[costs]` overrides (`fsyncsim list --costs`), e.g. a mechanism switched off
    /// for ablation (`--vary costs.tree_locks=0,1`).
    pub costs: BTreeMap<String, u64>,
    /// read-latency: bytes each timed read reads.
    pub read_size: u64,
    /// read-latency: how long a reader sleeps before each timed read.
    pub read_interval: Nanos,
    /// The policy `compare` uses as baseline when none is given (the seed's "before").
    pub baseline: Option<String>,
    /// The policy `workload` runs and `compare` uses as current when none is given.
    pub current: Option<String>,
    /// Where it came from.
    pub origin: String,
}

fn line(text: &str, offset: usize) -> usize {
    crate::units::line_of(text, offset)
}

/// One workload file being parsed: its text and name, for `file:line` errors.
struct Cx<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Cx<'_> {
    fn err(&self, offset: usize, message: String) -> SpecError {
        SpecError {
            location: format!("{}:{}", self.origin, line(self.text, offset)),
            message,
        }
    }

    fn count(
        &self,
        v: &Option<Spanned<i64>>,
        what: &str,
        max: i64,
        default: i64,
    ) -> Result<u64, SpecError> {
        match v {
            Some(s) if (1..=max).contains(s.get_ref()) => Ok(*s.get_ref() as u64),
            Some(s) => Err(self.err(
                s.span().start,
                format!("invalid {what} {}: expected 1..={max}", s.get_ref()),
            )),
            None => Ok(default as u64),
        }
    }

    fn dur(&self, v: &Spanned<String>, what: &str, zero_ok: bool) -> Result<Nanos, SpecError> {
        sim::parse_duration(v.get_ref())
            .ok()
            .filter(|&d| (zero_ok || d > 0) && d <= 24 * 3600 * sim::S)
            .ok_or_else(|| {
                self.err(
                    v.span().start,
                    format!(
                        "invalid {what} '{}': expected a duration like 300s (at most 24h)",
                        v.get_ref()
                    ),
                )
            })
    }

    fn size(
        &self,
        v: &Option<Spanned<String>>,
        what: &str,
        default: u64,
    ) -> Result<u64, SpecError> {
        match v {
            Some(s) => crate::units::parse_size(s.get_ref())
                .ok()
                .filter(|&n| n > 0 && n <= 1 << 40)
                .ok_or_else(|| {
                    self.err(
                        s.span().start,
                        format!(
                            "invalid {what} '{}': expected a size like 16k (at most 1T)",
                            s.get_ref()
                        ),
                    )
                }),
            None => Ok(default),
        }
    }

    fn share(&self, v: &Option<Spanned<f64>>, what: &str, default: f64) -> Result<f64, SpecError> {
        match v {
            Some(v) if (0.0..=1.0).contains(v.get_ref()) => Ok(*v.get_ref()),
            Some(v) => Err(self.err(
                v.span().start,
                format!("invalid {what} {}: expected 0..=1", v.get_ref()),
            )),
            None => Ok(default),
        }
    }

    fn policy(&self, v: &Option<Spanned<String>>) -> Result<Option<String>, SpecError> {
        match v {
            Some(v) => crate::kernel::parse_policy(v.get_ref())
                .map(|_| Some(v.get_ref().clone()))
                .map_err(|m| self.err(v.span().start, m)),
            None => Ok(None),
        }
    }

    fn sizes(
        &self,
        v: &Option<Vec<Spanned<Vec<i64>>>>,
        what: &str,
    ) -> Result<Vec<(u64, u64)>, SpecError> {
        let mut out = Vec::new();
        for s in v.iter().flatten() {
            let &[b, w] = s.get_ref().as_slice() else {
                return Err(self.err(
                    s.span().start,
                    format!(
                        "invalid {what} entry of {} elements: expected [bytes, weight]",
                        s.get_ref().len()
                    ),
                ));
            };
            if !(1..=1 << 30).contains(&b) || w < 0 {
                return Err(self.err(
                    s.span().start,
                    format!("invalid {what} entry [{b}, {w}]: expected [bytes 1..1G, weight >= 0]"),
                ));
            }
            out.push((b as u64, w as u64));
        }
        if out.iter().all(|&(_, w)| w == 0) {
            out = vec![(4096, 1)];
        }
        Ok(out)
    }

    fn kind(&self, f: &SpecFile) -> Result<Kind, SpecError> {
        Kind::parse(f.kind.get_ref()).ok_or_else(|| {
            self.err(
                f.kind.span().start,
                format!(
                    "unknown workload kind '{}': expected one of {}",
                    f.kind.get_ref(),
                    Kind::NAMES.join(", ")
                ),
            )
        })
    }

    fn rw(&self, f: &SpecFile, kind: Kind) -> Result<FioRw, SpecError> {
        Ok(match &f.rw {
            Some(v) if kind == Kind::Fio => match v.get_ref().as_str() {
                "randwrite" => FioRw::RandWrite,
                "filecreate" => FioRw::FileCreate,
                o => {
                    return Err(self.err(
                        v.span().start,
                        format!("unknown rw '{o}': expected randwrite or filecreate"),
                    ))
                }
            },
            Some(v) => {
                return Err(self.err(
                    v.span().start,
                    format!("'rw' belongs to a fio workload, not {}", kind.name()),
                ))
            }
            None => FioRw::RandWrite,
        })
    }

    fn warmup(&self, f: &SpecFile) -> Result<Nanos, SpecError> {
        match &f.warmup {
            Some(w) => self.dur(w, "warmup", true),
            None => Ok(0),
        }
    }

    /// `clients` (dbench) or `threads` (the others); the other key is an error.
    fn clients(&self, f: &SpecFile, kind: Kind) -> Result<u32, SpecError> {
        let clients_key = if kind == Kind::Dbench {
            &f.clients
        } else {
            &f.threads
        };
        let wrong_key = if kind == Kind::Dbench {
            f.threads
                .as_ref()
                .map(|s| (s.span().start, "threads", "clients"))
        } else {
            f.clients
                .as_ref()
                .map(|s| (s.span().start, "clients", "threads"))
        };
        if let Some((at, bad, good)) = wrong_key {
            return Err(self.err(
                at,
                format!("a {} workload has '{good}', not '{bad}'", kind.name()),
            ));
        }
        Ok(self.count(clients_key, "number of clients/threads", 4096, 1)? as u32)
    }

    /// `device`, `commit_interval`, `fs` and `mount`: the device name, the commit interval,
    /// the filesystem and its options (commit= folded in), and whether it is ext3/ext4.
    fn mount_keys(
        &self,
        f: &SpecFile,
    ) -> Result<
        (
            String,
            Nanos,
            crate::mount::FsKind,
            crate::mount::MountOptions,
            bool,
        ),
        SpecError,
    > {
        let device = match &f.device {
            Some(d) => {
                DiskConfig::resolve(d.get_ref())
                    .map_err(|e| self.err(d.span().start, e.referenced()))?;
                d.get_ref().clone()
            }
            None => "nvme".to_string(),
        };
        let commit_interval = match &f.commit_interval {
            Some(c) => crate::mount::parse_commit_interval(c.get_ref())
                .map_err(|m| self.err(c.span().start, m))?,
            None => 30 * sim::S,
        };
        let fs = match &f.fs {
            Some(v) => {
                crate::mount::FsKind::parse(v.get_ref()).map_err(|m| self.err(v.span().start, m))?
            }
            None => crate::mount::FsKind::default(),
        };
        let options = match &f.mount {
            Some(v) => crate::mount::MountOptions::parse_for(fs, v.get_ref())
                .map_err(|m| self.err(v.span().start, m))?,
            None => crate::mount::MountOptions::default(),
        };
        if let (Some(_), Some(c)) = (options.commit, &f.commit_interval) {
            return Err(self.err(
                c.span().start,
                "commit_interval and mount option commit= both given: expected one".into(),
            ));
        }
        let ext = matches!(fs, crate::mount::FsKind::Ext3 | crate::mount::FsKind::Ext4);
        let given = options
            .commit
            .or(f.commit_interval.as_ref().map(|_| commit_interval));
        let commit_interval = options.commit.unwrap_or(commit_interval);
        // One place holds the interval: `commit=` is folded into it (ext3/ext4: into the
        // mount's commit=, which the journal reads; 5 s when neither is given).
        let options = crate::mount::MountOptions {
            commit: if ext { given } else { None },
            ..options
        };
        Ok((device, commit_interval, fs, options, ext))
    }

    fn readers(&self, f: &SpecFile, kind: Kind, ext: bool) -> Result<u32, SpecError> {
        Ok(match &f.readers {
            Some(v) if !ext || !matches!(kind, Kind::FsMark | Kind::ReadLatency) => {
                return Err(self.err(
                    v.span().start,
                    "'readers' is for fs-mark and read-latency workloads on ext3/ext4".into(),
                ))
            }
            Some(v) if (0..=64).contains(v.get_ref()) => *v.get_ref() as u32,
            Some(v) => {
                return Err(self.err(
                    v.span().start,
                    format!("invalid readers {}: expected 0..=64", v.get_ref()),
                ))
            }
            None => 0,
        })
    }

    /// Keys of one kind only (kbuild's, read-latency's) and the kinds and keys that need
    /// ext3/ext4: an error at the first one given where it does not belong.
    fn kind_only_keys(&self, f: &SpecFile, kind: Kind, ext: bool) -> Result<(), SpecError> {
        // Keys of one kind only: an error at the first one given to another kind.
        let only_for =
            |owner: Kind, at: &[Option<usize>], names: &str| match at.iter().flatten().next() {
                Some(&at) if kind != owner => Err(self.err(
                    at,
                    format!(
                        "{names} belong to a {} workload, not {}",
                        owner.name(),
                        kind.name()
                    ),
                )),
                _ => Ok(()),
            };
        only_for(
            Kind::Kbuild,
            &[
                f.units.as_ref().map(|v| v.span().start),
                f.hit_ratio.as_ref().map(|v| v.span().start),
                f.page_cache.as_ref().map(|v| v.span().start),
                f.object_size.as_ref().map(|v| v.span().start),
                f.manifest_size.as_ref().map(|v| v.span().start),
            ],
            "units, hit_ratio, page_cache, object_size and manifest_size",
        )?;
        only_for(
            Kind::ReadLatency,
            &[
                f.read_size.as_ref().map(|v| v.span().start),
                f.read_interval.as_ref().map(|v| v.span().start),
            ],
            "read_size and read_interval",
        )?;
        if matches!(kind, Kind::Kbuild | Kind::ReadLatency) && !ext {
            return Err(self.err(
                f.fs.as_ref().unwrap_or(&f.kind).span().start,
                format!(
                    "a {} workload runs on ext3 or ext4 (fs = \"ext3\")",
                    kind.name()
                ),
            ));
        }
        if let (Some(v), false) = (&f.memory, ext) {
            return Err(self.err(
                v.span().start,
                "'memory' (the dirty thresholds) is modelled for ext3/ext4 only".into(),
            ));
        }
        Ok(())
    }

    fn memory(&self, f: &SpecFile) -> Result<Option<u64>, SpecError> {
        Ok(match &f.memory {
            Some(v) => Some(
                crate::units::parse_size(v.get_ref())
                    .ok()
                    .filter(|&n| (1 << 20..=1 << 50).contains(&n))
                    .ok_or_else(|| {
                        self.err(
                            v.span().start,
                            format!(
                                "invalid memory '{}': expected a size like 4g (1m to 1P)",
                                v.get_ref()
                            ),
                        )
                    })?,
            ),
            None => None,
        })
    }

    fn cpus(&self, f: &SpecFile) -> Result<Option<u64>, SpecError> {
        Ok(match &f.cpus {
            Some(v) => Some(
                u64::try_from(*v.get_ref())
                    .ok()
                    .filter(|n| (1..=4096).contains(n))
                    .ok_or_else(|| {
                        self.err(
                            v.span().start,
                            format!("invalid cpus {}: expected an integer 1..=4096", v.get_ref()),
                        )
                    })?,
            ),
            None => None,
        })
    }

    /// The `[mix]` table: a weight per dbench operation (one > 0 for dbench).
    fn mix(&self, f: &SpecFile, kind: Kind) -> Result<Vec<u64>, SpecError> {
        let mut mix = vec![0u64; DBENCH_OPS.len()];
        for (k, v) in f.mix.iter().flatten() {
            let Some(i) = DBENCH_OPS.iter().position(|o| o == k) else {
                return Err(self.err(
                    v.span().start,
                    format!(
                        "unknown operation '{k}' in [mix]: expected one of {}",
                        DBENCH_OPS.join(", ")
                    ),
                ));
            };
            if *v.get_ref() < 0 {
                return Err(self.err(
                    v.span().start,
                    format!("invalid weight {} for {k}: expected >= 0", v.get_ref()),
                ));
            }
            mix[i] = *v.get_ref() as u64;
        }
        if kind == Kind::Dbench && mix.iter().all(|&w| w == 0) {
            // At the [mix] table, or at the kind that needs one.
            let at = crate::units::key_offset(self.text, &["mix"]).unwrap_or(f.kind.span().start);
            return Err(self.err(
                at,
                "a dbench workload needs a [mix] with at least one weight > 0".into(),
            ));
        }
        Ok(mix)
    }

    /// The `[cpu]` table: CPU time per operation of the kind.
    fn cpu(
        &self,
        f: &SpecFile,
        kind: Kind,
        mix: &[u64],
    ) -> Result<BTreeMap<String, Nanos>, SpecError> {
        let mut cpu = BTreeMap::new();
        for (k, v) in f.cpu.iter().flatten() {
            if !kind.cpu_ops().contains(&k.as_str()) {
                let expected = match kind.cpu_ops() {
                    [] => format!("none: a {} workload spends no [cpu] time", kind.name()),
                    ops => format!("one of {}", ops.join(", ")),
                };
                return Err(self.err(
                    v.span().start,
                    format!("unknown operation '{k}' in [cpu]: expected {expected}"),
                ));
            }
            let d = sim::parse_duration(v.get_ref())
                .ok()
                .filter(|&d| d <= sim::S)
                .ok_or_else(|| {
                    self.err(
                        v.span().start,
                        format!(
                            "invalid CPU time '{}' for {k}: expected a duration like 5us (at most 1s)",
                            v.get_ref()
                        ),
                    )
                })?;
            cpu.insert(k.clone(), d);
        }
        if kind == Kind::Dbench {
            self.dbench_cpu_only(f, mix, &cpu)?;
        }
        Ok(cpu)
    }

    /// dbench: a `[cpu]` time given for an operation that only costs CPU must be > 0, or a
    /// client could loop forever without virtual time moving; one not given is derived
    /// from the work (vfs_work.rs), never 0.
    fn dbench_cpu_only(
        &self,
        f: &SpecFile,
        mix: &[u64],
        cpu: &BTreeMap<String, Nanos>,
    ) -> Result<(), SpecError> {
        let cpu_only = [
            "open",
            "Close",
            "Qpathinfo",
            "Qfileinfo",
            "Qfsinfo",
            "Sfileinfo",
            "Find",
            "ReadX",
            "LockX",
            "UnlockX",
        ];
        for op in cpu_only {
            let used = matches!(op, "open" | "Close")
                || DBENCH_OPS
                    .iter()
                    .position(|o| *o == op)
                    .is_some_and(|i| mix[i] > 0);
            if used && cpu.get(op).is_some_and(|&d| d == 0) {
                // At the zero time, else at the [cpu] table, else at the kind.
                let at = f
                    .cpu
                    .as_ref()
                    .and_then(|c| c.get(op))
                    .map(|v| v.span().start)
                    .or_else(|| crate::units::key_offset(self.text, &["cpu"]))
                    .unwrap_or(f.kind.span().start);
                return Err(self.err(
                    at,
                    format!(
                        "[cpu] needs a CPU time > 0 for '{op}' (it never reaches the filesystem model; omit it to derive it from the work)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[costs]`: btrfs cost and switch overrides, each checked as a scenario's are.
    fn costs(&self, f: &SpecFile, ext: bool) -> Result<BTreeMap<String, u64>, SpecError> {
        let mut out = BTreeMap::new();
        let mut scratch = crate::btrfs::costs::Costs::default();
        for (k, v) in f.costs.iter().flatten() {
            if ext {
                return Err(self.err(
                    v.span().start,
                    "[costs] belong to a btrfs workload, not ext3/ext4".into(),
                ));
            }
            scratch
                .set_checked(k, *v.get_ref())
                .map_err(|m| self.err(v.span().start, m))?;
            out.insert(k.clone(), *v.get_ref());
        }
        Ok(out)
    }

    fn fsync_freq(&self, f: &SpecFile) -> Result<u64, SpecError> {
        match &f.fsync_freq {
            Some(s) if *s.get_ref() >= 0 => Ok(*s.get_ref() as u64),
            Some(s) => Err(self.err(
                s.span().start,
                format!("invalid fsync_freq {}: expected >= 0", s.get_ref()),
            )),
            None => Ok(100),
        }
    }
}

impl Spec {
    /// Parses a workload file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Spec, SpecError> {
        let cx = Cx { text, origin };
        let f: SpecFile = toml::from_str(text).map_err(|e| {
            let (location, message) = crate::units::toml_error(text, origin, &e);
            SpecError { location, message }
        })?;
        // The checks run in this order: a file's first error is the one reported.
        let kind = cx.kind(&f)?;
        let rw = cx.rw(&f, kind)?;
        let clients = cx.clients(&f, kind)?;
        let duration = cx.dur(&f.duration, "duration", false)?;
        let warmup = cx.warmup(&f)?;
        let (device, commit_interval, fs, options, ext) = cx.mount_keys(&f)?;
        let readers = cx.readers(&f, kind, ext)?;
        cx.kind_only_keys(&f, kind, ext)?;
        let hit_ratio = cx.share(&f.hit_ratio, "hit_ratio", 1.0)?;
        let page_cache = cx.share(&f.page_cache, "page_cache", 0.0)?;
        let mount = crate::mount::Mount {
            no_holes: false,
            fs,
            options,
            memory: cx.memory(&f)?,
        };
        let (baseline, current) = (cx.policy(&f.baseline)?, cx.policy(&f.current)?);
        let cpus = cx.cpus(&f)?;
        let mix = cx.mix(&f, kind)?;
        let cpu = cx.cpu(&f, kind, &mix)?;
        Ok(Spec {
            kind,
            clients,
            duration,
            warmup,
            device,
            commit_interval,
            mount,
            cpus,
            seed: f.seed.unwrap_or(1),
            sync_open: f.sync_open.unwrap_or(false),
            readers,
            reader_file_size: cx.size(&f.reader_file_size, "reader_file_size", 4 << 30)?,
            reader_block: cx.size(&f.reader_block, "reader_block", 4 << 10)?,
            files: cx.count(&f.files, "number of files", 1 << 20, 128)? as u32,
            file_size: cx.size(&f.file_size, "file_size", 64 << 20)?,
            block_size: cx.size(&f.block_size, "block_size", 16 << 10)?,
            fsync_freq: cx.fsync_freq(&f)?,
            files_per_loop: cx.count(&f.files_per_loop, "files_per_loop", 1 << 20, 1000)? as u32,
            mix,
            cpu,
            read_sizes: cx.sizes(&f.read_sizes, "read_sizes")?,
            write_sizes: cx.sizes(&f.write_sizes, "write_sizes")?,
            rw,
            direct: f.direct.unwrap_or(false),
            baseline,
            current,
            units: cx.count(&f.units, "number of units", 1 << 20, 2000)? as u32,
            hit_ratio,
            page_cache,
            object_size: cx.size(&f.object_size, "object_size", 16 << 10)?,
            manifest_size: cx.size(&f.manifest_size, "manifest_size", 4 << 10)?,
            fs_size: None,
            fill: 0.0,
            costs: cx.costs(&f, ext)?,
            read_size: cx.size(&f.read_size, "read_size", 1 << 20)?,
            read_interval: match &f.read_interval {
                Some(v) => cx.dur(v, "read_interval", false)?,
                None => 5 * sim::S,
            },
            name: f.name,
            title: f.title,
            origin: origin.to_string(),
        })
    }

    /// The built-in workloads.
    pub fn builtin() -> Vec<Spec> {
        BUILTIN
            .iter()
            .map(|(file, text)| {
                Spec::parse(text, &format!("scenarios/workloads/{file}"))
                    .unwrap_or_else(|e| panic!("built-in workload is invalid: {e}"))
            })
            .collect()
    }

    /// A built-in workload by name, or a workload file by path.
    pub fn load(spec: &str) -> Result<Spec, SpecError> {
        crate::scenario::load_named(
            spec,
            Spec::builtin(),
            |s| &s.name,
            Spec::parse,
            "workload",
            "WORKLOAD",
        )
    }

    /// CPU time of a named operation (0 when the file gives none).
    pub fn cpu_of(&self, op: &str) -> Nanos {
        self.cpu.get(op).copied().unwrap_or(0)
    }

    /// Parameters `--vary` accepts.
    pub const VARY: [&'static str; 12] = [
        "clients",
        "cpus",
        "threads",
        "queue_depth",
        "hw_queues",
        "parallelism",
        "commit_interval",
        "block_size",
        "hit_ratio",
        "page_cache",
        "fs_size",
        "fill",
    ];

    /// `--vary costs.KEY=value`: a btrfs [costs] override, checked as a file's are.
    fn set_cost(&mut self, key: &str, value: &str) -> Result<(), String> {
        if self.mount.fs != crate::mount::FsKind::Btrfs {
            return Err(format!(
                "costs.{key}: [costs] belong to btrfs, not this workload's filesystem"
            ));
        }
        let x = value
            .parse::<u64>()
            .map_err(|_| format!("invalid costs.{key} '{value}': expected an integer >= 0"))?;
        crate::btrfs::costs::Costs::default().set_checked(key, x)?;
        self.costs.insert(key.to_string(), x);
        Ok(())
    }

    /// Applies one `--vary`-style override (`name`, `value`) to the workload or `device`.
    pub fn set(&mut self, device: &mut DiskConfig, name: &str, value: &str) -> Result<(), String> {
        let int = |v: &str, max: u64| {
            v.parse::<u64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| format!("invalid {name} '{v}': expected an integer 1..={max}"))
        };
        if let Some(key) = name.strip_prefix("costs.") {
            return self.set_cost(key, value);
        }
        match name {
            "clients" | "threads" => self.clients = int(value, 4096)? as u32,
            "cpus" => {
                self.cpus = match value {
                    "unlimited" => None,
                    v => Some(int(v, 4096)?),
                }
            }
            "queue_depth" => device.queue_depth = int(value, 65536)?,
            "hw_queues" => device.hw_queues = int(value, 1024)?,
            "parallelism" => device.parallelism = int(value, 4096)?,
            "commit_interval" => self.commit_interval = crate::mount::parse_commit_interval(value)?,
            "block_size" => {
                self.block_size = crate::units::parse_size(value)
                    .ok()
                    .filter(|&n| n > 0 && n <= 1 << 30)
                    .ok_or_else(|| {
                        format!("invalid block_size '{value}': expected a size like 16k")
                    })?
            }
            "fs_size" => {
                self.fs_size = Some(
                    crate::units::parse_size(value)
                        .ok()
                        .filter(|&n| (2 << 30..=1 << 50).contains(&n))
                        .ok_or_else(|| {
                            format!("invalid fs_size '{value}': expected a size 2g..=1p")
                        })?,
                )
            }
            "fill" => {
                self.fill = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..1.0).contains(r))
                    .ok_or_else(|| format!("invalid fill '{value}': expected 0..1"))?
            }
            "hit_ratio" | "page_cache" => {
                let v = value
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| format!("invalid {name} '{value}': expected 0..=1"))?;
                if name == "hit_ratio" {
                    self.hit_ratio = v;
                } else {
                    self.page_cache = v;
                }
            }
            _ => {
                return Err(format!(
                    "unknown parameter '{name}': expected one of {}, or costs.NAME (`fsyncsim list --costs`)",
                    Self::VARY.join(", ")
                ))
            }
        }
        Ok(())
    }
}
