//! Every reported figure, defined once: name, formula, unit, which direction is better, level and
//! aggregation. `run`'s summary, `report` (tables, results files, plots) and `gate` all read figures
//! through [`METRICS`]; the glossary in `harness/docs/metrics.md` is generated from it (a test keeps it in sync).
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
    /// Pooled over probes (n = probe scorings: probes × moments; see `probes::figures`).
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

/// A figure's definition.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    pub name: &'static str,
    /// Short column header (the direction arrow is added from `better`).
    pub header: &'static str,
    pub formula: &'static str,
    pub unit: Unit,
    pub better: Better,
    pub level: Level,
    pub aggregation: Aggregation,
    pub parts: fn(&Observation<'_>) -> Option<Parts>,
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

    pub fn conversation_value(&self, o: &Observation<'_>) -> Option<f64> {
        (self.parts)(o).and_then(Parts::value)
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

fn count(r: &ConversationResult, status: CompressionStatus) -> f64 {
    r.events.iter().filter(|e| e.status == status).count() as f64
}

/// A probe figure of one conversation: hits over probe scorings, as `probes::figures` counts them.
fn probe_parts(c: &CellResult, figure: &str) -> Option<Parts> {
    let (hits, n) = crate::probes::figures::conversation_tally(c, figure)?;
    Parts::ratio(hits, n)
}

/// Every figure the harness reports, in table order. Adding a figure is adding an entry here.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "tokens_vs_none",
        header: "tokens vs none",
        formula: "Σ (request_tokens_total + summarizer_tokens_total) / Σ none_request_tokens_total (tokens, not USD: a summarizer token weighs as much as an agent token)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let r = &o.cell.result;
            Parts::ratio((r.request_tokens_total + r.summarizer_tokens_total()) as f64, r.none_request_tokens_total as f64)
        },
    },
    Metric {
        name: "usd_vs_none",
        header: "USD vs none",
        formula: "Σ cost_usd / Σ none_cost_usd (every input token at the input price, the summarizer at its own prices)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let c = o.pricing?.costs(&o.cell.result);
            Parts::ratio(c.usd, c.none_usd)
        },
    },
    Metric {
        name: "cached_usd_vs_none",
        header: "cached USD vs none",
        formula: "Σ cached_cost_usd / Σ none_cached_cost_usd (each request's prefix shared with the previous one at the cached input price)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let c = o.pricing?.costs(&o.cell.result);
            Parts::ratio(c.cached_usd, c.none_cached_usd)
        },
    },
    Metric {
        name: "reduction",
        header: "reduction",
        formula: "1 − Σ request_tokens_after / Σ request_tokens_before over compressions (COMPRESSED and CONTENT_TRUNCATED events): token-weighted",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let (before, after) = o
                .cell
                .result
                .compressions()
                .fold((0.0, 0.0), |(b, a), e| (b + e.request_tokens_before as f64, a + e.request_tokens_after as f64));
            Parts::ratio(before - after, before)
        },
    },
    Metric {
        name: "mean_event_reduction",
        header: "mean event reduction",
        formula: "unweighted mean over compressions (COMPRESSED and CONTENT_TRUNCATED events) of 1 − request_tokens_after / request_tokens_before: each event counts once, whatever its size",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let (n, sum) = o.cell.result.compressions().fold((0.0, 0.0), |(n, s), e| (n + 1.0, s + e.reduction));
            Parts::ratio(sum, n)
        },
    },
    Metric {
        name: "compressions_per_100_requests",
        header: "compressions /100 req",
        formula: "100 × Σ compressions (COMPRESSED and CONTENT_TRUNCATED events) / Σ requests",
        unit: Unit::PerHundred,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let r = &o.cell.result;
            Parts::ratio(100.0 * r.compressions().count() as f64, r.requests as f64)
        },
    },
    Metric {
        name: "storm_events",
        header: "storm",
        formula: "Σ compressions whose request_tokens_after is still ≥ trigger_tokens (⌈threshold × window⌉), so the next request compresses again (strategies with a threshold)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| o.cell.result.trigger_tokens.and(Parts::one(o.cell.result.storm_events() as f64)),
    },
    Metric {
        name: "trigger_below_overhead",
        header: "trigger ≤ 1st request",
        formula: "Σ conversations whose first request (system prompt + tools + first turn) is already ≥ trigger_tokens (strategies with a threshold)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| o.cell.result.trigger_tokens.and(Parts::one(o.cell.result.trigger_below_first_request() as u8 as f64)),
    },
    Metric {
        name: "actionable_conversations",
        header: "actionable",
        formula: "Σ conversations the strategy can act on: it compressed, or the uncompressed replay reaches trigger_tokens at a request the trigger sees (any but the last) and has a split candidate after its first Content",
        unit: Unit::Count,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.actionable() as u8 as f64),
    },
    Metric {
        name: "cache_hit_share",
        header: "cache hit",
        formula: "Σ cached_request_tokens_total / Σ request_tokens_total (prefix shared with the previous request; where a compression changed the history's head, only the system prompt and tools: `Uncompressed::cache_stable_overhead`)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let r = &o.cell.result;
            Parts::ratio(r.cached_request_tokens_total as f64, r.request_tokens_total as f64)
        },
    },
    Metric {
        name: "compressing_share",
        header: "convs compressing",
        formula: "conversations with at least one COMPRESSED or CONTENT_TRUNCATED event / conversations",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| Parts::one(o.cell.result.compressions().next().is_some() as u8 as f64),
    },
    Metric {
        name: "early_only_retention",
        header: "early-only retention",
        formula: "Σ early-only probes retained at the end / Σ early-only probes (gold only before the final stretch every strategy keeps; `none` = 1 unless it overflows; after a conversation's first request over the window every probe scores as lost)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| probe_parts(o.cell, "early_only_retention"),
    },
    Metric {
        name: "at_risk_retention",
        header: "at-risk retention",
        formula: "Σ at-risk probes still answerable right after the compression / Σ at-risk probes (evidence summarised or dropped, gold kept nowhere verbatim); n/a for strategies that write no summary (they keep nothing at risk: 0 by construction)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| probe_parts(o.cell, "at_risk_retention"),
    },
    Metric {
        name: "kept_at_compressions",
        header: "kept at compressions",
        formula: "Σ (probe, compression) pairs whose gold the history holds right after the compression / Σ such pairs (probes whose evidence lies before the compression; 0 from the first request over the window on)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| probe_parts(o.cell, "kept_at_compressions"),
    },
    Metric {
        name: "retention",
        header: "retention (all probes)",
        formula: "Σ probes whose gold answer is in the final history / Σ probes (unconditional: passes when later turns restate the answer)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| probe_parts(o.cell, "retention"),
    },
    Metric {
        name: "retention_at_events",
        header: "retention at events",
        formula: "Σ over compression events of the share of probes retained right after it / Σ events",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
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
        },
    },
    Metric {
        name: "retrieval_accuracy",
        header: "retrieval accuracy",
        formula: "Σ end-of-replay passages of the `extractive` answerer that contain an accepted answer / Σ probes asked",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| probe_parts(o.cell, "retrieval_accuracy"),
    },
    Metric {
        name: "answer_match",
        header: "answer match",
        formula: "Σ end-of-replay answers of a model answerer matching an accepted answer (normalised) / Σ probes asked",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| probe_parts(o.cell, "answer_match"),
    },
    Metric {
        name: "verification_retention_gain",
        header: "verification gain",
        formula: "Σ (retained with the verified summary − retained with the first-pass one) / Σ probes scored at verified compressions",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| probe_parts(o.cell, "verification_retention_gain"),
    },
    Metric {
        name: "request_tokens_vs_none",
        header: "requests vs none",
        formula: "Σ request_tokens_total / Σ none_request_tokens_total (summarizer excluded)",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let r = &o.cell.result;
            Parts::ratio(r.request_tokens_total as f64, r.none_request_tokens_total as f64)
        },
    },
    Metric {
        name: "peak_vs_none",
        header: "peak vs none",
        formula: "Σ peak_request_tokens / Σ none_peak_request_tokens",
        unit: Unit::Share,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let r = &o.cell.result;
            Parts::ratio(r.peak_request_tokens as f64, r.none_peak_request_tokens as f64)
        },
    },
    Metric {
        name: "cost_usd",
        header: "USD",
        formula: "Σ request tokens × input price + summarizer input × its input price + output × its output price",
        unit: Unit::Usd,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.pricing?.costs(&o.cell.result).usd),
    },
    Metric {
        name: "cached_cost_usd",
        header: "USD cached",
        formula: "as cost_usd, with each request's prefix shared with the previous one at the cached input price",
        unit: Unit::Usd,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.pricing?.costs(&o.cell.result).cached_usd),
    },
    Metric {
        name: "summarizer_tokens",
        header: "summarizer tokens",
        formula: "Σ summarizer input + output tokens (every pass of every event)",
        unit: Unit::Tokens,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.summarizer_tokens_total() as f64),
    },
    Metric {
        name: "compressed_events",
        header: "compressed",
        formula: "Σ events with status COMPRESSED",
        unit: Unit::Count,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(count(&o.cell.result, CompressionStatus::Compressed)),
    },
    Metric {
        name: "truncation_only_events",
        header: "truncated",
        formula: "Σ events with status CONTENT_TRUNCATED",
        unit: Unit::Count,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(count(&o.cell.result, CompressionStatus::ContentTruncated)),
    },
    Metric {
        name: "inflated_events",
        header: "inflated",
        formula: "Σ events with status COMPRESSION_FAILED_INFLATED_TOKEN_COUNT",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(count(&o.cell.result, CompressionStatus::FailedInflatedTokenCount)),
    },
    Metric {
        name: "empty_summary_events",
        header: "empty summary",
        formula: "Σ events with status COMPRESSION_FAILED_EMPTY_SUMMARY",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(count(&o.cell.result, CompressionStatus::FailedEmptySummary)),
    },
    Metric {
        name: "hidden_inflation_events",
        header: "hidden infl.",
        formula: "Σ events reported smaller (COMPRESSED, CONTENT_TRUNCATED) whose request_tokens_after > request_tokens_before",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.events.iter().filter(|e| e.hidden_inflation).count() as f64),
    },
    Metric {
        name: "hidden_deflation_events",
        header: "hidden defl.",
        formula: "Σ events reported INFLATED (discarded) whose request_tokens_after < request_tokens_before",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.events.iter().filter(|e| e.hidden_deflation).count() as f64),
    },
    Metric {
        name: "overflow_guard_refusals",
        header: "guard refusals",
        formula: "Σ requests the reference's overflow guard would refuse (its own estimate before sending; `overflow_requests` is what the provider refuses)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.overflow_guard_refusals as f64),
    },
    Metric {
        name: "overflow_requests",
        header: "overflow req.",
        formula: "Σ requests larger than the conversation's window (a provider refuses each; probes score as lost from the first one on)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.overflow_requests as f64),
    },
    Metric {
        name: "invalid_requests",
        header: "invalid req.",
        formula: "Σ requests right after an event that changed the history which a provider would reject for a fault the compression introduced (a function call without its response in the next Content or a response without its call in the one before, roles not alternating from the user's, an empty Content or text part, a request over the window): faults the same request without compression also has (matched by kind and call id, not position) are the recording's and not counted",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.invalid_requests as f64),
    },
    Metric {
        name: "overflowed_conversations",
        header: "overflowed",
        formula: "Σ conversations with at least one request larger than the window (the agent could not have finished them)",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.overflowed() as u8 as f64),
    },
    Metric {
        name: "finished_in_window_share",
        header: "in window",
        formula: "conversations whose every request fits the window / conversations",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| Parts::one(!o.cell.result.overflowed() as u8 as f64),
    },
    Metric {
        name: "tokens_after_overflow",
        header: "tokens after overflow",
        formula: "Σ request tokens from each conversation's first overflowing request on (requests a provider refuses; counted in tokens_vs_none as if sent)",
        unit: Unit::Tokens,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.tokens_after_overflow() as f64),
    },
    Metric {
        name: "verification_changed",
        header: "verif. changed",
        formula: "events whose verification pass changed the summary / events with a verification pass",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Event,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| {
            let v: Vec<_> = o.cell.result.events.iter().filter_map(|e| e.verification.as_ref()).collect();
            Parts::ratio(v.iter().filter(|v| !v.identical).count() as f64, v.len() as f64)
        },
    },
    Metric {
        name: "unsplittable_share",
        header: "unsplittable",
        formula: "conversations whose history has no split candidate after the first Content / conversations",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| Parts::one(o.cell.result.unsplittable as u8 as f64),
    },
    Metric {
        name: "recorded_request_ratio",
        header: "replay/recorded",
        formula: "Σ request_tokens / Σ recorded_request_tokens over the requests that sent the agent's own history (before its first compaction, and before the strategy changed the history) and have a recorded count: each replayed request against the agent's recorded usage for the same request (Claude Code: input + cache read + cache creation tokens; Codex: input tokens), token-weighted; a conversation's value is its own ratio. Reports add the median, p10 and p90 of the per-request ratios (`recorded_request_quantiles`). Only for recordings whose usage measures the replayed context",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| sum_ratio(&o.cell.result.recorded_request_pairs().0),
    },
    Metric {
        name: "recorded_request_ratio_after",
        header: "replay/recorded after",
        formula: "as recorded_request_ratio, over the other requests with a recorded count: after the agent's first compaction (or the strategy's first change of the history). For the strategy that replays the agent's compactions (`Role::Recorded`) it compares the same request; for the others, their request with the one the agent sent",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| sum_ratio(&o.cell.result.recorded_request_pairs().1),
    },
    Metric {
        name: "first_request_vs_recorded",
        header: "1st request/recorded",
        formula: "the first request with a recorded count, replayed / recorded (the fixed part of the request: system prompt, tools, instruction files, and the first turn); over conversations, Σ replayed / Σ recorded",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| sum_ratio(o.cell.result.recorded_request_pairs().0.get(..1).unwrap_or_default()),
    },
    Metric {
        name: "token_scale",
        header: "token scale",
        formula: "the factor on every text token count of the replay (`[replay] token_scale`: set, or calibrated per conversation from its recorded usage as the least-squares slope of the agent's recorded requests over the replay's measured history before the agent's first compaction, both without the history's images, which count as their provider bills them and are never scaled); mean over conversations; absent when counts are unscaled",
        unit: Unit::Share,
        better: Better::Neither,
        level: Level::Conversation,
        aggregation: Aggregation::RatioOfSums,
        parts: |o| o.cell.result.token_scale.and_then(Parts::one),
    },
    Metric {
        name: "failed",
        header: "failed",
        formula: "Σ conversations whose replay stopped on an error",
        unit: Unit::Count,
        better: Better::Lower,
        level: Level::Conversation,
        aggregation: Aggregation::Total,
        parts: |o| Parts::one(o.cell.result.error.is_some() as u8 as f64),
    },
    Metric {
        name: "grader_agreement",
        header: "grader agreement",
        formula: "Σ human-labelled (probe, compression) pairs where the grader's `retained` equals the label's `answerable` / Σ labelled pairs (`[probes] labels`; stale labels, whose probe is gone or whose question changed, are not counted); a probe kind is gradable offline at ≥ 90 % over ≥ 10 pairs. Computed by the report from the labels file (`report::grader_check`), not per conversation: empty in results/conversations.*",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |_| None,
    },
    Metric {
        name: "grader_precision",
        header: "grader precision",
        formula: "Σ labelled pairs the grader kept (`retained`) and labelled answerable / Σ labelled pairs the grader kept (as `grader_agreement`)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |_| None,
    },
    Metric {
        name: "grader_recall",
        header: "grader recall",
        formula: "Σ labelled pairs the grader kept (`retained`) and labelled answerable / Σ labelled pairs labelled answerable (as `grader_agreement`)",
        unit: Unit::Share,
        better: Better::Higher,
        level: Level::Probe,
        aggregation: Aggregation::RatioOfSums,
        parts: |_| None,
    },
];

