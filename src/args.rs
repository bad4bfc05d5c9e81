//! The command line's flags and subcommands (clap), and the value parsers they use.

use crate::*;

/// The exit codes (`out::code`), as the top-level help and every race subcommand's help
/// state them; docs/tools.md, "Exit codes", says the same.
macro_rules! exit_codes {
    () => {
        "Exit codes (every subcommand):\n  \
         0  success (also when a reader closes the pipe early: fsyncsim run | head)\n  \
         1  an invariant fired (run, replay, sweep: S1, S2, S3 or the time limit in any run or\n     \
         seed; workload, compare, validate: S1, S2 or S3 in any run, named on stderr after\n     \
         the output), a check failed (check), or stdout could not be written\n  \
         2  bad input: flags, files, an input file that is not a regular file or is larger than\n     \
         16 MiB, an output path that is not a regular file (a directory for --out DIR) or is\n     \
         under /dev, /proc or /sys (a symlink is followed to its target and that replaced),\n     \
         a scenario that cannot play (a stuck script, a failing setup; a sweep in which\n     \
         every seed fails to play)\n  \
         3  a resource limit refused the request before any work (every command that runs a\n     \
         model: one line naming the flags or file and the estimate; --force runs anyway)"
    };
}

/// The scenario commands' resource limit (`limits::scenarios`), as their help states it.
macro_rules! scenario_limit {
    () => {
        "Resource limit: refuses (exit 3) a scenario one run of which is estimated above 60\nCPU-seconds (its tasks, each task's operations and fsyncs, its script steps: costs that\ngrow faster than linearly) or a device whose HDD zones would take more than 4.0 GiB\n(40 bytes each); --force runs anyway.\n"
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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Measure the engine's speed on a fixed closed-loop model (64 clients, 32 slots).
    #[command(
        after_help = "Runs the model twice on the engine and twice as a single-purpose hand-written loop (same\nevent order, same results), in turn, and prints the faster run of each and their ratio.\nResource limit: refuses (exit 3) above 1e10 requests; --force runs anyway.\n\nExamples:\n  fsyncsim bench\n  fsyncsim bench --lock --json"
    )]
    Bench(BenchArgs),
    /// Scrub a populated btrfs on one simulated device (the btrfs scrub thread: with and without the
    /// readahead framework).
    #[command(
        after_help = "Resource limit: refuses (exit 3) a device whose HDD zones would take more than 4.0 GiB\n(40 bytes each); --force runs anyway.\n\nExamples:\n  fsyncsim scrub\n  fsyncsim scrub --compare\n  fsyncsim scrub --policy path-reada --scale 0.25 --json"
    )]
    Scrub(ScrubArgs),
    /// Run a fio-like synthetic load against a simulated device.
    #[command(
        after_help = "Resource limits: refuses (exit 3) when --iodepth x --numjobs requests in flight would take\nmore than 4.0 GiB (1.5 KiB each), or when --runtime would complete more than 1e10 requests\n(24,400 per request in flight and virtual second, at most 1e6 per second), or when the\ndevice's HDD zones would take more than 4.0 GiB (40 bytes each); --force runs anyway.\n\nExamples:\n  fsyncsim fio --device nvme --rw randread --bs 4k --iodepth 32\n  fsyncsim fio --device hdd --rw randwrite --fsync 1 --runtime 10s --json\n  fsyncsim fio --device my-ssd.toml --rw randrw --numjobs 4"
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
        /// List the `[costs]` keys of a btrfs scenario with their defaults.
        #[arg(long)]
        costs: bool,
    },
    /// Replay race scenarios step by step: before and after the fix, side by side.
    #[command(
        after_help = concat!(
            "Without NAME: every built-in scenario. Without --policy/--fix/--without/--mutant:\nthe pre-fix run (linux-5.11 without the race's fix) and the post-fix run (linux-5.11).\nExits 1 when an invariant fires in any run (a mutant makes one fire: that is its job).\n",
            scenario_limit!(),
            "\nExamples:\n  fsyncsim run\n  fsyncsim run r1-link-rename-logged-trans\n  fsyncsim run r6-log-start-blocked-on-tree-log-mutex --policy linux-5.10 --json\n  fsyncsim run my-race.toml --without R4 --trace trace.txt\n  fsyncsim run r1-link-rename-logged-trans --trace r1.pftrace\n  fsyncsim run r6-log-start-blocked-on-tree-log-mutex --mutant sync-log-no-super-wait\n\n",
            exit_codes!()
        )
    )]
    Run(RunArgs),
    /// Run a scenario without its script under many seeds; count the seeds that hit each
    /// waste metric or invariant.
    #[command(
        after_help = concat!(
            "Without --policy/--fix/--without/--mutant: sweeps the pre-fix and the post-fix policy;\n--fix/--without/--mutant alone apply to linux-5.11. --seeds defaults to 0..1000.\nResults are identical for any --jobs. Exits 1 when any seed hits an invariant.\nResource limit: refuses (exit 3) above 1e8 runs (seeds of this shard x policies);\n--force runs anyway. --resume verifies state.json's checksums (exit 2 if edited).\n",
            scenario_limit!(),
            "A sweep is also refused when its runs together are estimated above 0.39 CPU-hours (what\n1e8 runs of a small scenario take).\n\nExamples:\n  fsyncsim sweep r1-link-rename-logged-trans --seeds 0..10000\n  fsyncsim sweep r6-log-start-blocked-on-tree-log-mutex --seeds 0..1000 --mutant sync-log-no-super-wait --json\n  fsyncsim sweep r1-link-rename-logged-trans --strategy exhaustive --seed 0   # every interleaving of seed 0\n\n",
            exit_codes!()
        )
    )]
    Sweep(SweepArgs),
    /// Re-run one explored seed exactly (as a sweep ran it) and print its timeline.
    #[command(
        after_help = concat!(
            "Without --policy: linux-5.11, with --fix/--without/--mutant applied to it.\nExits 1 when an invariant fires in the replayed run.\n",
            scenario_limit!(),
            "\nExamples:\n  fsyncsim replay r1-link-rename-logged-trans --seed 2 --without R1\n  fsyncsim replay r3-ancestor-created-previous-trans --seed 112 --strategy pct --trace t.txt\n\n",
            exit_codes!()
        )
    )]
    Replay(ReplayArgs),
    /// Take a power failure at a point of a scenario's scripted run and print what recovery keeps.
    #[command(
        after_help = concat!(
            "--at TASK POINT: task TASK at named point POINT, when the script lets it go on (points as\n[script] steps name them; POINT#N: its Nth arrival there), or `end`: after every task\nfinished. Without --at: the scenario's [expect.crash] at. Without --policy: the scenario's\nsecond (after) policy, with --fix/--without/--mutant applied to it. Prints each recovered\npath: file or dir, inode, link count, size, extents (data with its device write, prealloc,\nholes) and xattrs. Exits 1 when recovery fails (a corrupt image) or the filesystem does not\nmodel its recovered state (ext3/ext4).\n",
            scenario_limit!(),
            "\nExamples:\n  fsyncsim crash scenarios/xfstests/generic-039.toml --at \"A fsync:done\"\n  fsyncsim crash scenarios/xfstests/generic-483.toml --at \"A fsync:done#3\" --json\n  fsyncsim crash scenarios/xfstests/generic-039.toml --mutant unlink-no-inode-update\n\n",
            exit_codes!()
        )
    )]
    Crash(CrashArgs),
    /// Shrink an explored seed that hits a target to a minimal scripted scenario file.
    #[command(
        after_help = concat!(
            "Without --policy/--fix/--without/--mutant: the pre-fix policy (linux-5.11 without the\nscenario's fix). The result is a scenario TOML that `fsyncsim run FILE` reproduces.\nExits 0 once the scenario is written, also for an invariant target: reproducing the\ninvariant is what it was asked for.\n",
            scenario_limit!(),
            "\nExamples:\n  fsyncsim shrink r1-link-rename-logged-trans --seed 0 --target unnecessary_inode_logs --out r1-min.toml\n  fsyncsim shrink r6-log-start-blocked-on-tree-log-mutex --seed 3 --mutant sync-log-no-super-wait --target S1\n\n",
            exit_codes!()
        )
    )]
    Shrink(ShrinkArgs),
    /// Run a filesystem workload (dbench, sysbench-fileio, fs-mark) under one policy.
    #[command(
        after_help = "Without --policy: linux-5.11, with --fix/--without/--mutant applied to it.\nResource limits: refuses (exit 3) above an estimated 1e11 engine events (clients x\n(duration + warmup) x 320,000 per client-second; fio workloads 660,000 per thread-second,\na filecreate job at most 13 per file), or above an estimated 4.0 GiB of memory (128 MiB +\nper client 192 KiB + 320 KiB x sqrt(seconds), 8 MiB per thread-second of fio direct\nwrites, 1.5 KiB per file a filecreate job creates, 40 bytes per HDD zone); --force runs anyway.\n\nExamples:\n  fsyncsim workload dbench --clients 8 --duration 30s\n  fsyncsim workload dbench --policy linux-5.10 --sync-open --device sas-ssd --clients 32\n  fsyncsim workload sysbench-fileio --without R7 --duration 60s --json"
    )]
    Workload(WorkloadArgs),
    /// Compare two kernel policies on a workload: dbench/fsperf tables, attribution, plots.
    #[command(
        after_help = "Policies: a release preset (`fsyncsim list --policies`: linux-2.6.36 … linux-5.16) with optional :-R7 / :+R1 / :+MUTANT / :±SWITCH modifiers;\nwithout --baseline/--current: the workload file's `baseline`/`current`\n(the ext4 kbuild thread's and 004's workloads name their seed's kernels), else linux-5.10 against linux-5.11.\nBoth sides run the same seeds (common random numbers), in parallel.\nResource limits: refuses (exit 3) above an estimated 1e11 engine events over all runs (2 x\nseeds x --vary points x clients x (duration + warmup) x 320,000 per client-second, as\n`workload --help` says), above 4.0 GiB of memory for the runs --jobs runs at once (each as\n`workload --help` says), or a --trace above 2.0 GiB (2.5 bytes per event of one run);\n--force runs anyway.\n\nExamples:\n  fsyncsim compare dbench --clients 64 --duration 300s --out results\n  fsyncsim compare dbench --clients 8 --duration 30s --seeds 5\n  fsyncsim compare dbench --clients 8 --duration 30s --seeds 10..20 --trace dbench.pftrace\n  fsyncsim compare sysbench-fileio --baseline linux-5.11:-R7 --current linux-5.11 --duration 120s\n  fsyncsim compare dbench --sync-open --device sas-ssd --clients 32 --vary queue_depth=32,254,1024\n  fsyncsim compare kbuild --vary hit_ratio=0,0.5,0.95"
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
    /// Run every experiment of the source threads the model covers, their figures beside the model's.
    #[command(
        after_help = "Experiments (ids for --only): the btrfs dbench thread's dbench (000-dbench64, linux-5.10 -> linux-5.11),\nthe btrfs sysbench thread's sysbench (001-sysbench, without and with R7) and R7's curve, the btrfs scrub\nthread's scrub (002-scrub), the ext4 kbuild thread's fs_mark + fio and kbuild (003-...), the jbd patch\n2db938bee32e's own figures (2db938b-...), the btrfs preemptive-flushing thread's fsperf tests (004-..., with\ntheir device-size curves). Each row: the figure's change in the thread and in the model, whether they\npoint the same way, whether the model's 95 % interval excludes 0, model/thread; then the baselines'\nabsolute levels, the curves and a score line.\n\nExamples:\n  fsyncsim validate --quick\n  fsyncsim validate --quick --only 000-dbench64,001\n  fsyncsim validate --json > validate.json"
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
            "Each file runs under its two policies: pre/post (linux-5.11 without and with its fix) or\nthe two its [policies] declares.\n",
            scenario_limit!(),
            "\nExamples:\n  fsyncsim check\n  fsyncsim check r4-stale-last-unlink-trans scenarios/my-race.toml\n\n",
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
        /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
        #[arg(long)]
        force: bool,
    },
}

