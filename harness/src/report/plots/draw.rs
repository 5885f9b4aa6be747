//! Drawing: one `Figure` per plot kind, drawn on both backends by `render`.

use std::error::Error;
use std::panic::AssertUnwindSafe;
use std::path::Path;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::{RangedCoordf64, RangedCoordu32};
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{self, colour, Shape, FAMILY};
use super::{pareto_front, Marker, PlotError, PlotFiles, Series, PLOT_SIZE};

pub type DrawResult<T = ()> = Result<T, Box<dyn Error>>;

/// A plot that can be drawn on any backend.
pub trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static;
}

/// Draws `fig` as SVG and PNG into `<dir>/<name>.{svg,png}`.
pub fn render(dir: &Path, name: &str, fig: &impl Figure) -> Result<PlotFiles, PlotError> {
    let err = |message: String| PlotError { name: name.into(), message };
    style::ensure_font().map_err(|e| err(e.to_string()))?;
    std::fs::create_dir_all(dir).map_err(|e| err(format!("creating {}: {e}", dir.display())))?;
    let png = dir.join(format!("{name}.png"));
    let svg = dir.join(format!("{name}.svg"));
    let drawn = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<String, PlotError> {
        let mut svg_text = String::new();
        {
            let root = SVGBackend::with_string(&mut svg_text, PLOT_SIZE).into_drawing_area();
            fig.draw(&root).map_err(|e| err(format!("drawing the SVG: {e}")))?;
            root.present().map_err(|e| err(format!("writing the SVG: {e}")))?;
        }
        {
            let root = BitMapBackend::new(&png, PLOT_SIZE).into_drawing_area();
            fig.draw(&root).map_err(|e| err(format!("drawing the PNG: {e}")))?;
            root.present().map_err(|e| err(format!("writing {}: {e}", png.display())))?;
        }
        Ok(svg_text)
    }));
    let svg_text = match drawn {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => return Err(e),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            return Err(err(format!("plotting panicked: {what}")));
        }
    };
    std::fs::write(&svg, svg_text).map_err(|e| err(format!("writing {}: {e}", svg.display())))?;
    Ok(PlotFiles { png, svg })
}

fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&style::TEXT)
}

fn anchored(size: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    font(size).pos(Pos::new(h, v))
}

fn text_width<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    text: &str,
    style: &TextStyle,
) -> DrawResult<i32>
where
    DB::ErrorType: 'static,
{
    Ok(area.estimate_text_size(text, style)?.0 as i32)
}

/// `text`, shortened with an ellipsis until it is at most `max_w` pixels wide.
fn fit<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    text: &str,
    style: &TextStyle,
    max_w: i32,
) -> DrawResult<String>
where
    DB::ErrorType: 'static,
{
    if text_width(area, text, style)? <= max_w {
        return Ok(text.to_string());
    }
    let chars: Vec<char> = text.chars().collect();
    let shortened = |keep: usize| chars[..keep].iter().collect::<String>().trim_end().to_string() + "…";
    // The longest prefix that fits (width grows with the prefix), by bisection.
    let (mut lo, mut hi) = (0, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if text_width(area, &shortened(mid), style)? <= max_w {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(shortened(lo))
}

/// Draws a point marker centred on the pixel `at` (in `area`'s coordinates).
fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    at: (i32, i32),
    shape: Shape,
    r: i32,
    fill: RGBColor,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (x, y) = at;
    let outline = WHITE.stroke_width(1);
    match shape {
        Shape::Circle => {
            area.draw(&Circle::new(at, r, fill.filled()))?;
            area.draw(&Circle::new(at, r, outline))?;
        }
        Shape::Square => {
            let r = (r as f64 * 0.9).round() as i32;
            area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], fill.filled()))?;
            area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], outline))?;
        }
        Shape::Diamond => {
            let r = r + 1;
            let pts = vec![(x, y - r), (x + r, y), (x, y + r), (x - r, y)];
            area.draw(&Polygon::new(pts.clone(), fill.filled()))?;
            area.draw(&PathElement::new([pts.clone(), vec![pts[0]]].concat(), outline))?;
        }
        Shape::Triangle => {
            let r = r + 1;
            let pts = vec![(x, y - r), (x + r, y + r * 3 / 4), (x - r, y + r * 3 / 4)];
            area.draw(&Polygon::new(pts.clone(), fill.filled()))?;
            area.draw(&PathElement::new([pts.clone(), vec![pts[0]]].concat(), outline))?;
        }
    }
    Ok(())
}

