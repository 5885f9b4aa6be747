//! Plots (plotters), each written as PNG and SVG with an embedded font. The report computes the data and
//! fills one of the plot kinds below ([`Timeline`], [`Lines`], [`Heatmap`], [`Pareto`], [`Histogram`]);
//! [`Plot::render`] draws it. Each kind's drawing is in the module of its name, what they share in `draw`.
//!
//! Every plot is drawn twice from the same code, once on a bitmap (1000×600 PNG) and once as SVG. Text
//! is rasterised in the PNG with DejaVu Sans embedded in the binary (`assets/fonts`), registered with
//! plotters' `ab_glyph` backend, so no system font lookup happens. The SVG writes text as `<text>`
//! elements with `font-family="sans-serif"`. Output is deterministic: the same input gives the same
//! bytes. Non-finite values are dropped; when nothing is left, the chart is drawn empty with a
//! "no data" note instead of failing.

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, DrawingBackend};
use std::path::{Path, PathBuf};

mod draw;
mod heatmap;
mod histogram;
mod lines;
mod pareto;
mod style;
mod timeline;

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

/// A plot kind: its data, drawn the same way on both backends.
pub trait Plot {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static;

    /// Draws the plot into `<dir>/<name>.png` and `<dir>/<name>.svg`.
    fn render(&self, dir: &Path, name: &str) -> Result<PlotFiles, PlotError>
    where
        Self: Sized,
    {
        draw::render(dir, name, self)
    }
}

/// Request size per request with compression events (the sawtooth), one series per strategy.
///
/// Markers are drawn as small shapes on the line of their series (at the series' value interpolated at
/// the marker's x), in the series' colour, one shape per distinct label; the legend names each label once
/// (see [`Timeline::legend`]). A marker whose series index is out of range is drawn as a grey dashed
/// vertical line. A series whose points equal another's exactly is drawn so that both show (wider solid
/// under thinner dashed) and its legend entry says "(same as …)".
pub struct Timeline<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
    pub markers: &'a [Marker],
}

/// Lines of y versus x (e.g. token reduction versus threshold, one series per preserve fraction).
pub struct Lines<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
    /// The y axis starts at zero (or includes it).
    pub y_from_zero: bool,
}

/// A heatmap: `values[row][col]` (None = no data), rows labelled `y_labels`, columns `x_labels`.
pub struct Heatmap<'a> {
    pub title: &'a str,
    pub x_labels: &'a [String],
    pub y_labels: &'a [String],
    pub values: &'a [Vec<Option<f64>>],
    pub desc: &'a HeatmapDesc,
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

/// One point per config (x = cumulative tokens vs none, y = accuracy or retention), the Pareto front
/// (lower x, higher y) drawn as a line and labelled (see [`Pareto::labels`]).
pub struct Pareto<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub points: &'a [(String, f64, f64)],
}

/// A histogram of values in `bins` equal-width bins (at least one).
pub struct Histogram<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub values: &'a [f64],
    pub bins: usize,
    /// Fixed bin range (e.g. `[0, 1]` for a normalised distance; values outside go to the end bins);
    /// `None`: the data's range.
    pub range: Option<(f64, f64)>,
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
