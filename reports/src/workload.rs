//! Workload results as their users read them: dbench's operation table and throughput line,
//! sysbench's and fs_mark's summaries, fsperf's `metric | baseline | current | diff` table,
//! latency attribution, and JSON with fio-style latency objects.

use crate::latency::stats_json_with_percentiles;
use models::workload::fsload::WorkloadResult;
use models::workload::spec::Kind;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

const MS: f64 = 1e6;

/// dbench 4.00's table (` %-12s %7u %9.03f %9.03f`, latencies in ms, a 40-dash rule) and its
/// `Throughput %g MB/sec` line: the last lines of the output, as dbench prints them, so that
/// fsperf's parser (everything after the first `----` line) reads only them.
pub fn dbench_table(r: &WorkloadResult) -> String {
    let mut t = String::from(" Operation      Count    AvgLat    MaxLat\n");
    t.push_str(&format!(" {}\n", "-".repeat(40)));
    for o in &r.ops {
        if o.hist.is_empty() {
            continue;
        }
        t.push_str(&format!(
            " {:<12} {:>7} {:>9.3} {:>9.3}\n",
            o.name,
            o.hist.len(),
            o.hist.mean() / MS,
            o.hist.max() as f64 / MS
        ));
    }
    t.push('\n');
    t.push_str(&format!(
        "Throughput {} MB/sec{}  {} clients  {} procs  max_latency={:.3} ms\n",
        crate::texttable::g(r.mb_per_s()),
        if r.sync_open { " (sync open)" } else { "" },
        r.clients,
        r.clients,
        r.max_latency() as f64 / MS
    ));
    t
}

/// One run as its benchmark's user reads it: the table, fsyncsim's attribution and slowest
/// operations; for dbench the attribution first and dbench's table last (fsperf's parser
/// reads every line after the first `----`, so nothing may follow dbench's own lines);
/// `sysstat9`: kbuild's `iostat -x` in sysstat 9's columns.
pub fn run_text(r: &WorkloadResult, file_size: u64, sysstat9: bool) -> String {
    if r.kind == Kind::Kbuild && sysstat9 {
        format!(
            "{}{}",
            kbuild_summary(r, r.units, true),
            attribution_text(r)
        )
    } else if r.kind == Kind::Dbench {
        format!("{}\n{}", attribution_text(r), table(r, file_size))
    } else {
        format!("{}{}", table(r, file_size), attribution_text(r))
    }
}

/// sysbench 0.4's closing lines for a fileio run.
pub fn sysbench_summary(r: &WorkloadResult) -> String {
    let secs = r.measured as f64 / 1e9;
    let w = r.op("write").map_or(0, |o| o.hist.len());
    let f = r.op("fsync").map_or(0, |o| o.hist.len());
    let bytes = r.op("write").map_or(0, |o| o.bytes);
    let mut t = format!(
        "Operations performed:  0 Read, {w} Write, {f} Other = {} Total\n",
        w + f
    );
    t.push_str(&format!(
        "Read 0b  Written {:.4}Mb  Total transferred {:.4}Mb  ({:.5}Mb/sec)\n",
        bytes as f64 / 1048576.0,
        bytes as f64 / 1048576.0,
        bytes as f64 / 1048576.0 / secs
    ));
    t.push_str(&format!("{:>10.2} Requests/sec executed\n\n", r.per_s()));
    t.push_str(&format!(
        "    total time:                          {secs:.4}s\n"
    ));
    for o in &r.ops {
        if o.hist.is_empty() {
            continue;
        }
        t.push_str(&format!(
            "    {:<6} latency  min/avg/max/95th: {:.3}/{:.3}/{:.3}/{:.3} ms\n",
            o.name,
            o.hist.min() as f64 / MS,
            o.hist.mean() / MS,
            o.hist.max() as f64 / MS,
            o.hist.value_at_quantile(0.95) as f64 / MS
        ));
    }
    t
}

/// fs_mark's result row (`FSUse% Count Size Files/sec App Overhead`) plus per-op latencies.
pub fn fsmark_summary(r: &WorkloadResult, file_size: u64) -> String {
    let mut t = format!(
        "{:>6} {:>10} {:>10} {:>16} {:>16}\n",
        "FSUse%", "Count", "Size", "Files/sec", "App Overhead"
    );
    t.push_str(&format!(
        "{:>6} {:>10} {:>10} {:>16.1} {:>16}\n",
        0,
        r.files_done,
        file_size,
        r.per_s(),
        0
    ));
    t.push_str(&op_lines(r, 7));
    t
}

/// One line per operation kind that ran: count, mean, p99 and max latency (ms); names padded
/// to `width`.
fn op_lines(r: &WorkloadResult, width: usize) -> String {
    let mut t = String::new();
    for o in r.ops.iter().filter(|o| !o.hist.is_empty()) {
        t.push_str(&format!(
            "  {:<width$} {:>9} ops  avg {:>9.3} ms  p99 {:>9.3} ms  max {:>9.3} ms\n",
            o.name,
            o.hist.len(),
            o.hist.mean() / MS,
            o.hist.value_at_quantile(0.99) as f64 / MS,
            o.hist.max() as f64 / MS
        ));
    }
    t
}

/// `iostat -x`'s header and one device line as today's sysstat (12.x) prints them
/// (`iostat.c`: `Device` in 13 columns, then each value as ` %*.2f` under its header;
/// discards 0); with `sysstat9`, sysstat 9's columns, as the ext4 kbuild thread quotes them.
pub fn iostat_lines(device: &str, io: &models::block::iostat::Iostat, sysstat9: bool) -> String {
    use models::block::iostat::{COLUMNS, COLUMNS_X};
    if sysstat9 {
        let mut t = format!("{:<10}", "Device:");
        for c in COLUMNS {
            t.push_str(&format!(" {c:>8}"));
        }
        t.push_str(&format!("\n{device:<10}"));
        for v in io.values() {
            t.push_str(&format!(" {v:>8.2}"));
        }
        return t + "\n";
    }
    // sysstat's widths: r/s 7, rkB/s 9, rrqm/s 8, %rrqm 6, r_await 7, rareq-sz 8, … f/s 7,
    // f_await 7, aqu-sz 7, %util 6.
    const W: [usize; 22] = [
        7, 9, 8, 6, 7, 8, 7, 9, 8, 6, 7, 8, 7, 9, 8, 6, 7, 8, 7, 7, 7, 6,
    ];
    let mut t = String::from("Device       ");
    for (c, w) in COLUMNS_X.iter().zip(W) {
        t.push_str(&format!(" {c:>w$}"));
    }
    t.push_str(&format!("\n{device:<13}"));
    for (v, w) in io.values_x().iter().zip(W) {
        t.push_str(&format!(" {v:>w$.2}"));
    }
    t + "\n"
}

