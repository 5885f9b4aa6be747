//! Lines of y versus x, one per series.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::draw::{chart_f64, draw_series, finite_points, frame, no_data, DrawResult, LegendEntry, Swatch};
use super::style::{self, colour};
use super::{Lines, Plot};

impl Plot for Lines<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let pts: Vec<Vec<(f64, f64)>> = self.series.iter().map(|s| finite_points(&s.points)).collect();
        let legend: Vec<LegendEntry> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| LegendEntry {
                label: s.name.clone(),
                colour: colour(i),
                swatch: Swatch::Line(Some(style::shape(i))),
            })
            .collect();
        let area = frame(root, self.title, None, &legend)?;
        let xb = style::finite_bounds(pts.iter().flatten().map(|p| p.0));
        let yb = style::finite_bounds(pts.iter().flatten().map(|p| p.1));
        let x = xb.map_or((0.0, 1.0), |(lo, hi)| style::padded(lo, hi, 0.04));
        let y = yb.map_or((0.0, 1.0), |(lo, hi)| style::padded(lo, hi, 0.08));
        // A zero-based axis: the bars of a share are not exaggerated by a cropped scale.
        let y = if self.y_from_zero { (y.0.min(0.0), y.1.max(0.0)) } else { y };
        let mut chart = chart_f64(&area, x, y, self.x_label, self.y_label)?;
        if yb.is_none() {
            no_data(root, &chart)?;
        }
        draw_series(root, &mut chart, &pts, true)
    }
}
