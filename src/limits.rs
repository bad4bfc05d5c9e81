//! Resource limits (issue 14): before a command starts, estimate what it will cost and refuse
//! (exit 3, one line naming the flags and the estimate) above a limit, unless `--force`.
//!
//! The estimates are deliberately simple (a count times a per-unit constant measured on this
//! project's 2-core AMD EPYC VM); they exist to stop a typo such as `--seeds
//! 0..18446744073709551615` or `--duration 1000000s` from occupying a machine for years or
//! exhausting its memory, not to predict run times. Nothing here changes what a run computes:
//! a command that passes the check runs exactly as before.

use crate::{BenchArgs, Command, CompareArgs, FioArgs, LoadArgs, PolicyArgs, SweepArgs};
use models::block::DiskConfig;
use models::scenario::Scenario;
use models::workload::spec::{FioRw, Kind, Spec};

/// Most explored runs (seeds owned by this shard × policies) one `sweep` may start.
pub const MAX_SWEEP_RUNS: f64 = 1e8;

/// Explored runs per CPU-second. Measured: `fsyncsim sweep r1-link-rename-logged-trans
/// --seeds 0..100000 --without R1` takes 0.70 s wall on 2 cores (measured on this machine; the figures are in the commit history)
/// ⇒ ≈ 71,000 runs per CPU-second; this session, release build on a loaded machine, it took
/// 1.24 s of user time (81,000 per CPU-second) and R6 `--without R6`, 20,000 seeds, 0.26 s
/// (77,000). Scenarios with longer scripts are slower: the CPU-hours shown are a rough guide.
pub const SWEEP_RUNS_PER_CPU_SECOND: f64 = 71_000.0;

/// Most engine events (task resumptions, all runs together) one `workload` or `compare` may
/// start.
pub const MAX_WORKLOAD_EVENTS: f64 = 1e11;

/// Engine events per client (or thread) per virtual second of a workload other than fio: the
/// largest of these, measured on this machine as the `events` of `fsyncsim workload NAME …
/// --json` (task resumptions; deterministic) divided by clients × (duration + warmup), since
/// dbench's directory scans read through the filesystem (`Op::Readdir`): dbench 1 client 1 s:
/// 307,283; 1 client 5 s: 1,507,583 / 5 = 301,517; fs-mark 1 thread 1 s: 238,181; dbench
/// 4096 clients, 10 ms: 8,524,901 / 40.96 = 208,128 (many clients start at once and fill the
/// metadata space: async reclaim runs); dbench 8 clients 1 s: 168,927; dbench 64 clients 1 s:
/// 67,069; dbench 512 clients 10 ms: 93,140; sysbench-fileio 1 thread 1 s: 49,027. Rounded
/// up. Fewer clients contend less for the simulated CPUs and run more operations each, so a
/// large run's estimate is pessimistic (4.8× for dbench at 64 clients).
pub const WORKLOAD_EVENTS_PER_CLIENT_SECOND: f64 = 320_000.0;

/// The same for fio workloads (`kind = "fio"`), whose jobs never wait for CPU: dio4kbs16threads
/// at 1 thread, 1 s: 601,312 events; at 16 threads: 10,333,486 / 16 = 645,843 (since writes
/// into the preallocated files go in place; 8,729,671 before); randwrite2xram at 1 thread:
/// 470,617. Rounded up.
pub const FIO_WORKLOAD_EVENTS_PER_THREAD_SECOND: f64 = 660_000.0;

/// Engine events per file an fio `filecreate` job creates (emptyfiles500k, 1 thread:
/// 261,120 events for 31,250 files = 8.4; 4 threads: 1,473,636 for 125,000 = 11.8; 16
/// threads: 5,927,408 for 500,000 = 11.9, since each new inode's item update is a delayed
/// item and a run of a delayed node takes its mutex; rounded up): such a job stops when its
/// files exist, whatever its duration says.
pub const FILECREATE_EVENTS_PER_FILE: f64 = 13.0;

/// Most memory one workload run may take, in bytes (`compare`: the runs in parallel together).
pub const MAX_WORKLOAD_BYTES: f64 = 4.0 * (1u64 << 30) as f64;

