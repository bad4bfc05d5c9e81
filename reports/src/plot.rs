//! Charts of fsyncsim results (latency distributions, CDF overlays, time attribution),
//! rendered with `plotters` to PNG or SVG.
//!
//! PNG text is rasterised from a font embedded in the binary, so output never depends on
//! the fonts installed on the machine; SVG text names the `sans-serif` family and is laid
//! out by the viewer. Output is deterministic: the same input gives the same bytes.
//!
//! Layout: the legend is a panel right of the plotting area (never over the data). Series
//! `i` is drawn in [`series_style`]`(i)`: one of 20 colours, one of 5 hollow marker shapes,
//! solid or dashed; series with more points are drawn first, so sparse ones stay on top.
//! Log axes are fitted to the data ([`log_axis_range`]) with 1-2-5 or decade ticks, labelled
//! as times ("100 µs", "2 ms", [`fmt_latency_ms`]). A CDF is drawn as a step function
//! ([`cdf_steps`]): between two recorded values it is flat, however far apart they are.
//!
//! Files are written atomically (temp file in the same directory, then rename). Odd input
//! never panics: points with non-finite values, and on log axes non-positive x, are skipped;
//! a chart with nothing left to draw says "no data"; bar values that are negative or not
//! finite count as 0; control characters in texts become spaces. Bars are vertical, with
//! components stacked bottom-up in `stacks` order and each bar's total written above it.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::combinators::LogCoord;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle, RGBColor};

// DejaVu Sans 2.37 (Debian fonts-dejavu-core), Bitstream Vera licence + public-domain DejaVu
// changes: free redistribution when embedded; full notice in ../assets/DejaVuSans-LICENSE.txt.
static FONT_BYTES: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// Name under which the embedded font is registered (also the SVG `font-family`).
const FAMILY: &str = "sans-serif";
const WIDTH: u32 = 1024;
const HEIGHT: u32 = 640;
/// Twenty distinguishable series colours (RGB): Tableau 20 as matplotlib ships it (`tab20`,
/// lib/matplotlib/_cm.py `_tab20_data`), its ten saturated colours first (Tableau 10), then
/// the ten light companions in the same hue order.
pub const PALETTE: [(u8, u8, u8); 20] = [
    (0x1f, 0x77, 0xb4),
    (0xff, 0x7f, 0x0e),
    (0x2c, 0xa0, 0x2c),
    (0xd6, 0x27, 0x28),
    (0x94, 0x67, 0xbd),
    (0x8c, 0x56, 0x4b),
    (0xe3, 0x77, 0xc2),
    (0x7f, 0x7f, 0x7f),
    (0xbc, 0xbd, 0x22),
    (0x17, 0xbe, 0xcf),
    (0xae, 0xc7, 0xe8),
    (0xff, 0xbb, 0x78),
    (0x98, 0xdf, 0x8a),
    (0xff, 0x98, 0x96),
    (0xc5, 0xb0, 0xd5),
    (0xc4, 0x9c, 0x94),
    (0xf7, 0xb6, 0xd2),
    (0xc7, 0xc7, 0xc7),
    (0xdb, 0xdb, 0x8d),
    (0x9e, 0xda, 0xe5),
];
/// Log axes never extend beyond these, so ln() stays finite.
const LOG_MIN: f64 = 1e-300;
const LOG_MAX: f64 = 1e300;
/// Linear axes never extend beyond +-this, so spans stay finite.
const LIN_MAX: f64 = 1e300;
/// A fitted log axis extends this factor beyond the data at each end ...
const LOG_MARGIN: f64 = 1.15;
/// ... and spans at least this factor overall (a single value gets room either side).
const LOG_MIN_SPAN: f64 = 3.0;
/// Markers drawn per series at most (evenly spread over its points).
const MAX_MARKERS: usize = 24;

/// One line or bar group of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text for this series.
    pub label: String,
    /// Data points as (x, y).
    pub points: Vec<(f64, f64)>,
}

/// Output format, chosen by the caller (also by file extension helper below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Raster PNG, text drawn with the embedded font.
    Png,
    /// Vector SVG, text left to the viewer.
    Svg,
}

impl Format {
    /// The format named by `path`'s extension (`.png` or `.svg`, any case), if any.
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "png" => Some(Format::Png),
            "svg" => Some(Format::Svg),
            _ => None,
        }
    }
}

/// Hollow marker shape drawn on a line series' points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Marker {
    /// A circle (12-gon).
    Circle,
    /// An axis-aligned square.
    Square,
    /// A triangle pointing up.
    Triangle,
    /// A square on its corner.
    Diamond,
    /// An x-shaped cross.
    Cross,
}

const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Cross,
];

/// How one series is drawn: colour, marker shape, dashed or solid line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeriesStyle {
    /// RGB colour, from [`PALETTE`].
    pub colour: (u8, u8, u8),
    /// Marker on (some of) its points.
    pub marker: Marker,
    /// Whether its line is dashed (series 10..20, the light colours) or solid.
    pub dashed: bool,
}

/// The style of series `i`: colour `i mod 20`, marker `i mod 5`, dashed for `i mod 20 >= 10`;
/// series 0..20 all differ in colour (and in the colour/marker/dash triple).
pub fn series_style(i: usize) -> SeriesStyle {
    SeriesStyle {
        colour: PALETTE[i % PALETTE.len()],
        marker: MARKERS[i % MARKERS.len()],
        dashed: i % PALETTE.len() >= 10,
    }
}

impl SeriesStyle {
    fn rgb(&self) -> RGBColor {
        RGBColor(self.colour.0, self.colour.1, self.colour.2)
    }
}

