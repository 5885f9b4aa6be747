//! Reports: aggregation of a run's stored cells, tables, Markdown, plots, and the regression gate.
//!
//! Everything is rebuilt from the run directory (`plan.json`, `cells/`), so `compactbench report RUN_DIR`
//! reproduces a report byte for byte.

pub mod across;
pub mod aggregate;
pub mod gate;
pub mod kinds;
pub mod plots;
pub mod supports;
pub mod systems;

use crate::metrics;
use crate::sweep::summary::{summarize, table, TableOptions};
use crate::sweep::{self, CellResult, ConfigPoint, Plan};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A table defined once and rendered for the terminal or as Markdown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn build(&self) -> tabled::Table {
        let mut b = tabled::builder::Builder::default();
        b.push_record(self.header.clone());
        for r in &self.rows {
            b.push_record(r.clone());
        }
        b.build()
    }

    pub fn terminal(&self) -> String {
        let mut t = self.build();
        t.with(tabled::settings::Style::sharp());
        t.to_string()
    }

    pub fn markdown(&self) -> String {
        let mut t = self.build();
        t.with(tabled::settings::Style::markdown());
        t.to_string()
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_else(|| "–".into())
}

/// A paired difference in percentage points with its interval.
fn pp_ci(f: Option<metrics::Figure>) -> String {
    match f {
        Some(f) if f.low < f.high => {
            format!("{:+.1} [{:+.1}, {:+.1}]", f.value * 100.0, f.low * 100.0, f.high * 100.0)
        }
        Some(f) => format!("{:+.1}", f.value * 100.0),
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

/// Axes whose value differs between points (the columns worth showing).
pub fn varying_axes(points: &[&ConfigPoint]) -> Vec<String> {
    let all: BTreeSet<&String> = points.iter().flat_map(|p| p.axes.keys()).collect();
    all.into_iter()
        .filter(|a| *a != "strategy" && *a != "summarizer")
        .filter(|a| points.iter().filter_map(|p| p.axes.get(*a)).collect::<BTreeSet<_>>().len() > 1)
        .cloned()
        .collect()
}

/// Per-point metric values over its conversations (one per conversation where the metric applies).
pub fn metric_values(plan: &Plan, cells: &[CellResult], point: &str, metric: &str) -> Vec<f64> {
    let pricing = plan.points.iter().find(|p| p.id == point).and_then(|p| metrics::point_pricing(plan, p));
    cells
        .iter()
        .filter(|c| c.cell.point == point)
        .filter_map(|c| metrics::conversation_values(c, pricing.as_ref()).get(metric).copied())
        .collect()
}

/// The headline table: one row per config point (the same table `run` prints, with intervals).
pub fn headline(plan: &Plan, cells: &[CellResult], wide: bool, markdown: bool) -> String {
    let summaries = summarize(plan, cells);
    table(&summaries, TableOptions { wide, intervals: true, markdown })
}

/// What a paired comparison subtracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Against {
    /// The `none` point of the same window.
    NoCompression,
    /// The reference's default point.
    Reference,
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
    let reference = aggregate::reference_point(plan);
    let reference_parts = reference.map(parts_of);
    let compared: Vec<&metrics::Metric> =
        ["tokens_vs_none", "usd_vs_none", "early_only_retention"].iter().filter_map(|m| metrics::metric(m)).collect();
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
            Against::NoCompression => aggregate::none_point(plan, p).map(parts_of),
            Against::Reference => reference_parts.clone(),
        };
        let mut row = vec![(i + 1).to_string(), p.strategy.kind().to_string(), convs.to_string()];
        for m in &compared {
            let d = base.as_ref().and_then(|a| metrics::paired_difference(m, parts.get(m.name)?, a.get(m.name)?));
            row.push(pp_ci(d));
        }
        rows.push(row);
    }
    Table { header, rows }
}

/// The default point of each strategy: the first main-grid point of each kind, in plan order.
pub fn default_points(plan: &Plan) -> Vec<usize> {
    let mut seen = BTreeSet::new();
    (0..plan.points.len())
        .filter(|&i| plan.points[i].slice.is_none() && seen.insert(plan.points[i].strategy.kind()))
        .collect()
}

