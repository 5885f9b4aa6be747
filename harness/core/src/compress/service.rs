//! `ChatCompressionService.compress` (`packages/core/src/context/chatCompressionService.ts`), step for step, over the
//! [`LanguageModel`] trait.

use super::prompts::CompressionPrompts;
use super::split::SplitVariant;
use super::truncate::{
    effective_max_chars, truncate_history_to_budget, ChangedPart, ToolOutputStore, TruncationSettings,
    TruncationVariant, COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET, DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD,
};
use super::{CompressionInfo, CompressionStatus};
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::{GenerationParams, LanguageModel, LlmError, LlmRequest, RequestLabel, Usage};
use crate::model_tables::{self, FlashModels, ModelTable, PromptFamily};
use crate::tokens::Estimator;
use serde::{Deserialize, Serialize};

pub const DEFAULT_COMPRESSION_TOKEN_THRESHOLD: f64 = 0.5;
pub const COMPRESSION_PRESERVE_THRESHOLD: f64 = 0.3;
pub const SUMMARIZER_ROLE: &str = "utility_compressor";

/// What a compression does after a failed attempt (`hasFailedCompressionAttempt`), by era.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailurePath {
    /// Before 2025-08-27: the flag does not exist.
    Ignore,
    /// 2025-08-27 … 2026-02-19: non-forced calls return `{0, 0, NOOP}` at once.
    Noop,
    /// Since 2026-02-19: non-forced calls truncate tool outputs only (`CONTENT_TRUNCATED`).
    #[default]
    TruncateOnly,
}

/// The knobs of the reference and its historical variants. `Default` is the reference commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressSettings {
    /// The model argument of `compress` (token limit and summarizer alias).
    pub model: String,
    /// The session's active model, which picks the prompt family (defaults to `model`).
    pub active_model: Option<String>,
    pub approved_plan_path: Option<String>,
    /// `model.compressionThreshold` (fraction of the token limit); unset or 0 → 0.5.
    pub threshold: Option<f64>,
    /// `COMPRESSION_PRESERVE_THRESHOLD`: the split fraction is `1 − preserve_fraction`.
    pub preserve_fraction: f64,
    pub function_response_budget: u64,
    /// `tools.truncateToolOutputThreshold` (characters).
    pub truncate_tool_output_threshold: i64,
    /// Overrides `tokenLimit(model)` (a simulated context window). Unset in a strategy's parameters: its
    /// session sets the replay's window here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
    /// Overrides `getTruncateToolOutputThreshold()`, which the reference derives from the *configured*
    /// model's limit (not the `model` argument) and the UI's token count.
    pub tool_output_chars_limit: Option<i64>,
    pub model_table: ModelTable,
    pub split: SplitVariant,
    pub estimator: Estimator,
    pub truncation: TruncationVariant,
    pub failure_path: FailurePath,
    /// Send the original (untruncated) head when it fits the window (since 2026-01-18).
    pub high_fidelity: bool,
    /// Return NOOP when the head to summarise is empty (since 2025-10-14).
    pub empty_head_noop: bool,
    /// Discard results whose new count exceeds the original (since 2025-08-27).
    pub inflation_guard: bool,
    /// Run the verification pass when the prompts have one (since 2026-01-20).
    pub verification: bool,
    pub prompts: CompressionPrompts,
    /// Text of the environment turn `getInitialChatHistory` prepends for the new count (`None`: none).
    pub env_text: Option<String>,
    /// Unset in a strategy's parameters: its session sets the replay's `[llm] max_output_tokens` here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

