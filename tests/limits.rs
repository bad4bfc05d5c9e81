//! Issue 28 item 4: each resource estimate (src/limits.rs) checked against a real, small run.
//! With `FSYNCSIM_ESTIMATES` set the binary prints every estimate it checks
//! (`estimate: NAME=VALUE`) before running; the run's own figures are its peak RSS and CPU
//! time (from `wait4`), its engine events (`--json`) and the trace file's size. Each estimate
//! must hold the run (an upper bound) without being vacuous (within a stated factor). And
//! the examples the issue found are refused before any work, in one line, exit 3.

use crate::common;

use common::{assert_one_line_in, temp_dir};
use std::path::Path;
use std::process::{Command, Stdio};

/// What a run of the binary took, with the estimates it printed.
struct Measured {
    /// Exit code.
    code: i32,
    stdout: String,
    /// `estimate: NAME=VALUE` lines.
    estimates: Vec<(String, f64)>,
    /// Peak resident set, bytes.
    rss: f64,
    /// User + system CPU time, seconds.
    cpu: f64,
}

impl Measured {
    fn estimate(&self, name: &str) -> f64 {
        self.estimates
            .iter()
            .filter(|(n, _)| n == name)
            .map(|&(_, v)| v)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
            .unwrap_or_else(|| panic!("no estimate {name}: {:?}", self.estimates))
    }
}

/// Runs the binary in `dir` with estimates printed and measures it.
// The child is waited for with `wait4` (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn measure(dir: &Path, args: &[&str]) -> Measured {
    let child = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .current_dir(dir)
        .env("FSYNCSIM_ESTIMATES", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fsyncsim");
    let pid = child.id() as libc::pid_t;
    // Read the pipes on threads so that a large output cannot block the child.
    let mut out = child.stdout.unwrap();
    let mut err = child.stderr.unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).unwrap();
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for the child we spawned and own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4");
    let (stdout, stderr) = (o.join().unwrap(), e.join().unwrap());
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let estimates = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("estimate: "))
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.to_string(), v.parse::<f64>().unwrap()))
        .collect();
    Measured {
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        stdout,
        estimates,
        rss: ru.ru_maxrss as f64 * 1024.0,
        cpu: secs(ru.ru_utime) + secs(ru.ru_stime),
    }
}

/// Asserts `measured <= estimate <= factor × measured`, naming `what`.
fn holds(what: &str, estimate: f64, measured: f64, factor: f64) {
    assert!(
        measured <= estimate && estimate <= factor * measured,
        "{what}: estimate {estimate:.3e}, measured {measured:.3e} (expected between 1 and {factor}x)"
    );
}

/// CPU time is estimated for the release build without checks; a debug build (debug assertions) is slower by a
/// few times, so its runs get that much room.
fn cpu_slack() -> f64 {
    if cfg!(debug_assertions) {
        6.0
    } else if std::env::var_os("FSYNCSIM_INVARIANTS").is_some_and(|v| v == "1") {
        // Release-built tests run the invariant checks (sim/src/check.rs): +24 % of
        // instructions on dbench (callgrind), more where the checks walk whole states.
        1.5
    } else {
        1.0
    }
}

/// The `events` of a workload run's `--json`.
fn events(stdout: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(stdout).unwrap();
    v["events"].as_f64().unwrap()
}

/// Runs `fsyncsim ARGS --json` (a workload) and checks its event and memory estimates.
fn workload_estimates_hold(args: &[&str]) {
    let mut args = args.to_vec();
    args.push("--json");
    let m = measure(Path::new("."), &args);
    assert_eq!(m.code, 0);
    holds("events", m.estimate("events"), events(&m.stdout), 4.0);
    holds("memory", m.estimate("memory_bytes"), m.rss, 4.0);
}

#[test]
fn dbench_clients_events_and_memory_hold_a_512_client_run() {
    workload_estimates_hold(&[
        "workload",
        "dbench",
        "--clients",
        "512",
        "--duration",
        "10ms",
        "--warmup",
        "0s",
    ]);
}

#[test]
fn filecreate_threads_events_and_memory_hold_a_4_thread_emptyfiles500k_run() {
    workload_estimates_hold(&["workload", "emptyfiles500k", "--threads", "4"]);
}

#[test]
fn fio_direct_writes_events_and_memory_hold_a_16_thread_dio_run() {
    // The writes' tree items grow with the run: 8 MiB per thread-second.
    workload_estimates_hold(&[
        "workload",
        "dio4kbs16threads",
        "--duration",
        "1s",
        "--policy",
        "linux-5.13",
    ]);
}

#[test]
fn fio_buffered_random_writes_events_and_memory_hold_a_randwrite2xram_run() {
    // Each write a range with its own items: 16 MiB per thread-second.
    workload_estimates_hold(&[
        "workload",
        "randwrite2xram",
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "--policy",
        "linux-5.13",
    ]);
}

/// A copy of the built-in sptf HDD file with `zones` recording zones (and enough cylinders).
fn zoned_device(dir: &Path, zones: u64) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/devices/hdd-smr-5400-sptf.toml"),
    )
    .unwrap()
    .replace("zones = 16\n", &format!("zones = {zones}\n"))
    .replace("cylinders = 428657\n", "cylinders = 100000000\n");
    assert!(text.contains(&format!("zones = {zones}\n")));
    let name = format!("zones{zones}.toml");
    std::fs::write(dir.join(&name), text).unwrap();
    name
}

