//! The report's plots: what each one shows, computed from the cells, drawn with [`super::plots`], and the
//! list of files written (with captions) that `report.md` links.

use super::{aggregate, default_points, plots};
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics;
use crate::replay::strategies::gemini::{PRESERVE_FRACTION, THRESHOLD};
use crate::replay::strategy::Role;
use std::path::Path;

/// Plot images written for the report, with their captions.
#[derive(Clone, Debug, Default)]
pub struct PlotList {
    pub written: Vec<(String, plots::PlotFiles)>,
    pub failed: Vec<String>,
    /// The Pareto plot's point numbers and the configurations they stand for.
    pub pareto_key: Vec<(usize, String, f64, f64)>,
}

fn note(list: &mut PlotList, caption: &str, r: Result<plots::PlotFiles, plots::PlotError>) {
    match r {
        Ok(f) => list.written.push((caption.to_string(), f)),
        Err(e) => list.failed.push(e.to_string()),
    }
}

/// A metric's figure over several points' conversations pooled.
fn pooled(plan: &Plan, cells: &[CellResult], points: &[&ConfigPoint], metric: &str) -> Option<f64> {
    let m = metrics::metric(metric)?;
    let parts: Vec<metrics::Parts> = points
        .iter()
        .flat_map(|p| {
            metrics::point_parts(
                cells.iter().filter(|c| c.cell.point == p.id),
                metrics::point_pricing(plan, p).as_ref(),
            )
            .remove(metric)
            .unwrap_or_default()
        })
        .map(|(_, p)| p)
        .collect();
    metrics::figure(m, &parts).map(|f| f.value)
}

/// Draws every plot of the report into `dir`, in the order `report.md` lists them.
pub fn draw_plots(plan: &Plan, cells: &[CellResult], dir: &Path) -> PlotList {
    let mut list = PlotList::default();
    let _ = std::fs::create_dir_all(dir);
    let grid = ReferenceGrid::of(plan);
    draw_timeline(plan, cells, dir, &mut list);
    draw_reduction_vs_threshold(plan, cells, dir, &grid, &mut list);
    draw_heatmap(plan, cells, dir, &grid, &mut list);
    draw_pareto(plan, cells, dir, &mut list);
    draw_verification_delta(cells, dir, &mut list);
    list
}

/// The sawtooth: under the reference point, the conversation with the most compressions (one where
/// compression fires), one series per strategy's first main-grid point.
fn draw_timeline(plan: &Plan, cells: &[CellResult], dir: &Path, list: &mut PlotList) {
    let Some(reference) = aggregate::reference_point(plan) else { return };
    let Some(conv) = most_compressed_conversation(cells, reference) else { return };
    let (series, markers) = timeline_series(plan, cells, &conv);
    note(
        list,
        &format!("Request size (tokens, as sent) per request of `{conv}`, with compression events, for the first point of each strategy; reference: `{}`", reference.short_label()),
        plots::timeline(dir, "timeline", &format!("Context timeline: {conv} ({})", reference.short_label()), &series, &markers),
    );
}

/// The conversation with the most compressions under `point` (ties: the first by id); `None` when
/// nothing compressed there.
fn most_compressed_conversation(cells: &[CellResult], point: &ConfigPoint) -> Option<String> {
    cells
        .iter()
        .filter(|c| c.cell.point == point.id && c.result.compressed_events() > 0)
        .max_by_key(|c| (c.result.compressed_events(), std::cmp::Reverse(c.cell.conversation.clone())))
        .map(|c| c.cell.conversation.clone())
}

/// Request sizes of `conv` under each strategy's default point, with its compression events as markers
/// (not the `CONTENT_TRUNCATED` events of a strategy that edits in place: too many to mark one by one).
fn timeline_series(plan: &Plan, cells: &[CellResult], conv: &str) -> (Vec<plots::Series>, Vec<plots::Marker>) {
    let mut series = Vec::new();
    let mut markers = Vec::new();
    for p in default_points(plan).into_iter().map(|i| &plan.points[i]) {
        let Some(c) = cells.iter().find(|c| c.cell.point == p.id && c.cell.conversation == conv) else { continue };
        let idx = series.len();
        series.push(plots::Series {
            name: p.short_label(),
            points: c.result.request_tokens.iter().enumerate().map(|(i, t)| (i as f64, *t as f64)).collect(),
        });
        markers.extend(
            c.result
                .events
                .iter()
                .filter(|e| {
                    e.status != crate::compress::CompressionStatus::ContentTruncated || !p.strategy.edits_in_place()
                })
                .map(|e| plots::Marker { x: e.request as f64, series: idx, label: e.status.name().to_string() }),
        );
    }
    (series, markers)
}

/// The reference's main-grid points and the values of its two swept knobs (threshold and preserve
/// fraction), each sorted numerically: the axes of the threshold plots.
struct ReferenceGrid<'a> {
    points: Vec<&'a ConfigPoint>,
    thresholds: Vec<String>,
    preserves: Vec<String>,
}

