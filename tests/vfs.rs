//! The filesystem boundary: scenario and workload files select a filesystem and mount
//! options; bad values are rejected at their file:line; options survive `to_toml`.

use models::mount::{FsKind, MountOptions};
use models::scenario::Scenario;
use models::workload::spec::Spec;

const BASE: &str = r#"name = "t"
race = "R7"
title = "t"
summary = "t"
setup = ["create /f"]
[[task]]
name = "A"
ops = ["fsync /f"]
"#;

fn with_line(line: &str) -> String {
    BASE.replacen("setup", &format!("{line}\nsetup"), 1)
}

#[test]
fn scenario_defaults_to_btrfs_with_kernel_default_options() {
    let sc = Scenario::parse(BASE, "t.toml").unwrap();
    assert_eq!(sc.mount.fs, FsKind::Btrfs);
    assert_eq!(sc.mount.options, MountOptions::default());
}

#[test]
fn scenario_mount_options_parse_and_round_trip() {
    let sc = Scenario::parse(
        &with_line("fs = \"btrfs\"\nmount = \"nossd,commit=5\""),
        "t.toml",
    )
    .unwrap();
    assert_eq!(sc.mount.options.ssd, Some(false));
    assert_eq!(sc.commit_interval, Some(5 * sim::S));
    let back = Scenario::parse(&sc.to_toml(&[]), "back.toml").unwrap();
    assert_eq!(back.mount, sc.mount);
    assert_eq!(back.commit_interval, sc.commit_interval);
}

#[test]
fn unknown_filesystem_and_bad_options_name_their_line() {
    let e = Scenario::parse(&with_line("fs = \"zfs\""), "t.toml").unwrap_err();
    assert_eq!(e.location, "t.toml:5", "{e}");
    assert!(e.message.contains("unknown filesystem 'zfs'"), "{e}");
    for bad in ["discard", "commit=0", "commit=-1", "commit=1e9", "ssd=1"] {
        let e = Scenario::parse(&with_line(&format!("mount = \"{bad}\"")), "t.toml").unwrap_err();
        assert_eq!(e.location, "t.toml:5", "{bad}: {e}");
        assert!(e.message.contains("mount option"), "{bad}: {e}");
    }
    let e = Scenario::parse(
        &with_line("mount = \"commit=5\"\ncommit_interval = \"5s\""),
        "t.toml",
    )
    .unwrap_err();
    assert!(e.message.contains("both given"), "{e}");
}

#[test]
fn workload_files_take_fs_and_mount() {
    let text = models::workload::spec::BUILTIN
        .iter()
        .find(|(f, _)| f.starts_with("dbench"))
        .unwrap()
        .1;
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("commit_interval"))
        .map(|l| format!("{l}\n"))
        .collect();
    let s = Spec::parse(&format!("mount = \"commit=7\"\n{text}"), "w.toml").unwrap();
    assert_eq!(s.commit_interval, 7 * sim::S);
    let e = Spec::parse(&format!("fs = \"ext2\"\n{text}"), "w.toml").unwrap_err();
    assert_eq!(e.location, "w.toml:1", "{e}");
}

#[test]
fn the_listed_vocabulary_matches_the_code() {
    use models::btrfs::counters::{describe, Counters};
    use models::scenario::parse_op;
    use models::vfs::op::OPS;
    for (example, usage, _) in OPS {
        let op = parse_op(example).unwrap_or_else(|e| panic!("{example}: {e}"));
        assert_eq!(op.kind(), usage.split_whitespace().next().unwrap());
        // What the parser's error names is what the list shows.
        let e = parse_op("frobnicate /x").unwrap_err();
        assert!(e.contains(op.kind()), "{e} lacks {}", op.kind());
    }
    for (name, _) in Counters::default().scalars() {
        assert!(describe(name).is_some(), "{name} has no description");
    }
    let points = reports::vocab::points();
    assert!(points.contains("fsync:joined") && points.contains("trans:commit_doing"));
    assert!(reports::vocab::policies().contains("linux-5.10"));
}
