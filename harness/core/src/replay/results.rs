//! What a replay records: per-event and per-conversation results ([`ConversationResult`], [`CompressionEvent`]) and
//! why a replay stopped ([`ReplayError`]).

use crate::compress::CompressionStatus;
use crate::replay::validity::Violation;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Events per status. Stored as a JSON object keyed by status name, in name order (as the string-keyed
/// map it replaced was), so cells keep their bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts(BTreeMap<CompressionStatus, u64>);

impl StatusCounts {
    pub fn get(&self, status: CompressionStatus) -> u64 {
        self.0.get(&status).copied().unwrap_or(0)
    }
    pub fn add(&mut self, status: CompressionStatus) {
        *self.0.entry(status).or_default() += 1;
    }
    /// `(status, count)` in name order.
    pub fn iter(&self) -> impl Iterator<Item = (CompressionStatus, u64)> + '_ {
        let mut all: Vec<(CompressionStatus, u64)> = self.0.iter().map(|(s, n)| (*s, *n)).collect();
        all.sort_by_key(|(s, _)| s.name());
        all.into_iter()
    }
}

impl Serialize for StatusCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter().map(|(status, n)| (status.name(), n)))
    }
}

impl<'de> Deserialize<'de> for StatusCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Keys by the status's serde names, which are its `name()`s.
        BTreeMap::<CompressionStatus, u64>::deserialize(d).map(StatusCounts)
    }
}

/// Why a replay stopped. Its kind is a column of the results files, so a run's failures can be told
/// apart (a model that failed from a conversation that could not be read) without parsing messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// The conversation could not be loaded or prepared.
    Conversation(String),
    /// The point's strategy could not be built from its parameters.
    Config(String),
    /// Counting tokens failed (a model's tokenizer), at a turn when known.
    Tokenizer { turn: Option<usize>, message: String },
    /// The summarizer model failed at a turn.
    Model { turn: usize, message: String },
    /// The strategy failed otherwise at a turn (an external program, a compression error).
    Strategy { turn: usize, message: String },
    /// Stored as text by an older version: the kind is unknown.
    Unclassified(String),
}

/// The kind of a [`ReplayError`], as the results files' `error_kind` column and stored cells name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayErrorKind {
    Conversation,
    Config,
    Tokenizer,
    Model,
    Strategy,
    Unclassified,
}

crate::named_variants!(ReplayErrorKind, "replay error kind", {
    Conversation => "conversation",
    Config => "config",
    Tokenizer => "tokenizer",
    Model => "model",
    Strategy => "strategy",
    Unclassified => "unclassified",
});

impl ReplayError {
    pub fn kind(&self) -> ReplayErrorKind {
        match self {
            ReplayError::Conversation(_) => ReplayErrorKind::Conversation,
            ReplayError::Config(_) => ReplayErrorKind::Config,
            ReplayError::Tokenizer { .. } => ReplayErrorKind::Tokenizer,
            ReplayError::Model { .. } => ReplayErrorKind::Model,
            ReplayError::Strategy { .. } => ReplayErrorKind::Strategy,
            ReplayError::Unclassified(_) => ReplayErrorKind::Unclassified,
        }
    }

    fn turn(&self) -> Option<usize> {
        match self {
            ReplayError::Tokenizer { turn, .. } => *turn,
            ReplayError::Model { turn, .. } | ReplayError::Strategy { turn, .. } => Some(*turn),
            _ => None,
        }
    }

    fn message(&self) -> &str {
        match self {
            ReplayError::Conversation(m) | ReplayError::Config(m) | ReplayError::Unclassified(m) => m,
            ReplayError::Tokenizer { message, .. }
            | ReplayError::Model { message, .. }
            | ReplayError::Strategy { message, .. } => message,
        }
    }