/// A downward triangle whose tip is at `tip`.
fn event_marker<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, tip: (i32, i32), fill: RGBColor) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (x, y) = tip;
    let pts = vec![(x - 6, y - 11), (x + 6, y - 11), (x, y - 1)];
    area.draw(&Polygon::new(pts.clone(), fill.filled()))?;
    area.draw(&PathElement::new([pts.clone(), vec![pts[0]]].concat(), style::TEXT.stroke_width(1)))?;
    Ok(())
}

#[derive(Clone, Debug)]
enum Swatch {
    /// A line, with a point marker on it if any.
    Line(Option<Shape>),
    /// A point marker alone, of the given radius.
    Point(Shape, i32),
    /// The timeline's event triangle.
    Event,
}

#[derive(Clone, Debug)]
struct LegendEntry {
    label: String,
    colour: RGBColor,
    swatch: Swatch,
}

const LEGEND_ROW: i32 = 26;
const CHART_MARGIN_TOP: i32 = 12;

/// White background, title (and subtitle), and a legend panel on the right when there are entries.
/// Returns the area left for the chart.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: Option<&str>,
    legend: &[LegendEntry],
) -> DrawResult<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (w, _) = root.dim_in_pixel();
    let mut area = root.clone();
    if !title.trim().is_empty() {
        let style = font(style::TITLE_SIZE);
        let text = fit(root, title, &style, w as i32 - 40)?;
        area = area.titled(&text, style)?;
    }
    if let Some(sub) = subtitle.filter(|s| !s.trim().is_empty()) {
        let style = font(style::SUBTITLE_SIZE).color(&style::MUTED);
        let text = fit(root, sub, &style, w as i32 - 40)?;
        area = area.titled(&text, style)?;
    }
    if legend.is_empty() {
        return Ok(area);
    }
    let text_style = anchored(style::LEGEND_SIZE, HPos::Left, VPos::Center);
    let max_text = 240;
    let mut labels = Vec::with_capacity(legend.len());
    let mut widest = 0;
    for entry in legend {
        let label = fit(root, &entry.label, &text_style, max_text)?;
        widest = widest.max(text_width(root, &label, &text_style)?);
        labels.push(label);
    }
    let panel_w = (widest + 68).max(120);
    let (chart, panel) = area.split_horizontally(w as i32 - panel_w);
    let (_, panel_h) = panel.dim_in_pixel();
    let fits = ((panel_h as i32 - CHART_MARGIN_TOP - 10) / LEGEND_ROW).max(1) as usize;
    let shown = if legend.len() > fits { fits - 1 } else { legend.len() };
    for (i, (entry, label)) in legend.iter().zip(&labels).take(shown).enumerate() {
        let y = CHART_MARGIN_TOP + 10 + LEGEND_ROW * i as i32;
        let (x0, x1) = (6, 34);
        match entry.swatch {
            Swatch::Line(shape) => {
                panel.draw(&PathElement::new(vec![(x0, y), (x1, y)], entry.colour.stroke_width(3)))?;
                if let Some(shape) = shape {
                    marker(&panel, ((x0 + x1) / 2, y), shape, 4, entry.colour)?;
                }
            }
            Swatch::Point(shape, r) => marker(&panel, ((x0 + x1) / 2, y), shape, r, entry.colour)?,
            Swatch::Event => event_marker(&panel, ((x0 + x1) / 2, y + 6), entry.colour)?,
        }
        panel.draw(&Text::new(label.clone(), (x1 + 8, y), text_style.clone()))?;
    }
    if shown < legend.len() {
        let y = CHART_MARGIN_TOP + 10 + LEGEND_ROW * shown as i32;
        let more = format!("+{} more", legend.len() - shown);
        panel.draw(&Text::new(more, (42, y), text_style.color(&style::MUTED)))?;
    }
    Ok(chart)
}

