//! Shrinking: an explored hit becomes a small scripted scenario that reproduces it.

use models::block::DiskConfig;
use models::btrfs::{Fix, Mutant};
use models::kernel::Policy;
use models::scenario::{self, run, Interleaving, Scenario};
use models::shrink::{shrink, Size, Target};

fn r1() -> Scenario {
    Scenario::load("r1-link-rename-logged-trans").unwrap()
}

fn dev(sc: &Scenario) -> DiskConfig {
    DiskConfig::resolve(&sc.device).unwrap()
}

/// The R1 scenario with its tasks listed in the other order and no script, so that the
/// first-come order does not hit and the shrunk script has to keep preemptions.
fn r1_reversed() -> Scenario {
    let (_, text) = scenario::BUILTIN[0];
    let a = "[[task]]\nname = \"A\"\nops = [\"commit\"]         # 2) Task A starts to commit transaction 1000\n";
    let b = "[[task]]\nname = \"B\"\nops = [\"link /a/x /a/y\"]\n";
    assert!(text.contains(a) && text.contains(b), "R1 file changed");
    let t = text.replace(&format!("{a}\n{b}"), &format!("{b}\n{a}"));
    let t = &t[..t.find("[script]").unwrap()];
    Scenario::parse(t, "r1-reversed.toml").unwrap()
}

/// Checks that the written file reproduces the target under `policy` and passes its own
/// expectations; returns the parsed file.
fn reproduces(toml: &str, policy: &Policy, target: &Target, device: &DiskConfig) -> Scenario {
    let sc = Scenario::parse(toml, "shrunk.toml").expect("the shrunk file parses");
    let r = run(&sc, policy, device, sc.seed, &Interleaving::Script);
    assert!(
        target.value(&r) > 0,
        "the shrunk file does not hit:\n{toml}"
    );
    assert!(
        !r.violations
            .iter()
            .any(|v| v.invariant == "script" || v.invariant == "scenario"),
        "{:?}",
        r.violations
    );
    for (pol, expect) in [
        (sc.pre_policy(), &sc.expect_pre),
        (sc.post_policy(), &sc.expect_post),
    ] {
        let r = run(&sc, &pol, device, sc.seed, &Interleaving::Script);
        let bad: Vec<String> = scenario::compare(expect, &r)
            .into_iter()
            .filter(|m| !m.contains("violated"))
            .collect();
        assert!(bad.is_empty(), "{bad:?}\n{toml}");
    }
    sc
}

#[test]
fn r1_hits_shrink_no_larger_than_the_hand_written_scenario() {
    let sc = r1();
    let (d, pre) = (dev(&sc), sc.pre_policy());
    let target = Target::parse("unnecessary_inode_logs").unwrap();
    let hand = Size::of(&sc);
    let mut shrunk = 0;
    for seed in 0..12 {
        let Ok(s) = shrink(&sc, &pre, &d, seed, &Interleaving::Random, &target, "t", "") else {
            continue;
        };
        shrunk += 1;
        assert!(
            s.after.tasks <= hand.tasks && s.after.ops <= hand.ops,
            "{:?} vs {hand:?}",
            s.after
        );
        assert!(s.after.decisions <= hand.decisions, "{:?}", s.after);
        assert!(s.before.decisions > s.after.decisions);
        assert_eq!(Size::of(&s.scenario), s.after);
        reproduces(&s.toml, &pre, &target, &d);
        assert_eq!(
            s.scenario.expect_post.get("unnecessary_inode_logs"),
            Some(&0)
        );
    }
    assert!(shrunk >= 3, "only {shrunk} of 12 seeds hit R1");
}

#[test]
fn shrinking_keeps_only_the_preemptions_the_race_needs() {
    let sc = r1_reversed();
    let (d, pre) = (dev(&sc), sc.pre_policy());
    let target = Target::parse("unnecessary_inode_logs").unwrap();
    // Without a script, the first-come order (B's link before A's commit) does not hit.
    let fifo = run(&sc, &pre, &d, 1, &Interleaving::Script);
    assert_eq!(target.value(&fifo), 0);
    // The first hitting seed whose hit a script can express (some hits need ties between
    // tasks outside named points, which shrink refuses with a message).
    let (seed, s) = (0..50)
        .filter(|&s| target.value(&run(&sc, &pre, &d, s, &Interleaving::Random)) > 0)
        .find_map(|seed| {
            shrink(&sc, &pre, &d, seed, &Interleaving::Random, &target, "t", "")
                .ok()
                .map(|s| (seed, s))
        })
        .expect("a random seed hits and shrinks");
    assert!(
        (1..=Size::of(&r1()).decisions).contains(&s.after.decisions),
        "{:?}",
        s.after
    );
    let file = reproduces(&s.toml, &pre, &target, &d);
    // 1-minimal: dropping any one step loses the hit (or the file no longer plays).
    for i in 0..file.script.len() {
        let mut c = file.clone();
        c.script.remove(i);
        let r = run(&c, &pre, &d, c.seed, &Interleaving::Script);
        assert!(
            target.value(&r) == 0 || !r.violations.is_empty(),
            "step {i} was not needed"
        );
    }
    // Same inputs, same file.
    let again = shrink(&sc, &pre, &d, seed, &Interleaving::Random, &target, "t", "").unwrap();
    assert_eq!(s.toml, again.toml);
}

