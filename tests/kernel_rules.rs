//! The kernel's rules for when a transaction is marked for a full commit, when fsync skips,
//! which join kind blocks where, transaction_kthread's cadence and btrfs_sync_log's
//! batching: each test is a small scenario where the kernel flags (or does not) and fails
//! if the model's rule is removed or changed.

use models::block::DiskConfig;
use models::kernel::Policy;
use models::scenario::{run, Interleaving, RunResult, Scenario};

/// A scenario with `setup` ops, tasks `(name, ops)`, optional script steps and extra
/// top-level lines.
fn scenario(extra: &str, setup: &[&str], tasks: &[(&str, &[&str])], steps: &[&str]) -> Scenario {
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut t = format!(
        "name = \"rule\"\nrace = \"R4\"\ntitle = \"t\"\nsummary = \"s\"\n{extra}\nsetup = [{}]\n",
        list(setup)
    );
    for (name, ops) in tasks {
        t.push_str(&format!(
            "[[task]]\nname = \"{name}\"\nops = [{}]\n",
            list(ops)
        ));
    }
    if !steps.is_empty() {
        t.push_str(&format!("[script]\nsteps = [{}]\n", list(steps)));
    }
    Scenario::parse(&t, "rule.toml").unwrap_or_else(|e| panic!("{e}\n{t}"))
}

