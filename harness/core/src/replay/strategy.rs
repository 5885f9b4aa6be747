//! Compression strategies behind one trait: the reference (`gemini`) and the baselines it is compared with.

use crate::compress::truncate::{effective_max_chars, truncate_history_to_budget, TruncationSettings};
use crate::compress::{
    compress, Caller, CallerKind, CompressEnv, CompressError, CompressOutcome, CompressRequest, CompressSettings,
    CompressTrace, CompressionInfo, CompressionStatus, HistoryUpdate, Latch, MemoryToolOutputStore,
};
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::LanguageModel;
use crate::tokens::Estimator;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What a strategy sees before a model request.
#[derive(Clone, Debug)]
pub struct TurnInput<'a> {
    /// The stored history (without the pending request).
    pub stored: &'a [Content],
    /// `getLastPromptTokenCount()`.
    pub last_prompt_tokens: u64,
    /// `/compress` at this turn.
    pub force: bool,
    pub prompt_id: String,
}

/// What a strategy did.
#[derive(Clone, Debug)]
pub struct TurnOutcome {
    pub info: CompressionInfo,
    /// The new stored history, when the strategy replaced it.
    pub replaced: Option<Vec<Content>>,
    /// The reference's trace (summaries, LLM calls, split) when there was one.
    pub trace: Option<CompressTrace>,
    /// The stored history after a COMPRESSED result is `[env, ...new]` for the interactive caller; the
    /// candidate history (even when discarded) for "hidden inflation" measurements.
    pub candidate: Option<Vec<Content>>,
}

impl TurnOutcome {
    /// A baseline strategy replaced the stored history (no LLM, no trace).
    fn replaced(orig: u64, new: u64, status: CompressionStatus, history: Vec<Content>) -> Self {
        TurnOutcome {
            info: CompressionInfo { original_token_count: orig, new_token_count: new, compression_status: status },
            candidate: Some(history.clone()),
            replaced: Some(history),
            trace: None,
        }
    }

    fn noop(orig: u64) -> Self {
        TurnOutcome {
            info: CompressionInfo {
                original_token_count: orig,
                new_token_count: orig,
                compression_status: CompressionStatus::Noop,
            },
            replaced: None,
            trace: None,
            candidate: None,
        }
    }
}

/// One conversation's compressor state.
#[async_trait]
pub trait CompressorSession: Send {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, CompressError>;
}

/// A strategy: makes a fresh session per conversation.
pub trait Strategy: Send + Sync {
    fn name(&self) -> &str;
    /// Whether it calls the summarizer model at all.
    fn uses_llm(&self) -> bool;
    fn start(&self) -> Box<dyn CompressorSession>;
}

/// Which strategy, with its knobs; the sweep grid builds these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "kebab-case")]
pub enum StrategySpec {
    /// The reference: `compress()` driven by the interactive or sub-agent caller.
    Gemini { settings: CompressSettings, caller: CallerKind, latch: Latch },
    /// Tool-output truncation only (the reference's fallback path, used as a strategy), at the threshold.
    TruncationOnly { settings: CompressSettings },
    /// Keep the last `keep_last` tool outputs, replace older ones with a placeholder (SWE-agent, JetBrains).
    ObservationMasking { keep_last: usize, placeholder: String },
    /// Sliding window at user-turn boundaries: above the threshold, drop the oldest turns until the history
    /// fits `1 − preserve_fraction`… of the window, i.e. keep `preserve_fraction × limit` tokens.
    DropOldest { threshold: f64, keep_fraction: f64, token_limit: u64 },
    /// Never compress: the upper bound on what the agent knows, the lower bound on savings.
    None,
}

impl StrategySpec {
    pub fn kind(&self) -> &'static str {
        match self {
            StrategySpec::Gemini { .. } => "gemini",
            StrategySpec::TruncationOnly { .. } => "truncation-only",
            StrategySpec::ObservationMasking { .. } => "observation-masking",
            StrategySpec::DropOldest { .. } => "drop-oldest",
            StrategySpec::None => "none",
        }
    }

    pub fn build(&self) -> Box<dyn Strategy> {
        Box::new(BuiltStrategy { spec: self.clone() })
    }
}

