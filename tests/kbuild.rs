//! kbuild through ccache on ext3 (seed 003, J1.7): the workload's keys are checked, hits and
//! misses drive the disk as ccache does, 2.6.36's async ordered-data writes starve behind
//! the jobs' reads while 2.6.37's sync ones progress, runs are deterministic, and
//! `compare kbuild` sets the seed's iostat beside the model's.

use models::block::DiskConfig;
use models::kernel::Policy;
use models::workload::fsload::{run, WorkloadResult};
use models::workload::spec::{Kind, Spec};
use std::process::Command;

fn short(secs: u64) -> (Spec, DiskConfig) {
    let mut s = Spec::load("kbuild").unwrap();
    s.duration = secs * sim::S;
    s.warmup = sim::S;
    let d = DiskConfig::resolve(&s.device).unwrap();
    (s, d)
}

fn go(s: &Spec, d: &DiskConfig, policy: &str) -> WorkloadResult {
    run(s, &Policy::preset(policy).unwrap(), d, s.seed, None).unwrap()
}

fn ops(r: &WorkloadResult, name: &str) -> u64 {
    r.op(name).map_or(0, |o| o.hist.len())
}

#[test]
fn the_kbuild_workload_is_built_in_with_its_keys() {
    let s = Spec::load("kbuild").unwrap();
    assert_eq!(s.kind, Kind::Kbuild);
    assert_eq!(s.mount.fs, models::mount::FsKind::Ext3);
    assert!(s.units > 0 && (0.0..=1.0).contains(&s.hit_ratio));
    assert!(s.cpu_of("compile") > 0 && s.cpu_of("preprocess") > 0);
}

#[test]
fn kbuild_keys_are_checked_with_file_and_line() {
    let head = "name = \"x\"\nkind = \"kbuild\"\ntitle = \"t\"\nduration = \"1s\"\nfs = \"ext3\"\n";
    for (extra, line, what) in [
        ("hit_ratio = 1.5\n", 6, "hit_ratio"),
        ("page_cache = -0.1\n", 6, "page_cache"),
        ("hit_ratio = nan\n", 6, "hit_ratio"),
        ("units = 0\n", 6, "units"),
        ("object_size = \"-4k\"\n", 6, "object_size"),
    ] {
        let e = Spec::parse(&format!("{head}{extra}"), "x.toml").unwrap_err();
        assert_eq!(e.location, format!("x.toml:{line}"), "{extra}");
        assert!(e.message.contains(what), "{extra}: {}", e.message);
    }
    // kbuild's keys belong to kbuild, and kbuild runs on ext3/ext4.
    let e = Spec::parse(
        "name = \"x\"\nkind = \"fs-mark\"\ntitle = \"t\"\nduration = \"1s\"\nhit_ratio = 0.5\n",
        "y.toml",
    )
    .unwrap_err();
    assert_eq!(e.location, "y.toml:5");
    let e = Spec::parse(
        "name = \"x\"\nkind = \"kbuild\"\ntitle = \"t\"\nduration = \"1s\"\n",
        "z.toml",
    )
    .unwrap_err();
    assert!(e.message.contains("ext3"), "{}", e.message);
}

/// All misses: every unit compiles and is stored, nothing is read from the cache disk. All
/// hits in the page cache: nothing compiles and the disk sees no read either.
#[test]
fn hits_read_the_cache_and_misses_compile_and_store() {
    let (mut s, d) = short(8);
    s.hit_ratio = 0.0;
    let miss = go(&s, &d, "linux-2.6.37");
    let (c, st, m) = (
        ops(&miss, "compile"),
        ops(&miss, "store"),
        ops(&miss, "manifest"),
    );
    // A job may be between steps when the window opens or closes.
    let jobs = u64::from(s.clients);
    assert!(
        c > jobs && st.abs_diff(c) <= jobs && m.abs_diff(st) <= jobs,
        "{c} {st} {m}"
    );
    assert_eq!(ops(&miss, "fetch") + ops(&miss, "lookup"), 0);
    assert_eq!(miss.iostat.unwrap().r_s, 0.0);
    assert!(miss.metrics.get("ext4.ordered_data_bytes").unwrap() > 0);

    s.hit_ratio = 1.0;
    s.page_cache = 1.0;
    let warm = go(&s, &d, "linux-2.6.37");
    assert_eq!(ops(&warm, "compile"), 0);
    assert_eq!(warm.iostat.unwrap().r_s, 0.0);
    assert!(warm.files_done > miss.files_done, "hits skip the compile");

    s.page_cache = 0.0;
    let cold = go(&s, &d, "linux-2.6.37");
    let io = cold.iostat.unwrap();
    assert!(io.r_s > 0.0 && ops(&cold, "fetch") > 0);
    assert!(
        cold.files_done < warm.files_done,
        "cold entries wait for the disk"
    );
    // Every unit rewrites its directory's stats file.
    assert!(ops(&cold, "stats").abs_diff(ops(&cold, "preprocess")) <= u64::from(s.clients));
}

