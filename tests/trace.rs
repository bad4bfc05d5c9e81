//! The Perfetto traces of `run`, `replay`, `workload` and `compare --trace`: decoded with the
//! prost messages of reports::perfetto::proto (their `compressed_packets` inflated), and, when
//! PyPI's `perfetto` is installed (.ci/run), with Perfetto's own generated schema.

use crate::common;

use common::{assert_one_line_in, fsyncsim_in, stderr, temp_dir};
use prost::Message;
use reports::perfetto::proto::{Trace, TracePacket, COUNTER, INSTANT, SLICE_BEGIN, SLICE_END};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use std::process::Command;

const R1: &str = "r1-link-rename-logged-trans";
/// The harness's own tasks (sim::Handle::spawn_helper).
const HELPERS: [&str; 5] = [
    "trace-drain",
    "progress",
    "stopper",
    "iostat",
    "crash-points",
];

/// The packets of a trace file, `compressed_packets` inflated in place.
fn packets(bytes: &[u8]) -> Vec<TracePacket> {
    let mut out = Vec::new();
    for p in Trace::decode(bytes).expect("a Trace").packet {
        match &p.compressed_packets {
            Some(z) => {
                let mut raw = Vec::new();
                flate2::read::ZlibDecoder::new(&z[..])
                    .read_to_end(&mut raw)
                    .expect("zlib");
                out.extend(packets(&raw));
            }
            None => out.push(p),
        }
    }
    out
}

/// A decoded trace: each thread track's name, and every event with its absolute time.
#[derive(Default)]
struct Decoded {
    /// Thread track uuid → (pid, tid, name).
    threads: BTreeMap<u64, (i32, i32, String)>,
    /// Named child tracks: uuid → (parent uuid, name).
    children: BTreeMap<u64, (u64, String)>,
    /// Counter tracks: uuid → name.
    counters: BTreeMap<u64, String>,
    /// Counter tracks' units (CounterDescriptor.unit) and values in time order.
    counter_units: BTreeMap<u64, i32>,
    counter_values: BTreeMap<u64, Vec<i64>>,
    /// (track uuid, time, type, name) in each sequence's order.
    events: Vec<(u64, u64, i32, Option<String>)>,
}

