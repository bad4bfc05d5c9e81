//! Engine behaviour: event order, primitives, accounting, named points, deadlock and stuck
//! reports, determinism.

use sim::{Handle, Mutex, Pick, RwSem, Scheduler, Script, Semaphore, Sim, SimError, WaitQueue};
use std::cell::RefCell;
use std::rc::Rc;

type Log = Rc<RefCell<Vec<String>>>;

fn log() -> Log {
    Rc::new(RefCell::new(Vec::new()))
}

fn push(l: &Log, h: &Handle, what: &str) {
    l.borrow_mut().push(format!("{}@{}", what, h.now()));
}

#[test]
fn equal_time_events_run_in_insertion_order() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let l = log();
    // Three tasks whose timers all fire at t=100, inserted in the order c, a, b.
    for (name, first) in [("c", 100), ("a", 40), ("b", 70)] {
        let (h2, l2) = (h.clone(), l.clone());
        sim.spawn(name, async move {
            h2.sleep(first).await;
            if first < 100 {
                h2.sleep(100 - first).await;
            }
            push(&l2, &h2, name);
        });
    }
    sim.run().unwrap();
    // c inserted its t=100 timer at t=0; a at t=40; b at t=70.
    assert_eq!(*l.borrow(), vec!["c@100", "a@100", "b@100"]);
}

#[test]
fn heap_events_of_an_instant_run_before_wakeups_made_at_it() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let l = log();
    let q = WaitQueue::new(&h, "q");
    {
        let (h, l, q) = (h.clone(), l.clone(), q.clone());
        sim.spawn("waiter", async move {
            q.wait().await;
            push(&l, &h, "waiter");
        });
    }
    {
        let (h, l, q) = (h.clone(), l.clone(), q.clone());
        sim.spawn("notifier", async move {
            h.sleep(50).await;
            q.notify_one(); // wake-up made at t=50
            push(&l, &h, "notifier");
        });
    }
    {
        let (h, l) = (h.clone(), l.clone());
        sim.spawn("sleeper", async move {
            h.sleep(50).await; // timer for t=50 inserted at t=0, after notifier's
            push(&l, &h, "sleeper");
        });
    }
    sim.run().unwrap();
    assert_eq!(*l.borrow(), vec!["notifier@50", "sleeper@50", "waiter@50"]);
}

#[test]
fn mutex_hands_off_fifo_and_accounts_waits() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let m = Mutex::new(&h, "tree_log_mutex");
    let l = log();
    let mut ids = Vec::new();
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let (h, m, l) = (h.clone(), m.clone(), l.clone());
        ids.push(sim.spawn(name, async move {
            h.sleep(i as u64).await; // arrive at t=0,1,2
            let g = m.lock().await;
            assert_eq!(m.owner(), Some(h.current()));
            push(&l, &h, name);
            h.cpu(100).await;
            drop(g);
        }));
    }
    sim.run().unwrap();
    assert_eq!(*l.borrow(), vec!["a@0", "b@100", "c@200"]);
    let st = sim
        .resource_stats()
        .into_iter()
        .find(|r| r.name == "tree_log_mutex")
        .unwrap();
    assert_eq!((st.acquisitions, st.waits), (3, 2));
    assert_eq!(st.wait_ns, 99 + 198);
    assert_eq!(st.max_wait_ns, 198);
    let class = h.class("tree_log_mutex");
    assert_eq!(h.account_of(ids[0], class), 0);
    assert_eq!(h.account_of(ids[1], class), 99);
    assert_eq!(h.account_of(ids[2], class), 198);
    assert_eq!(h.account_of(ids[2], sim::runtime::CLASS_CPU), 100);
}

