//! Plots (issue 29 item 6): the data behind `compare --out`'s charts — CDF steps, series
//! styles, fitted log axes, tick labels, legend placement — and what the SVGs contain.

use crate::common;
use models::block::DiskConfig;
use models::kernel::Policy;
use models::workload::fsload::run;
use models::workload::spec::Spec;
use reports::plot::{
    cdf_overlay, fmt_latency_ms, latency_distribution, legend_left, log_axis_range, log_ticks,
    series_style, Series, PALETTE,
};

/// A latency histogram (ns) with `n` values at each of `values`.
fn hist(values: &[(u64, u64)]) -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    for &(v, n) in values {
        h.record_n(v, n).unwrap();
    }
    h
}

/// Every pair of consecutive points shares its x or its y: no diagonal segment.
fn assert_steps(points: &[(f64, f64)]) {
    for w in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        assert!(
            x0 == x1 || y0 == y1,
            "diagonal from {:?} to {:?}",
            w[0],
            w[1]
        );
        assert!(
            x1 >= x0 && y1 >= y0,
            "not monotone: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
}

/// The attribute `name` of an SVG element's opening tag, as a number.
fn attr(tag: &str, name: &str) -> Option<f64> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    tag[at..].split('"').next()?.parse().ok()
}

/// (x attribute, trimmed content) of every `<text>` of an SVG document.
fn svg_texts(svg: &str) -> Vec<(f64, String)> {
    let texts = svg.split("<text").skip(1).filter_map(|t| {
        let (tag, rest) = t.split_once('>')?;
        Some((
            attr(tag, "x")?,
            rest.split("</text>").next()?.trim().to_string(),
        ))
    });
    texts.collect()
}

/// The points of every `<polyline>` drawn in `colour` (`#RRGGBB`), as pixel pairs.
fn polylines(svg: &str, colour: &str) -> Vec<Vec<(i64, i64)>> {
    let lines = svg.split("<polyline").skip(1).filter_map(|t| {
        let tag = t.split('>').next()?;
        if !tag.contains(&format!("stroke=\"{colour}\"")) {
            return None;
        }
        let pts = tag.split("points=\"").nth(1)?.split('"').next()?;
        let pairs = pts.split_whitespace().filter_map(|p| {
            let (x, y) = p.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        });
        Some(pairs.collect())
    });
    lines.collect()
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02X}{g:02X}{b:02X}")
}

#[test]
fn cdf_of_a_histogram_with_a_gap_is_a_step_function() {
    // Half the operations return at once, the rest take 0.3..1 ms: nothing in between.
    let h = hist(&[(0, 500), (300_000, 200), (600_000, 200), (1_000_000, 100)]);
    let points = reports::workload::cdf(&h);
    let steps = reports::plot::cdf_steps(&points);
    assert_steps(&steps);
    assert_eq!(steps.first().map(|p| p.1), Some(0.0), "starts at 0");
    assert_eq!(steps.last().map(|p| p.1), Some(1.0), "ends at 1");
    // The gap is one flat segment at the fast half's level, from 1 µs to 0.3 ms.
    let flat = steps.windows(2).find(|w| w[0].0 <= 0.001 && w[1].0 >= 0.29);
    let flat = flat.expect("a segment across the gap");
    assert_eq!(flat[0].1, flat[1].1, "{flat:?}");
    assert!((flat[0].1 - 0.5).abs() < 1e-9, "{flat:?}");
    // Every recorded value is a vertical step in the drawing.
    for &(x, y) in &points {
        assert!(steps.contains(&(x, y)), "({x}, {y}) missing from the steps");
    }
}