impl Default for CompressSettings {
    fn default() -> Self {
        CompressSettings {
            model: "gemini-2.5-pro".into(),
            active_model: None,
            approved_plan_path: None,
            threshold: None,
            preserve_fraction: COMPRESSION_PRESERVE_THRESHOLD,
            function_response_budget: COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET,
            truncate_tool_output_threshold: DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD,
            token_limit: None,
            tool_output_chars_limit: None,
            model_table: ModelTable::Current,
            split: SplitVariant::Current,
            estimator: Estimator::Current,
            truncation: TruncationVariant::Current,
            failure_path: FailurePath::TruncateOnly,
            high_fidelity: true,
            empty_head_noop: true,
            inflation_guard: true,
            verification: true,
            prompts: CompressionPrompts::current(),
            env_text: None,
            max_output_tokens: None,
        }
    }
}

impl CompressSettings {
    pub fn token_limit(&self) -> u64 {
        self.token_limit.unwrap_or_else(|| model_tables::token_limit(&self.model, self.model_table))
    }

    pub fn model_alias(&self) -> &'static str {
        model_tables::compression_model_alias(&self.model, self.model_table, &FlashModels::default())
    }

    pub fn split_fraction(&self) -> f64 {
        1.0 - self.preserve_fraction
    }

    /// `getCompressionThreshold() ?? 0.5`, where 0 counts as unset.
    pub fn effective_threshold(&self) -> f64 {
        match self.threshold {
            Some(t) if t != 0.0 && !t.is_nan() => t,
            _ => DEFAULT_COMPRESSION_TOKEN_THRESHOLD,
        }
    }

    pub fn system_instruction(&self) -> Option<String> {
        let active = self.active_model.as_deref().unwrap_or(&self.model);
        let modern = model_tables::prompt_family(active) == PromptFamily::Modern;
        self.prompts.system_instruction(modern, self.approved_plan_path.as_deref())
    }
}

/// Per-call inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompressRequest {
    pub prompt_id: String,
    pub force: bool,
    pub has_failed: bool,
    /// `chat.getLastPromptTokenCount()`.
    pub last_prompt_tokens: u64,
    /// The UI's copy of the last prompt count, which sizes the truncation placeholder.
    pub ui_last_prompt_tokens: u64,
}

/// Mutable session state the reference keeps in `Config`: the truncation id counter and the file sink.
pub struct CompressEnv<'a> {
    pub next_truncation_id: &'a mut u64,
    pub tool_outputs: &'a mut dyn ToolOutputStore,
}

/// One summarizer call, as the golden vectors record it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmCallRecord {
    pub model_alias: String,
    pub prompt_id: String,
    pub role: String,
    pub system_instruction: Option<String>,
    pub n_contents: usize,
    pub last_content: Value,
    pub usage: Usage,
    /// The reference heuristic over the request (system instruction + contents), for backends that
    /// report no usage.
    pub prompt_estimate: u64,
    pub response_chars: usize,
}

