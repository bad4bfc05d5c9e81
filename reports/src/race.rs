//! Output of `fsyncsim run` and `fsyncsim check` for race scenarios: side-by-side tables
//! and the JSON schema `{scenario, race, runs: [{policy, fixes, metrics, invariant_violations,
//! trace_hash}]}`.

use models::scenario::{RunResult, Scenario};
use models::vfs::Metrics;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Metrics as a JSON object: the scalars, each reported family as an object, the waits and
/// the prefixed rows.
pub fn metrics_json(m: &Metrics) -> Value {
    Value::Object(metrics_object(m, true))
}

/// The metrics object (keys the model names, so a map): the scalars, each reported family,
/// the waits when `waits`, the prefixed rows.
pub fn metrics_object(m: &Metrics, waits: bool) -> Map<String, Value> {
    let mut o = Map::new();
    for &(k, v) in m.scalars() {
        o.insert(k.to_string(), json!(v));
    }
    for f in &m.families {
        if let Some(name) = f.report {
            o.insert(name.into(), json!(f.counts));
        }
    }
    if waits {
        for (k, v) in m.wait_rows() {
            o.insert(k, json!(v));
        }
    }
    for (k, v) in m.prefixed_rows() {
        o.insert(k.clone(), json!(v));
    }
    o
}

/// One run of `run --json` / `replay --json`.
#[derive(Serialize)]
struct RunJson<'a> {
    policy: &'a str,
    fixes: Vec<String>,
    mutants: Vec<&'static str>,
    metrics: Value,
    latency_ns: BTreeMap<&'a str, Value>,
    invariant_violations: Vec<ViolationJson<'a>>,
    trace_hash: String,
    end_ns: sim::Nanos,
    decisions: &'a [u32],
}

/// An invariant violation with its timeline.
#[derive(Serialize)]
struct ViolationJson<'a> {
    invariant: &'a str,
    at_ns: sim::Nanos,
    message: &'a str,
    timeline: &'a [String],
}

/// A scenario with its runs.
#[derive(Serialize)]
struct ScenarioJson<'a> {
    scenario: &'a str,
    race: &'a str,
    title: &'a str,
    patch: &'a str,
    runs: Vec<RunJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
}

fn run_doc(r: &RunResult) -> RunJson<'_> {
    RunJson {
        policy: &r.policy.name,
        fixes: r.policy.fix_list(),
        mutants: r.policy.btrfs.mutants.iter().map(|m| m.name()).collect(),
        metrics: metrics_json(&r.metrics),
        latency_ns: r
            .latency
            .by_op
            .iter()
            .map(|(op, h)| (op.as_str(), crate::latency::stats_json(h)))
            .collect(),
        invariant_violations: r
            .violations
            .iter()
            .map(|v| ViolationJson {
                invariant: &v.invariant,
                at_ns: v.at,
                message: &v.message,
                timeline: &v.timeline,
            })
            .collect(),
        trace_hash: format!("{:#018x}", r.trace_hash),
        end_ns: r.end,
        decisions: &r.decisions,
    }
}

fn scenario_doc<'a>(sc: &'a Scenario, runs: &'a [RunResult], seed: Option<u64>) -> Value {
    let doc = ScenarioJson {
        scenario: &sc.name,
        race: &sc.race,
        title: &sc.title,
        patch: sc.patch_title(),
        runs: runs.iter().map(run_doc).collect(),
        seed,
    };
    serde_json::to_value(doc).expect("plain data serialises")
}

/// One run as JSON.
pub fn run_json(r: &RunResult) -> Value {
    serde_json::to_value(run_doc(r)).expect("plain data serialises")
}

