//! The operations beyond the R1–R7 races (truncate, fallocate, punch hole, setxattr,
//! fdatasync, sync_file_range, syncfs, and unlink/rename inside a log): what each puts in
//! the log, and the S2 check that catches a model broken where the kernel is careful.

use crate::common;

use models::block::DiskConfig;
use models::btrfs::Mutant;
use models::kernel::Policy;
use models::scenario::{run, Interleaving, RunResult, Scenario};

fn scenario(setup: &[&str], ops: &[&str]) -> Scenario {
    common::one_task("ops", "linux-5.11", setup, ops)
}

fn run_with(sc: &Scenario, mutant: Option<Mutant>) -> RunResult {
    let mut p = Policy::preset("linux-5.11").unwrap();
    if let Some(m) = mutant {
        p = p.with_mutant(m);
    }
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    run(sc, &p, &dev, 1, &Interleaving::Script)
}

fn clean(sc: &Scenario) -> RunResult {
    let r = run_with(sc, None);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

/// A metric of `r` less what the setup alone gives (the setup runs in every run).
fn m(r: &RunResult, name: &str) -> u64 {
    let base = clean(&scenario(FILE, &["stat /d/f"]));
    r.metrics.get(name).unwrap() - base.metrics.get(name).unwrap()
}

fn s2(r: &RunResult, needle: &str) -> bool {
    r.violations
        .iter()
        .any(|v| v.invariant == "S2" && v.message.contains(needle))
}

const FILE: &[&str] = &[
    "mkdir /d",
    "create /d/f",
    "write /d/f 8k",
    "fsync /d/f",
    "commit",
];

#[test]
fn truncate_sets_full_sync_and_the_log_carries_the_new_size() {
    let sc = scenario(FILE, &["truncate /d/f 4k", "fsync /d/f"]);
    let r = clean(&sc);
    // Full sync (btrfs_truncate sets it): the trimmed piece's item was rewritten in this
    // transaction, so it is copied.
    assert_eq!(m(&r, "extent_logs"), 1);
    assert_eq!(m(&r, "log_syncs"), 1);
    // An fsync that skipped logging after the truncate leaves the old size and data to a
    // crash: S2 names the size or the dropped bytes.
    let sc = scenario(FILE, &["fsync /d/f", "truncate /d/f 4k", "fsync /d/f"]);
    let r = run_with(&sc, Some(Mutant::SkipLogWhenLoggedBefore));
    assert!(s2(&r, "size") || s2(&r, "dropped"), "{:?}", r.violations);
}

#[test]
fn punch_hole_logs_a_hole_and_the_mutant_without_it_is_caught() {
    let sc = scenario(FILE, &["punch-hole /d/f 0 4k", "fsync /d/f"]);
    let r = clean(&sc);
    assert_eq!(m(&r, "extent_logs"), 1, "the hole extent map");
    assert_eq!(m(&r, "csum_bytes"), 0, "a hole has no checksums");
    let r = run_with(&sc, Some(Mutant::PunchHoleLogsNoHole));
    assert!(s2(&r, "dropped before it"), "{:?}", r.violations);
}

#[test]
fn fallocate_keep_size_preallocates_past_eof_and_survives_replay() {
    let sc = scenario(FILE, &["fallocate /d/f 8k 1m keep-size", "fsync /d/f"]);
    let r = clean(&sc);
    assert_eq!(m(&r, "extent_logs"), 1);
    assert_eq!(
        m(&r, "csum_bytes"),
        0,
        "preallocated extents have no checksums"
    );
    // Without keep-size the size moves and the fsync logs it (checked by S2's size rule).
    let sc = scenario(FILE, &["fallocate /d/f 0 64k", "fsync /d/f"]);
    let r = clean(&sc);
    assert_eq!(
        m(&r, "extent_logs"),
        1,
        "only the hole [8k, 64k) is allocated"
    );
}

#[test]
fn setxattr_is_logged_with_the_inode_and_the_mutant_without_it_is_caught() {
    let sc = scenario(FILE, &["setxattr /d/f user.a", "fsync /d/f"]);
    let r = clean(&sc);
    assert_eq!(m(&r, "log_syncs"), 1);
    let r = run_with(&sc, Some(Mutant::FsyncSkipsXattrs));
    assert!(s2(&r, "xattr user.a is gone"), "{:?}", r.violations);
}

#[test]
fn fdatasync_takes_the_fsync_path_and_sync_file_range_logs_nothing() {
    let a = clean(&scenario(FILE, &["write /d/f 4k", "fsync /d/f"]));
    let b = clean(&scenario(FILE, &["write /d/f 4k", "fdatasync /d/f"]));
    assert_eq!(a.metrics.scalars(), b.metrics.scalars());
    assert_eq!(m(&a, "log_syncs"), 1);
    let r = clean(&scenario(FILE, &["write /d/f 4k", "sync-file-range /d/f"]));
    assert_eq!(m(&r, "log_syncs"), 0);
    assert_eq!(
        m(&r, "transaction_commits"),
        0,
        "no commit after the setup's"
    );
    let r = clean(&scenario(FILE, &["write /d/f 4k", "syncfs"]));
    assert_eq!(m(&r, "transaction_commits"), 1);
}

#[test]
fn unlink_of_a_logged_name_is_deleted_from_the_log() {
    // btrfs_del_inode_ref_in_log: f was logged with both names; unlinking one removes it
    // from the log, so the next log sync (for another file) cannot bring it back.
    let setup = FILE;
    let ops = &[
        "create /d/x",
        "link /d/x /d/x.link",
        "fsync /d/x",
        "unlink /d/x.link",
        "create /d/z",
        "fsync /d/z",
    ];
    let sc = scenario(setup, ops);
    clean(&sc);
    let r = run_with(&sc, Some(Mutant::UnlinkKeepsLoggedNames));
    assert!(s2(&r, "log replay brings it back"), "{:?}", r.violations);
}

/// Log replay in the kernel's stage order (btrfs_recover_log_trees@v5.10..v5.16: inode
/// items, then dir index items, then inode refs): generic/557's foo, logged with its ref
/// and then unlinked, comes back from that ref when the unlink leaves it in the log
/// (`unlink-keeps-logged-names`), although the directory's later full log lacks foo. In
/// log order the directory's entries came last and hid the mutant.
#[test]
fn a_ref_the_unlink_left_in_the_log_brings_the_name_back() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/examples/ops-evict-unlink-fsync-dir.toml"
    );
    let sc = Scenario::load(path).unwrap();
    clean(&sc);
    let r = run_with(&sc, Some(Mutant::UnlinkKeepsLoggedNames));
    assert!(
        s2(
            &r,
            "the name 'foo' in directory 257 was removed before the log was synced"
        ),
        "{:?}",
        r.violations
    );
}

