//! Device-model behaviour: durability rule, host queue, flush cost, parallelism, HDD
//! positioning, tail spikes, stream independence, determinism of fio runs.

use models::block::DiskConfig;
use models::device::dist::NonNeg;
use models::device::{presets, DeviceConfig, IoDone, LatencyDist, ReqKind, Request};
use models::workload::fio::{self, FioParams, RwMode};
use rand::RngCore;
use sim::{RngStreams, Sim};
use std::cell::RefCell;
use std::rc::Rc;

fn us(x: f64) -> LatencyDist {
    LatencyDist::Constant { us: NonNeg(x) }
}

/// A device with constant latencies: write 10 us, FUA 100 us, read 50 us, flush 50 us base.
fn constant_device() -> DeviceConfig {
    let mut c = presets::by_name("nvme").unwrap();
    c.name = "dev".into();
    c.transfer_ns_per_byte = 0.0;
    c.read = us(50.0);
    c.write = us(10.0);
    c.fua_write = us(100.0);
    c.flush.base = us(50.0);
    c.flush.ns_per_dirty_byte = NonNeg(0.0);
    c
}

#[test]
fn a_flush_makes_durable_exactly_the_writes_completed_before_it_was_issued() {
    let mut sim = Sim::new();
    let h = sim.handle();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, constant_device(), &mut streams, true);
    let seen = Rc::new(RefCell::new(Vec::new()));
    {
        let (d, seen) = (dev.clone(), seen.clone());
        sim.spawn("fsync", async move {
            d.submit(Request::write(0, 4096).with_token(1)).await; // done t=10us
            d.submit(Request::flush()).await; // issued t=10us, done t=60us
            let img = d.durable_image().unwrap();
            seen.borrow_mut().push((
                img.values().map(|w| w.token).collect::<Vec<_>>(),
                d.volatile_tokens(),
            ));
        });
    }
    {
        let (h, d) = (h.clone(), dev.clone());
        sim.spawn("writer", async move {
            h.sleep(5_000).await;
            d.submit(Request::write(8192, 4096).with_token(2)).await; // completes t=15us
        });
    }
    sim.run().unwrap();
    assert_eq!(*seen.borrow(), vec![(vec![1], vec![2])]);
}

#[test]
fn fua_writes_are_durable_on_completion_and_preflush_covers_earlier_writes() {
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, constant_device(), &mut streams, true);
    let d = dev.clone();
    sim.spawn("super", async move {
        d.submit(Request::write(4096, 4096).with_token(7)).await;
        assert!(d.durable_image().unwrap().is_empty());
        // A superblock-style PREFLUSH|FUA write: the earlier write and itself are durable.
        let sb = Request {
            fua: true,
            ..Request::preflush_write(0, 4096)
        };
        d.submit(sb.with_token(8)).await;
        let img = d.durable_image().unwrap();
        assert_eq!(img[&4096].token, 7);
        assert_eq!(img[&0].token, 8);
        assert_eq!(d.dirty_bytes(), 0);
    });
    sim.run().unwrap();
    let st = dev.stats();
    assert_eq!(st.kind(ReqKind::PreflushWrite).count, 1);
    assert_eq!(st.kind(ReqKind::Write).count, 1);
}

#[test]
fn requests_beyond_the_queue_depth_wait_in_the_host_and_are_counted() {
    let mut cfg = constant_device();
    cfg.hw_queues = 1;
    cfg.queue_depth = 2;
    cfg.parallelism = 2;
    let mut sim = Sim::new();
    let h = sim.handle();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, cfg, &mut streams, false);
    let done: Rc<RefCell<Vec<IoDone>>> = Rc::default();
    let mut ids = Vec::new();
    for i in 0..5 {
        let (d, done) = (dev.clone(), done.clone());
        ids.push(sim.spawn(&format!("r{i}"), async move {
            let r = d.submit(Request::read(0, 512)).await;
            done.borrow_mut().push(r);
        }));
    }
    sim.run().unwrap();
    let st = dev.stats();
    let k = st.kind(ReqKind::Read);
    assert_eq!(k.count, 5);
    assert_eq!(k.host_waited, 3);
    assert_eq!(st.max_host_queue, 3);
    // Two at a time, 50 us each: completions at 50, 50, 100, 100, 150 us.
    let ends: Vec<u64> = done.borrow().iter().map(|d| d.completed / 1000).collect();
    assert_eq!(ends, vec![50, 50, 100, 100, 150]);
    // The last request's latency is attributed to host queue then service.
    let host = h.class("dev:host_queue");
    let service = h.class("dev:service");
    assert_eq!(h.account_of(ids[4], host), 100_000);
    assert_eq!(h.account_of(ids[4], service), 50_000);
}

