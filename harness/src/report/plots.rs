//! Plots (plotters), each written as PNG and SVG with an embedded font. The report module computes the
//! data; this module only draws it.
//!
//! Every plot is drawn twice from the same code, once on a bitmap (1000×600 PNG) and once as SVG. Text
//! is rasterised in the PNG with DejaVu Sans embedded in the binary (`assets/fonts`), registered with
//! plotters' `ab_glyph` backend, so no system font lookup happens. The SVG writes text as `<text>`
//! elements with `font-family="sans-serif"`. Output is deterministic: the same input gives the same
//! bytes. Non-finite values are dropped; when nothing is left, the chart is drawn empty with a
//! "no data" note instead of failing.

use std::path::{Path, PathBuf};

mod draw;
mod style;

#[cfg(test)]
mod tests;

/// A named line or point series.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A vertical marker on a timeline (a compression event).
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub x: f64,
    /// Which series it belongs to (index into the series list).
    pub series: usize,
    pub label: String,
}

/// Files written for one plot.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotFiles {
    pub png: PathBuf,
    pub svg: PathBuf,
}

#[derive(Debug, thiserror::Error)]
#[error("plot {name}: {message}")]
pub struct PlotError {
    pub name: String,
    pub message: String,
}

/// Width and height of every plot, in pixels (PNG) and user units (SVG).
pub const PLOT_SIZE: (u32, u32) = (1000, 600);

/// Context size per request with compression events (the sawtooth), one series per strategy.
/// Writes `<dir>/<name>.png` and `<dir>/<name>.svg`.
///
/// Markers are drawn as small downward triangles on the line of their series (at the series' value
/// interpolated at the marker's x), with their label above when there are few enough of them; a
/// marker whose series index is out of range is drawn as a grey dashed vertical line.
pub fn timeline(
    dir: &Path,
    name: &str,
    title: &str,
    series: &[Series],
    markers: &[Marker],
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Timeline { title, x_label: "request index", y_label: "context (tokens)", series, markers };
    draw::render(dir, name, &fig)
}

/// Lines of y versus x (e.g. token reduction versus threshold, one series per prompt variant).
pub fn lines(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Lines { title, x_label, y_label, series, y_from_zero: false };
    draw::render(dir, name, &fig)
}

/// [`lines`] with a y axis that starts at zero (or includes it).
pub fn lines_from_zero(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Lines { title, x_label, y_label, series, y_from_zero: true };
    draw::render(dir, name, &fig)
}

/// A heatmap: `values[row][col]` (None = no data), rows labelled `y_labels`, columns `x_labels`.
pub fn heatmap(
    dir: &Path,
    name: &str,
    title: &str,
    x_labels: &[String],
    y_labels: &[String],
    values: &[Vec<Option<f64>>],
) -> Result<PlotFiles, PlotError> {
    heatmap_described(dir, name, title, x_labels, y_labels, values, "", "", "")
}

/// [`heatmap`] with axis descriptions (`x_desc` under the column labels, `y_desc` left of the row
/// labels) and a caption for the colour bar (`value_desc`, e.g. "reduction (%)"); empty strings draw
/// nothing.
#[allow(clippy::too_many_arguments)]
pub fn heatmap_described(
    dir: &Path,
    name: &str,
    title: &str,
    x_labels: &[String],
    y_labels: &[String],
    values: &[Vec<Option<f64>>],
    x_desc: &str,
    y_desc: &str,
    value_desc: &str,
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Heatmap { title, x_labels, y_labels, values, x_desc, y_desc, value_desc };
    draw::render(dir, name, &fig)
}

/// One point per config (x = cumulative tokens vs none, y = accuracy or retention), the Pareto front
/// (lower x, higher y) drawn as a line and labelled.
pub fn pareto(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    y_label: &str,
    points: &[(String, f64, f64)],
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Pareto { title, x_label, y_label, points };
    draw::render(dir, name, &fig)
}

/// A histogram of values in `bins` equal-width bins (at least one).
pub fn histogram(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    values: &[f64],
    bins: usize,
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Histogram { title, x_label, values, bins, range: None };
    draw::render(dir, name, &fig)
}

/// [`histogram`] with bins over a fixed range (e.g. `[0, 1]` for a normalised distance).
pub fn histogram_in(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    values: &[f64],
    bins: usize,
    range: (f64, f64),
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Histogram { title, x_label, values, bins, range: Some(range) };
    draw::render(dir, name, &fig)
}

/// Indices of the Pareto-optimal points (lower x, higher y): no other point has x ≤ and y ≥ with one
/// of them strict. Non-finite points are never on the front. Sorted by x, then by y descending.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let mut front: Vec<usize> = (0..points.len())
        .filter(|&i| finite(&points[i]))
        .filter(|&i| {
            let (x, y) = points[i];
            !points.iter().any(|q| finite(q) && q.0 <= x && q.1 >= y && (q.0 < x || q.1 > y))
        })
        .collect();
    front.sort_by(|&a, &b| {
        points[a].0.total_cmp(&points[b].0).then(points[b].1.total_cmp(&points[a].1)).then(a.cmp(&b))
    });
    front
}
