//! A heatmap of values by row and column, with a viridis colour bar.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{anchored, fit, font, frame, text_width, DrawResult, Drawing, Rect, CHART_MARGIN_TOP};
use crate::report::plots::style;

pub struct Heatmap<'a> {
    pub title: &'a str,
    pub x_labels: &'a [String],
    pub y_labels: &'a [String],
    pub values: &'a [Vec<Option<f64>>],
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub value_desc: &'a str,
}

/// The colour bar's width, and the margin right of the grid that holds it and its tick labels.
const BAR_W: i32 = 22;
const RIGHT: i32 = 110;

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

impl Drawing for Heatmap<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let area = frame(root, self.title, None, &[])?;
        let rows = self.values.len().max(self.y_labels.len());
        let cols = self.values.iter().map(Vec::len).max().unwrap_or(0).max(self.x_labels.len());
        let bounds = style::finite_bounds(
            (0..rows).flat_map(|r| (0..cols).map(move |c| (r, c))).filter_map(|(r, c)| self.cell(r, c)),
        );
        let tick = font(style::TICK_SIZE);
        let (row_labels, widest) = self.row_labels(&area, rows, &tick)?;
        let grid = self.grid(&area, widest);
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
        // Colour bar with min, middle and max.
        if bounds.is_some() {
            self.draw_colour_bar(&area, grid, (vlo, vhi))?;
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
    /// the column labels and the colour bar.
    fn grid<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, widest: i32) -> Rect {
        let (w, h) = area.dim_in_pixel();
        let (w, h) = (w as i32, h as i32);
        let y_desc_w = if self.y_desc.trim().is_empty() { 0 } else { 34 };
        let left = 16 + y_desc_w + widest + 10;
        let top = CHART_MARGIN_TOP + if self.value_desc.trim().is_empty() { 0 } else { 6 };
        let x_desc_h = if self.x_desc.trim().is_empty() { 0 } else { 32 };
        let bottom = 36 + x_desc_h;
        ((left, top), (w - RIGHT, h - bottom))
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
                    Some(v) => (style::viridis(t_of(v)), style::value(v)),
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
        if !self.x_desc.trim().is_empty() {
            let style = desc.pos(Pos::new(HPos::Center, VPos::Top));
            let text = fit(area, self.x_desc, &style, gw)?;
            area.draw(&Text::new(text, ((grid.0 .0 + grid.1 .0) / 2, grid.1 .1 + 36), style))?;
        }
        if !self.y_desc.trim().is_empty() {
            let style = desc.pos(Pos::new(HPos::Center, VPos::Top)).transform(FontTransform::Rotate270);
            let text = fit(area, self.y_desc, &desc, gh)?;
            area.draw(&Text::new(text, (14, (grid.0 .1 + grid.1 .1) / 2), style))?;
        }
        Ok(())
    }

    /// The colour bar right of `grid`, from `vlo` (bottom) to `vhi` (top), with ticks at min, middle and
    /// max (one tick when they are equal) and the value description above it.
    fn draw_colour_bar<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        grid: Rect,
        (vlo, vhi): (f64, f64),
    ) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let bx0 = grid.1 .0 + 22;
        let (by0, by1) = (grid.0 .1 + if self.value_desc.trim().is_empty() { 8 } else { 36 }, grid.1 .1);
        let steps = 64;
        for k in 0..steps {
            let ya = by1 - ((by1 - by0) as f64 * k as f64 / steps as f64).round() as i32;
            let yb = by1 - ((by1 - by0) as f64 * (k + 1) as f64 / steps as f64).round() as i32;
            let fill = style::viridis((k as f64 + 0.5) / steps as f64);
            area.draw(&Rectangle::new([(bx0, yb), (bx0 + BAR_W, ya)], fill.filled()))?;
        }
        area.draw(&Rectangle::new([(bx0, by0), (bx0 + BAR_W, by1)], style::MUTED.stroke_width(1)))?;
        let label = font(style::NOTE_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        let ticks: Vec<(f64, i32)> = if vhi > vlo {
            vec![(vhi, by0), ((vlo + vhi) / 2.0, (by0 + by1) / 2), (vlo, by1)]
        } else {
            vec![(vlo, (by0 + by1) / 2)]
        };
        for (v, ty) in ticks {
            area.draw(&PathElement::new(vec![(bx0 + BAR_W, ty), (bx0 + BAR_W + 4, ty)], style::MUTED.stroke_width(1)))?;
            area.draw(&Text::new(style::value(v), (bx0 + BAR_W + 7, ty), label.clone()))?;
        }
        if !self.value_desc.trim().is_empty() {
            let style = font(style::NOTE_SIZE).pos(Pos::new(HPos::Center, VPos::Bottom));
            let text = fit(area, self.value_desc, &style, RIGHT - 6)?;
            area.draw(&Text::new(text, (bx0 + BAR_W / 2 + 14, by0 - 14), style))?;
        }
        Ok(())
    }
}
