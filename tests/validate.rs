//! `fsyncsim validate`: the rows cover every seed figure, values are consistent with their
//! direction flags, the result does not depend on --jobs, and the JSON has its schema.

use models::validate::{experiments, validate_with, Lengths};

fn tiny(seeds: u64) -> Lengths {
    Lengths {
        dbench: 2 * sim::S,
        dbench_warmup: sim::S / 2,
        sysbench: 3 * sim::S,
        seeds,
        curve: 2 * sim::S,
        fsperf: Some((sim::S / 4, sim::S / 2)),
    }
}

#[test]
fn rows_cover_the_seed_figures_and_flags_match_the_values() {
    let v = validate_with(tiny(2), true, 2, &|| {}).unwrap();
    for e in experiments() {
        for (m, b, c) in &e.figures {
            let id = format!("{}/{}", e.id, m.name());
            let r = v.rows.iter().find(|r| r.id == id);
            let Some(r) = r else {
                // A dbench operation may not occur in a 2 s window, nor a kbuild write reach
                // the disk; throughput always does.
                assert!(
                    id.contains("avg_lat") || id.contains("iostat"),
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
            let (lo, hi) = r.model_ci.expect("two seeds give an interval");
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
}

#[test]
fn validate_does_not_depend_on_jobs_and_json_has_the_schema() {
    let a = validate_with(tiny(1), false, 1, &|| {}).unwrap();
    let b = validate_with(tiny(1), false, 2, &|| {}).unwrap();
    assert_eq!(a, b);
    let j = reports::validate::json(&a);
    let row = &j["rows"][0];
    for k in [
        "id",
        "seed",
        "figure",
        "seed_value",
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
    assert!(c["seed_point"]["x"].as_f64().is_some());
    let text = reports::validate::text(&a);
    assert!(text.contains("000-dbench64/Flush_avg_lat"), "{text}");
}
