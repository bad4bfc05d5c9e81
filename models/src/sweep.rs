//! Seed sweeps: run a scenario with its script removed under many seeds, in parallel, and
//! count which seeds hit each waste metric or invariant violation.
//!
//! Each seed is an independent, deterministic run; per-target results are folded with
//! order-independent operations (sums, minima and set unions), so the result is identical
//! for any number of jobs. A sweep also counts the distinct decision sequences its runs
//! made ([`Interleavings`]); apart from their 8 bytes per distinct sequence, at most
//! [`INTERLEAVINGS_CAP`], memory does not grow with the number of seeds.
//!
//! [`exhaustive`] instead runs every interleaving of one seed, depth-first, and says
//! whether it ran them all ([`Coverage`]).

use crate::block::DiskConfig;
use crate::kernel::Policy;
use crate::mount::FsKind;
use crate::scenario::{run_with_trace, Interleaving, RunResult, Scenario};
use crate::vfs::metrics::INVARIANTS;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// Metrics whose non-zero value counts as a hit: the waste metrics of the switch registry
/// (`btrfs::switches::waste_targets`), computed once.
pub fn waste_targets() -> &'static [&'static str] {
    static TARGETS: std::sync::LazyLock<Vec<&'static str>> =
        std::sync::LazyLock::new(crate::btrfs::switches::waste_targets);
    &TARGETS
}

/// What a sweep counts or a shrink keeps hitting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A metric that must stay at or above a threshold (at least 1).
    Metric(String, u64),
    /// An invariant (S1, S2, S3) that must stay violated.
    Invariant(String),
}

impl Target {
    /// Parses `METRIC`, `METRIC>=N` (N >= 1), an invariant name (`S2`) or a sweep target
    /// (`invariant:S2`).
    pub fn parse(s: &str) -> Result<Target, String> {
        let inv = s.strip_prefix("invariant:").unwrap_or(s);
        if INVARIANTS.contains(&inv) {
            return Ok(Target::Invariant(inv.to_string()));
        }
        let (name, min) = match s.split_once(">=") {
            Some((n, v)) => match v.trim().parse::<u64>() {
                Ok(min) if min >= 1 => (n.trim(), min),
                _ => {
                    return Err(format!(
                        "invalid threshold in target '{s}': expected METRIC>=N with N a whole number from 1 to {}",
                        u64::MAX
                    ))
                }
            },
            None => (s, 1),
        };
        if FsKind::ALL.iter().any(|(fs, _)| fs.is_metric(name)) {
            return Ok(Target::Metric(name.to_string(), min));
        }
        Err(format!(
            "unknown target '{s}': expected an invariant ({}) or a metric (`fsyncsim list --metrics`) such as {}, optionally with a threshold (relogged_inodes>=2)",
            INVARIANTS.join(", "),
            waste_targets().join(", ")
        ))
    }

    /// The target's name as sweeps print it (`METRIC`, `METRIC>=N`, `invariant:S2`).
    pub fn name(&self) -> String {
        match self {
            Target::Metric(m, 1) => m.clone(),
            Target::Metric(m, n) => format!("{m}>={n}"),
            Target::Invariant(i) => format!("invariant:{i}"),
        }
    }

    /// How much the run hits it: the metric, or the number of violations.
    pub fn value(&self, r: &RunResult) -> u64 {
        match self {
            Target::Metric(m, _) => r.metrics.get(m).unwrap_or(0),
            Target::Invariant(i) => {
                r.violations.iter().filter(|v| &v.invariant == i).count() as u64
            }
        }
    }

    /// Whether the run hits it: the metric at or above its threshold, or a violation.
    pub fn hit(&self, r: &RunResult) -> bool {
        let min = match self {
            Target::Metric(_, n) => *n,
            Target::Invariant(_) => 1,
        };
        self.value(r) >= min
    }
}

/// Hits of one target over the seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetStats {
    /// Seeds that hit.
    pub hits: u64,
    /// Smallest seed that hit.
    pub first_seed: Option<u64>,
    /// (decisions, seed) of the hitting run with the fewest decisions.
    pub shortest: Option<(usize, u64)>,
}

impl TargetStats {
    fn hit(seed: u64, len: usize) -> Self {
        TargetStats {
            hits: 1,
            first_seed: Some(seed),
            shortest: Some((len, seed)),
        }
    }

