//! `power-fail` (issue 30): a power failure in the middle of a scenario and the mount after
//! it. Operations after it act on the recovered files; the fsyncs that returned before it
//! are judged at it; it is a barrier for every task; runs stay deterministic; ext3/ext4
//! refuse it; a descriptor open across it is refused when the file is read; symlinks,
//! fifos, device nodes and modes keep what recovery gives them.

use crate::common;

use common::{invariant_hits, scripted, sweep};
use models::kernel::{preset_names, Policy};
use models::scenario::{crash_state, Interleaving, Scenario};
use models::vfs::recovered::CrashPoint;

fn scenario(body: &str) -> Scenario {
    let text = format!("name = \"t\"\nrace = \"PF\"\ntitle = \"t\"\nsummary = \"s\"\n{body}\n[policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.15\"\n");
    Scenario::parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// The recovered state of a scripted run under linux-5.15 at `at`.
fn state_at(sc: &Scenario, at: &str) -> models::vfs::Recovered {
    let dev = models::block::DiskConfig::resolve(&sc.device).unwrap();
    let p = Policy::preset("linux-5.15").unwrap();
    let at = sc.crash_point(at).unwrap();
    let (r, s) = crash_state(sc, &p, &dev, 1, &at);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    s.expect("reached").expect("recovers")
}

const FSYNCED_AND_LOST: &str = r#"
setup = ["create /a", "write /a 4k", "fsync /a", "create /b", "write /b 4k"]
[[task]]
name = "A"
ops = ["power-fail", "write /a 4k", "fsync /a"]
"#;

/// The fsynced file comes back and the append after the mount lands after its 4 KiB; the
/// file that was never made durable is gone for the operations after the mount too.
#[test]
fn operations_after_the_mount_act_on_the_recovered_files() {
    let sc = scenario(FSYNCED_AND_LOST);
    let got = state_at(&sc, "end");
    let a = &got.paths["/a"];
    assert_eq!(a.size, Some(8192));
    assert_eq!(a.nlink, 1);
    assert!(!got.paths.contains_key("/b"), "{}", got.render());
    let at_mount = state_at(&sc, "A power-fail:done");
    assert_eq!(at_mount.paths["/a"].size, Some(4096));
    // /b is gone after the mount: an operation on it fails there, naming its line.
    let sc = scenario(&FSYNCED_AND_LOST.replace("\"fsync /a\"]\n", "\"stat /b\"]\n"));
    let r = scripted(&sc, &Policy::preset("linux-5.15").unwrap());
    let errors: Vec<_> = r
        .violations
        .iter()
        .filter(|v| v.invariant == "scenario")
        .collect();
    assert_eq!(errors.len(), 1, "{:?}", r.violations);
    assert!(
        errors[0].message.starts_with("t.toml:9: task A: stat:"),
        "{:?}",
        errors[0]
    );
}

/// A promise broken before the power failure is reported (S2), and the mount refuses the
/// corrupt image in one line naming the `power-fail`'s line: the mutant that drops the log
/// sync's preflush leaves the log blocks the durable superblock points at volatile. Without
/// the mutant, the same run is clean and the fsynced file is there after the mount.
#[test]
fn a_broken_promise_is_reported_and_the_mount_refuses_a_corrupt_image() {
    let sc = scenario(
        r#"
setup = ["create /a"]
[[task]]
name = "A"
ops = ["write /a 4k", "fsync /a", "power-fail", "create /c"]
"#,
    );
    let clean = scripted(&sc, &Policy::preset("linux-5.15").unwrap());
    assert!(clean.violations.is_empty(), "{:?}", clean.violations);
    assert_eq!(state_at(&sc, "end").paths["/a"].size, Some(4096));
    let p = Policy::preset("linux-5.15")
        .unwrap()
        .with_mutant(models::btrfs::Mutant::SyncLogNoPreflush);
    let r = scripted(&sc, &p);
    let kinds: Vec<&str> = r.violations.iter().map(|v| v.invariant.as_str()).collect();
    assert_eq!(kinds, ["S2", "scenario"], "{:?}", r.violations);
    let m = &r.violations[1].message;
    assert!(
        m.starts_with("t.toml:9: task A: power-fail: the mount after the power failure fails: "),
        "{m}"
    );
    assert_eq!(m.lines().count(), 1);
}

/// Every task waits at its `power-fail` until the others finished or reached theirs: B's
/// operations after it always see the mounted filesystem (A's /x, never made durable, is
/// gone, so B's create of /x succeeds; the fsynced /y is there), whatever the
/// interleaving.
#[test]
fn power_fail_is_a_barrier_for_every_task() {
    let sc = scenario(
        r#"
setup = ["create /y", "write /y 4k", "fsync /y"]
[[task]]
name = "A"
ops = ["create /x", "write /x 4k", "power-fail"]
[[task]]
name = "B"
ops = ["power-fail", "create /x", "write /y 4k", "fsync /y", "sync"]
"#,
    );
    for name in preset_names() {
        let p = Policy::preset(name).unwrap();
        let r = scripted(&sc, &p);
        assert!(r.violations.is_empty(), "{name}: {:?}", r.violations);
        assert_eq!(invariant_hits(&sweep(&sc, &p, 0..200)), [], "{name}");
    }
    let got = state_at(&sc, "end");
    assert_eq!(got.paths["/y"].size, Some(8192));
    assert!(got.paths.contains_key("/x"));
}

/// Same seed, same run: an explored run through two power failures twice gives one trace
/// hash, and the scripted run of generic-321 too.
#[test]
fn runs_with_power_failures_are_deterministic() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/xfstests/generic-321.toml"
    );
    let sc = Scenario::load(path).unwrap();
    let dev = models::block::DiskConfig::resolve(&sc.device).unwrap();
    let p = Policy::preset("linux-5.15").unwrap();
    for how in [Interleaving::Script, Interleaving::Random] {
        let a = models::scenario::run(&sc, &p, &dev, 7, &how);
        let b = models::scenario::run(&sc, &p, &dev, 7, &how);
        assert_ne!(a.trace_hash, 0);
        assert_eq!(a.trace_hash, b.trace_hash, "{how:?}");
        assert_eq!(a.metrics, b.metrics);
    }
}

