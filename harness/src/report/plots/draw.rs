//! What the plot kinds share when they draw: writing a plot on both backends ([`render`]), text fitting,
//! point and event markers, the frame with title and legend, the chart with its mesh, and label geometry.

use std::error::Error;
use std::panic::AssertUnwindSafe;
use std::path::Path;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::{CoordTranslate, Shift};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{self, colour, Shape, FAMILY};
use super::{Plot, PlotError, PlotFiles, PLOT_SIZE};

pub(super) type DrawResult<T = ()> = Result<T, Box<dyn Error>>;

/// Draws `fig` as SVG and PNG into `<dir>/<name>.{svg,png}`.
pub(super) fn render(dir: &Path, name: &str, fig: &impl Plot) -> Result<PlotFiles, PlotError> {
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

pub(super) fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&style::TEXT)
}

pub(super) fn anchored(size: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    font(size).pos(Pos::new(h, v))
}

pub(super) fn text_width<DB: DrawingBackend, CT: CoordTranslate>(
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
pub(super) fn fit<DB: DrawingBackend, CT: CoordTranslate>(
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
pub(super) fn marker<DB: DrawingBackend>(
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

/// How many looks [`event_marker`] has (then they repeat).
pub(super) const EVENT_LOOKS: usize = 4;

/// A compression-event marker whose tip is at `tip`, in `fill`: look 0 a filled downward triangle, 1 an
/// outlined one, 2 a filled diamond, 3 an outlined one (then they repeat), so events of different kinds
/// differ by shape while the colour says whose they are.
pub(super) fn event_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    tip: (i32, i32),
    fill: RGBColor,
    look: usize,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (x, y) = tip;
    let pts = match look % EVENT_LOOKS {
        0 | 1 => vec![(x - 6, y - 11), (x + 6, y - 11), (x, y - 1)],
        _ => vec![(x, y - 13), (x + 6, y - 7), (x, y - 1), (x - 6, y - 7)],
    };
    let closed = [pts.clone(), vec![pts[0]]].concat();
    if look % 2 == 0 {
        area.draw(&Polygon::new(pts, fill.filled()))?;
        area.draw(&PathElement::new(closed, style::TEXT.stroke_width(1)))?;
    } else {
        area.draw(&Polygon::new(pts, WHITE.filled()))?;
        area.draw(&PathElement::new(closed, fill.stroke_width(2)))?;
    }
    Ok(())
}

/// How a line is stroked: its width and its dash (dash length, gap) if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stroke {
    pub width: u32,
    pub dash: Option<(u32, u32)>,
}

#[derive(Clone, Debug)]
pub(super) enum Swatch {
    /// A line, with a point marker on it if any.
    Line(Option<Shape>),
    /// A line stroked so.
    Stroke(Stroke),
    /// A point marker alone, of the given radius.
    Point(Shape, i32),
    /// The timeline's event marker, of the given look.
    Event(usize),
}

#[derive(Clone, Debug)]
pub(super) struct LegendEntry {
    pub(super) label: String,
    pub(super) colour: RGBColor,
    pub(super) swatch: Swatch,
}

pub(super) const LEGEND_ROW: i32 = 26;
pub(super) const CHART_MARGIN_TOP: i32 = 12;
/// The widest label a legend on the right holds; a legend with a wider label goes below the chart.
pub(super) const LEGEND_RIGHT_MAX: i32 = 250;
/// Where a legend entry's text starts, right of its swatch.
pub(super) const SWATCH_W: i32 = 42;
/// The height of one line of legend text, and the space between entries below the chart.
pub(super) const LEGEND_LINE: i32 = 21;
pub(super) const LEGEND_GAP: i32 = 5;

/// Title sizes tried in turn until the title fits on one line; at the last it wraps to two.
pub(super) const TITLE_SIZES: [f64; 4] = [style::TITLE_SIZE, 28.0, 25.0, 23.0];

/// `text` broken at spaces into lines at most `max_w` wide (a word wider than that alone on its line,
/// shortened with an ellipsis).
pub(super) fn wrap<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    text: &str,
    style: &TextStyle,
    max_w: i32,
) -> DrawResult<Vec<String>>
where
    DB::ErrorType: 'static,
{
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if line.is_empty() || text_width(area, &candidate, style)? <= max_w {
            line = candidate;
        } else {
            lines.push(fit(area, &line, style, max_w)?);
            line = word.to_string();
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(fit(area, &line, style, max_w)?);
    }
    Ok(lines)
}

/// The title's lines and font size: one line at the largest of [`TITLE_SIZES`] at which it fits
/// `max_w`, else two lines at the smallest (the second shortened if the rest still does not fit).
pub(super) fn title_lines<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    title: &str,
    max_w: i32,
) -> DrawResult<(Vec<String>, f64)>
where
    DB::ErrorType: 'static,
{
    for size in TITLE_SIZES {
        if text_width(area, title, &font(size))? <= max_w {
            return Ok((vec![title.to_string()], size));
        }
    }
    let size = TITLE_SIZES[TITLE_SIZES.len() - 1];
    let style = font(size);
    let mut lines = wrap(area, title, &style, max_w)?;
    if lines.len() > 2 {
        let rest = lines[1..].join(" ");
        lines.truncate(1);
        lines.push(fit(area, &rest, &style, max_w)?);
    }
    Ok((lines, size))
}

