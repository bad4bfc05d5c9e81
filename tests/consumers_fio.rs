//! fio-shaped JSON and HdrHistogram logs, read by the real tools their users run (issue 29):
//! real fio 3.x (its own JSON's key paths), fio's `fio_jsonplus_clat2csv`, fio-plot's JSON
//! parsing (PyPI `fio-plot`), the HdrHistogram Python package (PyPI `hdrhistogram`); and
//! the keys fsperf's `FioResultDecoder` collapses. A consumer that is not installed prints
//! one `SKIP` line and the test passes; `.ci/run` installs them (apt `fio`; a venv at
//! `target/consumers-venv`, or `$FSYNCSIM_CONSUMERS_PYTHON`, with fio-plot and hdrhistogram).

use crate::common;

use common::{assert_one_line_in, fsyncsim_in, stderr, temp_dir};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs fsyncsim in `dir`, asserts exit 0, returns stdout.
fn run_ok(dir: &Path, args: &[&str]) -> String {
    let o = fsyncsim_in(dir, args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// A program on PATH that runs (`--help` succeeds: a Python script's interpreter and modules
/// are there too), if there.
fn on_path(name: &str) -> Option<PathBuf> {
    let p = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    })?;
    let runs = Command::new(&p)
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success());
    runs.then_some(p)
}

/// The Python with fio-plot and hdrhistogram: `$FSYNCSIM_CONSUMERS_PYTHON`, else the venv
/// `.ci/run` makes under target/.
fn consumer_python(module: &str) -> Option<PathBuf> {
    let py = std::env::var_os("FSYNCSIM_CONSUMERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/consumers-venv/bin/python")
        });
    let ok = Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

fn skip(test: &str, what: &str) {
    println!("SKIP {test}: {what} is not installed (.ci/run installs it)");
}

