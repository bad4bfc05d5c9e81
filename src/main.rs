//! The `fsyncsim` command line: parses arguments and wires models to reports. No logic here.
//! Every write to stdout and stderr goes through `out` (src/out.rs), which also holds the
//! exit codes.

mod flags;
mod limits;
mod out;

use clap::{Args, CommandFactory, Parser, Subcommand};
use models::btrfs::{Fix, Mutant};
use models::device::{presets, DeviceConfig};
use models::kernel::Policy;
use models::scenario::{self, Interleaving, RunResult, Scenario};
use models::workload::{bench, fio};
use out::{err, out, outln};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc: the simulator allocates many small, short-lived objects per run.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The exit codes (`out::code`), as the top-level help and every race subcommand's help
/// state them; README.md, "Exit codes", says the same.
macro_rules! exit_codes {
    () => {
        "Exit codes (every subcommand):\n  \
         0  success (also when a reader closes the pipe early: fsyncsim run | head)\n  \
         1  an invariant fired (run, replay, sweep: S1, S2, S3 or the time limit in any run or\n     \
         seed), a check failed (check), or stdout could not be written\n  \
         2  bad input: flags, files, an input file that is not a regular file or is larger than\n     \
         16 MiB, an output path that is not a regular file (a directory for --out DIR) or is\n     \
         under /dev, /proc or /sys (a symlink is followed to its target and that replaced),\n     \
         a scenario that cannot play (a stuck script, a failing setup; a sweep in which\n     \
         every seed fails to play)\n  \
         3  a resource limit refused the request (sweep, workload, compare, bench, fio: one line\n     \
         naming the flags and the estimate; --force runs anyway)"
    };
}

#[derive(Parser)]
#[command(
    name = "fsyncsim",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("FSYNCSIM_COMMIT"), ")"),
    about = "Deterministic discrete-event simulator of filesystem commit/fsync races",
    long_about = "fsyncsim interleaves simulated tasks (committers, fsyncers, writers) against a \
                  modeled block device in virtual time. Same inputs + seed => bit-identical run.",
    after_help = concat!(
        "Examples:\n  fsyncsim run                 # replay all seven races, before and after each fix\n  fsyncsim check\n  fsyncsim run r6-log-start-blocked-on-tree-log-mutex --json\n  fsyncsim bench\n  fsyncsim fio --device nvme --rw randwrite --bs 4k --iodepth 32 --fsync 8\n\n",
        exit_codes!()
    )
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure the engine's speed on a fixed closed-loop model (64 clients, 32 slots).
    #[command(
        after_help = "Runs the model twice on the engine and twice as a single-purpose hand-written loop (same\nevent order, same results), in turn, and prints the faster run of each and their ratio.\nResource limit: refuses (exit 3) above 1e10 requests; --force runs anyway.\n\nExamples:\n  fsyncsim bench\n  fsyncsim bench --lock --json"
    )]
    Bench(BenchArgs),
    /// Scrub a populated btrfs on one simulated device (seed 002: with and without the
    /// readahead framework).
    #[command(
        after_help = "Examples:\n  fsyncsim scrub\n  fsyncsim scrub --compare\n  fsyncsim scrub --policy path-reada --scale 0.25 --json"
    )]
    Scrub(ScrubArgs),
    /// Run a fio-like synthetic load against a simulated device.
    #[command(
        after_help = "Resource limits: refuses (exit 3) when --iodepth x --numjobs requests in flight would take\nmore than 4.0 GiB (1.5 KiB each), or when --runtime would complete more than 1e10 requests\n(24,400 per request in flight and virtual second, at most 1e6 per second); --force runs anyway.\n\nExamples:\n  fsyncsim fio --device nvme --rw randread --bs 4k --iodepth 32\n  fsyncsim fio --device hdd --rw randwrite --fsync 1 --runtime 10s --json\n  fsyncsim fio --device my-ssd.toml --rw randrw --numjobs 4"
    )]
    Fio(FioArgs),
    /// List the device presets and their main parameters.
    Devices,
    /// List the race scenarios (with --mutants: the deliberately broken variants).
    #[command(
        after_help = "Examples:\n  fsyncsim list\n  fsyncsim list --mutants\n  fsyncsim list --workloads"
    )]
    List {
        /// List the mutants instead.
        #[arg(long)]
        mutants: bool,
        /// List the operations a scenario file can name.
        #[arg(long)]
        ops: bool,
        /// List the named points each operation reaches.
        #[arg(long)]
        points: bool,
        /// List the metrics `[expect.*]` can name.
        #[arg(long)]
        metrics: bool,
        /// List policy presets, fixes, mutants and switches.
        #[arg(long)]
        policies: bool,
        /// List the built-in workloads (for `workload` and `compare`).
        #[arg(long)]
        workloads: bool,
    },
    /// Replay race scenarios step by step: before and after the fix, side by side.
    #[command(
        after_help = concat!(
            "Without NAME: every built-in scenario. Without --policy/--fix/--without/--mutant:\nthe pre-fix run (linux-5.11 without the race's fix) and the post-fix run (linux-5.11).\nExits 1 when an invariant fires in any run (a mutant makes one fire: that is its job).\n\nExamples:\n  fsyncsim run\n  fsyncsim run r1-link-rename-logged-trans\n  fsyncsim run r6-log-start-blocked-on-tree-log-mutex --policy linux-5.10 --json\n  fsyncsim run my-race.toml --without R4 --trace trace.txt\n  fsyncsim run r6-log-start-blocked-on-tree-log-mutex --mutant sync-log-no-super-wait\n\n",
            exit_codes!()
        )
    )]
    Run(RunArgs),
    /// Run a scenario without its script under many seeds; count the seeds that hit each
    /// waste metric or invariant.
    #[command(
        after_help = concat!(
            "Without --policy/--fix/--without/--mutant: sweeps the pre-fix and the post-fix policy;\n--fix/--without/--mutant alone apply to linux-5.11. --seeds defaults to 0..1000.\nResults are identical for any --jobs. Exits 1 when any seed hits an invariant.\nResource limit: refuses (exit 3) above 1e8 runs (seeds of this shard x policies);\n--force runs anyway. --resume verifies state.json's checksums (exit 2 if edited).\n\nExamples:\n  fsyncsim sweep r1-link-rename-logged-trans --seeds 0..10000\n  fsyncsim sweep r6-log-start-blocked-on-tree-log-mutex --seeds 0..1000 --mutant sync-log-no-super-wait --json\n\n",
            exit_codes!()
        )
    )]
    Sweep(SweepArgs),
    /// Re-run one explored seed exactly (as a sweep ran it) and print its timeline.
    #[command(
        after_help = concat!(
            "Without --policy: linux-5.11, with --fix/--without/--mutant applied to it.\nExits 1 when an invariant fires in the replayed run.\n\nExamples:\n  fsyncsim replay r1-link-rename-logged-trans --seed 2 --without R1\n  fsyncsim replay r3-ancestor-created-previous-trans --seed 112 --strategy pct --trace t.txt\n\n",
            exit_codes!()
        )
    )]
    Replay(ReplayArgs),
    /// Shrink an explored seed that hits a target to a minimal scripted scenario file.
    #[command(
        after_help = concat!(
            "Without --policy/--fix/--without/--mutant: the pre-fix policy (linux-5.11 without the\nscenario's fix). The result is a scenario TOML that `fsyncsim run FILE` reproduces.\nExits 0 once the scenario is written, also for an invariant target: reproducing the\ninvariant is what it was asked for.\n\nExamples:\n  fsyncsim shrink r1-link-rename-logged-trans --seed 0 --target unnecessary_inode_logs --out r1-min.toml\n  fsyncsim shrink r6-log-start-blocked-on-tree-log-mutex --seed 3 --mutant sync-log-no-super-wait --target S1\n\n",
            exit_codes!()
        )
    )]
    Shrink(ShrinkArgs),
    /// Run a filesystem workload (dbench, sysbench-fileio, fs-mark) under one policy.
    #[command(
        after_help = "Without --policy: linux-5.11, with --fix/--without/--mutant applied to it.\nResource limit: refuses (exit 3) above an estimated 1e11 engine events (clients x\n(duration + warmup) x 72,000 per client-second); --force runs anyway.\n\nExamples:\n  fsyncsim workload dbench --clients 8 --duration 30s\n  fsyncsim workload dbench --policy linux-5.10 --sync-open --device sas-ssd --clients 32\n  fsyncsim workload sysbench-fileio --without R7 --duration 60s --json"
    )]
    Workload(WorkloadArgs),
    /// Compare two kernel policies on a workload: dbench/fsperf tables, attribution, plots.
    #[command(
        after_help = "Policies: a preset (linux-5.10, linux-5.11) with optional :-R7 / :+R1 / :+MUTANT modifiers;\nwithout --baseline/--current: the workload file's `baseline`/`current`\n(seed 003's and 004's workloads name their seed's kernels), else linux-5.10 against linux-5.11.\nBoth sides run the same seeds (common random numbers), in parallel.\nResource limit: refuses (exit 3) above an estimated 1e11 engine events over all runs (2 x\nseeds x --vary points x clients x (duration + warmup) x 72,000 per client-second);\n--force runs anyway.\n\nExamples:\n  fsyncsim compare dbench --clients 64 --duration 300s --out results\n  fsyncsim compare dbench --clients 8 --duration 30s --seeds 5\n  fsyncsim compare dbench --clients 8 --duration 30s --seeds 10..20 --trace dbench-trace.json\n  fsyncsim compare sysbench-fileio --baseline linux-5.11:-R7 --current linux-5.11 --duration 120s\n  fsyncsim compare dbench --sync-open --device sas-ssd --clients 32 --vary queue_depth=32,254,1024\n  fsyncsim compare kbuild --vary hit_ratio=0,0.5,0.95"
    )]
    Compare(CompareArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  fsyncsim completions bash > /etc/bash_completion.d/fsyncsim\n  fsyncsim completions zsh > ~/.zfunc/_fsyncsim"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout.
    #[command(after_help = "Examples:\n  fsyncsim man > fsyncsim.1 && man ./fsyncsim.1")]
    Man,
    /// Run every seed experiment the model covers and print seed figures beside the model's.
    #[command(
        after_help = "Rows: seed 000's dbench (64 clients, linux-5.10 -> linux-5.11) and seed 001's sysbench\n(linux-5.11 without R7 -> linux-5.11): each figure's change in the seed and in the model,\nwhether they point the same way, and the baselines' absolute levels; then R7's regression\nagainst the ratio of a sysbench round to the commit interval.\n\nExamples:\n  fsyncsim validate --quick\n  fsyncsim validate --json > validate.json"
    )]
    Validate(ValidateArgs),
    /// Merge the --json outputs of a sharded sweep into what one unsharded sweep prints.
    #[command(
        after_help = "Examples:\n  fsyncsim sweep r1-link-rename-logged-trans --seeds 0..100000 --shard 1/2 --json > s1.json\n  fsyncsim sweep r1-link-rename-logged-trans --seeds 0..100000 --shard 2/2 --json > s2.json\n  fsyncsim merge s1.json s2.json"
    )]
    Merge {
        /// The shards' JSON files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run scenarios and compare with their expectations; exit 1 on any mismatch.
    #[command(
        after_help = concat!(
            "Each file runs under its two policies: pre/post (linux-5.11 without and with its fix) or\nthe two its [policies] declares.\n\nExamples:\n  fsyncsim check\n  fsyncsim check r4-stale-last-unlink-trans scenarios/my-race.toml\n\n",
            exit_codes!()
        )
    )]
    Check {
        /// Scenario names or paths (default: all built-in scenarios).
        scenarios: Vec<String>,
        /// Accept a file with no [expect.*] at all (otherwise it fails: nothing was checked).
        #[arg(long)]
        allow_empty: bool,
        /// Print JSON: [{scenario, race, origin, pass, problems}].
        #[arg(long)]
        json: bool,
    },
}

