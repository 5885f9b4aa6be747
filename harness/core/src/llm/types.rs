//! The one model interface: summarizers, answerers and judges all go through [`LanguageModel`].

use crate::history::Content;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Generation parameters. Part of the cache key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerationParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
}

/// Who is calling and why. Informational: recorded in traces, never part of the cache key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestLabel {
    /// The reference's prompt id (`compress-…`, `…-verify`).
    pub prompt_id: String,
    /// The reference's telemetry role (`utility_compressor`), or `answerer`, `judge`, `probe-generator`.
    pub role: String,
    /// The model-config alias the reference would have asked for (`chat-compression-2.5-pro`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_alias: Option<String>,
}

/// A request: system instruction + Gemini `Content[]` + parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct LlmRequest {
    pub system_instruction: Option<String>,
    pub contents: Vec<Content>,
    pub params: GenerationParams,
    pub label: RequestLabel,
}

/// Token usage reported by (or estimated for) one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub thought_tokens: u64,
}

/// A response: the non-thought text (the reference's `getResponseText`), thoughts kept apart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// Concatenation of all non-thought text parts of the first candidate; empty when there are none.
    pub text: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thoughts: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The prompt does not fit the model's usable context.
    #[error("prompt of {prompt_tokens} tokens exceeds the model's context of {context} tokens")]
    ContextOverflow { prompt_tokens: u64, context: u64 },
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    /// A 429/503 answer that named a `Retry-After` delay.
    #[error("HTTP {status} (retry after {retry_after_ms} ms): {body}")]
    RateLimited { status: u16, retry_after_ms: u64, body: String },
    #[error("request timed out after {seconds} s")]
    Timeout { seconds: u64 },
    #[error("transport error: {0}")]
    Transport(String),
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The answer exceeded the configured size cap (read no further than the cap).
    #[error("response larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("retry attempts exhausted after {attempts} attempts: {last}")]
    RetriesExhausted { attempts: u32, last: String },
    #[error("no recorded response for request {hash} ({description}); run without --cache replay to record it")]
    CacheMiss { hash: String, description: String },
    #[error("damaged cache entry {path}: {reason}")]
    CacheCorrupt { path: String, reason: String },
    #[error("configuration error: {0}")]
    Config(String),
    #[error("{0}")]
    Other(String),
}

impl LlmError {
    /// Whether the failure may go away by itself (throttling, timeouts, server and transport errors, a
    /// malformed or damaged answer): a sweep redoes cells that failed this way on its next run.
    pub fn is_transient(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            LlmError::RateLimited { .. }
            | LlmError::Timeout { .. }
            | LlmError::Transport(_)
            | LlmError::Malformed(_)
            | LlmError::RetriesExhausted { .. }
            | LlmError::TooLarge { .. }
            | LlmError::CacheCorrupt { .. } => true,
            LlmError::ContextOverflow { .. }
            | LlmError::CacheMiss { .. }
            | LlmError::Config(_)
            | LlmError::Other(_) => false,
        }
    }
}

#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// The model spec string (`local:smollm2-135m`, `gemini:gemini-2.5-flash`, `extractive`, …). It names
    /// the backend and model in cache keys and reports, so two different models never share a spec.
    fn spec(&self) -> &str;

    /// What identifies the model in cache keys. For servers this includes the server (an OpenAI-compatible
    /// base URL without credentials): one model name on two servers may be two different models, and a
    /// recording must not answer for the wrong one.
    fn cache_identity(&self) -> String {
        self.spec().to_string()
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError>;

    /// Token count of a request by the backend's own tokenizer, when it has one.
    async fn count_tokens(&self, _req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        Ok(None)
    }
}
