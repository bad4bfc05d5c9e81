//! Output of `fsyncsim sweep` and `fsyncsim merge`: per target, hits, hit rate with a 95 %
//! interval, the first seed, the seed with the fewest decisions, and the command that
//! replays it; per policy, the number of distinct decision sequences (interleavings) run.
//! A sweep's JSON carries what merging shards needs (the interleavings' fingerprints too),
//! and merged shards print exactly what one unsharded sweep prints.

use models::kernel::Policy;
use models::scenario::Scenario;
use models::sweep::{wilson95, Coverage, Interleavings, Shard, SweepResult, TargetStats};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ops::Range;

/// The version stamped into sweep results; shards of different versions do not merge.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything that determines one policy's sweep result, field by field, as recorded in
/// its JSON (`"identity"`: a sweep's output, a shard, a checkpoint's reports): the
/// scenario's text, the device (preset or file, as resolved) and the policy as stable
/// FNV-1a digests, the strategy flags, the seed range, the fsyncsim version and the commit
/// it was built from, plus a digest of all of them. `merge` refuses shards whose identities
/// differ, naming the first field that does. The shard is not part of it: every shard of
/// one sweep has the same identity, and so has the merged result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// (field, value) in a fixed order: scenario, device, policy, strategy, seeds,
    /// version, commit.
    pub fields: Vec<(&'static str, String)>,
}

/// The fields of an [`Identity`], in order.
pub const IDENTITY_FIELDS: [&str; 7] = [
    "scenario", "device", "policy", "strategy", "seeds", "version", "commit",
];

/// `fnv1a64:` and the FNV-1a 64 of `bytes`, as an identity field shows a digest.
pub fn digest(bytes: &[u8]) -> String {
    format!("fnv1a64:{:016x}", models::units::fnv1a64(bytes))
}

impl Identity {
    /// The identity of sweeping `sc` on `dev` under `p` with `strategy` over `seeds`, by the
    /// fsyncsim built from `commit`.
    pub fn new(
        sc: &Scenario,
        dev: &models::block::DiskConfig,
        p: &Policy,
        strategy: &str,
        seeds: &Range<u64>,
        commit: &str,
    ) -> Identity {
        // Debug text: every parameter, in declaration order (no hash maps in either).
        let values = [
            format!("fnv1a64:{:016x}", sc.source_digest),
            digest(format!("{dev:?}").as_bytes()),
            digest(format!("{p:?}").as_bytes()),
            strategy.to_string(),
            format!("{}..{}", seeds.start, seeds.end),
            VERSION.to_string(),
            commit.to_string(),
        ];
        Identity {
            fields: IDENTITY_FIELDS.iter().copied().zip(values).collect(),
        }
    }

    /// The digest of all fields.
    pub fn digest(&self) -> String {
        let text: Vec<String> = self
            .fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        digest(text.join("\n").as_bytes())
    }

    /// The value of `field`.
    pub fn get(&self, field: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| *k == field)
            .map(|(_, v)| v.as_str())
    }

    /// The first field whose value differs from `other`'s (skipping `skip`): (field, this
    /// value, other's value).
    pub fn differs<'a>(
        &'a self,
        other: &'a Identity,
        skip: &[&str],
    ) -> Option<(&'static str, &'a str, &'a str)> {
        IDENTITY_FIELDS
            .iter()
            .filter(|f| !skip.contains(f))
            .find_map(|&f| {
                let (a, b) = (self.get(f).unwrap_or(""), other.get(f).unwrap_or(""));
                (a != b).then_some((f, a, b))
            })
    }

    /// The JSON object: the fields and `digest`.
    pub fn json(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (k, v) in &self.fields {
            m.insert(k.to_string(), json!(v));
        }
        m.insert("digest".into(), json!(self.digest()));
        Value::Object(m)
    }

    /// Reads [`Identity::json`] back, refusing a missing field or a digest that does not
    /// match the fields.
    pub fn from_json(v: &Value) -> Result<Identity, String> {
        if v.is_null() {
            return Err(
                "missing field 'identity': written before sweeps recorded their inputs; rerun the sweep"
                    .into(),
            );
        }
        let mut fields = Vec::new();
        for f in IDENTITY_FIELDS {
            let x = field(v, f, &format!("identity.{f}"), "a string", Value::as_str)?;
            fields.push((f, x.to_string()));
        }
        let id = Identity { fields };
        if v["digest"].as_str() != Some(id.digest().as_str()) {
            return Err(format!(
                "identity: the fields do not match their digest {}: the file was edited or is corrupt",
                v["digest"]
            ));
        }
        Ok(id)
    }
}

