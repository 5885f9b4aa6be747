//! Every reported figure, defined once: its id ([`FigureId`]), name, formula, unit, which direction is
//! better, level and aggregation, in [`METRICS`]. `run`'s summary, `report` (tables, results files, plots,
//! claims), `gate`, `compare` and the view name figures by id and read them through it, each output that
//! shows some figures from one of the named sets declared beside it ([`SUMMARY_COLUMNS`], …); the glossary
//! in `harness/docs/metrics.md` is generated from it (a test keeps it in sync).
//!
//! Each metric gives, per conversation (one cell), a numerator and a denominator ([`Parts`]). A point's
//! figure is Σ numerators / Σ denominators over its conversations ([`Aggregation::RatioOfSums`]: a
//! token-weighted ratio, or a mean pooled over events when the denominator counts events, or over
//! conversations when it is 1), or Σ numerators ([`Aggregation::Total`]). A conversation's own value
//! (what the gate pairs) is numerator / denominator. Intervals are cluster-bootstrap intervals:
//! conversations resampled with replacement, the figure recomputed.

use crate::compress::CompressionStatus;
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::pricing::Pricing;
use crate::replay::ConversationResult;
use crate::stats::{bootstrap, quantiles, Quantiles};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
mod definitions;

pub use definitions::{FigureId, METRICS};
use FigureId::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
    /// Descriptive: neither direction is better in itself.
    Neither,
}

impl Better {
    /// The arrow shown in table headers.
    pub fn arrow(self) -> &'static str {
        match self {
            Better::Lower => "↓",
            Better::Higher => "↑",
            Better::Neither => "",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Pooled over compression events (n = events).
    Event,
    /// Over conversations (n = conversations).
    Conversation,
    /// Pooled over probes (n = probe scorings: probes × moments; see [`probe_figures`]).
    Probe,
    /// Over the agent's own recorded compactions (n = compactions), read from the recordings by
    /// [`crate::rework`]: a figure of `compactions.md` per source, not of a point or a cell.
    Compaction,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    RatioOfSums,
    Total,
    /// The median over the level's items (compactions, requests).
    Median,
    /// The mean over the level's items.
    Mean,
    /// One figure minus another (after minus control, named minus not named), signed.
    Difference,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// A fraction, shown as a percentage.
    Share,
    Count,
    Tokens,
    Usd,
    /// Events per 100 requests.
    #[serde(rename = "per 100 requests")]
    PerHundred,
    /// Events per 10 model turns.
    #[serde(rename = "per 10 turns")]
    PerTenTurns,
    /// Model turns.
    Turns,
    /// API requests.
    Requests,
    /// A difference of shares, or a share's error, in percentage points (0.01 = 1 pp).
    #[serde(rename = "pp")]
    Points,
}

/// One conversation's contribution to a figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parts {
    pub num: f64,
    pub den: f64,
}

impl Parts {
    fn one(v: f64) -> Option<Parts> {
        Some(Parts { num: v, den: 1.0 })
    }

    fn ratio(num: f64, den: f64) -> Option<Parts> {
        (den > 0.0).then_some(Parts { num, den })
    }

    /// The conversation's own value.
    pub fn value(self) -> Option<f64> {
        (self.den > 0.0).then(|| self.num / self.den)
    }
}

/// What a metric reads: one cell and the prices of its point.
#[derive(Clone, Copy, Debug)]
pub struct Observation<'a> {
    pub cell: &'a CellResult,
    pub pricing: Option<&'a Pricing>,
}

/// Where a figure's parts come from.
#[derive(Clone, Copy, Debug)]
pub enum PartsFrom {
    /// Each cell: its numerator and denominator (`None` where the figure does not apply to the cell). A
    /// column of `results/conversations.*` and `results/points.*`, a figure of `summary.json`, a value the
    /// gate pairs.
    Cell(fn(&Observation<'_>) -> Option<Parts>),
    /// A point's probe scorings only, pooled by [`probe_figures::point_figures`]: no value per
    /// conversation, so no column in `results/*`.
    PointProbes,
    /// The recordings' compactions ([`Level::Compaction`]), computed by `rework::figures`: no value per
    /// cell or point.
    Recordings,
}

/// A figure's definition.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    pub id: FigureId,
    /// The figure's one name: column, key and rule name in every output and input.
    pub name: &'static str,
    /// Short column header (the direction arrow is added from `better`).
    pub header: &'static str,
    pub formula: &'static str,
    pub unit: Unit,
    pub better: Better,
    pub level: Level,
    pub aggregation: Aggregation,
    pub parts: PartsFrom,
}

impl Metric {
    /// Header with the direction arrow.
    pub fn title(&self) -> String {
        match self.better {
            Better::Neither => self.header.to_string(),
            b => format!("{} {}", self.header, b.arrow()),
        }
    }

