//! The cores' occupancy integrals (`Handle::count_cpu_from`, `Handle::cpu_usage`).

use crate::resource::{ResState, Resource};
use crate::time::Nanos;

/// The cores' occupancy over a window (`Handle::cpu_usage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuUsage {
    /// Cores.
    pub cores: u64,
    /// The window's length, ns.
    pub window_ns: Nanos,
    /// Core-nanoseconds a core was taken (running CPU time, or kept by `take_core`).
    pub busy_ns: u128,
    /// Task-nanoseconds spent queued for a core.
    pub queued_ns: u128,
}

impl CpuUsage {
    /// The share of the cores' time they were taken, 0 to 1.
    pub fn busy(&self) -> f64 {
        self.busy_ns as f64 / (self.cores.max(1) as f64 * self.window_ns.max(1) as f64)
    }

    /// Tasks queued for a core, on average over the window.
    pub fn run_queue(&self) -> f64 {
        self.queued_ns as f64 / self.window_ns.max(1) as f64
    }
}

/// The cores' occupancy integrals (`Handle::count_cpu_from`, `Handle::cpu_usage`).
#[derive(Default)]
pub(crate) struct CpuMeter {
    /// Counting starts here.
    pub(crate) from: Nanos,
    /// The last time the integrals were brought up to.
    last: Nanos,
    pub(crate) busy_ns: u128,
    pub(crate) queued_ns: u128,
}

impl CpuMeter {
    /// Adds the interval since the last tick, clipped to the window, at the occupancy
    /// `cores` holds (unchanged since then).
    #[inline(always)]
    pub(crate) fn tick(&mut self, now: Nanos, cores: &Resource) {
        let start = self.last.max(self.from);
        self.last = now;
        if now <= start {
            return;
        }
        let ResState::Semaphore {
            permits,
            capacity,
            waiters,
        } = &cores.state
        else {
            unreachable!("the cores are a semaphore")
        };
        let dt = u128::from(now - start);
        self.busy_ns += u128::from(capacity - permits) * dt;
        self.queued_ns += waiters.len() as u128 * dt;
    }
}
