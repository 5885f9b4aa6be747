//! The run's summary (per config point), printed after `run` and written as `summary.json`.

use crate::data::{CellResult, Plan};
use crate::metrics::{percent, FigureId, PercentStyle, Share, SUMMARY_COLUMNS, SUMMARY_INTERVALS};
use crate::table::Table;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Figures of one config point over its conversations, as `summary.json` holds them. Every figure is
/// defined in [`crate::metrics::METRICS`] and has the same value here as in `results/points.csv`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointSummary {
    pub point: String,
    pub strategy: String,
    pub summarizer: String,
    pub axes: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<String>,
    pub conversations: usize,
    pub events_by_status: crate::replay::StatusCounts,
    /// Each figure of the point (ratio of sums, pooled mean or total; see the glossary), under its name.
    #[serde(flatten)]
    pub figures: FigureValues,
    /// Events (event-level metrics) or conversations each figure is over.
    pub n: BTreeMap<FigureId, usize>,
    /// Each figure's bootstrap 95 % interval (ratio-of-sums metrics over two or more conversations).
    pub ci95: BTreeMap<FigureId, [f64; 2]>,
    /// Probe scorings behind `early_only_retention` and `at_risk_retention` (the same as `n` holds for them,
    /// under the names scripts rely on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_only_n: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_risk_n: Option<usize>,
    /// Probe figures, when the run scored probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeSummary>,
}

/// A point's figures. Written under their names, counts and token totals as integers (a count is never
/// `3.0`), every other figure as a float.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FigureValues(pub BTreeMap<FigureId, f64>);