/// The flags that choose a kernel policy.
#[derive(Args, Clone)]
struct PolicyArgs {
    /// Base policy: linux-5.10 or linux-5.11.
    #[arg(long, value_parser = parse_policy)]
    policy: Option<Policy>,
    /// Fixes to add to the policy (R1..R7, comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_fix)]
    fix: Vec<Fix>,
    /// Fixes to remove from the policy (R1..R7, comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_fix)]
    without: Vec<Fix>,
    /// Mutants to enable (see `fsyncsim list --mutants`).
    #[arg(long, value_delimiter = ',', value_parser = parse_mutant)]
    mutant: Vec<Mutant>,
}

/// The flags that choose an exploration strategy.
#[derive(Args, Clone)]
struct StrategyArgs {
    /// Exploration strategy: random, pct or urw.
    #[arg(long, default_value = "random", value_parser = ["random", "pct", "urw"])]
    strategy: String,
    /// PCT depth (priority change points + 1).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    depth: u32,
    /// Keep the first N steps of the script, then explore.
    #[arg(long, default_value_t = 0)]
    prefix: usize,
}

impl StrategyArgs {
    /// The interleaving these flags describe.
    fn interleaving(&self) -> Interleaving {
        let explore = match self.strategy.as_str() {
            "pct" => Interleaving::Pct(self.depth),
            "urw" => Interleaving::Urw,
            _ => Interleaving::Random,
        };
        if self.prefix > 0 {
            Interleaving::Prefix(self.prefix, Box::new(explore))
        } else {
            explore
        }
    }

    /// The `run` flags that select this strategy.
    fn flags(&self) -> String {
        let mut f = match self.strategy.as_str() {
            "pct" => format!("--strategy pct --depth {}", self.depth),
            s => format!("--strategy {s}"),
        };
        if self.prefix > 0 {
            f.push_str(&format!(" --prefix {}", self.prefix));
        }
        f
    }
}

