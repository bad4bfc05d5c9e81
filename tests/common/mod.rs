//! What the tests that run the built binary share: running it in a directory, its stderr,
//! the one-line bad-input assertion, and a fresh temporary directory.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs fsyncsim with `args` in `dir`.
pub fn fsyncsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run fsyncsim")
}

/// The stderr of `o`, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Asserts exit `code`, exactly one line on stderr containing `needles`, nothing on stdout.
pub fn assert_one_line_in(dir: &Path, code: i32, args: &[&str], needles: &[&str]) {
    let o = fsyncsim_in(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}: printed output");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
}

/// A fresh empty directory under the system temp dir, named after `name` and the process.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fsyncsim-i28-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The `*.toml` files of `dir`, in name order.
pub fn toml_files(dir: &str) -> Vec<PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths
}

/// One scripted run of `sc` under `p` on its own device, seed 1.
pub fn scripted(
    sc: &models::scenario::Scenario,
    p: &models::kernel::Policy,
) -> models::scenario::RunResult {
    let dev = models::block::DiskConfig::resolve(&sc.device).unwrap();
    models::scenario::run(sc, p, &dev, 1, &models::scenario::Interleaving::Script)
}

/// An explored (random) sweep of `sc` under `p` over `seeds`, on two threads.
pub fn sweep(
    sc: &models::scenario::Scenario,
    p: &models::kernel::Policy,
    seeds: std::ops::Range<u64>,
) -> models::sweep::SweepResult {
    let dev = models::block::DiskConfig::resolve(&sc.device).unwrap();
    let random = models::scenario::Interleaving::Random;
    models::sweep::sweep_all(sc, p, &dev, seeds, 2, &random).unwrap()
}

/// The invariant targets a sweep hit, with their hit counts.
pub fn invariant_hits(r: &models::sweep::SweepResult) -> Vec<(String, u64)> {
    r.targets
        .iter()
        .filter(|(k, _)| k.starts_with("invariant:"))
        .map(|(k, v)| (k.clone(), v.hits))
        .collect()
}

/// A scenario of one task `A` running `ops` after `setup`, under `policy` on both sides;
/// `name` names it in errors.
pub fn one_task(
    name: &str,
    policy: &str,
    setup: &[&str],
    ops: &[&str],
) -> models::scenario::Scenario {
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let t = format!(
        "name = \"{name}\"\nrace = \"{}\"\ntitle = \"t\"\nsummary = \"s\"\nsetup = [{}]\n[[task]]\nname = \"A\"\nops = [{}]\n[policies]\nbefore = \"{policy}\"\nafter = \"{policy}\"\n",
        name.to_uppercase(),
        list(setup),
        list(ops)
    );
    models::scenario::Scenario::parse(&t, &format!("{name}.toml"))
        .unwrap_or_else(|e| panic!("{e}\n{t}"))
}

/// The scenario `scenarios/{rel}.toml` under every release preset: its scripted crash at
/// `[expect.crash]`'s point violates nothing and recovers the stated state, and a sweep over
/// `seeds` hits no invariant.
pub fn crash_state_holds_on_every_preset(rel: &str, seeds: std::ops::Range<u64>) {
    crash_state_holds_on_every_preset_but(rel, seeds, &[]);
}

/// As `crash_state_holds_on_every_preset`, with the sweep's hits of the invariants in
/// `known` (a true kernel bug the file's header explains) left out.
pub fn crash_state_holds_on_every_preset_but(
    rel: &str,
    seeds: std::ops::Range<u64>,
    known: &[&str],
) {
    use models::kernel::{preset_names, Policy};
    let path = format!("{}/scenarios/{rel}.toml", env!("CARGO_MANIFEST_DIR"));
    let sc = models::scenario::Scenario::load(&path).unwrap();
    let e = sc.expect_crash.as_ref().expect("[expect.crash]");
    let dev = models::block::DiskConfig::resolve(&sc.device).unwrap();
    for preset in preset_names() {
        let p = Policy::preset(preset).unwrap();
        let (r, state) = models::scenario::crash_state(&sc, &p, &dev, sc.seed, &e.at);
        assert!(
            r.violations.is_empty(),
            "{rel} {preset}: {:?}",
            r.violations
        );
        let diffs = e.compare(&state.expect("reached").expect("recovers"));
        assert!(diffs.is_empty(), "{rel} {preset}: {diffs:?}");
        let hits: Vec<_> = invariant_hits(&sweep(&sc, &p, seeds.clone()))
            .into_iter()
            .filter(|h| h.1 > 0 && !known.iter().any(|k| h.0 == format!("invariant:{k}")))
            .collect();
        assert!(hits.is_empty(), "{rel} {preset}: {hits:?}");
    }
}

