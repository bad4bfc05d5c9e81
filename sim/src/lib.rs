//! fsyncsim's engine: virtual time, a deterministic single-threaded executor for simulated
//! tasks written as async code, synchronisation primitives that account every nanosecond a
//! task waits, named RNG streams, named points with a pluggable scheduler, and a trace.
//!
//! The engine knows nothing about filesystems or devices; those live in `models`.

// Modules in import order: each imports only from the groups above it (issue 24 item 5).
pub mod check;
mod ring;
pub mod rng;
pub mod time;

pub mod error;
pub mod queue;
mod task;

mod meter;
mod resource;
pub mod sched;

pub mod trace;

mod core;

mod handle;

mod futures;
pub mod sync;

mod cpu;

mod run;

pub mod runtime;

pub use error::SimError;
pub use meter::CpuUsage;
pub use rng::{RngStreams, Stream};
pub use runtime::{
    ClassId, Handle, HeldCore, PointId, ResId, ResourceKind, ResourceStats, RunSummary, Sim,
    TaskId, ValueId,
};
pub use sched::{
    ChoiceView, Dfs, Fifo, PausedTask, Pct, Pick, RandomWalk, Replay, Scheduler, Script,
    ScriptThen, Urw,
};
pub use sync::{Mutex, MutexGuard, RwSem, Semaphore, SemaphorePermit, WaitQueue};
pub use time::{format_duration, parse_duration, Nanos, MS, NS, S, US};
