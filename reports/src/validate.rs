//! `fsyncsim validate`: the one table of seed figures beside the model's, and the curves.

use models::validate::{Ablation, Validation};
use serde_json::{json, Value};

/// A number as the table prints it (4 significant digits, fixed point).
fn num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The text table (and the curves as rows).
pub fn text(v: &Validation) -> String {
    let mut t = format!(
        "fsyncsim validate{}: {}\n",
        if v.quick { " --quick" } else { "" },
        v.setup
    );
    let rows: Vec<Vec<String>> = v
        .rows
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.seed.clone(),
                format!("{} {}", num(r.seed_value), r.unit),
                match r.model_ci {
                    Some((lo, hi)) => format!(
                        "{} {} [{}, {}]",
                        num(r.model_value),
                        r.unit,
                        num(lo),
                        num(hi)
                    ),
                    None => format!("{} {}", num(r.model_value), r.unit),
                },
                match r.direction_match {
                    Some(true) => "yes".into(),
                    Some(false) => "NO".into(),
                    None => "-".into(),
                },
                match r.ci_excludes_zero() {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "-".into(),
                },
                num(r.ratio),
            ]
        })
        .collect();
    let head = [
        "row",
        "thread",
        "thread's value",
        "model value",
        "same direction",
        "95 % excludes 0",
        "model/thread",
    ];
    let mut lines = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    lines.extend(rows);
    t.push_str(&crate::workload::pipe_table(&lines));
    let sc = v.score();
    let pct = |a: usize, b: usize| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    t.push_str(&format!(
        "\nscore: {} of {} delta rows in the thread's direction, {} of them with a 95 % interval \
         excluding 0 ({:.0} % of {} with intervals); {} of {} within ±50 % of the thread's change \
         ({:.0} %); {} of {} levels within 2× ({:.0} %)\n",
        sc.same_direction,
        sc.deltas,
        sc.same_direction_ci,
        pct(sc.same_direction_ci, sc.with_interval),
        sc.with_interval,
        sc.within_half,
        sc.deltas,
        pct(sc.within_half, sc.deltas),
        sc.levels_within_2x,
        sc.levels,
        pct(sc.levels_within_2x, sc.levels),
    ));
    for c in &v.curves {
        t.push_str(&format!("\n{}: {} against {}\n", c.id, c.y, c.x));
        let mut rows: Vec<Vec<String>> = c
            .points
            .iter()
            .map(|p| vec![p.param.clone(), num(p.x), format!("{} %", num(p.y))])
            .collect();
        if let Some((x, y, how)) = &c.seed_point {
            rows.push(vec![
                format!("thread ({how})"),
                num(*x),
                format!("{} %", num(*y)),
            ]);
        }
        let mut lines = vec![vec!["point".to_string(), "x".into(), "y".into()]];
        lines.extend(rows);
        t.push_str(&crate::workload::pipe_table(&lines));
    }
    if let Some(a) = &v.ablation {
        t.push_str(&ablation_text(a));
    }
    t
}

/// The ablation table: each btrfs delta row's change with every mechanism on and with each
/// one off, and which mechanisms are it.
fn ablation_text(a: &Ablation) -> String {
    let mut t = String::from(
        "\nablation: the model's change (%) with every mechanism on and with each one off\n",
    );
    for (name, what) in &a.mechanisms {
        t.push_str(&format!("  {name}: {what}\n"));
    }
    let mut head = vec!["row".to_string(), "thread".into(), "all on".into()];
    head.extend(a.mechanisms.iter().map(|(n, _)| format!("{n} off")));
    let mut lines = vec![head];
    for r in &a.rows {
        let mut line = vec![r.id.clone(), num(r.seed_value), num(r.all_on)];
        line.extend(r.off.iter().map(|&x| num(x)));
        lines.push(line);
    }
    t.push_str(&crate::workload::pipe_table(&lines));
    t
}

/// `--json`: `{rows: [{id, thread, figure, thread_value, model_value, unit, direction_match,
/// ci_excludes_zero, ratio, model_ci}], score: {…}, curves: [{id, x, y, points: [{param, x, y}], thread_point}]}`.
pub fn json(v: &Validation) -> Value {
    let f = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let sc = v.score();
    let mut j = json!({
        "quick": v.quick,
        "setup": v.setup,
        "rows": v.rows.iter().map(|r| json!({
            "id": r.id,
            "thread": r.seed,
            "figure": r.figure,
            "thread_value": f(r.seed_value),
            "model_value": f(r.model_value),
            "model_ci": r.model_ci.map(|(a, b)| json!([f(a), f(b)])),
            "unit": r.unit,
            "direction_match": r.direction_match,
            "ci_excludes_zero": r.ci_excludes_zero(),
            "ratio": f(r.ratio),
        })).collect::<Vec<_>>(),
        "score": json!({
                "deltas": sc.deltas,
                "same_direction": sc.same_direction,
                "with_interval": sc.with_interval,
                "same_direction_ci_excludes_zero": sc.same_direction_ci,
                "within_half_of_thread": sc.within_half,
                "levels": sc.levels,
                "levels_within_2x": sc.levels_within_2x,
            }),
        "curves": v.curves.iter().map(|c| json!({
            "id": c.id,
            "x": c.x,
            "y": c.y,
            "points": c.points.iter().map(|p| json!({"param": p.param, "x": f(p.x), "y": f(p.y)})).collect::<Vec<_>>(),
            "thread_point": c.seed_point.as_ref().map(|(x, y, how)| json!({"x": f(*x), "y": f(*y), "derived": how})),
        })).collect::<Vec<_>>(),
    });
    if let Some(a) = &v.ablation {
        j["ablation"] = json!({
            "mechanisms": a.mechanisms.iter().map(|(n, w)| json!({"name": n, "what": w})).collect::<Vec<_>>(),
            "rows": a.rows.iter().map(|r| json!({
                "id": r.id,
                "thread_value": f(r.seed_value),
                "all_on": f(r.all_on),
                "off": a.mechanisms.iter().zip(&r.off).map(|((n, _), &x)| (n.clone(), f(x))).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
        });
    }
    j
}