impl<'a> ReferenceGrid<'a> {
    fn of(plan: &'a Plan) -> Self {
        let points: Vec<&ConfigPoint> =
            plan.points.iter().filter(|p| p.strategy.role() == Some(Role::Reference) && p.slice.is_none()).collect();
        let uniq = |axis: &str| -> Vec<String> {
            let mut v: Vec<String> = points.iter().filter_map(|p| p.axes.get(axis).cloned()).collect();
            v.sort_by(|a, b| a.parse::<f64>().unwrap_or(0.0).total_cmp(&b.parse::<f64>().unwrap_or(0.0)));
            v.dedup();
            v
        };
        let (thresholds, preserves) = (uniq(THRESHOLD), uniq(PRESERVE_FRACTION));
        ReferenceGrid { points, thresholds, preserves }
    }

    /// The points at one threshold and preserve fraction (their other axes pooled).
    fn at(&self, threshold: &String, preserve: &String) -> Vec<&'a ConfigPoint> {
        self.points
            .iter()
            .copied()
            .filter(|p| p.axes.get(THRESHOLD) == Some(threshold) && p.axes.get(PRESERVE_FRACTION) == Some(preserve))
            .collect()
    }
}

/// Mean reduction versus threshold, one series per preserve fraction (reference points, other axes
/// pooled).
fn draw_reduction_vs_threshold(
    plan: &Plan,
    cells: &[CellResult],
    dir: &Path,
    grid: &ReferenceGrid,
    list: &mut PlotList,
) {
    let series: Vec<plots::Series> = grid
        .preserves
        .iter()
        .map(|keep| plots::Series {
            name: format!("preserve {keep}"),
            points: grid
                .thresholds
                .iter()
                .filter_map(|t| Some((t.parse().ok()?, pooled(plan, cells, &grid.at(t, keep), "reduction")? * 100.0)))
                .collect(),
        })
        .collect();
    note(
        list,
        "Reduction of the request by the compressions (`reduction`: 1 − Σ after / Σ before over compressions, token-weighted; not the event mean `mean_event_reduction`) versus the threshold, one line per preserve fraction (reference; prompts and verification pooled); the y axis starts at 0",
        plots::lines_from_zero(
            dir,
            "reduction-vs-threshold",
            "Request reduction per compression vs threshold",
            "threshold (fraction of the window)",
            "reduction, token-weighted (%), axis from 0",
            &series,
        ),
    );
}

/// Heatmap: a quality metric versus preserve fraction (rows) and threshold (columns).
fn draw_heatmap(plan: &Plan, cells: &[CellResult], dir: &Path, grid: &ReferenceGrid, list: &mut PlotList) {
    // The headline quality figure when there are probes.
    let metric = if cells.iter().any(|c| c.probes.is_some()) { "early_only_retention" } else { "tokens_vs_none" };
    let values: Vec<Vec<Option<f64>>> = grid
        .preserves
        .iter()
        .map(|r| grid.thresholds.iter().map(|c| pooled(plan, cells, &grid.at(c, r), metric)).collect())
        .collect();
    let x_labels: Vec<String> = grid.thresholds.iter().map(|c| format!("threshold {c}")).collect();
    let y_labels: Vec<String> = grid.preserves.iter().map(|r| format!("preserve {r}")).collect();
    note(
        list,
        &format!("`{metric}` by preserve fraction and threshold (reference; other axes pooled)"),
        plots::heatmap(
            dir,
            "heatmap",
            &format!("{metric} by preserve fraction × threshold"),
            &x_labels,
            &y_labels,
            &values,
        ),
    );
}

/// Pareto: cost versus quality, one numbered point per configuration (the key is a table in the
/// report). Slices cover other conversations, so only the main grid.
fn draw_pareto(plan: &Plan, cells: &[CellResult], dir: &Path, list: &mut PlotList) {
    let quality = if cells.iter().any(|c| metrics::conversation_values(c, None).contains_key("early_only_retention")) {
        "early_only_retention"
    } else {
        "retention"
    };
    let mut pts = Vec::new();
    for (i, p) in plan.points.iter().enumerate().filter(|(_, p)| p.slice.is_none()) {
        let x = pooled(plan, cells, &[p], "tokens_vs_none");
        let y = pooled(plan, cells, &[p], quality);
        if let (Some(x), Some(y)) = (x, y) {
            pts.push(((i + 1).to_string(), x, y));
            list.pareto_key.push((i + 1, p.short_label(), x, y));
        }
    }
    note(
        list,
        &format!("Cost vs none (tokens, summarizer included) versus {quality}, one numbered point per configuration (key below); the front is the set no other point beats on both"),
        plots::pareto(dir, "pareto", &format!("Cost vs {quality}"), "cost vs none (Σ request + summarizer tokens / Σ none)", quality, &pts),
    );
}

/// Histogram of verification-pass changes, on [0, 1].
fn draw_verification_delta(cells: &[CellResult], dir: &Path, list: &mut PlotList) {
    let deltas: Vec<f64> = cells
        .iter()
        .flat_map(|c| c.result.events.iter().filter_map(|e| e.verification.as_ref().map(|v| v.edit_distance)))
        .collect();
    note(
        list,
        "How much the verification pass changed the first summary (normalised edit distance per compression, 0 = identical, 1 = entirely rewritten)",
        plots::histogram_in(
            dir,
            "verification-delta",
            "Verification-pass change",
            "normalised edit distance (0 = identical)",
            &deltas,
            20,
            (0.0, 1.0),
        ),
    );
}
