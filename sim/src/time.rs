//! Virtual time: integer nanoseconds, plus parsing and printing of durations.

/// Virtual time and durations, in nanoseconds.
pub type Nanos = u64;

/// One nanosecond.
pub const NS: Nanos = 1;
/// One microsecond.
pub const US: Nanos = 1_000;
/// One millisecond.
pub const MS: Nanos = 1_000_000;
/// One second.
pub const S: Nanos = 1_000_000_000;

/// Parses a duration such as `300s`, `1.5ms`, `250us`, `40ns`, `2m`, `1h`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let t = text.trim();
    let expected = "expected a non-negative duration like 300s, 1.5ms, 250us, 40ns, 2m";
    if t.is_empty() {
        return Err(format!("empty duration: {expected}"));
    }
    if t.starts_with('-') {
        return Err(format!("negative duration '{t}': {expected}"));
    }
    let split = number_len(t);
    let (num, unit) = t.split_at(split);
    let scale: f64 = match unit.trim() {
        "" | "s" | "sec" => 1e9,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("unknown unit in duration '{t}': {expected}")),
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration '{t}': {expected}"))?;
    let ns = value * scale;
    if !ns.is_finite() || ns < 0.0 || ns > MAX_DURATION as f64 {
        return Err(format!(
            "duration '{t}' out of range: expected at most {}s (2^63 ns, about 292 years)",
            MAX_DURATION / S
        ));
    }
    Ok(ns.round() as Nanos)
}

/// The longest duration [`parse_duration`] accepts: 2^63 - 1 ns (about 292 years).
pub const MAX_DURATION: Nanos = u64::MAX / 2;

/// Length of the number at the start of `t`: digits and '.', then an exponent (`e30`, `E-3`)
/// when digits follow it, so that `1e30s` is read as a number (out of range), not a unit.
fn number_len(t: &str) -> usize {
    let b = t.as_bytes();
    let mut i = b
        .iter()
        .position(|c| !(c.is_ascii_digit() || *c == b'.'))
        .unwrap_or(b.len());
    if i > 0 && matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 {
            i = j + digits;
        }
    }
    i
}

/// Formats a duration with a unit that keeps 3–4 significant digits (`150.2us`, `1.250s`).
pub fn format_duration(ns: Nanos) -> String {
    let f = ns as f64;
    if ns < US {
        format!("{ns}ns")
    } else if ns < MS {
        format!("{:.1}us", f / 1e3)
    } else if ns < S {
        format!("{:.3}ms", f / 1e6)
    } else {
        format!("{:.3}s", f / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_fractions() {
        assert_eq!(parse_duration("300s"), Ok(300 * S));
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration("250us"), Ok(250_000));
        assert_eq!(parse_duration("40ns"), Ok(40));
        assert_eq!(parse_duration("2m"), Ok(120 * S));
        assert_eq!(parse_duration("7"), Ok(7 * S));
    }

    #[test]
    fn rejects_garbage_and_negatives() {
        for bad in ["", "-1s", "abc", "1.2.3s", "5 parsecs", "nan", "1e400s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn too_large_is_out_of_range_with_the_limit_not_an_unknown_unit() {
        for big in ["1e30s", "1e400s", "9223372037s", "2E+20ns"] {
            let e = parse_duration(big).unwrap_err();
            assert!(
                e.contains("out of range") && e.contains("at most 9223372036s"),
                "{e}"
            );
        }
        assert_eq!(parse_duration("1e3s"), Ok(1000 * S));
        assert_eq!(parse_duration("2.5e-3s"), Ok(2_500_000));
        assert!(parse_duration("1es").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn formats_with_units() {
        assert_eq!(format_duration(999), "999ns");
        assert_eq!(format_duration(150_200), "150.2us");
        assert_eq!(format_duration(1_250 * MS), "1.250s");
    }
}
