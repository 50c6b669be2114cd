//! Line charts as PNG files for the evidence directories of the verify scenarios: a producer's p99
//! latency and an observer's lag over time, or a metric against cluster size for two builds.
//!
//! okp rasterises the chart itself (axes, nice ticks, lines, legend, an optional right axis and a
//! log-scale x) into an RGB buffer, encodes it with the `png` crate and writes it through
//! `fsx::write_atomic`. Text comes from a TrueType file read at run time (DejaVu Sans, Debian's
//! fonts-dejavu-core); without one the chart is drawn without its words, never refused.
//!
//! Not here: what a scenario measures or where its evidence lives (`scenarios`, `verify`); CSV
//! beyond a header row and numeric rows.

use std::path::Path;
use std::sync::OnceLock;

use ab_glyph::{point, Font, FontVec, PxScale, ScaleFont};

use crate::error::{Error, Result};

/// One line of a chart. Points that are not finite (or not positive on a log axis) leave a gap.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Measured against the right axis (`Chart::y2_label`), e.g. seconds of lag beside ms of latency.
    pub right_axis: bool,
}

/// A line chart: its words, its series, and whether x is logarithmic. The right axis is drawn when
/// `y2_label` is set or a series is on it; both value axes start at zero unless a value is negative.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub y2_label: Option<String>,
    pub series: Vec<Series>,
    /// Logarithmic x, for sizes that grow by factors (1k, 5k, 20k partitions).
    pub log_x: bool,
}

pub const WIDTH: u32 = 900;
pub const HEIGHT: u32 = 500;

/// The series' colours in order; a seventh series takes the first colour again.
pub const COLOURS: [[u8; 3]; 6] =
    [[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189], [140, 86, 75]];

/// Where the charts' font is looked for: Debian/Ubuntu, then Fedora/Arch.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// DejaVuSans.ttf is about 750 KB; a file far larger is not the font we mean.
const MAX_FONT: u64 = 16 << 20;

const WHITE: [u8; 3] = [255, 255, 255];
const INK: [u8; 3] = [30, 30, 30];
const GRID: [u8; 3] = [225, 225, 225];

/// Renders `chart` and writes it to `path` as a PNG, atomically.
pub fn write_png(path: &Path, chart: &Chart) -> Result<()> {
    let bytes = render_png(chart, font()).map_err(|e| {
        Error::Harness(format!(
            "{}: cannot encode the chart as PNG: {e}",
            crate::escape::one_line(&path.to_string_lossy())
        ))
    })?;
    crate::fsx::write_atomic(path, &bytes)
}

/// The chart as PNG bytes, with `font` for its text (None: lines, axes and ticks only).
pub fn render_png(chart: &Chart, font: Option<&FontVec>) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let canvas = render(chart, font);
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, canvas.w as u32, canvas.h as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&canvas.px)?;
    writer.finish()?;
    Ok(out)
}

/// The first font of `FONT_PATHS` that reads and parses, loaded once per process.
pub fn font() -> Option<&'static FontVec> {
    static FONT: OnceLock<Option<FontVec>> = OnceLock::new();
    FONT.get_or_init(|| {
        FONT_PATHS.iter().find_map(|p| {
            let bytes = crate::fsx::read::read_regular(Path::new(p), MAX_FONT).ok()?;
            FontVec::try_from_vec(bytes).ok()
        })
    })
    .as_ref()
}

/// The (x, y) pairs of two named columns of a CSV text with a header row. Rows whose two cells do
/// not parse as numbers, or that are too short, are skipped; an unknown column gives no points. A
/// `NaN` cell is a number here and keeps its row: the chart shows the missing sample as a gap.
pub fn csv_series(text: &str, x_col: &str, y_col: &str) -> Vec<(f64, f64)> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else { return Vec::new() };
    let column = |name: &str| header.split(',').position(|h| h.trim().trim_matches('"') == name);
    let (Some(xi), Some(yi)) = (column(x_col), column(y_col)) else { return Vec::new() };
    lines
        .filter_map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let num = |i: usize| cells.get(i)?.trim().trim_matches('"').parse::<f64>().ok();
            Some((num(xi)?, num(yi)?))
        })
        .collect()
}

