//! `sweep` and `merge`: seed sweeps with checkpoints, shards and their identity.

#[allow(unused_imports)]
use crate::*;

pub(crate) fn sweep(a: SweepArgs) -> Result<Verdict, Failure> {
    if a.strat.strategy == "exhaustive" {
        return exhaustive(a);
    }
    refuse_exhaustive_flags(&a)?;
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    let dev = device_for(&sc, &a.device)?;
    let jobs = a.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let pols = policies_from(&sc, &a.pol, false);
    let shard = a.shard.unwrap_or(models::sweep::Shard::ALL);
    let strategy = a.strat.interleaving();
    let owned = shard_runs(a.seeds.end - a.seeds.start, shard);
    let bar = progress_bar(owned, pols.len());
    // Where checkpoints go, and what an earlier interrupted run left there.
    let dir = a.out.clone().or_else(|| a.resume.clone());
    let flags = a.strat.flags();
    // What determines each policy's result (reports::sweep::Identity): in every report, and
    // in the checkpoint's arguments, so that --resume with other inputs is refused. Extra
    // targets change what is counted, so they are part of it.
    let id_flags = sweep_id_flags(&flags, &a.target);
    let ids = identities(&sc, &dev, &pols, &id_flags, &a.seeds);
    let meta = sweep_meta(&a, &sc.name, &flags, &pols, &ids);
    let mut progress: Vec<(u64, models::sweep::SweepResult)> =
        vec![(0, models::sweep::SweepResult::default()); pols.len()];
    if let Some(d) = &a.resume {
        resume(d, &meta, &a.seeds, shard, &mut progress)?;
        // Checkpoints are written into it: a directory under /dev or /proc is refused.
        out_dir("--resume", d)?;
    } else if let Some(d) = &a.out {
        out_dir("--out", d)?;
    }
    let stop = stop_on_signal();
    let chunked = Chunked {
        a: &a,
        sc: &sc,
        dev: &dev,
        pols: &pols,
        shard,
        jobs,
        strategy: &strategy,
        flags: &flags,
        dir: &dir,
        meta: &meta,
        stop: &stop,
        bar: &bar,
        chunks_run: std::cell::Cell::new(0),
    };
    let mut finished = true;
    let mut out = Vec::new();
    for (i, p) in pols.iter().enumerate() {
        let (mut done, mut acc) = std::mem::take(&mut progress[i]);
        if finished {
            (done, finished) = chunked.run(i, &mut progress, done, &mut acc)?;
        }
        progress[i] = (done, acc.clone());
        bar.set_message(format!("{} hit targets", acc.targets.len()));
        out.push(chunked.report(p, acc, ids[i].clone(), finished));
    }
    bar.finish_and_clear();
    refuse_unplayable(&out, &pols, &sc, &dev, &strategy)?;
    if let Some(d) = &dir {
        write_sweep_json(d, &out, &a)?;
    }
    print_sweeps(&out, a.json);
    Ok(verdict(&out))
}

/// What each policy's chunked sweep shares: its inputs, where checkpoints go and what they
/// record, the stop flag, the progress bar, and the chunks run so far (--stop-after-chunks).
struct Chunked<'a> {
    a: &'a SweepArgs,
    sc: &'a Scenario,
    dev: &'a DiskConfig,
    pols: &'a [Policy],
    shard: models::sweep::Shard,
    jobs: usize,
    strategy: &'a Interleaving,
    flags: &'a str,
    dir: &'a Option<PathBuf>,
    meta: &'a serde_json::Value,
    stop: &'a std::sync::atomic::AtomicBool,
    bar: &'a indicatif::ProgressBar,
    chunks_run: std::cell::Cell<u64>,
}