#[test]
fn flush_cost_grows_with_dirty_bytes() {
    let flush_latency = |writes: u64| {
        let mut cfg = constant_device();
        cfg.flush.ns_per_dirty_byte = NonNeg(1.0);
        let mut sim = Sim::new();
        let mut streams = RngStreams::new(1);
        let dev = models::block::add_disk(&mut sim, cfg, &mut streams, false);
        let out = Rc::new(RefCell::new(0));
        let (d, o) = (dev.clone(), out.clone());
        sim.spawn("t", async move {
            for i in 0..writes {
                d.submit(Request::write(i * 4096, 4096)).await;
            }
            *o.borrow_mut() = d.submit(Request::flush()).await.service();
        });
        sim.run().unwrap();
        let v = *out.borrow();
        v
    };
    assert_eq!(flush_latency(0), 50_000);
    assert_eq!(flush_latency(1), 50_000 + 4096);
    assert_eq!(flush_latency(100), 50_000 + 409_600);
}

#[test]
fn parallel_units_serve_at_once_and_the_link_caps_bandwidth() {
    let mut cfg = constant_device();
    cfg.parallelism = 4;
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, cfg.clone(), &mut streams, false);
    for i in 0..8 {
        let d = dev.clone();
        sim.spawn(&format!("r{i}"), async move {
            d.submit(Request::read(0, 0)).await;
        });
    }
    assert_eq!(
        sim.run().unwrap().end,
        100_000,
        "8 reads of 50 us on 4 units"
    );

    // 1 ns per byte: 16 concurrent 1 MiB writes cannot finish before 16 Mi ns of link time.
    cfg.transfer_ns_per_byte = 1.0;
    cfg.parallelism = 16;
    let mut sim = Sim::new();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, cfg, &mut streams, false);
    for i in 0..16 {
        let d = dev.clone();
        sim.spawn(&format!("w{i}"), async move {
            d.submit(Request::write(0, 1 << 20)).await;
        });
    }
    assert_eq!(sim.run().unwrap().end, 16 * (1 << 20) + 10_000);
}

#[test]
fn a_flush_ends_after_the_destage_an_earlier_flush_claimed() {
    // 1 ns per dirty byte: the first flush destages 1 MiB; the second, issued during that
    // destage, covers those writes too and claims one 4 KiB write of its own.
    let mut cfg = constant_device();
    cfg.flush.ns_per_dirty_byte = NonNeg(1.0);
    let mut sim = Sim::new();
    let h = sim.handle();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, cfg, &mut streams, true);
    let ends = Rc::new(RefCell::new(Vec::new()));
    {
        let (h, d, ends) = (h.clone(), dev.clone(), ends.clone());
        sim.spawn("commit", async move {
            d.submit(Request::write(0, 1 << 20).with_token(1)).await;
            d.submit(Request::flush()).await;
            ends.borrow_mut().push(("commit", h.now()));
        });
    }
    {
        let (h, d, ends) = (h.clone(), dev.clone(), ends.clone());
        sim.spawn("log", async move {
            h.sleep(200_000).await;
            d.submit(Request::write(2 << 20, 4096).with_token(2)).await;
            d.submit(Request::flush()).await;
            let durable = d.durable_image().unwrap().len();
            ends.borrow_mut().push(("log", h.now()));
            assert_eq!(
                durable, 2,
                "both writes are durable when the second flush returns"
            );
        });
    }
    sim.run().unwrap();
    let first = 10_000 + 50_000 + (1 << 20);
    assert_eq!(
        *ends.borrow(),
        vec![("commit", first), ("log", first + 4096)],
        "the second flush destages its 4 KiB after the first flush's 1 MiB"
    );
}

#[test]
fn a_write_during_a_preflush_destage_uses_the_idle_link() {
    // 1 ns per byte on the link and per dirty byte destaged: 1 MiB dirty makes the PREFLUSH
    // write's flush step last 1 Mi ns + 50 us, during which its data is not on the link.
    let mut cfg = constant_device();
    cfg.transfer_ns_per_byte = 1.0;
    cfg.flush.ns_per_dirty_byte = NonNeg(1.0);
    let mut sim = Sim::new();
    let h = sim.handle();
    let mut streams = RngStreams::new(1);
    let dev = models::block::add_disk(&mut sim, cfg, &mut streams, false);
    let done = Rc::new(RefCell::new(0));
    {
        let d = dev.clone();
        sim.spawn("super", async move {
            d.submit(Request::write(0, 1 << 20)).await;
            let sb = Request {
                fua: true,
                ..Request::preflush_write(1 << 30, 4096)
            };
            d.submit(sb).await;
        });
    }
    {
        let (h, d, done) = (h.clone(), dev.clone(), done.clone());
        sim.spawn("log", async move {
            // Enters service while the superblock's flush destages the 1 MiB.
            h.sleep((1 << 20) + 10_000 + 100_000).await;
            let t0 = h.now();
            d.submit(Request::write(4 << 20, 4096)).await;
            *done.borrow_mut() = h.now() - t0;
        });
    }
    sim.run().unwrap();
    assert_eq!(
        *done.borrow(),
        4096 + 10_000,
        "its transfer and write latency, not the rest of the destage"
    );
}