#[derive(Args)]
struct RunArgs {
    /// Scenario name (see `fsyncsim list`) or path to a scenario TOML file.
    scenario: Option<String>,
    #[command(flatten)]
    pol: PolicyArgs,
    /// Drop the script: a seeded strategy chooses at every named point and tie.
    #[arg(long)]
    explore: bool,
    #[command(flatten)]
    strat: StrategyArgs,
    /// Commit waiters return at SUPER_COMMITTED (Linux 5.12+) instead of COMPLETED.
    #[arg(long)]
    super_committed: bool,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    device: Option<String>,
    /// Run seed (default: the scenario's).
    #[arg(long)]
    seed: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Write the event trace of each run to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
}

#[derive(Args)]
struct SweepArgs {
    /// Scenario name or path.
    scenario: String,
    /// Seed range A..B (B exclusive).
    #[arg(long, default_value = "0..1000", value_parser = models::sweep::parse_seeds)]
    seeds: std::ops::Range<u64>,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    #[command(flatten)]
    pol: PolicyArgs,
    #[command(flatten)]
    strat: StrategyArgs,
    /// Write checkpoints (state.json) and the result (sweep.json) into this directory;
    /// Ctrl-C / SIGTERM stops cleanly and keeps every finished chunk of seeds.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Continue the interrupted sweep whose --out directory this is.
    #[arg(long, conflicts_with = "out")]
    resume: Option<PathBuf>,
    /// Testing aid: stop as if interrupted after this many chunks of 4,096 seeds.
    #[arg(long, hide = true)]
    stop_after_chunks: Option<u64>,
    /// Run only shard K of N (1-based) of the seed range; merge the shards' --json outputs
    /// with `fsyncsim merge`.
    #[arg(long, value_parser = models::sweep::Shard::parse)]
    shard: Option<models::sweep::Shard>,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    device: Option<String>,
    /// Also count seeds that hit these targets (comma-separated): any metric, with a
    /// threshold (relogged_inodes>=2, wait_for_commit_ns>=1000000); the waste metrics and
    /// S1-S3 are always counted.
    #[arg(long, value_delimiter = ',', value_parser = models::shrink::Target::parse)]
    target: Vec<models::shrink::Target>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct ReplayArgs {
    /// Scenario name or path.
    scenario: String,
    /// The seed to replay.
    #[arg(long)]
    seed: u64,
    #[command(flatten)]
    strat: StrategyArgs,
    #[command(flatten)]
    pol: PolicyArgs,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    device: Option<String>,
    /// Also write the full event trace to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print JSON (the run as `run --json` prints it, with its seed) instead of the timeline.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ShrinkArgs {
    /// Scenario name or path.
    scenario: String,
    /// The seed whose explored run hits the target.
    #[arg(long)]
    seed: u64,
    /// What must keep hitting: a metric (unnecessary_inode_logs, relogged_inodes>=2, wait_for_commit_ns>=1000000, …) or an invariant (S1, S2, S3).
    #[arg(long, value_parser = models::shrink::Target::parse)]
    target: models::shrink::Target,
    #[command(flatten)]
    strat: StrategyArgs,
    #[command(flatten)]
    pol: PolicyArgs,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    device: Option<String>,
    /// Write the scenario file here (default: print it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print JSON (sizes, values, and the scenario file as `toml`) instead of the summary.
    #[arg(long)]
    json: bool,
}

fn shrink(a: ShrinkArgs) -> Result<(), Failure> {
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    if let Some(path) = &a.out {
        out_file("--out", path)?;
    }
    let dev = device_for(&sc, &a.device)?;
    let p = policies_from(&sc, &a.pol, false).remove(0);
    let command = std::iter::once("fsyncsim".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let s = models::shrink::shrink_on(
        &sc,
        &p,
        &dev,
        a.device.as_deref().unwrap_or(&sc.device),
        a.seed,
        &a.strat.interleaving(),
        &a.target,
        &command,
        &reports::sweep::policy_flags(&p),
    )
    .map_err(Failure)?;
    if let (true, Some(path)) = (a.json, &a.out) {
        reports::output::write_atomic(path, s.toml.as_bytes())
            .map_err(|e| Failure(format!("--out {}: {e}", path.display())))?;
    }
    if a.json {
        outln!("{:#}", reports::race::shrink_json(&s, &a.target.name()));
        return Ok(());
    }
    match &a.out {
        Some(path) => {
            reports::output::write_atomic(path, s.toml.as_bytes())
                .map_err(|e| Failure(format!("--out {}: {e}", path.display())))?;
            out!("{}", reports::race::shrink_summary(&s, &a.target.name()));
            outln!("wrote {}", path.display());
        }
        None => {
            err!("{}", reports::race::shrink_summary(&s, &a.target.name()));
            out!("{}", s.toml);
        }
    }
    Ok(())
}

/// The flags that override a workload file's parameters.
#[derive(Args, Clone)]
struct LoadArgs {
    /// Workload name (`fsyncsim list --workloads`: dbench, sysbench-fileio, fs-mark, the
    /// fsperf tests, seed 003's fs-mark-fio-ext4/ext3 and kbuild, …; compare also takes
    /// `fsperf` for all three fsperf tests) or path to a workload TOML file.
    workload: String,
    /// dbench clients.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    clients: Option<u32>,
    /// sysbench / fs_mark threads.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    threads: Option<u32>,
    /// Measured virtual time (e.g. 300s).
    #[arg(long, value_parser = parse_runtime, allow_hyphen_values = true)]
    duration: Option<u64>,
    /// Virtual time before measuring (e.g. 60s; 0 for none).
    #[arg(long, value_parser = sim::parse_duration, allow_hyphen_values = true)]
    warmup: Option<u64>,
    /// Device preset or file (default: the workload's).
    #[arg(long)]
    device: Option<String>,
    /// dbench -s: every write synchronous (O_SYNC opens).
    #[arg(long)]
    sync_open: bool,
    /// CPU cores the simulated CPU time runs on, round robin (`unlimited`: no contention;
    /// default: the workload's `cpus`).
    #[arg(long, value_parser = parse_cpus)]
    cpus: Option<Cpus>,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    force: bool,
}

/// `--cpus`: N cores, or None for `unlimited`. (A newtype: clap reads `Option<Option<T>>`
/// as a flag with an optional value, and panicked on every `--cpus`.)
#[derive(Clone, Copy, Debug)]
struct Cpus(Option<u64>);

/// `--cpus N` (1..=4096) or `unlimited`.
fn parse_cpus(s: &str) -> Result<Cpus, String> {
    match s {
        "unlimited" => Ok(Cpus(None)),
        _ => s
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=4096).contains(n))
            .map(|n| Cpus(Some(n)))
            .ok_or_else(|| format!("expected 1..=4096 or 'unlimited', got '{s}'")),
    }
}

impl LoadArgs {
    /// The workload file with the flags applied, and its device.
    fn load(&self) -> Result<(models::workload::spec::Spec, DeviceConfig), Failure> {
        let mut spec = models::workload::spec::Spec::load(&self.workload)
            .map_err(|e| Failure(e.to_string()))?;
        if let Some(n) = self.clients.or(self.threads) {
            spec.clients = n;
        }
        if let Some(d) = self.duration {
            spec.duration = d;
        }
        if let Some(w) = self.warmup {
            spec.warmup = w;
        }
        if self.sync_open {
            spec.sync_open = true;
        }
        if let Some(Cpus(c)) = self.cpus {
            spec.cpus = c;
        }
        let dev = DeviceConfig::resolve(self.device.as_deref().unwrap_or(&spec.device))
            .map_err(|e| Failure(e.to_string()))?;
        Ok((spec, dev))
    }
}

