//! Writes past EOF (issue 30 item 3): a buffered write at an offset past i_size leaves
//! btrfs_cont_expand's hole and its pages at the offset; a direct write past EOF makes a
//! new extent, moves i_size when its ordered extent finishes, and an fsync waits for that.
//! Each test fails when the mechanism it names is removed.

use crate::common;

use common::{invariant_hits, scripted, sweep};
use models::block::DiskConfig;
use models::btrfs::Mutant;
use models::kernel::Policy;
use models::scenario::{crash_state, run, Interleaving, RunResult, Scenario};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn load(rel: &str) -> Scenario {
    Scenario::load(&format!("{ROOT}/scenarios/{rel}.toml")).unwrap()
}

/// The differences between `[expect.crash]` and what recovery keeps under `p`.
fn crash_diffs(sc: &Scenario, p: &Policy) -> Vec<String> {
    let e = sc.expect_crash.as_ref().expect("[expect.crash]");
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let (_, state) = crash_state(sc, p, &dev, sc.seed, &e.at);
    e.compare(&state.expect("reached").expect("recovers"))
}

fn run_one(fs: &str, ops: &[&str]) -> RunResult {
    let list = ops
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let t = format!(
        "name = \"e\"\nrace = \"OPS\"\ntitle = \"t\"\nsummary = \"s\"\nfs = \"{fs}\"\n\
         setup = [\"mkdir /d\", \"create /d/f\"]\n[[task]]\nname = \"A\"\nops = [{list}]\n\
         [policies]\nbefore = \"linux-5.15\"\nafter = \"linux-5.15\"\n"
    );
    let sc = Scenario::parse(&t, "e.toml").unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    run(
        &sc,
        &Policy::preset("linux-5.15").unwrap(),
        &dev,
        1,
        &Interleaving::Script,
    )
}

#[test]
fn the_eof_write_examples_hold_on_every_preset_scripted_and_swept() {
    for name in ["ops-write-past-eof-hole", "ops-dio-write-past-eof-fsync"] {
        common::crash_state_holds_on_every_preset(&format!("examples/{name}"), 0..100);
    }
}

#[test]
fn a_write_past_eof_without_its_hole_brings_truncated_bytes_back() {
    // btrfs_cont_expand's hole (growing-truncate-no-hole removes it for a write too).
    let sc = load("examples/ops-write-past-eof-hole");
    let p = Policy::preset("linux-5.15")
        .unwrap()
        .with_mutant(Mutant::GrowingTruncateNoHole);
    let r = scripted(&sc, &p);
    assert!(
        r.violations
            .iter()
            .any(|v| v.invariant == "S2" && v.message.contains("hold data the file had dropped")),
        "{:?}",
        r.violations
    );
    let hits = invariant_hits(&sweep(&sc, &p, 0..50));
    assert!(hits.iter().any(|h| h.0 == "invariant:S2"), "{hits:?}");
    assert!(!crash_diffs(&sc, &p).is_empty());
}

#[test]
fn a_write_past_eof_lands_at_its_offset_and_the_gap_is_a_hole() {
    // generic-322: without the placement (eof-write-appends) bar comes back 2 MiB of data.
    let sc = load("xfstests/generic-322");
    let p = Policy::preset("linux-5.15").unwrap();
    assert!(crash_diffs(&sc, &p).is_empty());
    let d = crash_diffs(&sc, &p.with_mutant(Mutant::EofWriteAppends));
    assert!(d.iter().any(|l| l.contains("/bar")), "{d:?}");
}

#[test]
fn a_direct_write_past_eof_moves_i_size_at_completion_and_fsync_waits_for_it() {
    // generic-552: the new extent and its size; without the size update the stated state
    // fails, and in the scripted order (a commit before the rename) S2 fires too.
    let sc = load("xfstests/generic-552");
    let p = Policy::preset("linux-5.15").unwrap();
    assert!(crash_diffs(&sc, &p).is_empty());
    let m = p.clone().with_mutant(Mutant::DioNoSizeUpdate);
    assert!(!crash_diffs(&sc, &m).is_empty());
    assert!(scripted(&sc, &m)
        .violations
        .iter()
        .any(|v| v.invariant == "S2"));
    // The fsync right after two direct writes logs both extents and the size: it waited
    // for their ordered extents (btrfs_wait_ordered_range).
    let sc = load("examples/ops-dio-write-past-eof-fsync");
    assert!(crash_diffs(&sc, &p).is_empty());
    let r = run_one("btrfs", &["dio-write /d/f 0 4k", "fsync /d/f"]);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.metrics.get("extent_logs"), Some(1));
}

#[test]
fn writes_past_eof_refuse_a_file_with_dirty_pages_naming_the_line() {
    for (ops, says) in [
        (
            ["write /d/f 4k", "write /d/f 64k 4k"],
            "write /d/f 65536 4096 past EOF: the file has other dirty pages",
        ),
        (
            ["write /d/f 4k", "dio-write /d/f 64k 4k"],
            "dio-write /d/f 65536 4096 past EOF: the file has dirty pages",
        ),
    ] {
        let r = run_one("btrfs", &ops);
        assert!(
            r.violations.iter().any(|v| v.invariant == "scenario"
                && v.message.starts_with("e.toml:9: task A")
                && v.message.contains(says)
                && !v.message.contains('\n')),
            "{ops:?}: {:?}",
            r.violations
        );
    }
    // Appends after a write past EOF extend its dirty run, written back at its offset.
    let r = run_one(
        "btrfs",
        &["write /d/f 64k 4k", "write /d/f 4k", "write /d/f 72k 4k"],
    );
    assert!(r.violations.is_empty(), "{:?}", r.violations);
}

#[test]
fn ext_filesystems_run_a_write_past_eof_and_refuse_a_direct_write() {
    // The ext3/ext4 model has no file offsets: a write at one is a write of its size.
    for fs in ["ext4", "ext3"] {
        // (ext3 under linux-5.15 reports its S2 for any write and fsync: not this op's.)
        let r = run_one(fs, &["write /d/f 64k 4k", "fsync /d/f"]);
        assert!(
            r.violations.iter().all(|v| v.invariant != "scenario"),
            "{fs}: {:?}",
            r.violations
        );
        let r = run_one(fs, &["dio-write /d/f 64k 4k"]);
        assert!(
            r.violations
                .iter()
                .any(|v| v.message.starts_with("e.toml:9: task A")
                    && v.message
                        .contains("'dio-write' is not modelled on ext3/ext4")),
            "{fs}: {:?}",
            r.violations
        );
    }
}
