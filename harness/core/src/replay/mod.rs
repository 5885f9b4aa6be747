//! Replay: a recorded conversation is fed to a compressor turn by turn, as the agent met it.
//!
//! Before every recorded model turn (a model request) the strategy may compress the stored history; then
//! the pending user turns and the recorded model turn are appended to the (possibly compressed) history, so
//! later compressions see earlier snapshots.
//!
//! One accounting: every size a replay reports is a request as it would be sent (system prompt, tool
//! declarations, stored history, pending turn) counted with one tokenizer ([`Tokenizer`], o200k by default),
//! on both sides of every event and for every strategy. The reference's own figures (`originalTokenCount`,
//! `newTokenCount`) are kept next to them under names that say so. Token accounting is incremental: each
//! Content is measured once, in a first pass over the uncompressed conversation that also gives the `none`
//! figures and the peak a relative window ([`TokenLimit::PeakFraction`]) needs.
//!
//! With a model's tokenizer ([`Tokenizer::Model`]) each Content, the system prompt and the tool declarations
//! are counted alone by the caller's [`TokenCounter`] (awaited: the measuring steps are async), and a
//! request's size is the sum of its parts' counts. A count that fails stops that conversation's replay with
//! the error in its result.

pub mod counter;
pub mod metrics;
pub mod registry;
pub mod strategies;
pub mod strategy;
pub mod window;

pub use counter::{CountError, CounterHandle, ModelCounter, TokenCounter};
pub use metrics::{CompressionEvent, ConversationResult, VerificationDelta};
pub use registry::register;
pub use strategy::{
    Compressor, CompressorSession, RecordedCompaction, SessionContext, Strategy, StrategyError, StrategySpec,
    TurnInput, TurnOutcome,
};
pub use window::{PromptCountOrigin, TokenLimit, Tokenizer, WindowBasis, MAX_FIXED_SHARE};

use crate::compress::callers::{overflow_check, OverflowGuard};
use crate::compress::{curated, CompressionStatus, SplitVariant};
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::LanguageModel;
use crate::tokens::{self, Estimator};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

/// What the trigger sees as `getLastPromptTokenCount()` between requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptCountSource {
    /// The replayed request (system prompt + tools + history + pending turn) counted with the replay's
    /// tokenizer: what the API would report for the request the replay sends.
    #[default]
    #[serde(alias = "tiktoken")]
    Measured,
    /// The conversation's recorded API counts while the history is as recorded, for conversations whose
    /// counts measure the context the replay holds ([`PromptCountOrigin::counts_replayed_context`]); the
    /// measured request otherwise and once a compression has changed the history.
    Recorded,
    /// The reference heuristic over the stored history plus the measured system prompt and tools.
    Heuristic,
}

impl PromptCountSource {
    pub fn name(self) -> &'static str {
        match self {
            PromptCountSource::Measured => "measured",
            PromptCountSource::Recorded => "recorded",
            PromptCountSource::Heuristic => "heuristic",
        }
    }
}

/// Where a strategy may compress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompressAt {
    /// Before every request, by the strategy's own trigger (its policy).
    #[default]
    Own,
    /// Only before the requests where the recording holds the agent's own compactions, and forced there
    /// (as `/compress`): every strategy compresses exactly where the agent did, so the comparison isolates
    /// what each one keeps. Conversations without recorded compactions are never compressed.
    Recorded,
}

impl CompressAt {
    pub fn is_own(&self) -> bool {
        *self == CompressAt::Own
    }
}

/// Replay settings that do not depend on the strategy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySettings {
    /// Simulated context window (tokens, or `"peak:F"`), for the trigger and the overflow guard.
    pub token_limit: TokenLimit,
    pub prompt_count_source: PromptCountSource,
    /// The tokenizer every request size is counted with.
    pub tokenizer: Tokenizer,
    /// Tokens of the agent's system prompt and tool declarations, for conversations that record none (a
    /// recorded system instruction or tool list is measured with the tokenizer instead).
    pub system_prompt_tokens: u64,
    pub tool_declaration_tokens: u64,
    /// Recorded model-turn indices before which the user types `/compress`.
    pub manual_compress_turns: Vec<usize>,
    /// Where strategies may compress: by their own trigger, or only at the agent's recorded compactions.
    #[serde(skip_serializing_if = "CompressAt::is_own")]
    pub compress_at: CompressAt,
    pub overflow_guard: OverflowGuard,
    /// Text of the environment turn the agent's chat starts with (`None`: none).
    pub env_text: Option<String>,
    /// Keep summary texts in the events (needed by probes and reports).
    pub keep_summaries: bool,
    /// The counter of a model tokenizer ([`Tokenizer::Model`]), supplied by the caller: runtime state, not a
    /// setting (never serialised; a plan records the tokenizer's name only).
    #[serde(skip)]
    pub counter: CounterHandle,
}

impl Default for ReplaySettings {
    fn default() -> Self {
        ReplaySettings {
            token_limit: TokenLimit::default(),
            prompt_count_source: PromptCountSource::Measured,
            tokenizer: Tokenizer::O200k,
            system_prompt_tokens: 0,
            tool_declaration_tokens: 0,
            manual_compress_turns: Vec::new(),
            compress_at: CompressAt::Own,
            overflow_guard: OverflowGuard::After,
            env_text: None,
            keep_summaries: true,
            counter: CounterHandle::default(),
        }
    }
}

