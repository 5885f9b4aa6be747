//! `[replay] tokenizer = "gemini:<model>"` through the sweep: the counting model is built like a summarizer
//! (same cache directory and mode), a count missing from the recordings fails that cell only, and counts
//! recorded from a loopback `countTokens` make the run succeed offline with the server's figures.

use crate::support::{files, repo, strings, sweep, TestConfig};
use axum::body::Bytes;
use axum::http::StatusCode;
use compactbench::history;
use compactbench::json::Value;
use compactbench::llm::{self, BackendOptions, CacheMode};
use compactbench::replay::{self, strategies, CounterHandle, ModelCounter, ReplaySettings, Tokenizer};
use compactbench::sweep::config::SweepConfig;
use std::path::Path;
use std::sync::{Arc, Mutex};

const CONVERSATION: &str = "datasets/swe-agent/6e44b9__sweagenttestrepo-1c2844.json";
const SECRET: &str = "sk-it-count-SECRET-0123456789";

/// The loopback tokenizer: a quarter of the bytes of the `contents` it is asked to count.
fn quarter_of_bytes(contents: &serde_json::Value) -> u64 {
    serde_json::to_string(contents).unwrap_or_default().len() as u64 / 4
}

fn expected(c: &Value) -> u64 {
    quarter_of_bytes(&Value::Array(vec![c.clone()]).to_serde())
}

/// A loopback Gemini answering `countTokens` only; returns its base URL and the bodies it received.
async fn count_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let received: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&received);
    let app = axum::Router::new().fallback(move |body: Bytes| {
        let seen = Arc::clone(&seen);
        async move {
            let text = String::from_utf8_lossy(&body).into_owned();
            let parsed: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            seen.lock().unwrap().push(text);
            let n = quarter_of_bytes(&parsed["generateContentRequest"]["contents"]);
            (StatusCode::OK, serde_json::json!({ "totalTokens": n }).to_string())
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), received)
}

fn config(cache: &Path) -> SweepConfig {
    TestConfig::new("counted")
        .set("datasets", strings(&[CONVERSATION]))
        .set("replay.tokenizer", "gemini:m")
        .set("replay.token_limit", 100000)
        .set("replay.system_prompt_tokens", 0)
        .set("replay.tool_declaration_tokens", 0)
        .set("llm.cache_dir", cache.display().to_string())
        .set("llm.cache_mode", "replay")
        .set("grid.strategy", strings(&["none", "observation-masking"]))
        .set("grid.mask_keep_last", vec![1])
        .parse("counted.toml")
}

fn cell_of(
    cells: &[compactbench::data::CellResult],
    strategy: &str,
    plan: &compactbench::data::Plan,
) -> replay::ConversationResult {
    let point = plan.points.iter().find(|p| p.strategy.kind() == strategy).unwrap();
    cells.iter().find(|c| c.cell.point == point.id).unwrap().result.clone()
}

#[test]
fn a_model_tokenizer_runs_offline_from_recorded_counts_and_a_missing_count_fails_its_cell_only() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("recordings");
    let out = tmp.path().join("run");
    let config = config(&cache);
    assert_eq!(config.replay.tokenizer, Tokenizer::Model("gemini:m".into()));

    // Nothing recorded, `--cache replay`: every cell records the miss; the run finishes.
    let (plan, summary) = sweep(&config, &out, false);
    assert_eq!((summary.ran, summary.failed), (2, 2));
    for c in compactbench::data::store::collect(&out, &plan) {
        let e = c.result.error.unwrap();
        assert_eq!(e.kind(), compactbench::replay::ReplayErrorKind::Tokenizer, "{e}");
        let e = e.to_string();
        assert!(
            e.contains("tokenizer `gemini:m`") && e.contains("no recorded response") && e.contains("countTokens"),
            "{e}"
        );
        assert!(!c.transient_failure, "a cache miss is not transient");
    }
    // The plan names the tokenizer and nothing else of it.
    let plan_text = std::fs::read_to_string(out.join("plan.json")).unwrap();
    assert!(plan_text.contains("\"tokenizer\": \"gemini:m\"") && !plan_text.contains("counter"), "{plan_text}");

    // Record the counts a `none` replay needs from the loopback server (first use: key, network).
    let conv = compactbench::datasets::load_conversation(&repo().join(CONVERSATION)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (live, received) = rt.block_on(async {
        let (base, received) = count_server().await;
        std::env::set_var("CB_IT_COUNT_KEY", SECRET);
        let opts = BackendOptions {
            gemini_base_url: format!("{base}/v1beta"),
            gemini_key_var: "CB_IT_COUNT_KEY".into(),
            cache_dir: Some(cache.clone()),
            cache_mode: CacheMode::ReadWrite,
            auto_fetch: false,
            ..Default::default()
        };
        let counter = Arc::new(ModelCounter::new(llm::from_spec("gemini:m", &opts).unwrap()));
        let settings = ReplaySettings { counter: CounterHandle::new(counter), ..plan.replay.clone() };
        let input = conv.replay_input(&conv.meta.id);
        let none = strategies::none::spec();
        let r = replay::replay_spec(input, &none, &settings, &llm::ScriptedModel::new(["x"]), &mut replay::NoObserver)
            .await;
        (r, received)
    });
    assert_eq!(live.error, None);
    // The system prompt and each Content, each counted once (the history alternates roles, no thoughts).
    assert_eq!(received.lock().unwrap().len(), 1 + conv.history.len());
    let system = expected(&history::user_text(conv.system_instruction.as_deref().unwrap()));
    let h = &conv.history;
    let before = |i: usize| system + h[..i].iter().map(expected).sum::<u64>();
    let want: Vec<u64> = (0..h.len()).filter(|&i| history::is_model(&h[i])).map(before).collect();
    assert_eq!(live.request_tokens, want);
    // The final history ends with the last model turn (a user turn after it is never sent).
    let last_model = (0..h.len()).rev().find(|&i| history::is_model(&h[i])).unwrap();
    assert_eq!(live.final_history_tokens, before(last_model + 1));

    // Offline again: `none` now runs from the recordings with the server's figures; masking rewrites tool
    // outputs into Contents never counted, so its cell fails on the first of them and the run goes on.
    let (_, summary) = sweep(&config, &out, true);
    assert_eq!((summary.ran, summary.failed), (2, 1));
    let cells = compactbench::data::store::collect(&out, &plan);
    let none = cell_of(&cells, "none", &plan);
    assert_eq!(none.error, None);
    assert_eq!(none.request_tokens, live.request_tokens);
    assert_eq!(none.request_tokens_total, live.request_tokens_total);
    let masked = cell_of(&cells, "observation-masking", &plan).error.unwrap();
    assert_eq!(masked.kind(), compactbench::replay::ReplayErrorKind::Tokenizer);
    let masked = masked.to_string();
    assert!(masked.starts_with("turn ") && masked.contains("countTokens of a user Content"), "{masked}");

    for (entry, _) in files(&cache) {
        let text = std::fs::read_to_string(cache.join(&entry)).unwrap();
        assert!(!text.contains(SECRET), "{}: holds the key", entry.display());
    }
}
