//! The block layer's request queue and elevators (`models::block`), each test asserting a
//! documented rule of Linux 2.6.37 (`block/deadline-iosched.c`, `block/cfq-iosched.c`,
//! `block/blk-core.c`, `block/blk-flush.c`) on small devices with constant latencies.

use models::block::BlockStats;
use models::block::DiskConfig;
use models::device::dist::NonNeg;
use models::device::{presets, Device, IoClass, IoDone, LatencyDist, Request};
use sim::{RngStreams, Sim};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn us(x: f64) -> LatencyDist {
    LatencyDist::Constant { us: NonNeg(x) }
}

/// A rotational (`queue/rotational = 1`) device with constant latencies: read 1 ms, write
/// 100 us, FUA write 200 us, flush 500 us; `qd` tags, `par` service units.
fn device(sched: &str, qd: u64, par: u64) -> DiskConfig {
    let mut c = DiskConfig::from(presets::by_name("nvme").unwrap());
    c.name = "sda".into();
    c.transfer_ns_per_byte = 0.0;
    c.read = us(1000.0);
    c.write = us(100.0);
    c.fua_write = us(200.0);
    c.flush.base = us(500.0);
    c.flush.ns_per_dirty_byte = NonNeg(0.0);
    c.hw_queues = 1;
    c.queue_depth = qd;
    c.parallelism = par;
    c.scheduler = sched.into();
    c.sched.queue.rotational = Some(true);
    c
}

fn block(dev: &Device) -> BlockStats {
    models::block::genhd::stats(dev).expect("a block layer")
}

type Log = Rc<RefCell<Vec<(char, IoDone)>>>;

/// `n` closed-loop tasks reading at ascending, non-contiguous offsets from `base` (one
/// shared cursor), until `until`; each read is logged with `tag`.
fn spawn_stream(
    sim: &mut Sim,
    dev: &Device,
    n: usize,
    base: u64,
    until: u64,
    tag: char,
    log: &Log,
) {
    let cursor = Rc::new(Cell::new(base));
    for i in 0..n {
        let (d, h, log, cur) = (dev.clone(), sim.handle(), log.clone(), cursor.clone());
        sim.spawn(&format!("stream{tag}{i}"), async move {
            while h.now() < until {
                let off = cur.get();
                cur.set(off + MIB);
                let r = d.submit(Request::read(off, 4 * KIB).with_ioc(1)).await;
                log.borrow_mut().push((tag, r));
            }
        });
    }
}

#[test]
fn deadline_serves_writes_after_at_most_writes_starved_read_batches() {
    // One tag, one unit: service order is dispatch order. 96 reads and 96 writes wait at
    // once; deadline prefers reads but starts a write batch once reads have had
    // writes_starved (2) batches of fifo_batch (16) while writes were pending.
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, device("deadline", 1, 1), &mut streams, false);
    let log: Log = Rc::default();
    for i in 0..96u64 {
        for (tag, req) in [
            ('R', Request::read(i * MIB, 4 * KIB)),
            (
                'W',
                Request::write((512 + i) * MIB, 4 * KIB).with_class(IoClass::Async),
            ),
        ] {
            let (d, log) = (dev.clone(), log.clone());
            sim.spawn(&format!("{tag}{i}"), async move {
                let r = d.submit(req).await;
                log.borrow_mut().push((tag, r));
            });
        }
    }
    sim.run().unwrap();
    let mut order: Vec<(char, u64)> = log.borrow().iter().map(|(t, d)| (*t, d.started)).collect();
    order.sort_by_key(|x| x.1);
    let seq: String = order.iter().map(|x| x.0).collect();
    // Runs of reads while writes were still pending: at most 2 batches of 16 (the first run
    // may include the request dispatched when the plug was pulled).
    let last_w = seq.rfind('W').unwrap();
    for run in seq[..last_w].split('W').filter(|r| !r.is_empty()) {
        assert!(
            run.len() <= 2 * 16 + 1,
            "read run of {} in {seq}",
            run.len()
        );
    }
    // While reads wait, a write batch is at most fifo_batch long.
    let last_r = seq.rfind('R').unwrap();
    for run in seq[..last_r].split('R').filter(|r| !r.is_empty()) {
        assert!(
            run.len() <= 16,
            "a write batch longer than fifo_batch: {seq}"
        );
    }
    let st = block(&dev);
    assert!(st.starved_write_batches >= 2, "{st:?}");
    assert_eq!(st.dispatches, [96, 96]);
}

