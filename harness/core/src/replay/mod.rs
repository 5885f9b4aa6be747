//! Replay: a recorded conversation is fed to a compressor turn by turn, as the agent met it.
//!
//! Before every recorded model turn (a model request) the strategy may compress the stored history; then
//! the pending user turns and the recorded model turn are appended to the (possibly compressed) history, so
//! later compressions see earlier snapshots. Token accounting is incremental: each Content is measured once
//! when it enters the stored history, so a replay costs time linear in the conversation's length (plus the
//! compressions themselves).

pub mod exec;
pub mod metrics;
pub mod strategies;
pub mod strategy;

pub use metrics::{CompressionEvent, ConversationResult, VerificationDelta};
pub use strategy::{
    register, Compressor, CompressorSession, Strategy, StrategyError, StrategySpec, TurnInput, TurnOutcome,
};

use crate::compress::callers::{overflow_check, OverflowGuard};
use crate::compress::{curated, CompressionStatus};
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::LanguageModel;
use crate::tokens::{self, Estimator};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Where `getLastPromptTokenCount()` comes from between requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptCountSource {
    /// The conversation's recorded API counts while the history is as recorded; the heuristic (plus
    /// overhead) once a compression has changed it, since the recording no longer describes it.
    #[default]
    Recorded,
    /// The reference heuristic over the request, plus the configured overhead.
    Heuristic,
    /// o200k tokens of the request, plus the configured overhead.
    Tiktoken,
}

/// Replay settings that do not depend on the strategy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySettings {
    /// Simulated context window, for the overflow guard.
    pub token_limit: u64,
    pub prompt_count_source: PromptCountSource,
    /// Tokens of the agent's system prompt and tool declarations, added to every request's API count.
    pub system_prompt_tokens: u64,
    pub tool_declaration_tokens: u64,
    /// Recorded model-turn indices before which the user types `/compress`.
    pub manual_compress_turns: Vec<usize>,
    pub overflow_guard: OverflowGuard,
    /// Text of the environment turn the agent's chat starts with (`None`: none).
    pub env_text: Option<String>,
    /// Measure every request with o200k (true request sizes, hidden inflation).
    pub measure_true_tokens: bool,
    /// Keep summary texts in the events (needed by probes and reports).
    pub keep_summaries: bool,
}

impl Default for ReplaySettings {
    fn default() -> Self {
        ReplaySettings {
            token_limit: crate::models::DEFAULT_TOKEN_LIMIT,
            prompt_count_source: PromptCountSource::Recorded,
            system_prompt_tokens: 0,
            tool_declaration_tokens: 0,
            manual_compress_turns: Vec::new(),
            overflow_guard: OverflowGuard::After,
            env_text: None,
            measure_true_tokens: true,
            keep_summaries: true,
        }
    }
}

impl ReplaySettings {
    fn overhead(&self) -> u64 {
        self.system_prompt_tokens + self.tool_declaration_tokens
    }
}

/// One recorded conversation as replay needs it.
#[derive(Clone, Copy, Debug)]
pub struct ReplayInput<'a> {
    pub id: &'a str,
    pub history: &'a [Content],
    /// Prompt token counts the API reported, aligned with `history` (at model turns).
    pub recorded_prompt_tokens: &'a [Option<u64>],
}

/// A running total over a list whose last element may still change (a curated merge rewrites it). Keeps
/// the sum of all but the last element, so the total is the same `f64` as summing the list in order, and
/// reading it costs O(1) per request instead of O(history).
#[derive(Clone, Copy, Debug, Default)]
struct RunningSum<T> {
    before_last: T,
    last: Option<T>,
}

impl<T: Copy + std::ops::Add<Output = T> + Default> RunningSum<T> {
    fn push(&mut self, v: T) {
        if let Some(last) = self.last.replace(v) {
            self.before_last = self.before_last + last;
        }
    }

    fn set_last(&mut self, v: T) {
        self.last = Some(v);
    }

    fn total(&self) -> T {
        match self.last {
            Some(last) => self.before_last + last,
            None => self.before_last,
        }
    }
}

