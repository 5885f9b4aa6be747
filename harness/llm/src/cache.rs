//! The record/replay cache: every backend answer is stored as a git-friendly JSON file keyed by the sha256 of
//! a canonical request, so runs can be replayed offline and shipped recordings reviewed in diffs.
//!
//! Layout: `<dir>/<hash[..2]>/<hash>.json`, each holding `{format, hash, request, response, integrity}`.
//! The request is the canonical request (backend identity, parameters, system instruction, contents) — never
//! the label and never a key. `integrity` is the sha256 of the compact response, so an edited or truncated
//! entry is detected instead of silently used.

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

/// The cache key of a request for a model: sha256 of the compact canonical request.
pub fn request_hash(model_identity: &str, req: &LlmRequest) -> String {
    sha256_hex(json::to_string(&canonical_request(model_identity, req)).as_bytes())
}

/// A short human description of a request for error messages: the start of the last user turn's text.
pub fn describe_request(req: &LlmRequest) -> String {
    let last_user = req.contents.iter().rev().find(|c| history::is_user(c));
    let text = last_user.map(history::visible_text).unwrap_or_default();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut short: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        short.push('…');
    }
    if short.is_empty() {
        "no user text".into()
    } else {
        format!("last user turn: \"{short}\"")
    }
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

    /// Reads an entry; `Ok(None)` when absent, `CacheCorrupt` when present but damaged.
    pub fn load(&self, hash: &str) -> Result<Option<LlmResponse>, LlmError> {
        let path = self.entry_path(hash);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(corrupt(&path, format!("cannot read: {e}"))),
        };
        parse_entry(&bytes, hash).map(Some).map_err(|reason| corrupt(&path, reason))
    }

    /// Writes an entry atomically: a temp file in the same directory renamed over the final name, so readers
    /// and a killed writer never see half an entry.
    pub fn store(&self, hash: &str, request: &Value, response: &LlmResponse) -> Result<PathBuf, LlmError> {
        let path = self.entry_path(hash);
        let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
        let io_err = |what: &str, e: std::io::Error| LlmError::Other(format!("cache {what} {}: {e}", parent.display()));
        std::fs::create_dir_all(&parent).map_err(|e| io_err("cannot create", e))?;
        let response_value = response_to_value(response);
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

fn corrupt(path: &Path, reason: String) -> LlmError {
    LlmError::CacheCorrupt { path: path.display().to_string(), reason }
}

fn response_to_value(r: &LlmResponse) -> Value {
    Value::from_serde(&serde_json::to_value(r).unwrap_or(serde_json::Value::Null))
}

fn integrity_of(response: &Value) -> String {
    format!("sha256:{}", sha256_hex(json::to_string(response).as_bytes()))
}

fn parse_entry(bytes: &[u8], expected_hash: &str) -> Result<LlmResponse, String> {
    let entry = json::parse(bytes).map_err(|e| format!("not valid JSON: {e}"))?;
    if entry.get("format").and_then(Value::as_str) != Some(ENTRY_FORMAT) {
        return Err(format!("missing or unknown format (expected {ENTRY_FORMAT})"));
    }
    let request = entry.get("request").ok_or("no request")?;
    let actual_hash = sha256_hex(json::to_string(request).as_bytes());
    if actual_hash != expected_hash || entry.get("hash").and_then(Value::as_str) != Some(expected_hash) {
        return Err(format!("hash mismatch: file is for {expected_hash}, its request hashes to {actual_hash}"));
    }
    let response = entry.get("response").ok_or("no response")?;
    let integrity = entry.get("integrity").and_then(Value::as_str).ok_or("no integrity field")?;
    if integrity != integrity_of(response) {
        return Err("integrity mismatch: the response was changed after recording".into());
    }
    serde_json::from_value(response.to_serde()).map_err(|e| format!("response has the wrong shape: {e}"))
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

    async fn count_tokens(&self, req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        self.inner.count_tokens(req).await
    }
}