/// Bytes every run takes whatever its size (peak RSS, `/usr/bin/time -f %M`): `fio
/// --runtime 10ms` 15,972 KB, `workload dbench --clients 1 --duration 1s --warmup 0s`
/// 29,500 KB, dio4kbs16threads 1 thread 1 s 43,948 KB and 16 threads 127,264 KB (its files'
/// extents; measured before its writes went in place, now 177,008 KB, which
/// `FIO_DIRECT_BYTES_PER_THREAD_SECOND` covers); rounded up to cover the last.
pub const WORKLOAD_BASE_BYTES: f64 = 128.0 * (1u64 << 20) as f64;

/// Bytes per client (or thread) at the start of a workload: `workload dbench --duration 10ms
/// --warmup 0s` peaks at 192,888 KB with 1,024 clients, 388,896 KB with 2,048 and 774,732 KB
/// with 4,096 (≈ 189 KiB per client, each with its own directory tree); rounded up.
pub const WORKLOAD_BYTES_PER_CLIENT: f64 = 192.0 * 1024.0;

/// Bytes per client (or thread) per √(virtual second), what a client's tree and the fs
/// history grow by as it runs (less and less): dbench 256 clients peaks at 76,740 KB after
/// 10 ms, 113,464 KB after 1 s and 151,128 KB after 3 s; 64 clients at 99,392 KB after 10 s
/// and 149,176 KB after 30 s (≈ 1.86 MiB per client, 1.53 MiB of it above the start: 280
/// KiB × √30); rounded up.
pub const WORKLOAD_BYTES_PER_CLIENT_SQRT_SECOND: f64 = 320.0 * 1024.0;

/// Bytes per thread per virtual second of an fio direct-write workload (its writes' tree
/// items — a write into a preallocated extent splits its item — and checksums stay):
/// dio4kbs16threads under linux-5.13 peaks at 177,008 KB after 1 s, 296,412 KB after 2 s
/// (7,463 KB per thread-second) and 671,912 KB after 6 s (6,186 KB per thread-second since
/// 1 s); rounded up. Long runs grow slower (the writes slow as the trees grow): `compare
/// fsperf --duration 20s` peaked at 2.4 GB for its two direct-I/O runs at once, where this
/// estimates 2.7 GiB each.
pub const FIO_DIRECT_BYTES_PER_THREAD_SECOND: f64 = 8.0 * (1u64 << 20) as f64;

/// Bytes per thread per virtual second of an fio buffered random-write workload (each
/// write a range written back as an extent of its own: its file extent items, the hole
/// items between them, the extent items and the delayed refs of the running transaction
/// stay): randwrite2xram under linux-5.13 peaks at 387,536 KB after 5 s with 4 threads
/// (13.0 MiB per thread-second above `WORKLOAD_BASE_BYTES`); rounded up.
pub const FIO_RANGE_BYTES_PER_THREAD_SECOND: f64 = 16.0 * (1u64 << 20) as f64;

/// Bytes per file an fio `filecreate` job creates (emptyfiles500k: peak RSS 229,944 KB with
/// 4 threads, 735,476 KB with 16: 505 MiB for 375,000 more files ≈ 1,379 B); rounded up.
/// 1,000 threads of 31,250 files each (46 GiB estimated) aborted at 4.3 GB before this limit.
pub const FILECREATE_BYTES_PER_FILE: f64 = 1536.0;

/// Bytes per zone of an HDD with mechanics (`[hdd.mech] zones`): `fio --device FILE --runtime
/// 10ms` peaks at 56,780 KB with 10^6 zones, 173,520 KB with 4·10^6 and 642,016 KB with
/// 16·10^6 (39.0 B per zone: one `Zone` of 40 bytes); 2^31 zones aborted on allocation.
pub const DEVICE_BYTES_PER_ZONE: f64 = 40.0;

/// Most memory a scenario command (run, check, replay, shrink, crash, sweep) or scrub may
/// give its device, in bytes.
pub const MAX_DEVICE_BYTES: f64 = 4.0 * (1u64 << 30) as f64;

/// Most bytes `workload --trace` or `compare --trace` may write (the Perfetto trace of one run): about what the
/// Perfetto UI loads in a browser tab (its trace processor runs in 4 GiB of wasm memory, and
/// the trace inflates in it).
pub const MAX_TRACE_BYTES: f64 = 2.0 * (1u64 << 30) as f64;

