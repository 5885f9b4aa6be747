//! Cost versus quality, one numbered point per configuration, the Pareto front drawn and labelled.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::draw::{
    chart_f64, contains, fit, font, frame, inside, marker, no_data, overlaps, plot_rect, DrawResult, LegendEntry, Rect,
    Swatch,
};
use super::pareto_front;
use super::style::{self, Shape};
use super::{Pareto, Plot};

const FRONT: RGBColor = RGBColor(214, 39, 40);
const CLOUD: RGBColor = RGBColor(31, 119, 180);

impl Pareto<'_> {
    /// The label of each place with finite points: (the first point there, the labels of every point with
    /// exactly its coordinates, joined by ", "), in the order of those first points.
    pub fn labels(&self) -> Vec<(usize, String)> {
        let points = self.points;
        let finite = |p: &(String, f64, f64)| p.1.is_finite() && p.2.is_finite();
        let mut out: Vec<(usize, String)> = Vec::new();
        for (i, p) in points.iter().enumerate().filter(|(_, p)| finite(p)) {
            match out.iter_mut().find(|(j, _)| points[*j].1 == p.1 && points[*j].2 == p.2) {
                Some((_, label)) if !p.0.is_empty() => {
                    if !label.is_empty() {
                        label.push_str(", ");
                    }
                    label.push_str(&p.0);
                }
                Some(_) => {}
                None => out.push((i, p.0.clone())),
            }
        }
        out
    }
}

impl Plot for Pareto<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let pts: Vec<(f64, f64)> = self.points.iter().map(|p| (p.1, p.2)).collect();
        let front = pareto_front(&pts);
        let legend = [
            LegendEntry { label: "config".into(), colour: CLOUD, swatch: Swatch::Point(Shape::Circle, 5) },
            LegendEntry { label: "Pareto front".into(), colour: FRONT, swatch: Swatch::Line(Some(Shape::Diamond)) },
        ];
        let area = frame(root, self.title, None, &legend)?;
        let finite: Vec<usize> = (0..pts.len()).filter(|&i| pts[i].0.is_finite() && pts[i].1.is_finite()).collect();
        let xb = style::finite_bounds(finite.iter().map(|&i| pts[i].0));
        let yb = style::finite_bounds(finite.iter().map(|&i| pts[i].1));
        let x = xb.map_or((0.0, 1.0), |(lo, hi)| style::padded(lo, hi, 0.1));
        let y = yb.map_or((0.0, 1.0), |(lo, hi)| style::padded(lo, hi, 0.12));
        let mut chart = chart_f64(&area, x, y, self.x_label, self.y_label)?;
        if finite.is_empty() {
            return no_data(root, &chart);
        }
        if front.len() > 1 {
            chart.draw_series(LineSeries::new(front.iter().map(|&i| pts[i]), FRONT.stroke_width(2)))?;
        }
        let px: Vec<(i32, i32)> = finite.iter().map(|&i| chart.backend_coord(&pts[i])).collect();
        let on_front: Vec<bool> = finite.iter().map(|i| front.contains(i)).collect();
        draw_points(root, &px, &on_front)?;
        let front_px: Vec<(i32, i32)> = front.iter().map(|&i| chart.backend_coord(&pts[i])).collect();
        // One label per place: the labels of points at the same coordinates joined.
        let merged = self.labels();
        let at = |k: usize| merged.iter().find(|m| m.0 == finite[k]).map(|m| m.1.as_str());
        let keep: Vec<usize> = (0..finite.len()).filter(|&k| at(k).is_some()).collect();
        let labels: Vec<&str> = keep.iter().filter_map(|&k| at(k)).collect();
        let px: Vec<(i32, i32)> = keep.iter().map(|&k| px[k]).collect();
        let on_front: Vec<bool> = keep.iter().map(|&k| on_front[k]).collect();
        draw_labels(root, plot_rect(&chart), &labels, &px, &on_front, &sampled(&front_px))
    }
}