#[test]
fn hdd_random_reads_pay_seeks_that_sequential_reads_do_not() {
    let mean_read = |random: bool| {
        let p = FioParams {
            rw: if random {
                RwMode::RandRead
            } else {
                RwMode::Read
            },
            runtime: 2 * sim::S,
            size: 8 << 30,
            ..FioParams::default()
        };
        let r = fio::run(&p, presets::by_name("hdd").unwrap()).unwrap();
        r.read.clat.mean()
    };
    let (seq, rnd) = (mean_read(false), mean_read(true));
    // Sequential: rotation (avg 2.99 ms) + overhead; random adds an average seek of several ms.
    assert!(seq > 2.5e6 && seq < 3.8e6, "sequential {seq}");
    assert!(rnd > seq + 3.0e6, "random {rnd} vs sequential {seq}");
}

#[test]
fn a_tail_spike_adds_its_extra_delay_at_its_probability() {
    let mut cfg = constant_device();
    cfg.tail = Some(models::device::config::TailSpike {
        probability: models::device::config::Probability(0.25),
        extra: us(1000.0),
    });
    let p = FioParams {
        rw: RwMode::RandRead,
        runtime: 2 * sim::S,
        ..FioParams::default()
    };
    let r = fio::run(&p, cfg).unwrap();
    let h = &r.read.clat;
    let spiked = h.len() - h.count_between(0, 100_000);
    let frac = spiked as f64 / h.len() as f64;
    assert!((frac - 0.25).abs() < 0.02, "spike fraction {frac}");
    assert_eq!(h.max(), h.highest_equivalent(1_050_000));
}

/// Service times a device gives one client; the client's own stream draws `extra` numbers
/// per request (a change in the workload component only).
fn service_sequence(extra: usize) -> Vec<u64> {
    let mut sim = Sim::new();
    let h = sim.handle();
    let mut streams = RngStreams::new(42);
    let dev = models::block::add_disk(
        &mut sim,
        presets::by_name("sata-ssd").unwrap(),
        &mut streams,
        false,
    );
    let mut wl = streams.stream("workload");
    let out: Rc<RefCell<Vec<u64>>> = Rc::default();
    let o = out.clone();
    sim.spawn("client", async move {
        for _ in 0..200 {
            for _ in 0..extra {
                wl.next_u64();
            }
            h.sleep(wl.next_u64() % 1000).await;
            let service = dev.submit(Request::read(0, 4096)).await.service();
            o.borrow_mut().push(service);
        }
    });
    sim.run().unwrap();
    let v = out.borrow().clone();
    v
}

#[test]
fn extra_workload_draws_leave_device_latencies_unchanged() {
    let base = service_sequence(0);
    assert_eq!(base, service_sequence(5));
    assert!(
        base.windows(2).any(|w| w[0] != w[1]),
        "latencies are random"
    );
}

#[test]
fn fio_runs_are_deterministic_per_seed() {
    let run = |seed| {
        let p = FioParams {
            rw: RwMode::RandRw,
            iodepth: 8,
            numjobs: 2,
            fsync: 4,
            runtime: 20 * sim::MS,
            seed,
            ..FioParams::default()
        };
        fio::run(&p, presets::by_name("sas-ssd").unwrap()).unwrap()
    };
    let (a, b, c) = (run(3), run(3), run(4));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(
        (a.read.ios, a.write.ios, a.sync.ios, a.read.clat.mean()),
        (b.read.ios, b.write.ios, b.sync.ios, b.read.clat.mean())
    );
    assert_ne!(a.trace_hash, c.trace_hash);
    assert!(a.sync.ios > 0 && a.read.ios > 0 && a.write.ios > 0);
}

#[test]
fn shipped_example_device_files_parse() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/devices");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let c = DiskConfig::resolve(p.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.name.is_empty());
        n += 1;
    }
    assert!(n >= 1);
}

#[test]
fn out_of_range_device_numbers_are_refused_not_saturated() {
    use models::block::DiskConfig;
    for (body, needle) in [
        (
            "[read]\ndist = \"constant\"\nus = 1e300\n",
            "invalid value 1e300",
        ),
        (
            "[read]\ndist = \"lognormal\"\nmean_us = 75\nsigma = 1000\n",
            "invalid sigma 1000",
        ),
        (
            "[tail]\nprobability = 1.5\nextra = { dist = \"constant\", us = 5 }\n",
            "invalid probability 1.5",
        ),
    ] {
        let path =
            std::env::temp_dir().join(format!("fsyncsim-dev-range-{}.toml", std::process::id()));
        std::fs::write(&path, format!("preset = \"nvme\"\n{body}")).unwrap();
        let e = DiskConfig::resolve(path.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{e}");
        let _ = std::fs::remove_file(&path);
    }
}