/// One recorded conversation as replay needs it.
#[derive(Clone, Copy, Debug)]
pub struct ReplayInput<'a> {
    pub id: &'a str,
    pub history: &'a [Content],
    /// Prompt token counts the API reported, aligned with `history` (at model turns).
    pub recorded_prompt_tokens: &'a [Option<u64>],
    /// What those counts measured.
    pub prompt_count_origin: PromptCountOrigin,
    /// The agent's system prompt and tool declarations, when recorded (part of every request).
    pub system_instruction: Option<&'a str>,
    pub tools: Option<&'a Value>,
    /// The agent's own compactions, sorted by `at` (handed to the session, see [`SessionContext`]).
    pub recorded_compactions: &'a [RecordedCompaction],
}

impl<'a> ReplayInput<'a> {
    /// A bare history: no recorded counts, system prompt or tools.
    pub fn history(id: &'a str, history: &'a [Content]) -> Self {
        ReplayInput {
            id,
            history,
            recorded_prompt_tokens: &[],
            prompt_count_origin: PromptCountOrigin::None,
            system_instruction: None,
            tools: None,
            recorded_compactions: &[],
        }
    }
}

/// How a replay counts: the tokenizer, with the counter a model tokenizer needs.
#[derive(Clone, Copy)]
enum Counting<'c> {
    O200k,
    Heuristic,
    Model(&'c dyn TokenCounter),
}

impl<'c> Counting<'c> {
    fn of(settings: &'c ReplaySettings) -> Result<Self, CountError> {
        Ok(match &settings.tokenizer {
            Tokenizer::O200k => Counting::O200k,
            Tokenizer::Heuristic => Counting::Heuristic,
            Tokenizer::Model(spec) => Counting::Model(settings.counter.get(spec)?),
        })
    }

    /// Tokens of a text (a model counts it as one user Content).
    async fn text(self, text: &str) -> Result<u64, CountError> {
        match self {
            Counting::O200k => Ok(tokens::o200k_count_text(text)),
            Counting::Heuristic => Ok(Estimator::Current.text(&crate::json::JsStr::new(text))),
            Counting::Model(m) => m.count(&counter::text_as_content(text)).await,
        }
    }

    /// Tokens of one Content (0 with the heuristic, which [`Measure::est`] holds).
    async fn content(self, c: &Content) -> Result<u64, CountError> {
        match self {
            Counting::O200k => Ok(tokens::o200k_count_history(std::slice::from_ref(c))),
            Counting::Heuristic => Ok(0),
            Counting::Model(m) => m.count(c).await,
        }
    }
}

/// Tokens every request carries besides the history: the recorded system instruction and tool
/// declarations measured with the tokenizer, or the configured sizes where the conversation has none.
pub async fn request_overhead(input: &ReplayInput<'_>, settings: &ReplaySettings) -> Result<u64, CountError> {
    overhead(input, settings, Counting::of(settings)?).await
}

async fn overhead(
    input: &ReplayInput<'_>,
    settings: &ReplaySettings,
    counting: Counting<'_>,
) -> Result<u64, CountError> {
    let system = match input.system_instruction.filter(|s| !s.is_empty()) {
        Some(s) => counting.text(s).await?,
        None => settings.system_prompt_tokens,
    };
    let tools = match input.tools {
        Some(t) => {
            let mut text = String::new();
            crate::json::write_compact(t, crate::json::Numbers::Js, &mut text);
            counting.text(&text).await?
        }
        None => settings.tool_declaration_tokens,
    };
    Ok(system + tools)
}

/// A history with no split candidate after its first Content (a user turn without function responses):
/// one task followed only by tool responses. The current `findCompressSplitPoint` then returns 0 and the
/// reference cannot compress it.
pub fn is_unsplittable(history: &[Content]) -> bool {
    !history.iter().skip(1).any(|c| history::is_user(c) && !history::has_function_response(c))
}

/// Where each historical split variant would split the history the strategy sees before the last request
/// (through the model turn before it), keeping the default 30 %.
fn split_points(history: &[Content]) -> (BTreeMap<String, usize>, usize) {
    let models: Vec<usize> = (0..history.len()).filter(|&i| history::is_model(&history[i])).collect();
    let end = match models.as_slice() {
        [.., previous, _last] => previous + 1,
        _ => history.len(),
    };
    let seen = &history[..end];
    let points =
        SplitVariant::ALL.iter().filter_map(|v| Some((v.name().to_string(), v.split(seen, 0.7).ok()?))).collect();
    (points, seen.len())
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
struct Stored<'c> {
    contents: Vec<Content>,
    /// Each Content's figures, aligned with `contents`.
    measures: Vec<Measure>,
    est: RunningSum<f64>,
    tokens: RunningSum<u64>,
    counting: Counting<'c>,
}