/// A figure for a table cell: value, and the interval of a share (n is in `results/scopes.csv`).
fn figure_cell(name: &str, f: Option<&metrics::Figure>, with_ci: bool) -> String {
    match (metrics::metric(name), f) {
        (Some(m), Some(f)) if with_ci && m.unit == metrics::Unit::Share && f.low < f.high => {
            format!("{} [{:.1}, {:.1}]", metrics::format_value(m, f.value), f.low * 100.0, f.high * 100.0)
        }
        (Some(m), Some(f)) => metrics::format_value(m, f.value),
        _ => "–".into(),
    }
}

/// Headline figures of each strategy's default point per scope (pooled, actionable, each source), with the
/// paired differences from the reference point: one table for cost, one for quality and storms (each fits
/// 120 columns; points by `#`).
pub fn scopes_tables(plan: &Plan, scopes: &[aggregate::ScopeFigures]) -> [Table; 3] {
    let shown = default_points(plan);
    let groups: [(&[&str], &str, &str); 3] = [
        (&["tokens_vs_none", "usd_vs_none", "cached_usd_vs_none"], "tokens_vs_none", "Δ tokens − ref. (pp)"),
        (&["early_only_retention", "at_risk_retention"], "early_only_retention", "Δ early-only − ref. (pp)"),
        (&["compressions_per_100_requests", "storm_events"], "storm_events", "Δ storms − ref. (per conv.)"),
    ];
    groups.map(|(own, diff, diff_header)| {
        let mut header: Vec<String> = ["#", "scope", "convs"].map(String::from).to_vec();
        header.extend(own.iter().map(|n| metrics::metric(n).map(|m| m.title()).unwrap_or_default()));
        header.push(diff_header.to_string());
        let mut rows = Vec::new();
        for &i in &shown {
            for r in scopes.iter().filter(|r| r.point == i) {
                let scope = match &r.scope {
                    aggregate::Scope::Source(s) => s.clone(),
                    other => other.to_string(),
                };
                let mut row = vec![(i + 1).to_string(), scope, r.conversations.to_string()];
                // Intervals on the compared figure and the retention figures (the USD ratios follow the
                // token ratio's; their intervals are in results/scopes.csv).
                row.extend(own.iter().map(|n| figure_cell(n, r.figures.get(n), !n.contains("usd"))));
                let d = r.vs_reference.get(diff).copied();
                let mut cell = if diff == "storm_events" { count_ci(d) } else { pp_ci(d) };
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
    if let Some(reference) = aggregate::reference_point(plan) {
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
                pct((splittable > 0).then(|| compressing as f64 / splittable as f64)),
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
    let reference = aggregate::reference_point(plan)?;
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
    let none = plan.points.iter().find(|p| p.strategy.kind() == "none" && p.slice.is_none()).map(|p| p.id.clone());
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

/// Findings on the setup and the paired comparisons, from the scope figures.
fn scope_findings(plan: &Plan, cells: &[CellResult], scopes: &[aggregate::ScopeFigures]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(reference) = aggregate::reference_point(plan) else { return out };
    let Some(ri) = plan.points.iter().position(|p| p.id == reference.id) else { return out };
    let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == reference.id).collect();
    let below = mine.iter().filter(|c| c.result.trigger_below_first_request()).count();
    let compressions: usize = mine.iter().map(|c| c.result.compressions().count()).sum();
    let storms: u64 = mine.iter().map(|c| c.result.storm_events()).sum();
    let per_source: Vec<String> = scopes
        .iter()
        .filter(|r| r.point == ri && matches!(r.scope, aggregate::Scope::Source(_)))
        .filter_map(|r| {
            let f = r.figures.get("compressions_per_100_requests")?;
            Some(format!("{} {:.1}", r.scope.to_string().trim_start_matches("source:"), f.value))
        })
        .collect();
    out.push(format!(
        "Under `{}` (window `{}`): {below} of {} conversations have a trigger at or below their first request; {compressions} compressions, {storms} of them left the request at or above the trigger (storm events); compressions per 100 requests by source: {}.",
        reference.short_label(),
        plan.replay.token_limit,
        mine.len(),
        per_source.join(", ")
    ));
    let get = |i: usize, scope: &aggregate::Scope| scopes.iter().find(|r| r.point == i && &r.scope == scope);
    if let (Some(pooled), Some(actionable)) =
        (get(ri, &aggregate::Scope::Pooled), get(ri, &aggregate::Scope::Actionable))
    {
        if let (Some(p), Some(a)) = (pooled.figures.get("tokens_vs_none"), actionable.figures.get("tokens_vs_none")) {
            out.push(format!(
                "The reference's tokens vs none is {:.1} % pooled over {} conversations and {:.1} % [{:.1}, {:.1}] over the {} it can act on.",
                p.value * 100.0,
                pooled.conversations,
                a.value * 100.0,
                a.low * 100.0,
                a.high * 100.0,
                actionable.conversations
            ));
        }
    }
    out
}

/// Findings worth a sentence, computed from the data.
pub fn findings(plan: &Plan, cells: &[CellResult], scopes: &[aggregate::ScopeFigures]) -> Vec<String> {
    let mut out = scope_findings(plan, cells, scopes);
    if let Some(p) = aggregate::reference_point(plan) {
        let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
        let unsplittable: Vec<&&CellResult> = mine.iter().filter(|c| c.result.unsplittable).collect();
        if !unsplittable.is_empty() {
            let mut per_source: BTreeMap<&str, usize> = BTreeMap::new();
            for c in &unsplittable {
                *per_source.entry(c.source.as_str()).or_default() += 1;
            }
            let never = unsplittable.iter().filter(|c| c.result.compressed_events() == 0).count();
            out.push(format!(
                "{} of {} conversations are unsplittable ({}): one user task followed only by tool responses, so the current `findCompressSplitPoint` (upstream 2025-09-27, and the 2025-09-18 candidate rules) has no split candidate but index 0 and the reference returns NOOP; {never} of them never compress under `{}`. The split-variant table shows what the historical variants do with them.",
                unsplittable.len(),
                mine.len(),
                per_source.iter().map(|(s, n)| format!("{s}: {n}")).collect::<Vec<_>>().join(", "),
                p.short_label()
            ));
        }
    }
    // One line for every point with hidden inflation or deflation (they repeat across a grid).
    let summaries = summarize(plan, cells);
    let mut flagged = Vec::new();
    for s in &summaries {
        let hidden = s.figures.get("hidden_inflation_events").copied().unwrap_or(0.0);
        let deflated = s.figures.get("hidden_deflation_events").copied().unwrap_or(0.0);
        if hidden > 0.0 || deflated > 0.0 {
            let number = plan.point_number(&s.point).map(|n| n.to_string()).unwrap_or_default();
            flagged.push((number, hidden, deflated));
        }
    }
    if !flagged.is_empty() {
        let list: Vec<String> = flagged.iter().map(|(n, h, d)| format!("#{n} {h}/{d}")).collect();
        let total: f64 = flagged.iter().map(|(_, h, _)| h).sum();
        out.push(format!(
            "Hidden inflation at {} points ({total} events in all): a reduction was reported while the request grew; hidden deflation: discarded as inflated while the request would have shrunk. Per point, inflation/deflation events: {}.",
            flagged.len(),
            list.join(", ")
        ));
    }
    out
}

/// Early-only retention of each reference point against drop-oldest at the same threshold: the paired
/// difference over the same conversations and probes (cluster bootstrap), judged as the claims are
/// ([`supports::judge`]); overlapping marginal intervals decide nothing.
fn probe_comparisons(plan: &Plan, cells: &[CellResult]) -> String {
    use std::fmt::Write;
    let Some(m) = metrics::metric("early_only_retention") else { return String::new() };
    let parts = |p: &ConfigPoint| supports::point_parts(plan, cells, p).remove(m.name);
    let main = |kind: &'static str| plan.points.iter().filter(move |p| p.slice.is_none() && p.strategy.kind() == kind);
    let mut out = String::new();
    for d in main("drop-oldest") {
        let Some(dp) = parts(d) else { continue };
        for g in main("gemini").filter(|g| g.axes.get("threshold") == d.axes.get("threshold")) {
            let Some(j) = parts(g).and_then(|gp| supports::judge_pairs(m, &gp, &dp, None)) else { continue };
            let diff = j.difference;
            let verdict = match j.verdict {
                supports::Verdict::Established => j.verdict.name().to_string(),
                v => format!("{} ({})", v.name(), j.reason),
            };
            let _ = writeln!(
                out,
                "- Early-only retention, {} − {}: {:+.1} pp [{:+.1}, {:+.1}] over {} conversations, {verdict}.",
                g.short_label(),
                d.short_label(),
                diff.value * 100.0,
                diff.low * 100.0,
                diff.high * 100.0,
                diff.n
            );
        }
    }
    if !out.is_empty() {
        out.insert_str(0, "\nPaired differences (same conversations and probes, cluster bootstrap):\n\n");
    }
    out
}

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

/// Draws every plot of the report into `dir`.
pub fn draw_plots(plan: &Plan, cells: &[CellResult], dir: &Path) -> PlotList {
    let mut list = PlotList::default();
    let _ = std::fs::create_dir_all(dir);
    // 1. The sawtooth: under the reference point, the conversation with the most compressions (one where
    // compression fires), one series per strategy's first main-grid point.
    let first_of_kind: Vec<&ConfigPoint> = {
        let mut seen = BTreeSet::new();
        plan.points.iter().filter(|p| p.slice.is_none() && seen.insert(p.strategy.kind())).collect()
    };
    let reference = aggregate::reference_point(plan);
    let conv = reference.and_then(|g| {
        cells
            .iter()
            .filter(|c| c.cell.point == g.id && c.result.compressed_events() > 0)
            .max_by_key(|c| (c.result.compressed_events(), std::cmp::Reverse(c.cell.conversation.clone())))
            .map(|c| c.cell.conversation.clone())
    });
    if let (Some(conv), Some(reference)) = (conv, reference) {
        let mut series = Vec::new();
        let mut markers = Vec::new();
        for p in &first_of_kind {
            if let Some(c) = cells.iter().find(|c| c.cell.point == p.id && c.cell.conversation == conv) {
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
                            e.status != crate::compress::CompressionStatus::ContentTruncated
                                || p.strategy.kind() != "observation-masking"
                        })
                        .map(|e| plots::Marker {
                            x: e.request as f64,
                            series: idx,
                            label: e.status.name().to_string(),
                        }),
                );
            }
        }
        note(
            &mut list,
            &format!("Request size (tokens, as sent) per request of `{conv}`, with compression events, for the first point of each strategy; reference: `{}`", reference.short_label()),
            plots::timeline(dir, "timeline", &format!("Context timeline: {conv} ({})", reference.short_label()), &series, &markers),
        );
    }
    // 2. Mean reduction versus threshold, one series per preserve fraction (reference points, other axes
    // pooled).
    let gem: Vec<&ConfigPoint> =
        plan.points.iter().filter(|p| p.strategy.kind() == "gemini" && p.slice.is_none()).collect();
    let uniq = |axis: &str| -> Vec<String> {
        let mut v: Vec<String> = gem.iter().filter_map(|p| p.axes.get(axis).cloned()).collect();
        v.sort_by(|a, b| a.parse::<f64>().unwrap_or(0.0).total_cmp(&b.parse::<f64>().unwrap_or(0.0)));
        v.dedup();
        v
    };
    let (thresholds, preserves) = (uniq("threshold"), uniq("preserve_fraction"));
    let series: Vec<plots::Series> = preserves
        .iter()
        .map(|keep| plots::Series {
            name: format!("preserve {keep}"),
            points: thresholds
                .iter()
                .filter_map(|t| {
                    let pts: Vec<&ConfigPoint> = gem
                        .iter()
                        .copied()
                        .filter(|p| p.axes.get("threshold") == Some(t) && p.axes.get("preserve_fraction") == Some(keep))
                        .collect();
                    Some((t.parse().ok()?, pooled(plan, cells, &pts, "reduction")? * 100.0))
                })
                .collect(),
        })
        .collect();
    note(
        &mut list,
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
    // 3. Heatmap: a quality metric versus preserve fraction (rows) and threshold (columns).
    // The headline quality figure when there are probes.
    let metric = if cells.iter().any(|c| c.probes.is_some()) { "early_only_retention" } else { "tokens_vs_none" };
    let values: Vec<Vec<Option<f64>>> = preserves
        .iter()
        .map(|r| {
            thresholds
                .iter()
                .map(|c| {
                    let pts: Vec<&ConfigPoint> = gem
                        .iter()
                        .copied()
                        .filter(|p| p.axes.get("threshold") == Some(c) && p.axes.get("preserve_fraction") == Some(r))
                        .collect();
                    pooled(plan, cells, &pts, metric)
                })
                .collect()
        })
        .collect();
    let x_labels: Vec<String> = thresholds.iter().map(|c| format!("threshold {c}")).collect();
    let y_labels: Vec<String> = preserves.iter().map(|r| format!("preserve {r}")).collect();
    note(
        &mut list,
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
    // 4. Pareto: cost versus quality, one numbered point per configuration (the key is a table in the
    // report). Slices cover other conversations, so only the main grid.
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
        &mut list,
        &format!("Cost vs none (tokens, summarizer included) versus {quality}, one numbered point per configuration (key below); the front is the set no other point beats on both"),
        plots::pareto(dir, "pareto", &format!("Cost vs {quality}"), "cost vs none (Σ request + summarizer tokens / Σ none)", quality, &pts),
    );
    // 5. Histogram of verification-pass changes, on [0, 1].
    let deltas: Vec<f64> = cells
        .iter()
        .flat_map(|c| c.result.events.iter().filter_map(|e| e.verification.as_ref().map(|v| v.edit_distance)))
        .collect();
    note(
        &mut list,
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
    list
}

/// What `report` produced.
pub struct ReportOutput {
    pub markdown_path: PathBuf,
    pub terminal: String,
    pub plots: PlotList,
}

/// Why `report` could not rebuild a run's outputs.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The run directory has no readable plan.
    #[error(transparent)]
    Plan(#[from] sweep::runner::RunError),
    /// The cells could not be turned into tables (a damaged cell that passed the loader's checks).
    #[error("{}: aggregation: {source}", .run_dir.display())]
    Aggregate { run_dir: PathBuf, source: polars::error::PolarsError },
    /// A results file could not be written.
    #[error("{}: {source}", .path.display())]
    Results { path: PathBuf, source: polars::error::PolarsError },
    #[error(transparent)]
    Write(#[from] crate::fsutil::WriteError),
}

/// Rebuilds results, plots and `report.md` from a run directory.
pub fn build(run_dir: &Path, wide: bool) -> Result<ReportOutput, ReportError> {
    build_with_progress(run_dir, wide, &mut |_| {})
}

/// [`build`], naming each stage to `progress` as it starts (the CLI prints them: a report of a large run
/// takes a while).
pub fn build_with_progress(
    run_dir: &Path,
    wide: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<ReportOutput, ReportError> {
    progress("reading cells");
    let plan = sweep::runner::load_plan(run_dir)?;
    let cells = sweep::collect(run_dir, &plan);
    progress(&format!("figures of {} cells by scope", cells.len()));
    let scopes = aggregate::scope_figures(&plan, &cells);
    progress("results files");
    let mut frames = aggregate::frames(&plan, &cells, &scopes)
        .map_err(|source| ReportError::Aggregate { run_dir: run_dir.to_path_buf(), source })?;
    let results = run_dir.join("results");
    aggregate::write_frames(&mut frames, &results)
        .map_err(|source| ReportError::Results { path: results.clone(), source })?;
    crate::probes::figures::write_probe_rows(&plan, &cells, &results)
        .map_err(|source| ReportError::Results { path: results.join("probes.csv"), source })?;
    progress("claims");
    let claims = supports::claims(&plan, &cells);
    supports::write_claims(&claims, &results)
        .map_err(|source| ReportError::Results { path: results.join("claims.csv"), source })?;
    progress("plots");
    let plots = draw_plots(&plan, &cells, &run_dir.join("plots"));
    progress("report.md");
    let md = markdown(run_dir, &plan, &cells, &scopes, &claims, &plots, wide);
    let markdown_path = run_dir.join("report.md");
    crate::fsutil::write_atomic(&markdown_path, md.as_bytes())?;
    let terminal = format!("{}\n\n{}", headline(&plan, &cells, wide, false), sources_table(&plan, &cells).terminal());
    Ok(ReportOutput { markdown_path, terminal, plots })
}

/// `N of M cells`, with the grid behind M (slices cover fewer conversations).
pub fn cell_count(plan: &Plan, cells: &[CellResult]) -> String {
    let expected = plan.cells().len();
    let main = plan.points.iter().filter(|p| p.slice.is_none()).count();
    let main_convs = plan.conversations.len();
    let mut parts = vec![format!("{main} configurations × {main_convs} conversations")];
    let mut slices: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for p in plan.points.iter().filter(|p| p.slice.is_some()) {
        let n = plan
            .conversations
            .iter()
            .filter(|c| p.source.as_ref().is_none_or(|s| &c.source == s))
            .count()
            .min(p.max_conversations.unwrap_or(usize::MAX));
        let e = slices.entry(p.slice.as_deref().unwrap_or_default()).or_default();
        e.0 += 1;
        e.1 = n;
    }
    for (name, (points, convs)) in slices {
        parts.push(format!("slice `{name}`: {points} × {convs}"));
    }
    format!("{} of {expected} cells ({}; × {} repeat(s)).", cells.len(), parts.join(" + "), plan.repeats)
}

fn markdown(
    run_dir: &Path,
    plan: &Plan,
    cells: &[CellResult],
    scopes: &[aggregate::ScopeFigures],
    claims: &[supports::Claim],
    plots: &PlotList,
    wide: bool,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# compactbench report: {}\n", plan.name);
    let _ = writeln!(md, "{}\n", cell_count(plan, cells));
    md.push_str("## Headline\n\n");
    let _ = writeln!(
        md,
        "Every token figure is a request as it would be sent (system prompt + tool declarations + history + pending turn) counted with `{}`; *tokens vs none* is Σ (request + summarizer tokens) / Σ request tokens of the same conversations without compression (a ratio of sums, lower is cheaper); *USD vs none* is the same in USD at the configured prices; *cached USD* bills each request's prefix shared with the previous request at the cached input price. Every figure here is pooled over all conversations; per source and over the conversations a strategy can act on: *Headline by scope*. Intervals are bootstrap 95 % intervals over conversations ({} resamples, seed {:#x}). Definitions: `harness/docs/metrics.md`.\n",
        plan.replay.tokenizer.name(),
        crate::stats::BOOTSTRAP_RESAMPLES,
        crate::stats::BOOTSTRAP_SEED
    );
    md.push_str(&headline(plan, cells, wide, true));
    md.push_str("\n\n");
    md.push_str(&supports::markdown(plan, cells, claims));
    md.push_str("## Headline by scope\n\nThe default point of each strategy over every conversation (*pooled*, diluted by conversations it cannot act on), over the conversations it can act on (*actionable*: it compressed, or the uncompressed replay reaches its trigger and has a split candidate), and per source. Points by `#` (the headline table's numbers); Δ: point − reference, paired by conversation over the same scope (for *actionable*: the conversations either can act on, their number as n= where it differs from the row's), 95 % cluster-bootstrap intervals; n of every figure in `results/scopes.csv`.\n\n");
    let [cost, quality, storms] = scopes_tables(plan, scopes);
    md.push_str("Cost:\n\n");
    md.push_str(&cost.markdown());
    md.push_str("\n\nWhat the history keeps:\n\n");
    md.push_str(&quality.markdown());
    md.push_str("\n\nHow often it compresses, and compressions that leave the request at or above the trigger:\n\n");
    md.push_str(&storms.markdown());
    let reference = aggregate::reference_point(plan);
    let _ = write!(
        md,
        "\n\n## Comparisons\n\nEach configuration (`#` as in the headline table) minus `none`, then minus the reference point (#{} `{}`), paired per conversation (the same conversations and probes on both sides; cluster bootstrap: conversations resampled jointly): differences in percentage points with 95 % intervals. Which of them the data supports (interval excluding 0, sign kept with any one conversation left out): *What this run supports*.\n\n### All sources (pooled)\n\n",
        reference.and_then(|r| plan.point_number(&r.id)).map(|n| n.to_string()).unwrap_or_default(),
        reference.map(ConfigPoint::short_label).unwrap_or_default()
    );
    let sources: BTreeSet<&str> = cells.iter().map(|c| c.source.as_str()).filter(|s| !s.is_empty()).collect();
    for source in std::iter::once(None).chain(sources.into_iter().map(Some)) {
        if let Some(s) = source {
            let _ = write!(md, "\n\n### {s}\n\n");
        }
        md.push_str("Against `none`:\n\n");
        md.push_str(&comparisons(plan, cells, source, Against::NoCompression).markdown());
        md.push_str("\n\nAgainst the reference point:\n\n");
        md.push_str(&comparisons(plan, cells, source, Against::Reference).markdown());
    }
    md.push_str("\n\n## Sources under the reference point\n\n");
    md.push_str("Unsplittable: the recorded history has no split candidate (a user turn without function responses) after its first Content. *Trigger sees*: what the trigger saw as the last prompt count.\n\n");
    md.push_str(&sources_table(plan, cells).markdown());
    md.push_str("\n\nWhere the trigger sits and how often it fires. *Trigger ≤ 1st request*: conversations whose first request (system prompt + tools + first turn) already reaches the trigger (`trigger_below_overhead`). *Compressions*: COMPRESSED and CONTENT_TRUNCATED events. *Storms*: compressions that leave the request at or above the trigger, so the next request compresses again (`storm_events`).\n\n");
    md.push_str(&triggers_table(plan, cells).markdown());
    if let Some(t) = split_variants_table(plan, cells) {
        md.push_str("\n\nWhere each historical `findCompressSplitPoint` variant would split the unsplittable histories (the history before the last request, keeping 30 %):\n\n");
        md.push_str(&t.markdown());
    }
    md.push_str("\n\n");
    let f = findings(plan, cells, scopes);
    if !f.is_empty() {
        md.push_str("## Findings\n\n");
        for x in f {
            let _ = writeln!(md, "- {x}");
        }
        md.push('\n');
    }
    md.push_str(&crate::probes::figures::markdown_section(plan, cells, &probe_comparisons(plan, cells)));
    if let Some(t) = kinds::table(plan, cells) {
        md.push_str(
            "## At the compression points, by probe kind

",
        );
        md.push_str("*Kept at compressions* (`kept_at_compressions`): over (probe, compression) pairs, probes whose evidence lies before the compression, the share whose gold the history holds right after it (0 from the conversation's first request over the window on); per kind, for each strategy's default point that compressed. *Pairs*: probe × compression scorings; *compressions*: that point's compressions in the conversations scored. Δ: paired by conversation against the agent's own compaction (`recorded`, where the plan has it) and against the reference, 95 % cluster-bootstrap intervals; ✓ marks an established difference (interval excludes 0 and no one conversation, left out, turns its sign). With `compress_at = \"recorded\"` every strategy compresses at the agent's own points, so both sides are the same compactions.\n\n");
        md.push_str(&t.markdown());
        md.push_str("\n\n");
    }
    if let Some(t) = systems::per_system(plan, cells) {
        md.push_str("## Per system\n\n");
        md.push_str("Each agent's policy as modelled in `replay/strategies/` (`compactbench strategies`). *Tokens vs none*: the sum of every request's size and the summarizer's tokens against the same replay without compression; *early-only retention*: share of the probes whose answer only the early history holds that are still answerable from the final history; *compressions*: COMPRESSED and CONTENT_TRUNCATED events; *storms*: compressions that left the request at or above the strategy's own trigger (– where the trigger is not a token count); *overflows*: requests larger than the window.\n\n");
        md.push_str(&t.markdown());
        md.push_str("\n\n");
    }
    md.push_str("## Plots\n\n");
    for (caption, files) in &plots.written {
        let rel = files.png.strip_prefix(run_dir).unwrap_or(&files.png).display().to_string();
        let svg = files.svg.strip_prefix(run_dir).unwrap_or(&files.svg).display().to_string();
        let _ = writeln!(md, "![{caption}]({rel})\n\n*{caption}* ([SVG]({svg}))\n");
    }
    if !plots.pareto_key.is_empty() {
        let key = Table {
            header: ["#", "configuration", "cost vs none ↓", "quality ↑"].map(String::from).to_vec(),
            rows: plots
                .pareto_key
                .iter()
                .map(|(i, l, x, y)| vec![i.to_string(), l.clone(), pct(Some(*x)), pct(Some(*y))])
                .collect(),
        };
        md.push_str("Pareto plot key:\n\n");
        md.push_str(&key.markdown());
        md.push_str("\n\n");
    }
    for e in &plots.failed {
        let _ = writeln!(md, "- not drawn: {e}");
    }
    md.push_str("\n## Corpus\n\n");
    md.push_str(&corpus(plan, cells).markdown());
    md.push_str("\n\n## Configuration\n\n");
    let replay = serde_json::to_string_pretty(&plan.replay).unwrap_or_default();
    let _ = writeln!(md, "Replay settings:\n\n```json\n{replay}\n```\n");
    let cost = serde_json::to_string_pretty(&plan.cost).unwrap_or_default();
    let _ = writeln!(md, "Prices (USD per million tokens):\n\n```json\n{cost}\n```\n");
    // One key table for the main grid and one per slice, each with the axes that vary in it (a slice's
    // points show every axis that varies anywhere in the plan).
    let all_varying = varying_axes(&plan.points.iter().collect::<Vec<_>>());
    let mut slices: Vec<Option<&str>> = vec![None];
    for p in &plan.points {
        if p.slice.is_some() && !slices.contains(&p.slice.as_deref()) {
            slices.push(p.slice.as_deref());
        }
    }
    for slice in slices {
        let group: Vec<(usize, &ConfigPoint)> = plan
            .points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.slice.as_deref() == slice)
            .map(|(i, p)| (i + 1, p))
            .collect();
        let varying = match slice {
            None => varying_axes(&group.iter().map(|(_, p)| *p).collect::<Vec<_>>()),
            Some(name) => {
                let _ = writeln!(md, "Slice `{name}`:\n");
                all_varying.clone()
            }
        };
        let mut cfg = Table {
            header: ["#", "point", "strategy", "summarizer", "axes that vary"].map(String::from).to_vec(),
            rows: Vec::new(),
        };
        for (number, p) in group {
            let axes: Vec<String> = p
                .axes
                .iter()
                .filter(|(k, _)| varying.contains(k))
                .map(|(k, v)| format!("{}={v}", crate::sweep::summary::axis_header(k)))
                .collect();
            cfg.rows.push(vec![
                number.to_string(),
                p.id.clone(),
                p.strategy.kind().into(),
                p.summarizer.clone().unwrap_or_else(|| "–".into()),
                axes.join(" "),
            ]);
        }
        md.push_str(&cfg.markdown());
        md.push_str("\n\n");
    }
    md.push_str("Results: `results/{events,conversations,points}.{parquet,csv,json}`, `results/probes.{csv,parquet}`; raw cells: `cells/`.\n");
    md
}
