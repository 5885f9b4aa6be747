//! A backend's own tokenizer as the replay's ([`Tokenizer::Model`](super::Tokenizer::Model)): every Content is counted alone by the
//! model's token counter (Gemini `countTokens`, the embedded model's tokenizer), through whatever stack the
//! caller built around the model (the sweep: the record/replay cache and retries, as for any model call).
//!
//! The counter is runtime state next to [`ReplaySettings`](super::settings::ReplaySettings): the plan stores only the
//! tokenizer's name, the caller supplies the counter ([`CounterHandle`]). A request's size is then the sum of
//! its parts' counts (each Content, the system prompt, the tool declarations), which may differ from one
//! count of the whole request by a few tokens per message.

use crate::history::{self, Content};
use crate::llm::{GenerationParams, LanguageModel, LlmError, LlmRequest, RequestLabel};
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OnceCell;

/// Why a count failed. It stops that conversation's replay and is recorded in its result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CountError {
    /// The model call failed (network, quota, a `--cache replay` miss, …).
    #[error("tokenizer `{spec}`: {source}")]
    Failed {
        spec: String,
        #[source]
        source: LlmError,
    },
    /// The backend answered that it has no token counter.
    #[error("tokenizer `{spec}`: the backend has no token counter (gemini:<model> and local:<name> have one)")]
    Unsupported { spec: String },
    /// The settings name a model tokenizer but the caller gave the replay no counter.
    #[error("tokenizer `{spec}`: the replay was given no token counter for it")]
    NoCounter { spec: String },
    /// The caller gave the counter of another model.
    #[error("tokenizer `{spec}`: the replay was given the token counter of `{given}`")]
    WrongCounter { spec: String, given: String },
}

impl CountError {
    /// Whether the failure may go away by itself (a sweep redoes such cells on its next run).
    pub fn is_transient(&self) -> bool {
        matches!(self, CountError::Failed { source, .. } if source.is_transient())
    }
}

/// Counts the tokens of one Content with a model's tokenizer.
#[async_trait]
pub trait TokenCounter: Send + Sync {
    /// The model spec whose tokenizer this is (what `tokenizer = "…"` names).
    fn spec(&self) -> &str;

    async fn count(&self, content: &Content) -> Result<u64, CountError>;
}

/// The request a Content is counted with: that Content alone, no system instruction, no parameters.
pub fn count_request(content: &Content) -> LlmRequest {
    LlmRequest {
        system_instruction: None,
        contents: vec![content.clone()],
        params: GenerationParams::default(),
        label: RequestLabel { prompt_id: "count-tokens".into(), role: "tokenizer".into(), model_alias: None },
    }
}

/// A text (system prompt, tool declarations) as the one user Content it is counted as.
pub fn text_as_content(text: &str) -> Content {
    history::user_text(text)
}

/// [`TokenCounter`] over a [`LanguageModel`]'s `count_tokens`, with an in-memory map so each distinct
/// Content is counted once per counter (a sweep builds one per run and shares it by every cell). Concurrent
/// counts of the same Content wait for one call; a failed count is not remembered, so another cell retries.
pub struct ModelCounter {
    model: Arc<dyn LanguageModel>,
    /// By sha256 of the Content's compact JSON: a fixed-size key, whatever the Content's size.
    memo: Mutex<HashMap<[u8; 32], Arc<OnceCell<u64>>>>,
}

impl ModelCounter {
    pub fn new(model: Arc<dyn LanguageModel>) -> Self {
        ModelCounter { model, memo: Mutex::default() }
    }

    /// Distinct Contents counted so far.
    pub fn distinct_counted(&self) -> usize {
        let memo = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
        memo.values().filter(|c| c.initialized()).count()
    }
}

#[async_trait]
impl TokenCounter for ModelCounter {
    fn spec(&self) -> &str {
        self.model.spec()
    }

    async fn count(&self, content: &Content) -> Result<u64, CountError> {
        let key: [u8; 32] = Sha256::digest(crate::json::to_string(content).as_bytes()).into();
        let cell = {
            let mut memo = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(memo.entry(key).or_default())
        };
        let spec = || self.model.spec().to_string();
        let n = cell
            .get_or_try_init(|| async {
                match self.model.count_tokens(&count_request(content)).await {
                    Ok(Some(n)) => Ok(n),
                    Ok(None) => Err(CountError::Unsupported { spec: spec() }),
                    Err(source) => Err(CountError::Failed { spec: spec(), source }),
                }
            })
            .await?;
        Ok(*n)
    }
}

/// The counter a replay with a model tokenizer counts with. Runtime state, never serialised: equal when
/// both are empty or both hold the same counter.
#[derive(Clone, Default)]
pub struct CounterHandle(pub Option<Arc<dyn TokenCounter>>);

impl CounterHandle {
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        CounterHandle(Some(counter))
    }

    /// The counter of the model tokenizer `spec`: an error when there is none or it is another model's.
    pub fn get(&self, spec: &str) -> Result<&dyn TokenCounter, CountError> {
        match &self.0 {
            None => Err(CountError::NoCounter { spec: spec.into() }),
            Some(c) if c.spec() != spec => Err(CountError::WrongCounter { spec: spec.into(), given: c.spec().into() }),
            Some(c) => Ok(c.as_ref()),
        }
    }
}

impl std::fmt::Debug for CounterHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(c) => write!(f, "CounterHandle({})", c.spec()),
            None => f.write_str("CounterHandle(None)"),
        }
    }
}

impl PartialEq for CounterHandle {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
