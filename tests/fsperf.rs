//! fsperf (seed 004, F1): the fio workloads parse from fsperf's job parameters, run
//! deterministically, fill the metadata space when they should, and compare into fsperf
//! tables; `compare fsperf` rejects what it cannot do as one line, exit 2.

use models::block::DiskConfig;
use models::kernel::parse_policy;
use models::workload::compare::compare;
use models::workload::fsload::run;
use models::workload::spec::{FioRw, Kind, Spec, FSPERF};
use std::process::Command;

fn short(name: &str, secs: u64) -> (Spec, DiskConfig) {
    let mut s = Spec::load(name).unwrap();
    s.duration = secs * sim::S;
    s.warmup = 0;
    let d = DiskConfig::resolve(&s.device).unwrap();
    (s, d)
}

#[test]
fn the_fsperf_workloads_carry_fsperfs_job_parameters() {
    let d = Spec::load("dio4kbs16threads").unwrap();
    assert_eq!(
        (d.kind, d.rw, d.direct),
        (Kind::Fio, FioRw::RandWrite, true)
    );
    assert_eq!((d.clients, d.files, d.file_size), (16, 16, 64 << 20));
    assert_eq!((d.block_size, d.duration), (4096, 60 * sim::S));
    let r = Spec::load("randwrite2xram").unwrap();
    assert_eq!((r.clients, r.direct, r.warmup), (4, false, 10 * sim::S));
    let e = Spec::load("emptyfiles500k").unwrap();
    assert_eq!((e.rw, e.files, e.clients), (FioRw::FileCreate, 31250, 1));
    for n in FSPERF {
        assert!(Spec::load(n).is_ok(), "{n}");
    }
}