#[test]
fn deadline_serves_an_expired_read_behind_the_head_by_its_fifo() {
    // A stream of ascending reads always has a next request in sector order; a lone read
    // behind the head is reached only through the FIFO once read_expire (500 ms) passed.
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, device("deadline", 1, 1), &mut streams, false);
    let log: Log = Rc::default();
    spawn_stream(&mut sim, &dev, 16, 1 << 30, 800 * MS, 'S', &log);
    let (d, h, l) = (dev.clone(), sim.handle(), log.clone());
    sim.spawn("lone", async move {
        h.sleep(MS).await;
        let r = d.submit(Request::read(0, 4 * KIB).with_ioc(2)).await;
        l.borrow_mut().push(('L', r));
    });
    sim.run().unwrap();
    let lone = log.borrow().iter().find(|x| x.0 == 'L').unwrap().1;
    let wait = lone.latency();
    assert!(wait >= 500 * MS, "served before expiry: {wait}");
    // Expired at 501 ms; served at the next batch start (≤ 16 reads of 1 ms) + service.
    assert!(wait <= 500 * MS + 18 * MS, "waited {wait} ns");
    assert!(block(&dev).fifo_expired_batches >= 1);
    // Under noop the same read is served in arrival order, within a queue's worth.
    let mut sim = Sim::new();
    let dev = models::block::add_disk(
        &mut sim,
        device("noop", 1, 1),
        &mut RngStreams::new(1),
        false,
    );
    let log: Log = Rc::default();
    spawn_stream(&mut sim, &dev, 16, 1 << 30, 100 * MS, 'S', &log);
    let (d, h, l) = (dev.clone(), sim.handle(), log.clone());
    sim.spawn("lone", async move {
        h.sleep(MS).await;
        let r = d.submit(Request::read(0, 4 * KIB).with_ioc(2)).await;
        l.borrow_mut().push(('L', r));
    });
    sim.run().unwrap();
    let lone = log.borrow().iter().find(|x| x.0 == 'L').unwrap().1;
    assert!(lone.latency() <= 20 * MS, "{}", lone.latency());
}

/// `readers` closed-loop tasks (own I/O contexts), each reading `n` times with `think` ns
/// between a completion and the next read, sequentially or seeking far; returns CFQ stats.
fn cfq_readers(readers: u32, n: u64, think: u64, seeky: bool, noidle_writes: bool) -> BlockStats {
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(7);
    let dev = models::block::add_disk(&mut sim, device("cfq", 31, 1), &mut streams, false);
    for r in 0..readers {
        let (d, h) = (dev.clone(), sim.handle());
        sim.spawn(&format!("reader{r}"), async move {
            for i in 0..n {
                let base = u64::from(r) * (64 << 30);
                let off = if seeky {
                    base + (i * 7919 % 1000) * 64 * MIB
                } else {
                    base + i * 4 * KIB
                };
                let req = if noidle_writes {
                    // WRITE_SYNC: REQ_SYNC | REQ_NOIDLE | REQ_UNPLUG.
                    Request::write(off, 4 * KIB).with_hints(true, true)
                } else {
                    Request::read(off, 4 * KIB)
                };
                d.submit(req.with_ioc(r + 1)).await;
                h.sleep(think).await;
            }
        });
    }
    sim.run().unwrap();
    block(&dev)
}