    /// A strategy's error at `turn`: the model's when the summarizer call failed.
    pub fn of_strategy(turn: usize, e: &crate::replay::strategy::StrategyError) -> ReplayError {
        use crate::compress::CompressError;
        use crate::replay::strategy::StrategyError;
        match e {
            StrategyError::Llm(_) | StrategyError::Compress(CompressError::Llm(_)) => {
                ReplayError::Model { turn, message: e.to_string() }
            }
            _ => ReplayError::Strategy { turn, message: e.to_string() },
        }
    }
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.turn() {
            Some(turn) => write!(f, "turn {turn}: {}", self.message()),
            None => f.write_str(self.message()),
        }
    }
}

impl std::error::Error for ReplayError {}

/// How a [`ReplayError`] is stored: `{"kind", "turn"?, "message"}`; plain text from older cells.
#[derive(Serialize, Deserialize)]
struct StoredError {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn: Option<usize>,
    message: String,
}

impl Serialize for ReplayError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StoredError { kind: self.kind().name().into(), turn: self.turn(), message: self.message().into() }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ReplayError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Stored(StoredError),
        }
        Ok(match Either::deserialize(d)? {
            Either::Text(m) => ReplayError::Unclassified(m),
            Either::Stored(StoredError { kind, turn, message }) => match (kind.parse(), turn) {
                (Ok(ReplayErrorKind::Conversation), _) => ReplayError::Conversation(message),
                (Ok(ReplayErrorKind::Config), _) => ReplayError::Config(message),
                (Ok(ReplayErrorKind::Tokenizer), turn) => ReplayError::Tokenizer { turn, message },
                (Ok(ReplayErrorKind::Model), Some(turn)) => ReplayError::Model { turn, message },
                (Ok(ReplayErrorKind::Strategy), Some(turn)) => ReplayError::Strategy { turn, message },
                _ => ReplayError::Unclassified(message),
            },
        })
    }
}

/// How the verification pass changed the first summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationDelta {
    pub identical: bool,
    /// Estimated tokens of the verified summary minus the first one.
    pub token_delta: i64,
    /// Levenshtein distance over characters, normalised by the longer text (0 = identical).
    pub edit_distance: f64,
    /// Items (non-empty lines) added and removed per XML section of the snapshot.
    pub sections: Vec<SectionDelta>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SectionDelta {
    pub section: String,
    pub added: u32,
    pub removed: u32,
}

/// One compressor decision before a model request (NOOPs are counted, not listed).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompressionEvent {
    /// Index, in the recorded conversation, of the model turn about to be requested.
    pub turn: usize,
    /// Ordinal of the request in the replay.
    pub request: usize,
    pub forced: bool,
    pub status: CompressionStatus,
    pub status_code: u8,
    /// The strategy's own figures: the reference's `originalTokenCount` (the last prompt count it was given)
    /// and `newTokenCount` (its heuristic of the new history, without system prompt or tools).
    pub reference_original_tokens: u64,
    pub reference_new_tokens: u64,
    /// The request as it would be sent (system prompt + tools + stored history + pending turn, counted with
    /// the replay's tokenizer) without and with this event's new history (the candidate, even when the
    /// strategy discarded it).
    pub request_tokens_before: u64,
    pub request_tokens_after: u64,
    /// `1 − request_tokens_after / request_tokens_before` ([`reduction`]).
    pub reduction: f64,
    pub stored_contents_before: usize,
    pub stored_contents_after: usize,
    pub summarized_contents: usize,
    pub kept_contents: usize,
    pub truncated_outputs: usize,
    /// The final summary counted with the replay's tokenizer (0 without a summary).
    pub summary_tokens: u64,
    /// The summarised head held a previous `<state_snapshot>` (the anchored instruction was used).
    pub anchored: bool,
    pub verification: Option<VerificationDelta>,
    pub summarizer_calls: u32,
    pub summarizer_input_tokens: u64,
    pub summarizer_output_tokens: u64,
    /// The strategy reported a smaller history (COMPRESSED, CONTENT_TRUNCATED) although the request grew.
    pub hidden_inflation: bool,
    /// The strategy reported a larger history (INFLATED, discarded) although the request would have shrunk.
    pub hidden_deflation: bool,
    /// The first and final summaries, for probes and reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_summary: Option<String>,
    /// What a provider would reject in the request sent right after an event that changed the history,
    /// and that the same request without compression does not have ([`validity::introduced`]): empty when
    /// the compression left a valid request (or changed nothing).
    ///
    /// [`validity::introduced`]: crate::replay::validity::introduced
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_violations: Vec<Violation>,
}