/// The `fsyncsim run` flags that select `p` (relative to linux-5.11).
pub fn policy_flags(p: &Policy) -> String {
    let base = Policy::preset("linux-5.11").expect("preset");
    // The flags below name linux-5.11's switches only; any other policy is spelled as a
    // preset with modifiers (`--policy linux-5.15:-R1`).
    let mut as_flags = base.btrfs.clone();
    as_flags.fixes = p.btrfs.fixes.clone();
    as_flags.mutants = p.btrfs.mutants.clone();
    as_flags.super_committed = p.btrfs.super_committed;
    if as_flags != p.btrfs || base.journal != p.journal {
        if let Some(spec) = p.spec() {
            return format!("--policy {}", models::units::shell_quote(&spec));
        }
    }
    let mut flags = vec!["--policy linux-5.11".to_string()];
    let without: Vec<&str> = base
        .btrfs
        .fixes
        .difference(&p.btrfs.fixes)
        .map(|f| f.name())
        .collect();
    let with: Vec<&str> = p
        .btrfs
        .fixes
        .difference(&base.btrfs.fixes)
        .map(|f| f.name())
        .collect();
    if !without.is_empty() {
        flags.push(format!("--without {}", without.join(",")));
    }
    if !with.is_empty() {
        flags.push(format!("--fix {}", with.join(",")));
    }
    if !p.btrfs.mutants.is_empty() {
        let m: Vec<&str> = p.btrfs.mutants.iter().map(|m| m.name()).collect();
        flags.push(format!("--mutant {}", m.join(",")));
    }
    if p.btrfs.super_committed {
        flags.push("--super-committed".into());
    }
    flags.join(" ")
}

/// One sweep of one policy, as reported.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepReport {
    /// Scenario name.
    pub scenario: String,
    /// Race id.
    pub race: String,
    /// How `fsyncsim run` names the scenario (name or path).
    pub scenario_ref: String,
    /// Policy name.
    pub policy: String,
    /// Fixes applied.
    pub fixes: Vec<String>,
    /// `fsyncsim run` flags selecting the policy (and `--device D` for a sweep on another
    /// device than the scenario's).
    pub policy_flags: String,
    /// `fsyncsim run` flags selecting the strategy.
    pub strategy: String,
    /// The seed range.
    pub seeds: Range<u64>,
    /// The shard run, if not the whole range.
    pub shard: Option<Shard>,
    /// fsyncsim version.
    pub version: String,
    /// The counts.
    pub result: SweepResult,
    /// The sweep was interrupted before every seed ran.
    pub partial: bool,
    /// What determines the result.
    pub identity: Identity,
    /// For an exhaustive sweep: what it covered (its targets' "seeds" are run indices).
    pub exhaustive: Option<Coverage>,
}

impl SweepReport {
    /// A report of `result`, the sweep of `sc` under `p` whose identity is `identity`.
    pub fn new(
        sc: &Scenario,
        p: &Policy,
        strategy: &str,
        seeds: Range<u64>,
        shard: Shard,
        result: SweepResult,
        identity: Identity,
    ) -> Self {
        SweepReport {
            identity,
            scenario: sc.name.clone(),
            race: sc.race.clone(),
            scenario_ref: sc.origin_name().to_string(),
            policy: p.name.clone(),
            fixes: p.fix_list(),
            policy_flags: policy_flags(p),
            strategy: strategy.to_string(),
            seeds,
            shard: (shard != Shard::ALL).then_some(shard),
            version: VERSION.to_string(),
            result,
            partial: false,
            exhaustive: None,
        }
    }