#[test]
fn hdd_zones_memory_holds_a_4_million_zone_device() {
    let d = temp_dir("limits-zones");
    let dev = zoned_device(&d, 4_000_000);
    let m = measure(&d, &["fio", "--device", &dev, "--runtime", "10ms"]);
    assert_eq!(m.code, 0);
    holds("memory", m.estimate("memory_bytes"), m.rss, 2.0);
    std::fs::remove_dir_all(d).unwrap();
}

/// A scenario of `kind`: `tasks` (N tasks creating, writing and fsyncing a file each),
/// `ops` (one task of N operations: write/fsync pairs on one file) or `steps` (one task of
/// N writes, each write's start a script step).
fn generated(kind: &str, n: usize) -> String {
    let mut t = String::from(
        "name = \"g\"\nrace = \"R1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"mkdir /d\"]\n",
    );
    match kind {
        "tasks" => {
            for k in 0..n {
                t.push_str(&format!(
                    "[[task]]\nname = \"T{k}\"\nops = [\"create /d/f{k}\", \"write /d/f{k} 4k\", \"fsync /d/f{k}\"]\n"
                ));
            }
        }
        "ops" => {
            let mut ops = vec!["\"create /d/a\"".to_string()];
            while ops.len() < n {
                ops.push("\"write /d/a 4k\"".into());
                ops.push("\"fsync /d/a\"".into());
            }
            ops.truncate(n);
            t.push_str(&format!(
                "[[task]]\nname = \"A\"\nops = [{}]\n",
                ops.join(", ")
            ));
        }
        _ => {
            let ops = std::iter::once("\"create /d/a\"")
                .chain(std::iter::repeat_n("\"write /d/a 4k\"", n))
                .collect::<Vec<_>>();
            t.push_str(&format!(
                "[[task]]\nname = \"A\"\nops = [{}]\n",
                ops.join(", ")
            ));
            t.push_str("[script]\nsteps = [\n");
            t.push_str(&"  \"A write:start\",\n".repeat(n));
            t.push_str("]\n");
        }
    }
    t
}

/// `run FILE` (two runs: pre and post) of a generated scenario against twice its one-run
/// estimate.
fn scenario_estimate_holds(kind: &str, n: usize) {
    let d = temp_dir(&format!("limits-{kind}"));
    std::fs::write(d.join("g.toml"), generated(kind, n)).unwrap();
    let m = measure(&d, &["run", "g.toml"]);
    assert_eq!(m.code, 0, "{kind} {n}");
    let est = 2.0 * m.estimate("scenario_run_seconds");
    assert!(
        m.cpu <= est * cpu_slack() && est <= 20.0 * m.cpu,
        "{kind} {n}: estimate {est:.3} CPU-s, measured {:.3} CPU-s",
        m.cpu
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn scenario_tasks_estimate_holds_a_400_task_run() {
    scenario_estimate_holds("tasks", 400);
}

#[test]
fn scenario_operations_estimate_holds_a_300_operation_task() {
    scenario_estimate_holds("ops", 300);
}

#[test]
fn scenario_script_steps_estimate_holds_a_16000_step_script() {
    scenario_estimate_holds("steps", 16_000);
}

#[test]
fn compare_trace_bytes_hold_a_small_trace() {
    let d = temp_dir("limits-trace");
    let m = measure(
        &d,
        &[
            "compare",
            "dbench",
            "--clients",
            "4",
            "--duration",
            "200ms",
            "--warmup",
            "0s",
            "--trace",
            "t.pftrace",
        ],
    );
    assert_eq!(m.code, 0);
    let size = std::fs::metadata(d.join("t.pftrace")).unwrap().len() as f64;
    holds("trace bytes", m.estimate("trace_bytes"), size, 4.0);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_issues_examples_are_refused_before_any_work() {
    let d = temp_dir("limits-refused");
    std::fs::write(d.join("tasks.toml"), generated("tasks", 5_000)).unwrap();
    std::fs::write(d.join("ops.toml"), generated("ops", 200_000)).unwrap();
    let dev = zoned_device(&d, 1 << 31);
    let started = std::time::Instant::now();
    for (args, needle) in [
        (
            vec!["workload", "emptyfiles500k", "--threads", "1000"],
            "--clients 1000 × 31250 files each: estimated 52.5 GiB of memory; refusing above 4.0 GiB",
        ),
        (
            vec!["run", "tasks.toml"],
            "tasks.toml: 5000 tasks, 3 operations in the longest, 0 script steps: one run estimated at 1000 CPU-seconds; refusing above 60 CPU-seconds a run",
        ),
        (vec!["check", "ops.toml"], "200000 operations in the longest"),
        (vec!["sweep", "ops.toml", "--seeds", "0..10"], "ops.toml: "),
        (
            vec!["fio", "--device", &dev, "--runtime", "1ms"],
            "[hdd.mech] zones: estimated 80.0 GiB of memory; refusing above 4.0 GiB",
        ),
        (vec!["scrub", "--device", &dev], "80.0 GiB"),
        (vec!["run", "r1-link-rename-logged-trans", "--device", &dev], "80.0 GiB"),
        (
            vec![
                "compare", "dbench", "--clients", "64", "--duration", "300s", "--trace", "t.pftrace",
            ],
            "--trace: --clients 64 × --duration+--warmup 360s: estimated 17.2 GiB of trace; refusing above 2.0 GiB",
        ),
    ] {
        let mut needles = vec![needle, "(pass --force to run anyway)"];
        needles.retain(|n| !n.is_empty());
        assert_one_line_in(&d, 3, &args, &needles);
    }
    // Refused before any work: none of them ran a model (the 5,000-task run alone takes
    // many minutes).
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    assert!(!d.join("t.json").exists());
    std::fs::remove_dir_all(d).unwrap();
}
