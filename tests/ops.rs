//! The operations beyond the R1–R7 races (truncate, fallocate, punch hole, setxattr,
//! fdatasync, sync_file_range, syncfs, and unlink/rename inside a log): what each puts in
//! the log, and the S2 check that catches a model broken where the kernel is careful.

use models::btrfs::Mutant;
use models::device::DeviceConfig;
use models::kernel::Policy;
use models::scenario::{run, Interleaving, RunResult, Scenario};

fn scenario(setup: &[&str], ops: &[&str]) -> Scenario {
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let t = format!(
        "name = \"ops\"\nrace = \"OPS\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [{}]\n[[task]]\nname = \"A\"\nops = [{}]\n[policies]\nbefore = \"linux-5.11\"\nafter = \"linux-5.11\"\n",
        list(setup),
        list(ops)
    );
    Scenario::parse(&t, "ops.toml").unwrap_or_else(|e| panic!("{e}\n{t}"))
}

fn run_with(sc: &Scenario, mutant: Option<Mutant>) -> RunResult {
    let mut p = Policy::preset("linux-5.11").unwrap();
    if let Some(m) = mutant {
        p = p.with_mutant(m);
    }
    let dev = DeviceConfig::resolve(&sc.device).unwrap();
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
