//! Fuzzing on stable (issue 14): proptest feeds mutated and random text to every reader of
//! user input — scenario files, workload files, device files, sweep shards (`merge`) and sweep
//! checkpoints (`--resume`) — and asserts that none panics and that every error is one line
//! carrying its location (`file:line`, or the file). A property test checks that any scenario
//! that parses round-trips through `to_toml`.
//!
//! The case counts keep the suite fast (a few seconds); `FSYNCSIM_FUZZ_CASES=N` runs N cases
//! per property instead (e.g. 100000 overnight).
//!
//! Issue 28 item 7's run of 10^6 cases and more (release build, one property at a time, each
//! `FSYNCSIM_FUZZ_CASES=N target/release/deps/fuzz-HASH --exact NAME --test-threads 1`):
//! 10^6 each of the scenario, workload, device, merge, checkpoint and flag-value readers and
//! of the random op-list round trip, and 10^5 random scenarios played under both policies:
//! 7,100,001 cases, all clean (about 31 minutes on a shared 2-core machine). After the
//! scenario reader changed (line index), the scenario reader and op-list round trip ran
//! 10^6 cases again and the random scenarios 2·10^4: clean. The most-fixed-kernel property
//! (ignored) was not part of the run.

use models::block::DiskConfig;
use models::scenario::Scenario;
use models::workload::spec::Spec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Cases per property: `FSYNCSIM_FUZZ_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("FSYNCSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn runner(default: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    })
}

/// The text of every file under `scenarios/<dir>` ending in `.toml`.
fn corpus(dirs: &[&str]) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut out = Vec::new();
    for d in dirs {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(d))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        for p in paths {
            out.push(std::fs::read_to_string(p).unwrap());
        }
    }
    assert!(!out.is_empty());
    out
}

/// Fragments a mutation inserts: TOML syntax, the scenario vocabulary, numbers at the edges.
const TOKENS: &[&str] = &[
    "\n",
    "=",
    "\"",
    "[",
    "]",
    "[[task]]",
    "{",
    "}",
    ",",
    "#",
    ".",
    "..",
    "-",
    " ",
    "\\",
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "99999999999999999999",
    "1e309",
    "4k",
    "1T",
    "2T",
    "0s",
    "1h",
    "2h",
    "10ms",
    "nan",
    "true",
    "\u{0}",
    "é",
    "\u{feff}",
    "name",
    "race",
    "ops",
    "steps",
    "setup",
    "device",
    "seed",
    "commit_interval",
    "[costs]",
    "[script]",
    "[policies]",
    "[expect.pre]",
    "fsync /a",
    "write /a 4k",
    "create /a",
    "link /a /b",
    "rename /a /b",
    "sleep 1ms",
    "commit",
    "truncate /a 0",
    "setxattr /a user.x",
    "A link:start",
    "B trans:unblocked",
    "R1",
    "linux-5.10",
    "nvme",
    "hdd",
    "preset",
    "queue_depth",
    "latency",
    "kind",
    "mean_us",
    "clients",
    "duration",
    "mix",
    "cpus",
];

/// One edit of a text.
#[derive(Clone, Debug)]
enum Edit {
    /// Insert a token at a (relative) position.
    Insert(usize, usize),
    /// Delete a range.
    Delete(usize, usize),
    /// Duplicate a line.
    DupLine(usize),
    /// Swap two lines.
    SwapLines(usize, usize),
    /// Cut the text at a position.
    Truncate(usize),
    /// Replace a byte by a random ASCII byte.
    Byte(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Edit::Insert(p, t)),
        2 => (any::<usize>(), 1usize..40).prop_map(|(p, n)| Edit::Delete(p, n)),
        1 => any::<usize>().prop_map(Edit::DupLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        2 => (any::<usize>(), 0x20u8..0x7f).prop_map(|(p, b)| Edit::Byte(p, b)),
    ]
}

/// The nearest char boundary at or before `i % (len + 1)`.
fn at(s: &str, i: usize) -> usize {
    let mut i = i % (s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut s = text.to_string();
    for e in edits {
        match *e {
            Edit::Insert(p, t) => {
                let i = at(&s, p);
                s.insert_str(i, TOKENS[t]);
            }
            Edit::Delete(p, n) => {
                let i = at(&s, p);
                let j = at(&s, i + n.min(s.len() - i));
                s.replace_range(i..j.max(i), "");
            }
            Edit::DupLine(p) | Edit::SwapLines(p, _) | Edit::Truncate(p) if s.is_empty() => {
                let _ = p;
            }
            Edit::DupLine(p) => {
                let mut lines: Vec<&str> = s.split('\n').collect();
                let l = lines[p % lines.len()];
                lines.insert(p % lines.len(), l);
                s = lines.join("\n");
            }
            Edit::SwapLines(a, b) => {
                let mut lines: Vec<&str> = s.split('\n').collect();
                let n = lines.len();
                lines.swap(a % n, b % n);
                s = lines.join("\n");
            }
            Edit::Truncate(p) => {
                let i = at(&s, p);
                s.truncate(i);
            }
            Edit::Byte(p, b) => {
                let i = at(&s, p);
                if i < s.len() {
                    let j = at(&s, i + 1).max(i + s[i..].chars().next().map_or(0, char::len_utf8));
                    s.replace_range(i..j, &(b as char).to_string());
                }
            }
        }
    }
    s
}

/// A corpus entry with some edits, or random text.
fn mutated(corpus: Vec<String>) -> impl Strategy<Value = String> {
    let n = corpus.len();
    prop_oneof![
        8 => (0..n, prop::collection::vec(edit(), 1..6))
            .prop_map(move |(i, e)| apply(&corpus[i], &e)),
        1 => "\\PC{0,200}",
        1 => prop::collection::vec(0..TOKENS.len(), 0..40)
            .prop_map(|t| t.iter().map(|&i| TOKENS[i]).collect::<String>()),
    ]
}

/// An error is one line as shown (its `Display`), and its location is `origin` or
/// `origin:LINE` with LINE within the text (plus one, for an error at its end).
fn located(
    shown: &str,
    location: &str,
    message: &str,
    origin: &str,
    text: &str,
) -> Result<(), TestCaseError> {
    prop_assert!(!shown.contains(['\n', '\r']), "not one line: {shown:?}");
    prop_assert!(!message.is_empty(), "empty message: {shown:?}");
    let lines = text.split('\n').count() + 1;
    let ok = location == origin
        || location
            .strip_prefix(origin)
            .and_then(|r| r.strip_prefix(':'))
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| (1..=lines).contains(&n));
    prop_assert!(
        ok,
        "location {location:?} is not {origin}[:LINE]: {shown:?}"
    );
    Ok(())
}

#[test]
fn scenario_parser_never_panics_and_locates_its_errors() {
    let corpus = corpus(&[".", "examples"]);
    let errors = std::cell::Cell::new(0u32);
    runner(256)
        .run(&mutated(corpus), |text| {
            if let Err(e) = Scenario::parse(&text, "fuzz.toml") {
                errors.set(errors.get() + 1);
                located(&e.to_string(), &e.location, &e.message, "fuzz.toml", &text)?;
            }
            Ok(())
        })
        .unwrap();
    // The mutations reach the error paths (and not only them).
    assert!(
        errors.get() > 0 && errors.get() < cases(256),
        "{} errors",
        errors.get()
    );
}

#[test]
fn workload_parser_never_panics_and_locates_its_errors() {
    let corpus = corpus(&["workloads"]);
    runner(256)
        .run(&mutated(corpus), |text| {
            if let Err(e) = Spec::parse(&text, "fuzz.toml") {
                located(&e.to_string(), &e.location, &e.message, "fuzz.toml", &text)?;
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn device_parser_never_panics_and_locates_its_errors() {
    let corpus = corpus(&["devices"]);
    runner(256)
        .run(&mutated(corpus), |text| {
            if let Err(e) = DiskConfig::from_toml(&text, "fuzz.toml") {
                located(&e.to_string(), &e.location, &e.message, "fuzz.toml", &text)?;
            }
            Ok(())
        })
        .unwrap();
}

/// The JSON a two-shard sweep of R1 prints (one report per policy), as text.
fn shard_texts() -> Vec<String> {
    let sc = Scenario::load("r1-link-rename-logged-trans").unwrap();
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    let mut out = Vec::new();
    for k in 1..=2 {
        let shard = models::sweep::Shard { k, n: 2 };
        let reports: Vec<serde_json::Value> = [sc.pre_policy(), sc.post_policy()]
            .iter()
            .map(|p| {
                let mut acc = models::sweep::SweepResult::default();
                let stop = std::sync::atomic::AtomicBool::new(false);
                models::sweep::sweep_chunked(
                    &sc,
                    p,
                    &dev,
                    0..40,
                    shard,
                    1,
                    &models::scenario::Interleaving::Random,
                    &[],
                    &|_| {},
                    &stop,
                    0,
                    &mut acc,
                    &mut |_, _| Ok(()),
                )
                .unwrap();
                let id = reports::sweep::Identity::new(
                    &sc,
                    &dev,
                    p,
                    "--strategy random",
                    &(0..40),
                    "fuzz",
                );
                reports::sweep::SweepReport::new(&sc, p, "--strategy random", 0..40, shard, acc, id)
                    .json()
            })
            .collect();
        out.push(format!("{:#}", serde_json::Value::Array(reports)));
    }
    out
}

/// JSON-aware edits: numbers and strings of a real file changed, keys dropped.
fn json_mutated(corpus: Vec<String>) -> impl Strategy<Value = String> {
    const JSON_TOKENS: &[&str] = &[
        "0",
        "1",
        "-1",
        "2",
        "40",
        "18446744073709551615",
        "1e30",
        "null",
        "\"\"",
        "\"1/2\"",
        "\"3/2\"",
        "\"0/0\"",
        "[]",
        "{}",
        "true",
        "\"x\"",
        ",",
        ":",
        "\"invariant:S1\"",
    ];
    let n = corpus.len();
    (
        0..n,
        prop::collection::vec((any::<usize>(), 0..JSON_TOKENS.len(), 0usize..12), 1..5),
    )
        .prop_map(move |(i, edits)| {
            let mut s = corpus[i].clone();
            for (p, t, cut) in edits {
                // Replace the token after a ': ' with another value (or cut some bytes).
                let i = at(&s, p);
                match s[i..].find(": ").map(|j| i + j + 2) {
                    Some(v) => {
                        let end = s[v..].find([',', '\n', '}']).map_or(s.len(), |e| v + e);
                        s.replace_range(v..end, JSON_TOKENS[t]);
                    }
                    None => {
                        let j = at(&s, i + cut);
                        s.replace_range(i..j.max(i), "");
                    }
                }
            }
            s
        })
}

#[test]
fn merge_reader_never_panics_and_errors_are_one_line() {
    let texts = shard_texts();
    // The unedited shards merge.
    let inputs: Vec<_> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            (
                format!("s{i}.json"),
                reports::sweep::read_shards("s.json", t).unwrap(),
            )
        })
        .collect();
    reports::sweep::merge(&inputs).unwrap();
    let good = inputs[1].clone();
    let strategy = prop_oneof![3 => json_mutated(texts.clone()), 1 => mutated(texts)];
    runner(256)
        .run(&strategy, |text| {
            match reports::sweep::read_shards("s0.json", &text) {
                Err(e) => {
                    prop_assert!(!e.contains('\n') && e.starts_with("s0.json"), "{e:?}");
                }
                Ok(r) => {
                    // Whatever reads must merge or be refused in one line.
                    if let Err(e) = reports::sweep::merge(&[("s0.json".into(), r), good.clone()]) {
                        prop_assert!(!e.contains('\n'), "{e:?}");
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn checkpoint_reader_never_panics_and_refuses_any_edit() {
    let shards = shard_texts();
    let report: serde_json::Value = serde_json::from_str(&shards[0]).unwrap();
    let meta = serde_json::json!({"scenario": "r1-link-rename-logged-trans", "seeds": {"start": 0, "end": 40}});
    let progress = serde_json::json!([{"done_chunks": 1, "report": report[0]}]);
    let text = format!("{:#}\n", reports::checkpoint::seal(&meta, progress));
    assert!(reports::checkpoint::open(&text, "state.json").is_ok());
    let strategy =
        prop_oneof![3 => json_mutated(vec![text.clone()]), 1 => mutated(vec![text.clone()])];
    runner(256)
        .run(&strategy, |edited| {
            let parsed = serde_json::from_str::<serde_json::Value>(&edited).ok();
            let same = parsed == serde_json::from_str(&text).ok();
            match reports::checkpoint::open(&edited, "state.json") {
                Ok(_) => prop_assert!(same, "an edited checkpoint was accepted"),
                Err(e) => prop_assert!(
                    !same && !e.contains('\n') && e.starts_with("state.json"),
                    "{e:?}"
                ),
            }
            Ok(())
        })
        .unwrap();
}

/// Parses, renders with `to_toml`, parses again: the same scenario (all but where it came
/// from and its line numbers), and the same text. Returns whether `text` parsed at all.
fn round_trips(text: &str) -> Result<bool, TestCaseError> {
    let Ok(a) = Scenario::parse(text, "a.toml") else {
        return Ok(false);
    };
    let t1 = a.to_toml(&[]);
    let b = Scenario::parse(&t1, "b.toml")
        .map_err(|e| TestCaseError::fail(format!("to_toml does not parse: {e}\n{t1}")))?;
    prop_assert_eq!(&t1, &b.to_toml(&[]));
    let strip = |s: &Scenario| {
        let mut s = s.clone();
        s.origin.clear();
        s.setup_lines.clear();
        s.task_lines.clear();
        // The digest of the text it was read from: the text differs, the scenario not.
        s.source_digest = 0;
        for st in &mut s.script {
            st.line = 0;
        }
        format!("{s:?}")
    };
    prop_assert_eq!(strip(&a), strip(&b));
    Ok(true)
}

#[test]
fn builtin_and_example_scenarios_round_trip_through_to_toml() {
    // The xfstests files carry every [expect.crash] key (absent, nlink, extents).
    for text in corpus(&[".", "examples", "xfstests"]) {
        assert!(round_trips(&text).unwrap());
    }
}

/// Operation lines of the scenario vocabulary, with arguments drawn from small sets so that
/// tasks act on the same paths.
fn op_line() -> impl Strategy<Value = String> {
    let path = prop::sample::select(vec!["/a", "/b", "/d", "/d/x", "/d/e/y"]);
    let size = prop::sample::select(vec!["1", "4k", "64k", "1M"]);
    (0usize..30, path.clone(), path, size.clone(), size).prop_map(|(k, p, q, s, t)| match k {
        0 => format!("create {p}"),
        1 => format!("mkdir {p}"),
        2 => format!("stat {p}"),
        3 => format!("setattr {p}"),
        4 => format!("writeback {p}"),
        5 => format!("fsync {p}"),
        6 => format!("unlink {p}"),
        7 => format!("rmdir {p}"),
        8 => format!("fdatasync {p}"),
        9 => format!("sync-file-range {p}"),
        10 => format!("truncate {p} {s}"),
        11 => format!("fallocate {p} {s} {t}"),
        12 => format!("fallocate {p} {s} {t} keep-size"),
        13 => format!("punch-hole {p} {s} {t}"),
        14 => format!("setxattr {p} user.x"),
        15 => "syncfs".into(),
        16 => format!("write {p} {s}"),
        17 => format!("mmap-write {p} {s}"),
        18 => format!("link {p} {q}"),
        19 => format!("rename {p} {q}"),
        20 => "commit".into(),
        // A nearly full and a full metadata space: tickets, the flushers, ENOSPC.
        21 => "fill-metadata 2800m".into(),
        22 => "fill-metadata 3300m".into(),
        // Direct I/O (an overwrite: fails cleanly past the written part) and a separate
        // dirty range.
        23 => format!("dio-write {p} {s} {t}"),
        24 => format!("write-range {p} {s}"),
        // Descriptors: the setup opens /a as F (random_scenario_text); G may be opened.
        25 => "fsync @F".into(),
        26 => format!("write @F {s}"),
        27 => "close @F".into(),
        28 => format!("open {p} as G"),
        _ => "sleep 1ms".into(),
    })
}

/// A scenario file of random operations over paths its setup creates.
fn random_scenario_text(
    setup: &[String],
    tasks: &[Vec<String>],
    race: &str,
    device: Option<&str>,
) -> String {
    let q = |s: &String| format!("{s:?}");
    let mut t = format!("name = \"fuzz\"\nrace = \"{race}\"\ntitle = \"t\"\nsummary = \"s\"\n");
    if let Some(d) = device {
        t.push_str(&format!("device = \"{d}\"\n"));
    }
    // Every path the operations name exists (parse checks that some operation creates it);
    // the random setup follows.
    let base = [
        "mkdir /d",
        "mkdir /d/e",
        "create /a",
        "create /b",
        "create /d/x",
        "open /a as F",
    ];
    let setup: Vec<String> = base
        .iter()
        .map(|s| s.to_string())
        .chain(setup.iter().cloned())
        .chain(["create /d/e/y".to_string()])
        .collect();
    t.push_str(&format!(
        "setup = [{}]\n",
        setup.iter().map(q).collect::<Vec<_>>().join(", ")
    ));
    for (i, ops) in tasks.iter().enumerate() {
        t.push_str(&format!(
            "[[task]]\nname = \"T{i}\"\nops = [{}]\n",
            ops.iter().map(q).collect::<Vec<_>>().join(", ")
        ));
    }
    if race == "X9" {
        t.push_str("[policies]\nbefore = \"linux-5.10\"\nafter = \"linux-5.11\"\n");
    }
    t
}

/// A scenario text that parses plays under both policies, scripted and explored, with no
/// panic and a message on every violation; with `repeat`, the same seed gives the same run.
fn plays_cleanly(t: &str, seed: u64, repeat: bool) -> Result<(), TestCaseError> {
    let Ok(sc) = Scenario::parse(t, "fuzz.toml") else {
        return Ok(());
    };
    let dev = DiskConfig::resolve(&sc.device).unwrap();
    for p in [sc.pre_policy(), sc.post_policy()] {
        for how in [
            models::scenario::Interleaving::Script,
            models::scenario::Interleaving::Random,
        ] {
            // No panic; whatever fails is reported as a violation with a message.
            let r = models::scenario::run(&sc, &p, &dev, seed, &how);
            for v in &r.violations {
                prop_assert!(!v.message.is_empty(), "{}: empty message\n{t}", v.invariant);
            }
            if repeat {
                let again = models::scenario::run(&sc, &p, &dev, seed, &how);
                prop_assert_eq!(r.trace_hash, again.trace_hash, "{}", t);
            }
        }
    }
    Ok(())
}

#[test]
fn random_scenarios_play_or_fail_cleanly_under_both_policies() {
    let strategy = (
        prop::collection::vec(op_line(), 0..6),
        prop::collection::vec(prop::collection::vec(op_line(), 1..6), 1..4),
        any::<u64>(),
        prop::sample::select(vec!["R1", "R4", "R6", "X9"]),
        prop::option::of(prop::sample::select(vec!["hdd", "sata-ssd"])),
    );
    runner(48)
        .run(&strategy, |(setup, tasks, seed, race, device)| {
            let t = random_scenario_text(&setup, &tasks, race, device);
            plays_cleanly(&t, seed, false)
        })
        .unwrap();
}

/// An operation line, or now and then a `power-fail`.
fn op_line_or_power_fail() -> impl Strategy<Value = String> {
    prop_oneof![5 => op_line(), 1 => Just("power-fail".to_string())]
}

/// Random scenarios with power failures in the setup and the tasks (each a barrier, the
/// mount going on from the recovered state) play or fail cleanly under both policies,
/// scripted and explored: no panic, no hang, every violation with a message; and the same
/// seed gives the same run.
#[test]
fn random_scenarios_with_power_failures_play_or_fail_cleanly() {
    let strategy = (
        prop::collection::vec(op_line_or_power_fail(), 0..6),
        prop::collection::vec(prop::collection::vec(op_line_or_power_fail(), 1..8), 1..4),
        any::<u64>(),
    );
    runner(48)
        .run(&strategy, |(setup, tasks, seed)| {
            let t = random_scenario_text(&setup, &tasks, "X9", None);
            plays_cleanly(&t, seed, true)
        })
        .unwrap();
}

/// The newest release preset with every fsync fix the model has that no preset carries yet
/// (5.17's prealloc-full-fsync): the most fixed kernel the model can run.
fn most_fixed_kernel() -> models::kernel::Policy {
    let newest = models::kernel::preset_names().last().unwrap();
    models::kernel::parse_policy(&format!("{newest}:+prealloc-full-fsync")).unwrap()
}

/// Random scenarios (tasks, operations, paths, sizes, devices) on the most fixed kernel never
/// violate S1–S3, scripted or explored: the crash check must not cry wolf, so a hit is a
/// model bug (or an unmodelled kernel fix) to find, printed with its scenario and seed.
/// Ignored in the suite while it still finds open cases (it would make CI flaky). The case
/// it found last time (prealloc past EOF relogged LOG_INODE_EXISTS) is fixed and pinned in
/// tests/no_false_alarm.rs. The open one: a new file `/d/x` created in log sub-transaction
/// 0, another file's fdatasync syncing log 0, then two tasks fsyncing `/d/x`: the first
/// logs it in sub-transaction 1 and drops the inode lock before its log sync; the second
/// finds btrfs_inode_in_log true (last_sub_trans 0 <= last_log_commit 0 <= root's 0) and
/// returns before log 1 is durable, so S2 "the file has no name" under every preset, in
/// every seed. This reading of btrfs_sync_file / btrfs_inode_in_log (5.10-5.16) would make it
/// a kernel window, not a model bug; not yet proven either way (tree-log.c@v5.15:
/// btrfs_add_log_tree resets root->log_transid and last_log_commit to 0, so a stamp taken
/// before the transaction's first log equals that log's id). Fixed since: a rename onto a
/// name in a directory new in this transaction (tests/new_name.rs: btrfs_log_new_name now
/// logs the new ancestors, as btrfs_log_inode_parent does),
/// a name taken after the promise, an xattr replace, link/rename without the
/// vfs inode locks (tests/no_false_alarm.rs). Run it with
/// `FSYNCSIM_FUZZ_CASES=5000 cargo nextest run --release --run-ignored all -E 'test(most_fixed)'`.
#[test]
#[ignore = "finds open false S2s; see the comment"]
fn random_scenarios_never_violate_an_invariant_on_the_most_fixed_kernel() {
    let strategy = (
        prop::collection::vec(op_line(), 0..6),
        prop::collection::vec(prop::collection::vec(op_line(), 1..6), 1..4),
        any::<u64>(),
        prop::option::of(prop::sample::select(vec!["hdd", "sata-ssd"])),
    );
    let policy = most_fixed_kernel();
    runner(32)
        .run(&strategy, |(setup, tasks, seed, device)| {
            let t = random_scenario_text(&setup, &tasks, "R1", device);
            let Ok(sc) = Scenario::parse(&t, "fuzz.toml") else {
                return Ok(());
            };
            let dev = DiskConfig::resolve(&sc.device).unwrap();
            for how in [
                models::scenario::Interleaving::Script,
                models::scenario::Interleaving::Random,
            ] {
                let r = models::scenario::run(&sc, &policy, &dev, seed, &how);
                // Failed operations (ENOENT, EISDIR, ENOSPC) are reported as `scenario`
                // violations; only the invariants are the crash check's verdicts.
                let hits: Vec<_> = r
                    .violations
                    .iter()
                    .filter(|v| models::vfs::metrics::INVARIANTS.contains(&v.invariant.as_str()))
                    .collect();
                prop_assert!(
                    hits.is_empty(),
                    "{} under {} (seed {seed}, {how:?}): {}\n{t}",
                    hits[0].invariant,
                    policy.name,
                    hits[0].message
                );
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn random_op_lists_round_trip_through_to_toml() {
    let strategy = (
        prop::collection::vec(op_line(), 0..6),
        prop::collection::vec(prop::collection::vec(op_line(), 1..6), 1..4),
        prop::sample::select(vec!["R1", "R4", "R7", "X9"]),
        prop::option::of(prop::sample::select(vec!["nvme", "hdd", "sas-ssd"])),
    );
    let (tried, parsed) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    runner(128)
        .run(&strategy, |(setup, tasks, race, device)| {
            tried.set(tried.get() + 1);
            let t = random_scenario_text(&setup, &tasks, race, device);
            if round_trips(&t)? {
                parsed.set(parsed.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    // The property is about scenarios that parse: most generated ones must.
    assert!(
        parsed.get() * 2 > tried.get(),
        "{} of {} parsed",
        parsed.get(),
        tried.get()
    );
}

/// Strings like flag values: numbers at the edges, units, separators, unicode.
fn flag_value() -> impl Strategy<Value = String> {
    const PARTS: &[&str] = &[
        "0",
        "1",
        "9",
        "18446744073709551615",
        "18446744073709551616",
        "-",
        ".",
        "..",
        "/",
        "=",
        ",",
        ":",
        "+",
        "e",
        "k",
        "KiB",
        "T",
        "s",
        "ms",
        "us",
        "ns",
        "m",
        "h",
        "R1",
        "R8",
        "linux-5.11",
        "linux-5.10",
        "queue_depth",
        "clients",
        "cpus",
        "unlimited",
        "S1",
        "invariant:",
        " ",
        "é",
        "\u{0}",
        "inf",
        "nan",
    ];
    prop_oneof![
        3 => prop::collection::vec(prop::sample::select(PARTS), 0..8).prop_map(|p| p.concat()),
        1 => "\\PC{0,24}",
    ]
}

#[test]
fn flag_value_parsers_never_panic_and_errors_are_one_line() {
    type Parser = fn(&str) -> Result<(), String>;
    let parsers: &[(&str, Parser)] = &[
        ("seeds", |s| models::sweep::parse_seeds(s).map(drop)),
        ("shard", |s| models::sweep::Shard::parse(s).map(drop)),
        ("size", |s| models::units::parse_size(s).map(drop)),
        ("duration", |s| sim::parse_duration(s).map(drop)),
        ("commit", |s| {
            models::mount::parse_commit_interval(s).map(drop)
        }),
        ("vary", |s| {
            models::workload::compare::parse_vary(s).map(drop)
        }),
        ("policy", |s| models::kernel::parse_policy(s).map(drop)),
        ("target", |s| models::shrink::Target::parse(s).map(drop)),
        ("op", |s| models::scenario::parse_op(s).map(drop)),
    ];
    runner(256)
        .run(&flag_value(), |v| {
            for (name, parse) in parsers {
                if let Err(e) = parse(&v) {
                    // A value with a line break is quoted as given; main shows it escaped.
                    let clean = !v.contains(char::is_control);
                    prop_assert!(!e.is_empty(), "{name} {v:?}: empty error");
                    prop_assert!(!clean || !e.contains('\n'), "{name} {v:?}: {e:?}");
                }
            }
            Ok(())
        })
        .unwrap();
}