    /// The command that replays run `run` of an exhaustive sweep (its decisions).
    fn replay_run(&self, cov: &Coverage, run: u64) -> String {
        let d = cov.decisions.get(&run).map_or(String::new(), |d| {
            let s: Vec<String> = d.iter().map(u32::to_string).collect();
            format!(" --decisions {}", s.join(","))
        });
        format!(
            "fsyncsim run {} --explore {}{d} --seed {} {}",
            models::units::shell_quote(&self.scenario_ref),
            self.strategy,
            cov.seed,
            self.policy_flags
        )
    }

    /// The line that says whether an exhaustive sweep ran every interleaving.
    pub fn coverage_line(cov: &Coverage) -> String {
        if cov.complete {
            format!(
                "  exhaustive: all {} interleavings run (seed {})\n",
                cov.runs, cov.seed
            )
        } else {
            format!(
                "  exhaustive: stopped after {} runs (bound --max-runs {}), more remain (seed {})\n",
                cov.runs, cov.max_runs, cov.seed
            )
        }
    }

    /// The command that replays `seed`, as `sh` reads it (the scenario path shell-quoted).
    pub fn replay_command(&self, seed: u64) -> String {
        format!(
            "fsyncsim run {} --explore {} --seed {seed} {}",
            models::units::shell_quote(&self.scenario_ref),
            self.strategy,
            self.policy_flags
        )
    }

