//! Replay: a recorded conversation is fed to a compressor turn by turn, as the agent met it.
//!
//! Before every recorded model turn (a model request) the strategy may compress the stored history; then
//! the pending user turns and the recorded model turn are appended to the (possibly compressed) history, so
//! later compressions see earlier snapshots. Token accounting is incremental: each Content is measured once
//! when it enters the stored history, so a replay costs time linear in the conversation's length (plus the
//! compressions themselves).

pub mod metrics;
pub mod strategy;

pub use metrics::{CompressionEvent, ConversationResult, VerificationDelta};
pub use strategy::{CompressorSession, Strategy, StrategySpec, TurnInput, TurnOutcome};

use crate::compress::callers::{overflow_check, OverflowGuard};
use crate::compress::{curated, CompressionStatus};
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::LanguageModel;
use crate::tokens::{self, Estimator};
use serde::{Deserialize, Serialize};

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

/// The stored history with per-Content figures, kept curated (thoughts stripped, same roles merged) as the
/// reference's `getHistory(curated = true)` would return it.
struct Stored {
    contents: Vec<Content>,
    est: Vec<f64>,
    tik: Vec<u64>,
    measure_true: bool,
}

impl Stored {
    fn new(measure_true: bool) -> Self {
        Stored { contents: Vec::new(), est: Vec::new(), tik: Vec::new(), measure_true }
    }

    fn measure(&self, c: &Content) -> (f64, u64) {
        let t = if self.measure_true { tokens::o200k_count_history(std::slice::from_ref(c)) } else { 0 };
        (Estimator::Current.content_raw(c), t)
    }

    /// Appends with the curated-history rules applied incrementally.
    fn push(&mut self, c: &Content) {
        let mut c = c.clone();
        if !curated::strip_thoughts(&mut c) {
            return;
        }
        if let Some(last) = self.contents.last_mut() {
            if curated::coalesce_into(last, &c) {
                let (e, t) = self.measure(self.contents.last().expect("just merged"));
                *self.est.last_mut().expect("aligned") = e;
                *self.tik.last_mut().expect("aligned") = t;
                return;
            }
        }
        let (e, t) = self.measure(&c);
        self.contents.push(c);
        self.est.push(e);
        self.tik.push(t);
    }

    fn replace(&mut self, contents: Vec<Content>) {
        self.contents.clear();
        self.est.clear();
        self.tik.clear();
        for c in &contents {
            self.push(c);
        }
    }

    fn heuristic(&self) -> u64 {
        self.est.iter().sum::<f64>().floor() as u64
    }

    fn true_tokens(&self) -> u64 {
        self.tik.iter().sum()
    }
}

fn true_count(h: &[Content]) -> u64 {
    tokens::o200k_count_history(h)
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
    strategy: &dyn Strategy,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
) -> ConversationResult {
    replay_observed(input, strategy, settings, llm, &mut NoObserver).await
}

/// [`replay`] with an observer.
pub async fn replay_observed(
    input: ReplayInput<'_>,
    strategy: &dyn Strategy,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    let mut result =
        ConversationResult { conversation: input.id.to_string(), contents: input.history.len(), ..Default::default() };
    let mut session = strategy.start();
    let overhead = settings.overhead();
    let mut stored = Stored::new(settings.measure_true_tokens);
    let mut baseline = Stored::new(settings.measure_true_tokens);
    if let Some(env) = &settings.env_text {
        stored.push(&history::user_text(env));
        baseline.push(&history::user_text(env));
    }
    // `getLastPromptTokenCount()` right after the chat is constructed: the heuristic of its history.
    let mut last_prompt = stored.heuristic();
    let mut compressed_any = false;
    let mut pending_start = 0;
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
                },
                llm,
            )
            .await;
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                result.error = Some(format!("turn {i}: {e}"));
                break;
            }
        };
        let status = outcome.info.compression_status;
        let event = (status != CompressionStatus::Noop || force).then(|| {
            build_event(i, result.requests, force, &outcome, before_contents, true_before, overhead, settings)
        });
        *result.events_by_status.entry(status.name().to_string()).or_default() += 1;
        let first_and_final =
            outcome.trace.as_ref().and_then(|t| Some((t.first_summary.clone()?, t.final_summary.clone()?)));
        if let Some(new) = outcome.replaced {
            stored.replace(new);
            compressed_any = true;
            // After `startChat`/`setHistory` the count is the heuristic of the stored history.
            last_prompt = stored.heuristic();
        }
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
            stored.push(c);
            baseline.push(c);
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
        stored.push(turn);
        baseline.push(turn);
        pending_start = i + 1;
    }
    observer.at_end(&stored.contents).await;
    result.summarizer_overhead_tokens =
        result.events.iter().map(|e| e.summarizer_input_tokens + e.summarizer_output_tokens).sum();
    result.final_history_tokens = stored.heuristic();
    result.final_history_contents = stored.contents.len();
    result
}

#[allow(clippy::too_many_arguments)]
fn build_event(
    turn: usize,
    request: usize,
    forced: bool,
    outcome: &TurnOutcome,
    before_contents: usize,
    true_before: u64,
    overhead: u64,
    settings: &ReplaySettings,
) -> CompressionEvent {
    let info = outcome.info;
    let status = info.compression_status;
    let true_after = match (&outcome.candidate, settings.measure_true_tokens) {
        (Some(c), true) => true_count(c) + overhead,
        _ => true_before,
    };
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