#[test]
fn cfq_idles_for_a_sequential_reader_with_short_think_time_not_for_seeky_ones() {
    // Two sequential readers, 100 us think time: both keep their idle window (mean think
    // time <= slice_idle, not seeky) and stay on the SYNC tree; CFQ arms the idle timer
    // after nearly every read, the next read ends the wait, and the other reader, far away,
    // may not preempt (cfq_rq_close).
    let seq = cfq_readers(2, 200, 100 * US, false, false);
    assert!(seq.idle_armed >= 380, "{seq:?}");
    assert_eq!(seq.tree_adds[0] + seq.tree_adds[1], 0, "{seq:?}");
    assert_eq!(seq.preemptions, 0, "{seq:?}");
    // Two seeky readers (> 4 of the last 32 requests > 800 sectors apart): their idle
    // windows close and they move to SYNC_NOIDLE. CFQ idles there only for the tree as a
    // whole (the last queue in it), and the other seeky reader's request preempts that
    // wait (cfq_should_preempt: two SYNC_NOIDLE queues while idling on that tree).
    let seeky = cfq_readers(2, 200, 100 * US, true, false);
    assert!(
        seeky.tree_adds[1] >= 100 && seeky.tree_adds[2] <= 4,
        "{seeky:?}"
    );
    assert!(seeky.preemptions >= 100, "{seeky:?}");
    // Idle time per wait is far shorter than for the sequential readers' own windows.
    assert!(seeky.idle_ns < seq.idle_ns, "{seeky:?} {seq:?}");
    // A long think time (20 ms > slice_idle) also closes the window once think time has
    // enough samples (ttime_samples > 80): the readers leave the SYNC tree.
    let slow = cfq_readers(2, 200, 20 * MS, false, false);
    assert!(slow.tree_adds[1] > 0, "{slow:?}");
}

#[test]
fn noidle_requests_go_to_the_sync_noidle_tree() {
    // WRITE_SYNC writers: REQ_NOIDLE closes the idle window at the first request
    // (cfq_update_idle_window, after cfq_add_rq_rb put the new queue on SYNC); every later
    // insertion of these queues is into SYNC_NOIDLE.
    let two = cfq_readers(2, 100, 100 * US, false, true);
    assert_eq!(two.tree_adds[0], 0, "{two:?}");
    assert!(two.tree_adds[2] <= 2, "{two:?}");
    assert!(two.tree_adds[1] >= 1, "{two:?}");
    // Sync reads without REQ_NOIDLE never go there.
    let reads = cfq_readers(2, 100, 100 * US, false, false);
    assert_eq!(reads.tree_adds[1], 0, "{reads:?}");
    // One WRITE_SYNC writer alone is the last queue of its tree: CFQ idles for the tree as
    // a whole (cfq_should_idle: service_tree->count == 1).
    let one = cfq_readers(1, 100, 100 * US, false, true);
    assert!(one.idle_armed >= 50, "{one:?}");
}

/// One closed-loop WRITE_SYNC writer (4 KiB, REQ_NOIDLE, 100 us think time) for 1 s, beside
/// a sequential reader with `readers` reads outstanding; the writes done.
fn noidle_writer_beside(readers: usize) -> usize {
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(3);
    let dev = models::block::add_disk(&mut sim, device("cfq", 31, 1), &mut streams, false);
    // One sequential reader's I/O context with `readers` reads outstanding (as readahead
    // keeps one queued behind the one in flight): the SYNC tree, always busy.
    let cursor = Rc::new(Cell::new(1u64 << 30));
    for i in 0..readers {
        let (d, h, cur) = (dev.clone(), sim.handle(), cursor.clone());
        sim.spawn(&format!("reader{i}"), async move {
            while h.now() < 1000 * MS {
                let off = cur.get();
                cur.set(off + 4 * KIB);
                d.submit(Request::read(off, 4 * KIB).with_ioc(1)).await;
            }
        });
    }
    let done = Rc::new(Cell::new(0));
    let (d, h, n) = (dev.clone(), sim.handle(), done.clone());
    sim.spawn("writer", async move {
        let mut off = 0;
        while h.now() < 1000 * MS {
            let w = Request::write(off, 4 * KIB).with_hints(true, true);
            d.submit(w.with_ioc(2)).await;
            n.set(n.get() + 1);
            off += 4 * KIB;
            h.sleep(100 * US).await;
        }
    });
    sim.run().unwrap();
    done.get()
}

#[test]
fn a_sync_noidle_tree_of_noidle_requests_does_not_idle_while_other_queues_wait() {
    // cfq_completed_request@v2.6.37: the SYNC_NOIDLE workload idles at the end of its tree
    // only after a request without REQ_NOIDLE, or when its queue is the group's only busy
    // one. Alone, the writer's queue is idled on and keeps the disk: ~1 write per 200 us.
    let alone = noidle_writer_beside(0);
    assert!(alone >= 3000, "{alone}");
    // Beside readers that always have a request queued, each completed write ends the
    // writer's turn (no idle: its next write comes 100 us later, after the readers' SYNC
    // workload was chosen), so it gets about one write per readers' workload slice.
    let shared = noidle_writer_beside(2);
    assert!(shared <= 40, "{shared}");
}