type Chart<'a, DB, Y> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>;

/// A chart with f64 axes, grid, ticks and axis descriptions.
fn chart_f64<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x: (f64, f64),
    y: (f64, f64),
    x_desc: &str,
    y_desc: &str,
) -> DrawResult<Chart<'a, DB, RangedCoordf64>>
where
    DB::ErrorType: 'static,
{
    let mut chart = builder(area).build_cartesian_2d(x.0..x.1, y.0..y.1)?;
    let (xs, ys) = (style::step_for(x.0, x.1, 10), style::step_for(y.0, y.1, 8));
    let xf = move |v: &f64| style::tick(*v, xs);
    let yf = move |v: &f64| style::tick(*v, ys);
    mesh(&mut chart, x_desc, y_desc, &xf, &yf)?;
    Ok(chart)
}

fn builder<'a, 'b, DB: DrawingBackend>(area: &'a DrawingArea<DB, Shift>) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.margin_top(CHART_MARGIN_TOP)
        .margin_right(24)
        .margin_left(12)
        .margin_bottom(8)
        .x_label_area_size(58)
        .y_label_area_size(88);
    b
}

fn mesh<DB: DrawingBackend, Y: Ranged + ValueFormatter<Y::ValueType>>(
    chart: &mut Chart<'_, DB, Y>,
    x_desc: &str,
    y_desc: &str,
    xf: &dyn Fn(&f64) -> String,
    yf: &dyn Fn(&Y::ValueType) -> String,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = chart.plotting_area().dim_in_pixel();
    let desc = font(style::DESC_SIZE);
    let x_desc = fit(chart.plotting_area(), x_desc, &desc, w as i32)?;
    let y_desc = fit(chart.plotting_area(), y_desc, &desc, h as i32)?;
    chart
        .configure_mesh()
        .x_labels(10)
        .y_labels(8)
        .x_label_formatter(xf)
        .y_label_formatter(yf)
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(desc.clone())
        .label_style(font(style::TICK_SIZE))
        .bold_line_style(style::GRID)
        .light_line_style(style::GRID_LIGHT)
        .max_light_lines(2)
        .axis_style(style::MUTED)
        .draw()?;
    Ok(())
}

/// The chart's plotting rectangle in backend pixels.
fn plot_rect<DB: DrawingBackend, Y: Ranged>(chart: &Chart<'_, DB, Y>) -> ((i32, i32), (i32, i32)) {
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    ((xr.start, yr.start), (xr.end, yr.end))
}

fn no_data<DB: DrawingBackend, Y: Ranged>(root: &DrawingArea<DB, Shift>, chart: &Chart<'_, DB, Y>) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let ((x0, y0), (x1, y1)) = plot_rect(chart);
    let style = anchored(22.0, HPos::Center, VPos::Center).color(&style::MUTED);
    root.draw(&Text::new("no data", ((x0 + x1) / 2, (y0 + y1) / 2), style))?;
    Ok(())
}

fn finite_points(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect()
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

type Rect = ((i32, i32), (i32, i32));

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a.0 .0 < b.1 .0 && b.0 .0 < a.1 .0 && a.0 .1 < b.1 .1 && b.0 .1 < a.1 .1
}

fn contains(r: &Rect, p: (i32, i32)) -> bool {
    p.0 >= r.0 .0 && p.0 <= r.1 .0 && p.1 >= r.0 .1 && p.1 <= r.1 .1
}

fn inside(a: &Rect, outer: &Rect) -> bool {
    a.0 .0 >= outer.0 .0 && a.0 .1 >= outer.0 .1 && a.1 .0 <= outer.1 .0 && a.1 .1 <= outer.1 .1
}

/// Draws series as lines (2 px) with optional point markers, and a dot for a single-point series.
fn draw_series<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut Chart<'_, DB, RangedCoordf64>,
    series: &[Vec<(f64, f64)>],
    with_markers: bool,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    for (i, pts) in series.iter().enumerate() {
        if pts.len() > 1 {
            chart.draw_series(LineSeries::new(pts.iter().copied(), colour(i).stroke_width(2)))?;
        }
    }
    for (i, pts) in series.iter().enumerate() {
        let single = pts.iter().all(|p| *p == pts[0]);
        if with_markers || single {
            let r = if pts.len() > 80 { 2 } else { 4 };
            for p in pts {
                marker(root, chart.backend_coord(p), style::shape(i), r, colour(i))?;
            }
        }
    }
    Ok(())
}