/// An RGB image, row by row, and the font its text is drawn in.
struct Canvas<'f> {
    w: usize,
    h: usize,
    px: Vec<u8>,
    font: Option<&'f FontVec>,
}

/// A rectangle in pixels: left, top, right, bottom (inclusive).
#[derive(Copy, Clone)]
struct Rect {
    l: f64,
    t: f64,
    r: f64,
    b: f64,
}

impl<'f> Canvas<'f> {
    fn new(w: usize, h: usize, font: Option<&'f FontVec>) -> Canvas<'f> {
        Canvas { w, h, px: WHITE.repeat(w * h), font }
    }

    /// Mixes `colour` into pixel (x, y) with coverage `a` in 0..=1; outside the image, nothing.
    fn blend(&mut self, x: i64, y: i64, colour: [u8; 3], a: f32) {
        if x < 0 || y < 0 || x as usize >= self.w || y as usize >= self.h {
            return;
        }
        let i = (y as usize * self.w + x as usize) * 3;
        let a = a.clamp(0.0, 1.0);
        for (c, &want) in colour.iter().enumerate() {
            let old = self.px[i + c] as f32;
            self.px[i + c] = (old + (want as f32 - old) * a).round() as u8;
        }
    }

    fn fill(&mut self, r: Rect, colour: [u8; 3]) {
        for y in r.t.round() as i64..=r.b.round() as i64 {
            for x in r.l.round() as i64..=r.r.round() as i64 {
                self.blend(x, y, colour, 1.0);
            }
        }
    }

    /// A line `width` pixels thick, drawn by stamping squares every half pixel (no anti-aliasing, so
    /// a series' pixels carry its exact colour), clipped to `clip`.
    fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), colour: [u8; 3], width: f64, clip: Rect) {
        if ![x0, y0, x1, y1].iter().all(|v| v.is_finite()) {
            return;
        }
        let steps = ((x1 - x0).abs().max((y1 - y0).abs()) * 2.0).ceil().clamp(1.0, 1e5) as usize;
        let half = (width / 2.0).max(0.5);
        for s in 0..=steps {
            let t = s as f64 / steps as f64;
            let (x, y) = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t);
            let sq = Rect {
                l: (x - half + 0.5).max(clip.l),
                t: (y - half + 0.5).max(clip.t),
                r: (x + half - 0.5).min(clip.r),
                b: (y + half - 0.5).min(clip.b),
            };
            if sq.l <= sq.r && sq.t <= sq.b {
                self.fill(sq, colour);
            }
        }
    }

    /// `text` at (x, y), `align` giving which point of its box that is (0 left/top, 0.5 centre,
    /// 1 right/bottom); `vertical` turns it a quarter anticlockwise (the y axes' labels).
    fn text(&mut self, text: &str, (x, y): (f64, f64), size: f32, align: (f64, f64), vertical: bool, colour: [u8; 3]) {
        let Some(font) = self.font else { return };
        let mask = Mask::of(font, text, size);
        let (w, h) = if vertical { (mask.h, mask.w) } else { (mask.w, mask.h) };
        let left = (x - w as f64 * align.0).round() as i64;
        let top = (y - h as f64 * align.1).round() as i64;
        for my in 0..mask.h {
            for mx in 0..mask.w {
                let a = mask.a[my * mask.w + mx];
                if a > 0.0 {
                    let (dx, dy) = if vertical { (my, mask.w - 1 - mx) } else { (mx, my) };
                    self.blend(left + dx as i64, top + dy as i64, colour, a);
                }
            }
        }
    }
}

/// A line of text as coverage values, its box from the font's ascent to its descent.
struct Mask {
    w: usize,
    h: usize,
    a: Vec<f32>,
}

