//! The recovered state (issue 30 item 2): `[expect.crash]` of the xfstests scenarios holds
//! on every release preset and fails under the mutant that removes the mechanism, `check`
//! reports what differs, `fsyncsim crash` prints the recovered names and sizes, and bad
//! input is one line with exit 2.

use crate::common;

use common::{assert_one_line_in, fsyncsim_in, stderr, temp_dir, toml_files};
use models::block::DiskConfig;
use models::btrfs::policy::LogPatch;
use models::btrfs::Mutant;
use models::kernel::{preset_names, Policy};
use models::scenario::{crash_state, Scenario};
use models::vfs::Recovered;
use serde_json::Value;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Which mutant removes the mechanism each scenario guards (as tests/xfstests.rs).
const GUARDS: &[(&str, Mutant)] = &[
    ("generic-039", Mutant::UnlinkNoInodeUpdate),
    ("generic-101", Mutant::GrowingTruncateNoHole),
    ("generic-106", Mutant::UnlinkNoInodeUpdate),
    ("generic-107", Mutant::UnlinkNoInodeUpdate),
    ("generic-336", Mutant::UnlinkNoInodeUpdate),
    ("generic-341", Mutant::NoConflictingInodes),
    ("generic-342", Mutant::NoConflictingInodes),
    ("generic-483", Mutant::NoPreallocExtentLogging),
    ("generic-526", Mutant::NoConflictingInodes),
    ("generic-527", Mutant::NoConflictingInodes),
    ("generic-065", Mutant::SkipLogWhenLoggedBefore),
    ("generic-073", Mutant::SkipLogWhenLoggedBefore),
    ("generic-090", Mutant::SkipLogWhenLoggedBefore),
    ("generic-534", Mutant::SkipLogWhenLoggedBefore),
    ("generic-177", Mutant::PunchHoleLogsNoHole),
    ("generic-502", Mutant::NoConflictingInodes),
    ("generic-501", Mutant::CloneNoFullSync),
    ("generic-588", Mutant::CloneNoFullSync),
    ("btrfs-098", Mutant::CloneNoFullSync),
    ("generic-348", Mutant::SymlinkLoggedExists),
    ("generic-322", Mutant::EofWriteAppends),
    ("generic-552", Mutant::DioNoSizeUpdate),
];

/// Scenarios reproducing a kernel bug on the presets without the switch that fixed it (as
/// tests/xfstests.rs FIXED_IN): there the stated state must fail.
const FIXED_IN: &[(&str, LogPatch)] = &[("btrfs-231", LogPatch::CloneHoleFullSync)];

