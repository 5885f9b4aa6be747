//! The record/replay cache: every backend answer is stored as a git-friendly JSON file keyed by the sha256 of
//! a canonical request, so runs can be replayed offline and shipped recordings reviewed in diffs.
//!
//! Layout: `<dir>/<hash[..2]>/<hash>.json`, each holding `{format, hash, request, response, integrity}`.
//! The request is the canonical request (backend identity, parameters, system instruction, contents) — never
//! the label and never a key. `integrity` is the sha256 of the compact response, so an edited or truncated
//! entry is detected instead of silently used.
//!
//! Token counts (`count_tokens`) are recorded the same way: their canonical request carries
//! `"method": "countTokens"` (a generation's has no `method`, so recordings made before counts existed keep
//! their hashes), and their response is `{"total_tokens": N}`.

use super::UsageLedger;
use crate::history;
use crate::json::{self, Value};
use crate::{GenerationParams, LanguageModel, LlmError, LlmRequest, LlmResponse};
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Version tag of the canonical request; bump it when the canonical form changes.
const REQUEST_FORMAT: &str = "compactbench-llm-request/1";
const ENTRY_FORMAT: &str = "compactbench-llm-cache-entry/1";

/// Written as `read-write`, `replay` or `off` in configs and on the command line (one parser, `FromStr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CacheMode {
    /// Answer from the cache when possible, otherwise call the backend and record the answer.
    #[default]
    ReadWrite,
    /// Answer only from the cache; a miss is an error (offline, reproducible runs).
    Replay,
    /// No cache at all.
    Off,
}

compactbench_core::named_variants!(CacheMode, "cache mode", {
    ReadWrite => "read-write",
    Replay => "replay",
    Off => "off",
});

/// Numbers in the canonical form are written from their shortest decimal text, so `0.7f32` keys as `0.7`.
fn f32_value(x: f32) -> Value {
    Value::num(format!("{x}").parse::<f64>().unwrap_or(f64::from(x)))
}

fn params_value(p: &GenerationParams) -> Value {
    let mut v = Value::empty_object();
    if let Some(m) = p.max_output_tokens {
        v.insert("max_output_tokens", Value::num(f64::from(m)));
    }
    if let Some(t) = p.temperature {
        v.insert("temperature", f32_value(t));
    }
    if !p.stop.is_empty() {
        v.insert("stop", Value::Array(p.stop.iter().map(|s| Value::str(s)).collect()));
    }
    v
}

/// The canonical request: what determines the answer, and nothing else (no label, no key, no base URL).
pub fn canonical_request(model_identity: &str, req: &LlmRequest) -> Value {
    Value::object([
        ("format", Value::str(REQUEST_FORMAT)),
        ("model", Value::str(model_identity)),
        ("params", params_value(&req.params)),
        ("system_instruction", req.system_instruction.as_deref().map(Value::str).unwrap_or(Value::Null)),
        ("contents", Value::Array(req.contents.clone())),
    ])
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What distinguishes a count's canonical request from a generation's of the same contents.
const COUNT_METHOD: &str = "countTokens";

/// The canonical request of a token count: the generation's, with `"method": "countTokens"`.
pub fn canonical_count_request(model_identity: &str, req: &LlmRequest) -> Value {
    Value::object([
        ("format", Value::str(REQUEST_FORMAT)),
        ("method", Value::str(COUNT_METHOD)),
        ("model", Value::str(model_identity)),
        ("params", params_value(&req.params)),
        ("system_instruction", req.system_instruction.as_deref().map(Value::str).unwrap_or(Value::Null)),
        ("contents", Value::Array(req.contents.clone())),
    ])
}

/// The cache key of a request for a model: sha256 of the compact canonical request.
pub fn request_hash(model_identity: &str, req: &LlmRequest) -> String {
    sha256_hex(json::to_string(&canonical_request(model_identity, req)).as_bytes())
}

/// A short human description of a request for error messages: the start of the last user turn's text.
pub fn describe_request(req: &LlmRequest) -> String {
    let last_user = req.contents.iter().rev().find(|c| history::is_user(c));
    let short = short_text(&last_user.map(history::visible_text).unwrap_or_default());
    if short.is_empty() {
        "no user text".into()
    } else {
        format!("last user turn: \"{short}\"")
    }
}

/// A short description of a count's request: the counted Content's role and the start of its text.
pub fn describe_count(req: &LlmRequest) -> String {
    let Some(first) = req.contents.first() else { return "countTokens of no Content".into() };
    let role = history::role(first).unwrap_or("?");
    let short = short_text(&history::visible_text(first));
    let what = if short.is_empty() { "no text (tool calls or outputs)".to_string() } else { format!("\"{short}\"") };
    format!("countTokens of a {role} Content: {what}")
}

/// The first 80 characters of a text, whitespace collapsed.
fn short_text(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut short: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        short.push('…');
    }
    short
}

