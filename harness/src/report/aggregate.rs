//! Aggregation of a run's stored cells with polars: per event, per conversation (cell) and per config
//! point. Every figure comes from [`crate::metrics`]; this module lays them out as typed frames: numeric
//! axes as numbers (null where the strategy has no such knob), counts as integers, flags as booleans.

use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{self, Aggregation, FigureId, Metric, METRICS, PAIRED_FIGURES, SCOPE_FIGURES};
use polars::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Per-conversation figures, without USD figures (those need the plan's prices: see
/// [`metrics::conversation_values`]).
pub fn conversation_metrics(c: &CellResult) -> BTreeMap<FigureId, f64> {
    metrics::conversation_values(c, None)
}

/// The frames of a run.
pub struct Frames {
    pub events: DataFrame,
    pub conversations: DataFrame,
    pub points: DataFrame,
    /// Headline figures of every point per scope (pooled, actionable, each source).
    pub scopes: DataFrame,
}

fn axis_names(plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = plan.points.iter().flat_map(|p| p.axes.keys().cloned()).collect();
    names.sort();
    names.dedup();
    names.retain(|n| !crate::data::plan::is_identity_axis(n));
    names
}

/// An axis as typed columns, typed by its knob's kind in the registry (numbers, whole numbers, booleans,
/// strings); the grid's window as tokens plus the fraction of a relative window; null where a point
/// lacks the axis.
fn axis_columns(name: &str, values: &[Option<&String>]) -> Vec<Column> {
    use crate::replay::strategy::KnobKind;
    let f = |v: &Option<&String>| v.and_then(|s| s.parse::<f64>().ok());
    let i = |v: &Option<&String>| v.and_then(|s| s.parse::<i64>().ok());
    let kind = crate::replay::registry::knob(name).map(|k| k.kind);
    match kind {
        Some(KnobKind::Number) => vec![Column::new(name.into(), values.iter().map(f).collect::<Vec<_>>())],
        Some(KnobKind::Integer) => vec![Column::new(name.into(), values.iter().map(i).collect::<Vec<_>>())],
        Some(KnobKind::Bool) => vec![Column::new(
            name.into(),
            values.iter().map(|v| v.and_then(|s| s.parse::<bool>().ok())).collect::<Vec<_>>(),
        )],
        None if name == crate::data::plan::WINDOW_AXIS => {
            let limits: Vec<Option<crate::replay::TokenLimit>> =
                values.iter().map(|v| v.and_then(|s| s.parse().ok())).collect();
            vec![
                Column::new(name.into(), limits.iter().map(|l| l.and_then(|l| l.tokens())).collect::<Vec<_>>()),
                Column::new(
                    "token_limit_relative".into(),
                    limits.iter().map(|l| l.filter(|l| l.is_relative()).map(|l| l.to_string())).collect::<Vec<_>>(),
                ),
            ]
        }
        _ => vec![Column::new(name.into(), values.iter().map(|v| v.cloned()).collect::<Vec<_>>())],
    }
}

/// Point columns (strategy, summarizer, slice, typed axes) for rows belonging to `points`.
fn point_columns(axes: &[String], points: &[Option<&ConfigPoint>]) -> Vec<Column> {
    let mut cols = vec![
        Column::new(
            "strategy".into(),
            points.iter().map(|p| p.map(|p| p.strategy.kind().to_string())).collect::<Vec<_>>(),
        ),
        Column::new(
            "summarizer".into(),
            points.iter().map(|p| p.and_then(|p| p.summarizer.clone())).collect::<Vec<_>>(),
        ),
        Column::new("slice".into(), points.iter().map(|p| p.and_then(|p| p.slice.clone())).collect::<Vec<_>>()),
    ];
    for a in axes {
        let values: Vec<Option<&String>> = points.iter().map(|p| p.and_then(|p| p.axes.get(a))).collect();
        cols.extend(axis_columns(a, &values));
    }
    cols
}

/// A metric's values as a column of its unit's type (counts as integers), under its name.
fn metric_column(m: &Metric, values: Vec<Option<f64>>) -> Column {
    if m.is_integer() {
        Column::new(m.name.into(), values.iter().map(|v| v.map(|v| v.round() as i64)).collect::<Vec<_>>())
    } else {
        Column::new(m.name.into(), values)
    }
}

/// Which of a point's conversations a figure is over.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Every conversation: diluted by those the strategy cannot act on.
    Pooled,
    /// The conversations the strategy can act on ([`ConversationResult::actionable`]); a paired difference
    /// is over those either point can act on.
    ///
    /// [`ConversationResult::actionable`]: crate::replay::ConversationResult::actionable
    Actionable,
    /// One source's conversations.
    Source(String),
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Pooled => f.write_str("pooled"),
            Scope::Actionable => f.write_str("actionable"),
            Scope::Source(s) => write!(f, "source:{s}"),
        }
    }
}

