//! Coverage (issue 26 item 6): a sweep counts the distinct decision sequences
//! (interleavings) it ran, per policy, exactly as the runs' own `decisions` say, and the
//! count is the same for any --jobs, after --resume and across merged shards.

use crate::common;

use common::{assert_one_line_in, fsyncsim_in, stderr, temp_dir};
use models::block::DiskConfig;
use models::scenario::{run_with_trace, Interleaving, Scenario};
use models::sweep::{sweep_all, Interleavings, SweepResult, INTERLEAVINGS_CAP};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const R1: &str = "scenarios/r1-link-rename-logged-trans.toml";

fn fsyncsim(args: &[&str]) -> Output {
    let o = fsyncsim_in(Path::new(ROOT), args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o
}

/// The counts of the `interleavings:` lines of a sweep's text, in order.
fn counts(text: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| l.strip_prefix("  interleavings: "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_sweep_counts_the_distinct_decision_sequences_its_runs_made() {
    let sc = Scenario::load(&format!("{ROOT}/{R1}")).unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    for strategy in [
        Interleaving::Random,
        Interleaving::Pct(3),
        Interleaving::Urw,
    ] {
        for p in [sc.pre_policy(), sc.post_policy()] {
            let r = sweep_all(&sc, &p, &dev, 0..200, 2, &strategy).unwrap();
            // Independently: every seed's decisions, as distinct vectors.
            let seqs: BTreeSet<Vec<u32>> = (0..200)
                .map(|seed| run_with_trace(&sc, &p, &dev, seed, &strategy, false).decisions)
                .collect();
            let n = r.interleavings.count();
            assert_eq!(n, seqs.len() as u64, "{strategy:?} under {}", p.name);
            assert!(n > 1 && n <= 200 && !r.interleavings.capped, "{n}");
        }
    }
    // The command line prints it per policy, the count the library's runs give.
    let distinct = |strategy: &Interleaving, seeds: std::ops::Range<u64>| {
        let counts: Vec<usize> = [sc.pre_policy(), sc.post_policy()]
            .iter()
            .map(|p| {
                seeds
                    .clone()
                    .map(|seed| run_with_trace(&sc, p, &dev, seed, strategy, false).decisions)
                    .collect::<BTreeSet<Vec<u32>>>()
                    .len()
            })
            .collect();
        counts
    };
    let random = distinct(&Interleaving::Random, 0..300);
    let lines = |n: &[usize]| -> Vec<String> {
        n.iter()
            .map(|n| format!("{n} distinct decision sequences in 300 seeds"))
            .collect()
    };
    let o = fsyncsim(&["sweep", R1, "--seeds", "0..300"]);
    assert_eq!(counts(&o.stdout), lines(&random));
    let pct = distinct(&Interleaving::Pct(3), 0..300);
    assert!(
        pct[0] < random[0],
        "PCT (depth 3) finds far fewer: {pct:?} {random:?}"
    );
    let o = fsyncsim(&["sweep", R1, "--seeds", "0..300", "--strategy", "pct"]);
    assert_eq!(counts(&o.stdout), lines(&pct));
    let v: serde_json::Value =
        serde_json::from_slice(&fsyncsim(&["sweep", R1, "--seeds", "0..300", "--json"]).stdout)
            .unwrap();
    assert_eq!(v[0]["distinct_interleavings"], random[0] as u64);
    assert_eq!(v[0]["interleavings_capped"], false);
    assert_eq!(
        v[1]["interleaving_fingerprints"].as_str().unwrap().len(),
        random[1] * 16
    );
}

#[test]
fn runs_without_decisions_count_one_sequence_the_empty_one() {
    let none = (0..5).fold(Interleavings::default(), |acc, _| {
        acc.merge(Interleavings::of(&[]))
    });
    assert_eq!((none.count(), none.shown()), (1, "1".to_string()));
    let sc = Scenario::load(&format!("{ROOT}/{R1}")).unwrap();
    let p = sc.post_policy();
    let result = SweepResult {
        runs: 5,
        targets: Default::default(),
        interleavings: none,
    };
    let id = reports::sweep::Identity::new(
        &sc,
        &DiskConfig::resolve(&sc.device).unwrap(),
        &p,
        "--strategy random",
        &(0..5),
        "c",
    );
    let rep = reports::sweep::SweepReport::new(
        &sc,
        &p,
        "--strategy random",
        0..5,
        models::sweep::Shard::ALL,
        result,
        id,
    );
    assert!(rep
        .text()
        .contains("\n  interleavings: 1 distinct decision sequences in 5 seeds\n"));
    // Read back, it is the same set.
    let back = reports::sweep::SweepReport::from_json(&rep.json()).unwrap();
    assert_eq!(back.result, rep.result);
}

#[test]
fn the_count_stops_at_the_cap_and_merges_exactly_in_any_grouping() {
    let cap = INTERLEAVINGS_CAP as u32;
    let one = |i: u32| Interleavings::of(&[i, i / 7]);
    let whole = (0..cap + 100).fold(Interleavings::default(), |a, i| a.merge(one(i)));
    assert!(whole.capped && whole.count() == u64::from(cap));
    assert_eq!(whole.shown(), format!("≥ {cap}"));
    // Any split, merged in any order, keeps the same smallest fingerprints.
    let (evens, odds) = (0..cap + 100).fold(
        (Interleavings::default(), Interleavings::default()),
        |(e, o), i| {
            if i % 2 == 0 {
                (e.merge(one(i)), o)
            } else {
                (e, o.merge(one(i)))
            }
        },
    );
    assert!(!evens.capped && !odds.capped);
    assert_eq!(odds.merge(evens), whole);
    // Exactly the cap is not capped.
    let full = (0..cap).fold(Interleavings::default(), |a, i| a.merge(one(i)));
    assert!(!full.capped && full.count() == u64::from(cap));
    // The fingerprint is FNV-1a 64 over the length (u64 LE) and the decisions (u32 LE).
    let bytes = [2u64.to_le_bytes().to_vec(), vec![1, 0, 0, 0, 0, 0, 0, 0]].concat();
    assert_eq!(
        models::sweep::decisions_fingerprint(&[1, 0]),
        models::units::fnv1a64(&bytes)
    );
    assert_ne!(
        models::sweep::decisions_fingerprint(&[]),
        models::sweep::decisions_fingerprint(&[0])
    );
}

#[test]
fn jobs_resume_and_merged_shards_print_the_same_interleavings() {
    let dir = temp_dir("coverage");
    let d = dir.join("out");
    let d = d.to_str().unwrap();
    let base = ["sweep", R1, "--seeds", "0..9000"];
    let whole = fsyncsim(&[&base[..], &["--jobs", "2"]].concat());
    let whole_json = fsyncsim(&[&base[..], &["--jobs", "2", "--json"]].concat());
    let n = counts(&whole.stdout);
    assert_eq!(n.len(), 2, "{}", String::from_utf8_lossy(&whole.stdout));
    assert!(n.iter().all(|l| l.ends_with(" in 9000 seeds")), "{n:?}");
    assert_eq!(
        fsyncsim(&[&base[..], &["--jobs", "1"]].concat()).stdout,
        whole.stdout
    );
    // Interrupted after one chunk of 4,096 seeds, then resumed: the same output.
    let o = fsyncsim(&[&base[..], &["--out", d, "--stop-after-chunks", "1"]].concat());
    assert!(counts(&o.stdout)[0].ends_with(" in 4096 seeds"));
    let resumed = fsyncsim(&[&base[..], &["--resume", d, "--json"]].concat());
    assert_eq!(
        String::from_utf8_lossy(&resumed.stdout),
        String::from_utf8_lossy(&whole_json.stdout)
    );
    // Three shards merged, in any order: the same text and JSON.
    let mut files = Vec::new();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let o = fsyncsim(&[&base[..], &["--shard", &shard, "--json", "--jobs", "2"]].concat());
        let f = dir.join(format!("s{k}.json"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f.to_str().unwrap().to_string());
    }
    let merged = fsyncsim(&["merge", &files[1], &files[2], &files[0]]);
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&whole.stdout)
    );
    let merged = fsyncsim(&["merge", &files[2], &files[0], &files[1], "--json"]);
    assert_eq!(merged.stdout, whole_json.stdout);
}

#[test]
fn files_without_or_with_edited_interleavings_are_refused() {
    let dir = temp_dir("coverage-old");
    let out = dir.join("out");
    let d = out.to_str().unwrap();
    let base = ["sweep", R1, "--seeds", "0..5000"];
    fsyncsim(&[&base[..], &["--out", d, "--stop-after-chunks", "1"]].concat());
    // A checkpoint from before sweeps counted interleavings (resealed, so that the check
    // behind the checksums is what refuses it).
    let state = out.join("state.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let mut p = v["progress"].clone();
    p[0]["report"]
        .as_object_mut()
        .unwrap()
        .remove("distinct_interleavings");
    let sealed = reports::checkpoint::seal(&v["meta"], p);
    std::fs::write(&state, sealed.to_string()).unwrap();
    assert_one_line_in(
        Path::new(ROOT),
        2,
        &[&base[..], &["--resume", d]].concat(),
        &["state.json", "missing field 'distinct_interleavings'"],
    );
    // Shards: one without the fields, one whose count does not match its fingerprints.
    let shard = fsyncsim(&[&base[..], &["--shard", "1/2", "--json"]].concat());
    let other = fsyncsim(&[&base[..], &["--shard", "2/2", "--json"]].concat());
    let s2 = dir.join("s2.json");
    std::fs::write(&s2, &other.stdout).unwrap();
    let s2 = s2.to_str().unwrap();
    let edit = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_slice(&shard.stdout).unwrap();
        f(&mut v);
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p.to_str().unwrap().to_string()
    };
    let old = edit("old.json", &|v| {
        v[0].as_object_mut()
            .unwrap()
            .remove("distinct_interleavings");
    });
    let more = edit("more.json", &|v| {
        v[1]["distinct_interleavings"] = serde_json::json!(3);
    });
    let unsorted = edit("unsorted.json", &|v| {
        let hex = v[0]["interleaving_fingerprints"].as_str().unwrap();
        let swapped = format!("{}{}{}", &hex[16..32], &hex[..16], &hex[32..]);
        v[0]["interleaving_fingerprints"] = serde_json::json!(swapped);
    });
    for (f, needles) in [
        (&old, ["old.json", "missing field 'distinct_interleavings'"]),
        (&more, ["more.json", "distinct_interleavings 3"]),
        (&unsorted, ["unsorted.json", "ascending"]),
    ] {
        assert_one_line_in(Path::new(ROOT), 2, &["merge", f, s2], &needles);
    }
}