struct BuiltStrategy {
    spec: StrategySpec,
}

impl Strategy for BuiltStrategy {
    fn name(&self) -> &str {
        self.spec.kind()
    }

    fn uses_llm(&self) -> bool {
        matches!(self.spec, StrategySpec::Gemini { .. })
    }

    fn start(&self) -> Box<dyn CompressorSession> {
        match &self.spec {
            StrategySpec::Gemini { settings, caller, latch } => Box::new(GeminiSession {
                settings: settings.clone(),
                caller: Caller::new(*caller, *latch),
                next_id: 0,
                store: MemoryToolOutputStore::new("/tmp/compactbench/project"),
            }),
            StrategySpec::TruncationOnly { settings } => Box::new(TruncationOnlySession {
                settings: settings.clone(),
                next_id: 0,
                store: MemoryToolOutputStore::new("/tmp/compactbench/project"),
            }),
            StrategySpec::ObservationMasking { keep_last, placeholder } => {
                Box::new(MaskingSession { keep_last: *keep_last, placeholder: placeholder.clone() })
            }
            StrategySpec::DropOldest { threshold, keep_fraction, token_limit } => Box::new(DropOldestSession {
                threshold: *threshold,
                keep_fraction: *keep_fraction,
                token_limit: *token_limit,
            }),
            StrategySpec::None => Box::new(NoneSession),
        }
    }
}

struct GeminiSession {
    settings: CompressSettings,
    caller: Caller,
    next_id: u64,
    store: MemoryToolOutputStore,
}

#[async_trait]
impl CompressorSession for GeminiSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, CompressError> {
        // The sub-agent caller never forces.
        let force = turn.force && self.caller.kind == CallerKind::Interactive;
        let req = CompressRequest {
            prompt_id: turn.prompt_id,
            force,
            has_failed: self.caller.has_failed_argument(),
            last_prompt_tokens: turn.last_prompt_tokens,
            ui_last_prompt_tokens: turn.last_prompt_tokens,
        };
        let mut env = CompressEnv { next_truncation_id: &mut self.next_id, tool_outputs: &mut self.store };
        let out: CompressOutcome = compress(turn.stored, &req, &self.settings, &mut env, llm).await?;
        // Outputs are only needed for their paths; keep memory flat over long replays.
        self.store.files.clear();
        let env_turn = self.settings.env_text.as_deref().map(history::user_text);
        let replaced = match self.caller.apply(&out, force, env_turn.as_ref()) {
            HistoryUpdate::Replaced(h) => Some(h),
            HistoryUpdate::Unchanged => None,
        };
        let candidate = out.trace.candidate_history.clone().map(|h| {
            let mut full: Vec<Content> = Vec::with_capacity(h.len() + 1);
            if self.caller.kind == CallerKind::Interactive {
                full.extend(env_turn.clone());
            }
            full.extend(h);
            full
        });
        Ok(TurnOutcome { info: out.info, replaced, trace: Some(out.trace), candidate })
    }
}

struct TruncationOnlySession {
    settings: CompressSettings,
    next_id: u64,
    store: MemoryToolOutputStore,
}

#[async_trait]
impl CompressorSession for TruncationOnlySession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, CompressError> {
        let orig = turn.last_prompt_tokens;
        let limit = self.settings.token_limit();
        if !turn.force && (orig as f64) < self.settings.effective_threshold() * limit as f64 {
            return Ok(TurnOutcome::noop(orig));
        }
        let ts = TruncationSettings {
            variant: self.settings.truncation,
            budget: self.settings.function_response_budget,
            max_chars: effective_max_chars(limit, orig, self.settings.truncate_tool_output_threshold),
            estimator: Estimator::Current,
        };
        let t = truncate_history_to_budget(turn.stored, &ts, &mut self.next_id, &mut self.store);
        self.store.files.clear();
        let tc = self.settings.estimator.history(&t.history);
        if t.changed.is_empty() || tc >= orig {
            return Ok(TurnOutcome::noop(orig));
        }
        Ok(TurnOutcome::replaced(orig, tc, CompressionStatus::ContentTruncated, t.history))
    }
}

