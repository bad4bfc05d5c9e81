//! The engine benchmark: a fixed closed-loop model built from the engine's primitives.
//!
//! 64 clients; each loops: think Exp(mean 50 µs), take one of 32 device slots (a
//! semaphore), hold it for a service time Exp(mean 100 µs), release. With `lock`, a client
//! takes a global mutex before asking for a slot and releases it once the slot is granted.
//! The run stops when `requests` requests have completed.
//!
//! Queueing check: the slots saturate (64 / 150 µs offered > 32 / 100 µs served), so
//! throughput ≈ 32 / 100 µs = 320,000/s and, by Little's law, mean latency (slot wait +
//! service) ≈ 64 / X − 50 µs ≈ 150 µs.

use rand_distr::{Distribution, Exp1};
use sim::{Handle, Mutex, Nanos, RngStreams, Semaphore, Sim, SimError, Stream};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Parameters of the benchmark model.
#[derive(Clone, Debug)]
pub struct BenchParams {
    /// Client tasks.
    pub clients: u32,
    /// Device slots (semaphore permits).
    pub slots: u64,
    /// Mean think time, ns.
    pub think_mean_ns: f64,
    /// Mean service time, ns.
    pub service_mean_ns: f64,
    /// Stop after this many completed requests.
    pub requests: u64,
    /// Take a global mutex before asking for a slot.
    pub lock: bool,
    /// Run seed.
    pub seed: u64,
}

impl Default for BenchParams {
    fn default() -> Self {
        BenchParams {
            clients: 64,
            slots: 32,
            think_mean_ns: 50_000.0,
            service_mean_ns: 100_000.0,
            requests: 1_000_000,
            lock: false,
            seed: 1,
        }
    }
}

/// What one benchmark run produced (virtual-time results only; wall time is the caller's).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    /// Requests completed.
    pub requests: u64,
    /// Events by the benchmark's convention: 4 per request (think timer, slot grant,
    /// service completion, release), 6 with the lock (+ lock grant, lock release).
    pub events: u64,
    /// Task resumptions the engine performed.
    pub dispatches: u64,
    /// Virtual time at the end, ns.
    pub sim_ns: Nanos,
    /// Simulated requests per simulated second.
    pub sim_iops: f64,
    /// Mean latency from asking for a slot (or the lock) to release, ns.
    pub mean_latency_ns: f64,
    /// Hash of the run's event sequence.
    pub trace_hash: u64,
}

#[inline(always)]
fn exp_ns(rng: &mut Stream, mean: f64) -> Nanos {
    let x: f64 = Exp1.sample(rng);
    (x * mean + 0.5) as Nanos
}

struct Shared {
    done: Cell<u64>,
    latency_sum: Cell<u128>,
    /// Think times (the workload's stream).
    think: RefCell<Stream>,
    /// Service times (the device's stream).
    service: RefCell<Stream>,
}

async fn client(
    h: Handle,
    p: Rc<BenchParams>,
    slots: Semaphore,
    lock: Option<Mutex>,
    shared: Rc<Shared>,
) {
    loop {
        let think = exp_ns(&mut shared.think.borrow_mut(), p.think_mean_ns);
        h.sleep(think).await;
        let start = h.now();
        let permit = match &lock {
            Some(m) => {
                let _g = m.lock().await;
                slots.acquire().await
            }
            None => slots.acquire().await,
        };
        let service = exp_ns(&mut shared.service.borrow_mut(), p.service_mean_ns);
        h.sleep(service).await;
        drop(permit);
        let done = shared.done.get() + 1;
        shared.done.set(done);
        shared
            .latency_sum
            .set(shared.latency_sum.get() + u128::from(h.now() - start));
        if done >= p.requests {
            h.stop();
            return;
        }
    }
}

/// Runs the benchmark model.
pub fn run(p: &BenchParams) -> Result<BenchResult, SimError> {
    let mut sim = Sim::new();
    // Nothing here reads the tasks' per-class wait accounts.
    sim.set_wait_accounting(false);
    let h = sim.handle();
    let mut streams = RngStreams::new(p.seed);
    let slots = Semaphore::new(&h, "device_slots", p.slots);
    let lock = p.lock.then(|| Mutex::new(&h, "global_lock"));
    let shared = Rc::new(Shared {
        done: Cell::new(0),
        latency_sum: Cell::new(0),
        think: RefCell::new(streams.stream("bench.think")),
        service: RefCell::new(streams.stream("bench.service")),
    });
    let params = Rc::new(p.clone());
    for i in 0..p.clients {
        sim.spawn(
            &format!("client{i}"),
            client(
                h.clone(),
                params.clone(),
                slots.clone(),
                lock.clone(),
                shared.clone(),
            ),
        );
    }
    let summary = sim.run()?;
    let requests = shared.done.get();
    Ok(BenchResult {
        requests,
        events: requests * if p.lock { 6 } else { 4 },
        dispatches: summary.dispatches,
        sim_ns: summary.end,
        sim_iops: requests as f64 / (summary.end as f64 / 1e9),
        mean_latency_ns: shared.latency_sum.get() as f64 / requests.max(1) as f64,
        trace_hash: summary.trace_hash,
    })
}