/// The stored history with running token totals, kept curated (thoughts stripped, same roles merged) as
/// the reference's `getHistory(curated = true)` would return it.
struct Stored {
    contents: Vec<Content>,
    /// Each Content's figures, aligned with `contents`.
    measures: Vec<Measure>,
    est: RunningSum<f64>,
    tik: RunningSum<u64>,
    measure_true: bool,
    /// Keep every Content (the history a strategy sees) or only the last one (all a running total of the
    /// uncompressed history needs, for curated merges): the baseline then costs no copy of the conversation.
    keep_all: bool,
}

/// The figures of one Content: reference heuristic (unfloored) and o200k tokens.
type Measure = (f64, u64);

impl Stored {
    fn new(measure_true: bool, keep_all: bool) -> Self {
        Stored {
            contents: Vec::new(),
            measures: Vec::new(),
            est: RunningSum::default(),
            tik: RunningSum::default(),
            measure_true,
            keep_all,
        }
    }

    fn measure(&self, c: &Content) -> Measure {
        let t = if self.measure_true { tokens::o200k_count_history(std::slice::from_ref(c)) } else { 0 };
        (Estimator::Current.content_raw(c), t)
    }

    /// Appends with the curated-history rules applied incrementally. `known` is the Content's measure when
    /// the caller already has it (the same turn entering the stored and the uncompressed history).
    fn push(&mut self, c: &Content, known: Option<Measure>) -> Option<Measure> {
        self.push_owned(c.clone(), known)
    }

    fn push_owned(&mut self, mut c: Content, known: Option<Measure>) -> Option<Measure> {
        if !curated::strip_thoughts(&mut c) {
            return None;
        }
        if let Some(last) = self.contents.last_mut() {
            if curated::coalesce_into(last, &c) {
                let m = self.measure(self.contents.last().expect("just merged"));
                *self.measures.last_mut().expect("aligned with contents") = m;
                self.est.set_last(m.0);
                self.tik.set_last(m.1);
                return None;
            }
        }
        let m = known.unwrap_or_else(|| self.measure(&c));
        if !self.keep_all {
            self.contents.clear();
            self.measures.clear();
        }
        self.contents.push(c);
        self.measures.push(m);
        self.est.push(m.0);
        self.tik.push(m.1);
        Some(m)
    }

    /// Replaces the history with a strategy's new one. Contents it kept as they were (the same shared
    /// object: masking rewrites a few outputs, drop-oldest keeps a suffix) keep their figures, so a strategy
    /// that rewrites the history at every request does not re-tokenise all of it each time.
    fn replace(&mut self, contents: Vec<Content>) {
        let old = std::mem::take(&mut self.contents);
        let old_measures = std::mem::take(&mut self.measures);
        let mut known = KnownMeasures::new(&old, &old_measures);
        self.est = RunningSum::default();
        self.tik = RunningSum::default();
        // Moved, not cloned; `old` stays alive until the end, so no new object can reuse an old address.
        for (i, c) in contents.into_iter().enumerate() {
            let m = known.get(i, &c);
            self.push_owned(c, m);
        }
        drop(old);
    }

    /// Rewrites a few Contents in place (a strategy's edits), measuring only those; the totals are summed
    /// again in order, so they are the same figures a rebuilt history would give.
    fn edit(&mut self, edits: Vec<(usize, Content)>) {
        for (i, c) in edits {
            if i < self.contents.len() {
                self.measures[i] = self.measure(&c);
                self.contents[i] = c;
            }
        }
        self.est = RunningSum::default();
        self.tik = RunningSum::default();
        for m in &self.measures {
            self.est.push(m.0);
            self.tik.push(m.1);
        }
    }

    /// o200k tokens of another history (`o200k_count_history`), reusing the figures of Contents it shares
    /// with this one: a candidate that rewrote a few Contents costs only those.
    fn true_tokens_of(&self, h: &[Content]) -> u64 {
        let mut known = KnownMeasures::new(&self.contents, &self.measures);
        h.iter()
            .enumerate()
            .map(|(i, c)| match known.get(i, c) {
                Some(m) => m.1,
                None => tokens::o200k_count_history(std::slice::from_ref(c)),
            })
            .sum()
    }

    fn heuristic(&self) -> u64 {
        self.est.total().floor() as u64
    }

    fn true_tokens(&self) -> u64 {
        self.tik.total()
    }
}