/// The flags that choose a kernel policy.
#[derive(Args, Clone)]
pub(crate) struct PolicyArgs {
    /// Base policy: a release preset (`fsyncsim list --policies`), optionally with :±SWITCH modifiers.
    #[arg(long, value_parser = parse_policy)]
    pub(crate) policy: Option<Policy>,
    /// Fixes to add to the policy (R1..R7, comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_fix)]
    pub(crate) fix: Vec<Fix>,
    /// Fixes to remove from the policy (R1..R7, comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_fix)]
    pub(crate) without: Vec<Fix>,
    /// Mutants to enable (see `fsyncsim list --mutants`).
    #[arg(long, value_delimiter = ',', value_parser = parse_mutant)]
    pub(crate) mutant: Vec<Mutant>,
}

/// The flags that choose an exploration strategy.
#[derive(Args, Clone)]
pub(crate) struct StrategyArgs {
    /// Exploration strategy: random, pct, urw, or exhaustive (`sweep`: every interleaving
    /// of one seed; `run`/`replay`: the run --decisions names).
    #[arg(long, default_value = "random", value_parser = ["random", "pct", "urw", "exhaustive"])]
    pub(crate) strategy: String,
    /// With --strategy exhaustive: the run's first decisions (comma-separated candidate
    /// indices, as an exhaustive sweep's replay line prints them); candidate 0 after them.
    #[arg(long, value_delimiter = ',')]
    pub(crate) decisions: Vec<u32>,
    /// PCT depth (priority change points + 1).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) depth: u32,
    /// Keep the first N steps of the script, then explore.
    #[arg(long, default_value_t = 0)]
    pub(crate) prefix: usize,
}

