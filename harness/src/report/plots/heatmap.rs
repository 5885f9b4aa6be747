//! A heatmap of values by row and column, with a viridis colour bar.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::draw::{anchored, fit, font, frame, text_width, wrap, DrawResult, Rect, CHART_MARGIN_TOP};
use super::style;
use super::{Heatmap, Plot};

/// The colour bar's width, the space between the grid and the bar, and the colour bar's ticks.
const BAR_W: i32 = 22;
const BAR_GAP: i32 = 22;
const BAR_TICKS: usize = 5;
/// The height of one line of the colour bar's (rotated) description.
const DESC_LINE: i32 = 22;

/// The colour scale's range: `range` widened to the finite values, or the values' min and max without
/// one; `None` without any finite value.
fn colour_range(values: &[Vec<Option<f64>>], range: Option<(f64, f64)>) -> Option<(f64, f64)> {
    let (lo, hi) = style::finite_bounds(values.iter().flatten().flatten().copied())?;
    Some(match range.filter(|r| r.0.is_finite() && r.1.is_finite() && r.0 <= r.1) {
        Some((a, b)) => (a.min(lo), b.max(hi)),
        None => (lo, hi),
    })
}

/// The colour bar's ticks: [`BAR_TICKS`] evenly spaced values from `hi` down to `lo` (one when they are
/// equal), as written.
fn colour_ticks((lo, hi): (f64, f64), suffix: &str) -> Vec<(f64, String)> {
    let label = |v: f64| format!("{}{suffix}", style::value(v));
    if hi > lo {
        (0..BAR_TICKS).map(|k| hi - (hi - lo) * k as f64 / (BAR_TICKS - 1) as f64).map(|v| (v, label(v))).collect()
    } else {
        vec![(lo, label(lo))]
    }
}

/// Where the cells go: `rows` × `cols` cells over `grid` (pixels of the plot's area).
struct Layout {
    rows: usize,
    cols: usize,
    grid: Rect,
    /// A cell's width and height; each edge is rounded on its own, so cells tile the grid exactly.
    cw: f64,
    ch: f64,
}

impl Layout {
    fn x_at(&self, c: usize) -> i32 {
        self.grid.0 .0 + (self.cw * c as f64).round() as i32
    }

    fn y_at(&self, r: usize) -> i32 {
        self.grid.0 .1 + (self.ch * r as f64).round() as i32
    }
}

impl Heatmap<'_> {
    /// The colour bar: its range (bottom, top), its tick labels from the top down, and its description;
    /// `None` without any finite value (no bar is drawn).
    pub fn colour_bar(&self) -> Option<((f64, f64), Vec<String>, String)> {
        let clean: Vec<Vec<Option<f64>>> =
            self.values.iter().map(|r| r.iter().map(|v| v.filter(|v| v.is_finite())).collect()).collect();
        let range = colour_range(&clean, self.desc.range)?;
        let ticks = colour_ticks(range, &self.desc.suffix).into_iter().map(|t| t.1).collect();
        Some((range, ticks, self.desc.value_desc.clone()))
    }
}

impl Plot for Heatmap<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let area = frame(root, self.title, None, &[])?;
        let rows = self.values.len().max(self.y_labels.len());
        let cols = self.values.iter().map(Vec::len).max().unwrap_or(0).max(self.x_labels.len());
        let cells: Vec<Vec<Option<f64>>> = (0..rows).map(|r| (0..cols).map(|c| self.cell(r, c)).collect()).collect();
        let bounds = colour_range(&cells, self.desc.range);
        let tick = font(style::TICK_SIZE);
        let (row_labels, widest) = self.row_labels(&area, rows, &tick)?;
        let (bar_right, desc_lines) = self.bar_space(&area, bounds)?;
        let grid = self.grid(&area, widest, bar_right);
        if rows == 0 || cols == 0 {
            area.draw(&Rectangle::new([grid.0, grid.1], style::EMPTY_CELL.filled()))?;
            let style = anchored(22.0, HPos::Center, VPos::Center).color(&style::MUTED);
            area.draw(&Text::new("no data", ((grid.0 .0 + grid.1 .0) / 2, (grid.0 .1 + grid.1 .1) / 2), style))?;
            return Ok(());
        }
        let (gw, gh) = (grid.1 .0 - grid.0 .0, grid.1 .1 - grid.0 .1);
        let layout = Layout { rows, cols, grid, cw: gw as f64 / cols as f64, ch: gh as f64 / rows as f64 };
        let (vlo, vhi) = bounds.unwrap_or((0.0, 1.0));
        self.draw_cells(&area, &layout, (vlo, vhi))?;
        self.draw_labels(&area, &layout, row_labels, &tick)?;
        if bounds.is_some() {
            self.draw_colour_bar(&area, grid, (vlo, vhi), &cells, desc_lines)?;
        }
        Ok(())
    }
}

