//! The report's tables: the formats of their cells and the builders of each table the report's pages show
//! (the [`Table`] type itself is `table.rs`).

use super::aggregate;
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{
    self, percent, percentage_points, FigureId, PercentStyle, PointsStyle, Share, COMPARISON_FIGURES, SCOPE_FIGURES,
};
use crate::replay::strategy::Role;
use crate::table::Table;
use crate::verdict::claims::Against;
use std::collections::{BTreeMap, BTreeSet};

/// A paired difference in percentage points with its interval (none where it is a point).
fn pp_ci(f: Option<metrics::Figure>) -> String {
    match f {
        Some(f) => percentage_points(f.value, (f.low < f.high).then_some((f.low, f.high)), PointsStyle::TABLE),
        None => "–".into(),
    }
}

/// A paired difference of a count per conversation, with its interval.
fn count_ci(f: Option<metrics::Figure>) -> String {
    match f {
        Some(f) if f.low < f.high => format!("{:+.2} [{:+.2}, {:+.2}]", f.value, f.low, f.high),
        Some(f) => format!("{:+.2}", f.value),
        None => "–".into(),
    }
}

/// Paired comparisons: each point's difference from `none` or from the reference point, per conversation,
/// over `source`'s conversations (all when `None`). Points are named by their number (`#`, as in the
/// headline table), so the table fits 120 columns.
pub fn comparisons(plan: &Plan, cells: &[CellResult], source: Option<&str>, against: Against) -> Table {
    let mine: Vec<&CellResult> = cells.iter().filter(|c| source.is_none_or(|s| c.source == s)).collect();
    let parts_of = |p: &ConfigPoint| {
        metrics::point_parts(
            mine.iter().copied().filter(|c| c.cell.point == p.id),
            metrics::point_pricing(plan, p).as_ref(),
        )
    };
    let reference = plan.reference_point();
    let reference_parts = reference.map(parts_of);
    let compared: Vec<&metrics::Metric> = COMPARISON_FIGURES.iter().map(|id| id.metric()).collect();
    let mut header = vec!["#".to_string(), "strategy".to_string(), "convs".to_string()];
    for m in &compared {
        header.push(format!("Δ {}", m.title()));
    }
    let mut rows = Vec::new();
    for (i, p) in plan.points.iter().enumerate() {
        let parts = parts_of(p);
        let convs = mine.iter().filter(|c| c.cell.point == p.id).count();
        if convs == 0 {
            continue;
        }
        let base = match against {
            Against::NoCompression => plan.none_point(p).map(parts_of),
            Against::Reference => reference_parts.clone(),
        };
        let mut row = vec![(i + 1).to_string(), p.strategy.kind().to_string(), convs.to_string()];
        for m in &compared {
            let d = base.as_ref().and_then(|a| metrics::paired_difference(m, parts.get(&m.id)?, a.get(&m.id)?));
            row.push(pp_ci(d));
        }
        rows.push(row);
    }
    Table { header, rows }
}

/// A figure for a table cell: value, and the interval of a share (n is in `results/scopes.csv`).
fn figure_cell(m: &metrics::Metric, f: Option<&metrics::Figure>, with_ci: bool) -> String {
    match f {
        Some(f) if with_ci && m.unit == metrics::Unit::Share && f.low < f.high => {
            format!("{} [{:.1}, {:.1}]", metrics::format_value(m, f.value), f.low * 100.0, f.high * 100.0)
        }
        Some(f) => metrics::format_value(m, f.value),
        None => "–".into(),
    }
}