    /// The text table.
    pub fn text(&self) -> String {
        let r = &self.result;
        let shard = self
            .shard
            .map_or(String::new(), |s| format!(", shard {}/{}", s.k, s.n));
        let partial = if self.partial {
            " - PARTIAL: interrupted, finish with --resume"
        } else {
            ""
        };
        if let Some(cov) = &self.exhaustive {
            return self.text_exhaustive(cov);
        }
        let mut out = format!(
            "sweep {} [{}] under {}: {} seeds ({}..{}{shard}), {}{partial}\n",
            self.scenario,
            self.race,
            self.policy,
            r.runs,
            self.seeds.start,
            self.seeds.end,
            self.strategy
        );
        out.push_str(&interleavings_line(r, "seeds"));
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
                100.0 * t.hits as f64 / r.runs.max(1) as f64,
                100.0 * lo,
                100.0 * hi,
                t.first_seed.unwrap_or(0),
                format!("{seed} ({len})")
            ));
            out.push_str(&format!("      replay: {}\n", self.replay_command(seed)));
        }
        out
    }

    /// The text table of an exhaustive sweep: as a seed sweep's, with run indices for
    /// seeds, the share of interleavings for a rate, and replay lines that name decisions.
    fn text_exhaustive(&self, cov: &Coverage) -> String {
        let r = &self.result;
        let mut out = format!(
            "sweep {} [{}] under {}: {} runs of seed {}, {}\n",
            self.scenario, self.race, self.policy, r.runs, cov.seed, self.strategy
        );
        out.push_str(&Self::coverage_line(cov));
        out.push_str(&interleavings_line(r, "runs"));
        if r.targets.is_empty() {
            out.push_str("  no run hit any waste metric or invariant\n");
            return out;
        }
        out.push_str(&format!(
            "  {:<28} {:>7} {:>8} {:>17} {:>7} {:>14}\n",
            "target", "hits", "share", "", "first", "shortest(dec)"
        ));
        let exact = if cov.complete {
            "exact"
        } else {
            "of runs so far"
        };
        for (name, t) in &r.targets {
            let (len, run) = t.shortest.unwrap_or((0, 0));
            out.push_str(&format!(
                "  {:<28} {:>7} {:>7.2}% {:>17} {:>7} {:>14}\n",
                name,
                t.hits,
                100.0 * t.hits as f64 / r.runs.max(1) as f64,
                exact,
                t.first_seed.unwrap_or(0),
                format!("{run} ({len})")
            ));
            out.push_str(&format!("      replay: {}\n", self.replay_run(cov, run)));
        }
        out
    }

    /// What a seeded and an exhaustive sweep's JSON both hold.
    fn common_json(&self) -> CommonJson<'_> {
        let r = &self.result;
        CommonJson {
            scenario: &self.scenario,
            race: &self.race,
            scenario_ref: &self.scenario_ref,
            policy: &self.policy,
            fixes: &self.fixes,
            policy_flags: &self.policy_flags,
            strategy: &self.strategy,
            version: &self.version,
            runs: r.runs,
            distinct_interleavings: r.interleavings.count(),
            interleavings_capped: r.interleavings.capped,
            identity: self.identity.json(),
        }
    }

    /// The JSON object of an exhaustive sweep (it does not merge: no shards, no seeds).
    fn json_exhaustive(&self, cov: &Coverage) -> Value {
        let r = &self.result;
        let targets = r
            .targets
            .iter()
            .map(|(name, t)| {
                let (len, run) = t.shortest.unwrap_or((0, 0));
                let v = ExhaustiveTargetJson {
                    hits: t.hits,
                    share: t.hits as f64 / r.runs.max(1) as f64,
                    first_run: t.first_seed,
                    shortest_run: run,
                    shortest_decisions: len,
                    decisions: cov.decisions.get(&run),
                    replay: self.replay_run(cov, run),
                };
                (name.as_str(), v)
            })
            .collect();
        let doc = ExhaustiveJson {
            common: self.common_json(),
            seed: cov.seed,
            exhaustive_runs: cov.runs,
            exhaustive_complete: cov.complete,
            max_runs: cov.max_runs,
            targets,
        };
        serde_json::to_value(doc).expect("plain data serialises")
    }

    /// The JSON object.
    pub fn json(&self) -> Value {
        if let Some(cov) = &self.exhaustive {
            return self.json_exhaustive(cov);
        }
        let r = &self.result;
        let targets = r
            .targets
            .iter()
            .map(|(name, t)| {
                let (lo, hi) = wilson95(t.hits, r.runs);
                let (len, seed) = t.shortest.unwrap_or((0, 0));
                let v = TargetJson {
                    hits: t.hits,
                    rate: t.hits as f64 / r.runs.max(1) as f64,
                    ci95: [lo, hi],
                    first_seed: t.first_seed,
                    shortest_seed: seed,
                    shortest_decisions: len,
                    replay: self.replay_command(seed),
                };
                (name.as_str(), v)
            })
            .collect();
        let doc = SweepJson {
            common: self.common_json(),
            seeds: SeedsJson {
                start: self.seeds.start,
                end: self.seeds.end,
            },
            targets,
            interleaving_fingerprints: fingerprints_hex(&r.interleavings),
            shard: self.shard.map(|s| format!("{}/{}", s.k, s.n)),
            partial: self.partial.then_some(true),
        };
        serde_json::to_value(doc).expect("plain data serialises")
    }

    /// Reads a report back from its JSON (for `merge`).
    pub fn from_json(v: &Value) -> Result<SweepReport, String> {
        if v.get("exhaustive_runs").is_some() {
            return Err(
                "an exhaustive sweep's output (--strategy exhaustive): it has no shards and does not merge"
                    .into(),
            );
        }
        let s = |k: &str| field(v, k, k, "a string", Value::as_str).map(str::to_string);
        let targets = read_targets(v)?;
        let shard = match v.get("shard").and_then(Value::as_str) {
            Some(x) => Some(Shard::parse(x)?),
            None => None,
        };
        // The numbers must be those of a sweep that could have run: a hand-edited or
        // corrupted file is refused rather than merged into a wrong answer.
        let seeds =
            uint(&v["seeds"], "start", "seeds.start")?..uint(&v["seeds"], "end", "seeds.end")?;
        if seeds.start >= seeds.end {
            return Err(format!(
                "seeds {}..{}: expected start < end",
                seeds.start, seeds.end
            ));
        }
        let identity = Identity::from_json(&v["identity"])?;
        if identity.get("seeds") != Some(format!("{}..{}", seeds.start, seeds.end).as_str()) {
            return Err(format!(
                "identity: seeds {} but the report's are {}..{}: the file was edited or is corrupt",
                identity.get("seeds").unwrap_or(""),
                seeds.start,
                seeds.end
            ));
        }
        let runs = uint(v, "runs", "runs")?;
        let partial = match v.get("partial") {
            None => false,
            Some(_) => field(v, "partial", "partial", "true or false", Value::as_bool)?,
        };
        check_runs(runs, partial, &seeds, shard)?;
        check_targets(&targets, runs, &seeds, shard)?;
        let interleavings = read_interleavings(v, runs)?;
        Ok(SweepReport {
            scenario: s("scenario")?,
            race: s("race")?,
            scenario_ref: s("scenario_ref")?,
            policy: s("policy")?,
            fixes: read_fixes(v)?,
            policy_flags: s("policy_flags")?,
            strategy: s("strategy")?,
            seeds,
            shard,
            version: s("version")?,
            result: SweepResult {
                runs,
                targets,
                interleavings,
            },
            partial,
            identity,
            exhaustive: None,
        })
    }
}

