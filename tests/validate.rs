//! `fsyncsim validate`: the rows cover every seed figure, values are consistent with their
//! direction flags, the result does not depend on --jobs, and the JSON has its schema.

use models::validate::{experiments, validate_with, Lengths};

fn tiny(seeds: u64) -> Lengths {
    Lengths {
        dbench: sim::S,
        dbench_warmup: sim::S / 4,
        sysbench: 3 * sim::S,
        seeds,
        curve: 2 * sim::S,
        fsperf: Some((sim::S / 4, sim::S / 2)),
        fsperf_sizes: &[32, 1024],
    }
}

#[test]
fn rows_cover_the_seed_figures_and_flags_match_the_values() {
    let v = validate_with(
        tiny(2),
        true,
        false,
        2,
        &models::workload::compare::no_progress(),
    )
    .unwrap();
    for e in experiments() {
        for (m, b, c) in &e.figures {
            let id = format!("{}/{}", e.id, m.name());
            let r = v.rows.iter().find(|r| r.id == id);
            let Some(r) = r else {
                // A dbench operation may not occur in a 1 s window, nor a kbuild write reach
                // the disk; throughput always does.
                assert!(
                    id.contains("avg_lat") || id.contains("max_lat") || id.contains("iostat"),
                    "{id} missing"
                );
                continue;
            };
            assert!((r.seed_value - (c - b) / b * 100.0).abs() < 1e-9, "{id}");
            assert_eq!(r.unit, "%");
            assert!(r.model_value.is_finite(), "{id}");
            let same = if r.model_value == 0.0 {
                r.seed_value == 0.0
            } else {
                (r.model_value > 0.0) == (r.seed_value > 0.0)
            };
            assert_eq!(r.direction_match, Some(same), "{id}");
            // An operation of dbench60's short window may occur under one seed only.
            let Some((lo, hi)) = r.model_ci else {
                assert!(id.contains("max_lat"), "{id}: two seeds give an interval");
                continue;
            };
            assert!(lo <= r.model_value && r.model_value <= hi, "{id}");
        }
    }
    assert!(v
        .rows
        .iter()
        .any(|r| r.id == "000-dbench64/throughput/level"
            && r.direction_match.is_none()
            && r.unit == "MB/s"));
    let c = &v.curves[0];
    assert_eq!(c.points.len(), models::validate::R7_INTERVALS.len());
    // A longer commit interval means a smaller round/commit ratio.
    for w in c.points.windows(2) {
        assert!(w[0].x > w[1].x, "{:?}", c.points);
    }
    // Every seed-004 figure also as a curve over the device's size (tiny: 32 GiB, 1 TiB).
    for e in experiments().iter().filter(|e| e.id.starts_with("004-")) {
        for (m, _, _) in &e.figures {
            let id = format!("{}/{}/vs-device-size", e.id, m.name());
            let c = v.curves.iter().find(|c| c.id == id);
            assert!(c.is_some(), "{id} missing");
            for p in &c.unwrap().points {
                assert!([32.0, 1024.0].contains(&p.x), "{id}: {p:?}");
            }
        }
    }
}

#[test]
fn validate_does_not_depend_on_jobs_and_json_has_the_schema() {
    // Every experiment but dbench60 (the longest after dbench64, which stays): the pool's
    // order is what --jobs could change, and it holds runs of every length.
    let only = models::validate::Selection::parse(
        "000,001,002,003,2db938b,004-dio,004-randwrite,004-emptyfiles",
    )
    .unwrap();
    let no = models::workload::compare::no_progress();
    let a = models::validate::validate_selected(tiny(1), false, false, &only, 1, &no).unwrap();
    let b = models::validate::validate_selected(tiny(1), false, false, &only, 2, &no).unwrap();
    assert_eq!(a, b);
    // The release presets break no invariant in any of these runs (the crash check must
    // not cry wolf); a run that did would be named in `failures` and exit 1.
    assert_eq!(a.failures, Vec::<String>::new());
    let j = reports::validate::json(&a);
    let row = &j["rows"][0];
    for k in [
        "id",
        "thread",
        "figure",
        "thread_value",
        "model_value",
        "unit",
        "direction_match",
        "ratio",
    ] {
        assert!(row.get(k).is_some(), "rows[0].{k} missing: {row}");
    }
    assert!(row["model_ci"].is_null(), "one seed: no interval");
    let c = &j["curves"][0];
    assert!(c["points"].as_array().is_some_and(|p| !p.is_empty()));
    assert!(c["thread_point"]["x"].as_f64().is_some());
    let text = reports::validate::text(&a);
    assert!(text.contains("000-dbench64/Flush_avg_lat"), "{text}");
}