/// One point's headline figures over one scope, with its paired differences from the reference point.
#[derive(Clone, Debug)]
pub struct ScopeFigures {
    /// Index of the point in the plan.
    pub point: usize,
    pub scope: Scope,
    pub conversations: usize,
    pub figures: BTreeMap<FigureId, metrics::Figure>,
    /// Point − reference, paired by conversation (cluster bootstrap over the conversations of the scope;
    /// for `actionable`, those either point can act on).
    pub vs_reference: BTreeMap<FigureId, metrics::Figure>,
}

/// Every point's headline figures ([`SCOPE_FIGURES`]) per scope: pooled, actionable, then each source.
pub fn scope_figures(plan: &Plan, cells: &[CellResult]) -> Vec<ScopeFigures> {
    let sources: BTreeSet<&str> = cells.iter().map(|c| c.source.as_str()).filter(|s| !s.is_empty()).collect();
    let scopes: Vec<Scope> = [Scope::Pooled, Scope::Actionable]
        .into_iter()
        .chain(sources.into_iter().map(|s| Scope::Source(s.to_string())))
        .collect();
    let headline: Vec<&metrics::Metric> =
        SCOPE_FIGURES.iter().flat_map(|group| group.iter()).map(|id| id.metric()).collect();
    // Each cell's parts once (probe figures walk every scoring): every scope and pairing picks from them.
    let pricing = point_prices(plan);
    let cell_parts: Vec<BTreeMap<FigureId, metrics::Parts>> = cells
        .iter()
        .map(|c| {
            let o =
                metrics::Observation { cell: c, pricing: pricing.get(c.cell.point.as_str()).and_then(Option::as_ref) };
            headline.iter().filter_map(|m| Some((m.id, m.parts(&o)?))).collect()
        })
        .collect();
    let of_point = |p: &ConfigPoint| (0..cells.len()).filter(|&k| cells[k].cell.point == p.id).collect::<Vec<_>>();
    // A metric's parts over some cells, named by conversation (what `paired_difference` pairs on).
    let gather = |ks: &mut dyn Iterator<Item = usize>, m: FigureId| -> Vec<(String, metrics::Parts)> {
        ks.filter_map(|k| Some((cells[k].cell.conversation.clone(), *cell_parts[k].get(&m)?))).collect()
    };
    let reference = plan.reference_point();
    let reference_cells = reference.map(of_point).unwrap_or_default();
    let mut out = Vec::new();
    for (i, p) in plan.points.iter().enumerate() {
        let mine = of_point(p);
        for scope in &scopes {
            let in_scope = |k: &usize| match scope {
                Scope::Pooled => true,
                Scope::Actionable => cells[*k].result.actionable(),
                Scope::Source(s) => cells[*k].source == *s,
            };
            let own: Vec<usize> = mine.iter().copied().filter(in_scope).collect();
            if own.is_empty() && scope != &Scope::Pooled {
                continue;
            }
            let figures = headline
                .iter()
                .filter_map(|m| {
                    let ps: Vec<metrics::Parts> =
                        gather(&mut own.iter().copied(), m.id).into_iter().map(|x| x.1).collect();
                    Some((m.id, metrics::figure(m, &ps)?))
                })
                .collect();
            // The conversations a paired difference is over: in scope for either point when the scope
            // depends on the point (actionable), else the scope's.
            let paired: BTreeSet<&str> = own
                .iter()
                .chain(reference_cells.iter().filter(|k| *scope == Scope::Actionable && in_scope(k)))
                .map(|&k| cells[k].cell.conversation.as_str())
                .collect();
            let pick = |ks: &[usize]| {
                ks.iter().copied().filter(|&k| paired.contains(cells[k].cell.conversation.as_str())).collect::<Vec<_>>()
            };
            let (a, b) = (pick(&mine), pick(&reference_cells));
            let vs_reference = if reference.is_some() {
                headline
                    .iter()
                    .filter_map(|m| {
                        let d = metrics::paired_difference(
                            m,
                            &gather(&mut a.iter().copied(), m.id),
                            &gather(&mut b.iter().copied(), m.id),
                        )?;
                        Some((m.id, d))
                    })
                    .collect()
            } else {
                BTreeMap::new()
            };
            out.push(ScopeFigures { point: i, scope: scope.clone(), conversations: own.len(), figures, vs_reference });
        }
    }
    out
}