fn corpus() -> Vec<Scenario> {
    toml_files(&format!("{ROOT}/scenarios/xfstests"))
        .iter()
        .map(|p| Scenario::load(p.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// The recovered state at the scenario's `[expect.crash]` point under `p`.
fn recovered(sc: &Scenario, p: &Policy) -> Recovered {
    let e = sc.expect_crash.as_ref().expect("[expect.crash]");
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let (r, state) = crash_state(sc, p, &dev, sc.seed, &e.at);
    assert!(r.unplayable().is_none(), "{}: {:?}", sc.name, r.violations);
    let state = state.unwrap_or_else(|| panic!("{}: {} never reached", sc.name, e.at));
    state.unwrap_or_else(|m| panic!("{}: recovery fails: {m}", sc.name))
}

fn fsyncsim(args: &[&str]) -> std::process::Output {
    fsyncsim_in(Path::new(ROOT), args)
}

#[test]
fn every_xfstests_scenario_states_a_crash_state_that_holds_on_every_preset() {
    for sc in corpus() {
        let e = sc
            .expect_crash
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no [expect.crash]", sc.name));
        assert!(
            !e.exists.is_empty() || !e.size.is_empty(),
            "{}: states nothing that must survive",
            sc.name
        );
        for name in preset_names() {
            let p = Policy::preset(name).unwrap();
            let got = recovered(&sc, &p);
            let diffs = e.compare(&got);
            let fixed = FIXED_IN
                .iter()
                .all(|(n, switch)| *n != sc.name || p.btrfs.log(*switch));
            assert!(
                diffs.is_empty() == fixed,
                "{} {name}: {diffs:?}\n{}",
                sc.name,
                got.render()
            );
        }
    }
}

#[test]
fn each_mechanism_mutant_breaks_its_stated_crash_state() {
    for sc in corpus() {
        // Files no mutant breaks are listed, with the reason, in tests/xfstests.rs.
        let Some(&(_, m)) = GUARDS.iter().find(|(n, _)| *n == sc.name) else {
            continue;
        };
        let p = Policy::preset("linux-5.15").unwrap().with_mutant(m);
        let e = sc.expect_crash.as_ref().unwrap();
        let diffs = e.compare(&recovered(&sc, &p));
        assert!(
            !diffs.is_empty(),
            "{}: the mutant {m:?} keeps the stated state",
            sc.name
        );
    }
}

#[test]
fn the_mismatch_names_what_came_back_or_went_missing() {
    // generic-039 without the unlink's inode update: the fsync is skipped, the committed
    // tree brings bar back and foo has two links again.
    let sc = Scenario::load(&format!("{ROOT}/scenarios/xfstests/generic-039.toml")).unwrap();
    let p = Policy::preset("linux-5.15")
        .unwrap()
        .with_mutant(Mutant::UnlinkNoInodeUpdate);
    let diffs = sc
        .expect_crash
        .as_ref()
        .unwrap()
        .compare(&recovered(&sc, &p));
    assert!(
        diffs
            .iter()
            .any(|d| d.starts_with("/a/b/bar: expected absent, present")),
        "{diffs:?}"
    );
    assert!(
        diffs
            .iter()
            .any(|d| d == "/a/b/foo: expected nlink 1, got 2"),
        "{diffs:?}"
    );
    // generic-483 without prealloc-extent logging: replay's truncate to baz's logged size
    // drops the committed [256K, 1M) and nothing puts it back: a hole there.
    let sc = Scenario::load(&format!("{ROOT}/scenarios/xfstests/generic-483.toml")).unwrap();
    let p = Policy::preset("linux-5.15")
        .unwrap()
        .with_mutant(Mutant::NoPreallocExtentLogging);
    let diffs = sc
        .expect_crash
        .as_ref()
        .unwrap()
        .compare(&recovered(&sc, &p));
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert!(diffs[0].starts_with("/baz: expected extents"), "{diffs:?}");
    assert!(diffs[0].contains("262144..1048576 hole"), "{diffs:?}");
}

/// generic-039 with its after policy replaced by `after` (and nothing else changed).
fn with_after_policy(dir: &Path, after: &str) -> String {
    let text =
        std::fs::read_to_string(format!("{ROOT}/scenarios/xfstests/generic-039.toml")).unwrap();
    let text = text.replace("after = \"linux-5.15\"", &format!("after = \"{after}\""));
    let path = dir.join("g039.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn check_fails_on_the_crash_expectation_with_what_differed() {
    let dir = temp_dir("crash-check");
    let path = with_after_policy(&dir, "linux-5.15:+unlink-no-inode-update");
    let o = fsyncsim(&["check", &path]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let line = "after (linux-5.15:+unlink-no-inode-update): crash at A fsync:done: /a/b/bar: expected absent, present";
    assert!(out.lines().any(|l| l.trim().starts_with(line)), "{out}");
    // The before policy (linux-5.10, with the mechanism) passes its crash expectation.
    assert!(!out.contains("before (linux-5.10): crash at"), "{out}");
    // The same file with the fixed policy passes: the line comes from the mutant.
    let path = with_after_policy(&dir, "linux-5.15");
    let o = fsyncsim(&["check", &path]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn the_crash_command_prints_the_recovered_sizes_and_names() {
    let g483 = "scenarios/xfstests/generic-483.toml";
    let o = fsyncsim(&["crash", g483, "--at", "A fsync:done#3", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["at"], "A fsync:done#3");
    assert_eq!(v["policy"], "linux-5.15");
    let paths = v["recovered"]["paths"].as_object().unwrap();
    let names: Vec<&str> = paths.keys().map(String::as_str).collect();
    assert_eq!(names, ["/", "/bar", "/baz", "/foo"]);
    for f in ["/foo", "/bar", "/baz"] {
        // Every file's size is the 256 KiB written (bar truncated to it); fallocate -k
        // does not change it.
        assert_eq!(paths[f]["size"], 262144, "{f}");
        let ext = paths[f]["extents"].as_array().unwrap();
        let last = ext.last().unwrap();
        assert_eq!(last["kind"], "prealloc", "{f}");
        // foo and bar: fallocate 256k 1m ends at 1.25 MiB; baz: 1m 2m ends at 3 MiB.
        let end = last["offset"].as_u64().unwrap() + last["len"].as_u64().unwrap();
        assert_eq!(end, if f == "/baz" { 3 << 20 } else { 1_310_720 }, "{f}");
    }
    // Before the last fsync (its second arrival at fsync:done), baz's 1m..3m preallocation
    // is not logged yet: the recovered baz ends with the committed [256K, 1M).
    let o = fsyncsim(&["crash", g483, "--at", "A fsync:done#2", "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let baz = v["recovered"]["paths"]["/baz"]["extents"]
        .as_array()
        .unwrap()
        .clone();
    let last = baz.last().unwrap();
    assert_eq!(
        last["offset"].as_u64().unwrap() + last["len"].as_u64().unwrap(),
        1 << 20
    );
    // generic-039: one link left after the fix; two names of one inode with the mutant.
    let g039 = "scenarios/xfstests/generic-039.toml";
    let o = fsyncsim(&["crash", g039, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["recovered"]["paths"];
    assert_eq!(p["/a/b/foo"]["nlink"], 1);
    assert!(p.get("/a/b/bar").is_none());
    let o = fsyncsim(&[
        "crash",
        g039,
        "--mutant",
        "unlink-no-inode-update",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["recovered"]["paths"];
    assert_eq!(p["/a/b/bar"]["ino"], p["/a/b/foo"]["ino"]);
    assert_eq!(p["/a/b/bar"]["nlink"], 2);
    // The text form lists the same paths, one line each.
    let o = fsyncsim(&["crash", g039, "--at", "A fsync:done"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("power failure at A fsync:done under linux-5.15"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("/a/b/foo  file ") && l.contains(" nlink 1 size 12")),
        "{text}"
    );
}

#[test]
fn ext_filesystems_say_their_recovered_state_is_not_modelled() {
    let o = fsyncsim(&["crash", "j1b-reader-stalled-by-sync-commit", "--at", "end"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("recovery fails: the recovered state is not modelled for ext4"),
        "{out}"
    );
}

#[test]
fn bad_crash_points_are_one_line_and_exit_2() {
    let root = Path::new(ROOT);
    let g = "scenarios/xfstests/generic-483.toml";
    assert_one_line_in(
        root,
        2,
        &["crash", g, "--at", "B fsync:done"],
        &["--at", "unknown task 'B'", "A, C"],
    );
    assert_one_line_in(
        root,
        2,
        &["crash", g, "--at", "A fsync:dne"],
        &["--at", "never reaches point 'fsync:dne'"],
    );
    assert_one_line_in(
        root,
        2,
        &["crash", g, "--at", "A"],
        &["--at", "expected 'TASK POINT'"],
    );
    assert_one_line_in(
        root,
        2,
        &["crash", g, "--at", "A fsync:done#0"],
        &["--at", "#N"],
    );
    // Three fsyncs: a fourth arrival never happens.
    assert_one_line_in(
        root,
        2,
        &["crash", g, "--at", "A fsync:done#4"],
        &["--at", "never reached"],
    );
    // No --at and no [expect.crash] to take it from.
    assert_one_line_in(
        root,
        2,
        &["crash", "r1-link-rename-logged-trans"],
        &["--at", "no [expect.crash]"],
    );
}

/// A minimal btrfs scenario with `crash` as its [expect.crash] body.
fn scenario_with(crash: &str) -> String {
    format!(
        "name = \"t\"\nrace = \"T1\"\ntitle = \"t\"\nsummary = \"t\"\nsetup = [\"create /f\"]\n\n[[task]]\nname = \"A\"\nops = [\"fsync /f\"]\n\n[policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.15\"\n\n[expect.before]\n\"S2\" = 0\n\n[expect.crash]\n{crash}"
    )
}

#[test]
fn bad_crash_tables_name_the_file_and_line() {
    let cases: &[(&str, &str)] = &[
        ("at = \"B fsync:done\"\n", ":19: unknown task 'B'"),
        (
            "at = \"A fsync:done\"\nexists = [\"f\"]\n",
            ":20: invalid path 'f'",
        ),
        (
            "at = \"A fsync:done\"\nsize = { \"/f\" = \"big\" }\n",
            ":20:",
        ),
        (
            "at = \"A fsync:done\"\nextents = { \"/f\" = [\"0 4k lots\"] }\n",
            ":20: invalid extent '0 4k lots'",
        ),
        ("at = \"A fsync:done\"\nmtime = 1\n", "mtime"),
        (
            "at = \"A fsync:done\"\nmode = { \"/f\" = 0o17777 }\n",
            ":20: invalid mode 8191",
        ),
        (
            "at = \"A fsync:done\"\nkind = { \"/f\" = \"socket\" }\n",
            ":20: invalid kind 'socket'",
        ),
    ];
    for (body, want) in cases {
        let e = Scenario::parse(&scenario_with(body), "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.toml:") && e.contains(want),
            "{body:?}: {e}"
        );
    }
    // A good table parses, next to the policies' metric tables.
    let sc = Scenario::parse(
        &scenario_with("at = \"A fsync:done\"\nexists = [\"/f\"]\n"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(sc.expect_crash.unwrap().exists, ["/f"]);
    assert_eq!(sc.expect_pre.get("S2"), Some(&0));
    // ext3/ext4 have no recovered state to compare: the table is refused at its `at`.
    let text = scenario_with("at = \"end\"\n").replace("setup = ", "fs = \"ext4\"\nsetup = ");
    let e = Scenario::parse(&text, "t.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("t.toml:20: [expect.crash] needs a recovered state"),
        "{e}"
    );
    assert!(e.contains("not modelled for ext4"), "{e}");
    // `crash` is not a policy label.
    let text =
        scenario_with("at = \"end\"\n").replace("after = \"linux-5.15\"", "crash = \"linux-5.15\"");
    let e = Scenario::parse(&text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("reserved for [expect.crash]"), "{e}");
}

#[test]
fn a_crash_at_the_end_sees_every_returned_fsync() {
    // A file created and fsynced: after the run its name and its inode survive.
    let sc = Scenario::parse(
        &scenario_with(
            "at = \"end\"\nexists = [\"/f\"]\nsize = { \"/f\" = 0 }\nnlink = { \"/f\" = 1 }\n",
        ),
        "t.toml",
    )
    .unwrap();
    for p in [sc.pre_policy(), sc.post_policy()] {
        let got = recovered(&sc, &p);
        assert_eq!(
            sc.expect_crash.as_ref().unwrap().compare(&got),
            Vec::<String>::new(),
            "{}",
            got.render()
        );
    }
}

#[test]
fn xattr_names_are_stated_and_compared_as_a_set() {
    // An xattr set and fsynced survives; the set must match exactly, in any order.
    let text = scenario_with("at = \"end\"\nxattrs = { \"/f\" = [\"user.b\", \"user.a\"] }\n")
        .replace(
            "ops = [\"fsync /f\"]",
            "ops = [\"setxattr /f user.a\", \"setxattr /f user.b\", \"fsync /f\"]",
        );
    let sc = Scenario::parse(&text, "t.toml").unwrap();
    let got = recovered(&sc, &sc.post_policy());
    let e = sc.expect_crash.as_ref().unwrap();
    assert_eq!(e.compare(&got), Vec::<String>::new(), "{}", got.render());
    assert!(
        got.render().contains("  xattr user.a\n"),
        "{}",
        got.render()
    );
    // Stating one name less is a mismatch that names both sets.
    let text = text.replace("[\"user.b\", \"user.a\"]", "[\"user.a\"]");
    let sc = Scenario::parse(&text, "t.toml").unwrap();
    let diffs = sc.expect_crash.as_ref().unwrap().compare(&got);
    assert_eq!(
        diffs,
        ["/f: expected xattrs [user.a], got [user.a, user.b]"]
    );
}

/// Each `[expect.crash-N]` table (one per earlier power failure of a file with several
/// `power-fail`s) holds on every release preset, as `[expect.crash]` does.
#[test]
fn every_per_failure_crash_table_holds_on_every_preset() {
    let mut tables = 0;
    for sc in corpus() {
        let dev = DiskConfig::resolve(&sc.device).unwrap();
        for (n, e) in &sc.expect_crash_more {
            tables += 1;
            for name in preset_names() {
                let p = Policy::preset(name).unwrap();
                let (r, state) = crash_state(&sc, &p, &dev, sc.seed, &e.at);
                assert!(
                    r.violations.is_empty(),
                    "{} {name}: {:?}",
                    sc.name,
                    r.violations
                );
                let got = state.expect("reached").expect("recovers");
                let diffs = e.compare(&got);
                assert!(diffs.is_empty(), "{} crash-{n} {name}: {diffs:?}", sc.name);
            }
        }
    }
    assert!(tables >= 3, "the corpus states {tables} per-failure tables");
}