/// kbuild: units compiled and the build time they imply, per-step latencies, and the ccache
/// disk's `iostat -x` over the window.
pub fn kbuild_summary(r: &WorkloadResult, units: u32, sysstat9: bool) -> String {
    let secs = r.measured as f64 / 1e9;
    let rate = r.per_s();
    let mut t = format!(
        "{} units compiled in {secs:.1} s by {} jobs: {rate:.2} units/s (a {units}-unit build: {})\n",
        r.files_done,
        r.clients,
        if rate > 0.0 {
            format!("{:.1} s", f64::from(units) / rate)
        } else {
            "never".into()
        }
    );
    t.push_str(&op_lines(r, 10));
    if let Some(io) = &r.iostat {
        t.push_str("iostat -x over the window:\n");
        t.push_str(&iostat_lines(&r.device, io, sysstat9));
    }
    t
}

/// read-latency: the timed reads as the jbd commit's message gives them (µs: mean and the
/// slowest), and what the streaming writers wrote.
pub fn read_latency_summary(r: &WorkloadResult) -> String {
    let secs = r.measured as f64 / 1e9;
    let mut t = String::new();
    if let Some(o) = r.op("read").filter(|o| !o.hist.is_empty()) {
        t.push_str(&format!(
            "timed reads: {} in {secs:.1} s; us: average {:.0}, p50 {}, p99 {}, max {}\n",
            o.hist.len(),
            o.hist.mean() / 1e3,
            o.hist.value_at_quantile(0.5) / 1000,
            o.hist.value_at_quantile(0.99) / 1000,
            o.hist.max() / 1000
        ));
        // The run keeps its 10 slowest operations of any kind; the reads among them.
        let top: Vec<String> = r
            .slowest
            .iter()
            .filter(|s| s.op == "read")
            .map(|s| (s.latency / 1000).to_string())
            .collect();
        if !top.is_empty() {
            t.push_str(&format!("slowest reads (us): {}\n", top.join(" ")));
        }
    } else {
        t.push_str("timed reads: none in the window\n");
    }
    if let Some(o) = r.op("write") {
        t.push_str(&format!(
            "streaming writers: {:.1} MiB/s ({} writes, max {:.3} ms)\n",
            o.bytes as f64 / 1048576.0 / secs,
            o.hist.len(),
            o.hist.max() as f64 / MS
        ));
    }
    t
}