/// The figure columns of one metric: its value (typed by its unit), `_n`, and for a ratio of sums its
/// interval (`_ci_low`, `_ci_high`).
fn figure_columns(m: &Metric, figures: &[Option<metrics::Figure>]) -> Vec<Column> {
    let name = m.name;
    let mut columns = vec![
        metric_column(m, figures.iter().map(|f| f.map(|f| f.value)).collect()),
        Column::new(format!("{name}_n").into(), figures.iter().map(|f| f.map(|f| f.n as u64)).collect::<Vec<_>>()),
    ];
    if m.aggregation == Aggregation::RatioOfSums {
        columns.push(Column::new(
            format!("{name}_ci_low").into(),
            figures.iter().map(|f| f.map(|f| f.low)).collect::<Vec<_>>(),
        ));
        columns.push(Column::new(
            format!("{name}_ci_high").into(),
            figures.iter().map(|f| f.map(|f| f.high)).collect::<Vec<_>>(),
        ));
    }
    columns
}

/// A paired difference's columns: `<prefix>` (the difference), `<prefix>_ci_low`, `<prefix>_ci_high`.
fn difference_columns(prefix: &str, diffs: &[Option<metrics::Figure>]) -> Vec<Column> {
    [("", 0), ("_ci_low", 1), ("_ci_high", 2)]
        .into_iter()
        .map(|(suffix, k)| {
            let v: Vec<Option<f64>> = diffs.iter().map(|d| d.map(|d| [d.value, d.low, d.high][k])).collect();
            Column::new(format!("{prefix}{suffix}").into(), v)
        })
        .collect()
}

/// `results/scopes.*`: one row per point × scope.
fn scopes_frame(plan: &Plan, rows: &[ScopeFigures]) -> PolarsResult<DataFrame> {
    let mut columns = vec![
        Column::new("point".into(), rows.iter().map(|r| plan.points[r.point].id.clone()).collect::<Vec<_>>()),
        Column::new(
            "strategy".into(),
            rows.iter().map(|r| plan.points[r.point].strategy.kind().to_string()).collect::<Vec<_>>(),
        ),
        Column::new("slice".into(), rows.iter().map(|r| plan.points[r.point].slice.clone()).collect::<Vec<_>>()),
        Column::new("scope".into(), rows.iter().map(|r| r.scope.to_string()).collect::<Vec<_>>()),
        Column::new("conversations".into(), rows.iter().map(|r| r.conversations as u64).collect::<Vec<_>>()),
    ];
    for &id in SCOPE_FIGURES.iter().flat_map(|group| group.iter()) {
        let own: Vec<Option<metrics::Figure>> = rows.iter().map(|r| r.figures.get(&id).copied()).collect();
        let diff: Vec<Option<metrics::Figure>> = rows.iter().map(|r| r.vs_reference.get(&id).copied()).collect();
        columns.extend(figure_columns(id.metric(), &own));
        columns.extend(difference_columns(&format!("{id}_diff_vs_reference"), &diff));
    }
    DataFrame::new(rows.len(), columns)
}

