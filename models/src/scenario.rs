//! Race scenarios: parsing the TOML files in `scenarios/`, validating them (errors carry
//! `file:line`), and running one under a policy.

use crate::block::DiskConfig;
use crate::btrfs::{Costs, Fix, OpLatency, Violation};
use crate::kernel::Policy;
use crate::mount::{FsKind, Mount, MountOptions, Mounted};
use crate::vfs::metrics::INVARIANTS;
use crate::vfs::recovered::{CrashExpect, CrashPoint, ExtentKind};
use crate::vfs::Metrics;
use crate::vfs::{Filesystem, Op, Recovered};
use rand_distr::{Distribution, Exp1};
use serde::Deserialize;
use sim::{Dfs, Pct, RandomWalk, Replay, RngStreams, Script, ScriptThen, Sim, SimError, Urw};
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

/// The scenarios shipped inside the binary: (file name, text).
pub const BUILTIN: [(&str, &str); 9] = [
    (
        "r1-link-rename-logged-trans.toml",
        include_str!("../../scenarios/r1-link-rename-logged-trans.toml"),
    ),
    (
        "r2-fast-fsync-old-extents.toml",
        include_str!("../../scenarios/r2-fast-fsync-old-extents.toml"),
    ),
    (
        "r3-ancestor-created-previous-trans.toml",
        include_str!("../../scenarios/r3-ancestor-created-previous-trans.toml"),
    ),
    (
        "r4-stale-last-unlink-trans.toml",
        include_str!("../../scenarios/r4-stale-last-unlink-trans.toml"),
    ),
    (
        "r5-double-commit-after-full-commit.toml",
        include_str!("../../scenarios/r5-double-commit-after-full-commit.toml"),
    ),
    (
        "r6-log-start-blocked-on-tree-log-mutex.toml",
        include_str!("../../scenarios/r6-log-start-blocked-on-tree-log-mutex.toml"),
    ),
    (
        "r7-fsync-syncs-unchanged-log.toml",
        include_str!("../../scenarios/r7-fsync-syncs-unchanged-log.toml"),
    ),
    (
        "j1a-fsync-waits-for-async-commit.toml",
        include_str!("../../scenarios/j1a-fsync-waits-for-async-commit.toml"),
    ),
    (
        "j1b-reader-stalled-by-sync-commit.toml",
        include_str!("../../scenarios/j1b-reader-stalled-by-sync-commit.toml"),
    ),
];

/// A built-in item by `name`, else a file at path `spec` parsed with `parse`; `what` names
/// the kind in errors ("scenario", "workload"), `arg` the command-line argument.
pub fn load_named<T>(
    spec: &str,
    builtin: Vec<T>,
    name: impl Fn(&T) -> &String,
    parse: impl Fn(&str, &str) -> Result<T, ScenarioError>,
    what: &str,
    arg: &str,
) -> Result<T, ScenarioError> {
    let names: Vec<String> = builtin.iter().map(|t| name(t).clone()).collect();
    if let Some(t) = builtin.into_iter().find(|t| name(t) == spec) {
        return Ok(t);
    }
    if spec.ends_with(".toml") || std::path::Path::new(spec).exists() {
        let text = crate::units::read_text(spec, what)
            .map_err(|(location, message)| ScenarioError { location, message })?;
        return parse(&text, spec);
    }
    Err(ScenarioError {
        location: arg.to_string(),
        message: format!(
            "unknown {what} '{spec}': expected one of {} or a path to a {what} TOML file",
            names.join(", ")
        ),
    })
}

/// A bad scenario or workload file: `file:line: what was expected`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", crate::units::one_line(.location), crate::units::one_line(.message))]
pub struct ScenarioError {
    /// `file:line`.
    pub location: String,
    /// What is wrong and what was expected.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    name: Spanned<String>,
    ops: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    steps: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    race: Spanned<String>,
    title: String,
    summary: String,
    device: Option<Spanned<String>>,
    fs: Option<Spanned<String>>,
    mount: Option<Spanned<String>>,
    mkfs: Option<Spanned<String>>,
    seed: Option<u64>,
    commit_interval: Option<Spanned<String>>,
    costs: Option<BTreeMap<String, Spanned<u64>>>,
    #[serde(default)]
    setup: Vec<Spanned<String>>,
    task: Vec<TaskFile>,
    script: Option<ScriptFile>,
    policies: Option<BTreeMap<String, Spanned<String>>>,
    expect: Option<ExpectFile>,
    key_metric: Option<Spanned<String>>,
}

/// `[expect.*]`: a metric table per policy label, and `[expect.crash]` (what a power
/// failure must leave), told apart by name.
#[derive(Default)]
struct ExpectFile {
    metrics: BTreeMap<String, BTreeMap<String, Spanned<u64>>>,
    crash: Option<CrashFile>,
    /// `[expect.crash-N]`: the Nth of several power failures (`power-fail`).
    crash_more: BTreeMap<u32, CrashFile>,
}

impl<'de> Deserialize<'de> for ExpectFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ExpectFile;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("tables [expect.<policy label>] of metrics and [expect.crash]")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<ExpectFile, A::Error> {
                let mut out = ExpectFile::default();
                while let Some(k) = m.next_key::<String>()? {
                    if k == CRASH_TABLE {
                        out.crash = Some(m.next_value()?);
                    } else if let Some(n) = crash_table_number(&k) {
                        out.crash_more.insert(n, m.next_value()?);
                    } else {
                        let v = m.next_value()?;
                        out.metrics.insert(k, v);
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// The name of the crash table under `[expect]` (never a policy label).
const CRASH_TABLE: &str = "crash";

/// N of a `crash-N` table name (N from 1; never a policy label).
fn crash_table_number(k: &str) -> Option<u32> {
    k.strip_prefix("crash-")
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|&n| n >= 1)
}

/// `[expect.crash]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CrashFile {
    at: Spanned<String>,
    #[serde(default)]
    exists: Vec<Spanned<String>>,
    #[serde(default)]
    absent: Vec<Spanned<String>>,
    #[serde(default)]
    size: BTreeMap<String, Spanned<u64>>,
    #[serde(default)]
    nlink: BTreeMap<String, Spanned<u64>>,
    #[serde(default)]
    xattrs: BTreeMap<String, Spanned<Vec<String>>>,
    #[serde(default)]
    extents: BTreeMap<String, Spanned<Vec<String>>>,
    #[serde(default)]
    shared: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    kind: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    target: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    mode: BTreeMap<String, Spanned<i64>>,
}

/// `[expect.crash]` as `to_toml` writes it (what the parser reads back to the same table).
fn crash_toml(e: &CrashExpect) -> String {
    crash_toml_named(e, CRASH_TABLE)
}

/// `[expect.<table>]` of a crash expectation.
fn crash_toml_named(e: &CrashExpect, table: &str) -> String {
    let q = |v: &str| toml::Value::String(v.to_string()).to_string();
    let names = |v: &[String]| v.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ");
    let mut t = format!("\n[{}.{table}]\nat = {}\n", "expect", q(&e.at.to_string()));
    if !e.exists.is_empty() {
        t.push_str(&format!("exists = [{}]\n", names(&e.exists)));
    }
    if !e.absent.is_empty() {
        t.push_str(&format!("absent = [{}]\n", names(&e.absent)));
    }
    let table = |t: &mut String, key: &str, m: Vec<(String, String)>| {
        if !m.is_empty() {
            let body: Vec<String> = m.iter().map(|(p, v)| format!("{} = {v}", q(p))).collect();
            t.push_str(&format!("{key} = {{ {} }}\n", body.join(", ")));
        }
    };
    let num =
        |m: &BTreeMap<String, u64>| m.iter().map(|(p, v)| (p.clone(), v.to_string())).collect();
    table(&mut t, "size", num(&e.size));
    table(&mut t, "nlink", num(&e.nlink));
    let xattrs = e
        .xattrs
        .iter()
        .map(|(p, v)| (p.clone(), format!("[{}]", names(v))));
    table(&mut t, "xattrs", xattrs.collect());
    let extents = e.extents.iter().map(|(p, v)| {
        let items: Vec<String> = v
            .iter()
            .map(|(o, l, k)| format!("{o} {l} {}", k.name()))
            .collect();
        (p.clone(), format!("[{}]", names(&items)))
    });
    table(&mut t, "extents", extents.collect());
    let shared = e.shared.iter().map(|s| {
        (
            format!("{} {} {}", s.path, s.offset, s.len),
            q(&format!("{} {}", s.src, s.src_offset)),
        )
    });
    table(&mut t, "shared", shared.collect());
    let kinds = e.kind.iter().map(|(p, k)| (p.clone(), q(k.name())));
    table(&mut t, "kind", kinds.collect());
    let targets = e.target.iter().map(|(p, v)| (p.clone(), q(v)));
    table(&mut t, "target", targets.collect());
    let modes = e.mode.iter().map(|(p, m)| (p.clone(), format!("0o{m:o}")));
    table(&mut t, "mode", modes.collect());
    t
}

/// One `kind` of `[expect.crash]`.
fn crash_kind(s: &str) -> Result<crate::vfs::recovered::InodeKind, String> {
    use crate::vfs::recovered::InodeKind;
    InodeKind::parse(s).ok_or_else(|| {
        let names: Vec<&str> = InodeKind::ALL.iter().map(|k| k.name()).collect();
        format!(
            "invalid kind '{s}' in [expect.crash]: expected one of {}",
            names.join(", ")
        )
    })
}

/// One `mode` of `[expect.crash]`: permission bits, at most 0o7777 (write them `0o640`).
fn crash_mode(m: i64) -> Result<u32, String> {
    u32::try_from(m).ok().filter(|m| *m <= 0o7777).ok_or_else(|| {
        format!("invalid mode {m} in [expect.crash]: expected permission bits, at most 0o7777 (write 0o640)")
    })
}

/// One `shared` entry of `[expect.crash]`: `"PATH OFFSET LEN" = "SRC SRC_OFFSET"`.
fn crash_shared(key: &str, value: &str) -> Result<crate::vfs::recovered::SharedBytes, String> {
    let usage = "expected '\"PATH OFFSET LEN\" = \"SRC SRC_OFFSET\"' (sizes as 4k, 1m)";
    let (k, v): (Vec<&str>, Vec<&str>) = (
        key.split_whitespace().collect(),
        value.split_whitespace().collect(),
    );
    let ([path, off, len], [src, src_off]) = (k.as_slice(), v.as_slice()) else {
        return Err(format!("{usage}, got \"{key}\" = \"{value}\""));
    };
    let size = |s: &str| crate::units::parse_size(s).map_err(|e| format!("{e}: {usage}"));
    let len = size(len)?;
    if len == 0 {
        return Err(format!("{usage} with a LEN > 0"));
    }
    Ok(crate::vfs::recovered::SharedBytes {
        path: crash_path(path)?,
        offset: size(off)?,
        len,
        src: crash_path(src)?,
        src_offset: size(src_off)?,
    })
}

/// A scripted step: task `task` reaches point `point`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Task name.
    pub task: String,
    /// Point label.
    pub point: String,
    /// Line in the file.
    pub line: usize,
    /// `unless-blocked`: skipped when its task waits for a lock and the run is otherwise
    /// stuck (a fix's lock makes it wait for a task the script holds).
    pub unless_blocked: bool,
}

