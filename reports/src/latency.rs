//! Latency objects in fio's JSON shape and fio-style text percentiles.

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// fio's default completion-latency percentiles.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's latency object: `{min, max, mean, stddev, N}` and, where asked, `percentile`.
#[derive(Serialize)]
struct StatsJson {
    min: u64,
    max: u64,
    mean: f64,
    stddev: f64,
    #[serde(rename = "N")]
    n: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    percentile: Option<BTreeMap<String, u64>>,
}

fn stats(h: &Histogram<u64>) -> StatsJson {
    let empty = h.is_empty();
    let pick = |x: u64| if empty { 0 } else { x };
    StatsJson {
        min: pick(h.min()),
        max: pick(h.max()),
        mean: if empty { 0.0 } else { h.mean() },
        stddev: if empty { 0.0 } else { h.stdev() },
        n: h.len(),
        percentile: None,
    }
}

/// `{min, max, mean, stddev, N}` of a histogram (all 0 when empty), values in ns.
pub fn stats_json(h: &Histogram<u64>) -> Value {
    serde_json::to_value(stats(h)).expect("plain data serialises")
}

/// As `stats_json` plus fio's `percentile` map (`"99.000000": v`).
pub fn stats_json_with_percentiles(h: &Histogram<u64>) -> Value {
    let mut s = stats(h);
    let p = FIO_PERCENTILES.iter().map(|&q| {
        let val = if h.is_empty() {
            0
        } else {
            h.value_at_quantile(q / 100.0)
        };
        (format!("{q:.6}"), val)
    });
    s.percentile = Some(p.collect());
    serde_json::to_value(s).expect("plain data serialises")
}

/// The unit fio would print a latency set in, with its divisor from ns.
pub fn unit_for(max_ns: u64) -> (&'static str, f64) {
    if max_ns < 10_000 {
        ("nsec", 1.0)
    } else if max_ns < 10_000_000 {
        ("usec", 1e3)
    } else {
        ("msec", 1e6)
    }
}

/// fio-style text lines: `clat (usec): min=…, max=…, avg=…, stdev=…` and, optionally,
/// the percentile block.
pub fn text_lines(label: &str, h: &Histogram<u64>, percentiles: bool) -> Vec<String> {
    if h.is_empty() {
        return vec![format!("    {label}: no samples")];
    }
    let (unit, div) = unit_for(h.max());
    let mut out = vec![format!(
        "    {label} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
        fmt_num(h.min() as f64 / div),
        fmt_num(h.max() as f64 / div),
        h.mean() / div,
        h.stdev() / div
    )];
    if percentiles {
        out.push(format!("    {label} percentiles ({unit}):"));
        for row in FIO_PERCENTILES.chunks(4) {
            let cells: Vec<String> = row
                .iter()
                .map(|q| {
                    format!(
                        "{:>6}th=[{:>6}]",
                        format!("{q:.2}"),
                        fmt_num(h.value_at_quantile(q / 100.0) as f64 / div)
                    )
                })
                .collect();
            out.push(format!("     | {}", cells.join(", ")));
        }
    }
    out
}

fn fmt_num(x: f64) -> String {
    if x >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_keys_use_fio_spelling() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let j = stats_json_with_percentiles(&h);
        let p = j["percentile"].as_object().unwrap();
        assert_eq!(p.len(), 17);
        assert!(p.contains_key("1.000000") && p.contains_key("99.990000"));
        let p50 = p["50.000000"].as_u64().unwrap();
        assert!((499_000..=501_000).contains(&p50), "{p50}");
        assert_eq!(j["N"], 1000);
    }

    #[test]
    fn empty_histograms_render_zeros() {
        let h = Histogram::<u64>::new(3).unwrap();
        assert_eq!(stats_json(&h)["N"], 0);
        assert!(text_lines("clat", &h, true)[0].contains("no samples"));
    }
}
