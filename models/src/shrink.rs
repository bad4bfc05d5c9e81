//! Shrinking: from an explored run that hits a target (a waste metric or an invariant
//! violation), find a small scripted scenario that still hits it.
//!
//! 1. The hitting run is re-run with its log kept; the order in which it released tasks at
//!    named points becomes a full script (`Scenario::script`).
//! 2. Delta debugging (Zeller's ddmin) then removes script steps (preemptions), whole tasks,
//!    task and setup operations, and shortens writes, as long as the scripted scenario — written
//!    out as TOML and parsed back, exactly as `fsyncsim run FILE` will read it — still hits the
//!    target under the shrink policy and still plays cleanly under every policy `run` uses.
//!
//! Every candidate is a deterministic run with the original seed, so the result is a fixed
//! function of (scenario, policy, seed, strategy, target).

use crate::block::DiskConfig;
use crate::kernel::Policy;
use crate::scenario::{points_of, run_with_trace, Interleaving, RunResult, Scenario, Step};
use crate::vfs::Op;

pub use crate::sweep::Target;

/// The size of a scenario, as shrinking counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Tasks (besides setup).
    pub tasks: usize,
    /// Operations, setup included.
    pub ops: usize,
    /// Scheduling decisions: a strategy's choices, or a script's steps.
    pub decisions: usize,
}

impl Size {
    /// The size of a scripted scenario.
    pub fn of(sc: &Scenario) -> Size {
        Size {
            tasks: sc.tasks.len(),
            ops: sc.setup.len() + sc.tasks.iter().map(|(_, o)| o.len()).sum::<usize>(),
            decisions: sc.script.len(),
        }
    }
}

/// A finished shrink.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal scripted scenario.
    pub scenario: Scenario,
    /// Its scenario file.
    pub toml: String,
    /// The explored run's size (decisions: the strategy's choices).
    pub before: Size,
    /// The full script the explored run corresponds to (steps: points released).
    pub full_script: usize,
    /// The result's size (decisions: script steps).
    pub after: Size,
    /// The target's value in the explored run and in the shrunk scenario.
    pub value: (u64, u64),
    /// Candidate runs tried.
    pub runs: u64,
}

/// What may change while shrinking.
#[derive(Clone)]
struct Candidate {
    setup: Vec<Op>,
    tasks: Vec<(String, Vec<Op>)>,
    steps: Vec<(String, String)>,
}

impl Candidate {
    /// Drops steps of tasks that are gone or points their operations no longer reach.
    fn prune(mut self, fs: crate::mount::FsKind) -> Self {
        self.tasks.retain(|(_, ops)| !ops.is_empty());
        let tasks = &self.tasks;
        self.steps.retain(|(t, p)| {
            tasks
                .iter()
                .find(|(n, _)| n == t)
                .is_some_and(|(_, ops)| ops.iter().any(|o| points_of(fs, o).contains(p)))
        });
        self
    }

    fn size(&self) -> (usize, usize, usize) {
        (
            self.tasks.len(),
            self.setup.len() + self.tasks.iter().map(|(_, o)| o.len()).sum::<usize>(),
            self.steps.len(),
        )
    }
}

/// The inputs every candidate run shares.
struct Ctx<'a> {
    base: &'a Scenario,
    policy: &'a Policy,
    /// Policies the written file must also play under (post when shrinking pre-fix); only
    /// checked once `strict` is set, since the full script of a pre-fix run often names
    /// points the fixed code never reaches.
    also: Vec<Policy>,
    strict: bool,
    device: &'a DiskConfig,
    /// How the file names the device (preset name or path) it was tested on.
    device_spec: String,
    seed: u64,
    target: &'a Target,
    header: Vec<String>,
    runs: u64,
}

impl<'a> Ctx<'a> {
    /// The shrink of `base`'s run under `policy` (one run made: the explored one).
    fn new(
        base: &'a Scenario,
        policy: &'a Policy,
        device: &'a DiskConfig,
        device_spec: &str,
        seed: u64,
        target: &'a Target,
    ) -> Self {
        // The written file must play under every policy `fsyncsim run FILE` uses by default.
        let pre = base.pre_policy() == *policy;
        let also = if pre {
            vec![base.post_policy()]
        } else {
            vec![]
        };
        Ctx {
            base,
            policy,
            also,
            strict: false,
            device,
            device_spec: device_spec.to_string(),
            seed,
            target,
            header: Vec::new(),
            runs: 1,
        }
    }
}

