//! A histogram in equal-width bins, with count labels where they fit.

use plotters::coord::types::RangedCoordu32;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::draw::{anchored, builder, frame, mesh, no_data, plot_rect, text_width, Chart, DrawResult};
use super::style::{self, colour};
use super::{Histogram, Plot};

/// More bins than pixels across would draw nothing more.
const MAX_BINS: usize = 1_000;

impl Plot for Histogram<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let mut values: Vec<f64> = self.values.iter().copied().filter(|v| v.is_finite()).collect();
        values.sort_by(f64::total_cmp);
        let bins = self.bins.clamp(1, MAX_BINS);
        let bounds = style::finite_bounds(values.iter().copied());
        let area = frame(root, self.title, summary(&values, bounds).as_deref(), &[])?;
        let (lo, hi) = match (self.range, bounds) {
            (Some((lo, hi)), _) if hi > lo => (lo, hi),
            (_, Some((lo, hi))) if hi > lo => (lo, hi),
            (_, Some((lo, hi))) => style::padded(lo, hi, 0.0),
            (_, None) => (0.0, 1.0),
        };
        let bins = Bins::of(&values, lo, hi, bins);
        let top = bins.counts.iter().copied().max().unwrap_or(0);
        let y_max = ((top as f64 * 1.12).ceil() as u32).max(top + 1);
        let x = style::padded(lo, hi, 0.03);
        let mut chart = builder(&area).build_cartesian_2d(x.0..x.1, 0u32..y_max)?;
        let xs = style::step_for(x.0, x.1, 10);
        let xf = move |v: &f64| style::tick(*v, xs);
        let yf = |v: &u32| style::tick(*v as f64, 1.0);
        mesh::<DB, RangedCoordu32>(&mut chart, self.x_label, "count", &xf, &yf)?;
        if values.is_empty() {
            return no_data(root, &chart);
        }
        if lo < 0.0 && hi > 0.0 {
            let zero = vec![(0.0, 0u32), (0.0, y_max)];
            chart.draw_series(DashedLineSeries::new(zero, 6, 4, style::MUTED.stroke_width(1)))?;
        }
        let ((px0, _), (px1, _)) = plot_rect(&chart);
        // Bars in pixels, at least one pixel wide so that narrow bins stay visible.
        let bar_px = ((px1 - px0) as f64 * bins.width / (x.1 - x.0)) as i32;
        draw_bars(root, &chart, &bins, bar_px)?;
        draw_counts(root, &chart, &bins, bar_px)
    }
}

/// The subtitle: n, mean, median, min and max of the values (finite and sorted); `None` without any.
fn summary(values: &[f64], bounds: Option<(f64, f64)>) -> Option<String> {
    bounds.map(|(lo, hi)| {
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
        format!(
            "n = {n}   mean {}   median {}   min {}   max {}",
            style::value(mean),
            style::value(median),
            style::value(lo),
            style::value(hi)
        )
    })
}

/// Equal-width bins from `lo`, with how many values each holds.
struct Bins {
    lo: f64,
    width: f64,
    counts: Vec<u32>,
}

impl Bins {
    /// `bins` bins over `[lo, hi]`; values outside go to the end bins.
    fn of(values: &[f64], lo: f64, hi: f64, bins: usize) -> Bins {
        let width = (hi - lo) / bins as f64;
        let mut counts = vec![0u32; bins];
        for v in values {
            let k = if width > 0.0 { ((v - lo) / width).floor() } else { 0.0 };
            counts[(k.max(0.0) as usize).min(bins - 1)] += 1;
        }
        Bins { lo, width, counts }
    }

    /// The left edge of bin `k` (the right edge of bin `k - 1`).
    fn edge(&self, k: usize) -> f64 {
        self.lo + self.width * k as f64
    }
}

/// A bar per non-empty bin, `bar_px` wide in pixels (white outlines only where bars are wide enough).
fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart<'_, DB, RangedCoordu32>,
    bins: &Bins,
    bar_px: i32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let bar = colour(0);
    for (k, &c) in bins.counts.iter().enumerate().filter(|(_, &c)| c > 0) {
        let (x0, y0) = chart.backend_coord(&(bins.edge(k), c));
        let (x1, y1) = chart.backend_coord(&(bins.edge(k + 1), 0));
        let x1 = x1.max(x0 + 1);
        root.draw(&Rectangle::new([(x0, y0), (x1, y1)], bar.filled()))?;
        if bar_px >= 6 {
            root.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(1)))?;
        }
    }
    Ok(())
}

/// Each non-empty bin's count above its bar, where the text fits the bar's width.
fn draw_counts<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart<'_, DB, RangedCoordu32>,
    bins: &Bins,
    bar_px: i32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let label = anchored(style::NOTE_SIZE, HPos::Center, VPos::Bottom);
    for (k, &c) in bins.counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let text = c.to_string();
        if text_width(root, &text, &label)? + 2 > bar_px {
            continue;
        }
        let (cx, cy) = chart.backend_coord(&((bins.edge(k) + bins.edge(k + 1)) / 2.0, c));
        root.draw(&Text::new(text, (cx, cy - 3), label.clone()))?;
    }
    Ok(())
}
