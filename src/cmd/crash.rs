//! `crash`: a power failure at a point of a scenario's scripted run, and what recovery keeps.

#[allow(unused_imports)]
use crate::*;

/// Runs the scenario's script under one policy, takes the power failure at `--at` (or its
/// `[expect.crash]` point) and prints the recovered state. Bad input (an unknown task or
/// point, a step the run never reaches) is one line and exit 2, before any output.
pub(crate) fn crash(a: CrashArgs) -> Result<Verdict, Failure> {
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    let at_text = match (&a.at, &sc.expect_crash) {
        (Some(t), _) => t.clone(),
        (None, Some(e)) => e.at.to_string(),
        (None, None) => {
            return Err(Failure(format!(
                "--at: expected 'TASK POINT', 'TASK POINT#N' or 'end' ({} has no [expect.crash] to take it from)",
                sc.origin
            )))
        }
    };
    let at = sc
        .crash_point(&at_text)
        .map_err(|m| Failure(format!("--at: {m}")))?;
    let dev = device_for(&sc, &a.device)?;
    let pol = PolicyArgs {
        policy: a.pol.policy.clone().or_else(|| Some(sc.post_policy())),
        ..a.pol.clone()
    };
    let p = policy_of(&pol);
    let seed = a.seed.unwrap_or(sc.seed);
    let (r, state) = scenario::crash_state(&sc, &p, &dev, seed, &at);
    playable(&r)?;
    let Some(state) = state else {
        return Err(Failure(format!(
            "--at '{at}': the scripted run under {} never reached it: expected a point the scripted run reaches",
            p.name
        )));
    };
    if a.json {
        outln!("{:#}", reports::crash::json(&sc, &p, &at, seed, &state));
    } else {
        out!("{}", reports::crash::text(&sc, &p, &at, seed, &state));
    }
    Ok(if state.is_ok() {
        Verdict::Clean
    } else {
        Verdict::Failed
    })
}