/// Perfetto-trace bytes per estimated engine event (clients × seconds × 320,000): `compare
/// dbench --clients 4 --duration 200ms --warmup 0s --trace` wrote 273,954 bytes (1.07 per
/// estimated event; 519,245 with `--trace-filter detail=full`: 2.03); `workload dbench
/// --warmup 0s --duration 1s --trace` 2,408,477 for 8 clients (0.94) and 9,067,052 for 64
/// (0.44); rounded up to cover detail=full.
pub const TRACE_BYTES_PER_EVENT: f64 = 2.5;

/// Most CPU-seconds one run of a scenario may be estimated to take (`run` and `check` run
/// each scenario twice, `sweep` once per seed and policy).
pub const MAX_SCENARIO_RUN_SECONDS: f64 = 60.0;

/// CPU-seconds of one run of a scenario with 1,000 tasks (each `create`, `write 4k`,
/// `fsync` on its own file): the crash check after every returned fsync replays the whole
/// log, so the cost grows with the cube of the tasks. Measured (user time of `fsyncsim run
/// FILE`, two runs): 250 tasks 0.17 s, 500 tasks 1.16 s, 1,000 tasks 7.79 s (n^2.75);
/// 3.9 s a run at 1,000, doubled for a loaded machine, with the exponent 3.
pub const SCENARIO_SECONDS_AT_1000_TASKS: f64 = 8.0;

/// CPU-seconds per (fsyncs in a task) × (operations in that task)^2.75: one task of `write
/// 4k`, `fsync` pairs on one file re-checks an ever longer file history at each fsync.
/// Measured (user time of `fsyncsim run FILE`, two runs): 200 operations 0.08 s, 400 0.81 s,
/// 800 10.86 s (n^3.75 in all: 5.43 s a run at 800 = 1.4e-10 × 400 × 800^2.75); doubled.
pub const SCENARIO_SECONDS_PER_FSYNC_OP_POW: f64 = 2.8e-10;

/// CPU-seconds per (operations in a task)^1.5 without fsyncs: one task of 20,000 `write 4k`
/// took 0.18 s (two runs), 80,000 took 1.08 s (0.54 s a run = 2.4e-8 × 80,000^1.5); doubled.
pub const SCENARIO_SECONDS_PER_OP_POW: f64 = 5e-8;

/// CPU-seconds of one run of a scenario whose `[script]` has 16,000 steps (each a `write
/// 4k`'s start, one task of 16,000 writes); the cost grows with the square of the steps.
/// Measured (user time of `fsyncsim run FILE`, two runs): 16,000 steps 0.81 s, 64,000 11.14 s
/// (n^1.9: 0.4 s a run at 16,000); doubled. (Before this estimate, reading such a file was
/// itself quadratic: 24.28 s at 16,000 steps, most of it finding each step's line.)
pub const SCENARIO_SECONDS_AT_16000_STEPS: f64 = 0.8;

/// Workload events per CPU-second: `fsyncsim workload dbench --clients 64 --duration 300s`
/// took 139.5 s wall, release build (measured on this machine; the figures are in the commit history), for 64 × 360 s × 19,868
/// = 458 M events ⇒ ≈ 3.3 M events per CPU-second; this session `--duration 5s --warmup 1s`
/// ran its 7.63 M events in 2.67 s of user time ⇒ 2.9 M. Rounded to 3 M.
pub const WORKLOAD_EVENTS_PER_CPU_SECOND: f64 = 3.0e6;

/// Most requests one `bench` may run.
pub const MAX_BENCH_REQUESTS: f64 = 1e10;

/// `bench` requests per CPU-second: `fsyncsim bench` (1 M requests) takes a median 0.242 s
/// (measured on this machine; the figures are in the commit history) ⇒ ≈ 4.1 M requests per CPU-second.
pub const BENCH_REQUESTS_PER_CPU_SECOND: f64 = 4.1e6;

/// Most memory `fio`'s in-flight requests (`--iodepth` × `--numjobs` simulated tasks) may
/// take, in bytes.
pub const MAX_FIO_BYTES: f64 = 4.0 * (1u64 << 30) as f64;

/// Bytes per in-flight `fio` request (one simulated task with its future, RNG stream and
/// device request). Measured: peak RSS (`/usr/bin/time -f %M`) of `fsyncsim fio --iodepth
/// 65536 --runtime 1ms` (111,568 KB) minus that of `--iodepth 1` (16,068 KB), divided by
/// 65,535 ≈ 1.46 KiB; rounded up.
pub const FIO_BYTES_PER_REQUEST: f64 = 1536.0;