/// The frames of a run; `scopes` are its [`scope_figures`] (computed once by the caller, which also reports
/// them in Markdown).
pub fn frames(plan: &Plan, cells: &[CellResult], scopes: &[ScopeFigures]) -> PolarsResult<Frames> {
    let axes = axis_names(plan);
    let pricing = point_prices(plan);
    Ok(Frames {
        events: events_frame(plan, cells, &axes)?,
        conversations: conversations_frame(plan, cells, &axes, &pricing)?,
        points: points_frame(plan, cells, &axes, &pricing)?,
        scopes: scopes_frame(plan, scopes)?,
    })
}

/// Each point's prices by point id ([`metrics::point_pricing`]; `None` where the plan has none).
type Prices<'a> = BTreeMap<&'a str, Option<crate::pricing::Pricing>>;

fn point_prices(plan: &Plan) -> Prices<'_> {
    plan.points.iter().map(|p| (p.id.as_str(), metrics::point_pricing(plan, p))).collect()
}

/// The plan's points by id.
fn points_by_id(plan: &Plan) -> BTreeMap<&str, &ConfigPoint> {
    plan.points.iter().map(|p| (p.id.as_str(), p)).collect()
}

/// `results/events.*`: one row per compression event of every cell, with its cell's point.
fn events_frame(plan: &Plan, cells: &[CellResult], axes: &[String]) -> PolarsResult<DataFrame> {
    let points = points_by_id(plan);
    let point_of = |c: &CellResult| points.get(c.cell.point.as_str()).copied();
    let rows: Vec<(&CellResult, &crate::replay::CompressionEvent)> =
        cells.iter().flat_map(|c| c.result.events.iter().map(move |e| (c, e))).collect();
    let ev = |f: &dyn Fn(&crate::replay::CompressionEvent) -> u64| rows.iter().map(|(_, e)| f(e)).collect::<Vec<u64>>();
    let mut columns =
        vec![Column::new("point".into(), rows.iter().map(|(c, _)| c.cell.point.clone()).collect::<Vec<_>>())];
    columns.extend(point_columns(axes, &rows.iter().map(|(c, _)| point_of(c)).collect::<Vec<_>>()));
    columns.extend([
        Column::new("conversation".into(), rows.iter().map(|(c, _)| c.cell.conversation.clone()).collect::<Vec<_>>()),
        Column::new("repeat".into(), rows.iter().map(|(c, _)| c.cell.repeat).collect::<Vec<_>>()),
        Column::new("source".into(), rows.iter().map(|(c, _)| c.source.clone()).collect::<Vec<_>>()),
        Column::new("turn".into(), ev(&|e| e.turn as u64)),
        Column::new("request".into(), ev(&|e| e.request as u64)),
        Column::new("status".into(), rows.iter().map(|(_, e)| e.status.name()).collect::<Vec<_>>()),
        Column::new("forced".into(), rows.iter().map(|(_, e)| e.forced).collect::<Vec<_>>()),
        Column::new("request_tokens_before".into(), ev(&|e| e.request_tokens_before)),
        Column::new("request_tokens_after".into(), ev(&|e| e.request_tokens_after)),
        Column::new("reduction".into(), rows.iter().map(|(_, e)| e.reduction).collect::<Vec<_>>()),
        Column::new("reference_original_tokens".into(), ev(&|e| e.reference_original_tokens)),
        Column::new("reference_new_tokens".into(), ev(&|e| e.reference_new_tokens)),
        Column::new("hidden_inflation".into(), rows.iter().map(|(_, e)| e.hidden_inflation).collect::<Vec<_>>()),
        Column::new("hidden_deflation".into(), rows.iter().map(|(_, e)| e.hidden_deflation).collect::<Vec<_>>()),
        Column::new("summarized_contents".into(), ev(&|e| e.summarized_contents as u64)),
        Column::new("kept_contents".into(), ev(&|e| e.kept_contents as u64)),
        Column::new("summary_tokens".into(), ev(&|e| e.summary_tokens)),
        Column::new("summarizer_input_tokens".into(), ev(&|e| e.summarizer_input_tokens)),
        Column::new("summarizer_output_tokens".into(), ev(&|e| e.summarizer_output_tokens)),
        Column::new(
            "verification_identical".into(),
            rows.iter().map(|(_, e)| e.verification.as_ref().map(|v| v.identical)).collect::<Vec<_>>(),
        ),
        Column::new(
            "verification_token_delta".into(),
            rows.iter().map(|(_, e)| e.verification.as_ref().map(|v| v.token_delta)).collect::<Vec<_>>(),
        ),
        Column::new(
            "verification_edit_distance".into(),
            rows.iter().map(|(_, e)| e.verification.as_ref().map(|v| v.edit_distance)).collect::<Vec<_>>(),
        ),
    ]);
    DataFrame::new(rows.len(), columns)
}