/// Figures of a history's Contents, found for the Contents of a new history that are the same shared
/// objects: first at the same index (masking rewrites a few in place), else by address (drop-oldest keeps
/// a shifted suffix; the map is built only then).
struct KnownMeasures<'a> {
    contents: &'a [Content],
    measures: &'a [Measure],
    by_address: Option<HashMap<usize, Measure>>,
}

impl<'a> KnownMeasures<'a> {
    fn new(contents: &'a [Content], measures: &'a [Measure]) -> Self {
        KnownMeasures { contents, measures, by_address: None }
    }

    fn get(&mut self, index: usize, c: &Content) -> Option<Measure> {
        let id = object_id(c)?;
        if self.contents.get(index).and_then(object_id) == Some(id) {
            return self.measures.get(index).copied();
        }
        let (contents, measures) = (self.contents, self.measures);
        let map = self.by_address.get_or_insert_with(|| {
            contents.iter().zip(measures).filter_map(|(c, m)| Some((object_id(c)?, *m))).collect()
        });
        map.get(&id).copied()
    }
}

/// The address of a Content's shared object: equal addresses, same unchanged Content.
fn object_id(c: &Content) -> Option<usize> {
    match c {
        Value::Object(m) => Some(std::sync::Arc::as_ptr(m) as usize),
        _ => None,
    }
}

/// Appends one recorded Content to the stored and the uncompressed history, measuring it once when it
/// enters both unmerged.
fn push_both(stored: &mut Stored, baseline: &mut Stored, c: &Content) {
    let m = stored.push(c, None);
    baseline.push(c, m);
}

/// Watches a replay: probes score what the agent still knows at each compression and at the end.
#[async_trait::async_trait]
pub trait ReplayObserver: Send {
    /// After every recorded event (status other than NOOP, or forced), with the stored history the agent
    /// would now send, and, when a verification pass replaced the first summary, the history the first
    /// summary would have given.
    async fn after_event(
        &mut self,
        event_index: usize,
        event: &CompressionEvent,
        stored: &[Content],
        first_pass: Option<&[Content]>,
    );
    /// After the last request, with the final stored history.
    async fn at_end(&mut self, stored: &[Content]);
}

/// Observes nothing.
pub struct NoObserver;

#[async_trait::async_trait]
impl ReplayObserver for NoObserver {
    async fn after_event(&mut self, _: usize, _: &CompressionEvent, _: &[Content], _: Option<&[Content]>) {}
    async fn at_end(&mut self, _: &[Content]) {}
}

/// The stored history with the final summary swapped for the first-pass one.
fn first_pass_history(stored: &[Content], first: &str, final_summary: &str) -> Option<Vec<Content>> {
    let first = crate::compress::js_trim(first);
    if first.is_empty() || first == final_summary {
        return None;
    }
    let i = stored.iter().position(|c| history::visible_text(c).contains(final_summary))?;
    let mut out = stored.to_vec();
    let replaced = history::visible_text(&out[i]).replacen(final_summary, first, 1);
    out[i] = history::text_content(history::role(&stored[i]).unwrap_or("user"), &replaced);
    Some(out)
}

/// Replays one conversation through one strategy. Never fails: an error stops this conversation's replay
/// and is recorded in the result.
pub async fn replay(
    input: ReplayInput<'_>,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
) -> ConversationResult {
    replay_observed(input, strategy, settings, llm, &mut NoObserver).await
}

