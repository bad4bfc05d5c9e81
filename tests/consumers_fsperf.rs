//! fsperf's formats read by fsperf's own code, and dbench's layout beside real dbench
//! (issue 29 item 3):
//! - the fsperf tables (`compare`, `compare fsperf`) are byte for byte what Python's texttable
//!   (PyPI `texttable`, in the venv `.ci/run` makes at `target/consumers-venv`, or
//!   `$FSYNCSIM_CONSUMERS_PYTHON`) draws from the same rows set up as fsperf's
//!   `src/utils.py:print_comparison_table` sets it up;
//! - fsperf's dbench parser (`src/PerfTest.py:DbenchTest.test`; fsperf is not on a registry,
//!   so its rules are restated here, not its code) reads `workload dbench` and `compare
//!   dbench` as one dbench run: `throughput` and each operation's MaxLat, nothing else;
//! - Debian's dbench 4.0 (apt `dbench`) prints the table header and rule we print.
//!
//! A consumer that is not installed prints one `SKIP` line and the test passes.

use crate::common;

use common::{consumer_python, fsyncsim_in, skip, stderr, temp_dir};
use reports::workload::CompareRow;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn run_ok(args: &[&str]) -> String {
    let d = temp_dir("fsperf-out");
    let o = fsyncsim_in(&d, args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// fsperf's `print_comparison_table` over `rows` ([metric, baseline mean, current mean,
/// baseline stdev] as JSON), less the terminal colours of its diff column: texttable, HEADER
/// decoration, precision 2, max_width 100, dtypes t a a a t, aligned l r r r r, rows where
/// both means are 0 left out, sorted by metric, diff `{:.2f}%` of `pct_diff`.
const FSPERF_TABLE_PY: &str = r#"
import json, sys, texttable
def pct_diff(a, b):
    if a == 0 and b == 0:
        return 0
    if a == 0:
        return 100
    return ((b - a) / a) * 100
table = texttable.Texttable(max_width=100)
table.set_precision(2)
table.set_deco(texttable.Texttable.HEADER)
table.set_cols_dtype(['t', 'a', 'a', 'a', 't'])
table.set_cols_align(['l', 'r', 'r', 'r', 'r'])
rows = [["metric", "baseline", "current", "stdev", "diff"]]
for k, a, b, sd in sorted(json.load(sys.stdin)):
    if not a and not b:
        continue
    rows.append([k, a, b, sd, "{:.2f}%".format(pct_diff(a, b))])
table.add_rows(rows)
print(table.draw())
"#;

/// What texttable draws for `rows` as fsperf sets it up.
fn texttable_draws(py: &Path, rows: &[CompareRow]) -> String {
    let input: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| serde_json::json!([r.metric, r.baseline, r.current, r.baseline_stdev]))
        .collect();
    let json = serde_json::to_string(&input).unwrap();
    let o = common::fed(
        Command::new(py).args(["-c", FSPERF_TABLE_PY]),
        json.as_bytes(),
    );
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

fn row(metric: &str, baseline: f64, current: f64, sd: f64) -> CompareRow {
    CompareRow {
        metric: metric.into(),
        baseline,
        current,
        baseline_stdev: sd,
        diff_pct: 0.0,
        stdev_pct: None,
        ci_pct: None,
    }
}

#[test]
fn fsperf_tables_are_what_texttable_draws() {
    let Some(py) = consumer_python("texttable") else {
        return skip("fsperf_tables_are_what_texttable_draws", "texttable");
    };
    // Numbers at texttable's edges: 1e8 (whole, not exponent) and just above, ties of %.2f,
    // negative exponents, zero beside non-zero, a long name.
    let edges = vec![
        row("throughput", 446.234, 434.5249, 12.5),
        row("write_bw_bytes", 1.79e8, 1.85e8, 0.125),
        row("write_io_kbytes", 1e8, 100000000.5, 2.5),
        row("write_lat_ns_max", 40_512_000_000.0, 27_301_000_000.0, 0.0),
        row("read_iops", 0.0, 0.0, 0.0),
        row("sys_cpu", 0.0, 4.72, 0.005),
        row("qfsinfo", 0.001, -0.015, 1.0e-9),
        row(
            "metadata_ticket_wait_p99_ns_with_a_longer_name",
            3.0,
            1.0,
            0.0,
        ),
    ];
    assert_eq!(
        reports::workload::fsperf_table(&edges),
        texttable_draws(&py, &edges)
    );
    // A real comparison's rows, as `compare dbench` prints them.
    let args = [
        "compare",
        "dbench",
        "--clients",
        "2",
        "--duration",
        "100ms",
        "--warmup",
        "0s",
    ];
    let text = run_ok(&args);
    let json: serde_json::Value =
        serde_json::from_str(&run_ok(&[&args[..], &["--json"]].concat())).unwrap();
    let rows: Vec<CompareRow> = json["points"][0]["compare"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| reports::workload::is_fsperf_metric(r["metric"].as_str().unwrap()))
        .map(|r| {
            let f = |k: &str| r[k].as_f64().unwrap();
            row(
                r["metric"].as_str().unwrap(),
                f("baseline"),
                f("current"),
                f("baseline_stdev"),
            )
        })
        .collect();
    assert!(
        rows.len() > 10 && rows[0].metric == "throughput",
        "{rows:?}"
    );
    let printed: String = text
        .lines()
        .skip_while(|l| !l.starts_with("== linux-5.10 vs linux-5.11"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(printed, texttable_draws(&py, &rows), "{text}");
}

/// fsperf's dbench parser, restated from `src/PerfTest.py:DbenchTest.test`: skip lines until
/// one containing `----`; after it, a line of 4 whitespace-separated fields sets
/// `fields[0].lower()` to `fields[3]`, a line of more sets `throughput` to `fields[1]`, any
/// other is ignored; later lines overwrite earlier ones.
fn fsperf_dbench_parse(out: &str) -> BTreeMap<String, String> {
    let mut parse = false;
    let mut results = BTreeMap::new();
    for line in out.lines() {
        if !parse {
            parse = line.contains("----");
            continue;
        }
        let vals: Vec<&str> = line.split_whitespace().collect();
        if vals.len() == 4 {
            results.insert(vals[0].to_lowercase(), vals[3].to_string());
        } else if vals.len() > 4 {
            results.insert("throughput".into(), vals[1].to_string());
        }
    }
    results
}

/// The columns of fsperf's `DbenchResult` (`src/ResultData.py`).
const DBENCH_RESULT: [&str; 17] = [
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

/// `out`'s dbench table as (lower-case operation, MaxLat) and the Throughput line's MB/s.
fn table_of(out: &str) -> (BTreeMap<String, String>, String) {
    let start = out
        .rfind(" Operation      Count    AvgLat    MaxLat\n")
        .unwrap();
    let mut ops = BTreeMap::new();
    let mut tp = String::new();
    for l in out[start..].lines().skip(2) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 4 {
            ops.insert(f[0].to_lowercase(), f[3].to_string());
        } else if l.starts_with("Throughput ") {
            tp = f[1].to_string();
        }
    }
    (ops, tp)
}

#[test]
fn fsperfs_dbench_parser_reads_one_run_from_workload_and_compare() {
    let common = ["--clients", "2", "--duration", "100ms", "--warmup", "0s"];
    for cmd in [&["workload", "dbench"][..], &["compare", "dbench"][..]] {
        let out = run_ok(&[cmd, &common[..]].concat());
        let got = fsperf_dbench_parse(&out);
        let (mut want, tp) = table_of(&out);
        want.insert("throughput".into(), tp.clone());
        assert_eq!(got, want, "{cmd:?}:\n{out}");
        assert!(tp.parse::<f64>().unwrap() > 0.0, "{tp}");
        for k in got.keys() {
            assert!(DBENCH_RESULT.contains(&k.as_str()), "{cmd:?}: {k}");
        }
        // The figure fsperf stores is the run's: the JSON's throughput at %g.
        let json: serde_json::Value =
            serde_json::from_str(&run_ok(&[cmd, &common[..], &["--json"]].concat())).unwrap();
        let mbs = if cmd[0] == "workload" {
            json["throughput_mb_s"].as_f64()
        } else {
            json["points"][0]["current"][0]["throughput_mb_s"].as_f64()
        };
        assert_eq!(
            reports::texttable::g(mbs.expect("throughput in the JSON")),
            tp,
            "{cmd:?}"
        );
    }
}

#[test]
fn dbench_tables_have_real_dbench_4_layout() {
    let Some(client) = ["/usr/share/dbench/client.txt"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .filter(|_| Command::new("dbench").arg("--help").output().is_ok())
    else {
        return skip("dbench_tables_have_real_dbench_4_layout", "Debian's dbench");
    };
    let d = temp_dir("real-dbench");
    std::fs::create_dir_all(&d).unwrap();
    let o = Command::new("dbench")
        .args(["-t", "1", "-c", client, "-D"])
        .arg(&d)
        .arg("1")
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&o.stdout).into_owned();
    let ours = run_ok(&[
        "workload",
        "dbench",
        "--clients",
        "1",
        "--duration",
        "100ms",
        "--warmup",
        "0s",
    ]);
    // Header, rule and the blank line before Throughput, line for line; rows of the same
    // widths; the Throughput line's shape.
    let shape = |t: &str| -> Vec<String> {
        let start = t.find(" Operation").unwrap();
        t[start..]
            .lines()
            .map(|l| {
                if l.starts_with("Throughput ") {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    format!("Throughput {} {} clients {} procs", f[2], f[4], f[6])
                } else if l.starts_with(" Operation") || l.starts_with(" -") || l.is_empty() {
                    l.to_string()
                } else {
                    format!("row of {}", l.len())
                }
            })
            .collect()
    };
    let (r, w) = (shape(&real), shape(&ours));
    assert_eq!(r[..2], w[..2], "{real}\n{ours}");
    assert!(r.iter().all(|l| w.contains(l)), "{real}\n{ours}");
    assert_eq!(r.last(), w.last());
}