    /// A count or a token total: written as an integer in every output.
    pub fn is_integer(&self) -> bool {
        self.aggregation == Aggregation::Total && matches!(self.unit, Unit::Count | Unit::Tokens)
    }

    /// One cell's parts (`None` for a figure only a point has).
    pub fn parts(&self, o: &Observation<'_>) -> Option<Parts> {
        match self.parts {
            PartsFrom::Cell(parts) => parts(o),
            PartsFrom::PointProbes | PartsFrom::Recordings => None,
        }
    }

    /// Whether each cell has its parts, so the results files hold a column for the figure.
    pub fn per_cell(&self) -> bool {
        matches!(self.parts, PartsFrom::Cell(_))
    }

    pub fn conversation_value(&self, o: &Observation<'_>) -> Option<f64> {
        self.parts(o).and_then(Parts::value)
    }
}

/// Σ replayed / Σ recorded over `(replayed, recorded)` request pairs.
fn sum_ratio(pairs: &[(u64, u64)]) -> Option<Parts> {
    let (replayed, recorded) = pairs.iter().fold((0.0, 0.0), |(a, b), &(x, y)| (a + x as f64, b + y as f64));
    Parts::ratio(replayed, recorded)
}

/// The median, p10 and p90 of the per-request ratios replayed / recorded (see `recorded_request_ratio`):
/// `(before, after)` over `cells`, each `(n, p10, median, p90)`; `None` where no request has a recorded count.
pub fn recorded_request_quantiles<'a>(
    cells: impl Iterator<Item = &'a CellResult>,
) -> (Option<Quantiles>, Option<Quantiles>) {
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for c in cells {
        let (b, a) = c.result.recorded_request_pairs();
        before.extend(b.iter().map(|&(x, y)| x as f64 / y as f64));
        after.extend(a.iter().map(|&(x, y)| x as f64 / y as f64));
    }
    (quantiles(before), quantiles(after))
}

/// The size model checked out of sample: for each conversation with at least four requests before the agent's
/// first compaction that have a recorded count, the slope of recorded over replayed growth (through the first
/// request, as `token_scale = "recorded"` fits it) is fitted on the first half of those requests and predicts
/// the second half; `(n, p10, median, p90)` of predicted / recorded over the second halves, or `None` where
/// no conversation has four. Where the replay's own scale and fixed part were fitted on the same requests
/// (`"recorded"`), [`recorded_request_quantiles`]'s *before* figures hold by construction; these do not.
pub fn recorded_request_holdout<'a>(cells: impl Iterator<Item = &'a CellResult>) -> Option<Quantiles> {
    quantiles(cells.flat_map(|c| holdout_ratios(&c.result.recorded_request_pairs().0)).collect())
}

/// One conversation's out-of-sample ratios ([`recorded_request_holdout`]) from its (replayed, recorded) pairs
/// before the agent's first compaction: none with fewer than four pairs or no growth in the first half.
pub fn holdout_ratios(pairs: &[(u64, u64)]) -> Vec<f64> {
    if pairs.len() < 4 {
        return Vec::new();
    }
    let half = pairs.len() / 2;
    let (x0, y0) = (pairs[0].0 as f64, pairs[0].1 as f64);
    let (mut num, mut den) = (0.0, 0.0);
    for &(x, y) in &pairs[1..half] {
        let (dx, dy) = (x as f64 - x0, y as f64 - y0);
        num += dx * dy;
        den += dx * dx;
    }
    if den <= 0.0 {
        return Vec::new();
    }
    let slope = num / den;
    pairs[half..].iter().map(|&(x, y)| (y0 + slope * (x as f64 - x0)) / y as f64).collect()
}

fn count(r: &ConversationResult, status: CompressionStatus) -> f64 {
    r.events.iter().filter(|e| e.status == status).count() as f64
}