#[derive(Args)]
struct WorkloadArgs {
    #[command(flatten)]
    load: LoadArgs,
    #[command(flatten)]
    pol: PolicyArgs,
    /// Run seed (default: the workload's).
    #[arg(long)]
    seed: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn workload(a: WorkloadArgs) -> Result<(), Failure> {
    let (spec, dev) = a.load.load()?;
    // The workload file's `current` policy, else linux-5.11.
    let default = spec.current.as_deref().map_or_else(
        || Policy::preset("linux-5.11"),
        |c| models::kernel::parse_policy(c).ok(),
    );
    let pol = PolicyArgs {
        policy: a.pol.policy.clone().or(default),
        ..a.pol.clone()
    };
    let p = policy_of(&pol);
    let total = spec.warmup + spec.duration;
    // A progress bar over virtual time, on a terminal only.
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::new(total / sim::S)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} virtual s ETA {eta}",
        )
        .expect("valid template"),
    );
    let b2 = bar.clone();
    let r = models::workload::fsload::run_with_progress(
        &spec,
        &p,
        &dev,
        a.seed.unwrap_or(spec.seed),
        None,
        Some(Box::new(move |t| b2.set_position(t / sim::S))),
    )
    .map_err(Failure)?;
    bar.finish_and_clear();
    if a.json {
        outln!("{:#}", reports::workload::json(&r));
    } else {
        outln!(
            "{} ({}) under {} on {}, seed {}:",
            spec.name,
            spec.title,
            p.name,
            dev.name,
            r.seed
        );
        out!("{}", reports::workload::table(&r, spec.file_size));
        out!("{}", reports::workload::attribution_text(&r));
    }
    Ok(())
}

/// The one policy the flags describe (linux-5.11 by default).
fn policy_of(a: &PolicyArgs) -> Policy {
    let mut p = a
        .policy
        .clone()
        .unwrap_or_else(|| Policy::preset("linux-5.11").expect("preset"));
    for &f in &a.fix {
        p = p.with(f);
    }
    for &f in &a.without {
        p = p.without(f);
    }
    for &m in &a.mutant {
        p = p.with_mutant(m);
    }
    p
}

#[derive(Args)]
struct CompareArgs {
    #[command(flatten)]
    load: LoadArgs,
    /// Baseline policy [default: linux-5.10; for `fsperf`, linux-5.13].
    #[arg(long, value_parser = models::kernel::parse_policy)]
    baseline: Option<Policy>,
    /// Current policy [default: linux-5.11; for `fsperf`, linux-5.14].
    #[arg(long, value_parser = models::kernel::parse_policy)]
    current: Option<Policy>,
    /// Seeds per side, a range A..B (B exclusive) or a count N (the N seeds from --seed on);
    /// differences are paired seed by seed.
    #[arg(long, default_value = "1", value_parser = flags::CompareSeeds::parse)]
    seeds: flags::CompareSeeds,
    /// First seed when --seeds is a count (default: the workload's).
    #[arg(long)]
    seed: Option<u64>,
    /// One row per value of a workload or device parameter, e.g. queue_depth=32,254,1024.
    #[arg(long, value_parser = models::workload::compare::parse_vary)]
    vary: Option<(String, Vec<String>)>,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Write results.json, latency/cdf/attribution plots (PNG, SVG) and trace.json here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write a Chrome trace of the current policy's first run: to FILE, or without
    /// FILE to trace.json in --out.
    #[arg(long, num_args = 0..=1, value_name = "FILE")]
    trace: Option<Option<PathBuf>>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ValidateArgs {
    /// Shorter runs (dbench 20 s, sysbench 60 s) with two paired seeds and 95 % intervals.
    #[arg(long)]
    quick: bool,
    /// Print JSON: {rows: [{id, seed, figure, seed_value, model_value, unit,
    /// direction_match, ratio}], curves: [...]}.
    #[arg(long)]
    json: bool,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
}

fn validate(a: ValidateArgs) -> Result<(), Failure> {
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} {pos} workload runs done")
            .expect("valid template"),
    );
    let v = models::validate::validate(a.quick, jobs, &|| bar.inc(1)).map_err(Failure)?;
    bar.finish_and_clear();
    if a.json {
        outln!("{:#}", reports::validate::json(&v));
    } else {
        out!("{}", reports::validate::text(&v));
    }
    Ok(())
}

/// `fsyncsim compare fsperf`: every fsperf test of seed 004 under both policies, one
/// fsperf table per test.
fn compare_fsperf(a: &CompareArgs, baseline: &Policy, current: &Policy) -> Result<(), Failure> {
    if a.vary.is_some() || a.trace.is_some() || a.out.is_some() {
        return Err(Failure(
            "compare fsperf: --vary, --trace and --out take one workload (e.g. compare dio4kbs16threads)"
                .into(),
        ));
    }
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let mut tests = Vec::new();
    for name in models::workload::spec::FSPERF {
        let load = LoadArgs {
            workload: name.to_string(),
            ..a.load.clone()
        };
        let (spec, dev) = load.load()?;
        let seed = a.seeds.first(a.seed, spec.seed).map_err(Failure)?;
        let pairs = models::workload::compare::compare(
            &spec,
            &dev,
            baseline,
            current,
            seed,
            a.seeds.count(),
            None,
            jobs,
            &|| {},
        )
        .map_err(Failure)?;
        tests.push((spec, pairs));
    }
    if a.json {
        let v: Vec<serde_json::Value> = tests
            .iter()
            .map(|(s, p)| reports::workload::compare_json(s, baseline, current, p, None))
            .collect();
        outln!("{:#}", serde_json::Value::Array(v));
    } else {
        out!(
            "{}",
            reports::workload::fsperf_suite_text(baseline, current, &tests)
        );
    }
    Ok(())
}