/// The legend's layout below the chart: how many columns, and each entry's label lines.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct BelowLayout {
    cols: usize,
    lines: Vec<Vec<String>>,
}

impl BelowLayout {
    /// Each row's height (the most lines of its entries).
    fn row_heights(&self) -> Vec<i32> {
        self.lines
            .chunks(self.cols)
            .map(|row| row.iter().map(Vec::len).max().unwrap_or(1) as i32 * LEGEND_LINE)
            .collect()
    }

    fn height(&self) -> i32 {
        let rows = self.row_heights();
        rows.iter().sum::<i32>() + LEGEND_GAP * rows.len().saturating_sub(1) as i32 + 2 * LEGEND_GAP
    }
}

/// The lowest layout of the labels in 1 to 3 columns `width` wide in all, a wrapped line counting
/// [`LEGEND_GAP`] + 3 px more than its height (ties: fewer wrapped lines, then more columns).
pub(super) fn below_layout<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    labels: &[String],
    style: &TextStyle,
    width: i32,
) -> DrawResult<BelowLayout>
where
    DB::ErrorType: 'static,
{
    let mut best: Option<(i32, usize, BelowLayout)> = None;
    for cols in (1..=3usize.min(labels.len().max(1))).rev() {
        let col_w = width / cols as i32 - SWATCH_W - 12;
        let mut lines = Vec::with_capacity(labels.len());
        for l in labels {
            lines.push(wrap(area, l, style, col_w)?);
        }
        let wrapped = lines.iter().map(Vec::len).sum::<usize>() - lines.len();
        let layout = BelowLayout { cols, lines };
        // A wrapped label reads worse than a row more: it counts a little more than a row's gap.
        let key = (layout.height() + 8 * wrapped as i32, wrapped);
        if best.as_ref().is_none_or(|b| key < (b.0, b.1)) {
            best = Some((key.0, key.1, layout));
        }
    }
    Ok(best.map(|b| b.2).unwrap_or(BelowLayout { cols: 1, lines: Vec::new() }))
}

/// Draws an entry's swatch with its vertical centre at `y`, from `x`.
pub(super) fn swatch<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    entry: &LegendEntry,
    x: i32,
    y: i32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (x0, x1) = (x + 6, x + 34);
    match entry.swatch {
        Swatch::Line(shape) => {
            panel.draw(&PathElement::new(vec![(x0, y), (x1, y)], entry.colour.stroke_width(3)))?;
            if let Some(shape) = shape {
                marker(panel, ((x0 + x1) / 2, y), shape, 4, entry.colour)?;
            }
        }
        Swatch::Stroke(s) => {
            let style = entry.colour.stroke_width(s.width.max(2) + 1);
            match s.dash {
                None => panel.draw(&PathElement::new(vec![(x0, y), (x1, y)], style))?,
                Some((len, gap)) => {
                    let line = vec![(x0, y), (x1 + 1, y)];
                    panel.draw(&DashedPathElement::new(line, len.min(9), gap.min(5), style))?
                }
            }
        }
        Swatch::Point(shape, r) => marker(panel, ((x0 + x1) / 2, y), shape, r, entry.colour)?,
        Swatch::Event(look) => event_marker(panel, ((x0 + x1) / 2, y + 7), entry.colour, look)?,
    }
    Ok(())
}

/// White background, title (and subtitle), and the legend when there are entries: on the right when
/// every label fits [`LEGEND_RIGHT_MAX`], else below the chart in columns with wrapped labels (nothing
/// shortened). Returns the area left for the chart.
pub(super) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: Option<&str>,
    legend: &[LegendEntry],
) -> DrawResult<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (w, h) = root.dim_in_pixel();
    let mut area = root.clone();
    if !title.trim().is_empty() {
        let (lines, size) = title_lines(root, title, w as i32 - 40)?;
        for line in lines {
            area = area.titled(&line, font(size))?;
        }
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
    let mut widest = 0;
    for entry in legend {
        widest = widest.max(text_width(root, &entry.label, &text_style)?);
    }
    if widest > LEGEND_RIGHT_MAX {
        return legend_below(root, &area, legend, &text_style, h as i32);
    }
    let panel_w = (widest + 68).max(120);
    let (chart, panel) = area.split_horizontally(w as i32 - panel_w);
    let (_, panel_h) = panel.dim_in_pixel();
    let fits = ((panel_h as i32 - CHART_MARGIN_TOP - 10) / LEGEND_ROW).max(1) as usize;
    let shown = if legend.len() > fits { fits - 1 } else { legend.len() };
    for (i, entry) in legend.iter().take(shown).enumerate() {
        let y = CHART_MARGIN_TOP + 10 + LEGEND_ROW * i as i32;
        swatch(&panel, entry, 0, y)?;
        panel.draw(&Text::new(entry.label.clone(), (SWATCH_W, y), text_style.clone()))?;
    }
    if shown < legend.len() {
        let y = CHART_MARGIN_TOP + 10 + LEGEND_ROW * shown as i32;
        let more = format!("+{} more", legend.len() - shown);
        panel.draw(&Text::new(more, (42, y), text_style.color(&style::MUTED)))?;
    }
    Ok(chart)
}