/// A parsed, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Scenario name.
    pub name: String,
    /// Race id (any `[A-Za-z0-9._-]` word: R1..R7 name the built-in fixes).
    pub race: String,
    /// The built-in fix the race id names, if any.
    pub fix: Option<Fix>,
    /// Policies the file declares (`[policies]`, format v2): (label, policy) before and
    /// after; None: format v1, linux-5.11 without and with the race's fix (`pre`, `post`).
    pub policies: Option<[(String, Policy); 2]>,
    /// Patch title.
    pub title: String,
    /// One-line summary.
    pub summary: String,
    /// Device preset or file.
    pub device: String,
    /// The filesystem and its mount options (`fs`, `mount`).
    pub mount: Mount,
    /// Default seed.
    pub seed: u64,
    /// Period of the background committer (None: commits only when tasks ask).
    pub commit_interval: Option<sim::Nanos>,
    /// CPU costs and sizes (defaults with overrides from `[costs]`).
    pub costs: Costs,
    /// Operations of the setup task.
    pub setup: Vec<Op>,
    /// Tasks: name and operations.
    pub tasks: Vec<(String, Vec<Op>)>,
    /// The interleaving.
    pub script: Vec<Step>,
    /// The metric that measures the race's waste, as the file names it (`key_metric`);
    /// None: the default of `key_metric()`.
    pub declared_key_metric: Option<String>,
    /// Expected metrics under the first policy (`[expect.pre]`, or its declared label).
    pub expect_pre: BTreeMap<String, u64>,
    /// Expected metrics under the second policy (`[expect.post]`, or its declared label).
    pub expect_post: BTreeMap<String, u64>,
    /// What a power failure at a point must leave, under both policies (`[expect.crash]`).
    pub expect_crash: Option<CrashExpect>,
    /// `[expect.crash-N]`, by N: what a power failure at each table's own point must leave
    /// (with several `power-fail` operations, one table per failure; `[expect.crash]` is
    /// the last), checked as `[expect.crash]` is.
    pub expect_crash_more: Vec<(u32, CrashExpect)>,
    /// Where it came from (file name or path).
    pub origin: String,
    /// File line of each setup operation (empty for scenarios not read from text).
    pub setup_lines: Vec<usize>,
    /// File line of each task operation, per task.
    pub task_lines: Vec<Vec<usize>>,
    /// FNV-1a 64 of the text it was parsed from: what a sweep's identity records of it.
    pub source_digest: u64,
}

const IN_EXPECTATIONS: &str = "in expectations";

/// The top-level keys every scenario file needs.
const REQUIRED: [&str; 5] = ["name", "race", "title", "summary", "task"];