#[test]
fn the_score_counts_rows_by_direction_interval_size_and_level() {
    use models::validate::{Row, Validation};
    let row = |id: &str, seed: f64, samples: &[f64], change: bool| {
        let unit = if change { "%" } else { "MB/s" };
        Row::from_samples(
            id.into(),
            "000".into(),
            "f".into(),
            seed,
            samples,
            unit,
            change,
        )
    };
    let v = Validation {
        quick: true,
        setup: String::new(),
        rows: vec![
            // Seed's way, interval clear of 0, model/seed 1.0.
            row("a", 10.0, &[9.9, 10.1], true),
            // Seed's way but the interval spans 0; model/seed 0.1.
            row("b", 10.0, &[-5.0, 7.0], true),
            // The other way.
            row("c", -10.0, &[4.0, 6.0], true),
            // Levels: 1.5× and 3×.
            row("d", 100.0, &[150.0, 150.0], false),
            row("e", 100.0, &[300.0, 300.0], false),
        ],
        curves: Vec::new(),
        ablation: None,
        failures: Vec::new(),
    };
    assert_eq!(v.rows[0].ci_excludes_zero(), Some(true));
    assert_eq!(v.rows[1].ci_excludes_zero(), Some(false));
    assert_eq!(v.rows[3].ci_excludes_zero(), None);
    let s = v.score();
    assert_eq!(
        (
            s.deltas,
            s.same_direction,
            s.with_interval,
            s.same_direction_ci
        ),
        (3, 2, 3, 1)
    );
    assert_eq!(s.within_half, 1);
    assert_eq!((s.levels, s.levels_within_2x), (2, 1));
    let text = reports::validate::text(&v);
    assert!(
        text.contains("score: 2 of 3 delta rows in the thread's direction, 1 of them"),
        "{text}"
    );
    assert_eq!(reports::validate::json(&v)["score"]["levels_within_2x"], 1);
}

#[test]
fn the_dbench60_rows_are_the_seeds_table_as_fsperf_records_it() {
    use models::validate::Measure;
    let e = experiments()
        .into_iter()
        .find(|e| e.id == "004-dbench60")
        .expect("dbench60");
    // Seed 004 lines 28-46: 17 rows, fsperf's MaxLat (ms) per operation and throughput.
    assert_eq!(e.figures.len(), 17);
    assert_eq!((e.baseline, e.current), ("linux-5.13", "linux-5.14"));
    let get = |m: Measure| e.figures.iter().find(|f| f.0 == m).map(|f| (f.1, f.2));
    assert_eq!(get(Measure::Throughput), Some((446.23, 434.52)));
    assert_eq!(get(Measure::MaxLat("Flush")), Some((2502.92, 1682.43)));
    assert_eq!(get(Measure::MaxLat("NTCreateX")), Some((1359.76, 519.42)));
    assert_eq!(get(Measure::MaxLat("UnlockX")), Some((0.16, 0.12)));
    // fsperf runs `dbench 60`: 60 clients, dbench's default 600 s and 120 s warmup.
    let s = models::workload::spec::Spec::load(e.workload).unwrap();
    assert_eq!(
        (s.clients, s.duration, s.warmup),
        (60, 600 * sim::S, 120 * sim::S)
    );
}

