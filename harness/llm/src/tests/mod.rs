//! Tests of the LLM layer. HTTP backends are exercised against loopback servers emulating the Gemini and
//! OpenAI APIs; nothing here reaches the network except the embedded-model test's first-use fetch (through a
//! package registry, as `compactbench models fetch` does).

mod backends;
mod cache;
mod concurrency;
mod count_tokens;
mod extractive;
#[cfg(feature = "local")]
mod local_e2e;
mod reliable;

use super::*;
use crate::history;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the emulator saw it.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: String,
}

/// One scripted answer of the emulator.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn json(body: serde_json::Value) -> Self {
        Reply { status: 200, headers: vec![], body: body.to_string(), delay: Duration::ZERO }
    }
    pub fn status(status: u16, body: &str) -> Self {
        Reply { status, headers: vec![], body: body.to_string(), delay: Duration::ZERO }
    }
    pub fn raw(body: &str) -> Self {
        Self::status(200, body)
    }
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }
    pub fn delayed(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }
}

#[derive(Default)]
struct ServerState {
    script: Vec<Reply>,
    next: usize,
    received: Vec<Received>,
    /// Requests being answered now, and the most at once.
    in_flight: usize,
    max_in_flight: usize,
}

/// A loopback HTTP server answering every request from a script (the last reply repeats).
pub struct MockServer {
    pub base: String,
    state: Arc<Mutex<ServerState>>,
}

impl MockServer {
    pub async fn start(script: Vec<Reply>) -> MockServer {
        let state = Arc::new(Mutex::new(ServerState { script, ..Default::default() }));
        let shared = Arc::clone(&state);
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let state = Arc::clone(&shared);
            async move {
                let reply = {
                    let mut st = state.lock().unwrap();
                    st.received.push(Received {
                        path: uri.path().to_string(),
                        headers: headers.clone(),
                        body: String::from_utf8_lossy(&body).into_owned(),
                    });
                    let i = st.next.min(st.script.len() - 1);
                    st.next += 1;
                    st.in_flight += 1;
                    st.max_in_flight = st.max_in_flight.max(st.in_flight);
                    st.script[i].clone()
                };
                tokio::time::sleep(reply.delay).await;
                state.lock().unwrap().in_flight -= 1;
                // `{authorization}` and `{x-goog-api-key}` in a body echo the request's headers back, as a
                // careless (or hostile) server does.
                let mut body = reply.body.clone();
                for name in ["authorization", "x-goog-api-key"] {
                    let sent = headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
                    body = body.replace(&format!("{{{name}}}"), sent);
                }
                let mut resp: Response = (StatusCode::from_u16(reply.status).unwrap(), body).into_response();
                for (name, value) in reply.headers {
                    resp.headers_mut().insert(name, value.parse().unwrap());
                }
                resp
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockServer { base: format!("http://{addr}"), state }
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// The most requests the server was answering at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.lock().unwrap().max_in_flight
    }

    pub fn calls(&self) -> usize {
        self.state.lock().unwrap().received.len()
    }
}

/// Retries in milliseconds so tests stay fast.
pub fn fast_retry(attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts: attempts,
        initial_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        jitter: 0.3,
        retry_empty_answers: true,
        max_retry_after: Duration::from_secs(5),
    }
}

pub fn test_options(attempts: u32) -> BackendOptions {
    BackendOptions {
        reliability: ReliabilityOptions {
            retry: fast_retry(attempts),
            timeout: Some(Duration::from_secs(5)),
            deadline: Some(Duration::from_secs(30)),
            concurrency: 4,
            coalesce: true,
        },
        auto_fetch: false,
        ..Default::default()
    }
}

pub fn request(question: &str) -> LlmRequest {
    LlmRequest {
        system_instruction: Some("You are terse.".into()),
        contents: vec![history::user_text(question)],
        params: GenerationParams { max_output_tokens: Some(64), temperature: Some(0.2), stop: vec![] },
        label: RequestLabel { prompt_id: "p1".into(), role: "answerer".into(), model_alias: None },
    }
}

/// A Gemini `generateContent` answer with the given text.
pub fn gemini_answer(text: &str) -> serde_json::Value {
    serde_json::json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13}
    })
}

pub fn openai_answer(text: &str) -> serde_json::Value {
    serde_json::json!({
        "id": "x", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16}
    })
}