/// Headline figures of each strategy's default point per scope (pooled, actionable, each source), with the
/// paired differences from the reference point: one table per group of [`SCOPE_FIGURES`] (cost, what the
/// history keeps, how often it compresses; each fits 120 columns; points by `#`).
/// Only the scopes `keep` lets through are rows.
pub fn scopes_tables(
    plan: &Plan,
    scopes: &[aggregate::ScopeFigures],
    keep: impl Fn(&aggregate::Scope) -> bool,
) -> [Table; 3] {
    let shown = plan.default_points();
    // Each table's paired difference from the reference, and its header.
    let [cost, kept, compressions] = SCOPE_FIGURES;
    let groups: [(&[FigureId], FigureId, &str); 3] = [
        (cost, FigureId::TokensVsNone, "Δ tokens − ref. (pp)"),
        (kept, FigureId::EarlyOnlyRetention, "Δ early-only − ref. (pp)"),
        (compressions, FigureId::StormEvents, "Δ storms − ref. (per conv.)"),
    ];
    groups.map(|(own, diff, diff_header)| {
        let mut header: Vec<String> = ["#", "scope", "convs"].map(String::from).to_vec();
        header.extend(own.iter().map(|id| id.metric().title()));
        header.push(diff_header.to_string());
        let mut rows = Vec::new();
        for &i in &shown {
            for r in scopes.iter().filter(|r| r.point == i && keep(&r.scope)) {
                let scope = match &r.scope {
                    aggregate::Scope::Source(s) => s.clone(),
                    other => other.to_string(),
                };
                let mut row = vec![(i + 1).to_string(), scope, r.conversations.to_string()];
                // Intervals on the compared figure and the retention figures (the USD ratios follow the
                // token ratio's; their intervals are in results/scopes.csv).
                let with_ci = |id: &FigureId| !matches!(id, FigureId::UsdVsNone | FigureId::CachedUsdVsNone);
                row.extend(own.iter().map(|id| figure_cell(id.metric(), r.figures.get(id), with_ci(id))));
                let d = r.vs_reference.get(&diff).copied();
                // A difference of shares in percentage points, of a count per conversation as it is.
                let mut cell = if diff.metric().unit == metrics::Unit::Share { pp_ci(d) } else { count_ci(d) };
                // A paired difference over another set than the row's (actionable: those either point can
                // act on) says over how many.
                if let Some(d) = d.filter(|d| d.n != r.conversations) {
                    cell = format!("{cell} (n={})", d.n);
                }
                row.push(cell);
                rows.push(row);
            }
        }
        Table { header, rows }
    })
}

/// The cells of the reference's default point (the first reference point of the main grid) by source;
/// empty without a reference point.
fn reference_cells_by_source<'a>(plan: &Plan, cells: &'a [CellResult]) -> BTreeMap<&'a str, Vec<&'a CellResult>> {
    let mut by_source: BTreeMap<&str, Vec<&CellResult>> = BTreeMap::new();
    if let Some(reference) = plan.reference_point() {
        for c in cells.iter().filter(|c| c.cell.point == reference.id) {
            by_source.entry(c.source.as_str()).or_default().push(c);
        }
    }
    by_source
}

/// A source as tables name it (cells whose conversation could not be read have none).
fn source_label(source: &str) -> String {
    if source.is_empty() {
        "(unreadable)".into()
    } else {
        source.to_string()
    }
}

/// Per source under the reference's default point (the first reference point of the main grid): how many
/// conversations are unsplittable, how many of the others compress at least once, and what the trigger saw.
pub fn sources_table(plan: &Plan, cells: &[CellResult]) -> Table {
    let header =
        ["source", "convs", "unsplittable", "splittable compressing", "share", "median window", "trigger sees"]
            .map(String::from)
            .to_vec();
    let rows = reference_cells_by_source(plan, cells)
        .into_iter()
        .map(|(source, cs)| {
            let unsplittable = cs.iter().filter(|c| c.result.unsplittable).count();
            let splittable = cs.len() - unsplittable;
            let compressing = cs.iter().filter(|c| !c.result.unsplittable && c.result.compressed_events() > 0).count();
            let mut windows: Vec<u64> = cs.iter().map(|c| c.result.token_limit).collect();
            windows.sort_unstable();
            let sources: BTreeSet<&str> = cs.iter().map(|c| c.result.prompt_count_source.as_str()).collect();
            vec![
                source_label(source),
                cs.len().to_string(),
                unsplittable.to_string(),
                format!("{compressing} of {splittable}"),
                percent(
                    (splittable > 0).then(|| Share::Fraction(compressing as f64 / splittable as f64)),
                    PercentStyle::TABLE,
                ),
                windows.get(windows.len() / 2).map(u64::to_string).unwrap_or_default(),
                sources.into_iter().collect::<Vec<_>>().join("; "),
            ]
        })
        .collect();
    Table { header, rows }
}

/// Per source under the reference's default point: where the trigger sits and how often it fires.
pub fn triggers_table(plan: &Plan, cells: &[CellResult]) -> Table {
    let header = ["source", "convs", "requests", "trigger ≤ 1st request", "compressions", "per 100 requests", "storms"]
        .map(String::from)
        .to_vec();
    let rows = reference_cells_by_source(plan, cells)
        .into_iter()
        .map(|(source, cs)| {
            let requests: usize = cs.iter().map(|c| c.result.requests).sum();
            let compressions: usize = cs.iter().map(|c| c.result.compressions().count()).sum();
            vec![
                source_label(source),
                cs.len().to_string(),
                requests.to_string(),
                cs.iter().filter(|c| c.result.trigger_below_first_request()).count().to_string(),
                compressions.to_string(),
                if requests > 0 {
                    format!("{:.1}", 100.0 * compressions as f64 / requests as f64)
                } else {
                    "–".into()
                },
                cs.iter().map(|c| c.result.storm_events()).sum::<u64>().to_string(),
            ]
        })
        .collect();
    Table { header, rows }
}