/// The workload that the ablation tests run: dbench, 16 clients, half a second.
fn small_dbench() -> (models::workload::spec::Spec, models::block::DiskConfig) {
    let mut spec = models::workload::spec::Spec::load("dbench").unwrap();
    spec.clients = 16;
    spec.duration = sim::S / 2;
    spec.warmup = 0;
    let dev = models::block::DiskConfig::resolve(&spec.device).unwrap();
    (spec, dev)
}

/// fsperf's direct writes for 1 s under linux-5.13 on a 128 GiB device: metadata tickets
/// and a resize of the global reserve that changes the run. (On the default 1 TiB, since
/// writes into the preallocated files go in place, 2 s hold no resize that matters.)
fn small_dio() -> (models::workload::spec::Spec, models::block::DiskConfig) {
    let mut spec = models::workload::spec::Spec::load("dio4kbs16threads").unwrap();
    spec.duration = sim::S;
    let mut dev = models::block::DiskConfig::resolve(&spec.device).unwrap();
    spec.set(&mut dev, "fs_size", "128g").unwrap();
    (spec, dev)
}

#[test]
fn each_ablation_switches_its_mechanism_off_in_a_workload_run() {
    use models::block::DiskConfig;
    use models::workload::{fsload::run, spec::Spec};
    let with_base = |(spec, dev): (Spec, DiskConfig), kernel: &str| {
        let pol = models::kernel::parse_policy(kernel).unwrap();
        let base = run(&spec, &pol, &dev, 1, None).unwrap().trace_hash;
        (spec, dev, pol, base)
    };
    let dbench = with_base(small_dbench(), "linux-5.11");
    // The global reserve's size matters only under metadata space pressure.
    let dio = with_base(small_dio(), "linux-5.13");
    for (name, sets, _) in models::validate::ABLATIONS {
        let (spec, dev, pol, base) = if name == "global_rsv" { &dio } else { &dbench };
        let (mut s, mut d) = (spec.clone(), dev.clone());
        for (k, v) in sets {
            s.set(&mut d, k, v).unwrap();
        }
        let r = run(&s, pol, &d, 1, None).unwrap();
        assert_ne!(r.trace_hash, *base, "{name} off changed nothing");
    }
}

#[test]
fn workload_costs_are_checked_like_a_scenarios_and_reach_the_run() {
    use models::workload::spec::Spec;
    let (spec, mut dev) = small_dbench();
    let text = std::fs::read_to_string("scenarios/workloads/dbench.toml").unwrap();
    let on = Spec::parse(&format!("{text}\n[costs]\ntree_locks = 0\n"), "x.toml").unwrap();
    assert_eq!(on.costs.get("tree_locks"), Some(&0));
    for (bad, what) in [
        ("tree_locks = 2", "0 or 1"),
        ("colour = 1", "expected one of"),
    ] {
        let e = Spec::parse(&format!("{text}\n[costs]\n{bad}\n"), "x.toml").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("x.toml:") && msg.contains(what), "{msg}");
    }
    let ext = std::fs::read_to_string("scenarios/workloads/fs-mark-fio-ext4.toml").unwrap();
    let e = Spec::parse(&format!("{ext}\n[costs]\ntree_locks = 0\n"), "y.toml").unwrap_err();
    assert!(e.to_string().contains("btrfs"), "{e}");
    // --vary's costs.NAME: the same check, and the value lands in the run's costs.
    let mut s = spec.clone();
    assert!(s.set(&mut dev, "costs.delayed_refs", "3").is_err());
    assert!(s.set(&mut dev, "costs.no_such_cost", "1").is_err());
    s.set(&mut dev, "costs.delayed_refs", "0").unwrap();
    assert_eq!(s.costs.get("delayed_refs"), Some(&0));
    assert!(models::workload::compare::parse_vary("costs.delayed_refs=0,1").is_ok());
    assert!(models::workload::compare::parse_vary("costs.colour=0,1").is_err());
}

