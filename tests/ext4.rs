//! ext3/ext4 on jbd/jbd2 (seed 003): the commit write type per release, ext4_sync_file's
//! 2.6.37 early return, barriers and the S2 crash check, and determinism.

use models::block::DiskConfig;
use models::kernel::Policy;
use models::scenario::{run, Interleaving, RunResult, Scenario};

fn scenario(fs: &str, mount: &str, setup: &[&str], tasks: &[&[&str]]) -> Scenario {
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut t = format!(
        "name = \"e\"\nrace = \"E\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"{fs}\"\nmount = \"{mount}\"\ndevice = \"hdd\"\nsetup = [{}]\n",
        list(setup)
    );
    for (i, ops) in tasks.iter().enumerate() {
        t.push_str(&format!(
            "[[task]]\nname = \"T{i}\"\nops = [{}]\n",
            list(ops)
        ));
    }
    t.push_str("[policies]\nbefore = \"linux-2.6.36\"\nafter = \"linux-2.6.37\"\n");
    Scenario::parse(&t, "e.toml").unwrap_or_else(|e| panic!("{e}\n{t}"))
}

fn go(sc: &Scenario, policy: &str) -> RunResult {
    let p = Policy::preset(policy).unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    run(sc, &p, &dev, 1, &Interleaving::Script)
}

fn m(r: &RunResult, name: &str) -> u64 {
    r.metrics
        .get(name)
        .unwrap_or_else(|| panic!("no metric {name}"))
}

/// One fsync-driven commit: its log writes are REQ_SYNC from 2.6.37 on; 2.6.36 writes
/// them plain WRITE; Jan Kara's RFC writes them sync because the fsync asked to wait
/// before the transaction was locked.
#[test]
fn commit_write_type_follows_the_release() {
    let sc = scenario(
        "ext4",
        "",
        &["mkdir /d"],
        &[&["create /d/f", "write /d/f 64k", "fsync /d/f"]],
    );
    for (p, sync) in [
        ("linux-2.6.36", 0),
        ("linux-2.6.37", 1),
        ("jan-rfc", 1),
        ("linux-2.6.39", 1),
    ] {
        let r = go(&sc, p);
        assert!(r.violations.is_empty(), "{p}: {:?}", r.violations);
        assert_eq!(m(&r, "ext4.commits"), 1, "{p}");
        assert_eq!(m(&r, "ext4.sync_commits"), sync, "{p}");
        assert_eq!(m(&r, "ext4.async_commits"), 1 - sync, "{p}");
        assert_eq!(m(&r, "ext4.fsync_commit_waits"), 1, "{p}");
    }
}

/// A commit the timer locked before anyone waited: the RFC (decided at T_LOCKED) writes
/// it async although an fsync then waits for it; 2.6.37 writes it sync.
#[test]
fn a_timer_commit_is_async_under_the_rfc_even_when_an_fsync_waits() {
    let sc = scenario(
        "ext3",
        "barrier=1",
        &["mkdir /d", "create /d/f"],
        &[&["write /d/f 64k", "sleep 5s", "fsync /d/f"]],
    );
    let rfc = go(&sc, "jan-rfc");
    assert_eq!(m(&rfc, "ext4.timer_commits"), 1);
    assert_eq!(m(&rfc, "ext4.waited_async_commits"), 1);
    let v37 = go(&sc, "linux-2.6.37");
    assert_eq!(m(&v37, "ext4.waited_async_commits"), 0);
    assert_eq!(m(&v37, "ext4.sync_commits"), 1);
    // ext3 data=ordered: kjournald wrote the 64 KiB itself.
    assert_eq!(m(&v37, "ext4.ordered_data_bytes"), 64 << 10);
}

/// ext4_sync_file@v2.6.37 returns after a flush when its commit was already requested:
/// the fsync returns before the commit block is on the platter and S2 catches it. The
/// fixed fsync (always wait, as linux-5.10's preset does) does not.
#[test]
fn ext4_fsync_of_an_already_requested_commit_returns_early_in_2637() {
    // The data is written back in the setup (i_sync_tid = transaction 1); two tasks fsync
    // the file at once: the first starts transaction 1's commit and waits, the second finds
    // it requested.
    let sc = scenario(
        "ext4",
        "",
        &[
            "mkdir /d",
            "create /d/f",
            "write /d/f 64k",
            "writeback /d/f",
        ],
        &[&["fsync /d/f"], &["fsync /d/f"]],
    );
    let old = go(&sc, "linux-2.6.37");
    assert_eq!(m(&old, "ext4.fsync_flush_only"), 1);
    assert!(
        old.violations.iter().any(|v| v.invariant == "S2"),
        "{:?}",
        old.violations
    );
    let fixed = go(&sc, "linux-5.10");
    assert_eq!(m(&fixed, "ext4.fsync_flush_only"), 0);
    assert!(fixed.violations.is_empty(), "{:?}", fixed.violations);
}

