//! Dirty-page throttling on ext3/ext4 (balance_dirty_pages@v2.6.37) and the read-latency
//! workload of jbd commit 2db938bee32e: a streaming writer is held to what the disk takes,
//! dirty data stays under the thresholds, runs are deterministic, and the keys are checked.

use models::block::DiskConfig;
use models::kernel::Policy;
use models::workload::fsload::{run, WorkloadResult};
use models::workload::spec::{Kind, Spec};

fn short(secs: u64) -> (Spec, DiskConfig) {
    let mut s = Spec::load("read-latency-jbd-refine").unwrap();
    s.duration = secs * sim::S;
    s.warmup = 0;
    let d = DiskConfig::resolve(&s.device).unwrap();
    (s, d)
}

fn go(s: &Spec, d: &DiskConfig, policy: &str) -> WorkloadResult {
    run(s, &Policy::preset(policy).unwrap(), d, s.seed, None).unwrap()
}

fn written(r: &WorkloadResult) -> u64 {
    r.op("write").map_or(0, |o| o.bytes)
}

/// With `memory` given, the writer dirties at most the dirty threshold more than the disk
/// wrote; without it nothing holds the writer back and it dirties far more than that.
#[test]
fn a_streaming_writer_is_held_to_the_disk() {
    let (s, d) = short(20);
    let r = go(&s, &d, "linux-2.6.39");
    let mem = s.mount.memory.expect("the workload gives memory");
    let (_, thresh) = models::ext4::ExtConfig::dirty_limits_of(mem);
    let disk = r.metrics.get("device_bytes_written").unwrap();
    assert!(disk > 0);
    assert!(
        written(&r) <= disk + thresh,
        "dirtied {} written {disk} thresh {thresh}",
        written(&r)
    );
    let mut free = s.clone();
    free.mount.memory = None;
    let u = go(&free, &d, "linux-2.6.39");
    assert!(
        written(&u) > written(&r) + thresh,
        "unthrottled {} throttled {}",
        written(&u),
        written(&r)
    );
}

#[test]
fn timed_reads_happen_every_interval_and_runs_repeat() {
    let (s, d) = short(16);
    let a = go(&s, &d, "linux-2.6.38");
    let reads = a.op("read").unwrap().hist.len();
    assert_eq!(
        reads,
        16 / (s.read_interval / sim::S),
        "one read per interval"
    );
    let b = go(&s, &d, "linux-2.6.38");
    assert_eq!(a.trace_hash, b.trace_hash);
    // The commit's write type is the policy's: sync on 2.6.38, async (nobody waits) on 2.6.39.
    assert!(a.metrics.get("ext4.sync_commits").unwrap() > 0);
    let c = go(&s, &d, "linux-2.6.39");
    assert!(c.metrics.get("ext4.async_commits").unwrap() > 0);
}

#[test]
fn read_latency_and_memory_keys_are_checked() {
    let s = Spec::load("read-latency-jbd-refine").unwrap();
    assert_eq!(s.kind, Kind::ReadLatency);
    let head =
        "name = \"x\"\nkind = \"read-latency\"\ntitle = \"t\"\nduration = \"1s\"\nfs = \"ext3\"\n";
    for (extra, what) in [
        ("memory = \"0\"\n", "memory"),
        ("memory = \"4x\"\n", "memory"),
        ("read_interval = \"-1s\"\n", "read_interval"),
        ("read_size = \"0\"\n", "read_size"),
    ] {
        let e = Spec::parse(&format!("{head}{extra}"), "x.toml").unwrap_err();
        assert_eq!(e.location, "x.toml:6", "{extra}");
        assert!(e.message.contains(what), "{extra}: {}", e.message);
    }
    let e = Spec::parse(
        "name = \"x\"\nkind = \"dbench\"\ntitle = \"t\"\nduration = \"1s\"\nmemory = \"4g\"\n[mix]\nFlush = 1\n",
        "y.toml",
    )
    .unwrap_err();
    assert_eq!(e.location, "y.toml:5");
}

/// A layout larger than the filesystem is ENOSPC at setup, an error, not a run on blocks
/// past the end of the device.
#[test]
fn a_layout_larger_than_the_filesystem_is_enospc() {
    let (mut s, d) = short(1);
    s.reader_file_size = 1 << 40;
    let e = match run(&s, &Policy::preset("linux-2.6.39").unwrap(), &d, 1, None) {
        Err(e) => e,
        Ok(_) => panic!("a 1 TiB reader file fits a 1 TiB filesystem with its metadata"),
    };
    assert!(e.contains("no space left on device"), "{e}");
}
