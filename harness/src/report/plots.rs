//! Plots (plotters), each written as PNG and SVG with an embedded font. The report module computes the
//! data; this module only draws it.

use std::path::{Path, PathBuf};

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

/// Context size per request with compression events (the sawtooth), one series per strategy.
/// Writes `<dir>/<name>.png` and `<dir>/<name>.svg`.
pub fn timeline(
    dir: &Path,
    name: &str,
    title: &str,
    series: &[Series],
    markers: &[Marker],
) -> Result<PlotFiles, PlotError> {
    let _ = (dir, title, series, markers);
    Err(PlotError { name: name.into(), message: "not implemented yet".into() })
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
    let _ = (dir, title, x_label, y_label, series);
    Err(PlotError { name: name.into(), message: "not implemented yet".into() })
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
    let _ = (dir, title, x_labels, y_labels, values);
    Err(PlotError { name: name.into(), message: "not implemented yet".into() })
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
    let _ = (dir, title, x_label, y_label, points);
    Err(PlotError { name: name.into(), message: "not implemented yet".into() })
}

/// A histogram of values in `bins` equal-width bins.
pub fn histogram(
    dir: &Path,
    name: &str,
    title: &str,
    x_label: &str,
    values: &[f64],
    bins: usize,
) -> Result<PlotFiles, PlotError> {
    let _ = (dir, title, x_label, values, bins);
    Err(PlotError { name: name.into(), message: "not implemented yet".into() })
}
