//! The `fsyncsim` command line: parses arguments and wires models to reports. No logic here.
//! Every write to stdout and stderr goes through `out` (src/out.rs), which also holds the
//! exit codes.

#[macro_use]
mod args;
mod cmd;
mod flags;
mod limits;
mod out;

use args::*;
use clap::{Args, CommandFactory, Parser, Subcommand};
use cmd::{crash::*, load::*, race::*, scrub::*, sweep::*};
use models::block::DiskConfig;
use models::btrfs::{Fix, Mutant};
use models::device::presets;
use models::kernel::Policy;
use models::scenario::{self, Interleaving, RunResult, Scenario};
use models::workload::{bench, fio};
use out::{err, out, outln};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc: the simulator allocates many small, short-lived objects per run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A user-facing failure: one line, exit code 2.
struct Failure(String);

/// clap's suggestion for a mistyped flag or subcommand, as a suffix of the one error line.
fn did_you_mean(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let kinds = [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand];
    let found = kinds.iter().find_map(|k| match e.get(*k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    });
    found.map_or_else(String::new, |s| format!(" (did you mean '{s}'?)"))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                out!("{e}");
                return ExitCode::from(out::code::OK);
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                out::error(format_args!("{e}"), false);
                return ExitCode::from(out::code::BAD_INPUT);
            }
            // One line: the first, plus the next when the first only introduces it
            // ("the following required arguments were not provided:").
            let rendered = e.render().to_string();
            let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("error");
            match lines.next() {
                Some(next) if first.ends_with(':') => {
                    out::error(format_args!("{first} {next}"), true)
                }
                _ => out::error(format_args!("{first}{}", did_you_mean(&e)), true),
            }
            return ExitCode::from(out::code::BAD_INPUT);
        }
    };
    if let Err(msg) = limits::check(&cli.command) {
        out::error(
            format_args!("error: {}", models::units::one_line(&msg)),
            true,
        );
        return ExitCode::from(out::code::LIMIT);
    }
    match run(cli) {
        Ok(Verdict::Clean) => ExitCode::from(out::code::OK),
        Ok(Verdict::Failed) => ExitCode::from(out::code::FAILED),
        Err(Failure(msg)) => {
            out::error(
                format_args!("error: {}", models::units::one_line(&msg)),
                true,
            );
            ExitCode::from(out::code::BAD_INPUT)
        }
    }
}

/// How a command that ran to its end came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Exit 0.
    Clean,
    /// Exit 1: a check failed or an invariant fired.
    Failed,
}

/// Violations that are not findings but bad input: the scenario could not play (a stuck
/// script; a setup or task operation that failed, e.g. on a missing path).
/// A progress bar with `template` when `tty` (the stream it reports beside is a terminal),
/// else hidden; `len` is evaluated on a terminal only (None: a spinner without a length).
fn terminal_bar(
    tty: bool,
    len: impl FnOnce() -> Option<u64>,
    template: &str,
) -> indicatif::ProgressBar {
    let bar = match (tty, tty.then(len).flatten()) {
        (true, Some(n)) => indicatif::ProgressBar::new(n),
        (true, None) => indicatif::ProgressBar::new_spinner(),
        (false, _) => indicatif::ProgressBar::hidden(),
    };
    let style = indicatif::ProgressStyle::with_template(template)
        .expect("valid template")
        // Whole units per second ({per_sec} prints four decimals).
        .with_key(
            "rate",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", s.per_sec());
            },
        )
        // Position and length in simulated µs, shown in seconds.
        .with_key(
            "sim",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let sec = |us: u64| us as f64 / 1e6;
                let len = s.len().unwrap_or(0);
                let _ = write!(w, "{:.1}/{:.1}", sec(s.pos()), sec(len));
            },
        );
    bar.set_style(style);
    bar
}

/// A progress bar over the simulated time of batches of workload runs (warmup included), on
/// a terminal (stderr) only, and the `OnTick` that moves it: each batch planned lengthens it.
fn sim_time_bar(what: &str) -> (indicatif::ProgressBar, models::workload::compare::OnTick) {
    use models::workload::compare::Tick;
    let bar = terminal_bar(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        || Some(0),
        &format!("{{elapsed_precise}} [{{bar:30}}] {{sim}} simulated s of {what} ETA {{eta}}"),
    );
    let b = bar.clone();
    let tick = std::sync::Arc::new(move |t: Tick| match t {
        Tick::Planned(ns) => b.inc_length(ns / 1000),
        Tick::Done(ns) => b.inc(ns / 1000),
    });
    (bar, tick)
}

