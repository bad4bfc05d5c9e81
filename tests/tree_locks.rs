//! Extent buffer tree locks (issue 27 item 2, models/src/btrfs/locking.rs): changes to one
//! block wait for each other, the crash check stays silent with them, and a contended
//! workload on a few cores runs to its end (lock holders keep their core, so spinning
//! waiters cannot starve them).

use crate::common;

use common::{attributed, dbench16, invariant_hits, scripted, sweep};
use models::block::DiskConfig;
use models::kernel::{parse_policy, preset_names, Policy};
use models::scenario::Scenario;
use models::workload::fsload::run;
use models::workload::spec::Spec;

const TWO_CREATES: &str =
    include_str!("../scenarios/examples/locks-tree-two-creates-one-leaf.toml");

fn scenario(text: &str) -> Scenario {
    Scenario::parse(text, "inline.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// The example with the mechanism switched off (`[costs] tree_locks = 0`).
fn without_tree_locks() -> Scenario {
    scenario(&format!("{TWO_CREATES}\n[costs]\ntree_locks = 0\n"))
}

#[test]
fn two_creates_in_one_leaf_wait_for_each_other() {
    let p = Policy::preset("linux-5.10").unwrap();
    let with = scripted(&scenario(TWO_CREATES), &p);
    let without = scripted(&without_tree_locks(), &p);
    assert_eq!(with.metrics.get("tree_lock.fs.level0_count"), Some(1));
    let waited = with.metrics.get("tree_lock.fs.level0_ns").unwrap();
    assert!(waited > 0);
    assert_eq!(without.metrics.get("tree_lock.fs.level0_count"), Some(0));
    // The wait delays the second create: the run ends later, by at most the wait.
    assert!(with.end > without.end, "{} vs {}", with.end, without.end);
    assert!(
        with.end - without.end <= waited,
        "{} vs {}",
        with.end,
        without.end
    );
}

#[test]
fn tree_locks_never_make_the_crash_check_fire_under_any_preset() {
    let sc = scenario(TWO_CREATES);
    for name in preset_names() {
        let p = Policy::preset(name).unwrap();
        let r = sweep(&sc, &p, 0..500);
        assert!(invariant_hits(&r).is_empty(), "{name}: {:?}", r.targets);
    }
}

#[test]
fn contended_dbench_on_few_cores_runs_and_reports_tree_lock_waits() {
    // 32 clients on 2 cores: most tree changes find their blocks' locks held or their core
    // taken; a holder that had to queue for a core while others spin would deadlock the
    // engine (SimError::Deadlock) or stall the run.
    let mut s = Spec::load("dbench").unwrap();
    s.clients = 32;
    s.cpus = Some(2);
    s.duration = sim::S;
    s.warmup = sim::S / 4;
    let d = DiskConfig::resolve(&s.device).unwrap();
    let p = parse_policy("linux-5.11").unwrap();
    let r = run(&s, &p, &d, 3, None).unwrap();
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(
        lock_waits(&r, "fs") > 0,
        "no subvolume tree lock wait in a contended dbench"
    );
    let locked = attributed(&r, "NTCreateX", "tree_lock.");
    assert!(locked > 0, "NTCreateX's attribution has no tree lock wait");
}

/// Waits on the extent buffer locks of `tree` (fs, extent, csum, log), all levels.
fn lock_waits(r: &models::workload::fsload::WorkloadResult, tree: &str) -> u64 {
    ["level0", "level1", "level2"]
        .iter()
        .map(|l| {
            r.metrics
                .get(&format!("tree_lock.{tree}.{l}_count"))
                .unwrap()
        })
        .sum()
}

#[test]
fn tree_locks_is_a_switch_in_a_scenario_file() {
    let text = format!("{TWO_CREATES}\n[costs]\ntree_locks = 2\n");
    let Err(e) = Scenario::parse(&text, "x.toml") else {
        panic!("tree_locks = 2 accepted");
    };
    let msg = e.to_string();
    assert!(msg.starts_with("x.toml:"), "{msg}");
    assert!(
        msg.contains(
            "tree_locks, delayed_items, delayed_refs, global_rsv_resize and log_cow 0 or 1"
        ),
        "{msg}"
    );
    // The other model switches are held to 0 or 1 as well.
    for key in [
        "delayed_items",
        "delayed_refs",
        "global_rsv_resize",
        "log_cow",
    ] {
        let text = format!("{TWO_CREATES}\n[costs]\n{key} = 2\n");
        assert!(
            Scenario::parse(&text, "x.toml").is_err(),
            "{key} = 2 accepted"
        );
    }
}

#[test]
fn unlinks_removing_logged_names_wait_for_the_log_trees_locks() {
    // btrfs_del_inode_ref_in_log and btrfs_del_dir_entries_in_log delete from the log tree
    // through searches for deletion (write locks up to level 2, the leaf's parent kept):
    // a dbench Unlink of a name its client's Flush logged waits for the fsyncs' copies in
    // `tree_lock.log.*`; with the locks off it does not.
    let waits = |locks: u64| attributed(&dbench16(locks), "Unlink", "tree_lock.log.");
    let with = waits(1);
    assert!(with > 0, "{with} ns");
    assert_eq!(waits(0), 0);
}

#[test]
fn fsyncs_copying_into_the_log_tree_wait_for_its_locks() {
    // 16 clients fsync into one subvolume's log tree: btrfs_log_inode's inserts
    // write-lock the log tree's leaf and its parent, so concurrent copies wait in
    // `tree_lock.log.*`; with the locks off none does.
    let waits = |locks: u64| {
        let r = dbench16(locks);
        (
            lock_waits(&r, "log"),
            attributed(&r, "Flush", "tree_lock.log."),
        )
    };
    let (count, in_flush) = waits(1);
    assert!(
        count > 0 && in_flush > 0,
        "{count} waits, {in_flush} ns in Flush"
    );
    assert_eq!(waits(0), (0, 0));
}