/// Bytes an `fio` run takes whatever its size: peak RSS of `fsyncsim fio --runtime 10ms`
/// 15,972 KB, `--iodepth 1` 16,068 KB; rounded up.
pub const FIO_BASE_BYTES: f64 = 32.0 * (1u64 << 20) as f64;

/// Most requests one `fio` run may complete.
pub const MAX_FIO_REQUESTS: f64 = 1e10;

/// `fio` requests per virtual second: per request in flight, 24,400 (the `nvme` preset at
/// `--iodepth 1 --numjobs 4`: 97,322 requests in 1 s for 4 in flight), up to the 1 M a
/// device saturates at (the `nvme` preset at `--iodepth 32` and `1024`, `--numjobs 4`:
/// 961,628 and 965,596). The engine runs about 5.4 M such requests per CPU-second (965,596
/// in 0.18 s).
pub const FIO_REQUESTS_PER_INFLIGHT_SECOND: f64 = 24_400.0;

/// The device-saturation cap of the estimate above.
pub const FIO_REQUESTS_PER_SECOND_MAX: f64 = 1e6;

/// `fio` requests per CPU-second (see `FIO_REQUESTS_PER_INFLIGHT_SECOND`).
pub const FIO_REQUESTS_PER_CPU_SECOND: f64 = 5.4e6;

/// The refusal, if the command would exceed a limit and `--force` was not given.
pub fn check(cmd: &Command) -> Result<(), String> {
    match cmd {
        Command::Sweep(a) if !a.force => sweep(a),
        Command::Workload(a) if !a.load.force => workload(&a.load, a.trace.is_some()),
        Command::Compare(a) if !a.load.force => compare(a),
        Command::Bench(a) if !a.force => bench(a),
        Command::Fio(a) if !a.force => fio(a),
        Command::Run(a) if !a.force => {
            let names = a.scenario.iter().cloned().collect::<Vec<_>>();
            scenarios(&names, a.device.as_deref(), 1.0)
        }
        Command::Check {
            scenarios: names,
            force: false,
            ..
        } => scenarios(names, None, 1.0),
        Command::Replay(a) if !a.force => {
            scenarios(std::slice::from_ref(&a.scenario), a.device.as_deref(), 1.0)
        }
        Command::Crash(a) if !a.force => {
            scenarios(std::slice::from_ref(&a.scenario), a.device.as_deref(), 1.0)
        }
        Command::Shrink(a) if !a.force => {
            scenarios(std::slice::from_ref(&a.scenario), a.device.as_deref(), 1.0)
        }
        Command::Scrub(a) if !a.force => device(&a.device),
        _ => Ok(()),
    }
}

/// Testing aid: with `FSYNCSIM_ESTIMATES` set in the environment, every estimate a command
/// is checked against is printed to stderr as `estimate: NAME=VALUE` before it runs
/// (tests/limits.rs compares them with real runs). Without it nothing is printed.
fn report(name: &str, value: f64) {
    if std::env::var_os("FSYNCSIM_ESTIMATES").is_some() {
        crate::out::stderr(format_args!("estimate: {name}={value:e}"), true);
    }
}

/// Bytes the device `spec` (a preset or file) takes in memory beyond a run's base: its HDD
/// zones. 0 when it does not resolve (the command reports that itself, exit 2).
fn device_bytes(spec: &str) -> f64 {
    let zones = DiskConfig::resolve(spec)
        .ok()
        .and_then(|d| {
            d.device
                .hdd
                .as_ref()
                .and_then(|h| h.mech)
                .map(|m| m.zones.0)
        })
        .unwrap_or(0);
    zones as f64 * DEVICE_BYTES_PER_ZONE
}

fn gib(b: f64) -> String {
    format!("{:.1} GiB", b / (1u64 << 30) as f64)
}

/// Refuses a device whose zones would take more than `MAX_DEVICE_BYTES`.
fn device(spec: &str) -> Result<(), String> {
    let bytes = device_bytes(spec);
    report("device_bytes", bytes);
    if bytes <= MAX_DEVICE_BYTES {
        return Ok(());
    }
    refuse(
        &format!("device {spec}: [hdd.mech] zones"),
        format!("estimated {} of memory", gib(bytes)),
        gib(MAX_DEVICE_BYTES),
    )
}