/// Reports every missing top-level field at once (serde stops at the first); a file that is
/// not TOML is left to the typed parse, which names the line.
fn missing_fields(text: &str, origin: &str) -> Result<(), ScenarioError> {
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    let missing: Vec<String> = REQUIRED
        .iter()
        .filter(|k| !table.contains_key(**k))
        .map(|k| format!("`{k}`"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ScenarioError {
        location: origin.to_string(),
        message: format!(
            "missing {}: a scenario needs name, race, title, summary and at least one [[task]]",
            missing.join(", ")
        ),
    })
}

/// Checks that `name` is a counter of `fs`; the error says whose counter it is otherwise.
fn check_metric(fs: FsKind, name: &str, role: &str) -> Result<(), String> {
    if fs.is_metric(name) || (role == IN_EXPECTATIONS && INVARIANTS.contains(&name)) {
        return Ok(());
    }
    let owner = FsKind::ALL
        .iter()
        .find(|(k, _)| k.is_metric(name))
        .map(|(_, n)| *n);
    Err(match owner {
        Some(o) => format!(
            "metric '{name}' {role} is a {o} counter: this scenario runs on {} (`fsyncsim list --metrics` lists each filesystem's)",
            fs.name()
        ),
        None => format!("unknown metric '{name}' {role}"),
    })
}

/// Parses a crash point: `end`, or `TASK POINT` with an optional `#N` (the Nth arrival
/// of the task at the point, from 1), checked against the tasks' operations.
pub fn parse_crash_point(
    tasks: &[(String, Vec<Op>)],
    fs: FsKind,
    text: &str,
) -> Result<CrashPoint, String> {
    if text.trim() == "end" {
        return Ok(CrashPoint::End);
    }
    let usage = "expected 'TASK POINT', 'TASK POINT#N' or 'end', e.g. \"A fsync:done\"";
    let mut w = text.split_whitespace();
    let (Some(task), Some(point), None) = (w.next(), w.next(), w.next()) else {
        return Err(format!("invalid crash point '{text}': {usage}"));
    };
    let (point, nth) = match point.split_once('#') {
        Some((p, n)) => match n.parse::<usize>() {
            Ok(n) if n >= 1 => (p, n),
            _ => {
                return Err(format!(
                    "invalid crash point '{text}': #N must be a number from 1; {usage}"
                ))
            }
        },
        None => (point, 1),
    };
    let Some((_, ops)) = tasks.iter().find(|(n, _)| n == task) else {
        let names: Vec<&str> = tasks.iter().map(|(n, _)| n.as_str()).collect();
        return Err(format!(
            "unknown task '{task}' in crash point '{text}': expected one of {}",
            names.join(", ")
        ));
    };
    let reachable: BTreeSet<String> = ops.iter().flat_map(|o| points_of(fs, o)).collect();
    if !reachable.contains(point) {
        return Err(format!(
            "task '{task}' never reaches point '{point}': its operations reach {}",
            reachable.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(CrashPoint::Step {
        task: task.to_string(),
        point: point.to_string(),
        nth,
    })
}

/// Checks an `[expect.crash]` path: absolute, no trailing slash but for `/`.
fn crash_path(p: &str) -> Result<String, String> {
    if !p.starts_with('/') || (p.len() > 1 && p.ends_with('/')) || p.contains("//") {
        return Err(format!(
            "invalid path '{p}' in [expect.crash]: expected an absolute path like /a/foo"
        ));
    }
    Ok(p.to_string())
}

/// One `[expect.crash]` extent: `OFFSET LENGTH KIND` (sizes like 256k; data, prealloc, hole).
fn crash_extent(s: &str) -> Result<(u64, u64, ExtentKind), String> {
    let usage = "expected 'OFFSET LENGTH data|prealloc|hole', e.g. \"256k 768k prealloc\"";
    let w: Vec<&str> = s.split_whitespace().collect();
    let [o, l, k] = w[..] else {
        return Err(format!("invalid extent '{s}' in [expect.crash]: {usage}"));
    };
    let bad = |m: String| format!("invalid extent '{s}' in [expect.crash]: {m}; {usage}");
    let off = crate::units::parse_size(o).map_err(bad)?;
    let len = crate::units::parse_size(l).map_err(bad)?;
    let kind = ExtentKind::parse(k).ok_or_else(|| bad(format!("unknown kind '{k}'")))?;
    if len == 0 || off.checked_add(len).is_none() {
        return Err(bad("a length > 0 that fits".into()));
    }
    Ok((off, len, kind))
}

/// Validates `[expect.crash]`; errors carry the offset of the value at fault.
fn crash_expect(
    c: &CrashFile,
    tasks: &[(String, Vec<Op>)],
    fs: FsKind,
) -> Result<CrashExpect, (usize, String)> {
    if fs != FsKind::Btrfs {
        return Err((
            c.at.span().start,
            format!(
                "[expect.crash] needs a recovered state, which is not modelled for {}: expected it in btrfs scenarios only",
                fs.name()
            ),
        ));
    }
    let at = parse_crash_point(tasks, fs, c.at.get_ref()).map_err(|m| (c.at.span().start, m))?;
    let list = |v: &[Spanned<String>]| -> Result<Vec<String>, (usize, String)> {
        v.iter()
            .map(|p| crash_path(p.get_ref()).map_err(|m| (p.span().start, m)))
            .collect()
    };
    fn map<T: Clone, U>(
        m: &BTreeMap<String, Spanned<T>>,
        f: impl Fn(&T) -> Result<U, String>,
    ) -> Result<BTreeMap<String, U>, (usize, String)> {
        m.iter()
            .map(|(k, v)| {
                let at = v.span().start;
                Ok((
                    crash_path(k).map_err(|m| (at, m))?,
                    f(v.get_ref()).map_err(|m| (at, m))?,
                ))
            })
            .collect()
    }
    Ok(CrashExpect {
        at,
        exists: list(&c.exists)?,
        absent: list(&c.absent)?,
        size: map(&c.size, |v| Ok(*v))?,
        nlink: map(&c.nlink, |v| Ok(*v))?,
        xattrs: map(&c.xattrs, |v| Ok(v.clone()))?,
        extents: map(&c.extents, |v| v.iter().map(|e| crash_extent(e)).collect())?,
        shared: c
            .shared
            .iter()
            .map(|(k, v)| crash_shared(k, v.get_ref()).map_err(|m| (v.span().start, m)))
            .collect::<Result<_, _>>()?,
        kind: map(&c.kind, |v| crash_kind(v))?,
        target: map(&c.target, |v| Ok(v.clone()))?,
        mode: map(&c.mode, |v| crash_mode(*v))?,
    })
}

/// Parses one operation line (its home is `vfs::op`, beside the spelling it reads back).
pub use crate::vfs::op::parse_op;

/// The mkfs features a scenario's `mkfs` key lists (`"no-holes"`, `"^no-holes"`): whether
/// NO_HOLES is on. btrfs only.
fn parse_mkfs(fs: FsKind, text: &str) -> Result<bool, String> {
    if fs != FsKind::Btrfs {
        return Err(format!(
            "mkfs features are modelled for btrfs only: expected no mkfs key for {}",
            fs.name()
        ));
    }
    let mut no_holes = false;
    for f in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match f {
            "no-holes" => no_holes = true,
            "^no-holes" => no_holes = false,
            _ => {
                return Err(format!(
                    "unknown mkfs feature '{f}': expected no-holes or ^no-holes"
                ))
            }
        }
    }
    Ok(no_holes)
}

/// Named points an operation can reach on filesystem `fs` (the filesystem's own list).
pub fn points_of(fs: FsKind, op: &Op) -> Vec<String> {
    fs.points_of(op)
}

/// One scenario file being parsed: its text and name, for `file:line` errors.
struct Cx<'a> {
    text: &'a str,
    origin: &'a str,
    /// Byte offsets of the text's line breaks (a line from an offset in O(log n): counting
    /// from the start for every step and operation was quadratic in the file's size).
    breaks: Vec<usize>,
}

/// Byte offsets of `text`'s line breaks, for `line_in`.
fn line_breaks(text: &str) -> Vec<usize> {
    text.match_indices('\n').map(|(i, _)| i).collect()
}

/// The line of `offset` (as `units::line_of` counts it) from `line_breaks`' result.
fn line_in(breaks: &[usize], offset: usize) -> usize {
    breaks.partition_point(|&b| b < offset) + 1
}

/// A file's (label, policy) pairs from `[policies]`, before then after.
type Policies = Option<[(String, Policy); 2]>;

impl Cx<'_> {
    fn err(&self, offset: usize, message: String) -> ScenarioError {
        ScenarioError {
            location: format!("{}:{}", self.origin, line_in(&self.breaks, offset)),
            message,
        }
    }

    fn ops(&self, list: &[Spanned<String>]) -> Result<Vec<Op>, ScenarioError> {
        list.iter()
            .map(|s| parse_op(s.get_ref()).map_err(|m| self.err(s.span().start, m)))
            .collect()
    }

    /// `race`: a word of letters, digits, '.', '_' or '-'.
    fn race(&self, f: &ScenarioFile) -> Result<String, ScenarioError> {
        let race = f.race.get_ref().clone();
        if race.is_empty()
            || race.len() > 64
            || !race
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(self.err(
                f.race.span().start,
                format!("invalid race id '{race}': expected a word of letters, digits, '.', '_' or '-' (e.g. R8)"),
            ));
        }
        Ok(race)
    }

    /// Format v2: [policies] names two policies, before and after, in file order.
    fn policies(
        &self,
        f: &ScenarioFile,
        race: &str,
        fix: Option<Fix>,
    ) -> Result<Policies, ScenarioError> {
        let Some(map) = &f.policies else {
            if fix.is_none() {
                return Err(self.err(
                    f.race.span().start,
                    format!("race '{race}' is not one of R1..R7: declare its two policies in [policies], e.g. before = \"linux-5.11:-R7\", after = \"linux-5.11\""),
                ));
            }
            return Ok(None);
        };
        let mut v: Vec<(&String, &Spanned<String>)> = map.iter().collect();
        // In file order, not name order.
        v.sort_by_key(|(_, sp)| sp.span().start);
        if v.len() != 2 {
            // At the first policy too many, else at the table.
            let at = match v.get(2) {
                Some((_, sp)) => sp.span().start,
                None => crate::units::key_offset(self.text, &["policies"]).unwrap_or(0),
            };
            return Err(self.err(
                at,
                format!(
                    "[policies] declares {} policies: expected two (before, then after)",
                    v.len()
                ),
            ));
        }
        let mut out = Vec::new();
        for (label, spec) in v {
            if label == CRASH_TABLE {
                return Err(self.err(
                    spec.span().start,
                    format!("policy label '{CRASH_TABLE}' is reserved for [expect.crash]: expected another label, e.g. before/after"),
                ));
            }
            let mut p = crate::kernel::parse_policy(spec.get_ref())
                .map_err(|m| self.err(spec.span().start, m))?;
            // Reports name a declared policy by its spec, which parses back.
            p.name = spec.get_ref().trim().to_string();
            out.push((label.clone(), p));
        }
        let b = out.pop().unwrap();
        let a = out.pop().unwrap();
        Ok(Some([a, b]))
    }

    /// Every path an operation uses must be created by some operation (or be "/").
    fn check_paths(&self, f: &ScenarioFile) -> Result<(), ScenarioError> {
        let all: Vec<(Op, usize)> = f
            .setup
            .iter()
            .chain(f.task.iter().flat_map(|t| t.ops.iter()))
            .filter_map(|s| parse_op(s.get_ref()).ok().map(|o| (o, s.span().start)))
            .collect();
        let created: BTreeSet<String> = all
            .iter()
            .filter_map(|(o, _)| match o {
                Op::Create(p)
                | Op::Mkdir(p)
                | Op::Link(_, p)
                | Op::Rename(_, p)
                | Op::Open(_, p)
                | Op::Symlink(_, p)
                | Op::Mknod(p, _)
                | Op::Mkfifo(p)
                | Op::Tmpfile(_, p)
                | Op::LinkFd(_, p) => Some(p.trim_end_matches('/').to_string()),
                _ => None,
            })
            .collect();
        let known = |p: &str| p.is_empty() || created.contains(p);
        let parent = |p: &str| {
            p.trim_end_matches('/')
                .rsplit_once('/')
                .map(|(d, _)| d.to_string())
                .unwrap_or_default()
        };
        for (o, at) in &all {
            let (uses, new) = paths_of(o);
            if let Some(fd) = o.file().filter(|p| p.starts_with('@') && !known(p)) {
                return Err(self.err(
                    *at,
                    format!(
                        "unknown descriptor '{fd}': expected an 'open PATH as {}' in the file",
                        &fd[1..]
                    ),
                ));
            }
            for p in uses {
                if !known(p.trim_end_matches('/')) {
                    return Err(
                        self.err(*at, format!("unknown inode '{p}': no operation creates it"))
                    );
                }
            }
            for p in new {
                let d = parent(p);
                if !known(&d) {
                    return Err(self.err(
                        *at,
                        format!("unknown directory '{d}': no operation creates it"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `power-fail` where it can be honest: the mount closes every descriptor, so a
    /// `power-fail` while a descriptor the same list opened is still open is refused at its
    /// line (a later `@NAME` would name a file the mounted filesystem never opened).
    fn check_power_fail(&self, f: &ScenarioFile) -> Result<(), ScenarioError> {
        let lists = std::iter::once(&f.setup).chain(f.task.iter().map(|t| &t.ops));
        for list in lists {
            let mut open: BTreeSet<String> = BTreeSet::new();
            for s in list {
                match parse_op(s.get_ref()) {
                    Ok(Op::Open(_, fd)) => {
                        open.insert(fd.to_string());
                    }
                    Ok(Op::Close(fd)) => {
                        open.remove(fd.as_ref());
                    }
                    Ok(Op::PowerFail) if !open.is_empty() => {
                        let fds: Vec<&str> = open.iter().map(String::as_str).collect();
                        return Err(self.err(
                            s.span().start,
                            format!(
                                "power-fail while {} is open: expected a 'close' of it before (the mount after the power failure closes every descriptor)",
                                fds.join(", ")
                            ),
                        ));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The `[[task]]` tables: names unique ("setup" reserved), operations parsed.
    fn tasks(&self, f: &ScenarioFile) -> Result<Vec<(String, Vec<Op>)>, ScenarioError> {
        let mut tasks = Vec::new();
        let mut names = BTreeSet::new();
        for t in &f.task {
            let name = t.name.get_ref().clone();
            if name == "setup" || !names.insert(name.clone()) {
                return Err(self.err(
                    t.name.span().start,
                    format!("duplicate task name '{name}' (\"setup\" is reserved)"),
                ));
            }
            tasks.push((name, self.ops(&t.ops)?));
        }
        Ok(tasks)
    }

    /// The `[script]` steps, each a task and a point its operations reach.
    fn script(
        &self,
        f: &ScenarioFile,
        tasks: &[(String, Vec<Op>)],
        fs: FsKind,
    ) -> Result<Vec<Step>, ScenarioError> {
        let mut script = Vec::new();
        // The points each task reaches, computed once per task (not once per step).
        let mut reach: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for s in f.script.iter().flat_map(|s| s.steps.iter()) {
            script.push(self.step(s, tasks, fs, &mut reach)?);
        }
        Ok(script)
    }

    /// One script step: "TASK POINT [unless-blocked]".
    fn step(
        &self,
        s: &Spanned<String>,
        tasks: &[(String, Vec<Op>)],
        fs: FsKind,
        reach: &mut BTreeMap<String, BTreeSet<String>>,
    ) -> Result<Step, ScenarioError> {
        let line = line_in(&self.breaks, s.span().start);
        let mut w = s.get_ref().split_whitespace();
        let (Some(task), Some(point), flag, None) = (w.next(), w.next(), w.next(), w.next()) else {
            return Err(self.err(
                s.span().start,
                "expected 'TASK POINT [unless-blocked]', e.g. \"A trans:unblocked\"".into(),
            ));
        };
        let unless_blocked = match flag {
            None => false,
            Some("unless-blocked") => true,
            Some(other) => {
                return Err(self.err(
                    s.span().start,
                    format!("unknown step flag '{other}': expected 'unless-blocked' or nothing after 'TASK POINT'"),
                ))
            }
        };
        let Some((_, task_ops)) = tasks.iter().find(|(n, _)| n == task) else {
            return Err(self.err(
                s.span().start,
                format!(
                    "unknown task '{task}': expected one of {}",
                    tasks
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        let reachable = reach
            .entry(task.to_string())
            .or_insert_with(|| task_ops.iter().flat_map(|o| points_of(fs, o)).collect());
        if !reachable.contains(point) {
            return Err(self.err(
                s.span().start,
                format!(
                    "task '{task}' never reaches point '{point}': its operations reach {}",
                    reachable.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        Ok(Step {
            task: task.to_string(),
            point: point.to_string(),
            line,
            unless_blocked,
        })
    }

    fn key_metric(&self, f: &ScenarioFile, fs: FsKind) -> Result<Option<String>, ScenarioError> {
        match &f.key_metric {
            Some(k) => {
                check_metric(fs, k.get_ref(), "as key_metric")
                    .map_err(|m| self.err(k.span().start, m))?;
                Ok(Some(k.get_ref().clone()))
            }
            None => Ok(None),
        }
    }

    /// The `[expect.<label>]` metric tables of the two policies.
    #[allow(clippy::type_complexity)]
    fn expectations(
        &self,
        f: &ScenarioFile,
        fs: FsKind,
        labels: &[String; 2],
    ) -> Result<(BTreeMap<String, u64>, BTreeMap<String, u64>), ScenarioError> {
        let expect = |m: &Option<BTreeMap<String, Spanned<u64>>>| -> Result<BTreeMap<String, u64>, ScenarioError> {
            let mut out = BTreeMap::new();
            for (k, v) in m.iter().flatten() {
                check_metric(fs, k, IN_EXPECTATIONS).map_err(|m| self.err(v.span().start, m))?;
                out.insert(k.clone(), *v.get_ref());
            }
            Ok(out)
        };
        let Some(e) = f.expect.as_ref().map(|e| &e.metrics) else {
            return Ok((BTreeMap::new(), BTreeMap::new()));
        };
        if let Some(label) = e.keys().find(|l| !labels.contains(l)) {
            // At the label itself, also when its table is empty.
            let at = crate::units::key_offset(self.text, &["expect", label]).unwrap_or(0);
            return Err(self.err(
                at,
                format!(
                    "unknown policy '{label}' in [expect.{label}]: expected one of {}",
                    labels.join(", ")
                ),
            ));
        }
        Ok((
            expect(&e.get(&labels[0]).cloned())?,
            expect(&e.get(&labels[1]).cloned())?,
        ))
    }

    /// `device`: a preset or a device file.
    fn device(&self, f: &ScenarioFile) -> Result<String, ScenarioError> {
        match &f.device {
            Some(d) => {
                DiskConfig::resolve(d.get_ref())
                    .map_err(|e| self.err(d.span().start, e.referenced()))?;
                Ok(d.get_ref().clone())
            }
            None => Ok("nvme".to_string()),
        }
    }

    /// `commit_interval`, `mount` and `mkfs`: the commit interval (commit= folded in) and
    /// the mount.
    fn mount(
        &self,
        f: &ScenarioFile,
        fs: FsKind,
    ) -> Result<(Option<sim::Nanos>, Mount), ScenarioError> {
        let commit_interval = match &f.commit_interval {
            Some(c) => Some(
                crate::mount::parse_commit_interval(c.get_ref())
                    .map_err(|m| self.err(c.span().start, m))?,
            ),
            None => None,
        };
        let options = match &f.mount {
            Some(v) => {
                MountOptions::parse_for(fs, v.get_ref()).map_err(|m| self.err(v.span().start, m))?
            }
            None => MountOptions::default(),
        };
        if let (Some(_), Some(c)) = (options.commit, &f.commit_interval) {
            return Err(self.err(
                c.span().start,
                "commit_interval and mount option commit= both given: expected one".into(),
            ));
        }
        let commit_interval = options.commit.or(commit_interval);
        // One place holds the interval: `commit=` is folded into it.
        let options = MountOptions {
            commit: None,
            ..options
        };
        let no_holes = match &f.mkfs {
            Some(v) => parse_mkfs(fs, v.get_ref()).map_err(|m| self.err(v.span().start, m))?,
            None => false,
        };
        let mount = Mount {
            fs,
            options,
            memory: None,
            no_holes,
        };
        Ok((commit_interval, mount))
    }

    /// `[costs]`: overrides of the default CPU costs and sizes.
    fn costs(&self, f: &ScenarioFile) -> Result<Costs, ScenarioError> {
        let mut costs = Costs::default();
        for (k, v) in f.costs.iter().flatten() {
            costs
                .set_checked(k, *v.get_ref())
                .map_err(|m| self.err(v.span().start, m))?;
        }
        Ok(costs)
    }
}

/// The paths an operation uses (must exist) and creates (their parent must exist).
fn paths_of(o: &Op) -> (Vec<&crate::vfs::OpPath>, Vec<&crate::vfs::OpPath>) {
    match o {
        Op::Create(p) | Op::Mkdir(p) => (vec![], vec![p]),
        Op::Symlink(_, p) | Op::Mknod(p, _) | Op::Mkfifo(p) | Op::LinkFd(_, p) => (vec![], vec![p]),
        Op::Tmpfile(dir, _) => (vec![dir], vec![]),
        Op::Link(a, b) | Op::Rename(a, b) => (vec![a], vec![b]),
        Op::Open(p, _) => (vec![p], vec![]),
        Op::Clone { src, dst, .. } => (vec![src, dst], vec![]),
        Op::Write(p, _)
        | Op::WriteRange(p, _)
        | Op::WriteRangeAt(p, ..)
        | Op::DirectWrite(p, ..)
        | Op::WriteOsync(p, _)
        | Op::MmapWrite(p, _)
        | Op::MmapWriteAt(p, ..)
        | Op::WriteAt(p, ..)
        | Op::Setattr(p)
        | Op::Stat(p)
        | Op::Readdir(p)
        | Op::Writeback(p)
        | Op::Fsync(p)
        | Op::FsyncRange(p, ..)
        | Op::FdatasyncRange(p, ..)
        | Op::Evict(p)
        | Op::Removexattr(p, _)
        | Op::Unlink(p)
        | Op::Chmod(p, _)
        | Op::Rmdir(p) => (vec![p], vec![]),
        _ => (vec![], vec![]),
    }
}

/// The file line of each operation: setup's, then each task's.
fn op_lines(text: &str, f: &ScenarioFile) -> (Vec<usize>, Vec<Vec<usize>>) {
    let breaks = line_breaks(text);
    let setup_lines = f
        .setup
        .iter()
        .map(|o| line_in(&breaks, o.span().start))
        .collect();
    let task_lines = f
        .task
        .iter()
        .map(|t| {
            t.ops
                .iter()
                .map(|o| line_in(&breaks, o.span().start))
                .collect()
        })
        .collect();
    (setup_lines, task_lines)
}

impl Scenario {
    /// Parses and validates a scenario text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let cx = Cx {
            text,
            origin,
            breaks: line_breaks(text),
        };
        missing_fields(text, origin)?;
        let f: ScenarioFile = toml::from_str(text).map_err(|e| {
            let (location, message) = crate::units::toml_error(text, origin, &e);
            ScenarioError { location, message }
        })?;
        // The checks run in this order: a file's first error is the one reported.
        let race = cx.race(&f)?;
        let fix = Fix::parse(&race).filter(|x| x.name() == race);
        let policies = cx.policies(&f, &race, fix)?;
        let labels: [String; 2] = match &policies {
            Some([a, b]) => [a.0.clone(), b.0.clone()],
            None => ["pre".into(), "post".into()],
        };
        let setup = cx.ops(&f.setup)?;
        cx.check_paths(&f)?;
        let tasks = cx.tasks(&f)?;
        let fs = match &f.fs {
            Some(v) => FsKind::parse(v.get_ref()).map_err(|m| cx.err(v.span().start, m))?,
            None => FsKind::default(),
        };
        let script = cx.script(&f, &tasks, fs)?;
        let declared_key_metric = cx.key_metric(&f, fs)?;
        let (expect_pre, expect_post) = cx.expectations(&f, fs, &labels)?;
        let expect_crash = match f.expect.as_ref().and_then(|e| e.crash.as_ref()) {
            Some(c) => Some(crash_expect(c, &tasks, fs).map_err(|(at, m)| cx.err(at, m))?),
            None => None,
        };
        let expect_crash_more = f
            .expect
            .iter()
            .flat_map(|e| e.crash_more.iter())
            .map(|(n, c)| Ok((*n, crash_expect(c, &tasks, fs)?)))
            .collect::<Result<Vec<_>, (usize, String)>>()
            .map_err(|(at, m)| cx.err(at, m))?;
        cx.check_power_fail(&f)?;
        let device = cx.device(&f)?;
        let (commit_interval, mount) = cx.mount(&f, fs)?;
        let costs = cx.costs(&f)?;
        let (setup_lines, task_lines) = op_lines(text, &f);
        Ok(Scenario {
            costs,
            mount,
            commit_interval,
            name: f.name,
            race,
            fix,
            policies,
            title: f.title,
            summary: f.summary,
            device,
            seed: f.seed.unwrap_or(1),
            setup,
            tasks,
            script,
            declared_key_metric,
            expect_pre,
            expect_post,
            expect_crash,
            expect_crash_more,
            origin: origin.to_string(),
            source_digest: crate::units::fnv1a64(text.as_bytes()),
            setup_lines,
            task_lines,
        })
    }

    /// All built-in scenarios.
    pub fn builtin() -> Vec<Scenario> {
        BUILTIN
            .iter()
            .map(|(file, text)| {
                Scenario::parse(text, &format!("scenarios/{file}"))
                    .unwrap_or_else(|e| panic!("built-in scenario is invalid: {e}"))
            })
            .collect()
    }

    /// A built-in scenario by name, or a scenario file by path.
    pub fn load(spec: &str) -> Result<Scenario, ScenarioError> {
        // A built-in scenario may be named by its id, the part before the first '-' (`R1`,
        // `r4`, `J1a`), in any case.
        let full = BUILTIN
            .iter()
            .map(|(file, _)| file.trim_end_matches(".toml"))
            .find(|n| {
                n.split('-')
                    .next()
                    .is_some_and(|id| id.eq_ignore_ascii_case(spec))
            });
        let spec = full.unwrap_or(spec);
        load_named(
            spec,
            Scenario::builtin(),
            |s| &s.name,
            Scenario::parse,
            "scenario",
            "NAME",
        )
    }

    /// How `fsyncsim run` names it: the built-in name, or the file path.
    pub fn origin_name(&self) -> &str {
        if self.origin.starts_with("scenarios/")
            && BUILTIN.iter().any(|(f, _)| self.origin.ends_with(f))
        {
            &self.name
        } else {
            &self.origin
        }
    }

    /// The scenario as a scenario file (after `header` comment lines); `parse` reads it back.
    pub fn to_toml(&self, header: &[String]) -> String {
        let q = |v: &str| toml::Value::String(v.to_string()).to_string();
        let mut t = String::new();
        for h in header {
            t.push_str(&format!("# {h}\n"));
        }
        t.push_str(&format!("name = {}\n", q(&self.name)));
        t.push_str(&format!("race = {}\n", q(&self.race)));
        t.push_str(&format!("title = {}\n", q(&self.title)));
        t.push_str(&format!("summary = {}\n", q(&self.summary)));
        t.push_str(&format!("device = {}\n", q(&self.device)));
        if self.mount.fs != FsKind::default() {
            t.push_str(&format!("fs = {}\n", q(self.mount.fs.name())));
        }
        // `commit=` was folded into commit_interval when parsed.
        if self.mount.options != MountOptions::default() {
            t.push_str(&format!("mount = {}\n", q(&self.mount.options.to_text())));
        }
        if self.mount.no_holes {
            t.push_str("mkfs = \"no-holes\"\n");
        }
        t.push_str(&format!("seed = {}\n", self.seed));
        if let Some(c) = self.commit_interval {
            t.push_str(&format!("commit_interval = \"{c}ns\"\n"));
        }
        if let Some(k) = &self.declared_key_metric {
            t.push_str(&format!("key_metric = {}\n", q(k)));
        }
        let list = |t: &mut String, ops: &[String]| {
            t.push_str("[\n");
            for o in ops {
                t.push_str(&format!("  {},\n", q(o)));
            }
            t.push_str("]\n");
        };
        t.push_str("setup = ");
        list(
            &mut t,
            &self.setup.iter().map(Op::to_string).collect::<Vec<_>>(),
        );
        let defaults = Costs::default();
        let changed: Vec<(&str, u64)> = Costs::FIELDS
            .iter()
            .filter_map(|&f| {
                let v = self.costs.get(f)?;
                (Some(v) != defaults.get(f)).then_some((f, v))
            })
            .collect();
        if !changed.is_empty() {
            t.push_str("\n[costs]\n");
            for (f, v) in changed {
                t.push_str(&format!("{f} = {v}\n"));
            }
        }
        for (name, ops) in &self.tasks {
            t.push_str(&format!("\n[[task]]\nname = {}\nops = ", q(name)));
            list(&mut t, &ops.iter().map(Op::to_string).collect::<Vec<_>>());
        }
        if !self.script.is_empty() {
            t.push_str("\n[script]\nsteps = ");
            let steps: Vec<String> = self
                .script
                .iter()
                .map(|s| {
                    let flag = if s.unless_blocked {
                        " unless-blocked"
                    } else {
                        ""
                    };
                    format!("{} {}{flag}", s.task, s.point)
                })
                .collect();
            list(&mut t, &steps);
        }
        if let Some([(a, pa), (b, pb)]) = &self.policies {
            t.push_str("\n[policies]\n");
            t.push_str(&format!("{} = {}\n", q(a), q(&pa.name)));
            t.push_str(&format!("{} = {}\n", q(b), q(&pb.name)));
        }
        let [la, lb] = self.labels();
        for (label, m) in [
            (la.as_str(), &self.expect_pre),
            (lb.as_str(), &self.expect_post),
        ] {
            if !m.is_empty() {
                t.push_str(&format!("\n[expect.{label}]\n"));
                for (k, v) in m {
                    t.push_str(&format!("{} = {v}\n", q(k)));
                }
            }
        }
        for (n, e) in &self.expect_crash_more {
            t.push_str(&crash_toml_named(e, &format!("crash-{n}")));
        }
        if let Some(e) = &self.expect_crash {
            t.push_str(&crash_toml(e));
        }
        t
    }

    /// Every crash expectation: the `[expect.crash-N]` tables by N, then `[expect.crash]`,
    /// each with its table's name.
    pub fn crash_expectations(&self) -> Vec<(String, &CrashExpect)> {
        let more = self
            .expect_crash_more
            .iter()
            .map(|(n, e)| (format!("crash-{n}"), e));
        more.chain(
            self.expect_crash
                .iter()
                .map(|e| (CRASH_TABLE.to_string(), e)),
        )
        .collect()
    }

    /// The metric that measures the race's waste: the file's `key_metric`, else the
    /// registry's for the built-in fix the race id names (R1–R7), else the first
    /// expectation of the first policy that names waste (`unnecessary_*`), else its first.
    pub fn key_metric(&self) -> String {
        if let Some(k) = &self.declared_key_metric {
            return k.clone();
        }
        if let Some(f) = self.fix {
            return crate::btrfs::switches::of_fix(f).metric.to_string();
        }
        let e = &self.expect_pre;
        e.keys()
            .find(|k| k.starts_with("unnecessary_"))
            .or_else(|| e.keys().next())
            .cloned()
            .unwrap_or_else(|| "unnecessary_log_syncs".into())
    }

    /// The policy before: the first declared, or linux-5.11 without the race's fix.
    pub fn pre_policy(&self) -> Policy {
        match (&self.policies, self.fix) {
            (Some([(_, p), _]), _) => p.clone(),
            (None, Some(f)) => Policy::preset("linux-5.11").unwrap().without(f),
            (None, None) => unreachable!("parse requires [policies] for other races"),
        }
    }

    /// The policy after: the second declared, or linux-5.11.
    pub fn post_policy(&self) -> Policy {
        match &self.policies {
            Some([_, (_, p)]) => p.clone(),
            None => Policy::preset("linux-5.11").unwrap(),
        }
    }

    /// The labels of the two policies (`pre`, `post` in format v1).
    pub fn labels(&self) -> [String; 2] {
        match &self.policies {
            Some([(a, _), (b, _)]) => [a.clone(), b.clone()],
            None => ["pre".into(), "post".into()],
        }
    }

    /// A crash point of this scenario (`--at`, `[expect.crash] at`): `TASK POINT[#N]` or
    /// `end`.
    pub fn crash_point(&self, text: &str) -> Result<CrashPoint, String> {
        parse_crash_point(&self.tasks, self.mount.fs, text)
    }

    /// The patch title: the built-in fix's, else the file's title.
    pub fn patch_title(&self) -> &str {
        match self.fix {
            Some(f) => f.title(),
            None => &self.title,
        }
    }
}

/// The outcome of one scenario run under one policy.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The policy.
    pub policy: Policy,
    /// Counters.
    pub metrics: Metrics,
    /// Invariant violations (S1, S2, S3) and scenario errors.
    pub violations: Vec<Violation>,
    /// Latency per operation kind.
    pub latency: OpLatency,
    /// Hash of the run's event sequence.
    pub trace_hash: u64,
    /// Virtual end time.
    pub end: sim::Nanos,
    /// Rendered trace, when asked for.
    pub trace: Vec<String>,
    /// The kept trace records (with the trace), for a Perfetto trace.
    pub records: Vec<sim::trace::TraceRecord>,
    /// The names the records refer to (with the trace).
    pub names: sim::trace::TraceNames,
    /// Decisions an exploring scheduler made (empty for scripted runs).
    pub decisions: Vec<u32>,
    /// The number of candidates of each decision (exhaustive runs only; else empty).
    pub widths: Vec<u32>,
    /// (task, point) of every released named point, in order (only with the trace kept).
    pub releases: Vec<(String, String)>,
    /// The `unless-blocked` script steps skipped, each said in one line.
    pub skipped_steps: Vec<String>,
}

/// The violations that say a run could not play: a stuck script, a failed operation.
pub const UNPLAYABLE: [&str; 2] = ["script", "scenario"];

impl RunResult {
    /// The first violation that says the run could not play — a stuck script (`script`) or
    /// a failed setup or task operation (`scenario`): bad input, not a finding.
    pub fn unplayable(&self) -> Option<&Violation> {
        self.violations
            .iter()
            .find(|v| UNPLAYABLE.contains(&v.invariant.as_str()))
    }
}

/// Who decides the interleaving of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interleaving {
    /// The scenario's script (points not listed run first-come, first-served).
    Script,
    /// No script: a seeded random walk chooses at every named point and tie.
    Random,
    /// No script: PCT of this depth (change points among the first 200 choices).
    Pct(u32),
    /// No script: uniform random walk weighted by each task's remaining named points.
    Urw,
    /// No script: replay a recorded decision sequence.
    Replay(Vec<u32>),
    /// No script: the decisions given, then candidate 0 at every further choice (one run of
    /// an exhaustive enumeration, `sweep::exhaustive`; records each choice's width).
    Exhaustive(Vec<u32>),
    /// The first steps of the script, then the inner interleaving.
    Prefix(usize, Box<Interleaving>),
}

fn scheduler_for(
    sc: &Scenario,
    how: &Interleaving,
    streams: &mut RngStreams,
) -> Box<dyn sim::Scheduler> {
    let script = |n: usize| {
        let steps = sc.script.iter().take(n);
        Script::new(
            steps
                .clone()
                .map(|s| (s.task.clone(), s.point.clone()))
                .collect(),
        )
        .with_optional(steps.map(|s| s.unless_blocked).collect())
    };
    match how {
        Interleaving::Script => Box::new(script(usize::MAX)),
        Interleaving::Random => Box::new(RandomWalk::new(streams.stream("scheduler"))),
        Interleaving::Pct(depth) => Box::new(Pct::new(streams.stream("scheduler"), *depth, 200)),
        Interleaving::Urw => Box::new(Urw::new(streams.stream("scheduler"))),
        Interleaving::Replay(d) => Box::new(Replay::new(d.clone())),
        Interleaving::Exhaustive(d) => Box::new(Dfs::new(d.clone())),
        Interleaving::Prefix(n, inner) => Box::new(ScriptThen::new(
            script(*n),
            scheduler_for(sc, inner, streams),
        )),
    }
}

/// Crash points checked at random times per run (seeded stream `crash-points`).
const CRASH_POINTS: u32 = 32;

/// Runs a scenario under `policy` on `device` with `seed`.
pub fn run(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    interleaving: &Interleaving,
) -> RunResult {
    run_with_trace(sc, policy, device, seed, interleaving, true)
}

/// As `run`; without `keep_trace` only the trace hash is kept (sweeps), so violations carry
/// no timeline and `trace` is empty.
pub fn run_with_trace(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    interleaving: &Interleaving,
    keep_trace: bool,
) -> RunResult {
    run_full(sc, policy, device, seed, interleaving, keep_trace, None).0
}

/// What recovery keeps after a power failure at `at`, shared by the scheduler that takes it
/// and the run that reads it (None: not taken yet).
type CrashSlot = std::rc::Rc<std::cell::RefCell<Option<Result<Recovered, String>>>>;

/// A scheduler that lets `inner` decide and takes the power failure (the filesystem's
/// recovered state) when `inner` releases the `nth` arrival of `task` at `point`: the
/// instant the task stands at the point, before it goes on.
struct CrashAt {
    inner: Box<dyn sim::Scheduler>,
    task: String,
    point: String,
    nth: usize,
    seen: usize,
    fs: std::rc::Rc<std::cell::RefCell<Option<Mounted>>>,
    out: CrashSlot,
}

impl sim::Scheduler for CrashAt {
    fn pauses_at_points(&self) -> bool {
        self.inner.pauses_at_points()
    }
    fn chooses_ties(&self) -> bool {
        self.inner.chooses_ties()
    }
    fn decisions(&self) -> Vec<u32> {
        self.inner.decisions()
    }
    fn pick(&mut self, view: &sim::ChoiceView<'_>) -> sim::Pick {
        let pick = self.inner.pick(view);
        if let sim::Pick::Release(i) = pick {
            let p = &view.paused[i];
            if view.task_name(p.task) == self.task && view.point_name(p.point) == self.point {
                self.seen += 1;
                if self.seen == self.nth {
                    if let Some(fs) = self.fs.borrow().as_ref() {
                        *self.out.borrow_mut() = Some(fs.recovered());
                    }
                }
            }
        }
        pick
    }
    fn describe_hold(&self, view: &sim::ChoiceView<'_>) -> String {
        self.inner.describe_hold(view)
    }
    fn unfinished(&self) -> Option<String> {
        self.inner.unfinished()
    }
    fn skipped_steps(&self) -> Vec<usize> {
        self.inner.skipped_steps()
    }
}

/// A scripted run of `sc` under `policy` with a power failure at `at`: the run, and what
/// recovery keeps then (Ok: the recovered state; Err: recovery fails or is not modelled);
/// None when the run never reached `at`.
pub fn crash_state(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    at: &CrashPoint,
) -> (RunResult, Option<Result<Recovered, String>>) {
    run_full(
        sc,
        policy,
        device,
        seed,
        &Interleaving::Script,
        true,
        Some(at),
    )
}

/// `run_with_trace`, with a power failure taken at `crash` when given.
fn run_full(
    sc: &Scenario,
    policy: &Policy,
    device: &DiskConfig,
    seed: u64,
    interleaving: &Interleaving,
    keep_trace: bool,
    crash: Option<&CrashPoint>,
) -> (RunResult, Option<Result<Recovered, String>>) {
    let mut sim = Sim::new();
    sim.keep_trace(keep_trace);
    sim.set_time_limit(3600 * sim::S);
    let mut streams = RngStreams::new(seed);
    let (crash_fs, crash_out) = set_scheduler(&mut sim, sc, interleaving, &mut streams, crash);
    let h = sim.handle();
    let dev = crate::block::add_disk(&mut sim, device.clone(), &mut streams, true);
    dev.set_histograms(keep_trace);
    let fs = Mounted::mount(&h, dev, &sc.mount, policy.clone(), sc.costs.clone());
    if crash.is_some() {
        *crash_fs.borrow_mut() = Some(fs.clone());
    }
    fs.set_latency(keep_trace);
    if let Some(interval) = sc.commit_interval {
        fs.spawn_committer(&h, interval);
    }
    let errors: std::rc::Rc<std::cell::RefCell<Vec<String>>> = Default::default();
    spawn_setup(&mut sim, &h, &fs, sc, &errors);
    spawn_crash_points(&mut sim, &h, &fs, &mut streams);
    let outcome = sim.run();
    let outcome_ok = outcome.is_ok();
    fs.finish();
    if crash == Some(&CrashPoint::End) && outcome_ok {
        *crash_out.borrow_mut() = Some(fs.recovered());
    }
    // The scheduler holds a clone of the filesystem: drop it with the run.
    crash_fs.borrow_mut().take();
    if outcome.is_ok() {
        fs.check_crash("the run ended");
    }
    let mut violations = fs.violations();
    let (trace_hash, end) = match &outcome {
        Ok(s) => (s.trace_hash, s.end),
        Err(_) => (0, h.now()),
    };
    run_violations(sc, &sim, &h, outcome, &errors.borrow(), &mut violations);
    let result = RunResult {
        skipped_steps: skipped_steps(sc, &sim),
        decisions: sim.scheduler().decisions(),
        widths: sim.scheduler().widths(),
        releases: sim.point_releases(),
        policy: policy.clone(),
        metrics: {
            let mut m = fs.metrics();
            m.fill_waits(&sim.resource_stats());
            m
        },
        violations,
        latency: fs.latency(),
        trace_hash,
        end,
        trace: sim.render_trace(),
        records: if keep_trace {
            sim.trace_records()
        } else {
            Vec::new()
        },
        names: if keep_trace {
            sim.trace_names()
        } else {
            Default::default()
        },
    };
    let recovered = crash_out.borrow_mut().take();
    (result, recovered)
}

/// Sets the run's scheduler: `interleaving`'s, wrapped to take the power failure when
/// `crash` is at a step. Returns where the crash takes the filesystem from and where it
/// puts the recovered state.
fn set_scheduler(
    sim: &mut Sim,
    sc: &Scenario,
    interleaving: &Interleaving,
    streams: &mut RngStreams,
    crash: Option<&CrashPoint>,
) -> (std::rc::Rc<std::cell::RefCell<Option<Mounted>>>, CrashSlot) {
    let sched = scheduler_for(sc, interleaving, streams);
    let crash_fs: std::rc::Rc<std::cell::RefCell<Option<Mounted>>> = Default::default();
    let crash_out: CrashSlot = Default::default();
    match crash {
        Some(CrashPoint::Step { task, point, nth }) => sim.set_scheduler(Box::new(CrashAt {
            inner: sched,
            task: task.clone(),
            point: point.clone(),
            nth: *nth,
            seen: 0,
            fs: crash_fs.clone(),
            out: crash_out.clone(),
        })),
        _ => sim.set_scheduler(sched),
    }
    (crash_fs, crash_out)
}

/// Spawns the setup task: it runs the setup operations, then spawns the scenario's tasks.
/// A failed operation is recorded in `errors` with its file line, and ends its task.
fn spawn_setup(
    sim: &mut Sim,
    h: &sim::Handle,
    fs: &Mounted,
    sc: &Scenario,
    errors: &std::rc::Rc<std::cell::RefCell<Vec<String>>>,
) {
    let kind = sc.mount.fs;
    let (fs, h2, setup, tasks, errors) = (
        fs.clone(),
        h.clone(),
        sc.setup.clone(),
        sc.tasks.clone(),
        errors.clone(),
    );
    let (setup_at, task_at) = op_locations(sc);
    let barrier = PowerBarrier::for_scenario(h, sc);
    sim.spawn("setup", async move {
        for (i, op) in setup.iter().enumerate() {
            if let Err(e) = task_op(&fs, &h2, op, barrier.as_deref()).await {
                errors
                    .borrow_mut()
                    .push(format!("{}: setup: {}: {}", setup_at[i], op.kind(), e.0));
                PowerBarrier::leave(barrier.as_deref());
                return;
            }
        }
        if let Some(b) = &barrier {
            b.state.borrow_mut().live += tasks.len();
        }
        for ((name, ops), lines) in tasks.into_iter().zip(task_at) {
            let (fs, errors, task) = (fs.clone(), errors.clone(), name.clone());
            let (h3, barrier) = (h2.clone(), barrier.clone());
            h2.spawn(&name, async move {
                // Remaining steps, for URW: the named points the rest of the ops reach.
                let steps: Vec<u32> = ops
                    .iter()
                    .map(|o| points_of(kind, o).len() as u32)
                    .collect();
                for (i, op) in ops.iter().enumerate() {
                    h3.set_remaining(h3.current(), steps[i..].iter().sum());
                    if let Err(e) = task_op(&fs, &h3, op, barrier.as_deref()).await {
                        errors.borrow_mut().push(format!(
                            "{}: task {task}: {}: {}",
                            lines[i],
                            op.kind(),
                            e.0
                        ));
                        break;
                    }
                }
                PowerBarrier::leave(barrier.as_deref());
            });
        }
        PowerBarrier::leave(barrier.as_deref());
    });
}

/// Runs one operation of a scenario task; `power-fail` goes through the barrier (its
/// `power-fail:start` and `power-fail:done` points around it).
async fn task_op(
    fs: &Mounted,
    h: &sim::Handle,
    op: &Op,
    barrier: Option<&PowerBarrier>,
) -> Result<(), crate::vfs::OpError> {
    match (op, barrier) {
        (Op::PowerFail, Some(b)) => {
            let (start, done) = op.labels();
            h.point(h.point_id_static(start)).await;
            b.power_fail(fs).await?;
            h.point(h.point_id_static(done)).await;
            Ok(())
        }
        _ => fs.run_op(op).await,
    }
}

/// The barrier a `power-fail` is (xfstests' remount happens with nothing running): the
/// setup task and the scenario's tasks each wait at their `power-fail` until every task
/// still running waits at one too (a finished task no longer counts); the last to arrive
/// takes the power failure and the mount, then all go on. Made only for a scenario with a
/// `power-fail`, so other runs are unchanged.
struct PowerBarrier {
    state: std::cell::RefCell<BarrierState>,
    wq: sim::WaitQueue,
}

/// See `PowerBarrier`.
struct BarrierState {
    /// Tasks started and not finished (setup included).
    live: usize,
    /// Tasks waiting at a `power-fail` in this round.
    waiting: usize,
    /// Power failures taken so far.
    round: u64,
    /// A task is taking this round's failure.
    performing: bool,
}

impl PowerBarrier {
    /// The barrier of `sc`'s run, if it has a `power-fail` (setup counted as live).
    fn for_scenario(h: &sim::Handle, sc: &Scenario) -> Option<std::rc::Rc<PowerBarrier>> {
        let any = sc
            .setup
            .iter()
            .chain(sc.tasks.iter().flat_map(|(_, ops)| ops.iter()))
            .any(|o| matches!(o, Op::PowerFail));
        any.then(|| {
            std::rc::Rc::new(PowerBarrier {
                state: std::cell::RefCell::new(BarrierState {
                    live: 1,
                    waiting: 0,
                    round: 0,
                    performing: false,
                }),
                wq: sim::WaitQueue::new(h, "power_fail_barrier"),
            })
        })
    }

    /// A task arrives at a `power-fail`: waits for the others, takes the failure when it is
    /// the last, and returns once it is taken (the taker's error, if any, is its own).
    async fn power_fail(&self, fs: &Mounted) -> Result<(), crate::vfs::OpError> {
        let round = {
            let mut s = self.state.borrow_mut();
            s.waiting += 1;
            s.round
        };
        loop {
            let take = {
                let s = self.state.borrow();
                if s.round != round {
                    return Ok(());
                }
                s.waiting == s.live && !s.performing
            };
            if take {
                self.state.borrow_mut().performing = true;
                let r = fs.power_fail().await;
                {
                    let mut s = self.state.borrow_mut();
                    (s.performing, s.waiting, s.round) = (false, 0, s.round + 1);
                }
                self.wq.notify_all();
                return r;
            }
            self.wq.wait().await;
        }
    }

    /// A task finished: the others need not wait for it.
    fn leave(b: Option<&PowerBarrier>) {
        if let Some(b) = b {
            b.state.borrow_mut().live -= 1;
            b.wq.notify_all();
        }
    }
}

/// Where each operation is written ("file:line", or the file's name when the scenario was
/// not read from text): setup's, then each task's.
fn op_locations(sc: &Scenario) -> (Vec<String>, Vec<Vec<String>>) {
    let origin = &sc.origin;
    let at = |lines: &[usize], i: usize| {
        lines
            .get(i)
            .map_or_else(|| origin.clone(), |l| format!("{origin}:{l}"))
    };
    let setup_at: Vec<String> = (0..sc.setup.len())
        .map(|i| at(&sc.setup_lines, i))
        .collect();
    let task_at: Vec<Vec<String>> = sc
        .tasks
        .iter()
        .enumerate()
        .map(|(k, (_, ops))| {
            let lines = sc.task_lines.get(k).map_or(&[][..], |v| &v[..]);
            (0..ops.len()).map(|i| at(lines, i)).collect()
        })
        .collect();
    (setup_at, task_at)
}

/// The daemon that checks recovery at `CRASH_POINTS` random instants.
fn spawn_crash_points(sim: &mut Sim, h: &sim::Handle, fs: &Mounted, streams: &mut RngStreams) {
    let (fs, h2) = (fs.clone(), h.clone());
    let mut rng = streams.stream("crash-points");
    sim.spawn_helper("crash-points", async move {
        for _ in 0..CRASH_POINTS {
            let gap: f64 = Exp1.sample(&mut rng);
            h2.sleep((gap * 100_000.0) as u64 + 1).await;
            fs.check_crash("at a random crash point");
        }
    });
}

/// The violations of the run itself: the engine's error (deadlock S3, a stuck script, the
/// time limit), a script left unfinished, and failed operations (`errors`).
fn run_violations(
    sc: &Scenario,
    sim: &Sim,
    h: &sim::Handle,
    outcome: Result<sim::RunSummary, SimError>,
    errors: &[String],
    violations: &mut Vec<Violation>,
) {
    let outcome_ok = outcome.is_ok();
    if let Err(e) = outcome {
        let (inv, msg) = match &e {
            SimError::Deadlock { .. } => ("S3", e.to_string()),
            SimError::Stuck { .. } => ("script", script_error(sc, &e)),
            SimError::TimeLimit { .. } => ("time-limit", e.to_string()),
        };
        violations.push(Violation {
            invariant: inv.to_string(),
            at: h.now(),
            message: msg,
            timeline: crate::btrfs::ctree::timeline(h),
        });
    }
    if outcome_ok {
        if let Some(msg) = sim.scheduler().unfinished() {
            let line = msg
                .strip_prefix("script step ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| sc.script.get(n - 1))
                .map_or(String::new(), |s| format!(":{}", s.line));
            violations.push(Violation {
                invariant: "script".to_string(),
                at: h.now(),
                message: format!("{}{line}: {msg}", sc.origin),
                timeline: Vec::new(),
            });
        }
    }
    for e in errors {
        violations.push(Violation {
            invariant: "scenario".to_string(),
            at: h.now(),
            message: e.clone(),
            timeline: Vec::new(),
        });
    }
}

/// The script steps skipped (unless-blocked), each as a message with its file line.
fn skipped_steps(sc: &Scenario, sim: &Sim) -> Vec<String> {
    sim.scheduler()
        .skipped_steps()
        .into_iter()
        .filter_map(|i| sc.script.get(i))
        .map(|s| {
            format!(
                "{}:{}: script step '{} {}' skipped: {} waited for a lock while the script held the others (unless-blocked)",
                sc.origin, s.line, s.task, s.point, s.task
            )
        })
        .collect()
}

/// Names the script line a stuck run waits for.
fn script_error(sc: &Scenario, e: &SimError) -> String {
    let text = e.to_string();
    // "script step N waits for …": map N to the file line.
    let line = text
        .split("script step ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| sc.script.get(n - 1))
        .map(|s| s.line);
    match line {
        Some(l) => format!("{}:{l}: the script cannot progress: {text}", sc.origin),
        None => format!("{}: the script cannot progress: {text}", sc.origin),
    }
}

/// Compares a run's metrics with expectations; returns mismatch descriptions.
pub fn compare(expect: &BTreeMap<String, u64>, got: &RunResult) -> Vec<String> {
    let mut out: Vec<String> = expect
        .iter()
        .filter_map(|(k, &want)| {
            let have = match INVARIANTS.contains(&k.as_str()) {
                true => got.violations.iter().filter(|v| v.invariant == *k).count() as u64,
                false => got.metrics.get(k).unwrap_or(0),
            };
            (have != want).then(|| format!("{k}: expected {want}, got {have}"))
        })
        .collect();
    // A violation of an invariant the file expects by count is judged by that count.
    for v in got
        .violations
        .iter()
        .filter(|v| !expect.contains_key(&v.invariant))
    {
        out.push(format!("{} violated: {}", v.invariant, v.message));
    }
    out
}