fn is_bad_input(invariant: &str) -> bool {
    models::scenario::UNPLAYABLE.contains(&invariant)
}

/// A run that could not play is bad input (exit 2), not a result.
fn playable(r: &RunResult) -> Result<(), Failure> {
    match r.unplayable() {
        Some(v) => Err(Failure(format!("{} (under {})", v.message, r.policy.name))),
        None => Ok(()),
    }
}

/// Failed when an invariant (S1, S2, S3, the time limit) fired in any of `runs`.
fn verdict<'a>(runs: impl IntoIterator<Item = &'a RunResult>) -> Verdict {
    let fired = runs
        .into_iter()
        .flat_map(|r| &r.violations)
        .any(|v| !is_bad_input(&v.invariant));
    if fired {
        Verdict::Failed
    } else {
        Verdict::Clean
    }
}

/// Refuses an output file flag whose path exists and is not a regular file, before any work.
fn out_file(flag: &str, path: &std::path::Path) -> Result<(), Failure> {
    reports::output::check_file(path)
        .map_err(|e| Failure(format!("{flag} {}: {e}", path.display())))
}

/// Creates an output directory flag's path, refusing one that exists and is not a directory.
fn out_dir(flag: &str, dir: &std::path::Path) -> Result<(), Failure> {
    reports::output::prepare_dir(dir).map_err(|e| Failure(format!("{flag} {}: {e}", dir.display())))
}

/// --hdr-out DIR: stages each HdrHistogram log for DIR (moved into place by the staging's
/// commit, with the command's other outputs).
pub(crate) fn stage_hdr_logs(
    dir: &std::path::Path,
    logs: &[reports::hdrlog::Log],
    staging: &mut reports::output::Staging,
) -> Result<(), Failure> {
    for log in logs {
        let dest = dir.join(&log.file);
        let fail = |e: String| Failure(format!("--hdr-out {}: {e}", dest.display()));
        let bytes = reports::hdrlog::encode(log).map_err(fail)?;
        let staged = staging.path_for(&dest).map_err(|e| fail(e.to_string()))?;
        reports::output::write_atomic(&staged, &bytes).map_err(|e| fail(e.to_string()))?;
    }
    Ok(())
}

fn load_scenarios(specs: &[String]) -> Result<Vec<Scenario>, Failure> {
    if specs.is_empty() {
        return Ok(Scenario::builtin());
    }
    specs
        .iter()
        .map(|s| Scenario::load(s).map_err(|e| Failure(e.to_string())))
        .collect()
}

fn device_for(sc: &Scenario, flag: &Option<String>) -> Result<DiskConfig, Failure> {
    let spec = flag.as_deref().unwrap_or(&sc.device);
    DiskConfig::resolve(spec).map_err(|e| Failure(e.to_string()))
}

/// The policies to run: pre/post by default, or the one the flags describe.
fn policies_from(sc: &Scenario, a: &PolicyArgs, super_committed: bool) -> Vec<Policy> {
    let sc_flag = |p: Policy| {
        if super_committed {
            p.with_super_committed()
        } else {
            p
        }
    };
    if a.policy.is_none() && a.fix.is_empty() && a.without.is_empty() && a.mutant.is_empty() {
        return vec![sc_flag(sc.pre_policy()), sc_flag(sc.post_policy())];
    }
    // linux-5.11 (the post-fix policy) is the base when only fixes or mutants are named.
    vec![sc_flag(policy_of(a))]
}

fn run(cli: Cli) -> Result<Verdict, Failure> {
    match cli.command {
        Command::List {
            mutants,
            ops,
            points,
            metrics,
            policies,
            workloads,
            costs,
        } => list(mutants, ops, points, metrics, policies, workloads, costs),
        Command::Run(a) => return run_races(a),
        Command::Sweep(a) => return sweep(a),
        Command::Merge { files, json } => merge(&files, json)?,
        Command::Validate(a) => return validate(a),
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            let mut cmd = cmd::completions::with_names(Cli::command());
            clap_complete::generate(shell, &mut cmd, "fsyncsim", &mut buf);
            out!("{}", String::from_utf8_lossy(&buf));
        }
        Command::Man => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut buf)
                .map_err(|e| Failure(format!("man: {e}")))?;
            out!("{}", String::from_utf8_lossy(&buf));
        }
        Command::Replay(a) => return replay(a),
        Command::Crash(a) => return crash(a),
        Command::Shrink(a) => shrink(a)?,
        Command::Workload(a) => return workload(a),
        Command::Compare(a) => return compare(a),
        Command::Check {
            scenarios,
            allow_empty,
            json,
            ..
        } => return check(&scenarios, allow_empty, json),
        Command::Bench(a) => bench_cmd(a)?,
        Command::Fio(a) => fio_cmd(a)?,
        Command::Scrub(a) => scrub(a)?,
        Command::Devices => {
            let cfgs: Vec<models::device::DeviceConfig> = presets::NAMES
                .iter()
                .filter_map(|n| presets::by_name(n))
                .collect();
            out!("{}", reports::devices::text(&cfgs));
        }
    }
    Ok(Verdict::Clean)
}