/// Estimated CPU-seconds of one run of `sc` (the super-linear parts: tasks, operations per
/// task with their fsyncs, script steps).
pub fn scenario_run_seconds(sc: &Scenario) -> f64 {
    let syncs = |ops: &[models::vfs::op::Op]| {
        ops.iter()
            .filter(|o| {
                let t = o.to_string();
                let w = t.split_whitespace().next().unwrap_or("");
                matches!(w, "fsync" | "fdatasync" | "sync" | "write-osync")
            })
            .count() as f64
    };
    let per_task = |ops: &[models::vfs::op::Op]| {
        let n = ops.len() as f64;
        SCENARIO_SECONDS_PER_FSYNC_OP_POW * syncs(ops) * n.powf(2.75)
            + SCENARIO_SECONDS_PER_OP_POW * n.powf(1.5)
    };
    let tasks = sc.tasks.len() as f64;
    SCENARIO_SECONDS_AT_1000_TASKS * (tasks / 1000.0).powi(3)
        + SCENARIO_SECONDS_AT_16000_STEPS * (sc.script.len() as f64 / 16000.0).powi(2)
        + per_task(&sc.setup)
        + sc.tasks.iter().map(|(_, ops)| per_task(ops)).sum::<f64>()
}

/// Refuses scenarios (`names`, or every built-in one when empty) one run of which is
/// estimated above `MAX_SCENARIO_RUN_SECONDS`, or whose device (`device`, else the
/// scenario's) is above `MAX_DEVICE_BYTES`. A scenario that does not load is reported by the
/// command itself (exit 2). `runs`: how many runs the command makes of each (for sweeps).
fn scenarios(names: &[String], device_flag: Option<&str>, runs: f64) -> Result<(), String> {
    let loaded: Vec<Scenario> = if names.is_empty() {
        Scenario::builtin()
    } else {
        names
            .iter()
            .filter_map(|n| Scenario::load(n).ok())
            .collect()
    };
    for sc in &loaded {
        let secs = scenario_run_seconds(sc);
        report("scenario_run_seconds", secs);
        if secs > MAX_SCENARIO_RUN_SECONDS {
            let longest = sc.tasks.iter().map(|(_, o)| o.len()).max().unwrap_or(0);
            return refuse(
                &format!(
                    "{}: {} tasks, {} operations in the longest, {} script steps",
                    sc.origin,
                    sc.tasks.len(),
                    longest.max(sc.setup.len()),
                    sc.script.len()
                ),
                format!("one run estimated at {} CPU-seconds", sci(secs)),
                format!("{} CPU-seconds a run", sci(MAX_SCENARIO_RUN_SECONDS)),
            );
        }
        if runs > 1.0 && runs * secs > MAX_SWEEP_RUNS / SWEEP_RUNS_PER_CPU_SECOND {
            return refuse(
                &format!("{}: {} runs", sc.origin, sci(runs)),
                format!(
                    "{} CPU-seconds a run, estimated {} CPU-hours",
                    sci(secs),
                    cpu_hours(runs * secs, 1.0)
                ),
                format!(
                    "{} CPU-hours",
                    cpu_hours(MAX_SWEEP_RUNS, SWEEP_RUNS_PER_CPU_SECOND)
                ),
            );
        }
        device(device_flag.unwrap_or(&sc.device))?;
    }
    Ok(())
}

/// `x` in the refusal's short scientific notation (1.8e19, 1e8).
fn sci(x: f64) -> String {
    if x < 1e4 {
        format!("{x:.0}")
    } else {
        format!("{x:.1e}").replace(".0e", "e")
    }
}

/// CPU-hours of `units` at `per_cpu_second`.
fn cpu_hours(units: f64, per_cpu_second: f64) -> String {
    let h = units / per_cpu_second / 3600.0;
    if h < 10.0 {
        format!("{h:.2}")
    } else {
        sci(h)
    }
}

fn refuse(flags: &str, what: String, limit: String) -> Result<(), String> {
    Err(format!(
        "{flags}: {what}; refusing above {limit} (pass --force to run anyway)"
    ))
}

/// Policies a sweep or run covers: the pre/post pair unless a policy flag names one.
fn policies(p: &PolicyArgs) -> u64 {
    if p.policy.is_none() && p.fix.is_empty() && p.without.is_empty() && p.mutant.is_empty() {
        2
    } else {
        1
    }
}