impl CompressionEvent {
    /// The strategy reported a smaller history (COMPRESSED, CONTENT_TRUNCATED).
    pub fn reduced(&self) -> bool {
        matches!(self.status, CompressionStatus::Compressed | CompressionStatus::ContentTruncated)
    }
}

/// `1 − after/before` (0 when before is 0): the share of the request an event removed (negative: it grew).
pub fn reduction(before: u64, after: u64) -> f64 {
    if before == 0 {
        0.0
    } else {
        1.0 - after as f64 / before as f64
    }
}

/// A replay's results for one conversation under one strategy. Every token figure is a request as it would
/// be sent, counted with the replay's tokenizer, unless its name says `reference`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationResult {
    pub conversation: String,
    pub contents: usize,
    pub requests: usize,
    pub events: Vec<CompressionEvent>,
    pub events_by_status: StatusCounts,
    /// The simulated window this replay used (a relative window resolved for this conversation).
    pub token_limit: u64,
    /// What the trigger saw as the last prompt count (`measured`, `recorded (gemini-api)`, …).
    pub prompt_count_source: String,
    /// The recorded history has no split candidate after its first Content (see `replay::is_unsplittable`).
    pub unsplittable: bool,
    /// For unsplittable histories: where each historical split variant would split the whole history
    /// (keeping 30 %): 0 = nowhere (the reference returns NOOP), `contents` = summarise everything.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub split_points: BTreeMap<String, usize>,
    /// Contents of the history those split points are in (the stored history before the last request).
    #[serde(default)]
    pub split_history_contents: usize,
    /// Size of every request, in order: the context timeline.
    #[serde(default)]
    pub request_tokens: Vec<u64>,
    /// Σ over requests of the request size; the same replayed without compression.
    pub request_tokens_total: u64,
    pub none_request_tokens_total: u64,
    /// Σ over requests of the prefix shared with the previous request (where the history's head changed,
    /// only the system prompt and tools: `Uncompressed::cache_stable_overhead`) (what a provider's prompt cache
    /// would serve), with and without compression.
    pub cached_request_tokens_total: u64,
    pub none_cached_request_tokens_total: u64,
    /// Largest request, with and without compression.
    pub peak_request_tokens: u64,
    pub none_peak_request_tokens: u64,
    /// The first request (system prompt + tool declarations + first turn): the fixed part of every request.
    #[serde(default)]
    pub first_request_tokens: u64,
    /// The agent's recorded prompt tokens for each request (aligned with `request_tokens`; `None` where it
    /// recorded none), for conversations whose recorded usage measures the context the replay holds (Claude
    /// Code, Codex, Gemini CLI); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recorded_request_tokens: Vec<Option<u64>>,
    /// How many requests, from the first, sent the agent's own history: before the agent's first compaction
    /// and before the strategy changed the history. The rest compare with what the agent sent after its
    /// compactions (the same history only for the strategy that replays them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub recorded_before_requests: usize,
    /// For conversations that record the provider's cache traffic (Claude Code), per request: the prefix the
    /// cache model serves (the tokens shared with the previous request, as in `cached_request_tokens_total`)
    /// and the agent's recorded `cache_read_input_tokens` (`None` where it recorded none), aligned with
    /// `request_tokens` and `recorded_request_tokens`; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cached_request_tokens: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recorded_cache_read_tokens: Vec<Option<u64>>,
    /// The factor on every token count (`[replay] token_scale`: set, or calibrated from the recorded usage);
    /// absent when the counts are unscaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_scale: Option<f64>,
    /// The fixed part of every request, where it came from the recorded usage (`[replay] overhead =
    /// "recorded"`): the first recorded request minus the history it carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_overhead_tokens: Option<u64>,
    /// The smallest last prompt count at which the strategy compresses in this replay's window, as it declares
    /// it (`Compressor::trigger_tokens`: ⌈threshold × window⌉ for the reference); `None` where its trigger is
    /// not a token count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_tokens: Option<u64>,
    /// Summarizer input and output tokens over the whole replay (every pass, every event).
    pub summarizer_input_tokens_total: u64,
    pub summarizer_output_tokens_total: u64,
    /// Requests the reference's overflow guard would have refused (its own pre-send estimate).
    #[serde(alias = "overflow_events")]
    pub overflow_guard_refusals: u64,
    /// Requests larger than the window, with and without compression: a provider refuses each of them, so
    /// the agent could not have gone on from the first one ([`ConversationResult::first_overflow_request`]).
    #[serde(alias = "window_exceeded_requests")]
    pub overflow_requests: u64,
    #[serde(alias = "none_window_exceeded_requests")]
    pub none_overflow_requests: u64,
    /// Requests right after an event that changed the history which a provider would reject for something
    /// the compression introduced (an orphaned call or response, roles out of turn, an empty part, a request
    /// over the window the uncompressed one fits): the events' [`CompressionEvent::request_violations`].
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub invalid_requests: u64,
    /// The largest uncompressed request a trigger sees: every request but the last (the trigger before a
    /// request sees the previous one's size, so no trigger ever sees the final request).
    #[serde(default)]
    pub none_trigger_seen_peak_tokens: u64,
    /// The strategy writes a summary of what it removes ([`Strategy::summarizes`]): only then can a fact whose
    /// evidence left the history verbatim survive, so at-risk retention applies.
    ///
    /// [`Strategy::summarizes`]: crate::replay::strategy::Strategy::summarizes
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summarizes: bool,
    /// The last stored history as a request (without a pending turn).
    pub final_history_tokens: u64,
    pub final_history_contents: usize,
    /// Set when the replay stopped on an error (LLM failure, bad conversation).
    pub error: Option<ReplayError>,
}

