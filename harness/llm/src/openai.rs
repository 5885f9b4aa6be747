//! `openai:<model>@<base-url>`: OpenAI-compatible `/chat/completions` (vLLM, llama.cpp server, Ollama,
//! OpenAI). Gemini `Content[]` become chat messages; function calls become `tool_calls` and function
//! responses `role: tool` messages answering them.

use super::http::{key_from_env, post_json, DEFAULT_MAX_RESPONSE_BYTES};
use crate::history::{self, Content};
use crate::json::{self, Value};
use crate::{LanguageModel, LlmError, LlmRequest, LlmResponse, Usage};
use async_trait::async_trait;
use serde_json::{json, Value as JsonValue};
use std::collections::{HashMap, VecDeque};

pub struct OpenAiModel {
    spec: String,
    model: String,
    base_url: String,
    key_var: String,
    client: reqwest::Client,
    /// Answers larger than this are refused ([`LlmError::TooLarge`]).
    max_response_bytes: u64,
}

impl OpenAiModel {
    /// Sets the cap on the size of one answer.
    pub fn with_max_response_bytes(mut self, limit: u64) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// `rest` is what follows `openai:` in the spec: `<model>@<base-url>`.
    pub fn from_spec_rest(rest: &str, key_var: &str, client: reqwest::Client) -> Result<Self, LlmError> {
        let (model, base_url) = rest.rsplit_once('@').ok_or_else(|| {
            LlmError::Config(format!(
                "openai spec needs a base URL: openai:<model>@<base-url> (e.g. openai:qwen2.5-7b@http://localhost:8000/v1), got openai:{rest}"
            ))
        })?;
        if model.is_empty() || !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(LlmError::Config(format!("bad openai spec openai:{rest}: expected <model>@http(s)://host/…")));
        }
        Ok(OpenAiModel {
            spec: format!("openai:{rest}"),
            model: model.to_string(),
            base_url: base_url.trim_end_matches('/').to_string(),
            key_var: key_var.to_string(),
            client,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }
}

fn text_of(parts: &[Value]) -> String {
    let mut out = String::new();
    for p in parts {
        if let Some(t) = history::part_text(p) {
            if !history::is_thought(p) {
                out.push_str(&t.to_str_lossy());
            }
        }
    }
    out
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_js_str).map(|s| s.to_str_lossy().into_owned())
}

/// Maps `Content[]` (plus system instruction) to chat messages. Call ids come from `functionCall.id` when
/// present; otherwise they are synthesised in order and a response takes the oldest open call of its name.
pub fn to_messages(system: Option<&str>, contents: &[Content]) -> Vec<JsonValue> {
    let mut messages = Vec::new();
    if let Some(s) = system {
        messages.push(json!({"role": "system", "content": s}));
    }
    let mut open_calls: HashMap<String, VecDeque<String>> = HashMap::new();
    let mut next_id = 0usize;
    for c in contents {
        let parts = history::parts(c);
        let text = text_of(parts);
        if history::is_model(c) {
            let mut calls = Vec::new();
            for fc in parts.iter().filter_map(history::function_call) {
                let name = str_field(fc, "name").unwrap_or_default();
                let id = str_field(fc, "id").unwrap_or_else(|| {
                    next_id += 1;
                    format!("call_{next_id}")
                });
                open_calls.entry(name.clone()).or_default().push_back(id.clone());
                let args = fc.get("args").map(json::to_string).unwrap_or_else(|| "{}".into());
                calls.push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}));
            }
            if text.is_empty() && calls.is_empty() {
                continue;
            }
            let mut m = json!({"role": "assistant", "content": if text.is_empty() { JsonValue::Null } else { JsonValue::String(text) }});
            if !calls.is_empty() {
                m["tool_calls"] = JsonValue::Array(calls);
            }
            messages.push(m);
        } else {
            for fr in parts.iter().filter_map(history::function_response) {
                let name = str_field(fr, "name").unwrap_or_default();
                let queued = open_calls.get_mut(&name).and_then(VecDeque::pop_front);
                let id = str_field(fr, "id").or(queued).unwrap_or_else(|| {
                    next_id += 1;
                    format!("call_{next_id}")
                });
                let content = fr.get("response").map(json::to_string).unwrap_or_else(|| "{}".into());
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
            if !text.is_empty() {
                messages.push(json!({"role": "user", "content": text}));
            }
        }
    }
    messages
}

