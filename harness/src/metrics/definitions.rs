//! The figure table: every [`FigureId`] and its entry in [`METRICS`] (name, header, formula, unit, direction,
//! level, aggregation and where its parts come from). The machinery that reads it is in `metrics/mod.rs`.

use super::*;

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
