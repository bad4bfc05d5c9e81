//! The executor: `Sim`, which owns the tasks' futures and polls them, on top of the engine's
//! modules (in import order: `task` → `resource`, `sched` → `trace` → `core` → `handle` →
//! `futures`, `sync` → `cpu` → `run` → `runtime`).
//!
//! Tasks are `async` blocks polled by a single-threaded loop. A task is polled only when the
//! one thing it waits for has happened (timer fired, lock handed over, permit granted,
//! queue notified, parked task unparked, paused point released), so every primitive's
//! future returns `Pending` once and `Ready` on its next poll. Wakers are not used: the engine
//! itself knows which task to resume, which keeps the per-event path free of allocation and
//! reference counting.
//!
//! Event order is (time, insertion sequence): timers live in a `TimerQueue` (a 4-ary heap
//! of packed keys that pops same-instant timers in insertion order); wake-ups at the current
//! instant go to a FIFO ready queue, which runs after the timers of the same instant (those
//! were inserted earlier, so they have smaller sequence numbers).

pub use crate::cpu::{Cpu, HeldCore};
pub use crate::futures::{Delay, Park, Point};
pub use crate::handle::Handle;
pub use crate::resource::{ResourceKind, ResourceStats};
pub use crate::task::{
    ClassId, PointId, ResId, TaskId, ValueId, CLASS_CPU, CLASS_POINT, CLASS_SLEEP,
};

use crate::core::Core;
use crate::error::SimError;
use crate::resource::ResState;
use crate::run::{adopt, next_task, STARTED_QUANTUM};
use crate::sched::{Fifo, Scheduler};
use crate::task::{BoxFuture, TaskState};
use crate::time::Nanos;
use crate::trace::{TraceKind, TraceRecord};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Waker};

/// How a run ended, with its counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// Virtual time at the end.
    pub end: Nanos,
    /// Task resumptions performed.
    pub dispatches: u64,
    /// 64-bit hash of the event sequence.
    pub trace_hash: u64,
    /// Whether a task called `Handle::stop`.
    pub stopped: bool,
}

/// A simulation: owns the tasks and runs them to completion in virtual time.
pub struct Sim {
    handle: Handle,
    futures: Vec<Option<BoxFuture>>,
    scheduler: Box<dyn Scheduler>,
    limit: Nanos,
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Unfinished tasks may hold guards; their drops must not touch engine state.
        self.handle.core().tearing_down = true;
        self.futures.clear();
    }
}

impl Default for Sim {
    fn default() -> Self {
        Self::new()
    }
}

impl Sim {
    /// An empty simulation at t=0 with the FIFO scheduler and no time limit.
    pub fn new() -> Self {
        Sim {
            handle: Handle {
                core: Rc::new(RefCell::new(Core::new())),
            },
            futures: Vec::new(),
            scheduler: Box::new(Fifo),
            limit: Nanos::MAX,
        }
    }

    /// The handle tasks use; clone it into each task.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Replaces the decision-maker asked at named points.
    pub fn set_scheduler(&mut self, s: Box<dyn Scheduler>) {
        self.handle.core().pauses_at_points = s.pauses_at_points();
        self.handle.core().explores_ties = s.chooses_ties();
        self.handle.core().slow = true;
        self.scheduler = s;
    }

    /// The decision-maker (to ask what it expected and never saw).
    pub fn scheduler(&self) -> &dyn Scheduler {
        self.scheduler.as_ref()
    }

    /// Makes named points plain trace marks that do not yield (long workload runs, where no
    /// scheduler decides at points); the default (true) yields like a zero sleep.
    pub fn set_points_yield(&mut self, on: bool) {
        self.handle.core().points_yield = on;
    }

    /// Stops the run with `SimError::TimeLimit` if virtual time would pass `limit`.
    pub fn set_time_limit(&mut self, limit: Nanos) {
        self.limit = limit;
    }

    /// Turns per-task wait accounts (`Handle::account_of`) on (the default) or off.
    pub fn set_wait_accounting(&mut self, on: bool) {
        // Resource statistics and the trace hash are kept either way.
        self.handle.core().accounting = on;
    }

    /// Keeps every trace record in memory (the hash is computed either way).
    pub fn keep_trace(&mut self, keep: bool) {
        self.handle.core().trace.keep = keep;
    }