/// Latency distribution: x = latency in ms on a LOG scale, y = share of operations in % ; one line per series (e.g. per operation kind, or baseline vs current). Points are (latency_ms, percent).
pub fn latency_distribution(title: &str, series: &[Series], path: &Path) -> Result<(), String> {
    let chart = LogXChart {
        title: clean_text(title),
        series: clean_series(series),
        y_desc: "share of operations (%)",
        y_floor: None,
    };
    write_chart(&chart, path)
}

/// CDF overlay: x = latency in ms, LOG scale; y = fraction of operations <= x (0..1); one
/// line per series (baseline vs current). Points are (recorded value, cumulative fraction
/// up to it); each is drawn as a vertical step, with flat segments between ([`cdf_steps`]).
pub fn cdf_overlay(title: &str, series: &[Series], path: &Path) -> Result<(), String> {
    let mut series = clean_series(series);
    for s in &mut series {
        s.points = cdf_steps(&s.points);
    }
    let chart = LogXChart {
        title: clean_text(title),
        series,
        y_desc: "fraction of operations \u{2264} x",
        y_floor: Some((0.0, 1.02)),
    };
    write_chart(&chart, path)
}

/// Stacked horizontal or vertical bars: one bar per category (operation kinds), each bar split into components (e.g. "cpu", "tree_log_mutex", "device service"), value = mean ms per operation. `stacks[i].1[j]` is component i's value for category j.
pub fn attribution_bars(
    title: &str,
    categories: &[String],
    stacks: &[(String, Vec<f64>)],
    path: &Path,
) -> Result<(), String> {
    check_format(path)?;
    // Every component needs exactly one value per category.
    for (name, values) in stacks {
        if values.len() != categories.len() {
            return Err(format!(
                "component {name:?} has {} values for {} categories",
                values.len(),
                categories.len()
            ));
        }
    }
    let chart = BarChart {
        title: clean_text(title),
        categories: categories.iter().map(|c| clean_text(c)).collect(),
        stacks: stacks
            .iter()
            .map(|(name, values)| {
                let clean = values
                    .iter()
                    .map(|&v| {
                        if v.is_finite() && v > 0.0 {
                            v.min(LIN_MAX)
                        } else {
                            0.0
                        }
                    })
                    .collect();
                (clean_text(name), clean)
            })
            .collect(),
    };
    write_chart(&chart, path)
}

// ---------------------------------------------------------------------------------------
// Data preparation: pure functions, tested without rendering.

/// The step function of a CDF given as (recorded value, cumulative fraction) points sorted
/// by value: it starts at (first value, 0), rises vertically at each value and runs flat to
/// the next, so consecutive points share x or y (never a diagonal).
pub fn cdf_steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len() * 2 + 1);
    let mut level = 0.0;
    for &(x, y) in points {
        match out.last() {
            None => out.push((x, level)),
            Some(&(px, _)) if px != x => out.push((x, level)),
            Some(_) => {}
        }
        if y != level {
            out.push((x, y));
            level = y;
        }
    }
    out
}

/// The log axis range for data spanning `lo..=hi` (both > 0): [`LOG_MARGIN`] beyond each
/// end, widened evenly to span at least [`LOG_MIN_SPAN`]; never past 1e-300..1e300.
pub fn log_axis_range(lo: f64, hi: f64) -> (f64, f64) {
    let (lo, hi) = (
        lo.clamp(LOG_MIN, LOG_MAX),
        hi.clamp(LOG_MIN, LOG_MAX).max(lo),
    );
    let (mut a, mut b) = (lo / LOG_MARGIN, hi * LOG_MARGIN);
    if b / a < LOG_MIN_SPAN {
        let widen = (LOG_MIN_SPAN / (b / a)).sqrt();
        a /= widen;
        b *= widen;
    }
    (a.max(LOG_MIN), b.min(LOG_MAX))
}

/// Labelled ticks and grid-only ticks of a log axis over `lo..hi`: 1-2-5 per decade when
/// the range spans at most 3 decades, else whole decades (every k-th one, at most ~10
/// labels); 1..9 per decade when that would give fewer than two labels.
pub fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let decades = (hi / lo).log10();
    let stride = ((decades / 10.0).ceil() as i32).max(1);
    let sets: [&[u32]; 3] = [&[1], &[1, 2, 5], &[1, 2, 3, 4, 5, 6, 7, 8, 9]];
    let mut choice = if decades <= 3.0 { sets[1] } else { sets[0] };
    if decades <= 3.0 && ticks_in(lo, hi, sets[1], 1).len() < 2 {
        choice = sets[2];
    }
    let bold = ticks_in(lo, hi, choice, stride);
    let light = if decades <= 12.0 {
        let all = ticks_in(lo, hi, sets[2], 1);
        all.into_iter().filter(|v| !bold.contains(v)).collect()
    } else {
        Vec::new()
    };
    (bold, light)
}

/// Values m·10^e inside `lo..=hi` for m in `mults`, every `stride`-th decade.
fn ticks_in(lo: f64, hi: f64, mults: &[u32], stride: i32) -> Vec<f64> {
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mut out = Vec::new();
    for e in (e0..=e1).filter(|e| e.rem_euclid(stride) == 0) {
        for &m in mults {
            let v = f64::from(m) * 10f64.powi(e);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(v);
            }
        }
    }
    out
}

/// A latency given in ms as text with an SI time unit and up to 3 significant digits:
/// 0.0001 → "100 ns", 0.25 → "250 µs", 2 → "2 ms", 1500 → "1.5 s".
pub fn fmt_latency_ms(ms: f64) -> String {
    if !ms.is_finite() {
        return String::new();
    }
    if ms == 0.0 {
        return "0".to_string();
    }
    let ns = ms.abs() * 1e6;
    let (div, unit) = if ns < 999.5 {
        (1.0, "ns")
    } else if ns < 999_500.0 {
        (1e3, "\u{b5}s")
    } else if ns < 999_500_000.0 {
        (1e6, "ms")
    } else {
        (1e9, "s")
    };
    format!("{} {unit}", fmt_num(ms.signum() * ns / div))
}