/// Everything measurable about one compression, beyond what the reference returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompressTrace {
    pub split_point: Option<usize>,
    pub truncated: Vec<ChangedPart>,
    /// True when the original head was sent (high-fidelity path), false when the truncated one was.
    pub sent_original_head: Option<bool>,
    pub anchored_on_previous_snapshot: bool,
    pub first_summary: Option<String>,
    pub verified_summary: Option<String>,
    pub final_summary: Option<String>,
    pub llm_calls: Vec<LlmCallRecord>,
    /// The history `compress` built, even when the inflation guard discarded it (without the env turn).
    pub candidate_history: Option<Vec<Content>>,
    /// Contents summarised and kept.
    pub summarized_contents: usize,
    pub kept_contents: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompressOutcome {
    pub new_history: Option<Vec<Content>>,
    pub info: CompressionInfo,
    pub trace: CompressTrace,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompressError {
    #[error("summarizer call failed: {0}")]
    Llm(#[from] LlmError),
    #[error("{0}")]
    Fraction(#[from] super::split::FractionError),
}

/// JS `String.prototype.trim` (Rust's `trim` differs on U+0085 and U+FEFF).
pub fn js_trim(s: &str) -> &str {
    let ws = |c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{FEFF}';
    s.trim_matches(ws)
}

fn outcome(
    new_history: Option<Vec<Content>>,
    o: u64,
    n: u64,
    status: CompressionStatus,
    trace: CompressTrace,
) -> CompressOutcome {
    CompressOutcome {
        new_history,
        info: CompressionInfo { original_token_count: o, new_token_count: n, compression_status: status },
        trace,
    }
}

/// `compress(chat, promptId, force, model, config, hasFailedCompressionAttempt)` on a curated history.
// Kept whole: mirrors upstream `compress` step by step (the numbered comments) for review against the
// TypeScript.
pub async fn compress(
    history: &[Content],
    req: &CompressRequest,
    settings: &CompressSettings,
    env: &mut CompressEnv<'_>,
    llm: &dyn LanguageModel,
) -> Result<CompressOutcome, CompressError> {
    let mut trace = CompressTrace::default();
    // 1. Empty history.
    if history.is_empty() {
        return Ok(outcome(None, 0, 0, CompressionStatus::Noop, trace));
    }
    // (2. PreCompress hook: no observable effect here.)
    if settings.failure_path == FailurePath::Noop && req.has_failed && !req.force {
        return Ok(outcome(None, 0, 0, CompressionStatus::Noop, trace));
    }
    // 3–4. Threshold.
    let orig = req.last_prompt_tokens;
    let limit = settings.token_limit();
    if !req.force && (orig as f64) < settings.effective_threshold() * limit as f64 {
        return Ok(outcome(None, orig, orig, CompressionStatus::Noop, trace));
    }
    // 5. Reverse token budget over tool outputs.
    let trunc_settings = TruncationSettings {
        variant: settings.truncation,
        budget: settings.function_response_budget,
        max_chars: settings.tool_output_chars_limit.unwrap_or_else(|| {
            effective_max_chars(limit, req.ui_last_prompt_tokens, settings.truncate_tool_output_threshold)
        }),
        estimator: Estimator::Current,
    };
    let truncation = truncate_history_to_budget(history, &trunc_settings, env.next_truncation_id, env.tool_outputs);
    trace.truncated = truncation.changed;
    let truncated = truncation.history;
    // 6. Truncation-only path after a failure.
    if settings.failure_path == FailurePath::TruncateOnly && req.has_failed && !req.force {
        let tc = settings.estimator.history(&truncated);
        return Ok(if tc < orig {
            outcome(Some(truncated), orig, tc, CompressionStatus::ContentTruncated, trace)
        } else {
            outcome(None, orig, orig, CompressionStatus::Noop, trace)
        });
    }
    // 7. Split.
    let split = settings.split.split(&truncated, settings.split_fraction())?;
    trace.split_point = Some(split);
    trace.summarized_contents = split;
    trace.kept_contents = truncated.len() - split;
    if split == 0 && settings.empty_head_noop {
        return Ok(outcome(None, orig, orig, CompressionStatus::Noop, trace));
    }
    // 8. High-fidelity decision.
    let head_original = &history[..split];
    let src: &[Content] = if settings.high_fidelity && settings.estimator.history(head_original) < limit {
        trace.sent_original_head = Some(true);
        head_original
    } else {
        trace.sent_original_head = Some(false);
        &truncated[..split]
    };
    // 9. Anchor.
    let prompts = &settings.prompts;
    let previous =
        history::all_parts(src).filter_map(history::part_text).any(|t| t.to_str_lossy().contains("<state_snapshot>"));
    trace.anchored_on_previous_snapshot = previous;
    let instruction = match (&prompts.instruction_with_previous, previous) {
        (Some(with_previous), true) => with_previous.as_str(),
        _ => prompts.instruction.as_str(),
    };
    let system = settings.system_instruction();
    let alias = settings.model_alias();
    let params = GenerationParams { max_output_tokens: settings.max_output_tokens, ..Default::default() };
    // 10. Summary call.
    let mut contents: Vec<Content> = Vec::with_capacity(src.len() + 2);
    contents.extend_from_slice(src);
    contents.push(history::user_text(instruction));
    let summary_req = LlmRequest {
        system_instruction: system.clone(),
        contents,
        params: params.clone(),
        label: RequestLabel {
            prompt_id: req.prompt_id.clone(),
            role: SUMMARIZER_ROLE.into(),
            model_alias: Some(alias.into()),
        },
    };
    let summary_resp = llm.generate(&summary_req).await?;
    trace.llm_calls.push(record(&summary_req, alias, &summary_resp.usage, summary_resp.text.len()));
    let summary = summary_resp.text;
    trace.first_summary = Some(summary.clone());
    // 11–12. Verification call.
    let final_summary = match prompts.verification.as_deref().filter(|_| settings.verification) {
        Some(verification) => {
            let mut contents = summary_req.contents;
            contents.pop();
            contents.push(history::model_text(&summary));
            contents.push(history::user_text(verification));
            let verify_req = LlmRequest {
                system_instruction: system,
                contents,
                params,
                label: RequestLabel {
                    prompt_id: format!("{}-verify", req.prompt_id),
                    role: SUMMARIZER_ROLE.into(),
                    model_alias: Some(alias.into()),
                },
            };
            let verify_resp = llm.generate(&verify_req).await?;
            trace.llm_calls.push(record(&verify_req, alias, &verify_resp.usage, verify_resp.text.len()));
            trace.verified_summary = Some(verify_resp.text.clone());
            let verified = js_trim(&verify_resp.text);
            js_trim(if verified.is_empty() { &summary } else { verified }).to_string()
        }
        None => js_trim(&summary).to_string(),
    };
    // 13. Empty summary.
    if final_summary.is_empty() {
        return Ok(outcome(None, orig, orig, CompressionStatus::FailedEmptySummary, trace));
    }
    trace.final_summary = Some(final_summary.clone());
    // 14. New history.
    let keep = &truncated[split..];
    let mut extra: Vec<Content> = Vec::with_capacity(keep.len() + 2);
    if prompts.summary_as_model_reply {
        extra.push(history::user_text(&prompts.instruction));
        extra.push(history::model_text(&final_summary));
    } else {
        extra.push(history::user_text(&final_summary));
        if let Some(ack) = &prompts.acknowledgement {
            extra.push(history::model_text(ack));
        }
    }
    extra.extend_from_slice(keep);
    // 15. New count over [envTurn, ...extra].
    let env_turn = settings.env_text.as_deref().map(history::user_text);
    let new_count = match settings.estimator {
        Estimator::ContentJslen => {
            let mut full: Vec<Content> = env_turn.into_iter().collect();
            full.extend_from_slice(&extra);
            settings.estimator.history(&full)
        }
        e => e.parts(env_turn.iter().flat_map(|c| history::parts(c).iter()).chain(history::all_parts(&extra)), 4.0),
    };
    trace.candidate_history = Some(extra.clone());
    // 17. Inflation guard.
    if settings.inflation_guard && new_count > orig {
        return Ok(outcome(None, orig, new_count, CompressionStatus::FailedInflatedTokenCount, trace));
    }
    Ok(outcome(Some(extra), orig, new_count, CompressionStatus::Compressed, trace))
}

fn record(req: &LlmRequest, alias: &str, usage: &Usage, response_chars: usize) -> LlmCallRecord {
    LlmCallRecord {
        model_alias: alias.to_string(),
        prompt_id: req.label.prompt_id.clone(),
        role: req.label.role.clone(),
        system_instruction: req.system_instruction.clone(),
        n_contents: req.contents.len(),
        last_content: req.contents.last().cloned().unwrap_or(Value::Null),
        usage: *usage,
        prompt_estimate: Estimator::Current.history(&req.contents)
            + req
                .system_instruction
                .as_deref()
                .map(|s| Estimator::Current.text(&crate::json::JsStr::new(s)))
                .unwrap_or(0),
        response_chars,
    }
}