#[test]
fn semaphore_grants_fifo_without_overtaking() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let s = Semaphore::new(&h, "slots", 3);
    let l = log();
    // "big" wants 3 permits and queues first; "small" (1 permit) must not overtake it.
    for (name, delay, n) in [("hold", 0, 2), ("big", 1, 3), ("small", 2, 1)] {
        let (h, s, l) = (h.clone(), s.clone(), l.clone());
        sim.spawn(name, async move {
            h.sleep(delay).await;
            let p = s.acquire_n(n).await;
            push(&l, &h, name);
            h.sleep(10).await;
            drop(p);
        });
    }
    sim.run().unwrap();
    assert_eq!(*l.borrow(), vec!["hold@0", "big@10", "small@20"]);
    assert_eq!(s.available(), 3);
}

#[test]
fn wait_queue_notify_all_wakes_everyone_in_order() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let q = WaitQueue::new(&h, "commit_wait");
    let l = log();
    for name in ["w1", "w2", "w3"] {
        let (h, q, l) = (h.clone(), q.clone(), l.clone());
        sim.spawn(name, async move {
            q.wait().await;
            push(&l, &h, name);
        });
    }
    let (h2, q2) = (h.clone(), q.clone());
    sim.spawn("committer", async move {
        h2.sleep(5).await;
        assert_eq!(q2.notify_all(), 3);
    });
    sim.run().unwrap();
    assert_eq!(*l.borrow(), vec!["w1@5", "w2@5", "w3@5"]);
}

#[test]
fn deadlock_names_each_blocked_task_what_it_waits_for_and_the_holder() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let m1 = Mutex::new(&h, "log_mutex");
    let m2 = Mutex::new(&h, "tree_log_mutex");
    for (name, a, b) in [("fsync", m1.clone(), m2.clone()), ("commit", m2, m1)] {
        let h = h.clone();
        sim.spawn(name, async move {
            let _ga = a.lock().await;
            h.sleep(10).await;
            let _gb = b.lock().await;
        });
    }
    match sim.run() {
        Err(SimError::Deadlock { at, blocked }) => {
            assert_eq!(at, 10);
            assert_eq!(blocked.len(), 2);
            assert!(
                blocked[0]
                    .contains("task 'fsync' waits for mutex 'tree_log_mutex' held by 'commit'"),
                "{blocked:?}"
            );
            assert!(
                blocked[1].contains("task 'commit' waits for mutex 'log_mutex' held by 'fsync'"),
                "{blocked:?}"
            );
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn a_lost_wakeup_is_reported_not_hung() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let q = WaitQueue::new(&h, "never_notified");
    sim.spawn("sleeper", async move { q.wait().await });
    let err = sim.run().unwrap_err().to_string();
    assert!(
        err.contains("task 'sleeper' waits for wait queue 'never_notified'"),
        "{err}"
    );
}

#[test]
fn daemons_do_not_keep_a_run_alive_or_count_as_deadlocked() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let q = WaitQueue::new(&h, "work");
    let h2 = h.clone();
    sim.spawn_daemon("periodic", async move {
        loop {
            h2.sleep(30_000).await;
        }
    });
    let q2 = q.clone();
    sim.spawn_daemon("idle_unit", async move { q2.wait().await });
    let h3 = h.clone();
    sim.spawn("client", async move { h3.sleep(100_000).await });
    let s = sim.run().unwrap();
    assert_eq!(s.end, 100_000);
}

#[test]
fn time_limit_ends_a_run_that_would_go_on() {
    let mut sim = Sim::new();
    let h = sim.handle();
    sim.spawn("forever", async move {
        loop {
            h.sleep(1_000).await;
        }
    });
    sim.set_time_limit(1_000_000);
    assert!(matches!(
        sim.run(),
        Err(SimError::TimeLimit { live: 1, .. })
    ));
}

/// Runs two tasks that each pass points p1 and p2, under a scheduler; returns the order.
fn run_points(sched: Box<dyn Scheduler>) -> Result<Vec<String>, SimError> {
    let mut sim = Sim::new();
    sim.set_scheduler(sched);
    let h = sim.handle();
    let l = log();
    for name in ["A", "B"] {
        let (h, l) = (h.clone(), l.clone());
        sim.spawn(name, async move {
            for p in ["p1", "p2"] {
                let id = h.point_id(p);
                h.point(id).await;
                l.borrow_mut().push(format!("{name}:{p}"));
                h.cpu(10).await;
            }
        });
    }
    sim.run()?;
    let v = l.borrow().clone();
    Ok(v)
}

