//! `gemini:<model>`: the Gemini REST API (`generateContent`, `countTokens`). Contents are sent byte-exact as
//! the history holds them (`JSON.stringify` semantics), as the reference's SDK would.

use super::http::{key_from_env, post_json, DEFAULT_MAX_RESPONSE_BYTES};
use crate::json::{self, Value};
use crate::{LanguageModel, LlmError, LlmRequest, LlmResponse, Usage};
use async_trait::async_trait;

pub const DEFAULT_GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

pub struct GeminiModel {
    spec: String,
    model: String,
    base_url: String,
    key_var: String,
    client: reqwest::Client,
    /// Answers larger than this are refused ([`LlmError::TooLarge`]).
    max_response_bytes: u64,
}

impl GeminiModel {
    /// Sets the cap on the size of one answer.
    pub fn with_max_response_bytes(mut self, limit: u64) -> Self {
        self.max_response_bytes = limit;
        self
    }

    pub fn new(model: &str, base_url: &str, key_var: &str, client: reqwest::Client) -> Result<Self, LlmError> {
        if model.is_empty() {
            return Err(LlmError::Config("gemini spec needs a model name: gemini:<model>".into()));
        }
        Ok(GeminiModel {
            spec: format!("gemini:{model}"),
            model: model.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            key_var: key_var.to_string(),
            client,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    fn key(&self) -> Result<String, LlmError> {
        key_from_env(&self.key_var)
            .ok_or_else(|| LlmError::Config(format!("the Gemini backend needs an API key in ${}", self.key_var)))
    }

    fn url(&self, method: &str) -> String {
        format!("{}/models/{}:{method}", self.base_url, self.model)
    }
}

/// The `generateContent` body: contents, systemInstruction, generationConfig.
pub fn request_body(req: &LlmRequest) -> Value {
    let mut body = Value::object([("contents", Value::Array(req.contents.clone()))]);
    if let Some(si) = &req.system_instruction {
        body.insert("systemInstruction", Value::object([("parts", Value::Array(vec![crate::history::text_part(si)]))]));
    }
    let mut config = Value::empty_object();
    if let Some(m) = req.params.max_output_tokens {
        config.insert("maxOutputTokens", Value::num(f64::from(m)));
    }
    if let Some(t) = req.params.temperature {
        config.insert("temperature", Value::num(format!("{t}").parse().unwrap_or(f64::from(t))));
    }
    if !req.params.stop.is_empty() {
        config.insert("stopSequences", Value::Array(req.params.stop.iter().map(|s| Value::str(s)).collect()));
    }
    if config.as_object().is_some_and(|m| !m.is_empty()) {
        body.insert("generationConfig", config);
    }
    body
}

fn count_field(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

/// Reads a `generateContent` answer: non-thought text of candidate 0 into `text`, thought text into `thoughts`.
pub fn parse_response(v: &serde_json::Value) -> Result<LlmResponse, LlmError> {
    if !v.is_object() {
        return Err(LlmError::Malformed("generateContent answer is not an object".into()));
    }
    let usage = v.get("usageMetadata").map(|u| Usage {
        prompt_tokens: count_field(u, "promptTokenCount"),
        output_tokens: count_field(u, "candidatesTokenCount"),
        thought_tokens: count_field(u, "thoughtsTokenCount"),
    });
    let candidate = match v.get("candidates") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Array(c)) => c.first(),
        Some(_) => return Err(LlmError::Malformed("`candidates` is not an array".into())),
    };
    let Some(candidate) = candidate else {
        // A blocked prompt has no candidates; the reference reads that as an empty answer.
        let reason = v.pointer("/promptFeedback/blockReason").and_then(serde_json::Value::as_str);
        return Ok(LlmResponse {
            finish_reason: reason.map(|r| format!("BLOCKED_{r}")),
            usage: usage.unwrap_or_default(),
            ..Default::default()
        });
    };
    let parts = match candidate.pointer("/content/parts") {
        None | Some(serde_json::Value::Null) => &[][..],
        Some(serde_json::Value::Array(p)) => p.as_slice(),
        Some(_) => return Err(LlmError::Malformed("`content.parts` is not an array".into())),
    };
    let (mut text, mut thoughts) = (String::new(), String::new());
    for p in parts {
        let Some(t) = p.get("text").and_then(serde_json::Value::as_str) else { continue };
        if p.get("thought").and_then(serde_json::Value::as_bool) == Some(true) {
            thoughts.push_str(t);
        } else {
            text.push_str(t);
        }
    }
    Ok(LlmResponse {
        text,
        thoughts,
        finish_reason: candidate.get("finishReason").and_then(serde_json::Value::as_str).map(str::to_string),
        usage: usage.unwrap_or_default(),
    })
}

#[async_trait]
impl LanguageModel for GeminiModel {
    fn spec(&self) -> &str {
        &self.spec
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let key = self.key()?;
        let body = json::to_string(&request_body(req));
        let answer = post_json(
            &self.client,
            &self.url("generateContent"),
            &[("x-goog-api-key", &key)],
            body,
            self.max_response_bytes,
        )
        .await?;
        parse_response(&answer)
    }

    async fn count_tokens(&self, req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        let key = self.key()?;
        let mut inner = request_body(req);
        inner.insert("model", Value::str(&format!("models/{}", self.model)));
        let body = json::to_string(&Value::object([("generateContentRequest", inner)]));
        let answer = post_json(
            &self.client,
            &self.url("countTokens"),
            &[("x-goog-api-key", &key)],
            body,
            self.max_response_bytes,
        )
        .await?;
        answer
            .get("totalTokens")
            .and_then(serde_json::Value::as_u64)
            .map(Some)
            .ok_or_else(|| LlmError::Malformed("countTokens answer has no totalTokens".into()))
    }
}