/// For unsplittable conversations: where each historical split variant would split the whole history.
pub fn split_variants_table(plan: &Plan, cells: &[CellResult]) -> Option<Table> {
    let reference = plan.reference_point()?;
    let unsplittable: Vec<&CellResult> =
        cells.iter().filter(|c| c.cell.point == reference.id && c.result.unsplittable).collect();
    if unsplittable.is_empty() {
        return None;
    }
    let mut rows = Vec::new();
    for v in crate::compress::SplitVariant::ALL {
        let (mut none, mut some, mut all) = (0, 0, 0);
        for c in &unsplittable {
            match c.result.split_points.get(v.name()) {
                Some(0) => none += 1,
                Some(&i) if i >= c.result.split_history_contents => all += 1,
                Some(_) => some += 1,
                None => {}
            }
        }
        rows.push(vec![v.name().to_string(), none.to_string(), some.to_string(), all.to_string()]);
    }
    Some(Table {
        header: ["split variant", "no split point (NOOP)", "split inside the history", "summarise everything"]
            .map(String::from)
            .to_vec(),
        rows,
    })
}

/// The corpus table: conversations, requests and tokens per source (from the `none` replays).
pub fn corpus(plan: &Plan, cells: &[CellResult]) -> Table {
    let none = plan.point_of_role(Role::NoCompression).map(|p| p.id.clone());
    let mut by_source: BTreeMap<String, (usize, u64, u64, u64)> = BTreeMap::new();
    for c in cells.iter().filter(|c| Some(&c.cell.point) == none.as_ref()) {
        let e = by_source.entry(c.source.clone()).or_default();
        e.0 += 1;
        e.1 += c.result.requests as u64;
        e.2 += c.result.none_request_tokens_total;
        e.3 = e.3.max(c.result.none_peak_request_tokens);
    }
    for p in &plan.conversations {
        by_source.entry(p.source.clone()).or_default();
    }
    let rows = by_source
        .into_iter()
        .map(|(s, (n, req, tok, peak))| {
            vec![source_label(&s), n.to_string(), req.to_string(), tok.to_string(), peak.to_string()]
        })
        .collect();
    Table {
        header: ["source", "conversations", "model requests", "request tokens (sum)", "largest request"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// The Pareto plot's key: each numbered point's configuration and coordinates.
pub(super) fn pareto_key_table(key: &[(usize, String, f64, f64)]) -> Table {
    Table {
        header: ["#", "configuration", "cost vs none ↓", "quality ↑"].map(String::from).to_vec(),
        rows: key
            .iter()
            .map(|(i, l, x, y)| {
                vec![
                    i.to_string(),
                    l.clone(),
                    percent(Some(Share::Fraction(*x)), PercentStyle::TABLE),
                    percent(Some(Share::Fraction(*y)), PercentStyle::TABLE),
                ]
            })
            .collect(),
    }
}

/// The groups of the configuration tables: the main grid (`None`), then each slice in plan order.
pub(super) fn configuration_slices(plan: &Plan) -> Vec<Option<&str>> {
    let mut slices: Vec<Option<&str>> = vec![None];
    for p in &plan.points {
        if p.slice.is_some() && !slices.contains(&p.slice.as_deref()) {
            slices.push(p.slice.as_deref());
        }
    }
    slices
}

/// The configuration key of one slice (`None`: the main grid): each point's number, id, strategy,
/// summarizer, and its values of the `varying` axes.
pub(super) fn configuration_table(plan: &Plan, slice: Option<&str>, varying: &[String]) -> Table {
    let rows = plan
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.slice.as_deref() == slice)
        .map(|(i, p)| {
            let axes: Vec<String> = p
                .axes
                .iter()
                .filter(|(k, _)| varying.contains(k))
                .map(|(k, v)| format!("{}={v}", crate::report::summary::axis_header(k)))
                .collect();
            vec![
                (i + 1).to_string(),
                p.id.clone(),
                p.strategy.kind().into(),
                p.summarizer.clone().unwrap_or_else(|| "–".into()),
                axes.join(" "),
            ]
        })
        .collect();
    Table { header: ["#", "point", "strategy", "summarizer", "axes that vary"].map(String::from).to_vec(), rows }
}
