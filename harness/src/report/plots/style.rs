//! Shared look: the embedded font, the palette, number formatting and axis ranges.

use std::sync::OnceLock;

use plotters::style::{FontStyle, RGBColor};

/// DejaVu Sans 2.37 (Bitstream Vera licence, see `assets/fonts/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// The font family every text uses; the embedded font is registered under this name (and the other
/// generic names, so a default style can never miss it).
pub const FAMILY: &str = "sans-serif";

/// The embedded font did not parse (a broken build, not bad input).
#[derive(Clone, Copy, Debug, thiserror::Error)]
#[error("the embedded font could not be parsed")]
pub struct FontError;

/// Registers the embedded font with plotters once per process.
pub fn ensure_font() -> Result<(), FontError> {
    static DONE: OnceLock<Result<(), FontError>> = OnceLock::new();
    *DONE.get_or_init(|| {
        for family in [FAMILY, "serif", "monospace"] {
            plotters::style::register_font(family, FontStyle::Normal, FONT).map_err(|_| FontError)?;
        }
        Ok(())
    })
}

// Font sizes as plotters takes them (it draws glyphs at size / 1.24 pixels per em).
pub const TITLE_SIZE: f64 = 31.0;
pub const SUBTITLE_SIZE: f64 = 20.0;
pub const DESC_SIZE: f64 = 22.0;
pub const TICK_SIZE: f64 = 19.0;
pub const LEGEND_SIZE: f64 = 19.0;
pub const NOTE_SIZE: f64 = 16.0;

pub const TEXT: RGBColor = RGBColor(30, 30, 30);
pub const MUTED: RGBColor = RGBColor(110, 110, 110);
pub const GRID: RGBColor = RGBColor(225, 225, 225);
pub const GRID_LIGHT: RGBColor = RGBColor(243, 243, 243);
pub const EMPTY_CELL: RGBColor = RGBColor(238, 238, 238);

/// Series colours (matplotlib's tab10), in order; after ten the colours repeat with another marker
/// shape.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Point marker shapes, cycled every ten series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Circle,
    Square,
    Diamond,
    Triangle,
}

pub fn shape(i: usize) -> Shape {
    [Shape::Circle, Shape::Square, Shape::Diamond, Shape::Triangle][(i / PALETTE.len()) % 4]
}

/// Viridis, sampled at ten evenly spaced stops.
const VIRIDIS: [(u8, u8, u8); 10] = [
    (68, 1, 84),
    (72, 40, 120),
    (62, 73, 137),
    (49, 104, 142),
    (38, 130, 142),
    (31, 158, 137),
    (53, 183, 121),
    (110, 206, 88),
    (181, 222, 43),
    (253, 231, 37),
];

/// The colour for `t` in [0, 1] (clamped) on the viridis scale.
pub fn viridis(t: f64) -> RGBColor {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let pos = t * (VIRIDIS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(VIRIDIS.len() - 2);
    let f = pos - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round().clamp(0.0, 255.0) as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Black or white, whichever reads better on `bg`.
pub fn text_on(bg: RGBColor) -> RGBColor {
    let lum = 0.2126 * bg.0 as f64 + 0.7152 * bg.1 as f64 + 0.0722 * bg.2 as f64;
    if lum > 140.0 {
        TEXT
    } else {
        RGBColor(255, 255, 255)
    }
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" {
            "0".into()
        } else {
            t.into()
        }
    } else if s == "-0" {
        "0".into()
    } else {
        s
    }
}

