//! `workload`, `compare` and `validate`: workloads on the models, and the model checked
//! against the source threads.

#[allow(unused_imports)]
use crate::*;

pub(crate) fn workload(a: WorkloadArgs) -> Result<Verdict, Failure> {
    let (spec, dev) = a.load.load()?;
    // The workload file's `current` policy, else linux-5.11.
    let default = spec.current.as_deref().map_or_else(
        || Policy::preset("linux-5.11"),
        |c| models::kernel::parse_policy(c).ok(),
    );
    let pol = PolicyArgs {
        policy: a.pol.policy.clone().or(default),
        ..a.pol.clone()
    };
    let p = policy_of(&pol);
    if let Some(d) = &a.hdr_out {
        out_dir("--hdr-out", d)?;
    }
    let seed = a.seed.unwrap_or(spec.seed);
    let trace = match &a.trace {
        Some(path) => {
            out_file("--trace", path)?;
            let title = format!("{} under {} (seed {seed})", spec.name, p.name);
            Some(trace_sink(
                &spec,
                &title,
                "--trace",
                (path, path),
                &a.trace_filter,
            )?)
        }
        None if a.trace_filter.is_some() => {
            return Err(Failure(
                "--trace-filter: expected --trace FILE with it".into(),
            ))
        }
        None => None,
    };
    let (writer, sink) = trace.unzip();
    let total = spec.warmup + spec.duration;
    // A progress bar over virtual time, on a terminal only.
    let bar = terminal_bar(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        || Some(total / sim::S),
        "{elapsed_precise} [{bar:30}] {pos}/{len} virtual s ETA {eta}",
    );
    let b2 = bar.clone();
    let r = models::workload::fsload::run_with_progress(
        &spec,
        &p,
        &dev,
        seed,
        sink,
        Some(Box::new(move |t| b2.set_position(t / sim::S))),
    )
    .map_err(Failure)?;
    bar.finish_and_clear();
    if let (Some(w), Some(path)) = (&writer, &a.trace) {
        finish_trace(w, r.measured_from + r.measured, "--trace", path)?;
    }
    if let Some(d) = &a.hdr_out {
        let mut staging = reports::output::Staging::default();
        stage_hdr_logs(d, &reports::hdrlog::workload_logs(&r), &mut staging)?;
        staging
            .commit()
            .map_err(|e| Failure(format!("--hdr-out {}: {e}", d.display())))?;
    }
    if a.json {
        outln!("{:#}", reports::workload::json(&r));
    } else {
        outln!(
            "{} ({}) under {} on {}, seed {}:",
            spec.name,
            spec.title,
            p.name,
            dev.name,
            r.seed
        );
        out!(
            "{}",
            reports::workload::run_text(&r, spec.file_size, a.iostat_sysstat9)
        );
    }
    Ok(invariant_verdict(r.violation_line(&spec.name)))
}

/// Exit 1 with each line on stderr when runs broke an invariant (S1–S3: a model bug on a
/// release preset), else clean.
pub(crate) fn invariant_verdict(lines: impl IntoIterator<Item = String>) -> Verdict {
    let mut verdict = Verdict::Clean;
    for l in lines {
        err!("invariant fired: {l}");
        verdict = Verdict::Failed;
    }
    verdict
}

/// The one policy the flags describe (linux-5.11 by default).
pub(crate) fn policy_of(a: &PolicyArgs) -> Policy {
    let mut p = a
        .policy
        .clone()
        .unwrap_or_else(|| Policy::preset("linux-5.11").expect("preset"));
    for &f in &a.fix {
        p = p.with(f);
    }
    for &f in &a.without {
        p = p.without(f);
    }
    for &m in &a.mutant {
        p = p.with_mutant(m);
    }
    p
}

pub(crate) fn validate(a: ValidateArgs) -> Result<Verdict, Failure> {
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let (bar, tick) = sim_time_bar("the workload runs");
    let only = a.only.unwrap_or_else(models::validate::Selection::all);
    let v = models::validate::validate(a.quick, a.ablate, &only, jobs, &tick).map_err(Failure)?;
    bar.finish_and_clear();
    if a.json {
        outln!("{:#}", reports::validate::json(&v));
    } else {
        out!("{}", reports::validate::text(&v));
    }
    Ok(invariant_verdict(v.failures))
}

