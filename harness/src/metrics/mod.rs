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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    RatioOfSums,
    Total,
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
            PartsFrom::PointProbes => None,
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

/// A figure, by its entry in [`METRICS`] (name, definition): every module names figures by id, never by a
/// string. Declared in the table's order, which `FigureId::metric` relies on (checked when compiling).
/// Figures order by name, as every output that keys figures by name lists them (`summary.json`, the
/// view's data, the claims, the probe breakdowns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FigureId {
    TokensVsNone,
    UsdVsNone,
    CachedUsdVsNone,
    Reduction,
    MeanEventReduction,
    CompressionsPer100Requests,
    StormEvents,
    TriggerBelowOverhead,
    ActionableConversations,
    CacheHitShare,
    CompressingShare,
    EarlyOnlyRetention,
    AtRiskRetention,
    KeptAtCompressions,
    Retention,
    RetentionAtEvents,
    RetrievalAccuracy,
    AnswerMatch,
    JudgeScore,
    JudgeAgreement,
    VerificationRetentionGain,
    NextActionCompressed,
    NextActionUncompressed,
    NextActionArgsCompressed,
    NextActionArgsUncompressed,
    RequestTokensVsNone,
    PeakVsNone,
    CostUsd,
    CachedCostUsd,
    SummarizerTokens,
    CompressedEvents,
    TruncationOnlyEvents,
    InflatedEvents,
    EmptySummaryEvents,
    HiddenInflationEvents,
    HiddenDeflationEvents,
    OverflowGuardRefusals,
    OverflowRequests,
    InvalidRequests,
    OverflowedConversations,
    FinishedInWindowShare,
    TokensAfterOverflow,
    VerificationChanged,
    UnsplittableShare,
    RecordedRequestRatio,
    RecordedRequestRatioAfter,
    FirstRequestVsRecorded,
    TokenScale,
    Failed,
    GraderAgreement,
    GraderPrecision,
    GraderRecall,
}

impl FigureId {
    /// The figure's definition.
    pub fn metric(self) -> &'static Metric {
        match METRICS.get(self as usize) {
            Some(m) => m,
            None => panic!("{self:?} has no entry in METRICS"),
        }
    }

    /// The figure's one name (see [`Metric::name`]).
    pub fn name(self) -> &'static str {
        self.metric().name
    }

    /// The figure of that name, for names read from files (gate rules, `summary.json`).
    pub fn from_name(name: &str) -> Option<FigureId> {
        METRICS.iter().find(|m| m.name == name).map(|m| m.id)
    }
}

// `FigureId::metric` indexes METRICS by the id.
const _: () = {
    let mut i = 0;
    while i < METRICS.len() {
        assert!(METRICS[i].id as usize == i, "METRICS lists every FigureId once, in the enum's order");
        i += 1;
    }
};

impl Ord for FigureId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for FigureId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for FigureId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so that widths and alignment apply (`gate --help` aligns rules by name).
        f.pad(self.name())
    }
}

impl Serialize for FigureId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FigureId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        FigureId::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown figure `{name}` (the figures: harness/docs/metrics.md)"))
        })
    }
}

