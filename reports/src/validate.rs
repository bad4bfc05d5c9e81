//! `fsyncsim validate`: the one table of seed figures beside the model's, and the curves.

use models::validate::{Ablation, Validation};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

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

/// A finite number, or JSON null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// `validate --json`'s document.
#[derive(Serialize)]
struct ValidateJson<'a> {
    quick: bool,
    setup: &'a str,
    rows: Vec<RowJson<'a>>,
    score: ScoreJson,
    curves: Vec<CurveJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ablation: Option<AblationJson<'a>>,
}

/// One row of the table.
#[derive(Serialize)]
struct RowJson<'a> {
    id: &'a str,
    thread: &'a str,
    figure: &'a str,
    thread_value: Option<f64>,
    model_value: Option<f64>,
    model_ci: Option<[Option<f64>; 2]>,
    unit: &'a str,
    direction_match: Option<bool>,
    ci_excludes_zero: Option<bool>,
    ratio: Option<f64>,
}

/// The score line's counts.
#[derive(Serialize)]
struct ScoreJson {
    deltas: usize,
    same_direction: usize,
    with_interval: usize,
    same_direction_ci_excludes_zero: usize,
    within_half_of_thread: usize,
    levels: usize,
    levels_within_2x: usize,
}

/// One curve with its points and the thread's point.
#[derive(Serialize)]
struct CurveJson<'a> {
    id: &'a str,
    x: &'a str,
    y: &'a str,
    points: Vec<PointJson<'a>>,
    thread_point: Option<ThreadPointJson<'a>>,
}

/// One point of a curve.
#[derive(Serialize)]
struct PointJson<'a> {
    param: &'a str,
    x: Option<f64>,
    y: Option<f64>,
}

/// The thread's point on a curve and how its x was derived.
#[derive(Serialize)]
struct ThreadPointJson<'a> {
    x: Option<f64>,
    y: Option<f64>,
    derived: &'a str,
}

/// `--ablate`'s table.
#[derive(Serialize)]
struct AblationJson<'a> {
    mechanisms: Vec<MechanismJson<'a>>,
    rows: Vec<AblationRowJson<'a>>,
}

/// A mechanism the ablation switches off.
#[derive(Serialize)]
struct MechanismJson<'a> {
    name: &'a str,
    what: &'a str,
}

/// One delta row with each mechanism off.
#[derive(Serialize)]
struct AblationRowJson<'a> {
    id: &'a str,
    thread_value: Option<f64>,
    all_on: Option<f64>,
    off: BTreeMap<&'a str, Option<f64>>,
}

/// `--json`: `{rows: [{id, thread, figure, thread_value, model_value, unit, direction_match,
/// ci_excludes_zero, ratio, model_ci}], score: {…}, curves: [{id, x, y, points: [{param, x, y}], thread_point}]}`.
pub fn json(v: &Validation) -> Value {
    let sc = v.score();
    let doc = ValidateJson {
        quick: v.quick,
        setup: &v.setup,
        rows: v
            .rows
            .iter()
            .map(|r| RowJson {
                id: &r.id,
                thread: &r.seed,
                figure: &r.figure,
                thread_value: finite(r.seed_value),
                model_value: finite(r.model_value),
                model_ci: r.model_ci.map(|(a, b)| [finite(a), finite(b)]),
                unit: &r.unit,
                direction_match: r.direction_match,
                ci_excludes_zero: r.ci_excludes_zero(),
                ratio: finite(r.ratio),
            })
            .collect(),
        score: ScoreJson {
            deltas: sc.deltas,
            same_direction: sc.same_direction,
            with_interval: sc.with_interval,
            same_direction_ci_excludes_zero: sc.same_direction_ci,
            within_half_of_thread: sc.within_half,
            levels: sc.levels,
            levels_within_2x: sc.levels_within_2x,
        },
        curves: v.curves.iter().map(curve_json).collect(),
        ablation: v.ablation.as_ref().map(ablation_json),
    };
    serde_json::to_value(doc).expect("plain data serialises")
}

fn curve_json(c: &models::validate::Curve) -> CurveJson<'_> {
    CurveJson {
        id: &c.id,
        x: &c.x,
        y: &c.y,
        points: c
            .points
            .iter()
            .map(|p| PointJson {
                param: &p.param,
                x: finite(p.x),
                y: finite(p.y),
            })
            .collect(),
        thread_point: c.seed_point.as_ref().map(|(x, y, how)| ThreadPointJson {
            x: finite(*x),
            y: finite(*y),
            derived: how,
        }),
    }
}

fn ablation_json(a: &Ablation) -> AblationJson<'_> {
    AblationJson {
        mechanisms: a
            .mechanisms
            .iter()
            .map(|(n, w)| MechanismJson { name: n, what: w })
            .collect(),
        rows: a
            .rows
            .iter()
            .map(|r| AblationRowJson {
                id: &r.id,
                thread_value: finite(r.seed_value),
                all_on: finite(r.all_on),
                off: a
                    .mechanisms
                    .iter()
                    .zip(&r.off)
                    .map(|((n, _), &x)| (n.as_str(), finite(x)))
                    .collect(),
            })
            .collect(),
    }
}