pub struct Timeline<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
    pub markers: &'a [Marker],
}

impl Figure for Timeline<'_> {
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

pub struct Lines<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
    /// The y axis includes 0.
    pub y_from_zero: bool,
}

impl Figure for Lines<'_> {
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

pub struct Pareto<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub points: &'a [(String, f64, f64)],
}

const FRONT: RGBColor = RGBColor(214, 39, 40);
const CLOUD: RGBColor = RGBColor(31, 119, 180);

impl Figure for Pareto<'_> {
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
        let on_front = |i: usize| front.contains(&i);
        let px: Vec<(i32, i32)> = finite.iter().map(|&i| chart.backend_coord(&pts[i])).collect();
        for (k, &i) in finite.iter().enumerate() {
            if !on_front(i) {
                marker(root, px[k], Shape::Circle, 5, CLOUD)?;
            }
        }
        for (k, &i) in finite.iter().enumerate() {
            if on_front(i) {
                marker(root, px[k], Shape::Diamond, 6, FRONT)?;
            }
        }

        // Labels: front first, each at the first of a few spots around its point that stays inside
        // the plot and clear of other labels and points; else at the least crowded spot.
        let bounds = plot_rect(&chart);
        // The front line, sampled every few pixels, so labels keep off it too.
        let front_px: Vec<(i32, i32)> = front.iter().map(|&i| chart.backend_coord(&pts[i])).collect();
        let front_samples: Vec<(i32, i32)> = front_px
            .windows(2)
            .flat_map(|w| {
                let (a, b) = (w[0], w[1]);
                let n = ((b.0 - a.0).abs().max((b.1 - a.1).abs()) / 3).clamp(1, 2000);
                (0..=n).map(move |t| (a.0 + (b.0 - a.0) * t / n, a.1 + (b.1 - a.1) * t / n))
            })
            .collect();
        let point_boxes: Vec<Rect> = px.iter().map(|&(x, y)| ((x - 6, y - 6), (x + 6, y + 6))).collect();
        let mut order: Vec<usize> = (0..finite.len()).collect();
        order.sort_by_key(|&k| !on_front(finite[k]));
        let mut placed: Vec<Rect> = Vec::new();
        for k in order {
            let i = finite[k];
            let base = if on_front(i) { font(style::NOTE_SIZE) } else { font(style::NOTE_SIZE).color(&style::MUTED) };
            let text = fit(root, &self.points[i].0, &base, 170)?;
            if text.is_empty() {
                continue;
            }
            let (w, h) = root.estimate_text_size(&text, &base)?;
            let (w, h) = (w as i32, h as i32);
            let (x, y) = px[k];
            // (anchor point, anchor position, box)
            let spots = [
                ((x + 9, y), HPos::Left, VPos::Center, ((x + 8, y - h / 2 - 1), (x + 10 + w, y + h / 2 + 1))),
                ((x - 9, y), HPos::Right, VPos::Center, ((x - 10 - w, y - h / 2 - 1), (x - 8, y + h / 2 + 1))),
                ((x, y - 9), HPos::Center, VPos::Bottom, ((x - w / 2 - 1, y - 10 - h), (x + w / 2 + 1, y - 8))),
                ((x, y + 9), HPos::Center, VPos::Top, ((x - w / 2 - 1, y + 8), (x + w / 2 + 1, y + 10 + h))),
                ((x + 7, y - 7), HPos::Left, VPos::Bottom, ((x + 6, y - 8 - h), (x + 8 + w, y - 6))),
                ((x + 7, y + 7), HPos::Left, VPos::Top, ((x + 6, y + 6), (x + 8 + w, y + 8 + h))),
                ((x - 7, y - 7), HPos::Right, VPos::Bottom, ((x - 8 - w, y - 8 - h), (x - 6, y - 6))),
                ((x - 7, y + 7), HPos::Right, VPos::Top, ((x - 8 - w, y + 6), (x - 6, y + 8 + h))),
            ];
            let crowding = |r: &Rect| {
                let labels = placed.iter().filter(|p| overlaps(p, r)).count();
                let points = point_boxes.iter().enumerate().filter(|(j, p)| *j != k && overlaps(p, r)).count();
                let line = front_samples.iter().filter(|p| contains(r, **p)).count().min(3);
                labels * 3 + points + line + if inside(r, &bounds) { 0 } else { 100 }
            };
            let best = spots.iter().min_by_key(|s| crowding(&s.3)).copied().unwrap_or(spots[0]);
            root.draw(&Text::new(text, best.0, base.pos(Pos::new(best.1, best.2))))?;
            placed.push(best.3);
        }
        Ok(())
    }
}

