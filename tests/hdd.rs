//! The HDD mechanics against their formulas: seek curve, rotation from the tracked angle,
//! zoned media rate, NCQ reordering, device-file parsing.

use models::block::DiskConfig;
use models::device::hdd::{Hdd, NcqOrder, SeekCurve};
use models::device::presets::hdd_smr_5400;
use models::device::DeviceConfig;
use models::workload::fio::{self, FioParams, RwMode};

fn drive() -> Hdd {
    let cfg = hdd_smr_5400::config();
    let g = cfg.hdd.unwrap();
    Hdd::new(&g, g.mech.unwrap())
}

#[test]
fn seek_curve_meets_the_datasheet_at_zero_short_long_and_on_average() {
    let d = drive();
    let s = d.seek_curve();
    let c = s.cylinders as u64;
    assert_eq!(s.ns(0), 0.0);
    assert!((s.ns(1) - 1.0e6).abs() < 1.0, "track-to-track {}", s.ns(1));
    assert!(
        (s.ns(c - 1) - 20.0e6).abs() < 2e4,
        "full stroke {}",
        s.ns(c - 1)
    );
    assert!(
        (s.mean_ns() - 12.0e6).abs() < 0.12e6,
        "average {}",
        s.mean_ns()
    );
    // √ region: quadrupling a short distance doubles the part above track-to-track.
    let (a, b) = (s.ns(100) - s.t1, s.ns(400) - s.t1);
    assert!(
        (b / a - (20.0 - 1.0) / (10.0 - 1.0)).abs() < 1e-9,
        "{a} {b}"
    );
    // Linear region beyond the knee.
    let k = s.knee as u64 + 10;
    let (x, y, z) = (s.ns(k), s.ns(k + 1000), s.ns(k + 2000));
    assert!(((y - x) - (z - y)).abs() < 1e-6);
    // Monotone.
    let mut prev = 0.0;
    for d in (0..c).step_by((c / 1000) as usize) {
        assert!(s.ns(d) >= prev);
        prev = s.ns(d);
    }
}

#[test]
fn seek_fit_falls_back_to_a_pure_root_curve_when_the_average_is_unreachable() {
    // An average below min + (8/15)(max − min) cannot be met with both regions rising.
    let s = SeekCurve::fit(1.0, 2.0, 20.0, 10_000, 0.2);
    assert_eq!(s.m, 0.0);
    assert!((s.ns(9_999) - 20.0e6).abs() < 1.0);
}

#[test]
fn rotational_latency_comes_from_the_tracked_angle() {
    let d = drive();
    let rev = d.rev_ns();
    assert!((rev - 60e9 / 5400.0).abs() < 1e-6);
    assert!((d.angle_at(0.25 * rev) - 0.25).abs() < 1e-12);
    assert!((d.rotation_wait(0.25 * rev, 0.5) - 0.25 * rev).abs() < 1e-3);
    assert!((d.rotation_wait(0.75 * rev, 0.5) - 0.75 * rev).abs() < 1e-3);
    assert!((d.rotation_wait(3.0 * rev, 0.0)).abs() < 1e-3);
    // A first read on cylinder 0 (no seek) waits exactly for its sector's angle.
    let mut d = drive();
    let z = d.zones()[0];
    let off = z.track_bytes / 2; // half a turn from index
    let oh = d.mechanics().overhead_us.0 * 1e3;
    let t = d.access(0, off, 4096, true) as f64;
    let expect = oh + (0.5 - oh / rev) * rev + 4096.0 / z.rate;
    // (The sector sits at an integer byte offset: within a few ns of half a turn.)
    assert!((t - expect).abs() < 20.0, "{t} vs {expect}");
    // The next sector in sequence streams: no second rotation.
    let t2 = d.access(t as u64, off + 4096, 4096, true) as f64;
    assert!(t2 <= oh + 1.0, "{t2}");
}

