//! Issue 26 item 3 / issue 30 item 3: `rename SRC DST` over an existing target, and open
//! file descriptors (`open PATH as NAME`, `@NAME`, `close @NAME`) that keep acting on their
//! inode after its path is renamed or unlinked.

use crate::common;

use common::scripted;
use models::block::DiskConfig;
use models::kernel::Policy;
use models::scenario::{crash_state, parse_op, RunResult, Scenario};
use models::vfs::recovered::{CrashPoint, Recovered};

/// A scenario of one task `A` after `setup`, under linux-5.15 for both policies.
fn scenario(setup: &[&str], ops: &[&str]) -> Scenario {
    common::one_task("fd", "linux-5.15", setup, ops)
}

fn p515() -> Policy {
    Policy::preset("linux-5.15").unwrap()
}

/// The scripted run and the state recovery finds after a power failure once every task
/// finished.
fn at_end(sc: &Scenario) -> (RunResult, Recovered) {
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let (r, state) = crash_state(sc, &p515(), &dev, 1, &CrashPoint::End);
    (r, state.expect("reached").expect("recovers"))
}

/// The scenario errors (`invariant == "scenario"`) of a run, as messages.
fn op_errors(r: &RunResult) -> Vec<&str> {
    r.violations
        .iter()
        .filter(|v| v.invariant == "scenario")
        .map(|v| v.message.as_str())
        .collect()
}

const TWO_FILES: &[&str] = &[
    "mkdir /d",
    "create /d/a",
    "write /d/a 4k",
    "create /d/b",
    "write /d/b 8k",
    "sync",
];

#[test]
fn a_rename_over_a_file_replaces_it_and_a_commit_makes_that_durable() {
    let sc = scenario(TWO_FILES, &["rename /d/a /d/b", "commit"]);
    let (r, got) = at_end(&sc);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(!got.paths.contains_key("/d/a"), "{:?}", got.paths);
    let b = &got.paths["/d/b"];
    assert_eq!((b.ino, b.nlink, b.size), (258, 1, Some(4096)));
}

#[test]
fn the_replaced_file_loses_its_data_unless_it_keeps_another_name() {
    // The last name: the final iput frees the 8 KiB extent (pinned, its delayed refs run
    // by the commit); with a hard link the target keeps its data and the other name.
    let gone = scenario(TWO_FILES, &["rename /d/a /d/b", "commit"]);
    let r_gone = scripted(&gone, &p515());
    assert!(r_gone.violations.is_empty(), "{:?}", r_gone.violations);
    let mut linked = TWO_FILES.to_vec();
    linked.insert(5, "link /d/b /d/c");
    let kept = scenario(&linked, &["rename /d/a /d/b", "commit"]);
    let (r, got) = at_end(&kept);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let refs = |r: &RunResult| r.metrics.get("delayed_refs_run").unwrap();
    assert_eq!(refs(&r_gone), refs(&r) + 2, "the freed extent's refs");
    let c = &got.paths["/d/c"];
    assert_eq!((c.ino, c.nlink, c.size), (259, 1, Some(8192)));
    assert_eq!(got.paths["/d/b"].ino, 258);
}

#[test]
fn rename_over_checks_what_vfs_rename_checks() {
    let setup = &[
        "mkdir /d",
        "mkdir /d/e",
        "mkdir /d/full",
        "create /d/full/x",
        "create /d/f",
        "link /d/f /d/g",
    ];
    for (op, says) in [
        ("rename /d/e /d/f", "not a directory: /d/f"),
        ("rename /d/f /d/e", "is a directory: /d/e"),
        ("rename /d/e /d/full", "directory not empty: /d/full"),
        ("link /d/f /d/g", "file exists: /d/g"),
    ] {
        let r = scripted(&scenario(setup, &[op]), &p515());
        let e = op_errors(&r);
        assert!(e.len() == 1 && e[0].contains(says), "{op}: {e:?}");
    }
    // Two names of one inode: vfs_rename returns 0 and nothing changes.
    let sc = scenario(setup, &["rename /d/f /d/g", "commit"]);
    let (r, got) = at_end(&sc);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(got.paths["/d/f"].nlink, 2);
    assert_eq!(got.paths["/d/g"].ino, got.paths["/d/f"].ino);
}

#[test]
fn a_directory_replaces_an_empty_directory() {
    let sc = scenario(
        &[
            "mkdir /t",
            "mkdir /t/A",
            "mkdir /t/B",
            "create /t/A/x",
            "sync",
        ],
        &["rename /t/A /t/B", "commit"],
    );
    let (r, got) = at_end(&sc);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(got.paths["/t/B"].ino, 258);
    assert!(got.paths.contains_key("/t/B/x"));
    assert!(!got.paths.contains_key("/t/A"));
}

#[test]
fn a_descriptor_follows_its_inode_through_a_rename() {
    // With a path the fsync after the rename fails; through the descriptor it logs the
    // renamed file (inode_logs: the file and, as the rename set last_unlink_trans, /d).
    let by_path = scenario(TWO_FILES, &["rename /d/a /d/z", "fsync /d/a"]);
    let r = scripted(&by_path, &p515());
    assert!(op_errors(&r).iter().any(|e| e.contains("no such file")));
    let sc = scenario(
        TWO_FILES,
        &[
            "open /d/a as F",
            "rename /d/a /d/z",
            "write @F 4k",
            "fsync @F",
        ],
    );
    let r = scripted(&sc, &p515());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.metrics.get("inode_logs"), Some(2));
    assert_eq!(r.metrics.get("log_syncs"), Some(1));
}