/// The figures of one Content: reference heuristic (unfloored), tokens by the tokenizer (o200k or the
/// model's; 0 with the heuristic tokenizer), and a serial number that changes whenever the Content does (a
/// request's cacheable prefix is the run of leading serials it shares with the previous request).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Measure {
    est: f64,
    tokens: u64,
    serial: u64,
}

fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl<'c> Stored<'c> {
    fn new(counting: Counting<'c>) -> Self {
        Stored {
            contents: Vec::new(),
            measures: Vec::new(),
            est: RunningSum::default(),
            tokens: RunningSum::default(),
            counting,
        }
    }

    async fn measure(&self, c: &Content) -> Result<Measure, CountError> {
        let tokens = self.counting.content(c).await?;
        Ok(Measure { est: Estimator::Current.content_raw(c), tokens, serial: next_serial() })
    }

    /// Appends with the curated-history rules applied incrementally. `known` is the Content's measure when
    /// the caller already has it (the first pass measured it). Returns the Content's own measure when it
    /// was appended, `None` when it was merged into the previous one (or dropped).
    async fn push(&mut self, c: &Content, known: Option<Measure>) -> Result<Option<Measure>, CountError> {
        self.push_owned(c.clone(), known).await
    }

    async fn push_owned(&mut self, mut c: Content, known: Option<Measure>) -> Result<Option<Measure>, CountError> {
        if !curated::strip_thoughts(&mut c) {
            return Ok(None);
        }
        if let Some(last) = self.contents.last_mut() {
            if curated::coalesce_into(last, &c) {
                let m = self.measure(self.contents.last().expect("just merged")).await?;
                *self.measures.last_mut().expect("aligned with contents") = m;
                self.est.set_last(m.est);
                self.tokens.set_last(m.tokens);
                return Ok(None);
            }
        }
        let m = match known {
            Some(m) => m,
            None => self.measure(&c).await?,
        };
        self.contents.push(c);
        self.measures.push(m);
        self.est.push(m.est);
        self.tokens.push(m.tokens);
        Ok(Some(m))
    }

    /// Replaces the history with a strategy's new one. Contents it kept as they were (the same shared
    /// object: masking rewrites a few outputs, drop-oldest keeps a suffix) keep their figures, so a strategy
    /// that rewrites the history at every request does not re-tokenise all of it each time.
    async fn replace(&mut self, contents: Vec<Content>) -> Result<(), CountError> {
        let old = std::mem::take(&mut self.contents);
        let old_measures = std::mem::take(&mut self.measures);
        let mut known = KnownMeasures::new(&old, &old_measures);
        self.est = RunningSum::default();
        self.tokens = RunningSum::default();
        // Moved, not cloned; `old` stays alive until the end, so no new object can reuse an old address.
        for (i, c) in contents.into_iter().enumerate() {
            let m = known.get(i, &c);
            self.push_owned(c, m).await?;
        }
        drop(old);
        Ok(())
    }

    /// Rewrites a few Contents in place (a strategy's edits), measuring only those; the totals are summed
    /// again in order, so they are the same figures a rebuilt history would give.
    async fn edit(&mut self, edits: Vec<(usize, Content)>) -> Result<(), CountError> {
        for (i, c) in edits {
            if i < self.contents.len() {
                self.measures[i] = self.measure(&c).await?;
                self.contents[i] = c;
            }
        }
        self.est = RunningSum::default();
        self.tokens = RunningSum::default();
        for m in &self.measures {
            self.est.push(m.est);
            self.tokens.push(m.tokens);
        }
        Ok(())
    }

    /// Tokens of one Content's measure, by the tokenizer (unfloored for the heuristic).
    fn tokens_of(&self, m: &Measure) -> f64 {
        match self.counting {
            Counting::Heuristic => m.est,
            Counting::O200k | Counting::Model(_) => m.tokens as f64,
        }
    }

    /// Tokens of another history by the tokenizer, reusing the figures of Contents it shares with this one:
    /// a candidate that rewrote a few Contents costs only those.
    async fn measured_of(&self, h: &[Content]) -> Result<u64, CountError> {
        let mut known = KnownMeasures::new(&self.contents, &self.measures);
        let mut total = 0.0;
        for (i, c) in h.iter().enumerate() {
            let m = match known.get(i, c) {
                Some(m) => m,
                None => self.measure(c).await?,
            };
            total += self.tokens_of(&m);
        }
        Ok(f64::floor(total) as u64)
    }

    fn heuristic(&self) -> u64 {
        self.est.total().floor() as u64
    }

    /// The history's tokens by the tokenizer.
    fn measured(&self) -> u64 {
        match self.counting {
            Counting::Heuristic => self.heuristic(),
            Counting::O200k | Counting::Model(_) => self.tokens.total(),
        }
    }

    fn serials(&self) -> Vec<u64> {
        self.measures.iter().map(|m| m.serial).collect()
    }

    /// Tokens of the leading Contents whose serials equal `previous`'s: the part of the history a provider
    /// could serve from its prompt cache.
    fn shared_prefix_tokens(&self, previous: &[u64]) -> u64 {
        let shared = self.measures.iter().zip(previous).take_while(|(m, p)| m.serial == **p).count();
        self.measures[..shared].iter().map(|m| self.tokens_of(m)).sum::<f64>().floor() as u64
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

/// The conversation replayed without compression: every Content measured once (the replay reuses the
/// figures), and the `none` figures of every request.
pub struct Uncompressed {
    /// Per recorded Content: its measure when it entered the history unmerged.
    measures: Vec<Option<Measure>>,
    env: Option<Measure>,
    /// Per request: tokens of the request, of its pending turn (what appending it added), and of its prefix
    /// shared with the previous request (0 for the first).
    pub requests: Vec<u64>,
    pending: Vec<u64>,
    pub cached: Vec<u64>,
    /// System prompt and tool declarations.
    pub overhead: u64,
}

impl Uncompressed {
    /// Fails only when the tokenizer is a model's and a count fails.
    pub async fn new(input: &ReplayInput<'_>, settings: &ReplaySettings) -> Result<Self, CountError> {
        let counting = Counting::of(settings)?;
        let overhead = overhead(input, settings, counting).await?;
        let mut stored = Stored::new(counting);
        let env = match &settings.env_text {
            Some(e) => stored.push(&history::user_text(e), None).await?,
            None => None,
        };
        let mut out = Uncompressed {
            measures: Vec::with_capacity(input.history.len()),
            env,
            requests: Vec::new(),
            pending: Vec::new(),
            cached: Vec::new(),
            overhead,
        };
        let mut previous: Option<Vec<u64>> = None;
        let mut before_pending = stored.measured();
        for turn in input.history {
            if history::is_model(turn) {
                let request = stored.measured() + overhead;
                out.pending.push(stored.measured() - before_pending.min(stored.measured()));
                out.cached.push(previous.as_ref().map_or(0, |p| overhead + stored.shared_prefix_tokens(p)));
                out.requests.push(request);
                previous = Some(stored.serials());
            }
            out.measures.push(stored.push(turn, None).await?);
            if history::is_model(turn) {
                before_pending = stored.measured();
            }
        }
        Ok(out)
    }

    /// The largest request without compression.
    pub fn peak(&self) -> u64 {
        self.requests.iter().copied().max().unwrap_or(self.overhead)
    }

    /// The largest request a trigger sees: every request but the last (a trigger sees the previous request).
    pub fn trigger_seen_peak(&self) -> u64 {
        self.requests.split_last().and_then(|(_, seen)| seen.iter().copied().max()).unwrap_or(0)
    }

    /// The first request (system prompt + tool declarations + first turn): the fixed part of every request.
    pub fn first_request(&self) -> u64 {
        self.requests.first().copied().unwrap_or(self.overhead)
    }

    /// What a relative window is resolved against.
    pub fn window_basis(&self) -> WindowBasis {
        WindowBasis { first_request: self.first_request(), peak: self.peak() }
    }
}

/// Replays one conversation through one strategy. Never fails: an error stops this conversation's replay
/// and is recorded in the result. A relative window is resolved against the conversation's uncompressed
/// peak here, but `strategy` must have been built with the same window ([`spec_with_token_limit`]); the
/// sweep runner does both through [`replay_spec`].
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
    match Uncompressed::new(&input, settings).await {
        Ok(uncompressed) => replay_prepared(input, &uncompressed, strategy, settings, llm, observer).await,
        Err(e) => failed(&input, e.to_string()),
    }
}

/// The result of a replay that could not start.
fn failed(input: &ReplayInput<'_>, error: String) -> ConversationResult {
    ConversationResult {
        conversation: input.id.to_string(),
        contents: input.history.len(),
        error: Some(error),
        ..Default::default()
    }
}

/// Replays a strategy spec, building it with the window resolved for this conversation.
pub async fn replay_spec(
    input: ReplayInput<'_>,
    spec: &StrategySpec,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    let uncompressed = match Uncompressed::new(&input, settings).await {
        Ok(u) => u,
        Err(e) => return failed(&input, e.to_string()),
    };
    let limit = settings.token_limit.resolve(uncompressed.window_basis());
    let spec = spec.with_token_limit(limit);
    match spec.build() {
        Ok(strategy) => {
            let mut result = replay_prepared(input, &uncompressed, strategy.as_ref(), settings, llm, observer).await;
            result.trigger_tokens = spec.trigger_tokens();
            result.summarizes = spec.summarizes();
            result
        }
        Err(e) => failed(&input, e.to_string()),
    }
}

/// [`replay_observed`] after the first pass.
pub async fn replay_prepared(
    input: ReplayInput<'_>,
    uncompressed: &Uncompressed,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    let token_limit = settings.token_limit.resolve(uncompressed.window_basis());
    let use_recorded = settings.prompt_count_source == PromptCountSource::Recorded
        && input.prompt_count_origin.counts_replayed_context();
    let prompt_count_source = match settings.prompt_count_source {
        PromptCountSource::Recorded if !use_recorded => {
            format!("measured ({} counts not comparable)", input.prompt_count_origin.name())
        }
        PromptCountSource::Recorded => format!("recorded ({})", input.prompt_count_origin.name()),
        s => s.name().to_string(),
    };
    let unsplittable = is_unsplittable(input.history);
    let (split_points, split_history_contents) =
        if unsplittable { split_points(input.history) } else { (BTreeMap::new(), 0) };
    let mut result = ConversationResult {
        conversation: input.id.to_string(),
        contents: input.history.len(),
        token_limit,
        none_peak_request_tokens: uncompressed.peak(),
        none_trigger_seen_peak_tokens: uncompressed.trigger_seen_peak(),
        first_request_tokens: uncompressed.first_request(),
        prompt_count_source,
        unsplittable,
        split_points,
        split_history_contents,
        ..Default::default()
    };
    let counting = match Counting::of(settings) {
        Ok(c) => c,
        Err(e) => return ConversationResult { error: Some(e.to_string()), ..result },
    };
    let mut session = strategy.start_for(SessionContext { recorded_compactions: input.recorded_compactions });
    let overhead = uncompressed.overhead;
    let mut stored = Stored::new(counting);
    if let Some(env) = &settings.env_text {
        if let Err(e) = stored.push(&history::user_text(env), uncompressed.env).await {
            return ConversationResult { error: Some(e.to_string()), ..result };
        }
    }
    // `getLastPromptTokenCount()` right after the chat is constructed: the heuristic of its history.
    let mut last_prompt = stored.heuristic();
    let mut compressed_any = false;
    let mut pending_start = 0;
    let mut previous_serials: Option<Vec<u64>> = None;
    // The first stored Content the session has not seen as it is now.
    let mut changed_from = 0;
    for (i, turn) in input.history.iter().enumerate() {
        if !history::is_model(turn) {
            continue;
        }
        // A count that fails (a model tokenizer's) stops the replay, like a strategy's error.
        macro_rules! counted {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => {
                        result.error = Some(format!("turn {i}: {e}"));
                        break;
                    }
                }
            };
        }
        let k = result.requests;
        let pending = &input.history[pending_start..i];
        let pending_tokens = uncompressed.pending.get(k).copied().unwrap_or(0);
        let at_recorded = settings.compress_at == CompressAt::Recorded
            && input.recorded_compactions.iter().any(|c| (pending_start..=i).contains(&c.at));
        let force = settings.manual_compress_turns.contains(&i) || at_recorded;
        let before_contents = stored.contents.len();
        let request_before = stored.measured() + overhead + pending_tokens;
        // Only at the agent's points, the session is asked only there (forced).
        let ask = settings.compress_at == CompressAt::Own || force;
        let outcome = if !ask {
            Ok(TurnOutcome::noop(last_prompt))
        } else {
            session
                .before_request(
                    TurnInput {
                        stored: &stored.contents,
                        last_prompt_tokens: last_prompt,
                        force,
                        prompt_id: format!("{}-{i}", input.id),
                        changed_from,
                        turn: i,
                    },
                    llm,
                )
                .await
        };
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
            counted!(stored.edit(std::mem::take(&mut outcome.edits)).await);
        }
        let event = if status != CompressionStatus::Noop || force {
            let request_after = match &outcome.candidate {
                Some(c) => counted!(stored.measured_of(c).await) + overhead + pending_tokens,
                None if edited => stored.measured() + overhead + pending_tokens,
                None => request_before,
            };
            let mut event =
                build_event(i, k, force, &outcome, before_contents, (request_before, request_after), settings);
            if let Some(summary) = outcome.trace.as_ref().and_then(|t| t.final_summary.as_deref()) {
                event.summary_tokens = counted!(counting.text(summary).await);
            }
            Some(event)
        } else {
            None
        };
        *result.events_by_status.entry(status.name().to_string()).or_default() += 1;
        let first_and_final =
            outcome.trace.as_ref().and_then(|t| Some((t.first_summary.clone()?, t.final_summary.clone()?)));
        let replaced = outcome.replaced.is_some();
        if let Some(new) = outcome.replaced {
            counted!(stored.replace(new).await);
        }
        if replaced || edited {
            compressed_any = true;
            // After `startChat`/`setHistory` the reference's count is the heuristic of the stored history;
            // measured, it is the new request without its pending turn.
            last_prompt = match settings.prompt_count_source {
                PromptCountSource::Measured => stored.measured() + overhead,
                _ => stored.heuristic(),
            };
        }
        // Appending may merge into the last Content; a replaced history is new as a whole. A session not
        // asked this time still has to see everything changed since it was last asked.
        let unseen_from = if replaced { 0 } else { stored.contents.len().saturating_sub(1) };
        changed_from = if ask { unseen_from } else { changed_from.min(unseen_from) };
        if let Some(event) = event {
            let first_pass =
                first_and_final.and_then(|(first, fin)| first_pass_history(&stored.contents, &first, &fin));
            observer.after_event(result.events.len(), &event, &stored.contents, first_pass.as_deref()).await;
            result.events.push(event);
        }
        let pending_parts: Vec<Value> = pending.iter().flat_map(|c| history::parts(c).iter().cloned()).collect();
        if overflow_check(settings.overflow_guard, token_limit, last_prompt, &pending_parts).is_some() {
            result.overflow_guard_refusals += 1;
        }
        for (j, c) in pending.iter().enumerate() {
            counted!(stored.push(c, uncompressed.measures.get(pending_start + j).copied().flatten()).await);
        }
        let request = stored.measured() + overhead;
        let cached = previous_serials.as_ref().map_or(0, |p| overhead + stored.shared_prefix_tokens(p));
        previous_serials = Some(stored.serials());
        result.requests += 1;
        result.request_tokens.push(request);
        result.request_tokens_total += request;
        result.cached_request_tokens_total += cached;
        result.peak_request_tokens = result.peak_request_tokens.max(request);
        result.overflow_requests += (request > token_limit) as u64;
        let none_request = uncompressed.requests.get(k).copied().unwrap_or(request);
        result.none_request_tokens_total += none_request;
        result.none_cached_request_tokens_total += uncompressed.cached.get(k).copied().unwrap_or(0);
        result.none_overflow_requests += (none_request > token_limit) as u64;
        last_prompt = match settings.prompt_count_source {
            PromptCountSource::Recorded if use_recorded && !compressed_any => {
                input.recorded_prompt_tokens.get(i).copied().flatten().unwrap_or(request)
            }
            PromptCountSource::Heuristic => stored.heuristic() + overhead,
            _ => request,
        };
        counted!(stored.push(turn, uncompressed.measures.get(i).copied().flatten()).await);
        pending_start = i + 1;
    }
    observer.at_end(&stored.contents).await;
    result.summarizer_input_tokens_total = result.events.iter().map(|e| e.summarizer_input_tokens).sum();
    result.summarizer_output_tokens_total = result.events.iter().map(|e| e.summarizer_output_tokens).sum();
    result.final_history_tokens = stored.measured() + overhead;
    result.final_history_contents = stored.contents.len();
    result
}

