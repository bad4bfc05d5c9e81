//! `run`, `replay`, `shrink` and `check`: the race scenarios.

#[allow(unused_imports)]
use crate::*;

pub(crate) fn shrink(a: ShrinkArgs) -> Result<(), Failure> {
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    if let Some(path) = &a.out {
        out_file("--out", path)?;
    }
    let dev = device_for(&sc, &a.device)?;
    let p = policies_from(&sc, &a.pol, false).remove(0);
    // As `sh` reads it back: each argument shell-quoted.
    let command = std::iter::once("fsyncsim".to_string())
        .chain(
            std::env::args_os()
                .skip(1)
                .map(|a| models::units::shell_quote(&a.to_string_lossy()).into_owned()),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let s = models::shrink::shrink_on(
        &sc,
        &p,
        &dev,
        a.device.as_deref().unwrap_or(&sc.device),
        a.seed,
        &a.strat.interleaving(),
        &a.target,
        &command,
        &reports::sweep::policy_flags(&p),
    )
    .map_err(Failure)?;
    if let (true, Some(path)) = (a.json, &a.out) {
        reports::output::write_atomic(path, s.toml.as_bytes())
            .map_err(|e| Failure(format!("--out {}: {e}", path.display())))?;
    }
    if a.json {
        outln!("{:#}", reports::race::shrink_json(&s, &a.target.name()));
        return Ok(());
    }
    match &a.out {
        Some(path) => {
            reports::output::write_atomic(path, s.toml.as_bytes())
                .map_err(|e| Failure(format!("--out {}: {e}", path.display())))?;
            out!("{}", reports::race::shrink_summary(&s, &a.target.name()));
            outln!("wrote {}", path.display());
        }
        None => {
            err!("{}", reports::race::shrink_summary(&s, &a.target.name()));
            out!("{}", s.toml);
        }
    }
    Ok(())
}

pub(crate) fn replay(a: ReplayArgs) -> Result<Verdict, Failure> {
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    let format = trace_format(&a.trace, a.trace_format, &a.trace_filter)?;
    let dev = device_for(&sc, &a.device)?;
    let pol = PolicyArgs {
        policy: a
            .pol
            .policy
            .clone()
            .or_else(|| Policy::preset("linux-5.11")),
        ..a.pol.clone()
    };
    let p = policies_from(&sc, &pol, false).pop().expect("one policy");
    let r = scenario::run(&sc, &p, &dev, a.seed, &a.strat.interleaving());
    playable(&r)?;
    if let (Some(path), Some(format)) = (&a.trace, format) {
        let title = format!("{} under {} (seed {})", sc.name, r.policy.name, a.seed);
        write_trace(path, format, &a.trace_filter, &[(title, &r)])?;
    }
    if a.json {
        outln!("{:#}", reports::race::replay_json(&sc, &r, a.seed));
    } else {
        out!("{}", reports::race::timeline(&sc, &r, a.seed));
    }
    Ok(verdict([&r]))
}

pub(crate) fn run_races(a: RunArgs) -> Result<Verdict, Failure> {
    let specs: Vec<String> = a.scenario.iter().cloned().collect();
    let scenarios = load_scenarios(&specs)?;
    let format = trace_format(&a.trace, a.trace_format, &a.trace_filter)?;
    let interleaving = if !a.explore {
        Interleaving::Script
    } else {
        a.strat.interleaving()
    };
    let mut items: Vec<(Scenario, Vec<RunResult>)> = Vec::new();
    for sc in scenarios {
        let dev = device_for(&sc, &a.device)?;
        let seed = a.seed.unwrap_or(sc.seed);
        let runs = policies_from(&sc, &a.pol, a.super_committed)
            .iter()
            .map(|p| scenario::run(&sc, p, &dev, seed, &interleaving))
            .collect();
        items.push((sc, runs));
    }
    // A scenario that cannot play (a stuck script, an operation on a missing path) is bad
    // input, not a result.
    for (_, runs) in &items {
        for r in runs {
            playable(r)?;
        }
    }
    if let (Some(path), Some(format)) = (&a.trace, format) {
        let runs: Vec<(String, &RunResult)> = items
            .iter()
            .flat_map(|(sc, runs)| {
                runs.iter()
                    .map(move |r| (format!("{} under {}", sc.name, r.policy.name), r))
            })
            .collect();
        write_trace(path, format, &a.trace_filter, &runs)?;
    }
    if a.json {
        let v: Vec<serde_json::Value> = items
            .iter()
            .map(|(sc, runs)| reports::race::json(sc, runs))
            .collect();
        if v.len() == 1 {
            outln!("{:#}", v[0]);
        } else {
            outln!("{:#}", serde_json::Value::Array(v));
        }
    } else {
        for (sc, runs) in &items {
            outln!("{}", reports::race::side_by_side(sc, runs));
        }
        if items.len() > 1 && items.iter().all(|(_, r)| r.len() == 2) {
            out!("{}", reports::race::summary(&items));
        }
    }
    Ok(verdict(items.iter().flat_map(|(_, runs)| runs)))
}

/// The format `--trace FILE` is written in (None without --trace), once the path and the
/// filter are checked: `--trace-format`, else text for a `.txt` FILE, else Perfetto.
fn trace_format(
    path: &Option<PathBuf>,
    format: Option<TraceFormat>,
    filter: &Option<reports::perfetto::TraceFilter>,
) -> Result<Option<TraceFormat>, Failure> {
    let Some(path) = path else {
        return match (format, filter) {
            (None, None) => Ok(None),
            (Some(_), _) => Err(Failure(
                "--trace-format: expected --trace FILE with it".into(),
            )),
            (_, Some(_)) => Err(Failure(
                "--trace-filter: expected --trace FILE with it".into(),
            )),
        };
    };
    out_file("--trace", path)?;
    let text = path.extension().is_some_and(|e| e == "txt");
    let format = format.unwrap_or(if text {
        TraceFormat::Text
    } else {
        TraceFormat::Perfetto
    });
    match filter {
        Some(_) if format == TraceFormat::Text => Err(Failure(
            "--trace-filter: filters a Perfetto trace: expected no --trace-format text and a FILE not ending in .txt".into(),
        )),
        Some(f) if !f.ops.is_empty() => Err(Failure(
            "--trace-filter: op= keeps a workload's operations (workload, compare): expected task=, from= or to= for a scenario run".into(),
        )),
        _ => Ok(Some(format)),
    }
}

/// Writes the runs' trace to `path`: the text timeline (a `# TITLE` line before each run's
/// events) or a Perfetto trace with one process per run.
fn write_trace(
    path: &std::path::Path,
    format: TraceFormat,
    filter: &Option<reports::perfetto::TraceFilter>,
    runs: &[(String, &RunResult)],
) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure(format!("--trace {}: {e}", path.display()));
    if format == TraceFormat::Text {
        let mut text = String::new();
        for (title, r) in runs {
            text.push_str(&format!("# {title}\n"));
            for l in &r.trace {
                text.push_str(l);
                text.push('\n');
            }
        }
        return reports::output::write_atomic(path, text.as_bytes()).map_err(fail);
    }
    let filter = filter
        .clone()
        .unwrap_or_else(reports::perfetto::TraceFilter::all);
    let mut w = reports::perfetto::PerfettoTrace::create(path, filter, true).map_err(fail)?;
    for (title, r) in runs {
        w.begin_run(title).map_err(fail)?;
        w.update_names(|n| *n = r.names.clone());
        w.push(&r.records, &[]).map_err(fail)?;
        w.end_run(r.end).map_err(fail)?;
    }
    if let Some(m) = w.unmatched() {
        return Err(Failure(format!("--trace-filter: {m}")));
    }
    w.finish().map_err(fail)
}