fn sweep(a: &SweepArgs) -> Result<(), String> {
    let shard = a.shard.unwrap_or(models::sweep::Shard::ALL);
    let len = a.seeds.end - a.seeds.start;
    let owned = len / shard.n + u64::from(shard.k - 1 < len % shard.n);
    let runs = owned as f64 * policies(&a.pol) as f64;
    if runs <= MAX_SWEEP_RUNS {
        // An exhaustive sweep makes up to --max-runs runs of its one seed per policy.
        let runs = if a.strat.strategy == "exhaustive" {
            a.max_runs as f64 * policies(&a.pol) as f64
        } else {
            runs
        };
        return scenarios(std::slice::from_ref(&a.scenario), a.device.as_deref(), runs);
    }
    let mut flags = format!("--seeds {}..{}", a.seeds.start, a.seeds.end);
    if let Some(s) = a.shard {
        flags.push_str(&format!(" --shard {}/{}", s.k, s.n));
    }
    refuse(
        &flags,
        format!(
            "{} runs, estimated {} CPU-hours",
            sci(runs),
            cpu_hours(runs, SWEEP_RUNS_PER_CPU_SECOND)
        ),
        format!("{} runs", sci(MAX_SWEEP_RUNS)),
    )
}

/// Estimated engine events of one run of `spec`.
fn spec_events(spec: &Spec) -> f64 {
    let seconds = (spec.warmup + spec.duration) as f64 / sim::S as f64;
    let clients = f64::from(spec.clients);
    if spec.kind != Kind::Fio {
        return clients * seconds * WORKLOAD_EVENTS_PER_CLIENT_SECOND;
    }
    let timed = clients * seconds * FIO_WORKLOAD_EVENTS_PER_THREAD_SECOND;
    if spec.rw == FioRw::FileCreate {
        timed.min(clients * f64::from(spec.files) * FILECREATE_EVENTS_PER_FILE)
    } else {
        timed
    }
}

/// Estimated peak memory of one run of `spec` on `dev`, in bytes.
fn spec_bytes(spec: &Spec, dev: &DiskConfig) -> f64 {
    let seconds = (spec.warmup + spec.duration) as f64 / sim::S as f64;
    let clients = f64::from(spec.clients);
    let files = if spec.kind == Kind::Fio && spec.rw == FioRw::FileCreate {
        clients * f64::from(spec.files) * FILECREATE_BYTES_PER_FILE
    } else {
        0.0
    };
    let direct = match (spec.kind, spec.rw, spec.direct) {
        (Kind::Fio, _, true) => clients * seconds * FIO_DIRECT_BYTES_PER_THREAD_SECOND,
        (Kind::Fio, FioRw::RandWrite, false) => {
            clients * seconds * FIO_RANGE_BYTES_PER_THREAD_SECOND
        }
        _ => 0.0,
    };
    WORKLOAD_BASE_BYTES
        + clients
            * (WORKLOAD_BYTES_PER_CLIENT + WORKLOAD_BYTES_PER_CLIENT_SQRT_SECOND * seconds.sqrt())
        + files
        + direct
        + zones_bytes(dev)
}

/// Bytes of `dev`'s HDD zones.
fn zones_bytes(dev: &DiskConfig) -> f64 {
    let zones = dev
        .device
        .hdd
        .as_ref()
        .and_then(|h| h.mech)
        .map_or(0, |m| m.zones.0);
    zones as f64 * DEVICE_BYTES_PER_ZONE
}

/// Refuses one workload run whose estimated events or memory exceed the limits.
fn workload(l: &LoadArgs, trace: bool) -> Result<(), String> {
    // A workload that does not load is reported by the command itself (exit 2).
    let Ok((spec, dev)) = l.load() else {
        return Ok(());
    };
    let seconds = (spec.warmup + spec.duration) as f64 / sim::S as f64;
    estimate_events(&spec, seconds, spec_events(&spec), "1 run")?;
    estimate_bytes(&spec, spec_bytes(&spec, &dev), 1)?;
    if trace {
        estimate_trace(&spec, seconds)?;
    }
    Ok(())
}