/// A probe figure of one conversation: hits over probe scorings ([`probe_figures::conversation_tally`]).
fn probe_parts(c: &CellResult, figure: FigureId) -> Option<Parts> {
    let (hits, n) = probe_figures::conversation_tally(c, figure)?;
    Parts::ratio(hits, n)
}

// ---------------------------------------------------------------------------------------------------------
// Named sets: every output that shows some figures, not all of [`METRICS`], takes its list from here.

/// The run summary's table (what `run` and `report` print; the headline tables of `report.md` and
/// `details.md`), in column order, each with the priority at which it is dropped to fit the width (higher
/// goes first); `--wide` shows every figure.
pub const SUMMARY_COLUMNS: &[(FigureId, u8)] = &[
    (TokensVsNone, 0),
    (EarlyOnlyRetention, 0),
    (OverflowedConversations, 0),
    (UsdVsNone, 1),
    (Reduction, 1),
    (AtRiskRetention, 1),
    (CompressionsPer100Requests, 1),
    (StormEvents, 1),
    (CompressingShare, 2),
    (CachedUsdVsNone, 2),
    (Failed, 2),
    (InvalidRequests, 2),
    (VerificationRetentionGain, 3),
    (CacheHitShare, 3),
    (HiddenInflationEvents, 3),
    (Retention, 4),
    (OverflowGuardRefusals, 4),
    (CostUsd, 5),
];

/// The figures of the run summary's table shown with their intervals, where the table has them.
pub const SUMMARY_INTERVALS: &[FigureId] = &[TokensVsNone, Retention, Reduction];

/// `results/points.*`: the figures with paired differences from `none` and from the reference point
/// (`NAME_diff_vs_none`, `NAME_diff_vs_reference`): the headline figures defined for every point.
pub const PAIRED_FIGURES: &[FigureId] = &[TokensVsNone, UsdVsNone, CachedUsdVsNone, EarlyOnlyRetention, Retention];

/// The headline figures per scope (pooled, actionable, each source), with their paired differences from the
/// reference: the columns of `results/scopes.*` in this order, and one table of the report's *Headline by
/// scope* per group (cost; what the history keeps; how often it compresses).
pub const SCOPE_FIGURES: [&[FigureId]; 3] = [
    &[TokensVsNone, UsdVsNone, CachedUsdVsNone],
    &[EarlyOnlyRetention, AtRiskRetention],
    &[CompressionsPer100Requests, StormEvents],
];

/// The paired comparisons of `details.md` (each point minus `none`, and minus the reference), in column
/// order.
pub const COMPARISON_FIGURES: &[FigureId] = &[TokensVsNone, UsdVsNone, EarlyOnlyRetention];

/// The figures the report's claims are made on (*What this run supports*, `results/claims.*`).
pub const CLAIM_FIGURES: &[FigureId] = &[TokensVsNone, EarlyOnlyRetention];

/// `compare`: the figures of each run's table, and the paired differences pooled over the runs.
pub const ACROSS_RUNS_FIGURES: &[FigureId] = &[TokensVsNone, EarlyOnlyRetention, KeptAtCompressions];

/// `compare`: the paired differences from the reference within each run (its per-run table).
pub const ACROSS_RUNS_DIFFERENCES: &[FigureId] = &[EarlyOnlyRetention, KeptAtCompressions];

/// The view's points table, in column order: cost, then what was kept, then how compression went.
pub const VIEW_POINT_FIGURES: &[FigureId] = &[
    TokensVsNone,
    UsdVsNone,
    EarlyOnlyRetention,
    AtRiskRetention,
    CompressedEvents,
    StormEvents,
    OverflowedConversations,
    OverflowRequests,
];

/// The view's conversations table: per-conversation figures.
pub const VIEW_CELL_FIGURES: &[FigureId] = &[TokensVsNone, UsdVsNone, StormEvents, OverflowRequests];

/// The probe figures `probes.md` breaks down by source, kind, origin and compression ordinal.
pub const BREAKDOWN_FIGURES: &[FigureId] = &[EarlyOnlyRetention, AtRiskRetention, Retention];

/// Every metric's value for one conversation (metrics that do not apply are absent): what the gate pairs.
pub fn conversation_values(cell: &CellResult, pricing: Option<&Pricing>) -> BTreeMap<FigureId, f64> {
    let o = Observation { cell, pricing };
    METRICS.iter().filter_map(|m| Some((m.id, m.conversation_value(&o)?))).collect()
}

