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

/// Request size per request with compression events (the sawtooth), one series per strategy.
/// Writes `<dir>/<name>.png` and `<dir>/<name>.svg`.
///
/// Markers are drawn as small shapes on the line of their series (at the series' value interpolated at
/// the marker's x), in the series' colour, one shape per distinct label; the legend names each label once
/// (see [`timeline_legend`]). A marker whose series index is out of range is drawn as a grey dashed
/// vertical line. A series whose points equal another's exactly is drawn so that both show (wider solid
/// under thinner dashed) and its legend entry says "(same as …)".
pub fn timeline(
    dir: &Path,
    name: &str,
    title: &str,
    series: &[Series],
    markers: &[Marker],
) -> Result<PlotFiles, PlotError> {
    let fig =
        draw::Timeline { title, x_label: "request index", y_label: "request size (tokens, as sent)", series, markers };
    draw::render(dir, name, &fig)
}

/// The timeline's legend entries, in order: each series' name (with "(same as …)" when its points equal
/// other series' exactly), then one entry per distinct marker label.
pub fn timeline_legend(series: &[Series], markers: &[Marker]) -> Vec<String> {
    draw::timeline_legend(series, markers)
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
    heatmap_described(dir, name, title, x_labels, y_labels, values, &HeatmapDesc::default())
}

/// What a heatmap's axes and values are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeatmapDesc {
    /// Under the column labels (empty: nothing).
    pub x_desc: String,
    /// Left of the row labels (empty: nothing).
    pub y_desc: String,
    /// Along the colour bar: the figure, its unit and direction (empty: nothing).
    pub value_desc: String,
    /// The colour scale's natural range (e.g. `(0, 100)` for a share in percent), widened to the values
    /// when they fall outside; `None`: from the values' min to their max.
    pub range: Option<(f64, f64)>,
    /// Written after each value (cells and colour-bar ticks), e.g. "%".
    pub suffix: String,
}

/// The colour bar of a heatmap of `values` described by `desc`: its range (bottom, top), its tick labels
/// from the top down, and its description; `None` without any finite value (no bar is drawn).
pub fn heatmap_colour_bar(
    values: &[Vec<Option<f64>>],
    desc: &HeatmapDesc,
) -> Option<((f64, f64), Vec<String>, String)> {
    let clean: Vec<Vec<Option<f64>>> =
        values.iter().map(|r| r.iter().map(|v| v.filter(|v| v.is_finite())).collect()).collect();
    let range = draw::colour_range(&clean, desc.range)?;
    let ticks = draw::colour_ticks(range, &desc.suffix).into_iter().map(|t| t.1).collect();
    Some((range, ticks, desc.value_desc.clone()))
}

/// [`heatmap`] with axis descriptions, the colour bar's description, range and the values' unit.
pub fn heatmap_described(
    dir: &Path,
    name: &str,
    title: &str,
    x_labels: &[String],
    y_labels: &[String],
    values: &[Vec<Option<f64>>],
    desc: &HeatmapDesc,
) -> Result<PlotFiles, PlotError> {
    let fig = draw::Heatmap {
        title,
        x_labels,
        y_labels,
        values,
        x_desc: &desc.x_desc,
        y_desc: &desc.y_desc,
        value_desc: &desc.value_desc,
        range: desc.range,
        suffix: &desc.suffix,
    };
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

/// The labels [`pareto`] writes: one per place, (the first point there, the labels of every point at
/// exactly its coordinates joined by ", ").
pub fn pareto_labels(points: &[(String, f64, f64)]) -> Vec<(usize, String)> {
    draw::point_labels(points)
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
