//! The report's plots: what each one shows, computed from the cells, drawn with [`super::plots`], and the
//! list of files written (with captions) that `report.md` links.

use super::plots::{self, Plot};

use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{self, FigureId};
use crate::replay::strategies::reference_grid::{PRESERVE_FRACTION, THRESHOLD};
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
fn pooled(plan: &Plan, cells: &[CellResult], points: &[&ConfigPoint], metric: FigureId) -> Option<f64> {
    let m = metric.metric();
    let parts: Vec<metrics::Parts> = points
        .iter()
        .flat_map(|p| {
            metrics::point_parts(
                cells.iter().filter(|c| c.cell.point == p.id),
                metrics::point_pricing(plan, p).as_ref(),
            )
            .remove(&metric)
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
    let Some(reference) = plan.reference_point() else { return };
    let Some(conv) = most_compressed_conversation(cells, reference) else { return };
    let (series, markers) = timeline_series(plan, cells, &conv, reference);
    note(
        list,
        &format!("Request size (tokens, as sent) per request of `{conv}` (the conversation the reference compresses most), with compression events, for the first point of each strategy; reference (marked in the legend): `{}`; a strategy whose requests equal another's exactly is drawn dashed over it and marked \"same as\" in the legend", reference.short_label()),
        plots::Timeline {
            title: &timeline_title(&conv),
            x_label: "request index",
            y_label: "request size (tokens, as sent)",
            series: &series,
            markers: &markers,
        }
        .render(dir, "timeline"),
    );
}

/// The timeline's title (the reference's label goes in the legend and the caption: too long for a title).
fn timeline_title(conv: &str) -> String {
    format!("Request size per request: {conv}")
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

/// Request sizes of `conv` under each strategy's default point (the `reference`'s named so), with its
/// compression events as markers (not the `CONTENT_TRUNCATED` events of a strategy that edits in place:
/// too many to mark one by one).
fn timeline_series(
    plan: &Plan,
    cells: &[CellResult],
    conv: &str,
    reference: &ConfigPoint,
) -> (Vec<plots::Series>, Vec<plots::Marker>) {
    let mut series = Vec::new();
    let mut markers = Vec::new();
    for p in plan.default_points().into_iter().map(|i| &plan.points[i]) {
        let Some(c) = cells.iter().find(|c| c.cell.point == p.id && c.cell.conversation == conv) else { continue };
        let idx = series.len();
        series.push(plots::Series {
            name: if p.id == reference.id { format!("{} (reference)", p.short_label()) } else { p.short_label() },
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
        let points: Vec<&ConfigPoint> = plan.points_of_role(Role::Reference).collect();
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
                .filter_map(|t| {
                    Some((t.parse().ok()?, pooled(plan, cells, &grid.at(t, keep), FigureId::Reduction)? * 100.0))
                })
                .collect(),
        })
        .collect();
    note(
        list,
        "Reduction of the request by the compressions (`reduction`: 1 − Σ after / Σ before over compressions, token-weighted; not the event mean `mean_event_reduction`) versus the threshold, one line per preserve fraction (reference; prompts and verification pooled); the y axis starts at 0",
        plots::Lines {
            title: "Token-weighted reduction per compression vs threshold",
            x_label: "threshold (fraction of the window)",
            y_label: "reduction = 1 − Σ after / Σ before (%)",
            series: &series,
            y_from_zero: true,
        }
        .render(dir, "reduction-vs-threshold"),
    );
}

/// How a figure is pooled over its conversations, in words (what its glossary entry's formula sums).
fn pooling(m: &metrics::Metric) -> &'static str {
    match (m.id, m.level) {
        (FigureId::MeanEventReduction, _) => "unweighted mean over compressions",
        (_, metrics::Level::Probe) => "pooled over probe scorings: Σ hits / Σ probes",
        (_, metrics::Level::Event) => "pooled over compressions: a ratio of sums",
        (_, metrics::Level::Conversation) => "a ratio of sums over conversations",
        (_, metrics::Level::Compaction) => "over the agent's recorded compactions",
    }
}

/// A figure's name in words with its glossary name, its unit and direction: "early-only retention
/// (early_only_retention), %, ↑ better" (shares in percent).
fn figure_desc(m: &metrics::Metric) -> String {
    let unit = match m.unit {
        metrics::Unit::Share => "%",
        metrics::Unit::Count => "count",
        metrics::Unit::Tokens => "tokens",
        metrics::Unit::Usd => "USD",
        metrics::Unit::PerHundred => "per 100 requests",
        metrics::Unit::PerTenTurns => "per 10 turns",
        metrics::Unit::Turns => "turns",
        metrics::Unit::Requests => "requests",
        metrics::Unit::Points => "pp",
    };
    let better = match m.better {
        metrics::Better::Neither => String::new(),
        b => format!(", {} better", b.arrow()),
    };
    format!("{} ({}), {unit}{better}", m.header, m.name)
}

/// The heatmap's colours: a share in percent on its natural scale 0–100 %; anything else on its values'
/// range.
fn heatmap_desc(m: &metrics::Metric) -> plots::HeatmapDesc {
    let share = m.unit == metrics::Unit::Share;
    plots::HeatmapDesc {
        x_desc: "threshold (fraction of the window)".into(),
        y_desc: "preserve fraction".into(),
        value_desc: figure_desc(m),
        range: share.then_some((0.0, 100.0)),
        suffix: if share { "%".into() } else { String::new() },
    }
}

/// `s` with its first letter upper-case.
fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// The heatmap's title: the figure in words with its glossary name.
fn heatmap_title(m: &metrics::Metric) -> String {
    format!("{} ({}) by preserve fraction × threshold", capitalised(m.header), m.name)
}

/// The heatmap's caption.
fn heatmap_caption(m: &metrics::Metric) -> String {
    let scale = if m.unit == metrics::Unit::Share {
        "in %, colour scale fixed at 0–100 %"
    } else {
        "colour scale from the lowest value to the highest"
    };
    format!(
        "{} (`{}`, {}) by preserve fraction (rows) and threshold (columns), over the reference's points with their other axes pooled; {scale}; the pointers left of the colour bar mark the cells' values",
        capitalised(m.header),
        m.name,
        pooling(m)
    )
}

/// Heatmap: a quality metric versus preserve fraction (rows) and threshold (columns).
fn draw_heatmap(plan: &Plan, cells: &[CellResult], dir: &Path, grid: &ReferenceGrid, list: &mut PlotList) {
    // The headline quality figure when there are probes.
    let figure =
        if cells.iter().any(|c| c.probes.is_some()) { FigureId::EarlyOnlyRetention } else { FigureId::TokensVsNone };
    let m = figure.metric();
    let scale = if m.unit == metrics::Unit::Share { 100.0 } else { 1.0 };
    let values: Vec<Vec<Option<f64>>> = grid
        .preserves
        .iter()
        .map(|r| {
            grid.thresholds.iter().map(|c| pooled(plan, cells, &grid.at(c, r), figure).map(|v| v * scale)).collect()
        })
        .collect();
    note(
        list,
        &heatmap_caption(m),
        plots::Heatmap {
            title: &heatmap_title(m),
            x_labels: &grid.thresholds,
            y_labels: &grid.preserves,
            values: &values,
            desc: &heatmap_desc(m),
        }
        .render(dir, "heatmap"),
    );
}

/// Pareto: cost versus quality, one numbered point per configuration (the key is a table in the
/// report). Slices cover other conversations, so only the main grid.
fn draw_pareto(plan: &Plan, cells: &[CellResult], dir: &Path, list: &mut PlotList) {
    let quality =
        if cells.iter().any(|c| metrics::conversation_values(c, None).contains_key(&FigureId::EarlyOnlyRetention)) {
            FigureId::EarlyOnlyRetention
        } else {
            FigureId::Retention
        };
    let (cost, q) = (FigureId::TokensVsNone.metric(), quality.metric());
    let mut pts = Vec::new();
    for (i, p) in plan.points.iter().enumerate().filter(|(_, p)| p.slice.is_none()) {
        let x = pooled(plan, cells, &[p], cost.id);
        let y = pooled(plan, cells, &[p], q.id);
        if let (Some(x), Some(y)) = (x, y) {
            // Shares in percent, as the tables write them.
            pts.push(((i + 1).to_string(), x * 100.0, y * 100.0));
            list.pareto_key.push((i + 1, p.short_label(), x, y));
        }
    }
    let (x_label, y_label, title) = pareto_labels(q);
    note(
        list,
        &format!(
            "Cost (`tokens_vs_none`: Σ (request + summarizer tokens) / Σ none's request tokens, a ratio of sums over conversations, ↓ better) versus {} (`{}`, {}, ↑ better), one numbered point per configuration (key below; points at the same place share one label); the front is the set no other point beats on both",
            q.header,
            q.name,
            pooling(q)
        ),
        plots::Pareto { title: &title, x_label: &x_label, y_label: &y_label, points: &pts }.render(dir, "pareto"),
    );
}

/// The Pareto plot's x and y axis descriptions and title for the quality figure `q`.
fn pareto_labels(q: &metrics::Metric) -> (String, String, String) {
    (
        "tokens_vs_none = Σ (request + summarizer) / Σ none (%)".into(),
        format!("{} (%, {} better)", q.name, q.better.arrow()),
        format!("Cost (tokens_vs_none) vs {}", q.header),
    )
}

/// Histogram of verification-pass changes, on [0, 1].
fn draw_verification_delta(cells: &[CellResult], dir: &Path, list: &mut PlotList) {
    let deltas: Vec<f64> = cells
        .iter()
        .flat_map(|c| c.result.events.iter().filter_map(|e| e.verification.as_ref().map(|v| v.edit_distance)))
        .collect();
    note(
        list,
        "How much the verification pass changed the first summary: normalised edit distance per verification pass (0 = identical, 1 = entirely rewritten), one value per compression with a verification pass; the subtitle's mean is the unweighted mean over those passes (the share of passes that changed anything is `verification_changed`)",
        plots::Histogram {
            title: "Verification-pass change per compression",
            x_label: "normalised edit distance, first summary → verified (0 = identical)",
            values: &deltas,
            bins: 20,
            range: Some((0.0, 1.0)),
        }
        .render(dir, "verification-delta"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: FigureId) -> &'static metrics::Metric {
        id.metric()
    }

    #[test]
    fn titles_name_the_figure_in_words_and_by_glossary_name() {
        assert_eq!(timeline_title("task003-trial0"), "Request size per request: task003-trial0");
        let q = m(FigureId::EarlyOnlyRetention);
        assert_eq!(heatmap_title(q), "Early-only retention (early_only_retention) by preserve fraction × threshold");
        insta::assert_debug_snapshot!(heatmap_desc(q), @r#"
        HeatmapDesc {
            x_desc: "threshold (fraction of the window)",
            y_desc: "preserve fraction",
            value_desc: "early-only retention (early_only_retention), %, ↑ better",
            range: Some(
                (
                    0.0,
                    100.0,
                ),
            ),
            suffix: "%",
        }
        "#);
        assert!(heatmap_caption(q).starts_with(
            "Early-only retention (`early_only_retention`, pooled over probe scorings: Σ hits / Σ probes) by"
        ));
        assert_eq!(
            pareto_labels(q),
            (
                "tokens_vs_none = Σ (request + summarizer) / Σ none (%)".to_string(),
                "early_only_retention (%, ↑ better)".to_string(),
                "Cost (tokens_vs_none) vs early-only retention".to_string(),
            )
        );
        assert_eq!(figure_desc(m(FigureId::TokensVsNone)), "tokens vs none (tokens_vs_none), %, ↓ better");
        assert_eq!(pooling(m(FigureId::Reduction)), "pooled over compressions: a ratio of sums");
        assert_eq!(pooling(m(FigureId::MeanEventReduction)), "unweighted mean over compressions");
        // Without probes the heatmap shows tokens_vs_none, a share too: still 0–100 %.
        assert_eq!(heatmap_desc(m(FigureId::TokensVsNone)).range, Some((0.0, 100.0)));
    }
}