/// `fsyncsim compare fsperf`: every fsperf test of the btrfs preemptive-flushing thread under both policies, one
/// fsperf table per test.
pub(crate) fn compare_fsperf(
    a: &CompareArgs,
    baseline: &Policy,
    current: &Policy,
) -> Result<Verdict, Failure> {
    if a.vary.is_some() || a.trace.is_some() || a.out.is_some() || a.hdr_out.is_some() {
        return Err(Failure(
            "compare fsperf: --vary, --trace, --out and --hdr-out take one workload (e.g. compare dio4kbs16threads)"
                .into(),
        ));
    }
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let (bar, tick) = sim_time_bar("the fsperf tests");
    let mut tests = Vec::new();
    for name in models::workload::spec::FSPERF {
        let load = LoadArgs {
            workload: name.to_string(),
            ..a.load.clone()
        };
        let (spec, dev) = load.load()?;
        let seed = a.seeds.first(a.seed, spec.seed).map_err(Failure)?;
        let pairs = models::workload::compare::compare(
            &spec,
            &dev,
            baseline,
            current,
            seed,
            a.seeds.count(),
            None,
            jobs,
            &tick,
        )
        .map_err(Failure)?;
        tests.push((spec, pairs));
    }
    bar.finish_and_clear();
    if a.json {
        let v: Vec<serde_json::Value> = tests
            .iter()
            .map(|(s, p)| reports::workload::compare_json(s, baseline, current, p, None))
            .collect();
        outln!("{:#}", serde_json::Value::Array(v));
    } else {
        out!(
            "{}",
            reports::workload::fsperf_suite_text(baseline, current, &tests)
        );
    }
    let broken = tests.iter().find_map(|(s, p)| pairs_violation(&s.name, p));
    Ok(invariant_verdict(broken))
}

/// The first run of `pairs` that broke an invariant, as one line naming its workload, policy,
/// varied value and seed.
fn pairs_violation(name: &str, pairs: &[models::workload::compare::Pair]) -> Option<String> {
    pairs
        .iter()
        .find_map(|p| p.violation_lines(name).into_iter().next())
}

pub(crate) fn compare(a: CompareArgs) -> Result<Verdict, Failure> {
    let _ = ctrlc::set_handler(|| {
        reports::output::remove_staged();
        std::process::exit(130);
    });
    use models::workload::compare as cmp;
    let fsperf = a.load.workload == "fsperf";
    let preset = |n: &str| Policy::preset(n).expect("preset");
    if fsperf {
        let baseline = a.baseline.clone().unwrap_or_else(|| preset("linux-5.13"));
        let current = a.current.clone().unwrap_or_else(|| preset("linux-5.14"));
        return compare_fsperf(&a, &baseline, &current);
    }
    // Bad flags (exit 2) are reported before the resource estimates (exit 3).
    let trace_path = compare_outputs(&a)?;
    let (spec, dev) = a.load.load()?;
    let (baseline, current) = compare_policies(&a, &spec);
    // Every output is staged next to its destination and moved into place once all are
    // written: a failure or a signal (the handler is installed first) leaves none of them.
    let mut staging = reports::output::Staging::default();
    let (staged_trace, staged_results) = stage_compare_outputs(&a, &mut staging, &trace_path)?;
    let seeds = a.seeds.count();
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let seed = a.seeds.first(a.seed, spec.seed).map_err(Failure)?;
    let points = a.vary.as_ref().map_or(1, |(_, v)| v.len() as u64);
    let (bar, tick) = sim_time_bar(&format!("{} runs", points * seeds * 2));
    let pairs = cmp::compare(
        &spec,
        &dev,
        &baseline,
        &current,
        seed,
        seeds,
        a.vary.as_ref(),
        jobs,
        &tick,
    )
    .map_err(Failure)?;
    bar.finish_and_clear();
    let json = reports::workload::compare_json(&spec, &baseline, &current, &pairs, a.vary.as_ref());
    let text = reports::workload::compare_text(&spec, &baseline, &current, &pairs, a.vary.as_ref());
    if let (Some(d), Some(results)) = (&a.out, &staged_results) {
        let title = format!(
            "fsyncsim compare {}: {} vs {}",
            spec.name, baseline.name, current.name
        );
        let out = CompareOut {
            json: &json,
            text: &text,
            title: &title,
        };
        write_compare_out(d, results, &out, &pairs, &mut staging)?;
    }
    if let (Some(path), Some(staged)) = (&trace_path, &staged_trace) {
        write_compare_trace(&a, &spec, &dev, &current, seed, (path, staged))?;
    }
    if let Some(d) = &a.hdr_out {
        let point = |p: &models::workload::compare::Pair| {
            a.vary
                .as_ref()
                .zip(p.value.as_ref())
                .map(|((n, _), v)| format!("{n}={v}"))
        };
        let side = |f: fn(
            &models::workload::compare::Pair,
        ) -> &Vec<models::workload::fsload::WorkloadResult>| {
            pairs
                .iter()
                .flat_map(|p| f(p).iter().map(move |r| (point(p), r)))
                .collect::<Vec<_>>()
        };
        // The same policy on both sides: the logs are told apart by side.
        let (b, c) = if baseline.name == current.name {
            (
                format!("baseline-{}", baseline.name),
                format!("current-{}", current.name),
            )
        } else {
            (baseline.name.clone(), current.name.clone())
        };
        let sides = [
            (b.as_str(), side(|p| &p.baseline)),
            (c.as_str(), side(|p| &p.current)),
        ];
        stage_hdr_logs(d, &reports::hdrlog::compare_logs(&sides), &mut staging)?;
    }
    staging.commit().map_err(|e| {
        let flag = if a.out.is_some() {
            "--out"
        } else if a.trace.is_some() {
            "--trace"
        } else {
            "--hdr-out"
        };
        Failure(format!("{flag}: {e}"))
    })?;
    if a.json {
        outln!("{json:#}");
    } else {
        out!("{text}");
        if let Some(d) = &a.out {
            outln!("wrote {}", d.display());
        }
    }
    Ok(invariant_verdict(pairs_violation(&spec.name, &pairs)))
}