/// The fio fields fsperf records (`WorkloadResult::fio_fields`), named as fsperf names them.
pub fn fio_fields(r: &WorkloadResult) -> Vec<(String, f64)> {
    r.fio_fields()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// A fio-like summary line per job group: iops, bandwidth, latency percentiles.
pub fn fio_summary(r: &WorkloadResult) -> String {
    let mut t = String::new();
    for o in &r.ops {
        if o.hist.is_empty() {
            continue;
        }
        let secs = r.measured as f64 / 1e9;
        t.push_str(&format!(
            "  {}: IOPS={:.0}, BW={:.1}MiB/s ({} KiB in {:.1} s); clat (usec): min={:.1}, p50={:.1}, p99={:.1}, max={:.1}\n",
            o.name,
            o.hist.len() as f64 / secs,
            o.bytes as f64 / secs / 1048576.0,
            o.bytes / 1024,
            secs,
            o.hist.min() as f64 / 1e3,
            o.hist.value_at_quantile(0.5) as f64 / 1e3,
            o.hist.value_at_quantile(0.99) as f64 / 1e3,
            o.hist.max() as f64 / 1e3
        ));
    }
    t
}

/// The table a user of that benchmark expects.
pub fn table(r: &WorkloadResult, file_size: u64) -> String {
    match r.kind {
        Kind::Dbench => dbench_table(r),
        Kind::SysbenchFileio => sysbench_summary(r),
        Kind::FsMark => fsmark_summary(r, file_size),
        Kind::Fio => fio_summary(r),
        Kind::Kbuild => kbuild_summary(r, r.units, false),
        Kind::ReadLatency => read_latency_summary(r),
    }
}

/// Groups a wait class into what a storage engineer reads: locks by name, device stages,
/// CPU, and the rest.
pub fn attribution_group(class: &str) -> String {
    if let Some((_dev, stage)) = class.split_once(':') {
        return match stage {
            "host_queue" => "device host queue".into(),
            "queue" => "device queue".into(),
            "service" | "unit_busy" => "device service".into(),
            "flush" => "device flush".into(),
            s => format!("device {s}"),
        };
    }
    match class {
        "sleep" | "point" => "other".into(),
        c => c.to_string(),
    }
}

/// (operation, count, mean ns, [(group, mean ns)]).
pub type OpAttribution = (String, u64, f64, Vec<(String, f64)>);

/// Per operation kind, the mean latency split by attribution group: (op, count, mean ns,
/// [(group, mean ns)]), groups largest first.
pub fn attribution(r: &WorkloadResult) -> Vec<OpAttribution> {
    let mut out = Vec::new();
    for o in &r.ops {
        let n = o.hist.len();
        if n == 0 {
            continue;
        }
        let mut groups: Vec<(String, f64)> = Vec::new();
        for (i, &ns) in o.attribution.iter().enumerate() {
            if ns == 0 {
                continue;
            }
            let g = attribution_group(r.classes.get(i).map_or("other", |s| s.as_str()));
            match groups.iter_mut().find(|(k, _)| *k == g) {
                Some((_, v)) => *v += ns as f64 / n as f64,
                None => groups.push((g, ns as f64 / n as f64)),
            }
        }
        groups.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.push((o.name.to_string(), n, o.hist.mean(), groups));
    }
    out
}

/// The cores' occupancy over the window, as one line.
pub fn cpu_line(u: &sim::CpuUsage) -> String {
    format!(
        "cpu over the window: {} cores, {:.1} % busy, run queue {:.1} tasks on average\n",
        u.cores,
        100.0 * u.busy(),
        u.run_queue()
    )
}

/// The attribution table and the slowest operations, as text.
pub fn attribution_text(r: &WorkloadResult) -> String {
    let mut t = format!(
        "latency attribution under {} (mean ms per operation):\n",
        r.policy.name
    );
    for (op, n, mean, groups) in attribution(r) {
        let parts: Vec<String> = groups
            .iter()
            .filter(|(_, v)| *v / mean.max(1.0) >= 0.005)
            .map(|(g, v)| format!("{g} {:.3}", v / MS))
            .collect();
        t.push_str(&format!(
            "  {op:<10} {n:>9}  {:>9.3} = {}\n",
            mean / MS,
            parts.join(" + ")
        ));
    }
    if let Some(u) = &r.cpu {
        t.push_str(&cpu_line(u));
    }
    t.push_str("slowest operations:\n");
    for s in &r.slowest {
        let parts: Vec<String> = s
            .attribution
            .iter()
            .take(4)
            .map(|(c, ns)| format!("{} {:.3}", attribution_group(c), *ns as f64 / MS))
            .collect();
        t.push_str(&format!(
            "  {:>9.3} ms  {:<10} {:<10} at {:>10.3} s: {}\n",
            s.latency as f64 / MS,
            s.op,
            s.task,
            s.at as f64 / 1e9,
            parts.join(", ")
        ));
    }
    t
}

/// The metrics of one run, named as fsperf names them where fsperf records them (dbench's
/// `throughput` in MB/s and each operation's MaxLat in ms under its lower-case name; fio's
/// `write_iops`, `elapsed`, …), then fsyncsim's: per-operation latency figures (ms) and the
/// filesystem's counters.
pub fn metrics(r: &WorkloadResult) -> Vec<(String, f64)> {
    let mut m = Vec::new();
    match r.kind {
        Kind::Dbench => {
            m.push(("throughput".to_string(), r.mb_per_s()));
            for o in r.ops.iter().filter(|o| !o.hist.is_empty()) {
                m.push((o.name.to_lowercase(), o.hist.max() as f64 / MS));
            }
        }
        Kind::SysbenchFileio => m.push(("requests_per_s".to_string(), r.per_s())),
        Kind::FsMark => m.push(("files_per_s".to_string(), r.per_s())),
        Kind::ReadLatency => m.push(("reads_per_s".to_string(), r.per_s())),
        Kind::Kbuild => {
            m.push(("units_per_s".to_string(), r.per_s()));
            if let Some(io) = &r.iostat {
                for (c, v) in models::block::iostat::COLUMNS.iter().zip(io.values()) {
                    m.push((format!("iostat.{c}"), v));
                }
            }
        }
        Kind::Fio => {
            // fsperf's own rows first, then the filesystem's counters.
            m.extend(fio_fields(r));
            for &(k, v) in r.metrics.scalars() {
                m.push((k.to_string(), v as f64));
            }
            return m;
        }
    }
    m.push(("max_latency_ms".into(), r.max_latency() as f64 / MS));
    for o in &r.ops {
        if o.hist.is_empty() {
            continue;
        }
        let name = o.name.to_lowercase();
        m.push((format!("{name}_avg_lat_ms"), o.hist.mean() / MS));
        m.push((
            format!("{name}_p99_lat_ms"),
            o.hist.value_at_quantile(0.99) as f64 / MS,
        ));
        if r.kind != Kind::Dbench {
            m.push((format!("{name}_max_lat_ms"), o.hist.max() as f64 / MS));
        }
    }
    for &(k, v) in r.metrics.scalars() {
        m.push((k.to_string(), v as f64));
    }
    for (k, v) in r.metrics.prefixed_rows() {
        m.push((k.clone(), *v as f64));
    }
    m
}

pub use models::workload::compare::t975;

/// One row of a comparison: the metric's means, and the paired relative differences.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRow {
    /// Metric name.
    pub metric: String,
    /// Mean over seeds, baseline.
    pub baseline: f64,
    /// Mean over seeds, current.
    pub current: f64,
    /// Sample standard deviation of the baseline over seeds (0 with one seed), fsperf's `stdev`.
    pub baseline_stdev: f64,
    /// Mean of the per-seed relative differences (current − baseline) / baseline, in %.
    pub diff_pct: f64,
    /// Their standard deviation (None with one seed).
    pub stdev_pct: Option<f64>,
    /// 95 % interval of the mean difference (None with one seed).
    pub ci_pct: Option<(f64, f64)>,
}