/// A scenario's runs as JSON.
pub fn json(sc: &Scenario, runs: &[RunResult]) -> Value {
    scenario_doc(sc, runs, None)
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

/// Runs side by side: metrics that differ first, then the others that are non-zero, then
/// invariant violations and per-operation latency (ms).
pub fn side_by_side(sc: &Scenario, runs: &[RunResult]) -> String {
    let mut out = format!("{} [{}] {}\n  {}\n", sc.name, sc.race, sc.title, sc.summary);
    let rows: Vec<Vec<(String, u64)>> = runs.iter().map(|r| r.metrics.rows()).collect();
    let width = 44;
    let col = runs
        .iter()
        .map(|r| r.policy.name.len().max(12))
        .collect::<Vec<_>>();
    out.push_str(&format!("  {:<width$}", "metric"));
    for (r, w) in runs.iter().zip(&col) {
        out.push_str(&format!(" {:>w$}", r.policy.name, w = *w));
    }
    out.push('\n');
    let names: Vec<String> = rows
        .first()
        .map(|r| r.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let mut all_names = names.clone();
    for r in rows.iter().skip(1) {
        for (k, _) in r {
            if !all_names.contains(k) {
                all_names.push(k.clone());
            }
        }
    }
    let value = |i: usize, k: &str| runs[i].metrics.get(k).unwrap_or(0);
    let differs = |k: &str| (1..runs.len()).any(|i| value(i, k) != value(0, k));
    let mut ordered: Vec<&String> = all_names.iter().filter(|k| differs(k)).collect();
    ordered.extend(
        all_names
            .iter()
            .filter(|k| !differs(k) && (0..runs.len()).any(|i| value(i, k) != 0)),
    );
    for k in ordered {
        let mark = if differs(k) { "*" } else { " " };
        out.push_str(&format!("{mark} {k:<width$}"));
        for (i, w) in col.iter().enumerate() {
            out.push_str(&format!(" {:>w$}", value(i, k), w = *w));
        }
        out.push('\n');
    }
    for r in runs {
        for v in &r.violations {
            out.push_str(&format!(
                "  ! {} violated under {} at t={}ns: {}\n",
                v.invariant, r.policy.name, v.at, v.message
            ));
        }
        for s in &r.skipped_steps {
            out.push_str(&format!("  - under {}: {s}\n", r.policy.name));
        }
    }
    let mut ops: Vec<&String> = runs.iter().flat_map(|r| r.latency.by_op.keys()).collect();
    ops.sort();
    ops.dedup();
    if !ops.is_empty() {
        out.push_str(&format!("  {:<width$}", "latency (ms): op  mean / max"));
        for w in &col {
            out.push_str(&format!(" {:>w$}", "", w = *w));
        }
        out.push('\n');
        for op in ops {
            out.push_str(&format!("    {op:<w2$}", w2 = width - 2));
            for (r, w) in runs.iter().zip(&col) {
                let cell = r.latency.by_op.get(op).map_or("-".to_string(), |h| {
                    format!("{} / {}", ms(h.mean()), ms(h.max() as f64))
                });
                out.push_str(&format!(" {:>w$}", cell, w = *w));
            }
            out.push('\n');
        }
    }
    if let Some(note) = unmoved_latency_note(runs) {
        out.push_str(&note);
    }
    out.push_str(&format!(
        "  trace hash: {}\n",
        runs.iter()
            .map(|r| format!("{:#018x}", r.trace_hash))
            .collect::<Vec<_>>()
            .join("  ")
    ));
    out
}

/// Where two runs' counters differ but no operation's latency does: which waiting time
/// (the `*_ns` counters) the change moved between, or that it moved none.
fn unmoved_latency_note(runs: &[RunResult]) -> Option<String> {
    let [a, b] = runs else { return None };
    let same = |x: &hdrhistogram::Histogram<u64>, y: &hdrhistogram::Histogram<u64>| {
        x.len() == y.len() && x.mean() == y.mean() && x.max() == y.max()
    };
    let lat_equal = a.latency.by_op.len() == b.latency.by_op.len()
        && a.latency
            .by_op
            .iter()
            .all(|(op, h)| b.latency.by_op.get(op).is_some_and(|g| same(h, g)));
    let changed: Vec<String> = a
        .metrics
        .rows()
        .into_iter()
        .map(|(k, _)| k)
        .chain(b.metrics.rows().into_iter().map(|(k, _)| k))
        .filter(|k| a.metrics.get(k).unwrap_or(0) != b.metrics.get(k).unwrap_or(0))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !lat_equal || changed.is_empty() || a.latency.by_op.is_empty() {
        return None;
    }
    let mut t = String::from(
        "  no latency moved: every operation took the same time under both policies;\n",
    );
    let waits: Vec<&String> = changed.iter().filter(|k| k.ends_with("_ns")).collect();
    if waits.is_empty() {
        t.push_str(
            "    the * counters changed, but no waiting time (no *_ns counter) moved with them\n",
        );
        return Some(t);
    }
    t.push_str("    the change moved waiting time between (ms):\n");
    let w = waits.iter().map(|k| k.len()).max().unwrap_or(0);
    for k in waits {
        let (x, y) = (a.metrics.get(k).unwrap_or(0), b.metrics.get(k).unwrap_or(0));
        t.push_str(&format!(
            "    {k:<w$}  {} -> {}  {}\n",
            ms(x as f64),
            ms(y as f64),
            crate::vocab::describe_metric(k).unwrap_or("")
        ));
    }
    Some(t)
}

/// The one-line-per-scenario summary of a `run` of all built-in races.
pub fn summary(items: &[(Scenario, Vec<RunResult>)]) -> String {
    let mut out = format!(
        "{:<42} {:<4} {:<32} {:>6} {:>6}\n",
        "scenario", "race", "waste metric", "pre", "post"
    );
    for (sc, runs) in items {
        let key = sc.key_metric();
        let v = |i: usize| runs.get(i).and_then(|r| r.metrics.get(&key)).unwrap_or(0);
        out.push_str(&format!(
            "{:<42} {:<4} {:<32} {:>6} {:>6}\n",
            sc.name,
            sc.race,
            key,
            v(0),
            v(1)
        ));
    }
    out
}

/// The timeline of one run: per task, the named points it reached, the locks it waited for
/// and the I/O it issued, with virtual timestamps; then metrics and violations.
pub fn timeline(sc: &Scenario, r: &RunResult, seed: u64) -> String {
    let mut out = format!(
        "replay {} [{}] under {}, seed {seed}: {} decisions, trace hash {:#018x}, end {:.3} ms\n",
        sc.name,
        sc.race,
        r.policy.name,
        r.decisions.len(),
        r.trace_hash,
        r.end as f64 / 1e6
    );
    // Trace lines are "TIME TASK WHAT"; keep the filesystem's tasks and their interesting events.
    let interesting = |what: &str| {
        what.starts_with("point ")
            || what.starts_with("wait ")
            || what.starts_with("park ")
            || what.starts_with("acquire ")
            || what.starts_with("mark ")
    };
    let mut tasks: Vec<String> = Vec::new();
    let mut by_task: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in &r.trace {
        let mut parts = line.split_whitespace();
        let (Some(time), Some(task)) = (parts.next(), parts.next()) else {
            continue;
        };
        let what: Vec<&str> = parts.collect();
        let what = what.join(" ");
        if task.contains(".unit") || task == "crash-points" || !interesting(&what) {
            continue;
        }
        if !by_task.contains_key(task) {
            tasks.push(task.to_string());
        }
        by_task
            .entry(task.to_string())
            .or_default()
            .push(format!("{time:>12}  {what}"));
    }
    for t in tasks {
        out.push_str(&format!("  task {t}\n"));
        for l in &by_task[&t] {
            out.push_str(&format!("    {l}\n"));
        }
    }
    for (k, v) in r.metrics.rows() {
        if v != 0 {
            out.push_str(&format!("  {k} = {v}\n"));
        }
    }
    for v in &r.violations {
        out.push_str(&format!(
            "  ! {} violated at t={}ns: {}\n",
            v.invariant, v.at, v.message
        ));
    }
    out
}

/// What a shrink achieved, one line per size measure.
pub fn shrink_summary(s: &models::shrink::Shrunk, target: &str) -> String {
    let row = |what: &str, a: usize, b: usize| {
        let pct = if a == 0 {
            0.0
        } else {
            100.0 * (a as f64 - b as f64) / a as f64
        };
        format!("  {what:<10} {a:>6} -> {b:<6} ({pct:.0}% smaller)\n")
    };
    let mut t = format!(
        "shrunk {}: {target} = {} in the explored run, {} in the scripted scenario ({} candidate runs)\n",
        s.scenario.name, s.value.0, s.value.1, s.runs
    );
    t.push_str(&row("tasks", s.before.tasks, s.after.tasks));
    t.push_str(&row("operations", s.before.ops, s.after.ops));
    t.push_str(&row("decisions", s.before.decisions, s.after.decisions));
    t.push_str(&format!(
        "  (the explored run released {} named points; the script keeps {} of them)\n",
        s.full_script, s.after.decisions
    ));
    t
}

/// `fsyncsim replay --json`: the scenario's one run (as `run --json` prints it) and the seed.
pub fn replay_json(sc: &Scenario, r: &RunResult, seed: u64) -> Value {
    scenario_doc(sc, std::slice::from_ref(r), Some(seed))
}

/// A scenario's size as `shrink --json` prints it.
#[derive(Serialize)]
struct SizeJson {
    tasks: usize,
    operations: usize,
    decisions: usize,
}

impl From<&models::shrink::Size> for SizeJson {
    fn from(z: &models::shrink::Size) -> Self {
        SizeJson {
            tasks: z.tasks,
            operations: z.ops,
            decisions: z.decisions,
        }
    }
}

/// `shrink --json`'s document.
#[derive(Serialize)]
struct ShrinkJson<'a> {
    scenario: &'a str,
    target: &'a str,
    explored_value: u64,
    scripted_value: u64,
    candidate_runs: u64,
    before: SizeJson,
    after: SizeJson,
    full_script: usize,
    toml: &'a str,
}

/// `fsyncsim shrink --json`: the sizes before and after, the target's values and the
/// scenario file.
pub fn shrink_json(s: &models::shrink::Shrunk, target: &str) -> Value {
    let doc = ShrinkJson {
        scenario: &s.scenario.name,
        target,
        explored_value: s.value.0,
        scripted_value: s.value.1,
        candidate_runs: s.runs,
        before: (&s.before).into(),
        after: (&s.after).into(),
        full_script: s.full_script,
        toml: &s.toml,
    };
    serde_json::to_value(doc).expect("plain data serialises")
}

/// One scenario's verdict in `check --json`.
#[derive(Serialize)]
struct CheckJson<'a> {
    scenario: &'a str,
    race: &'a str,
    origin: &'a str,
    pass: bool,
    problems: &'a [String],
}

/// `fsyncsim check --json`: per scenario, whether it passed and the mismatches.
pub fn check_json(results: &[(Scenario, Vec<String>)]) -> Value {
    let docs: Vec<CheckJson> = results
        .iter()
        .map(|(sc, problems)| CheckJson {
            scenario: &sc.name,
            race: &sc.race,
            origin: &sc.origin,
            pass: problems.is_empty(),
            problems,
        })
        .collect();
    serde_json::to_value(docs).expect("plain data serialises")
}