/// Every figure the harness reports, in table order. Adding a figure is adding an entry here.
pub const METRICS: &[Metric] = &[
    Metric {
        id: FigureId::TokensVsNone,
        name: "tokens_vs_none",
        header: "tokens vs none",
        formula: "Σ (request_tokens_total + summarizer_tokens_total) / Σ none_request_tokens_total (tokens, not USD: a summarizer token weighs as much as an agent token)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let r = &o.cell.result;
            Parts::ratio((r.request_tokens_total + r.summarizer_tokens_total()) as f64, r.none_request_tokens_total as f64)
        }),
    },
    Metric {
        id: FigureId::UsdVsNone,
        name: "usd_vs_none",
        header: "USD vs none",
        formula: "Σ cost_usd / Σ none_cost_usd (every input token at the input price, the summarizer at its own prices)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let c = o.pricing?.costs(&o.cell.result);
            Parts::ratio(c.usd, c.none_usd)
        }),
    },
    Metric {
        id: FigureId::CachedUsdVsNone,
        name: "cached_usd_vs_none",
        header: "cached USD vs none",
        formula: "Σ cached_cost_usd / Σ none_cached_cost_usd (each request's prefix shared with the previous one at the cached input price)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let c = o.pricing?.costs(&o.cell.result);
            Parts::ratio(c.cached_usd, c.none_cached_usd)
        }),
    },
    Metric {
        id: FigureId::Reduction,
        name: "reduction",
        header: "reduction",
        formula: "1 − Σ request_tokens_after / Σ request_tokens_before over compressions (COMPRESSED and CONTENT_TRUNCATED events): token-weighted",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let (before, after) = o
                .cell
                .result
                .compressions()
                .fold((0.0, 0.0), |(b, a), e| (b + e.request_tokens_before as f64, a + e.request_tokens_after as f64));
            Parts::ratio(before - after, before)
        }),
    },
    Metric {
        id: FigureId::MeanEventReduction,
        name: "mean_event_reduction",
        header: "mean event reduction",
        formula: "unweighted mean over compressions (COMPRESSED and CONTENT_TRUNCATED events) of 1 − request_tokens_after / request_tokens_before: each event counts once, whatever its size",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let (n, sum) = o.cell.result.compressions().fold((0.0, 0.0), |(n, s), e| (n + 1.0, s + e.reduction));
            Parts::ratio(sum, n)
        }),
    },
    Metric {
        id: FigureId::CompressionsPer100Requests,
        name: "compressions_per_100_requests",
        header: "compressions /100 req",
        formula: "100 × Σ compressions (COMPRESSED and CONTENT_TRUNCATED events) / Σ requests",
        unit: Unit::PerHundred,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let r = &o.cell.result;
            Parts::ratio(100.0 * r.compressions().count() as f64, r.requests as f64)
        }),
    },
    Metric {
        id: FigureId::StormEvents,
        name: "storm_events",
        header: "storm",
        formula: "Σ compressions whose request_tokens_after is still ≥ trigger_tokens (⌈threshold × window⌉), so the next request compresses again (strategies with a threshold)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| o.cell.result.trigger_tokens.and(Parts::one(o.cell.result.storm_events() as f64))),
    },
    Metric {
        id: FigureId::TriggerBelowOverhead,
        name: "trigger_below_overhead",
        header: "trigger ≤ 1st request",
        formula: "Σ conversations whose first request (system prompt + tools + first turn) is already ≥ trigger_tokens (strategies with a threshold)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| o.cell.result.trigger_tokens.and(Parts::one(o.cell.result.trigger_below_first_request() as u8 as f64))),
    },
    Metric {
        id: FigureId::ActionableConversations,
        name: "actionable_conversations",
        header: "actionable",
        formula: "Σ conversations the strategy can act on: it compressed, or the uncompressed replay reaches trigger_tokens at a request the trigger sees (any but the last) and has a split candidate after its first Content",
        unit: Unit::Count,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.actionable() as u8 as f64)),
    },
    Metric {
        id: FigureId::CacheHitShare,
        name: "cache_hit_share",
        header: "cache hit",
        formula: "Σ cached_request_tokens_total / Σ request_tokens_total (prefix shared with the previous request; where a compression changed the history's head, only the prefix that survives a compaction: the provider's recorded read on the first request after the agent's first compaction where the recording has it, else the system prompt and tools: `Uncompressed::cache_stable_overhead`)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let r = &o.cell.result;
            Parts::ratio(r.cached_request_tokens_total as f64, r.request_tokens_total as f64)
        }),
    },
    Metric {
        id: FigureId::CompressingShare,
        name: "compressing_share",
        header: "convs compressing",
        formula: "conversations with at least one COMPRESSED or CONTENT_TRUNCATED event / conversations",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.compressions().next().is_some() as u8 as f64)),
    },
    Metric {
        id: FigureId::EarlyOnlyRetention,
        name: "early_only_retention",
        header: "early-only retention",
        formula: "Σ early-only probes retained at the end / Σ early-only probes (gold only before the final stretch every strategy keeps; `none` = 1 unless it overflows; after a conversation's first request over the window every probe scores as lost)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| probe_parts(o.cell, FigureId::EarlyOnlyRetention)),
    },
    Metric {
        id: FigureId::AtRiskRetention,
        name: "at_risk_retention",
        header: "at-risk retention",
        formula: "Σ at-risk probes still answerable right after the compression / Σ at-risk probes (evidence summarised or dropped, gold kept nowhere verbatim); n/a for strategies that write no summary (they keep nothing at risk: 0 by construction)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| probe_parts(o.cell, FigureId::AtRiskRetention)),
    },
    Metric {
        id: FigureId::KeptAtCompressions,
        name: "kept_at_compressions",
        header: "kept at compressions",
        formula: "Σ (probe, compression) pairs whose gold the history holds right after the compression / Σ such pairs (probes whose evidence lies before the compression; 0 from the first request over the window on)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| probe_parts(o.cell, FigureId::KeptAtCompressions)),
    },
    Metric {
        id: FigureId::Retention,
        name: "retention",
        header: "retention (all probes)",
        formula: "Σ probes whose gold answer is in the final history / Σ probes (unconditional: passes when later turns restate the answer)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| probe_parts(o.cell, FigureId::Retention)),
    },
    Metric {
        id: FigureId::RetentionAtEvents,
        name: "retention_at_events",
        header: "retention at events",
        formula: "Σ over compression events of the share of probes retained right after it / Σ events",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let p = o.cell.probes.as_ref()?;
            let (n, sum) = p
                .checkpoints
                .iter()
                .filter(|k| k.event.is_some() && !k.scores.is_empty())
                .map(|k| {
                    let lost = crate::probes::figures::after_overflow(o.cell, k.event);
                    k.scores.iter().filter(|s| s.retained && !lost).count() as f64 / k.scores.len() as f64
                })
                .fold((0.0, 0.0), |(n, s), v| (n + 1.0, s + v));
            Parts::ratio(sum, n)
        }),
    },
    Metric {
        id: FigureId::RetrievalAccuracy,
        name: "retrieval_accuracy",
        header: "retrieval accuracy",
        formula: "Σ end-of-replay passages of the `extractive` answerer that contain an accepted answer / Σ probes asked",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| probe_parts(o.cell, FigureId::RetrievalAccuracy)),
    },
    Metric {
        id: FigureId::AnswerMatch,
        name: "answer_match",
        header: "answer match",
        formula: "Σ end-of-replay answers of a model answerer matching an accepted answer (normalised) / Σ probes asked",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| probe_parts(o.cell, FigureId::AnswerMatch)),
    },
    Metric {
        id: FigureId::JudgeScore,
        name: "judge_score",
        header: "judge score",
        formula: "Σ judge scores / 5 over end-of-replay answers of a model answerer the judge scored (its 0–5 rubric, `configs/prompts/judge.txt`) / Σ judged answers; a point's figure only (`metrics::probe_figures`): not per conversation, no column in `results/*`",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::PointProbes,
    },
    Metric {
        id: FigureId::JudgeAgreement,
        name: "judge_agreement",
        header: "judge agreement",
        formula: "Σ judged end-of-replay answers where (judge score ≥ 3) equals the answer_match grade / Σ judged answers with a match grade; a point's figure only, as judge_score",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::PointProbes,
    },
    Metric {
        id: FigureId::VerificationRetentionGain,
        name: "verification_retention_gain",
        header: "verification gain",
        formula: "Σ (retained with the verified summary − retained with the first-pass one) / Σ probes scored at verified compressions",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| probe_parts(o.cell, FigureId::VerificationRetentionGain)),
    },
    Metric {
        id: FigureId::NextActionCompressed,
        name: "next_action_compressed",
        header: "next action",
        formula: "Σ compressions after which the answerer, from the compressed history, names the agent's recorded next tool / Σ compressions asked (`[probes] next_action`; 0 from the first request over the window on); a point's figure only, as judge_score",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::PointProbes,
    },
    Metric {
        id: FigureId::NextActionUncompressed,
        name: "next_action_uncompressed",
        header: "next action uncompressed",
        formula: "as next_action_compressed, from the uncompressed history of the same request (the ceiling)",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::PointProbes,
    },
    Metric {
        id: FigureId::NextActionArgsCompressed,
        name: "next_action_args_compressed",
        header: "next-action args",
        formula: "mean over the compressions of next_action_compressed of the token F1 between the predicted and the recorded next call's arguments (0 from the first request over the window on); a point's figure only, as judge_score",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::PointProbes,
    },
    Metric {
        id: FigureId::NextActionArgsUncompressed,
        name: "next_action_args_uncompressed",
        header: "next-action args uncompressed",
        formula: "as next_action_args_compressed, from the uncompressed history of the same request (the ceiling)",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::PointProbes,
    },
    Metric {
        id: FigureId::RequestTokensVsNone,
        name: "request_tokens_vs_none",
        header: "requests vs none",
        formula: "Σ request_tokens_total / Σ none_request_tokens_total (summarizer excluded)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let r = &o.cell.result;
            Parts::ratio(r.request_tokens_total as f64, r.none_request_tokens_total as f64)
        }),
    },
    Metric {
        id: FigureId::PeakVsNone,
        name: "peak_vs_none",
        header: "peak vs none",
        formula: "Σ peak_request_tokens / Σ none_peak_request_tokens",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let r = &o.cell.result;
            Parts::ratio(r.peak_request_tokens as f64, r.none_peak_request_tokens as f64)
        }),
    },
    Metric {
        id: FigureId::CostUsd,
        name: "cost_usd",
        header: "USD",
        formula: "Σ request tokens × input price + summarizer input × its input price + output × its output price",
        unit: Unit::Usd,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.pricing?.costs(&o.cell.result).usd)),
    },
    Metric {
        id: FigureId::CachedCostUsd,
        name: "cached_cost_usd",
        header: "USD cached",
        formula: "as cost_usd, with each request's prefix shared with the previous one at the cached input price",
        unit: Unit::Usd,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.pricing?.costs(&o.cell.result).cached_usd)),
    },
    Metric {
        id: FigureId::SummarizerTokens,
        name: "summarizer_tokens",
        header: "summarizer tokens",
        formula: "Σ summarizer input + output tokens (every pass of every event)",
        unit: Unit::Tokens,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.summarizer_tokens_total() as f64)),
    },
    Metric {
        id: FigureId::CompressedEvents,
        name: "compressed_events",
        header: "compressed",
        formula: "Σ events with status COMPRESSED",
        unit: Unit::Count,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(count(&o.cell.result, CompressionStatus::Compressed))),
    },
    Metric {
        id: FigureId::TruncationOnlyEvents,
        name: "truncation_only_events",
        header: "truncated",
        formula: "Σ events with status CONTENT_TRUNCATED",
        unit: Unit::Count,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(count(&o.cell.result, CompressionStatus::ContentTruncated))),
    },
    Metric {
        id: FigureId::InflatedEvents,
        name: "inflated_events",
        header: "inflated",
        formula: "Σ events with status COMPRESSION_FAILED_INFLATED_TOKEN_COUNT",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(count(&o.cell.result, CompressionStatus::FailedInflatedTokenCount))),
    },
    Metric {
        id: FigureId::EmptySummaryEvents,
        name: "empty_summary_events",
        header: "empty summary",
        formula: "Σ events with status COMPRESSION_FAILED_EMPTY_SUMMARY",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(count(&o.cell.result, CompressionStatus::FailedEmptySummary))),
    },
    Metric {
        id: FigureId::HiddenInflationEvents,
        name: "hidden_inflation_events",
        header: "hidden infl.",
        formula: "Σ events reported smaller (COMPRESSED, CONTENT_TRUNCATED) whose request_tokens_after > request_tokens_before",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.events.iter().filter(|e| e.hidden_inflation).count() as f64)),
    },
    Metric {
        id: FigureId::HiddenDeflationEvents,
        name: "hidden_deflation_events",
        header: "hidden defl.",
        formula: "Σ events reported INFLATED (discarded) whose request_tokens_after < request_tokens_before",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.events.iter().filter(|e| e.hidden_deflation).count() as f64)),
    },
    Metric {
        id: FigureId::OverflowGuardRefusals,
        name: "overflow_guard_refusals",
        header: "guard refusals",
        formula: "Σ requests the reference's overflow guard would refuse (its own estimate before sending; `overflow_requests` is what the provider refuses)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.overflow_guard_refusals as f64)),
    },
    Metric {
        id: FigureId::OverflowRequests,
        name: "overflow_requests",
        header: "overflow req.",
        formula: "Σ requests larger than the conversation's window (a provider refuses each; probes score as lost from the first one on)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.overflow_requests as f64)),
    },
    Metric {
        id: FigureId::InvalidRequests,
        name: "invalid_requests",
        header: "invalid req.",
        formula: "Σ requests right after an event that changed the history which a provider would reject for a fault the compression introduced (a function call without its response in the next Content or a response without its call in the one before, roles not alternating from the user's, an empty Content or text part, a request over the window): faults the same request without compression also has (matched by kind and call id, not position) are the recording's and not counted",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.invalid_requests as f64)),
    },
    Metric {
        id: FigureId::OverflowedConversations,
        name: "overflowed_conversations",
        header: "overflowed",
        formula: "Σ conversations with at least one request larger than the window (the agent could not have finished them)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.overflowed() as u8 as f64)),
    },
    Metric {
        id: FigureId::FinishedInWindowShare,
        name: "finished_in_window_share",
        header: "in window",
        formula: "conversations whose every request fits the window / conversations",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| Parts::one(!o.cell.result.overflowed() as u8 as f64)),
    },
    Metric {
        id: FigureId::TokensAfterOverflow,
        name: "tokens_after_overflow",
        header: "tokens after overflow",
        formula: "Σ request tokens from each conversation's first overflowing request on (requests a provider refuses; counted in tokens_vs_none as if sent)",
        unit: Unit::Tokens,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.tokens_after_overflow() as f64)),
    },
    Metric {
        id: FigureId::VerificationChanged,
        name: "verification_changed",
        header: "verif. changed",
        formula: "events whose verification pass changed the summary / events with a verification pass",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| {
            let v: Vec<_> = o.cell.result.events.iter().filter_map(|e| e.verification.as_ref()).collect();
            Parts::ratio(v.iter().filter(|v| !v.identical).count() as f64, v.len() as f64)
        }),
    },
    Metric {
        id: FigureId::UnsplittableShare,
        name: "unsplittable_share",
        header: "unsplittable",
        formula: "conversations whose history has no split candidate after the first Content / conversations",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.unsplittable as u8 as f64)),
    },
    Metric {
        id: FigureId::RecordedRequestRatio,
        name: "recorded_request_ratio",
        header: "replay/recorded",
        formula: "Σ request_tokens / Σ recorded_request_tokens over the requests that sent the agent's own history (before its first compaction, and before the strategy changed the history) and have a recorded count: each replayed request against the agent's recorded usage for the same request (Claude Code: input + cache read + cache creation tokens; Codex: input tokens), token-weighted; a conversation's value is its own ratio. Reports add the median, p10 and p90 of the per-request ratios (`recorded_request_quantiles`). Only for recordings whose usage measures the replayed context",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| sum_ratio(&o.cell.result.recorded_request_pairs().0)),
    },
    Metric {
        id: FigureId::RecordedRequestRatioAfter,
        name: "recorded_request_ratio_after",
        header: "replay/recorded after",
        formula: "as recorded_request_ratio, over the other requests with a recorded count: after the agent's first compaction (or the strategy's first change of the history). For the strategy that replays the agent's compactions (`Role::Recorded`) it compares the same request; for the others, their request with the one the agent sent",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| sum_ratio(&o.cell.result.recorded_request_pairs().1)),
    },
    Metric {
        id: FigureId::FirstRequestVsRecorded,
        name: "first_request_vs_recorded",
        header: "1st request/recorded",
        formula: "the first request with a recorded count, replayed / recorded (the fixed part of the request: system prompt, tools, instruction files, and the first turn); over conversations, Σ replayed / Σ recorded",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| sum_ratio(o.cell.result.recorded_request_pairs().0.get(..1).unwrap_or_default())),
    },
    Metric {
        id: FigureId::TokenScale,
        name: "token_scale",
        header: "token scale",
        formula: "the factor on every text token count of the replay (`[replay] token_scale`: set, or calibrated per conversation from its recorded usage as the least-squares slope of the agent's recorded requests over the replay's measured history before the agent's first compaction, both without the history's images, which count as their provider bills them and are never scaled); mean over conversations; absent when counts are unscaled",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|o| o.cell.result.token_scale.and_then(Parts::one)),
    },
    Metric {
        id: FigureId::Failed,
        name: "failed",
        header: "failed",
        formula: "Σ conversations whose replay stopped on an error",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: PartsFrom::Cell(|o| Parts::one(o.cell.result.error.is_some() as u8 as f64)),
    },
    Metric {
        id: FigureId::GraderAgreement,
        name: "grader_agreement",
        header: "grader agreement",
        formula: "Σ labelled (probe, compression) pairs where the grader's `retained` equals the label's `answerable` / Σ labelled pairs (`[probes] labels`; stale labels, whose probe is gone or whose question changed, are not counted); a probe kind is gradable offline where, for every labelled strategy, agreement is ≥ 90 % over ≥ 20 of that strategy's pairs of the kind. Computed by the report from the labels file (`report::grader_check`), not per conversation: empty in results/conversations.*",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|_| None),
    },
    Metric {
        id: FigureId::GraderPrecision,
        name: "grader_precision",
        header: "grader precision",
        formula: "Σ labelled pairs the grader kept (`retained`) and labelled answerable / Σ labelled pairs the grader kept (as `grader_agreement`)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|_| None),
    },
    Metric {
        id: FigureId::GraderRecall,
        name: "grader_recall",
        header: "grader recall",
        formula: "Σ labelled pairs the grader kept (`retained`) and labelled answerable / Σ labelled pairs labelled answerable (as `grader_agreement`)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: PartsFrom::Cell(|_| None),
    },
];

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

fn aggregate(m: &Metric, parts: &[Parts]) -> Option<f64> {
    let num: f64 = parts.iter().map(|p| p.num).sum();
    let den: f64 = parts.iter().map(|p| p.den).sum();
    match m.aggregation {
        Aggregation::RatioOfSums => (den > 0.0).then(|| num / den),
        Aggregation::Total => (!parts.is_empty()).then_some(num),
    }
}

/// A metric over a point's conversations (those where it applies).
pub fn figure(m: &Metric, parts: &[Parts]) -> Option<Figure> {
    let value = aggregate(m, parts)?;
    let n = match m.level {
        Level::Event | Level::Probe => parts.iter().map(|p| p.den).sum::<f64>() as usize,
        Level::Conversation => parts.len(),
    };
    let (low, high) = match m.aggregation {
        Aggregation::RatioOfSums => {
            bootstrap(parts.len(), |s| aggregate(m, &s.iter().map(|&i| parts[i]).collect::<Vec<_>>()))
                .unwrap_or((value, value))
        }
        Aggregation::Total => (value, value),
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
    format_figure, format_value, glossary_markdown, percent, percentage_points, PercentStyle, PointsStyle, Share,
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
