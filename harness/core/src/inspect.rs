//! `compactbench inspect`: runs the reference's pieces on one history and reports them with the field names
//! of the golden vectors (`../shared/golden/README.md`).

use crate::compress::{
    self, compress, truncate::effective_max_chars, CompressEnv, CompressError, CompressRequest, CompressSettings,
    LlmCallRecord, ToolOutputStore, TruncationSettings,
};
use crate::history::Content;
use crate::json::{self, Value};
use crate::llm::ScriptedModel;
use crate::model_tables::{self, FlashModels, ModelTable};
use crate::tokens::Estimator;

/// Everything `inspect` needs besides the history.
#[derive(Clone, Debug)]
pub struct InspectOptions {
    pub fraction: f64,
    pub model: String,
    pub truncate_threshold: i64,
    pub last_prompt_tokens: u64,
    /// When set, also run `compress` with these inputs.
    pub compress: Option<InspectCompress>,
}

#[derive(Clone, Debug)]
pub struct InspectCompress {
    pub force: bool,
    pub has_failed: bool,
    pub threshold: Option<f64>,
    pub summary: String,
    /// `None`: the verification call returns the summary again.
    pub verify: Option<String>,
    pub env_text: Option<String>,
    pub prompt_id: String,
}

fn nums<I: IntoIterator<Item = u64>>(it: I) -> Value {
    Value::Array(it.into_iter().map(|n| Value::num(n as f64)).collect())
}

/// Runs split, estimation, truncation (and optionally compress) and builds the report. Tool outputs go to
/// `store_for_truncation` for the `truncated` run and `store_for_compress` for the compress run; each run
/// starts its id counter at 0, as the vectors do.
pub async fn inspect(
    history: &[Content],
    opts: &InspectOptions,
    store_for_truncation: &mut dyn ToolOutputStore,
    store_for_compress: &mut dyn ToolOutputStore,
) -> Result<Value, CompressError> {
    let limit = model_tables::token_limit(&opts.model, ModelTable::Current);
    let alias = model_tables::compression_model_alias(&opts.model, ModelTable::Current, &FlashModels::default());
    let split = compress::split::SplitVariant::Current.split(history, opts.fraction)?;
    let est = Estimator::Current;
    let truncated = truncation_report(history, opts, limit, store_for_truncation)?;
    let mut report = Value::object([
        ("fraction", Value::num(opts.fraction)),
        ("model", Value::str(&opts.model)),
        ("tokenLimit", Value::num(limit as f64)),
        ("compressionModelAlias", Value::str(alias)),
        ("charCounts", nums(history.iter().map(|c| json::jslen(c) as u64))),
        ("splitPoint", Value::num(split as f64)),
        ("estimatedTokens", Value::num(est.history(history) as f64)),
        ("estimatedTokensPerContent", nums(history.iter().map(|c| est.content(c)))),
        ("truncated", truncated),
    ]);
    if let Some(c) = &opts.compress {
        report.insert("compress", compress_report(history, opts, c, store_for_compress).await?);
    }
    Ok(report)
}

/// The `truncated` section: the reverse token budget over tool outputs, as `compress` applies it for a
/// window of `limit` tokens.
fn truncation_report(
    history: &[Content],
    opts: &InspectOptions,
    limit: u64,
    store: &mut dyn ToolOutputStore,
) -> Result<Value, CompressError> {
    let est = Estimator::Current;
    let max_chars = effective_max_chars(limit, opts.last_prompt_tokens, opts.truncate_threshold);
    let settings = TruncationSettings {
        variant: compress::TruncationVariant::Current,
        budget: compress::truncate::COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET,
        max_chars,
        estimator: est,
    };
    let mut ids = 0u64;
    let t = compress::truncate_history_to_budget(history, &settings, &mut ids, store);
    let mut files: Vec<String> = t.changed.iter().map(|c| c.file.clone()).collect();
    files.sort();
    let changed = Value::Array(
        t.changed
            .iter()
            .map(|c| {
                Value::object([
                    ("contentIndex", Value::num(c.content_index as f64)),
                    ("partIndex", Value::num(c.part_index as f64)),
                    ("name", Value::str(&c.name)),
                    ("originalChars", Value::num(c.original_chars as f64)),
                    ("newOutputChars", Value::num(c.new_output_chars as f64)),
                    ("outputHead", Value::String(c.output_head.clone())),
                ])
            })
            .collect(),
    );
    Ok(Value::object([
        ("truncationThresholdChars", Value::num(max_chars as f64)),
        ("changedParts", changed),
        ("filesWritten", Value::Array(files.iter().map(|f| Value::str(f)).collect())),
        ("estimatedTokens", Value::num(est.history(&t.history) as f64)),
        ("splitPoint", Value::num(compress::find_compress_split_point(&t.history, opts.fraction)? as f64)),
        ("charCounts", nums(t.history.iter().map(|c| json::jslen(c) as u64))),
        ("history", Value::Array(t.history.clone())),
    ]))
}

/// The `compress` section: one `compress` call with scripted summarizer answers.
async fn compress_report(
    history: &[Content],
    opts: &InspectOptions,
    c: &InspectCompress,
    store: &mut dyn ToolOutputStore,
) -> Result<Value, CompressError> {
    let answers = vec![c.summary.clone(), c.verify.clone().unwrap_or_else(|| c.summary.clone())];
    let llm = ScriptedModel::new(answers);
    let settings = CompressSettings {
        model: opts.model.clone(),
        threshold: c.threshold,
        truncate_tool_output_threshold: opts.truncate_threshold,
        env_text: c.env_text.clone(),
        ..CompressSettings::default()
    };
    let req = CompressRequest {
        prompt_id: c.prompt_id.clone(),
        force: c.force,
        has_failed: c.has_failed,
        last_prompt_tokens: opts.last_prompt_tokens,
        ui_last_prompt_tokens: opts.last_prompt_tokens,
    };
    let mut ids = 0u64;
    let mut env = CompressEnv { next_truncation_id: &mut ids, tool_outputs: store };
    let out = compress(history, &req, &settings, &mut env, &llm).await?;
    let info = Value::object([
        ("originalTokenCount", Value::num(out.info.original_token_count as f64)),
        ("newTokenCount", Value::num(out.info.new_token_count as f64)),
        ("compressionStatus", Value::num(out.info.compression_status.code() as f64)),
    ]);
    let calls = Value::Array(out.trace.llm_calls.iter().map(llm_call).collect());
    let (len, hist) = match out.new_history {
        Some(h) => (Value::num(h.len() as f64), Value::Array(h)),
        None => (Value::Null, Value::Null),
    };
    Ok(Value::object([("info", info), ("newHistoryLength", len), ("newHistory", hist), ("llmCalls", calls)]))
}

/// One summarizer call, with the golden vectors' field names.
fn llm_call(call: &LlmCallRecord) -> Value {
    Value::object([
        ("modelConfigKey", Value::object([("model", Value::str(&call.model_alias))])),
        ("promptId", Value::str(&call.prompt_id)),
        ("role", Value::str(&call.role)),
        ("systemInstruction", call.system_instruction.as_deref().map(Value::str).unwrap_or(Value::Null)),
        ("nContents", Value::num(call.n_contents as f64)),
        ("lastContent", call.last_content.clone()),
    ])
}