/// [`replay`] with an observer.
pub async fn replay_observed(
    input: ReplayInput<'_>,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    let mut result =
        ConversationResult { conversation: input.id.to_string(), contents: input.history.len(), ..Default::default() };
    let mut session = strategy.start();
    let overhead = settings.overhead();
    let mut stored = Stored::new(settings.measure_true_tokens, true);
    let mut baseline = Stored::new(settings.measure_true_tokens, false);
    if let Some(env) = &settings.env_text {
        push_both(&mut stored, &mut baseline, &history::user_text(env));
    }
    // `getLastPromptTokenCount()` right after the chat is constructed: the heuristic of its history.
    let mut last_prompt = stored.heuristic();
    let mut compressed_any = false;
    let mut pending_start = 0;
    // The first stored Content the session has not seen as it is now.
    let mut changed_from = 0;
    for (i, turn) in input.history.iter().enumerate() {
        if !history::is_model(turn) {
            continue;
        }
        let pending = &input.history[pending_start..i];
        let force = settings.manual_compress_turns.contains(&i);
        let before_contents = stored.contents.len();
        let true_before = stored.true_tokens() + overhead;
        let outcome = session
            .before_request(
                TurnInput {
                    stored: &stored.contents,
                    last_prompt_tokens: last_prompt,
                    force,
                    prompt_id: format!("{}-{i}", input.id),
                    changed_from,
                },
                llm,
            )
            .await;
        let mut outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                result.error = Some(format!("turn {i}: {e}"));
                break;
            }
        };
        let status = outcome.info.compression_status;
        let edited = !outcome.edits.is_empty();
        if edited {
            stored.edit(std::mem::take(&mut outcome.edits));
        }
        let event = (status != CompressionStatus::Noop || force).then(|| {
            let true_after = match (&outcome.candidate, settings.measure_true_tokens) {
                (Some(c), true) => stored.true_tokens_of(c) + overhead,
                (None, true) if edited => stored.true_tokens() + overhead,
                _ => true_before,
            };
            build_event(i, result.requests, force, &outcome, before_contents, (true_before, true_after), settings)
        });
        *result.events_by_status.entry(status.name().to_string()).or_default() += 1;
        let first_and_final =
            outcome.trace.as_ref().and_then(|t| Some((t.first_summary.clone()?, t.final_summary.clone()?)));
        let replaced = outcome.replaced.is_some();
        if let Some(new) = outcome.replaced {
            stored.replace(new);
        }
        if replaced || edited {
            compressed_any = true;
            // After `startChat`/`setHistory` the count is the heuristic of the stored history.
            last_prompt = stored.heuristic();
        }
        // Appending may merge into the last Content; a replaced history is new as a whole.
        changed_from = if replaced { 0 } else { stored.contents.len().saturating_sub(1) };
        if let Some(event) = event {
            let first_pass =
                first_and_final.and_then(|(first, fin)| first_pass_history(&stored.contents, &first, &fin));
            observer.after_event(result.events.len(), &event, &stored.contents, first_pass.as_deref()).await;
            result.events.push(event);
        }
        let pending_parts: Vec<Value> = pending.iter().flat_map(|c| history::parts(c).iter().cloned()).collect();
        if overflow_check(settings.overflow_guard, settings.token_limit, last_prompt, &pending_parts).is_some() {
            result.overflow_events += 1;
        }
        for c in pending {
            push_both(&mut stored, &mut baseline, c);
        }
        let request = stored.heuristic() + overhead;
        let true_request = stored.true_tokens() + overhead;
        result.requests += 1;
        result.cumulative_request_tokens += request;
        result.cumulative_true_tokens += true_request;
        result.baseline_cumulative_tokens += baseline.heuristic() + overhead;
        result.baseline_cumulative_true_tokens += baseline.true_tokens() + overhead;
        result.peak_context = result.peak_context.max(request);
        result.request_tokens.push(request);
        result.peak_true_context = result.peak_true_context.max(true_request);
        last_prompt = match settings.prompt_count_source {
            PromptCountSource::Recorded if !compressed_any => {
                input.recorded_prompt_tokens.get(i).copied().flatten().unwrap_or(request)
            }
            PromptCountSource::Tiktoken => true_request,
            _ => request,
        };
        push_both(&mut stored, &mut baseline, turn);
        pending_start = i + 1;
    }
    observer.at_end(&stored.contents).await;
    result.summarizer_overhead_tokens =
        result.events.iter().map(|e| e.summarizer_input_tokens + e.summarizer_output_tokens).sum();
    result.final_history_tokens = stored.heuristic();
    result.final_history_contents = stored.contents.len();
    result
}