impl CompareRow {
    /// Whether the interval excludes 0.
    pub fn significant(&self) -> bool {
        self.ci_pct.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// Pairs baseline and current runs seed by seed (common random numbers) per metric; a seed
/// counts for a metric only when both of its runs have it.
pub fn compare_rows(baseline: &[WorkloadResult], current: &[WorkloadResult]) -> Vec<CompareRow> {
    let bm: Vec<Vec<(String, f64)>> = baseline.iter().map(metrics).collect();
    let cm: Vec<Vec<(String, f64)>> = current.iter().map(metrics).collect();
    // Every metric either side has, in first-seen order (an operation may have samples in
    // the window on one side only).
    let mut names: Vec<&String> = Vec::new();
    for (n, _) in bm.iter().chain(&cm).flatten() {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let get =
        |m: &Vec<(String, f64)>, name: &str| m.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
    let mut rows = Vec::new();
    for name in names {
        // Only seeds where both sides have the metric are paired.
        let (b, c): (Vec<f64>, Vec<f64>) = bm
            .iter()
            .zip(&cm)
            .filter_map(|(x, y)| Some((get(x, name)?, get(y, name)?)))
            .unzip();
        if b.is_empty() {
            continue;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let diffs: Vec<f64> = b
            .iter()
            .zip(&c)
            .filter(|(x, _)| **x != 0.0)
            .map(|(x, y)| (y - x) / x * 100.0)
            .collect();
        let (bmean, cmean) = (mean(&b), mean(&c));
        let d = if diffs.is_empty() {
            if bmean == 0.0 && cmean == 0.0 {
                0.0
            } else {
                f64::NAN
            }
        } else {
            mean(&diffs)
        };
        let (stdev, ci) = if diffs.len() > 1 {
            let k = diffs.len() as f64;
            let var = diffs.iter().map(|x| (x - d).powi(2)).sum::<f64>() / (k - 1.0);
            let sd = var.sqrt();
            let half = t975(diffs.len() - 1) * sd / k.sqrt();
            (Some(sd), Some((d - half, d + half)))
        } else {
            (None, None)
        };
        let bvar = b.iter().map(|x| (x - bmean).powi(2)).sum::<f64>() / (b.len() as f64 - 1.0);
        rows.push(CompareRow {
            metric: name.clone(),
            baseline: bmean,
            current: cmean,
            baseline_stdev: if b.len() > 1 { bvar.sqrt() } else { 0.0 },
            diff_pct: d,
            stdev_pct: stdev,
            ci_pct: ci,
        });
    }
    rows
}

/// `n` and `noun`, plural unless `n` is 1 ("1 client", "2 clients").
pub fn count_of(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn pct(v: f64) -> String {
    if v.is_nan() {
        "n/a".to_string()
    } else {
        format!("{v:.2}%")
    }
}

/// fsperf's difference of two means, in % (`utils.py:pct_diff`: 0 when both are 0, 100 when
/// only the baseline is).
pub fn fsperf_pct_diff(a: f64, b: f64) -> f64 {
    if a == 0.0 && b == 0.0 {
        0.0
    } else if a == 0.0 {
        100.0
    } else {
        (b - a) / a * 100.0
    }
}

/// The metrics fsperf records: dbench's `throughput` and operations, fio's `read_*` /
/// `write_*` columns, `elapsed`, `sys_cpu` (fsperf's `ResultData.py`).
pub fn is_fsperf_metric(name: &str) -> bool {
    const DBENCH: [&str; 17] = [
        "throughput",
        "ntcreatex",
        "close",
        "rename",
        "unlink",
        "deltree",
        "mkdir",
        "qpathinfo",
        "qfileinfo",
        "qfsinfo",
        "sfileinfo",
        "find",
        "writex",
        "readx",
        "lockx",
        "unlockx",
        "flush",
    ];
    const FIO: [&str; 10] = [
        "io_bytes",
        "lat_ns_min",
        "lat_ns_max",
        "lat_ns_mean",
        "clat_ns_p50",
        "clat_ns_p99",
        "clat_ns_mean",
        "iops",
        "io_kbytes",
        "bw_bytes",
    ];
    let fio = |dir: &str| {
        name.strip_prefix(dir)
            .is_some_and(|rest| FIO.contains(&rest))
    };
    DBENCH.contains(&name)
        || name == "elapsed"
        || name == "sys_cpu"
        || fio("read_")
        || fio("write_")
}

/// fsperf's comparison table (`utils.py:print_comparison_table`): texttable's HEADER layout,
/// `metric  baseline  current  stdev  diff` sorted by metric, rows where both means are 0 left
/// out; `stdev` is the baseline's over seeds, `diff` the difference of the means. With several
/// seeds fsyncsim adds the mean paired difference, its 95 % interval and `*` where that
/// excludes 0.
pub fn fsperf_table(rows: &[CompareRow]) -> String {
    let many = rows.iter().any(|r| r.stdev_pct.is_some());
    let mut header: Vec<String> = ["metric", "baseline", "current", "stdev", "diff"]
        .map(String::from)
        .to_vec();
    if many {
        header.extend(["paired diff", "95% interval", "sig"].map(String::from));
    }
    let mut sorted: Vec<&CompareRow> = rows
        .iter()
        .filter(|r| r.baseline != 0.0 || r.current != 0.0)
        .collect();
    sorted.sort_by(|a, b| a.metric.cmp(&b.metric));
    let lines: Vec<Vec<String>> = sorted
        .iter()
        .map(|r| {
            let mut l = vec![
                r.metric.clone(),
                crate::texttable::auto(r.baseline, 2),
                crate::texttable::auto(r.current, 2),
                crate::texttable::auto(r.baseline_stdev, 2),
                format!("{:.2}%", fsperf_pct_diff(r.baseline, r.current)),
            ];
            if many {
                l.push(pct(r.diff_pct));
                l.push(
                    r.ci_pct
                        .map_or("-".into(), |(a, b)| format!("[{}, {}]", pct(a), pct(b))),
                );
                l.push(if r.significant() { "*" } else { "" }.into());
            }
            l
        })
        .collect();
    use crate::texttable::Align::{Left, Right};
    let mut align = vec![Left, Right, Right, Right, Right];
    if many {
        align.extend([Right, Right, Left]);
    }
    crate::texttable::header_table(&header, &lines, &align)
}

/// A comparison's rows as fsperf's table of the metrics fsperf records (of all of them when
/// it records none of these), then, under `fsyncsim's figures that differ:`, the same layout
/// for fsyncsim's own metrics whose means differ.
pub fn fsperf_tables(rows: &[CompareRow]) -> String {
    let (mut fsperf, ours): (Vec<CompareRow>, Vec<CompareRow>) = rows
        .iter()
        .cloned()
        .partition(|r| is_fsperf_metric(&r.metric));
    if fsperf.is_empty() {
        fsperf = rows.to_vec();
    }
    let mut t = fsperf_table(&fsperf);
    let moved: Vec<CompareRow> = ours
        .into_iter()
        .filter(|r| r.baseline != r.current || r.stdev_pct.is_some_and(|s| s != 0.0))
        .collect();
    if !moved.is_empty() && fsperf.len() < rows.len() {
        t.push_str("\nfsyncsim's figures that differ:\n");
        t.push_str(&fsperf_table(&moved));
    }
    t
}

/// Rows as an aligned `a | b | c` table with a rule under the first (header) row.
pub(crate) fn pipe_table(lines: &[Vec<String>]) -> String {
    let cols = lines.first().map_or(0, Vec::len);
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut t = String::new();
    for (j, l) in lines.iter().enumerate() {
        let cells: Vec<String> = l
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = width[i]))
            .collect();
        t.push_str(cells.join(" | ").trim_end());
        t.push('\n');
        if j == 0 {
            let sep: Vec<String> = width.iter().map(|&w| "-".repeat(w)).collect();
            t.push_str(&sep.join("-|-"));
            t.push('\n');
        }
    }
    t
}

/// One operation's figures in a run's JSON.
#[derive(Serialize)]
struct OpJson {
    count: u64,
    bytes: u64,
    clat_ns: Value,
    attribution_ns: BTreeMap<String, u64>,
}

/// One of the slowest operations, with where its time went.
#[derive(Serialize)]
struct SlowJson<'a> {
    latency_ns: u64,
    op: &'a str,
    task: &'a str,
    at_ns: u64,
    attribution_ns: &'a [(String, u64)],
}

/// An invariant violation of a workload run.
#[derive(Serialize)]
struct WorkloadViolationJson<'a> {
    invariant: &'a str,
    at_ns: u64,
    message: &'a str,
}

/// `workload --json`'s document (and each run of compare's).
#[derive(Serialize)]
struct WorkloadJson<'a> {
    workload: &'a str,
    kind: &'static str,
    clients: u32,
    sync_open: bool,
    policy: &'a str,
    device: &'a str,
    seed: u64,
    measured_ns: u64,
    throughput_mb_s: f64,
    per_s: f64,
    max_latency_ns: u64,
    files_done: u64,
    ops: BTreeMap<&'static str, OpJson>,
    slowest: Vec<SlowJson<'a>>,
    metrics: Map<String, Value>,
    violations: Vec<WorkloadViolationJson<'a>>,
    trace_hash: String,
    events: u64,
    jobs: Vec<crate::fio_json::Job>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iostat: Option<BTreeMap<&'static str, f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<CpuJson>,
}