/// Field `k` of `x` as a non-negative integer; `at` names it in errors.
fn uint(x: &Value, k: &str, at: &str) -> Result<u64, String> {
    field(x, k, at, "a non-negative integer", Value::as_u64)
}

/// A report's `targets`: hits, first seed and shortest run per target.
fn read_targets(v: &Value) -> Result<BTreeMap<String, TargetStats>, String> {
    let mut targets = BTreeMap::new();
    let all = field(v, "targets", "targets", "an object", Value::as_object)?;
    for (name, t) in all {
        let at = |k: &str| format!("targets.{name}.{k}");
        let first_seed = match t.get("first_seed") {
            None => None,
            Some(_) => Some(uint(t, "first_seed", &at("first_seed"))?),
        };
        targets.insert(
            name.clone(),
            TargetStats {
                hits: uint(t, "hits", &at("hits"))?,
                first_seed,
                shortest: Some((
                    uint(t, "shortest_decisions", &at("shortest_decisions"))? as usize,
                    uint(t, "shortest_seed", &at("shortest_seed"))?,
                )),
            },
        );
    }
    Ok(targets)
}

/// A report's `runs` must be the seeds its shard (or the whole sweep) owns; at most that
/// many when `partial`.
fn check_runs(
    runs: u64,
    partial: bool,
    seeds: &Range<u64>,
    shard: Option<Shard>,
) -> Result<(), String> {
    let len = seeds.end - seeds.start;
    let owned = match shard {
        Some(sh) => len / sh.n + u64::from(sh.k - 1 < len % sh.n),
        None => len,
    };
    if runs > owned || (!partial && runs != owned) {
        return Err(format!(
            "runs {runs}: the {} owns {owned} seeds of {}..{}{}",
            if shard.is_some() { "shard" } else { "sweep" },
            seeds.start,
            seeds.end,
            if partial {
                " (at most that many when partial)"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

/// Each target's hits within the runs, and its seeds within the sweep's (and its shard's).
fn check_targets(
    targets: &BTreeMap<String, TargetStats>,
    runs: u64,
    seeds: &Range<u64>,
    shard: Option<Shard>,
) -> Result<(), String> {
    for (name, t) in targets {
        if t.hits == 0 || t.hits > runs {
            return Err(format!(
                "target {name}: {} hits in {runs} runs: expected 1..={runs}",
                t.hits
            ));
        }
        let in_range = |x: u64| seeds.contains(&x);
        if !t.first_seed.is_some_and(in_range) || !t.shortest.is_some_and(|(_, sd)| in_range(sd)) {
            return Err(format!(
                "target {name}: first or shortest seed outside {}..{}",
                seeds.start, seeds.end
            ));
        }
        check_target(name, t, seeds.start, shard)?;
    }
    Ok(())
}

/// A report's `fixes`: the fix names.
fn read_fixes(v: &Value) -> Result<Vec<String>, String> {
    field(v, "fixes", "fixes", "an array", Value::as_array)?
        .iter()
        .enumerate()
        .map(|(i, f)| {
            f.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("field 'fixes[{i}]' is {f}: expected a string (a fix name)"))
        })
        .collect()
}

/// The fingerprints of `i` as one string: 16 lowercase hex digits each, ascending.
fn fingerprints_hex(i: &Interleavings) -> String {
    i.fingerprints.iter().map(|f| format!("{f:016x}")).collect()
}

/// Reads back the interleavings [`SweepReport::json`] writes, refusing what no sweep of
/// `runs` seeds records: a file from before sweeps counted them, a fingerprint list that is
/// not ascending 16-digit hex, a count that does not match it, more distinct sequences than
/// runs (or none for some runs), or a cap that does not hold.
fn read_interleavings(v: &Value, runs: u64) -> Result<Interleavings, String> {
    if v.get("distinct_interleavings").is_none() {
        return Err(
            "missing field 'distinct_interleavings': written before sweeps counted interleavings; rerun the sweep"
                .into(),
        );
    }
    let count = field(
        v,
        "distinct_interleavings",
        "distinct_interleavings",
        "a non-negative integer",
        Value::as_u64,
    )?;
    let capped = field(
        v,
        "interleavings_capped",
        "interleavings_capped",
        "true or false",
        Value::as_bool,
    )?;
    let hex = field(
        v,
        "interleaving_fingerprints",
        "interleaving_fingerprints",
        "a string",
        Value::as_str,
    )?;
    let bad = "interleaving_fingerprints: expected 16 lowercase hex digits per fingerprint, ascending: the file was edited or is corrupt";
    let lower_hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    if hex.len() % 16 != 0 || !hex.bytes().all(lower_hex) {
        return Err(bad.into());
    }
    let mut fingerprints = std::collections::BTreeSet::new();
    for i in (0..hex.len()).step_by(16) {
        let f = u64::from_str_radix(&hex[i..i + 16], 16).map_err(|_| bad.to_string())?;
        if fingerprints.last().is_some_and(|&l| l >= f) {
            return Err(bad.into());
        }
        fingerprints.insert(f);
    }
    let cap = models::sweep::INTERLEAVINGS_CAP as u64;
    let n = fingerprints.len() as u64;
    if n != count || n > runs || (runs > 0 && n == 0) || n > cap || (capped && n != cap) {
        return Err(format!(
            "distinct_interleavings {count}{}: {n} fingerprints in {runs} runs (at most {cap} kept): the file was edited or is corrupt",
            if capped { " (capped)" } else { "" }
        ));
    }
    Ok(Interleavings {
        fingerprints,
        capped,
    })
}

/// Field `k` of the object `x` as `get` reads it; the error names the field by its path `at`
/// (`targets.S1.hits`): missing, or present and not `expected` (a -1 where a count goes).
fn field<'a, T>(
    x: &'a Value,
    k: &str,
    at: &str,
    expected: &str,
    get: impl Fn(&'a Value) -> Option<T>,
) -> Result<T, String> {
    match x.get(k) {
        None => Err(format!("missing field '{at}'")),
        Some(y) => get(y).ok_or_else(|| {
            let mut shown = y.to_string();
            if shown.len() > 40 {
                let cut = (0..=40)
                    .rev()
                    .find(|&i| shown.is_char_boundary(i))
                    .unwrap_or(0);
                shown.truncate(cut);
                shown.push('…');
            }
            format!("field '{at}' is {shown}: expected {expected}")
        }),
    }
}

/// The checks of one target's counts that need no other file: a known target, a first seed
/// no later than the shortest, both owned by the shard.
fn check_target(
    name: &str,
    t: &TargetStats,
    start: u64,
    shard: Option<Shard>,
) -> Result<(), String> {
    let known = models::sweep::waste_targets().contains(&name) || name.starts_with("invariant:");
    if !known {
        return Err(format!(
            "target {name}: expected a waste metric ({}) or invariant:NAME",
            models::sweep::waste_targets().join(", ")
        ));
    }
    let (first, (_, shortest)) = (t.first_seed.unwrap_or(0), t.shortest.unwrap_or((0, 0)));
    if first > shortest || (t.hits == 1 && first != shortest) {
        return Err(format!(
            "target {name}: first seed {first} and shortest seed {shortest} cannot both hold ({} hits)",
            t.hits
        ));
    }
    if let Some(sh) = shard {
        if !sh.owns(start, first) || !sh.owns(start, shortest) {
            return Err(format!(
                "target {name}: seeds {first} and {shortest} are not all of shard {}/{}",
                sh.k, sh.n
            ));
        }
    }
    Ok(())
}

/// Reads one `fsyncsim sweep --json` output (`name` names it in errors): the array of one
/// report per policy, each validated ([`SweepReport::from_json`]), written by this version,
/// all of the same scenario, seed range, strategy and shard, each policy once.
pub fn read_shards(name: &str, text: &str) -> Result<Vec<SweepReport>, String> {
    read_shards_inner(name, text).map_err(|e| models::units::one_line(&e).into_owned())
}

/// [`read_shards`], its errors as built (they quote the file's strings).
fn read_shards_inner(name: &str, text: &str) -> Result<Vec<SweepReport>, String> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| format!("{name}:{}: not sweep JSON: {e}", e.line()))?;
    let reports = v
        .as_array()
        .ok_or_else(|| format!("{name}: expected the JSON array `fsyncsim sweep --json` prints"))?
        .iter()
        .enumerate()
        .map(|(i, r)| SweepReport::from_json(r).map_err(|e| format!("{name}: [{i}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let first = reports
        .first()
        .ok_or_else(|| format!("{name}: an empty array: no sweep in it"))?;
    let mut policies = std::collections::BTreeSet::new();
    for (i, r) in reports.iter().enumerate() {
        if r.version != VERSION {
            return Err(format!(
                "{name}: [{i}]: written by fsyncsim {}; this is {VERSION}: merge with the version that wrote it",
                r.version
            ));
        }
        if r.scenario != first.scenario
            || r.seeds != first.seeds
            || r.strategy != first.strategy
            || r.shard != first.shard
        {
            return Err(format!(
                "{name}: [{i}]: another scenario, seed range, strategy or shard than [0]: not one sweep's output"
            ));
        }
        if let Some((f, a, b)) = r.identity.differs(&first.identity, &["policy"]) {
            return Err(format!(
                "{name}: [{i}]: its {f} ({a}) differs from [0]'s ({b}): not one sweep's output"
            ));
        }
        if !policies.insert(r.policy.clone()) {
            return Err(format!("{name}: [{i}]: policy {} twice", r.policy));
        }
    }
    Ok(reports)
}

/// Merges the shards of one sweep (all policies) into what one unsharded sweep reports.
/// Each input is one file's list of reports (one per policy).
pub fn merge(files: &[(String, Vec<SweepReport>)]) -> Result<Vec<SweepReport>, String> {
    merge_inner(files).map_err(|e| models::units::one_line(&e).into_owned())
}

/// [`merge`], its errors as built (they quote the files' strings).
fn merge_inner(files: &[(String, Vec<SweepReport>)]) -> Result<Vec<SweepReport>, String> {
    let (first_name, first) = files.first().ok_or("no files to merge")?;
    let n = first.first().and_then(|r| r.shard).map_or(1, |s| s.n);
    // The shards seen (a set, not an n-sized table: n comes from the file).
    let mut seen = std::collections::BTreeSet::new();
    let mut merged: Vec<SweepReport> = first.clone();
    for r in merged.iter_mut() {
        r.shard = None;
        r.result = SweepResult::default();
    }
    for (name, reports) in files {
        if reports.len() != first.len() {
            return Err(format!(
                "{name}: {} policies, but {first_name} has {}",
                reports.len(),
                first.len()
            ));
        }
        for (m, r) in merged.iter_mut().zip(reports) {
            if r.partial {
                return Err(format!(
                    "{name}: a partial (interrupted) sweep; finish it with --resume first"
                ));
            }
            let same = r.scenario == m.scenario
                && r.version == m.version
                && r.policy == m.policy
                && r.strategy == m.strategy
                && r.seeds == m.seeds;
            if !same {
                return Err(format!(
                    "{name}: a sweep of {} {} under {} ({}, seeds {}..{}) does not match {first_name}'s {} {} under {} ({}, seeds {}..{})",
                    r.scenario, r.version, r.policy, r.strategy, r.seeds.start, r.seeds.end,
                    m.scenario, m.version, m.policy, m.strategy, m.seeds.start, m.seeds.end
                ));
            }
            if let Some((f, a, b)) = r.identity.differs(&m.identity, &[]) {
                return Err(format!(
                    "{name}: the sweep under {} has another {f} ({a}) than {first_name}'s ({b}): shards of different sweeps do not merge",
                    r.policy
                ));
            }
            let s = r.shard.unwrap_or(Shard::ALL);
            if s.n != n {
                return Err(format!(
                    "{name}: shard {}/{} of a sweep split in {n}",
                    s.k, s.n
                ));
            }
            m.result = std::mem::take(&mut m.result).merge(r.result.clone());
        }
        let k = reports.first().and_then(|r| r.shard).map_or(1, |s| s.k);
        if !seen.insert(k) {
            return Err(format!("{name}: shard {k}/{n} given twice"));
        }
    }
    // The first k in 1..=n not seen (the set is sorted).
    let mut want = 1;
    for &k in &seen {
        if k != want {
            break;
        }
        want += 1;
    }
    if want <= n {
        return Err(format!("shard {want}/{n} is missing"));
    }
    Ok(merged)
}

/// The coverage line: how many distinct decision sequences the sweep's runs made.
fn interleavings_line(r: &SweepResult, unit: &str) -> String {
    format!(
        "  interleavings: {} distinct decision sequences in {} {unit}\n",
        r.interleavings.shown(),
        r.runs
    )
}

/// The fields of a seeded and of an exhaustive sweep's JSON: the scenario, the policy and
/// strategy, the runs and interleavings, the identity.
#[derive(Serialize)]
struct CommonJson<'a> {
    scenario: &'a str,
    race: &'a str,
    scenario_ref: &'a str,
    policy: &'a str,
    fixes: &'a [String],
    policy_flags: &'a str,
    strategy: &'a str,
    version: &'a str,
    runs: u64,
    distinct_interleavings: u64,
    interleavings_capped: bool,
    identity: Value,
}

/// A seeded sweep's JSON (`sweep --json`, the shards `merge` reads back).
#[derive(Serialize)]
struct SweepJson<'a> {
    #[serde(flatten)]
    common: CommonJson<'a>,
    seeds: SeedsJson,
    targets: BTreeMap<&'a str, TargetJson>,
    interleaving_fingerprints: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    partial: Option<bool>,
}

/// The seed range of a sweep.
#[derive(Serialize)]
struct SeedsJson {
    start: u64,
    end: u64,
}

/// One target's hits over the seeds, with its Wilson interval and the shortest hit.
#[derive(Serialize)]
struct TargetJson {
    hits: u64,
    rate: f64,
    ci95: [f64; 2],
    first_seed: Option<u64>,
    shortest_seed: u64,
    shortest_decisions: usize,
    replay: String,
}

/// An exhaustive sweep's JSON.
#[derive(Serialize)]
struct ExhaustiveJson<'a> {
    #[serde(flatten)]
    common: CommonJson<'a>,
    seed: u64,
    exhaustive_runs: u64,
    exhaustive_complete: bool,
    max_runs: u64,
    targets: BTreeMap<&'a str, ExhaustiveTargetJson<'a>>,
}

/// One target's hits over an exhaustive sweep's runs, with the shortest hit's decisions.
#[derive(Serialize)]
struct ExhaustiveTargetJson<'a> {
    hits: u64,
    share: f64,
    first_run: Option<u64>,
    shortest_run: u64,
    shortest_decisions: usize,
    decisions: Option<&'a Vec<u32>>,
    replay: String,
}