#[test]
fn an_unlinked_open_file_is_written_and_fsynced_but_nothing_is_logged() {
    let ops = [
        "open /d/a as F",
        "unlink /d/a",
        "write @F 8k",
        "fsync @F",
        "stat @F",
        "close @F",
    ];
    let r = scripted(&scenario(TWO_FILES, &ops), &p515());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.metrics.get("inode_logs"), Some(0));
    assert_eq!(r.metrics.get("log_syncs"), Some(0));
    let has = |needle: &str| r.trace.iter().any(|l| l.contains(needle));
    assert!(has("i_nlink == 0, nothing logged"), "{:#?}", r.trace);
    assert!(has("close: final iput of an unlinked inode"));
    // A closed descriptor names nothing.
    let r = scripted(
        &scenario(TWO_FILES, &["open /d/a as F", "close @F", "fsync @F"]),
        &p515(),
    );
    assert!(op_errors(&r).iter().any(|e| e.contains("@F is not open")));
}

#[test]
fn the_final_iput_waits_for_close() {
    // Without a descriptor the unlink drops the data at once; with one, only the close
    // does: its transaction then frees the extent (delayed refs run by the commit).
    let refs = |ops: &[&str]| {
        let r = scripted(&scenario(TWO_FILES, ops), &p515());
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        r.trace
            .iter()
            .any(|l| l.contains("close: final iput of an unlinked inode"))
    };
    assert!(!refs(&["unlink /d/b", "commit"]));
    assert!(!refs(&["open /d/b as F", "unlink /d/b", "commit"]));
    assert!(refs(&[
        "open /d/b as F",
        "unlink /d/b",
        "close @F",
        "commit"
    ]));
    // Two descriptors: the first close is not the last reference.
    let ops = [
        "open /d/b as F",
        "open /d/b as G",
        "unlink /d/b",
        "close @F",
        "fsync @G",
    ];
    let r = scripted(&scenario(TWO_FILES, &ops), &p515());
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(!r.trace.iter().any(|l| l.contains("close: final iput")));
}

#[test]
fn an_open_file_stays_in_the_inode_cache() {
    let r = scripted(
        &scenario(TWO_FILES, &["open /d/a as F", "evict /d/a"]),
        &p515(),
    );
    assert!(r.trace.iter().any(|l| l.contains("or an open descriptor")));
    let r = scripted(
        &scenario(TWO_FILES, &["open /d/a as F", "close @F", "evict /d/a"]),
        &p515(),
    );
    assert!(r.trace.iter().any(|l| l.contains("evict: inode evicted")));
}

#[test]
fn open_close_and_descriptors_parse_round_trip_and_refuse_bad_input() {
    for line in [
        "open /f as F",
        "close @F",
        "fsync @F",
        "write @F 4k",
        "write @F 0 4k",
        "truncate @F 0",
        "setxattr @F user.a",
        "fdatasync @F 0 4k",
        "rename /f /g",
    ] {
        let op = parse_op(line).unwrap();
        assert_eq!(op.to_string(), line);
    }
    assert_eq!(
        parse_op("open /f as @F").unwrap().to_string(),
        "open /f as F"
    );
    for (bad, says) in [
        ("open /f F", "open PATH as NAME"),
        ("open /f to F", "open PATH as NAME"),
        ("open @G as F", "takes a path"),
        ("open /f as F.x", "descriptor name"),
        ("close F", "close @NAME"),
        ("close", "close @NAME"),
        ("unlink @F", "takes a path"),
        ("rename @F /g", "takes a path"),
        ("create @F", "takes a path"),
        ("fsync @", "descriptor name"),
    ] {
        let e = parse_op(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
        assert!(!e.contains('\n'), "{bad}: {e}");
    }
    // A descriptor no operation opens is a file:line error.
    let t = "name = \"fd\"\nrace = \"R1\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [\"create /f\"]\n[[task]]\nname = \"A\"\nops = [\"fsync @G\"]\n";
    let e = Scenario::parse(t, "fd.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("fd.toml:8") && e.contains("unknown descriptor '@G'"),
        "{e}"
    );
}

#[test]
fn descriptors_survive_the_scenario_file_round_trip() {
    let sc = scenario(
        TWO_FILES,
        &["open /d/a as F", "rename /d/b /d/a", "fsync @F", "close @F"],
    );
    let again = Scenario::parse(&sc.to_toml(&[]), "again.toml").unwrap();
    assert_eq!(again.tasks, sc.tasks);
    assert_eq!(again.setup, sc.setup);
}

#[test]
fn ext_filesystems_refuse_open() {
    let t = "name = \"e\"\nrace = \"OPS\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"ext4\"\n\
             setup = [\"mkdir /d\", \"create /d/f\"]\n[[task]]\nname = \"A\"\nops = [\"open /d/f as F\"]\n\
             [policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.10\"\n";
    let sc = Scenario::parse(t, "e.toml").unwrap();
    let r = scripted(&sc, &Policy::preset("linux-5.10").unwrap());
    assert!(
        op_errors(&r)
            .iter()
            .any(|e| e.contains("'open' is not modelled on ext3/ext4")),
        "{:?}",
        r.violations
    );
}

/// The examples and generic-510: their stated recovered state on every preset, and no
/// S1–S3 in scripted runs or a 300-seed sweep.
#[test]
fn the_examples_hold_on_every_preset_scripted_and_swept() {
    for path in [
        "examples/ops-fsync-fd-renamed",
        "examples/ops-fsync-unlinked-open",
        "xfstests/generic-510",
    ] {
        common::crash_state_holds_on_every_preset(path, 0..300);
    }
}