/// `(replayed, recorded)` tokens of requests.
pub type RequestPairs = Vec<(u64, u64)>;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl ConversationResult {
    /// `(replayed, recorded)` tokens of each request that has a recorded count: those that sent the agent's
    /// own history (before its first compaction and any change of the strategy's), and the others.
    pub fn recorded_request_pairs(&self) -> (RequestPairs, RequestPairs) {
        let pairs = self.request_tokens.iter().zip(&self.recorded_request_tokens).enumerate();
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for (k, (&replayed, recorded)) in pairs {
            if let Some(recorded) = recorded.filter(|&r| r > 0) {
                let side = if k < self.recorded_before_requests { &mut before } else { &mut after };
                side.push((replayed, recorded));
            }
        }
        (before, after)
    }

    /// Summarizer input + output tokens, every pass.
    pub fn summarizer_tokens_total(&self) -> u64 {
        self.summarizer_input_tokens_total + self.summarizer_output_tokens_total
    }

    /// Events whose strategy reported a smaller history (COMPRESSED, CONTENT_TRUNCATED): the compressions.
    pub fn compressions(&self) -> impl Iterator<Item = &CompressionEvent> + '_ {
        self.events.iter().filter(|e| e.reduced())
    }

    /// The first request already reaches the trigger: the strategy fires before the conversation has grown.
    pub fn trigger_below_first_request(&self) -> bool {
        self.trigger_tokens.is_some_and(|t| self.first_request_tokens >= t)
    }

    /// Compressions that leave the request at or above the trigger, so the next request fires again.
    pub fn storm_events(&self) -> u64 {
        match self.trigger_tokens {
            Some(t) => self.compressions().filter(|e| e.request_tokens_after >= t).count() as u64,
            None => 0,
        }
    }

    /// The strategy's trigger fired, or the conversation without compression reaches it at a request the
    /// trigger sees (not the last) and has somewhere to split (an unsplittable history gives the reference
    /// nothing to cut): a conversation the strategy can act on.
    pub fn actionable(&self) -> bool {
        self.compressions().next().is_some()
            || self.trigger_tokens.is_some_and(|t| !self.unsplittable && self.none_trigger_seen_peak_tokens >= t)
    }

    /// Index of the first request larger than the window: the provider refuses it and the session ends
    /// there, so nothing the history holds from then on counts as kept.
    pub fn first_overflow_request(&self) -> Option<usize> {
        self.request_tokens.iter().position(|&t| t > self.token_limit)
    }

    /// Some request exceeded the window.
    pub fn overflowed(&self) -> bool {
        self.first_overflow_request().is_some()
    }

    /// Tokens of the requests from the first overflow on (what a session that went on would have paid for
    /// requests the provider refuses).
    pub fn tokens_after_overflow(&self) -> u64 {
        self.first_overflow_request().map_or(0, |i| self.request_tokens[i..].iter().sum())
    }

    /// Events the strategy reported as COMPRESSED.
    pub fn compressed_events(&self) -> u64 {
        self.events.iter().filter(|e| e.status == CompressionStatus::Compressed).count() as u64
    }
}