/// The legend in columns below the chart (at most a third of the plot's height `h`; the entries that do
/// not fit are counted in a last "+N more" row). Returns the area left for the chart.
pub(super) fn legend_below<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    legend: &[LegendEntry],
    text_style: &TextStyle,
    h: i32,
) -> DrawResult<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    let (aw, ah) = area.dim_in_pixel();
    let (left, width) = (16, aw as i32 - 32);
    let labels: Vec<String> = legend.iter().map(|e| e.label.clone()).collect();
    let full = below_layout(root, &labels, text_style, width)?;
    let mut shown = legend.len();
    let layout = loop {
        let mut layout = full.clone();
        layout.lines.truncate(shown);
        if shown < legend.len() {
            layout.lines.push(vec![format!("+{} more", legend.len() - shown)]);
        }
        if shown <= 1 || layout.height() <= h / 3 {
            break layout;
        }
        shown -= 1;
    };
    let (chart, panel) = area.split_vertically(ah as i32 - layout.height());
    let col_w = width / layout.cols as i32;
    let mut y = LEGEND_GAP;
    for (r, row_h) in layout.row_heights().into_iter().enumerate() {
        for c in 0..layout.cols {
            let k = r * layout.cols + c;
            let Some(lines) = layout.lines.get(k) else { continue };
            let x = left + col_w * c as i32;
            let mid = y + LEGEND_LINE / 2;
            match legend.get(k).filter(|_| k < shown) {
                Some(entry) => swatch(&panel, entry, x, mid)?,
                None => {
                    let more = text_style.color(&style::MUTED);
                    panel.draw(&Text::new(lines[0].clone(), (x + SWATCH_W, mid), more))?;
                    continue;
                }
            }
            for (i, line) in lines.iter().enumerate() {
                let at = (x + SWATCH_W, mid + LEGEND_LINE * i as i32);
                panel.draw(&Text::new(line.clone(), at, text_style.clone()))?;
            }
        }
        y += row_h + LEGEND_GAP;
    }
    Ok(chart)
}

pub(super) type Chart<'a, DB, Y> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>;

/// A chart with f64 axes, grid, ticks and axis descriptions.
pub(super) fn chart_f64<'a, DB: DrawingBackend>(
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

pub(super) fn builder<'a, 'b, DB: DrawingBackend>(area: &'a DrawingArea<DB, Shift>) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.margin_top(CHART_MARGIN_TOP)
        .margin_right(24)
        .margin_left(12)
        .margin_bottom(8)
        .x_label_area_size(58)
        .y_label_area_size(88);
    b
}

pub(super) fn mesh<DB: DrawingBackend, Y: Ranged + ValueFormatter<Y::ValueType>>(
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
pub(super) fn plot_rect<DB: DrawingBackend, Y: Ranged>(chart: &Chart<'_, DB, Y>) -> ((i32, i32), (i32, i32)) {
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    ((xr.start, yr.start), (xr.end, yr.end))
}

pub(super) fn no_data<DB: DrawingBackend, Y: Ranged>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart<'_, DB, Y>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let ((x0, y0), (x1, y1)) = plot_rect(chart);
    let style = anchored(22.0, HPos::Center, VPos::Center).color(&style::MUTED);
    root.draw(&Text::new("no data", ((x0 + x1) / 2, (y0 + y1) / 2), style))?;
    Ok(())
}

pub(super) fn finite_points(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect()
}

pub(super) type Rect = ((i32, i32), (i32, i32));

pub(super) fn overlaps(a: &Rect, b: &Rect) -> bool {
    a.0 .0 < b.1 .0 && b.0 .0 < a.1 .0 && a.0 .1 < b.1 .1 && b.0 .1 < a.1 .1
}

pub(super) fn contains(r: &Rect, p: (i32, i32)) -> bool {
    p.0 >= r.0 .0 && p.0 <= r.1 .0 && p.1 >= r.0 .1 && p.1 <= r.1 .1
}

pub(super) fn inside(a: &Rect, outer: &Rect) -> bool {
    a.0 .0 >= outer.0 .0 && a.0 .1 >= outer.0 .1 && a.1 .0 <= outer.1 .0 && a.1 .1 <= outer.1 .1
}

/// Draws series as lines (2 px) with optional point markers, and a dot for a single-point series.
pub(super) fn draw_series<DB: DrawingBackend>(
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
