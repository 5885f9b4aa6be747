//! The record/replay cache: keys, modes, file format, damage detection, atomic writes, no secrets on disk.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Answers `answer <n>` and counts calls.
pub struct CountingModel {
    pub calls: AtomicUsize,
    pub delay: Duration,
}

impl CountingModel {
    pub fn new(delay: Duration) -> Arc<Self> {
        Arc::new(CountingModel { calls: AtomicUsize::new(0), delay })
    }
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl LanguageModel for CountingModel {
    fn spec(&self) -> &str {
        "counting"
    }
    async fn generate(&self, _req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(self.delay).await;
        Ok(LlmResponse {
            text: format!("answer {n}"),
            usage: Usage { prompt_tokens: 10, output_tokens: 2, thought_tokens: 0 },
            ..Default::default()
        })
    }
}

fn entry_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for sub in std::fs::read_dir(dir).unwrap().flatten() {
        if sub.path().is_dir() {
            out.extend(std::fs::read_dir(sub.path()).unwrap().flatten().map(|e| e.path()));
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn read_write_records_then_hits() {
    let dir = tempfile::tempdir().unwrap();
    let inner = CountingModel::new(Duration::ZERO);
    let cached = CachedModel::new(inner.clone(), dir.path(), CacheMode::ReadWrite);
    let req = request("What is 2+2?");
    let first = cached.generate(&req).await.unwrap();
    // Same request under another label: same key, answered from the cache.
    let mut relabelled = req.clone();
    relabelled.label.prompt_id = "other".into();
    let second = cached.generate(&relabelled).await.unwrap();
    assert_eq!(first, second);
    assert_eq!(inner.calls(), 1);

    let hash = request_hash("counting", &req);
    let files = entry_files(dir.path());
    assert_eq!(files, vec![dir.path().join(&hash[..2]).join(format!("{hash}.json"))]);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("\n  \"request\": {"), "pretty JSON expected:\n{text}");
    assert!(text.contains("\"integrity\": \"sha256:"));
    assert!(!text.contains("\"p1\""), "the label must not be stored in the key");

    // A different parameter is a different request.
    let mut hotter = req.clone();
    hotter.params.temperature = Some(0.9);
    assert_ne!(request_hash("counting", &hotter), hash);
    cached.generate(&hotter).await.unwrap();
    assert_eq!(inner.calls(), 2);
}

#[test]
fn keys_are_stable_and_cover_what_matters() {
    let req = request("q");
    assert_eq!(request_hash("gemini:m", &req), request_hash("gemini:m", &req.clone()));
    assert_ne!(request_hash("gemini:m", &req), request_hash("gemini:n", &req));
    let mut no_system = req.clone();
    no_system.system_instruction = None;
    assert_ne!(request_hash("gemini:m", &req), request_hash("gemini:m", &no_system));
    let mut other_stop = req.clone();
    other_stop.params.stop = vec!["x".into()];
    assert_ne!(request_hash("gemini:m", &req), request_hash("gemini:m", &other_stop));
    // f32 temperatures key by their shortest decimal text.
    let c = canonical_request("gemini:m", &req);
    assert!(crate::json::to_string(&c).contains("\"temperature\":0.2"));
}

#[tokio::test]
async fn replay_miss_names_hash_and_request() {
    let dir = tempfile::tempdir().unwrap();
    let inner = CountingModel::new(Duration::ZERO);
    let cached = CachedModel::new(inner.clone(), dir.path(), CacheMode::Replay);
    let req = request("Where is the config file stored?");
    let err = cached.generate(&req).await.unwrap_err();
    match &err {
        LlmError::CacheMiss { hash, description } => {
            assert_eq!(hash, &request_hash("counting", &req));
            assert!(description.contains("Where is the config file stored?"), "{description}");
        }
        other => panic!("expected a cache miss, got {other:?}"),
    }
    assert_eq!(inner.calls(), 0);
    // Recorded in read-write mode, the same request then replays.
    CachedModel::new(inner.clone(), dir.path(), CacheMode::ReadWrite).generate(&req).await.unwrap();
    assert_eq!(cached.generate(&req).await.unwrap().text, "answer 1");
    assert_eq!(inner.calls(), 1);
}

#[tokio::test]
async fn off_mode_never_touches_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let inner = CountingModel::new(Duration::ZERO);
    let cached = CachedModel::new(inner.clone(), dir.path(), CacheMode::Off);
    cached.generate(&request("q")).await.unwrap();
    cached.generate(&request("q")).await.unwrap();
    assert_eq!(inner.calls(), 2);
    assert!(entry_files(dir.path()).is_empty());
}

#[tokio::test]
async fn damaged_entries_are_reported_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let inner = CountingModel::new(Duration::ZERO);
    let cached = CachedModel::new(inner.clone(), dir.path(), CacheMode::ReadWrite);
    let req = request("q");
    cached.generate(&req).await.unwrap();
    let path = entry_files(dir.path()).remove(0);
    let original = std::fs::read_to_string(&path).unwrap();

    let damages: Vec<(&str, String)> = vec![
        ("edited response", original.replace("answer 1", "answer 2")),
        ("truncated", original[..original.len() / 2].to_string()),
        ("edited request", original.replace("You are terse.", "You are verbose.")),
        ("no integrity", original.replace("\"integrity\"", "\"integrityy\"")),
    ];
    for (what, text) in damages {
        std::fs::write(&path, text).unwrap();
        let err = cached.generate(&req).await.unwrap_err();
        assert!(matches!(err, LlmError::CacheCorrupt { .. }), "{what}: {err:?}");
    }
    assert_eq!(inner.calls(), 1, "a damaged entry must not fall through to the backend");