/// A directory of recorded responses.
#[derive(Clone, Debug)]
pub struct ResponseCache {
    dir: PathBuf,
}

impl ResponseCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ResponseCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn entry_path(&self, hash: &str) -> PathBuf {
        self.dir.join(&hash[..2.min(hash.len())]).join(format!("{hash}.json"))
    }

    /// Reads a generation's entry; `Ok(None)` when absent, `CacheCorrupt` when present but damaged.
    pub fn load(&self, hash: &str) -> Result<Option<LlmResponse>, LlmError> {
        self.load_with(hash, |response| {
            serde_json::from_value(response.to_serde()).map_err(|e| EntryDefect::Shape(e.to_string()))
        })
    }

    /// Reads a token count's entry; `Ok(None)` when absent, `CacheCorrupt` when present but damaged.
    pub fn load_count(&self, hash: &str) -> Result<Option<u64>, LlmError> {
        self.load_with(hash, |response| {
            let n = response.get("total_tokens").and_then(Value::as_f64);
            n.filter(|n| *n >= 0.0 && n.fract() == 0.0).map(|n| n as u64).ok_or(EntryDefect::NoCount)
        })
    }

    /// Reads and verifies an entry, then reads its response with `read`.
    fn load_with<T>(
        &self,
        hash: &str,
        read: impl FnOnce(&Value) -> Result<T, EntryDefect>,
    ) -> Result<Option<T>, LlmError> {
        let path = self.entry_path(hash);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(corrupt(&path, EntryDefect::Unreadable(e))),
        };
        parse_entry(&bytes, hash).and_then(|r| read(&r)).map(Some).map_err(|defect| corrupt(&path, defect))
    }

    /// Writes a generation's entry atomically (see `ResponseCache::store_value`).
    pub fn store(&self, hash: &str, request: &Value, response: &LlmResponse) -> Result<PathBuf, LlmError> {
        self.store_value(hash, request, response_to_value(response))
    }

    /// Writes a token count's entry.
    pub fn store_count(&self, hash: &str, request: &Value, total_tokens: u64) -> Result<PathBuf, LlmError> {
        self.store_value(hash, request, Value::object([("total_tokens", Value::num(total_tokens as f64))]))
    }

    /// Writes an entry atomically: a temp file in the same directory renamed over the final name, so readers
    /// and a killed writer never see half an entry.
    fn store_value(&self, hash: &str, request: &Value, response_value: Value) -> Result<PathBuf, LlmError> {
        let path = self.entry_path(hash);
        let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
        let io_err = |what: &str, e: std::io::Error| LlmError::Other(format!("cache {what} {}: {e}", parent.display()));
        std::fs::create_dir_all(&parent).map_err(|e| io_err("cannot create", e))?;
        let entry = Value::object([
            ("format", Value::str(ENTRY_FORMAT)),
            ("hash", Value::str(hash)),
            ("request", request.clone()),
            ("response", response_value.clone()),
            ("integrity", Value::str(&integrity_of(&response_value))),
        ]);
        let mut text = json::to_string_pretty(&entry);
        text.push('\n');
        crate::fsutil::write_atomic(&path, text.as_bytes()).map_err(|e| LlmError::Other(format!("cache: {e}")))?;
        Ok(path)
    }
}

