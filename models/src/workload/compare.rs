//! A/B comparison of two kernel policies on one workload: the same seeds on both sides
//! (common random numbers), run in parallel; optionally one row per value of a varied
//! workload or device parameter.

use super::fsload::{run_with_progress, Progress, WorkloadResult};
use super::spec::Spec;
use crate::block::DiskConfig;
use crate::kernel::Policy;
use rayon::prelude::*;
use sim::Nanos;
use std::cell::Cell;
use std::rc::Rc;

/// The 97.5 % quantile of Student's t for `df` degrees of freedom (the half-width factor
/// of a two-sided 95 % interval); NaN for 0.
pub fn t975(df: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    match StudentsT::new(0.0, 1.0, df as f64) {
        Ok(t) if df > 0 => t.inverse_cdf(0.975),
        _ => f64::NAN,
    }
}

/// Parses `--vary NAME=V1,V2,…`.
pub fn parse_vary(s: &str) -> Result<(String, Vec<String>), String> {
    let (name, values) = s.split_once('=').ok_or_else(|| {
        format!("invalid --vary '{s}': expected NAME=V1,V2,… e.g. queue_depth=32,254,1024")
    })?;
    let cost = name
        .strip_prefix("costs.")
        .is_some_and(|k| crate::btrfs::costs::Costs::FIELDS.contains(&k));
    if !Spec::VARY.contains(&name) && !cost {
        return Err(format!(
            "unknown parameter '{name}' in --vary: expected one of {}, or costs.NAME with a btrfs [costs] key (`fsyncsim list --costs`)",
            Spec::VARY.join(", ")
        ));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if let Some(i) = values.iter().position(String::is_empty) {
        return Err(format!(
            "invalid --vary '{s}': value {} is empty: expected NAME=V1,V2,… with a value between every two commas",
            i + 1
        ));
    }
    Ok((name.to_string(), values))
}

/// The workload and device of the first comparison point (the varied parameter's first value).
pub fn first_point(
    spec: &Spec,
    device: &DiskConfig,
    vary: Option<&(String, Vec<String>)>,
) -> Result<(Spec, DiskConfig), String> {
    let (mut s, mut d) = (spec.clone(), device.clone());
    if let Some((name, values)) = vary {
        if let Some(v) = values.first() {
            s.set(&mut d, name, v).map_err(|e| format!("--vary: {e}"))?;
        }
    }
    Ok((s, d))
}

/// Progress of a batch of runs in simulated time (warmup included): the batch's planned
/// total, once at its start, then each advance of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    /// Simulated time the batch will run, summed over its runs.
    Planned(Nanos),
    /// Simulated time one run advanced.
    Done(Nanos),
}

/// Told each `Tick` of a batch, from the worker threads (it does not change the runs).
pub type OnTick = std::sync::Arc<dyn Fn(Tick) + Send + Sync>;

/// An `OnTick` that shows nothing.
pub fn no_progress() -> OnTick {
    std::sync::Arc::new(|_| {})
}

/// One workload run: the workload, the policy, the device and the seed.
pub type RunJob<'a> = (&'a Spec, &'a Policy, &'a DiskConfig, u64);

/// Runs every job on a rayon pool of `jobs` threads; results in the jobs' order, whatever
/// `jobs` is. `progress` is told the batch's simulated time planned and done as it runs.
pub fn run_all(
    runs: &[RunJob],
    jobs: usize,
    progress: &OnTick,
) -> Result<Vec<Result<WorkloadResult, String>>, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| format!("--jobs: {e}"))?;
    progress(Tick::Planned(
        runs.iter().map(|r| r.0.warmup + r.0.duration).sum(),
    ));
    Ok(pool.install(|| {
        runs.par_iter()
            .with_max_len(1)
            .map(|&(s, p, d, seed)| {
                let reported = Rc::new(Cell::new(0));
                let (tell, seen) = (progress.clone(), reported.clone());
                let tick: Progress = Box::new(move |t| {
                    tell(Tick::Done(t.saturating_sub(seen.get())));
                    seen.set(seen.get().max(t));
                });
                let r = run_with_progress(s, p, d, seed, None, Some(tick));
                let total = s.warmup + s.duration;
                progress(Tick::Done(total.saturating_sub(reported.get())));
                r
            })
            .collect()
    }))
}

