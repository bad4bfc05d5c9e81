//! The tables fsperf prints: Python texttable's `HEADER` decoration (no pipes, a `=` rule under
//! the header, columns three spaces apart, headers centred) and its number formats, as
//! fsperf's `utils.py:print_comparison_table` sets it up (precision 2, `max_width=100`).
//! Tested byte for byte against the texttable package (`tests/consumers_fsperf.rs`).

/// How a column's cells are aligned (texttable's `l`, `r`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right.
    Left,
    /// Padded on the left.
    Right,
}

/// texttable's `a` (auto) format at `precision` digits: `%.Ne` above 1e8 in magnitude, an
/// integer when the value is whole, else `%.Nf`; `nan` as text.
pub fn auto(v: f64, precision: usize) -> String {
    if v.abs() > 1e8 {
        exp(v, precision)
    } else if v.is_nan() {
        "nan".into()
    } else if v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.precision$}")
    }
}

/// C's `%.Ne` (what Python's `%` operator prints): a sign and at least two exponent digits,
/// `6.55e+08`; `inf` / `-inf` as C prints them.
pub fn exp(v: f64, precision: usize) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{v:.precision$e}");
    let Some((mant, e)) = s.split_once('e') else {
        return s;
    };
    let (sign, digits) = match e.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', e),
    };
    format!("{mant}e{sign}{digits:0>2}")
}

/// C's `%g` (six significant digits, trailing zeros dropped, exponent form below 1e-4 and
/// from 1e6), as dbench prints its throughput.
pub fn g(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() { "nan".into() } else { exp(v, 0) };
    }
    if v == 0.0 {
        return "0".into();
    }
    // The exponent %e would print at 5 digits after the point decides the form.
    let e: i32 = exp(v, 5)
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if !(-4..6).contains(&e) {
        let s = exp(v, 5);
        let (mant, ex) = s.split_once('e').unwrap_or((&s, ""));
        return format!("{}e{ex}", trim_zeros(mant));
    }
    let digits = (5 - e).max(0) as usize;
    trim_zeros(&format!("{v:.digits$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Draws `header` and `rows` in texttable's `HEADER` style: each column as wide as its widest
/// cell, cells aligned by `align`, header cells centred (the extra space on the right), a
/// rule of `=` as wide as the table; no trailing newline after the last row is added by
/// texttable, this adds one.
pub fn header_table(header: &[String], rows: &[Vec<String>], align: &[Align]) -> String {
    let width: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String], centre: bool| -> String {
        let parts: Vec<String> = cells
            .iter()
            .zip(&width)
            .zip(align)
            .map(|((c, &w), a)| {
                let fill = w - c.chars().count();
                if centre {
                    format!("{}{c}{}", " ".repeat(fill / 2), " ".repeat(fill - fill / 2))
                } else if *a == Align::Right {
                    format!("{}{c}", " ".repeat(fill))
                } else {
                    format!("{c}{}", " ".repeat(fill))
                }
            })
            .collect();
        parts.join("   ") + "\n"
    };
    let mut t = line(header, true);
    let rule: Vec<String> = width.iter().map(|&w| "=".repeat(w)).collect();
    t.push_str(&rule.join("==="));
    t.push('\n');
    for r in rows {
        t.push_str(&line(r, false));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_c() {
        assert_eq!(exp(6.55e8, 2), "6.55e+08");
        assert_eq!(exp(-1.5e-12, 2), "-1.50e-12");
        assert_eq!(exp(1e100, 2), "1.00e+100");
        assert_eq!(auto(446.234, 2), "446.23");
        assert_eq!(auto(125000.0, 2), "125000");
        assert_eq!(auto(1.79e8, 2), "1.79e+08");
        assert_eq!(auto(1e8, 2), "100000000");
        assert_eq!(g(3608.6612), "3608.66");
        assert_eq!(g(1179.19), "1179.19");
        assert_eq!(g(1234567.0), "1.23457e+06");
        assert_eq!(g(999999.5), "1e+06");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.00001234), "1.234e-05");
        assert_eq!(g(100.0), "100");
        assert_eq!(g(0.5), "0.5");
    }
}
