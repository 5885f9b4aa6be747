//! The LLM layer: one trait, several backends, a record/replay cache in front of them.
//!
//! A model is named by a spec string and built with [`from_spec`]:
//! - `local:smollm2-135m` — the embedded GGUF model run in-process (smoke tests only);
//! - `gemini:<model>` — the Gemini REST API;
//! - `openai:<model>@<base-url>` — any OpenAI-compatible `/chat/completions` server;
//! - `extractive` — a deterministic rule-based baseline, no LLM.
//!
//! The stack is `CachedModel(ReliableModel(backend))`: cache hits never take a concurrency slot or a retry.

mod cache;
mod extractive;
mod gemini;
mod http;
#[cfg(feature = "local")]
pub mod local;
mod openai;
mod reliable;

#[cfg(test)]
mod tests;

pub use cache::{
    canonical_count_request, canonical_request, describe_count, describe_request, request_hash, CacheMode, CachedModel,
    ResponseCache,
};
pub use compactbench_core::llm::{
    GenerationParams, LanguageModel, LlmError, LlmRequest, LlmResponse, RequestLabel, ScriptedModel, Usage,
};
pub use extractive::ExtractiveModel;
pub use gemini::{GeminiModel, DEFAULT_GEMINI_BASE_URL};
pub use http::{redact, REDACTED};
pub use openai::OpenAiModel;
pub use reliable::{is_retryable, ReliabilityOptions, ReliableModel, RetryPolicy, SpecUsage, TokenPrices, UsageLedger};
// The data model the backends use through `crate::json` / `crate::history`.
use compactbench_core::{fsutil, history, json};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The model used when none is named.
pub const DEFAULT_MODEL_SPEC: &str = "local:smollm2-135m";
/// Where the project's shipped recordings live.
pub const DEFAULT_RECORDINGS_DIR: &str = "datasets/recordings";

/// Everything [`from_spec`] needs besides the spec itself.
#[derive(Clone, Debug)]
pub struct BackendOptions {
    pub gemini_base_url: String,
    /// Name of the environment variable holding the Gemini key (never the key itself).
    pub gemini_key_var: String,
    /// Name of the environment variable holding the OpenAI-compatible key; unset variable = no auth header.
    pub openai_key_var: String,
    pub connect_timeout: Duration,
    pub reliability: ReliabilityOptions,
    /// Directory holding the embedded model's weights (see [`default_model_dir`]).
    pub model_dir: PathBuf,
    /// Threads for the embedded model; `None` = candle's default (physical cores).
    pub threads: Option<usize>,
    /// Fetch the embedded model when it is missing (with a progress message on stderr).
    pub auto_fetch: bool,
    /// Record/replay cache directory; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    pub cache_mode: CacheMode,
    /// Largest answer body accepted from a server (bytes); a larger one fails the call with `TooLarge`.
    pub max_response_bytes: u64,
    /// Prices per spec, for cost accounting.
    pub prices: HashMap<String, TokenPrices>,
    pub ledger: Arc<UsageLedger>,
}

impl Default for BackendOptions {
    fn default() -> Self {
        BackendOptions {
            gemini_base_url: DEFAULT_GEMINI_BASE_URL.into(),
            gemini_key_var: "GEMINI_API_KEY".into(),
            openai_key_var: "OPENAI_API_KEY".into(),
            connect_timeout: Duration::from_secs(30),
            reliability: ReliabilityOptions::default(),
            model_dir: default_model_dir(),
            threads: None,
            auto_fetch: true,
            cache_dir: None,
            cache_mode: CacheMode::ReadWrite,
            max_response_bytes: http::DEFAULT_MAX_RESPONSE_BYTES,
            prices: HashMap::new(),
            ledger: Arc::new(UsageLedger::new()),
        }
    }
}

