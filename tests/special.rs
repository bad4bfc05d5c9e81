//! Symlinks, device nodes, fifos, O_TMPFILE files with linkat, and chmod (issue 30 item 3):
//! the spelling, what each operation does in the btrfs model (models/src/btrfs/special.rs),
//! what recovery keeps of them, S2's symlink rule, and the refusals.

use crate::common;

use common::{fsyncsim_in, one_task, scripted};
use models::block::DiskConfig;
use models::btrfs::Mutant;
use models::kernel::{preset_names, Policy};
use models::scenario::{crash_state, parse_op, Scenario};
use models::vfs::recovered::{InodeKind, RecoveredInode};
use models::vfs::Recovered;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The recovered state of `sc` at crash point `at` under `p`.
fn state_at(sc: &Scenario, p: &Policy, at: &str) -> Recovered {
    let at = sc.crash_point(at).unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let (r, state) = crash_state(sc, p, &dev, sc.seed, &at);
    assert!(r.unplayable().is_none(), "{}: {:?}", sc.name, r.violations);
    state.expect("reached").expect("recovers")
}

fn path<'a>(r: &'a Recovered, p: &str) -> &'a RecoveredInode {
    r.paths
        .get(p)
        .unwrap_or_else(|| panic!("{p} absent: {}", r.render()))
}

fn s2(r: &models::scenario::RunResult) -> bool {
    r.violations.iter().any(|v| v.invariant == "S2")
}

fn preset(name: &str) -> Policy {
    Policy::preset(name).unwrap()
}