fn run_under(sc: &Scenario, policy: &str) -> RunResult {
    let p = match policy.split_once(":-") {
        Some((base, fix)) => Policy::preset(base)
            .unwrap()
            .without(models::btrfs::Fix::parse(fix).unwrap()),
        None => Policy::preset(policy).unwrap(),
    };
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let r = run(sc, &p, &dev, sc.seed, &Interleaving::Script);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

fn m(r: &RunResult, name: &str) -> u64 {
    r.metrics.get(name).unwrap()
}

const BASE: &[&str] = &[
    "mkdir /x",
    "mkdir /x/sub",
    "mkdir /x/sub/d",
    "create /x/y",
    "commit",
];

#[test]
fn rmdir_marks_the_parent_only_with_the_removed_directorys_own_recent_unlink() {
    // btrfs_rmdir: an empty directory that only saw creates passes nothing up …
    let fresh = scenario(
        "",
        BASE,
        &[(
            "A",
            &[
                "rename /x/sub/d /x/sub/e",
                "rmdir /x/sub/e",
                "rmdir /x/sub",
                "create /x/z",
                "write /x/z 4k",
                "fsync /x/z",
            ],
        )],
        &[],
    );
    let r = run_under(&fresh, "linux-5.11");
    assert_eq!(m(&r, "full_commits"), 0);
    assert_eq!(m(&r, "log_syncs"), 1);
    // … one that lost a name to another directory in this transaction passes it to /x.
    let moved = scenario(
        "",
        BASE,
        &[(
            "A",
            &[
                "rename /x/sub/d /d",
                "rmdir /x/sub",
                "create /x/z",
                "write /x/z 4k",
                "fsync /x/z",
            ],
        )],
        &[],
    );
    let r = run_under(&moved, "linux-5.11");
    assert_eq!(m(&r, "full_commits"), 1);
    assert_eq!(m(&r, "full_commits.last_unlink_trans.parent"), 1);
    // The oracle replays the log that would have been written instead: /x/z's name only;
    // /x/sub/d keeps its committed place, nothing is lost, so the commit was not needed.
    assert_eq!(m(&r, "unnecessary_full_commits"), 1);
}

/// check_parent_dirs_for_sync marks for the fsynced directory, the parent and any older
/// ancestor alike; the oracle finds the full commit necessary only where the log would
/// replace a directory's entries without knowing where the moved inode went.
#[test]
fn full_commit_necessity_depends_on_which_directory_lost_the_name() {
    let run_one = |ops: &[&str]| {
        let sc = scenario("", BASE, &[("A", ops)], &[]);
        run_under(&sc, "linux-5.11")
    };
    // The fsynced directory lost /x/y to its subdirectory: logging /x's entries would drop
    // y, whose new name in /x/sub is nowhere durable.
    let r = run_one(&["rename /x/y /x/sub/y2", "fsync /x"]);
    assert_eq!(m(&r, "full_commits.last_unlink_trans.inode"), 1);
    assert_eq!(m(&r, "unnecessary_full_commits"), 0);
    // Moved to the top directory instead, the log would hold the top directory too
    // (btrfs_log_all_parents: /x itself lost a name), y2 among its entries: not needed.
    let r = run_one(&["rename /x/y /y2", "fsync /x"]);
    assert_eq!(m(&r, "full_commits.last_unlink_trans.inode"), 1);
    assert_eq!(m(&r, "unnecessary_full_commits"), 1);
    // A new file's older ancestor lost the name: its log holds no entries of /x.
    let r = run_one(&[
        "rename /x/y /y2",
        "create /x/sub/n",
        "write /x/sub/n 4k",
        "fsync /x/sub/n",
    ]);
    assert_eq!(m(&r, "full_commits.last_unlink_trans.ancestor"), 1);
    assert_eq!(m(&r, "unnecessary_full_commits"), 1);
    // A file renamed out of /x and back in again is logged with all its parents: /x's
    // entries go in with y's new name, so again nothing would be lost.
    let r = run_one(&[
        "rename /x/y /y2",
        "create /x/n",
        "rename /x/n /x/sub/n",
        "fsync /x/sub/n",
    ]);
    assert_eq!(m(&r, "full_commits"), 1);
    assert_eq!(m(&r, "full_commits.last_unlink_trans.ancestor"), 1);
}

#[test]
fn unlink_never_marks_the_directory() {
    let sc = scenario(
        "",
        BASE,
        &[(
            "A",
            &["unlink /x/y", "create /x/z", "write /x/z 4k", "fsync /x/z"],
        )],
        &[],
    );
    let r = run_under(&sc, "linux-5.11");
    assert_eq!(m(&r, "full_commits"), 0);
}

#[test]
fn a_rename_within_one_directory_marks_the_file_so_its_fsync_logs_its_parent() {
    let sc = scenario(
        "",
        BASE,
        &[("A", &["rename /x/y /x/w", "write /x/w 4k", "fsync /x/w"])],
        &[],
    );
    let r = run_under(&sc, "linux-5.11");
    // No directory is marked: the fsync logs, and btrfs_log_all_parents logs /x too, then
    // log_new_dir_dentries on /x logs the file again for its entry w, added in this
    // transaction (tree-log.c@v5.11: btrfs_inode_in_log is false before the log sync).
    assert_eq!(m(&r, "full_commits"), 0);
    assert_eq!(m(&r, "inode_logs"), 3, "{:?}", r.metrics);
    // Across directories the old directory is marked: a new file's fsync there commits.
    let cross = scenario(
        "",
        BASE,
        &[(
            "A",
            &[
                "rename /x/y /w",
                "create /x/z",
                "write /x/z 4k",
                "fsync /x/z",
            ],
        )],
        &[],
    );
    let r = run_under(&cross, "linux-5.11");
    assert_eq!(m(&r, "full_commits"), 1);
}

#[test]
fn a_rename_of_a_logged_file_under_a_marked_ancestor_marks_the_whole_transaction() {
    let sc = scenario(
        "",
        &["mkdir /x", "mkdir /x/sub", "create /x/sub/f", "commit"],
        &[(
            "A",
            &[
                "create /x/sub/g",
                "write /x/sub/g 4k",
                "fsync /x/sub/g", // g is in this transaction's log
                "create /x/m",
                "rename /x/m /m", // /x loses a name to /: /x.last_unlink_trans = T
                "rename /x/sub/g /x/sub/h", // btrfs_log_new_name walks g's parents: marks T
                "write /x/sub/f 4k",
                "fsync /x/sub/f", // an old file, no walk of its own: the mark commits
            ],
        )],
        &[],
    );
    let r = run_under(&sc, "linux-5.11");
    assert_eq!(m(&r, "new_name_full_commit_marks"), 1);
    assert_eq!(m(&r, "full_commits"), 1);
    assert_eq!(m(&r, "log_syncs"), 1, "{:?}", r.metrics);
}

#[test]
fn a_skipped_fsync_clears_full_sync() {
    // Before R7 the skip applies to full syncs only; the skipped fsync clears the flag, so
    // the next fsync of a committed change logs (the regression R7 fixes).
    let sc = scenario(
        "",
        &["create /f", "write /f 4k", "writeback /f", "commit"],
        &[("A", &["fsync /f", "setattr /f", "commit", "fsync /f"])],
        &[],
    );
    let r = run_under(&sc, "linux-5.11:-R7");
    assert_eq!(m(&r, "fsync_skips"), 1);
    assert_eq!(m(&r, "log_syncs"), 1);
    assert_eq!(m(&r, "unnecessary_log_syncs"), 1);
    let r = run_under(&sc, "linux-5.11");
    assert_eq!(m(&r, "fsync_skips"), 2);
    assert_eq!(m(&r, "log_syncs"), 0);
}

#[test]
fn a_buffered_write_does_not_wait_for_a_blocked_commit() {
    // update_time_for_write takes no transaction: B's write finishes while A's commit is
    // in COMMIT_START (a START handle would wait there until UNBLOCKED).
    let sc = scenario(
        "",
        &["create /f", "write /f 4k"],
        &[("A", &["commit"]), ("B", &["write /f 4k"])],
        &[
            "A trans:commit_start",
            "B write:start",
            "B write:done",
            "A trans:commit_doing",
        ],
    );
    run_under(&sc, "linux-5.11");
    // A create (START handle) in the same place cannot finish: the script is stuck.
    let blocked = scenario(
        "",
        &["create /f", "write /f 4k"],
        &[("A", &["commit"]), ("B", &["create /g"])],
        &[
            "A trans:commit_start",
            "B create:start",
            "B create:done",
            "A trans:commit_doing",
        ],
    );
    let dev = DiskConfig::resolve(&blocked.device).unwrap();
    let r = run(
        &blocked,
        &Policy::preset("linux-5.11").unwrap(),
        &dev,
        1,
        &Interleaving::Script,
    );
    assert!(
        r.violations.iter().any(|v| v.invariant == "script"),
        "{:?}",
        r.violations
    );
}

#[test]
fn transaction_kthread_cadence_differs_between_releases() {
    // The transaction starts at 1.5 s; the kthread first looks at 2 s (age 1 s < 2 s).
    // 5.10 looks again 5 s later (7 s); 5.11 wakes one second past the deadline (4 s).
    // The fsync at 5 s finds the file committed only under 5.11.
    let sc = scenario(
        "commit_interval = \"2s\"",
        &[],
        &[
            ("A", &["sleep 1500ms", "create /f"]),
            ("B", &["sleep 5s", "fsync /f"]),
        ],
        &[],
    );
    let r11 = run_under(&sc, "linux-5.11");
    assert_eq!(m(&r11, "log_syncs"), 0, "{:?}", r11.metrics);
    let r10 = run_under(&sc, "linux-5.10");
    assert_eq!(m(&r10, "log_syncs"), 1, "{:?}", r10.metrics);
}

#[test]
fn sync_log_batches_with_a_jiffy_sleep_only_on_non_ssd_mounts() {
    let tasks: &[(&str, &[&str])] = &[
        ("A", &["write /a 4k", "fsync /a"]),
        ("B", &["write /b 4k", "fsync /b"]),
    ];
    let setup = &["create /a", "create /b", "commit"];
    let steps = &["A fsync:logged", "B fsync:logged"];
    let nossd = run_under(
        &scenario("mount = \"nossd\"", setup, tasks, steps),
        "linux-5.11",
    );
    assert!(m(&nossd, "log_batch_sleeps") >= 1, "{:?}", nossd.metrics);
    let ssd = run_under(
        &scenario("mount = \"ssd\"", setup, tasks, steps),
        "linux-5.11",
    );
    assert_eq!(m(&ssd, "log_batch_sleeps"), 0);
    // The NVMe preset does not rotate: `ssd` is the default there.
    let auto = run_under(&scenario("", setup, tasks, steps), "linux-5.11");
    assert_eq!(m(&auto, "log_batch_sleeps"), 0);
    assert!(nossd.end > ssd.end + 3_000_000, "one jiffy (4 ms) later");
}

#[test]
fn the_oracle_counts_a_relog_of_an_unchanged_item_in_the_same_log_as_waste() {
    let twice = scenario(
        "",
        &["mkdir /x", "commit"],
        &[(
            "A",
            &[
                "mkdir /x/n",
                "create /x/n/a",
                "create /x/n/b",
                "write /x/n/a 4k",
                "write /x/n/b 4k",
                "fsync /x/n/a", // logs /x/n as a new ancestor
                "fsync /x/n/b", // logs it again, unchanged: waste
            ],
        )],
        &[],
    );
    let r = run_under(&twice, "linux-5.11");
    assert_eq!(m(&r, "relogged_ancestors"), 1, "{:?}", r.metrics);
    // A change of the directory in between makes the second log necessary.
    let changed = scenario(
        "",
        &["mkdir /x", "commit"],
        &[(
            "A",
            &[
                "mkdir /x/n",
                "create /x/n/a",
                "create /x/n/b",
                "write /x/n/a 4k",
                "write /x/n/b 4k",
                "fsync /x/n/a",
                "create /x/n/c",
                "fsync /x/n/b",
            ],
        )],
        &[],
    );
    let r = run_under(&changed, "linux-5.11");
    assert_eq!(m(&r, "relogged_ancestors"), 0, "{:?}", r.metrics);
}

#[test]
fn sync_stat_and_osync_writes() {
    // sync(2) writes back the dirty file and commits; a crash afterwards keeps it (S2 runs
    // on every returned sync and at the end).
    let sc = scenario(
        "",
        &["create /f", "commit"],
        &[("A", &["write /f 8k", "stat /f", "sync"])],
        &[],
    );
    let r = run_under(&sc, "linux-5.11");
    assert_eq!(m(&r, "transaction_commits"), 2);
    assert_eq!(m(&r, "log_syncs"), 0);
    // An O_SYNC write is a write and an fsync: it logs and syncs the log.
    let os = scenario(
        "",
        &["create /f", "commit"],
        &[("A", &["write-osync /f 4k"])],
        &[],
    );
    let r = run_under(&os, "linux-5.11");
    assert_eq!(m(&r, "log_syncs"), 1);
    assert_eq!(m(&r, "extent_logs"), 1);
    // With nothing running, sync waits for the committing transaction (attach_barrier).
    let idle = scenario(
        "",
        &["create /f"],
        &[("A", &["commit"]), ("B", &["sync"])],
        &[
            "A trans:commit_doing",
            "B sync:start",
            "B sync:done",
            "A trans:unpinned",
        ],
    );
    let dev = DiskConfig::resolve(&idle.device).unwrap();
    let r = run(
        &idle,
        &Policy::preset("linux-5.11").unwrap(),
        &dev,
        1,
        &Interleaving::Script,
    );
    assert!(
        r.violations.iter().any(|v| v.invariant == "script"),
        "sync returned before the commit it waits for completed: {:?}",
        r.violations
    );
}

#[test]
fn a_shared_mapping_write_stamps_the_inode_without_the_lock_and_fsync_keeps_it() {
    // B's page_mkwrite stops between reading root->log_transid and root->last_log_commit
    // (bc0939fcfab0's window) while A logs /g and starts its log sync; B reads before the
    // sync ends, so this stamp is not torn (r16-mmap-stamp-reads-committed-log has the torn
    // order); B's fsync writes the data back (restamping the inode) and logs it: S2 holds.
    let sc = scenario(
        "",
        &["create /f", "create /g", "write /f 4k", "fsync /f"],
        &[
            ("A", &["write /g 4k", "fsync /g"]),
            ("B", &["mmap-write /f 4k", "fsync /f"]),
        ],
        &[
            "A fsync:logged",
            "B page_mkwrite:last_sub_trans_set",
            "A fsync:done",
            "B fsync:done",
        ],
    );
    let r = run_under(&sc, "linux-5.11");
    assert_eq!(m(&r, "log_syncs"), 3, "{:?}", r.metrics);
    assert_eq!(m(&r, "fsync_skips"), 0);
    assert_eq!(m(&r, "torn_log_stamps"), 0);
}

#[test]
fn a_directory_fsync_keeps_its_new_entries_and_the_mutant_that_skips_them_breaks_s2() {
    let sc = scenario(
        "",
        &["mkdir /d", "commit"],
        &[("A", &["create /d/a", "mkdir /d/e", "fsync /d"])],
        &[],
    );
    // The directory with its entries, and the two new inodes (log_new_dir_dentries).
    let r = run_under(&sc, "linux-5.11");
    assert_eq!(m(&r, "inode_logs"), 3, "{:?}", r.metrics);
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let broken = Policy::preset("linux-5.11")
        .unwrap()
        .with_mutant(models::btrfs::Mutant::DirFsyncLogsItemOnly);
    let r = run(&sc, &broken, &dev, 1, &Interleaving::Script);
    assert!(
        r.violations
            .iter()
            .any(|v| v.invariant == "S2" && v.message.contains("entry 'a' is gone")),
        "{:?}",
        r.violations
    );
}