#[test]
fn zone_rate_falls_from_od_to_id() {
    let d = drive();
    assert!((d.rate_mb_s(0) - 140.0).abs() < 1e-9);
    let last = d.zones().last().unwrap().end - 1;
    assert!((d.rate_mb_s(last) - 70.0).abs() < 1e-9);
    let mut prev = f64::MAX;
    for z in d.zones() {
        assert!(z.rate * 1e3 <= prev);
        prev = z.rate * 1e3;
    }
    // The zones cover the capacity (to within one cylinder per zone).
    let cap = hdd_smr_5400::CAPACITY as f64;
    assert!((d.zones().last().unwrap().end as f64 - cap).abs() / cap < 0.01);
    // Sequential 128 KiB reads at the OD run at the OD rate, at the ID at the ID rate.
    for (start, mb_s) in [(0u64, 140.0), (hdd_smr_5400::CAPACITY - (64 << 20), 70.0)] {
        let mut d = drive();
        let mut now = 0u64;
        let t0 = d.access(now, start, 131_072, true);
        now += t0;
        let first = now;
        for k in 1..256u64 {
            now += d.access(now, start + k * 131_072, 131_072, true);
        }
        let rate = 255.0 * 131_072.0 / ((now - first) as f64 / 1e9) / 1e6;
        assert!((rate - mb_s).abs() / mb_s < 0.02, "{rate} vs {mb_s}");
    }
}

fn with_ncq(ncq: NcqOrder) -> DeviceConfig {
    let mut cfg = hdd_smr_5400::config();
    let mut g = cfg.hdd.unwrap();
    let mut m = g.mech.unwrap();
    m.ncq = ncq;
    g.mech = Some(m);
    cfg.hdd = Some(g);
    cfg
}

fn iops(ncq: NcqOrder) -> u64 {
    let cfg = with_ncq(ncq);
    let p = FioParams {
        rw: RwMode::RandRead,
        bs: 4096,
        iodepth: 32,
        runtime: 2 * sim::S,
        size: 100 << 30,
        ..FioParams::default()
    };
    fio::run(&p, cfg).unwrap().read.ios
}

#[test]
fn ncq_reordering_beats_fifo_on_random_reads() {
    let (fifo, sptf, clook) = (
        iops(NcqOrder::Fifo),
        iops(NcqOrder::Sptf),
        iops(NcqOrder::Clook),
    );
    assert!(sptf as f64 > 1.5 * fifo as f64, "fifo {fifo} sptf {sptf}");
    assert!(clook > fifo, "fifo {fifo} clook {clook}");
}

#[test]
fn device_files_take_the_mechanics_and_name_bad_lines() {
    let text = "preset = \"hdd-smr-5400\"\n[hdd]\nrpm = 7200\nseek_min_ms = 0.5\nseek_max_ms = 15\ncapacity_bytes = 4000000000000\ncylinders = 500000\n[hdd.mech]\nseek_avg_ms = 8\nknee_fraction = 0.2\nod_mb_s = 250\nid_mb_s = 120\nzones = 8\nheads = 8\noverhead_us = 50\nreadahead_bytes = 1048576\ncache_segments = 8\nsegment_bytes = 8388608\nncq = \"clook\"\n";
    let c = DiskConfig::from_toml(text, "d.toml").unwrap();
    let m = c.hdd.unwrap().mech.unwrap();
    assert_eq!(m.ncq, NcqOrder::Clook);
    assert_eq!(m.od_mb_s.0, 250.0);
    let bad = text.replace("id_mb_s = 120", "id_mb_s = 300");
    let e = DiskConfig::from_toml(&bad, "d.toml").unwrap_err();
    assert_eq!(e.location, "d.toml:8", "{e}");
    assert!(e.message.contains("od_mb_s"), "{e}");
    let bad = text.replace("ncq = \"clook\"", "ncq = \"sstf\"");
    let e = DiskConfig::from_toml(&bad, "d.toml").unwrap_err();
    assert!(e.location.starts_with("d.toml:"), "{e}");
    // Without [hdd.mech] the geometry keeps the old behaviour.
    assert!(DiskConfig::resolve("hdd")
        .unwrap()
        .hdd
        .unwrap()
        .mech
        .is_none());
}

#[test]
fn aged_sptf_does_not_starve_a_request_behind_a_stream() {
    // 32 sequential readers: without aging the request left behind when the stream starts
    // elsewhere would wait for the whole run.
    let p = FioParams {
        rw: RwMode::Read,
        bs: 128 * 1024,
        iodepth: 32,
        runtime: 2 * sim::S,
        ..FioParams::default()
    };
    let r = fio::run(&p, with_ncq(NcqOrder::Sptf)).unwrap();
    let max_ms = r.read.clat.max() as f64 / 1e6;
    assert!(max_ms < 200.0, "max clat {max_ms} ms");
    // And the sequential stream still runs at the OD media rate.
    let mb_s = r.read.bytes as f64 / 2.0 / 1e6;
    assert!(mb_s > 130.0, "{mb_s} MB/s");
}