pub fn request_body(model: &str, req: &LlmRequest) -> JsonValue {
    let mut body = json!({"model": model, "messages": to_messages(req.system_instruction.as_deref(), &req.contents)});
    if let Some(m) = req.params.max_output_tokens {
        body["max_tokens"] = json!(m);
    }
    if let Some(t) = req.params.temperature {
        body["temperature"] = json!(format!("{t}").parse::<f64>().unwrap_or(f64::from(t)));
    }
    if !req.params.stop.is_empty() {
        body["stop"] = json!(req.params.stop);
    }
    body
}

/// Finish reasons in Gemini's vocabulary, so reports compare across backends.
fn finish_reason(r: &str) -> String {
    match r {
        "stop" => "STOP".into(),
        "length" => "MAX_TOKENS".into(),
        "content_filter" => "SAFETY".into(),
        other => other.to_uppercase(),
    }
}

pub fn parse_response(v: &JsonValue) -> Result<LlmResponse, LlmError> {
    let choice = v
        .get("choices")
        .and_then(JsonValue::as_array)
        .ok_or_else(|| LlmError::Malformed("chat completion has no `choices` array".into()))?
        .first();
    let usage = v.get("usage").map(|u| {
        let n = |p: &str| u.pointer(p).and_then(JsonValue::as_u64).unwrap_or(0);
        Usage {
            prompt_tokens: n("/prompt_tokens"),
            output_tokens: n("/completion_tokens"),
            thought_tokens: n("/completion_tokens_details/reasoning_tokens"),
        }
    });
    let Some(choice) = choice else {
        return Ok(LlmResponse { usage: usage.unwrap_or_default(), ..Default::default() });
    };
    let message = choice.get("message").ok_or_else(|| LlmError::Malformed("choice has no `message`".into()))?;
    let text = match message.get("content") {
        None | Some(JsonValue::Null) => String::new(),
        Some(JsonValue::String(s)) => s.clone(),
        // Some servers send content as an array of typed parts.
        Some(JsonValue::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(JsonValue::as_str)).collect::<Vec<_>>().join("")
        }
        Some(_) => return Err(LlmError::Malformed("message content is neither text nor parts".into())),
    };
    let thoughts = ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|k| message.get(*k).and_then(JsonValue::as_str))
        .unwrap_or_default()
        .to_string();
    Ok(LlmResponse {
        text,
        thoughts,
        finish_reason: choice.get("finish_reason").and_then(JsonValue::as_str).map(finish_reason),
        usage: usage.unwrap_or_default(),
    })
}

#[async_trait]
impl LanguageModel for OpenAiModel {
    fn spec(&self) -> &str {
        &self.spec
    }

    /// The model and the server: two servers may serve different weights under one model name, so they
    /// do not share recordings. Credentials, query and fragment of the URL are left out.
    fn cache_identity(&self) -> String {
        let server = match reqwest::Url::parse(&self.base_url) {
            Ok(mut u) => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.set_query(None);
                u.set_fragment(None);
                u.as_str().trim_end_matches('/').to_string()
            }
            Err(_) => self.base_url.clone(),
        };
        format!("openai:{}@{server}", self.model)
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let body = serde_json::to_string(&request_body(&self.model, req))
            .map_err(|e| LlmError::Other(format!("cannot serialise request: {e}")))?;
        let key = key_from_env(&self.key_var).map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> = key.as_deref().map(|k| vec![("authorization", k)]).unwrap_or_default();
        let url = format!("{}/chat/completions", self.base_url);
        let answer = post_json(&self.client, &url, &headers, body, self.max_response_bytes).await?;
        parse_response(&answer)
    }
}