#[test]
fn fifo_points_are_plain_yields() {
    let order = run_points(Box::new(sim::Fifo)).unwrap();
    assert_eq!(order, vec!["A:p1", "B:p1", "A:p2", "B:p2"]);
}

#[test]
fn a_script_orders_tasks_at_named_points() {
    let steps = [("B", "p1"), ("B", "p2"), ("A", "p1"), ("A", "p2")]
        .iter()
        .map(|(t, p)| (t.to_string(), p.to_string()))
        .collect();
    let order = run_points(Box::new(Script::new(steps))).unwrap();
    assert_eq!(order, vec!["B:p1", "B:p2", "A:p1", "A:p2"]);
}

#[test]
fn a_script_that_cannot_progress_is_reported_with_the_step() {
    let steps = vec![
        ("A".to_string(), "p1".to_string()),
        ("B".to_string(), "p9".to_string()),
        ("A".to_string(), "p2".to_string()),
    ];
    let err = run_points(Box::new(Script::new(steps))).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, SimError::Stuck { .. }), "{text}");
    assert!(
        text.contains("step 2 waits for task 'B' to reach point 'p9'"),
        "{text}"
    );
    assert!(text.contains("task 'A' at point 'p2'"), "{text}");
}

/// A custom decision-maker: always releases the most recently paused task (LIFO).
struct Lifo;
impl Scheduler for Lifo {
    fn pauses_at_points(&self) -> bool {
        true
    }
    fn pick(&mut self, view: &sim::ChoiceView<'_>) -> Pick {
        match view.paused.len() {
            0 => Pick::Hold,
            n => Pick::Release(n - 1),
        }
    }
}

#[test]
fn a_pluggable_scheduler_decides_at_points() {
    // The scheduler is asked once the instant's events are exhausted: at t=0 both tasks
    // wait at p1 (B last), at t=10 both wait at p2 (A last, its timer was inserted later).
    let order = run_points(Box::new(Lifo)).unwrap();
    assert_eq!(order, vec!["B:p1", "A:p1", "A:p2", "B:p2"]);
}

/// `Handle::cpu` with cores behaves, quantum by quantum, as `Semaphore::acquire`, a
/// `Handle::delay` of one quantum attributed to "cpu" and the permit's release would: the same
/// trace (records, times, order), hash, end, resumption count and per-task waits — including
/// the quanta the run loop starts itself for a task granted a core while it was queued.
#[test]
fn cpu_bursts_match_acquire_delay_release_step_by_step() {
    const CORES: u64 = 2;
    const QUANTUM: u64 = 30;
    const BURSTS: [&[u64]; 5] = [&[10, 70], &[45], &[5, 5, 5], &[100], &[30, 1]];
    let run = |explicit: bool| {
        let mut sim = Sim::new();
        sim.keep_trace(true);
        let h = sim.handle();
        let sem = if explicit {
            Some(Semaphore::with_class(&h, "cpu", "cpu_wait", CORES))
        } else {
            h.set_cpus(CORES, QUANTUM);
            None
        };
        let cpu = h.class_static("cpu");
        for (i, b) in BURSTS.iter().enumerate() {
            let (h, sem) = (h.clone(), sem.clone());
            sim.spawn(&format!("t{i}"), async move {
                for &d in b.iter() {
                    match &sem {
                        None => h.cpu(d).await,
                        Some(s) => {
                            let mut left = d;
                            while left > 0 {
                                let q = left.min(QUANTUM);
                                let permit = s.acquire().await;
                                h.delay(q, cpu).await;
                                drop(permit);
                                left -= q;
                            }
                        }
                    }
                    h.sleep(3).await;
                }
            });
        }
        let summary = sim.run().unwrap();
        let wait = h.class_static("cpu_wait");
        let waits: Vec<(u64, u64)> = (0..BURSTS.len() as u32)
            .map(|t| (h.account_of(t, cpu), h.account_of(t, wait)))
            .collect();
        (summary, sim.render_trace(), waits)
    };
    let (a, trace_a, waits_a) = run(false);
    let (b, trace_b, waits_b) = run(true);
    assert_eq!(trace_a, trace_b);
    assert_eq!(
        (a.trace_hash, a.end, a.dispatches),
        (b.trace_hash, b.end, b.dispatches)
    );
    assert_eq!(waits_a, waits_b);
    // Bursts did queue for a core (the path the run loop shortens), and a queued task's
    // quantum starts at its grant.
    let queued = trace_a.iter().filter(|l| l.contains("wait cpu")).count();
    assert!(queued >= 3, "{trace_a:#?}");
    assert!(waits_a.iter().any(|&(_, w)| w > 0), "{waits_a:?}");
}