    /// Combines the hits of two disjoint seed sets.
    pub fn merge(mut self, o: &TargetStats) -> Self {
        self.hits += o.hits;
        self.first_seed = match (self.first_seed, o.first_seed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.shortest = match (self.shortest, o.shortest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self
    }
}

/// The fingerprint of one run's decision sequence (`Scheduler::decisions`): FNV-1a 64
/// over the sequence's length as a little-endian u64, then each decision as a
/// little-endian u32. Fixed by this definition (not Rust's `DefaultHasher`), so it is the
/// same on every platform and Rust version, and in checkpoints and shard files.
///
/// Two different sequences collide with probability about 2^-64 each, so among `n`
/// distinct sequences some pair shares a fingerprint with probability about n²/2^65:
/// below 2^-33 (10^-10) for the [`INTERLEAVINGS_CAP`] = 2^16 sequences a sweep counts.
pub fn decisions_fingerprint(decisions: &[u32]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let step = |h: u64, b: &u8| (h ^ u64::from(*b)).wrapping_mul(PRIME);
    let len = (decisions.len() as u64).to_le_bytes();
    let h = len.iter().fold(0xcbf2_9ce4_8422_2325, step);
    decisions
        .iter()
        .fold(h, |h, d| d.to_le_bytes().iter().fold(h, step))
}

/// Most distinct decision sequences a sweep counts exactly: 2^16 fingerprints, 8 bytes
/// each (512 KiB per policy in memory, 1 MiB of hex in a shard or checkpoint file). Beyond
/// it a sweep reports "≥ 65536".
pub const INTERLEAVINGS_CAP: usize = 1 << 16;

/// The distinct decision sequences (interleavings) of a set of runs, as fingerprints
/// ([`decisions_fingerprint`]). It keeps the [`INTERLEAVINGS_CAP`] smallest fingerprints and
/// whether there were more, so merging is a set union cut to the cap: the same for any
/// order, any number of jobs, and across resumed chunks and merged shards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interleavings {
    /// The distinct fingerprints seen (the smallest INTERLEAVINGS_CAP when capped).
    pub fingerprints: BTreeSet<u64>,
    /// More than INTERLEAVINGS_CAP distinct fingerprints were seen.
    pub capped: bool,
}

impl Interleavings {
    /// The one sequence of a run.
    pub fn of(decisions: &[u32]) -> Self {
        Interleavings {
            fingerprints: BTreeSet::from([decisions_fingerprint(decisions)]),
            capped: false,
        }
    }

    /// The distinct sequences counted: exact unless [`Interleavings::capped`], then a lower
    /// bound (INTERLEAVINGS_CAP).
    pub fn count(&self) -> u64 {
        self.fingerprints.len() as u64
    }

    /// The count as printed: `137`, or `≥ 65536` when capped.
    pub fn shown(&self) -> String {
        if self.capped {
            format!("≥ {}", self.count())
        } else {
            self.count().to_string()
        }
    }

    /// The union of two sets of runs, cut to the cap.
    pub fn merge(self, o: Interleavings) -> Self {
        let (mut big, small) = if self.fingerprints.len() >= o.fingerprints.len() {
            (self, o)
        } else {
            (o, self)
        };
        big.fingerprints.extend(small.fingerprints);
        big.capped |= small.capped;
        while big.fingerprints.len() > INTERLEAVINGS_CAP {
            big.fingerprints.pop_last();
            big.capped = true;
        }
        big
    }
}

/// What a sweep found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepResult {
    /// Seeds run.
    pub runs: u64,
    /// Per target (waste metric or "invariant:S1" …): hits.
    pub targets: BTreeMap<String, TargetStats>,
    /// The distinct decision sequences the runs made.
    pub interleavings: Interleavings,
}

impl SweepResult {
    fn of_run(seed: u64, r: &RunResult, extra: &[Target]) -> Self {
        let mut targets = BTreeMap::new();
        let len = r.decisions.len();
        for t in extra.iter().filter(|t| t.hit(r)) {
            targets.insert(t.name(), TargetStats::hit(seed, len));
        }
        for &t in waste_targets() {
            if r.metrics.get(t).unwrap_or(0) > 0 {
                targets.insert(t.to_string(), TargetStats::hit(seed, len));
            }
        }
        for v in &r.violations {
            targets
                .entry(format!("invariant:{}", v.invariant))
                .or_insert_with(|| TargetStats::hit(seed, len));
        }
        SweepResult {
            runs: 1,
            targets,
            interleavings: Interleavings::of(&r.decisions),
        }
    }