fn decode(path: &Path) -> Decoded {
    let mut d = Decoded::default();
    // Per sequence: time, default track, interned names.
    let mut seqs: BTreeMap<u32, (u64, u64, BTreeMap<u64, String>)> = BTreeMap::new();
    for p in packets(&std::fs::read(path).unwrap()) {
        let seq = p
            .trusted_packet_sequence_id
            .expect("every packet has a sequence");
        let s = seqs.entry(seq).or_default();
        if let Some(defaults) = &p.trace_packet_defaults {
            assert_eq!(
                defaults.timestamp_clock_id,
                Some(64),
                "the incremental clock"
            );
            s.1 = defaults
                .track_event_defaults
                .as_ref()
                .unwrap()
                .track_uuid
                .unwrap();
            s.0 = p.timestamp.unwrap_or(0);
            continue;
        }
        if let Some(t) = &p.track_descriptor {
            let uuid = t.uuid.unwrap();
            if let Some(th) = &t.thread {
                let name = th.thread_name.clone().unwrap();
                d.threads
                    .insert(uuid, (th.pid.unwrap(), th.tid.unwrap(), name));
            } else if let Some(c) = &t.counter {
                d.counters.insert(uuid, t.name.clone().unwrap());
                d.counter_units.insert(uuid, c.unit.unwrap_or(0));
            } else if let Some(n) = &t.name {
                d.children.insert(uuid, (t.parent_uuid.unwrap(), n.clone()));
            }
            continue;
        }
        let Some(e) = &p.track_event else { continue };
        s.0 += p.timestamp.expect("events carry a (delta) timestamp");
        for n in p.interned_data.iter().flat_map(|i| &i.event_names) {
            s.2.insert(n.iid.unwrap(), n.name.clone().unwrap());
        }
        let name = e
            .name_iid
            .map(|i| s.2.get(&i).expect("interned before use").clone());
        let track = e.track_uuid.unwrap_or(s.1);
        if let Some(v) = e.counter_value {
            d.counter_values.entry(track).or_default().push(v);
        }
        d.events.push((track, s.0, e.r#type.unwrap(), name));
    }
    d
}

/// Asserts every track's slices nest (each end closes an open begin, none left open) and
/// returns the latest time.
fn assert_nested(d: &Decoded) -> u64 {
    let mut open: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut last = 0;
    for &(track, t, kind, ref name) in &d.events {
        last = last.max(t);
        match kind {
            SLICE_BEGIN => open.entry(track).or_default().push(t),
            SLICE_END => {
                let b = open.get_mut(&track).and_then(|s| s.pop());
                assert!(
                    b.is_some_and(|b| b <= t),
                    "end without begin on {track} at {t}"
                );
            }
            INSTANT | COUNTER => assert!(kind == INSTANT || name.is_none()),
            k => panic!("event type {k}"),
        }
    }
    assert!(open.values().all(|s| s.is_empty()), "slices left open");
    last
}

fn thread_names(d: &Decoded) -> BTreeSet<String> {
    d.threads.values().map(|t| t.2.clone()).collect()
}

/// The task names of a text timeline (`run --trace FILE.txt`): its second column.
fn timeline_tasks(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

#[test]
fn run_trace_has_a_track_per_task_in_the_run_span() {
    let d = temp_dir("trace-run");
    let o = fsyncsim_in(&d, &["run", R1, "--trace", "t.pftrace"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fsyncsim_in(&d, &["run", R1, "--trace", "t.txt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = fsyncsim_in(&d, &["run", R1, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let end = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["end_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    let tr = decode(&d.join("t.pftrace"));
    let text = timeline_tasks(&d.join("t.txt"));
    let expected: BTreeSet<String> = text
        .iter()
        .filter(|t| !HELPERS.contains(&t.as_str()))
        .cloned()
        .collect();
    assert!(text.contains("crash-points"), "the helper runs: {text:?}");
    assert_eq!(thread_names(&tr), expected);
    // Two runs (before and after the fix): two processes, thread ids unique and never 0.
    let pids: BTreeSet<i32> = tr.threads.values().map(|t| t.0).collect();
    assert_eq!(pids.len(), 2);
    let tids: BTreeSet<i32> = tr.threads.values().map(|t| t.1).collect();
    assert_eq!(tids.len(), tr.threads.len());
    assert!(!tids.contains(&0));
    let last = assert_nested(&tr);
    assert!(last <= end, "an event at {last} after the run's end {end}");
    // Full detail: named points as instants.
    assert!(tr.events.iter().any(|e| e.2 == INSTANT));
    let waits = tr.counters.values().filter(|n| !n.starts_with("btrfs "));
    assert_eq!(waits.count(), 6, "three wait counters per run");
    std::fs::remove_dir_all(d).unwrap();
}

const DBENCH: [&str; 8] = [
    "workload",
    "dbench",
    "--clients",
    "3",
    "--duration",
    "200ms",
    "--warmup",
    "0s",
];

/// The trace `trace` (in `d`) of 2 dbench clients for 1.5 s committing every second.
fn committing_dbench(d: &Path, trace: &str) -> Decoded {
    let toml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/workloads/dbench.toml"),
    )
    .unwrap()
    .replace("clients = 64", "clients = 2")
    .replace("duration = \"300s\"", "duration = \"1500ms\"")
    .replace("warmup = \"60s\"", "warmup = \"0s\"")
    .replace("commit_interval = \"30s\"", "commit_interval = \"1s\"");
    std::fs::write(d.join("kt.toml"), toml).unwrap();
    let o = fsyncsim_in(d, &["workload", "kt.toml", "--trace", trace]);
    assert!(o.status.success(), "{}", stderr(&o));
    decode(&d.join(trace))
}

#[test]
fn workload_trace_shows_the_transaction_kthread_and_no_helper() {
    let d = temp_dir("trace-workload");
    let o = fsyncsim_in(&d, &[&DBENCH[..], &["--trace", "w.pftrace"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let tr = decode(&d.join("w.pftrace"));
    let names = thread_names(&tr);
    for t in [
        "btrfs-transaction",
        "client0",
        "client1",
        "client2",
        "setup",
    ] {
        assert!(names.contains(t), "{t}: {names:?}");
    }
    for h in HELPERS {
        assert!(!names.contains(h), "{h} shown");
    }
    // With a 1 s commit interval the transaction kthread commits: its I/O waits are slices
    // on its own track (they once landed on the track of `setup`).
    let k = committing_dbench(&d, "k.pftrace");
    let (&kt, _) = k
        .threads
        .iter()
        .find(|(_, t)| t.2 == "btrfs-transaction")
        .unwrap();
    assert!(k.events.iter().any(|e| e.0 == kt && e.2 == SLICE_BEGIN));
    assert_nested(&k);
    // Operations on each client's "operations" track; the run lasts setup + 200 ms.
    let ops: BTreeSet<u64> = tr.children.keys().copied().collect();
    assert_eq!(ops.len(), 3, "{:?}", tr.children);
    let first_op = tr
        .events
        .iter()
        .filter(|e| ops.contains(&e.0))
        .map(|e| e.1)
        .min()
        .unwrap();
    let last = assert_nested(&tr);
    assert!(
        last <= first_op + 200_000_000,
        "an event at {last} ns, past the run's end (clients from {first_op} ns + 200 ms)"
    );
    assert!(tr.events.iter().any(|e| e.2 == COUNTER));
    // Lean by default: no named points; detail=full adds them.
    assert!(!tr.events.iter().any(|e| e.2 == INSTANT));
    let o = fsyncsim_in(
        &d,
        &[
            &DBENCH[..],
            &["--trace", "f.pftrace", "--trace-filter", "detail=full"],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(decode(&d.join("f.pftrace"))
        .events
        .iter()
        .any(|e| e.2 == INSTANT));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn btrfs_space_counters_are_counter_tracks_in_bytes() {
    // Two clients committing every second: dirty data comes and goes, freed extents are
    // pinned until a commit unpins them.
    let d = temp_dir("trace-space");
    let tr = committing_dbench(&d, "s.pftrace");
    let track = |name: &str| {
        let (&uuid, _) = tr
            .counters
            .iter()
            .find(|(_, n)| *n == name)
            .unwrap_or_else(|| panic!("no counter track {name}: {:?}", tr.counters));
        (tr.counter_units[&uuid], tr.counter_values[&uuid].clone())
    };
    for name in [
        "btrfs delalloc_bytes",
        "btrfs data bytes_may_use",
        "btrfs data bytes_pinned",
        "btrfs metadata bytes_may_use",
    ] {
        let (unit, values) = track(name);
        assert_eq!(unit, 3, "{name}: UNIT_SIZE_BYTES");
        assert!(values.iter().all(|&v| v >= 0), "{name}: {values:?}");
        let distinct: BTreeSet<i64> = values.iter().copied().collect();
        assert!(distinct.len() > 2, "{name} moves: {distinct:?}");
    }
    // Written when they change: no two equal values in a row.
    let (_, v) = track("btrfs delalloc_bytes");
    assert!(v.windows(2).all(|w| w[0] != w[1]), "{v:?}");
    // The commit unpins what was freed before it.
    let (_, pinned) = track("btrfs data bytes_pinned");
    assert!(
        pinned.iter().any(|&p| p > 0) && pinned.contains(&0),
        "{pinned:?}"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_same_seed_writes_the_same_bytes_and_no_trace_changes_no_output() {
    let d = temp_dir("trace-same");
    let mut outs = Vec::new();
    for f in ["a.pftrace", "b.pftrace"] {
        let o = fsyncsim_in(&d, &[&DBENCH[..], &["--trace", f, "--json"]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        outs.push(o.stdout);
    }
    let a = std::fs::read(d.join("a.pftrace")).unwrap();
    assert!(
        a == std::fs::read(d.join("b.pftrace")).unwrap(),
        "traces differ"
    );
    // The run is the same: only the drain task's own engine events (its count and the
    // trace hash) tell a traced run apart.
    let plain = fsyncsim_in(&d, &[&DBENCH[..], &["--json"]].concat());
    let strip = |b: &[u8]| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        let m = v.as_object_mut().unwrap();
        assert!(m.remove("events").is_some() && m.remove("trace_hash").is_some());
        v
    };
    assert!(
        strip(&plain.stdout) == strip(&outs[0]),
        "--trace changed the run"
    );
    for f in ["r1.pftrace", "r2.pftrace"] {
        let o = fsyncsim_in(&d, &["replay", R1, "--seed", "2", "--trace", f]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let r1 = std::fs::read(d.join("r1.pftrace")).unwrap();
    assert!(
        r1 == std::fs::read(d.join("r2.pftrace")).unwrap(),
        "replay traces differ"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn the_filter_keeps_tasks_operations_and_a_window() {
    let d = temp_dir("trace-filter");
    let filter = "task=client1,op=Flush,op=WriteX,from=50ms,to=150ms";
    let o = fsyncsim_in(
        &d,
        &[
            &DBENCH[..],
            &["--trace", "f.pftrace", "--trace-filter", filter],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tr = decode(&d.join("f.pftrace"));
    assert_eq!(thread_names(&tr), BTreeSet::from(["client1".to_string()]));
    let ops: BTreeSet<u64> = tr.children.keys().copied().collect();
    let names: BTreeSet<&str> = tr
        .events
        .iter()
        .filter(|e| ops.contains(&e.0) && e.2 == SLICE_BEGIN)
        .filter_map(|e| e.3.as_deref())
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| ["Flush", "WriteX"].contains(n)),
        "{names:?}"
    );
    assert_nested(&tr);
    for e in &tr.events {
        assert!(
            (50_000_000..=150_000_000).contains(&e.1),
            "{e:?} outside the window"
        );
    }
    // A prefix pattern, and a run's task filter.
    let o = fsyncsim_in(
        &d,
        &[
            &DBENCH[..],
            &["--trace", "p.pftrace", "--trace-filter", "task=client*"],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let clients: BTreeSet<String> = (0..3).map(|i| format!("client{i}")).collect();
    assert_eq!(thread_names(&decode(&d.join("p.pftrace"))), clients);
    let o = fsyncsim_in(
        &d,
        &[
            "run",
            R1,
            "--trace",
            "r.pftrace",
            "--trace-filter",
            "task=A",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        thread_names(&decode(&d.join("r.pftrace"))),
        BTreeSet::from(["A".to_string()])
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_bad_filter_is_one_line_exit_2_and_no_file() {
    let d = temp_dir("trace-bad-filter");
    for (args, needles) in [
        (
            vec!["--trace-filter", "client3"],
            vec!["--trace-filter", "KEY=VALUE"],
        ),
        (
            vec!["--trace-filter", "tsak=client3"],
            vec!["--trace-filter", "unknown key 'tsak'"],
        ),
        (
            vec!["--trace-filter", "from=2s,to=1s"],
            vec!["--trace-filter", "before"],
        ),
        (
            vec!["--trace-filter", "to=soon"],
            vec!["--trace-filter", "duration"],
        ),
        (
            vec!["--trace-filter", "detail=most"],
            vec!["--trace-filter", "detail=full"],
        ),
        (
            vec!["--trace-filter", "task=nobody"],
            vec!["--trace-filter", "matches no"],
        ),
        (
            vec!["--trace-filter", "op=Fsync"],
            vec!["--trace-filter", "matches no operation"],
        ),
    ] {
        let args = [&DBENCH[..], &["--trace", "t.pftrace"], &args[..]].concat();
        assert_one_line_in(&d, 2, &args, &needles);
        assert!(
            std::fs::read_dir(&d).unwrap().next().is_none(),
            "{args:?} wrote a file"
        );
    }
    assert_one_line_in(
        &d,
        2,
        &[&DBENCH[..], &["--trace-filter", "task=a"]].concat(),
        &["--trace-filter", "--trace"],
    );
    for args in [
        vec![
            "run",
            R1,
            "--trace",
            "t.pftrace",
            "--trace-filter",
            "op=fsync",
        ],
        vec!["run", R1, "--trace", "t.txt", "--trace-filter", "task=A"],
        vec![
            "replay",
            R1,
            "--seed",
            "1",
            "--trace",
            "t.pftrace",
            "--trace-filter",
            "task=Z",
        ],
    ] {
        assert_one_line_in(&d, 2, &args, &["--trace-filter"]);
        assert!(
            std::fs::read_dir(&d).unwrap().next().is_none(),
            "{args:?} wrote a file"
        );
    }
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn compare_writes_a_perfetto_trace_into_out() {
    let d = temp_dir("trace-compare");
    let o = fsyncsim_in(
        &d,
        &[
            "compare",
            "dbench",
            "--clients",
            "2",
            "--duration",
            "100ms",
            "--warmup",
            "0s",
            "--out",
            "o",
            "--trace",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let tr = decode(&d.join("o/trace.pftrace"));
    assert!(thread_names(&tr).contains("client1"));
    assert_nested(&tr);
    std::fs::remove_dir_all(d).unwrap();
}

/// Perfetto's own schema (PyPI `perfetto`'s perfetto_trace_pb2) reads the trace with no
/// unknown field; skipped with one line where it is not installed.
#[test]
fn perfettos_own_schema_decodes_the_trace() {
    let py = std::env::var_os("FSYNCSIM_CONSUMERS_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/consumers-venv/bin/python")
        });
    let has = Command::new(&py)
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        println!("SKIP perfettos_own_schema_decodes_the_trace: PyPI perfetto is not installed (.ci/run installs it)");
        return;
    }
    let d = temp_dir("trace-schema");
    let o = fsyncsim_in(
        &d,
        &[
            &DBENCH[..],
            &["--trace", "w.pftrace", "--trace-filter", "detail=full"],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/consumers/perfetto_decode.py");
    let out = Command::new(&py)
        .arg(script)
        .arg(d.join("w.pftrace"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unknown"], serde_json::json!([]), "{v}");
    let ours = decode(&d.join("w.pftrace"));
    let theirs: BTreeSet<String> = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(theirs, thread_names(&ours));
    let begins = ours.events.iter().filter(|e| e.2 == SLICE_BEGIN).count();
    assert_eq!(v["types"]["TYPE_SLICE_BEGIN"].as_u64(), Some(begins as u64));
    assert!(v["types"]["TYPE_INSTANT"].as_u64().unwrap() > 0);
    std::fs::remove_dir_all(d).unwrap();
}