/// The Python that imports `module` (a consumer the tests run): `$FSYNCSIM_CONSUMERS_PYTHON`,
/// else the venv `.ci/run` makes under target/.
pub fn consumer_python(module: &str) -> Option<PathBuf> {
    let py = std::env::var_os("FSYNCSIM_CONSUMERS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/consumers-venv/bin/python")
        });
    let ok = Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

/// Says that `test` ran without the consumer `what` (it is not installed here).
pub fn skip(test: &str, what: &str) {
    println!("SKIP {test}: {what} is not installed (.ci/run installs it)");
}

/// Runs `cmd` with `input` on its standard input and returns what it printed.
pub fn fed(cmd: &mut Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the consumer");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// A btrfs of `release` (a preset name) on the `nvme` device, in a new simulation.
pub fn btrfs_sim(release: &str) -> (sim::Sim, models::btrfs::Btrfs) {
    let mut sim = sim::Sim::new();
    let h = sim.handle();
    let mut streams = sim::RngStreams::new(1);
    let cfg = models::block::DiskConfig::resolve("nvme").unwrap();
    let dev = models::block::add_disk(&mut sim, cfg, &mut streams, false);
    let policy = models::kernel::Policy::preset(release).unwrap();
    let costs = models::btrfs::Costs::default();
    let fs = models::btrfs::Btrfs::new(&h, dev, policy.btrfs, costs);
    (sim, fs)
}

/// What each of `ops` (scenario spelling) returned, run in one task on `fs`: None, or the
/// error's text.
pub fn run_ops(mut sim: sim::Sim, fs: &models::btrfs::Btrfs, ops: &[&str]) -> Vec<Option<String>> {
    let ops: Vec<_> = ops
        .iter()
        .map(|s| models::scenario::parse_op(s).unwrap())
        .collect();
    let task_fs = fs.clone();
    let out = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let got = out.clone();
    sim.spawn("A", async move {
        for op in &ops {
            let r = task_fs.run_op(op).await.err().map(|e| e.0);
            got.borrow_mut().push(r);
        }
    });
    sim.run().unwrap();
    out.take()
}

/// dbench, 16 clients for 1 s after 250 ms, under linux-5.11 with `costs.tree_locks =
/// locks`; its crash check clean.
pub fn dbench16(locks: u64) -> models::workload::fsload::WorkloadResult {
    dbench16_with("tree_locks", locks)
}

/// `dbench16` with `costs.KEY = value` instead.
pub fn dbench16_with(key: &str, value: u64) -> models::workload::fsload::WorkloadResult {
    let mut s = models::workload::spec::Spec::load("dbench").unwrap();
    s.clients = 16;
    s.duration = sim::S;
    s.warmup = sim::S / 4;
    s.costs.insert(key.into(), value);
    let d = models::block::DiskConfig::resolve(&s.device).unwrap();
    let p = models::kernel::parse_policy("linux-5.11").unwrap();
    let r = models::workload::fsload::run(&s, &p, &d, 1, None).unwrap();
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    r
}

/// The time `op` spent in the classes whose names start with `prefix`.
pub fn attributed(r: &models::workload::fsload::WorkloadResult, op: &str, prefix: &str) -> u64 {
    let o = r.op(op).expect("the operation ran");
    r.classes
        .iter()
        .zip(&o.attribution)
        .filter(|(c, _)| c.starts_with(prefix))
        .map(|(_, ns)| *ns)
        .sum()
}