/// Runs each scenario pre- and post-fix and compares with its expectations: Failed (exit 1)
/// on any mismatch. A scenario that cannot play (a stuck script) is bad input, as in `run`:
/// every scenario runs before anything is printed.
pub(crate) fn check(specs: &[String], allow_empty: bool, json: bool) -> Result<Verdict, Failure> {
    let mut results = Vec::new();
    for sc in load_scenarios(specs)? {
        let dev = device_for(&sc, &None)?;
        let mut problems = Vec::new();
        if sc.expect_pre.is_empty()
            && sc.expect_post.is_empty()
            && sc.expect_crash.is_none()
            && sc.expect_crash_more.is_empty()
            && !allow_empty
        {
            problems.push(format!(
                "{}: no expectations ([expect.*] is empty): nothing to check (--allow-empty accepts it)",
                sc.origin
            ));
        }
        let [before, after] = sc.labels();
        for (label, policy, expect) in [
            (before, sc.pre_policy(), &sc.expect_pre),
            (after, sc.post_policy(), &sc.expect_post),
        ] {
            let r = scenario::run(&sc, &policy, &dev, sc.seed, &Interleaving::Script);
            playable(&r)?;
            for m in scenario::compare(expect, &r) {
                problems.push(format!("{label} ({}): {m}", policy.name));
            }
            for m in crash_problems(&sc, &policy, &dev)? {
                problems.push(format!("{label} ({}): {m}", policy.name));
            }
        }
        results.push((sc, problems));
    }
    let mut verdict = Verdict::Clean;
    if results.iter().any(|(_, p)| !p.is_empty()) {
        verdict = Verdict::Failed;
    }
    if json {
        outln!("{:#}", reports::race::check_json(&results));
        return Ok(verdict);
    }
    for (sc, problems) in results {
        if problems.is_empty() {
            outln!("PASS {} [{}]", sc.name, sc.race);
        } else {
            verdict = Verdict::Failed;
            outln!("FAIL {} [{}]", sc.name, sc.race);
            for p in problems {
                outln!("  {p}");
            }
        }
    }
    Ok(verdict)
}

/// What differs from the scenario's `[expect.crash]` (and `[expect.crash-N]`) after a
/// power failure at each table's point in the scripted run under `policy` (none without
/// the tables). A point the run never reaches is bad input, as a stuck script is.
fn crash_problems(
    sc: &Scenario,
    policy: &Policy,
    dev: &DiskConfig,
) -> Result<Vec<String>, Failure> {
    let mut out = Vec::new();
    for (table, e) in sc.crash_expectations() {
        out.extend(crash_table_problems(sc, policy, dev, &table, e)?);
    }
    Ok(out)
}

/// `crash_problems` of one table (`crash`, `crash-N`).
fn crash_table_problems(
    sc: &Scenario,
    policy: &Policy,
    dev: &DiskConfig,
    table: &str,
    e: &models::vfs::recovered::CrashExpect,
) -> Result<Vec<String>, Failure> {
    let (r, state) = scenario::crash_state(sc, policy, dev, sc.seed, &e.at);
    playable(&r)?;
    let Some(state) = state else {
        return Err(Failure(format!(
            "{}: [expect.{table}] at '{}': the scripted run under {} never reached it",
            sc.origin, e.at, policy.name
        )));
    };
    Ok(match state {
        Ok(got) => e
            .compare(&got)
            .into_iter()
            .map(|m| format!("crash at {}: {m}", e.at))
            .collect(),
        Err(m) => vec![format!("crash at {}: recovery fails: {m}", e.at)],
    })
}