#[test]
fn a_sync_request_preempts_an_active_async_queue() {
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, device("cfq", 31, 1), &mut streams, false);
    // 2000 async 4 KiB writes, far apart (no merging), 100 us each: 200 ms of backlog.
    for i in 0..2000u64 {
        dev.submit_detached(
            Request::write(i * MIB, 4 * KIB)
                .with_class(IoClass::Async)
                .with_ioc(1),
        );
    }
    dev.unplug();
    let out = Rc::new(Cell::new(0));
    let (d, h, o) = (dev.clone(), sim.handle(), out.clone());
    sim.spawn("reader", async move {
        h.sleep(5 * MS).await;
        let r = d.submit(Request::read(1 << 40, 4 * KIB).with_ioc(2)).await;
        o.set(r.latency());
        d.drain().await;
    });
    sim.run().unwrap();
    let st = block(&dev);
    assert!(st.preemptions >= 1, "{st:?}");
    assert!(st.sync_preempts_async >= 1, "{st:?}");
    // The read does not wait for the async backlog (195 ms left when it arrives); it waits
    // at most the async workload slice (300 ms × 40/100 scaled by queues) and the
    // requests in flight.
    assert!(out.get() < 130 * MS, "read waited {} ns", out.get());
    assert_eq!(st.dispatches[1], 2000);
}

