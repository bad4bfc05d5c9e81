//! The CPU model: `Handle::cpu` (round-robin quanta on the cores of `Handle::set_cpus`, a
//! semaphore), `Handle::busy`, and `Handle::take_core` / `HeldCore` (a core kept across a
//! critical section).

use crate::core::Core;
use crate::futures::Delay;
use crate::handle::Handle;
use crate::meter::CpuUsage;
use crate::resource::ResState;
use crate::sync::{sem_acquire, sem_release, Semaphore};
use crate::task::{ResId, TaskId, CLASS_CPU};
use crate::time::Nanos;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

impl Handle {
    /// Spends `d` of CPU time (the task is busy, attributed to "cpu"). With `set_cpus`, the
    /// task first waits for a free core ("cpu_wait", FIFO run queue) and runs at most one
    /// quantum before queueing again (round robin).
    #[inline]
    pub fn cpu(&self, d: Nanos) -> Cpu<'_> {
        Cpu {
            h: self,
            left: d,
            q: 0,
            id: 0,
            quantum: 0,
            task: 0,
            step: CpuStep::Start,
        }
    }

    /// Takes a core and keeps it until the returned guard drops, for work that is not
    /// descheduled (a critical section, and the waiters spinning for it, which burn their
    /// core while they wait); waits for the core are "cpu_wait". None without `set_cpus`
    /// (CPU time is not contended).
    pub async fn take_core(&self) -> Option<HeldCore> {
        let id = self.core().cpus?.0;
        let s = Semaphore {
            h: self.clone(),
            id,
        };
        s.acquire().await.forget();
        Some(HeldCore(s))
    }

    /// Spends `d` of CPU time on a core the task holds (`take_core`), or anywhere without
    /// `set_cpus`: attributed to "cpu", never queued.
    #[inline]
    pub fn busy(&self, d: Nanos) -> Delay<'_> {
        self.delay(d, CLASS_CPU)
    }

    /// Makes CPU time contended: `cores` cores shared round-robin with time slices of
    /// `quantum`; waits for a core are attributed to "cpu_wait". Call before spawning tasks.
    pub fn set_cpus(&self, cores: u64, quantum: Nanos) {
        let s = Semaphore::with_class(self, "cpu", "cpu_wait", cores.max(1));
        let mut c = self.core();
        c.switch.free_class = c.resources[s.id as usize].class;
        c.cpus = Some((s.id, quantum.max(1)));
    }

    /// Counts the cores' occupancy (`cpu_usage`) from virtual time `from` on; earlier time
    /// is not counted. Call after `set_cpus`.
    pub fn count_cpu_from(&self, from: Nanos) {
        let mut c = self.core();
        let now = c.now;
        c.tick_cpu_meter(now);
        c.cpu_meter.from = from;
        c.cpu_meter.busy_ns = 0;
        c.cpu_meter.queued_ns = 0;
    }

    /// The cores' occupancy from `count_cpu_from`'s time (0 by default) to now; None
    /// without `set_cpus`.
    pub fn cpu_usage(&self) -> Option<CpuUsage> {
        let mut c = self.core();
        let (id, _) = c.cpus?;
        let now = c.now;
        c.tick_cpu_meter(now);
        let m = &c.cpu_meter;
        let ResState::Semaphore { capacity, .. } = c.resources[id as usize].state else {
            unreachable!("the cores are a semaphore")
        };
        Some(CpuUsage {
            cores: capacity,
            window_ns: now.saturating_sub(m.from),
            busy_ns: m.busy_ns,
            queued_ns: m.queued_ns,
        })
    }

    /// Charges CPU for blocking: a task woken from a resource wait (not a core's) or a park
    /// owes `wakee` (its switch out and back in), the task that woke it `waker` (the
    /// wake-up); each spends what it owes at the start of its next `cpu`. 0 and 0 (the
    /// default): blocking costs nothing.
    pub fn set_switch_cost(&self, wakee: Nanos, waker: Nanos) {
        let mut c = self.core();
        c.switch.wakee = wakee;
        c.switch.waker = waker;
        c.switch.on = wakee > 0 || waker > 0;
    }

    /// Whether the running task owes switch CPU (`set_switch_cost`) not spent yet.
    pub fn owes_cpu(&self) -> bool {
        let c = self.core.borrow();
        c.tasks[c.current as usize].owed > 0
    }

    /// Times task `t` was woken from a block while a switch cost was set.
    pub fn switches(&self, t: TaskId) -> u64 {
        self.core.borrow().tasks[t as usize].switches
    }
}