/// Refuses a `--trace` of one run of `spec` (`seconds` long) estimated above the limit.
fn estimate_trace(spec: &Spec, seconds: f64) -> Result<(), String> {
    let bytes = spec_events(spec) * TRACE_BYTES_PER_EVENT;
    report("trace_bytes", bytes);
    if bytes <= MAX_TRACE_BYTES {
        return Ok(());
    }
    refuse(
        &format!(
            "--trace: --clients {} × --duration+--warmup {}s",
            spec.clients,
            sci(seconds)
        ),
        format!("estimated {} of trace", gib(bytes)),
        gib(MAX_TRACE_BYTES),
    )
}

/// Refuses `events` (over all runs) above the limit; the message names `spec`'s clients
/// and `seconds` of one run, and `runs_text`.
fn estimate_events(spec: &Spec, seconds: f64, events: f64, runs_text: &str) -> Result<(), String> {
    report("events", events);
    if events <= MAX_WORKLOAD_EVENTS {
        return Ok(());
    }
    refuse(
        &format!(
            "--clients {} × --duration+--warmup {}s × {runs_text}",
            spec.clients,
            sci(seconds)
        ),
        format!(
            "{} events, estimated {} CPU-hours",
            sci(events),
            cpu_hours(events, WORKLOAD_EVENTS_PER_CPU_SECOND)
        ),
        format!("{} events", sci(MAX_WORKLOAD_EVENTS)),
    )
}

/// Refuses `per_run` bytes × `parallel` runs above `MAX_WORKLOAD_BYTES`.
fn estimate_bytes(spec: &Spec, per_run: f64, parallel: usize) -> Result<(), String> {
    let bytes = per_run * parallel as f64;
    report("memory_bytes", bytes);
    if bytes <= MAX_WORKLOAD_BYTES {
        return Ok(());
    }
    let mut flags = format!("--clients {}", spec.clients);
    if spec.kind == Kind::Fio && spec.rw == FioRw::FileCreate {
        flags.push_str(&format!(" × {} files each", spec.files));
    }
    if parallel > 1 {
        flags.push_str(&format!(" × {parallel} runs in parallel (--jobs)"));
    }
    refuse(
        &flags,
        format!("estimated {} of memory", gib(bytes)),
        gib(MAX_WORKLOAD_BYTES),
    )
}

fn compare(a: &CompareArgs) -> Result<(), String> {
    let Ok((spec, dev)) = a.load.load() else {
        return Ok(());
    };
    let count = a.seeds.count();
    let seconds = (spec.warmup + spec.duration) as f64 / sim::S as f64;
    // Each --vary point runs its own spec (--vary clients=… changes the clients).
    let points: Vec<(Spec, DiskConfig)> = match &a.vary {
        None => vec![(spec.clone(), dev.clone())],
        Some((name, values)) => values
            .iter()
            .filter_map(|v| {
                let (mut s, mut d) = (spec.clone(), dev.clone());
                s.set(&mut d, name, v).ok().map(|()| (s, d))
            })
            .collect(),
    };
    let events = points.iter().map(|(s, _)| spec_events(s)).sum::<f64>() * 2.0 * count as f64;
    let runs = 2 * count * points.len() as u64;
    estimate_events(
        &spec,
        seconds,
        events,
        &format!(
            "{runs} runs (2 policies × --seeds {count} × {} points)",
            points.len()
        ),
    )?;
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let (largest, per_run) = points
        .iter()
        .map(|(s, d)| (s, spec_bytes(s, d)))
        .fold((&spec, 0.0), |m, x| if x.1 > m.1 { x } else { m });
    estimate_bytes(largest, per_run, jobs.min(runs as usize).max(1))?;
    // `--trace` alone needs `--out`: that is a flag error (exit 2), reported by the command.
    if matches!(a.trace, Some(Some(_))) || (a.trace.is_some() && a.out.is_some()) {
        // The trace is of one run: the current policy at the first point.
        let first = points.first().map_or(&spec, |(s, _)| s);
        estimate_trace(first, seconds)?;
    }
    Ok(())
}

fn bench(a: &BenchArgs) -> Result<(), String> {
    let n = a.requests as f64;
    if n <= MAX_BENCH_REQUESTS {
        return Ok(());
    }
    refuse(
        &format!("--requests {}", a.requests),
        format!(
            "{} events, estimated {} CPU-hours",
            sci(n * if a.lock { 6.0 } else { 4.0 }),
            cpu_hours(n, BENCH_REQUESTS_PER_CPU_SECOND)
        ),
        format!("{} requests", sci(MAX_BENCH_REQUESTS)),
    )
}