/// The points at their pixels: the cloud first, then the front over it.
fn draw_points<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, px: &[(i32, i32)], on_front: &[bool]) -> DrawResult
where
    DB::ErrorType: 'static,
{
    for (&at, _) in px.iter().zip(on_front).filter(|(_, &f)| !f) {
        marker(root, at, Shape::Circle, 5, CLOUD)?;
    }
    for (&at, _) in px.iter().zip(on_front).filter(|(_, &f)| f) {
        marker(root, at, Shape::Diamond, 6, FRONT)?;
    }
    Ok(())
}

/// A polyline in pixels, sampled every few pixels (the front line, so labels keep off it too).
fn sampled(line: &[(i32, i32)]) -> Vec<(i32, i32)> {
    line.windows(2)
        .flat_map(|w| {
            let (a, b) = (w[0], w[1]);
            let n = ((b.0 - a.0).abs().max((b.1 - a.1).abs()) / 3).clamp(1, 2000);
            (0..=n).map(move |t| (a.0 + (b.0 - a.0) * t / n, a.1 + (b.1 - a.1) * t / n))
        })
        .collect()
}

/// A place for a label: anchor point, anchor position, and the box the text covers.
type LabelSpot = ((i32, i32), HPos, VPos, Rect);

/// The spots around the point `(x, y)` where a `w`×`h` label may go, in order of preference: right,
/// left, above, below, then the diagonals.
fn label_spots((x, y): (i32, i32), (w, h): (i32, i32)) -> [LabelSpot; 8] {
    [
        ((x + 9, y), HPos::Left, VPos::Center, ((x + 8, y - h / 2 - 1), (x + 10 + w, y + h / 2 + 1))),
        ((x - 9, y), HPos::Right, VPos::Center, ((x - 10 - w, y - h / 2 - 1), (x - 8, y + h / 2 + 1))),
        ((x, y - 9), HPos::Center, VPos::Bottom, ((x - w / 2 - 1, y - 10 - h), (x + w / 2 + 1, y - 8))),
        ((x, y + 9), HPos::Center, VPos::Top, ((x - w / 2 - 1, y + 8), (x + w / 2 + 1, y + 10 + h))),
        ((x + 7, y - 7), HPos::Left, VPos::Bottom, ((x + 6, y - 8 - h), (x + 8 + w, y - 6))),
        ((x + 7, y + 7), HPos::Left, VPos::Top, ((x + 6, y + 6), (x + 8 + w, y + 8 + h))),
        ((x - 7, y - 7), HPos::Right, VPos::Bottom, ((x - 8 - w, y - 8 - h), (x - 6, y - 6))),
        ((x - 7, y + 7), HPos::Right, VPos::Top, ((x - 8 - w, y + 6), (x - 6, y + 8 + h))),
    ]
}

/// Labels: front first, each at the first of a few spots around its point that stays inside the plot
/// (`bounds`) and clear of other labels, points and the front line (`line`); else at the least crowded
/// spot.
fn draw_labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    bounds: Rect,
    labels: &[&str],
    px: &[(i32, i32)],
    on_front: &[bool],
    line: &[(i32, i32)],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let point_boxes: Vec<Rect> = px.iter().map(|&(x, y)| ((x - 6, y - 6), (x + 6, y + 6))).collect();
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&k| !on_front[k]);
    let mut placed: Vec<Rect> = Vec::new();
    for k in order {
        let base = if on_front[k] { font(style::NOTE_SIZE) } else { font(style::NOTE_SIZE).color(&style::MUTED) };
        let text = fit(root, labels[k], &base, 170)?;
        if text.is_empty() {
            continue;
        }
        let (w, h) = root.estimate_text_size(&text, &base)?;
        let spots = label_spots(px[k], (w as i32, h as i32));
        let crowding = |r: &Rect| {
            let labels = placed.iter().filter(|p| overlaps(p, r)).count();
            let points = point_boxes.iter().enumerate().filter(|(j, p)| *j != k && overlaps(p, r)).count();
            let on_line = line.iter().filter(|p| contains(r, **p)).count().min(3);
            labels * 3 + points + on_line + if inside(r, &bounds) { 0 } else { 100 }
        };
        let best = spots.iter().min_by_key(|s| crowding(&s.3)).copied().unwrap_or(spots[0]);
        root.draw(&Text::new(text, best.0, base.pos(Pos::new(best.1, best.2))))?;
        placed.push(best.3);
    }
    Ok(())
}
