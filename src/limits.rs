//! Resource limits (issue 14): before a command starts, estimate what it will cost and refuse
//! (exit 3, one line naming the flags and the estimate) above a limit, unless `--force`.
//!
//! The estimates are deliberately simple (a count times a per-unit constant measured on this
//! project's 2-core AMD EPYC VM); they exist to stop a typo such as `--seeds
//! 0..18446744073709551615` or `--duration 1000000s` from occupying a machine for years or
//! exhausting its memory, not to predict run times. Nothing here changes what a run computes:
//! a command that passes the check runs exactly as before.

use crate::{BenchArgs, Command, CompareArgs, FioArgs, LoadArgs, PolicyArgs, SweepArgs};

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

/// Engine events per client (or thread) per virtual second of a workload: the largest of
/// these, measured on this machine as the `events` of `fsyncsim workload NAME … --json`
/// (task resumptions; deterministic) divided by clients × (duration + warmup):
/// fs-mark 1 thread 5 s: 355,101 / 5 = 71,020; dbench 1 client 5 s + 1 s: 51,981;
/// dbench 8 clients: 41,062; fs-mark 4 threads: 36,613; dbench 64 clients: 19,868;
/// sysbench-fileio 4 threads: 8,958; dbench --sync-open 32 clients on sas-ssd: 7,896.
/// Fewer clients contend less for the simulated CPUs and run more operations each, so a
/// large run's estimate is pessimistic (3.6× for dbench at 64 clients).
pub const WORKLOAD_EVENTS_PER_CLIENT_SECOND: f64 = 72_000.0;

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
        Command::Workload(a) if !a.load.force => workload(&a.load),
        Command::Compare(a) if !a.load.force => compare(a),
        Command::Bench(a) if !a.force => bench(a),
        Command::Fio(a) if !a.force => fio(a),
        _ => Ok(()),
    }
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
        return Ok(());
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

/// Refuses one workload run whose estimated events exceed the limit.
fn workload(l: &LoadArgs) -> Result<(), String> {
    // A workload that does not load is reported by the command itself (exit 2).
    let Ok((spec, _)) = l.load() else {
        return Ok(());
    };
    let seconds = (spec.warmup + spec.duration) as f64 / sim::S as f64;
    estimate_events(&spec, seconds, f64::from(spec.clients) * seconds, "1 run")
}

/// Refuses `client_seconds` (over all runs) whose estimated events exceed the limit; the
/// message names `spec`'s clients and `seconds` of one run, and `runs_text`.
fn estimate_events(
    spec: &models::workload::spec::Spec,
    seconds: f64,
    client_seconds: f64,
    runs_text: &str,
) -> Result<(), String> {
    let events = client_seconds * WORKLOAD_EVENTS_PER_CLIENT_SECOND;
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

fn compare(a: &CompareArgs) -> Result<(), String> {
    let Ok((spec, dev)) = a.load.load() else {
        return Ok(());
    };
    let count = a.seeds.count();
    let seconds = (spec.warmup + spec.duration) as f64 / sim::S as f64;
    // Each --vary point runs its own spec (--vary clients=… changes the clients).
    let specs: Vec<models::workload::spec::Spec> = match &a.vary {
        None => vec![spec.clone()],
        Some((name, values)) => values
            .iter()
            .filter_map(|v| {
                let (mut s, mut d) = (spec.clone(), dev.clone());
                s.set(&mut d, name, v).ok().map(|()| s)
            })
            .collect(),
    };
    let client_seconds: f64 = specs
        .iter()
        .map(|s| f64::from(s.clients) * (s.warmup + s.duration) as f64 / sim::S as f64)
        .sum::<f64>()
        * 2.0
        * count as f64;
    let runs = 2 * count * specs.len() as u64;
    estimate_events(
        &spec,
        seconds,
        client_seconds,
        &format!(
            "{runs} runs (2 policies × --seeds {count} × {} points)",
            specs.len()
        ),
    )
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
    if bytes <= MAX_FIO_BYTES {
        return Ok(());
    }
    let gib = |b: f64| format!("{:.1} GiB", b / (1u64 << 30) as f64);
    refuse(
        &format!("--iodepth {} × --numjobs {}", a.iodepth, a.numjobs),
        format!(
            "{} requests in flight, estimated {} of memory",
            sci(inflight),
            gib(bytes)
        ),
        gib(MAX_FIO_BYTES),
    )
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
            ("fio", gib),
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
    }
}