impl Chunked<'_> {
    /// Policy `p`'s report of `acc` (partial unless `finished`).
    fn report(
        &self,
        p: &Policy,
        acc: models::sweep::SweepResult,
        id: reports::sweep::Identity,
        finished: bool,
    ) -> reports::sweep::SweepReport {
        let mut report = reports::sweep::SweepReport::new(
            self.sc,
            p,
            self.flags,
            self.a.seeds.clone(),
            self.shard,
            acc,
            id,
        );
        report.partial = !finished;
        add_device_flag(&mut report, self.a);
        report
    }

    /// Sweeps policy `i` on from `done` chunks into `acc`, writing the checkpoint (all of
    /// `progress`) after each chunk: (chunks done, whether every chunk ran).
    fn run(
        &self,
        i: usize,
        progress: &mut [(u64, models::sweep::SweepResult)],
        done: u64,
        acc: &mut models::sweep::SweepResult,
    ) -> Result<(u64, bool), Failure> {
        let (a, bar) = (self.a, self.bar);
        let mut checkpoint = |d: u64, r: &models::sweep::SweepResult| -> Result<(), String> {
            progress[i] = (d, r.clone());
            self.chunks_run.set(self.chunks_run.get() + 1);
            if a.stop_after_chunks
                .is_some_and(|n| self.chunks_run.get() >= n)
            {
                self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            match self.dir {
                Some(d) => write_state(
                    d, self.meta, progress, self.sc, self.dev, self.pols, a, self.shard, self.flags,
                ),
                None => Ok(()),
            }
        };
        models::sweep::sweep_chunked(
            self.sc,
            &self.pols[i],
            self.dev,
            a.seeds.clone(),
            self.shard,
            self.jobs,
            self.strategy,
            &a.target,
            &|n| bar.inc(n),
            self.stop,
            done,
            acc,
            &mut checkpoint,
        )
        .map_err(Failure)
    }
}

/// Each policy's sweep identity (what determines its result).
fn identities(
    sc: &Scenario,
    dev: &DiskConfig,
    pols: &[Policy],
    id_flags: &str,
    seeds: &std::ops::Range<u64>,
) -> Vec<reports::sweep::Identity> {
    pols.iter()
        .map(|p| reports::sweep::Identity::new(sc, dev, p, id_flags, seeds, COMMIT))
        .collect()
}

/// --seed and --decisions belong to exhaustive sweeps: refused for the others.
fn refuse_exhaustive_flags(a: &SweepArgs) -> Result<(), Failure> {
    if a.seed.is_some() {
        return Err(Failure(
            "--seed: only with --strategy exhaustive (a sweep of another strategy runs --seeds A..B)"
                .into(),
        ));
    }
    if !a.strat.decisions.is_empty() {
        return Err(Failure(
            "--decisions: only with --strategy exhaustive, in run or replay".into(),
        ));
    }
    Ok(())
}

/// How many of `len` consecutive seeds shard `shard` runs.
fn shard_runs(len: u64, shard: models::sweep::Shard) -> u64 {
    len / shard.n + u64::from(shard.k - 1 < len % shard.n)
}

/// A progress bar of `owned` seeds under each of `policies` on a terminal only (the count
/// is only made there); nothing else reads the clock.
fn progress_bar(owned: u64, policies: usize) -> indicatif::ProgressBar {
    terminal_bar(
        std::io::IsTerminal::is_terminal(&std::io::stdout()),
        || Some(owned * policies as u64),
        "{elapsed_precise} [{bar:30}] {pos}/{len} seeds {rate} ETA {eta} {msg}",
    )
}

/// The sweep's arguments as its checkpoint records them (--resume must match them).
fn sweep_meta(
    a: &SweepArgs,
    scenario: &str,
    flags: &str,
    pols: &[Policy],
    ids: &[reports::sweep::Identity],
) -> serde_json::Value {
    /// A seed range as the checkpoint records it.
    #[derive(serde::Serialize)]
    struct Seeds {
        start: u64,
        end: u64,
    }
    /// The checkpoint's `meta`: what --resume must find unchanged.
    #[derive(serde::Serialize)]
    struct Meta<'a> {
        version: &'a str,
        scenario: &'a str,
        seeds: Seeds,
        shard: Option<String>,
        strategy: &'a str,
        policies: Vec<&'a str>,
        identity: Vec<serde_json::Value>,
    }
    let meta = Meta {
        version: reports::sweep::VERSION,
        scenario,
        seeds: Seeds {
            start: a.seeds.start,
            end: a.seeds.end,
        },
        shard: a.shard.map(|s| format!("{}/{}", s.k, s.n)),
        strategy: flags,
        policies: pols.iter().map(|p| p.name.as_str()).collect(),
        identity: ids.iter().map(|id| id.json()).collect(),
    };
    serde_json::to_value(meta).expect("plain data serialises")
}