#[test]
fn cdf_svg_has_no_diagonal_segment() {
    let dir = common::temp_dir("plots-cdf");
    let h = hist(&[(0, 50), (2_000, 10), (400_000, 30), (5_000_000, 10)]);
    let s = Series {
        label: "gap".into(),
        points: reports::workload::cdf(&h),
    };
    let p = dir.join("cdf.svg");
    cdf_overlay("gap", &[s], &p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    // Markers are closed outlines (or 2-point crosses); the line is the longest open one.
    let longest = polylines(&svg, &hex(PALETTE[0]))
        .into_iter()
        .filter(|l| l.first() != l.last())
        .max_by_key(|l| l.len())
        .expect("the series' line");
    assert!(longest.len() >= 6, "{longest:?}");
    for w in longest.windows(2) {
        assert!(w[0].0 == w[1].0 || w[0].1 == w[1].1, "diagonal {w:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn twenty_series_get_twenty_distinct_colours_and_styles() {
    let styles: Vec<_> = (0..20).map(series_style).collect();
    let colours: std::collections::HashSet<_> = styles.iter().map(|s| s.colour).collect();
    assert_eq!(colours.len(), 20);
    let all: std::collections::HashSet<_> = styles.iter().collect();
    assert_eq!(all.len(), 20);
    // Distinguishable: no two colours within 25 (RGB distance), none near white.
    for (i, a) in PALETTE.iter().enumerate() {
        let (r, g, b) = (f64::from(a.0), f64::from(a.1), f64::from(a.2));
        assert!(r + g + b < 3.0 * 236.0, "colour {i} is nearly white");
        for c in &PALETTE[i + 1..] {
            let d = (r - f64::from(c.0))
                .hypot(g - f64::from(c.1))
                .hypot(b - f64::from(c.2));
            assert!(d > 25.0, "{a:?} and {c:?} are {d:.0} apart");
        }
    }
    // Consecutive series never share marker or dash and colour.
    for w in styles.windows(2) {
        assert_ne!(w[0].marker, w[1].marker);
    }
}

/// 20 series with identical shapes (the worst case for hiding one under another).
fn twenty_series() -> Vec<Series> {
    (0..20)
        .map(|i| Series {
            label: format!("operation number {i}"),
            points: (0..30).map(|k| (0.001 * 1.3f64.powi(k), 5.0)).collect(),
        })
        .collect()
}

#[test]
fn every_series_is_drawn_in_its_own_colour() {
    let dir = common::temp_dir("plots-colours");
    let p = dir.join("latency.svg");
    latency_distribution("20 series", &twenty_series(), &p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    for (i, c) in PALETTE.iter().enumerate() {
        let lines = polylines(&svg, &hex(*c));
        // Its line, its markers and its legend key.
        assert!(
            lines.len() > 10,
            "series {i} ({}) has {} lines",
            hex(*c),
            lines.len()
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn legend_labels_lie_right_of_the_plotting_area() {
    let dir = common::temp_dir("plots-legend");
    let series = twenty_series();
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    let left = legend_left(&labels) as f64;
    let p = dir.join("latency.svg");
    latency_distribution("20 series", &series, &p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    // The grid and axes (the only <line>s) end left of the legend panel.
    let mesh = svg
        .split("<line")
        .skip(1)
        .filter_map(|t| t.split('>').next());
    let right = mesh.filter_map(|t| attr(t, "x2")).fold(0.0, f64::max);
    assert!(
        right > 500.0 && right < left,
        "mesh ends at {right}, legend at {left}"
    );
    let texts = svg_texts(&svg);
    for l in &labels {
        let at = texts.iter().find(|(_, t)| t == l).map(|(x, _)| *x);
        let at = at.unwrap_or_else(|| panic!("legend label {l:?} missing"));
        assert!(
            at >= left,
            "{l:?} at x={at} starts inside the plot (< {left})"
        );
        assert!(at < 1024.0);
    }
    // Tick labels are all inside the plot.
    for (x, t) in texts
        .iter()
        .filter(|(_, t)| t.ends_with('s') && t.contains(' '))
    {
        if !labels.contains(&t.as_str()) && t.len() < 8 {
            assert!(*x < left, "tick {t:?} at {x}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn log_axis_covers_the_data_with_a_bounded_margin() {
    let cases = [
        (1e-3, 1e-3),
        (0.9e-3, 1.1e-3),
        (1e-3, 20.0),
        (0.0007, 0.07),
        (3.0, 3000.0),
        (1e-9, 1e9),
        (123.0, 124.0),
    ];
    for (lo, hi) in cases {
        let (a, b) = log_axis_range(lo, hi);
        assert!(a <= lo && b >= hi, "{lo}..{hi}: axis {a}..{b}");
        // At most 2x beyond the data; 1.15x when the data spans 3x or more.
        let bound = if hi / lo >= 3.0 { 1.15 + 1e-9 } else { 2.0 };
        assert!(
            lo / a <= bound && b / hi <= bound,
            "{lo}..{hi}: axis {a}..{b}"
        );
        let (bold, light) = log_ticks(a, b);
        assert!(!bold.is_empty(), "{lo}..{hi}: no labelled tick");
        for t in bold.iter().chain(&light) {
            assert!(
                *t >= a * (1.0 - 1e-9) && *t <= b * (1.0 + 1e-9),
                "tick {t} off {a}..{b}"
            );
        }
        // Decades only beyond 3 decades; 1-2-5 within, unless that gives < 2 labels.
        let decades = (b / a).log10();
        let mantissa = |t: f64| (t / 10f64.powf(t.log10().floor())).round();
        let one_two_five = bold
            .iter()
            .chain(&light)
            .filter(|t| [1.0, 2.0, 5.0].contains(&mantissa(**t)))
            .count();
        for t in &bold {
            let m = mantissa(*t);
            match decades > 3.0 {
                true => assert_eq!(m, 1.0, "{lo}..{hi}: tick {t}"),
                false if one_two_five >= 2 => {
                    assert!([1.0, 2.0, 5.0].contains(&m), "{lo}..{hi}: tick {t}")
                }
                false => {}
            }
        }
    }
}

#[test]
fn tick_labels_share_one_style() {
    let unit = |s: &str| {
        let (num, unit) = s.split_once(' ')?;
        num.parse::<f64>().ok()?;
        (!num.contains('e') && ["ns", "\u{b5}s", "ms", "s"].contains(&unit)).then_some(())
    };
    let (a, b) = log_axis_range(1e-4, 5000.0);
    let (bold, _) = log_ticks(a, b);
    for t in bold
        .iter()
        .chain(&[0.0001, 0.001, 0.3, 1.0, 2.5, 999.0, 1500.0])
    {
        let s = fmt_latency_ms(*t);
        assert!(unit(&s).is_some(), "{t} ms → {s:?}");
    }
    assert_eq!(fmt_latency_ms(0.0001), "100 ns");
    assert_eq!(fmt_latency_ms(0.001), "1 \u{b5}s");
    assert_eq!(fmt_latency_ms(0.3), "300 \u{b5}s");
    assert_eq!(fmt_latency_ms(2.0), "2 ms");
    assert_eq!(fmt_latency_ms(1500.0), "1.5 s");
}

#[test]
fn emptyfiles500k_plots_its_creates() {
    let spec = Spec::load("emptyfiles500k").unwrap();
    let dev = DiskConfig::resolve(&spec.device).unwrap();
    let policy = |name: &Option<String>| Policy::preset(name.as_deref().unwrap()).unwrap();
    let base = run(&spec, &policy(&spec.baseline), &dev, 1, None).unwrap();
    let cur = run(&spec, &policy(&spec.current), &dev, 1, None).unwrap();
    let d = reports::workload::plot_data(&base, &cur);
    // The CDF shows an operation the job measured, in both runs.
    assert!(
        cur.op(&d.op).is_some_and(|o| !o.hist.is_empty()),
        "{}",
        d.op
    );
    assert_eq!(d.cdf.len(), 2);
    for s in &d.cdf {
        assert!(!s.points.is_empty(), "{} has no points", s.label);
        assert_eq!(s.points.last().unwrap().1, 1.0);
    }
    assert!(d.latency.iter().any(|s| !s.points.is_empty()));
    assert!(!d.categories.is_empty() && !d.stacks.is_empty());
    let dir = common::temp_dir("plots-ef");
    for f in reports::workload::write_plots(&base, &cur, &dir).unwrap() {
        if f.extension().is_some_and(|e| e == "svg") {
            let svg = std::fs::read_to_string(&f).unwrap();
            let texts = svg_texts(&svg);
            assert!(!texts.iter().any(|(_, t)| t.contains("no data")), "{f:?}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