impl Ctx<'_> {
    /// The candidate as a scenario file, parsed back (None if it is not a valid scenario).
    fn scenario(&self, c: &Candidate) -> Option<(Scenario, String)> {
        let mut sc = self.base.clone();
        sc.name = format!("{}-seed{}-shrunk", self.base.name, self.seed);
        sc.seed = self.seed;
        sc.device = self.device_spec.clone();
        sc.setup = c.setup.clone();
        sc.tasks = c.tasks.clone();
        sc.script = c
            .steps
            .iter()
            .map(|(t, p)| Step {
                task: t.clone(),
                point: p.clone(),
                line: 0,
                unless_blocked: false,
            })
            .collect();
        sc.expect_pre.clear();
        sc.expect_post.clear();
        let text = sc.to_toml(&self.header);
        Scenario::parse(&text, &self.base.origin)
            .ok()
            .map(|s| (s, text))
    }

    /// Whether the candidate still hits the target and plays cleanly.
    fn test(&mut self, c: &Candidate) -> bool {
        let Some((sc, _)) = self.scenario(c) else {
            return false;
        };
        let clean = |r: &RunResult| r.unplayable().is_none();
        self.runs += 1;
        let r = run_with_trace(
            &sc,
            self.policy,
            self.device,
            self.seed,
            &Interleaving::Script,
            false,
        );
        if !clean(&r) || !self.target.hit(&r) {
            return false;
        }
        for p in self.also.iter().filter(|_| self.strict) {
            self.runs += 1;
            let r = run_with_trace(&sc, p, self.device, self.seed, &Interleaving::Script, false);
            if !clean(&r) {
                return false;
            }
        }
        true
    }
}

/// Removes script steps, tasks and operations, and shortens writes, until nothing changes.
fn shrink_passes(ctx: &mut Ctx<'_>, cur: &mut Candidate, sector: u64) {
    loop {
        let size = cur.size();
        // Preemptions: script steps.
        let steps = std::mem::take(&mut cur.steps);
        cur.steps = ddmin(steps, &mut |s| {
            let c = Candidate {
                steps: s.to_vec(),
                ..cur.clone()
            };
            ctx.test(&c)
        });
        // Whole tasks.
        let mut i = cur.tasks.len();
        while i > 0 {
            i -= 1;
            let mut c = cur.clone();
            c.tasks.remove(i);
            let c = c.prune(ctx.base.mount.fs);
            if ctx.test(&c) {
                *cur = c;
            }
        }
        // Operations of each task, then of setup.
        for i in (0..cur.tasks.len()).rev() {
            if i >= cur.tasks.len() {
                continue;
            }
            let ops = cur.tasks[i].1.clone();
            let kept = ddmin(ops, &mut |o| {
                let mut c = cur.clone();
                c.tasks[i].1 = o.to_vec();
                ctx.test(&c.prune(ctx.base.mount.fs))
            });
            cur.tasks[i].1 = kept;
            *cur = cur.clone().prune(ctx.base.mount.fs);
        }
        let setup = std::mem::take(&mut cur.setup);
        cur.setup = ddmin(setup, &mut |o| {
            let c = Candidate {
                setup: o.to_vec(),
                ..cur.clone()
            };
            ctx.test(&c)
        });
        // Shorter writes: one sector instead of many.
        for which in 0..=cur.tasks.len() {
            let len = match which {
                0 => cur.setup.len(),
                w => cur.tasks[w - 1].1.len(),
            };
            for j in 0..len {
                let mut c = cur.clone();
                let op = match which {
                    0 => &mut c.setup[j],
                    w => &mut c.tasks[w - 1].1[j],
                };
                if let Op::Write(_, n) | Op::WriteOsync(_, n) | Op::MmapWrite(_, n) = op {
                    if *n > sector {
                        *n = sector;
                        if ctx.test(&c) {
                            *cur = c;
                        }
                    }
                }
            }
        }
        if cur.size() == size {
            break;
        }
    }
}

impl Ctx<'_> {
    /// The index of the script step a post-fix run of the candidate could not play.
    fn unplayable_step(&mut self, c: &Candidate) -> Option<usize> {
        let (sc, _) = self.scenario(c)?;
        for p in &self.also {
            self.runs += 1;
            let r = run_with_trace(&sc, p, self.device, self.seed, &Interleaving::Script, false);
            for v in r.violations.iter().filter(|v| v.invariant == "script") {
                let n = v
                    .message
                    .split("script step ")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse::<usize>().ok());
                if let Some(n) = n.filter(|&n| (1..=c.steps.len()).contains(&n)) {
                    return Some(n - 1);
                }
            }
        }
        None
    }
}

