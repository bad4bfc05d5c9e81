//! Directory reads reach the filesystem (issue 27: Find's readdir): `readdir PATH`
//! (getdents64 to the end) runs btrfs_real_readdir@v5.10 — the directory's i_rwsem taken
//! exclusively while it has a delayed node, its dir index items walked under
//! the subvolume tree's read locks — and dbench's directory scans (resolve_name's, Find's,
//! Deltree's) go through it.

use crate::common;

use common::{attributed, btrfs_sim, dbench16, one_task, run_ops, scripted};
use models::kernel::Policy;
use models::scenario::Scenario;

const DELAYED: &str = include_str!("../scenarios/examples/locks-readdir-with-delayed-items.toml");

fn scenario(text: &str) -> Scenario {
    Scenario::parse(text, "inline.toml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_readdir_with_pending_index_items_holds_the_directorys_i_rwsem() {
    // The example: B's setattr of /d, 500 ns into A's readdir, waits for it while /d has a
    // delayed node; with the delayed items off the index item is in the tree, the readdir
    // holds i_rwsem only shared and the setattr does not wait.
    let p = Policy::preset("linux-5.10").unwrap();
    let with = scripted(&scenario(DELAYED), &p);
    assert_eq!(with.metrics.get("inode_lock_count"), Some(1));
    let no_delayed = DELAYED.replace(
        "[expect.before]",
        "[costs]\ndelayed_items = 0\n[expect.before]",
    );
    let without = scripted(&scenario(&no_delayed), &p);
    assert_eq!(without.metrics.get("inode_lock_count").unwrap_or(0), 0);
}

#[test]
fn a_directorys_delayed_node_outlives_its_items_and_still_makes_readdir_exclusive() {
    // /d/x's index item runs at the commit, but the node stays attached to /d (the inode
    // keeps its reference until eviction), so the readdir still takes i_rwsem exclusively
    // and B's setattr waits. An empty directory has one too: btrfs_mkdir@v5.10 updates the
    // new inode's item through btrfs_update_inode (a delayed inode item).
    let p = Policy::preset("linux-5.10").unwrap();
    let ran = DELAYED.replace(
        "\"commit\",\n  \"create /d/x\",",
        "\"create /d/x\",\n  \"commit\",",
    );
    assert_ne!(ran, DELAYED);
    let r = scripted(&scenario(&ran), &p);
    assert_eq!(r.metrics.get("inode_lock_count"), Some(1));
    let empty = DELAYED
        .replace("\"create /d/x\",", "\"mkdir /e\",\n  \"commit\",")
        .replace("readdir /d", "readdir /e")
        .replace("setattr /d", "setattr /e");
    let r = scripted(&scenario(&empty), &p);
    assert_eq!(r.metrics.get("inode_lock_count"), Some(1));
}

/// The latency of the one `readdir` of a task that reads directory /d holding `n` files,
/// all committed (their index items in the tree), under linux-5.10, with `costs` set.
fn readdir_ns(n: usize, costs: &[(&str, u64)]) -> u64 {
    let mut setup: Vec<String> = vec!["mkdir /d".into()];
    setup.extend((0..n).map(|i| format!("create /d/f{i}")));
    setup.push("commit".into());
    let setup: Vec<&str> = setup.iter().map(String::as_str).collect();
    let mut sc = one_task("rd", "linux-5.10", &setup, &["readdir /d"]);
    for &(k, v) in costs {
        assert!(sc.costs.set(k, v), "{k}");
    }
    let r = scripted(&sc, &Policy::preset("linux-5.10").unwrap());
    r.latency.by_op["readdir"].max()
}

#[test]
fn a_readdir_costs_more_the_more_index_items_it_copies() {
    // btrfs_real_readdir copies each dir index item out of its leaf (`readdir_item_ps` and
    // the item's bytes): 40 more files cost at least 40 items more; without the b-tree CPU
    // (readdir_item_ps and the byte cost 0) the two reads cost the same but for the
    // search's key compares.
    let (few, many) = (readdir_ns(2, &[]), readdir_ns(42, &[]));
    let c = models::btrfs::Costs::default();
    assert!(
        many - few >= 40 * c.readdir_item_ps / 1000,
        "{few} ns vs {many} ns"
    );
    let off = &[("readdir_item_ps", 0), ("leaf_move_ps_per_byte", 0)];
    let (few0, many0) = (readdir_ns(2, off), readdir_ns(42, off));
    assert!(many0 - few0 < many - few, "{few0}/{many0} vs {few}/{many}");
}

#[test]
fn readdir_reads_directories_only() {
    let (sim, fs) = btrfs_sim("linux-5.10");
    let got = run_ops(
        sim,
        &fs,
        &[
            "mkdir /d",
            "create /d/a",
            "readdir /d",
            "readdir /d/a",
            "readdir /nope",
            "readdir /",
        ],
    );
    assert_eq!(got[..3], [None, None, None]);
    assert!(
        got[3].as_deref().unwrap().contains("not a directory"),
        "{got:?}"
    );
    assert!(
        got[4].as_deref().unwrap().contains("no such file"),
        "{got:?}"
    );
    assert_eq!(got[5], None);
}

#[test]
fn dbench_finds_read_their_directory_behind_the_subvolume_trees_writers() {
    // Find reads a directory twice through btrfs_real_readdir: its read-locked searches of
    // the subvolume tree wait for the creates, renames and unlinks write-locking the same
    // blocks; with the tree locks off nothing waits. A failed Qpathinfo scans once too.
    let with = dbench16(1);
    assert!(attributed(&with, "Find", "tree_lock.fs.") > 0);
    assert!(attributed(&with, "Qpathinfo", "tree_lock.fs.") > 0);
    let without = dbench16(0);
    assert_eq!(attributed(&without, "Find", "tree_lock."), 0);
}