/// The cores' occupancy over the window.
#[derive(Serialize)]
struct CpuJson {
    cores: u64,
    busy_pct: f64,
    run_queue: f64,
}

/// One run as JSON: per operation a fio-style `clat_ns` object, bytes, attribution; the
/// slowest operations; throughput; the btrfs counters.
pub fn json(r: &WorkloadResult) -> Value {
    let ops = r
        .ops
        .iter()
        .map(|o| {
            let attribution_ns = o
                .attribution
                .iter()
                .enumerate()
                .filter(|(_, &ns)| ns > 0)
                .map(|(i, &ns)| {
                    let class = r.classes.get(i).cloned();
                    (class.unwrap_or_else(|| format!("class{i}")), ns)
                })
                .collect();
            let op = OpJson {
                count: o.hist.len(),
                bytes: o.bytes,
                clat_ns: stats_json_with_percentiles(&o.hist),
                attribution_ns,
            };
            (o.name, op)
        })
        .collect();
    let doc = WorkloadJson {
        workload: &r.workload,
        kind: r.kind.name(),
        clients: r.clients,
        sync_open: r.sync_open,
        policy: &r.policy.name,
        device: &r.device,
        seed: r.seed,
        measured_ns: r.measured,
        throughput_mb_s: r.mb_per_s(),
        per_s: r.per_s(),
        max_latency_ns: r.max_latency(),
        files_done: r.files_done,
        ops,
        slowest: r
            .slowest
            .iter()
            .map(|s| SlowJson {
                latency_ns: s.latency,
                op: s.op,
                task: &s.task,
                at_ns: s.at,
                attribution_ns: &s.attribution,
            })
            .collect(),
        // No wait rows: a workload's waits are its operations' attribution.
        metrics: crate::race::metrics_object(&r.metrics, false),
        violations: r
            .violations
            .iter()
            .map(|v| WorkloadViolationJson {
                invariant: &v.invariant,
                at_ns: v.at,
                message: &v.message,
            })
            .collect(),
        trace_hash: format!("{:#018x}", r.trace_hash),
        events: r.events,
        jobs: crate::fio_json::workload_jobs(r, 0, &[]),
        iostat: r.iostat.as_ref().map(|io| {
            models::block::iostat::COLUMNS
                .iter()
                .copied()
                .zip(io.values())
                .collect()
        }),
        cpu: r.cpu.map(|u| CpuJson {
            cores: u.cores,
            busy_pct: 100.0 * u.busy(),
            run_queue: u.run_queue(),
        }),
    };
    serde_json::to_value(doc).expect("plain data serialises")
}

/// The operation whose latency a comparison plots: dbench's Flush, else fsync.
pub fn main_op(kind: Kind) -> &'static str {
    match kind {
        Kind::Dbench => "Flush",
        Kind::Kbuild => "fetch",
        Kind::ReadLatency => "read",
        _ => "fsync",
    }
}

/// The operation a comparison's CDF shows: [`main_op`] when `r` measured it, else the
/// operation `r` measured most often (fio's filecreate job has creates, no fsync).
pub fn plot_op(r: &WorkloadResult) -> String {
    let main = main_op(r.kind);
    if r.op(main).is_some_and(|o| !o.hist.is_empty()) {
        return main.to_string();
    }
    let most = r.ops.iter().filter(|o| !o.hist.is_empty());
    most.max_by_key(|o| o.hist.len())
        .map_or(main, |o| o.name)
        .to_string()
}

/// (latency ms, share %) points of a histogram in buckets of a fifth of a decade from 1 µs
/// (a value v lands in the bucket ending at the first 1 µs·10^(k/5) >= v).
pub fn distribution(h: &hdrhistogram::Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let n = h.len() as f64;
    h.iter_log(1000, 10f64.powf(0.2))
        .map(|v| {
            (
                v.value_iterated_to() as f64 / MS,
                v.count_since_last_iteration() as f64 / n * 100.0,
            )
        })
        .collect()
}