/// The seed's mechanism (#34, Corrado Zoccolo): with 2.6.36's plain WRITE the commit's
/// ordered data waits behind the jobs' sync reads, so hardly anything is written; 2.6.37's
/// WRITE_SYNC writes make progress (more writes, more commits) at the reads' expense.
#[test]
fn async_commit_writes_starve_behind_reads_and_sync_ones_progress() {
    let (s, d) = short(20);
    let old = go(&s, &d, "linux-2.6.36");
    let new = go(&s, &d, "linux-2.6.37");
    let (a, b) = (old.iostat.unwrap(), new.iostat.unwrap());
    assert!(b.w_s > a.w_s, "w/s {} vs {}", a.w_s, b.w_s);
    assert!(
        new.metrics.get("ext4.commits").unwrap() > old.metrics.get("ext4.commits").unwrap(),
        "commits"
    );
    assert!(new.metrics.get("ext4.sync_commits").unwrap() > 0);
    assert_eq!(old.metrics.get("ext4.sync_commits").unwrap(), 0);
    assert!(
        new.metrics.get("ext4.ordered_data_bytes").unwrap()
            > old.metrics.get("ext4.ordered_data_bytes").unwrap()
    );
    assert!(a.r_s > 0.0 && b.r_s > 0.0);
}

#[test]
fn kbuild_runs_are_deterministic() {
    let (s, d) = short(3);
    let a = go(&s, &d, "linux-2.6.37");
    let b = go(&s, &d, "linux-2.6.37");
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.files_done, b.files_done);
    assert_eq!(a.iostat, b.iostat);
    let mut s2 = s.clone();
    s2.seed += 1;
    let c = go(&s2, &d, "linux-2.6.37");
    assert_ne!(a.trace_hash, c.trace_hash, "the seed draws the units");
}

#[test]
fn compare_kbuild_sets_the_seeds_iostat_beside_the_models() {
    let o = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args([
            "compare",
            "kbuild",
            "--baseline",
            "linux-2.6.36",
            "--current",
            "linux-2.6.37",
            "--duration",
            "3s",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for want in [
        "thread -15.00% (#0)",
        "thread reverted",
        "model linux-2.6.36",
        "model linux-2.6.37",
        "units_per_s",
        "iostat.w/s",
    ] {
        assert!(out.contains(want), "missing {want}:\n{out}");
    }
}

#[test]
fn list_workloads_names_every_built_in_workload() {
    let o = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(["list", "--workloads"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let specs = Spec::builtin();
    assert_eq!(out.lines().count(), specs.len(), "{out}");
    for s in specs {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().next() == Some(s.name.as_str())
                    && l.contains(s.kind.name())),
            "{} missing:\n{out}",
            s.name
        );
    }
}

/// A workload file names the kernels `compare` runs without flags and `workload` runs;
/// a bad name is an error at its line.
#[test]
fn workload_files_name_their_default_policies() {
    let o = Command::new(env!("CARGO_BIN_EXE_fsyncsim"))
        .args(["compare", "kbuild", "--duration", "2s"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        out.contains("units/s change linux-2.6.36 → linux-2.6.37"),
        "{out}"
    );
    let s = Spec::load("kbuild").unwrap();
    assert_eq!(
        (s.baseline.as_deref(), s.current.as_deref()),
        (Some("linux-2.6.36"), Some("linux-2.6.37"))
    );
    let e = Spec::parse(
        "name = \"x\"\nkind = \"kbuild\"\ntitle = \"t\"\nfs = \"ext3\"\nduration = \"1s\"\ncurrent = \"linux-9.9\"\n",
        "p.toml",
    )
    .unwrap_err();
    assert_eq!(e.location, "p.toml:6");
    assert!(e.message.contains("unknown policy"), "{}", e.message);
}