/// The flags, else the workload file's `baseline` / `current`, else linux-5.10 / 5.11.
fn compare_policies(a: &CompareArgs, spec: &models::workload::spec::Spec) -> (Policy, Policy) {
    let preset = |n: &str| Policy::preset(n).expect("preset");
    let from_file = |p: &Option<String>, d: &str| {
        p.as_deref()
            .and_then(|n| models::kernel::parse_policy(n).ok())
            .unwrap_or_else(|| preset(d))
    };
    let baseline = a
        .baseline
        .clone()
        .unwrap_or_else(|| from_file(&spec.baseline, "linux-5.10"));
    let current = a
        .current
        .clone()
        .unwrap_or_else(|| from_file(&spec.current, "linux-5.11"));
    (baseline, current)
}

/// The trace's path (--trace FILE, or --trace alone: trace.pftrace in --out), once the output
/// paths are checked.
fn compare_outputs(a: &CompareArgs) -> Result<Option<PathBuf>, Failure> {
    let trace_path = match (&a.trace, &a.out) {
        (None, _) => None,
        (Some(Some(f)), _) => Some(f.clone()),
        (Some(None), Some(d)) => Some(d.join("trace.pftrace")),
        (Some(None), None) => return Err(Failure(
            "--trace without FILE writes trace.pftrace into --out DIR: give --out or --trace FILE"
                .into(),
        )),
    };
    if a.trace_filter.is_some() && a.trace.is_none() {
        return Err(Failure("--trace-filter: expected --trace with it".into()));
    }
    if let (Some(Some(f)), _) = (&a.trace, &a.out) {
        out_file("--trace", f)?;
    }
    if let Some(d) = &a.out {
        out_dir("--out", d)?;
    }
    if let Some(d) = &a.hdr_out {
        out_dir("--hdr-out", d)?;
    }
    Ok(trace_path)
}

/// The staged paths of the trace and of results.json: (trace, results).
fn stage_compare_outputs(
    a: &CompareArgs,
    staging: &mut reports::output::Staging,
    trace_path: &Option<PathBuf>,
) -> Result<(Option<PathBuf>, Option<PathBuf>), Failure> {
    let staged_trace = match trace_path {
        Some(p) => {
            let flag = if a.out.is_some() && !matches!(a.trace, Some(Some(_))) {
                "--out"
            } else {
                "--trace"
            };
            Some(
                staging
                    .path_for(p)
                    .map_err(|e| Failure(format!("{flag} {}: {e}", p.display())))?,
            )
        }
        None => None,
    };
    let staged_results = match &a.out {
        Some(d) => {
            let r = d.join("results.json");
            Some(
                staging
                    .path_for(&r)
                    .map_err(|e| Failure(format!("--out {}: {e}", r.display())))?,
            )
        }
        None => None,
    };
    Ok((staged_trace, staged_results))
}

/// What --out DIR writes besides the plots: results.json, and the tables and title of
/// index.html.
struct CompareOut<'a> {
    json: &'a serde_json::Value,
    text: &'a str,
    title: &'a str,
}