/// What is wrong with a cache entry that exists.
#[derive(Debug, thiserror::Error)]
enum EntryDefect {
    #[error("cannot read: {0}")]
    Unreadable(std::io::Error),
    #[error("not valid JSON: {0}")]
    NotJson(String),
    #[error("missing or unknown format (expected {ENTRY_FORMAT})")]
    Format,
    #[error("no {0}")]
    Missing(&'static str),
    #[error("hash mismatch: file is for {expected}, its request hashes to {actual}")]
    Hash { expected: String, actual: String },
    #[error("integrity mismatch: the response was changed after recording")]
    Integrity,
    #[error("response has the wrong shape: {0}")]
    Shape(String),
    #[error("response has no `total_tokens` count")]
    NoCount,
}

fn corrupt(path: &Path, defect: EntryDefect) -> LlmError {
    LlmError::CacheCorrupt { path: path.display().to_string(), reason: defect.to_string() }
}

fn response_to_value(r: &LlmResponse) -> Value {
    Value::from_serde(&serde_json::to_value(r).unwrap_or(serde_json::Value::Null))
}

fn integrity_of(response: &Value) -> String {
    format!("sha256:{}", sha256_hex(json::to_string(response).as_bytes()))
}

/// The verified response of an entry.
fn parse_entry(bytes: &[u8], expected_hash: &str) -> Result<Value, EntryDefect> {
    let entry = json::parse(bytes).map_err(|e| EntryDefect::NotJson(e.to_string()))?;
    if entry.get("format").and_then(Value::as_str) != Some(ENTRY_FORMAT) {
        return Err(EntryDefect::Format);
    }
    let request = entry.get("request").ok_or(EntryDefect::Missing("request"))?;
    let actual_hash = sha256_hex(json::to_string(request).as_bytes());
    if actual_hash != expected_hash || entry.get("hash").and_then(Value::as_str) != Some(expected_hash) {
        return Err(EntryDefect::Hash { expected: expected_hash.into(), actual: actual_hash });
    }
    let response = entry.get("response").ok_or(EntryDefect::Missing("response"))?;
    let integrity = entry.get("integrity").and_then(Value::as_str).ok_or(EntryDefect::Missing("integrity field"))?;
    if integrity != integrity_of(response) {
        return Err(EntryDefect::Integrity);
    }
    Ok(response.clone())
}

/// A model behind the record/replay cache.
pub struct CachedModel {
    inner: Arc<dyn LanguageModel>,
    cache: ResponseCache,
    mode: CacheMode,
    ledger: Option<Arc<UsageLedger>>,
}

impl CachedModel {
    pub fn new(inner: Arc<dyn LanguageModel>, dir: impl Into<PathBuf>, mode: CacheMode) -> Self {
        CachedModel { inner, cache: ResponseCache::new(dir), mode, ledger: None }
    }

    /// Counts cache hits in `ledger` (under the inner model's spec).
    pub fn with_ledger(mut self, ledger: Arc<UsageLedger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    pub fn cache(&self) -> &ResponseCache {
        &self.cache
    }

    pub fn mode(&self) -> CacheMode {
        self.mode
    }
}

#[async_trait]
impl LanguageModel for CachedModel {
    fn spec(&self) -> &str {
        self.inner.spec()
    }

    fn cache_identity(&self) -> String {
        self.inner.cache_identity()
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        if self.mode == CacheMode::Off {
            return self.inner.generate(req).await;
        }
        let identity = self.inner.cache_identity();
        let request = canonical_request(&identity, req);
        let hash = sha256_hex(json::to_string(&request).as_bytes());
        if let Some(hit) = self.cache.load(&hash)? {
            if let Some(l) = &self.ledger {
                l.record_cache_hit(self.inner.spec());
            }
            return Ok(hit);
        }
        if self.mode == CacheMode::Replay {
            return Err(LlmError::CacheMiss { hash, description: describe_request(req) });
        }
        let response = self.inner.generate(req).await?;
        self.cache.store(&hash, &request, &response)?;
        Ok(response)
    }

    /// Recorded like a generation, under the count's own canonical request. A backend without a counter
    /// (`Ok(None)`) records nothing.
    async fn count_tokens(&self, req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        if self.mode == CacheMode::Off {
            return self.inner.count_tokens(req).await;
        }
        let request = canonical_count_request(&self.inner.cache_identity(), req);
        let hash = sha256_hex(json::to_string(&request).as_bytes());
        if let Some(hit) = self.cache.load_count(&hash)? {
            if let Some(l) = &self.ledger {
                l.record_cache_hit(self.inner.spec());
            }
            return Ok(Some(hit));
        }
        if self.mode == CacheMode::Replay {
            return Err(LlmError::CacheMiss { hash, description: describe_count(req) });
        }
        let Some(n) = self.inner.count_tokens(req).await? else { return Ok(None) };
        self.cache.store_count(&hash, &request, n)?;
        Ok(Some(n))
    }
}