impl Mask {
    fn of(font: &FontVec, text: &str, size: f32) -> Mask {
        let scaled = font.as_scaled(PxScale::from(size));
        let ascent = scaled.ascent();
        let mut glyphs = Vec::new();
        let mut caret = 0.0f32;
        let mut prev = None;
        // Labels come from okp's own code; the cap only keeps a runaway string from a huge mask.
        for c in text.chars().take(300) {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                caret += scaled.kern(p, id);
            }
            glyphs.push(id.with_scale_and_position(size, point(caret, ascent)));
            caret += scaled.h_advance(id);
            prev = Some(id);
        }
        let (w, h) = (caret.ceil().max(1.0) as usize, (ascent - scaled.descent()).ceil().max(1.0) as usize);
        let mut a = vec![0.0f32; w * h];
        for g in glyphs {
            let Some(outline) = font.outline_glyph(g) else { continue };
            let b = outline.px_bounds();
            outline.draw(|gx, gy, c| {
                let (x, y) = (b.min.x as i64 + gx as i64, b.min.y as i64 + gy as i64);
                if x >= 0 && y >= 0 && (x as usize) < w && (y as usize) < h {
                    let i = y as usize * w + x as usize;
                    a[i] = a[i].max(c);
                }
            });
        }
        Mask { w, h, a }
    }
}

/// One axis: the value range it shows and how values map onto it.
#[derive(Copy, Clone, Debug)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Scale {
    /// Where `v` falls, 0 at `lo` and 1 at `hi`.
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn shows(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    /// A linear scale over `values` widened to whole tick steps, with its ticks. Value axes start at
    /// zero when nothing is negative (`from_zero`): a cut-off axis makes a small change look large.
    fn linear(values: impl Iterator<Item = f64>, from_zero: bool) -> (Scale, Vec<(f64, String)>) {
        let (lo, hi) = min_max(values).unwrap_or((0.0, 1.0));
        match Scale::linear_over(lo, hi, from_zero) {
            Some(fit) => fit,
            // Values near f64::MAX overflow the arithmetic: show the empty frame rather than nonsense.
            None => {
                Scale::linear_over(0.0, 1.0, from_zero).unwrap_or((Scale { lo: 0.0, hi: 1.0, log: false }, Vec::new()))
            }
        }
    }

    fn linear_over(mut lo: f64, mut hi: f64, from_zero: bool) -> Option<(Scale, Vec<(f64, String)>)> {
        if from_zero && lo >= 0.0 {
            lo = 0.0;
        }
        if hi - lo <= f64::EPSILON * hi.abs().max(1.0) || !(hi - lo).is_finite() {
            let pad = if hi.abs() > 0.0 && hi.abs().is_finite() { hi.abs() * 0.1 } else { 1.0 };
            (lo, hi) = if from_zero && lo == 0.0 { (0.0, pad) } else { (lo - pad, hi + pad) };
        }
        let step = nice_step((hi - lo) / 6.0);
        let decimals = (-step.log10().floor()).clamp(0.0, 9.0) as usize;
        let (first, last) = ((lo / step).floor(), (hi / step).ceil());
        let n = (last - first).max(1.0);
        let scale = Scale { lo: first * step, hi: (first + n) * step, log: false };
        if !(n <= 60.0 && scale.lo.is_finite() && scale.hi.is_finite() && scale.lo < scale.hi) {
            return None;
        }
        let ticks = (0..=n as i64).map(|i| ((first + i as f64) * step, decimals)).collect();
        Some((scale, labelled(ticks)))
    }

    /// A log scale over the positive `values`, a little wider than they reach, with ticks at
    /// 1, 2 and 5 of each decade (only each decade's 1 when there are many decades).
    fn log(values: impl Iterator<Item = f64>) -> (Scale, Vec<(f64, String)>) {
        let (lo, hi) = min_max(values.filter(|v| *v > 0.0)).unwrap_or((1.0, 10.0));
        let (lo, hi) = if hi / lo < 1.5 { (lo / 2.0, hi * 2.0) } else { (lo / 1.15, hi * 1.15) };
        let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let mantissas: &[f64] = if d1 - d0 > 5 { &[1.0] } else { &[1.0, 2.0, 5.0] };
        let stride = ((d1 - d0) as usize).div_ceil(10).max(1);
        let mut ticks = Vec::new();
        for d in (d0..=d1).step_by(stride) {
            for m in mantissas {
                let v = m * 10f64.powi(d);
                if v >= lo && v <= hi {
                    ticks.push((v, (-d).clamp(0, 12) as usize));
                }
            }
        }
        (Scale { lo, hi, log: true }, labelled(ticks))
    }
}

fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.filter(|v| v.is_finite()).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// 1, 2 or 5 times a power of ten, near `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    mag * if norm < 1.5 {
        1.0
    } else if norm < 3.5 {
        2.0
    } else if norm < 7.5 {
        5.0
    } else {
        10.0
    }
}

/// The ticks' numbers, each `(value, decimals)`. One unit for the whole axis: thousands or millions
/// when the largest tick reaches ten of them and every tick is a whole tenth (1k, 2k, 5k, 10k, 20k).
fn labelled(ticks: Vec<(f64, usize)>) -> Vec<(f64, String)> {
    let max = ticks.iter().fold(0.0f64, |m, t| m.max(t.0.abs()));
    let tenths = |v: f64, unit: f64| (v / unit * 10.0).round();
    let unit = [(1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|&(unit, _)| max >= 10.0 * unit && ticks.iter().all(|&(v, _)| tenths(v, unit) == v / unit * 10.0));
    ticks
        .into_iter()
        .map(|(v, decimals)| {
            let label = match unit {
                _ if v == 0.0 => "0".to_string(),
                Some((unit, suffix)) => format!("{}{suffix}", tenths(v, unit) / 10.0),
                None => format!("{v:.decimals$}"),
            };
            (v, label)
        })
        .collect()
}

fn render<'f>(chart: &Chart, font: Option<&'f FontVec>) -> Canvas<'f> {
    let mut c = Canvas::new(WIDTH as usize, HEIGHT as usize, font);
    let colour = |i: usize| COLOURS[i % COLOURS.len()];
    let right = chart.y2_label.is_some() || chart.series.iter().any(|s| s.right_axis);

    let legend = legend_rows(chart, font);
    let top = 44.0 + 18.0 * legend.len() as f64;
    let area = Rect { l: 80.0, t: top, r: WIDTH as f64 - if right { 80.0 } else { 30.0 }, b: HEIGHT as f64 - 62.0 };

    let xs = chart.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x, x_ticks) = if chart.log_x { Scale::log(xs) } else { Scale::linear(xs, false) };
    let ys = |on_right: bool| {
        chart
            .series
            .iter()
            .filter(move |s| s.right_axis == on_right)
            .flat_map(|s| s.points.iter())
            .filter(|p| x.shows(p.0))
            .map(|p| p.1)
    };
    let (y, y_ticks) = Scale::linear(ys(false), true);
    let (y2, y2_ticks) = Scale::linear(ys(true), true);

    let px = |v: f64| area.l + x.frac(v) * (area.r - area.l);
    let py = |s: &Scale, v: f64| area.b - s.frac(v) * (area.b - area.t);

    // Grid first, so the axes and lines draw over it.
    for (v, _) in &x_ticks {
        c.line((px(*v), area.t), (px(*v), area.b), GRID, 1.0, area);
    }
    for (v, _) in &y_ticks {
        c.line((area.l, py(&y, *v)), (area.r, py(&y, *v)), GRID, 1.0, area);
    }

    let whole = Rect { l: 0.0, t: 0.0, r: WIDTH as f64 - 1.0, b: HEIGHT as f64 - 1.0 };
    c.line((area.l, area.b), (area.r, area.b), INK, 1.0, whole);
    c.line((area.l, area.t), (area.l, area.b), INK, 1.0, whole);
    if right {
        c.line((area.r, area.t), (area.r, area.b), INK, 1.0, whole);
    }
    for (v, label) in &x_ticks {
        c.line((px(*v), area.b), (px(*v), area.b + 5.0), INK, 1.0, whole);
        c.text(label, (px(*v), area.b + 8.0), 12.0, (0.5, 0.0), false, INK);
    }
    for (v, label) in &y_ticks {
        c.line((area.l - 5.0, py(&y, *v)), (area.l, py(&y, *v)), INK, 1.0, whole);
        c.text(label, (area.l - 8.0, py(&y, *v)), 12.0, (1.0, 0.5), false, INK);
    }
    if right {
        for (v, label) in &y2_ticks {
            c.line((area.r, py(&y2, *v)), (area.r + 5.0, py(&y2, *v)), INK, 1.0, whole);
            c.text(label, (area.r + 8.0, py(&y2, *v)), 12.0, (0.0, 0.5), false, INK);
        }
    }

    c.text(&chart.title, (WIDTH as f64 / 2.0, 10.0), 17.0, (0.5, 0.0), false, INK);
    c.text(&chart.x_label, ((area.l + area.r) / 2.0, HEIGHT as f64 - 8.0), 13.0, (0.5, 1.0), false, INK);
    c.text(&chart.y_label, (14.0, (area.t + area.b) / 2.0), 13.0, (0.0, 0.5), true, INK);
    if let Some(label) = &chart.y2_label {
        c.text(label, (WIDTH as f64 - 14.0, (area.t + area.b) / 2.0), 13.0, (1.0, 0.5), true, INK);
    }

    // A value on the axes' edge (a peak at the top tick) keeps its whole stroke.
    let lines = Rect { l: area.l - 2.0, t: area.t - 2.0, r: area.r + 2.0, b: area.b + 2.0 };
    for (i, s) in chart.series.iter().enumerate() {
        let scale = if s.right_axis { &y2 } else { &y };
        let at = |p: &(f64, f64)| {
            Some((px(p.0), py(scale, p.1)))
                .filter(|(a, b)| x.shows(p.0) && p.1.is_finite() && a.is_finite() && b.is_finite())
        };
        let pts: Vec<Option<(f64, f64)>> = s.points.iter().map(at).collect();
        for (k, p) in pts.iter().enumerate() {
            let Some(p) = *p else { continue };
            match pts.get(k + 1).copied().flatten() {
                Some(q) => c.line(p, q, colour(i), 2.0, lines),
                // A point with no drawn neighbour would be invisible: mark it.
                None if k == 0 || pts[k - 1].is_none() => c.line(p, p, colour(i), 6.0, lines),
                None => {}
            }
        }
    }

    for (row, items) in legend.iter().enumerate() {
        let y = 38.0 + 18.0 * row as f64;
        for (i, left, label) in items {
            c.line((*left, y), (left + 22.0, y), colour(*i), 3.0, whole);
            c.text(label, (left + 28.0, y), 12.0, (0.0, 0.5), false, INK);
        }
    }
    c
}