#[test]
fn fio_keys_are_checked_with_file_and_line() {
    let head = "name = \"x\"\nkind = \"fio\"\ntitle = \"t\"\nduration = \"1s\"\n";
    let e = Spec::parse(&format!("{head}rw = \"randread\"\n"), "x.toml").unwrap_err();
    assert!(e.to_string().contains("x.toml:5"), "{e}");
    assert!(e.to_string().contains("unknown rw 'randread'"), "{e}");
    let e = Spec::parse(
        "name = \"x\"\nkind = \"fs-mark\"\ntitle = \"t\"\nduration = \"1s\"\nrw = \"randwrite\"\n",
        "y.toml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("y.toml:5"), "{e}");
}

#[test]
fn emptyfiles_creates_every_file_once_and_stops() {
    let (s, d) = short("emptyfiles500k", 600);
    let r = run(&s, &parse_policy("linux-5.14").unwrap(), &d, 1, None).unwrap();
    assert_eq!(r.op("create").unwrap().hist.len(), 31250);
    // fio accounts filesize per file made: the seed's write_io_kbytes.
    assert_eq!(r.fio_field("write_io_kbytes"), Some(125_000.0));
    assert!(
        r.measured < 600 * sim::S,
        "the job ends when its files exist"
    );
}

#[test]
fn buffered_random_writes_fill_the_metadata_space_and_the_flushers_decide() {
    let (s, d) = short("randwrite2xram", 2);
    let pairs = compare(
        &s,
        &d,
        &parse_policy("linux-5.13").unwrap(),
        &parse_policy("linux-5.14").unwrap(),
        1,
        1,
        None,
        2,
        &models::workload::compare::no_progress(),
    )
    .unwrap();
    let (b, c) = (&pairs[0].baseline[0], &pairs[0].current[0]);
    for r in [b, c] {
        let m = |n: &str| r.metrics.get(n).unwrap();
        // Each 4 KiB range holds 256 KiB of metadata: within two seconds the 64 GiB
        // overcommit limit of the 1 TiB device is in reach and somebody flushes.
        assert!(
            m("preempt_flushes") + m("metadata_tickets") > 0,
            "{:?}",
            r.metrics
        );
        assert!(m("flushes.FLUSH_DELALLOC") > 0);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }
    // 5.13 writes back early (the global reserve in `used`), 5.14 waits longer.
    assert!(
        b.metrics.get("preempt_flushed_bytes").unwrap() > 0,
        "{:?}",
        b.metrics.get("preempt_flushed_bytes").unwrap()
    );
    let text =
        reports::workload::fsperf_suite_text(&b.policy, &c.policy, &[(s.clone(), pairs.clone())]);
    assert!(text.contains("randwrite2xram results"), "{text}");
    for row in ["write_bw_bytes", "write_clat_ns_p99", "write_lat_ns_max"] {
        assert!(text.contains(row), "{row}: {text}");
    }
    // Same seed, same run.
    let again = run(&s, &b.policy, &d, 1, None).unwrap();
    assert_eq!(again.trace_hash, b.trace_hash);
}

#[test]
fn a_direct_write_reserves_its_extent_csum_leaf_and_inode_update() {
    // calc_inode_reservations@v5.13 for 4 KiB at 16 KiB nodes: insert size (256 KiB) ×
    // (1 extent + 1 csum leaf) + one inode update (128 KiB).
    let c = models::btrfs::Costs::default();
    assert_eq!(
        models::btrfs::space_info::calc_inode_reservations(&c, 4096),
        640 << 10
    );
    // 128 MiB + 4 KiB: two extents, and 32,769 csums need 9 leaves of 4,064.
    assert_eq!(
        models::btrfs::space_info::calc_inode_reservations(&c, (128 << 20) + 4096),
        (256 << 10) * 11 + (128 << 10)
    );
}

#[test]
fn direct_writes_into_preallocated_files_queue_one_ref_head_per_extent() {
    // fio fallocates its files, so a direct write of sectors not yet written goes in place
    // (btrfs_get_blocks_direct_write's NOCOW path): no extent allocated, one delayed ref
    // head per file's extent and transaction, so the delayed refs reserve stays small.
    // Tickets still open — the writers outrun the endio workers, whose ordered extents hold
    // their reservations — and the async reclaim serves them by running delayed items
    // without reaching FLUSH_DELAYED_REFS_NR (with two heads per write it did within 0.4 s).
    let (mut s, d) = short("dio4kbs16threads", 1);
    s.duration = sim::S * 2 / 5;
    let p = parse_policy("linux-5.13").unwrap();
    let r = run(&s, &p, &d, 1, None).unwrap();
    let w = r.op("write").unwrap();
    assert!(w.hist.len() > 1000);
    assert_eq!(w.bytes, w.hist.len() * 4096);
    let m = |n: &str| r.metrics.get(n).unwrap_or(0);
    assert!(m("metadata_tickets") > 0, "{:?}", r.metrics);
    assert!(m("flushes.FLUSH_DELAYED_ITEMS_NR") > 0, "{:?}", r.metrics);
    assert_eq!(m("flushes.FLUSH_DELAYED_REFS_NR"), 0, "{:?}", r.metrics);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn device_size_is_a_parameter_and_moves_the_preemptive_threshold() {
    // fsperf's device size is not known: `fs_size` sets it. On 32 GiB the preemptive
    // threshold is ~1 GiB instead of ~32 GiB, and 5.13 and 5.14 flush differently.
    let (mut s, d) = short("randwrite2xram", 1);
    let mut dev = d.clone();
    s.set(&mut dev, "fs_size", "32g").unwrap();
    assert_eq!(s.fs_size, Some(32 << 30));
    assert!(s.set(&mut dev, "fs_size", "1m").is_err());
    let pairs = compare(
        &s,
        &dev,
        &parse_policy("linux-5.13").unwrap(),
        &parse_policy("linux-5.14").unwrap(),
        1,
        1,
        None,
        2,
        &models::workload::compare::no_progress(),
    )
    .unwrap();
    let (b, c) = (&pairs[0].baseline[0], &pairs[0].current[0]);
    let f = |r: &models::workload::fsload::WorkloadResult| {
        r.metrics.get("preempt_flushes").unwrap_or(0)
    };
    assert!(f(b) > 0, "{:?}", b.metrics);
    assert_ne!(f(b), f(c), "{:?} {:?}", b.metrics, c.metrics);
}

#[test]
fn compare_fsperf_refuses_per_workload_flags_in_one_line() {
    let o = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(["compare", "fsperf", "--vary", "threads=1,2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("compare fsperf"), "{err}");
}

#[test]
fn a_varied_fio_comparison_heads_its_rows_with_the_runs_iops_and_write_p99() {
    let bin = env!("CARGO_BIN_EXE_fsyncsim");
    let args = ["--duration", "100ms", "--policy", "linux-5.13"];
    let mut want = Vec::new();
    for t in ["1", "2"] {
        let o = Command::new(bin)
            .args(["workload", "dio4kbs16threads", "--threads", t, "--json"])
            .args(args)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        want.push(v["per_s"].as_f64().unwrap());
    }
    assert_ne!(want[0], want[1]);
    let o = Command::new(bin)
        .args(["compare", "dio4kbs16threads", "--duration", "100ms"])
        .args(["--baseline", "linux-5.13", "--current", "linux-5.13"])
        .args(["--vary", "threads=1,2"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("| write p99 ms (b/c) |"), "{out}");
    for (t, iops) in ["1", "2"].iter().zip(&want) {
        let row = out
            .lines()
            .find(|l| l.split('|').next().map(str::trim) == Some(*t))
            .unwrap_or_else(|| panic!("no row {t}: {out}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[1], format!("{iops:.2}"), "{out}");
        // The write p99 of a run with writes is not 0.
        assert_ne!(cells[4], "0.000 / 0.000", "{out}");
    }
}