fn build_event(
    turn: usize,
    request: usize,
    forced: bool,
    outcome: &TurnOutcome,
    before_contents: usize,
    (request_before, request_after): (u64, u64),
    settings: &ReplaySettings,
) -> CompressionEvent {
    let info = outcome.info;
    let status = info.compression_status;
    // The strategy reported a smaller (COMPRESSED, CONTENT_TRUNCATED) or a larger (INFLATED) history.
    let reported_smaller = matches!(status, CompressionStatus::Compressed | CompressionStatus::ContentTruncated);
    let reported_larger = status == CompressionStatus::FailedInflatedTokenCount;
    let mut e = CompressionEvent {
        turn,
        request,
        forced,
        status,
        status_code: status.code(),
        reference_original_tokens: info.original_token_count,
        reference_new_tokens: info.new_token_count,
        request_tokens_before: request_before,
        request_tokens_after: request_after,
        reduction: metrics::reduction(request_before, request_after),
        stored_contents_before: before_contents,
        stored_contents_after: outcome.replaced.as_ref().map(Vec::len).unwrap_or(before_contents),
        hidden_inflation: reported_smaller && request_after > request_before,
        hidden_deflation: reported_larger && request_after < request_before,
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
        futures::executor::block_on(async {
            let mut stored = Stored::new(Counting::O200k);
            for (i, t) in ["read src/a.rs", "ok: 12 lines", "now fix the test", "done, 3 passed"].iter().enumerate() {
                stored.push(&text(if i % 2 == 0 { "user" } else { "model" }, t), None).await.unwrap();
            }
            let serials_before = stored.serials();
            let mut new = stored.contents.clone();
            new[1] = text("model", "[masked]");
            new.push(text("user", "next"));
            stored.replace(new.clone()).await.unwrap();
            let mut fresh = Stored::new(Counting::O200k);
            for c in &new {
                fresh.push(c, None).await.unwrap();
            }
            assert_eq!(stored.heuristic(), fresh.heuristic());
            assert_eq!(stored.measured(), fresh.measured());
            let figures = |s: &Stored| s.measures.iter().map(|m| (m.est, m.tokens)).collect::<Vec<_>>();
            assert_eq!(figures(&stored), figures(&fresh));
            assert_eq!(stored.measured_of(&new).await.unwrap(), tokens::o200k_count_history(&new));
            assert_eq!(stored.measured(), tokens::o200k_count_history(&new));
            // Unchanged Contents are the same shared objects, not copies, and keep their serials: the shared
            // prefix with the history before is the first Content only.
            assert_eq!(object_id(&stored.contents[0]), object_id(&new[0]));
            assert_eq!(stored.serials()[0], serials_before[0]);
            assert_eq!(stored.shared_prefix_tokens(&serials_before), tokens::o200k_count_history(&new[..1]));
        });
    }

    fn call(name: &str, n: usize) -> Content {
        crate::json::parse(
            format!(r#"{{"role":"model","parts":[{{"functionCall":{{"name":"{name}","args":{{"n":{n}}}}}}}]}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    fn response(name: &str, lines: usize) -> Content {
        let out: String = (0..lines).map(|i| format!("line {i} of the output of {name}\\n")).collect();
        crate::json::parse(
            format!(r#"{{"role":"user","parts":[{{"functionResponse":{{"name":"{name}","response":{{"output":"{out}"}}}}}}]}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    /// A task, then four tool rounds with large outputs, then a final answer.
    fn tool_history() -> Vec<Content> {
        let mut h = vec![text("user", "fix the failing test in src/lib.rs")];
        for i in 0..4 {
            h.push(call("shell", i));
            h.push(response("shell", 40));
        }
        h.push(text("model", "done"));
        h
    }

    fn run(spec: &StrategySpec, input: ReplayInput<'_>, settings: &ReplaySettings) -> ConversationResult {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(replay_spec(input, spec, settings, &crate::llm::ScriptedModel::new(["unused"]), &mut NoObserver))
    }

    /// One accounting on a handmade history: every size is system prompt + history + pending turn in o200k
    /// tokens, on both sides of every event, and the `none` figures are the uncompressed replay's.
    #[test]
    fn every_size_is_the_request_as_sent_in_one_tokenizer() {
        let h = tool_history();
        let system = "You are a careful coding agent. Use the shell tool.";
        let input = ReplayInput { system_instruction: Some(system), ..ReplayInput::history("t", &h) };
        let settings = ReplaySettings { system_prompt_tokens: 999, tool_declaration_tokens: 7, ..Default::default() };
        // The recorded system prompt is measured; the configured size stands in for the absent tools.
        let overhead = tokens::o200k_count_text(system) + 7;
        assert_eq!(futures::executor::block_on(request_overhead(&input, &settings)), Ok(overhead));
        let none = run(&strategies::none::spec(), input, &settings);
        // Request k holds everything before model turn k.
        let model_turns: Vec<usize> = (0..h.len()).filter(|&i| history::is_model(&h[i])).collect();
        let expected: Vec<u64> = model_turns.iter().map(|&i| overhead + tokens::o200k_count_history(&h[..i])).collect();
        assert_eq!(none.request_tokens, expected);
        assert_eq!(none.request_tokens_total, expected.iter().sum::<u64>());
        assert_eq!(none.none_request_tokens_total, none.request_tokens_total);
        assert_eq!(none.peak_request_tokens, *expected.iter().max().unwrap());
        // Without compression the history only grows: each request's cacheable prefix is the whole previous
        // request.
        let cached: u64 = expected[..expected.len() - 1].iter().sum();
        assert_eq!((none.cached_request_tokens_total, none.none_cached_request_tokens_total), (cached, cached));

        let masking = strategies::observation_masking::spec(1, "[omitted]");
        let r = run(&masking, input, &settings);
        assert_eq!(r.none_request_tokens_total, none.request_tokens_total);
        assert!(!r.events.is_empty());
        for e in &r.events {
            // Before: the request the previous history would send (the uncompressed one at the first event).
            assert_eq!(e.reduction, 1.0 - e.request_tokens_after as f64 / e.request_tokens_before as f64);
            assert!(e.request_tokens_after < e.request_tokens_before, "{e:?}");
            // After: exactly the request the replay then sends.
            assert_eq!(e.request_tokens_after, r.request_tokens[e.request]);
        }
        assert_eq!(r.events[0].request_tokens_before, expected[r.events[0].request]);
        assert_eq!(r.request_tokens_total, r.request_tokens.iter().sum::<u64>());
        assert!(r.request_tokens_total < none.request_tokens_total);
        // Masking rewrites an old output at every request: less of each request is a cached prefix.
        assert!(r.cached_request_tokens_total < none.cached_request_tokens_total);
        assert!(r.cached_request_tokens_total >= overhead * (r.requests as u64 - 1));
        assert_eq!(r.prompt_count_source, "measured");
    }

    /// `peak:F` resolves against the uncompressed peak request; the trigger sees the measured request.
    #[test]
    fn relative_window_resolves_against_the_uncompressed_peak() {
        let h = tool_history();
        let input = ReplayInput::history("t", &h);
        let settings = ReplaySettings { token_limit: TokenLimit::PeakFraction(0.6), ..Default::default() };
        let peak = futures::executor::block_on(Uncompressed::new(&input, &settings)).unwrap().peak();
        let spec = strategies::drop_oldest::spec(strategies::drop_oldest::DropOldestParams {
            threshold: 0.5,
            keep_fraction: 0.3,
            token_limit: 0,
        });
        let r = run(&spec, input, &settings);
        assert_eq!(r.none_peak_request_tokens, peak);
        assert_eq!(r.token_limit, (0.6 * peak as f64).ceil() as u64);
        assert_eq!(r.overflow_requests, r.request_tokens.iter().filter(|&&t| t > r.token_limit).count() as u64);
        // No trigger sees the last request: the peak it sees is the largest of the others.
        let seen = r.request_tokens[..r.request_tokens.len() - 1].iter().copied().max().unwrap();
        assert_eq!(r.none_trigger_seen_peak_tokens, seen);
        assert!(r.none_trigger_seen_peak_tokens < r.none_peak_request_tokens, "the last request is the largest here");
        assert!(!r.summarizes, "drop-oldest writes no summary");
        // One task then only tool responses: nothing for drop-oldest (or the reference) to cut at.
        assert!(r.unsplittable && r.events.is_empty());
        assert_eq!(r.split_points["current"], 0, "{:?}", r.split_points);
        // The 2025-07-07 variant still split at function-response turns.
        assert_ne!(r.split_points["2025-07-07"], 0, "{:?}", r.split_points);
    }

    #[test]
    fn unsplittable_means_no_plain_user_turn_after_the_first() {
        let mut h = tool_history();
        assert!(is_unsplittable(&h));
        h.push(text("user", "now the docs"));
        h.push(text("model", "ok"));
        assert!(!is_unsplittable(&h));
        assert!(is_unsplittable(&[]));
    }

    /// A backend whose tokenizer counts a quarter of the request's contents as JSON bytes, and fails on a
    /// Content that says FAIL: the engine's side of a model tokenizer, without HTTP (the loopback tests of
    /// `compactbench-llm` cover the backend and its cache).
    struct QuarterBytes {
        calls: std::sync::atomic::AtomicUsize,
    }

    fn quarter(contents: &[Content]) -> u64 {
        crate::json::to_string(&Value::Array(contents.to_vec())).len() as u64 / 4
    }

    #[async_trait::async_trait]
    impl LanguageModel for QuarterBytes {
        fn spec(&self) -> &str {
            "test:quarter"
        }
        async fn generate(&self, _: &crate::llm::LlmRequest) -> Result<crate::llm::LlmResponse, crate::llm::LlmError> {
            Err(crate::llm::LlmError::Other("a tokenizer only".into()))
        }
        async fn count_tokens(&self, req: &crate::llm::LlmRequest) -> Result<Option<u64>, crate::llm::LlmError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            assert!(req.system_instruction.is_none() && req.contents.len() == 1, "one Content at a time");
            if crate::json::to_string(&req.contents[0]).contains("FAIL") {
                return Err(crate::llm::LlmError::Transport("connection refused".into()));
            }
            Ok(Some(quarter(&req.contents)))
        }
    }

    fn model_settings(model: &std::sync::Arc<QuarterBytes>) -> (ReplaySettings, std::sync::Arc<ModelCounter>) {
        let counter = std::sync::Arc::new(ModelCounter::new(model.clone()));
        let settings = ReplaySettings {
            tokenizer: Tokenizer::Model("test:quarter".into()),
            counter: CounterHandle::new(counter.clone()),
            ..Default::default()
        };
        (settings, counter)
    }

    /// With a model tokenizer every request is the sum of its parts' counts (system prompt as one user
    /// Content, each stored Content alone), on both sides of every event; each distinct Content is counted
    /// once however many replays share the counter.
    #[test]
    fn a_model_tokenizer_sums_the_counts_of_the_parts() {
        let h = tool_history();
        let system = "You are a careful coding agent.";
        let input = ReplayInput { system_instruction: Some(system), ..ReplayInput::history("t", &h) };
        let model = std::sync::Arc::new(QuarterBytes { calls: Default::default() });
        let (settings, counter) = model_settings(&model);
        let overhead = quarter(&[counter::text_as_content(system)]) + settings.tool_declaration_tokens;
        let none = run(&strategies::none::spec(), input, &settings);
        assert_eq!(none.error, None);
        let expected: Vec<u64> = (0..h.len())
            .filter(|&i| history::is_model(&h[i]))
            .map(|i| overhead + h[..i].iter().map(|c| quarter(std::slice::from_ref(c))).sum::<u64>())
            .collect();
        assert_eq!(none.request_tokens, expected);
        let after_none = model.calls.load(Ordering::Relaxed);
        assert_eq!(after_none, counter.distinct_counted());

        let r = run(&strategies::observation_masking::spec(1, "[omitted]"), input, &settings);
        assert_eq!(r.error, None);
        assert!(!r.events.is_empty());
        for e in &r.events {
            assert_eq!(e.request_tokens_after, r.request_tokens[e.request]);
            assert!(e.request_tokens_after < e.request_tokens_before, "{e:?}");
        }
        assert_eq!(r.none_request_tokens_total, none.request_tokens_total);
        // The second replay counted only the Contents masking rewrote.
        assert_eq!(model.calls.load(Ordering::Relaxed), counter.distinct_counted());
        assert!(counter.distinct_counted() > after_none);
    }

    /// A failed count stops that conversation with the error in its result; a model tokenizer without a
    /// counter is an error too. Neither panics.
    #[test]
    fn a_failed_count_fails_the_conversation() {
        let mut h = tool_history();
        h.insert(3, text("user", "FAIL here"));
        let model = std::sync::Arc::new(QuarterBytes { calls: Default::default() });
        let (settings, _) = model_settings(&model);
        let r = run(&strategies::none::spec(), ReplayInput::history("t", &h), &settings);
        let e = r.error.unwrap();
        assert!(e.contains("tokenizer `test:quarter`") && e.contains("connection refused"), "{e}");
        // A Content a strategy wrote fails when it is measured, mid-replay: the figures stop there.
        let masking = strategies::observation_masking::spec(1, "FAIL");
        let r = run(&masking, ReplayInput::history("t", &tool_history()), &settings);
        let e = r.error.unwrap();
        assert!(e.starts_with("turn ") && e.contains("connection refused"), "{e}");
        assert!(r.requests > 0 && r.events.is_empty());

        let bare = ReplaySettings { counter: CounterHandle::default(), ..settings };
        let r = run(&strategies::none::spec(), ReplayInput::history("t", &tool_history()), &bare);
        assert!(r.error.unwrap().contains("no token counter"));
    }
}