    /// Combines two results (of disjoint seed sets).
    pub fn merge(mut self, o: SweepResult) -> Self {
        self.runs += o.runs;
        for (k, v) in o.targets {
            let cur = self.targets.remove(&k).unwrap_or_default();
            self.targets.insert(k, cur.merge(&v));
        }
        self.interleavings = self.interleavings.merge(o.interleavings);
        self
    }
}

/// A deterministic slice of a seed range: shard `k` of `n` (1-based) takes every seed whose
/// offset from the start is `k - 1` modulo `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 1..=n.
    pub k: u64,
    /// Number of shards.
    pub n: u64,
}

impl Shard {
    /// The whole range.
    pub const ALL: Shard = Shard { k: 1, n: 1 };

    /// Parses `K/N` with 1 <= K <= N.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let expected = "expected K/N with 1 <= K <= N, e.g. 3/8";
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("invalid shard '{s}': {expected}"))?;
        let (k, n): (u64, u64) = match (k.trim().parse(), n.trim().parse()) {
            (Ok(k), Ok(n)) => (k, n),
            _ => return Err(format!("invalid shard '{s}': {expected}")),
        };
        if k == 0 || n == 0 || k > n {
            return Err(format!("invalid shard '{s}': {expected}"));
        }
        Ok(Shard { k, n })
    }

    /// The seeds of `seeds` this shard runs, for a whole range starting at `start`: the
    /// first and how many (every `n`-th from it), or None when it holds none. Computed, not
    /// walked: a shard of a range of 2^64 seeds finds its seeds at once.
    pub fn owned_in(&self, start: u64, seeds: Range<u64>) -> Option<(u64, u64)> {
        let n = u128::from(self.n);
        let (lo, hi) = (
            u128::from(seeds.start - start),
            u128::from(seeds.end - start),
        );
        // The first offset at or after `lo` that is k - 1 modulo n.
        let first = lo + (u128::from(self.k - 1) + n - lo % n) % n;
        if first >= hi {
            return None;
        }
        let count = (hi - first - 1) / n + 1;
        // Both fit: first < hi <= 2^64 - 1 - start, and count <= hi - first.
        Some((start + first as u64, count as u64))
    }

    /// Whether this shard runs `seed` of a range starting at `start`.
    pub fn owns(&self, start: u64, seed: u64) -> bool {
        (seed - start) % self.n == self.k - 1
    }
}

/// Seeds per checkpoint of a chunked sweep.
pub const CHUNK: u64 = 4096;

/// Runs `seeds` chunk by chunk (CHUNK seeds of the range each), counting the waste metrics,
/// S1–S3 and the `extra` targets (`METRIC>=N`, …), starting after `done`
/// chunks, folding into `acc`; stops between chunks when `stop` is set. `checkpoint` is
/// called after every chunk that holds a seed of `shard`, and once at the end, with the
/// chunks done and the result so far; chunks without such a seed are skipped without being
/// walked, so a shard of a huge range costs its own seeds only. Returns the chunks done and
/// whether the range is finished.
#[allow(clippy::too_many_arguments)]
pub fn sweep_chunked(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
    strategy: &Interleaving,
    extra: &[Target],
    progress: &(dyn Fn(u64) + Sync),
    stop: &std::sync::atomic::AtomicBool,
    mut done: u64,
    acc: &mut SweepResult,
    checkpoint: &mut dyn FnMut(u64, &SweepResult) -> Result<(), String>,
) -> Result<(u64, bool), String> {
    let chunks = (seeds.end - seeds.start).div_ceil(CHUNK);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| format!("cannot start {jobs} threads: {e}"))?;
    while done < chunks {
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok((done, false));
        }
        let lo = seeds.start + done * CHUNK;
        // Saturating: a range may end at 2^64 - 1.
        let hi = lo.saturating_add(CHUNK).min(seeds.end);
        // Shard ownership is relative to the whole range's start.
        let Some((first, count)) = shard.owned_in(seeds.start, lo..hi) else {
            // No seed of this shard here: on to the chunk of its next seed, or the end.
            done = shard
                .owned_in(seeds.start, lo..seeds.end)
                .map_or(chunks, |(next, _)| (next - seeds.start) / CHUNK);
            if done == chunks {
                checkpoint(done, acc)?;
            }
            continue;
        };
        // `stop` is looked at before every seed: an interrupted chunk is dropped whole (its
        // seeds are run again on --resume), so a stop takes one seed's time, not a chunk's.
        let stopped = |_: &u64| stop.load(std::sync::atomic::Ordering::SeqCst);
        let part = pool.install(|| {
            (0..count)
                .into_par_iter()
                .map(|j| first + j * shard.n)
                .filter(|s| !stopped(s))
                .map(|seed| {
                    progress(1);
                    let r = run_with_trace(sc, policy, device, seed, strategy, false);
                    SweepResult::of_run(seed, &r, extra)
                })
                .reduce(SweepResult::default, SweepResult::merge)
        });
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok((done, false));
        }
        *acc = std::mem::take(acc).merge(part);
        done += 1;
        checkpoint(done, acc)?;
    }
    Ok((done, true))
}

