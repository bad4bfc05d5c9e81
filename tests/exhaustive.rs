//! Exhaustive sweeps (issue 26 item 6): every interleaving of one seed, depth-first, each run
//! once; the random walk's runs are among them; the bound says when more remain.

use crate::common;

use models::block::DiskConfig;
use models::kernel::Policy;
use models::scenario::{run_with_trace, Interleaving, Scenario};
use models::sweep::{exhaustive, next_prefix, trimmed};
use std::collections::BTreeSet;

/// Every decision sequence of `sc` under `p` at `seed`, enumerated here with
/// `next_prefix` (independently of `sweep::exhaustive`'s loop).
fn all_sequences(sc: &Scenario, p: &Policy, seed: u64) -> Vec<Vec<u32>> {
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let mut out = Vec::new();
    let mut prefix = Some(Vec::new());
    while let Some(pre) = prefix {
        let r = run_with_trace(
            sc,
            p,
            &dev,
            seed,
            &Interleaving::Exhaustive(pre.clone()),
            false,
        );
        assert_eq!(r.decisions.len(), r.widths.len());
        assert!(r.decisions.starts_with(&pre), "the run follows its prefix");
        assert!(r.decisions.iter().zip(&r.widths).all(|(d, w)| d < w));
        prefix = next_prefix(&r.decisions, &r.widths);
        out.push(r.decisions);
        assert!(out.len() <= 20_000, "space too large for this test");
    }
    out
}

#[test]
fn next_prefix_enumerates_a_tree_in_lexicographic_order() {
    // A tree whose width at depth i is i + 2 after a 0 and 1 after anything else (3 levels).
    let walk = |pre: &[u32]| {
        let mut d = pre.to_vec();
        let mut w = Vec::new();
        for i in 0..3 {
            let width = if i == 0 || d[i - 1] == 0 {
                i as u32 + 2
            } else {
                1
            };
            w.push(width);
            if d.len() == i {
                d.push(0);
            }
        }
        (d, w)
    };
    let mut seen = Vec::new();
    let mut prefix = Some(Vec::new());
    while let Some(p) = prefix {
        let (d, w) = walk(&p);
        prefix = next_prefix(&d, &w);
        seen.push(d);
    }
    let want: Vec<Vec<u32>> = vec![
        vec![0, 0, 0],
        vec![0, 0, 1],
        vec![0, 0, 2],
        vec![0, 0, 3],
        vec![0, 1, 0],
        vec![0, 2, 0],
        vec![1, 0, 0],
        vec![1, 0, 1],
        vec![1, 0, 2],
        vec![1, 0, 3],
    ];
    assert_eq!(seen, want);
    assert_eq!(trimmed(&[0, 2, 0, 0]), vec![0, 2]);
    assert_eq!(trimmed(&[0, 0]), Vec::<u32>::new());
}

#[test]
fn every_interleaving_runs_once_and_the_enumeration_completes() {
    for name in [
        "r7-fsync-syncs-unchanged-log",
        "r1-link-rename-logged-trans",
    ] {
        let sc = Scenario::load(name).unwrap();
        let dev = DiskConfig::resolve(&sc.device).unwrap();
        for p in [sc.pre_policy(), sc.post_policy()] {
            let (res, cov) = exhaustive(&sc, &p, &dev, 0, 0, &[], 100_000, &|_| {});
            assert!(cov.complete, "{name}: {} runs", cov.runs);
            assert_eq!(res.runs, cov.runs);
            // Each run a new sequence: as many distinct fingerprints as runs.
            assert_eq!(res.interleavings.count(), res.runs, "{name}");
            let seqs = all_sequences(&sc, &p, 0);
            assert_eq!(seqs.len() as u64, cov.runs, "{name}");
            let distinct: BTreeSet<&Vec<u32>> = seqs.iter().collect();
            assert_eq!(distinct.len(), seqs.len(), "{name}: a sequence ran twice");
            // Replaying a found sequence makes it again: the set is closed under replay.
            for d in seqs.iter().step_by(7) {
                let r = run_with_trace(&sc, &p, &dev, 0, &Interleaving::Replay(d.clone()), false);
                assert_eq!(&r.decisions, d);
            }
        }
    }
    // r7 has 3 interleavings at seed 0 (its two tasks' one decision each).
    let sc = Scenario::load("r7-fsync-syncs-unchanged-log").unwrap();
    assert_eq!(all_sequences(&sc, &sc.pre_policy(), 0).len(), 3);
}

#[test]
fn the_random_walks_runs_are_among_the_enumerated_ones() {
    // A random run at seed S draws device timing from S too, so it is compared with the
    // enumeration of the same seed.
    let sc = Scenario::load("r1-link-rename-logged-trans").unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let p = sc.pre_policy();
    for seed in 0..12 {
        let all: BTreeSet<Vec<u32>> = all_sequences(&sc, &p, seed).into_iter().collect();
        for how in [
            Interleaving::Random,
            Interleaving::Urw,
            Interleaving::Pct(3),
        ] {
            let r = run_with_trace(&sc, &p, &dev, seed, &how, false);
            assert!(
                all.contains(&r.decisions),
                "seed {seed} {how:?}: {:?}",
                r.decisions
            );
        }
    }
}

