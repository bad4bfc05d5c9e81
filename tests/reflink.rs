//! clone (FICLONERANGE, fs/btrfs/reflink.c): the destination shares the source's disk
//! bytes, the shared extent outlives the unlink of either file, an fsync of the destination
//! persists the clone (NEEDS_FULL_SYNC), the mutant without the flag is caught, and bad
//! input is one line naming the file's line with exit 2.

use crate::common;

use common::{assert_one_line_in, temp_dir};
use models::block::DiskConfig;
use models::btrfs::Mutant;
use models::kernel::{preset_names, Policy};
use models::scenario::parse_op;
use models::scenario::{crash_state, run, Interleaving};
use models::vfs::recovered::{CrashPoint, ExtentKind, RecoveredExtent};
use models::vfs::Recovered;

const SETUP: &[&str] = &[
    "create /f",
    "write /f 64k",
    "fsync /f",
    "create /g",
    "write /g 128k",
    // A new inode's first fsync is a full one anyway (btrfs_create sets NEEDS_FULL_SYNC).
    "fsync /g",
    "commit",
];

/// The recovered state at the end of `ops` under `p` (no violation on the way).
fn recovered_at_end(ops: &[&str], p: &Policy) -> Recovered {
    let sc = common::one_task("clone", "linux-5.15", SETUP, ops);
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let (r, state) = crash_state(&sc, p, &dev, sc.seed, &CrashPoint::End);
    assert!(r.violations.is_empty(), "{}: {:?}", p.name, r.violations);
    state.expect("reached").expect("recovers")
}

/// The data extents of `path` (write, offset, length), durable ones only.
fn durable_data(state: &Recovered, path: &str) -> Vec<(u64, u64, u64)> {
    let i = state
        .paths
        .get(path)
        .unwrap_or_else(|| panic!("{path} absent"));
    i.extents
        .iter()
        .filter(|e: &&RecoveredExtent| e.kind == ExtentKind::Data && e.durable)
        .map(|e| (e.write.unwrap(), e.offset, e.len))
        .collect()
}

#[test]
fn the_clone_shares_the_source_write_and_outlives_its_unlink() {
    let ops = ["clone /f 0 /g 64k 64k", "unlink /f", "fsync /g", "sync"];
    for name in preset_names() {
        let p = Policy::preset(name).unwrap();
        let state = recovered_at_end(&ops, &p);
        assert!(!state.paths.contains_key("/f"), "{name}");
        let g = durable_data(&state, "/g");
        // /g: its own 64 KiB, then the 64 KiB of /f's write (the first data write).
        assert_eq!(g.len(), 2, "{name}: {g:?}");
        assert_eq!((g[1].1, g[1].2), (65536, 65536), "{name}: {g:?}");
        assert_ne!(
            g[0].0, g[1].0,
            "{name}: the clone holds /f's write, not /g's"
        );
        assert_eq!(state.paths["/g"].size, Some(131072), "{name}");
    }
}

#[test]
fn the_destination_grows_and_the_source_is_unchanged() {
    let ops = ["clone /f 0 /g 128k 64k", "fsync /g"];
    let state = recovered_at_end(&ops, &Policy::preset("linux-5.10").unwrap());
    assert_eq!(state.paths["/g"].size, Some(196608));
    let (f, g) = (durable_data(&state, "/f"), durable_data(&state, "/g"));
    assert_eq!(f.len(), 1);
    assert_eq!(g.last().map(|e| (e.0, e.1)), Some((f[0].0, 131072)));
}

#[test]
fn a_clone_past_the_destination_eof_leaves_a_hole_before_it() {
    let ops = ["clone /f 0 /g 192k 64k", "fsync /g"];
    let state = recovered_at_end(&ops, &Policy::preset("linux-5.15").unwrap());
    let g = &state.paths["/g"];
    assert_eq!(g.size, Some(262144));
    let kinds: Vec<(u64, u64, ExtentKind)> = g.merged_extents();
    assert_eq!(
        kinds,
        vec![
            (0, 131072, ExtentKind::Data),
            (131072, 65536, ExtentKind::Hole),
            (196608, 65536, ExtentKind::Data),
        ]
    );
}

#[test]
fn without_the_full_sync_flag_the_fsync_loses_the_clone() {
    let sc = common::one_task(
        "clone",
        "linux-5.15",
        SETUP,
        &["clone /f 0 /g 0 64k", "fsync /g"],
    );
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    for m in [None, Some(Mutant::CloneNoFullSync)] {
        let mut p = Policy::preset("linux-5.15").unwrap();
        if let Some(m) = m {
            p = p.with_mutant(m);
        }
        let r = run(&sc, &p, &dev, 1, &Interleaving::Script);
        let s2 = r
            .violations
            .iter()
            .any(|v| v.invariant == "S2" && v.message.contains("is not in the tree"));
        assert_eq!(s2, m.is_some(), "{m:?}: {:?}", r.violations);
    }
}

#[test]
fn clone_round_trips_through_its_file_spelling() {
    for line in ["clone /f 0 /g 64k 4k", "clone /a/f 1m /a/f 0 1m"] {
        let op = parse_op(line).unwrap();
        assert_eq!(op.to_string(), line);
        assert_eq!(op.kind(), "clone");
    }
}

#[test]
fn bad_clones_are_one_line_naming_the_line_and_exit_2() {
    let dir = temp_dir("reflink-bad");
    let cases: &[(&str, &[&str])] = &[
        ("clone /nope 0 /g 0 4k", &[":11:", "unknown inode '/nope'"]),
        (
            "clone /f 0 /g 2k 4k",
            &[":11:", "aligned to the 4096-byte block"],
        ),
        ("clone /f 0 /f 4k 8k", &[":11:", "do not overlap"]),
        ("clone /f 0 /g 0 0", &[":11:", "LEN > 0"]),
        (
            "clone /f 0 /g 0",
            &[":11:", "expected 'clone SRC SRC_OFF DST DST_OFF LEN'"],
        ),
        (
            "clone /f 8k /g 0 4k",
            &[":11:", "source range inside /f's 8192 bytes", "EINVAL"],
        ),
        (
            "clone /f 0 /g 0 6k",
            &[":11:", "LEN aligned to the 4096-byte block unless"],
        ),
        ("clone /d 0 /g 0 4k", &[":11:", "is a directory: /d"]),
    ];
    for (op, needles) in cases {
        let text = format!(
            "name = \"bad\"\nrace = \"BAD\"\ntitle = \"t\"\nsummary = \"s\"\n[policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.15\"\n[[task]]\nname = \"A\"\nops = [\"create /f\", \"create /g\", \"mkdir /d\", \"write /f 8k\",\n  \"{op}\",\n  \"fsync /g\"]\n[expect.after]\n\"S2\" = 0\n"
        );
        std::fs::write(dir.join("bad.toml"), text).unwrap();
        assert_one_line_in(&dir, 2, &["check", "bad.toml"], needles);
    }
}