/// `Handle::cpu_usage`: the cores' busy integral is the CPU the tasks ran and the run-queue
/// integral their "cpu_wait", over the whole run; a window from `count_cpu_from` counts
/// only what lies in it; a core kept by `take_core` is busy while its holder sleeps.
#[test]
fn cpu_usage_integrates_what_the_tasks_ran_and_waited() {
    const BURSTS: [&[u64]; 4] = [&[10, 70], &[45], &[5, 5, 5], &[100]];
    let run = |from: Option<u64>| {
        let mut sim = Sim::new();
        let h = sim.handle();
        h.set_cpus(2, 30);
        if let Some(f) = from {
            h.count_cpu_from(f);
        }
        for (i, b) in BURSTS.iter().enumerate() {
            let h = h.clone();
            sim.spawn(&format!("t{i}"), async move {
                for &d in b.iter() {
                    h.cpu(d).await;
                    h.sleep(3).await;
                }
            });
        }
        sim.run().unwrap();
        let (cpu, wait) = (h.class_static("cpu"), h.class_static("cpu_wait"));
        let sum = |c| {
            (0..BURSTS.len() as u32)
                .map(|t| h.account_of(t, c))
                .sum::<u64>()
        };
        (h.cpu_usage().unwrap(), sum(cpu), sum(wait), h.now())
    };
    let (all, ran, waited, end) = run(None);
    assert_eq!(all.cores, 2);
    assert_eq!(all.window_ns, end);
    assert_eq!(all.busy_ns, u128::from(ran));
    assert_eq!(all.queued_ns, u128::from(waited));
    assert!(
        waited > 0 && all.busy() > 0.5 && all.busy() <= 1.0,
        "{all:?}"
    );
    assert!((all.run_queue() - waited as f64 / end as f64).abs() < 1e-12);
    // Counting from t=60: less, and the window is what is left.
    let (late, ..) = run(Some(60));
    assert_eq!(late.window_ns, end - 60);
    assert!(late.busy_ns < all.busy_ns && late.busy_ns > 0, "{late:?}");
    assert!(late.busy_ns <= 2 * u128::from(end - 60));
    assert!(late.queued_ns < all.queued_ns);
    // A core kept by take_core is busy while its holder sleeps.
    let mut sim = Sim::new();
    let h = sim.handle();
    h.set_cpus(1, 30);
    let h1 = h.clone();
    sim.spawn("holder", async move {
        let core = h1.take_core().await;
        h1.sleep(40).await;
        drop(core);
        h1.sleep(60).await;
    });
    sim.run().unwrap();
    let u = h.cpu_usage().unwrap();
    assert_eq!((u.busy_ns, u.window_ns, u.queued_ns), (40, 100, 0));
    // Unlimited CPU: nothing to count.
    assert!(Sim::new().handle().cpu_usage().is_none());
}