#[test]
fn the_new_operations_round_trip_through_their_file_spelling() {
    for line in [
        "truncate /f 4k",
        "fallocate /f 4k 1m",
        "fallocate /f 0 1m keep-size",
        "punch-hole /f 0 4k",
        "setxattr /f user.a",
        "fdatasync /f",
        "sync-file-range /f",
        "syncfs",
    ] {
        let op = models::scenario::parse_op(line).unwrap();
        assert_eq!(op.to_string(), line);
    }
    for bad in [
        "fallocate /f 0 0",
        "fallocate /f 0 1m keep",
        "punch-hole /f 0",
        "setxattr /f nonamespace",
        "truncate /f 2t",
    ] {
        assert!(models::scenario::parse_op(bad).is_err(), "{bad}");
    }
}

/// `evict PATH` (issue 26 item 3, issue 30 item 3): the ops of an inode written, fsynced,
/// written again and written back in one transaction, with or without an eviction before
/// the last fsync.
fn evict_ops(evict: bool) -> Vec<&'static str> {
    let mut v = vec![
        "write /d/f 4k",
        "fsync /d/f",
        "write /d/f 4k",
        "writeback /d/f",
    ];
    if evict {
        v.push("evict /d/f");
    }
    v.push("fsync /d/f");
    v
}

#[test]
fn an_inode_evicted_in_the_transaction_that_changed_it_takes_the_full_path() {
    // Cached: the fast path logs each new extent from the modified list.
    let cached = clean(&scenario(FILE, &evict_ops(false)));
    assert_eq!(m(&cached, "extent_logs"), 2);
    // Evicted and read back: NEEDS_FULL_SYNC (its item's transid is the running
    // generation), so the full sync copies every item changed in the transaction — the
    // first append's again.
    let evicted = clean(&scenario(FILE, &evict_ops(true)));
    assert_eq!(m(&evicted, "extent_logs"), 3);
    assert!(
        evicted
            .trace
            .iter()
            .any(|l| l.contains("evict: inode evicted and read back")),
        "{:?}",
        evicted.trace
    );
    // Without the flag the fast path walks the reloaded inode's empty modified list and
    // the second append is lost: S2 names its extent.
    let r = run_with(
        &scenario(FILE, &evict_ops(true)),
        Some(Mutant::EvictNoFullSync),
    );
    assert!(s2(&r, "is not in the tree"), "{:?}", r.violations);
}