/// The definition of a metric by name.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// Every metric's value for one conversation (metrics that do not apply are absent): what the gate pairs.
pub fn conversation_values(cell: &CellResult, pricing: Option<&Pricing>) -> BTreeMap<&'static str, f64> {
    let o = Observation { cell, pricing };
    METRICS.iter().filter_map(|m| Some((m.name, m.conversation_value(&o)?))).collect()
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
) -> BTreeMap<&'static str, Vec<(String, Parts)>> {
    let mut out: BTreeMap<&'static str, Vec<(String, Parts)>> = BTreeMap::new();
    for cell in cells {
        let o = Observation { cell, pricing };
        for m in METRICS {
            if let Some(p) = (m.parts)(&o) {
                out.entry(m.name).or_default().push((cell.cell.conversation.clone(), p));
            }
        }
    }
    out
}

/// Every metric's figure for every point of the plan (in plan order), over the point's cells; `source`
/// restricts to one source's conversations.
pub fn point_figures(plan: &Plan, cells: &[CellResult], source: Option<&str>) -> Vec<BTreeMap<&'static str, Figure>> {
    plan.points
        .iter()
        .map(|p| {
            let pricing = point_pricing(plan, p);
            let mine = cells.iter().filter(|c| c.cell.point == p.id && source.is_none_or(|s| c.source == s));
            point_parts(mine, pricing.as_ref())
                .into_iter()
                .filter_map(|(name, parts)| {
                    let m = metric(name)?;
                    let parts: Vec<Parts> = parts.into_iter().map(|(_, p)| p).collect();
                    Some((name, figure(m, &parts)?))
                })
                .collect()
        })
        .collect()
}