fn build_event(
    turn: usize,
    request: usize,
    forced: bool,
    outcome: &TurnOutcome,
    before_contents: usize,
    (true_before, true_after): (u64, u64),
    settings: &ReplaySettings,
) -> CompressionEvent {
    let info = outcome.info;
    let status = info.compression_status;
    let mut e = CompressionEvent {
        turn,
        request,
        forced,
        status: status.name().to_string(),
        status_code: status.code(),
        tokens_before: info.original_token_count,
        tokens_after: info.new_token_count,
        reduction: if info.original_token_count > 0 {
            1.0 - info.new_token_count as f64 / info.original_token_count as f64
        } else {
            0.0
        },
        stored_contents_before: before_contents,
        stored_contents_after: outcome.replaced.as_ref().map(Vec::len).unwrap_or(before_contents),
        true_tokens_before: true_before,
        true_tokens_after: true_after,
        hidden_inflation: status == CompressionStatus::Compressed
            && settings.measure_true_tokens
            && true_after > true_before,
        hidden_deflation: status == CompressionStatus::FailedInflatedTokenCount
            && settings.measure_true_tokens
            && true_after < true_before,
        ..Default::default()
    };
    if let Some(t) = &outcome.trace {
        e.summarized_contents = t.summarized_contents;
        e.kept_contents = t.kept_contents;
        e.truncated_outputs = t.truncated.len();
        e.summarizer_calls = t.llm_calls.len() as u32;
        e.anchored = t.anchored_on_previous_snapshot;
        let reported_in: u64 = t.llm_calls.iter().map(|c| c.usage.prompt_tokens).sum();
        let reported_out: u64 = t.llm_calls.iter().map(|c| c.usage.output_tokens).sum();
        // Backends without usage (scripted, extractive): estimate from what was sent and returned.
        e.summarizer_input_tokens = if reported_in > 0 || t.llm_calls.is_empty() {
            reported_in
        } else {
            t.llm_calls.iter().map(|c| c.prompt_estimate).sum()
        };
        e.summarizer_output_tokens = if reported_out > 0 {
            reported_out
        } else {
            t.llm_calls.iter().map(|c| (c.response_chars / 4) as u64).sum()
        };
        if let Some(s) = &t.final_summary {
            e.summary_tokens = Estimator::Current.text(&crate::json::JsStr::new(s));
        }
        if let (Some(first), Some(_)) = (&t.first_summary, &t.verified_summary) {
            let est = |s: &str| Estimator::Current.text(&crate::json::JsStr::new(s)) as i64;
            let final_text = t.final_summary.as_deref().unwrap_or(first);
            e.verification = Some(metrics::verification_delta(first, final_text, est(final_text) - est(first)));
        }
        if settings.keep_summaries {
            e.first_summary = t.first_summary.clone();
            e.final_summary = t.final_summary.clone();
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The running total is the same `f64` as summing the list in order, whatever was rewritten last.
        #[test]
        fn running_sum_equals_the_ordered_sum(ops in prop::collection::vec((any::<bool>(), 0.0f64..1e6), 0..60)) {
            let (mut run, mut list) = (RunningSum::<f64>::default(), Vec::<f64>::new());
            for (rewrite_last, v) in ops {
                if rewrite_last && !list.is_empty() {
                    *list.last_mut().unwrap() = v;
                    run.set_last(v);
                } else {
                    list.push(v);
                    run.push(v);
                }
            }
            // Bit for bit, but for the empty list's sign of zero (`0.0` here, `-0.0` from `sum`).
            let sum = list.iter().sum::<f64>();
            prop_assert!(run.total().to_bits() == sum.to_bits() || (list.is_empty() && run.total() == sum));
        }
    }

    fn text(role: &str, t: &str) -> Content {
        history::text_content(role, t)
    }

    /// A strategy's rewrite keeps the figures of the Contents it did not touch and measures the others:
    /// the totals equal a fresh measurement of the new history.
    #[test]
    fn replace_reuses_figures_of_unchanged_contents_and_totals_match() {
        let mut stored = Stored::new(true, true);
        for (i, t) in ["read src/a.rs", "ok: 12 lines", "now fix the test", "done, 3 passed"].iter().enumerate() {
            stored.push(&text(if i % 2 == 0 { "user" } else { "model" }, t), None);
        }
        let mut new = stored.contents.clone();
        new[1] = text("model", "[masked]");
        new.push(text("user", "next"));
        stored.replace(new.clone());
        let mut fresh = Stored::new(true, true);
        for c in &new {
            fresh.push(c, None);
        }
        assert_eq!(stored.heuristic(), fresh.heuristic());
        assert_eq!(stored.true_tokens(), fresh.true_tokens());
        assert_eq!(stored.measures, fresh.measures);
        assert_eq!(stored.true_tokens_of(&new), tokens::o200k_count_history(&new));
        // Unchanged Contents are the same shared objects, not copies.
        assert_eq!(object_id(&stored.contents[0]), object_id(&new[0]));
    }
}