/// Runs all of `seeds` at once, without checkpoints or a stop flag (the form tests and
/// library callers want).
pub fn sweep_all(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seeds: Range<u64>,
    jobs: usize,
    strategy: &Interleaving,
) -> Result<SweepResult, String> {
    let mut acc = SweepResult::default();
    let stop = std::sync::atomic::AtomicBool::new(false);
    sweep_chunked(
        sc,
        policy,
        device,
        seeds,
        Shard::ALL,
        jobs,
        strategy,
        &[],
        &|_| {},
        &stop,
        0,
        &mut acc,
        &mut |_, _| Ok(()),
    )?;
    Ok(acc)
}

/// What an exhaustive enumeration ([`exhaustive`]) covered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The one seed enumerated (it fixes the device's timing and every other stream).
    pub seed: u64,
    /// Runs made, each a distinct decision sequence.
    pub runs: u64,
    /// Every interleaving was run (false: stopped at the bound with more left).
    pub complete: bool,
    /// The bound on runs it was given.
    pub max_runs: u64,
    /// The decisions (trailing zeros dropped) of the runs a target names as its first or
    /// shortest hit, by run index.
    pub decisions: BTreeMap<u64, Vec<u32>>,
}

/// The prefix of the run after one that made `decisions` at choices of `widths` candidates
/// (depth-first, in lexicographic order): the deepest choice with an untried candidate,
/// incremented, the choices after it dropped. None when every candidate was tried.
pub fn next_prefix(decisions: &[u32], widths: &[u32]) -> Option<Vec<u32>> {
    let i = (0..decisions.len().min(widths.len()))
        .rev()
        .find(|&i| decisions[i] + 1 < widths[i])?;
    let mut p = decisions[..=i].to_vec();
    p[i] += 1;
    Some(p)
}

/// `decisions` without its trailing zeros: the prefix that makes the same run under
/// [`Interleaving::Exhaustive`] (it takes candidate 0 after the prefix).
pub fn trimmed(decisions: &[u32]) -> Vec<u32> {
    let n = decisions.iter().rposition(|&d| d != 0).map_or(0, |i| i + 1);
    decisions[..n].to_vec()
}

/// Runs every interleaving of `sc` under `policy` at one `seed`, depth-first: each run
/// follows a prefix of decisions, then candidate 0 (the random walk's choices: tasks
/// runnable at the instant and tasks paused at named points), and the next run changes
/// the deepest choice that has an untried candidate. Stops after `max_runs` runs. No
/// partial-order reduction: every sequence of choices is run, even ones that differ only
/// in the order of independent steps. Runs one after another (the next prefix depends on
/// the last run), so the result does not depend on any number of jobs. With
/// `script_steps` > 0 the first steps of the script are played first (`--prefix`).
/// Returns the counts (a target's "seeds" are run indices, 0-based) and the coverage.
#[allow(clippy::too_many_arguments)]
pub fn exhaustive(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    script_steps: usize,
    extra: &[Target],
    max_runs: u64,
    progress: &dyn Fn(u64),
) -> (SweepResult, Coverage) {
    let how = |p: Vec<u32>| match script_steps {
        0 => Interleaving::Exhaustive(p),
        n => Interleaving::Prefix(n, Box::new(Interleaving::Exhaustive(p))),
    };
    let mut acc = SweepResult::default();
    let mut cov = Coverage {
        seed,
        max_runs,
        ..Coverage::default()
    };
    let mut prefix = Some(Vec::new());
    while let Some(p) = prefix.take() {
        if cov.runs == max_runs {
            prefix = Some(p);
            break;
        }
        let r = run_with_trace(sc, policy, device, seed, &how(p), false);
        progress(1);
        let run = cov.runs;
        acc = acc.merge(SweepResult::of_run(run, &r, extra));
        let named = acc
            .targets
            .values()
            .any(|t| t.first_seed == Some(run) || t.shortest.is_some_and(|(_, s)| s == run));
        if named {
            cov.decisions.insert(run, trimmed(&r.decisions));
        }
        cov.runs += 1;
        prefix = next_prefix(&r.decisions, &r.widths);
    }
    cov.complete = prefix.is_none();
    let used: BTreeSet<u64> = acc
        .targets
        .values()
        .flat_map(|t| t.first_seed.into_iter().chain(t.shortest.map(|(_, s)| s)))
        .collect();
    cov.decisions.retain(|k, _| used.contains(k));
    (acc, cov)
}