/// (latency ms, cumulative fraction) at each distinct recorded value of a histogram, for
/// [`crate::plot::cdf_overlay`]'s step function. Operations that return at once (an fsync
/// with nothing to do) are drawn at 1 µs, so a log axis can show them.
pub fn cdf(h: &hdrhistogram::Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let n = h.len() as f64;
    let mut seen = 0u64;
    h.iter_recorded()
        .map(|v| {
            seen += v.count_since_last_iteration();
            (v.value_iterated_to().max(1000) as f64 / MS, seen as f64 / n)
        })
        .collect()
}

/// What a comparison's plots show, before rendering.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotData {
    /// The operation of the CDF ([`plot_op`]).
    pub op: String,
    /// Latency distribution per plotted operation of the current run.
    pub latency: Vec<crate::plot::Series>,
    /// The CDF of `op`, baseline then current.
    pub cdf: Vec<crate::plot::Series>,
    /// Attribution bars: the plotted operations ...
    pub categories: Vec<String>,
    /// ... and per attribution group its mean ms for each of them.
    pub stacks: Vec<(String, Vec<f64>)>,
}

/// The operations a comparison plots: those that wait for something besides the CPU, or
/// when none does, every measured one.
fn plotted_ops(r: &WorkloadResult) -> Vec<&models::workload::fsload::OpResult> {
    let measured = || r.ops.iter().filter(|o| !o.hist.is_empty());
    let waits = measured()
        .filter(|o| {
            let classes = o.attribution.iter().enumerate();
            classes
                .into_iter()
                .any(|(i, &ns)| ns > 0 && r.classes.get(i).is_some_and(|c| c != "cpu"))
        })
        .collect::<Vec<_>>();
    if waits.is_empty() {
        measured().collect()
    } else {
        waits
    }
}

/// Per attribution group (in first-seen order), its mean ms for each of `cats` in `r`.
fn attribution_stacks(r: &WorkloadResult, cats: &[String]) -> Vec<(String, Vec<f64>)> {
    let att = attribution(r);
    let att: Vec<&OpAttribution> = cats
        .iter()
        .filter_map(|c| att.iter().find(|(op, ..)| op == c))
        .collect();
    let mut groups: Vec<String> = Vec::new();
    for (_, _, _, gs) in &att {
        for (g, _) in gs {
            if !groups.contains(g) {
                groups.push(g.clone());
            }
        }
    }
    let mean = |a: &OpAttribution, g: &str| {
        let found = a.3.iter().find(|(k, _)| k == g);
        found.map_or(0.0, |(_, v)| v / MS)
    };
    let stacks = groups.into_iter().map(|g| {
        let vals = att.iter().map(|a| mean(a, &g)).collect();
        (g, vals)
    });
    stacks.collect()
}

/// The data of a comparison's plots (distribution, CDF, attribution), not yet rendered.
pub fn plot_data(baseline: &WorkloadResult, current: &WorkloadResult) -> PlotData {
    use crate::plot::Series;
    let ops = plotted_ops(current);
    let latency = ops
        .iter()
        .map(|o| Series {
            label: o.name.to_string(),
            points: distribution(&o.hist),
        })
        .collect();
    let op = plot_op(current);
    let cdf = [baseline, current]
        .iter()
        .filter_map(|r| {
            r.op(&op).map(|o| Series {
                label: format!("{} ({op})", r.policy.name),
                points: cdf(&o.hist),
            })
        })
        .collect();
    let measured: Vec<String> = attribution(current).into_iter().map(|a| a.0).collect();
    let categories: Vec<String> = measured
        .into_iter()
        .filter(|c| ops.iter().any(|o| o.name == c))
        .collect();
    let stacks = attribution_stacks(current, &categories);
    PlotData {
        op,
        latency,
        cdf,
        categories,
        stacks,
    }
}

/// The plots `write_plots` makes, as compare's index.html shows them (the SVGs; the PNGs
/// are beside them), with their captions.
pub const PLOT_FIGURES: [crate::html::Figure; 3] = [
    crate::html::Figure {
        file: "latency.svg",
        caption: "Latency distribution per operation under the current policy",
    },
    crate::html::Figure {
        file: "cdf.svg",
        caption: "Latency CDF of the headline operation, baseline against current",
    },
    crate::html::Figure {
        file: "attribution.svg",
        caption: "Where the time goes: mean time per operation by wait class, current policy",
    },
];

/// Writes `latency`, `cdf` and `attribution` plots (PNG and SVG) of a comparison into `dir`;
/// returns the files written.
pub fn write_plots(
    baseline: &WorkloadResult,
    current: &WorkloadResult,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, String> {
    use crate::plot::{attribution_bars, cdf_overlay, latency_distribution};
    let d = plot_data(baseline, current);
    let (w, policy) = (&current.workload, &current.policy.name);
    let clients = count_of(current.clients as u64, "client");
    let mut files = Vec::new();
    for ext in ["png", "svg"] {
        let p = dir.join(format!("latency.{ext}"));
        let title = format!("{w}: latency distribution per operation ({policy}, {clients})");
        latency_distribution(&title, &d.latency, &p)?;
        files.push(p);
        let p = dir.join(format!("cdf.{ext}"));
        let title = format!("{w}: {} latency CDF, baseline vs current", d.op);
        cdf_overlay(&title, &d.cdf, &p)?;
        files.push(p);
        let p = dir.join(format!("attribution.{ext}"));
        let title = format!("{w}: where the time goes, mean time per operation ({policy})");
        attribution_bars(&title, &d.categories, &d.stacks, &p)?;
        files.push(p);
    }
    Ok(files)
}

/// The headline figure of a run and its name: dbench MB/s, sysbench requests/s, fs_mark
/// files/s.
pub fn headline(r: &WorkloadResult) -> (&'static str, f64) {
    match r.kind {
        Kind::Dbench => ("MB/sec", r.mb_per_s()),
        Kind::SysbenchFileio => ("reqs/sec", r.per_s()),
        Kind::FsMark => ("files/sec", r.per_s()),
        Kind::Fio => ("iops", r.per_s()),
        Kind::Kbuild => ("units/sec", r.per_s()),
        Kind::ReadLatency => (
            "read avg ms",
            r.op("read").map_or(0.0, |o| o.hist.mean() / MS),
        ),
    }
}

/// One paired metric row of a comparison.
#[derive(Serialize)]
struct CompareRowJson<'a> {
    metric: &'a str,
    baseline: f64,
    current: f64,
    baseline_stdev: f64,
    diff_pct: f64,
    stdev_pct: Option<f64>,
    ci95_pct: Option<(f64, f64)>,
    significant: bool,
}