/// Order to draw series in: more points first (stable), so a sparse series is drawn on top
/// of a dense one instead of under it.
pub fn drawing_order(counts: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
    order
}

/// Indices of at most [`MAX_MARKERS`] of `n` points, evenly spread, shifted by `phase` so
/// that series sharing x values put their markers at different points.
pub fn marker_indices(n: usize, phase: usize) -> Vec<usize> {
    if n <= MAX_MARKERS {
        return (0..n).collect();
    }
    let step = n.div_ceil(MAX_MARKERS);
    (phase % step..n).step_by(step).collect()
}

/// Width in pixels of the legend panel right of the plot for these labels (estimated from
/// the label lengths, so it is the same for PNG and SVG), or 0 when nothing is labelled.
pub fn legend_width(labels: &[&str]) -> u32 {
    if labels.iter().all(|l| l.is_empty()) {
        return 0;
    }
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    (60 + 9 * longest as u32).clamp(120, WIDTH * 2 / 5)
}

/// The x pixel where the legend panel begins in a chart with these series labels: the
/// plotting area (axes, ticks, data) lies entirely left of it.
pub fn legend_left(labels: &[&str]) -> u32 {
    WIDTH - legend_width(labels)
}

// ---------------------------------------------------------------------------------------
// Output plumbing: format dispatch, temp file + rename, error flattening.

/// A chart that can draw itself on any plotters backend.
trait Chart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

fn check_format(path: &Path) -> Result<Format, String> {
    Format::of(path).ok_or_else(|| "expected a .png or .svg file name".to_string())
}

fn write_chart<C: Chart>(chart: &C, path: &Path) -> Result<(), String> {
    let format = check_format(path)?;
    path.file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    // A directory, FIFO or device at `path` is refused, a symlink followed (crate::output).
    crate::output::check_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
    ensure_font()?;
    let result = crate::output::Temp::create(path)
        .map_err(|e| e.to_string())
        .and_then(|mut tmp| {
            guarded(|| render(chart, format, tmp.file()))?;
            // On an error above, `tmp` is dropped here, which removes the temp file.
            tmp.persist().map_err(|e| e.to_string())
        });
    result.map_err(|e| one_line(&format!("cannot write {}: {e}", path.display())))
}

fn render<C: Chart>(chart: &C, format: Format, out: &mut std::fs::File) -> Result<(), String> {
    match format {
        Format::Png => {
            // Render to an RGB buffer and encode it ourselves: plotters' own PNG writer
            // (feature `bitmap_encoder`) pulls in the whole `image` crate.
            let mut rgb = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
            {
                let root =
                    BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
                chart.draw(&root)?;
                root.present().map_err(err)?;
            }
            let mut encoder = png::Encoder::new(std::io::BufWriter::new(out), WIDTH, HEIGHT);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().map_err(err)?;
            writer.write_image_data(&rgb).map_err(err)?;
            writer.finish().map_err(err)
        }
        Format::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
                chart.draw(&root)?;
                root.present().map_err(err)?;
            }
            std::io::Write::write_all(out, svg.as_bytes()).map_err(err)
        }
    }
}

/// Runs `f`, turning a panic inside plotters (which should not happen on the sanitised
/// input we give it) into an error instead of unwinding into the caller.
fn guarded<F: FnOnce() -> Result<(), String>>(f: F) -> Result<(), String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(format!("plotting failed: {msg}"))
        }
    }
}

fn ensure_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            register_font(FAMILY, FontStyle::Normal, FONT_BYTES)
                .map_err(|_| "embedded font is not a valid TrueType file".to_string())
        })
        .clone()
}

/// Chart text with control characters (newlines, tabs...) replaced by spaces.
fn clean_text(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

// ---------------------------------------------------------------------------------------
// Shared styling helpers.

fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&BLACK)
}

/// Short, stable number text for tick labels: up to 3 significant digits, no float noise.
fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{v:.2e}");
        return match s.split_once('e') {
            Some((m, e)) if m.contains('.') => {
                format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
            }
            _ => s,
        };
    }
    let decimals = (2 - a.log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn draw_title<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(err)?;
    let inner = root.margin(10, 0, 0, 0);
    Ok(inner
        .titled(title, font(26.0))
        .map_err(err)?
        .margin(0, 4, 4, 16))
}

fn no_data_note<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    at: (f64, f64),
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = font(22.0)
        .color(&RGBColor(110, 110, 110))
        .pos(Pos::new(HPos::Center, VPos::Center));
    chart
        .draw_series(std::iter::once(Text::new("no data", at, style)))
        .map_err(err)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Series drawing and the legend panel.

/// Polylines (pixel offsets from the point) outlining marker `m` of radius `r`.
fn marker_paths(m: Marker, r: i32) -> Vec<Vec<(i32, i32)>> {
    match m {
        Marker::Circle => vec![(0..=12)
            .map(|k| {
                let a = f64::from(k) * std::f64::consts::PI / 6.0;
                let rf = f64::from(r);
                ((rf * a.cos()).round() as i32, (rf * a.sin()).round() as i32)
            })
            .collect()],
        Marker::Square => vec![vec![(-r, -r), (r, -r), (r, r), (-r, r), (-r, -r)]],
        Marker::Triangle => vec![vec![(0, -r), (r, r), (-r, r), (0, -r)]],
        Marker::Diamond => vec![vec![(0, -r), (r, 0), (0, r), (-r, 0), (0, -r)]],
        Marker::Cross => vec![vec![(-r, -r), (r, r)], vec![(-r, r), (r, -r)]],
    }
}