/// --out DIR: results.json (staged at `results`), the first point's plots and index.html
/// (the tables compare prints and the plots).
fn write_compare_out(
    d: &std::path::Path,
    results: &std::path::Path,
    out: &CompareOut,
    pairs: &[models::workload::compare::Pair],
    staging: &mut reports::output::Staging,
) -> Result<(), Failure> {
    let fail = |e: String| Failure(format!("--out {}: {e}", d.display()));
    reports::output::write_atomic(results, format!("{:#}\n", out.json).as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    let first = &pairs[0];
    let plots = staging.dir_for(d).map_err(|e| fail(e.to_string()))?;
    let mut files = reports::workload::write_plots(&first.baseline[0], &first.current[0], &plots)
        .map_err(fail)?;
    let index = plots.join("index.html");
    let page = reports::html::report(out.title, out.text, &reports::workload::PLOT_FIGURES);
    reports::output::write_atomic(&index, page.as_bytes()).map_err(|e| fail(e.to_string()))?;
    files.push(index);
    for f in files {
        staging.adopt(&f, d).map_err(|e| fail(e.to_string()))?;
    }
    Ok(())
}

/// The trace (Perfetto) of one run of the current policy at the first point, written to
/// `staged` for `path`.
fn write_compare_trace(
    a: &CompareArgs,
    spec: &models::workload::spec::Spec,
    dev: &DiskConfig,
    current: &Policy,
    seed: u64,
    (path, staged): (&PathBuf, &PathBuf),
) -> Result<(), Failure> {
    use models::workload::{compare as cmp, fsload};
    let flag = if matches!(a.trace, Some(Some(_))) {
        "--trace"
    } else {
        "--out"
    };
    let title = format!("{} under {} (seed {seed})", spec.name, current.name);
    let (writer, sink) = trace_sink(spec, &title, flag, (path, staged), &a.trace_filter)?;
    // The same configuration the plots show: the first point.
    let (tspec, tdev) = cmp::first_point(spec, dev, a.vary.as_ref()).map_err(Failure)?;
    let run = fsload::run(&tspec, current, &tdev, seed, Some(sink)).map_err(Failure)?;
    finish_trace(&writer, run.measured_from + run.measured, flag, path)
}

/// The writer of a workload run's Perfetto trace (staged at `staged` for `path`) and the
/// sink that feeds it as the run goes.
pub(crate) type TraceWriter =
    std::rc::Rc<std::cell::RefCell<Option<reports::perfetto::PerfettoTrace>>>;

/// A Perfetto trace of one workload run, written to `staged` (a temporary file next to
/// `path` in the end) as the run goes; `title` names the run.
pub(crate) fn trace_sink(
    spec: &models::workload::spec::Spec,
    title: &str,
    flag: &str,
    (path, staged): (&std::path::Path, &std::path::Path),
    filter: &Option<reports::perfetto::TraceFilter>,
) -> Result<(TraceWriter, models::workload::fsload::TraceSink), Failure> {
    let fail = |e: std::io::Error| Failure(format!("{flag} {}: {e}", path.display()));
    let filter = filter
        .clone()
        .unwrap_or_else(reports::perfetto::TraceFilter::all);
    let mut w = reports::perfetto::PerfettoTrace::create(staged, filter, false).map_err(fail)?;
    w.begin_run(title).map_err(fail)?;
    let writer: TraceWriter = std::rc::Rc::new(std::cell::RefCell::new(Some(w)));
    let w2 = writer.clone();
    let ops = spec.kind.ops();
    let sink: models::workload::fsload::TraceSink = Box::new(move |h, recs, slices| {
        let named: Vec<(sim::TaskId, &str, u64, u64)> = slices
            .iter()
            .map(|&(t, op, s, e)| (t, ops[op], s, e))
            .collect();
        match w2.borrow_mut().as_mut() {
            Some(w) => {
                w.update_names(|n| h.update_names(n));
                w.push(recs, &named)
            }
            None => Ok(()),
        }
    });
    Ok((writer, sink))
}

/// Ends the trace at the run's `end` and moves it into place; a filter that matched
/// nothing is bad input (the file is dropped).
pub(crate) fn finish_trace(
    writer: &TraceWriter,
    end: sim::Nanos,
    flag: &str,
    path: &std::path::Path,
) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure(format!("{flag} {}: {e}", path.display()));
    let mut w = writer.borrow_mut().take().expect("the writer until here");
    w.end_run(end).map_err(fail)?;
    if let Some(m) = w.unmatched() {
        return Err(Failure(format!("--trace-filter: {m}")));
    }
    w.finish().map_err(fail)
}