/// `list`: the vocabularies asked for, else the mutants, else the built-in scenarios.
fn list(
    mutants: bool,
    ops: bool,
    points: bool,
    metrics: bool,
    policies: bool,
    workloads: bool,
    costs: bool,
) {
    if costs {
        out!("{}", reports::vocab::costs());
    }
    if workloads {
        out!(
            "{}",
            reports::vocab::workloads(&models::workload::spec::Spec::builtin())
        );
    }
    if ops {
        out!("{}", reports::vocab::ops());
    }
    if points {
        out!("{}", reports::vocab::points());
    }
    if metrics {
        out!("{}", reports::vocab::metrics());
    }
    if policies {
        out!("{}", reports::vocab::policies());
    }
    if ops || points || metrics || policies || workloads || costs {
    } else if mutants {
        for m in Mutant::ALL {
            outln!("{:<30} {}", m.name(), m.description());
        }
    } else {
        for sc in Scenario::builtin() {
            outln!("{:<42} {:<3} {}", sc.name, sc.race, sc.title);
        }
    }
}

/// `bench`: the engine against its hand-written loop.
fn bench_cmd(a: BenchArgs) -> Result<(), Failure> {
    let p = bench::BenchParams {
        lock: a.lock,
        requests: a.requests,
        seed: a.seed,
        ..Default::default()
    };
    // The hand-written loop and the engine in turn, twice; each one's faster run counts
    // (the first runs also pay for warming the allocator and caches).
    let mut vs: Option<reports::bench::Versus> = None;
    let mut best: Option<(bench::BenchResult, f64)> = None;
    for _ in 0..2 {
        if let Some((result, seconds)) = bench::run_loop_timed(&p) {
            if vs.as_ref().is_none_or(|v| seconds < v.seconds) {
                vs = Some(reports::bench::Versus { result, seconds });
            }
        }
        let (r, secs) = bench::run_timed(&p).map_err(|e| Failure(e.to_string()))?;
        if best.as_ref().is_none_or(|b| secs < b.1) {
            best = Some((r, secs));
        }
    }
    let (r, secs) = best.expect("two runs");
    let w = reports::bench::Wall { seconds: secs };
    if a.json {
        outln!("{:#}", reports::bench::json(&p, &r, w, vs.as_ref()));
    } else {
        out!("{}", reports::bench::text(&p, &r, w, vs.as_ref()));
    }
    Ok(())
}

/// `fio`: a fio-like load on one device.
fn fio_cmd(a: FioArgs) -> Result<(), Failure> {
    // Job j addresses bytes j × size .. (j + 1) × size of the device.
    if u64::from(a.numjobs).checked_mul(a.size).is_none() {
        return Err(Failure(format!(
            "--size {} × --numjobs {}: the jobs' regions end beyond 2^64 bytes; expected a smaller --size",
            a.size, a.numjobs
        )));
    }
    let cfg = DiskConfig::resolve(&a.device).map_err(|e| Failure(e.to_string()))?;
    if let Some(d) = &a.hdr_out {
        out_dir("--hdr-out", d)?;
    }
    let p = fio::FioParams {
        rw: a.rw,
        bs: a.bs,
        iodepth: a.iodepth,
        numjobs: a.numjobs,
        fsync: a.fsync,
        runtime: a.runtime,
        size: a.size,
        rwmixread: a.rwmixread,
        seed: a.seed,
    };
    let r = fio::run(&p, cfg).map_err(|e| Failure(e.to_string()))?;
    if let Some(d) = &a.hdr_out {
        let mut staging = reports::output::Staging::default();
        stage_hdr_logs(d, &reports::hdrlog::fio_logs(&r), &mut staging)?;
        staging
            .commit()
            .map_err(|e| Failure(format!("--hdr-out {}: {e}", d.display())))?;
    }
    if a.json || a.json_plus {
        outln!("{}", reports::fio::json_text(&r, a.json_plus));
    } else {
        out!("{}", reports::fio::text(&r));
    }
    Ok(())
}