/// Draws one line series (solid or dashed) with hollow markers on up to
/// [`MAX_MARKERS`] of its points.
fn draw_line<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
    i: usize,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let st = series_style(i);
    let line: ShapeStyle = st.rgb().stroke_width(2);
    if st.dashed {
        chart
            .draw_series(DashedLineSeries::new(points.iter().copied(), 9, 5, line))
            .map_err(err)?;
    } else {
        chart
            .draw_series(LineSeries::new(points.iter().copied(), line))
            .map_err(err)?;
    }
    let paths = marker_paths(st.marker, if points.len() <= 3 { 6 } else { 4 });
    let marks = marker_indices(points.len(), i);
    chart
        .draw_series(marks.iter().flat_map(|&k| {
            paths
                .iter()
                .map(move |p| EmptyElement::at(points[k]) + PathElement::new(p.clone(), line))
        }))
        .map_err(err)?;
    Ok(())
}

/// One legend row: its text, its series' style, and whether its key is a bar swatch.
struct LegendEntry {
    text: String,
    style: SeriesStyle,
    bar: bool,
}

/// Splits `area` into the plotting area and, when anything is labelled, the legend panel
/// starting at [`legend_left`] (in root pixels).
fn split_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    labels: &[&str],
) -> (DrawingArea<DB, Shift>, Option<DrawingArea<DB, Shift>>) {
    if legend_width(labels) == 0 {
        return (area.clone(), None);
    }
    let at = legend_left(labels) as i32 - area.get_base_pixel().0;
    let (plot, legend) = area.split_horizontally(at);
    (plot, Some(legend))
}

/// Draws the legend rows top-down in `panel`: a key (line with its dash and marker, or a
/// bar swatch) and the text, rows squeezed to fit the panel's height.
fn draw_legend_panel<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> Result<(), String> {
    let n = entries.iter().filter(|e| !e.text.is_empty()).count().max(1) as i32;
    let (_, h) = panel.dim_in_pixel();
    let row = ((h as i32 - 60) / n).clamp(8, 24);
    let size = f64::from(row.min(22) - 6).max(7.0);
    let text_style = font(size).pos(Pos::new(HPos::Left, VPos::Center));
    let labelled = entries.iter().filter(|e| !e.text.is_empty());
    for (k, e) in labelled.enumerate() {
        let y = 50 + row * k as i32 + row / 2;
        let c = e.style.rgb();
        if e.bar {
            let swatch = Rectangle::new([(14, y - row / 3), (34, y + row / 3)], c.filled());
            panel.draw(&swatch).map_err(err)?;
        } else {
            let line = c.stroke_width(2);
            if e.style.dashed {
                for x in [6, 20, 34] {
                    panel
                        .draw(&PathElement::new(vec![(x, y), (x + 9, y)], line))
                        .map_err(err)?;
                }
            } else {
                panel
                    .draw(&PathElement::new(vec![(6, y), (42, y)], line))
                    .map_err(err)?;
            }
            for p in marker_paths(e.style.marker, 4) {
                let p: Vec<(i32, i32)> = p.iter().map(|&(dx, dy)| (24 + dx, y + dy)).collect();
                panel.draw(&PathElement::new(p, line)).map_err(err)?;
            }
        }
        panel
            .draw(&Text::new(e.text.clone(), (50, y), text_style.clone()))
            .map_err(err)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Line charts with a logarithmic latency axis.

/// A series reduced to drawable points: x > 0 and finite, y finite, sorted by x.
struct CleanSeries {
    label: String,
    points: Vec<(f64, f64)>,
}

fn clean_series(series: &[Series]) -> Vec<CleanSeries> {
    series
        .iter()
        .map(|s| {
            let mut points: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && *x > 0.0 && y.is_finite())
                .map(|&(x, y)| (x.clamp(LOG_MIN, LOG_MAX), y.clamp(-LIN_MAX, LIN_MAX)))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            CleanSeries {
                label: clean_text(&s.label),
                points,
            }
        })
        .collect()
}

/// An axis with explicit labelled (bold) and grid-only (light) tick positions.
struct Ticked<R> {
    inner: R,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> std::ops::Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

impl<R: Ranged<ValueType = f64>> ValueFormatter<f64> for Ticked<R> {
    fn format(value: &f64) -> String {
        fmt_num(*value)
    }
}

/// A linear range covering `values` and `floor`; when values exceed the floor's top, the
/// top gets `headroom` (a fraction of the span) added. Never empty, always finite.
fn linear_range(values: impl Iterator<Item = f64>, floor: (f64, f64), headroom: f64) -> (f64, f64) {
    let (mut lo, mut hi) = floor;
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi > floor.1 {
        hi += (hi - lo) * headroom;
    }
    let (lo, mut hi) = (lo.max(-LIN_MAX), hi.min(LIN_MAX));
    if hi - lo <= 1e-9 * hi.abs().max(1.0) {
        hi = lo + hi.abs().max(1.0);
    }
    (lo, hi)
}

struct LogXChart<'a> {
    title: String,
    series: Vec<CleanSeries>,
    y_desc: &'a str,
    /// Range the y axis always covers (CDFs: 0..1); otherwise 0..max plus headroom.
    y_floor: Option<(f64, f64)>,
}

impl LogXChart<'_> {
    /// The (x, y) axis ranges: x fitted to the data on a log scale, y linear.
    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let all = || self.series.iter().flat_map(|s| s.points.iter());
        let x = if all().next().is_some() {
            let lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
            let hi = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
            log_axis_range(lo, hi)
        } else {
            (0.1, 100.0)
        };
        let y = match self.y_floor {
            Some(floor) => linear_range(all().map(|p| p.1), floor, 0.0),
            None => linear_range(all().map(|p| p.1), (0.0, 0.0), 0.06),
        };
        (x, y)
    }

    fn legend_entries(&self) -> Vec<LegendEntry> {
        let entries = self.series.iter().enumerate().map(|(i, s)| LegendEntry {
            text: match (s.label.is_empty(), s.points.is_empty()) {
                (false, true) => format!("{} (no data)", s.label),
                _ => s.label.clone(),
            },
            style: series_style(i),
            bar: false,
        });
        entries.collect()
    }
}

