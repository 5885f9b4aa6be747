//! The models of a run: built once per spec behind the cache and retries, watched for transient failures
//! (so a cell that failed on one is redone), and stand-ins that explain why a model is missing.

use super::config::SweepConfig;
use super::error::RunError;
use crate::llm::{self, BackendOptions, CacheMode, LanguageModel, LlmError};
use crate::replay::{self, CountError, ModelCounter, TokenCounter};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The LLM backend options a sweep config asks for; `cache_mode` overrides the config's.
pub fn backend_options(
    config: &SweepConfig,
    base_dir: &Path,
    cache_mode: Option<CacheMode>,
) -> Result<BackendOptions, RunError> {
    let defaults = BackendOptions::default();
    let reliability = llm::ReliabilityOptions {
        timeout: Some(std::time::Duration::from_secs(config.llm.timeout_secs)),
        deadline: Some(std::time::Duration::from_secs(config.llm.deadline_secs)),
        concurrency: config.llm.concurrency,
        retry: llm::RetryPolicy { max_attempts: config.llm.max_attempts, ..defaults.reliability.retry.clone() },
        ..defaults.reliability.clone()
    };
    Ok(BackendOptions {
        cache_dir: config.llm.cache_dir.as_ref().map(|d| if d.is_absolute() { d.clone() } else { base_dir.join(d) }),
        cache_mode: match cache_mode {
            Some(m) => m,
            None => config.llm.cache_mode,
        },
        reliability,
        max_response_bytes: config.llm.max_response_bytes,
        threads: config.llm.threads,
        ..defaults
    })
}

/// Models by spec, built on first use and shared by all cells.
pub(super) struct Models {
    pub(super) opts: BackendOptions,
    pub(super) built: std::sync::Mutex<BTreeMap<String, Arc<dyn LanguageModel>>>,
    pub(super) wrap: Option<ModelWrapper>,
}

impl Models {
    pub(super) fn get(&self, spec: &str) -> Result<Arc<dyn LanguageModel>, LlmError> {
        let mut built = self.built.lock().expect("models lock");
        if let Some(m) = built.get(spec) {
            return Ok(Arc::clone(m));
        }
        let mut m = llm::from_spec(spec, &self.opts)?;
        if let Some(w) = &self.wrap {
            m = (w.0)(m);
        }
        built.insert(spec.to_string(), Arc::clone(&m));
        Ok(m)
    }
}

/// A model that fails every call: stands in for a summarizer that could not be built, so the cells that
/// need it record the error and the others go on.
pub(super) struct Unavailable(pub(super) String);

#[async_trait::async_trait]
impl LanguageModel for Unavailable {
    fn spec(&self) -> &str {
        "unavailable"
    }
    async fn generate(&self, _req: &llm::LlmRequest) -> Result<llm::LlmResponse, LlmError> {
        Err(LlmError::Config(self.0.clone()))
    }
}

/// A model tokenizer whose model could not be built: every count fails with why, so each cell records it.
struct UnavailableCounter {
    spec: String,
    why: String,
}

#[async_trait::async_trait]
impl TokenCounter for UnavailableCounter {
    fn spec(&self) -> &str {
        &self.spec
    }
    async fn count(&self, _: &crate::history::Content) -> Result<u64, CountError> {
        Err(CountError::Failed { spec: self.spec.clone(), source: LlmError::Config(self.why.clone()) })
    }
}

/// The run's counter of a model tokenizer (`[replay] tokenizer = "gemini:…"`): the model is built like the
/// summarizers (`llm::from_spec` with the run's backend options: the same cache directory and mode, the
/// same retries), and one counter is shared by every cell, so each distinct Content is counted once per run.
pub(super) fn run_counter(tokenizer: &replay::Tokenizer, models: &Models) -> Option<Arc<dyn TokenCounter>> {
    let spec = tokenizer.model_spec()?;
    Some(match models.get(spec) {
        Ok(model) => Arc::new(ModelCounter::new(model)),
        Err(e) => Arc::new(UnavailableCounter { spec: spec.to_string(), why: e.to_string() }),
    })
}

/// The run's counter as one cell sees it: notes whether a count failed on a transient error, so the cell
/// can be marked for a retry by the next run (as [`Watched`] does for model calls).
pub(super) struct WatchedCounter {
    pub(super) inner: Arc<dyn TokenCounter>,
    pub(super) transient: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl TokenCounter for WatchedCounter {
    fn spec(&self) -> &str {
        self.inner.spec()
    }
    async fn count(&self, content: &crate::history::Content) -> Result<u64, CountError> {
        let r = self.inner.count(content).await;
        if r.as_ref().is_err_and(CountError::is_transient) {
            self.transient.store(true, Ordering::Relaxed);
        }
        r
    }
}

/// A model as one cell sees it: notes whether a call failed on a transient error, so the cell can be
/// marked for a retry by the next run.
pub(super) struct Watched {
    pub(super) inner: Arc<dyn LanguageModel>,
    pub(super) transient: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl LanguageModel for Watched {
    fn spec(&self) -> &str {
        self.inner.spec()
    }
    fn cache_identity(&self) -> String {
        self.inner.cache_identity()
    }
    async fn generate(&self, req: &llm::LlmRequest) -> Result<llm::LlmResponse, LlmError> {
        let r = self.inner.generate(req).await;
        if r.as_ref().is_err_and(LlmError::is_transient) {
            self.transient.store(true, Ordering::Relaxed);
        }
        r
    }
    async fn count_tokens(&self, req: &llm::LlmRequest) -> Result<Option<u64>, LlmError> {
        self.inner.count_tokens(req).await
    }
}

/// See `RunOptions::wrap_model`.
#[derive(Clone)]
pub struct ModelWrapper(pub Arc<WrapModelFn>);

/// The function of a [`ModelWrapper`].
pub type WrapModelFn = dyn Fn(Arc<dyn LanguageModel>) -> Arc<dyn LanguageModel> + Send + Sync;

impl std::fmt::Debug for ModelWrapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelWrapper")
    }
}