/// Wilson score 95 % interval of a proportion `hits / n`.
pub fn wilson95(hits: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (z, n, p) = (1.959_963_984_540_054, n as f64, hits as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Parses a seed range `A..B` (B exclusive).
pub fn parse_seeds(s: &str) -> Result<Range<u64>, String> {
    let expected = "expected a seed range like 0..100000 (start < end)";
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("invalid seed range '{s}': {expected}"))?;
    let a: u64 = a
        .trim()
        .parse()
        .map_err(|_| format!("invalid seed range '{s}': {expected}"))?;
    let b: u64 = b
        .trim()
        .parse()
        .map_err(|_| format!("invalid seed range '{s}': {expected}"))?;
    if a >= b {
        return Err(format!("empty seed range '{s}': {expected}"));
    }
    Ok(a..b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval_brackets_the_rate() {
        let (lo, hi) = wilson95(50, 100);
        assert!(lo < 0.5 && hi > 0.5 && (lo - 0.4038).abs() < 1e-3 && (hi - 0.5962).abs() < 1e-3);
        assert_eq!(wilson95(0, 10).0, 0.0);
        assert!(wilson95(0, 10).1 > 0.0);
    }

    #[test]
    fn shards_partition_the_seeds() {
        let shards: Vec<Shard> = (1..=3).map(|k| Shard { k, n: 3 }).collect();
        for seed in 10..40 {
            assert_eq!(shards.iter().filter(|s| s.owns(10, seed)).count(), 1);
        }
        // owned_in gives exactly the seeds `owns` picks, for any sub-range.
        for n in 1..=7 {
            for k in 1..=n {
                let sh = Shard { k, n };
                for lo in 10..30 {
                    for hi in lo + 1..40 {
                        let want: Vec<u64> = (lo..hi).filter(|&s| sh.owns(10, s)).collect();
                        let got: Vec<u64> = sh
                            .owned_in(10, lo..hi)
                            .map_or(vec![], |(f, c)| (0..c).map(|j| f + j * n).collect());
                        assert_eq!(got, want, "{k}/{n} {lo}..{hi}");
                    }
                }
            }
        }
        let last = Shard {
            k: u64::MAX,
            n: u64::MAX,
        };
        assert_eq!(last.owned_in(0, 0..u64::MAX), Some((u64::MAX - 1, 1)));
        assert_eq!(last.owned_in(1, 1..u64::MAX), None);
        assert_eq!(
            Shard {
                k: 3,
                n: u64::MAX - 1
            }
            .owned_in(0, 0..u64::MAX),
            Some((2, 1))
        );
        assert_eq!(
            Shard { k: 1, n: 1 << 62 }.owned_in(5, 5..u64::MAX),
            Some((5, 4))
        );
        assert_eq!(Shard::parse("2/5"), Ok(Shard { k: 2, n: 5 }));
        for bad in ["3/2", "0/4", "a/b", "4", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn seed_ranges_parse_and_reject_bad_input() {
        assert_eq!(parse_seeds("0..100"), Ok(0..100));
        for bad in ["5..2", "abc", "3..3", "1..x", "..5"] {
            assert!(parse_seeds(bad).is_err(), "{bad}");
        }
    }
}
