//! `fsyncsim crash`: the recovered state after a power failure at a point of a scenario.

use models::kernel::Policy;
use models::scenario::Scenario;
use models::vfs::recovered::CrashPoint;
use models::vfs::Recovered;
use serde_json::Value;

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
    /// `crash --json`'s document: the recovered state, or why recovery fails.
    #[derive(serde::Serialize)]
    struct CrashJson<'a> {
        scenario: &'a str,
        origin: &'a str,
        policy: &'a str,
        at: String,
        seed: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        recovered: Option<&'a Recovered>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
    }
    let doc = CrashJson {
        scenario: &sc.name,
        origin: &sc.origin,
        policy: &p.name,
        at: at.to_string(),
        seed,
        recovered: state.as_ref().ok(),
        error: state.as_ref().err().map(String::as_str),
    };
    serde_json::to_value(doc).expect("plain data serialises")
}