/// The mount after the failure starts a new generation past every transaction id used,
/// with every inode read back: a background committer (commit_interval) keeps running
/// across it, and the run stays clean.
#[test]
fn a_commit_daemon_runs_on_across_the_mount() {
    let sc = scenario(
        r#"
commit_interval = "1s"
setup = ["create /a", "write /a 4k"]
[[task]]
name = "A"
ops = ["sleep 1500ms", "fsync /a", "write /a 4k", "power-fail", "sleep 2s", "write /a 4k", "fsync /a"]
"#,
    );
    for name in preset_names() {
        let p = Policy::preset(name).unwrap();
        assert!(scripted(&sc, &p).violations.is_empty(), "{name}");
        assert_eq!(invariant_hits(&sweep(&sc, &p, 0..100)), [], "{name}");
    }
    assert_eq!(state_at(&sc, "end").paths["/a"].size, Some(8192));
    assert_eq!(
        sc.crash_point("A power-fail:done").unwrap(),
        CrashPoint::Step {
            task: "A".into(),
            point: "power-fail:done".into(),
            nth: 1
        }
    );
}

/// ext3/ext4 refuse it with the btrfs-only operations' error, naming the line.
#[test]
fn ext4_refuses_power_fail() {
    for fs in ["ext4", "ext3"] {
        let text = format!(
            "name = \"t\"\nrace = \"J1a\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"{fs}\"\n[[task]]\nname = \"A\"\nops = [\"create /a\", \"power-fail\"]\n[policies]\nbefore = \"linux-2.6.36\"\nafter = \"linux-2.6.37\"\n"
        );
        let sc = Scenario::parse(&text, "t.toml").unwrap();
        let r = scripted(&sc, &sc.post_policy());
        let msgs: Vec<&str> = r.violations.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            msgs,
            ["t.toml:8: task A: power-fail: 'power-fail' is not modelled on ext3/ext4"],
            "{fs}"
        );
    }
}