/// Non-ASCII-safe normalised Levenshtein; very long texts are compared by words to bound the cost.
pub fn normalized_edit_distance(a: &str, b: &str) -> f64 {
    use rapidfuzz::distance::levenshtein;
    if a == b {
        return 0.0;
    }
    const MAX_CHARS: usize = 8000;
    let (chars_a, chars_b) = (a.chars().count(), b.chars().count());
    if chars_a <= MAX_CHARS && chars_b <= MAX_CHARS {
        let d = levenshtein::distance(a.chars(), b.chars());
        // 1 − similarity, written as the similarity was first computed (`1 − d / longer`), so the figures
        // of earlier runs are reproduced to the last bit.
        1.0 - (1.0 - d as f64 / chars_a.max(chars_b) as f64)
    } else {
        // Words as numbers, the same number for the same word: the distance between the sequences.
        let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        let mut number = |w| {
            let next = ids.len() as u32;
            *ids.entry(w).or_insert(next)
        };
        let wa: Vec<u32> = a.split_whitespace().map(&mut number).collect();
        let wb: Vec<u32> = b.split_whitespace().map(&mut number).collect();
        let d = levenshtein::distance(wa.iter().copied(), wb.iter().copied());
        d as f64 / wa.len().max(wb.len()).max(1) as f64
    }
}

/// Items per XML section: `<name>…</name>` blocks inside the snapshot, their non-empty lines.
pub fn snapshot_sections(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else { break };
        let name = &after[..close];
        let valid = !name.is_empty()
            && !name.starts_with('/')
            && name != "state_snapshot"
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if valid {
            let body_start = open + 1 + close + 1;
            let end_tag = format!("</{name}>");
            if let Some(end) = rest[body_start..].find(&end_tag) {
                let body = &rest[body_start..body_start + end];
                let items: Vec<String> = body
                    .lines()
                    .map(|l| l.trim().trim_start_matches(['-', '*', ' ']).trim().to_string())
                    .filter(|l| !l.is_empty() && !l.starts_with("<!--"))
                    .collect();
                out.insert(name.to_string(), items);
                rest = &rest[body_start + end + end_tag.len()..];
                continue;
            }
        }
        rest = &rest[open + 1..];
    }
    out
}