pub struct Histogram<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub values: &'a [f64],
    pub bins: usize,
    /// Fixed bin range (values outside go to the end bins); `None`: the data's range.
    pub range: Option<(f64, f64)>,
}

/// More bins than pixels across would draw nothing more.
const MAX_BINS: usize = 1_000;

impl Figure for Histogram<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let mut values: Vec<f64> = self.values.iter().copied().filter(|v| v.is_finite()).collect();
        values.sort_by(f64::total_cmp);
        let bins = self.bins.clamp(1, MAX_BINS);
        let bounds = style::finite_bounds(values.iter().copied());
        let subtitle = bounds.map(|(lo, hi)| {
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
        });
        let area = frame(root, self.title, subtitle.as_deref(), &[])?;
        let (lo, hi) = match (self.range, bounds) {
            (Some((lo, hi)), _) if hi > lo => (lo, hi),
            (_, Some((lo, hi))) if hi > lo => (lo, hi),
            (_, Some((lo, hi))) => style::padded(lo, hi, 0.0),
            (_, None) => (0.0, 1.0),
        };
        let width = (hi - lo) / bins as f64;
        let mut counts = vec![0u32; bins];
        for v in &values {
            let k = if width > 0.0 { ((v - lo) / width).floor() } else { 0.0 };
            counts[(k.max(0.0) as usize).min(bins - 1)] += 1;
        }
        let top = counts.iter().copied().max().unwrap_or(0);
        let y_max = ((top as f64 * 1.12).ceil() as u32).max(top + 1);
        let x = style::padded(lo, hi, 0.03);
        let mut chart = builder(&area).build_cartesian_2d(x.0..x.1, 0u32..y_max)?;
        let xs = style::step_for(x.0, x.1, 10);
        let xf = move |v: &f64| style::tick(*v, xs);
        let yf = |v: &u32| style::tick(*v as f64, 1.0);
        mesh::<DB, RangedCoordu32>(&mut chart, self.x_label, "count", &xf, &yf)?;
        let ((px0, _), (px1, _)) = {
            let (xr, yr) = chart.plotting_area().get_pixel_range();
            ((xr.start, yr.start), (xr.end, yr.end))
        };
        if values.is_empty() {
            let ((x0, y0), (x1, y1)) = {
                let (xr, yr) = chart.plotting_area().get_pixel_range();
                ((xr.start, yr.start), (xr.end, yr.end))
            };
            let style = anchored(22.0, HPos::Center, VPos::Center).color(&style::MUTED);
            root.draw(&Text::new("no data", ((x0 + x1) / 2, (y0 + y1) / 2), style))?;
            return Ok(());
        }
        if lo < 0.0 && hi > 0.0 {
            let zero = vec![(0.0, 0u32), (0.0, y_max)];
            chart.draw_series(DashedLineSeries::new(zero, 6, 4, style::MUTED.stroke_width(1)))?;
        }
        let edge = |k: usize| lo + width * k as f64;
        let bar = colour(0);
        // Bars in pixels, at least one pixel wide so that narrow bins stay visible.
        let bar_px = ((px1 - px0) as f64 * width / (x.1 - x.0)) as i32;
        for (k, &c) in counts.iter().enumerate().filter(|(_, &c)| c > 0) {
            let (x0, y0) = chart.backend_coord(&(edge(k), c));
            let (x1, y1) = chart.backend_coord(&(edge(k + 1), 0));
            let x1 = x1.max(x0 + 1);
            root.draw(&Rectangle::new([(x0, y0), (x1, y1)], bar.filled()))?;
            if bar_px >= 6 {
                root.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(1)))?;
            }
        }
        let label = anchored(style::NOTE_SIZE, HPos::Center, VPos::Bottom);
        for (k, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let text = c.to_string();
            if text_width(root, &text, &label)? + 2 > bar_px {
                continue;
            }
            let (cx, cy) = chart.backend_coord(&((edge(k) + edge(k + 1)) / 2.0, c));
            root.draw(&Text::new(text, (cx, cy - 3), label.clone()))?;
        }
        Ok(())
    }
}