    /// The (task, point) names of every released named point, in release order: the
    /// script that replays this run's interleaving (kept with the trace log only).
    pub fn point_releases(&self) -> Vec<(String, String)> {
        let c = self.handle.core.borrow();
        c.released
            .iter()
            .map(|&(t, p)| {
                (
                    c.tasks[t as usize].name.to_string(),
                    c.points.names[p as usize].to_string(),
                )
            })
            .collect()
    }

    /// The trace records kept so far.
    pub fn trace_records(&self) -> Vec<TraceRecord> {
        self.handle.core.borrow().trace.records.clone()
    }

    /// Renders trace records as text lines, with task, class, resource and point names
    /// (the model's counter values left out: they are a trace's counter tracks).
    pub fn render_trace(&self) -> Vec<String> {
        let c = self.handle.core.borrow();
        c.trace
            .records
            .iter()
            .filter(|r| !matches!(r.kind, TraceKind::Value(_)))
            .map(|r| c.render(r))
            .collect()
    }

    /// Starts a task at t=0 (or at the current time, between runs).
    pub fn spawn(&mut self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.handle.spawn(name, fut);
        self.adopt_spawned();
        id
    }

    /// Starts a daemon task (see `Handle::spawn_daemon`).
    pub fn spawn_daemon(&mut self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.handle.spawn_daemon(name, fut);
        self.adopt_spawned();
        id
    }

    /// Starts a helper task (see `Handle::spawn_helper`).
    pub fn spawn_helper(&mut self, name: &str, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.handle.spawn_helper(name, fut);
        self.adopt_spawned();
        id
    }

    /// The names the kept trace records refer to.
    pub fn trace_names(&self) -> crate::trace::TraceNames {
        let mut names = crate::trace::TraceNames::default();
        self.handle.update_names(&mut names);
        names
    }

    fn adopt_spawned(&mut self) {
        let mut c = self.handle.core();
        adopt(&mut self.futures, &mut c);
    }

    /// Counters of every resource, in creation order.
    pub fn resource_stats(&self) -> Vec<ResourceStats> {
        let c = self.handle.core.borrow();
        c.resources
            .iter()
            .map(|r| ResourceStats {
                name: r.name.to_string(),
                kind: match r.state {
                    ResState::Mutex { .. } => ResourceKind::Mutex,
                    ResState::Semaphore { .. } => ResourceKind::Semaphore,
                    ResState::WaitQueue { .. } => ResourceKind::WaitQueue,
                },
                acquisitions: r.acquisitions,
                waits: r.waits,
                wait_ns: r.wait_ns,
                max_wait_ns: r.max_wait_ns,
            })
            .collect()
    }

    /// Names of the wait classes, indexed by class id.
    pub fn class_names(&self) -> Vec<String> {
        let c = self.handle.core.borrow();
        c.classes.names.iter().map(|n| n.to_string()).collect()
    }

    /// Runs until every non-daemon task has finished, a task calls `stop`, or an error.
    pub fn run(&mut self) -> Result<RunSummary, SimError> {
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        loop {
            // One borrow of the core per resumption: adopt what the last poll spawned, then
            // pick the next task.
            let t = {
                let mut c = self.handle.core.borrow_mut();
                if c.slow {
                    if !c.spawned.is_empty() {
                        adopt(&mut self.futures, &mut c);
                    }
                    if c.stop {
                        break;
                    }
                    c.slow = c.live == 0
                        || c.explores_ties
                        || !c.paused.is_empty()
                        || c.heap.due_in_heap(c.now);
                }
                match next_task(&mut c, self.scheduler.as_mut(), self.limit)? {
                    // `dispatch` started a granted CPU quantum: nothing to poll.
                    Some(STARTED_QUANTUM) => continue,
                    Some(t) => t,
                    None => break,
                }
            };
            let Some(fut) = self.futures[t as usize].as_mut() else {
                unreachable!("task {t} resumed without a future");
            };
            if fut.as_mut().poll(&mut cx).is_ready() {
                self.futures[t as usize] = None;
                let mut c = self.handle.core();
                c.record(t, TraceKind::Exit, 0);
                let task = &mut c.tasks[t as usize];
                task.state = TaskState::Done;
                if !task.daemon {
                    c.live -= 1;
                    c.slow |= c.live == 0;
                }
            }
        }
        let c = self.handle.core.borrow();
        Ok(RunSummary {
            end: c.now,
            dispatches: c.dispatches,
            trace_hash: c.trace.hash(),
            stopped: c.stop,
        })
    }
}