// ---------------------------------------------------------------------------------------------------------
// Cost.

// ---------------------------------------------------------------------------------------------------------
// Aggregation.

/// A figure over a set of conversations, with its bootstrap 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub value: f64,
    /// Events (event-level metrics) or conversations the figure is over.
    pub n: usize,
    pub low: f64,
    pub high: f64,
}

/// A figure over the agent's recorded compactions ([`Level::Compaction`], computed by `rework::figures`):
/// its value where there is one, its bootstrap 95 % interval over compactions where one was drawn (a
/// median has none), and the items it is over.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompactionFigure {
    pub value: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub n: usize,
}

/// Compaction-level figures by id ([`crate::metrics::Level::Compaction`]), each printed by
/// [`format_compaction_figure`]: what `rework::figures` computes for one corpus or one row of a table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactionFigures(pub BTreeMap<FigureId, CompactionFigure>);

impl CompactionFigures {
    pub fn get(&self, id: FigureId) -> CompactionFigure {
        self.0.get(&id).copied().unwrap_or_default()
    }

    pub fn value(&self, id: FigureId) -> Option<f64> {
        self.get(id).value
    }

    /// The figure as the page prints it.
    pub fn shown(&self, id: FigureId) -> String {
        format_compaction_figure(id.metric(), &self.get(id))
    }
}

fn aggregate(m: &Metric, parts: &[Parts]) -> Option<f64> {
    let num: f64 = parts.iter().map(|p| p.num).sum();
    let den: f64 = parts.iter().map(|p| p.den).sum();
    match m.aggregation {
        Aggregation::RatioOfSums => (den > 0.0).then(|| num / den),
        Aggregation::Total => (!parts.is_empty()).then_some(num),
        // Compaction-level figures are computed by `rework::figures`, never from a cell's parts.
        Aggregation::Median | Aggregation::Mean | Aggregation::Difference => None,
    }
}

/// A metric over a point's conversations (those where it applies).
pub fn figure(m: &Metric, parts: &[Parts]) -> Option<Figure> {
    let value = aggregate(m, parts)?;
    let n = match m.level {
        Level::Event | Level::Probe => parts.iter().map(|p| p.den).sum::<f64>() as usize,
        Level::Conversation | Level::Compaction => parts.len(),
    };
    let (low, high) = match m.aggregation {
        Aggregation::RatioOfSums => {
            bootstrap(parts.len(), |s| aggregate(m, &s.iter().map(|&i| parts[i]).collect::<Vec<_>>()))
                .unwrap_or((value, value))
        }
        Aggregation::Total | Aggregation::Median | Aggregation::Mean | Aggregation::Difference => (value, value),
    };
    Some(Figure { value, n, low, high })
}

/// The cells of a point and the prices that apply to them.
pub fn point_pricing(plan: &Plan, point: &ConfigPoint) -> Option<Pricing> {
    plan.cost.pricing(point.summarizer.as_deref())
}

/// Each metric's parts over one point's cells.
pub fn point_parts<'a>(
    cells: impl Iterator<Item = &'a CellResult>,
    pricing: Option<&Pricing>,
) -> BTreeMap<FigureId, Vec<(String, Parts)>> {
    let mut out: BTreeMap<FigureId, Vec<(String, Parts)>> = BTreeMap::new();
    for cell in cells {
        let o = Observation { cell, pricing };
        for m in METRICS {
            if let Some(p) = m.parts(&o) {
                out.entry(m.id).or_default().push((cell.cell.conversation.clone(), p));
            }
        }
    }
    out
}

/// Every metric's figure for every point of the plan (in plan order), over the point's cells; `source`
/// restricts to one source's conversations.
pub fn point_figures(plan: &Plan, cells: &[CellResult], source: Option<&str>) -> Vec<BTreeMap<FigureId, Figure>> {
    plan.points
        .iter()
        .map(|p| {
            let pricing = point_pricing(plan, p);
            let mine = cells.iter().filter(|c| c.cell.point == p.id && source.is_none_or(|s| c.source == s));
            point_parts(mine, pricing.as_ref())
                .into_iter()
                .filter_map(|(id, parts)| {
                    let parts: Vec<Parts> = parts.into_iter().map(|(_, p)| p).collect();
                    Some((id, figure(id.metric(), &parts)?))
                })
                .collect()
        })
        .collect()
}