fn scale(a: f64) -> (f64, &'static str) {
    if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

/// Too large or too small for the compact form.
fn needs_sci(v: f64) -> bool {
    let a = v.abs();
    a != 0.0 && !(1e-4..1e15).contains(&a)
}

/// Scientific notation with three significant digits (`1.5e-7`).
fn sci(v: f64) -> String {
    let rounded: f64 = format!("{v:.2e}").parse().unwrap_or(v);
    format!("{rounded:e}")
}

/// A tick label: compact (`12k`, `1.5M`) with as many decimals as ticks `step` apart need.
pub fn tick(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v.abs() <= step.abs() * 1e-6 {
        return "0".into();
    }
    if needs_sci(v) {
        return sci(v);
    }
    let (div, suffix) = scale(v.abs());
    let s = (step / div).abs();
    let decimals = if s.is_nan() || s <= 0.0 || s >= 1.0 || !s.is_finite() {
        0
    } else {
        ((-s.log10()).ceil() as usize + 1).min(8)
    };
    let body = trim_zeros(format!("{:.*}", decimals, v / div));
    if body == "0" {
        body
    } else {
        body + suffix
    }
}

/// A value label: three significant digits, compact (`0.123`, `12.3`, `4.5k`).
pub fn value(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if needs_sci(v) {
        return sci(v);
    }
    let (div, suffix) = scale(v.abs());
    let x = v / div;
    let a = x.abs();
    let decimals = if a == 0.0 { 0 } else { (2 - a.log10().floor() as i64).clamp(0, 6) as usize };
    let body = trim_zeros(format!("{:.*}", decimals, x));
    if body == "0" {
        body
    } else {
        body + suffix
    }
}

/// A padded axis range around finite values in `[lo, hi]`; never empty, never non-finite.
pub fn padded(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo <= hi { (lo, hi) } else { (0.0, 1.0) };
    let (lo, hi) = (lo.max(-1e300), hi.min(1e300));
    let span = hi - lo;
    if span > 0.0 && span.is_finite() {
        (lo - span * pad, hi + span * pad)
    } else {
        let d = if lo.abs() > 0.0 { lo.abs() * 0.1 } else { 1.0 };
        (lo - d, hi + d)
    }
}

/// The rough distance between ticks plotters picks for `n` labels over `[lo, hi]` (a lower bound;
/// extra decimals are trimmed).
pub fn step_for(lo: f64, hi: f64, n: usize) -> f64 {
    (hi - lo).abs() / (n.max(1) as f64 * 2.5)
}

/// Min and max of the finite values, if any.
pub fn finite_bounds(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().filter(|v| v.is_finite()).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_compactly() {
        assert_eq!(tick(12000.0, 2000.0), "12k");
        assert_eq!(tick(1500.0, 500.0), "1.5k");
        assert_eq!(tick(500.0, 500.0), "500");
        assert_eq!(tick(0.0, 0.1), "0");
        assert_eq!(tick(0.30000000000000004, 0.1), "0.3");
        assert_eq!(tick(-0.25, 0.05), "-0.25");
        assert_eq!(tick(2_500_000.0, 500_000.0), "2.5M");
        assert_eq!(value(0.12345), "0.123");
        assert_eq!(value(12.345), "12.3");
        assert_eq!(value(4567.0), "4.57k");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(-0.0123), "-0.0123");
        assert_eq!(value(f64::NAN), "");
        assert_eq!(tick(1e-17, 0.1), "0");
        assert_eq!(tick(2e-300, 1e-300), "2e-300");
        assert_eq!(tick(-1.2345e300, 1e299), "-1.23e300");
        assert_eq!(value(0.00001234), "1.23e-5");
    }

    #[test]
    fn ranges_are_never_empty() {
        assert_eq!(padded(5.0, 5.0, 0.05), (4.5, 5.5));
        assert_eq!(padded(0.0, 0.0, 0.05), (-1.0, 1.0));
        assert_eq!(padded(f64::NAN, 1.0, 0.05), (-0.05, 1.05));
        let (lo, hi) = padded(-f64::MAX, f64::MAX, 0.05);
        assert!(lo.is_finite() && hi.is_finite() && lo < hi);
        assert_eq!(finite_bounds([f64::NAN, 3.0, f64::INFINITY, -1.0]), Some((-1.0, 3.0)));
        assert_eq!(finite_bounds([f64::NAN]), None);
    }

    #[test]
    fn viridis_ends() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), RGBColor(68, 1, 84));
    }
}