impl Chart for LogXChart<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = draw_title(root, &self.title)?;
        let entries = self.legend_entries();
        let labels: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
        let (plot, legend) = split_legend(&area, &labels);
        let ((x_lo, x_hi), (y_lo, y_hi)) = self.ranges();
        let (bold, light) = log_ticks(x_lo, x_hi);
        let x_axis: Ticked<LogCoord<f64>> = Ticked {
            inner: (x_lo..x_hi).log_scale().into(),
            bold,
            light,
        };
        let mut chart = ChartBuilder::on(&plot)
            .margin(8)
            .x_label_area_size(56)
            .y_label_area_size(80)
            .build_cartesian_2d(x_axis, y_lo..y_hi)
            .map_err(err)?;
        let x_fmt = |v: &f64| fmt_latency_ms(*v);
        configure_mesh(&mut chart, "latency (log scale)", self.y_desc, &x_fmt)?;
        let counts: Vec<usize> = self.series.iter().map(|s| s.points.len()).collect();
        for i in drawing_order(&counts) {
            draw_line(&mut chart, &self.series[i].points, i)?;
        }
        if counts.iter().all(|&n| n == 0) {
            no_data_note(&mut chart, ((x_lo * x_hi).sqrt(), (y_lo + y_hi) / 2.0))?;
        }
        if let Some(panel) = legend {
            draw_legend_panel(&panel, &entries)?;
        }
        Ok(())
    }
}

fn configure_mesh<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    x_fmt: &dyn Fn(&f64) -> String,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(font(18.0))
        .label_style(font(14.0))
        .x_label_formatter(x_fmt)
        .y_label_formatter(&|v| fmt_num(*v))
        .y_labels(8)
        .bold_line_style(RGBColor(200, 200, 200))
        .light_line_style(RGBColor(238, 238, 238))
        .axis_style(RGBColor(60, 60, 60))
        .draw()
        .map_err(err)
}

// ---------------------------------------------------------------------------------------
// Stacked bars.

struct BarChart {
    title: String,
    categories: Vec<String>,
    /// Sanitised: every value finite and >= 0, one per category.
    stacks: Vec<(String, Vec<f64>)>,
}

const BAR_HALF: f64 = 0.35;

impl BarChart {
    /// Each category's total (the bar's height).
    fn totals(&self) -> Vec<f64> {
        (0..self.categories.len())
            .map(|j| {
                let sum: f64 = self.stacks.iter().map(|(_, v)| v[j]).sum();
                sum.min(LIN_MAX)
            })
            .collect()
    }

    /// The stacked components bottom-up, an outline round each bar, its total above it.
    fn draw_bars<'a, DB, X>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>,
        totals: &[f64],
        y_hi: f64,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64>,
    {
        let n = self.categories.len();
        let mut base = vec![0.0f64; n];
        for (i, (_, values)) in self.stacks.iter().enumerate() {
            let c = series_style(i).rgb();
            let bars: Vec<Rectangle<(f64, f64)>> = (0..n)
                .filter(|&j| values[j] > 0.0)
                .map(|j| {
                    let (x, top) = (j as f64, (base[j] + values[j]).min(LIN_MAX));
                    Rectangle::new([(x - BAR_HALF, base[j]), (x + BAR_HALF, top)], c.filled())
                })
                .collect();
            for j in 0..n {
                base[j] = (base[j] + values[j]).min(LIN_MAX);
            }
            chart.draw_series(bars).map_err(err)?;
        }
        // Thin outline so adjacent components stay distinguishable, then the totals.
        let outlined = (0..n).filter(|&j| totals[j] > 0.0).map(|j| {
            let x = j as f64;
            Rectangle::new(
                [(x - BAR_HALF, 0.0), (x + BAR_HALF, totals[j])],
                BLACK.stroke_width(1),
            )
        });
        chart.draw_series(outlined).map_err(err)?;
        // Totals above the bars, smaller when bars get narrow, dropped when too narrow.
        let size = if n <= 12 { 14.0 } else { 11.0 };
        let style = font(size).pos(Pos::new(HPos::Center, VPos::Bottom));
        let texts = (0..n).filter(|_| n <= 30).map(|j| {
            let at = (j as f64, totals[j] + y_hi * 0.01);
            Text::new(fmt_latency_ms(totals[j]), at, style.clone())
        });
        chart.draw_series(texts).map_err(err)?;
        Ok(())
    }
}

impl BarChart {
    /// The category names under their bars, in two staggered rows when one row would make
    /// neighbouring names overlap.
    fn draw_categories<DB, X>(
        &self,
        plot: &DrawingArea<DB, Shift>,
        chart: &ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        X: Ranged<ValueType = f64>,
    {
        let n = self.categories.len();
        if n == 0 {
            return Ok(());
        }
        let (x0, _) = chart.backend_coord(&(0.0, 0.0));
        let (x1, _) = chart.backend_coord(&((n - 1) as f64 + 1.0, 0.0));
        let slot = f64::from(x1 - x0) / n as f64;
        let longest = self.categories.iter().map(|c| c.chars().count()).max();
        // DejaVu Sans at 14 px: about 8 px per character.
        let stagger = longest.unwrap_or(0) as f64 * 8.0 + 6.0 > slot;
        let style = font(14.0).pos(Pos::new(HPos::Center, VPos::Top));
        let base = plot.get_base_pixel();
        for (j, c) in self.categories.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(j as f64, 0.0));
            let dy = if stagger && j % 2 == 1 { 24 } else { 6 };
            let at = (x - base.0, y - base.1 + dy);
            plot.draw(&Text::new(c.clone(), at, style.clone()))
                .map_err(err)?;
        }
        Ok(())
    }
}