mod format;
mod paired;
pub mod probe_figures;

pub use format::{
    format_compaction_figure, format_figure, format_value, glossary_markdown, percent, percentage_points, PercentStyle,
    PointsStyle, Share,
};
pub use paired::{leave_group_out, paired_difference, paired_fragility, Fragility};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Cell;
    use crate::pricing::Price;
    use crate::replay::CompressionEvent;

    fn cell(conv: &str, request: u64, summarizer: u64, none: u64, reductions: &[f64]) -> CellResult {
        let events = reductions
            .iter()
            .map(|&r| CompressionEvent { status: CompressionStatus::Compressed, reduction: r, ..Default::default() })
            .collect();
        CellResult {
            cell: Cell { point: "p".into(), conversation: conv.into(), repeat: 0 },
            source: "s".into(),
            transient_failure: false,
            plan: String::new(),
            digest: String::new(),
            result: ConversationResult {
                conversation: conv.into(),
                request_tokens_total: request,
                summarizer_input_tokens_total: summarizer,
                none_request_tokens_total: none,
                events,
                ..Default::default()
            },
            probes: None,
        }
    }

    fn figure_of(id: FigureId, cells: &[CellResult], pricing: Option<&Pricing>) -> Figure {
        let parts: Vec<Parts> =
            point_parts(cells.iter(), pricing).remove(&id).unwrap().into_iter().map(|x| x.1).collect();
        figure(id.metric(), &parts).unwrap()
    }

    /// `tokens_vs_none` weights conversations by their tokens (a ratio of sums), not a mean of ratios, and
    /// counts the summarizer's tokens.
    #[test]
    fn tokens_vs_none_is_a_ratio_of_sums_with_the_summarizer() {
        let cells = [cell("a", 100, 10, 200, &[]), cell("b", 900, 0, 1000, &[])];
        let f = figure_of(TokensVsNone, &cells, None);
        assert_eq!(f.value, (110.0 + 900.0) / 1200.0);
        assert_ne!(f.value, (110.0 / 200.0 + 0.9) / 2.0);
        assert_eq!(f.n, 2);
        assert!(f.low <= f.value && f.value <= f.high);
        // The per-conversation value (what the gate pairs) is the conversation's own ratio.
        let v = conversation_values(&cells[0], None);
        assert_eq!(v[&TokensVsNone], 110.0 / 200.0);
        assert_eq!(v[&RequestTokensVsNone], 0.5);
    }

    /// An event-level mean is pooled over events (n = events), not a mean of conversation means.
    #[test]
    fn mean_event_reduction_is_pooled_over_events() {
        let cells = [cell("a", 1, 0, 1, &[0.5]), cell("b", 1, 0, 1, &[0.1, 0.1, 0.1]), cell("c", 1, 0, 1, &[])];
        let f = figure_of(MeanEventReduction, &cells, None);
        assert!((f.value - 0.8 / 4.0).abs() < 1e-12, "{f:?}");
        assert_eq!(f.n, 4);
        // Conversations without events have no value (they are not zeros).
        assert!(!conversation_values(&cells[2], None).contains_key(&MeanEventReduction));
        let share = figure_of(CompressingShare, &cells, None);
        assert_eq!((share.value, share.n), (2.0 / 3.0, 3));
        assert_eq!(figure_of(CompressedEvents, &cells, None).value, 4.0);
    }

    /// `reduction` weighs events by their size (ratio of sums); `mean_event_reduction` counts each once.
    #[test]
    fn reduction_is_token_weighted_and_mean_event_reduction_is_not() {
        let event = |before: u64, after: u64| CompressionEvent {
            status: CompressionStatus::Compressed,
            request_tokens_before: before,
            request_tokens_after: after,
            reduction: crate::replay::results::reduction(before, after),
            ..Default::default()
        };
        let mut c = cell("a", 1, 0, 1, &[]);
        c.result.events = vec![event(10_000, 2_000), event(1_000, 900)];
        let weighted = figure_of(Reduction, std::slice::from_ref(&c), None);
        assert!((weighted.value - (1.0 - 2_900.0 / 11_000.0)).abs() < 1e-12, "{weighted:?}");
        assert_eq!(weighted.n, 11_000, "n of a ratio of token sums is its denominator");
        let mean = figure_of(MeanEventReduction, std::slice::from_ref(&c), None);
        assert!((mean.value - (0.8 + 0.1) / 2.0).abs() < 1e-12, "{mean:?}");
    }

    /// Storms, the trigger below the first request and actionability follow from the trigger.
    #[test]
    fn storms_and_actionability_follow_from_the_trigger() {
        let event = |after: u64| CompressionEvent {
            status: CompressionStatus::Compressed,
            request_tokens_before: 5_000,
            request_tokens_after: after,
            ..Default::default()
        };
        let mut c = cell("a", 1, 0, 1, &[]);
        c.result.requests = 8;
        c.result.first_request_tokens = 3_000;
        c.result.none_peak_request_tokens = 6_000;
        c.result.none_trigger_seen_peak_tokens = 5_000;
        c.result.trigger_tokens = Some(4_000);
        c.result.events = vec![event(4_500), event(3_999), CompressionEvent::default()];
        let v = conversation_values(&c, None);
        assert_eq!(v[&StormEvents], 1.0);
        assert_eq!(v[&CompressionsPer100Requests], 25.0);
        assert_eq!(v[&TriggerBelowOverhead], 0.0);
        assert_eq!(v[&ActionableConversations], 1.0);
        c.result.trigger_tokens = Some(3_000);
        assert_eq!(conversation_values(&c, None)[&TriggerBelowOverhead], 1.0);
        // No compression, unsplittable: the reference could not act even where the trigger is reached.
        c.result.events.clear();
        c.result.unsplittable = true;
        assert_eq!(conversation_values(&c, None)[&ActionableConversations], 0.0);
        c.result.unsplittable = false;
        assert_eq!(conversation_values(&c, None)[&ActionableConversations], 1.0);
        // Only the final request reaches the trigger: no trigger ever sees it.
        c.result.trigger_tokens = Some(5_500);
        assert_eq!(conversation_values(&c, None)[&ActionableConversations], 0.0);
        c.result.trigger_tokens = Some(7_000);
        assert_eq!(conversation_values(&c, None)[&ActionableConversations], 0.0);
        // Strategies without a threshold have no storm or trigger figure.
        c.result.trigger_tokens = None;
        assert!(!conversation_values(&c, None).contains_key(&StormEvents));
    }

    /// Two points scored on the same probes: their marginal intervals overlap (conversations differ a lot
    /// from each other), yet one retains more in every conversation, and only the paired interval sees it.
    #[test]
    fn paired_difference_is_significant_where_marginal_intervals_overlap() {
        let m = EarlyOnlyRetention.metric();
        let p = |c: usize, hits: f64| (format!("c{c}"), Parts { num: hits, den: 10.0 });
        // Per-conversation retention spreads from 0 to 0.9; the point keeps one probe more out of ten.
        let base: Vec<(String, Parts)> = (0..20).map(|c| p(c, (c % 10) as f64)).collect();
        let better: Vec<(String, Parts)> = (0..20).map(|c| p(c, (c % 10) as f64 + 1.0)).collect();
        let marginal = |xs: &[(String, Parts)]| figure(m, &xs.iter().map(|x| x.1).collect::<Vec<_>>()).unwrap();
        let (a, b) = (marginal(&better), marginal(&base));
        assert!(a.low <= b.high && b.low <= a.high, "marginal intervals overlap: {a:?} {b:?}");
        let d = paired_difference(m, &better, &base).unwrap();
        assert!((d.value - 0.1).abs() < 1e-12, "{d:?}");
        assert!(d.low > 0.0, "the paired interval excludes 0: {d:?}");
        // Shuffling which conversation each score belongs to destroys the pairing: no longer significant.
        let shuffled: Vec<(String, Parts)> = (0..20).map(|c| (format!("c{c}"), better[(c * 7 + 3) % 20].1)).collect();
        let d = paired_difference(m, &shuffled, &base).unwrap();
        assert!(d.low < 0.0 && d.high > 0.0, "{d:?}");
    }

    /// Cache-aware cost: the shared prefix at the cached price; `none` likewise; the ratio of sums.
    #[test]
    fn cached_cost_bills_the_shared_prefix_at_the_cached_price() {
        let price = Price { input_per_mtok: 1.0, cached_input_per_mtok: 0.1, output_per_mtok: 4.0 };
        let pricing = Pricing { agent: price, summarizer: Some(price) };
        let mut c = cell("a", 1_000_000, 0, 2_000_000, &[]);
        c.result.cached_request_tokens_total = 500_000;
        c.result.none_cached_request_tokens_total = 1_500_000;
        c.result.summarizer_output_tokens_total = 250_000;
        let costs = pricing.costs(&c.result);
        assert!((costs.usd - (1.0 + 1.0)).abs() < 1e-9, "{costs:?}");
        assert!((costs.cached_usd - (0.5 + 0.05 + 1.0)).abs() < 1e-9, "{costs:?}");
        assert!((costs.none_cached_usd - (0.5 + 0.15)).abs() < 1e-9, "{costs:?}");
        let f = figure_of(CachedUsdVsNone, std::slice::from_ref(&c), Some(&pricing));
        assert!((f.value - 1.55 / 0.65).abs() < 1e-9);
        assert_eq!(figure_of(CacheHitShare, std::slice::from_ref(&c), None).value, 0.5);
        // Without prices there are no USD figures.
        assert!(!conversation_values(&c, None).contains_key(&CostUsd));
    }

    #[test]
    fn paired_difference_pairs_conversations() {
        let m = TokensVsNone.metric();
        let p = |c: &str, n: f64, d: f64| (c.to_string(), Parts { num: n, den: d });
        let point = [p("a", 50.0, 100.0), p("b", 300.0, 300.0), p("x", 1.0, 1.0)];
        let none = [p("a", 100.0, 100.0), p("b", 300.0, 300.0)];
        let d = paired_difference(m, &point, &none).unwrap();
        assert_eq!(d.n, 2);
        assert!((d.value - (350.0 / 400.0 - 1.0)).abs() < 1e-12);
        assert!(d.low <= d.value && d.value <= d.high);
    }

    /// One conversation carrying a difference: the interval may exclude 0, yet leaving that conversation
    /// out turns the sign, and it holds most of the weight.
    #[test]
    fn fragility_finds_the_conversation_that_carries_a_difference() {
        let m = TokensVsNone.metric();
        let p = |c: &str, n: f64, d: f64| (c.to_string(), Parts { num: n, den: d });
        let mut point = vec![p("big", 300.0, 1000.0)];
        let mut none = vec![p("big", 1000.0, 1000.0)];
        for c in 0..5 {
            point.push(p(&format!("c{c}"), 102.0, 100.0));
            none.push(p(&format!("c{c}"), 100.0, 100.0));
        }
        let d = paired_difference(m, &point, &none).unwrap();
        assert!(d.value < 0.0, "{d:?}");
        let f = paired_fragility(m, &point, &none).unwrap();
        assert_eq!(f.top_conversation, "big");
        assert!((f.top_share - 2000.0 / 3000.0).abs() < 1e-12, "{f:?}");
        assert!((f.loo_high - 0.02).abs() < 1e-12, "without `big` the point costs 2 % more: {f:?}");
        assert!(f.sign_flips(d.value));
        // Without the outlier every conversation agrees: no flip.
        let f = paired_fragility(m, &point[1..], &none[1..]).unwrap();
        assert!(!f.sign_flips(0.02) && f.loo_low > 0.0, "{f:?}");
        assert!(paired_fragility(m, &point[..1], &none[..1]).is_none(), "one pair has no leave-one-out");
    }

    /// A request over the window is an overflow: counted, the conversation did not finish in the window,
    /// and the requests from the first one on are reported apart.
    #[test]
    fn overflow_figures_start_at_the_first_request_over_the_window() {
        let mut c = cell("a", 0, 0, 0, &[]);
        c.result.token_limit = 100;
        c.result.request_tokens = vec![50, 101, 90, 120];
        c.result.overflow_requests = 2;
        assert_eq!(c.result.first_overflow_request(), Some(1));
        let v = conversation_values(&c, None);
        assert_eq!(v[&OverflowedConversations], 1.0);
        assert_eq!(v[&FinishedInWindowShare], 0.0);
        assert_eq!(v[&TokensAfterOverflow], (101 + 90 + 120) as f64);
        assert_eq!(v[&OverflowRequests], 2.0);
        assert_eq!(v[&InvalidRequests], 0.0);
        c.result.invalid_requests = 3;
        assert_eq!(conversation_values(&c, None)[&InvalidRequests], 3.0);
        c.result.request_tokens = vec![50, 100];
        assert_eq!(conversation_values(&c, None)[&FinishedInWindowShare], 1.0, "at the window is inside it");
    }

    /// The replay against the agent's recorded usage: token-weighted per conversation, before the agent's
    /// first compaction and after; requests without a recorded count are left out; the per-request
    /// quantiles the report gives.
    #[test]
    fn recorded_request_ratios_compare_the_same_request() {
        let mut c = cell("a", 0, 0, 0, &[]);
        c.result.request_tokens = vec![100, 220, 300, 150, 200];
        c.result.recorded_request_tokens = vec![Some(100), Some(200), None, Some(300), Some(100)];
        c.result.recorded_before_requests = 3;
        c.result.token_scale = Some(1.5);
        let v = conversation_values(&c, None);
        assert_eq!(v[&RecordedRequestRatio], 320.0 / 300.0);
        assert_eq!(v[&RecordedRequestRatioAfter], 350.0 / 400.0);
        assert_eq!((v[&FirstRequestVsRecorded], v[&TokenScale]), (1.0, 1.5));
        let (before, after) = recorded_request_quantiles(std::iter::once(&c));
        let (n, p10, median, p90) = before.unwrap();
        assert_eq!(n, 2);
        assert!((median - 1.05).abs() < 1e-12 && (p10 - 1.01).abs() < 1e-12 && (p90 - 1.09).abs() < 1e-12);
        assert_eq!(after.unwrap().0, 2);
        // No recorded usage: none of these figures.
        let plain = conversation_values(&cell("b", 1, 0, 1, &[]), None);
        assert!(!plain.contains_key(&RecordedRequestRatio) && !plain.contains_key(&TokenScale));
    }

    /// Each id finds its own entry, its name parses back (unknown names are refused, named), and figures
    /// order by name, as the outputs keyed by name list them.
    #[test]
    fn figure_ids_name_their_entries_and_order_by_name() {
        for m in METRICS {
            assert_eq!(m.id.metric().name, m.name);
            assert_eq!(FigureId::from_name(m.name), Some(m.id));
            let json = format!("\"{}\"", m.name);
            assert_eq!(serde_json::to_string(&m.id).unwrap(), json);
            assert_eq!(serde_json::from_str::<FigureId>(&json).unwrap(), m.id);
        }
        let unknown = serde_json::from_str::<FigureId>("\"tokens_vs_nothing\"").unwrap_err().to_string();
        assert!(unknown.contains("unknown figure `tokens_vs_nothing`"), "{unknown}");
        let mut ids: Vec<FigureId> = METRICS.iter().map(|m| m.id).collect();
        ids.sort();
        assert!(ids.windows(2).all(|w| w[0].name() < w[1].name()));
        assert_eq!(format!("{Retention:<12}|"), "retention   |", "widths apply, as `gate --help` aligns names");
    }

    /// A named set lists each figure once, and only figures each cell has parts of (it shows them per
    /// conversation or per point).
    #[test]
    fn named_sets_list_per_cell_figures_once() {
        let columns: Vec<FigureId> = SUMMARY_COLUMNS.iter().map(|(id, _)| *id).collect();
        let scopes: Vec<FigureId> = SCOPE_FIGURES.concat();
        let sets: [&[FigureId]; 11] = [
            &columns,
            SUMMARY_INTERVALS,
            PAIRED_FIGURES,
            &scopes,
            COMPARISON_FIGURES,
            CLAIM_FIGURES,
            ACROSS_RUNS_FIGURES,
            ACROSS_RUNS_DIFFERENCES,
            VIEW_POINT_FIGURES,
            VIEW_CELL_FIGURES,
            BREAKDOWN_FIGURES,
        ];
        for set in sets {
            let unique: std::collections::BTreeSet<&FigureId> = set.iter().collect();
            assert_eq!(unique.len(), set.len(), "{set:?}");
            assert!(set.iter().all(|id| id.metric().per_cell()), "{set:?}");
        }
    }

    /// Every metric has one definition; the glossary file is generated from them.
    #[test]
    fn glossary_matches_the_definitions() {
        let names: std::collections::BTreeSet<_> = METRICS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), METRICS.len());
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md");
        let generated = glossary_markdown();
        if std::env::var_os("UPDATE_GLOSSARY").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert_eq!(on_disk, generated, "harness/docs/metrics.md is stale: run with UPDATE_GLOSSARY=1");
        for m in METRICS {
            assert!(generated.contains(&format!("`{}`", m.name)));
        }
    }
}