#[test]
fn an_inode_changed_only_in_a_committed_transaction_is_read_back_without_full_sync() {
    // FILE ends with a commit: the item's transid is committed, so no NEEDS_FULL_SYNC and
    // last_trans <= last_trans_committed: the fsync after the eviction is skipped.
    let r = clean(&scenario(FILE, &["evict /d/f", "fsync /d/f"]));
    assert_eq!(m(&r, "fsync_skips"), 1);
    assert_eq!(m(&r, "log_syncs"), 0);
    assert_eq!(m(&r, "full_commits"), 0);
}

#[test]
fn a_dirty_inode_stays_in_the_cache() {
    // Dirty pages keep the inode off the LRU (inode_add_lru): nothing is lost, the fsync
    // takes the fast path as without the eviction, and even the mutant loses nothing.
    let ops = [
        "write /d/f 4k",
        "fsync /d/f",
        "write /d/f 4k",
        "evict /d/f",
        "fsync /d/f",
    ];
    let r = clean(&scenario(FILE, &ops));
    assert_eq!(m(&r, "extent_logs"), 2);
    assert!(
        r.trace.iter().any(|l| l.contains("evict: dirty")),
        "{:?}",
        r.trace
    );
    let r = run_with(&scenario(FILE, &ops), Some(Mutant::EvictNoFullSync));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn an_inode_another_operation_is_running_on_stays_in_the_cache() {
    // A's fsync holds its reference (an open file) from fsync:start to its end; B's
    // eviction runs while A waits at fsync:done.
    let t = "name = \"busy\"\nrace = \"OPS\"\ntitle = \"t\"\nsummary = \"s\"\n\
        setup = [\"mkdir /d\", \"create /d/f\", \"write /d/f 8k\", \"fsync /d/f\", \"commit\", \"write /d/f 4k\"]\n\
        [[task]]\nname = \"A\"\nops = [\"fsync /d/f\"]\n\
        [[task]]\nname = \"B\"\nops = [\"evict /d/f\"]\n\
        [script]\nsteps = [\"A fsync:joined\", \"B evict:start\", \"B evict:done\", \"A fsync:done\"]\n\
        [policies]\nbefore = \"linux-5.11\"\nafter = \"linux-5.11\"\n";
    let sc = Scenario::parse(t, "busy.toml").unwrap();
    let r = clean(&sc);
    assert!(
        r.trace
            .iter()
            .any(|l| l.contains("evict: referenced by a running operation")),
        "{:?}",
        r.trace
    );
    assert!(!r.trace.iter().any(|l| l.contains("evict: inode evicted")));
}

#[test]
fn a_ranged_fsync_writes_back_and_logs_the_whole_file() {
    // btrfs_sync_file@v5.10..v5.15 sets start = 0, end = LLONG_MAX: the 64 KiB appended
    // outside [0, 4k) are written back and logged, exactly as by a full fsync.
    let full = clean(&scenario(FILE, &["write /d/f 64k", "fsync /d/f"]));
    for ranged in ["fsync /d/f 0 4k", "fdatasync /d/f 0 4k", "fsync /d/f 1m 4k"] {
        let r = clean(&scenario(FILE, &["write /d/f 64k", ranged]));
        assert_eq!(m(&r, "extent_logs"), 1, "{ranged}");
        for k in [
            "extent_logs",
            "csum_bytes",
            "log_syncs",
            "inode_logs",
            "full_commits",
            "fsync_skips",
        ] {
            assert_eq!(r.metrics.get(k), full.metrics.get(k), "{ranged}: {k}");
        }
    }
}

#[test]
fn the_new_examples_hold_on_every_preset_scripted_and_swept() {
    for name in [
        "ops-evict-forces-full-sync",
        "ops-ranged-fsync-logs-whole-file",
        "ops-removexattr-fsync",
    ] {
        common::crash_state_holds_on_every_preset(&format!("examples/{name}"), 0..100);
    }
    // Its sweeps find a true S2 of 5.10–5.16 (the file's header): foo's fsync logs it in
    // the transaction after the one a concurrent commit is committing, so after the
    // eviction inode_logged() is false and the unlink leaves foo's ref in the log.
    common::crash_state_holds_on_every_preset_but(
        "examples/ops-evict-unlink-fsync-dir",
        0..100,
        &["S2"],
    );
}

#[test]
fn ranged_fsync_and_evict_parse_round_trip_and_refuse_bad_input() {
    for line in [
        "fsync /f 4k 8k",
        "fdatasync /f 0 1m",
        "fsync /f 4097 1",
        "evict /f",
    ] {
        let op = models::scenario::parse_op(line).unwrap();
        assert_eq!(op.to_string(), line);
    }
    for (bad, says) in [
        ("fsync /f 0 0", "LEN > 0"),
        ("fsync /f -1 4k", "invalid size '-1'"),
        ("fdatasync /f 4k -4k", "invalid size '-4k'"),
        ("fsync /f 0", "fsync PATH [OFFSET LEN]"),
        ("fsync /f 0 4k 8k", "fsync PATH [OFFSET LEN]"),
        ("fsync /f 2t 4k", "at most 1T"),
        ("fsync /f 0 2t", "at most 1T"),
        ("fsync /f x 4k", "invalid size 'x'"),
        ("fsync /f 0 99999999999999999999", "invalid size"),
        ("fsync f 0 4k", "absolute path"),
        ("evict /f /g", "evict PATH"),
        ("evict", "evict PATH"),
    ] {
        let e = models::scenario::parse_op(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
        assert!(!e.contains('\n'), "{bad}: {e}");
    }
}

#[test]
fn ext_filesystems_refuse_evict_and_ranged_fsync_naming_the_line() {
    for (op, says) in [
        ("evict /d/f", "'evict' is not modelled on ext3/ext4"),
        ("fsync /d/f 0 4k", "modelled on btrfs only"),
        ("fdatasync /d/f 0 4k", "modelled on btrfs only"),
    ] {
        let t = format!(
            "name = \"e\"\nrace = \"OPS\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"ext4\"\n\
             setup = [\"mkdir /d\", \"create /d/f\"]\n[[task]]\nname = \"A\"\nops = [\"{op}\"]\n\
             [policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.10\"\n"
        );
        let sc = Scenario::parse(&t, "e.toml").unwrap();
        let r = run_with(&sc, None);
        assert!(
            r.violations.iter().any(|v| v.invariant == "scenario"
                && v.message.starts_with("e.toml:9: task A")
                && v.message.contains(says)),
            "{op}: {:?}",
            r.violations
        );
    }
}

#[test]
fn a_removed_xattr_stays_in_the_committed_tree_until_an_fsync_logs_the_inode() {
    use models::scenario::crash_state;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/examples/ops-removexattr-fsync.toml"
    );
    let sc = Scenario::load(path).unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let p = Policy::preset("linux-5.15").unwrap();
    let xattrs = |at: &str, p: &Policy| {
        let at = sc.crash_point(at).unwrap();
        let (_, state) = crash_state(&sc, p, &dev, sc.seed, &at);
        let got = state.unwrap().unwrap();
        got.paths["/foo"].xattrs.keys().cloned().collect::<Vec<_>>()
    };
    // Removed but not yet logged: the committed tree still has it.
    assert_eq!(
        xattrs("A removexattr:done", &p),
        ["user.attr1", "user.attr2", "user.attr3"]
    );
    // The fsync logs the remaining set and replay drops the removed one.
    assert_eq!(xattrs("A fsync:done", &p), ["user.attr1", "user.attr3"]);
    // An fsync that logs no xattrs leaves replay nothing to delete with.
    let broken = p.clone().with_mutant(Mutant::FsyncSkipsXattrs);
    assert_eq!(
        xattrs("A fsync:done", &broken),
        ["user.attr1", "user.attr2", "user.attr3"]
    );
}

#[test]
fn removexattr_of_a_missing_attribute_fails_and_the_op_round_trips() {
    let op = models::scenario::parse_op("removexattr /f user.a").unwrap();
    assert_eq!(op.to_string(), "removexattr /f user.a");
    for bad in [
        "removexattr /f",
        "removexattr /f noprefix",
        "removexattr f user.a",
    ] {
        assert!(models::scenario::parse_op(bad).is_err(), "{bad}");
    }
    let r = run_with(&scenario(FILE, &["removexattr /d/f user.none"]), None);
    assert!(
        r.violations
            .iter()
            .any(|v| v.invariant == "scenario" && v.message.contains("ENODATA")),
        "{:?}",
        r.violations
    );
    // Set, then removed: the fsync logs the inode (not skipped) and S2 stays quiet.
    let r = clean(&scenario(
        FILE,
        &[
            "setxattr /d/f user.a",
            "commit",
            "removexattr /d/f user.a",
            "fsync /d/f",
        ],
    ));
    assert_eq!(m(&r, "fsync_skips"), 0);
    assert_eq!(m(&r, "log_syncs"), 1);
}