/// Runs the benchmark and measures its wall-clock time (outside the simulation, which
/// never reads the clock).
pub fn run_timed(p: &BenchParams) -> Result<(BenchResult, f64), SimError> {
    let start = std::time::Instant::now();
    let r = run(p)?;
    Ok((r, start.elapsed().as_secs_f64()))
}

/// What the hand-written loop produced: the engine model's virtual-time results.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopResult {
    /// Requests completed.
    pub requests: u64,
    /// Virtual time at the end, ns.
    pub sim_ns: Nanos,
    /// Mean latency from asking for a slot to release, ns.
    pub mean_latency_ns: f64,
}

/// The base model as a hand-written event loop with the engine's results (None with `lock`).
pub fn run_loop(p: &BenchParams) -> Option<LoopResult> {
    // A `BinaryHeap` of (time, sequence, client) timers, a FIFO of slot waiters and a FIFO of
    // clients granted a slot at the current instant, with the engine's event order (timers
    // of an instant first, then wake-ups) and the same streams and draws: what the engine is
    // measured against. Only the base model (no lock).
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, VecDeque};
    if p.lock {
        return None;
    }
    let mut streams = RngStreams::new(p.seed);
    let mut think = streams.stream("bench.think");
    let mut service = streams.stream("bench.service");
    let n = p.clients as usize;
    let mut timers: BinaryHeap<Reverse<(Nanos, u64, u32)>> = BinaryHeap::with_capacity(n);
    let mut waiters: VecDeque<u32> = VecDeque::with_capacity(n);
    let mut granted: VecDeque<u32> = VecDeque::with_capacity(n);
    let mut in_service = vec![false; n];
    let mut start = vec![0 as Nanos; n];
    let (mut now, mut seq, mut free, mut done, mut latency_sum) = (0, 0u64, p.slots, 0u64, 0u128);
    for c in 0..p.clients {
        timers.push(Reverse((exp_ns(&mut think, p.think_mean_ns), seq, c)));
        seq += 1;
    }
    loop {
        // Timers of the current instant, then the clients granted a slot at it, then the
        // next instant.
        let c = match timers.peek() {
            Some(&Reverse((at, _, _))) if at == now || granted.is_empty() => {
                let Reverse((at, _, c)) = timers.pop().expect("peeked");
                now = at;
                c
            }
            _ => match granted.pop_front() {
                Some(c) => {
                    // Granted at release: start the service.
                    let d = exp_ns(&mut service, p.service_mean_ns);
                    timers.push(Reverse((now + d, seq, c)));
                    seq += 1;
                    continue;
                }
                None => break,
            },
        };
        let i = c as usize;
        if in_service[i] {
            // Service done: release the slot (to the longest waiter), then think.
            in_service[i] = false;
            match waiters.pop_front() {
                Some(w) => {
                    in_service[w as usize] = true;
                    granted.push_back(w);
                }
                None => free += 1,
            }
            done += 1;
            latency_sum += u128::from(now - start[i]);
            if done >= p.requests {
                break;
            }
            timers.push(Reverse((now + exp_ns(&mut think, p.think_mean_ns), seq, c)));
            seq += 1;
        } else {
            // Think done: ask for a slot.
            start[i] = now;
            if waiters.is_empty() && free > 0 {
                free -= 1;
                in_service[i] = true;
                let d = exp_ns(&mut service, p.service_mean_ns);
                timers.push(Reverse((now + d, seq, c)));
                seq += 1;
            } else {
                waiters.push_back(c);
            }
        }
    }
    Some(LoopResult {
        requests: done,
        sim_ns: now,
        mean_latency_ns: latency_sum as f64 / done.max(1) as f64,
    })
}

/// Runs the hand-written loop and measures its wall-clock time.
pub fn run_loop_timed(p: &BenchParams) -> Option<(LoopResult, f64)> {
    let start = std::time::Instant::now();
    let r = run_loop(p)?;
    Some((r, start.elapsed().as_secs_f64()))
}