/// --resume: reads the checkpoint in `d` into `progress`, refusing one of a sweep with
/// other arguments or whose counts are not those of its finished chunks.
fn resume(
    d: &std::path::Path,
    meta: &serde_json::Value,
    seeds: &std::ops::Range<u64>,
    shard: models::sweep::Shard,
    progress: &mut [(u64, models::sweep::SweepResult)],
) -> Result<(), Failure> {
    let path = d.join("state.json");
    let text = models::units::read_text(&path.display().to_string(), "checkpoint")
        .map_err(|(at, e)| Failure(format!("--resume {at}: {e}")))?;
    // Both checksums first: an edited or truncated file is refused as a whole.
    let (state_meta, state_progress) =
        reports::checkpoint::open(&text, &path.display().to_string()).map_err(Failure)?;
    if state_meta != *meta {
        return Err(Failure(format!(
            "--resume {}: it holds a sweep with other arguments: {}; rerun with those",
            d.display(),
            meta_difference(&state_meta, meta),
        )));
    }
    if state_progress.len() != progress.len() {
        return Err(Failure(format!(
            "{}: {} policies in progress, expected {}: the file was edited or is corrupt",
            path.display(),
            state_progress.len(),
            progress.len()
        )));
    }
    for (slot, p) in progress.iter_mut().zip(&state_progress) {
        *slot = resumed_policy(&path, p, seeds, shard)?;
    }
    Ok(())
}

/// One policy's progress in a checkpoint: (finished chunks, their result), its run count
/// checked against the chunks.
fn resumed_policy(
    path: &std::path::Path,
    p: &serde_json::Value,
    seeds: &std::ops::Range<u64>,
    shard: models::sweep::Shard,
) -> Result<(u64, models::sweep::SweepResult), Failure> {
    let report = reports::sweep::SweepReport::from_json(&p["report"])
        .map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    // The counts must be exactly those of the chunks the file says are done.
    let chunks = (seeds.end - seeds.start).div_ceil(models::sweep::CHUNK);
    let done = p["done_chunks"]
        .as_u64()
        .filter(|&d| d <= chunks)
        .ok_or_else(|| {
            Failure(format!(
                "{}: done_chunks: expected an integer from 0 to {chunks}",
                path.display()
            ))
        })?;
    let end = seeds
        .start
        .saturating_add(done.saturating_mul(models::sweep::CHUNK))
        .min(seeds.end);
    let expect = shard_runs(end - seeds.start, shard);
    if report.result.runs != expect {
        return Err(Failure(format!(
            "{}: {} runs recorded, but {done} finished chunk(s) of this shard hold {expect}: the file was edited or is corrupt",
            path.display(),
            report.result.runs
        )));
    }
    Ok((done, report.result))
}

/// The flag the sweep stops on: the first Ctrl-C / SIGTERM sets it (the sweep stops before
/// its next seed, the finished chunks kept); a second one exits at once, as an interrupted
/// process does (130). A second handler cannot be installed; then Ctrl-C simply kills the
/// process.
fn stop_on_signal() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || {
            if stop.swap(true, std::sync::atomic::Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
    }
    stop
}

/// A scenario that no seed could play (its setup always fails, say) is bad input, as in
/// `run`; the first seed's run says why.
fn refuse_unplayable(
    out: &[reports::sweep::SweepReport],
    pols: &[Policy],
    sc: &Scenario,
    dev: &DiskConfig,
    strategy: &Interleaving,
) -> Result<(), Failure> {
    for (r, p) in out.iter().zip(pols) {
        if let Some(seed) = never_played(&r.result) {
            let run = scenario::run(sc, p, dev, seed, strategy);
            let why = run
                .violations
                .iter()
                .find(|v| is_bad_input(&v.invariant))
                .map_or("the scenario cannot play", |v| v.message.as_str());
            return Err(Failure(format!(
                "{why} (under {}, in every one of the {} seeds run)",
                p.name, r.result.runs
            )));
        }
    }
    Ok(())
}

/// Writes the reports as `sweep.json` into the checkpoint directory `d`.
fn write_sweep_json(
    d: &std::path::Path,
    out: &[reports::sweep::SweepReport],
    a: &SweepArgs,
) -> Result<(), Failure> {
    let v: Vec<serde_json::Value> = out.iter().map(|r| r.json()).collect();
    let path = d.join("sweep.json");
    reports::output::write_atomic(
        &path,
        format!("{:#}\n", serde_json::Value::Array(v)).as_bytes(),
    )
    .map_err(|e| Failure(format!("{} {}: {e}", dir_flag(a), path.display())))
}