impl std::ops::Deref for FigureValues {
    type Target = BTreeMap<FigureId, f64>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Serialize for FigureValues {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (id, &v) in &self.0 {
            if id.metric().is_integer() && v.fract() == 0.0 && v.abs() < 9.0e15 {
                m.serialize_entry(id, &(v as i64))?;
            } else {
                m.serialize_entry(id, &v)?;
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for FigureValues {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Flattened: every other key of the summary arrives here too; figures are the numeric ones named
        // as a figure.
        let all = BTreeMap::<String, serde_json::Value>::deserialize(d)?;
        Ok(FigureValues(all.into_iter().filter_map(|(k, v)| Some((FigureId::from_name(&k)?, v.as_f64()?))).collect()))
    }
}

impl PointSummary {
    pub fn figure(&self, id: FigureId) -> Option<crate::metrics::Figure> {
        let value = *self.figures.get(&id)?;
        let [low, high] = self.ci95.get(&id).copied().unwrap_or([value, value]);
        Some(crate::metrics::Figure { value, n: self.n.get(&id).copied().unwrap_or(0), low, high })
    }
}

/// Mean probe figures of one kind (or all kinds), for `summary.json` (the reported figures with intervals
/// are `metrics::probe_figures::ProbeFigures`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeMeans {
    /// Probes scored at the end of the replay.
    pub probes: usize,
    /// Share of probes whose gold answer is in the final history.
    pub retention_end: Option<f64>,
    /// The same over every (probe, compression event) pair.
    pub retention_events: Option<f64>,
    /// (Probe, compression event) pairs scored: the n of `retention_events`.
    #[serde(default)]
    pub events: usize,
    /// Share of end-of-replay answers containing a gold answer; mean token F1; share of exact matches.
    pub accuracy_end: Option<f64>,
    pub f1_end: Option<f64>,
    pub exact_end: Option<f64>,
    /// Mean judge score (0–5) at the end.
    pub judge_end: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub all: ProbeMeans,
    pub by_kind: BTreeMap<String, ProbeMeans>,
    /// Mean of (retained with the verified summary − retained with the first-pass one) over probes scored at
    /// events where verification changed the summary; positive = verification recovered facts.
    pub verification_retention_delta: Option<f64>,
    /// The same for answer containment, when first-pass answers were asked for.
    pub verification_accuracy_delta: Option<f64>,
    pub injection: Option<InjectionSummary>,
    /// Cells whose probes could not be loaded or scored.
    pub errors: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InjectionSummary {
    pub conversations: usize,
    pub snapshots: u64,
    pub obeyed_snapshots: u64,
    /// Share of conversations whose last summary obeyed the planted instruction.
    pub final_obeyed: Option<f64>,
    /// Share of summaries that obeyed it.
    pub obeyed_rate: Option<f64>,
}

#[derive(Default)]
struct ProbeMeansAcc {
    end: Vec<f64>,
    events: Vec<f64>,
    contains: Vec<f64>,
    f1: Vec<f64>,
    exact: Vec<f64>,
    judge: Vec<f64>,
}

impl ProbeMeansAcc {
    fn means(&self) -> ProbeMeans {
        ProbeMeans {
            probes: self.end.len(),
            retention_end: mean(&self.end),
            retention_events: mean(&self.events),
            events: self.events.len(),
            accuracy_end: mean(&self.contains),
            f1_end: mean(&self.f1),
            exact_end: mean(&self.exact),
            judge_end: mean(&self.judge),
        }
    }
}

fn probe_summary(cells: &[&CellResult]) -> Option<ProbeSummary> {
    let with: Vec<(&CellResult, &crate::data::ProbeResults)> =
        cells.iter().filter_map(|c| Some((*c, c.probes.as_ref()?))).collect();
    if with.is_empty() {
        return None;
    }
    let mut all = ProbeMeansAcc::default();
    let mut kinds: BTreeMap<String, ProbeMeansAcc> = BTreeMap::new();
    let (mut vr, mut va) = (Vec::new(), Vec::new());
    let mut inj = InjectionSummary::default();
    let mut final_obeyed = 0usize;
    let mut errors = 0;
    for (c, r) in with {
        errors += r.error.is_some() as usize;
        for cp in &r.checkpoints {
            // From the first request over the window on, nothing counts as kept (`probes::figures`).
            let lost = crate::probes::figures::after_overflow(c, cp.event);
            for s in &cp.scores {
                let k = kinds.entry(s.kind.name().to_string()).or_default();
                let retained = (s.retained && !lost) as u8 as f64;
                if cp.event.is_some() {
                    all.events.push(retained);
                    k.events.push(retained);
                    if let Some(first) = s.first_pass_retained {
                        vr.push(retained - first as u8 as f64);
                    }
                    if let (Some(a), Some(f)) = (&s.answer, &s.first_pass_answer) {
                        va.push(a.grade.contains as u8 as f64 - f.grade.contains as u8 as f64);
                    }
                    continue;
                }
                for acc in [&mut all, &mut *k] {
                    acc.end.push(retained);
                    if let Some(a) = s.answer.as_ref().filter(|a| a.error.is_none()) {
                        acc.contains.push((a.grade.contains && !lost) as u8 as f64);
                        acc.f1.push(if lost { 0.0 } else { a.grade.f1 });
                        acc.exact.push((a.grade.exact && !lost) as u8 as f64);
                        if let Some(j) = a.judge {
                            acc.judge.push(j as f64);
                        }
                    }
                }
            }
        }
        if let Some(i) = &r.injection {
            inj.conversations += 1;
            inj.snapshots += i.snapshots as u64;
            inj.obeyed_snapshots += i.obeyed_snapshots as u64;
            final_obeyed += i.final_obeyed as usize;
        }
    }
    let injection = (inj.conversations > 0).then(|| InjectionSummary {
        final_obeyed: Some(final_obeyed as f64 / inj.conversations as f64),
        obeyed_rate: (inj.snapshots > 0).then(|| inj.obeyed_snapshots as f64 / inj.snapshots as f64),
        ..inj
    });
    Some(ProbeSummary {
        all: all.means(),
        by_kind: kinds.iter().map(|(k, a)| (k.clone(), a.means())).collect(),
        verification_retention_delta: mean(&vr),
        verification_accuracy_delta: mean(&va),
        injection,
        errors,
    })
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

pub fn summarize(plan: &Plan, cells: &[CellResult]) -> Vec<PointSummary> {
    let figures = crate::metrics::point_figures(plan, cells, None);
    plan.points
        .iter()
        .zip(figures)
        .map(|(p, figures)| {
            let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
            let mut events_by_status = crate::replay::StatusCounts::default();
            for e in mine.iter().flat_map(|c| &c.result.events) {
                events_by_status.add(e.status);
            }
            PointSummary {
                point: p.id.clone(),
                strategy: p.strategy.kind().to_string(),
                summarizer: p.summarizer.clone().unwrap_or_else(|| "-".into()),
                axes: p.axes.clone(),
                slice: p.slice.clone(),
                conversations: mine.len(),
                events_by_status,
                figures: FigureValues(figures.iter().map(|(id, f)| (*id, f.value)).collect()),
                n: figures.iter().map(|(id, f)| (*id, f.n)).collect(),
                ci95: figures.iter().filter(|(_, f)| f.low < f.high).map(|(id, f)| (*id, [f.low, f.high])).collect(),
                early_only_n: figures.get(&FigureId::EarlyOnlyRetention).map(|f| f.n),
                at_risk_n: figures.get(&FigureId::AtRiskRetention).map(|f| f.n),
                probes: probe_summary(&mine),
            }
        })
        .collect()
}

/// How a summary table is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// Every column, whatever the width.
    pub wide: bool,
    /// Bootstrap intervals next to the main ratios.
    pub intervals: bool,
    pub markdown: bool,
}

/// Tables fit this many columns unless `wide`.
pub const TABLE_WIDTH: usize = 120;

/// Short names of axes for table headers: a knob's from its registry entry ([`Knob::headed`]), the grid's
/// window as `window`, any other axis by its name.
///
/// [`Knob::headed`]: crate::replay::strategy::Knob::headed
pub fn axis_header(axis: &str) -> String {
    match crate::replay::registry::knob(axis) {
        Some(k) => k.header.to_string(),
        None if axis == crate::data::plan::WINDOW_AXIS => "window".into(),
        None => axis.to_string(),
    }
}

/// Axes whose value differs between the summaries, and the constant ones as `axis=value`. The summarizer
/// counts as an axis of the points that have one: constant, it is listed first.
pub fn split_axes(summaries: &[PointSummary]) -> (Vec<String>, Vec<String>) {
    let all: std::collections::BTreeSet<&String> = summaries.iter().flat_map(|s| s.axes.keys()).collect();
    let (mut varying, mut constant) = (Vec::new(), Vec::new());
    if let [only] = summarizers(summaries).into_iter().collect::<Vec<_>>()[..] {
        constant.push(format!("summarizer={only}"));
    }
    for a in all {
        if crate::data::plan::is_identity_axis(a) {
            continue;
        }
        let values: std::collections::BTreeSet<Option<&String>> = summaries.iter().map(|s| s.axes.get(a)).collect();
        let present: Vec<&String> = values.iter().flatten().copied().collect();
        if present.len() > 1 {
            varying.push(a.clone());
        } else if let Some(v) = present.first() {
            constant.push(format!("{a}={v}"));
        }
    }
    (varying, constant)
}

/// The line above a table naming the settings every point shares.
fn constants_line(constant: &[String]) -> String {
    if constant.is_empty() {
        String::new()
    } else {
        format!("Same for every point (where it applies): {}.", constant.join(", "))
    }
}

/// Wraps prose at word boundaries to [`TABLE_WIDTH`] columns.
fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > TABLE_WIDTH {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

fn width(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Drops the lowest-priority columns until the table fits [`TABLE_WIDTH`]; returns the table and how many
/// columns were dropped.
fn fit(header: Vec<String>, rows: Vec<Vec<String>>, priority: Vec<u8>, markdown: bool, wide: bool) -> (String, usize) {
    let mut keep: Vec<bool> = vec![true; header.len()];
    loop {
        let pick = |v: &[String]| v.iter().zip(&keep).filter(|(_, k)| **k).map(|(x, _)| x.clone()).collect::<Vec<_>>();
        let text = Table { header: pick(&header), rows: rows.iter().map(|r| pick(r)).collect() }.render(markdown);
        let dropped = keep.iter().filter(|k| !**k).count();
        if wide || width(&text) <= TABLE_WIDTH {
            return (text, dropped);
        }
        // The highest priority number among kept columns, the rightmost first.
        let Some(victim) = (0..header.len()).rev().filter(|&i| keep[i] && priority[i] > 0).max_by_key(|&i| priority[i])
        else {
            return (text, dropped);
        };
        keep[victim] = false;
    }
}

/// The summary table: the axes that vary (constant ones in a line above), then the figures, headers with
/// their better direction; event-level means say over how many events. Fits 120 columns unless `wide`.
/// Slices get tables of their own: their points cover other conversations, so their rows do not compare
/// with the main grid's.
pub fn table(summaries: &[PointSummary], opts: TableOptions) -> String {
    table_at(summaries, opts, SCOPES_AT)
}

/// [`table`], its notes sending the reader to `scopes_at` for the figures per source and over the
/// conversations a strategy can act on.
pub fn table_at(summaries: &[PointSummary], opts: TableOptions, scopes_at: &str) -> String {
    // Numbered in plan order, before grouping: the `#` other tables of a report key points by.
    let mut groups: BTreeMap<Option<&str>, Vec<(usize, PointSummary)>> = BTreeMap::new();
    for (i, s) in summaries.iter().enumerate() {
        groups.entry(s.slice.as_deref()).or_default().push((i + 1, s.clone()));
    }
    let sep = if opts.markdown { "\n\n" } else { "\n" };
    let mut parts = Vec::new();
    for (slice, group) in &groups {
        let mut part = String::new();
        if let Some(name) = slice {
            let n = group.iter().map(|(_, s)| s.conversations).max().unwrap_or(0);
            part.push_str(&wrap(&format!(
                "Slice `{name}` ({n} conversation(s) of its own: not comparable with the rows of the main grid):"
            )));
            part.push_str(sep);
        }
        let columns: Vec<PointSummary> = group.iter().map(|(_, s)| s.clone()).collect();
        part.push_str(&group_table(group, opts, &View { columns: &columns, kinds: true, scopes_at }));
        parts.push(part);
    }
    parts.join(sep)
}

/// Summarizers of the points that have one (`-` marks a strategy without).
fn summarizers(summaries: &[PointSummary]) -> std::collections::BTreeSet<&str> {
    summaries.iter().map(|s| s.summarizer.as_str()).filter(|s| *s != "-").collect()
}

/// Where the note under a table sends the reader for the figures per scope (`run` and `report` print it
/// to the terminal, where the report's main page holds them).
const SCOPES_AT: &str = "report.md, results/scopes.csv";

/// The main page's headline: the main grid's points `shown` (plan indexes, 0-based; slices are never
/// shown), under the main grid's columns and constants line, so its rows read as rows of the full table;
/// no per-kind probe table. `scopes_at` says where the figures per scope are.
pub fn short_table(summaries: &[PointSummary], shown: &[usize], opts: TableOptions, scopes_at: &str) -> String {
    let main: Vec<(usize, PointSummary)> =
        summaries.iter().enumerate().filter(|(_, s)| s.slice.is_none()).map(|(i, s)| (i + 1, s.clone())).collect();
    let rows: Vec<(usize, PointSummary)> = main.iter().filter(|(n, _)| shown.contains(&(n - 1))).cloned().collect();
    let columns: Vec<PointSummary> = main.into_iter().map(|(_, s)| s).collect();
    group_table(&rows, opts, &View { columns: &columns, kinds: false, scopes_at })
}

/// Why a point is a row of the main page's headline ([`notable_points`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Notable {
    /// Its strategy's default point: the first main-grid point of the strategy, in plan order.
    Default,
    /// Its strategy's point with the lowest `tokens_vs_none`, lower than the default's.
    Cheapest,
    /// Its strategy's point with the highest quality figure, higher than the default's.
    BestQuality,
}

/// The rows of the main page's headline, in plan order (indexes into `summaries`): per strategy of the
/// main grid, its default point and, where another of its points does strictly better by the point
/// estimate, its cheapest (`tokens_vs_none`) and its best by `quality`. At most three rows per strategy,
/// whatever the size of the grid; ties keep the earlier point.
pub fn notable_points(summaries: &[PointSummary], quality: FigureId) -> Vec<(usize, Notable)> {
    let mut out: Vec<(usize, Notable)> = Vec::new();
    let mut strategies: Vec<&str> = Vec::new();
    for s in summaries.iter().filter(|s| s.slice.is_none()) {
        if !strategies.contains(&s.strategy.as_str()) {
            strategies.push(&s.strategy);
        }
    }
    for strategy in strategies {
        let mine: Vec<usize> = (0..summaries.len())
            .filter(|&i| summaries[i].slice.is_none() && summaries[i].strategy == strategy)
            .collect();
        let default = mine[0];
        out.push((default, Notable::Default));
        let value = |i: usize, metric: FigureId| summaries[i].figures.get(&metric).copied().filter(|v| v.is_finite());
        // The first point strictly better than every earlier one (`better(a, b)`: a beats b).
        let best = |metric: FigureId, better: fn(f64, f64) -> bool| {
            let mut best: Option<(usize, f64)> = None;
            for &i in &mine {
                if let Some(v) = value(i, metric) {
                    if best.is_none_or(|(_, b)| better(v, b)) {
                        best = Some((i, v));
                    }
                }
            }
            let (i, v) = best?;
            // Only a point that beats the default (or stands where the default has no figure).
            value(default, metric).is_none_or(|d| better(v, d)).then_some(i)
        };
        if let Some(i) = best(FigureId::TokensVsNone, |a, b| a < b) {
            out.push((i, Notable::Cheapest));
        }
        if let Some(i) = best(quality, |a, b| a > b) {
            out.push((i, Notable::BestQuality));
        }
    }
    out.sort();
    out
}

/// What a group table shows besides its rows: the points its columns and constants line are computed
/// over, whether the per-kind probe table follows, and where the note sends the reader for the scopes.
struct View<'a> {
    columns: &'a [PointSummary],
    kinds: bool,
    scopes_at: &'a str,
}

fn group_table(numbered: &[(usize, PointSummary)], opts: TableOptions, view: &View) -> String {
    let summaries = view.columns;
    let (varying, constant) = split_axes(summaries);
    let constant = constants_line(&constant);
    let summarizer_varies = summarizers(summaries).len() > 1;
    let metrics: Vec<&crate::metrics::Metric> = if opts.wide {
        crate::metrics::METRICS.iter().collect()
    } else {
        SUMMARY_COLUMNS.iter().map(|(id, _)| id.metric()).collect()
    };
    let metrics: Vec<&crate::metrics::Metric> =
        metrics.into_iter().filter(|m| summaries.iter().any(|s| s.figures.contains_key(&m.id))).collect();
    let mut header: Vec<String> = vec!["#".into(), "strategy".into()];
    let mut priority: Vec<u8> = vec![0, 0];
    if summarizer_varies {
        header.push("summarizer".into());
        priority.push(0);
    }
    for a in &varying {
        header.push(axis_header(a).to_string());
        priority.push(0);
    }
    header.push("convs".into());
    priority.push(0);
    for m in &metrics {
        header.push(m.title());
        priority.push(SUMMARY_COLUMNS.iter().find(|(id, _)| *id == m.id).map_or(6, |(_, p)| *p));
    }
    let rows: Vec<Vec<String>> = numbered
        .iter()
        .map(|(number, s)| {
            let mut row = vec![number.to_string(), s.strategy.clone()];
            if summarizer_varies {
                row.push(s.summarizer.clone());
            }
            row.extend(varying.iter().map(|a| s.axes.get(a).cloned().unwrap_or_else(|| "-".into())));
            row.push(s.conversations.to_string());
            for m in &metrics {
                let ci = opts.intervals && SUMMARY_INTERVALS.contains(&m.id);
                row.push(
                    s.figure(m.id).map(|f| crate::metrics::format_figure(m, &f, ci)).unwrap_or_else(|| "-".into()),
                );
            }
            row
        })
        .collect();
    let (text, dropped) = fit(header, rows, priority, opts.markdown, opts.wide);
    let mut out = String::new();
    if !constant.is_empty() {
        out.push_str(&wrap(&constant));
        out.push_str(if opts.markdown { "\n\n" } else { "\n" });
    }
    out.push_str(&text);
    let mut notes = vec![
        format!("↓ lower is better, ↑ higher is better; figures are pooled over all the point's conversations (`convs`; per source and over the conversations a strategy can act on: {}), ratios as ratios of sums, means marked (n=…) over compression events", view.scopes_at),
    ];
    if dropped > 0 {
        notes.push(format!("{dropped} more columns with --wide"));
    }
    out.push_str(if opts.markdown { "\n\n" } else { "\n" });
    out.push_str(&wrap(&format!("{}.", notes.join("; "))));
    if view.kinds && summaries.iter().any(|s| s.probes.is_some()) {
        out.push_str(if opts.markdown { "\n\n" } else { "\n" });
        out.push_str(&kind_table(numbered, opts));
    }
    out
}

/// Probe figures per point and kind: retention at the end / over events, answer containment, F1, judge.
/// Points are keyed by `#` (their settings are in the table above). Figure columns without a value anywhere
/// are left out; the rightmost go first when the table is too wide.
fn kind_table(numbered: &[(usize, PointSummary)], opts: TableOptions) -> String {
    let share = |v: Option<f64>| percent(v.map(Share::Fraction), PercentStyle::SUMMARY_TABLE);
    let mut header: Vec<String> = vec!["#".into(), "strategy".into()];
    let fixed = header.len() + 2;
    header.extend(
        ["kind", "probes", "kept (end) ↑", "kept (events) ↑", "accuracy ↑", "F1 ↑", "judge ↑"].map(String::from),
    );
    let mut rows = Vec::new();
    for (number, s) in numbered {
        let Some(p) = &s.probes else { continue };
        for (kind, f) in p.by_kind.iter().chain(std::iter::once((&"all".to_string(), &p.all))) {
            let mut row = vec![number.to_string(), s.strategy.clone()];
            row.extend([
                kind.clone(),
                f.probes.to_string(),
                share(f.retention_end),
                match f.retention_events {
                    Some(v) => format!("{} (n={})", share(Some(v)), f.events),
                    None => share(None),
                },
                share(f.accuracy_end),
                f.f1_end.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into()),
                f.judge_end.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into()),
            ]);
            rows.push(row);
        }
    }
    // Figure columns that hold no value at all (no judge configured) say nothing.
    let empty: Vec<usize> = (fixed..header.len()).filter(|&i| rows.iter().all(|r| r[i] == "-")).collect();
    let drop_cols = |v: &mut Vec<String>| {
        for &i in empty.iter().rev() {
            v.remove(i);
        }
    };
    drop_cols(&mut header);
    rows.iter_mut().for_each(drop_cols);
    // Retention at the end is kept; the other figures give way from the right.
    let priority = (0..header.len()).map(|i| if i > fixed { (i - fixed) as u8 } else { 0 }).collect();
    let (text, dropped) = fit(header, rows, priority, opts.markdown, opts.wide);
    if dropped > 0 {
        format!("{text}{}{dropped} more columns with --wide.", if opts.markdown { "\n\n" } else { "\n" })
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(strategy: &str, summarizer: &str, slice: Option<&str>, threshold: &str) -> PointSummary {
        PointSummary {
            point: format!("{strategy}-{threshold}"),
            strategy: strategy.into(),
            summarizer: summarizer.into(),
            axes: [("threshold".to_string(), threshold.to_string())].into_iter().collect(),
            slice: slice.map(String::from),
            conversations: if slice.is_some() { 1 } else { 9 },
            figures: FigureValues([(FigureId::TokensVsNone, 0.9)].into_iter().collect()),
            ..Default::default()
        }
    }

    /// Slice points (other conversations) get their own table; a summarizer shared by every point that has
    /// one moves to the constants line; points keep their plan numbers across tables.
    #[test]
    fn slices_get_their_own_table_and_points_keep_their_numbers() {
        let summaries = [
            point("gemini", "extractive", None, "0.5"),
            point("none", "-", None, "0.7"),
            point("gemini", "local:smollm2-135m", Some("small"), "0.9"),
        ];
        let text = table(&summaries, TableOptions { markdown: true, ..Default::default() });
        let (main, slice) = text.split_once("Slice `small` (1 conversation(s)").expect("a slice table");
        assert!(main.contains("summarizer=extractive") && !main.contains("| summarizer"), "{main}");
        assert!(main.contains("| 1 | gemini") && main.contains("| 2 | none"), "{main}");
        assert!(slice.contains("| 3 | gemini") && !slice.contains("| 1 | gemini"), "{slice}");
        assert!(text.lines().all(|l| l.chars().count() <= TABLE_WIDTH), "{text}");
    }

    fn scored(strategy: &str, threshold: &str, tokens: f64, quality: f64) -> PointSummary {
        let mut p = point(strategy, "-", None, threshold);
        p.figures = FigureValues([(FigureId::TokensVsNone, tokens), (FigureId::EarlyOnlyRetention, quality)].into());
        p
    }

    /// The main page's headline: each strategy's default point, and its cheapest and best points only where
    /// they beat the default; never more than three rows per strategy, however large the grid; slices never.
    #[test]
    fn the_short_headline_holds_each_default_and_at_most_three_rows_per_strategy() {
        let mut summaries: Vec<PointSummary> = (0..12)
            .map(|i| scored("gemini", &format!("0.{i}"), 0.97 - 0.01 * (i % 5) as f64, 0.30 + 0.02 * (i % 7) as f64))
            .collect();
        summaries.push(scored("drop-oldest", "0.5", 0.95, 0.3));
        summaries.push(scored("drop-oldest", "0.7", 0.95, 0.3));
        summaries.push(scored("none", "-", 1.0, 0.4));
        let mut slice = scored("gemini", "0.9", 0.1, 0.9);
        slice.slice = Some("small".into());
        summaries.push(slice);
        let rows = notable_points(&summaries, FigureId::EarlyOnlyRetention);
        assert_eq!(
            rows,
            [
                (0, Notable::Default),
                (4, Notable::Cheapest),
                (6, Notable::BestQuality),
                (12, Notable::Default),
                (14, Notable::Default)
            ]
        );
        let mut per_strategy: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, _) in &rows {
            *per_strategy.entry(summaries[*i].strategy.as_str()).or_default() += 1;
        }
        assert!(per_strategy.values().all(|&n| n <= 3), "{per_strategy:?}");
        // The table shows those rows under the main grid's columns, without the per-kind probe table, and
        // its note names where the scopes are.
        let shown: Vec<usize> = rows.iter().map(|(i, _)| *i).collect();
        let text = short_table(&summaries, &shown, TableOptions { markdown: true, ..Default::default() }, "below");
        let numbers: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
            .map(|l| l.split('|').nth(1).unwrap().trim())
            .collect();
        assert_eq!(numbers, ["1", "5", "7", "13", "15"], "{text}");
        assert!(text.contains("| thr") && text.contains("act on: below)") && !text.contains("Slice"), "{text}");
    }
}
