//! Issue 28's hardening: outputs are written as the file they name (a symlink's target,
//! never the link; nothing under /dev or /proc), the ext3/ext4 rename onto an ancestor,
//! shards of huge ranges, capped input files, and sweep identities checked by `--resume`
//! and `merge`.

use crate::common;

use common::{assert_one_line_in, fsyncsim_in, stderr, temp_dir};
use std::path::Path;
use std::process::{Command, Output};

const R1: &str = "r1-link-rename-logged-trans";

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[cfg(unix)]
#[test]
fn a_trace_through_a_symlink_replaces_the_target_and_keeps_the_link() {
    let d = temp_dir("link");
    std::fs::write(d.join("tgt"), "keep\n").unwrap();
    std::os::unix::fs::symlink("tgt", d.join("l")).unwrap();
    let o = fsyncsim_in(&d, &["run", R1, "--trace", "l", "--trace-format", "text"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let meta = std::fs::symlink_metadata(d.join("l")).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    let text = std::fs::read_to_string(d.join("tgt")).unwrap();
    assert!(text.starts_with("# ") && text.len() > 100, "{text}");
    assert_eq!(entries(&d), ["l", "tgt"]);
    // The same through replay and shrink's --out.
    let o = fsyncsim_in(&d, &["replay", R1, "--seed", "2", "--trace", "l"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("l"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(entries(&d), ["l", "tgt"]);
    std::fs::remove_dir_all(d).unwrap();
}

#[cfg(unix)]
#[test]
fn outputs_that_are_not_regular_files_are_refused_before_any_work() {
    let d = temp_dir("special");
    std::fs::create_dir(d.join("dir")).unwrap();
    let fifo = Command::new("mkfifo").arg(d.join("fifo")).status().unwrap();
    assert!(fifo.success());
    std::os::unix::fs::symlink("/dev/stdout", d.join("to-stdout")).unwrap();
    for (path, needle) in [
        ("/dev/stdout", "is under /dev"),
        ("/dev/stderr", "is under /dev"),
        ("/dev/fd/1", "is under /dev"),
        ("/proc/self/fd/1", "is under /proc"),
        ("/dev/null", "exists and is a character device"),
        ("to-stdout", "is under /"),
        ("dir", "is a directory"),
        ("fifo", "is a FIFO"),
    ] {
        assert_one_line_in(
            &d,
            2,
            &["run", R1, "--trace", path],
            &["--trace", path, needle],
        );
        assert_one_line_in(
            &d,
            2,
            &["replay", R1, "--seed", "1", "--trace", path],
            &["--trace", path, needle],
        );
    }
    assert_one_line_in(
        &d,
        2,
        &["sweep", R1, "--seeds", "0..10", "--out", "/dev/shm/x"],
        &["--out /dev/shm/x", "is under /dev"],
    );
    assert!(!Path::new("/dev/shm/x").exists());
    // Nothing was written: no temp file, the FIFO and the directory are as they were.
    assert_eq!(entries(&d), ["dir", "fifo", "to-stdout"]);
    assert!(entries(&d.join("dir")).is_empty());
    std::fs::remove_dir_all(d).unwrap();
}

#[cfg(unix)]
#[test]
fn a_perfetto_trace_through_a_symlink_chain_lands_at_the_end_of_the_chain() {
    let d = temp_dir("perfetto");
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink("sub/l2", d.join("l1")).unwrap();
    std::os::unix::fs::symlink("trace.pftrace", d.join("sub/l2")).unwrap();
    let all = reports::perfetto::TraceFilter::all;
    let mut t = reports::perfetto::PerfettoTrace::create(&d.join("l1"), all(), true).unwrap();
    t.begin_run("p").unwrap();
    t.end_run(0).unwrap();
    t.finish().unwrap();
    let bytes = std::fs::read(d.join("sub/trace.pftrace")).unwrap();
    assert_eq!(bytes.first(), Some(&0x0a), "a Trace's first packet");
    assert_eq!(entries(&d), ["l1", "sub"]);
    assert_eq!(entries(&d.join("sub")), ["l2", "trace.pftrace"]);
    // A trace dropped unfinished leaves nothing behind.
    let t = reports::perfetto::PerfettoTrace::create(&d.join("other.pftrace"), all(), true);
    drop(t);
    assert_eq!(entries(&d), ["l1", "sub"]);
    std::fs::remove_dir_all(d).unwrap();
}

/// An ext3 or ext4 scenario: `setup`, then one task doing `ops`.
fn ext_scenario(fs: &str, setup: &[&str], ops: &[&str]) -> String {
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "name = \"e\"\nrace = \"E\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"{fs}\"\ndevice = \"hdd\"\nsetup = [{}]\n[[task]]\nname = \"A\"\nops = [{}]\n[policies]\nbefore = \"linux-2.6.36\"\nafter = \"linux-2.6.37\"\n",
        list(setup),
        list(ops)
    )
}

/// The scenario failure of running `ops` after `setup` (None: every operation succeeded).
fn ext_failure(fs: &str, setup: &[&str], ops: &[&str]) -> Option<String> {
    let sc = models::scenario::Scenario::parse(&ext_scenario(fs, setup, ops), "e.toml").unwrap();
    let p = models::kernel::Policy::preset("linux-2.6.37").unwrap();
    let dev = models::block::DiskConfig::resolve(&sc.device).unwrap();
    let r = models::scenario::run(&sc, &p, &dev, 1, &models::scenario::Interleaving::Script);
    r.violations
        .iter()
        .find(|v| v.invariant == "scenario")
        .map(|v| v.message.clone())
}

#[test]
fn ext_rename_fails_as_rename_2_does_instead_of_panicking() {
    let setup = [
        "mkdir /d",
        "create /d/f",
        "mkdir /d/e",
        "mkdir /e2",
        "mkdir /e3",
        "create /e3/x",
        "create /g",
    ];
    for fs in ["ext3", "ext4"] {
        for (op, want) in [
            // Onto an ancestor of the source: ENOTEMPTY (Linux checks the rename trap first).
            ("rename /d/f /d", Some("directory not empty: /d")),
            ("rename /d/e /d", Some("directory not empty: /d")),
            // A directory into its own subtree: EINVAL.
            (
                "rename /d /d/e/x",
                Some("cannot move a directory into itself"),
            ),
            (
                "rename /d /d/e",
                Some("cannot move a directory into itself"),
            ),
            // A non-directory onto a directory: EISDIR; the other way round: ENOTDIR.
            ("rename /g /e2", Some("is a directory: /e2")),
            ("rename /d /g", Some("not a directory: /g")),
            ("rename /d /e3", Some("directory not empty: /e3")),
            // A directory onto an empty directory, a file onto a file, a name onto itself.
            ("rename /d /e2", None),
            ("rename /g /d/f", None),
            ("rename /g /g", None),
        ] {
            let got = ext_failure(fs, &setup, &[op, "fsync /e3/x"]);
            match want {
                Some(w) => {
                    let got = got.unwrap_or_else(|| panic!("{fs}: {op} succeeded"));
                    assert!(got.contains(w), "{fs}: {op}: {got}");
                }
                None => assert_eq!(got, None, "{fs}: {op}"),
            }
        }
        // After a refused rename the tree is intact: the file is still there to fsync.
        let m = ext_failure(fs, &setup, &["rename /d/f /d", "fsync /d/f"]).unwrap();
        assert!(m.ends_with("directory not empty: /d"), "{m}");
    }
    // The command line: one line, exit 2, no panic.
    let d = temp_dir("rename");
    let text = ext_scenario("ext4", &["mkdir /d", "create /d/f"], &["rename /d/f /d"]);
    std::fs::write(d.join("s.toml"), text).unwrap();
    assert_one_line_in(&d, 2, &["run", "s.toml"], &["directory not empty: /d"]);
    std::fs::remove_dir_all(d).unwrap();
}

/// Runs fsyncsim, killing it after `secs` seconds: None when it did not end by then.
fn fsyncsim_within(dir: &Path, secs: u64, args: &[&str]) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run fsyncsim");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_shard_of_the_whole_seed_space_runs_only_its_own_seeds() {
    let max = u64::MAX.to_string();
    let range = format!("0..{max}");
    // The last shard of 2^64 - 1 owns one seed, 2^64 - 2; the last of 2^63 one too, the
    // first of 2^62 four.
    for (k, n, runs) in [
        (u64::MAX, u64::MAX, 1),
        (1u64 << 63, 1u64 << 63, 1),
        (1, 1u64 << 62, 4),
    ] {
        let shard = format!("{k}/{n}");
        let o = fsyncsim_within(
            Path::new("."),
            60,
            &[
                "sweep", R1, "--seeds", &range, "--shard", &shard, "--json", "--jobs", "1",
            ],
        )
        .unwrap_or_else(|| panic!("--shard {shard} did not end within 60 s"));
        assert_eq!(o.status.code(), Some(0), "{shard}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for r in v.as_array().unwrap() {
            assert_eq!(r["runs"], runs, "{shard}: {r}");
            // Every hit is one of the shard's seeds.
            for t in r["targets"].as_object().unwrap().values() {
                let first = t["first_seed"].as_u64().unwrap();
                assert_eq!(first % n, k - 1, "{shard}: {t}");
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn input_files_that_are_not_small_regular_files_are_refused_without_reading_them() {
    let d = temp_dir("inputs");
    let cap = models::units::MAX_INPUT_BYTES;
    let want = format!("expected a regular file of at most {cap} bytes");
    assert_eq!(cap, 16 << 20);
    assert!(Command::new("mkfifo")
        .arg(d.join("fifo.toml"))
        .status()
        .unwrap()
        .success());
    // One byte over the cap (sparse: nothing to write).
    std::fs::File::create(d.join("big.toml"))
        .unwrap()
        .set_len(cap + 1)
        .unwrap();
    std::fs::create_dir(d.join("state-fifo")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(d.join("state-fifo/state.json"))
        .status()
        .unwrap()
        .success());
    // A scenario that names /dev/zero as its device file.
    let sc = std::fs::read_to_string(format!(
        "{}/scenarios/j1a-fsync-waits-for-async-commit.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("device = \"hdd\"", "device = \"/dev/zero\"");
    assert!(sc.contains("/dev/zero"));
    std::fs::write(d.join("zero-device.toml"), sc).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "/dev/zero"], "/dev/zero"),
        (vec!["run", "fifo.toml"], "fifo.toml"),
        (vec!["run", "big.toml"], "big.toml"),
        (vec!["check", "big.toml"], "big.toml"),
        (vec!["run", "zero-device.toml"], "/dev/zero"),
        (
            vec!["sweep", "zero-device.toml", "--seeds", "0..4"],
            "/dev/zero",
        ),
        (vec!["run", R1, "--device", "/dev/zero"], "/dev/zero"),
        (vec!["run", R1, "--device", "fifo.toml"], "fifo.toml"),
        (vec!["fio", "--device", "fifo.toml"], "fifo.toml"),
        (vec!["workload", "/dev/zero"], "/dev/zero"),
        (vec!["workload", "big.toml"], "big.toml"),
        (vec!["merge", "/dev/zero"], "/dev/zero"),
        (vec!["merge", "fifo.toml"], "fifo.toml"),
        (
            vec!["sweep", R1, "--seeds", "0..4", "--resume", "state-fifo"],
            "state-fifo/state.json",
        ),
    ];
    for (args, path) in &cases {
        let o = fsyncsim_within(&d, 30, args)
            .unwrap_or_else(|| panic!("{args:?} did not end within 30 s"));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(err.contains(&format!("{path}: {want}")), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(d).unwrap();
}

/// Runs `args` in `dir` and asserts success; returns stdout.
fn ok_in(dir: &Path, args: &[&str]) -> Vec<u8> {
    let o = fsyncsim_in(dir, args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    o.stdout
}

#[test]
fn resume_refuses_a_checkpoint_of_another_device_or_scenario_text() {
    let d = temp_dir("identity-resume");
    let sc = std::fs::read_to_string(format!(
        "{}/scenarios/{R1}.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    std::fs::write(d.join("s.toml"), &sc).unwrap();
    let base = ["sweep", "s.toml", "--seeds", "0..9000", "--jobs", "1"];
    let stopped = |dir: &str| {
        ok_in(
            &d,
            &[&base[..], &["--out", dir, "--stop-after-chunks", "1"]].concat(),
        );
    };
    // The example: interrupted on nvme, resumed on sata-ssd.
    stopped("a");
    assert_one_line_in(
        &d,
        2,
        &[
            &base[..],
            &["--device", "sata-ssd", "--resume", "a", "--json"],
        ]
        .concat(),
        &["--resume a", "other arguments", "its device differs"],
    );
    // The scenario file edited between the two runs (a comment is enough).
    std::fs::write(d.join("s.toml"), format!("{sc}\n# edited\n")).unwrap();
    assert_one_line_in(
        &d,
        2,
        &[&base[..], &["--resume", "a"]].concat(),
        &["--resume a", "its scenario differs"],
    );
    // With the same inputs it finishes, as the unbroken sweep does.
    std::fs::write(d.join("s.toml"), &sc).unwrap();
    let resumed = ok_in(&d, &[&base[..], &["--resume", "a", "--json"]].concat());
    assert_eq!(resumed, ok_in(&d, &[&base[..], &["--json"]].concat()));
    // The record: every report carries the identity, with the commit.
    let v: serde_json::Value = serde_json::from_slice(&resumed).unwrap();
    for r in v.as_array().unwrap() {
        let id = &r["identity"];
        for f in [
            "scenario", "device", "policy", "strategy", "seeds", "version", "commit",
        ] {
            assert!(id[f].as_str().is_some_and(|s| !s.is_empty()), "{f}: {id}");
        }
        assert!(id["device"].as_str().unwrap().starts_with("fnv1a64:"));
        assert_eq!(id["seeds"], "0..9000");
    }
    assert_ne!(v[0]["identity"]["policy"], v[1]["identity"]["policy"]);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn merge_refuses_shards_of_another_device_scenario_text_or_edited_identity() {
    let d = temp_dir("identity-merge");
    let sc = std::fs::read_to_string(format!(
        "{}/scenarios/{R1}.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    std::fs::write(d.join("s.toml"), &sc).unwrap();
    let shard = |k: &str, extra: &[&str], out: &str| {
        let args = [
            &[
                "sweep", "s.toml", "--seeds", "0..200", "--shard", k, "--json",
            ][..],
            extra,
        ]
        .concat();
        std::fs::write(d.join(out), ok_in(&d, &args)).unwrap();
    };
    shard("1/2", &[], "s1.json");
    shard("2/2", &[], "s2.json");
    shard("2/2", &["--device", "sata-ssd"], "s2-ssd.json");
    std::fs::write(d.join("s.toml"), format!("{sc}\n# edited\n")).unwrap();
    shard("2/2", &[], "s2-edited.json");
    // The good pair merges into what the unsharded sweep prints.
    std::fs::write(d.join("s.toml"), &sc).unwrap();
    assert_eq!(
        ok_in(&d, &["merge", "s1.json", "s2.json", "--json"]),
        ok_in(&d, &["sweep", "s.toml", "--seeds", "0..200", "--json"])
    );
    assert_one_line_in(
        &d,
        2,
        &["merge", "s1.json", "s2-ssd.json"],
        &["s2-ssd.json", "another device", "do not merge"],
    );
    assert_one_line_in(
        &d,
        2,
        &["merge", "s1.json", "s2-edited.json"],
        &["s2-edited.json", "another scenario"],
    );
    // An identity edited by hand no longer matches its digest.
    let text = std::fs::read_to_string(d.join("s2-ssd.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ssd = v[0]["identity"]["device"].as_str().unwrap().to_string();
    let nvme: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("s1.json")).unwrap()).unwrap();
    let nvme = nvme[0]["identity"]["device"].as_str().unwrap().to_string();
    std::fs::write(d.join("forged.json"), text.replace(&ssd, &nvme)).unwrap();
    assert_one_line_in(
        &d,
        2,
        &["merge", "s1.json", "forged.json"],
        &["forged.json", "do not match their digest"],
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn sigint_stops_a_sweep_between_seeds_keeping_finished_chunks_for_resume() {
    let d = temp_dir("sigint");
    let args = [
        "sweep",
        "r1-link-rename-logged-trans",
        "--seeds",
        "0..120000",
        "--jobs",
        "1",
        "--json",
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .args(["--out", "out"])
        .current_dir(&d)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run fsyncsim");
    // The first checkpoint: at least one chunk is finished.
    let state = d.join("out/state.json");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !state.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(state.exists(), "no checkpoint within 120 s");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    // A hang guard, not a timing check: the stop comes before the next seed.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let partial: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(partial[0]["partial"], true, "{partial}");
    assert!(partial[0]["runs"].as_u64().unwrap() < 120_000);
    assert_eq!(
        partial[0]["runs"].as_u64().unwrap() % 4096,
        0,
        "whole chunks only"
    );
    // Resuming finishes exactly what one uninterrupted sweep prints.
    let resumed = fsyncsim_in(&d, &[&args[..], &["--resume", "out"]].concat());
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let whole = fsyncsim_in(&d, &args);
    assert_eq!(resumed.stdout, whole.stdout);
    std::fs::remove_dir_all(d).unwrap();
}

/// A compare that takes well under a second.
const SMALL_COMPARE: &[&str] = &[
    "compare",
    "dbench",
    "--duration",
    "1s",
    "--warmup",
    "0s",
    "--seeds",
    "1",
    "--clients",
    "2",
];

/// The names in `dir`, none when it does not exist (yet).
fn listing(dir: &Path) -> Vec<String> {
    match dir.exists() {
        true => entries(dir),
        false => Vec::new(),
    }
}

#[test]
fn compare_out_appears_whole_or_not_at_all_even_on_sigint() {
    let d = temp_dir("compare-out");
    // A result name that is a directory is refused before any work, nothing written.
    std::fs::create_dir_all(d.join("o1/results.json")).unwrap();
    let o = fsyncsim_in(&d, &[SMALL_COMPARE, &["--out", "o1"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("results.json"), "{}", stderr(&o));
    assert_eq!(entries(&d.join("o1")), vec!["results.json".to_string()]);
    // A finished compare leaves its files and no staging directory.
    let o = fsyncsim_in(&d, &[SMALL_COMPARE, &["--out", "o2", "--trace"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let files = entries(&d.join("o2"));
    assert!(
        files.contains(&"results.json".to_string()) && files.contains(&"trace.pftrace".to_string())
    );
    assert!(!files.iter().any(|f| f.starts_with('.')), "{files:?}");
    // Interrupted mid-run: no result file, no hidden directory, exit 130.
    let mut child = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args([
            "compare",
            "dbench",
            "--duration",
            "600s",
            "--out",
            "o3",
            "--trace",
            "--force",
        ])
        .current_dir(&d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let staged = |d: &Path| {
        listing(&d.join("o3"))
            .iter()
            .any(|f| f.starts_with(".fsyncsim-"))
    };
    while !staged(&d) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        !listing(&d.join("o3")).is_empty(),
        "no staging directory within 60 s"
    );
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(listing(&d.join("o3")), Vec::<String>::new());
    std::fs::remove_dir_all(d).unwrap();
}