/// Failed when an invariant (not a bad-input report) fired in any of the sweeps.
fn verdict(out: &[reports::sweep::SweepReport]) -> Verdict {
    let fired = out
        .iter()
        .flat_map(|r| r.result.targets.keys())
        .filter_map(|k| k.strip_prefix("invariant:"))
        .any(|inv| !is_bad_input(inv));
    if fired {
        Verdict::Failed
    } else {
        Verdict::Clean
    }
}

/// The commit this binary was built from (build.rs; "unknown commit" outside git).
pub(crate) const COMMIT: &str = env!("FSYNCSIM_COMMIT");

/// Which argument or input of a checkpoint (`was`) differs from this sweep's (`now`), in
/// words: the first of the arguments, then of each policy's identity fields.
pub(crate) fn meta_difference(was: &serde_json::Value, now: &serde_json::Value) -> String {
    for (key, what) in [
        ("scenario", "scenario"),
        ("seeds", "seed range"),
        ("shard", "shard"),
        ("strategy", "strategy"),
        ("policies", "policies"),
        ("version", "version"),
    ] {
        if was[key] != now[key] {
            return format!("its {what} is {} (now {})", was[key], now[key]);
        }
    }
    let (old, new) = (&was["identity"], &now["identity"]);
    if old.is_null() {
        return "it was written before checkpoints recorded the sweep's inputs".to_string();
    }
    let n = old
        .as_array()
        .map_or(0, Vec::len)
        .max(new.as_array().map_or(0, Vec::len));
    for field in reports::sweep::IDENTITY_FIELDS {
        for i in 0..n {
            if old[i][field] != new[i][field] {
                return format!(
                    "its {field} differs ({} there, {} now)",
                    old[i][field], new[i][field]
                );
            }
        }
    }
    "its arguments differ".to_string()
}

/// The first seed, when every seed of a sweep failed to play (a stuck script or a failed
/// operation in all of them).
pub(crate) fn never_played(r: &models::sweep::SweepResult) -> Option<u64> {
    if r.runs == 0 {
        return None;
    }
    ["invariant:script", "invariant:scenario"]
        .iter()
        .filter_map(|k| r.targets.get(*k))
        .find(|t| t.hits == r.runs)
        .and_then(|t| t.first_seed)
}

/// The flag that named a sweep's checkpoint directory.
pub(crate) fn dir_flag(a: &SweepArgs) -> &'static str {
    if a.resume.is_some() {
        "--resume"
    } else {
        "--out"
    }
}

pub(crate) fn print_sweeps(out: &[reports::sweep::SweepReport], json: bool) {
    if json {
        let v: Vec<serde_json::Value> = out.iter().map(|r| r.json()).collect();
        outln!("{:#}", serde_json::Value::Array(v));
    } else {
        for r in out {
            outln!("{}", r.text());
        }
    }
}

pub(crate) fn merge(files: &[PathBuf], json: bool) -> Result<(), Failure> {
    let mut inputs = Vec::new();
    for f in files {
        let name = f.display().to_string();
        let text = models::units::read_text(&name, "sweep JSON")
            .map_err(|(at, e)| Failure(format!("{at}: {e}")))?;
        let reports = reports::sweep::read_shards(&name, &text).map_err(Failure)?;
        inputs.push((name, reports));
    }
    let merged = reports::sweep::merge(&inputs).map_err(Failure)?;
    print_sweeps(&merged, json);
    Ok(())
}

/// Writes `state.json`: the arguments and, per policy, the chunks done and the counts so far.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_state(
    dir: &std::path::Path,
    meta: &serde_json::Value,
    progress: &[(u64, models::sweep::SweepResult)],
    sc: &Scenario,
    dev: &DiskConfig,
    pols: &[Policy],
    a: &SweepArgs,
    shard: models::sweep::Shard,
    flags: &str,
) -> Result<(), String> {
    let per: Vec<serde_json::Value> = progress
        .iter()
        .zip(pols)
        .map(|((done, r), p)| {
            let mut rep = reports::sweep::SweepReport::new(
                sc,
                p,
                flags,
                a.seeds.clone(),
                shard,
                r.clone(),
                reports::sweep::Identity::new(
                    sc,
                    dev,
                    p,
                    &sweep_id_flags(flags, &a.target),
                    &a.seeds,
                    COMMIT,
                ),
            );
            // A checkpoint holds the counts of the chunks done so far.
            rep.partial = true;
            add_device_flag(&mut rep, a);
            /// One policy's finished chunks and their counts.
            #[derive(serde::Serialize)]
            struct Progress {
                done_chunks: u64,
                report: serde_json::Value,
            }
            let p = Progress {
                done_chunks: *done,
                report: rep.json(),
            };
            serde_json::to_value(p).expect("plain data serialises")
        })
        .collect();
    let state = reports::checkpoint::seal(meta, serde_json::Value::Array(per));
    let path = dir.join("state.json");
    reports::output::write_atomic(&path, format!("{state:#}\n").as_bytes())
        .map_err(|e| format!("{} {}: {e}", dir_flag(a), path.display()))
}

