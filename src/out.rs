//! The process's output layer: every write of `fsyncsim` to stdout and stderr goes through
//! here (the `out!`, `outln!`, `err!` macros and [`error`]), and the exit codes live here.
//!
//! Why here and not in `reports/`: this is process-level plumbing, not rendering. `reports/`
//! turns results into strings and files and never decides how the process ends; a failed
//! write to stdout or stderr *does* end it, so the policy belongs to the binary:
//!
//! - a broken pipe (`fsyncsim run | head -2`) ends the process quietly with exit 0, as other
//!   Unix tools do (Rust ignores SIGPIPE, so the write returns `EPIPE` instead of killing us);
//! - any other write error (`fsyncsim list > /dev/full`) prints one line,
//!   `fsyncsim: cannot write to stdout: <error>`, to stderr and exits 1.
//!
//! Every write is flushed before it returns, so an error is seen here rather than swallowed by
//! the flush at exit. Result *files* (`--out`, `--trace`) are written by `reports::output`,
//! which refuses paths that exist and are not regular files. Progress bars (indicatif) draw on
//! stderr themselves and ignore errors, which is what a progress bar should do.

use std::fmt;
use std::io::{self, Write};

/// Exit codes, the same for every subcommand (docs/tools.md, "Exit codes"; `--help`).
pub mod code {
    /// Success.
    pub const OK: u8 = 0;
    /// A check failed, an invariant fired, or stdout/stderr could not be written.
    pub const FAILED: u8 = 1;
    /// Bad input: flags, files, a scenario that cannot play.
    pub const BAD_INPUT: u8 = 2;
    /// A resource limit refused the request (src/limits.rs; `--force` overrides it).
    pub const LIMIT: u8 = 3;
}

/// Writes to stdout, or ends the process (see the module doc).
pub fn stdout(args: fmt::Arguments, newline: bool) {
    let result = write(&mut io::stdout().lock(), args, newline);
    if let Err(e) = result {
        failed("stdout", &e);
    }
}

/// Writes to stderr (diagnostics that are part of a successful run), or ends the process.
pub fn stderr(args: fmt::Arguments, newline: bool) {
    let result = write(&mut io::stderr().lock(), args, newline);
    if let Err(e) = result {
        failed("stderr", &e);
    }
}

/// Writes the one-line message of a failure that ends the process with a non-zero code. A
/// failure to write it is ignored: the exit code already tells, and nothing else could.
pub fn error(args: fmt::Arguments, newline: bool) {
    let _ = write(&mut io::stderr().lock(), args, newline);
}

fn write(w: &mut dyn Write, args: fmt::Arguments, newline: bool) -> io::Result<()> {
    w.write_fmt(args)?;
    if newline {
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// Ends the process after a failed write to `stream` (the lock on it is released by now).
fn failed(stream: &str, e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(code::OK.into());
    }
    error(
        format_args!("fsyncsim: cannot write to {stream}: {e}"),
        true,
    );
    std::process::exit(code::FAILED.into())
}

/// `print!` through the output layer.
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*), false) };
}

/// `println!` through the output layer.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::out::stdout(format_args!($($arg)*), true) };
}

/// `eprint!` through the output layer, for diagnostics of a run that goes on.
macro_rules! err {
    ($($arg:tt)*) => { $crate::out::stderr(format_args!($($arg)*), false) };
}

pub(crate) use {err, out, outln};