/// One point of a comparison (a value of the varied parameter): both sides' runs and rows.
#[derive(Serialize)]
struct PointJson<'a> {
    value: &'a Option<String>,
    baseline: Vec<Value>,
    current: Vec<Value>,
    compare: Vec<CompareRowJson<'a>>,
}

/// compare's `results.json` / `--json`.
#[derive(Serialize)]
struct CompareJson<'a> {
    workload: &'a str,
    kind: &'static str,
    baseline_policy: &'a str,
    current_policy: &'a str,
    vary: Option<&'a str>,
    points: Vec<Value>,
    jobs: Vec<crate::fio_json::Job>,
}

/// A comparison as JSON: per point (value of the varied parameter) both sides' runs and the
/// paired metric rows.
pub fn compare_json(
    spec: &models::workload::spec::Spec,
    baseline: &models::kernel::Policy,
    current: &models::kernel::Policy,
    pairs: &[models::workload::compare::Pair],
    vary: Option<&(String, Vec<String>)>,
) -> Value {
    let points: Vec<Value> = pairs
        .iter()
        .map(|p| {
            let rows = compare_rows(&p.baseline, &p.current);
            let point = PointJson {
                value: &p.value,
                baseline: p.baseline.iter().map(json).collect(),
                current: p.current.iter().map(json).collect(),
                compare: rows
                    .iter()
                    .map(|r| CompareRowJson {
                        metric: &r.metric,
                        baseline: r.baseline,
                        current: r.current,
                        baseline_stdev: r.baseline_stdev,
                        diff_pct: r.diff_pct,
                        stdev_pct: r.stdev_pct,
                        ci95_pct: r.ci_pct,
                        significant: r.significant(),
                    })
                    .collect(),
            };
            serde_json::to_value(point).expect("plain data serialises")
        })
        .collect();
    let doc = CompareJson {
        workload: &spec.name,
        kind: spec.kind.name(),
        baseline_policy: &baseline.name,
        current_policy: &current.name,
        vary: vary.map(|(n, _)| n.as_str()),
        points,
        jobs: compare_jobs(pairs, vary),
    };
    serde_json::to_value(doc).expect("plain data serialises")
}

/// Every run of a comparison as fio jobs (fsperf's `FioResultDecoder` reads a top-level
/// `jobs`): group 0 the baseline's, group 1 the current's, with `side` (and the varied
/// parameter) among the job options.
pub fn compare_jobs(
    pairs: &[models::workload::compare::Pair],
    vary: Option<&(String, Vec<String>)>,
) -> Vec<crate::fio_json::Job> {
    let mut jobs = Vec::new();
    for p in pairs {
        for (group, side, runs) in [(0, "baseline", &p.baseline), (1, "current", &p.current)] {
            for r in runs {
                let mut extra = vec![("side", side.to_string())];
                if let (Some((name, _)), Some(v)) = (vary, &p.value) {
                    extra.push(("vary", format!("{name}={v}")));
                }
                jobs.extend(crate::fio_json::workload_jobs(r, group, &extra));
            }
        }
    }
    jobs
}

/// A comparison as text: both sides' tables and the fsperf table (or, with a varied
/// parameter, one row per value), then the current side's attribution.
pub fn compare_text(
    spec: &models::workload::spec::Spec,
    baseline: &models::kernel::Policy,
    current: &models::kernel::Policy,
    pairs: &[models::workload::compare::Pair],
    vary: Option<&(String, Vec<String>)>,
) -> String {
    if let Some((name, _)) = vary {
        return vary_text(spec, baseline, current, pairs, name);
    }
    let mut t = String::new();
    let first = &pairs[0];
    let (b0, c0) = (&first.baseline[0], &first.current[0]);
    let runs = first.baseline.len();
    let where_mean = if spec.kind == Kind::Dbench {
        "table above"
    } else {
        "last table"
    };
    let side = |label: &str, r: &WorkloadResult| {
        let of = if runs > 1 {
            format!(" (1 of {runs} paired seeds; their mean is in the {where_mean})")
        } else {
            String::new()
        };
        format!(
            "== {label}: {} under {} on {}, seed {}{of} ==\n{}",
            r.workload,
            r.policy.name,
            r.device,
            r.seed,
            table(r, spec.file_size)
        )
    };
    let mut cmp = format!(
        "== {} vs {}{} ==\n",
        baseline.name,
        current.name,
        if runs > 1 {
            format!(
                ", mean of {runs} paired seeds (paired diff: mean paired difference; * = 95 % interval excludes 0)"
            )
        } else {
            String::new()
        }
    );
    let rows = compare_rows(&first.baseline, &first.current);
    cmp.push_str(&fsperf_tables(&rows));
    cmp.push('\n');
    if spec.kind == Kind::Kbuild {
        cmp.push_str(&kbuild_seed_text(baseline, current, first, &rows));
        cmp.push('\n');
    }
    if spec.kind == Kind::Dbench {
        // fsperf's parser reads every line after the first `----`: one dbench table, last.
        t.push_str(&cmp);
        t.push_str(&attribution_text(c0));
        t.push('\n');
        t.push_str(&side("current", c0));
    } else {
        t.push_str(&side("baseline", b0));
        t.push('\n');
        t.push_str(&side("current", c0));
        t.push('\n');
        t.push_str(&cmp);
        t.push_str(&attribution_text(c0));
    }
    t
}

