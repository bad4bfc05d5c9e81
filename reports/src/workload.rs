//! Workload results as their users read them: dbench's operation table and throughput line,
//! sysbench's and fs_mark's summaries, fsperf's `metric | baseline | current | diff` table,
//! latency attribution, and JSON with fio-style latency objects.

use crate::latency::stats_json_with_percentiles;
use models::workload::fsload::WorkloadResult;
use models::workload::spec::Kind;
use serde_json::{json, Map, Value};

const MS: f64 = 1e6;

/// dbench's table (`%-22s %7u %9.03f %9.03f`, latencies in ms) and its `Throughput` line.
pub fn dbench_table(r: &WorkloadResult) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        " {:<22} {:>7} {:>9} {:>9}\n",
        "Operation", "Count", "AvgLat", "MaxLat"
    ));
    t.push_str(&format!(" {}\n", "-".repeat(50)));
    for o in &r.ops {
        if o.hist.is_empty() {
            continue;
        }
        t.push_str(&format!(
            " {:<22} {:>7} {:>9.3} {:>9.3}\n",
            o.name,
            o.hist.len(),
            o.hist.mean() / MS,
            o.hist.max() as f64 / MS
        ));
    }
    t.push('\n');
    t.push_str(&format!(
        "Throughput {:.2} MB/sec{}  {} clients  {} procs  max_latency={:.3} ms\n",
        r.mb_per_s(),
        if r.sync_open { " (sync open)" } else { "" },
        r.clients,
        r.clients,
        r.max_latency() as f64 / MS
    ));
    t
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
    for o in &r.ops {
        if o.hist.is_empty() {
            continue;
        }
        t.push_str(&format!(
            "  {:<7} {:>9} ops  avg {:>9.3} ms  p99 {:>9.3} ms  max {:>9.3} ms\n",
            o.name,
            o.hist.len(),
            o.hist.mean() / MS,
            o.hist.value_at_quantile(0.99) as f64 / MS,
            o.hist.max() as f64 / MS
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

/// Per operation kind, the mean latency split by attribution group: (op, count, mean ns,
/// [(group, mean ns)]), groups largest first.
pub fn attribution(r: &WorkloadResult) -> Vec<(String, u64, f64, Vec<(String, f64)>)> {
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

/// fsperf-style metrics of one run: throughput, per-operation latency figures (ms) and the
/// btrfs counters.
pub fn metrics(r: &WorkloadResult) -> Vec<(String, f64)> {
    let mut m = Vec::new();
    match r.kind {
        Kind::Dbench => m.push(("throughput_mb_s".to_string(), r.mb_per_s())),
        Kind::SysbenchFileio => m.push(("requests_per_s".to_string(), r.per_s())),
        Kind::FsMark => m.push(("files_per_s".to_string(), r.per_s())),
    }
    m.push(("max_latency_ms".into(), r.max_latency() as f64 / MS));
    for o in &r.ops {
        if o.hist.is_empty() {
            continue;
        }
        m.push((format!("{}_avg_lat_ms", o.name), o.hist.mean() / MS));
        m.push((
            format!("{}_p99_lat_ms", o.name),
            o.hist.value_at_quantile(0.99) as f64 / MS,
        ));
        m.push((format!("{}_max_lat_ms", o.name), o.hist.max() as f64 / MS));
    }
    for (k, v) in r.metrics.scalars() {
        m.push((k.to_string(), v as f64));
    }
    m
}

/// Two-sided 97.5 % quantile of Student's t for `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        d if d <= 30 => T[d - 1],
        _ => 1.96,
    }
}

/// One row of a comparison: the metric's means, and the paired relative differences.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareRow {
    /// Metric name.
    pub metric: String,
    /// Mean over seeds, baseline.
    pub baseline: f64,
    /// Mean over seeds, current.
    pub current: f64,
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

/// Pairs baseline and current runs seed by seed (common random numbers) per metric.
pub fn compare_rows(baseline: &[WorkloadResult], current: &[WorkloadResult]) -> Vec<CompareRow> {
    let bm: Vec<Vec<(String, f64)>> = baseline.iter().map(metrics).collect();
    let cm: Vec<Vec<(String, f64)>> = current.iter().map(metrics).collect();
    let Some(first) = bm.first() else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for (name, _) in first {
        let get =
            |m: &Vec<(String, f64)>| m.iter().find(|(k, _)| k == name).map_or(0.0, |(_, v)| *v);
        let b: Vec<f64> = bm.iter().map(get).collect();
        let c: Vec<f64> = cm.iter().map(get).collect();
        let n = b.len().min(c.len());
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let diffs: Vec<f64> = (0..n)
            .filter(|&i| b[i] != 0.0)
            .map(|i| (c[i] - b[i]) / b[i] * 100.0)
            .collect();
        let (bmean, cmean) = (mean(&b[..n]), mean(&c[..n]));
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
        rows.push(CompareRow {
            metric: name.clone(),
            baseline: bmean,
            current: cmean,
            diff_pct: d,
            stdev_pct: stdev,
            ci_pct: ci,
        });
    }
    rows
}

fn num(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn pct(v: f64) -> String {
    if v.is_nan() {
        "n/a".to_string()
    } else {
        format!("{v:.2}%")
    }
}

/// fsperf's table: `metric | baseline | current | diff`, with `stdev`, the 95 % interval and
/// a significance mark when there are several seeds. Rows whose values are all 0 are left out.
pub fn fsperf_table(rows: &[CompareRow]) -> String {
    let many = rows.iter().any(|r| r.stdev_pct.is_some());
    let mut lines: Vec<Vec<String>> = Vec::new();
    if many {
        lines.push(
            [
                "metric",
                "baseline",
                "current",
                "stdev",
                "diff",
                "95% interval",
                "sig",
            ]
            .map(String::from)
            .to_vec(),
        );
    } else {
        lines.push(
            ["metric", "baseline", "current", "diff"]
                .map(String::from)
                .to_vec(),
        );
    }
    for r in rows {
        if r.baseline == 0.0 && r.current == 0.0 {
            continue;
        }
        let mut l = vec![r.metric.clone(), num(r.baseline), num(r.current)];
        if many {
            l.push(r.stdev_pct.map_or("-".into(), pct));
            l.push(pct(r.diff_pct));
            l.push(
                r.ci_pct
                    .map_or("-".into(), |(a, b)| format!("[{}, {}]", pct(a), pct(b))),
            );
            l.push(if r.significant() {
                "*".into()
            } else {
                String::new()
            });
        } else {
            l.push(pct(r.diff_pct));
        }
        lines.push(l);
    }
    let cols = lines[0].len();
    let width: Vec<usize> = (0..cols)
        .map(|i| lines.iter().map(|l| l[i].len()).max().unwrap_or(0))
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

/// One run as JSON: per operation a fio-style `clat_ns` object, bytes, attribution; the
/// slowest operations; throughput; the btrfs counters.
pub fn json(r: &WorkloadResult) -> Value {
    let mut ops = Map::new();
    for o in &r.ops {
        let mut attr = Map::new();
        for (i, &ns) in o.attribution.iter().enumerate() {
            if ns > 0 {
                attr.insert(
                    r.classes
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("class{i}")),
                    json!(ns),
                );
            }
        }
        ops.insert(
            o.name.to_string(),
            json!({
                "count": o.hist.len(),
                "bytes": o.bytes,
                "clat_ns": stats_json_with_percentiles(&o.hist),
                "attribution_ns": Value::Object(attr),
            }),
        );
    }
    let mut metrics = Map::new();
    for (k, v) in r.metrics.scalars() {
        metrics.insert(k.to_string(), json!(v));
    }
    json!({
        "workload": r.workload,
        "kind": r.kind.name(),
        "clients": r.clients,
        "sync_open": r.sync_open,
        "policy": r.policy.name,
        "device": r.device,
        "seed": r.seed,
        "measured_ns": r.measured,
        "throughput_mb_s": r.mb_per_s(),
        "per_s": r.per_s(),
        "max_latency_ns": r.max_latency(),
        "files_done": r.files_done,
        "ops": Value::Object(ops),
        "slowest": r.slowest.iter().map(|s| json!({
            "latency_ns": s.latency, "op": s.op, "task": s.task, "at_ns": s.at,
            "attribution_ns": s.attribution.iter().map(|(c, ns)| json!([c, ns])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "metrics": Value::Object(metrics),
        "violations": r.violations.iter().map(|v| json!({
            "invariant": v.invariant, "at_ns": v.at, "message": v.message})).collect::<Vec<_>>(),
        "trace_hash": format!("{:#018x}", r.trace_hash),
        "events": r.events,
    })
}
