//! linux-5.16: the switches of the 5.16 merge (Filipe Manana's "btrfs: set of small
//! optimizations for inode logging"), each with its example scenario: it measures its waste
//! under linux-5.15, less under linux-5.16, and the difference goes with the switch alone.

use crate::common;

use models::block::DiskConfig;
use models::kernel::{parse_policy, Policy};
use models::scenario::{run, Interleaving, RunResult, Scenario};

fn run_with(sc: &Scenario, p: &Policy) -> RunResult {
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    run(sc, p, &dev, sc.seed, &Interleaving::Script)
}

fn example(file: &str) -> Scenario {
    let path = format!(
        "{}/scenarios/examples/{file}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    Scenario::load(&path).unwrap()
}

/// The switch `name`'s registry entry is 5.16's with `commit` and `metric`; its example
/// `file` measures `counts` = (linux-5.15, linux-5.16 without it, linux-5.16), the last two
/// differing by the switch alone, the skipped searches being CPU of the fsyncs; no crash point or
/// interleaving loses anything under either release.
fn check_switch(name: &str, commit: &str, metric: &str, file: &str, counts: (u64, u64, u64)) {
    let sw = models::btrfs::switches::by_name(name).unwrap();
    assert_eq!(
        (sw.since, sw.commit, sw.metric),
        ((5, 16), Some(commit), metric)
    );
    assert!(
        !sw.hit,
        "{name}: a cost of every first log, not a sweep target"
    );
    let (p15, p16) = (
        Policy::preset("linux-5.15").unwrap(),
        Policy::preset("linux-5.16").unwrap(),
    );
    assert!(!sw.is_on(&p15.btrfs) && sw.is_on(&p16.btrfs), "{name}");
    let off = parse_policy(&format!("linux-5.16:-{name}")).unwrap();
    let sc = example(file);
    assert_eq!(sc.key_metric(), metric);
    let got = |p: &Policy| run_with(&sc, p).metrics.get(metric).unwrap();
    assert_eq!((got(&p15), got(&off), got(&p16)), counts, "{name}");
    let (a, b) = (run_with(&sc, &off), run_with(&sc, &p16));
    // The searches it skips were CPU of the fsyncs (a few hundred ns each, below the
    // latency histogram's resolution): the single task ends earlier.
    assert!(b.end < a.end, "{} {}", b.end, a.end);
    // What the log holds is unchanged: the same log syncs, and after a power failure at
    // the file's crash point the same state.
    assert_eq!(
        a.metrics.get("log_syncs"),
        b.metrics.get("log_syncs"),
        "{name}"
    );
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let e = sc.expect_crash.as_ref().unwrap();
    for p in [&p15, &off, &p16] {
        let (r, st) = models::scenario::crash_state(&sc, p, &dev, sc.seed, &e.at);
        assert!(r.violations.is_empty(), "{}: {:?}", p.name, r.violations);
        let got = st.unwrap().unwrap();
        assert_eq!(e.compare(&got), Vec::<String>::new(), "{}", got.render());
    }
    for p in [&p15, &p16] {
        let r = common::sweep(&sc, p, 0..200);
        assert!(common::invariant_hits(&r).is_empty(), "{name}: {}", p.name);
    }
}

#[test]
fn linux_5_16_is_5_15_plus_its_switches() {
    let (p15, p16) = (
        Policy::preset("linux-5.15").unwrap(),
        Policy::preset("linux-5.16").unwrap(),
    );
    let five16: Vec<&str> = models::btrfs::switches::SWITCHES
        .iter()
        .filter(|s| s.since == (5, 16))
        .map(|s| s.name())
        .collect();
    assert_eq!(
        five16,
        [
            "drop-if-logged",
            "truncate-if-logged",
            "keep-delayed-inode",
            "new-name-logged-trans"
        ]
    );
    for s in &models::btrfs::switches::SWITCHES {
        assert_eq!(s.is_on(&p16.btrfs), s.since <= (5, 16), "{}", s.name());
        if s.since < (5, 16) {
            assert_eq!(s.is_on(&p15.btrfs), s.is_on(&p16.btrfs), "{}", s.name());
        }
    }
    assert_eq!(p15.journal, p16.journal);
    let all_on = five16.iter().fold(p15.clone(), |p, n| {
        let lp = models::btrfs::policy::LogPatch::parse(n).unwrap();
        p.with_log(lp, true)
    });
    assert_eq!(all_on.btrfs, p16.btrfs);
    assert_eq!(p16.spec().as_deref(), Some("linux-5.16"));
}

#[test]
fn the_5_16_drop_skip_removes_the_search_for_a_directory_logged_in_an_earlier_transaction() {
    // 88e221cdacc5: drop_inode_items returns when inode_logged() is false. The new
    // entries (logged_trans 0, changed now) and the setup's new inodes are searched for
    // under both releases; only /d, logged in the setup's transaction, is not under 5.16.
    check_switch(
        "drop-if-logged",
        "88e221cdacc5",
        "unneeded_log_drops",
        "r21-dir-log-drops-unlogged-items",
        (5, 5, 4),
    );
}

#[test]
fn the_5_16_truncate_skip_removes_the_search_for_a_file_logged_in_an_earlier_transaction() {
    // 4934a8150214: a full fsync calls truncate_inode_items on the log only when
    // inode_logged() is true. /d/f (logged in the setup's transaction, truncated now) is not
    // searched for under 5.16; /d/g (never logged, changed now) and the setup's new /d/f are.
    check_switch(
        "truncate-if-logged",
        "4934a8150214",
        "unneeded_log_truncates",
        "r20-full-fsync-truncates-unlogged-file",
        (3, 3, 2),
    );
}

#[test]
fn the_5_16_full_sync_leaves_a_files_delayed_inode_item_to_the_workers_and_the_commit() {
    // f6df27dd2707: a full sync of a regular file no longer writes its delayed inode item
    // into the subvolume tree first. /d/f's two full syncs (new, then truncated) each
    // wrote it under 5.15; the fast fsync between them wrote nothing under either.
    check_switch(
        "keep-delayed-inode",
        "f6df27dd2707",
        "fsync_delayed_inode_commits",
        "r22-full-fsync-commits-delayed-inode",
        (2, 2, 0),
    );
}

#[test]
fn a_directorys_delayed_items_are_still_written_by_its_fsync_under_5_16() {
    // The switch is about regular files: a directory's delayed dir index items must reach
    // the subvolume tree before log_dir_items searches it, in 5.16 as before. The two new
    // files, logged in full as the directory's new entries, hold delayed inode items
    // (btrfs_create's btrfs_update_inode@v5.15): 5.15 commits them, 5.16 does not.
    let text = r#"
name = "dir-delayed-items"
race = "D"
title = "a directory's fsync runs its delayed items"
summary = "create two files in a directory, fsync the directory"
key_metric = "delayed_nodes_run_fsync"
setup = ["mkdir /d", "commit"]

[[task]]
name = "A"
ops = ["create /d/a", "create /d/b", "fsync /d"]

[policies]
before = "linux-5.15"
after = "linux-5.16"
"#;
    let sc = Scenario::parse(text, "dir.toml").unwrap();
    for (p, runs, files) in [("linux-5.15", 3, 2), ("linux-5.16", 1, 0)] {
        let r = run_with(&sc, &Policy::preset(p).unwrap());
        assert_eq!(r.metrics.get("delayed_nodes_run_fsync"), Some(runs), "{p}");
        assert_eq!(
            r.metrics.get("fsync_delayed_inode_commits"),
            Some(files),
            "{p}"
        );
    }
}

#[test]
fn an_evicted_file_is_still_searched_for_under_5_16_and_the_search_is_needed() {
    // Logged in this transaction, evicted and read back: logged_trans is 0 and last_trans
    // this transaction, so inode_logged() is true and its next full fsync deletes its
    // logged items; the log does hold them, so that search is no waste. The first full
    // fsync (a file of the committed tree, not in this log yet, changed now) searches for
    // nothing under both. The switch changes nothing in this run.
    let text = r#"
name = "evicted-full-fsync"
race = "E"
title = "an evicted file's full fsync"
summary = "fsync, evict, truncate and fsync again in one transaction"
key_metric = "unneeded_log_truncates"
setup = ["mkdir /d", "create /d/f", "write /d/f 65536", "commit"]

[[task]]
name = "A"
ops = ["truncate /d/f 8192", "fsync /d/f", "evict /d/f", "truncate /d/f 4096", "fsync /d/f"]

[policies]
before = "linux-5.15"
after = "linux-5.16"
"#;
    let sc = Scenario::parse(text, "evicted.toml").unwrap();
    let p16 = Policy::preset("linux-5.16").unwrap();
    let off = parse_policy("linux-5.16:-truncate-if-logged").unwrap();
    let (a, b) = (run_with(&sc, &off), run_with(&sc, &p16));
    let metric = |r: &RunResult| r.metrics.get("unneeded_log_truncates").unwrap();
    // The setup's /d/f was created in the transaction the setup commits, never fsynced:
    // the first full fsync is the only search for nothing.
    assert_eq!((metric(&a), metric(&b)), (1, 1));
    assert_eq!(
        a.trace_hash, b.trace_hash,
        "the switch skipped a needed search"
    );
    assert_eq!(a.metrics, b.metrics);
}

#[test]
fn the_5_16_new_name_marks_its_new_ancestors_logged() {
    // 130341be7ffa: a directory logged as a new name's ancestor gets logged_trans, so the
    // renamed file's next fsync finds it logged (need_log_inode) instead of logging it
    // again in full through btrfs_log_all_parents.
    check_switch(
        "new-name-logged-trans",
        "130341be7ffa",
        "inode_logs",
        "r23-new-name-ancestor-logged-trans",
        (5, 5, 4),
    );
}