/// A comparison over a varied parameter: one row per value (headline, main operation's p99,
/// max latency, host-queue wait).
fn vary_text(
    spec: &models::workload::spec::Spec,
    baseline: &models::kernel::Policy,
    current: &models::kernel::Policy,
    pairs: &[models::workload::compare::Pair],
    name: &str,
) -> String {
    let mut t = String::new();
    let first = &pairs[0];
    let b0 = &first.baseline[0];
    let (unit, _) = headline(b0);
    // The operation the runs measured (fio's jobs have writes or creates, no fsync).
    let main = plot_op(b0);
    let main = main.as_str();
    t.push_str(&format!(
        "{} on {}: {} vs {}, {} seed(s) per point\n",
        spec.name,
        b0.device,
        baseline.name,
        current.name,
        first.baseline.len()
    ));
    let mut lines = vec![vec![
        name.to_string(),
        format!("baseline {unit}"),
        format!("current {unit}"),
        "diff".into(),
        format!("{main} p99 ms (b/c)"),
        "max lat ms (b/c)".into(),
        format!("host-queue wait per {main} ms (c)"),
    ]];
    for p in pairs {
        let rows = compare_rows(&p.baseline, &p.current);
        // The headline's row: fio's are fsperf's fields, of which IOPS is the headline.
        let head = rows
            .iter()
            .find(|r| spec.kind == Kind::Fio && r.metric == "write_iops")
            .unwrap_or(&rows[0]);
        let m = |rs: &[WorkloadResult], f: &dyn Fn(&WorkloadResult) -> f64| {
            rs.iter().map(f).sum::<f64>() / rs.len().max(1) as f64
        };
        let p99 = |r: &WorkloadResult| {
            r.op(main)
                .filter(|o| !o.hist.is_empty())
                .map_or(0.0, |o| o.hist.value_at_quantile(0.99) as f64 / MS)
        };
        let maxl = |r: &WorkloadResult| r.max_latency() as f64 / MS;
        let hq = |r: &WorkloadResult| {
            r.op(main).map_or(0.0, |o| {
                let n = o.hist.len().max(1) as f64;
                o.attribution
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| {
                        r.classes
                            .get(*i)
                            .is_some_and(|c| attribution_group(c) == "device host queue")
                    })
                    .map(|(_, &v)| v as f64)
                    .sum::<f64>()
                    / n
                    / MS
            })
        };
        lines.push(vec![
            p.value.clone().unwrap_or_default(),
            format!("{:.2}", head.baseline),
            format!("{:.2}", head.current),
            pct(head.diff_pct),
            format!("{:.3} / {:.3}", m(&p.baseline, &p99), m(&p.current, &p99)),
            format!("{:.3} / {:.3}", m(&p.baseline, &maxl), m(&p.current, &maxl)),
            format!("{:.3}", m(&p.current, &hq)),
        ]);
    }
    t.push_str(&pipe_table(&lines));
    t
}

/// Seed 003's kbuild figures beside the model's: the units/s change (from the pair's compare
/// `rows`) and `iostat -x`.
pub fn kbuild_seed_text(
    baseline: &models::kernel::Policy,
    current: &models::kernel::Policy,
    pair: &models::workload::compare::Pair,
    rows: &[CompareRow],
) -> String {
    use models::workload::kbuild::{SEED_CHANGES, SEED_IOSTAT};
    let mut t =
        "== the ext4 kbuild thread (kbuild on a 64-LCPU NHM-EX, ccache on the ext3 root) beside the model ==\n"
            .to_string();
    let model = rows.iter().find(|r| r.metric == "units_per_s");
    let seed: Vec<String> = SEED_CHANGES
        .iter()
        .filter(|(_, b, c, _)| *b == baseline.name && *c == current.name)
        .map(|(at, _, _, v)| format!("{} ({at})", pct(*v)))
        .collect();
    t.push_str(&format!(
        "units/s change {} → {}: model {}; thread {}\n",
        baseline.name,
        current.name,
        model.map_or("n/a".to_string(), |r| pct(r.diff_pct)),
        if seed.is_empty() {
            "has no figure for this pair".to_string()
        } else {
            seed.join(", ")
        }
    ));
    t.push_str("iostat -x (thread: #0/#34, mean over runs, device unnamed; model: the ccache disk over the window, mean over seeds)\n");
    let mut lines = vec![std::iter::once("kernel".to_string())
        .chain(models::block::iostat::COLUMNS.iter().map(|c| c.to_string()))
        .collect::<Vec<_>>()];
    for (label, _, v) in SEED_IOSTAT {
        lines.push(
            std::iter::once(format!("thread {label}"))
                .chain(v.iter().map(|x| format!("{x:.2}")))
                .collect(),
        );
    }
    for (p, runs) in [(baseline, &pair.baseline), (current, &pair.current)] {
        let io: Vec<[f64; 11]> = runs
            .iter()
            .filter_map(|r| r.iostat.map(|i| i.values()))
            .collect();
        if io.is_empty() {
            continue;
        }
        let mean = |k: usize| io.iter().map(|v| v[k]).sum::<f64>() / io.len() as f64;
        lines.push(
            std::iter::once(format!("model {}", p.name))
                .chain((0..11).map(|k| format!("{:.2}", mean(k))))
                .collect(),
        );
    }
    t.push_str(&pipe_table(&lines));
    t
}

/// `fsyncsim compare fsperf`: per test, `<test> results` and its fsperf table, as fsperf's
/// compare prints them (the btrfs preemptive-flushing thread), then fsyncsim's figures that differ
/// (the btrfs space counters that explain the rows).
pub fn fsperf_suite_text(
    baseline: &models::kernel::Policy,
    current: &models::kernel::Policy,
    tests: &[(
        models::workload::spec::Spec,
        Vec<models::workload::compare::Pair>,
    )],
) -> String {
    let mut t = format!(
        "fsperf tests, {} (baseline) vs {} (current)\n",
        baseline.name, current.name
    );
    for (spec, pairs) in tests {
        let Some(p) = pairs.first() else { continue };
        let seeds = p.baseline.len();
        t.push_str(&format!(
            "\n{} results{}\n",
            spec.name,
            if seeds > 1 {
                format!(" (mean of {seeds} paired seeds)")
            } else {
                String::new()
            }
        ));
        t.push_str(&fsperf_tables(&compare_rows(&p.baseline, &p.current)));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::count_of;

    #[test]
    fn one_is_singular() {
        assert_eq!(count_of(1, "client"), "1 client");
        assert_eq!(count_of(0, "client"), "0 clients");
        assert_eq!(count_of(64, "client"), "64 clients");
    }
}
