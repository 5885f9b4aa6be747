//! Gemini and OpenAI backends against loopback emulators: wire format, parsing, retries and errors.

use super::*;
use crate::json;
use std::time::Instant;

const SECRET: &str = "sk-test-SECRET-0123456789";

fn gemini_opts(server: &MockServer, key_var: &str, attempts: u32) -> BackendOptions {
    std::env::set_var(key_var, SECRET);
    BackendOptions {
        gemini_base_url: format!("{}/v1beta", server.base),
        gemini_key_var: key_var.into(),
        ..test_options(attempts)
    }
}

#[tokio::test]
async fn gemini_sends_exact_contents_and_parses_parts() {
    let answer = serde_json::json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "let me think", "thought": true}, {"text": "Hello"}, {"functionCall": {"name": "f", "args": {}}}, {"text": " world"}
        ]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 2, "thoughtsTokenCount": 5}
    });
    let server = MockServer::start(vec![Reply::json(answer)]).await;
    let model = from_spec("gemini:gemini-2.5-flash", &gemini_opts(&server, "CB_TEST_KEY_G1", 1)).unwrap();
    // A lone surrogate and a JS-style number must reach the server exactly as JSON.stringify writes them.
    let weird = json::parse_str(r#"{"role":"user","parts":[{"text":"half \ud83d emoji","n":1.0}]}"#).unwrap();
    let mut req = request("hi");
    req.contents = vec![weird.clone()];
    req.params.stop = vec!["END".into()];
    let resp = model.generate(&req).await.unwrap();
    assert_eq!(resp.text, "Hello world");
    assert_eq!(resp.thoughts, "let me think");
    assert_eq!(resp.finish_reason.as_deref(), Some("STOP"));
    assert_eq!(resp.usage, Usage { prompt_tokens: 7, output_tokens: 2, thought_tokens: 5 });

    let got = &server.received()[0];
    assert_eq!(got.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(got.headers.get("x-goog-api-key").unwrap(), SECRET);
    let expected_contents = format!("\"contents\":[{}]", json::to_string(&weird));
    assert!(got.body.contains(&expected_contents), "{}", got.body);
    assert!(got.body.contains(r#""systemInstruction":{"parts":[{"text":"You are terse."}]}"#));
    assert!(
        got.body.contains(r#""generationConfig":{"maxOutputTokens":64,"temperature":0.2,"stopSequences":["END"]}"#),
        "{}",
        got.body
    );
}

#[tokio::test]
async fn gemini_count_tokens() {
    let server = MockServer::start(vec![Reply::json(serde_json::json!({"totalTokens": 42}))]).await;
    let model = from_spec("gemini:m", &gemini_opts(&server, "CB_TEST_KEY_G2", 1)).unwrap();
    assert_eq!(model.count_tokens(&request("x")).await.unwrap(), Some(42));
    let got = &server.received()[0];
    assert_eq!(got.path, "/v1beta/models/m:countTokens");
    assert!(got.body.starts_with(r#"{"generateContentRequest":{"contents":"#));
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let server = MockServer::start(vec![
        Reply::status(429, r#"{"error":{"code":429,"message":"quota"}}"#).header("retry-after", "1"),
        Reply::json(gemini_answer("ok")),
    ])
    .await;
    let opts = gemini_opts(&server, "CB_TEST_KEY_G3", 5);
    let model = from_spec("gemini:m", &opts).unwrap();
    let started = Instant::now();
    assert_eq!(model.generate(&request("q")).await.unwrap().text, "ok");
    assert!(started.elapsed() >= Duration::from_millis(950), "waited {:?}", started.elapsed());
    assert_eq!(server.calls(), 2);
    let u = opts.ledger.usage_of("gemini:m");
    assert_eq!((u.calls, u.retries, u.errors), (1, 1, 1));
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = MockServer::start(vec![Reply::status(500, "internal")]).await;
    let opts = gemini_opts(&server, "CB_TEST_KEY_G4", 5);
    let model = from_spec("gemini:m", &opts).unwrap();
    let err = model.generate(&request("q")).await.unwrap_err();
    assert_eq!(err, LlmError::Http { status: 500, body: "internal".into() });
    assert_eq!(server.calls(), 5);
    let u = opts.ledger.usage_of("gemini:m");
    assert_eq!((u.retries, u.errors, u.failed_requests), (4, 5, 1));
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start(vec![Reply::status(400, r#"{"error":"bad request"}"#)]).await;
    let model = from_spec("gemini:m", &gemini_opts(&server, "CB_TEST_KEY_G5", 5)).unwrap();
    let err = model.generate(&request("q")).await.unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 400, .. }), "{err:?}");
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn request_timeout_is_retried_then_reported() {
    let server = MockServer::start(vec![Reply::json(gemini_answer("late")).delayed(Duration::from_secs(3))]).await;
    let mut opts = gemini_opts(&server, "CB_TEST_KEY_G6", 2);
    opts.reliability.timeout = Some(Duration::from_millis(200));
    let model = from_spec("gemini:m", &opts).unwrap();
    let err = model.generate(&request("q")).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err:?}");
    assert_eq!(server.calls(), 2);
}

#[tokio::test]
async fn empty_answers_are_retried() {
    let server =
        MockServer::start(vec![Reply::json(gemini_answer("  \n")), Reply::json(gemini_answer("second try"))]).await;
    let model = from_spec("gemini:m", &gemini_opts(&server, "CB_TEST_KEY_G7", 5)).unwrap();
    assert_eq!(model.generate(&request("q")).await.unwrap().text, "second try");
    assert_eq!(server.calls(), 2);

    let server = MockServer::start(vec![Reply::json(serde_json::json!({"candidates": []}))]).await;
    let model = from_spec("gemini:m", &gemini_opts(&server, "CB_TEST_KEY_G8", 3)).unwrap();
    let err = model.generate(&request("q")).await.unwrap_err();
    assert!(matches!(err, LlmError::RetriesExhausted { attempts: 3, .. }), "{err:?}");
    assert_eq!(server.calls(), 3);
}

#[tokio::test]
async fn empty_answers_pass_when_retrying_them_is_off() {
    let server = MockServer::start(vec![Reply::json(gemini_answer(""))]).await;
    let mut opts = gemini_opts(&server, "CB_TEST_KEY_G9", 5);
    opts.reliability.retry.retry_empty_answers = false;
    let model = from_spec("gemini:m", &opts).unwrap();
    assert_eq!(model.generate(&request("q")).await.unwrap().text, "");
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn malformed_answers_are_reported_as_malformed() {
    for body in ["this is not json", r#"{"candidates": 5}"#, r#"{"candidates":[{"content":{"parts":"x"}}]}"#] {
        let server = MockServer::start(vec![Reply::raw(body)]).await;
        let model = from_spec("gemini:m", &gemini_opts(&server, "CB_TEST_KEY_G10", 2)).unwrap();
        let err = model.generate(&request("q")).await.unwrap_err();
        assert!(matches!(err, LlmError::Malformed(_)), "{body}: {err:?}");
        assert_eq!(server.calls(), 2, "{body}");
    }
}

#[tokio::test]
async fn missing_key_is_a_config_error_without_a_call() {
    let server = MockServer::start(vec![Reply::json(gemini_answer("x"))]).await;
    let opts = BackendOptions {
        gemini_base_url: server.base.clone(),
        gemini_key_var: "CB_TEST_KEY_UNSET_NEVER".into(),
        ..test_options(3)
    };
    let err = from_spec("gemini:m", &opts).unwrap().generate(&request("q")).await.unwrap_err();
    assert!(matches!(err, LlmError::Config(ref m) if m.contains("CB_TEST_KEY_UNSET_NEVER")), "{err:?}");
    assert_eq!(server.calls(), 0);
}

#[tokio::test]
async fn unreachable_server_is_a_transport_error() {
    let opts =
        BackendOptions { gemini_base_url: "http://127.0.0.1:9".into(), ..gemini_opts_unbound("CB_TEST_KEY_G11") };
    let err = from_spec("gemini:m", &opts).unwrap().generate(&request("q")).await.unwrap_err();
    assert!(matches!(err, LlmError::Transport(_)), "{err:?}");
    assert!(!err.to_string().contains(SECRET));
}

fn gemini_opts_unbound(key_var: &str) -> BackendOptions {
    std::env::set_var(key_var, SECRET);
    BackendOptions { gemini_key_var: key_var.into(), ..test_options(2) }
}

fn tool_history() -> Vec<history::Content> {
    json::parse_str(
        r#"[
        {"role":"user","parts":[{"text":"Fix the test"}]},
        {"role":"model","parts":[{"text":"Reading it.","thought":true},{"text":"Let me look."},{"functionCall":{"name":"read_file","args":{"path":"a.rs"}}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"fn main(){}"}}}]},
        {"role":"model","parts":[{"functionCall":{"id":"c9","name":"run","args":{"cmd":"cargo test"}}}]},
        {"role":"user","parts":[{"functionResponse":{"id":"c9","name":"run","response":{"output":"ok"}}},{"text":"Thanks"}]}
    ]"#,
    )
    .unwrap()
    .as_array()
    .unwrap()
    .to_vec()
}

#[tokio::test]
async fn openai_maps_tool_calls_and_responses() {
    let server = MockServer::start(vec![Reply::json(openai_answer("done"))]).await;
    std::env::set_var("CB_TEST_KEY_O1", SECRET);
    let opts = BackendOptions { openai_key_var: "CB_TEST_KEY_O1".into(), ..test_options(1) };
    let model = from_spec(&format!("openai:qwen2.5-7b@{}/v1", server.base), &opts).unwrap();
    let mut req = request("");
    req.contents = tool_history();
    let resp = model.generate(&req).await.unwrap();
    assert_eq!(resp.text, "done");
    assert_eq!(resp.finish_reason.as_deref(), Some("STOP"));
    assert_eq!(resp.usage, Usage { prompt_tokens: 12, output_tokens: 4, thought_tokens: 0 });

    let got = &server.received()[0];
    assert_eq!(got.path, "/v1/chat/completions");
    assert_eq!(got.headers.get("authorization").unwrap().to_str().unwrap(), format!("Bearer {SECRET}"));
    let body: serde_json::Value = serde_json::from_str(&got.body).unwrap();
    assert_eq!(body["model"], "qwen2.5-7b");
    assert_eq!(body["max_tokens"], 64);
    let expected = serde_json::json!([
        {"role":"system","content":"You are terse."},
        {"role":"user","content":"Fix the test"},
        {"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.rs\"}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"{\"output\":\"fn main(){}\"}"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"run","arguments":"{\"cmd\":\"cargo test\"}"}}]},
        {"role":"tool","tool_call_id":"c9","content":"{\"output\":\"ok\"}"},
        {"role":"user","content":"Thanks"}
    ]);
    assert_eq!(body["messages"], expected);
}

#[tokio::test]
async fn openai_without_key_sends_no_auth_and_retries_503() {
    let server = MockServer::start(vec![
        Reply::status(503, "overloaded").header("retry-after", "0"),
        Reply::json(serde_json::json!({"choices":[{"message":{"content":"hi","reasoning_content":"hmm"},"finish_reason":"length"}]})),
    ])
    .await;
    let opts = BackendOptions { openai_key_var: "CB_TEST_KEY_UNSET_O2".into(), ..test_options(3) };
    let model = from_spec(&format!("openai:llama@{}/v1/", server.base), &opts).unwrap();
    let resp = model.generate(&request("q")).await.unwrap();
    assert_eq!((resp.text.as_str(), resp.thoughts.as_str()), ("hi", "hmm"));
    assert_eq!(resp.finish_reason.as_deref(), Some("MAX_TOKENS"));
    assert_eq!(server.calls(), 2);
    assert!(server.received().iter().all(|r| r.headers.get("authorization").is_none()));
    assert!(server.received()[0].path == "/v1/chat/completions");
}

#[tokio::test]
async fn openai_malformed_choices() {
    let server = MockServer::start(vec![Reply::json(serde_json::json!({"nope": 1}))]).await;
    let model = from_spec(&format!("openai:m@{}", server.base), &test_options(1)).unwrap();
    assert!(matches!(model.generate(&request("q")).await.unwrap_err(), LlmError::Malformed(_)));
}

#[test]
fn bad_specs_are_config_errors() {
    for spec in ["nonsense", "openai:model-without-url", "openai:@http://x", "gemini:", "local:unknown-model"] {
        let err = from_spec(spec, &test_options(1)).err().unwrap_or_else(|| panic!("{spec} accepted"));
        assert!(matches!(err, LlmError::Config(_)), "{spec}: {err:?}");
    }
}

#[tokio::test]
async fn a_key_echoed_by_the_server_is_masked_in_errors_and_answers() {
    // A 401 body echoing both headers, then (after a retryable 500 doing the same) an answer quoting the key.
    let echo = r#"{"error":"bad credentials","you_sent":{"Authorization":"{authorization}","x-goog-api-key":"{x-goog-api-key}"}}"#;
    let server = MockServer::start(vec![Reply::status(401, echo)]).await;
    std::env::set_var("CB_TEST_KEY_O9", SECRET);
    let opts = BackendOptions { openai_key_var: "CB_TEST_KEY_O9".into(), ..test_options(2) };
    let model = from_spec(&format!("openai:m@{}", server.base), &opts).unwrap();
    let err = model.generate(&request("q")).await.unwrap_err();
    assert!(server.received()[0].headers.get("authorization").is_some());
    let text = err.to_string();
    assert!(!text.contains(SECRET) && !text.contains("test-SECRET"), "{text}");
    assert!(text.contains(REDACTED), "{text}");

    let server =
        MockServer::start(vec![Reply::status(500, echo), Reply::json(gemini_answer("your key is {x-goog-api-key}"))])
            .await;
    let dir = tempfile::tempdir().unwrap();
    let opts = BackendOptions {
        cache_dir: Some(dir.path().to_path_buf()),
        cache_mode: CacheMode::ReadWrite,
        ..gemini_opts(&server, "CB_TEST_KEY_G9", 3)
    };
    let model = from_spec("gemini:m", &opts).unwrap();
    let answer = model.generate(&request("q")).await.unwrap();
    assert_eq!(answer.text, format!("your key is {REDACTED}"));
    for e in walk(dir.path()) {
        let bytes = std::fs::read_to_string(&e).unwrap();
        assert!(!bytes.contains(SECRET), "{}", e.display());
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn header_shaped_credentials_are_masked_in_error_text() {
    for text in [
        "Authorization: Bearer abc.def-123",
        r#"{"authorization":"Bearer abc.def-123"}"#,
        "x-goog-api-key=abc.def-123; next",
        r#"'X-Goog-Api-Key': 'abc.def-123'"#,
    ] {
        let out = redact(text, &[]);
        assert!(!out.contains("abc.def-123") && out.contains(REDACTED), "{text} -> {out}");
    }
}

#[tokio::test]
async fn oversized_answers_are_refused_with_a_clear_error() {
    let big = "x".repeat(64 * 1024);
    let server = MockServer::start(vec![Reply::json(gemini_answer(&big))]).await;
    let opts = BackendOptions { max_response_bytes: 16 * 1024, ..gemini_opts(&server, "CB_TEST_KEY_G12", 1) };
    let err = from_spec("gemini:m", &opts).unwrap().generate(&request("q")).await.unwrap_err();
    assert!(matches!(err, LlmError::TooLarge { limit: 16384 }), "{err:?}");
    assert!(err.to_string().contains("16384 bytes"));
    // Within the cap it is accepted.
    let opts = BackendOptions { max_response_bytes: 1024 * 1024, ..gemini_opts(&server, "CB_TEST_KEY_G12", 1) };
    assert_eq!(from_spec("gemini:m", &opts).unwrap().generate(&request("q")).await.unwrap().text, big);
}

#[tokio::test]
async fn retry_after_is_capped_and_a_call_has_a_total_deadline() {
    // `Retry-After: 99999` waits at most max_retry_after (here 5 s in the test policy, 60 s by default)…
    assert_eq!(RetryPolicy::default().max_retry_after, Duration::from_secs(60));
    // …and never past the call's deadline: with 1 s left the call fails at once instead of sleeping.
    let server = MockServer::start(vec![Reply::status(429, "slow down").header("retry-after", "99999")]).await;
    let mut opts = gemini_opts(&server, "CB_TEST_KEY_G13", 5);
    opts.reliability.deadline = Some(Duration::from_secs(1));
    let started = Instant::now();
    let err = from_spec("gemini:m", &opts).unwrap().generate(&request("q")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert!(matches!(err, LlmError::RetriesExhausted { .. }) && err.to_string().contains("deadline"), "{err}");
    assert_eq!(server.calls(), 1);
    // A hanging server: the deadline bounds the whole call even when each attempt's limit is longer.
    let server = MockServer::start(vec![Reply::json(gemini_answer("late")).delayed(Duration::from_secs(10))]).await;
    let mut opts = gemini_opts(&server, "CB_TEST_KEY_G14", 5);
    opts.reliability.deadline = Some(Duration::from_millis(500));
    let started = Instant::now();
    let err = from_spec("gemini:m", &opts).unwrap().generate(&request("q")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert!(err.is_transient(), "{err}");
}