const SPECIAL_TWICE: &str = r#"
setup = ["mkdir /d", "create /d/a", "sync"]
[[task]]
name = "A"
ops = [
  "symlink /x /d/l",
  "mkfifo /d/f",
  "mknod /d/n b",
  "chmod /d/f 640",
  "chmod /d/a 640",
  "fsync /d",
  "fsync /d/a",
  "power-fail",
  "rename /d/l /d/l2",
  "chmod /d/a 600",
  "fsync /d/a",
  "create /d/g",
  "fsync /d",
  "power-fail",
]
"#;

/// Kinds, a symlink's target and modes survive a power failure and then a second one
/// with operations on them after the first mount (btrfs_read_locked_inode reads i_mode
/// from the recovered item): the symlink renamed after the mount is still a symlink with
/// its target, the fifo keeps its mode, and a chmod after the mount is logged by the
/// fsync after it and recovered.
#[test]
fn special_inodes_keep_their_kind_target_and_mode_across_two_power_failures() {
    use models::vfs::recovered::InodeKind;
    let sc = scenario(SPECIAL_TWICE);
    for name in preset_names() {
        let r = scripted(&sc, &Policy::preset(name).unwrap());
        assert!(r.violations.is_empty(), "{name}: {:?}", r.violations);
    }
    for at in ["A power-fail:done", "A power-fail:done#2"] {
        let got = state_at(&sc, at);
        let l = if at.ends_with("#2") { "/d/l2" } else { "/d/l" };
        assert_eq!(
            got.paths[l].kind,
            InodeKind::Symlink,
            "{at}: {}",
            got.render()
        );
        assert_eq!(got.paths[l].target.as_deref(), Some("/x"), "{at}");
        assert_eq!(got.paths[l].size, Some(2), "{at}");
        assert_eq!(got.paths["/d/f"].kind, InodeKind::Fifo, "{at}");
        assert_eq!(got.paths["/d/f"].mode, Some(0o640), "{at}");
        assert_eq!(got.paths["/d/n"].kind, InodeKind::BlockDev, "{at}");
        assert_eq!(got.paths["/d/n"].mode, None, "{at}");
        let a = if at.ends_with("#2") { 0o600 } else { 0o640 };
        assert_eq!(got.paths["/d/a"].kind, InodeKind::File, "{at}");
        assert_eq!(got.paths["/d/a"].mode, Some(a), "{at}");
    }
    let got = state_at(&sc, "A power-fail:done#2");
    assert!(!got.paths.contains_key("/d/l"), "{}", got.render());
    assert!(got.paths.contains_key("/d/g"));
}

/// A symlink whose inline item the log lost comes back from the mount as the crash check
/// recovered it: an empty symlink (S2 reports it at the failure), kept so by the next
/// mount, not a regular file. `symlink-logged-exists` makes the directory's fsync log it
/// without its target.
#[test]
fn a_symlink_the_log_emptied_stays_an_empty_symlink_after_the_mount() {
    use models::vfs::recovered::InodeKind;
    let sc = scenario(
        r#"
setup = ["mkdir /d", "sync"]
[[task]]
name = "A"
ops = ["symlink /foo /d/l", "fsync /d", "power-fail", "create /d/g", "fsync /d/g", "power-fail"]
"#,
    );
    let p = Policy::preset("linux-5.15")
        .unwrap()
        .with_mutant(models::btrfs::Mutant::SymlinkLoggedExists);
    let r = scripted(&sc, &p);
    let kinds: Vec<&str> = r.violations.iter().map(|v| v.invariant.as_str()).collect();
    assert_eq!(kinds, ["S2"], "{:?}", r.violations);
    assert!(r.violations[0].message.contains("comes back empty"));
    let dev = models::block::DiskConfig::resolve(&sc.device).unwrap();
    for at in ["A power-fail:done", "A power-fail:done#2", "end"] {
        let point = sc.crash_point(at).unwrap();
        let (_, s) = crash_state(&sc, &p, &dev, 1, &point);
        let got = s.expect("reached").expect("recovers");
        let l = &got.paths["/d/l"];
        assert_eq!(l.kind, InodeKind::Symlink, "{at}: {}", got.render());
        assert_eq!(l.target.as_deref(), Some(""), "{at}");
        assert_eq!(l.size, Some(0), "{at}");
    }
    // Without the mutant the target is logged and survives both mounts.
    assert_eq!(
        state_at(&sc, "A power-fail:done#2").paths["/d/l"]
            .target
            .as_deref(),
        Some("/foo")
    );
}