/// A core taken by `Handle::take_core`; given back when dropped.
pub struct HeldCore(Semaphore);

impl Drop for HeldCore {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Where a `Cpu` future is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CpuStep {
    /// Not polled yet.
    Start,
    /// Unlimited CPU: sleeping the whole time.
    Sleeping,
    /// Queued for a core.
    Queued,
    /// On a core for one quantum.
    Running,
    /// Finished.
    Done,
}

/// Future of `Handle::cpu`: with cores, per quantum it takes a core (or queues for one),
/// sleeps the quantum and gives the core back, each step in one borrow of the engine and
/// with the same trace records as `Semaphore::acquire`, `Handle::delay` and
/// `Semaphore::release` would make.
pub struct Cpu<'a> {
    h: &'a Handle,
    /// CPU time not yet run.
    left: Nanos,
    /// The quantum being run.
    q: Nanos,
    /// The cores' semaphore and quantum (with `set_cpus`).
    id: ResId,
    quantum: Nanos,
    /// The task running this future (set when it first takes or queues for a core).
    task: TaskId,
    step: CpuStep,
}

impl Cpu<'_> {
    /// Takes a core for the next quantum and sleeps it, or queues for one.
    #[inline(always)]
    fn next_quantum(&mut self, c: &mut Core) -> Poll<()> {
        let q = self.left.min(self.quantum);
        self.q = q;
        if sem_acquire(c, self.id, 1) {
            self.step = CpuStep::Running;
            c.delay_current(q, CLASS_CPU);
        } else {
            // Granted later: the run loop starts this quantum when it picks the task (the
            // same records and timer as the `delay_current` above would make in a resumption,
            // without polling the task's futures down to here), so the next poll is the
            // quantum's end.
            c.tasks[self.task as usize].cpu_q = q;
            c.cpu_starts += 1;
            self.step = CpuStep::Queued;
        }
        Poll::Pending
    }

    /// A task dropped while queued holds a core only once the run loop started its quantum.
    #[cold]
    #[inline(never)]
    fn give_back_core_if_started(&mut self) {
        let started = self.h.core.borrow().tasks[self.task as usize].cpu_q == 0;
        if started {
            self.give_back_core();
        }
    }

    /// A task dropped while on a core gives it back (ignored while the simulation is
    /// dropped), as the permit of `Semaphore::acquire` would.
    #[cold]
    #[inline(never)]
    fn give_back_core(&mut self) {
        let mut c = self.h.core();
        if !c.tearing_down {
            sem_release(&mut c, self.id, 1);
        }
    }
}

impl Future for Cpu<'_> {
    type Output = ();
    #[inline]
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        match this.step {
            CpuStep::Start => {
                let mut g = this.h.core();
                let c: &mut Core = &mut g;
                match c.cpus {
                    None => {
                        this.left += std::mem::take(&mut c.tasks[c.current as usize].owed);
                        this.step = CpuStep::Sleeping;
                        c.delay_current(this.left, CLASS_CPU);
                        Poll::Pending
                    }
                    Some(_) if this.left == 0 && c.tasks[c.current as usize].owed == 0 => {
                        this.step = CpuStep::Done;
                        Poll::Ready(())
                    }
                    Some((id, quantum)) => {
                        this.left += std::mem::take(&mut c.tasks[c.current as usize].owed);
                        this.id = id;
                        this.quantum = quantum;
                        this.task = c.current;
                        this.next_quantum(c)
                    }
                }
            }
            CpuStep::Queued | CpuStep::Running => {
                let mut g = this.h.core();
                let c: &mut Core = &mut g;
                crate::check_eq!(c.tasks[c.current as usize].cpu_q, 0, "quantum not started");
                sem_release(c, this.id, 1);
                this.left -= this.q;
                if this.left == 0 {
                    this.step = CpuStep::Done;
                    Poll::Ready(())
                } else {
                    this.next_quantum(c)
                }
            }
            CpuStep::Sleeping | CpuStep::Done => {
                this.step = CpuStep::Done;
                Poll::Ready(())
            }
        }
    }
}

impl Drop for Cpu<'_> {
    #[inline]
    fn drop(&mut self) {
        match self.step {
            CpuStep::Running => self.give_back_core(),
            CpuStep::Queued => self.give_back_core_if_started(),
            _ => {}
        }
    }
}