/// `results/conversations.*`: one row per cell, with its point, its result's counts and costs, every
/// per-conversation metric not already a column, and its error.
fn conversations_frame(
    plan: &Plan,
    cells: &[CellResult],
    axes: &[String],
    pricing: &Prices,
) -> PolarsResult<DataFrame> {
    let points = points_by_id(plan);
    let point_of = |c: &CellResult| points.get(c.cell.point.as_str()).copied();
    let price_of = |c: &CellResult| pricing.get(c.cell.point.as_str()).copied().flatten();
    let mut columns = vec![Column::new("point".into(), cells.iter().map(|c| c.cell.point.clone()).collect::<Vec<_>>())];
    columns.extend(point_columns(axes, &cells.iter().map(point_of).collect::<Vec<_>>()));
    columns.extend([
        Column::new("conversation".into(), cells.iter().map(|c| c.cell.conversation.clone()).collect::<Vec<_>>()),
        Column::new("repeat".into(), cells.iter().map(|c| c.cell.repeat).collect::<Vec<_>>()),
        Column::new("source".into(), cells.iter().map(|c| c.source.clone()).collect::<Vec<_>>()),
    ]);
    let costs: Vec<Option<crate::pricing::Costs>> =
        cells.iter().map(|c| price_of(c).map(|p| p.costs(&c.result))).collect();
    columns.extend(result_columns(cells, &costs));
    let per_cell: Vec<BTreeMap<FigureId, f64>> =
        cells.iter().map(|c| metrics::conversation_values(c, price_of(c).as_ref())).collect();
    // Every figure a cell has parts of, where the replay's counts above have no column of its name.
    for m in METRICS.iter().filter(|m| m.per_cell()) {
        if columns.iter().any(|c| c.name().as_str() == m.name) {
            continue;
        }
        columns.push(metric_column(m, per_cell.iter().map(|x| x.get(&m.id).copied()).collect()));
    }
    columns.push(Column::new(
        "error".into(),
        cells.iter().map(|c| c.result.error.as_ref().map(|e| e.to_string())).collect::<Vec<_>>(),
    ));
    columns.push(Column::new(
        "error_kind".into(),
        cells.iter().map(|c| c.result.error.as_ref().map(|e| e.kind().name())).collect::<Vec<_>>(),
    ));
    DataFrame::new(cells.len(), columns)
}

