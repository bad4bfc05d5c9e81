//! `iostat -x` rows read by `jc --iostat` (PyPI `jc`, in the venv `.ci/run` makes at
//! `target/consumers-venv`, or `$FSYNCSIM_CONSUMERS_PYTHON`'s): today's sysstat columns
//! (r_await, w_await, aqu-sz, rareq-sz, wareq-sz, %util …) and, behind
//! `--iostat-sysstat9`, sysstat 9's (issue 29 item 5). Without jc: one `SKIP` line.

use crate::common;

use common::{fsyncsim_in, stderr, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `jc` of the consumers' venv (or next to `$FSYNCSIM_CONSUMERS_PYTHON`), if it runs.
fn jc() -> Option<PathBuf> {
    let py = std::env::var_os("FSYNCSIM_CONSUMERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/consumers-venv/bin/python")
        });
    let jc = py.with_file_name("jc");
    let ok = Command::new(&jc)
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(jc)
}

/// `workload kbuild`'s `iostat -x` header and device line, through `jc --iostat`.
fn parsed(jc: &Path, extra: &[&str]) -> Value {
    let d = temp_dir("jc-iostat");
    let mut args = vec!["workload", "kbuild", "--duration", "2s"];
    args.extend_from_slice(extra);
    let o = fsyncsim_in(&d, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let rows: String = out
        .lines()
        .skip_while(|l| !l.starts_with("Device"))
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect();
    let o = common::fed(Command::new(jc).arg("--iostat"), rows.as_bytes());
    assert!(o.status.success(), "{rows}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{rows}\n{v}");
    v[0].clone()
}

#[test]
fn jc_reads_todays_and_sysstat9_iostat_columns() {
    let Some(jc) = jc() else {
        println!("SKIP jc_reads_todays_and_sysstat9_iostat_columns: jc is not installed (.ci/run installs it)");
        return;
    };
    let new = parsed(&jc, &[]);
    let keys: Vec<&str> = new
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    for k in [
        "device",
        "r_s",
        "rkb_s",
        "rrqm_s",
        "percent_rrqm",
        "r_await",
        "rareq_sz",
        "w_s",
        "wkb_s",
        "wrqm_s",
        "percent_wrqm",
        "w_await",
        "wareq_sz",
        "d_s",
        "f_s",
        "f_await",
        "aqu_sz",
        "percent_util",
    ] {
        assert!(keys.contains(&k), "{k}: {new}");
    }
    assert!(
        !keys.contains(&"svctm") && !keys.contains(&"avgqu_sz"),
        "{new}"
    );
    let old = parsed(&jc, &["--iostat-sysstat9"]);
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"));
    assert_eq!(new["device"], old["device"]);
    // The same window in both layouts.
    for (a, b) in [("r_s", "r_s"), ("w_s", "w_s"), ("aqu_sz", "avgqu_sz")] {
        assert_eq!(f(&new, a), f(&old, b), "{a}");
    }
    assert_eq!(f(&new, "percent_util"), f(&old, "percent_util"));
    assert!(f(&new, "r_s") > 0.0 && f(&new, "w_s") > 0.0, "{new}");
    // await is the requests' mean of r_await and w_await; kB/s = MB/s × 1024; the request
    // sizes are kB per request.
    let (r, w) = (f(&new, "r_s"), f(&new, "w_s"));
    let mixed = (r * f(&new, "r_await") + w * f(&new, "w_await")) / (r + w);
    assert!((mixed - f(&old, "await")).abs() < 0.02, "{mixed} vs {old}");
    assert!((f(&new, "rkb_s") / 1024.0 - f(&old, "rmb_s")).abs() < 0.006);
    assert!((f(&new, "rareq_sz") - f(&new, "rkb_s") / r).abs() < 0.01);
    let pct = 100.0 * f(&new, "wrqm_s") / (f(&new, "wrqm_s") + w);
    assert!((pct - f(&new, "percent_wrqm")).abs() < 0.01, "{pct}");
}