#[test]
fn invariant_targets_shrink_under_a_mutant() {
    let sc = Scenario::load("r6-log-start-blocked-on-tree-log-mutex").unwrap();
    let d = dev(&sc);
    let p = Policy::preset("linux-5.11")
        .unwrap()
        .with_mutant(Mutant::parse("sync-log-no-super-wait").unwrap());
    let target = Target::parse("S2").unwrap();
    let seed = (0..200)
        .find(|&s| target.value(&run(&sc, &p, &d, s, &Interleaving::Random)) > 0)
        .expect("the sweep finds S2 under this mutant");
    let s = shrink(
        &sc,
        &p,
        &d,
        seed,
        &Interleaving::Random,
        &target,
        "t",
        "--mutant x",
    )
    .unwrap();
    assert!(
        s.after.ops < s.before.ops,
        "{:?} -> {:?}",
        s.before,
        s.after
    );
    assert!(s.toml.contains("--mutant x"));
    reproduces(&s.toml, &p, &target, &d);
    // The fixed policy on the same file breaks nothing.
    let file = Scenario::parse(&s.toml, "f").unwrap();
    let ok = run(
        &file,
        &sc.post_policy(),
        &d,
        file.seed,
        &Interleaving::Script,
    );
    assert!(ok.violations.is_empty(), "{:?}", ok.violations);
}

#[test]
fn a_seed_that_does_not_hit_is_refused() {
    let sc = r1();
    let d = dev(&sc);
    let post = sc.post_policy();
    let target = Target::parse("unnecessary_inode_logs").unwrap();
    let e = shrink(&sc, &post, &d, 0, &Interleaving::Random, &target, "t", "").unwrap_err();
    assert!(e.contains("does not hit"), "{e}");
    assert_eq!(
        sc.pre_policy(),
        Policy::preset("linux-5.11").unwrap().without(Fix::R1)
    );
}

#[test]
fn a_shrink_on_another_device_names_that_device() {
    let sc = r1();
    let d = DiskConfig::resolve("sata-ssd").unwrap();
    let pre = sc.pre_policy();
    let target = Target::parse("unnecessary_inode_logs").unwrap();
    let seed = (0..50)
        .find(|&s| target.value(&run(&sc, &pre, &d, s, &Interleaving::Random)) > 0)
        .expect("a seed hits on sata-ssd");
    let s = models::shrink::shrink_on(
        &sc,
        &pre,
        &d,
        "sata-ssd",
        seed,
        &Interleaving::Random,
        &target,
        "t",
        "",
    )
    .unwrap();
    assert!(s.toml.contains("device = \"sata-ssd\""), "{}", s.toml);
    let file = reproduces(&s.toml, &pre, &target, &d);
    assert_eq!(file.device, "sata-ssd");
}

#[test]
fn a_metric_target_with_a_threshold_hits_only_at_or_above_it() {
    let sc = r1();
    let policy = sc.pre_policy();
    let r = run(&sc, &policy, &dev(&sc), sc.seed, &Interleaving::Script);
    let logs = r.metrics.get("inode_logs").unwrap();
    assert!(logs >= 2, "R1's script logs inodes more than once: {logs}");
    let at = |n: u64| Target::parse(&format!("inode_logs>={n}")).unwrap();
    assert!(at(logs).hit(&r));
    assert!(!at(logs + 1).hit(&r));
    // Shrinking to a threshold the seed does not reach is refused, naming the target.
    let e = shrink(
        &sc,
        &policy,
        &dev(&sc),
        0,
        &Interleaving::Random,
        &at(logs * 100),
        "test",
        "",
    )
    .unwrap_err();
    assert!(e.contains(&format!("inode_logs>={}", logs * 100)), "{e}");
}
