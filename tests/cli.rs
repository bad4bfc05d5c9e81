//! The command line: help, outputs, and bad input (one-line error, exit code 2, no panic).

use std::process::{Command, Output};

fn fsyncsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .output()
        .expect("run fsyncsim")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Asserts a bad-input failure: exit 2, exactly one line on stderr containing `needles`,
/// nothing on stdout.
fn assert_bad_input(args: &[&str], needles: &[&str]) {
    let o = fsyncsim(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert!(o.stdout.is_empty(), "{args:?}: printed output");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fsyncsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn help_and_version() {
    let o = fsyncsim(&["--help"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for sub in ["bench", "fio", "devices"] {
        assert!(out.contains(sub), "{out}");
    }
    let o = fsyncsim(&["fio", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("Examples:"));
    let o = fsyncsim(&["--version"]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("fsyncsim "));
}

#[test]
fn bad_flags_are_one_line_errors_with_exit_2() {
    assert_bad_input(
        &["fio", "--device", "floppy"],
        &["--device", "nvme, sas-ssd, sata-ssd, hdd"],
    );
    assert_bad_input(&["fio", "--bs", "0"], &["--bs", "> 0"]);
    assert_bad_input(&["fio", "--bs", "4q"], &["--bs", "4k"]);
    assert_bad_input(&["fio", "--runtime", "abc"], &["--runtime", "duration"]);
    assert_bad_input(&["fio", "--runtime", "-1s"], &["--runtime"]);
    assert_bad_input(&["fio", "--iodepth", "0"], &["--iodepth"]);
    assert_bad_input(&["fio", "--rw", "sideways"], &["--rw", "randwrite"]);
    assert_bad_input(&["fio", "--rwmixread", "101"], &["--rwmixread"]);
    assert_bad_input(&["bench", "--requests", "0"], &["--requests"]);
    assert_bad_input(&["frobnicate"], &["frobnicate"]);
}

#[test]
fn bad_device_files_name_file_line_and_expectation() {
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "unknown.toml",
            "preset = \"nvme\"\nparallelism = 4\nwarp_drive = true\n",
            &[":3:", "unknown field", "warp_drive"],
        ),
        (
            "zero.toml",
            "preset = \"sata-ssd\"\nqueue_depth = 0\n",
            &[":2:", ">= 1"],
        ),
        (
            "negative.toml",
            "[read]\ndist = \"exponential\"\nmean_us = -3\n",
            &[":1:", ">= 0"],
        ),
        (
            "nan.toml",
            "[flush]\nbase = { dist = \"constant\", us = nan }\nns_per_dirty_byte = 1.0\n",
            &[":2:", "finite"],
        ),
        ("syntax.toml", "queue_depth = \n", &[":1:"]),
        (
            "preset.toml",
            "\npreset = \"floppy\"\n",
            &[":2:", "unknown preset 'floppy'"],
        ),
    ];
    for (name, text, needles) in cases {
        let p = temp_file(name, text);
        let path = p.to_str().unwrap();
        assert_bad_input(&["fio", "--device", path], needles);
        let o = fsyncsim(&["fio", "--device", path]);
        assert!(stderr(&o).contains(name), "{}", stderr(&o));
    }
    assert_bad_input(
        &["fio", "--device", "/nonexistent/dev.toml"],
        &["cannot read device file"],
    );
}

#[test]
fn a_device_file_overrides_a_preset() {
    let p = temp_file(
        "slow.toml",
        "preset = \"nvme\"\nname = \"slow\"\n[read]\ndist = \"constant\"\nus = 500\n",
    );
    let o = fsyncsim(&[
        "fio",
        "--device",
        p.to_str().unwrap(),
        "--runtime",
        "100ms",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["device"]["name"], "slow");
    let clat = &v["jobs"][0]["read"]["clat_ns"];
    assert_eq!(clat["min"].as_u64().unwrap() / 1000, 500, "{clat}");
}

#[test]
fn fio_json_uses_fio_field_names() {
    let o = fsyncsim(&[
        "fio",
        "--device",
        "sata-ssd",
        "--rw",
        "randrw",
        "--iodepth",
        "4",
        "--fsync",
        "2",
        "--runtime",
        "50ms",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let job = &v["jobs"][0];
    for dir in ["read", "write"] {
        let d = &job[dir];
        for k in ["io_bytes", "bw_bytes", "iops", "runtime", "total_ios"] {
            assert!(d[k].is_number(), "{dir}.{k} missing: {d}");
        }
        assert!(d["total_ios"].as_u64().unwrap() > 0);
        let clat = &d["clat_ns"];
        for k in ["min", "max", "mean", "stddev", "N"] {
            assert!(clat[k].is_number(), "{dir}.clat_ns.{k}");
        }
        assert_eq!(clat["percentile"].as_object().unwrap().len(), 17);
        assert!(
            clat["percentile"]["99.000000"].as_u64().unwrap()
                >= clat["percentile"]["50.000000"].as_u64().unwrap()
        );
        assert!(d["lat_ns"]["mean"].as_f64().unwrap() >= clat["mean"].as_f64().unwrap());
    }
    assert!(job["sync"]["total_ios"].as_u64().unwrap() > 0);
    assert!(job["sync"]["lat_ns"]["percentile"]["50.000000"].is_number());
}

#[test]
fn fio_text_prints_iops_bandwidth_and_percentiles_and_is_reproducible() {
    let args = [
        "fio",
        "--device",
        "hdd",
        "--rw",
        "randwrite",
        "--fsync",
        "1",
        "--runtime",
        "1s",
    ];
    let a = fsyncsim(&args);
    assert!(a.status.success(), "{}", stderr(&a));
    let out = String::from_utf8_lossy(&a.stdout);
    for needle in [
        "write: IOPS=",
        "BW=",
        "clat percentiles",
        "99.90th=[",
        "sync (flush): total_ios=",
    ] {
        assert!(out.contains(needle), "{out}");
    }
    assert_eq!(a.stdout, fsyncsim(&args).stdout);
    let other_seed = fsyncsim(&[&args[..], &["--seed", "2"]].concat());
    assert_ne!(a.stdout, other_seed.stdout);
}

#[test]
fn bench_prints_its_figures() {
    let o = fsyncsim(&["bench", "--requests", "50000", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["requests"], 50_000);
    assert_eq!(v["events"], 200_000);
    let iops = v["sim_iops"].as_f64().unwrap();
    assert!((iops - 319_700.0).abs() / 319_700.0 < 0.02, "{iops}");
    assert!(v["events_per_second"].as_f64().unwrap() > 0.0);
    let o = fsyncsim(&["bench", "--requests", "20000", "--lock"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("6 events per request") && out.contains("global lock"),
        "{out}"
    );
}

#[test]
fn devices_lists_the_presets() {
    let o = fsyncsim(&["devices"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for (name, depth) in [
        ("nvme", "1024"),
        ("sas-ssd", "254"),
        ("sata-ssd", "32"),
        ("hdd", "32"),
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains(depth), "{line}");
    }
}