impl StrategyArgs {
    /// The interleaving these flags describe.
    pub(crate) fn interleaving(&self) -> Interleaving {
        let explore = match self.strategy.as_str() {
            "pct" => Interleaving::Pct(self.depth),
            "urw" => Interleaving::Urw,
            "exhaustive" => Interleaving::Exhaustive(self.decisions.clone()),
            _ => Interleaving::Random,
        };
        if self.prefix > 0 {
            Interleaving::Prefix(self.prefix, Box::new(explore))
        } else {
            explore
        }
    }

    /// The `run` flags that select this strategy.
    pub(crate) fn flags(&self) -> String {
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
pub(crate) struct RunArgs {
    /// Scenario name (see `fsyncsim list`; or its id: r1, J1a) or path to a scenario TOML file.
    pub(crate) scenario: Option<String>,
    #[command(flatten)]
    pub(crate) pol: PolicyArgs,
    /// Drop the script: a seeded strategy (--strategy, --seed) picks the next task at every
    /// named point and wherever tasks are ready at the same instant.
    #[arg(long)]
    pub(crate) explore: bool,
    #[command(flatten)]
    pub(crate) strat: StrategyArgs,
    /// Commit waiters return at SUPER_COMMITTED (Linux 5.12+) instead of COMPLETED.
    #[arg(long)]
    pub(crate) super_committed: bool,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Run seed (default: the scenario's).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write a trace of each run to this file: a Perfetto trace (protobuf, opens in
    /// ui.perfetto.dev), or the text timeline when FILE ends in .txt or with --trace-format text.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// The --trace file's format [default: text for FILE.txt, else perfetto].
    #[arg(long, value_name = "FORMAT")]
    pub(crate) trace_format: Option<TraceFormat>,
    #[arg(long, value_name = "FILTER", value_parser = reports::perfetto::TraceFilter::parse, long_help = TRACE_FILTER_HELP)]
    /// Keep only some tasks / a time window in the --trace file (task=NAME,from=1s,to=2s).
    pub(crate) trace_filter: Option<reports::perfetto::TraceFilter>,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args)]
pub(crate) struct SweepArgs {
    /// Scenario name or path.
    pub(crate) scenario: String,
    /// Seed range A..B (B exclusive).
    #[arg(long, default_value = "0..1000", value_parser = models::sweep::parse_seeds)]
    pub(crate) seeds: std::ops::Range<u64>,
    /// With --strategy exhaustive: the one seed whose interleavings are all run (default 0).
    #[arg(long, conflicts_with = "seeds")]
    pub(crate) seed: Option<u64>,
    /// With --strategy exhaustive: stop after this many runs per policy (then the report
    /// says that more interleavings remain).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) max_runs: u64,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) jobs: Option<u64>,
    #[command(flatten)]
    pub(crate) pol: PolicyArgs,
    #[command(flatten)]
    pub(crate) strat: StrategyArgs,
    /// Write checkpoints (state.json) and the result (sweep.json) into this directory;
    /// Ctrl-C / SIGTERM stops cleanly and keeps every finished chunk of seeds.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Continue the interrupted sweep whose --out directory this is.
    #[arg(long, conflicts_with = "out")]
    pub(crate) resume: Option<PathBuf>,
    /// Testing aid: stop as if interrupted after this many chunks of 4,096 seeds.
    #[arg(long, hide = true)]
    pub(crate) stop_after_chunks: Option<u64>,
    /// Run only shard K of N (1-based) of the seed range; merge the shards' --json outputs
    /// with `fsyncsim merge`.
    #[arg(long, value_parser = models::sweep::Shard::parse)]
    pub(crate) shard: Option<models::sweep::Shard>,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Also count seeds that hit these targets (comma-separated): any metric, with a
    /// threshold (relogged_inodes>=2, wait_for_commit_ns>=1000000); the waste metrics and
    /// S1-S3 are always counted.
    #[arg(long, value_delimiter = ',', value_parser = models::shrink::Target::parse)]
    pub(crate) target: Vec<models::shrink::Target>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args)]
pub(crate) struct ReplayArgs {
    /// Scenario name or path.
    pub(crate) scenario: String,
    /// The seed to replay.
    #[arg(long)]
    pub(crate) seed: u64,
    #[command(flatten)]
    pub(crate) strat: StrategyArgs,
    #[command(flatten)]
    pub(crate) pol: PolicyArgs,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Write a trace of each run to this file: a Perfetto trace (protobuf, opens in
    /// ui.perfetto.dev), or the text timeline when FILE ends in .txt or with --trace-format text.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// The --trace file's format [default: text for FILE.txt, else perfetto].
    #[arg(long, value_name = "FORMAT")]
    pub(crate) trace_format: Option<TraceFormat>,
    #[arg(long, value_name = "FILTER", value_parser = reports::perfetto::TraceFilter::parse, long_help = TRACE_FILTER_HELP)]
    /// Keep only some tasks / a time window in the --trace file (task=NAME,from=1s,to=2s).
    pub(crate) trace_filter: Option<reports::perfetto::TraceFilter>,
    /// Print JSON (the run as `run --json` prints it, with its seed) instead of the timeline.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args)]
pub(crate) struct CrashArgs {
    /// Scenario name or path.
    pub(crate) scenario: String,
    /// When the power fails: "TASK POINT", "TASK POINT#N" or "end" (default: the
    /// scenario's [expect.crash] at).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) at: Option<String>,
    #[command(flatten)]
    pub(crate) pol: PolicyArgs,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Run seed (default: the scenario's).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Print JSON: {scenario, policy, at, recovered: {paths: {...}} or error}.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args)]
pub(crate) struct ShrinkArgs {
    /// Scenario name or path.
    pub(crate) scenario: String,
    /// The seed whose explored run hits the target.
    #[arg(long)]
    pub(crate) seed: u64,
    /// What must keep hitting: a metric (unnecessary_inode_logs, relogged_inodes>=2, wait_for_commit_ns>=1000000, …) or an invariant (S1, S2, S3).
    #[arg(long, value_parser = models::shrink::Target::parse)]
    pub(crate) target: models::shrink::Target,
    #[command(flatten)]
    pub(crate) strat: StrategyArgs,
    #[command(flatten)]
    pub(crate) pol: PolicyArgs,
    /// Device preset or file (default: the scenario's).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Write the scenario file here (default: print it).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Print JSON (sizes, values, and the scenario file as `toml`) instead of the summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

/// The flags that override a workload file's parameters.
#[derive(Args, Clone)]
pub(crate) struct LoadArgs {
    /// Workload name (`fsyncsim list --workloads`: dbench, sysbench-fileio, fs-mark, the
    /// fsperf tests, the ext4 kbuild thread's fs-mark-fio-ext4/ext3 and kbuild, …; compare also takes
    /// `fsperf` for all three fsperf tests) or path to a workload TOML file.
    pub(crate) workload: String,
    /// dbench clients.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) clients: Option<u32>,
    /// sysbench / fs_mark threads.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) threads: Option<u32>,
    /// Measured virtual time (e.g. 300s).
    #[arg(long, value_parser = parse_runtime, allow_hyphen_values = true)]
    pub(crate) duration: Option<u64>,
    /// Virtual time before measuring (e.g. 60s; 0 for none).
    #[arg(long, value_parser = sim::parse_duration, allow_hyphen_values = true)]
    pub(crate) warmup: Option<u64>,
    /// Device preset or file (default: the workload's).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// dbench -s: every write synchronous (O_SYNC opens).
    #[arg(long)]
    pub(crate) sync_open: bool,
    /// CPU cores the simulated CPU time runs on, round robin (`unlimited`: no contention;
    /// default: the workload's `cpus`).
    #[arg(long, value_parser = parse_cpus)]
    pub(crate) cpus: Option<Cpus>,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

/// `--cpus`: N cores, or None for `unlimited`. (A newtype: clap reads `Option<Option<T>>`
/// as a flag with an optional value, and panicked on every `--cpus`.)
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cpus(pub(crate) Option<u64>);

/// `--cpus N` (1..=4096) or `unlimited`.
pub(crate) fn parse_cpus(s: &str) -> Result<Cpus, String> {
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
    pub(crate) fn load(&self) -> Result<(models::workload::spec::Spec, DiskConfig), Failure> {
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
        let dev = DiskConfig::resolve(self.device.as_deref().unwrap_or(&spec.device))
            .map_err(|e| Failure(e.to_string()))?;
        Ok((spec, dev))
    }
}

#[derive(Args)]
pub(crate) struct WorkloadArgs {
    #[command(flatten)]
    pub(crate) load: LoadArgs,
    #[command(flatten)]
    pub(crate) pol: PolicyArgs,
    /// Run seed (default: the workload's).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write HdrHistogram V2 interval logs (.hlog), one per operation, into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) hdr_out: Option<PathBuf>,
    /// kbuild: print `iostat -x` in sysstat 9's columns (rrqm/s … avgrq-sz avgqu-sz await svctm %util) instead of today's (r_await, aqu-sz, rareq-sz …)
    #[arg(long)]
    pub(crate) iostat_sysstat9: bool,
    /// Write a Perfetto trace (protobuf, opens in ui.perfetto.dev) of the run to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Keep only some tasks / operations / a time window in the --trace file
    /// (task=client3,op=Flush,from=1s,to=2s).
    #[arg(long, value_name = "FILTER", value_parser = reports::perfetto::TraceFilter::parse, long_help = TRACE_FILTER_HELP)]
    pub(crate) trace_filter: Option<reports::perfetto::TraceFilter>,
}

#[derive(Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    pub(crate) load: LoadArgs,
    /// Baseline policy [default: linux-5.10; for `fsperf`, linux-5.13].
    #[arg(long, value_parser = models::kernel::parse_policy)]
    pub(crate) baseline: Option<Policy>,
    /// Current policy [default: linux-5.11; for `fsperf`, linux-5.14].
    #[arg(long, value_parser = models::kernel::parse_policy)]
    pub(crate) current: Option<Policy>,
    /// Seeds per side, a range A..B (B exclusive) or a count N (the N seeds from --seed on);
    /// differences are paired seed by seed.
    #[arg(long, default_value = "1", value_parser = flags::CompareSeeds::parse)]
    pub(crate) seeds: flags::CompareSeeds,
    /// First seed when --seeds is a count (default: the workload's).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// One row per value of a workload or device parameter, e.g. queue_depth=32,254,1024, or
    /// of a btrfs [costs] key (`fsyncsim list --costs`), e.g. costs.tree_locks=0,1.
    #[arg(long, value_parser = models::workload::compare::parse_vary)]
    pub(crate) vary: Option<(String, Vec<String>)>,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) jobs: Option<u64>,
    /// Write results.json, latency/cdf/attribution plots (PNG, SVG) and trace.pftrace here.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Also write a Perfetto trace of the current policy's first run: to FILE, or without
    /// FILE to trace.pftrace in --out.
    #[arg(long, num_args = 0..=1, value_name = "FILE")]
    pub(crate) trace: Option<Option<PathBuf>>,
    /// Keep only some tasks / operations / a time window in the --trace file
    /// (task=client3,op=Flush,from=1s,to=2s).
    #[arg(long, value_name = "FILTER", value_parser = reports::perfetto::TraceFilter::parse, long_help = TRACE_FILTER_HELP)]
    pub(crate) trace_filter: Option<reports::perfetto::TraceFilter>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write HdrHistogram V2 interval logs (.hlog), one per policy and operation (one interval per run), into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) hdr_out: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct ValidateArgs {
    /// Shorter runs (dbench 20 s, sysbench 60 s) with two paired seeds and 95 % intervals.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Also run every btrfs experiment with each model mechanism off (tree_locks,
    /// delayed_items, delayed_refs, btree_cpu, switch_cpu, csum_cpu, writeback_cpu, global_rsv,
    /// log_cow, cpu_contention) and print what each moved: eleven times the btrfs runs.
    #[arg(long)]
    pub(crate) ablate: bool,
    /// Print JSON: {rows: [{id, thread, figure, thread_value, model_value, unit,
    /// direction_match, ratio}], curves: [...], ablation: {...} with --ablate}.
    #[arg(long)]
    pub(crate) json: bool,
    /// Worker threads (default: all cores); results do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) jobs: Option<u32>,
    /// Only these experiments: comma-separated ids or id prefixes (`000-dbench64`, `004`,
    /// `002-scrub`; the ids are the rows' first part), with their curves.
    #[arg(long, value_name = "IDS", value_parser = models::validate::Selection::parse)]
    pub(crate) only: Option<models::validate::Selection>,
}

/// `--policy`: a release preset with optional `:±SWITCH` modifiers, as `[policies]` takes.
pub(crate) fn parse_policy(s: &str) -> Result<Policy, String> {
    models::kernel::parse_policy(s)
}

pub(crate) fn parse_fix(s: &str) -> Result<Fix, String> {
    Fix::parse(s).ok_or_else(|| format!("unknown fix '{s}': expected R1, R2, R3, R4, R5, R6 or R7"))
}

pub(crate) fn parse_mutant(s: &str) -> Result<Mutant, String> {
    Mutant::parse(s).ok_or_else(|| {
        format!(
            "unknown mutant '{s}': expected one of {}",
            Mutant::ALL.map(|m| m.name()).join(", ")
        )
    })
}

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Take a global mutex before asking for a slot (+2 events per request).
    #[arg(long)]
    pub(crate) lock: bool,
    /// Requests to complete.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) requests: u64,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args)]
pub(crate) struct FioArgs {
    /// Device preset (nvme, sas-ssd, sata-ssd, hdd) or path to a device TOML file.
    #[arg(long, default_value = "nvme")]
    pub(crate) device: String,
    /// Access pattern.
    #[arg(long, default_value = "randread", value_parser = parse_rw)]
    pub(crate) rw: fio::RwMode,
    /// Block size (4k, 64KiB, 1M).
    #[arg(long, default_value = "4k", value_parser = parse_bs, allow_hyphen_values = true)]
    pub(crate) bs: u64,
    /// Requests in flight per job.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub(crate) iodepth: u32,
    /// Jobs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) numjobs: u32,
    /// Flush the device cache every N writes per job (0: never).
    #[arg(long, default_value_t = 0)]
    pub(crate) fsync: u32,
    /// Virtual run time (300s, 1.5s, 250ms).
    #[arg(long, default_value = "1s", value_parser = parse_runtime, allow_hyphen_values = true)]
    pub(crate) runtime: u64,
    /// Bytes each job addresses.
    #[arg(long, default_value = "1g", value_parser = parse_bs)]
    pub(crate) size: u64,
    /// Percentage of reads for randrw.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub(crate) rwmixread: u32,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print fio's JSON (fio --output-format=json) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print fio's json+ (--json with each latency's histogram bins).
    #[arg(long)]
    pub(crate) json_plus: bool,
    /// Write HdrHistogram V2 interval logs (.hlog), one per direction and latency (read_clat.hlog, …), into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) hdr_out: Option<PathBuf>,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

pub(crate) fn parse_rw(s: &str) -> Result<fio::RwMode, String> {
    fio::RwMode::parse(s).ok_or_else(|| {
        format!(
            "unknown mode '{s}': expected one of {}",
            fio::RwMode::NAMES.join(", ")
        )
    })
}

pub(crate) fn parse_bs(s: &str) -> Result<u64, String> {
    match models::units::parse_size(s)? {
        0 => Err("expected a size > 0 like 4k, 64KiB, 1M".to_string()),
        n => Ok(n),
    }
}

pub(crate) fn parse_runtime(s: &str) -> Result<u64, String> {
    match sim::parse_duration(s)? {
        0 => Err("expected a duration > 0 like 1s, 300s, 250ms".to_string()),
        n => Ok(n),
    }
}

#[derive(Args)]
pub(crate) struct ScrubArgs {
    /// Device preset or path to a device TOML file.
    #[arg(long, default_value = "hdd-smr-5400")]
    pub(crate) device: String,
    /// Readahead policy: reada (v5.16 framework), path-reada (v5.17), none.
    #[arg(long, default_value = "reada", value_parser = parse_scrub_policy)]
    pub(crate) policy: models::btrfs::scrub::ScrubPolicy,
    /// Run reada and path-reada on the same filesystem and set them beside the btrfs scrub thread.
    #[arg(long, conflicts_with = "policy")]
    pub(crate) compare: bool,
    /// Fraction of the btrfs scrub thread's 65,536 files to populate (below about 0.5 the metadata fits in
    /// the drive's read cache after the metadata chunk's scrub and the policies tie).
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    pub(crate) scale: f64,
    /// Metadata profile: dup (mkfs default on a rotational device) or single.
    #[arg(long, default_value = "dup", value_parser = ["dup", "single"])]
    pub(crate) metadata: String,
    /// Run seed (file sizes and which files are deleted).
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run even when the resource estimate is above the limit (see below; exit 3 otherwise).
    #[arg(long)]
    pub(crate) force: bool,
}

pub(crate) fn parse_scrub_policy(s: &str) -> Result<models::btrfs::scrub::ScrubPolicy, String> {
    use models::btrfs::scrub::ScrubPolicy;
    ScrubPolicy::parse(s).ok_or_else(|| {
        format!(
            "unknown policy '{s}': expected one of {}",
            ScrubPolicy::NAMES.join(", ")
        )
    })
}

pub(crate) fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 4.0 => Ok(x),
        _ => Err(format!(
            "invalid scale '{s}': expected a number > 0 and <= 4"
        )),
    }
}

/// The `--trace-filter` help.
const TRACE_FILTER_HELP: &str = "Keep only part of the --trace file: comma-separated KEY=VALUE \
pairs. task=NAME keeps that task's tracks (repeatable; NAME* matches a prefix, e.g. task=client*); \
op=NAME keeps that workload operation's slices and what their tasks did during them (repeatable; \
workload and compare); from=DURATION and to=DURATION keep that window of virtual time, slices cut \
to it; detail=full keeps named points as instants and wake-up flows (the default of run and \
replay), detail=lean leaves them out (the default of workload and compare). A task or operation \
that matches nothing in the run is an error (exit 2, no file).\n\
Example: --trace-filter task=client3,op=Flush,from=1s,to=2s";

/// The format of `run` / `replay --trace FILE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TraceFormat {
    /// Perfetto protobuf (opens in ui.perfetto.dev and trace_processor).
    Perfetto,
    /// The text timeline: one line per engine event.
    Text,
}