/// Without barriers the commit block sits in the disk's volatile cache when the fsync
/// returns: recovery would not replay it (ext3's 2.6.37 default); with barrier=1 it would.
#[test]
fn ext3_without_barriers_loses_a_returned_fsync_on_a_volatile_cache() {
    let ops: &[&str] = &["create /d/f", "write /d/f 16k", "fsync /d/f"];
    let nob = go(&scenario("ext3", "", &["mkdir /d"], &[ops]), "linux-2.6.37");
    assert!(nob.violations.iter().any(|v| v.invariant == "S2"));
    let b = go(
        &scenario("ext3", "barrier=1", &["mkdir /d"], &[ops]),
        "linux-2.6.37",
    );
    assert!(b.violations.is_empty(), "{:?}", b.violations);
}

/// A reader and an fsyncing writer: the same seed gives the same trace; the reader's
/// bytes are counted.
#[test]
fn ext4_runs_are_deterministic_and_count_reads() {
    let sc = scenario(
        "ext4",
        "",
        &["mkdir /d", "populate /big 16m"],
        &[
            &["read /big 1m", "read /big 1m"],
            &["create /d/f", "write /d/f 64k", "fsync /d/f"],
        ],
    );
    let a = go(&sc, "linux-2.6.37");
    let b = go(&sc, "linux-2.6.37");
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(m(&a, "ext4.read_bytes"), 2 << 20);
    assert!(m(&a, "ext4.reader_stall_ns") > 0);
}

/// Mount options belong to their filesystem: file:line errors otherwise.
#[test]
fn mount_options_are_checked_per_filesystem() {
    let bad = |fs: &str, mount: &str| {
        let t = format!(
            "name = \"e\"\nrace = \"E\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"{fs}\"\nmount = \"{mount}\"\n[[task]]\nname = \"A\"\nops = [\"sync\"]\n[policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.11\"\n"
        );
        Scenario::parse(&t, "e.toml").err().map(|e| e.to_string())
    };
    assert!(bad("btrfs", "barrier=1").unwrap().contains("e.toml:6"));
    assert!(bad("ext4", "ssd").unwrap().contains("btrfs's"));
    assert!(bad("ext3", "data=writeback").is_some());
    assert!(bad("ext4", "data=journal").is_some());
    assert!(bad("ext4", "data=writeback,barrier=0,commit=5").is_none());
}

/// Seed 003's blktrace in miniature (648,046 vs 327,404 write dispatches for the same
/// bytes): 2.6.37's WRITE_SYNC unplugs the queue after every log buffer, so the commit's
/// contiguous 4 KiB log writes reach the disk one by one; 2.6.36's plugged WRITEs merge.
#[test]
fn write_sync_unplugs_per_bio_and_fragments_the_log_writes() {
    let sc = Scenario::builtin()
        .into_iter()
        .find(|s| s.name == "j1b-reader-stalled-by-sync-commit")
        .unwrap();
    let (old, new) = (go(&sc, "linux-2.6.36"), go(&sc, "linux-2.6.37"));
    assert_eq!(
        m(&old, "device_bytes_written"),
        m(&new, "device_bytes_written")
    );
    assert!(
        m(&new, "ext4.write_dispatches") > 2 * m(&old, "ext4.write_dispatches"),
        "2.6.36 {} vs 2.6.37 {}",
        m(&old, "ext4.write_dispatches"),
        m(&new, "ext4.write_dispatches")
    );
    assert!(m(&old, "ext4.write_merges") > m(&new, "ext4.write_merges"));
    // Async commit writes wait while the reader's sync READs are in flight (CFQ).
    assert!(m(&old, "ext4.cfq_async_blocked_ns") > 0);
    assert_eq!(m(&new, "ext4.cfq_async_blocked_ns"), 0);
}

/// Explored interleavings of both J1 scenarios under every journal policy: the block layer
/// keeps its books (a front merge once left CFQ a dead request and panicked here), the
/// journal commits every fsync's transaction, and no returned fsync is lost.
#[test]
fn explored_j1_interleavings_keep_the_block_layer_and_the_journal_consistent() {
    for sc in Scenario::builtin()
        .into_iter()
        .filter(|s| s.race.starts_with("J1"))
    {
        let dev = DiskConfig::resolve(&sc.device).unwrap();
        for p in ["linux-2.6.36", "linux-2.6.37", "jan-rfc", "linux-2.6.39"] {
            let policy = Policy::preset(p).unwrap();
            for seed in 0..12 {
                for il in [
                    Interleaving::Random,
                    Interleaving::Pct(3),
                    Interleaving::Urw,
                ] {
                    let r = run(&sc, &policy, &dev, seed, &il);
                    assert!(
                        r.violations.is_empty(),
                        "{} {p} seed {seed}: {:?}",
                        sc.name,
                        r.violations
                    );
                    assert_eq!(
                        m(&r, "ext4.fsync_commit_waits"),
                        m(&r, "ext4.commits"),
                        "{} {p} seed {seed}",
                        sc.name
                    );
                }
            }
        }
    }
}
