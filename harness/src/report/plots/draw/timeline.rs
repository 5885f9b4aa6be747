//! The timeline: request size per request, one line per strategy, with compression events marked.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{
    anchored, chart_f64, draw_series, event_marker, finite_points, fit, frame, inside, no_data, overlaps, plot_rect,
    DrawResult, Drawing, LegendEntry, Rect, Swatch,
};
use crate::report::plots::style::{self, colour};
use crate::report::plots::{Marker, Series};

pub struct Timeline<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
    pub markers: &'a [Marker],
}

impl Drawing for Timeline<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let pts: Vec<Vec<(f64, f64)>> = self.series.iter().map(|s| finite_points(&s.points)).collect();
        let markers: Vec<&Marker> = self.markers.iter().filter(|m| m.x.is_finite()).collect();
        let mut legend: Vec<LegendEntry> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| LegendEntry { label: s.name.clone(), colour: colour(i), swatch: Swatch::Line(None) })
            .collect();
        if !markers.is_empty() {
            legend.push(LegendEntry { label: "compression".into(), colour: style::MUTED, swatch: Swatch::Event });
        }
        let area = frame(root, self.title, None, &legend)?;
        let xb = style::finite_bounds(pts.iter().flatten().map(|p| p.0).chain(markers.iter().map(|m| m.x)));
        let yb = style::finite_bounds(pts.iter().flatten().map(|p| p.1));
        let x = xb.map_or((0.0, 1.0), |(lo, hi)| style::padded(lo, hi, 0.02));
        let y = match yb {
            None => (0.0, 1.0),
            Some((lo, hi)) => {
                let (lo, hi) = (lo.min(0.0), hi.max(0.0));
                if hi > lo {
                    (lo, hi + (hi - lo) * 0.12)
                } else {
                    (0.0, 1.0)
                }
            }
        };
        let mut chart = chart_f64(&area, x, y, self.x_label, self.y_label)?;
        if yb.is_none() {
            no_data(root, &chart)?;
        }
        draw_series(root, &mut chart, &pts, false)?;

        let bounds = plot_rect(&chart);
        let note = anchored(style::NOTE_SIZE, HPos::Center, VPos::Bottom);
        let mut placed: Vec<Rect> = Vec::new();
        let labelled = markers.len() <= 24;
        for m in &markers {
            let on_series = pts.get(m.series).and_then(|p| y_at(p, m.x));
            let Some(yv) = on_series else {
                let line = vec![(m.x, y.0), (m.x, y.1)];
                chart.draw_series(DashedLineSeries::new(line, 6, 4, style::MUTED.stroke_width(1)))?;
                continue;
            };
            let tip = chart.backend_coord(&(m.x, yv));
            let tip = (tip.0, tip.1 - 2);
            event_marker(root, tip, colour(m.series))?;
            if !labelled || m.label.trim().is_empty() {
                continue;
            }
            let text = fit(root, &m.label, &note, 140)?;
            let (w, h) = root.estimate_text_size(&text, &note)?;
            let (w, h) = (w as i32, h as i32);
            for lift in 0..4 {
                let bottom = tip.1 - 14 - lift * (h + 2);
                let rect = ((tip.0 - w / 2 - 1, bottom - h - 1), (tip.0 + w / 2 + 1, bottom + 1));
                if inside(&rect, &bounds) && !placed.iter().any(|r| overlaps(r, &rect)) {
                    root.draw(&Text::new(text.clone(), (tip.0, bottom), note.clone()))?;
                    placed.push(rect);
                    break;
                }
            }
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