/// The backend a spec names, parsed but not built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend<'a> {
    Extractive,
    Local(&'a str),
    Gemini(&'a str),
    OpenAi(&'a str),
}

fn parse_spec(spec: &str) -> Result<Backend<'_>, LlmError> {
    match spec.split_once(':') {
        _ if spec == "extractive" => Ok(Backend::Extractive),
        Some(("local", name)) => Ok(Backend::Local(name)),
        Some(("gemini", model)) => Ok(Backend::Gemini(model)),
        Some(("openai", rest)) => Ok(Backend::OpenAi(rest)),
        _ => Err(LlmError::Config(format!(
            "unknown model spec `{spec}` (expected local:smollm2-135m, gemini:<model>, openai:<model>@<base-url> or extractive)"
        ))),
    }
}

/// Whether the backend a spec names has its own token counter (`count_tokens` answers `Some`): Gemini
/// (`countTokens`) and the embedded models do; OpenAI-compatible servers and the extractive baseline do not.
/// Checked without building the backend (no key, no weights needed); an unknown spec is an error.
pub fn counts_tokens(spec: &str) -> Result<bool, LlmError> {
    Ok(match parse_spec(spec.trim())? {
        Backend::Gemini(model) => {
            if model.is_empty() {
                return Err(LlmError::Config("gemini spec needs a model name: gemini:<model>".into()));
            }
            true
        }
        Backend::Local(name) => {
            #[cfg(feature = "local")]
            local::embedded_model(name)?;
            #[cfg(not(feature = "local"))]
            return Err(without_local(name));
            #[cfg(feature = "local")]
            true
        }
        Backend::Extractive | Backend::OpenAi(_) => false,
    })
}

/// Where the embedded model's weights live: `$COMPACTBENCH_MODEL_DIR`, or `models/` under the working
/// directory. Known without the `local` feature, so options and the CLI read the same default either way.
pub fn default_model_dir() -> std::path::PathBuf {
    match std::env::var_os("COMPACTBENCH_MODEL_DIR") {
        Some(d) if !d.is_empty() => std::path::PathBuf::from(d),
        _ => std::env::current_dir().unwrap_or_default().join("models"),
    }
}

/// A `local:` spec in a build without the embedded model (the `local` feature, on by default).
#[cfg(not(feature = "local"))]
fn without_local(name: &str) -> LlmError {
    LlmError::Config(format!(
        "`local:{name}`: this build has no embedded model; build compactbench-llm with its default feature `local`"
    ))
}

/// Builds the backend a spec names, wrapped in the robustness layer and (when `cache_dir` is set and the
/// mode is not `off`) the record/replay cache. The extractive baseline is deterministic and free, so it is
/// neither retried nor cached.
pub fn from_spec(spec: &str, opts: &BackendOptions) -> Result<Arc<dyn LanguageModel>, LlmError> {
    let spec = spec.trim();
    let backend: Arc<dyn LanguageModel> = match parse_spec(spec)? {
        Backend::Extractive => return Ok(Arc::new(ExtractiveModel::new())),
        #[cfg(feature = "local")]
        Backend::Local(name) => Arc::new(local::LocalModel::open(name, opts)?),
        #[cfg(not(feature = "local"))]
        Backend::Local(name) => return Err(without_local(name)),
        Backend::Gemini(model) => {
            let client = http::build_client(opts.connect_timeout)?;
            Arc::new(
                GeminiModel::new(model, &opts.gemini_base_url, &opts.gemini_key_var, client)?
                    .with_max_response_bytes(opts.max_response_bytes),
            )
        }
        Backend::OpenAi(rest) => {
            let client = http::build_client(opts.connect_timeout)?;
            Arc::new(
                OpenAiModel::from_spec_rest(rest, &opts.openai_key_var, client)?
                    .with_max_response_bytes(opts.max_response_bytes),
            )
        }
    };
    if let Some(p) = opts.prices.get(spec) {
        opts.ledger.set_prices(backend.spec(), *p);
    }
    let mut reliability = opts.reliability.clone();
    if spec.starts_with("local:") {
        // One in-process model computes one request at a time; more permits would only queue behind it
        // while their timeouts run.
        reliability.concurrency = 1;
    }
    let reliable: Arc<dyn LanguageModel> = Arc::new(ReliableModel::new(backend, reliability, Arc::clone(&opts.ledger)));
    Ok(match &opts.cache_dir {
        Some(dir) if opts.cache_mode != CacheMode::Off => {
            Arc::new(CachedModel::new(reliable, dir, opts.cache_mode).with_ledger(Arc::clone(&opts.ledger)))
        }
        _ => reliable,
    })
}