impl Heatmap<'_> {
    /// The value at row `r`, column `c`, if any and finite.
    fn cell(&self, r: usize, c: usize) -> Option<f64> {
        self.values.get(r).and_then(|row| row.get(c)).copied().flatten().filter(|v| v.is_finite())
    }

    /// Row labels on the left, right-aligned; at most a third of the width. With the widest's width.
    fn row_labels<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        rows: usize,
        tick: &TextStyle,
    ) -> DrawResult<(Vec<String>, i32)>
    where
        DB::ErrorType: 'static,
    {
        let w = area.dim_in_pixel().0 as i32;
        let mut row_labels = Vec::with_capacity(rows);
        let mut widest = 0;
        for r in 0..rows {
            let text = fit(area, self.y_labels.get(r).map_or("", |s| s.as_str()), tick, w / 3)?;
            widest = widest.max(text_width(area, &text, tick)?);
            row_labels.push(text);
        }
        Ok((row_labels, widest))
    }

    /// The cells' rectangle: the area less the row labels (`widest`), the descriptions that are drawn,
    /// the column labels and the colour bar (`bar_right` wide).
    fn grid<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, widest: i32, bar_right: i32) -> Rect {
        let (w, h) = area.dim_in_pixel();
        let (w, h) = (w as i32, h as i32);
        let y_desc_w = if self.desc.y_desc.trim().is_empty() { 0 } else { 34 };
        let left = 16 + y_desc_w + widest + 10;
        ((left, CHART_MARGIN_TOP), (w - bar_right, h - self.below_grid()))
    }

    /// The height under the grid: the column labels and the x description if any.
    fn below_grid(&self) -> i32 {
        36 + if self.desc.x_desc.trim().is_empty() { 0 } else { 32 }
    }

    /// The width right of the grid that the colour bar takes (gap, bar, tick labels and its rotated
    /// description), and the description's lines (wrapped along the bar, at most two).
    fn bar_space<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        bounds: Option<(f64, f64)>,
    ) -> DrawResult<(i32, Vec<String>)>
    where
        DB::ErrorType: 'static,
    {
        let label = font(style::NOTE_SIZE);
        let mut widest = 0;
        for (_, text) in colour_ticks(bounds.unwrap_or((0.0, 1.0)), &self.desc.suffix) {
            widest = widest.max(text_width(area, &text, &label)?);
        }
        let mut lines = Vec::new();
        if !&self.desc.value_desc.trim().is_empty() {
            // The bar's length (see `draw_colour_bar`).
            let along = area.dim_in_pixel().1 as i32 - CHART_MARGIN_TOP - self.below_grid() - 8;
            lines = wrap(area, &self.desc.value_desc, &font(style::DESC_SIZE * 0.9), along)?;
            if lines.len() > 2 {
                let rest = lines[1..].join(" ");
                lines.truncate(1);
                lines.push(fit(area, &rest, &font(style::DESC_SIZE * 0.9), along)?);
            }
        }
        Ok((BAR_GAP + BAR_W + 7 + widest + 10 + DESC_LINE * lines.len() as i32 + 12, lines))
    }

    /// Each cell filled by its value on `[vlo, vhi]` (viridis), with the value where it fits; "n/a"
    /// where there is none.
    fn draw_cells<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &Layout,
        (vlo, vhi): (f64, f64),
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let t_of = |v: f64| if vhi > vlo { (v - vlo) / (vhi - vlo) } else { 0.5 };
        let cell_font = (layout.ch * 0.35).min(layout.cw / 4.0).clamp(8.0, 22.0);
        let cell_style = anchored(cell_font, HPos::Center, VPos::Center);
        for r in 0..layout.rows {
            for c in 0..layout.cols {
                let (x0, y0, x1, y1) = (layout.x_at(c), layout.y_at(r), layout.x_at(c + 1), layout.y_at(r + 1));
                let (fill, text) = match self.cell(r, c) {
                    Some(v) => (style::viridis(t_of(v)), format!("{}{}", style::value(v), &self.desc.suffix)),
                    None => (style::EMPTY_CELL, "n/a".to_string()),
                };
                area.draw(&Rectangle::new([(x0, y0), (x1, y1)], fill.filled()))?;
                area.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(2)))?;
                let colour = if self.cell(r, c).is_some() { style::text_on(fill) } else { style::MUTED };
                let (tw, th) = area.estimate_text_size(&text, &cell_style)?;
                if (tw as i32) < x1 - x0 - 4 && (th as i32) < y1 - y0 - 2 {
                    area.draw(&Text::new(text, ((x0 + x1) / 2, (y0 + y1) / 2), cell_style.color(&colour)))?;
                }
            }
        }
        Ok(())
    }

    /// Row and column labels, and the axis descriptions that are not empty.
    fn draw_labels<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        layout: &Layout,
        row_labels: Vec<String>,
        tick: &TextStyle,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let grid = layout.grid;
        let (gw, gh) = (grid.1 .0 - grid.0 .0, grid.1 .1 - grid.0 .1);
        let row_style = tick.pos(Pos::new(HPos::Right, VPos::Center));
        for (r, text) in row_labels.into_iter().enumerate() {
            let y = (layout.y_at(r) + layout.y_at(r + 1)) / 2;
            area.draw(&Text::new(text, (grid.0 .0 - 8, y), row_style.clone()))?;
        }
        let col_style = tick.pos(Pos::new(HPos::Center, VPos::Top));
        for c in 0..layout.cols {
            let max_w = (layout.cw as i32 - 6).max(12);
            let text = fit(area, self.x_labels.get(c).map_or("", |s| s.as_str()), &col_style, max_w)?;
            let x = (layout.x_at(c) + layout.x_at(c + 1)) / 2;
            area.draw(&Text::new(text, (x, grid.1 .1 + 8), col_style.clone()))?;
        }
        let desc = font(style::DESC_SIZE);
        if !&self.desc.x_desc.trim().is_empty() {
            let style = desc.pos(Pos::new(HPos::Center, VPos::Top));
            let text = fit(area, &self.desc.x_desc, &style, gw)?;
            area.draw(&Text::new(text, ((grid.0 .0 + grid.1 .0) / 2, grid.1 .1 + 36), style))?;
        }
        if !&self.desc.y_desc.trim().is_empty() {
            let style = desc.pos(Pos::new(HPos::Center, VPos::Top)).transform(FontTransform::Rotate270);
            let text = fit(area, &self.desc.y_desc, &desc, gh)?;
            area.draw(&Text::new(text, (14, (grid.0 .1 + grid.1 .1) / 2), style))?;
        }
        Ok(())
    }

    /// The colour bar right of `grid`, from `vlo` (bottom) to `vhi` (top), with [`colour_ticks`] on its
    /// right, a small dark pointer on its left at each cell's value, and the description's `lines` rotated
    /// along it (read bottom to top).
    fn draw_colour_bar<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        grid: Rect,
        (vlo, vhi): (f64, f64),
        cells: &[Vec<Option<f64>>],
        lines: Vec<String>,
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let bx0 = grid.1 .0 + BAR_GAP;
        let (by0, by1) = (grid.0 .1 + 8, grid.1 .1);
        let steps = 64;
        for k in 0..steps {
            let ya = by1 - ((by1 - by0) as f64 * k as f64 / steps as f64).round() as i32;
            let yb = by1 - ((by1 - by0) as f64 * (k + 1) as f64 / steps as f64).round() as i32;
            let fill = style::viridis((k as f64 + 0.5) / steps as f64);
            area.draw(&Rectangle::new([(bx0, yb), (bx0 + BAR_W, ya)], fill.filled()))?;
        }
        area.draw(&Rectangle::new([(bx0, by0), (bx0 + BAR_W, by1)], style::MUTED.stroke_width(1)))?;
        let y_of = |v: f64| {
            let t = if vhi > vlo { (v - vlo) / (vhi - vlo) } else { 0.5 };
            by1 - ((by1 - by0) as f64 * t).round() as i32
        };
        for v in cells.iter().flatten().flatten() {
            let y = y_of(*v);
            area.draw(&Polygon::new(vec![(bx0 - 9, y - 4), (bx0 - 9, y + 4), (bx0 - 2, y)], style::TEXT.filled()))?;
        }
        let label = font(style::NOTE_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        let mut widest = 0;
        for (v, text) in colour_ticks((vlo, vhi), &self.desc.suffix) {
            let ty = y_of(v);
            widest = widest.max(text_width(area, &text, &label)?);
            area.draw(&PathElement::new(vec![(bx0 + BAR_W, ty), (bx0 + BAR_W + 4, ty)], style::MUTED.stroke_width(1)))?;
            area.draw(&Text::new(text, (bx0 + BAR_W + 7, ty), label.clone()))?;
        }
        let desc =
            font(style::DESC_SIZE * 0.9).pos(Pos::new(HPos::Center, VPos::Top)).transform(FontTransform::Rotate270);
        for (i, line) in lines.into_iter().enumerate() {
            let x = bx0 + BAR_W + 7 + widest + 10 + DESC_LINE * i as i32;
            area.draw(&Text::new(line, (x, (by0 + by1) / 2), desc.clone()))?;
        }
        Ok(())
    }
}
