//! Delayed items (models/src/btrfs/delayed_inode.rs, delayed-inode.c@v5.10): directory
//! index items and inode item updates wait in per-inode nodes and reach the fs tree by the
//! delayed-meta workers, by btrfs_log_inode and by the commit. Each test fails with the
//! mechanism off (`[costs] delayed_items = 0`) or without the path it names.

use crate::common;

use common::scripted;
use models::kernel::Policy;
use models::scenario::Scenario;

/// One scripted run under linux-5.11 with `[costs] key = on`; no invariant may fire.
fn run_with(setup: &[&str], ops: &[&str], key: &str, on: bool) -> models::vfs::Metrics {
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "name = \"t\"\nrace = \"R1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [{}]\n\
         [[task]]\nname = \"A\"\nops = [{}]\n[costs]\n{key} = {}\n",
        list(setup),
        list(ops),
        u8::from(on)
    );
    let sc = Scenario::parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = scripted(&sc, &Policy::preset("linux-5.11").unwrap());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r.metrics
}

fn run(setup: &[&str], ops: &[&str], delayed: bool) -> models::vfs::Metrics {
    run_with(setup, ops, "delayed_items", delayed)
}

fn get(m: &models::vfs::Metrics, k: &str) -> u64 {
    m.get(k).unwrap_or_else(|| panic!("no metric {k}"))
}

/// A create queues the directory's index item and its inode item update; a commit writes
/// them (the setup's mkdir and create were committed before the task ran).
#[test]
fn a_commit_writes_what_a_create_queued() {
    let m = run(&["mkdir /d"], &["create /d/f", "commit"], true);
    assert!(get(&m, "delayed_items") >= 2, "{m:?}");
    assert!(get(&m, "delayed_nodes_run_commit") >= 1, "{m:?}");
    let off = run(&["mkdir /d"], &["create /d/f", "commit"], false);
    assert_eq!(get(&off, "delayed_items"), 0);
    assert_eq!(get(&off, "delayed_nodes_run_commit"), 0);
}

/// btrfs_log_inode runs a directory's delayed items before copying it (5aa7d1a7f4a2), and
/// a new file's (full sync) delayed inode item; the commit then finds nothing of theirs.
#[test]
fn a_directory_fsync_writes_the_directory_s_items_first() {
    let m = run(&["mkdir /d"], &["create /d/f", "fsync /d"], true);
    assert!(get(&m, "delayed_nodes_run_fsync") >= 1, "{m:?}");
    let m = run(&["mkdir /d"], &["create /d/f"], true);
    assert_eq!(
        get(&m, "delayed_nodes_run_fsync"),
        0,
        "no fsync, no fsync run"
    );
}

/// Past BTRFS_DELAYED_BACKGROUND (128) pending items, btrfs_balance_delayed_items hands
/// nodes to the delayed-meta workers: 100 creates in 100 directories queue 200+ items.
#[test]
fn many_pending_items_go_to_the_workers() {
    let dirs: Vec<String> = (0..100).map(|i| format!("mkdir /d{i}")).collect();
    let creates: Vec<String> = (0..100).map(|i| format!("create /d{i}/f")).collect();
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let creates: Vec<&str> = creates.iter().map(String::as_str).collect();
    let m = run(&dirs, &creates, true);
    assert!(get(&m, "delayed_nodes_run_async") > 0, "{m:?}");
    let few = run(&dirs[..20], &creates[..20], true);
    assert_eq!(
        get(&few, "delayed_nodes_run_async"),
        0,
        "under 128 items stay queued"
    );
}

/// A name created and removed before its index item was written cancels the insertion
/// (btrfs_delete_delayed_dir_index): fewer items are queued than when the create was
/// committed first.
#[test]
fn an_unlink_cancels_a_pending_index_insertion() {
    let cancelled = run(&["mkdir /d"], &["create /d/f", "unlink /d/f"], true);
    let committed = run(
        &["mkdir /d"],
        &["create /d/f", "commit", "unlink /d/f"],
        true,
    );
    assert!(
        get(&cancelled, "delayed_items") < get(&committed, "delayed_items"),
        "{cancelled:?} vs {committed:?}"
    );
}

fn run_refs(ops: &[&str], refs: bool) -> models::vfs::Metrics {
    run_with(&["create /f"], ops, "delayed_refs", refs)
}

/// Delayed data refs (delayed-ref.c): a written extent's EXTENT_ITEM is inserted by the
/// commit, not by the writeback that allocated it.
#[test]
fn the_commit_inserts_a_written_extent_s_item() {
    let m = run_refs(&["write /f 4096", "writeback /f", "commit"], true);
    assert_eq!(get(&m, "delayed_refs_run"), 1, "{m:?}");
    let off = run_refs(&["write /f 4096", "writeback /f", "commit"], false);
    assert_eq!(get(&off, "delayed_refs_run"), 0);
}

/// An extent allocated and freed in one transaction merges away in its ref head: the
/// commit only deletes its checksums, where one committed in between is inserted by the
/// first commit and deleted (item and checksums) by the second.
#[test]
fn an_extent_freed_in_the_transaction_that_allocated_it_is_never_inserted() {
    let same = run_refs(
        &["write /f 4096", "writeback /f", "unlink /f", "commit"],
        true,
    );
    assert_eq!(get(&same, "delayed_refs_run"), 1, "{same:?}");
    let apart = run_refs(
        &[
            "write /f 4096",
            "writeback /f",
            "commit",
            "unlink /f",
            "commit",
        ],
        true,
    );
    assert_eq!(get(&apart, "delayed_refs_run"), 3, "{apart:?}");
}

/// The delayed node's mutex: dbench's creates, unlinks and inode updates wait for the
/// delayed-meta workers running their directories' nodes (class `delayed_node.mutex`);
/// with the delayed items off there are no nodes and no such wait.
#[test]
fn changes_to_a_node_being_run_wait_for_its_mutex() {
    let r = common::dbench16(1);
    let waits = r.metrics.get("delayed_node.mutex_count").unwrap_or(0);
    let ns = r.metrics.get("delayed_node.mutex_ns").unwrap_or(0);
    assert!(waits > 0 && ns > 0, "{waits} waits, {ns} ns");
    let ops: u64 = ["NTCreateX", "Unlink", "Rename", "Find"]
        .iter()
        .map(|op| common::attributed(&r, op, "delayed_node.mutex"))
        .sum();
    assert!(ops > 0, "the waits land in the operations' attribution");
    let off = common::dbench16_with("delayed_items", 0);
    assert_eq!(off.metrics.get("delayed_node.mutex_count").unwrap_or(0), 0);
}