mod format;
mod paired;

pub use format::{format_figure, format_value, glossary_markdown, percent, PercentStyle, Share};
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

    fn figure_of(name: &str, cells: &[CellResult], pricing: Option<&Pricing>) -> Figure {
        let parts: Vec<Parts> =
            point_parts(cells.iter(), pricing).remove(name).unwrap().into_iter().map(|x| x.1).collect();
        figure(metric(name).unwrap(), &parts).unwrap()
    }

    /// `tokens_vs_none` weights conversations by their tokens (a ratio of sums), not a mean of ratios, and
    /// counts the summarizer's tokens.
    #[test]
    fn tokens_vs_none_is_a_ratio_of_sums_with_the_summarizer() {
        let cells = [cell("a", 100, 10, 200, &[]), cell("b", 900, 0, 1000, &[])];
        let f = figure_of("tokens_vs_none", &cells, None);
        assert_eq!(f.value, (110.0 + 900.0) / 1200.0);
        assert_ne!(f.value, (110.0 / 200.0 + 0.9) / 2.0);
        assert_eq!(f.n, 2);
        assert!(f.low <= f.value && f.value <= f.high);
        // The per-conversation value (what the gate pairs) is the conversation's own ratio.
        let v = conversation_values(&cells[0], None);
        assert_eq!(v["tokens_vs_none"], 110.0 / 200.0);
        assert_eq!(v["request_tokens_vs_none"], 0.5);
    }

    /// An event-level mean is pooled over events (n = events), not a mean of conversation means.
    #[test]
    fn mean_event_reduction_is_pooled_over_events() {
        let cells = [cell("a", 1, 0, 1, &[0.5]), cell("b", 1, 0, 1, &[0.1, 0.1, 0.1]), cell("c", 1, 0, 1, &[])];
        let f = figure_of("mean_event_reduction", &cells, None);
        assert!((f.value - 0.8 / 4.0).abs() < 1e-12, "{f:?}");
        assert_eq!(f.n, 4);
        // Conversations without events have no value (they are not zeros).
        assert!(!conversation_values(&cells[2], None).contains_key("mean_event_reduction"));
        let share = figure_of("compressing_share", &cells, None);
        assert_eq!((share.value, share.n), (2.0 / 3.0, 3));
        assert_eq!(figure_of("compressed_events", &cells, None).value, 4.0);
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
        let weighted = figure_of("reduction", std::slice::from_ref(&c), None);
        assert!((weighted.value - (1.0 - 2_900.0 / 11_000.0)).abs() < 1e-12, "{weighted:?}");
        assert_eq!(weighted.n, 11_000, "n of a ratio of token sums is its denominator");
        let mean = figure_of("mean_event_reduction", std::slice::from_ref(&c), None);
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
        assert_eq!(v["storm_events"], 1.0);
        assert_eq!(v["compressions_per_100_requests"], 25.0);
        assert_eq!(v["trigger_below_overhead"], 0.0);
        assert_eq!(v["actionable_conversations"], 1.0);
        c.result.trigger_tokens = Some(3_000);
        assert_eq!(conversation_values(&c, None)["trigger_below_overhead"], 1.0);
        // No compression, unsplittable: the reference could not act even where the trigger is reached.
        c.result.events.clear();
        c.result.unsplittable = true;
        assert_eq!(conversation_values(&c, None)["actionable_conversations"], 0.0);
        c.result.unsplittable = false;
        assert_eq!(conversation_values(&c, None)["actionable_conversations"], 1.0);
        // Only the final request reaches the trigger: no trigger ever sees it.
        c.result.trigger_tokens = Some(5_500);
        assert_eq!(conversation_values(&c, None)["actionable_conversations"], 0.0);
        c.result.trigger_tokens = Some(7_000);
        assert_eq!(conversation_values(&c, None)["actionable_conversations"], 0.0);
        // Strategies without a threshold have no storm or trigger figure.
        c.result.trigger_tokens = None;
        assert!(!conversation_values(&c, None).contains_key("storm_events"));
    }

    /// Two points scored on the same probes: their marginal intervals overlap (conversations differ a lot
    /// from each other), yet one retains more in every conversation, and only the paired interval sees it.
    #[test]
    fn paired_difference_is_significant_where_marginal_intervals_overlap() {
        let m = metric("early_only_retention").unwrap();
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
        let f = figure_of("cached_usd_vs_none", std::slice::from_ref(&c), Some(&pricing));
        assert!((f.value - 1.55 / 0.65).abs() < 1e-9);
        assert_eq!(figure_of("cache_hit_share", std::slice::from_ref(&c), None).value, 0.5);
        // Without prices there are no USD figures.
        assert!(!conversation_values(&c, None).contains_key("cost_usd"));
    }

    #[test]
    fn paired_difference_pairs_conversations() {
        let m = metric("tokens_vs_none").unwrap();
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
        let m = metric("tokens_vs_none").unwrap();
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
        assert_eq!(v["overflowed_conversations"], 1.0);
        assert_eq!(v["finished_in_window_share"], 0.0);
        assert_eq!(v["tokens_after_overflow"], (101 + 90 + 120) as f64);
        assert_eq!(v["overflow_requests"], 2.0);
        assert_eq!(v["invalid_requests"], 0.0);
        c.result.invalid_requests = 3;
        assert_eq!(conversation_values(&c, None)["invalid_requests"], 3.0);
        c.result.request_tokens = vec![50, 100];
        assert_eq!(conversation_values(&c, None)["finished_in_window_share"], 1.0, "at the window is inside it");
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
        assert_eq!(v["recorded_request_ratio"], 320.0 / 300.0);
        assert_eq!(v["recorded_request_ratio_after"], 350.0 / 400.0);
        assert_eq!((v["first_request_vs_recorded"], v["token_scale"]), (1.0, 1.5));
        let (before, after) = recorded_request_quantiles(std::iter::once(&c));
        let (n, p10, median, p90) = before.unwrap();
        assert_eq!(n, 2);
        assert!((median - 1.05).abs() < 1e-12 && (p10 - 1.01).abs() < 1e-12 && (p90 - 1.09).abs() < 1e-12);
        assert_eq!(after.unwrap().0, 2);
        // No recorded usage: none of these figures.
        let plain = conversation_values(&cell("b", 1, 0, 1, &[]), None);
        assert!(!plain.contains_key("recorded_request_ratio") && !plain.contains_key("token_scale"));
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