    // An intact entry copied under another request's name is also caught.
    std::fs::write(&path, &original).unwrap();
    let other = request("other question");
    let other_hash = request_hash("counting", &other);
    let other_path = ResponseCache::new(dir.path()).entry_path(&other_hash);
    std::fs::create_dir_all(other_path.parent().unwrap()).unwrap();
    std::fs::write(&other_path, &original).unwrap();
    let err = cached.generate(&other).await.unwrap_err();
    assert!(matches!(err, LlmError::CacheCorrupt { ref reason, .. } if reason.contains("hash mismatch")), "{err:?}");
    assert_eq!(cached.generate(&req).await.unwrap().text, "answer 1");
}

#[test]
fn concurrent_writers_leave_whole_entries_only() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ResponseCache::new(dir.path());
    let req = request("shared");
    let hash = request_hash("m", &req);
    let canonical = canonical_request("m", &req);
    std::thread::scope(|s| {
        for t in 0..8 {
            let (cache, canonical, hash) = (&cache, &canonical, &hash);
            s.spawn(move || {
                for i in 0..20 {
                    let resp = LlmResponse { text: format!("writer {t} round {i} ").repeat(200), ..Default::default() };
                    cache.store(hash, canonical, &resp).unwrap();
                    // Every read in the middle of the storm sees some whole entry.
                    let seen = cache.load(hash).unwrap().unwrap();
                    assert!(seen.text.starts_with("writer "));
                }
            });
        }
    });
    let files = entry_files(dir.path());
    assert_eq!(files.len(), 1, "temp files left behind: {files:?}");
    // A writer killed before its rename leaves only a temp file, which is never read as an entry.
    std::fs::write(files[0].parent().unwrap().join(".tmp-killed.json"), "{\"format\":").unwrap();
    assert!(cache.load(&hash).unwrap().is_some());
}

#[tokio::test]
async fn api_keys_never_reach_cache_files_or_errors() {
    const KEY: &str = "AIza-THIS-IS-THE-SECRET-KEY";
    std::env::set_var("CB_TEST_KEY_CACHE", KEY);
    let server = MockServer::start(vec![Reply::json(gemini_answer("fine")), Reply::status(403, "denied")]).await;
    let dir = tempfile::tempdir().unwrap();
    let opts = BackendOptions {
        gemini_base_url: server.base.clone(),
        gemini_key_var: "CB_TEST_KEY_CACHE".into(),
        cache_dir: Some(dir.path().to_path_buf()),
        ..test_options(1)
    };
    let model = from_spec("gemini:m", &opts).unwrap();
    model.generate(&request("one")).await.unwrap();
    let err = model.generate(&request("two")).await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains(KEY));
    for f in entry_files(dir.path()) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains(KEY) && !text.contains("CB_TEST_KEY_CACHE"), "{}", f.display());
    }
    assert_eq!(server.received()[0].headers.get("x-goog-api-key").unwrap(), KEY);
    // Cache hits are counted in the ledger.
    model.generate(&request("one")).await.unwrap();
    assert_eq!(opts.ledger.usage_of("gemini:m").cache_hits, 1);
    assert_eq!(server.calls(), 2);
}

#[test]
fn openai_recordings_are_per_server_without_credentials() {
    // One model name on two servers may be two different models: they do not share recordings.
    let a = OpenAiModel::from_spec_rest("qwen@http://localhost:8000/v1", "X", reqwest::Client::new()).unwrap();
    let b = OpenAiModel::from_spec_rest("qwen@http://gpu-box:9000/v1", "X", reqwest::Client::new()).unwrap();
    assert_ne!(a.cache_identity(), b.cache_identity());
    assert_ne!(request_hash(&a.cache_identity(), &request("q")), request_hash(&b.cache_identity(), &request("q")));
    // A trailing slash or a query string changes nothing (and a query never enters the key).
    let c =
        OpenAiModel::from_spec_rest("qwen@http://localhost:8000/v1/?token=t0p", "X", reqwest::Client::new()).unwrap();
    assert_eq!(a.cache_identity(), c.cache_identity());
    assert!(!c.cache_identity().contains("t0p"));
}

#[test]
fn the_shipped_recordings_still_hit() {
    // The recordings are for the embedded model, whose identity has no server: every entry's stored request
    // still hashes to its file name (what a lookup computes).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/recordings");
    let mut checked = 0;
    for sub in std::fs::read_dir(&dir).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for f in std::fs::read_dir(sub.path()).unwrap().flatten() {
            let hash = f.path().file_stem().unwrap().to_string_lossy().into_owned();
            let entry = ResponseCache::new(&dir).load(&hash).unwrap_or_else(|e| panic!("{hash}: {e}"));
            assert!(entry.is_some(), "{hash}");
            let text = std::fs::read_to_string(f.path()).unwrap();
            assert!(text.contains("\"model\": \"local:smollm2-135m\""), "{}", f.path().display());
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[tokio::test]
async fn replaying_the_local_model_needs_no_weights() {
    let dir = tempfile::tempdir().unwrap();
    let opts = BackendOptions {
        model_dir: dir.path().join("no-models-here"),
        auto_fetch: false,
        cache_dir: Some(dir.path().join("rec")),
        cache_mode: CacheMode::Replay,
        ..test_options(1)
    };
    let model = from_spec(DEFAULT_MODEL_SPEC, &opts).unwrap();
    let err = model.generate(&request("q")).await.unwrap_err();
    assert!(matches!(err, LlmError::CacheMiss { .. }), "{err:?}");
    assert!(!dir.path().join("no-models-here").exists());
}
