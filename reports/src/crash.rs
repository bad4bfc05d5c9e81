//! `fsyncsim crash`: the recovered state after a power failure at a point of a scenario.

use models::kernel::Policy;
use models::scenario::Scenario;
use models::vfs::recovered::CrashPoint;
use models::vfs::Recovered;
use serde_json::{json, Value};

/// The heading line: where the power failed, under which policy, in which run.
fn heading(sc: &Scenario, p: &Policy, at: &CrashPoint, seed: u64) -> String {
    format!(
        "power failure at {at} under {} ({}, seed {seed})",
        p.name,
        sc.origin_name()
    )
}

/// The recovered state as text, after its heading; Err: the line saying recovery failed.
pub fn text(
    sc: &Scenario,
    p: &Policy,
    at: &CrashPoint,
    seed: u64,
    state: &Result<Recovered, String>,
) -> String {
    let head = heading(sc, p, at, seed);
    match state {
        Ok(r) => format!("{head}: recovery keeps\n{}", r.render()),
        Err(e) => format!("{head}: recovery fails: {e}\n"),
    }
}

/// The recovered state as JSON: {scenario, origin, policy, at, seed, recovered} or, when
/// recovery fails, {…, error}.
pub fn json(
    sc: &Scenario,
    p: &Policy,
    at: &CrashPoint,
    seed: u64,
    state: &Result<Recovered, String>,
) -> Value {
    let mut v = json!({
        "scenario": sc.name,
        "origin": sc.origin,
        "policy": p.name,
        "at": at.to_string(),
        "seed": seed,
    });
    match state {
        Ok(r) => v["recovered"] = serde_json::to_value(r).expect("plain data"),
        Err(e) => v["error"] = json!(e),
    }
    v
}
