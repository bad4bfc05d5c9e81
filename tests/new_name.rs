//! btrfs_log_new_name (link, rename of an inode already in the log) as the kernel's
//! btrfs_log_inode_parent runs it: the inode, then its new ancestors; what each release
//! marks as logged; and LOG_INODE_EXISTS leaving last_log_commit alone from 5.12.

use crate::common;

use common::{invariant_hits, one_task, scripted, sweep};
use models::btrfs::policy::LogPatch;
use models::kernel::{parse_policy, preset_names, Policy};

/// `/d/x` logged (fdatasync), then renamed onto a name in `/d/e`, a directory new in this
/// transaction, and the log synced by another file's fsync. The rename logs x with its new
/// ref and, through log_all_new_ancestors, `/d/e` and `/d` (tree-log.c@v5.15:
/// btrfs_log_new_name → btrfs_log_inode_parent). The model once logged x alone: replay
/// found its ref in a directory the log lacked and S2 reported x's sync promise as "the
/// file has no name", on every preset, in every seed.
#[test]
fn a_rename_into_a_new_directory_logs_the_directory_too() {
    let setup = [
        "mkdir /d",
        "mkdir /d/e",
        "create /a",
        "create /d/x",
        "fdatasync /d/x",
        "create /d/e/y",
    ];
    for name in preset_names() {
        let sc = one_task("ren", name, &setup, &["rename /d/x /d/e/y", "fsync /a"]);
        let p = Policy::preset(name).unwrap();
        let r = scripted(&sc, &p);
        assert!(r.violations.is_empty(), "{name}: {:?}", r.violations);
        // The setup's fdatasync logs the new d; the rename logs the new e (and d again
        // where need_log_inode does not skip it: before 5.12).
        let want = if p.btrfs.log(LogPatch::SkipLoggedAncestors) {
            2
        } else {
            3
        };
        assert_eq!(r.metrics.get("ancestor_logs"), Some(want), "{name}");
        assert_eq!(invariant_hits(&sweep(&sc, &p, 0..200)), [], "{name}");
    }
}

/// A link of a logged inode into a new directory: with two links log_all_new_ancestors
/// walks every inode ref's directory chain, so the new `/d/e` is logged (the model once
/// walked the first parent only, leaving the new ref pointing into a directory the log
/// did not hold).
#[test]
fn a_link_into_a_new_directory_logs_the_directory() {
    let setup = [
        "mkdir /d",
        "create /a",
        "create /d/x",
        "commit",
        "mkdir /d/e",
    ];
    let ops = [
        "write /d/x 4096",
        "fdatasync /d/x",
        "link /d/x /d/e/z",
        "fsync /a",
    ];
    for name in preset_names() {
        let sc = one_task("lnk", name, &setup, &ops);
        let r = scripted(&sc, &Policy::preset(name).unwrap());
        assert!(r.violations.is_empty(), "{name}: {:?}", r.violations);
        assert_eq!(r.metrics.get("ancestor_logs"), Some(1), "{name}");
    }
}

/// 9acc8103ab59 (5.12): LOG_INODE_EXISTS (here the link's log of /d/f) no longer sets
/// last_log_commit, so after another file's fsync synced that log, f's own fsync is not
/// skipped as "in the log" but logs f again. 5.11 skips it; the switch alone decides.
#[test]
fn from_5_12_an_inode_logged_as_existing_is_not_skipped_by_its_fsync() {
    let setup = ["mkdir /d", "create /d/f", "create /d/o", "commit"];
    let ops = [
        "write /d/f 4096",
        "fsync /d/f",
        "link /d/f /d/g",
        "write /d/o 4096",
        "fsync /d/o",
        "fsync /d/f",
    ];
    let sc = one_task("exists", "linux-5.11", &setup, &ops);
    let skips = |p: &str| {
        let r = scripted(&sc, &parse_policy(p).unwrap());
        assert!(r.violations.is_empty(), "{p}: {:?}", r.violations);
        (
            r.metrics.get("fsync_skips").unwrap(),
            r.metrics.get("inode_logs").unwrap(),
        )
    };
    assert_eq!(skips("linux-5.11"), (1, 3));
    assert_eq!(skips("linux-5.11:+exists-keeps-log-commit"), (0, 5));
    assert_eq!(skips("linux-5.12"), (0, 5));
    assert_eq!(skips("linux-5.12:-exists-keeps-log-commit"), (1, 3));
}