/// The legend's entries (series index, left edge, label) in rows that fit the width; none without
/// a font, since a colour without its name says nothing.
fn legend_rows(chart: &Chart, font: Option<&FontVec>) -> Vec<Vec<(usize, f64, String)>> {
    let Some(font) = font else { return Vec::new() };
    let mut rows: Vec<Vec<(usize, f64, String)>> = Vec::new();
    let mut left = f64::INFINITY;
    for (i, s) in chart.series.iter().enumerate() {
        let label = if s.right_axis { format!("{} (right axis)", s.name) } else { s.name.clone() };
        let w = 28.0 + Mask::of(font, &label, 12.0).w as f64 + 20.0;
        if left + w > WIDTH as f64 - 30.0 {
            rows.push(Vec::new());
            left = 80.0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, left, label));
        }
        left += w;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
        let file = std::fs::File::open(path).unwrap();
        let mut reader = png::Decoder::new(std::io::BufReader::new(file)).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    fn count(px: &[u8], w: u32, region: Rect, want: impl Fn([u8; 3]) -> bool) -> usize {
        px.chunks(3)
            .enumerate()
            .filter(|(i, p)| {
                let (x, y) = ((i % w as usize) as f64, (i / w as usize) as f64);
                x >= region.l && x <= region.r && y >= region.t && y <= region.b && want([p[0], p[1], p[2]])
            })
            .count()
    }

    const ALL: Rect = Rect { l: 0.0, t: 0.0, r: 1e9, b: 1e9 };
    /// Inside the axes (and on the x axis) of a chart with one legend row and a right axis; the legend's
    /// swatches are above it.
    const PLOT: Rect = Rect { l: 81.0, t: 63.0, r: WIDTH as f64 - 81.0, b: HEIGHT as f64 - 62.0 };

    fn growth() -> Chart {
        let sizes = [1000.0, 5000.0, 20000.0];
        Chart {
            title: "Produce p99 and observer lag against partitions".into(),
            x_label: "partitions".into(),
            y_label: "p99 produce latency (ms)".into(),
            y2_label: Some("observer lag (s)".into()),
            series: vec![
                Series {
                    name: "p99, build A".into(),
                    points: sizes.iter().map(|&s| (s, 4.0 + s / 2000.0)).collect(),
                    right_axis: false,
                },
                Series {
                    name: "lag, build A".into(),
                    points: sizes.iter().map(|&s| (s, s / 8000.0)).collect(),
                    right_axis: true,
                },
            ],
            log_x: true,
        }
    }

    #[test]
    fn two_series_on_two_axes_with_log_x_show_both_colours_and_a_title() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evidence/growth.png");
        write_png(&path, &growth()).unwrap();
        let (w, h, px) = decode(&path);
        assert_eq!((w, h), (WIDTH, HEIGHT));
        for (i, colour) in COLOURS[..2].iter().enumerate() {
            let n = count(&px, w, PLOT, |p| p == *colour);
            assert!(n > 200, "series {i}: {n} pixels of {colour:?}");
        }
        assert!(count(&px, w, PLOT, |p| p == COLOURS[2]) == 0, "no third series, no third colour");
        // Both series peak at their own axis' top tick (14 ms, 2.5 s): the lag is drawn on the right axis.
        let top_right = Rect { l: 760.0, t: 58.0, r: 822.0, b: 68.0 };
        for colour in &COLOURS[..2] {
            assert!(count(&px, w, top_right, |p| p == *colour) > 0, "{colour:?} reaches the top right");
        }
        // x is logarithmic: 5000 sits at log(5000/870)/log(23000/870) = 53% of the width (x = 475),
        // where p99 is 6.5 of 14 ms (y = 263); a linear x would put it at x = 221.
        let kink = Rect { l: 470.0, t: 258.0, r: 480.0, b: 268.0 };
        assert!(count(&px, w, kink, |p| p == COLOURS[0]) > 0, "the p99 line passes (475, 263)");
        if font().is_some() {
            let title = Rect { l: 0.0, t: 0.0, r: WIDTH as f64, b: 30.0 };
            let dark = count(&px, w, title, |p| p.iter().all(|&c| c < 100));
            assert!(dark > 100, "{dark} dark pixels in the title area");
        }
        // To look at it: OKP_PLOT_EXAMPLE=/tmp/okp-plot-example.png cargo test --lib plot
        if let Some(keep) = std::env::var_os("OKP_PLOT_EXAMPLE") {
            std::fs::copy(&path, keep).unwrap();
        }
    }

    #[test]
    fn without_a_font_the_lines_and_axes_still_render() {
        let bytes = render_png(&growth(), None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain.png");
        std::fs::write(&path, bytes).unwrap();
        let (w, _, px) = decode(&path);
        assert!(count(&px, w, ALL, |p| p == COLOURS[0]) > 200);
        assert!(count(&px, w, ALL, |p| p == INK) > 500, "axes and ticks are drawn");
        let title = Rect { l: 0.0, t: 0.0, r: WIDTH as f64, b: 30.0 };
        assert_eq!(count(&px, w, title, |p| p != WHITE), 0, "no text, no stray marks");
    }

    #[test]
    fn degenerate_data_renders() {
        let one = |points: Vec<(f64, f64)>, log_x: bool| Chart {
            title: "degenerate".into(),
            series: vec![Series { name: "s".into(), points, right_axis: false }],
            log_x,
            ..Chart::default()
        };
        // (what, chart, whether the series leaves pixels of its colour)
        let cases = [
            ("no series", Chart::default(), false),
            ("no points", one(vec![], false), false),
            ("one point", one(vec![(3.0, 7.0)], false), true),
            ("one point, log x", one(vec![(3.0, 7.0)], true), true),
            ("all equal", one(vec![(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)], false), true),
            ("all zero", one(vec![(0.0, 0.0), (0.0, 0.0)], false), true),
            (
                "NaNs",
                one(vec![(1.0, f64::NAN), (f64::NAN, 2.0), (2.0, 3.0), (3.0, f64::INFINITY), (4.0, 1.0)], false),
                true,
            ),
            ("only NaNs", one(vec![(f64::NAN, f64::NAN)], true), false),
            ("zero and negative x on log", one(vec![(0.0, 1.0), (-5.0, 2.0), (10.0, 3.0)], true), true),
            ("values at f64::MAX", one(vec![(-f64::MAX, f64::MAX), (f64::MAX, -f64::MAX)], false), false),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (name, chart, drawn) in cases {
            let path = dir.path().join(format!("{}.png", name.replace([' ', ','], "_")));
            write_png(&path, &chart).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (w, h, px) = decode(&path);
            assert_eq!((w, h), (WIDTH, HEIGHT), "{name}");
            let n = count(&px, w, PLOT, |p| p == COLOURS[0]);
            assert_eq!(n > 0, drawn, "{name}: {n} pixels of the series' colour");
        }
    }

    #[test]
    fn ticks_are_round_and_cover_the_data() {
        let (s, ticks) = Scale::linear([0.3, 9.2].into_iter(), true);
        assert_eq!((s.lo, s.hi), (0.0, 10.0));
        assert_eq!(ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), ["0", "2", "4", "6", "8", "10"]);
        let (_, ticks) = Scale::linear([0.012, 0.049].into_iter(), false);
        assert_eq!(ticks.first().map(|t| t.1.as_str()), Some("0.010"));
        let (_, ticks) = Scale::linear([0.0, 1200.0].into_iter(), true);
        assert_eq!(ticks.last().map(|t| t.1.as_str()), Some("1200"), "under ten thousand, no unit");
        let (_, ticks) = Scale::linear([0.0, 2.4e6].into_iter(), true);
        assert_eq!(
            ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
            ["0", "500k", "1000k", "1500k", "2000k", "2500k"]
        );
        let (_, ticks) = Scale::log([1000.0, 5000.0, 20000.0].into_iter());
        assert_eq!(ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), ["1k", "2k", "5k", "10k", "20k"]);
    }

    #[test]
    fn csv_series_reads_named_columns_and_skips_bad_rows() {
        let text = "t,p99_ms,lag_s\n0,4.5,0.1\n1,oops,0.2\n2,5.0\n\n3, 6.5 ,\"0.3\"\n";
        assert_eq!(csv_series(text, "t", "p99_ms"), [(0.0, 4.5), (2.0, 5.0), (3.0, 6.5)]);
        assert_eq!(csv_series(text, "t", "lag_s"), [(0.0, 0.1), (1.0, 0.2), (3.0, 0.3)]);
        assert!(csv_series(text, "t", "missing").is_empty());
        assert!(csv_series("", "t", "x").is_empty());
    }
}