fn compare(a: CompareArgs) -> Result<(), Failure> {
    use models::workload::{compare as cmp, fsload};
    let fsperf = a.load.workload == "fsperf";
    let preset = |n: &str| Policy::preset(n).expect("preset");
    if fsperf {
        let baseline = a.baseline.clone().unwrap_or_else(|| preset("linux-5.13"));
        let current = a.current.clone().unwrap_or_else(|| preset("linux-5.14"));
        return compare_fsperf(&a, &baseline, &current);
    }
    let (spec, dev) = a.load.load()?;
    // The flags, else the workload file's `baseline` / `current`, else linux-5.10 / 5.11.
    let from_file = |p: &Option<String>, d: &str| {
        p.as_deref()
            .and_then(|n| models::kernel::parse_policy(n).ok())
            .unwrap_or_else(|| preset(d))
    };
    let baseline = a
        .baseline
        .clone()
        .unwrap_or_else(|| from_file(&spec.baseline, "linux-5.10"));
    let current = a
        .current
        .clone()
        .unwrap_or_else(|| from_file(&spec.current, "linux-5.11"));
    // --trace FILE, or --trace alone: trace.json in --out.
    let trace_path =
        match (&a.trace, &a.out) {
            (None, _) => None,
            (Some(Some(f)), _) => Some(f.clone()),
            (Some(None), Some(d)) => Some(d.join("trace.json")),
            (Some(None), None) => return Err(Failure(
                "--trace without FILE writes trace.json into --out DIR: give --out or --trace FILE"
                    .into(),
            )),
        };
    if let (Some(Some(f)), _) = (&a.trace, &a.out) {
        out_file("--trace", f)?;
    }
    if let Some(d) = &a.out {
        out_dir("--out", d)?;
    }
    let seeds = a.seeds.count();
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let seed = a.seeds.first(a.seed, spec.seed).map_err(Failure)?;
    let points = a.vary.as_ref().map_or(1, |(_, v)| v.len() as u64);
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::ProgressBar::new(points * seeds * 2)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} runs ETA {eta}",
        )
        .expect("valid template"),
    );
    let pairs = cmp::compare(
        &spec,
        &dev,
        &baseline,
        &current,
        seed,
        seeds,
        a.vary.as_ref(),
        jobs,
        &|| bar.inc(1),
    )
    .map_err(Failure)?;
    bar.finish_and_clear();
    let json = reports::workload::compare_json(&spec, &baseline, &current, &pairs, a.vary.as_ref());
    if let Some(d) = &a.out {
        let results = d.join("results.json");
        reports::output::write_atomic(&results, format!("{json:#}\n").as_bytes())
            .map_err(|e| Failure(format!("--out {}: {e}", results.display())))?;
        let first = &pairs[0];
        reports::workload::write_plots(&first.baseline[0], &first.current[0], d)
            .map_err(|e| Failure(format!("--out {}: {e}", d.display())))?;
    }
    if let Some(path) = &trace_path {
        let flag = if matches!(a.trace, Some(Some(_))) {
            "--trace"
        } else {
            "--out"
        };
        let title = format!("{} under {} (seed {seed})", spec.name, current.name);
        let writer = reports::chrome::ChromeTrace::create(path, &title)
            .map_err(|e| Failure(format!("{flag} {}: {e}", path.display())))?;
        let writer = std::rc::Rc::new(std::cell::RefCell::new(Some(writer)));
        let w2 = writer.clone();
        let ops = spec.kind.ops();
        let sink: fsload::TraceSink = Box::new(move |h, recs, slices| {
            let named: Vec<(sim::TaskId, &str, u64, u64)> = slices
                .iter()
                .map(|&(t, op, s, e)| (t, ops[op], s, e))
                .collect();
            match w2.borrow_mut().as_mut() {
                Some(w) => w.push(h, recs, &named),
                None => Ok(()),
            }
        });
        // The same configuration the plots show: the first point.
        let (tspec, tdev) = cmp::first_point(&spec, &dev, a.vary.as_ref()).map_err(Failure)?;
        let run = fsload::run(&tspec, &current, &tdev, seed, Some(sink));
        let w = writer.borrow_mut().take().expect("writer");
        match run {
            Ok(_) => w
                .finish()
                .map_err(|e| Failure(format!("{flag} {}: {e}", path.display())))?,
            Err(e) => {
                w.abandon();
                return Err(Failure(e));
            }
        }
    }
    if a.json {
        outln!("{json:#}");
    } else {
        out!(
            "{}",
            reports::workload::compare_text(&spec, &baseline, &current, &pairs, a.vary.as_ref())
        );
        if let Some(d) = &a.out {
            outln!("wrote {}", d.display());
        }
    }
    Ok(())
}