#[test]
fn the_ablation_table_has_every_btrfs_delta_row_and_its_all_on_value() {
    // Shorter than `tiny`: ten variants of each btrfs run, no curves. dbench runs long
    // enough for a commit to race with the logging (the first data chunk fills between
    // 1.75 and 2.25 s under linux-5.10 with the log's blocks COWed at each sync; before
    // them at about 1 s), the direct writes for the first metadata tickets (about 0.2 s).
    let l = Lengths {
        dbench: 2 * sim::S,
        dbench_warmup: sim::S / 4,
        sysbench: sim::S,
        seeds: 1,
        curve: sim::S / 2,
        fsperf: Some((7 * sim::S / 10, sim::S / 4)),
        fsperf_sizes: &[],
    };
    // The btrfs experiments every mechanism acts in, and an ext one (which gets no row).
    let only = models::validate::Selection::parse("000-dbench64,004-dio,003-kbuild").unwrap();
    let no = models::workload::compare::no_progress();
    let v = models::validate::validate_selected(l, true, true, &only, 2, &no).unwrap();
    assert!(v.rows.iter().any(|r| r.id.starts_with("003-kbuild/")));
    let a = v.ablation.as_ref().expect("--ablate gives a table");
    let names: Vec<&str> = a.mechanisms.iter().map(|m| m.0.as_str()).collect();
    let want: Vec<&str> = models::validate::ABLATIONS.iter().map(|m| m.0).collect();
    assert_eq!(names, want);
    // The btrfs experiments' delta rows, and no ext3/ext4 row (the mechanisms are btrfs's).
    let btrfs = |id: &str| ["000-", "004-"].iter().any(|p| id.starts_with(p));
    let deltas: Vec<&models::validate::Row> = v
        .rows
        .iter()
        .filter(|r| r.direction_match.is_some() && btrfs(&r.id))
        .collect();
    assert_eq!(a.rows.len(), deltas.len());
    for (r, d) in a.rows.iter().zip(&deltas) {
        assert_eq!(r.id, d.id);
        assert_eq!(r.all_on, d.model_value, "{}", r.id);
        assert_eq!(r.off.len(), names.len());
    }
    // Each mechanism but the global reserve's moves some row. Its resize changes the
    // direct writes' run (each_ablation_switches_its_mechanism_off_in_a_workload_run), but
    // on the 1 TiB device both kernels spend the run in tickets, where 5.14's preemptive
    // flushing does not act: the same change under linux-5.13 and linux-5.14, so no delta
    // moves (it moved the p99 row before leaf inserts paid for the offsets they rewrite).
    for (k, name) in names.iter().enumerate() {
        let moved = a.rows.iter().any(|r| r.off[k] != r.all_on);
        assert!(moved || *name == "global_rsv", "{name} off moved no row");
    }
    let text = reports::validate::text(&v);
    assert!(text.contains("tree_locks off"), "{text}");
    let j = reports::validate::json(&v);
    assert!(
        j["ablation"]["rows"][0]["off"]["delayed_items"].is_number(),
        "{j}"
    );
    let plain = models::validate::validate_selected(l, true, false, &only, 2, &no).unwrap();
    assert!(reports::validate::json(&plain).get("ablation").is_none());
    assert_eq!(
        plain.rows, v.rows,
        "the ablation runs leave the rows as they are"
    );
}

#[test]
fn every_experiment_measures_a_window_and_dbench60_keeps_its_own_600_s() {
    // The full run caps only fio's random-write tests (their memory grows with their items);
    // a dbench spec carries fio's default rw too, and was once capped to 60 s − its 120 s
    // warmup = 0 s: an empty window, rows missing, exit 0.
    let full = models::validate::run_lengths(&models::validate::Lengths::full()).unwrap();
    let quick = models::validate::run_lengths(&models::validate::Lengths::quick()).unwrap();
    for (id, warmup, duration) in full.iter().chain(&quick) {
        assert!(*duration > 0, "{id}: warmup {warmup}, duration {duration}");
    }
    let d60 = full.iter().find(|x| x.0 == "004-dbench60").unwrap();
    assert_eq!((d60.1, d60.2), (120 * sim::S, 600 * sim::S));
    let rw = full.iter().find(|x| x.0 == "004-randwrite2xram").unwrap();
    assert!(
        rw.1 + rw.2 <= models::validate::FSPERF_RANDWRITE_MAX,
        "{rw:?}"
    );
}