#[test]
fn trace_log_is_optional_and_the_hash_is_computed_either_way() {
    let run = |keep: bool| {
        let mut sim = Sim::new();
        sim.keep_trace(keep);
        let h = sim.handle();
        let m = Mutex::new(&h, "m");
        for name in ["x", "y"] {
            let (h, m) = (h.clone(), m.clone());
            sim.spawn(name, async move {
                let _g = m.lock().await;
                h.cpu(7).await;
            });
        }
        let s = sim.run().unwrap();
        (s.trace_hash, sim.render_trace())
    };
    let (h1, lines) = run(true);
    let (h2, none) = run(false);
    assert_eq!(h1, h2);
    assert!(none.is_empty());
    assert!(lines.iter().any(|l| l.contains("wait m")), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("release m -> y")),
        "{lines:?}"
    );
}

#[test]
fn same_seed_same_hash_different_seed_different_hash() {
    use models::workload::bench::{run, BenchParams};
    let p = |seed| BenchParams {
        requests: 20_000,
        seed,
        ..Default::default()
    };
    let a = run(&p(7)).unwrap();
    let b = run(&p(7)).unwrap();
    let c = run(&p(8)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.trace_hash, c.trace_hash);
    let lock = |seed| BenchParams {
        lock: true,
        ..p(seed)
    };
    assert_eq!(run(&lock(3)).unwrap(), run(&lock(3)).unwrap());
    assert_ne!(run(&lock(3)).unwrap().trace_hash, a.trace_hash);
}

#[test]
fn bench_model_matches_its_queueing_check() {
    // 64 clients, 32 slots, think 50 us, service 100 us: saturated at 32/100us.
    let r = models::workload::bench::run(&models::workload::bench::BenchParams {
        requests: 200_000,
        ..Default::default()
    })
    .unwrap();
    assert!(
        (r.sim_iops - 319_700.0).abs() / 319_700.0 < 0.01,
        "{}",
        r.sim_iops
    );
    assert!(
        (r.mean_latency_ns - 150_200.0).abs() / 150_200.0 < 0.01,
        "{}",
        r.mean_latency_ns
    );
    assert_eq!(r.events, 4 * r.requests);
}

#[test]
fn sleeps_longer_than_the_timer_key_range_fire_on_time_and_in_order() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let l = log();
    let long = 3u64 << 40; // beyond the 40-bit relative range of a timer key
    for (name, d) in [("long", long), ("short", 10), ("same", long)] {
        let (h, l) = (h.clone(), l.clone());
        sim.spawn(name, async move {
            h.sleep(d).await;
            push(&l, &h, name);
        });
    }
    let end = sim.run().unwrap().end;
    assert_eq!(end, long);
    assert_eq!(
        *l.borrow(),
        vec![
            "short@10".to_string(),
            format!("long@{long}"),
            format!("same@{long}")
        ]
    );
}

#[test]
fn bench_hand_written_loop_gives_the_engine_results() {
    use models::workload::bench::{run, run_loop, BenchParams};
    for seed in [1, 2, 3] {
        let p = BenchParams {
            requests: 50_000,
            seed,
            ..Default::default()
        };
        let e = run(&p).unwrap();
        let l = run_loop(&p).unwrap();
        assert_eq!(
            (l.requests, l.sim_ns, l.mean_latency_ns),
            (e.requests, e.sim_ns, e.mean_latency_ns)
        );
    }
    assert!(run_loop(&BenchParams {
        lock: true,
        ..Default::default()
    })
    .is_none());
}

#[test]
fn recyclable_mutexes_reuse_idle_slots_and_keep_counting() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let base = sim.resource_stats().len();
    // A lock per object: each object's lock is taken once, then the object goes away.
    for i in 0..100u64 {
        let m = Mutex::recyclable(&h, "obj_lock");
        let held = m.clone();
        let h2 = h.clone();
        sim.spawn("t", async move {
            h2.sleep(i).await;
            let _g = held.lock().await;
            h2.cpu(1).await;
        });
        sim.run().unwrap();
        drop(m);
    }
    let stats = sim.resource_stats();
    assert_eq!(stats.len(), base + 1, "one slot served every object");
    let s = stats.iter().find(|r| r.name == "obj_lock").unwrap();
    assert_eq!(s.acquisitions, 100, "counters add up over the reuses");
    // A slot with a live clone is not reused.
    let a = Mutex::recyclable(&h, "obj_lock");
    let a2 = a.clone();
    drop(a);
    let b = Mutex::recyclable(&h, "obj_lock");
    assert_ne!(
        a2.id(),
        b.id(),
        "a slot still named by a clone was handed out again"
    );
    drop(a2);
    let c = Mutex::recyclable(&h, "obj_lock");
    assert_eq!(sim.resource_stats().len(), base + 2);
    drop((b, c));
    // Plain mutexes are never reused.
    drop(Mutex::new(&h, "plain"));
    drop(Mutex::new(&h, "plain"));
    assert_eq!(sim.resource_stats().len(), base + 4);
}