struct MaskingSession {
    keep_last: usize,
    placeholder: String,
}

fn line_count(v: &Value) -> usize {
    match v {
        Value::String(s) => s.to_str_lossy().lines().count(),
        Value::Object(_) => v.get("output").or_else(|| v.get("content")).map(line_count).unwrap_or(1),
        _ => 1,
    }
}

#[async_trait]
impl CompressorSession for MaskingSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, CompressError> {
        let orig = turn.last_prompt_tokens;
        // Positions of tool outputs, newest last.
        let positions: Vec<(usize, usize)> = turn
            .stored
            .iter()
            .enumerate()
            .flat_map(|(ci, c)| {
                history::parts(c)
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| history::function_response(p).is_some())
                    .map(move |(pi, _)| (ci, pi))
            })
            .collect();
        let mask_count = positions.len().saturating_sub(self.keep_last);
        // Placeholders for the outputs not masked yet; the history is copied only when one changes.
        let masked_already = |r: &Value| r.get("masked").is_some();
        let edits: Vec<(usize, usize, String)> = positions[..mask_count]
            .iter()
            .filter_map(|&(ci, pi)| {
                let fr = history::function_response(&history::parts(&turn.stored[ci])[pi])?;
                let response = fr.get("response").unwrap_or(&Value::Null);
                if masked_already(response) {
                    return None;
                }
                Some((ci, pi, self.placeholder.replace("{num_text_lines}", &line_count(response).to_string())))
            })
            .collect();
        if edits.is_empty() {
            return Ok(TurnOutcome::noop(orig));
        }
        let mut history = turn.stored.to_vec();
        for (ci, pi, text) in edits {
            let Some(Value::Array(parts)) = history[ci].get_mut("parts") else { continue };
            let Some(fr) = parts[pi].get_mut("functionResponse") else { continue };
            fr.insert("response", Value::object([("output", Value::str(&text)), ("masked", Value::Bool(true))]));
        }
        let new = Estimator::Current.history(&history);
        Ok(TurnOutcome::replaced(orig, new, CompressionStatus::ContentTruncated, history))
    }
}

struct DropOldestSession {
    threshold: f64,
    keep_fraction: f64,
    token_limit: u64,
}

#[async_trait]
impl CompressorSession for DropOldestSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, CompressError> {
        let orig = turn.last_prompt_tokens;
        if !turn.force && (orig as f64) < self.threshold * self.token_limit as f64 {
            return Ok(TurnOutcome::noop(orig));
        }
        let budget = self.keep_fraction * self.token_limit as f64;
        // Walk back from the newest turn; cut at the oldest plain user turn whose suffix fits the budget.
        let mut suffix = 0.0;
        let mut cut = turn.stored.len();
        for (i, c) in turn.stored.iter().enumerate().rev() {
            suffix += Estimator::Current.content_raw(c);
            if suffix > budget {
                break;
            }
            if history::is_user(c) && !history::has_function_response(c) {
                cut = i;
            }
        }
        if cut == 0 || cut == turn.stored.len() {
            return Ok(TurnOutcome::noop(orig));
        }
        let kept = turn.stored[cut..].to_vec();
        let new = Estimator::Current.history(&kept);
        Ok(TurnOutcome::replaced(orig, new, CompressionStatus::Compressed, kept))
    }
}

struct NoneSession;

#[async_trait]
impl CompressorSession for NoneSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, CompressError> {
        Ok(TurnOutcome::noop(turn.last_prompt_tokens))
    }
}