/// Zeller's ddmin: a 1-minimal sublist of `items` for which `test` holds (it holds for
/// `items`).
fn ddmin<T: Clone>(items: Vec<T>, test: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    let mut items = items;
    let mut n = 2usize;
    while !items.is_empty() {
        if items.len() == 1 {
            if test(&[]) {
                items.clear();
            }
            break;
        }
        let n_eff = n.min(items.len());
        let chunk = items.len().div_ceil(n_eff);
        let mut reduced = false;
        for start in (0..items.len()).step_by(chunk) {
            let end = (start + chunk).min(items.len());
            let complement: Vec<T> = items[..start]
                .iter()
                .chain(&items[end..])
                .cloned()
                .collect();
            if test(&complement) {
                items = complement;
                n = (n_eff - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if n_eff >= items.len() {
                break;
            }
            n = (n_eff * 2).min(items.len());
        }
    }
    items
}

/// Shrinks the explored run of `sc` under `policy` with `seed` and `how` to a small scripted
/// scenario that still hits `target`. `command` (the shrink command line) and `run_flags` (the
/// `fsyncsim run` flags selecting `policy`) go into the file's header.
#[allow(clippy::too_many_arguments)]
pub fn shrink(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    how: &Interleaving,
    target: &Target,
    command: &str,
    run_flags: &str,
) -> Result<Shrunk, String> {
    shrink_on(
        sc, policy, device, &sc.device, seed, how, target, command, run_flags,
    )
}

/// As `shrink`, on a device other than the scenario's: `device_spec` (a preset name or a
/// device file path) is written into the result so that it replays on the same device.
#[allow(clippy::too_many_arguments)]
pub fn shrink_on(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    device_spec: &str,
    seed: u64,
    how: &Interleaving,
    target: &Target,
    command: &str,
    run_flags: &str,
) -> Result<Shrunk, String> {
    let first = run_with_trace(sc, policy, device, seed, how, true);
    let v0 = target.value(&first);
    refuse_first_run(&first, target, seed, policy)?;
    let steps = task_releases(sc, &first);
    let full_script = steps.len();
    let before = Size {
        tasks: sc.tasks.len(),
        ops: Size::of(sc).ops,
        decisions: first.decisions.len(),
    };
    let pre = sc.pre_policy() == *policy;
    let mut ctx = Ctx::new(sc, policy, device, device_spec, seed, target);
    let mut cur = Candidate {
        setup: sc.setup.clone(),
        tasks: sc.tasks.clone(),
        steps,
    };
    if !ctx.test(&cur) {
        return Err(format!(
            "seed {seed} hits {} only with choices a script cannot express (ties between \
             tasks outside named points); try another seed",
            target.name()
        ));
    }
    // Phase 1 shrinks for the target alone; phase 2 (strict) also requires the file to play
    // under the post-fix policy, dropping the steps that stop it.
    for strict in [false, true] {
        ctx.strict = strict;
        if strict && !ctx.test(&cur) {
            make_strict(&mut ctx, &mut cur)?;
        }
        shrink_passes(&mut ctx, &mut cur, sc.costs.sectorsize);
    }
    let (tasks, ops, decisions) = cur.size();
    let after = Size {
        tasks,
        ops,
        decisions,
    };
    let mut header = header_lines(command, sc, policy, seed, &before, &after, full_script);
    let (out, v1, reproduce) = file_expectations(&ctx, &cur, pre, run_flags);
    header.push(reproduce);
    ctx.header = header;
    let toml = {
        let text = out.to_toml(&ctx.header);
        // What is written is what was tested: parse it back once more.
        Scenario::parse(&text, &sc.origin).map_err(|e| format!("internal error: {e}"))?;
        text
    };
    Ok(Shrunk {
        scenario: out,
        toml,
        before,
        full_script,
        after,
        value: (v0, v1),
        runs: ctx.runs,
    })
}

/// The points the explored run released to the scenario's own tasks, in order: the full
/// script shrinking starts from.
fn task_releases(sc: &Scenario, first: &RunResult) -> Vec<(String, String)> {
    let names: Vec<&str> = sc.tasks.iter().map(|(n, _)| n.as_str()).collect();
    first
        .releases
        .iter()
        .filter(|(t, _)| names.contains(&t.as_str()))
        .cloned()
        .collect()
}

/// The file header's first lines: the command, and the sizes before and after.
fn header_lines(
    command: &str,
    sc: &Scenario,
    policy: &Policy,
    seed: u64,
    before: &Size,
    after: &Size,
    full_script: usize,
) -> Vec<String> {
    vec![
        format!("Shrunk by `{command}`."),
        format!(
            "From {} seed {seed} under {}: tasks {} -> {}, operations {} -> {}, decisions {} -> {} script steps ({} points released).",
            sc.name,
            policy.name,
            before.tasks,
            after.tasks,
            before.ops,
            after.ops,
            before.decisions,
            after.decisions,
            full_script
        ),
    ]
}

/// The first (explored) run must play and hit the target.
fn refuse_first_run(
    first: &RunResult,
    target: &Target,
    seed: u64,
    policy: &Policy,
) -> Result<(), String> {
    // A run that cannot play (a stuck script, a failed operation) is bad input, said as
    // `run` says it, not a seed that misses the target.
    if let (false, Some(v)) = (target.hit(first), first.unplayable()) {
        return Err(format!("{} (under {})", v.message, policy.name));
    }
    if !target.hit(first) {
        return Err(format!(
            "seed {seed} does not hit {} under {}; run `fsyncsim sweep` to find a seed that does",
            target.name(),
            policy.name
        ));
    }
    Ok(())
}

/// Phase 2's start when the candidate does not play under the post-fix policy: drops the
/// steps it names as unplayable, then shrinks the script until it plays (or fails).
fn make_strict(ctx: &mut Ctx, cur: &mut Candidate) -> Result<(), String> {
    // First drop, one by one, the steps the post-fix runs name as unplayable.
    while let Some(i) = ctx.unplayable_step(cur) {
        let mut c = cur.clone();
        c.steps.remove(i);
        ctx.strict = false;
        let ok = ctx.test(&c);
        ctx.strict = true;
        if !ok {
            break;
        }
        *cur = c;
    }
    let steps = std::mem::take(&mut cur.steps);
    let kept = ddmin(steps, &mut |s| {
        let c = Candidate {
            steps: s.to_vec(),
            ..cur.clone()
        };
        ctx.test(&c)
    });
    cur.steps = kept;
    if !ctx.test(cur) {
        return Err(format!(
            "seed {} hits {} only with a script the post-fix policy cannot play; \
             shrink under an explicit --policy/--without instead",
            ctx.seed,
            ctx.target.name()
        ));
    }
    Ok(())
}

/// The shrunk file's own expectations (the target under the policy; pre-fix, also the
/// post-fix value), the target's value, and the header's line saying how to reproduce it.
fn file_expectations(
    ctx: &Ctx,
    cur: &Candidate,
    pre: bool,
    run_flags: &str,
) -> (Scenario, u64, String) {
    let (sc, policy, device, seed, target) =
        (ctx.base, ctx.policy, ctx.device, ctx.seed, ctx.target);
    let (final_sc, _) = ctx.scenario(cur).expect("the last candidate parsed");
    let r = run_with_trace(
        &final_sc,
        policy,
        device,
        seed,
        &Interleaving::Script,
        false,
    );
    let v1 = target.value(&r);
    let mut out = final_sc.clone();
    let reproduce = if let (true, Target::Metric(m, _)) = (pre, target) {
        out.expect_pre.insert(m.clone(), v1);
        let post = run_with_trace(
            &final_sc,
            &sc.post_policy(),
            device,
            seed,
            &Interleaving::Script,
            false,
        );
        out.expect_post
            .insert(m.clone(), post.metrics.get(m).unwrap_or(0));
        format!(
            "Reproduce: fsyncsim run FILE   ({} = {v1} pre-fix; `fsyncsim check FILE` verifies).",
            m
        )
    } else {
        format!(
            "Reproduce: fsyncsim run FILE {run_flags}   ({} = {v1}).",
            target.name()
        )
    };
    (out, v1, reproduce)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_a_one_minimal_subset() {
        let items: Vec<u32> = (0..40).collect();
        let mut calls = 0;
        let got = ddmin(items, &mut |s| {
            calls += 1;
            s.contains(&7) && s.contains(&31)
        });
        assert_eq!(got, vec![7, 31]);
        assert!(calls < 200, "{calls} tests");
        assert_eq!(ddmin(vec![1, 2, 3], &mut |_| true), Vec::<i32>::new());
        assert_eq!(ddmin(vec![1, 2, 3], &mut |s| s.len() == 3), vec![1, 2, 3]);
    }

    #[test]
    fn targets_parse_and_reject() {
        assert_eq!(
            Target::parse("unnecessary_inode_logs"),
            Ok(Target::Metric("unnecessary_inode_logs".into(), 1))
        );
        assert_eq!(Target::parse("S2"), Ok(Target::Invariant("S2".into())));
        assert_eq!(
            Target::parse("invariant:S1"),
            Ok(Target::Invariant("S1".into()))
        );
        assert!(Target::parse("S9").is_err());
        assert!(Target::parse("fast").is_err());
        let t = Target::parse("relogged_inodes>=2").unwrap();
        assert_eq!(t, Target::Metric("relogged_inodes".into(), 2));
        assert_eq!(t.name(), "relogged_inodes>=2");
        assert_eq!(Target::parse(&t.name()), Ok(t));
        for bad in [
            "relogged_inodes>=0",
            "relogged_inodes>=-1",
            "relogged_inodes>=x",
            "nope>=2",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