#[test]
fn rwsem_shares_readers_and_a_waiting_writer_holds_back_later_readers() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let l = log();
    let s = RwSem::recyclable(&h, "obj_rwsem");
    // r1 and r2 read from t=0 to 10; w asks at 1 and must wait for both; r3 asks at 2,
    // behind w, and gets it only when w is done (FIFO).
    for (name, at, write) in [
        ("r1", 0, false),
        ("r2", 0, false),
        ("w", 1, true),
        ("r3", 2, false),
    ] {
        let (h2, l2, s2) = (h.clone(), l.clone(), s.clone());
        sim.spawn(name, async move {
            h2.sleep(at).await;
            if write {
                s2.down_write().await;
            } else {
                s2.down_read().await;
            }
            push(&l2, &h2, name);
            h2.cpu(10 - at.min(9)).await;
            if write {
                s2.up_write();
            } else {
                s2.up_read();
            }
        });
    }
    sim.run().unwrap();
    assert_eq!(
        *l.borrow(),
        ["r1@0", "r2@0", "w@10", "r3@19"],
        "readers share; the writer waits for both; a later reader waits for the writer"
    );
    let st = sim.resource_stats();
    let r = st.iter().find(|r| r.name == "obj_rwsem").unwrap();
    assert_eq!((r.acquisitions, r.waits), (4, 2));
    // Recyclable as a mutex is: the idle slot serves the next lock of the class.
    let before = sim.resource_stats().len();
    drop(s);
    let again = RwSem::recyclable(&h, "obj_rwsem");
    assert_eq!(
        sim.resource_stats().len(),
        before,
        "the idle slot was reused"
    );
    drop(again);
}

/// Runs a holder and a waiter of one mutex on 2 cores, with a switch cost of (1000, 300):
/// (holder's CPU, waiter's CPU, waiter's switches, holder's switches).
fn blocked_waiter_run(wakee: u64, waker: u64) -> (u64, u64, u64, u64) {
    let mut sim = Sim::new();
    let h = sim.handle();
    h.set_cpus(2, 1_000_000);
    h.set_switch_cost(wakee, waker);
    let m = Rc::new(Mutex::new(&h, "m"));
    let (h1, m1) = (h.clone(), m.clone());
    let a = sim.spawn("holder", async move {
        let g = m1.lock().await;
        h1.sleep(10).await;
        drop(g);
        // The wake-up it made is spent at its next CPU burst.
        h1.cpu(100).await;
    });
    let (h2, m2) = (h.clone(), m.clone());
    let b = sim.spawn("waiter", async move {
        h2.sleep(1).await;
        let _g = m2.lock().await;
        h2.cpu(100).await;
        // Both on a core at once: a core's grant is not a wake-up from a block.
        h2.cpu(100).await;
    });
    sim.run().unwrap();
    (
        h.account_of(a, h.class("cpu")),
        h.account_of(b, h.class("cpu")),
        h.switches(b),
        h.switches(a),
    )
}

#[test]
fn a_woken_task_pays_its_switch_and_its_waker_the_wakeup() {
    assert_eq!(blocked_waiter_run(1000, 300), (100 + 300, 200 + 1000, 1, 0));
    // Off (the default): blocking costs nothing.
    assert_eq!(blocked_waiter_run(0, 0), (100, 200, 0, 0));
}
