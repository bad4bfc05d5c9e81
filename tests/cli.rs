//! The command line: help, outputs, exit codes, and bad input (one-line error, exit code 2,
//! no panic).

use crate::common;

use std::process::{Command, Output, Stdio};

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
            &[":1:", "from 0 to 1e9"],
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
    // The exact minimum: the file's 500 µs of service plus the 4 KiB transfer.
    let min_us = clat["min"].as_u64().unwrap() / 1000;
    assert!((500..=505).contains(&min_us), "{clat}");
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

#[test]
fn list_shows_scenarios_and_mutants() {
    let o = fsyncsim(&["list"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines().count(),
        models::scenario::BUILTIN.len(),
        "{out}"
    );
    for r in ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "J1a", "J1b"] {
        assert!(out.lines().any(|l| l.contains(&format!(" {r} "))), "{out}");
    }
    let o = fsyncsim(&["list", "--mutants"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for m in [
        "sync-log-no-super-wait",
        "sync-log-no-preflush",
        "skip-log-when-logged-before",
        "commit-takes-log-mutex",
    ] {
        assert!(out.contains(m), "{out}");
    }
}

#[test]
fn run_without_arguments_replays_all_seven_races_side_by_side() {
    let o = fsyncsim(&["run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("linux-5.11 without R1") && out.contains("linux-5.11 without R7"));
    let summary: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("scenario "))
        .collect();
    assert_eq!(summary.len(), models::scenario::BUILTIN.len() + 1, "{out}");
    for row in &summary[1..] {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let (pre, post) = (cells[cells.len() - 2], cells[cells.len() - 1]);
        assert!(pre.parse::<u64>().unwrap() > 0 && post == "0", "{row}");
    }
}

#[test]
fn run_json_follows_the_schema_and_trace_is_written() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.txt");
    let o = fsyncsim(&[
        "run",
        "r4-stale-last-unlink-trans",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["scenario"], "r4-stale-last-unlink-trans");
    assert_eq!(v["race"], "R4");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["policy"], "linux-5.11 without R4");
    assert!(!runs[0]["fixes"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("R4")));
    assert_eq!(runs[0]["metrics"]["unnecessary_full_commits"], 1);
    assert_eq!(
        runs[0]["metrics"]["unnecessary_full_commits_by_cause"]["last_unlink_trans"],
        1
    );
    assert_eq!(runs[1]["metrics"]["unnecessary_full_commits"], 0);
    assert!(runs[1]["invariant_violations"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(runs[1]["trace_hash"].as_str().unwrap().starts_with("0x"));
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(
        text.contains("# r4-stale-last-unlink-trans under linux-5.11")
            && text.contains("point trans:unblocked")
    );
}

#[test]
fn run_with_a_policy_or_mutant_runs_one_column_and_reports_violations() {
    let o = fsyncsim(&[
        "run",
        "r6-log-start-blocked-on-tree-log-mutex",
        "--mutant",
        "sync-log-no-super-wait",
        "--json",
    ]);
    // The mutant makes S1 fire, as it should: exit 1, the report still printed in full.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["invariant_violations"][0]["invariant"], "S1");
    let o = fsyncsim(&[
        "run",
        "r7-fsync-syncs-unchanged-log",
        "--policy",
        "linux-5.10",
        "--without",
        "R7",
        "--fix",
        "R1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("linux-5.10 with R1 without R7"), "{out}");
}

#[test]
fn check_passes_on_the_shipped_races_and_fails_on_a_wrong_expectation() {
    let o = fsyncsim(&["check"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).matches("PASS ").count(),
        models::scenario::BUILTIN.len()
    );
    let bad = temp_file(
        "wrong.toml",
        "name = \"w\"\nrace = \"R7\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"create /f\", \"write /f 4k\", \"fsync /f\"]\n[[task]]\nname = \"B\"\nops = [\"fsync /f\"]\n[expect.post]\nlog_syncs = 5\n",
    );
    let o = fsyncsim(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("FAIL w [R7]") && out.contains("log_syncs: expected 5, got 1"),
        "{out}"
    );
}

#[test]
fn bad_race_input_is_a_one_line_error_with_exit_2() {
    assert_bad_input(
        &["run", "no-such-race"],
        &[
            "unknown scenario 'no-such-race'",
            "r1-link-rename-logged-trans",
        ],
    );
    assert_bad_input(&["run", "--fix", "R9"], &["--fix", "R1, R2"]);
    assert_bad_input(&["run", "--without", "R0"], &["--without"]);
    assert_bad_input(
        &["run", "--policy", "linux-4.0"],
        &["--policy", "linux-5.10, linux-5.11"],
    );
    assert_bad_input(
        &["run", "--mutant", "chaos"],
        &["--mutant", "sync-log-no-super-wait"],
    );
    let p = temp_file("point.toml", "name = \"p\"\nrace = \"R1\"\ntitle = \"t\"\nsummary = \"s\"\n[[task]]\nname = \"A\"\nops = [\"commit\"]\n[script]\nsteps = [\"A fsync:logged\"]\n");
    assert_bad_input(
        &["check", p.to_str().unwrap()],
        &["point.toml:9:", "never reaches point 'fsync:logged'"],
    );
    let out = std::env::temp_dir().join("fsyncsim-no-such-dir/trace.txt");
    assert_bad_input(
        &[
            "run",
            "r1-link-rename-logged-trans",
            "--trace",
            out.to_str().unwrap(),
        ],
        &["--trace"],
    );
    assert!(!out.exists());
}

#[test]
fn a_script_that_cannot_progress_is_a_one_line_error_naming_the_line() {
    let p = temp_file(
        "stuck.toml",
        "name = \"s\"\nrace = \"R6\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"create /x\", \"write /x 4k\"]\n[[task]]\nname = \"A\"\nops = [\"commit\"]\n[[task]]\nname = \"B\"\nops = [\"write /x 4k\", \"fsync /x\"]\n[script]\nsteps = [\n  \"B write:start\",\n  \"B sync_log:write_super\",\n  \"A trans:unblocked\",\n]\n",
    );
    // Bad input in both run and check (check used to report it as a mismatch, exit 1).
    for cmd in ["run", "check"] {
        assert_bad_input(
            &[cmd, p.to_str().unwrap()],
            &[
                "stuck.toml:15: the script cannot progress",
                "sync_log:write_super",
                "without R6",
            ],
        );
    }
}

#[test]
fn sweep_counts_hits_identically_for_any_jobs_and_names_a_replayable_seed() {
    let args = |jobs: &str| {
        fsyncsim(&[
            "sweep",
            "r1-link-rename-logged-trans",
            "--seeds",
            "0..300",
            "--jobs",
            jobs,
            "--json",
        ])
    };
    let (one, two) = (args("1"), args("2"));
    assert!(one.status.success(), "{}", stderr(&one));
    assert_eq!(one.stdout, two.stdout);
    let v: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    let (pre, post) = (&v[0], &v[1]);
    assert_eq!(pre["policy"], "linux-5.11 without R1");
    assert_eq!(pre["runs"], 300);
    let t = &pre["targets"]["unnecessary_inode_logs"];
    let hits = t["hits"].as_u64().unwrap();
    assert!(hits > 0 && hits < 300, "{t}");
    let (lo, hi) = (
        t["ci95"][0].as_f64().unwrap(),
        t["ci95"][1].as_f64().unwrap(),
    );
    let rate = t["rate"].as_f64().unwrap();
    assert!(lo < rate && rate < hi);
    assert!(post["targets"].as_object().unwrap().is_empty(), "{post}");
    // The replay command reproduces a hit.
    let seed = t["shortest_seed"].as_u64().unwrap().to_string();
    let o = fsyncsim(&[
        "run",
        "r1-link-rename-logged-trans",
        "--explore",
        "--seed",
        &seed,
        "--policy",
        "linux-5.11",
        "--without",
        "R1",
        "--json",
    ]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        r["runs"][0]["metrics"]["unnecessary_inode_logs"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(t["replay"]
        .as_str()
        .unwrap()
        .contains(&format!("--seed {seed} --policy linux-5.11 --without R1")));
}

#[test]
fn sweep_bad_input_is_a_one_line_error() {
    assert_bad_input(
        &["sweep", "r1-link-rename-logged-trans", "--seeds", "5..2"],
        &["--seeds", "0..100000"],
    );
    assert_bad_input(
        &["sweep", "r1-link-rename-logged-trans", "--seeds", "abc"],
        &["--seeds"],
    );
    assert_bad_input(
        &["sweep", "r1-link-rename-logged-trans", "--jobs", "0"],
        &["--jobs"],
    );
    assert_bad_input(&["sweep", "nope"], &["unknown scenario 'nope'"]);
}

#[test]
fn merged_shards_print_exactly_what_one_unsharded_sweep_prints() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = [
        "sweep",
        "r2-fast-fsync-old-extents",
        "--seeds",
        "100..400",
        "--jobs",
        "2",
    ];
    let whole = fsyncsim(&[&base[..], &["--json"]].concat());
    assert!(whole.status.success(), "{}", stderr(&whole));
    let mut files = Vec::new();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let o = fsyncsim(&[&base[..], &["--shard", &shard, "--json"]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        let f = dir.join(format!("s{k}.json"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f.to_str().unwrap().to_string());
    }
    // Shard order does not matter.
    let merged = fsyncsim(&["merge", &files[2], &files[0], &files[1], "--json"]);
    assert!(merged.status.success(), "{}", stderr(&merged));
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&whole.stdout)
    );
    let text = fsyncsim(&["merge", &files[0], &files[1], &files[2]]);
    assert_eq!(text.stdout, fsyncsim(&base).stdout);
    // Missing, repeated and foreign shards are refused.
    assert_bad_input(&["merge", &files[0], &files[1]], &["shard 3/3 is missing"]);
    assert_bad_input(
        &["merge", &files[0], &files[0], &files[1]],
        &["given twice"],
    );
    let other = fsyncsim(&[
        "sweep",
        "r1-link-rename-logged-trans",
        "--seeds",
        "100..400",
        "--shard",
        "3/3",
        "--json",
    ]);
    let f = dir.join("other.json");
    std::fs::write(&f, &other.stdout).unwrap();
    assert_bad_input(
        &["merge", &files[0], &files[1], f.to_str().unwrap()],
        &["does not match"],
    );
    let junk = temp_file("junk.json", "{\"not\": \"a sweep\"}");
    assert_bad_input(
        &["merge", junk.to_str().unwrap()],
        &["junk.json", "expected the JSON array"],
    );
    assert_bad_input(
        &["sweep", "r1-link-rename-logged-trans", "--shard", "3/2"],
        &["--shard", "K/N"],
    );
}

#[test]
fn replay_prints_the_timeline_of_a_sweep_hit() {
    // Take a hitting seed from a sweep, then replay it.
    let o = fsyncsim(&[
        "sweep",
        "r1-link-rename-logged-trans",
        "--seeds",
        "0..50",
        "--without",
        "R1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let seed = v[0]["targets"]["unnecessary_inode_logs"]["first_seed"]
        .as_u64()
        .unwrap()
        .to_string();
    let args = [
        "replay",
        "r1-link-rename-logged-trans",
        "--seed",
        &seed,
        "--without",
        "R1",
    ];
    let o = fsyncsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let head =
        format!("replay r1-link-rename-logged-trans [R1] under linux-5.11 without R1, seed {seed}");
    assert!(out.starts_with(&head), "{out}");
    for needle in [
        "  task A",
        "  task B",
        "point trans:unblocked",
        "point link:done",
        "unnecessary_inode_logs = 1",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
    assert_eq!(o.stdout, fsyncsim(&args).stdout);
    assert_bad_input(&["replay", "r1-link-rename-logged-trans"], &["--seed"]);
}

#[test]
fn an_interrupted_sweep_keeps_finished_seeds_and_resumes_to_the_same_result() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    let base = [
        "sweep",
        "r7-fsync-syncs-unchanged-log",
        "--seeds",
        "0..9000",
        "--jobs",
        "2",
    ];
    // Stop after the first chunk of 4,096 seeds, as Ctrl-C would.
    let o = fsyncsim(&[&base[..], &["--out", d, "--stop-after-chunks", "1"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("4096 seeds (0..9000), --strategy random - PARTIAL"));
    let partial: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(partial[0]["partial"], true);
    assert_eq!(partial[0]["runs"], 4096);
    // A partial result does not merge.
    assert_bad_input(
        &["merge", dir.join("sweep.json").to_str().unwrap()],
        &["partial"],
    );
    // Resuming with other arguments is refused; with the same ones it finishes the sweep.
    assert_bad_input(
        &[
            "sweep",
            "r7-fsync-syncs-unchanged-log",
            "--seeds",
            "0..100",
            "--resume",
            d,
        ],
        &["--resume", "other arguments"],
    );
    let resumed = fsyncsim(&[&base[..], &["--resume", d, "--json"]].concat());
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let whole = fsyncsim(&[&base[..], &["--json"]].concat());
    assert_eq!(resumed.stdout, whole.stdout);
    let done: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    assert!(done[0].get("partial").is_none() && done[0]["runs"] == 9000);
    assert_bad_input(
        &[&base[..], &["--out", "/proc/fsyncsim-cannot-write-here"]].concat(),
        &["--out"],
    );
}

#[test]
fn shrink_writes_a_scenario_that_run_and_check_reproduce() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-shrink-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("r1-min.toml");
    let out_s = out.to_str().unwrap();
    let sc = "r1-link-rename-logged-trans";
    let target = "unnecessary_inode_logs";
    // The first seed a sweep reports for the target.
    let sw = fsyncsim(&["sweep", sc, "--seeds", "0..50", "--without", "R1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&sw.stdout).unwrap();
    let seed = v[0]["targets"][target]["first_seed"]
        .as_u64()
        .unwrap()
        .to_string();
    let o = fsyncsim(&[
        "shrink", sc, "--seed", &seed, "--target", target, "--out", out_s,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        report.contains("tasks") && report.contains("smaller"),
        "{report}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains(&format!("seed = {seed}")), "{text}");
    let chk = fsyncsim(&["check", out_s]);
    assert!(
        chk.status.success(),
        "{}",
        String::from_utf8_lossy(&chk.stdout)
    );
    let run = fsyncsim(&["run", out_s, "--without", "R1", "--json"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert!(r["runs"][0]["metrics"][target].as_u64().unwrap() > 0);
    // Without --out the file goes to stdout, byte for byte the same.
    let o = fsyncsim(&["shrink", sc, "--seed", &seed, "--target", target]);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        text.replace(&format!(" --out {out_s}"), "")
    );
    // Bad input writes nothing.
    let none = dir.join("none.toml");
    let none_s = none.to_str().unwrap();
    assert_bad_input(
        &[
            "shrink", sc, "--seed", "0", "--target", "fast", "--out", none_s,
        ],
        &["--target", "unknown target 'fast'"],
    );
    assert_bad_input(
        &[
            "shrink",
            sc,
            "--seed",
            "0",
            "--target",
            target,
            "--policy",
            "linux-5.11",
            "--out",
            none_s,
        ],
        &["does not hit"],
    );
    assert_bad_input(
        &["shrink", sc, "--seed", "x", "--target", target],
        &["--seed"],
    );
    assert!(!none.exists());
}

/// A pipe whose reading end is already closed: the first write to it fails with EPIPE. (The
/// reader is an fsyncsim that prints its version and exits without reading.)
fn closed_pipe() -> Stdio {
    let mut reader = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .arg("--version")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("run fsyncsim");
    let write_end = reader.stdin.take().unwrap();
    assert!(reader.wait().unwrap().success());
    Stdio::from(write_end)
}

#[test]
fn a_reader_that_closes_the_pipe_early_ends_fsyncsim_quietly_with_exit_0() {
    let cases: [&[&str]; 7] = [
        &["list"],
        &["list", "--mutants"],
        &["devices"],
        &["run"],
        &["run", "r1-link-rename-logged-trans", "--json"],
        &["check"],
        &["sweep", "r1-link-rename-logged-trans", "--seeds", "0..20"],
    ];
    for args in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
            .args(args)
            .stdout(closed_pipe())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
    }
    // As `fsyncsim run | head -2` does it: a pipe the reader drops at once, more output than
    // a pipe buffer holds (every race, side by side).
    let mut child = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .arg("run")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}

#[test]
fn a_full_disk_on_stdout_is_one_line_and_exit_1() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full here: skipped");
        return;
    };
    for args in [&["list"][..], &["run", "r1-link-rename-logged-trans"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
            .args(args)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("fsyncsim: cannot write to stdout: ") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn outputs_that_exist_and_are_not_regular_files_are_refused_and_left_alone() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-nonfile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a-dir")).unwrap();
    std::fs::write(dir.join("a-dir/inside.txt"), "keep").unwrap();
    std::fs::write(dir.join("a-file"), "keep").unwrap();
    let a_dir = dir.join("a-dir");
    let a_file = dir.join("a-file");
    let fifo = dir.join("a-fifo");
    let have_fifo = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let (d, f, p) = (
        a_dir.to_str().unwrap(),
        a_file.to_str().unwrap(),
        fifo.to_str().unwrap(),
    );
    let sc = "r1-link-rename-logged-trans";
    let mut cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["run", sc, "--trace", d], "--trace", d),
        (
            vec!["replay", sc, "--seed", "1", "--trace", d],
            "--trace",
            d,
        ),
        (
            vec![
                "shrink",
                sc,
                "--seed",
                "0",
                "--target",
                "unnecessary_inode_logs",
                "--out",
                d,
            ],
            "--out",
            d,
        ),
        // A directory flag given a regular file.
        (
            vec!["sweep", sc, "--seeds", "0..10", "--out", f],
            "--out",
            f,
        ),
        (
            vec!["compare", "dbench", "--duration", "1s", "--out", f],
            "--out",
            f,
        ),
    ];
    if std::path::Path::new("/dev/null").exists() {
        cases.push((
            vec!["run", sc, "--trace", "/dev/null"],
            "--trace",
            "/dev/null",
        ));
    }
    if have_fifo {
        cases.push((vec!["run", sc, "--trace", p], "--trace", p));
        cases.push((
            vec!["replay", sc, "--seed", "1", "--trace", p],
            "--trace",
            p,
        ));
        cases.push((
            vec!["sweep", sc, "--seeds", "0..10", "--out", p],
            "--out",
            p,
        ));
    }
    for (args, flag, path) in &cases {
        assert_bad_input(args, &[flag, path, "exists and is"]);
    }
    assert_eq!(
        std::fs::read_to_string(a_dir.join("inside.txt")).unwrap(),
        "keep"
    );
    assert_eq!(std::fs::read_dir(&a_dir).unwrap().count(), 1);
    assert_eq!(std::fs::read_to_string(&a_file).unwrap(), "keep");
    #[cfg(unix)]
    if have_fifo {
        use std::os::unix::fs::FileTypeExt;
        let t = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(t.is_fifo(), "the FIFO was replaced");
    }
    // Nothing else appeared (no temp files left behind).
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2 + usize::from(have_fifo)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn invariants_that_fire_exit_1_in_run_replay_and_sweep() {
    let sc = "r6-log-start-blocked-on-tree-log-mutex";
    let m = ["--mutant", "sync-log-no-super-wait"];
    for args in [
        vec!["run", sc],
        vec!["replay", sc, "--seed", "0"],
        vec!["sweep", sc, "--seeds", "0..20"],
    ] {
        let o = fsyncsim(&[&args[..], &m[..]].concat());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("S1"),
            "{args:?}"
        );
        // Without the mutant: no invariant fires, exit 0.
        let o = fsyncsim(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_scenario_whose_setup_always_fails_is_bad_input_everywhere() {
    let p = temp_file(
        "bad-setup.toml",
        "name = \"bad-setup\"\nrace = \"R1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"create /x\", \"unlink /x\", \"unlink /x\"]\n[[task]]\nname = \"A\"\nops = [\"commit\"]\n",
    );
    let path = p.to_str().unwrap();
    let needles = ["setup: unlink", "/x"];
    assert_bad_input(&["run", path], &needles);
    assert_bad_input(&["check", path], &needles);
    assert_bad_input(&["replay", path, "--seed", "3"], &needles);
    // Every seed fails to play: bad input, not a sweep with a 100 % hit rate (exit 0).
    assert_bad_input(
        &["sweep", path, "--seeds", "0..50"],
        &["setup: unlink", "every one of the 50 seeds"],
    );
}

#[test]
fn help_states_the_exit_codes() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["replay", "--help"],
        &["check", "--help"],
        &["sweep", "--help"],
        &["shrink", "--help"],
    ] {
        let o = fsyncsim(args);
        assert!(o.status.success(), "{args:?}");
        let out = String::from_utf8_lossy(&o.stdout);
        for needle in [
            "Exit codes",
            "0  success",
            "1  an invariant fired",
            "2  bad input",
            "3  a resource limit",
        ] {
            assert!(out.contains(needle), "{args:?} lacks {needle:?}: {out}");
        }
    }
}

#[test]
fn check_fails_on_a_file_without_expectations_unless_allowed_and_runtime_errors_name_the_line() {
    let text = "name = \"t\"\nrace = \"R7\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"create /f\"]\n[[task]]\nname = \"A\"\nops = [\"fsync /f\"]\n";
    let p = temp_file("noexp.toml", text);
    let o = fsyncsim(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("no expectations"));
    let o = fsyncsim(&["check", "--allow-empty", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // An operation that fails at run time is reported at its own line.
    let bad = text.replace(
        "ops = [\"fsync /f\"]",
        "ops = [\"fsync /f\",\n  \"unlink /f\",\n  \"unlink /f\"]",
    );
    let p = temp_file("rterr.toml", &bad);
    let o = fsyncsim(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("rterr.toml:10: task A: unlink"), "{e}");
}

#[test]
fn completions_man_page_and_version_with_the_commit() {
    let o = fsyncsim(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("fsyncsim") && s.contains("validate"), "{s}");
    let o = fsyncsim(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(".TH fsyncsim"));
    let o = fsyncsim(&["--version"]);
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(v.starts_with("fsyncsim ") && v.contains('('), "{v}");
    let o = fsyncsim(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn hand_edited_shards_and_checkpoints_are_refused() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-edit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let shard = |k: u32| {
        let o = fsyncsim(&[
            "sweep",
            "r1-link-rename-logged-trans",
            "--seeds",
            "0..200",
            "--shard",
            &format!("{k}/2"),
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (s1, s2) = (shard(1), shard(2));
    let p2 = dir.join("s2.json");
    std::fs::write(&p2, s2.to_string()).unwrap();
    let edit = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = s1.clone();
        f(&mut v);
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let hits = edit("hits.json", &|v| {
        let t = v[0]["targets"].as_object_mut().unwrap();
        let k = t.keys().next().unwrap().clone();
        t[&k]["hits"] = serde_json::json!(1_000_000);
    });
    let huge = edit("huge.json", &|v| {
        for r in v.as_array_mut().unwrap() {
            r["shard"] = serde_json::json!("1/18446744073709551615");
        }
    });
    let reversed = edit("rev.json", &|v| {
        v[0]["seeds"] = serde_json::json!({"start": 200, "end": 0});
    });
    for (p, needle) in [
        (&hits, "hits in 100 runs"),
        (&huge, "owns"),
        (&reversed, "expected start < end"),
    ] {
        assert_bad_input(
            &["merge", p.to_str().unwrap(), p2.to_str().unwrap()],
            &[needle],
        );
    }
    // A checkpoint whose counts do not match its finished chunks is not resumed.
    let out = dir.join("out");
    let d = out.to_str().unwrap();
    let base = [
        "sweep",
        "r7-fsync-syncs-unchanged-log",
        "--seeds",
        "0..9000",
    ];
    let o = fsyncsim(&[&base[..], &["--out", d, "--stop-after-chunks", "1"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let state = out.join("state.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    v["progress"][0]["done_chunks"] = serde_json::json!(2);
    // Sealed again with valid checksums, so the count check behind them is what refuses it.
    let v = reports::checkpoint::seal(&v["meta"], v["progress"].clone());
    std::fs::write(&state, v.to_string()).unwrap();
    assert_bad_input(
        &[&base[..], &["--resume", d]].concat(),
        &["runs recorded, but 2 finished chunk(s)"],
    );
}

#[test]
fn validate_quick_only_prints_the_selected_rows_and_curves() {
    // The documented quick mode through the CLI, on the short experiments (the library's
    // tests run every experiment at tiny lengths: tests/validate.rs).
    let o = fsyncsim(&["validate", "--quick", "--only", "003-kbuild,002", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["quick"], true);
    let rows = v["rows"].as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(
        ids.iter()
            .all(|id| id.starts_with("003-kbuild") || id.starts_with("002-scrub/")),
        "{ids:?}"
    );
    for id in [
        "003-kbuild/requests_per_s",
        "003-kbuild-rfc/iostat w/s",
        "002-scrub/rate",
    ] {
        let r = rows
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("{id}"));
        assert!(r["model_ci"].is_array(), "two seeds give an interval: {r}");
        assert!(r["direction_match"].is_boolean());
    }
    assert_eq!(
        v["curves"],
        serde_json::json!([]),
        "R7's curve is 001-sysbench's"
    );
    // A term that selects nothing is refused with the ids it could have been.
    let o = fsyncsim(&["validate", "--only", "000-dbench6x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let e = stderr(&o);
    assert!(
        e.contains("'000-dbench6x' selects no experiment") && e.contains("000-dbench64"),
        "{e}"
    );
}

#[test]
fn validate_help_names_every_ablated_mechanism() {
    let o = fsyncsim(&["validate", "--help"]);
    let h = String::from_utf8(o.stdout).unwrap();
    for (name, _, _) in models::validate::ABLATIONS {
        assert!(h.contains(name), "--ablate's help lacks {name}: {h}");
    }
    let runs = [
        "", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    ];
    let times = runs[models::validate::ABLATIONS.len() + 1];
    assert!(h.contains(&format!("{times} times the btrfs runs")), "{h}");
}

#[test]
fn invalid_utf8_is_reported_at_its_line() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sc = dir.join("bad.toml");
    std::fs::write(&sc, b"name = \"x\"\nrace = \"R1\"\ntitle = \"\xff\"\n").unwrap();
    assert_bad_input(
        &["run", sc.to_str().unwrap()],
        &["bad.toml:3:", "invalid UTF-8"],
    );
    let dev = dir.join("dev.toml");
    std::fs::write(&dev, b"preset = \"nvme\"\nname = \"\xfe\"\n").unwrap();
    assert_bad_input(
        &["fio", "--device", dev.to_str().unwrap()],
        &["dev.toml:2:", "invalid UTF-8"],
    );
}

#[test]
fn a_bad_device_file_named_by_a_scenario_is_reported_at_both_lines() {
    let dir = std::env::temp_dir().join(format!("fsyncsim-devref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dev = dir.join("qd0.toml");
    std::fs::write(&dev, "preset = \"nvme\"\nqueue_depth = 0\n").unwrap();
    let sc = dir.join("sc.toml");
    std::fs::write(
        &sc,
        format!(
            "name = \"x\"\nrace = \"R7\"\ntitle = \"t\"\nsummary = \"s\"\ndevice = \"{}\"\nsetup = [\"create /f\"]\n[[task]]\nname = \"A\"\nops = [\"fsync /f\"]\n",
            dev.display()
        ),
    )
    .unwrap();
    assert_bad_input(
        &["run", sc.to_str().unwrap()],
        &["sc.toml:5:", "qd0.toml:2:", "expected an integer >= 1"],
    );
}

#[test]
fn sweep_targets_any_metric_with_a_threshold() {
    let sweep = |target: &str| {
        let o = fsyncsim(&[
            "sweep",
            "scenarios/examples/r10-parent-logged-again.toml",
            "--seeds",
            "0..60",
            "--target",
            target,
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    // Every explored run of the pre-5.12 policy logs at least three inodes; the count of a
    // threshold target is the number of runs at or above it.
    let v = sweep("inode_logs>=3,wait_for_commit_ns>=1000000000000");
    let pre = &v[0];
    assert_eq!(pre["targets"]["inode_logs>=3"]["hits"], pre["runs"]);
    assert!(pre["targets"]["wait_for_commit_ns>=1000000000000"].is_null());
    // The target is part of the sweep's identity.
    let other = sweep("inode_logs>=4");
    assert_ne!(v[0]["identity"]["digest"], other[0]["identity"]["digest"]);
    assert_bad_input(
        &[
            "sweep",
            "r1-link-rename-logged-trans",
            "--target",
            "inode_logs>=0",
        ],
        &["--target", "threshold"],
    );
}

/// A built-in scenario may be named by its id (the part before the first '-'), in any
/// case: `run R1` is `run r1-link-rename-logged-trans`; an unknown id is the usual error.
#[test]
fn a_builtin_scenario_is_named_by_its_id() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |name: &str| common::fsyncsim_in(dir, &["run", name, "--json"]);
    let (short, full) = (run("R1"), run("r1-link-rename-logged-trans"));
    assert_eq!(short.status.code(), Some(0));
    assert_eq!(short.stdout, full.stdout);
    assert_eq!(
        run("j1b").stdout,
        run("j1b-reader-stalled-by-sync-commit").stdout
    );
    common::assert_one_line_in(dir, 2, &["run", "R9"], &["unknown scenario 'R9'"]);
}

/// A mistyped flag or subcommand is one line that names it and clap's suggestion.
#[test]
fn a_mistyped_flag_or_subcommand_is_one_line_with_a_suggestion() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    common::assert_one_line_in(
        dir,
        2,
        &["run", "--polcy", "linux-5.11"],
        &["'--polcy'", "did you mean '--policy'?"],
    );
    common::assert_one_line_in(dir, 2, &["swep", "r1"], &["did you mean 'sweep'?"]);
    let o = common::fsyncsim_in(dir, &["run", "--zzzzzz"]);
    assert!(!common::stderr(&o).contains("did you mean"));
}

#[test]
fn a_multi_seed_compare_labels_its_one_seed_tables() {
    let args = |seeds: &'static str| {
        let o = fsyncsim(&[
            "compare",
            "dbench",
            "--clients",
            "2",
            "--duration",
            "100ms",
            "--warmup",
            "0s",
            "--seeds",
            seeds,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let two = args("2");
    assert!(
        two.contains("seed 1 (1 of 2 paired seeds; their mean is in the table above) =="),
        "{two}"
    );
    assert!(two.contains("mean of 2 paired seeds"), "{two}");
    let one = args("1");
    assert!(!one.contains("paired seeds"), "{one}");
}

#[test]
fn bash_completes_built_in_scenario_and_preset_names() {
    // The script as bash itself runs it: a scenario name after `run`, a preset after
    // `--baseline`.
    let o = fsyncsim(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dir = std::env::temp_dir().join(format!("fsyncsim-compl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("fsyncsim.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let complete = |words: &str, cword: usize, cur: &str, prev: &str| {
        let prog = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; _fsyncsim fsyncsim {cur} {prev}; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let o = std::process::Command::new("bash")
            .args(["-c", &prog])
            .output()
            .expect("bash runs");
        String::from_utf8(o.stdout).unwrap()
    };
    let got = complete("fsyncsim run r1-l", 2, "r1-l", "run");
    assert_eq!(got.trim(), "r1-link-rename-logged-trans");
    let got = complete(
        "fsyncsim compare dbench --baseline linux-5.1",
        4,
        "linux-5.1",
        "--baseline",
    );
    assert!(
        got.contains("linux-5.10") && got.contains("linux-5.16"),
        "{got}"
    );
    let got = complete("fsyncsim workload dbench6", 2, "dbench6", "workload");
    assert_eq!(got.trim(), "dbench60");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// When the policies change counters but no operation's latency, `run` says which waiting
/// time the change moved (J1b: from CFQ's blocked async dispatch to its idle window), or
/// that it moved none (J1a); a race whose latencies change prints no such note.
#[test]
fn run_says_which_wait_moved_when_no_latency_did() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = |name: &str| {
        let o = common::fsyncsim_in(dir, &["run", name]);
        assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let j1b = text("J1b");
    let note = j1b
        .split("no latency moved")
        .nth(1)
        .unwrap_or_else(|| panic!("{j1b}"));
    for wait in ["ext4.cfq_async_blocked_ns", "ext4.cfq_idle_ns"] {
        assert!(note.contains(wait), "{j1b}");
    }
    assert!(
        !note.contains("ext4.commit_ns"),
        "commit time did not move: {j1b}"
    );
    assert!(text("J1a").contains("no waiting time (no *_ns counter) moved"));
    assert!(!text("R6").contains("no latency moved"));
}

#[test]
fn a_workload_run_that_breaks_an_invariant_exits_1_naming_it_after_the_output() {
    // The S1 mutant (a log sync's superblock issued before the previous commit's completed)
    // fires in a short dbench run; its output is printed, then one stderr line names it.
    let short = [
        "dbench",
        "--clients",
        "8",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ];
    let with = |cmd: &str, extra: &[&str]| fsyncsim(&[&[cmd][..], &short, extra].concat());
    let bad = with("workload", &["--mutant", "sync-log-no-super-wait"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stdout).contains("latency attribution"));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("invariant fired: dbench under linux-5.11") && err.contains(": S1 at "),
        "{err}"
    );
    // The same run on the release preset is clean.
    let ok = with("workload", &[]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(ok.stderr.is_empty());
    // compare: the mutant on the current side only; the line names that side.
    let sides = ["--baseline", "linux-5.11", "--current"];
    let mutant = "linux-5.11:+sync-log-no-super-wait";
    let cmp = with(
        "compare",
        &[&["--seeds", "1"][..], &sides, &[mutant]].concat(),
    );
    assert_eq!(cmp.status.code(), Some(1));
    let err = String::from_utf8_lossy(&cmp.stderr);
    let named = "invariant fired: dbench under linux-5.11 +sync-log-no-super-wait, seed 1: ";
    assert!(err.starts_with(named) && err.contains(": S1 at "), "{err}");
}