/// The flags that determine a sweep's result besides its inputs: the strategy's, then the
/// extra targets.
pub(crate) fn sweep_id_flags(strategy: &str, targets: &[models::shrink::Target]) -> String {
    let mut f = strategy.to_string();
    for t in targets {
        f.push_str(&format!(" --target {}", t.name()));
    }
    f
}

/// A sweep on `--device D` replays on D: the flag joins the report's run flags (the
/// printed replay commands once dropped it and replayed on the scenario's own device).
fn add_device_flag(rep: &mut reports::sweep::SweepReport, a: &SweepArgs) {
    if let Some(d) = &a.device {
        rep.policy_flags
            .push_str(&format!(" --device {}", models::units::shell_quote(d)));
    }
}

/// The flags a `--strategy exhaustive` sweep refuses: (given, why).
fn exhaustive_refusals(a: &SweepArgs) -> [(bool, &'static str); 4] {
    [
        (
            a.shard.is_some(),
            "--shard: an exhaustive sweep is not sharded",
        ),
        (
            a.out.is_some() || a.resume.is_some(),
            "--out/--resume: an exhaustive sweep writes no checkpoints",
        ),
        (
            !a.strat.decisions.is_empty(),
            "--decisions: a sweep enumerates every run; pass it to run or replay",
        ),
        // `--seeds` at its default is not told from an explicit 0..1000.
        (
            a.seeds != (0..1000),
            "--seeds: an exhaustive sweep runs every interleaving of one seed: pass --seed S",
        ),
    ]
}

/// `sweep --strategy exhaustive`: every interleaving of one seed (`--seed`, default 0), up to
/// `--max-runs` runs per policy, one run after another (the same for any --jobs).
fn exhaustive(a: SweepArgs) -> Result<Verdict, Failure> {
    if let Some((_, why)) = exhaustive_refusals(&a)
        .into_iter()
        .find(|(given, _)| *given)
    {
        return Err(Failure(why.into()));
    }
    let sc = Scenario::load(&a.scenario).map_err(|e| Failure(e.to_string()))?;
    let dev = device_for(&sc, &a.device)?;
    let pols = policies_from(&sc, &a.pol, false);
    let seed = a.seed.unwrap_or(0);
    let flags = a.strat.flags();
    let id_flags = sweep_id_flags(&format!("{flags} --max-runs {}", a.max_runs), &a.target);
    let mut out = Vec::new();
    for p in &pols {
        let (result, cov) = models::sweep::exhaustive(
            &sc,
            p,
            &dev,
            seed,
            a.strat.prefix,
            &a.target,
            a.max_runs,
            &|_| {},
        );
        let unplayable = ["invariant:script", "invariant:scenario"].iter().any(|k| {
            result
                .targets
                .get(*k)
                .is_some_and(|t| t.hits == result.runs)
        });
        if unplayable {
            let run = scenario::run(&sc, p, &dev, seed, &a.strat.interleaving());
            let why = run
                .violations
                .iter()
                .find(|v| is_bad_input(&v.invariant))
                .map_or("the scenario cannot play", |v| v.message.as_str());
            return Err(Failure(format!(
                "{why} (under {}, in every one of the {} runs)",
                p.name, result.runs
            )));
        }
        let seeds = seed..seed.saturating_add(1);
        let id = reports::sweep::Identity::new(&sc, &dev, p, &id_flags, &seeds, COMMIT);
        let mut report = reports::sweep::SweepReport::new(
            &sc,
            p,
            &flags,
            seeds,
            models::sweep::Shard::ALL,
            result,
            id,
        );
        report.exhaustive = Some(cov);
        add_device_flag(&mut report, &a);
        out.push(report);
    }
    print_sweeps(&out, a.json);
    Ok(verdict(&out))
}