pub fn verification_delta(first: &str, verified: &str, token_delta: i64) -> VerificationDelta {
    let a = snapshot_sections(first);
    let b = snapshot_sections(verified);
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let empty = Vec::new();
    let sections = names
        .into_iter()
        .map(|n| {
            let xa = a.get(n).unwrap_or(&empty);
            let xb = b.get(n).unwrap_or(&empty);
            SectionDelta {
                section: n.clone(),
                added: xb.iter().filter(|i| !xa.contains(i)).count() as u32,
                removed: xa.iter().filter(|i| !xb.contains(i)).count() as u32,
            }
        })
        .collect();
    VerificationDelta {
        identical: first.trim() == verified.trim(),
        token_delta,
        edit_distance: normalized_edit_distance(first, verified),
        sections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Texts that share long stretches, as a summary and its verified version do.
    fn edited_pair() -> impl Strategy<Value = (String, String)> {
        // Short texts (the character path) or texts over 8,000 characters (the word path).
        let pad = prop_oneof![0usize..200, 4000usize..4100];
        ("[a-cé😀 \n]{0,300}", "[a-cé😀 \n]{0,40}", 0usize..300, pad).prop_map(|(base, edit, at, pad)| {
            let at = base.char_indices().nth(at).map_or(base.len(), |(i, _)| i);
            let pad = "x ".repeat(pad);
            (format!("{pad}{base}"), format!("{pad}{}{edit}{}", &base[..at], &base[at..]))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// The bit-parallel distance gives the very figures of the plain dynamic programme (strsim's).
        #[test]
        fn edit_distance_equals_the_plain_dynamic_programme((a, b) in edited_pair()) {
            let expected = if a == b {
                0.0
            } else if a.chars().count() <= 8000 && b.chars().count() <= 8000 {
                1.0 - strsim::normalized_levenshtein(&a, &b)
            } else {
                let wa: Vec<&str> = a.split_whitespace().collect();
                let wb: Vec<&str> = b.split_whitespace().collect();
                strsim::generic_levenshtein(&wa, &wb) as f64 / wa.len().max(wb.len()).max(1) as f64
            };
            prop_assert_eq!(normalized_edit_distance(&a, &b).to_bits(), expected.to_bits());
        }
    }

    #[test]
    fn sections_and_deltas() {
        let a = "scratch\n<state_snapshot>\n<overall_goal>\n- fix bug\n</overall_goal>\n<artifact_trail>\n- a.rs\n- b.rs\n</artifact_trail>\n</state_snapshot>";
        let b = "<state_snapshot>\n<overall_goal>\n- fix bug\n</overall_goal>\n<artifact_trail>\n- a.rs\n- c.rs\n- d.rs\n</artifact_trail>\n</state_snapshot>";
        let s = snapshot_sections(a);
        assert_eq!(s["artifact_trail"], ["a.rs", "b.rs"]);
        let d = verification_delta(a, b, 3);
        assert!(!d.identical);
        let trail = d.sections.iter().find(|s| s.section == "artifact_trail").unwrap();
        assert_eq!((trail.added, trail.removed), (2, 1));
        assert!(d.edit_distance > 0.0 && d.edit_distance < 1.0);
        assert!(verification_delta(a, a, 0).identical);
        assert_eq!(normalized_edit_distance("abc", "abc"), 0.0);
    }

    #[test]
    fn errors_and_status_counts_keep_their_stored_form() {
        let e = ReplayError::Model { turn: 7, message: "summarizer call failed: timed out".into() };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(text, r#"{"kind":"model","turn":7,"message":"summarizer call failed: timed out"}"#);
        assert_eq!(serde_json::from_str::<ReplayError>(&text).unwrap(), e);
        // Cells written before kinds: plain text, kind unknown; an unknown kind is not guessed.
        let old: ReplayError = serde_json::from_str(r#""turn 3: boom""#).unwrap();
        assert_eq!((old.kind(), old.to_string()), (ReplayErrorKind::Unclassified, "turn 3: boom".to_string()));
        let odd: ReplayError = serde_json::from_str(r#"{"kind":"cosmic","message":"x"}"#).unwrap();
        assert_eq!(odd.kind(), ReplayErrorKind::Unclassified);

        let mut counts = StatusCounts::default();
        for s in [CompressionStatus::Noop, CompressionStatus::ContentTruncated, CompressionStatus::Compressed] {
            counts.add(s);
        }
        counts.add(CompressionStatus::Noop);
        let text = serde_json::to_string(&counts).unwrap();
        assert_eq!(text, r#"{"COMPRESSED":1,"CONTENT_TRUNCATED":1,"NOOP":2}"#, "name order, as the string map was");
        assert_eq!(serde_json::from_str::<StatusCounts>(&text).unwrap(), counts);
        assert!(serde_json::from_str::<StatusCounts>(r#"{"SQUASHED":1}"#).is_err());
    }
}