/// After the mount the special inodes are refused as before it: a symlink's, a fifo's
/// and a device node's fsync or open is refused at the op's line (open(2) follows a
/// symlink; the others' descriptors are the pipe's or the device's).
#[test]
fn operations_after_the_mount_still_refuse_special_inodes() {
    for (op, what) in [
        ("fsync /d/l", "a symlink"),
        ("open /d/l as F", "a symlink"),
        ("fsync /d/f", "a fifo"),
        ("write /d/n 4k", "a device node"),
    ] {
        let close = if op.starts_with("open") {
            ", \"close @F\""
        } else {
            ""
        };
        let sc = scenario(&format!(
            "setup = [\"mkdir /d\", \"symlink /x /d/l\", \"mkfifo /d/f\", \"mknod /d/n\", \"sync\"]\n[[task]]\nname = \"A\"\nops = [\"power-fail\", \"{op}\"{close}]"
        ));
        let r = scripted(&sc, &Policy::preset("linux-5.15").unwrap());
        let msgs: Vec<&str> = r.violations.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(msgs.len(), 1, "{op}: {msgs:?}");
        assert!(
            msgs[0].starts_with("t.toml:8: task A: ") && msgs[0].contains(what),
            "{op}: {msgs:?}"
        );
    }
}

/// A descriptor open across a `power-fail` is refused when the file is read (the mount
/// closes every descriptor): one line naming the power-fail's line.
#[test]
fn a_descriptor_open_across_a_power_failure_is_refused() {
    let text = "name = \"t\"\nrace = \"PF\"\ntitle = \"t\"\nsummary = \"s\"\n[[task]]\nname = \"A\"\nops = [\n  \"create /a\",\n  \"open /a as F\",\n  \"power-fail\",\n  \"fsync @F\",\n]\n[policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.15\"\n";
    let e = Scenario::parse(text, "t.toml").unwrap_err().to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("t.toml:10: power-fail while @F is open"),
        "{e}"
    );
    let closed = text.replace(
        "  \"power-fail\",\n",
        "  \"close @F\",\n  \"power-fail\",\n",
    );
    let closed = closed.replace("\"fsync @F\"", "\"fsync /a\"");
    Scenario::parse(&closed, "t.toml").unwrap();
}

/// `[expect.crash-N]` tables are read back as written (`to_toml`) and `check` reads
/// each; an unknown point in one is refused at its line.
#[test]
fn per_failure_crash_tables_round_trip() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/xfstests/generic-321.toml"
    );
    let sc = Scenario::load(path).unwrap();
    assert_eq!(sc.expect_crash_more.len(), 2);
    let back = Scenario::parse(&sc.to_toml(&[]), "back.toml").unwrap();
    assert_eq!(back.expect_crash_more, sc.expect_crash_more);
    assert_eq!(back.expect_crash, sc.expect_crash);
    let names: Vec<String> = sc.crash_expectations().into_iter().map(|t| t.0).collect();
    assert_eq!(names, ["crash-1", "crash-2", "crash"]);
    let bad = std::fs::read_to_string(path)
        .unwrap()
        .replace("at = \"A power-fail:done#2\"", "at = \"A nowhere:done\"");
    let e = Scenario::parse(&bad, "g.toml").unwrap_err().to_string();
    assert!(e.contains("never reaches point 'nowhere:done'"), "{e}");
}
