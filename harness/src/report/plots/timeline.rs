//! The timeline: request size per request, one line per strategy, with compression events marked.
//!
//! Every series stays visible: a series whose points equal another's exactly is drawn wider and solid
//! under it, the other thinner and dashed on top, and both say so in the legend ("same as …"). Events
//! are markers in their series' colour, one shape per kind of event (the marker's label, named once in
//! the legend, not at every marker).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::draw::{
    chart_f64, event_marker, finite_points, frame, no_data, DrawResult, LegendEntry, Stroke, Swatch, EVENT_LOOKS,
};
use super::style::{self, colour};
use super::{Marker, Series};
use super::{Plot, Timeline};

/// For each series, the other series whose finite points are exactly the same (none for an empty one).
fn twins(pts: &[Vec<(f64, f64)>]) -> Vec<Vec<usize>> {
    (0..pts.len())
        .map(|i| (0..pts.len()).filter(|&j| j != i && !pts[i].is_empty() && pts[j] == pts[i]).collect())
        .collect()
}

/// How each series is stroked: alone, 2 px solid; in a group of g series with the same points, the k-th
/// (in order) `2 + 3 (g − 1 − k)` px wide, the first solid, the second long-dashed, the rest short-dashed,
/// so each shows around the ones drawn over it.
pub(super) fn strokes(series: &[Series]) -> Vec<Stroke> {
    let pts: Vec<Vec<(f64, f64)>> = series.iter().map(|s| finite_points(&s.points)).collect();
    twins(&pts)
        .iter()
        .enumerate()
        .map(|(i, tw)| {
            let rank = tw.iter().filter(|&&j| j < i).count() as u32;
            let g = tw.len() as u32 + 1;
            let dash = match rank {
                0 => None,
                1 => Some((10, 6)),
                _ => Some((4, 4)),
            };
            Stroke { width: 2 + 3 * (g - 1 - rank), dash }
        })
        .collect()
}

/// The kinds of event in order of first appearance (their labels); an event's look is its kind's index.
/// More kinds than [`EVENT_LOOKS`] (labels that name each event rather than its kind) are one unnamed
/// kind.
fn event_kinds(markers: &[Marker]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for m in markers.iter().filter(|m| m.x.is_finite()) {
        if !kinds.contains(&m.label) {
            kinds.push(m.label.clone());
        }
    }
    if kinds.len() > EVENT_LOOKS {
        return vec![String::new()];
    }
    kinds
}

impl Timeline<'_> {
    /// The legend's labels, in order: each series' name (with "(same as A, B)" when its points equal theirs
    /// exactly), then one entry per kind of event marker.
    pub fn legend(&self) -> Vec<String> {
        let (series, markers) = (self.series, self.markers);
        let pts: Vec<Vec<(f64, f64)>> = series.iter().map(|s| finite_points(&s.points)).collect();
        let mut labels: Vec<String> = series
            .iter()
            .zip(twins(&pts))
            .map(|(s, tw)| {
                if tw.is_empty() {
                    s.name.clone()
                } else {
                    let names: Vec<&str> = tw.iter().map(|&j| series[j].name.as_str()).collect();
                    format!("{} (same as {})", s.name, names.join(", "))
                }
            })
            .collect();
        labels.extend(event_kinds(markers).iter().map(|k| match k.trim() {
            "" => "compression event (marker coloured as its line)".to_string(),
            k => format!("{k} event (marker coloured as its line)"),
        }));
        labels
    }
}

impl Plot for Timeline<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let pts: Vec<Vec<(f64, f64)>> = self.series.iter().map(|s| finite_points(&s.points)).collect();
        let markers: Vec<&Marker> = self.markers.iter().filter(|m| m.x.is_finite()).collect();
        let strokes = strokes(self.series);
        let kinds = event_kinds(self.markers);
        let labels = self.legend();
        let swatches = strokes.iter().map(|s| Swatch::Stroke(*s)).chain((0..kinds.len()).map(Swatch::Event));
        let legend: Vec<LegendEntry> = labels
            .into_iter()
            .zip(swatches)
            .enumerate()
            .map(|(i, (label, swatch))| {
                let colour = if i < self.series.len() { colour(i) } else { style::MUTED };
                LegendEntry { label, colour, swatch }
            })
            .collect();
        let area = frame(root, self.title, None, &legend)?;
        let xb = style::finite_bounds(pts.iter().flatten().map(|p| p.0).chain(markers.iter().map(|m| m.x)));
        let yb = style::finite_bounds(pts.iter().flatten().map(|p| p.1));
        let x = xb.map_or((0.0, 1.0), |(lo, hi)| style::padded(lo, hi, 0.02));
        let y = match yb {
            None => (0.0, 1.0),
            Some((lo, hi)) => {
                let (lo, hi) = (lo.min(0.0), hi.max(0.0));
                if hi > lo {
                    (lo, hi + (hi - lo) * 0.08)
                } else {
                    (0.0, 1.0)
                }
            }
        };
        let mut chart = chart_f64(&area, x, y, self.x_label, self.y_label)?;
        if yb.is_none() {
            no_data(root, &chart)?;
        }
        // Wide (solid) strokes first, then the dashed ones over them; among equals the first series last,
        // on top.
        let mut order: Vec<usize> = (0..pts.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(strokes[i].width), std::cmp::Reverse(i)));
        for i in order {
            let (p, s) = (&pts[i], strokes[i]);
            let style = colour(i).stroke_width(s.width);
            if p.len() == 1 || p.iter().all(|q| *q == p[0]) {
                for q in p {
                    root.draw(&Circle::new(chart.backend_coord(q), 3 + s.width as i32 / 2, colour(i).filled()))?;
                }
            } else {
                match s.dash {
                    None => chart.draw_series(LineSeries::new(p.iter().copied(), style))?,
                    Some((len, gap)) => chart.draw_series(DashedLineSeries::new(p.iter().copied(), len, gap, style))?,
                };
            }
        }
        for m in &markers {
            let on_series = pts.get(m.series).and_then(|p| y_at(p, m.x));
            let Some(yv) = on_series else {
                let line = vec![(m.x, y.0), (m.x, y.1)];
                chart.draw_series(DashedLineSeries::new(line, 6, 4, style::MUTED.stroke_width(1)))?;
                continue;
            };
            let tip = chart.backend_coord(&(m.x, yv));
            let look = kinds.iter().position(|k| *k == m.label).unwrap_or(0);
            event_marker(root, (tip.0, tip.1 - 2), colour(m.series), look)?;
        }
        Ok(())
    }
}

/// The series' y at `x`: the largest y among points exactly at x, else linear interpolation between
/// the neighbours, else the nearest end.
fn y_at(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let exact =
        points.iter().filter(|p| p.0 == x).map(|p| p.1).fold(None, |m: Option<f64>, y| Some(m.map_or(y, |m| m.max(y))));
    if exact.is_some() {
        return exact;
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (first, last) = (sorted.first()?, sorted.last()?);
    if x <= first.0 {
        return Some(first.1);
    }
    if x >= last.0 {
        return Some(last.1);
    }
    let i = sorted.partition_point(|p| p.0 < x);
    let (a, b) = (sorted[i - 1], sorted[i]);
    let t = if b.0 > a.0 { (x - a.0) / (b.0 - a.0) } else { 0.0 };
    Some(a.1 + (b.1 - a.1) * t)
}