#[test]
fn async_requests_are_not_dispatched_while_sync_requests_are_in_flight() {
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(3);
    let dev = models::block::add_disk(&mut sim, device("cfq", 31, 4), &mut streams, false);
    let log: Log = Rc::default();
    // Four sync readers, closed loop, for 50 ms.
    spawn_stream(&mut sim, &dev, 4, 1 << 40, 50 * MS, 'S', &log);
    // 200 async writers, each one write at a scattered offset.
    for i in 0..200u64 {
        let (d, h, log) = (dev.clone(), sim.handle(), log.clone());
        sim.spawn(&format!("w{i}"), async move {
            h.sleep(i * 100 * US).await;
            let req = Request::write(i * 64 * MIB, 4 * KIB)
                .with_class(IoClass::Async)
                .with_ioc(100);
            let r = d.submit(req).await;
            log.borrow_mut().push(('A', r));
        });
    }
    sim.run().unwrap();
    let log = log.borrow();
    let sync: Vec<&IoDone> = log.iter().filter(|x| x.0 == 'S').map(|x| &x.1).collect();
    let mut checked = 0;
    for a in log.iter().filter(|x| x.0 == 'A') {
        let t = a.1.issued;
        for s in &sync {
            assert!(
                !(s.issued < t && t < s.completed),
                "async dispatched at {t} while a sync read was in flight ({} .. {})",
                s.issued,
                s.completed
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 200);
    let st = block(&dev);
    assert!(st.async_blocked_ns > 0, "{st:?}");
    assert!(st.may_dispatch_refused > 0, "{st:?}");
}

/// One task submits `n` contiguous 4 KiB writes without waiting, then waits for them all;
/// returns (write dispatches, write merges).
fn log_writes(sched: &str, write_sync: bool, n: u64) -> (u64, u64) {
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, device(sched, 31, 1), &mut streams, false);
    let d = dev.clone();
    sim.spawn("jbd2", async move {
        let mut tickets = Vec::new();
        for i in 0..n {
            let mut req = Request::write(i * 4 * KIB, 4 * KIB).with_ioc(9);
            req = if write_sync {
                req.with_hints(true, true) // WRITE_SYNC
            } else {
                req.with_class(IoClass::Async) // WRITE
            };
            tickets.push(d.submit_nowait(req));
        }
        for t in tickets.into_iter().rev() {
            d.wait(t).await;
        }
    });
    sim.run().unwrap();
    block(&dev).write_dispatch_merge()
}

#[test]
fn plugging_merges_contiguous_writes_but_req_unplug_per_bio_fragments_them() {
    for sched in ["cfq", "deadline", "noop"] {
        // WRITE: the first bio plugs the queue; the rest merge (up to max_sectors_kb = 512
        // KiB per request) until the waiter unplugs: 1 MiB = 2 requests.
        let (d_plug, m_plug) = log_writes(sched, false, 256);
        assert_eq!((d_plug, m_plug), (2, 254), "{sched}");
        // WRITE_SYNC: REQ_UNPLUG runs the queue after each bio; every bio goes to the
        // driver alone while it has tags (31), only the rest merge.
        let (d_sync, m_sync) = log_writes(sched, true, 256);
        assert_eq!(d_sync + m_sync, 256, "{sched}");
        assert!(
            d_sync >= 31 && d_sync > 10 * d_plug,
            "{sched}: {d_sync} dispatches"
        );
    }
}

#[test]
fn a_sync_bio_never_merges_into_an_async_request_under_cfq() {
    let mut sim = Sim::new();
    let dev = models::block::add_disk(
        &mut sim,
        device("cfq", 1, 1),
        &mut RngStreams::new(1),
        false,
    );
    let d = dev.clone();
    sim.spawn("t", async move {
        let a = d.submit_nowait(
            Request::write(0, 4 * KIB)
                .with_class(IoClass::Async)
                .with_ioc(1),
        );
        let s = d.submit_nowait(
            Request::write(4 * KIB, 4 * KIB)
                .with_hints(true, false)
                .with_ioc(1),
        );
        let b = d.submit_nowait(
            Request::write(4 * KIB, 4 * KIB)
                .with_class(IoClass::Async)
                .with_ioc(2),
        );
        for t in [a, s, b] {
            d.wait(t).await;
        }
    });
    sim.run().unwrap();
    let st = block(&dev);
    // The sync bio made its own request; the async bio of another task merged into the
    // shared async queue's request (cfq_allow_merge: async bios map to the shared queue).
    assert_eq!(st.merges[1], 1, "{st:?}");
    assert_eq!(st.dispatches[1], 2, "{st:?}");
}

#[test]
fn flush_and_fua_are_sequenced_outside_the_elevator() {
    let run = |fua: bool| {
        let mut cfg = device("cfq", 31, 4);
        cfg.sched.queue.fua = fua;
        let mut sim = Sim::new();
        let dev = models::block::add_disk(&mut sim, cfg, &mut RngStreams::new(1), true);
        let done: Rc<RefCell<Vec<IoDone>>> = Rc::default();
        for i in 0..2u64 {
            let (d, o) = (dev.clone(), done.clone());
            sim.spawn(&format!("c{i}"), async move {
                d.submit(Request::write(MIB * (i + 1), 4 * KIB).with_token(10 + i))
                    .await;
                // A jbd2 commit block: WRITE_FLUSH_FUA.
                let cb = Request {
                    fua: true,
                    ..Request::preflush_write(i * 4 * KIB, 4 * KIB)
                };
                let r = d.submit(cb.with_hints(true, true).with_token(20 + i)).await;
                o.borrow_mut().push(r);
                // Both writes are durable once the commit block completed.
                let img = d.durable_image().unwrap();
                assert_eq!(img[&(MIB * (i + 1))].token, 10 + i);
                assert_eq!(img[&(i * 4 * KIB)].token, 20 + i);
            });
        }
        sim.run().unwrap();
        let mut v = done.borrow().clone();
        v.sort_by_key(|d| d.completed);
        (block(&dev), v)
    };
    // FUA honoured: PREFLUSH → DATA(FUA); no POSTFLUSH.
    let (st, v) = run(true);
    assert_eq!(st.flush_steps, [2, 2, 0, 0], "{st:?}");
    // One sequence at a time: the second starts after the first finished.
    assert!(v[1].issued >= v[0].completed, "{v:?}");
    // preflush 500 us + FUA write 200 us, and the second waits for the first.
    assert_eq!(v[0].completed - v[0].submitted, 700 * US);
    // Without FUA: PREFLUSH → DATA → POSTFLUSH.
    let (st, _) = run(false);
    assert_eq!(st.flush_steps, [2, 2, 2, 0], "{st:?}");
    assert_eq!(
        st.dispatches[1], 2,
        "flush steps are not elevator dispatches: {st:?}"
    );
}

#[test]
fn mixed_runs_are_deterministic() {
    let once = |sched: &str| {
        let mut sim = Sim::new();
        let mut streams = RngStreams::new(11);
        let dev = models::block::add_disk(&mut sim, device(sched, 8, 2), &mut streams, false);
        let log: Log = Rc::default();
        spawn_stream(&mut sim, &dev, 3, 1 << 40, 30 * MS, 'S', &log);
        for i in 0..50u64 {
            let (d, h, l) = (dev.clone(), sim.handle(), log.clone());
            sim.spawn(&format!("w{i}"), async move {
                h.sleep(i * 300 * US).await;
                let c = if i % 3 == 0 {
                    IoClass::Sync
                } else {
                    IoClass::Async
                };
                let r = d
                    .submit(
                        Request::write(i * 8 * KIB, 8 * KIB)
                            .with_class(c)
                            .with_ioc(i as u32 % 4),
                    )
                    .await;
                l.borrow_mut().push(('W', r));
            });
        }
        sim.run().unwrap();
        let v: Vec<(char, IoDone)> = log.borrow().clone();
        (block(&dev), v)
    };
    for sched in ["noop", "deadline", "cfq", "mq-deadline"] {
        let (a, b) = (once(sched), once(sched));
        assert_eq!(a.0, b.0, "{sched}");
        assert_eq!(a.1, b.1, "{sched}");
        assert!(a.0.dispatches[0] > 0 && a.0.dispatches[1] > 0, "{sched}");
    }
}

#[test]
fn scheduler_files_parse_and_bad_values_name_the_line() {
    let c = DiskConfig::from_toml(
        "preset = \"hdd\"\n[scheduler]\nname = \"cfq\"\nslice_idle = 0\nquantum = 4\n",
        "d.toml",
    )
    .unwrap();
    assert_eq!(c.scheduler, "cfq");
    assert_eq!(c.sched.cfq.slice_idle, 0);
    assert_eq!(c.sched.cfq.quantum, 4);
    assert_eq!(c.sched.cfq.slice_sync, 100 * MS);
    let c = DiskConfig::from_toml("scheduler = \"deadline\"\n", "d.toml").unwrap();
    assert_eq!(c.sched.deadline.fifo_batch, 16);
    let e = DiskConfig::from_toml("preset = \"hdd\"\nscheduler = \"bfq\"\n", "d.toml").unwrap_err();
    assert_eq!(e.location, "d.toml:2");
    assert!(
        e.message.contains("noop, deadline, cfq, mq-deadline"),
        "{e}"
    );
    let e = DiskConfig::from_toml("[scheduler]\nname = \"cfq\"\nslice_idel = 3\n", "d.toml")
        .unwrap_err();
    // At the misspelt key, not at the table's header (issue 28).
    assert_eq!(e.location, "d.toml:3");
    assert!(e.message.contains("slice_idel"), "{e}");
    let e =
        DiskConfig::from_toml("[scheduler]\nname = \"cfq\"\nquantum = 0\n", "d.toml").unwrap_err();
    assert_eq!(e.location, "d.toml:3");
    assert!(e.message.contains("quantum"), "{e}");
    let e = DiskConfig::from_toml("scheduler = 3\n", "d.toml").unwrap_err();
    assert_eq!(e.location, "d.toml:1");
}

/// Seed 003 in miniature: a sequential sync reader streams (closed loop, 4 in flight) while
/// a journal commit writes 64 contiguous 4 KiB log blocks (submit all, then wait all) as
/// WRITE or WRITE_SYNC, from its own I/O context. Returns (commit ns, stats).
fn commit_under_reads(sched: &str, write_sync: bool) -> (u64, BlockStats) {
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(5);
    let dev = models::block::add_disk(&mut sim, device(sched, 31, 1), &mut streams, false);
    let log: Log = Rc::default();
    spawn_stream(&mut sim, &dev, 4, 1 << 40, 400 * MS, 'S', &log);
    let out = Rc::new(Cell::new(0));
    let (d, h, o) = (dev.clone(), sim.handle(), out.clone());
    sim.spawn("jbd2", async move {
        h.sleep(20 * MS).await;
        let start = h.now();
        let mut tickets = Vec::new();
        for i in 0..64u64 {
            let req = Request::write((1 << 30) + i * 4 * KIB, 4 * KIB).with_ioc(77);
            let req = if write_sync {
                req.with_hints(true, true)
            } else {
                req.with_class(IoClass::Async)
            };
            tickets.push(d.submit_nowait(req));
        }
        for t in tickets.into_iter().rev() {
            d.wait(t).await;
        }
        o.set(h.now() - start);
    });
    sim.run().unwrap();
    (out.get(), block(&dev))
}

#[test]
fn under_cfq_a_write_commit_waits_behind_sync_readers_and_write_sync_does_not_merge() {
    let (t_async, s_async) = commit_under_reads("cfq", false);
    let (t_sync, s_sync) = commit_under_reads("cfq", true);
    // As WRITE the log blocks are async: held while the readers' requests are in flight,
    // ramped by last_delayed_sync; the commit stretches.
    assert!(s_async.async_blocked_ns > 0, "{s_async:?}");
    assert!(
        t_async > 2 * t_sync,
        "WRITE {t_async} ns vs WRITE_SYNC {t_sync} ns"
    );
    // As WRITE_SYNC they are sync and unplugged per bio: more, smaller write dispatches.
    assert!(
        s_sync.dispatches[1] > s_async.dispatches[1],
        "{s_sync:?} {s_async:?}"
    );
    // deadline ignores SYNC: only plugging differs, and the commit is not held back.
    let (t_dl, _) = commit_under_reads("deadline", false);
    assert!(t_dl < t_async, "deadline {t_dl} ns vs cfq {t_async} ns");
}

#[test]
fn cfq_serves_an_expired_sync_request_from_its_fifo_at_a_slice_start() {
    // One context streams ascending reads; its own read far behind the head is never the
    // nearest (cfq_choose_req) and is served only through the queue's FIFO: expired after
    // fifo_expire_sync (125 ms), checked once per slice (cfq_check_fifo), so at the first
    // slice start after 125 ms (slices of 100 ms here).
    let mut sim = Sim::new();
    let dev = models::block::add_disk(
        &mut sim,
        device("cfq", 1, 1),
        &mut RngStreams::new(1),
        false,
    );
    let log: Log = Rc::default();
    spawn_stream(&mut sim, &dev, 16, 1 << 30, 800 * MS, 'S', &log);
    let (d, h, l) = (dev.clone(), sim.handle(), log.clone());
    sim.spawn("lone", async move {
        h.sleep(MS).await;
        let r = d.submit(Request::read(0, 4 * KIB).with_ioc(1)).await;
        l.borrow_mut().push(('L', r));
    });
    sim.run().unwrap();
    let lone = log.borrow().iter().find(|x| x.0 == 'L').unwrap().1;
    let wait = lone.latency();
    assert!(wait >= 125 * MS, "served before its FIFO expiry: {wait}");
    assert!(wait <= 250 * MS, "waited {wait} ns");
}

/// A bio that front-merges into the last-merged request can close the gap to the request
/// before it (attempt_front_merge): the two requests become one, and the elevator must not
/// keep the merged-away request in its sort tree (it once did under CFQ, and the next
/// dispatch touched a dead request). noop's former request is its FIFO neighbour, not its
/// sector neighbour, so it is left out.
#[test]
fn a_front_merge_that_closes_a_gap_merges_three_pieces_into_one_request() {
    for sched in ["cfq", "deadline"] {
        let mut sim = Sim::new();
        let mut streams = RngStreams::new(1);
        let dev = models::block::add_disk(&mut sim, device(sched, 4, 1), &mut streams, false);
        let d = dev.clone();
        sim.spawn("writer", async move {
            let w = |off| {
                Request::write(off, 4 * KIB)
                    .with_ioc(1)
                    .with_hints(true, false)
            };
            // C first (the queue's last_merge), then A, then B between them.
            let t = [
                d.submit_nowait(w(8 * KIB)),
                d.submit_nowait(w(0)),
                d.submit_nowait(w(4 * KIB)),
            ];
            for x in t {
                d.wait(x).await;
            }
        });
        sim.run().unwrap();
        let b = block(&dev);
        assert_eq!(b.rq_merges, 1, "{sched}");
        assert_eq!(
            b.dispatches[models::block::Dir::Write as usize],
            1,
            "{sched}"
        );
        assert_eq!(
            b.dispatch_bytes[models::block::Dir::Write as usize],
            12 * KIB,
            "{sched}"
        );
    }
}