fn fio(a: &FioArgs) -> Result<(), String> {
    let inflight = f64::from(a.iodepth) * f64::from(a.numjobs);
    let secs = a.runtime as f64 / 1e9;
    let requests =
        secs * (inflight * FIO_REQUESTS_PER_INFLIGHT_SECOND).min(FIO_REQUESTS_PER_SECOND_MAX);
    if requests > MAX_FIO_REQUESTS {
        return refuse(
            &format!("--runtime {}s", sci(secs)),
            format!(
                "about {} requests, estimated {} CPU-hours",
                sci(requests),
                cpu_hours(requests, FIO_REQUESTS_PER_CPU_SECOND)
            ),
            format!("{} requests", sci(MAX_FIO_REQUESTS)),
        );
    }
    let bytes = inflight * FIO_BYTES_PER_REQUEST;
    report(
        "memory_bytes",
        FIO_BASE_BYTES + bytes + device_bytes(&a.device),
    );
    if bytes > MAX_FIO_BYTES {
        return refuse(
            &format!("--iodepth {} × --numjobs {}", a.iodepth, a.numjobs),
            format!(
                "{} requests in flight, estimated {} of memory",
                sci(inflight),
                gib(bytes)
            ),
            gib(MAX_FIO_BYTES),
        );
    }
    device(&a.device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_short_and_each_help_states_its_limit() {
        assert_eq!(sci(1.8e19), "1.8e19");
        assert_eq!(sci(1e8), "1e8");
        assert_eq!(sci(200.0), "200");
        use clap::CommandFactory;
        let cli = crate::Cli::command();
        let help = |name: &str| {
            cli.find_subcommand(name)
                .and_then(|c| c.get_after_help())
                .map(|h| h.to_string())
                .unwrap_or_default()
        };
        let gib = format!("{:.1} GiB", MAX_FIO_BYTES / (1u64 << 30) as f64);
        for (cmd, needle) in [
            ("sweep", format!("{} runs", sci(MAX_SWEEP_RUNS))),
            (
                "workload",
                format!("{} engine events", sci(MAX_WORKLOAD_EVENTS)),
            ),
            (
                "compare",
                format!("{} engine events", sci(MAX_WORKLOAD_EVENTS)),
            ),
            ("bench", format!("{} requests", sci(MAX_BENCH_REQUESTS))),
            ("fio", gib.clone()),
            ("workload", format!("{gib} of memory")),
            ("compare", format!("{gib} of memory")),
            (
                "compare",
                format!("--trace above {}", super::gib(MAX_TRACE_BYTES)),
            ),
            (
                "fio",
                format!("{gib} ({} bytes each)", DEVICE_BYTES_PER_ZONE),
            ),
            (
                "scrub",
                format!("{gib}\n({} bytes each)", DEVICE_BYTES_PER_ZONE),
            ),
        ] {
            let h = help(cmd);
            assert!(
                h.contains(&needle) && h.contains("--force"),
                "{cmd}: {needle}: {h}"
            );
        }
        let per_client = format!(
            "{},000 per client-second",
            WORKLOAD_EVENTS_PER_CLIENT_SECOND / 1e3
        );
        assert!(help("workload").contains(&per_client), "{per_client}");
        let fio_rate = format!(
            "{},000 per thread-second",
            FIO_WORKLOAD_EVENTS_PER_THREAD_SECOND / 1e3
        );
        assert!(help("workload").contains(&fio_rate), "{fio_rate}");
        // The scenario commands state the per-run limit and the device limit.
        let per_run = format!("above {}\nCPU-seconds", sci(MAX_SCENARIO_RUN_SECONDS));
        for cmd in ["run", "check", "replay", "shrink", "crash", "sweep"] {
            let h = help(cmd);
            assert!(
                h.contains(&per_run) && h.contains(&format!("more than {gib}")),
                "{cmd}: {h}"
            );
        }
        let sweep_hours = format!(
            "above {} CPU-hours",
            cpu_hours(MAX_SWEEP_RUNS, SWEEP_RUNS_PER_CPU_SECOND)
        );
        assert!(help("sweep").contains(&sweep_hours), "{sweep_hours}");
    }
}