/// Every key path of a JSON document; the keys inside `percentile` and `bins` maps (values,
/// not names) count as one `*`.
fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if prefix.ends_with("/percentile") || prefix.ends_with("/bins") {
                    out.insert(format!("{prefix}/*"));
                    continue;
                }
                key_paths(x, &format!("{prefix}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

const FIO_ARGS: [&str; 10] = [
    "fio",
    "--rw",
    "randrw",
    "--iodepth",
    "4",
    "--fsync",
    "8",
    "--runtime",
    "1s",
    "--seed",
];

/// `fsyncsim fio` with reads, writes and flushes, as JSON (`--json-plus` when `plus`).
fn fio_json(dir: &Path, plus: bool, extra: &[&str]) -> String {
    let mut args: Vec<&str> = FIO_ARGS.to_vec();
    args.push("3");
    args.push(if plus { "--json-plus" } else { "--json" });
    args.extend_from_slice(extra);
    run_ok(dir, &args)
}

#[test]
fn fio_json_has_every_key_path_real_fio_writes() {
    let Some(fio) = on_path("fio") else {
        return skip("fio_json_has_every_key_path_real_fio_writes", "fio");
    };
    let d = temp_dir("fio-real");
    // A comparable real job: random reads and writes, an fsync every 8 writes, json+.
    let o = Command::new(fio)
        .args([
            "--name=x",
            "--ioengine=null",
            "--rw=randrw",
            "--size=16M",
            "--iodepth=4",
            "--fsync=8",
            "--output-format=json+",
        ])
        .arg(format!("--output={}", d.join("real.json").display()))
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let real: Value = serde_json::from_slice(&std::fs::read(d.join("real.json")).unwrap()).unwrap();
    let ours: Value = serde_json::from_str(&fio_json(&d, true, &[])).unwrap();
    let (mut rp, mut op) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&real, "", &mut rp);
    key_paths(&ours, "", &mut op);
    let missing: Vec<&String> = rp.difference(&op).collect();
    assert!(
        missing.is_empty(),
        "key paths real fio writes that fsyncsim lacks: {missing:?}"
    );
    assert!(rp.len() > 150, "{}", rp.len());
}

#[test]
fn fio_json_is_deterministic_with_exact_extremes() {
    let d = temp_dir("fio-det");
    let a = fio_json(&d, true, &[]);
    assert_eq!(a, fio_json(&d, true, &[]));
    let v: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["timestamp"], 0);
    assert_eq!(v["time"], "Thu Jan  1 00:00:00 1970");
    let job = &v["jobs"][0];
    for dir in ["read", "write"] {
        let c = &job[dir]["clat_ns"];
        let (min, max) = (c["min"].as_u64().unwrap(), c["max"].as_u64().unwrap());
        let bins = c["bins"].as_object().unwrap();
        let n: u64 = bins.values().map(|x| x.as_u64().unwrap()).sum();
        assert_eq!(n, c["N"].as_u64().unwrap());
        assert_eq!(n, job[dir]["total_ios"].as_u64().unwrap());
        for p in c["percentile"].as_object().unwrap().values() {
            let p = p.as_u64().unwrap();
            assert!(min <= p && p <= max, "{dir}: {p} outside {min}..{max}");
        }
        // fio's rates from its own formulas.
        let rt = job[dir]["runtime"].as_u64().unwrap();
        let bytes = job[dir]["io_bytes"].as_u64().unwrap();
        assert_eq!(job[dir]["bw_bytes"].as_u64().unwrap(), 1000 * bytes / rt);
        assert!(job[dir]["bw_samples"].as_u64().unwrap() >= 2);
    }
    // Trim is unused: zeros and no percentiles, as fio writes an unused direction.
    assert_eq!(job["trim"]["total_ios"], 0);
    assert!(job["trim"]["clat_ns"].get("percentile").is_none());
    assert!(job["sync"]["total_ios"].as_u64().unwrap() > 0);
    let lat_pct: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| job[*k].as_object().unwrap().values())
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!((lat_pct - 100.0).abs() < 0.1, "{lat_pct}");
    // Plain --json has no bins.
    let plain: Value = serde_json::from_str(&fio_json(&d, false, &[])).unwrap();
    assert!(plain["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
}

#[test]
fn fio_jsonplus_clat2csv_reads_and_validates_json_plus() {
    let Some(tool) = on_path("fio_jsonplus_clat2csv") else {
        return skip(
            "fio_jsonplus_clat2csv_reads_and_validates_json_plus",
            "fio_jsonplus_clat2csv (Debian package fio)",
        );
    };
    let d = temp_dir("clat2csv");
    let text = fio_json(&d, true, &[]);
    std::fs::write(d.join("plus.json"), &text).unwrap();
    for extra in [None, Some("--validate")] {
        let mut c = Command::new(&tool);
        c.args(["plus.json", "out.csv"]).current_dir(&d);
        if let Some(e) = extra {
            c.arg(e);
        }
        let o = c.output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{extra:?}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        if extra.is_some() {
            assert!(out.contains("out_job0.csv validated"), "{out}");
        }
    }
    // The CSV's write clat counts add up to the JSON's N.
    let v: Value = serde_json::from_str(&text).unwrap();
    let csv = std::fs::read_to_string(d.join("out_job0.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    let col = head
        .iter()
        .position(|c| *c == "write_clat_ns_count")
        .unwrap();
    let sum: u64 = lines
        .filter_map(|l| l.split(',').nth(col))
        .filter_map(|c| c.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(sum, v["jobs"][0]["write"]["clat_ns"]["N"].as_u64().unwrap());
}

#[test]
fn fio_plot_parses_fio_json() {
    let Some(py) = consumer_python("fio_plot.fiolib.jsonparsing") else {
        return skip("fio_plot_parses_fio_json", "fio-plot (PyPI)");
    };
    let d = temp_dir("fio-plot");
    let inp = d.join("in");
    std::fs::create_dir_all(&inp).unwrap();
    let text = fio_json(&d, false, &[]);
    std::fs::write(inp.join("randrw-4-1.json"), &text).unwrap();
    // fio-plot's own import and parsing, as its 2D/bar charts call them.
    let script = r#"
import json, sys
from fio_plot.fiolib import jsonimport, jsonparsing
settings = {"input_directory": [sys.argv[1]], "rw": "randrw", "iodepth": [4], "numjobs": [1],
            "filter": ["read", "write"], "include_hosts": None, "exclude_hosts": None,
            "compare_graph": False}
ds = jsonimport.list_json_files(settings)
ds = jsonimport.import_json_dataset(settings, ds)
parsed = jsonparsing.parse_json_data(settings, ds)
row = parsed[0]["data"][0]
print(json.dumps({k: row[k] for k in ["iops", "bw", "lat", "iops_stddev", "lat_stddev",
                                      "cpu_sys", "iodepth", "numjobs", "rw", "fio_version"]}))
"#;
    let o = Command::new(&py)
        .args(["-c", script])
        .arg(&inp)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fio-plot: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let row: Value = serde_json::from_slice(&o.stdout).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let read = &v["jobs"][0]["read"];
    assert_eq!(row["iops"], read["iops"]);
    assert_eq!(row["bw"], read["bw"]);
    assert_eq!(row["lat"], read["lat_ns"]["mean"]);
    assert_eq!(row["iops_stddev"], read["iops_stddev"]);
    assert_eq!(row["iodepth"], "4");
    // And its command line draws the bar chart from the file (headless: matplotlib's Agg).
    let cli = py.with_file_name("fio-plot");
    if cli.is_file() {
        let o = Command::new(&cli)
            .env("MPLBACKEND", "Agg")
            .args([
                "-i", "in", "-T", "fsyncsim", "-l", "-r", "randrw", "-d", "4", "-n", "1",
            ])
            .args(["--filter", "read", "-o", "chart.png"])
            .current_dir(&d)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "fio-plot: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let png = std::fs::read(d.join("chart.png")).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{}",
            png.len()
        );
    }
}

/// fsperf's FioResultDecoder (src/FioResultDecoder.py): per job, scalars are kept; inside
/// read/write/trim, scalars become `<dir>_<key>`, and `lat_ns`/`clat_ns` become
/// `<dir>_<lat>_<stat>` with percentiles as `<dir>_<lat>_p<N>`. These are the columns of
/// fsperf's FioResult table it fills.
fn fsperf_columns(job: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (k, v) in job.as_object().unwrap() {
        if !["read", "write", "trim"].contains(&k.as_str()) {
            if !v.is_object() && !v.is_array() {
                out.insert(k.clone());
            }
            continue;
        }
        for (kk, vv) in v.as_object().unwrap() {
            if kk == "lat_ns" || kk == "clat_ns" {
                for (s, sv) in vv.as_object().unwrap() {
                    if s == "percentile" {
                        for p in sv.as_object().unwrap().keys() {
                            let p: f64 = p.parse().unwrap();
                            out.insert(format!("{k}_{kk}_p{p}"));
                        }
                    } else {
                        out.insert(format!("{k}_{kk}_{s}"));
                    }
                }
            } else if !vv.is_object() && !vv.is_array() {
                out.insert(format!("{k}_{kk}"));
            }
        }
    }
    out
}

/// The 21 fio columns of fsperf's results table (ResultData.FioResult).
const FSPERF_COLUMNS: [&str; 21] = [
    "read_io_bytes",
    "elapsed",
    "sys_cpu",
    "read_lat_ns_min",
    "read_lat_ns_max",
    "read_lat_ns_mean",
    "read_clat_ns_p50",
    "read_clat_ns_p99",
    "read_clat_ns_mean",
    "read_iops",
    "read_io_kbytes",
    "read_bw_bytes",
    "write_lat_ns_min",
    "write_lat_ns_max",
    "write_lat_ns_mean",
    "write_clat_ns_p50",
    "write_clat_ns_p99",
    "write_clat_ns_mean",
    "write_iops",
    "write_io_kbytes",
    "write_bw_bytes",
];

#[test]
fn fsperf_decoder_finds_its_columns_in_fio_workload_and_compare_json() {
    let d = temp_dir("fsperf-cols");
    // Every job has the columns of each direction it used (an unused direction has no
    // percentiles, in fio as here: fsperf then keeps the column's default, 0), and the jobs
    // together fill all 21.
    let check = |what: &str, jobs: &Value| {
        let jobs = jobs
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no jobs array"));
        assert!(!jobs.is_empty(), "{what}: empty jobs");
        let mut filled = BTreeSet::new();
        for j in jobs {
            let cols = fsperf_columns(j);
            for c in FSPERF_COLUMNS {
                let dir = c.split('_').next().unwrap();
                let used = j
                    .get(dir)
                    .is_some_and(|d| d["total_ios"].as_u64() > Some(0));
                let per_dir = dir == "read" || dir == "write";
                if used || !per_dir {
                    assert!(cols.contains(c), "{what}: job {} lacks {c}", j["jobname"]);
                }
                if cols.contains(c) {
                    filled.insert(c);
                }
            }
        }
        assert_eq!(filled.len(), FSPERF_COLUMNS.len(), "{what}: {filled:?}");
    };
    let v: Value = serde_json::from_str(&fio_json(&d, false, &[])).unwrap();
    check("fio --json", &v["jobs"]);
    // `p50` is spelt the way the decoder spells an integral percentile.
    assert!(fsperf_columns(&v["jobs"][0]).contains("read_clat_ns_p99.9"));
    let w: Value = serde_json::from_str(&run_ok(
        &d,
        &[
            "workload",
            "dbench",
            "--clients",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--json",
        ],
    ))
    .unwrap();
    check("workload --json", &w["jobs"]);
    // The existing keys stay.
    assert!(w["ops"]["WriteX"]["clat_ns"]["N"].as_u64().unwrap() > 0);
    let job_w = w["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == "WriteX")
        .unwrap();
    assert_eq!(job_w["write"]["total_ios"], w["ops"]["WriteX"]["count"]);
    let flush = w["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == "Flush")
        .unwrap();
    assert_eq!(flush["sync"]["total_ios"], w["ops"]["Flush"]["count"]);
    run_ok(
        &d,
        &[
            "compare",
            "dbench",
            "--clients",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--out",
            "cmp",
        ],
    );
    let c: Value =
        serde_json::from_slice(&std::fs::read(d.join("cmp/results.json")).unwrap()).unwrap();
    check("compare results.json", &c["jobs"]);
    let groups: BTreeSet<u64> = c["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["groupid"].as_u64().unwrap())
        .collect();
    assert_eq!(groups, BTreeSet::from([0, 1]));
    assert!(c["points"][0]["baseline"][0]["jobs"].is_array());
}

/// The HdrHistogram Python package reads each log: (file, tag, count, min, max, p50, p99).
fn python_hdr_read(py: &Path, dir: &Path) -> Vec<Value> {
    let script = r#"
import json, os, sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
out = []
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if not f.endswith(".hlog"):
        continue
    r = HistogramLogReader(os.path.join(d, f), HdrHistogram(1, 3600 * 10**9, 3))
    while True:
        h = r.get_next_interval_histogram()
        if h is None:
            break
        out.append({"file": f, "tag": h.get_tag(), "count": h.get_total_count(),
                    "min": h.get_min_value(), "max": h.get_max_value(),
                    "p50": h.get_value_at_percentile(50.0), "p99": h.get_value_at_percentile(99.0),
                    "start_ms": h.get_start_time_stamp(), "end_ms": h.get_end_time_stamp()})
print(json.dumps(out))
"#;
    let o = Command::new(py)
        .args(["-c", script])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "hdrh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&o.stdout).unwrap()
}

/// `a` and `b` within one HDR bucket (3 significant digits) of each other.
fn same_bucket(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= a.max(b) / 500 + 1
}

#[test]
fn hdrhistogram_python_decodes_every_log() {
    let Some(py) = consumer_python("hdrh.log") else {
        return skip(
            "hdrhistogram_python_decodes_every_log",
            "hdrhistogram (PyPI)",
        );
    };
    let d = temp_dir("hdr-py");
    let v: Value = serde_json::from_str(&fio_json(&d, false, &["--hdr-out", "fio"])).unwrap();
    let logs = python_hdr_read(&py, &d.join("fio"));
    let files: Vec<&str> = logs.iter().map(|l| l["file"].as_str().unwrap()).collect();
    assert_eq!(
        files,
        [
            "read_clat.hlog",
            "read_lat.hlog",
            "read_slat.hlog",
            "sync_lat.hlog",
            "write_clat.hlog",
            "write_lat.hlog",
            "write_slat.hlog"
        ]
    );
    let job = &v["jobs"][0];
    for l in &logs {
        let f = l["file"].as_str().unwrap().trim_end_matches(".hlog");
        let (dir, lat) = f.split_once('_').unwrap();
        let ours = &job[dir][format!("{lat}_ns")];
        assert_eq!(l["count"], ours["N"], "{f}");
        for k in ["min", "max"] {
            let (a, b) = (l[k].as_u64().unwrap(), ours[k].as_u64().unwrap());
            assert!(same_bucket(a, b), "{f} {k}: hdrh {a}, fio json {b}");
        }
        if let Some(p) = ours.get("percentile") {
            for (q, key) in [("p50", "50.000000"), ("p99", "99.000000")] {
                let (a, b) = (l[q].as_u64().unwrap(), p[key].as_u64().unwrap());
                assert!(same_bucket(a, b), "{f} {q}: hdrh {a}, fio json {b}");
            }
        }
        // One interval from virtual time 0 over the run.
        assert_eq!(l["start_ms"], 0.0);
        assert_eq!(
            l["end_ms"].as_f64().unwrap(),
            job["job_runtime"].as_f64().unwrap()
        );
    }

    // compare: one log per policy and operation, one tagged interval per seed.
    run_ok(
        &d,
        &[
            "compare",
            "dbench",
            "--clients",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "1s",
            "--seeds",
            "2",
            "--json",
            "--hdr-out",
            "cmp",
        ],
    );
    let logs = python_hdr_read(&py, &d.join("cmp"));
    let flush: Vec<&Value> = logs
        .iter()
        .filter(|l| l["file"] == "linux-5.11.Flush.hlog")
        .collect();
    assert_eq!(flush.len(), 2, "{logs:?}");
    let tags: Vec<&str> = flush.iter().map(|l| l["tag"].as_str().unwrap()).collect();
    assert_eq!(tags.len(), 2);
    assert!(tags[0] != tags[1] && tags.iter().all(|t| t.starts_with("seed")));
    assert!(logs.iter().any(|l| l["file"] == "linux-5.10.Flush.hlog"));
    // The window starts after the warmup.
    assert!(flush
        .iter()
        .all(|l| l["start_ms"].as_f64().unwrap() >= 1000.0));
}

#[test]
fn hdr_out_is_deterministic_and_refuses_a_file_with_one_line() {
    let d = temp_dir("hdr-det");
    let args = |dir: &'static str| {
        vec![
            "workload",
            "dbench",
            "--clients",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--hdr-out",
            dir,
        ]
    };
    run_ok(&d, &args("a"));
    run_ok(&d, &args("b"));
    let names = |p: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let (na, nb) = (names(&d.join("a")), names(&d.join("b")));
    assert_eq!(na, nb);
    assert!(na.contains(&"Flush.hlog".to_string()), "{na:?}");
    for n in &na {
        let a = std::fs::read(d.join("a").join(n)).unwrap();
        assert_eq!(a, std::fs::read(d.join("b").join(n)).unwrap(), "{n}");
        let text = String::from_utf8(a).unwrap();
        assert!(
            text.contains("#[StartTime: 0.000 (seconds since epoch)]"),
            "{n}"
        );
    }
    // A regular file where the directory goes: one line, exit 2, nothing written.
    std::fs::write(d.join("f"), "x").unwrap();
    assert_one_line_in(&d, 2, &args("f"), &["--hdr-out", "a directory"]);
    assert_one_line_in(
        &d,
        2,
        &["fio", "--runtime", "10ms", "--hdr-out", "f"],
        &["--hdr-out", "a directory"],
    );
    assert_one_line_in(
        &d,
        2,
        &["compare", "dbench", "--duration", "1s", "--hdr-out", "f"],
        &["--hdr-out", "a directory"],
    );
    assert_eq!(std::fs::read(d.join("f")).unwrap(), b"x");
    // The same policy on both sides of a comparison: one set of logs per side.
    run_ok(
        &d,
        &[
            "compare",
            "dbench",
            "--clients",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--baseline",
            "linux-5.11",
            "--current",
            "linux-5.11",
            "--hdr-out",
            "same",
        ],
    );
    for side in ["baseline", "current"] {
        assert!(d
            .join(format!("same/{side}-linux-5.11.Flush.hlog"))
            .is_file());
    }
    // A symlink to a directory is followed; one under /dev is refused.
    std::os::unix::fs::symlink("a", d.join("la")).unwrap();
    run_ok(&d, &["fio", "--runtime", "10ms", "--hdr-out", "la"]);
    assert!(d.join("a/read_clat.hlog").is_file());
    std::os::unix::fs::symlink("/dev", d.join("ld")).unwrap();
    assert_one_line_in(
        &d,
        2,
        &["fio", "--runtime", "10ms", "--hdr-out", "ld"],
        &["--hdr-out", "/dev"],
    );
}