pub struct Heatmap<'a> {
    pub title: &'a str,
    pub x_labels: &'a [String],
    pub y_labels: &'a [String],
    pub values: &'a [Vec<Option<f64>>],
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub value_desc: &'a str,
}

impl Figure for Heatmap<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let area = frame(root, self.title, None, &[])?;
        let rows = self.values.len().max(self.y_labels.len());
        let cols = self.values.iter().map(Vec::len).max().unwrap_or(0).max(self.x_labels.len());
        let cell = |r: usize, c: usize| {
            self.values.get(r).and_then(|row| row.get(c)).copied().flatten().filter(|v| v.is_finite())
        };
        let bounds = style::finite_bounds(
            (0..rows).flat_map(|r| (0..cols).map(move |c| (r, c))).filter_map(|(r, c)| cell(r, c)),
        );

        let (w, h) = area.dim_in_pixel();
        let (w, h) = (w as i32, h as i32);
        let tick = font(style::TICK_SIZE);
        let desc = font(style::DESC_SIZE);
        // Row labels on the left, right-aligned; at most a third of the width.
        let mut row_labels = Vec::with_capacity(rows);
        let mut widest = 0;
        for r in 0..rows {
            let text = fit(&area, self.y_labels.get(r).map_or("", |s| s.as_str()), &tick, w / 3)?;
            widest = widest.max(text_width(&area, &text, &tick)?);
            row_labels.push(text);
        }
        let y_desc_w = if self.y_desc.trim().is_empty() { 0 } else { 34 };
        let left = 16 + y_desc_w + widest + 10;
        let bar_w = 22;
        let right = 110;
        let top = CHART_MARGIN_TOP + if self.value_desc.trim().is_empty() { 0 } else { 6 };
        let x_desc_h = if self.x_desc.trim().is_empty() { 0 } else { 32 };
        let bottom = 36 + x_desc_h;
        let grid = ((left, top), (w - right, h - bottom));
        let (gw, gh) = (grid.1 .0 - grid.0 .0, grid.1 .1 - grid.0 .1);

        if rows == 0 || cols == 0 {
            area.draw(&Rectangle::new([grid.0, grid.1], style::EMPTY_CELL.filled()))?;
            let style = anchored(22.0, HPos::Center, VPos::Center).color(&style::MUTED);
            area.draw(&Text::new("no data", ((grid.0 .0 + grid.1 .0) / 2, (grid.0 .1 + grid.1 .1) / 2), style))?;
            return Ok(());
        }
        let cw = gw as f64 / cols as f64;
        let ch = gh as f64 / rows as f64;
        let x_at = |c: usize| grid.0 .0 + (cw * c as f64).round() as i32;
        let y_at = |r: usize| grid.0 .1 + (ch * r as f64).round() as i32;
        let (vlo, vhi) = bounds.unwrap_or((0.0, 1.0));
        let t_of = |v: f64| if vhi > vlo { (v - vlo) / (vhi - vlo) } else { 0.5 };

        let cell_font = (ch * 0.35).min(cw / 4.0).clamp(8.0, 22.0);
        let cell_style = anchored(cell_font, HPos::Center, VPos::Center);
        for r in 0..rows {
            for c in 0..cols {
                let (x0, y0, x1, y1) = (x_at(c), y_at(r), x_at(c + 1), y_at(r + 1));
                let (fill, text) = match cell(r, c) {
                    Some(v) => (style::viridis(t_of(v)), style::value(v)),
                    None => (style::EMPTY_CELL, "n/a".to_string()),
                };
                area.draw(&Rectangle::new([(x0, y0), (x1, y1)], fill.filled()))?;
                area.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(2)))?;
                let colour = if cell(r, c).is_some() { style::text_on(fill) } else { style::MUTED };
                let (tw, th) = area.estimate_text_size(&text, &cell_style)?;
                if (tw as i32) < x1 - x0 - 4 && (th as i32) < y1 - y0 - 2 {
                    area.draw(&Text::new(text, ((x0 + x1) / 2, (y0 + y1) / 2), cell_style.color(&colour)))?;
                }
            }
        }
        // Row and column labels.
        let row_style = tick.pos(Pos::new(HPos::Right, VPos::Center));
        for (r, text) in row_labels.into_iter().enumerate() {
            area.draw(&Text::new(text, (grid.0 .0 - 8, (y_at(r) + y_at(r + 1)) / 2), row_style.clone()))?;
        }
        let col_style = tick.pos(Pos::new(HPos::Center, VPos::Top));
        for c in 0..cols {
            let max_w = (cw as i32 - 6).max(12);
            let text = fit(&area, self.x_labels.get(c).map_or("", |s| s.as_str()), &col_style, max_w)?;
            area.draw(&Text::new(text, ((x_at(c) + x_at(c + 1)) / 2, grid.1 .1 + 8), col_style.clone()))?;
        }
        if x_desc_h > 0 {
            let style = desc.pos(Pos::new(HPos::Center, VPos::Top));
            let text = fit(&area, self.x_desc, &style, gw)?;
            area.draw(&Text::new(text, ((grid.0 .0 + grid.1 .0) / 2, grid.1 .1 + 36), style))?;
        }
        if y_desc_w > 0 {
            let style = desc.pos(Pos::new(HPos::Center, VPos::Top)).transform(FontTransform::Rotate270);
            let text = fit(&area, self.y_desc, &desc, gh)?;
            area.draw(&Text::new(text, (14, (grid.0 .1 + grid.1 .1) / 2), style))?;
        }

        // Colour bar with min, middle and max.
        if bounds.is_some() {
            let bx0 = grid.1 .0 + 22;
            let (by0, by1) = (grid.0 .1 + if self.value_desc.trim().is_empty() { 8 } else { 36 }, grid.1 .1);
            let steps = 64;
            for k in 0..steps {
                let ya = by1 - ((by1 - by0) as f64 * k as f64 / steps as f64).round() as i32;
                let yb = by1 - ((by1 - by0) as f64 * (k + 1) as f64 / steps as f64).round() as i32;
                let fill = style::viridis((k as f64 + 0.5) / steps as f64);
                area.draw(&Rectangle::new([(bx0, yb), (bx0 + bar_w, ya)], fill.filled()))?;
            }
            area.draw(&Rectangle::new([(bx0, by0), (bx0 + bar_w, by1)], style::MUTED.stroke_width(1)))?;
            let label = font(style::NOTE_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
            let ticks: Vec<(f64, i32)> = if vhi > vlo {
                vec![(vhi, by0), ((vlo + vhi) / 2.0, (by0 + by1) / 2), (vlo, by1)]
            } else {
                vec![(vlo, (by0 + by1) / 2)]
            };
            for (v, ty) in ticks {
                area.draw(&PathElement::new(
                    vec![(bx0 + bar_w, ty), (bx0 + bar_w + 4, ty)],
                    style::MUTED.stroke_width(1),
                ))?;
                area.draw(&Text::new(style::value(v), (bx0 + bar_w + 7, ty), label.clone()))?;
            }
            if !self.value_desc.trim().is_empty() {
                let style = font(style::NOTE_SIZE).pos(Pos::new(HPos::Center, VPos::Bottom));
                let text = fit(&area, self.value_desc, &style, right - 6)?;
                area.draw(&Text::new(text, (bx0 + bar_w / 2 + 14, by0 - 14), style))?;
            }
        }
        Ok(())
    }
}