/// A conversation row's replay counts, token totals and costs (`costs`: each cell's, where priced). The
/// counts and costs that are figures stand under the figure's name, as the replay's own integers.
fn result_columns(cells: &[CellResult], costs: &[Option<crate::pricing::Costs>]) -> Vec<Column> {
    let r = |f: &dyn Fn(&crate::replay::ConversationResult) -> u64| {
        cells.iter().map(|c| f(&c.result)).collect::<Vec<u64>>()
    };
    let figure = |id: FigureId| id.name().into();
    vec![
        Column::new("requests".into(), r(&|x| x.requests as u64)),
        Column::new("window_tokens".into(), r(&|x| x.token_limit)),
        Column::new(
            "prompt_count_source".into(),
            cells.iter().map(|c| c.result.prompt_count_source.clone()).collect::<Vec<_>>(),
        ),
        Column::new("unsplittable".into(), cells.iter().map(|c| c.result.unsplittable).collect::<Vec<_>>()),
        Column::new("request_tokens_total".into(), r(&|x| x.request_tokens_total)),
        Column::new("summarizer_tokens_total".into(), r(&|x| x.summarizer_tokens_total())),
        Column::new("summarizer_input_tokens_total".into(), r(&|x| x.summarizer_input_tokens_total)),
        Column::new("summarizer_output_tokens_total".into(), r(&|x| x.summarizer_output_tokens_total)),
        Column::new("none_request_tokens_total".into(), r(&|x| x.none_request_tokens_total)),
        Column::new("cached_request_tokens_total".into(), r(&|x| x.cached_request_tokens_total)),
        Column::new("none_cached_request_tokens_total".into(), r(&|x| x.none_cached_request_tokens_total)),
        Column::new("peak_request_tokens".into(), r(&|x| x.peak_request_tokens)),
        Column::new("none_peak_request_tokens".into(), r(&|x| x.none_peak_request_tokens)),
        Column::new("none_trigger_seen_peak_tokens".into(), r(&|x| x.none_trigger_seen_peak_tokens)),
        Column::new("first_request_tokens".into(), r(&|x| x.first_request_tokens)),
        Column::new("trigger_tokens".into(), cells.iter().map(|c| c.result.trigger_tokens).collect::<Vec<_>>()),
        Column::new("actionable".into(), cells.iter().map(|c| c.result.actionable()).collect::<Vec<_>>()),
        Column::new(figure(FigureId::CompressedEvents), r(&|x| x.compressed_events())),
        Column::new(figure(FigureId::OverflowGuardRefusals), r(&|x| x.overflow_guard_refusals)),
        Column::new(figure(FigureId::OverflowRequests), r(&|x| x.overflow_requests)),
        Column::new("none_overflow_requests".into(), r(&|x| x.none_overflow_requests)),
        Column::new(
            "first_overflow_request".into(),
            cells.iter().map(|c| c.result.first_overflow_request().map(|i| i as u64)).collect::<Vec<_>>(),
        ),
        Column::new(figure(FigureId::CostUsd), costs.iter().map(|c| c.map(|c| c.usd)).collect::<Vec<_>>()),
        Column::new(figure(FigureId::CachedCostUsd), costs.iter().map(|c| c.map(|c| c.cached_usd)).collect::<Vec<_>>()),
        Column::new("none_cost_usd".into(), costs.iter().map(|c| c.map(|c| c.none_usd)).collect::<Vec<_>>()),
        Column::new(
            "none_cached_cost_usd".into(),
            costs.iter().map(|c| c.map(|c| c.none_cached_usd)).collect::<Vec<_>>(),
        ),
    ]
}

/// `results/points.*`: one row per point, each metric's figure, n and interval, and the paired comparisons.
fn points_frame(plan: &Plan, cells: &[CellResult], axes: &[String], pricing: &Prices) -> PolarsResult<DataFrame> {
    let figures = metrics::point_figures(plan, cells, None);
    let parts: Vec<BTreeMap<FigureId, Vec<(String, metrics::Parts)>>> = plan
        .points
        .iter()
        .map(|p| metrics::point_parts(cells.iter().filter(|c| c.cell.point == p.id), pricing[p.id.as_str()].as_ref()))
        .collect();
    let against = comparison_partners(plan);
    let all: Vec<Option<&ConfigPoint>> = plan.points.iter().map(Some).collect();
    let mut columns = vec![Column::new("point".into(), plan.points.iter().map(|p| p.id.clone()).collect::<Vec<_>>())];
    columns.extend(point_columns(axes, &all));
    columns.push(Column::new(
        "conversations".into(),
        plan.points.iter().map(|p| cells.iter().filter(|c| c.cell.point == p.id).count() as u64).collect::<Vec<_>>(),
    ));
    for m in METRICS {
        let fig: Vec<Option<metrics::Figure>> = figures.iter().map(|f| f.get(&m.id).copied()).collect();
        if fig.iter().all(Option::is_none) {
            continue;
        }
        columns.extend(figure_columns(m, &fig));
        if !PAIRED_FIGURES.contains(&m.id) {
            continue;
        }
        for (label, partner) in &against {
            let diffs: Vec<Option<metrics::Figure>> = (0..plan.points.len())
                .map(|i| {
                    let j = partner[i]?;
                    metrics::paired_difference(m, parts[i].get(&m.id)?, parts[j].get(&m.id)?)
                })
                .collect();
            columns.extend(difference_columns(&format!("{}_diff_{label}", m.name), &diffs));
        }
    }
    // The probe counts behind the two headline probe figures, under the names scripts rely on.
    for (alias, id) in [("early_only_n", FigureId::EarlyOnlyRetention), ("at_risk_n", FigureId::AtRiskRetention)] {
        let n: Vec<Option<u64>> = figures.iter().map(|f| f.get(&id).map(|f| f.n as u64)).collect();
        if n.iter().any(Option::is_some) {
            columns.push(Column::new(alias.into(), n));
        }
    }
    DataFrame::new(plan.points.len(), columns)
}