#[test]
fn the_race_is_found_before_the_fix_and_not_after() {
    let sc = Scenario::load("r1-link-rename-logged-trans").unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let (pre, cov) = exhaustive(&sc, &sc.pre_policy(), &dev, 0, 0, &[], 10_000, &|_| {});
    assert!(cov.complete);
    let hit = &pre.targets["unnecessary_inode_logs"];
    assert!(
        hit.hits > 0 && hit.hits < pre.runs,
        "{hit:?} of {}",
        pre.runs
    );
    // The decisions the report keeps for the shortest hit make that run again.
    let (_, run) = hit.shortest.unwrap();
    let d = cov.decisions[&run].clone();
    let again = run_with_trace(
        &sc,
        &sc.pre_policy(),
        &dev,
        0,
        &Interleaving::Exhaustive(d),
        false,
    );
    assert!(again.metrics.get("unnecessary_inode_logs").unwrap() > 0);
    let (post, cov) = exhaustive(&sc, &sc.post_policy(), &dev, 0, 0, &[], 10_000, &|_| {});
    assert!(
        cov.complete && post.targets.is_empty(),
        "{:?}",
        post.targets
    );
}

#[test]
fn the_cli_says_whether_every_interleaving_ran() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |args: &[&str]| common::fsyncsim_in(dir, args);
    let o = run(&[
        "sweep",
        "r7-fsync-syncs-unchanged-log",
        "--strategy",
        "exhaustive",
    ]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert_eq!(
        text.matches("  exhaustive: all 3 interleavings run (seed 0)\n")
            .count(),
        2
    );
    let args = [
        "sweep",
        "r1-link-rename-logged-trans",
        "--strategy",
        "exhaustive",
    ];
    let bounded = run(&[&args[..], &["--max-runs", "2", "--without", "R1"]].concat());
    let text = String::from_utf8_lossy(&bounded.stdout).to_string();
    assert_eq!(bounded.status.code(), Some(0));
    assert!(
        text.contains(
            "  exhaustive: stopped after 2 runs (bound --max-runs 2), more remain (seed 0)\n"
        ),
        "{text}"
    );
    // JSON: complete or not, and the same for any --jobs.
    let json = |jobs: &str| {
        let o = run(&[&args[..], &["--json", "--jobs", jobs]].concat());
        String::from_utf8(o.stdout).unwrap()
    };
    let (one, two) = (json("1"), json("2"));
    assert_eq!(one, two);
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(v[0]["exhaustive_complete"], true);
    // As many runs as the library's enumeration of seed 0 makes.
    let sc = Scenario::load("r1-link-rename-logged-trans").unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let (_, cov) = exhaustive(&sc, &sc.pre_policy(), &dev, 0, 0, &[], 10_000, &|_| {});
    assert!(cov.complete);
    assert_eq!(v[0]["exhaustive_runs"], cov.runs);
    // The replay line makes the shortest hitting run again.
    let replay = v[0]["targets"]["unnecessary_inode_logs"]["replay"]
        .as_str()
        .unwrap();
    let words: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let again = run(&[&words[..], &["--json"]].concat());
    let r: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let m = &r["runs"][0]["metrics"]["unnecessary_inode_logs"];
    assert!(m.as_u64().is_some_and(|n| n > 0), "{replay}: {r:#}");
}

#[test]
fn an_exhaustive_sweep_refuses_what_it_cannot_do() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = [
        "sweep",
        "r7-fsync-syncs-unchanged-log",
        "--strategy",
        "exhaustive",
    ];
    for (extra, needle) in [
        (&["--shard", "1/2"][..], "--shard"),
        (&["--seeds", "0..5"][..], "--seed S"),
        (&["--decisions", "1"][..], "--decisions"),
        (&["--max-runs", "0"][..], "--max-runs"),
    ] {
        common::assert_one_line_in(dir, 2, &[&base[..], extra].concat(), &[needle]);
    }
    let random = ["sweep", "r7-fsync-syncs-unchanged-log", "--seed", "3"];
    common::assert_one_line_in(dir, 2, &random, &["--strategy exhaustive"]);
    // Its JSON has no shards to merge.
    let o = common::fsyncsim_in(dir, &[&base[..], &["--json"]].concat());
    let tmp = common::temp_dir("exhaustive-merge");
    let f = tmp.join("e.json");
    std::fs::write(&f, &o.stdout).unwrap();
    let f = f.display().to_string();
    common::assert_one_line_in(dir, 2, &["merge", &f], &["does not merge"]);
}
