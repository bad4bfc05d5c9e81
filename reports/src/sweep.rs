//! Output of `fsyncsim sweep`: per target, hits, hit rate with a 95 % interval, the first
//! seed, the seed with the fewest decisions, and the command that replays it.

use models::btrfs::Policy;
use models::scenario::Scenario;
use models::sweep::{wilson95, SweepResult};
use serde_json::{json, Value};
use std::ops::Range;

/// The `fsyncsim run` flags that select `p` (relative to linux-5.11).
pub fn policy_flags(p: &Policy) -> String {
    let base = Policy::preset("linux-5.11").expect("preset");
    let mut flags = vec!["--policy linux-5.11".to_string()];
    let without: Vec<&str> = base.fixes.difference(&p.fixes).map(|f| f.name()).collect();
    let with: Vec<&str> = p.fixes.difference(&base.fixes).map(|f| f.name()).collect();
    if !without.is_empty() {
        flags.push(format!("--without {}", without.join(",")));
    }
    if !with.is_empty() {
        flags.push(format!("--fix {}", with.join(",")));
    }
    if !p.mutants.is_empty() {
        let m: Vec<&str> = p.mutants.iter().map(|m| m.name()).collect();
        flags.push(format!("--mutant {}", m.join(",")));
    }
    if p.super_committed {
        flags.push("--super-committed".into());
    }
    flags.join(" ")
}

/// The command that replays `seed`.
pub fn replay_command(sc: &Scenario, p: &Policy, seed: u64, strategy: &str) -> String {
    format!(
        "fsyncsim run {} --explore {strategy} --seed {seed} {}",
        sc.origin_name(),
        policy_flags(p)
    )
}

/// The text table of one sweep.
pub fn text(
    sc: &Scenario,
    p: &Policy,
    seeds: &Range<u64>,
    r: &SweepResult,
    strategy: &str,
) -> String {
    let mut out = format!(
        "sweep {} [{}] under {}: {} seeds ({}..{}), {strategy}\n",
        sc.name,
        sc.race.name(),
        p.name,
        r.runs,
        seeds.start,
        seeds.end
    );
    if r.targets.is_empty() {
        out.push_str("  no seed hit any waste metric or invariant\n");
        return out;
    }
    out.push_str(&format!(
        "  {:<28} {:>7} {:>8} {:>17} {:>7} {:>14}\n",
        "target", "hits", "rate", "95% interval", "first", "shortest(dec)"
    ));
    for (name, t) in &r.targets {
        let (lo, hi) = wilson95(t.hits, r.runs);
        let (len, seed) = t.shortest.unwrap_or((0, 0));
        out.push_str(&format!(
            "  {:<28} {:>7} {:>7.2}% {:>7.2}%-{:>6.2}% {:>7} {:>14}\n",
            name,
            t.hits,
            100.0 * t.hits as f64 / r.runs as f64,
            100.0 * lo,
            100.0 * hi,
            t.first_seed.unwrap_or(0),
            format!("{seed} ({len})")
        ));
        out.push_str(&format!(
            "      replay: {}\n",
            replay_command(sc, p, seed, strategy)
        ));
    }
    out
}

/// The JSON of one sweep.
pub fn json(
    sc: &Scenario,
    p: &Policy,
    seeds: &Range<u64>,
    r: &SweepResult,
    strategy: &str,
) -> Value {
    let targets: serde_json::Map<String, Value> = r
        .targets
        .iter()
        .map(|(name, t)| {
            let (lo, hi) = wilson95(t.hits, r.runs);
            let (len, seed) = t.shortest.unwrap_or((0, 0));
            (
                name.clone(),
                json!({
                    "hits": t.hits,
                    "rate": t.hits as f64 / r.runs as f64,
                    "ci95": [lo, hi],
                    "first_seed": t.first_seed,
                    "shortest_seed": seed,
                    "shortest_decisions": len,
                    "replay": replay_command(sc, p, seed, strategy),
                }),
            )
        })
        .collect();
    json!({
        "scenario": sc.name,
        "race": sc.race.name(),
        "policy": p.name,
        "fixes": p.fix_list(),
        "strategy": strategy,
        "seeds": {"start": seeds.start, "end": seeds.end},
        "runs": r.runs,
        "targets": targets,
    })
}