impl Chart for BarChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = draw_title(root, &self.title)?;
        let entries: Vec<LegendEntry> = (self.stacks.iter().enumerate())
            .map(|(i, (name, _))| LegendEntry {
                text: name.clone(),
                style: series_style(i),
                bar: true,
            })
            .collect();
        let labels: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
        let (plot, legend) = split_legend(&area, &labels);
        let n = self.categories.len();
        let totals = self.totals();
        // Headroom above the tallest bar for its total.
        let (_, y_hi) = linear_range(totals.iter().copied(), (0.0, 0.0), 0.08);
        let slots = n.max(1);
        let x_axis: Ticked<RangedCoordf64> = Ticked {
            inner: (-0.5..slots as f64 - 0.5).into(),
            bold: (0..n).map(|j| j as f64).collect(),
            light: Vec::new(),
        };
        let mut chart = ChartBuilder::on(&plot)
            .margin(8)
            .x_label_area_size(72)
            .y_label_area_size(80)
            .build_cartesian_2d(x_axis, 0.0..y_hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("operation kind")
            .y_desc("mean time per operation")
            .axis_desc_style(font(18.0))
            .label_style(font(14.0))
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|v| fmt_latency_ms(*v))
            .y_labels(8)
            .bold_line_style(RGBColor(200, 200, 200))
            .light_line_style(RGBColor(238, 238, 238))
            .axis_style(RGBColor(60, 60, 60))
            .draw()
            .map_err(err)?;
        self.draw_bars(&mut chart, &totals, y_hi)?;
        self.draw_categories(&plot, &chart)?;
        if n == 0 || totals.iter().all(|&t| t == 0.0) {
            no_data_note(&mut chart, ((slots as f64 - 1.0) / 2.0, y_hi / 2.0))?;
        }
        if let Some(panel) = legend {
            draw_legend_panel(&panel, &entries)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    type Stacks = Vec<(String, Vec<f64>)>;

    /// A fresh, empty scratch directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("plot-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn series(label: &str, scale: f64) -> Series {
        let points = (0..40)
            .map(|i| {
                let x = 0.01 * 1.25f64.powi(i);
                let y = scale * (-((x.ln() - 0.5).powi(2)) / 2.0).exp();
                (x, y)
            })
            .collect();
        Series {
            label: label.to_string(),
            points,
        }
    }

    fn cdf(label: &str, shift: f64) -> Series {
        let points = (1..=60)
            .map(|i| {
                let x = 0.01 * 1.2f64.powi(i) * shift;
                (x, 1.0 - (-(x / 2.0)).exp())
            })
            .collect();
        Series {
            label: label.to_string(),
            points,
        }
    }

    fn stacks() -> (Vec<String>, Stacks) {
        let cats = ["fsync", "fdatasync", "write", "rename"]
            .map(String::from)
            .to_vec();
        let stacks = vec![
            ("cpu".to_string(), vec![0.02, 0.015, 0.01, 0.03]),
            ("tree_log_mutex".to_string(), vec![1.4, 0.3, 0.0, 0.9]),
            ("device service".to_string(), vec![2.1, 1.9, 0.05, 0.7]),
        ];
        (cats, stacks)
    }

    /// Renders all three charts to `dir` with extension `ext`, returning the paths.
    fn render_all(dir: &Path, ext: &str, tag: &str) -> Vec<PathBuf> {
        let dist = dir.join(format!("dist{tag}.{ext}"));
        let cdfp = dir.join(format!("cdf{tag}.{ext}"));
        let bars = dir.join(format!("bars{tag}.{ext}"));
        latency_distribution(
            "fsync latency distribution",
            &[series("baseline", 20.0), series("current", 14.0)],
            &dist,
        )
        .unwrap();
        cdf_overlay(
            "fsync latency CDF",
            &[cdf("baseline", 1.0), cdf("current", 1.6)],
            &cdfp,
        )
        .unwrap();
        let (cats, st) = stacks();
        attribution_bars("where fsync time goes", &cats, &st, &bars).unwrap();
        vec![dist, cdfp, bars]
    }

    /// The text content of every `<text>` element of an SVG document, trimmed.
    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    fn has_text(svg: &str, text: &str) -> bool {
        svg_texts(svg).iter().any(|t| t == text)
    }

    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
        assert_eq!(&bytes[12..16], b"IHDR");
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        (w, h)
    }

    fn no_temp_files_left(dir: &Path) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(!name.ends_with(".tmp"), "temp file left behind: {name}");
        }
    }

    #[test]
    fn format_of_extension() {
        assert_eq!(Format::of(Path::new("a/b.png")), Some(Format::Png));
        assert_eq!(Format::of(Path::new("b.SVG")), Some(Format::Svg));
        assert_eq!(Format::of(Path::new("b.jpg")), None);
        assert_eq!(Format::of(Path::new("png")), None);
        assert_eq!(Format::of(Path::new("")), None);
    }

    #[test]
    fn png_charts_have_signature_and_size() {
        let dir = scratch("png");
        for p in render_all(&dir, "png", "") {
            let bytes = std::fs::read(&p).unwrap();
            assert!(bytes.len() > 1000, "{} is too small", p.display());
            assert_eq!(png_size(&bytes), (WIDTH, HEIGHT), "{}", p.display());
        }
        no_temp_files_left(&dir);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn svg_charts_contain_title_and_legend() {
        let dir = scratch("svg");
        let paths = render_all(&dir, "svg", "");
        let text: Vec<String> = paths
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        for t in &text {
            assert!(t.starts_with("<svg"), "not an SVG");
            assert!(t.contains(&format!("width=\"{WIDTH}\"")));
            assert!(t.contains("font-family=\"sans-serif\""));
        }
        let expect: [&[&str]; 3] = [
            &[
                "fsync latency distribution",
                "baseline",
                "current",
                "latency (log scale)",
                "share of operations (%)",
            ],
            &[
                "fsync latency CDF",
                "baseline",
                "current",
                "latency (log scale)",
                "fraction of operations \u{2264} x",
            ],
            &[
                "where fsync time goes",
                "cpu",
                "tree_log_mutex",
                "device service",
                "fsync",
                "rename",
                "operation kind",
                "mean time per operation",
            ],
        ];
        for (t, want) in text.iter().zip(expect) {
            for w in want {
                assert!(has_text(t, w), "missing text {w:?} in {:?}", svg_texts(t));
            }
        }
        no_temp_files_left(&dir);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn same_input_gives_same_bytes() {
        let dir = scratch("det");
        for ext in ["png", "svg"] {
            let a = render_all(&dir, ext, "a");
            let b = render_all(&dir, ext, "b");
            for (pa, pb) in a.iter().zip(&b) {
                assert_eq!(
                    std::fs::read(pa).unwrap(),
                    std::fs::read(pb).unwrap(),
                    "{ext}"
                );
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn different_input_gives_different_bytes() {
        let dir = scratch("diff");
        for ext in ["png", "svg"] {
            let a = dir.join(format!("a.{ext}"));
            let b = dir.join(format!("b.{ext}"));
            let c = dir.join(format!("c.{ext}"));
            latency_distribution("t", &[series("x", 20.0)], &a).unwrap();
            latency_distribution("t", &[series("x", 30.0)], &b).unwrap();
            // Same data, other title: in PNG this proves text is really rasterised.
            latency_distribution("t2", &[series("x", 20.0)], &c).unwrap();
            let (a, b, c) = (
                std::fs::read(a).unwrap(),
                std::fs::read(b).unwrap(),
                std::fs::read(c).unwrap(),
            );
            assert_ne!(a, b, "{ext}: data change not visible");
            assert_ne!(a, c, "{ext}: title change not visible");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn concurrent_writers_to_one_path() {
        let dir = scratch("conc");
        let p = dir.join("x.png");
        std::thread::scope(|scope| {
            for i in 0..4 {
                let p = &p;
                scope.spawn(move || cdf_overlay("t", &[cdf("a", 1.0 + i as f64)], p).unwrap());
            }
        });
        assert_eq!(png_size(&std::fs::read(&p).unwrap()), (WIDTH, HEIGHT));
        no_temp_files_left(&dir);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn overwrites_existing_file() {
        let dir = scratch("over");
        let p = dir.join("x.png");
        std::fs::write(&p, b"old").unwrap();
        cdf_overlay("t", &[cdf("a", 1.0)], &p).unwrap();
        assert_eq!(png_size(&std::fs::read(&p).unwrap()), (WIDTH, HEIGHT));
        no_temp_files_left(&dir);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_chart_path_replaces_the_target_not_the_link() {
        let dir = scratch("link");
        let target = dir.join("real.svg");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.join("link.svg");
        std::os::unix::fs::symlink("real.svg", &link).unwrap();
        cdf_overlay("t", &[cdf("a", 1.0)], &link).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::read_to_string(&target)
            .unwrap()
            .starts_with("<svg"));
        no_temp_files_left(&dir);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_extension_is_an_error_and_writes_nothing() {
        let dir = scratch("ext");
        for name in ["x.jpg", "x", "x.png.txt"] {
            let p = dir.join(name);
            let e = latency_distribution("t", &[series("a", 1.0)], &p).unwrap_err();
            assert_eq!(e, "expected a .png or .svg file name");
            let e = cdf_overlay("t", &[], &p).unwrap_err();
            assert_eq!(e, "expected a .png or .svg file name");
            let e = attribution_bars("t", &[], &[], &p).unwrap_err();
            assert_eq!(e, "expected a .png or .svg file name");
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_directory_is_a_one_line_error() {
        let dir = scratch("nodir");
        let p = dir.join("no/such/dir/x.png");
        let e = latency_distribution("t", &[series("a", 1.0)], &p).unwrap_err();
        assert!(e.starts_with("cannot write"), "{e}");
        assert!(!e.contains('\n'));
        let e = attribution_bars("t", &[], &[], &dir.join("no/x.svg")).unwrap_err();
        assert!(e.starts_with("cannot write"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn mismatched_stacks_are_an_error() {
        let dir = scratch("mismatch");
        let cats = vec!["a".to_string(), "b".to_string()];
        let e = attribution_bars("t", &cats, &[("cpu".into(), vec![1.0])], &dir.join("x.png"))
            .unwrap_err();
        assert!(
            e.contains("cpu") && e.contains("1 values for 2 categories"),
            "{e}"
        );
        // A bad extension is reported first.
        let e = attribution_bars("t", &cats, &[("cpu".into(), vec![1.0])], &dir.join("x.gif"))
            .unwrap_err();
        assert_eq!(e, "expected a .png or .svg file name");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Odd inputs: every call returns Ok with a valid chart (never panics).
    #[test]
    fn odd_inputs_give_valid_charts() {
        let dir = scratch("odd");
        let s = |label: &str, pts: &[(f64, f64)]| Series {
            label: label.to_string(),
            points: pts.to_vec(),
        };
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        let cases: Vec<Vec<Series>> = vec![
            vec![],
            vec![s("empty", &[])],
            vec![s("one point", &[(3.0, 50.0)])],
            vec![s("all equal", &[(2.0, 5.0), (2.0, 5.0), (2.0, 5.0)])],
            vec![s("zero y", &[(1.0, 0.0), (10.0, 0.0)])],
            vec![s("non-positive x", &[(0.0, 1.0), (-5.0, 2.0)])],
            vec![s(
                "nan/inf",
                &[(nan, 1.0), (1.0, nan), (inf, 1.0), (2.0, -inf), (4.0, 3.0)],
            )],
            vec![s("negative y", &[(1.0, -3.0), (2.0, -1.0)])],
            vec![s(
                "huge",
                &[(1e-320, 1e-320), (f64::MAX, f64::MAX), (1.0, -f64::MAX)],
            )],
            vec![s("tiny span", &[(1.0, 1e9), (1.0 + 1e-12, 1e9 + 1e-6)])],
            vec![s("", &[(1.0, 1.0), (2.0, 2.0)])],
            vec![s("unsorted", &[(5.0, 1.0), (0.5, 2.0), (50.0, 0.5)])],
            (0..14)
                .map(|i| series(&format!("s{i} \u{2264} & <x>"), i as f64))
                .collect(),
        ];
        let mut n = 0;
        for (i, case) in cases.iter().enumerate() {
            for ext in ["png", "svg"] {
                let p = dir.join(format!("d{i}.{ext}"));
                latency_distribution("", case, &p).unwrap_or_else(|e| panic!("case {i}: {e}"));
                let q = dir.join(format!("c{i}.{ext}"));
                cdf_overlay("odd \u{00e9}", case, &q).unwrap_or_else(|e| panic!("case {i}: {e}"));
                for p in [p, q] {
                    let bytes = std::fs::read(&p).unwrap();
                    if ext == "png" {
                        assert_eq!(png_size(&bytes), (WIDTH, HEIGHT));
                    } else {
                        assert!(bytes.starts_with(b"<svg"));
                    }
                    n += 1;
                }
            }
        }
        let svg = std::fs::read_to_string(dir.join("d1.svg")).unwrap();
        assert!(has_text(&svg, "empty (no data)") && has_text(&svg, "no data"));
        let svg = std::fs::read_to_string(dir.join("d12.svg")).unwrap();
        assert!(
            has_text(&svg, "s3 \u{2264} &amp; &lt;x&gt;"),
            "labels are escaped"
        );

        let bar_cases: Vec<(Vec<String>, Stacks)> = vec![
            (vec![], vec![]),
            (vec![], vec![("cpu".into(), vec![])]),
            (vec!["fsync".into()], vec![]),
            (vec!["fsync".into()], vec![("cpu".into(), vec![0.0])]),
            (vec!["fsync".into()], vec![("cpu".into(), vec![2.5])]),
            (
                vec!["a".into(), "b".into(), "".into()],
                vec![
                    ("neg".into(), vec![-1.0, nan, inf]),
                    ("big".into(), vec![f64::MAX, f64::MAX, 1e-320]),
                    ("".into(), vec![1.0, 1.0, 1.0]),
                ],
            ),
            (
                (0..25).map(|j| format!("op{j}")).collect(),
                (0..12)
                    .map(|i| (format!("c{i}"), vec![0.1 * i as f64; 25]))
                    .collect(),
            ),
        ];
        for (i, (cats, st)) in bar_cases.iter().enumerate() {
            for ext in ["png", "svg"] {
                let p = dir.join(format!("b{i}.{ext}"));
                attribution_bars("bars", cats, st, &p).unwrap_or_else(|e| panic!("bars {i}: {e}"));
                assert!(std::fs::metadata(&p).unwrap().len() > 0);
                n += 1;
            }
        }
        assert_eq!(n, cases.len() * 4 + bar_cases.len() * 2);
        no_temp_files_left(&dir);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn control_characters_become_spaces() {
        let dir = scratch("ctrl");
        let p = dir.join("x.svg");
        let mut s = series("two\nlines", 1.0);
        s.points.truncate(3);
        latency_distribution("title\twith\ncontrols", &[s], &p).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(
            has_text(&svg, "title with controls"),
            "{:?}",
            svg_texts(&svg)
        );
        assert!(has_text(&svg, "two lines"));
        let cats = vec!["a\rb".to_string()];
        attribution_bars("t", &cats, &[("c\u{7}d".into(), vec![1.0])], &p).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(
            has_text(&svg, "a b") && has_text(&svg, "c d"),
            "{:?}",
            svg_texts(&svg)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The distinct `y` attributes of the `<text>`s of `svg` whose content is in `names`.
    fn text_rows(svg: &str, names: &[String]) -> Vec<String> {
        let mut rows: Vec<String> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| {
                let (tag, rest) = t.split_once('>')?;
                let body = rest.split("</text>").next()?.trim();
                let y = tag.split(" y=\"").nth(1)?.split('"').next()?;
                names.iter().any(|n| n == body).then(|| y.to_string())
            })
            .collect();
        rows.sort();
        rows.dedup();
        rows
    }

    #[test]
    fn crowded_category_names_are_staggered() {
        let dir = scratch("stagger");
        let p = dir.join("bars.svg");
        for (n, rows) in [(3, 1), (16, 2)] {
            let cats: Vec<String> = (0..n).map(|j| format!("Operation{j}")).collect();
            let st = vec![("cpu".to_string(), vec![1.0; n])];
            attribution_bars("t", &cats, &st, &p).unwrap();
            let svg = std::fs::read_to_string(&p).unwrap();
            assert_eq!(text_rows(&svg, &cats).len(), rows, "{n} categories");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn number_labels_are_short() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(0.1 * 3.0), "0.3");
        assert_eq!(fmt_num(1000.0), "1000");
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(0.001), "0.001");
        assert_eq!(fmt_num(1e6), "1e6");
        assert_eq!(fmt_num(1.5e-5), "1.5e-5");
        assert_eq!(fmt_num(-20.0), "-20");
        assert_eq!(fmt_num(f64::NAN), "");
    }
}
