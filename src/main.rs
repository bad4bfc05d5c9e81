//! The `fsyncsim` command line: parses arguments and wires models to reports. No logic here.

use clap::{Args, Parser, Subcommand};
use models::device::{presets, DeviceConfig};
use models::workload::{bench, fio};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "fsyncsim",
    version,
    about = "Deterministic discrete-event simulator of filesystem commit/fsync races",
    long_about = "fsyncsim interleaves simulated tasks (committers, fsyncers, writers) against a \
                  modeled block device in virtual time. Same inputs + seed => bit-identical run.",
    after_help = "Examples:\n  fsyncsim bench\n  fsyncsim fio --device nvme --rw randwrite --bs 4k --iodepth 32 --fsync 8\n  fsyncsim devices"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure the engine's speed on a fixed closed-loop model (64 clients, 32 slots).
    #[command(after_help = "Examples:\n  fsyncsim bench\n  fsyncsim bench --lock --json")]
    Bench(BenchArgs),
    /// Run a fio-like synthetic load against a simulated device.
    #[command(
        after_help = "Examples:\n  fsyncsim fio --device nvme --rw randread --bs 4k --iodepth 32\n  fsyncsim fio --device hdd --rw randwrite --fsync 1 --runtime 10s --json\n  fsyncsim fio --device my-ssd.toml --rw randrw --numjobs 4"
    )]
    Fio(FioArgs),
    /// List the device presets and their main parameters.
    Devices,
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
                print!("{e}");
                return ExitCode::SUCCESS;
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                eprint!("{e}");
                return ExitCode::from(2);
            }
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("error");
            eprintln!("{first}");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Bench(a) => {
            let p = bench::BenchParams {
                lock: a.lock,
                requests: a.requests,
                seed: a.seed,
                ..Default::default()
            };
            let (r, secs) = bench::run_timed(&p).map_err(|e| Failure(e.to_string()))?;
            let w = reports::bench::Wall { seconds: secs };
            if a.json {
                println!("{:#}", reports::bench::json(&p, &r, w));
            } else {
                print!("{}", reports::bench::text(&p, &r, w));
            }
        }
        Command::Fio(a) => {
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
                println!("{:#}", reports::fio::json(&r));
            } else {
                print!("{}", reports::fio::text(&r));
            }
        }
        Command::Devices => {
            let cfgs: Vec<DeviceConfig> = presets::NAMES
                .iter()
                .filter_map(|n| presets::by_name(n))
                .collect();
            print!("{}", reports::devices::text(&cfgs));
        }
    }
    Ok(())
}