/// What each point's paired differences subtract, by column label: the index of its `none` point
/// (`vs_none`) and of the reference point (`vs_reference`).
fn comparison_partners(plan: &Plan) -> [(&'static str, Vec<Option<usize>>); 2] {
    let index: BTreeMap<&str, usize> = plan.points.iter().enumerate().map(|(i, p)| (p.id.as_str(), i)).collect();
    let reference = plan.reference_point().map(|p| index[p.id.as_str()]);
    [
        ("vs_none", plan.points.iter().map(|p| plan.none_point(p).map(|n| index[n.id.as_str()])).collect()),
        ("vs_reference", plan.points.iter().map(|_| reference).collect()),
    ]
}

/// Writes a frame as Parquet with the `parquet` crate: strings as plain UTF-8 (`Utf8`, not polars'
/// `string_view`, which older pyarrow, pandas, DuckDB and Spark cannot read), integers, floats and
/// booleans as themselves, nulls kept.
pub(crate) fn write_parquet(df: &DataFrame, path: &Path) -> PolarsResult<()> {
    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array};
    use arrow_schema::{DataType as ArrowType, Field, Schema};
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for c in df.columns() {
        let s = c.as_materialized_series();
        let (ty, array): (ArrowType, ArrayRef) = match s.dtype() {
            DataType::Boolean => (ArrowType::Boolean, std::sync::Arc::new(s.bool()?.iter().collect::<BooleanArray>())),
            DataType::UInt32 => (ArrowType::UInt32, std::sync::Arc::new(s.u32()?.iter().collect::<UInt32Array>())),
            DataType::UInt64 => (ArrowType::UInt64, std::sync::Arc::new(s.u64()?.iter().collect::<UInt64Array>())),
            DataType::Int64 => (ArrowType::Int64, std::sync::Arc::new(s.i64()?.iter().collect::<Int64Array>())),
            DataType::Float64 => (ArrowType::Float64, std::sync::Arc::new(s.f64()?.iter().collect::<Float64Array>())),
            _ => {
                let s = s.cast(&DataType::String)?;
                (ArrowType::Utf8, std::sync::Arc::new(s.str()?.iter().collect::<StringArray>()))
            }
        };
        fields.push(Field::new(c.name().as_str(), ty, true));
        arrays.push(array);
    }
    let err = |e: &dyn std::fmt::Display| PolarsError::ComputeError(format!("{}: {e}", path.display()).into());
    let schema = std::sync::Arc::new(Schema::new(fields));
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), arrays).map_err(|e| err(&e))?;
    let file = std::fs::File::create(path)?;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| err(&e))?;
    writer.write(&batch).map_err(|e| err(&e))?;
    writer.close().map_err(|e| err(&e))?;
    Ok(())
}

/// Writes every frame as Parquet, CSV and JSON under `dir`.
pub fn write_frames(frames: &mut Frames, dir: &Path) -> PolarsResult<()> {
    std::fs::create_dir_all(dir)?;
    for (name, df) in [
        ("events", &mut frames.events),
        ("conversations", &mut frames.conversations),
        ("points", &mut frames.points),
        ("scopes", &mut frames.scopes),
    ] {
        write_parquet(df, &dir.join(format!("{name}.parquet")))?;
        CsvWriter::new(std::fs::File::create(dir.join(format!("{name}.csv")))?).finish(df)?;
        JsonWriter::new(std::fs::File::create(dir.join(format!("{name}.json")))?)
            .with_json_format(JsonFormat::Json)
            .finish(df)?;
    }
    Ok(())
}