/// One comparison point: the runs of both sides over the seeds.
#[derive(Clone, Debug)]
pub struct Pair {
    /// The varied parameter's value (None without --vary).
    pub value: Option<String>,
    /// Baseline runs, one per seed.
    pub baseline: Vec<WorkloadResult>,
    /// Current runs, same seeds.
    pub current: Vec<WorkloadResult>,
}

impl Pair {
    /// One line per run of this point that broke an invariant, naming `what` ran and the
    /// varied value (`WorkloadResult::violation_line`), baseline runs first.
    pub fn violation_lines(&self, what: &str) -> Vec<String> {
        let what = match &self.value {
            Some(v) => format!("{what} at {v}"),
            None => what.to_string(),
        };
        self.baseline
            .iter()
            .chain(&self.current)
            .filter_map(|r| r.violation_line(&what))
            .collect()
    }
}

/// Runs `spec` on `device` under both policies for seeds `seed..seed+seeds`, for each value of
/// `vary` (or once), on a rayon pool of `jobs` threads; `progress` is told the simulated time done.
/// Results do not depend on `jobs`.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    spec: &Spec,
    device: &DiskConfig,
    baseline: &Policy,
    current: &Policy,
    seed: u64,
    seeds: u64,
    vary: Option<&(String, Vec<String>)>,
    jobs: usize,
    progress: &OnTick,
) -> Result<Vec<Pair>, String> {
    let points: Vec<(Option<String>, Spec, DiskConfig)> = match vary {
        None => vec![(None, spec.clone(), device.clone())],
        Some((name, values)) => values
            .iter()
            .map(|v| {
                let (mut s, mut d) = (spec.clone(), device.clone());
                s.set(&mut d, name, v).map_err(|e| format!("--vary: {e}"))?;
                Ok((Some(v.clone()), s, d))
            })
            .collect::<Result<_, String>>()?,
    };
    let mut work = Vec::new();
    for (i, _) in points.iter().enumerate() {
        for k in 0..seeds {
            for side in 0..2 {
                work.push((i, k, side));
            }
        }
    }
    let runs: Vec<RunJob> = work
        .iter()
        .map(|&(i, k, side)| {
            let (_, s, d) = &points[i];
            let p = if side == 0 { baseline } else { current };
            (s, p, d, seed + k)
        })
        .collect();
    let results = run_all(&runs, jobs, progress)?;
    let mut out: Vec<Pair> = points
        .iter()
        .map(|(v, _, _)| Pair {
            value: v.clone(),
            baseline: Vec::new(),
            current: Vec::new(),
        })
        .collect();
    for (&(i, _, side), r) in work.iter().zip(results) {
        let r = r?;
        if side == 0 {
            out[i].baseline.push(r);
        } else {
            out[i].current.push(r);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btrfs::Fix;
    use crate::kernel::parse_policy;

    #[test]
    fn t_quantiles_are_students_not_the_normals() {
        // 0.975 quantiles as printed in the standard tables of Student's t:
        // df 1 12.706, 2 4.303, 40 2.021, 120 1.980; the normal's 1.960 only as df grows.
        for (df, want) in [(1, 12.7062), (2, 4.3027), (40, 2.0211), (120, 1.9799)] {
            let t = t975(df);
            assert!((t - want).abs() < 1e-3, "df {df}: {t} against {want}");
        }
        assert!(t975(40) > 1.96 * 1.03, "df 40 is 3 % wider than the normal");
        assert!((t975(1_000_000) - 1.95996).abs() < 1e-3);
        assert!(t975(0).is_nan());
    }

    #[test]
    fn policy_specs_parse_and_reject() {
        let p = parse_policy("linux-5.11:-R7").unwrap();
        assert!(!p.has(Fix::R7) && p.has(Fix::R1));
        let q = parse_policy("linux-5.10:+R1").unwrap();
        assert!(q.has(Fix::R1) && !q.has(Fix::R2));
        for bad in ["linux-6.1", "linux-5.11:R7", "linux-5.11:-R9", ""] {
            assert!(parse_policy(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn vary_specs_parse_and_reject() {
        assert_eq!(
            parse_vary("queue_depth=32,254").unwrap(),
            (
                "queue_depth".to_string(),
                vec!["32".to_string(), "254".to_string()]
            )
        );
        assert!(parse_vary("colour=1,2").is_err());
        assert!(parse_vary("clients").is_err());
        assert!(parse_vary("clients=").is_err());
    }
}
