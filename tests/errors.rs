//! Issue 28 item 6, the error promise everywhere: bad input is one line on stderr naming the
//! file:line (or the flag) and what was expected, exit 2, nothing on stdout — in the cases
//! the issue found breaking it.

use crate::common;

use common::{assert_one_line_in, fsyncsim_in, stderr, temp_dir};
use std::path::Path;

const R1: &str = "r1-link-rename-logged-trans";

/// The text of the shipped scenario `name`.
fn scenario_text(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/scenarios/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Writes `files` (name, text) into `dir`.
fn write_all(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// A dbench workload file's first five lines (name, kind, title, clients, duration).
const DBENCH_HEAD: &str =
    "name = \"x\"\nkind = \"dbench\"\ntitle = \"t\"\nclients = 2\nduration = \"1s\"\n";

#[test]
fn workload_semantic_errors_name_their_line() {
    let d = temp_dir("err-workload-lines");
    let kbuild = "name = \"x\"\nkind = \"kbuild\"\ntitle = \"t\"\nthreads = 2\nduration = \"1s\"\nfs = \"btrfs\"\n";
    let zero_mix = format!("{DBENCH_HEAD}[mix]\nNTCreateX = 0\n");
    let zero_cpu = format!("{DBENCH_HEAD}[mix]\nQpathinfo = 1\n[cpu]\nopen = \"1us\"\nClose = \"1us\"\nQpathinfo = \"0s\"\n");
    write_all(
        &d,
        &[
            ("kbuild.toml", kbuild),
            ("mix.toml", &zero_mix),
            ("cpu0.toml", &zero_cpu),
        ],
    );
    for (file, needle) in [
        (
            "kbuild.toml",
            "kbuild.toml:6: a kbuild workload runs on ext3 or ext4",
        ),
        ("mix.toml", "mix.toml:6: a dbench workload needs a [mix]"),
        (
            "cpu0.toml",
            "cpu0.toml:11: [cpu] needs a CPU time > 0 for 'Qpathinfo'",
        ),
    ] {
        assert_one_line_in(&d, 2, &["workload", file], &[needle]);
    }
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_device_file_error_names_the_whole_key_not_a_key_it_prefixes() {
    let d = temp_dir("err-device-key");
    write_all(
        &d,
        &[
            // `write_cache` (line 2) starts with `write`; the bad `write` is on line 3.
            (
                "w.toml",
                "preset = \"nvme\"\nwrite_cache = true\nwrite = { dist = \"uniform\", min_us = 9, max_us = 5 }\n",
            ),
            // A [scheduler] key that another one prefixes (`read` of `read_expire`).
            (
                "s.toml",
                "preset = \"nvme\"\n[scheduler]\nname = \"mq-deadline\"\nread_expire = 5\nread = 3\n",
            ),
        ],
    );
    assert_one_line_in(
        &d,
        2,
        &["fio", "--device", "w.toml"],
        &["w.toml:3: uniform distribution has min_us 9 > max_us 5"],
    );
    assert_one_line_in(
        &d,
        2,
        &["fio", "--device", "s.toml"],
        &["s.toml:5: [scheduler]: unknown field `read`"],
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn an_unknown_expect_policy_is_reported_at_its_own_header() {
    let d = temp_dir("err-expect");
    let sc = scenario_text(R1);
    let renamed = sc.replace("[expect.post]", "[expect.postt]");
    let line = renamed
        .lines()
        .position(|l| l.starts_with("[expect.postt]"))
        .unwrap()
        + 1;
    let extra = format!("{sc}\n[expect.other]\n");
    let extra_line = extra.lines().count();
    write_all(&d, &[("renamed.toml", &renamed), ("extra.toml", &extra)]);
    assert_one_line_in(
        &d,
        2,
        &["check", "renamed.toml"],
        &[&format!(
            "renamed.toml:{line}: unknown policy 'postt' in [expect.postt]"
        )],
    );
    // An empty table has no first value to point at: the header is the line, not line 1.
    assert_one_line_in(
        &d,
        2,
        &["check", "extra.toml"],
        &[&format!("extra.toml:{extra_line}: unknown policy 'other'")],
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn unknown_cpu_operations_and_size_pairs_of_other_lengths_are_refused() {
    let d = temp_dir("err-cpu-sizes");
    let fio = "name = \"x\"\nkind = \"fio\"\ntitle = \"t\"\nthreads = 2\nduration = \"1s\"\n[cpu]\nbogus = \"1us\"\n";
    let dbench_cpu = format!("{DBENCH_HEAD}[mix]\nNTCreateX = 1\n[cpu]\nopen = \"1us\"\nClose = \"1us\"\nclose = \"1us\"\n");
    let long = format!("{DBENCH_HEAD}write_sizes = [[4096, 1], [4096, 1, 7]]\n[mix]\nNTCreateX = 1\n[cpu]\nopen = \"1us\"\nClose = \"1us\"\n");
    write_all(
        &d,
        &[
            ("fio.toml", fio),
            ("cpu.toml", &dbench_cpu),
            ("long.toml", &long),
        ],
    );
    assert_one_line_in(
        &d,
        2,
        &["workload", "fio.toml"],
        &["fio.toml:7: unknown operation 'bogus' in [cpu]: expected none"],
    );
    assert_one_line_in(
        &d,
        2,
        &["workload", "cpu.toml"],
        &["cpu.toml:11: unknown operation 'close' in [cpu]: expected one of open, NTCreateX"],
    );
    assert_one_line_in(
        &d,
        2,
        &["workload", "long.toml"],
        &["long.toml:6: invalid write_sizes entry of 3 elements: expected [bytes, weight]"],
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_toml_key_depth_limit_and_dotted_keys_name_their_line() {
    let d = temp_dir("err-toml-depth");
    let deep = format!("{}b = 1\n", "a.".repeat(100));
    let sc = format!("{}\n{deep}", scenario_text(R1));
    let sc_line = sc.lines().count();
    let wl = format!("{DBENCH_HEAD}{deep}");
    let dev = format!("preset = \"nvme\"\n\n{deep}");
    write_all(
        &d,
        &[
            ("s.toml", &sc),
            ("w.toml", &wl),
            ("d.toml", &dev),
            // Dotted keys into [scheduler]: the bad one is on line 3.
            (
                "dotted.toml",
                "preset = \"nvme\"\nscheduler.name = \"mq-deadline\"\nscheduler.read = 3\n",
            ),
        ],
    );
    assert_one_line_in(
        &d,
        2,
        &["run", "s.toml"],
        &[&format!("s.toml:{sc_line}: recursion limit")],
    );
    assert_one_line_in(
        &d,
        2,
        &["workload", "w.toml"],
        &["w.toml:6: recursion limit"],
    );
    assert_one_line_in(
        &d,
        2,
        &["fio", "--device", "d.toml"],
        &["d.toml:3: recursion limit"],
    );
    assert_one_line_in(
        &d,
        2,
        &["fio", "--device", "dotted.toml"],
        &["dotted.toml:3: [scheduler]: unknown field `read`"],
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_duration_too_large_is_out_of_range_and_says_the_limit() {
    assert_one_line_in(
        Path::new("."),
        2,
        &["workload", "dbench", "--duration", "1e30s"],
        &[
            "--duration",
            "duration '1e30s' out of range: expected at most 9223372036s",
        ],
    );
}

#[test]
fn a_negative_count_in_a_shard_is_named_with_its_field_and_expectation() {
    let d = temp_dir("err-merge-negative");
    let o = fsyncsim_in(&d, &["sweep", R1, "--seeds", "0..50", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let target = v[0]["targets"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    v[0]["targets"][&target]["hits"] = serde_json::json!(-1);
    std::fs::write(d.join("hits.json"), v.to_string()).unwrap();
    assert_one_line_in(
        &d,
        2,
        &["merge", "hits.json"],
        &[&format!(
            "hits.json: [0]: field 'targets.{target}.hits' is -1: expected a non-negative integer"
        )],
    );
    v[0]["targets"][&target]["hits"] = serde_json::json!(1);
    v[0]["runs"] = serde_json::json!(-1);
    std::fs::write(d.join("runs.json"), v.to_string()).unwrap();
    assert_one_line_in(
        &d,
        2,
        &["merge", "runs.json"],
        &["runs.json: [0]: field 'runs' is -1: expected a non-negative integer"],
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn shrink_says_that_the_script_cannot_progress() {
    let d = temp_dir("err-shrink-stuck");
    // The scenario of cli.rs's stuck-script test: step 2 (line 15) can never happen.
    write_all(
        &d,
        &[(
            "stuck.toml",
            "name = \"s\"\nrace = \"R6\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"create /x\", \"write /x 4k\"]\n[[task]]\nname = \"A\"\nops = [\"commit\"]\n[[task]]\nname = \"B\"\nops = [\"write /x 4k\", \"fsync /x\"]\n[script]\nsteps = [\n  \"B write:start\",\n  \"B sync_log:write_super\",\n  \"A trans:unblocked\",\n]\n",
        )],
    );
    assert_one_line_in(
        &d,
        2,
        &[
            "shrink",
            "stuck.toml",
            "--seed",
            "0",
            "--target",
            "unnecessary_inode_logs",
            "--prefix",
            "3",
        ],
        &[
            "stuck.toml:15: the script cannot progress",
            "sync_log:write_super",
            "(under linux-5.11 without R6)",
        ],
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[cfg(unix)]
#[test]
fn printed_replay_and_shrink_commands_round_trip_through_sh() {
    let d = temp_dir("err-quote");
    let sub = "it's a \"dir\"";
    std::fs::create_dir(d.join(sub)).unwrap();
    let path = format!("{sub}/r1 $x.toml");
    std::fs::write(d.join(&path), scenario_text(R1)).unwrap();
    // `fsyncsim` in the printed lines is this build's binary.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_fsyncsim")).parent().unwrap();
    let search = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = |line: &str| {
        std::process::Command::new("sh")
            .args(["-c", line])
            .env("PATH", &search)
            .current_dir(&d)
            .output()
            .unwrap()
    };
    let o = fsyncsim_in(&d, &["sweep", &path, "--seeds", "0..50"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let replay = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: "))
        .unwrap_or_else(|| panic!("no replay line: {text}"));
    let r = sh(replay);
    assert_eq!(r.status.code(), Some(0), "{replay}: {}", stderr(&r));
    assert!(String::from_utf8_lossy(&r.stdout).contains("unnecessary_inode_logs"));
    // shrink's header names its command: printf gets back exactly the arguments given.
    // The seed is the replay's, one that hits.
    let seed = replay
        .split_whitespace()
        .skip_while(|w| *w != "--seed")
        .nth(1)
        .unwrap_or_else(|| panic!("no --seed in {replay}"));
    let args = [
        "shrink",
        path.as_str(),
        "--seed",
        seed,
        "--target",
        "unnecessary_inode_logs>=1",
    ];
    let o = fsyncsim_in(&d, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let toml = String::from_utf8(o.stdout).unwrap();
    let command = toml
        .lines()
        .find_map(|l| l.split_once("Shrunk by `"))
        .and_then(|(_, rest)| rest.rsplit_once("`."))
        .map(|(c, _)| c.to_string())
        .unwrap_or_else(|| panic!("no command in the header: {toml}"));
    let echoed = sh(&command.replacen("fsyncsim", "printf '%s\\n'", 1));
    assert_eq!(
        String::from_utf8_lossy(&echoed.stdout)
            .lines()
            .collect::<Vec<_>>(),
        args,
        "{command}"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_vary_list_with_an_empty_value_is_an_error_naming_the_flag() {
    for (vary, n) in [("clients=1,,2", 2), ("clients=1,2,", 3), ("clients=", 1)] {
        assert_one_line_in(
            Path::new("."),
            2,
            &[
                "compare",
                "dbench",
                "--duration",
                "1s",
                "--seeds",
                "1",
                "--vary",
                vary,
            ],
            &["--vary", &format!("value {n} is empty")],
        );
    }
}

#[test]
fn a_sweeps_replay_command_keeps_a_policy_that_is_not_linux_5_11() {
    // The replay line once always said `--policy linux-5.11` plus fix flags, so a sweep
    // under linux-5.12's tree-log switches replayed under 5.11 (a different run).
    let d = temp_dir("replay-policy");
    let pol = "linux-5.12:-R1:-skip-logged-parents";
    let o = fsyncsim_in(
        &d,
        &[
            "sweep",
            "r1-link-rename-logged-trans",
            "--seeds",
            "0..40",
            "--policy",
            pol,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rep = &j[0];
    let replay = rep["targets"]["unnecessary_inode_logs"]["replay"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(replay.contains(&format!("--policy {pol}")), "{replay}");
    let args: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let run = fsyncsim_in(&d, &[&args[..], &["--json"]].concat());
    let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let m = &r["runs"][0];
    assert_eq!(m["policy"], rep["policy"], "{replay}");
    assert!(
        m["metrics"]["unnecessary_inode_logs"].as_u64().unwrap() > 0,
        "{replay}"
    );
    // And `--policy` takes the modifiers that `[policies]` takes.
    let bad = fsyncsim_in(
        &d,
        &[
            "run",
            "r1-link-rename-logged-trans",
            "--policy",
            "linux-5.12:+nope",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("invalid policy modifier ':+nope'"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn a_sweep_on_another_device_prints_replay_commands_for_that_device() {
    let d = temp_dir("replay-device");
    let o = fsyncsim_in(
        &d,
        &[
            "sweep",
            "r1-link-rename-logged-trans",
            "--seeds",
            "0..40",
            "--device",
            "sata-ssd",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let replay = j[0]["targets"]["unnecessary_inode_logs"]["replay"]
        .as_str()
        .unwrap();
    assert!(replay.ends_with(" --device sata-ssd"), "{replay}");
    let args: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let run = fsyncsim_in(&d, &[&args[..], &["--json"]].concat());
    let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert!(
        r["runs"][0]["metrics"]["unnecessary_inode_logs"]
            .as_u64()
            .unwrap()
            > 0,
        "{replay}"
    );
}