fn replay(a: ReplayArgs) -> Result<Verdict, Failure> {
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    if let Some(path) = &a.trace {
        out_file("--trace", path)?;
    }
    let dev = device_for(&sc, &a.device)?;
    let pol = PolicyArgs {
        policy: a
            .pol
            .policy
            .clone()
            .or_else(|| Policy::preset("linux-5.11")),
        ..a.pol.clone()
    };
    let p = policies_from(&sc, &pol, false).pop().expect("one policy");
    let r = scenario::run(&sc, &p, &dev, a.seed, &a.strat.interleaving());
    playable(&r)?;
    if let Some(path) = &a.trace {
        reports::output::write_atomic(path, (r.trace.join("\n") + "\n").as_bytes())
            .map_err(|e| Failure(format!("--trace {}: {e}", path.display())))?;
    }
    if a.json {
        outln!("{:#}", reports::race::replay_json(&sc, &r, a.seed));
    } else {
        out!("{}", reports::race::timeline(&sc, &r, a.seed));
    }
    Ok(verdict([&r]))
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::preset(s).ok_or_else(|| {
        format!(
            "unknown policy '{s}': expected one of {}",
            models::kernel::preset_names()
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn parse_fix(s: &str) -> Result<Fix, String> {
    Fix::parse(s).ok_or_else(|| format!("unknown fix '{s}': expected R1, R2, R3, R4, R5, R6 or R7"))
}

fn parse_mutant(s: &str) -> Result<Mutant, String> {
    Mutant::parse(s).ok_or_else(|| {
        format!(
            "unknown mutant '{s}': expected one of {}",
            Mutant::ALL.map(|m| m.name()).join(", ")
        )
    })
}

#[derive(Args)]
struct BenchArgs {
    /// Take a global mutex before asking for a slot (+2 events per request).
    #[arg(long)]
    lock: bool,
    /// Requests to complete.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct FioArgs {
    /// Device preset (nvme, sas-ssd, sata-ssd, hdd) or path to a device TOML file.
    #[arg(long, default_value = "nvme")]
    device: String,
    /// Access pattern.
    #[arg(long, default_value = "randread", value_parser = parse_rw)]
    rw: fio::RwMode,
    /// Block size (4k, 64KiB, 1M).
    #[arg(long, default_value = "4k", value_parser = parse_bs, allow_hyphen_values = true)]
    bs: u64,
    /// Requests in flight per job.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=65536))]
    iodepth: u32,
    /// Jobs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    numjobs: u32,
    /// Flush the device cache every N writes per job (0: never).
    #[arg(long, default_value_t = 0)]
    fsync: u32,
    /// Virtual run time (300s, 1.5s, 250ms).
    #[arg(long, default_value = "1s", value_parser = parse_runtime, allow_hyphen_values = true)]
    runtime: u64,
    /// Bytes each job addresses.
    #[arg(long, default_value = "1g", value_parser = parse_bs)]
    size: u64,
    /// Percentage of reads for randrw.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(0..=100))]
    rwmixread: u32,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print fio-style JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    force: bool,
}

fn parse_rw(s: &str) -> Result<fio::RwMode, String> {
    fio::RwMode::parse(s).ok_or_else(|| {
        format!(
            "unknown mode '{s}': expected one of {}",
            fio::RwMode::NAMES.join(", ")
        )
    })
}

fn parse_bs(s: &str) -> Result<u64, String> {
    match models::units::parse_size(s)? {
        0 => Err("expected a size > 0 like 4k, 64KiB, 1M".to_string()),
        n => Ok(n),
    }
}

fn parse_runtime(s: &str) -> Result<u64, String> {
    match sim::parse_duration(s)? {
        0 => Err("expected a duration > 0 like 1s, 300s, 250ms".to_string()),
        n => Ok(n),
    }
}

/// A user-facing failure: one line, exit code 2.
struct Failure(String);

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
                _ => out::error(format_args!("{first}"), true),
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
fn is_bad_input(invariant: &str) -> bool {
    matches!(invariant, "script" | "scenario")
}

/// A run that could not play is bad input (exit 2), not a result.
fn playable(r: &RunResult) -> Result<(), Failure> {
    match r.violations.iter().find(|v| is_bad_input(&v.invariant)) {
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

fn load_scenarios(specs: &[String]) -> Result<Vec<Scenario>, Failure> {
    if specs.is_empty() {
        return Ok(Scenario::builtin());
    }
    specs
        .iter()
        .map(|s| Scenario::load(s).map_err(|e| Failure(e.to_string())))
        .collect()
}

fn device_for(sc: &Scenario, flag: &Option<String>) -> Result<DeviceConfig, Failure> {
    let spec = flag.as_deref().unwrap_or(&sc.device);
    DeviceConfig::resolve(spec).map_err(|e| Failure(e.to_string()))
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

fn run_races(a: RunArgs) -> Result<Verdict, Failure> {
    let specs: Vec<String> = a.scenario.iter().cloned().collect();
    let scenarios = load_scenarios(&specs)?;
    if let Some(path) = &a.trace {
        out_file("--trace", path)?;
    }
    let interleaving = if !a.explore {
        Interleaving::Script
    } else {
        a.strat.interleaving()
    };
    let mut items: Vec<(Scenario, Vec<RunResult>)> = Vec::new();
    for sc in scenarios {
        let dev = device_for(&sc, &a.device)?;
        let seed = a.seed.unwrap_or(sc.seed);
        let runs = policies_from(&sc, &a.pol, a.super_committed)
            .iter()
            .map(|p| scenario::run(&sc, p, &dev, seed, &interleaving))
            .collect();
        items.push((sc, runs));
    }
    // A scenario that cannot play (a stuck script, an operation on a missing path) is bad
    // input, not a result.
    for (_, runs) in &items {
        for r in runs {
            playable(r)?;
        }
    }
    if let Some(path) = &a.trace {
        let mut text = String::new();
        for (sc, runs) in &items {
            for r in runs {
                text.push_str(&format!("# {} under {}\n", sc.name, r.policy.name));
                for l in &r.trace {
                    text.push_str(l);
                    text.push('\n');
                }
            }
        }
        reports::output::write_atomic(path, text.as_bytes())
            .map_err(|e| Failure(format!("--trace {}: {e}", path.display())))?;
    }
    if a.json {
        let v: Vec<serde_json::Value> = items
            .iter()
            .map(|(sc, runs)| reports::race::json(sc, runs))
            .collect();
        if v.len() == 1 {
            outln!("{:#}", v[0]);
        } else {
            outln!("{:#}", serde_json::Value::Array(v));
        }
    } else {
        for (sc, runs) in &items {
            outln!("{}", reports::race::side_by_side(sc, runs));
        }
        if items.len() > 1 && items.iter().all(|(_, r)| r.len() == 2) {
            out!("{}", reports::race::summary(&items));
        }
    }
    Ok(verdict(items.iter().flat_map(|(_, runs)| runs)))
}

fn sweep(a: SweepArgs) -> Result<Verdict, Failure> {
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    let dev = device_for(&sc, &a.device)?;
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let pols = policies_from(&sc, &a.pol, false);
    let shard = a.shard.unwrap_or(models::sweep::Shard::ALL);
    let strategy = a.strat.interleaving();
    let len = a.seeds.end - a.seeds.start;
    let owned = len / shard.n + u64::from(shard.k - 1 < len % shard.n);
    // A progress bar on a terminal only; nothing else reads the clock.
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        indicatif::ProgressBar::new(owned * pols.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} seeds {per_sec} ETA {eta} {msg}",
        )
        .expect("valid template"),
    );
    // Where checkpoints go, and what an earlier interrupted run left there.
    let dir = a.out.clone().or_else(|| a.resume.clone());
    let flags = a.strat.flags();
    // What determines each policy's result (reports::sweep::Identity): in every report, and
    // in the checkpoint's arguments, so that --resume with other inputs is refused. Extra
    // targets change what is counted, so they are part of it.
    let id_flags = sweep_id_flags(&flags, &a.target);
    let ids: Vec<reports::sweep::Identity> = pols
        .iter()
        .map(|p| reports::sweep::Identity::new(&sc, &dev, p, &id_flags, &a.seeds, COMMIT))
        .collect();
    let meta = serde_json::json!({
        "version": reports::sweep::VERSION,
        "scenario": sc.name,
        "seeds": {"start": a.seeds.start, "end": a.seeds.end},
        "shard": a.shard.map(|s| format!("{}/{}", s.k, s.n)),
        "strategy": flags,
        "policies": pols.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
        "identity": ids.iter().map(|id| id.json()).collect::<Vec<_>>(),
    });
    let mut progress: Vec<(u64, models::sweep::SweepResult)> =
        vec![(0, models::sweep::SweepResult::default()); pols.len()];
    if let Some(d) = &a.resume {
        let path = d.join("state.json");
        let text = models::units::read_text(&path.display().to_string(), "checkpoint")
            .map_err(|(at, e)| Failure(format!("--resume {at}: {e}")))?;
        // Both checksums first: an edited or truncated file is refused as a whole.
        let (state_meta, state_progress) =
            reports::checkpoint::open(&text, &path.display().to_string()).map_err(Failure)?;
        if state_meta != meta {
            return Err(Failure(format!(
                "--resume {}: it holds a sweep with other arguments: {}; rerun with those",
                d.display(),
                meta_difference(&state_meta, &meta),
            )));
        }
        if state_progress.len() != progress.len() {
            return Err(Failure(format!(
                "{}: {} policies in progress, expected {}: the file was edited or is corrupt",
                path.display(),
                state_progress.len(),
                progress.len()
            )));
        }
        for (slot, p) in progress.iter_mut().zip(&state_progress) {
            let report = reports::sweep::SweepReport::from_json(&p["report"])
                .map_err(|e| Failure(format!("{}: {e}", path.display())))?;
            // The counts must be exactly those of the chunks the file says are done.
            let seeds = &a.seeds;
            let chunks = (seeds.end - seeds.start).div_ceil(models::sweep::CHUNK);
            let done = p["done_chunks"]
                .as_u64()
                .filter(|&d| d <= chunks)
                .ok_or_else(|| {
                    Failure(format!(
                        "{}: done_chunks: expected an integer from 0 to {chunks}",
                        path.display()
                    ))
                })?;
            let end = seeds
                .start
                .saturating_add(done.saturating_mul(models::sweep::CHUNK))
                .min(seeds.end);
            let len = end - seeds.start;
            let expect = len / shard.n + u64::from(shard.k - 1 < len % shard.n);
            if report.result.runs != expect {
                return Err(Failure(format!(
                    "{}: {} runs recorded, but {done} finished chunk(s) of this shard hold {expect}: the file was edited or is corrupt",
                    path.display(),
                    report.result.runs
                )));
            }
            *slot = (done, report.result);
        }
        // Checkpoints are written into it: a directory under /dev or /proc is refused.
        out_dir("--resume", d)?;
    } else if let Some(d) = &a.out {
        out_dir("--out", d)?;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        // A second handler cannot be installed; then Ctrl-C simply kills the process.
        let _ = ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    let chunks_run = std::cell::Cell::new(0u64);
    let mut finished = true;
    let mut out = Vec::new();
    for (i, p) in pols.iter().enumerate() {
        let (mut done, mut acc) = std::mem::take(&mut progress[i]);
        if finished {
            let mut checkpoint = |d: u64, r: &models::sweep::SweepResult| -> Result<(), String> {
                progress[i] = (d, r.clone());
                chunks_run.set(chunks_run.get() + 1);
                if a.stop_after_chunks.is_some_and(|n| chunks_run.get() >= n) {
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                match &dir {
                    Some(d) => {
                        write_state(d, &meta, &progress, &sc, &dev, &pols, &a, shard, &flags)
                    }
                    None => Ok(()),
                }
            };
            let (d, complete) = models::sweep::sweep_chunked(
                &sc,
                p,
                &dev,
                a.seeds.clone(),
                shard,
                jobs,
                &strategy,
                &a.target,
                &|n| bar.inc(n),
                &stop,
                done,
                &mut acc,
                &mut checkpoint,
            )
            .map_err(Failure)?;
            done = d;
            finished = complete;
        }
        progress[i] = (done, acc.clone());
        bar.set_message(format!("{} hit targets", acc.targets.len()));
        let mut report = reports::sweep::SweepReport::new(
            &sc,
            p,
            &flags,
            a.seeds.clone(),
            shard,
            acc,
            ids[i].clone(),
        );
        report.partial = !finished;
        out.push(report);
    }
    bar.finish_and_clear();
    // A scenario that no seed could play (its setup always fails, say) is bad input, as in
    // `run`; the first seed's run says why.
    for (r, p) in out.iter().zip(&pols) {
        if let Some(seed) = never_played(&r.result) {
            let run = scenario::run(&sc, p, &dev, seed, &strategy);
            let why = run
                .violations
                .iter()
                .find(|v| is_bad_input(&v.invariant))
                .map_or("the scenario cannot play", |v| v.message.as_str());
            return Err(Failure(format!(
                "{why} (under {}, in every one of the {} seeds run)",
                p.name, r.result.runs
            )));
        }
    }
    if let Some(d) = &dir {
        let v: Vec<serde_json::Value> = out.iter().map(|r| r.json()).collect();
        let path = d.join("sweep.json");
        reports::output::write_atomic(
            &path,
            format!("{:#}\n", serde_json::Value::Array(v)).as_bytes(),
        )
        .map_err(|e| Failure(format!("{} {}: {e}", dir_flag(&a), path.display())))?;
    }
    print_sweeps(&out, a.json);
    let fired = out
        .iter()
        .flat_map(|r| r.result.targets.keys())
        .filter_map(|k| k.strip_prefix("invariant:"))
        .any(|inv| !is_bad_input(inv));
    Ok(if fired {
        Verdict::Failed
    } else {
        Verdict::Clean
    })
}

/// The commit this binary was built from (build.rs; "unknown commit" outside git).
const COMMIT: &str = env!("FSYNCSIM_COMMIT");

/// Which argument or input of a checkpoint (`was`) differs from this sweep's (`now`), in
/// words: the first of the arguments, then of each policy's identity fields.
fn meta_difference(was: &serde_json::Value, now: &serde_json::Value) -> String {
    for (key, what) in [
        ("scenario", "scenario"),
        ("seeds", "seed range"),
        ("shard", "shard"),
        ("strategy", "strategy"),
        ("policies", "policies"),
        ("version", "version"),
    ] {
        if was[key] != now[key] {
            return format!("its {what} is {} (now {})", was[key], now[key]);
        }
    }
    let (old, new) = (&was["identity"], &now["identity"]);
    if old.is_null() {
        return "it was written before checkpoints recorded the sweep's inputs".to_string();
    }
    let n = old
        .as_array()
        .map_or(0, Vec::len)
        .max(new.as_array().map_or(0, Vec::len));
    for field in reports::sweep::IDENTITY_FIELDS {
        for i in 0..n {
            if old[i][field] != new[i][field] {
                return format!(
                    "its {field} differs ({} there, {} now)",
                    old[i][field], new[i][field]
                );
            }
        }
    }
    "its arguments differ".to_string()
}

/// The first seed, when every seed of a sweep failed to play (a stuck script or a failed
/// operation in all of them).
fn never_played(r: &models::sweep::SweepResult) -> Option<u64> {
    if r.runs == 0 {
        return None;
    }
    ["invariant:script", "invariant:scenario"]
        .iter()
        .filter_map(|k| r.targets.get(*k))
        .find(|t| t.hits == r.runs)
        .and_then(|t| t.first_seed)
}

/// The flag that named a sweep's checkpoint directory.
fn dir_flag(a: &SweepArgs) -> &'static str {
    if a.resume.is_some() {
        "--resume"
    } else {
        "--out"
    }
}

fn print_sweeps(out: &[reports::sweep::SweepReport], json: bool) {
    if json {
        let v: Vec<serde_json::Value> = out.iter().map(|r| r.json()).collect();
        outln!("{:#}", serde_json::Value::Array(v));
    } else {
        for r in out {
            outln!("{}", r.text());
        }
    }
}

fn merge(files: &[PathBuf], json: bool) -> Result<(), Failure> {
    let mut inputs = Vec::new();
    for f in files {
        let name = f.display().to_string();
        let text = models::units::read_text(&name, "sweep JSON")
            .map_err(|(at, e)| Failure(format!("{at}: {e}")))?;
        let reports = reports::sweep::read_shards(&name, &text).map_err(Failure)?;
        inputs.push((name, reports));
    }
    let merged = reports::sweep::merge(&inputs).map_err(Failure)?;
    print_sweeps(&merged, json);
    Ok(())
}

/// Writes `state.json`: the arguments and, per policy, the chunks done and the counts so far.
#[allow(clippy::too_many_arguments)]
fn write_state(
    dir: &std::path::Path,
    meta: &serde_json::Value,
    progress: &[(u64, models::sweep::SweepResult)],
    sc: &Scenario,
    dev: &DeviceConfig,
    pols: &[Policy],
    a: &SweepArgs,
    shard: models::sweep::Shard,
    flags: &str,
) -> Result<(), String> {
    let per: Vec<serde_json::Value> = progress
        .iter()
        .zip(pols)
        .map(|((done, r), p)| {
            let mut rep = reports::sweep::SweepReport::new(
                sc,
                p,
                flags,
                a.seeds.clone(),
                shard,
                r.clone(),
                reports::sweep::Identity::new(
                    sc,
                    dev,
                    p,
                    &sweep_id_flags(flags, &a.target),
                    &a.seeds,
                    COMMIT,
                ),
            );
            // A checkpoint holds the counts of the chunks done so far.
            rep.partial = true;
            serde_json::json!({"done_chunks": done, "report": rep.json()})
        })
        .collect();
    let state = reports::checkpoint::seal(meta, serde_json::Value::Array(per));
    let path = dir.join("state.json");
    reports::output::write_atomic(&path, format!("{state:#}\n").as_bytes())
        .map_err(|e| format!("{} {}: {e}", dir_flag(a), path.display()))
}

/// The flags that determine a sweep's result besides its inputs: the strategy's, then the
/// extra targets.
fn sweep_id_flags(strategy: &str, targets: &[models::shrink::Target]) -> String {
    let mut f = strategy.to_string();
    for t in targets {
        f.push_str(&format!(" --target {}", t.name()));
    }
    f
}

/// Runs each scenario pre- and post-fix and compares with its expectations: Failed (exit 1)
/// on any mismatch. A scenario that cannot play (a stuck script) is bad input, as in `run`:
/// every scenario runs before anything is printed.
fn check(specs: &[String], allow_empty: bool, json: bool) -> Result<Verdict, Failure> {
    let mut results = Vec::new();
    for sc in load_scenarios(specs)? {
        let dev = device_for(&sc, &None)?;
        let mut problems = Vec::new();
        if sc.expect_pre.is_empty() && sc.expect_post.is_empty() && !allow_empty {
            problems.push(format!(
                "{}: no expectations ([expect.*] is empty): nothing to check (--allow-empty accepts it)",
                sc.origin
            ));
        }
        let [before, after] = sc.labels();
        for (label, policy, expect) in [
            (before, sc.pre_policy(), &sc.expect_pre),
            (after, sc.post_policy(), &sc.expect_post),
        ] {
            let r = scenario::run(&sc, &policy, &dev, sc.seed, &Interleaving::Script);
            playable(&r)?;
            for m in scenario::compare(expect, &r) {
                problems.push(format!("{label} ({}): {m}", policy.name));
            }
        }
        results.push((sc, problems));
    }
    let mut verdict = Verdict::Clean;
    if results.iter().any(|(_, p)| !p.is_empty()) {
        verdict = Verdict::Failed;
    }
    if json {
        outln!("{:#}", reports::race::check_json(&results));
        return Ok(verdict);
    }
    for (sc, problems) in results {
        if problems.is_empty() {
            outln!("PASS {} [{}]", sc.name, sc.race);
        } else {
            verdict = Verdict::Failed;
            outln!("FAIL {} [{}]", sc.name, sc.race);
            for p in problems {
                outln!("  {p}");
            }
        }
    }
    Ok(verdict)
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
        } => {
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
            if ops || points || metrics || policies || workloads {
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
        Command::Run(a) => return run_races(a),
        Command::Sweep(a) => return sweep(a),
        Command::Merge { files, json } => merge(&files, json)?,
        Command::Validate(a) => validate(a)?,
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "fsyncsim", &mut buf);
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
        Command::Shrink(a) => shrink(a)?,
        Command::Workload(a) => workload(a)?,
        Command::Compare(a) => compare(a)?,
        Command::Check {
            scenarios,
            allow_empty,
            json,
        } => return check(&scenarios, allow_empty, json),
        Command::Bench(a) => {
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
        }
        Command::Fio(a) => {
            // Job j addresses bytes j × size .. (j + 1) × size of the device.
            if u64::from(a.numjobs).checked_mul(a.size).is_none() {
                return Err(Failure(format!(
                    "--size {} × --numjobs {}: the jobs' regions end beyond 2^64 bytes; expected a smaller --size",
                    a.size, a.numjobs
                )));
            }
            let cfg = DeviceConfig::resolve(&a.device).map_err(|e| Failure(e.to_string()))?;
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
            if a.json {
                outln!("{:#}", reports::fio::json(&r));
            } else {
                out!("{}", reports::fio::text(&r));
            }
        }
        Command::Scrub(a) => scrub(a)?,
        Command::Devices => {
            let cfgs: Vec<DeviceConfig> = presets::NAMES
                .iter()
                .filter_map(|n| presets::by_name(n))
                .collect();
            out!("{}", reports::devices::text(&cfgs));
        }
    }
    Ok(Verdict::Clean)
}

#[derive(Args)]
struct ScrubArgs {
    /// Device preset or path to a device TOML file.
    #[arg(long, default_value = "hdd-smr-5400")]
    device: String,
    /// Readahead policy: reada (v5.16 framework), path-reada (v5.17), none.
    #[arg(long, default_value = "reada", value_parser = parse_scrub_policy)]
    policy: models::btrfs::scrub::ScrubPolicy,
    /// Run reada and path-reada on the same filesystem and set them beside seed 002.
    #[arg(long, conflicts_with = "policy")]
    compare: bool,
    /// Fraction of seed 002's 65,536 files to populate (below about 0.5 the metadata fits in
    /// the drive's read cache after the metadata chunk's scrub and the policies tie).
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    scale: f64,
    /// Metadata profile: dup (mkfs default on a rotational device) or single.
    #[arg(long, default_value = "dup", value_parser = ["dup", "single"])]
    metadata: String,
    /// Run seed (file sizes and which files are deleted).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn parse_scrub_policy(s: &str) -> Result<models::btrfs::scrub::ScrubPolicy, String> {
    use models::btrfs::scrub::ScrubPolicy;
    ScrubPolicy::parse(s).ok_or_else(|| {
        format!(
            "unknown policy '{s}': expected one of {}",
            ScrubPolicy::NAMES.join(", ")
        )
    })
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 4.0 => Ok(x),
        _ => Err(format!(
            "invalid scale '{s}': expected a number > 0 and <= 4"
        )),
    }
}

fn scrub(a: ScrubArgs) -> Result<(), Failure> {
    use models::btrfs::{layout::LayoutParams, scrub as sc};
    let device = DeviceConfig::resolve(&a.device).map_err(|e| Failure(e.to_string()))?;
    let base = LayoutParams::default();
    let layout = LayoutParams {
        files: ((base.files as f64 * a.scale).round() as u64).max(16),
        metadata_dup: a.metadata == "dup",
        ..base
    };
    let policies = if a.compare {
        vec![sc::ScrubPolicy::ReadaFramework, sc::ScrubPolicy::PathReada]
    } else {
        vec![a.policy]
    };
    let runs = sc::compare(&layout, &device, a.seed, &policies).map_err(Failure)?;
    if a.json {
        outln!("{:#}", reports::scrub::json(&runs));
    } else if a.compare {
        out!("{}", reports::scrub::compare_text(&runs));
    } else {
        out!("{}", reports::scrub::text(&runs[0]));
    }
    Ok(())
}