#[test]
fn the_new_operations_round_trip_and_refuse_bad_input_in_one_line() {
    for line in [
        "symlink /foo1 /d/bar1",
        "symlink ../rel /d/s",
        "mknod /d/c c",
        "mknod /d/b b",
        "mkfifo /d/p",
        "tmpfile /d as T",
        "link @T /d/f",
        "chmod /d/f 0640",
        "chmod @T 4755",
    ] {
        let op = parse_op(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(op.to_string(), line);
    }
    // The defaults are written back explicitly.
    assert_eq!(parse_op("mknod /d/c").unwrap().to_string(), "mknod /d/c c");
    assert_eq!(
        parse_op("chmod /f 640").unwrap().to_string(),
        "chmod /f 0640"
    );
    for (bad, says) in [
        ("symlink /t", "symlink TARGET PATH"),
        ("symlink /t d/s", "absolute path"),
        (&format!("symlink /{} /s", "x".repeat(4095)), "at most 4095"),
        ("mknod /d/c x", "mknod PATH [c|b]"),
        ("mknod /d/c c 1", "mknod PATH [c|b]"),
        ("mkfifo", "mkfifo PATH"),
        ("tmpfile /d T", "tmpfile DIR as NAME"),
        ("tmpfile /d with T", "tmpfile DIR as NAME"),
        ("tmpfile @F as T", "absolute path"),
        ("link @T", "link @NAME PATH"),
        ("link @T d/f", "absolute path"),
        ("chmod /f 0648", "octal MODE"),
        ("chmod /f 17777", "at most 7777"),
        ("chmod /f +644", "octal MODE"),
        ("chmod /f", "chmod PATH MODE"),
    ] {
        let e = parse_op(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
        assert!(!e.contains('\n'), "{bad}: {e}");
    }
}

#[test]
fn a_directory_fsync_logs_a_new_symlink_with_its_target_and_the_mutant_loses_it() {
    let sc = one_task(
        "sym",
        "linux-5.15",
        &["mkdir /d", "sync"],
        &["symlink /target /d/s", "fsync /d"],
    );
    for name in preset_names() {
        let p = preset(name);
        assert!(!s2(&scripted(&sc, &p)), "{name}");
        let r = state_at(&sc, &p, "A fsync:done");
        let s = path(&r, "/d/s");
        assert_eq!(s.kind, InodeKind::Symlink, "{name}");
        assert_eq!(s.target.as_deref(), Some("/target"), "{name}");
        assert_eq!(s.size, Some(7), "{name}");
    }
    // log_new_dir_dentries without its BTRFS_FT_SYMLINK clause: the inode item comes back
    // without its inline extent, empty, and S2's symlink rule says so.
    let p = preset("linux-5.15").with_mutant(Mutant::SymlinkLoggedExists);
    let run = scripted(&sc, &p);
    assert!(
        run.violations
            .iter()
            .any(|v| v.invariant == "S2" && v.message.contains("comes back empty")),
        "{:?}",
        run.violations
    );
    let r = state_at(&sc, &p, "A fsync:done");
    assert_eq!(path(&r, "/d/s").target.as_deref(), Some(""));
    assert_eq!(path(&r, "/d/s").size, Some(0));
}

#[test]
fn a_committed_symlink_keeps_its_target_whatever_the_log_holds() {
    // Committed with its inline extent (btrfs_symlink's one transaction): a later
    // LOG_INODE_EXISTS copy of its item (generation 0) does not replace it at replay.
    let sc = one_task(
        "sym-committed",
        "linux-5.15",
        &["mkdir /d", "symlink /target /d/s", "sync"],
        &["create /d/x", "link /d/s /d/s2", "fsync /d"],
    );
    let p = preset("linux-5.15").with_mutant(Mutant::SymlinkLoggedExists);
    assert!(!s2(&scripted(&sc, &p)));
    let r = state_at(&sc, &p, "A fsync:done");
    for name in ["/d/s", "/d/s2"] {
        assert_eq!(path(&r, name).target.as_deref(), Some("/target"), "{name}");
        assert_eq!(path(&r, name).nlink, 2, "{name}");
    }
}

#[test]
fn a_renamed_symlink_comes_back_empty_from_5_12_to_5_16() {
    // scenarios/examples/ops-symlink-rename-empty.toml: d0e64a981fd8's reproducer. The
    // rename logs the symlink LOG_INODE_EXISTS; from 5.12 the directory's fsync skips it
    // as already logged (skip-logged-new-entries), so its content never reaches the log.
    let sc = Scenario::load(&format!(
        "{ROOT}/scenarios/examples/ops-symlink-rename-empty.toml"
    ))
    .unwrap();
    for name in preset_names() {
        let p = preset(name);
        let skips = p
            .btrfs
            .log(models::btrfs::policy::LogPatch::SkipLoggedNewEntries);
        assert_eq!(s2(&scripted(&sc, &p)), skips, "{name}");
        let r = state_at(&sc, &p, "end");
        let want = if skips { "" } else { "/testdir/foo" };
        assert_eq!(
            path(&r, "/testdir/baz").target.as_deref(),
            Some(want),
            "{name}"
        );
    }
    let without = models::kernel::parse_policy("linux-5.16:-skip-logged-new-entries").unwrap();
    assert!(!s2(&scripted(&sc, &without)));
}

#[test]
fn device_nodes_and_fifos_come_back_with_their_kind_and_refuse_data_operations() {
    let sc = Scenario::load(&format!(
        "{ROOT}/scenarios/examples/ops-chmod-special-fsync-dir.toml"
    ))
    .unwrap();
    let r = state_at(&sc, &preset("linux-5.10"), "A fsync:done#2");
    let kinds: Vec<(&str, InodeKind)> = ["/d/b", "/d/c", "/d/p"]
        .into_iter()
        .map(|p| (p, path(&r, p).kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("/d/b", InodeKind::BlockDev),
            ("/d/c", InodeKind::CharDev),
            ("/d/p", InodeKind::Fifo)
        ]
    );
    // Before the directory's fsync nothing names them.
    let r = state_at(&sc, &preset("linux-5.10"), "A mkfifo:done");
    assert!(!r.paths.contains_key("/d/p") && !r.paths.contains_key("/d/c"));
    for (op, says) in [
        ("fsync /d/p", "'fsync' of a fifo"),
        ("write /d/c 4k", "'write' of a device node"),
        ("fsync /d/s", "'fsync' of a symlink"),
        ("open /d/s as F", "'open' of a symlink"),
        ("setxattr /d/s user.a", "'setxattr' of a symlink"),
    ] {
        let sc = one_task(
            "refuse",
            "linux-5.15",
            &["mkdir /d", "mkfifo /d/p", "mknod /d/c", "symlink x /d/s"],
            &[op],
        );
        let r = scripted(&sc, &preset("linux-5.15"));
        assert!(
            r.violations.iter().any(|v| v.message.contains(says)),
            "{op}: {:?}",
            r.violations
        );
    }
}

#[test]
fn a_tmpfile_has_no_name_until_linkat_and_its_fsync_logs_nothing() {
    let sc = Scenario::load(&format!(
        "{ROOT}/scenarios/examples/ops-tmpfile-link-fsync.toml"
    ))
    .unwrap();
    let p = preset("linux-5.15");
    // The tmpfile's fsync: i_nlink == 0, nothing logged, /d stays empty.
    let r = state_at(&sc, &p, "A fsync:done");
    assert_eq!(r.paths.keys().collect::<Vec<_>>(), ["/", "/d"]);
    // Linked and fsynced: its name and data come back.
    let r = state_at(&sc, &p, "A fsync:done#2");
    assert_eq!(path(&r, "/d/foo").size, Some(4096));
    assert_eq!(path(&r, "/d/foo").nlink, 1);
    // linkat of an open file whose last name was unlinked: ENOENT (not I_LINKABLE); of a
    // tmpfile a second time: a second name.
    let refused = one_task(
        "unlinked",
        "linux-5.15",
        &["create /f"],
        &["open /f as F", "unlink /f", "link @F /g"],
    );
    let r = scripted(&refused, &p);
    assert!(
        r.violations
            .iter()
            .any(|v| v.message.contains("I_LINKABLE")),
        "{:?}",
        r.violations
    );
    let twice = one_task(
        "twice",
        "linux-5.15",
        &[],
        &["tmpfile / as T", "link @T /a", "link @T /b", "sync"],
    );
    let r = state_at(&twice, &p, "end");
    assert_eq!(
        (path(&r, "/a").nlink, path(&r, "/a").ino),
        (2, path(&r, "/b").ino)
    );
}

#[test]
fn the_tmpfile_orphan_item_goes_with_its_first_link() {
    use models::btrfs::ctree_btree::{key_type, tree_id, Key};
    // btrfs_tmpfile's btrfs_orphan_add and btrfs_link's btrfs_orphan_del
    // (inode.c@v5.10..v5.16): count the subvolume tree's orphan items after each.
    let orphans = |ops: &[&str]| {
        let mut sim = sim::Sim::new();
        let h = sim.handle();
        let mut streams = sim::RngStreams::new(1);
        let cfg = DiskConfig::resolve("nvme").unwrap();
        let dev = models::block::add_disk(&mut sim, cfg, &mut streams, false);
        let policy = preset("linux-5.15");
        let fs = models::btrfs::Btrfs::new(&h, dev, policy.btrfs, Default::default());
        let ops: Vec<_> = ops.iter().map(|s| parse_op(s).unwrap()).collect();
        let task_fs = fs.clone();
        sim.spawn("A", async move {
            for op in &ops {
                task_fs.run_op(op).await.unwrap();
            }
        });
        sim.run().unwrap();
        let mut st = fs.state();
        let lo = Key::new(u64::MAX - 4, key_type::ORPHAN_ITEM, 0);
        let hi = Key::new(u64::MAX - 4, key_type::ORPHAN_ITEM, u64::MAX);
        st.trees.get_mut(tree_id::FS).items_in(lo, hi)
    };
    assert_eq!(orphans(&["tmpfile / as T"]), 1);
    assert_eq!(orphans(&["tmpfile / as T", "link @T /f"]), 0);
    assert_eq!(orphans(&["tmpfile / as T", "close @T"]), 0);
}

#[test]
fn a_chmod_comes_back_when_logged_or_committed_and_not_from_a_generation_zero_item() {
    let sc = one_task(
        "chmod",
        "linux-5.15",
        &["mkdir /d", "create /d/f", "sync"],
        &[
            "chmod /d/f 0600",
            "fsync /d/f",
            "chmod /d/f 0640",
            "link /d/f /d/g",
            "create /d/h",
            "fsync /d/h",
            "commit",
        ],
    );
    let p = preset("linux-5.15");
    // Neither logged nor committed: the creation mode.
    assert_eq!(path(&state_at(&sc, &p, "A chmod:done"), "/d/f").mode, None);
    // Logged LOG_INODE_ALL by the fsync: 0600.
    assert_eq!(
        path(&state_at(&sc, &p, "A fsync:done"), "/d/f").mode,
        Some(0o600)
    );
    // The link relogs f LOG_INODE_EXISTS with generation 0 (its item changed in this
    // transaction); the log keeps that copy, which replay does not put over the committed
    // item (overwrite_item's no_copy): the committed tree's creation mode.
    let r = state_at(&sc, &p, "A fsync:done#2");
    assert!(r.paths.contains_key("/d/g"), "{}", r.render());
    assert_eq!(path(&r, "/d/f").mode, None);
    // Committed: 0640.
    assert_eq!(path(&state_at(&sc, &p, "end"), "/d/g").mode, Some(0o640));
}

#[test]
fn ext_filesystems_take_the_new_inodes_as_creates_and_refuse_tmpfile_and_linkat() {
    let text = |op: &str| {
        format!(
            "name = \"e\"\nrace = \"OPS\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"ext4\"\n\
             setup = [\"mkdir /d\", \"create /d/f\"]\n[[task]]\nname = \"A\"\nops = [\"{op}\"]\n\
             [policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.10\"\n"
        )
    };
    for op in [
        "symlink x /d/s",
        "mknod /d/c b",
        "mkfifo /d/p",
        "chmod /d/f 0600",
    ] {
        let sc = Scenario::parse(&text(op), "e.toml").unwrap();
        let r = scripted(&sc, &preset("linux-5.10"));
        assert!(r.violations.is_empty(), "{op}: {:?}", r.violations);
    }
    // tmpfile is refused (so is open: no descriptor reaches `link @NAME` there).
    let sc = Scenario::parse(&text("tmpfile /d as T"), "e.toml").unwrap();
    let r = scripted(&sc, &preset("linux-5.10"));
    assert!(
        r.violations.iter().any(|v| v.invariant == "scenario"
            && v.message.starts_with("e.toml:9: task A")
            && v.message.contains("'tmpfile' is not modelled on ext3/ext4")),
        "{:?}",
        r.violations
    );
}

#[test]
fn the_crash_command_prints_kinds_targets_and_modes() {
    let out = fsyncsim_in(
        Path::new(ROOT),
        &[
            "crash",
            "scenarios/examples/ops-chmod-special-fsync-dir.toml",
        ],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    for line in [
        "/d/s  symlink ino 262 nlink 1 size 1 -> \"f\"",
        "/d/f  file ino 258 nlink 1 size 0 mode 640",
        "/d/p  fifo ino 261 nlink 1 size 0",
        "/d/b  block ino 260",
        "/d/c  char ino 259",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    let out = fsyncsim_in(
        Path::new(ROOT),
        &[
            "crash",
            "scenarios/examples/ops-chmod-special-fsync-dir.toml",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths = &v["recovered"]["paths"];
    let s = &paths["/d/s"];
    assert_eq!(
        (s["kind"].as_str(), s["target"].as_str()),
        (Some("symlink"), Some("f"))
    );
    assert_eq!(paths["/d/f"]["mode"].as_u64(), Some(0o640));
    // A regular file has no target key (JSON of older files unchanged).
    assert!(paths["/d/f"].get("target").is_none());
}

#[test]
fn a_stated_kind_target_or_mode_that_does_not_hold_is_one_line_each() {
    let sc = Scenario::load(&format!(
        "{ROOT}/scenarios/examples/ops-chmod-special-fsync-dir.toml"
    ))
    .unwrap();
    let mut e = sc.expect_crash.clone().unwrap();
    e.kind.insert("/d/p".into(), InodeKind::CharDev);
    e.target.insert("/d/s".into(), "g".into());
    e.mode.insert("/d/c".into(), 0o600);
    let got = state_at(&sc, &preset("linux-5.15"), "A fsync:done#2");
    let diffs = e.compare(&got);
    assert_eq!(
        diffs,
        [
            "/d/p: expected kind char, got fifo",
            "/d/s: expected target \"g\", got \"f\"",
            "/d/c: expected mode 0600, got the creation mode (no chmod recovered)",
        ]
    );
    // The table survives the scenario file's round trip.
    let again = Scenario::parse(&sc.to_toml(&[]), "again.toml").unwrap();
    assert_eq!(again.expect_crash, sc.expect_crash);
}
