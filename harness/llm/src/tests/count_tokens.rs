//! A backend's tokenizer as the replay's: Gemini `countTokens` against a loopback server that counts a
//! quarter of the bytes of the contents it is sent, recorded in the cache, replayed offline, and used by
//! the replay engine to measure every request.

use super::*;
use crate::json::{self, Value};
use compactbench_core::replay::{
    self, strategies, CounterHandle, ModelCounter, ReplayInput, ReplaySettings, TokenCounter, Tokenizer,
};
use std::path::Path;

const SECRET: &str = "sk-count-SECRET-0123456789";

/// The server's tokenizer: a quarter of the bytes of the `contents` array as compact JSON.
fn quarter_of_bytes(contents: &serde_json::Value) -> u64 {
    serde_json::to_string(contents).unwrap_or_default().len() as u64 / 4
}

/// The count the server gives one Content alone.
fn expected(c: &Value) -> u64 {
    quarter_of_bytes(&Value::Array(vec![c.clone()]).to_serde())
}

/// A loopback Gemini that answers `countTokens` with [`quarter_of_bytes`] (and `generateContent` with a
/// fixed text), counting the calls of each.
struct CountServer {
    base: String,
    counts: Arc<Mutex<Vec<Received>>>,
    generations: Arc<Mutex<usize>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl CountServer {
    async fn start() -> CountServer {
        let counts: Arc<Mutex<Vec<Received>>> = Arc::default();
        let generations: Arc<Mutex<usize>> = Arc::default();
        let (c, g) = (Arc::clone(&counts), Arc::clone(&generations));
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let (counts, generations) = (Arc::clone(&c), Arc::clone(&g));
            async move {
                let path = uri.path().to_string();
                let text = String::from_utf8_lossy(&body).into_owned();
                if path.ends_with(":generateContent") {
                    *generations.lock().unwrap() += 1;
                    return (StatusCode::OK, gemini_answer("a summary").to_string()).into_response();
                }
                let parsed: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                let contents = &parsed["generateContentRequest"]["contents"];
                counts.lock().unwrap().push(Received { path, headers, body: text });
                let answer = serde_json::json!({"totalTokens": quarter_of_bytes(contents)});
                (StatusCode::OK, answer.to_string()).into_response()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        CountServer { base: format!("http://{addr}"), counts, generations, shutdown: Some(tx) }
    }

    fn count_calls(&self) -> usize {
        self.counts.lock().unwrap().len()
    }

    fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn options(base: &str, key_var: &str, cache: &Path, mode: CacheMode) -> BackendOptions {
    std::env::set_var(key_var, SECRET);
    BackendOptions {
        gemini_base_url: format!("{base}/v1beta"),
        gemini_key_var: key_var.into(),
        cache_dir: Some(cache.to_path_buf()),
        cache_mode: mode,
        ..test_options(2)
    }
}

fn all_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(all_files(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// Counts are recorded like generations, under a canonical request that says `countTokens` (so a count and
/// a generation of the same contents are two entries); a second pass in replay mode with the server gone
/// answers the same counts; the key sent to the server is in no cache file.
#[tokio::test]
async fn counts_are_recorded_and_replayed_offline_without_the_key() {
    let mut server = CountServer::start().await;
    let cache = tempfile::tempdir().unwrap();
    let model =
        from_spec("gemini:m", &options(&server.base, "CB_TEST_KEY_C1", cache.path(), CacheMode::ReadWrite)).unwrap();
    let reqs: Vec<LlmRequest> = ["What is 2+2?", "Summarise the session so far, please."]
        .iter()
        .map(|q| replay::model_counter::count_request(&history::user_text(q)))
        .collect();
    let mut first = Vec::new();
    for r in &reqs {
        first.push(model.count_tokens(r).await.unwrap().unwrap());
    }
    for (r, n) in reqs.iter().zip(&first) {
        assert_eq!(*n, expected(&r.contents[0]));
    }
    // Cached: asking again does not reach the server.
    assert_eq!(model.count_tokens(&reqs[0]).await.unwrap(), Some(first[0]));
    assert_eq!(server.count_calls(), 2);
    let sent = server.counts.lock().unwrap()[0].clone();
    assert_eq!(sent.path, "/v1beta/models/m:countTokens");
    assert_eq!(sent.headers.get("x-goog-api-key").unwrap(), SECRET);
    // A generation of the same contents is another entry.
    model.generate(&reqs[0]).await.unwrap();
    assert_eq!(*server.generations.lock().unwrap(), 1);
    assert_ne!(request_hash("gemini:m", &reqs[0]), {
        let canonical = canonical_count_request("gemini:m", &reqs[0]);
        hex::encode(sha2::Sha256::digest(json::to_string(&canonical).as_bytes()))
    });
    let files = all_files(cache.path());
    assert_eq!(files.len(), 3, "{files:?}");
    let mut count_entries = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(!text.contains(SECRET), "{}: holds the key", f.display());
        if text.contains(r#""method": "countTokens""#) {
            count_entries += 1;
            assert!(text.contains(r#""total_tokens":"#), "{text}");
        }
    }
    assert_eq!(count_entries, 2);

    server.stop();
    let offline = options("http://127.0.0.1:9", "CB_TEST_KEY_C1", cache.path(), CacheMode::Replay);
    let replayed = from_spec("gemini:m", &offline).unwrap();
    for (r, n) in reqs.iter().zip(&first) {
        assert_eq!(replayed.count_tokens(r).await.unwrap(), Some(*n));
    }
    // An unrecorded count is a cache miss that says what was asked, not a network error.
    let missing = replay::model_counter::count_request(&history::model_text("never counted"));
    let err = replayed.count_tokens(&missing).await.unwrap_err();
    assert!(
        matches!(&err, LlmError::CacheMiss { description, .. } if description.contains("countTokens of a model Content")),
        "{err:?}"
    );
    assert_eq!(server.count_calls(), 2);
}

use sha2::Digest;

/// A task, two tool rounds and an answer, with a system prompt.
fn conversation() -> Vec<Value> {
    json::parse_str(
        r#"[
        {"role":"user","parts":[{"text":"Fix the failing test in src/lib.rs"}]},
        {"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"path":"src/lib.rs"}}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"fn add(a: i32, b: i32) -> i32 { a - b }"}}}]},
        {"role":"model","parts":[{"functionCall":{"name":"edit","args":{"path":"src/lib.rs","new":"a + b"}}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"edit","response":{"output":"ok"}}}]},
        {"role":"model","parts":[{"text":"Fixed: add now adds."}]}
    ]"#,
    )
    .unwrap()
    .as_array()
    .unwrap()
    .to_vec()
}

const SYSTEM: &str = "You are a careful coding agent.";

async fn replay_with(
    model: Arc<dyn LanguageModel>,
    history: &[Value],
) -> (replay::ConversationResult, Arc<ModelCounter>) {
    let counter = Arc::new(ModelCounter::new(model));
    let settings = ReplaySettings {
        tokenizer: Tokenizer::Model("gemini:m".into()),
        counter: CounterHandle::new(Arc::clone(&counter) as Arc<dyn TokenCounter>),
        tool_declaration_tokens: 0,
        ..Default::default()
    };
    let input = ReplayInput { system_instruction: Some(SYSTEM), ..ReplayInput::history("c", history) };
    let r = replay::replay_spec(
        input,
        &strategies::none::spec(),
        &settings,
        &ScriptedModel::new(["x"]),
        &mut replay::NoObserver,
    )
    .await;
    (r, counter)
}

/// A replay with the Gemini tokenizer measures every request as the server's count of each part summed:
/// the system prompt (one user Content) and each Content of the history, each counted once. Replayed
/// offline from the recordings it gives the same figures; a Content never recorded fails that conversation
/// with the cache miss in its error.
#[tokio::test]
async fn a_replay_measures_requests_with_the_servers_counts() {
    let mut server = CountServer::start().await;
    let cache = tempfile::tempdir().unwrap();
    let h = conversation();
    let model =
        from_spec("gemini:m", &options(&server.base, "CB_TEST_KEY_C2", cache.path(), CacheMode::ReadWrite)).unwrap();
    let (live, counter) = replay_with(model, &h).await;
    assert_eq!(live.error, None);
    let system = expected(&history::user_text(SYSTEM));
    let want: Vec<u64> = (0..h.len())
        .filter(|&i| history::is_model(&h[i]))
        .map(|i| system + h[..i].iter().map(expected).sum::<u64>())
        .collect();
    assert_eq!(live.request_tokens, want);
    assert_eq!(live.final_history_tokens, system + h.iter().map(expected).sum::<u64>());
    // The system prompt and six Contents, each counted once.
    assert_eq!(server.count_calls(), 7);
    assert_eq!(counter.distinct_counted(), 7);

    server.stop();
    let offline = options("http://127.0.0.1:9", "CB_TEST_KEY_C2", cache.path(), CacheMode::Replay);
    let (replayed, _) = replay_with(from_spec("gemini:m", &offline).unwrap(), &h).await;
    assert_eq!(replayed, live);

    let mut longer = h.clone();
    longer.push(history::user_text("Now run the whole suite."));
    longer.push(history::model_text("All green."));
    let (failed, _) = replay_with(from_spec("gemini:m", &offline).unwrap(), &longer).await;
    let e = failed.error.expect("a cache miss fails the conversation");
    assert_eq!(e.kind(), compactbench_core::replay::ReplayErrorKind::Tokenizer, "{e}");
    let e = e.to_string();
    assert!(
        e.contains("tokenizer `gemini:m`")
            && e.contains("no recorded response")
            && e.contains("countTokens of a user Content: \"Now run the whole suite.\""),
        "{e}"
    );
}
