//! Shared HTTP plumbing of the REST backends: one POST of a JSON body, errors mapped to [`LlmError`].
//!
//! This is the one place where what a server sends becomes text of ours (answers, error bodies, transport
//! errors), so it is where secrets are masked: every value of a request header we sent (the API key lives
//! only there) and anything shaped like an `Authorization` or `x-goog-api-key` header is replaced by
//! [`REDACTED`] before the text reaches an error, a recording, a cell, a log or the terminal. A server
//! that echoes the key back therefore cannot make us store it.

use crate::LlmError;
use std::sync::OnceLock;
use std::time::Duration;

/// What a masked secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Default cap on the size of one answer body.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;

/// Replaces every occurrence of the known `secrets` in `text`.
pub fn redact_known(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 8) {
        if out.contains(*s) {
            out = out.replace(*s, REDACTED);
        }
    }
    out
}

/// Replaces the known `secrets` and anything shaped like a credential header in `text` (error texts; a
/// successful answer only gets `redact_known`, so a summary quoting `api_key=…` from a conversation is
/// left as the model wrote it).
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let out = redact_known(text, secrets);
    static HEADER: OnceLock<regex::Regex> = OnceLock::new();
    let header = HEADER.get_or_init(|| {
        // `Authorization: Bearer x`, `"authorization":"x"`, `x-goog-api-key=x`, with or without quotes.
        regex::Regex::new(
            r#"(?i)((?:authorization|x-goog-api-key|api[_-]?key)["']?\s*[:=]\s*["']?(?:bearer\s+|basic\s+)?)[^\s"',;}\]]+"#,
        )
        .expect("static regex")
    });
    header.replace_all(&out, format!("${{1}}{REDACTED}")).into_owned()
}

/// The secrets among the headers of a request: each value, and the token of `Bearer <token>`.
fn secrets_of<'a>(headers: &[(&str, &'a str)]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (_, v) in headers {
        out.push(*v);
        if let Some((_, token)) = v.split_once(' ') {
            out.push(token.trim());
        }
    }
    out
}

/// Longest server error body kept in an error message.
const MAX_ERROR_BODY: usize = 600;

pub fn build_client(connect_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build HTTP client: {e}")))
}

/// Reads an API key from the environment variable `var`; `None` when unset or empty.
pub fn key_from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().map(|k| k.trim().to_string()).filter(|k| !k.is_empty())
}

/// `Retry-After` in milliseconds: delay-seconds (fractions accepted); HTTP dates are ignored.
fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let raw = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: f64 = raw.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).round() as u64)
}

fn shorten(body: &str) -> String {
    let body = body.trim();
    if body.chars().count() <= MAX_ERROR_BODY {
        return body.to_string();
    }
    let mut s: String = body.chars().take(MAX_ERROR_BODY).collect();
    s.push('…');
    s
}

/// Describes a transport error with its causes, the URL replaced (errors stay short and stable).
fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(url) = e.url() {
        s = s.replace(url.as_str(), "<url>");
    }
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

fn transport_error(e: &reqwest::Error, secrets: &[&str]) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout { seconds: 0 }
    } else {
        LlmError::Transport(redact(&describe(e), secrets))
    }
}

/// Reads a body, refusing to hold more than `limit` bytes of it.
async fn read_capped(mut resp: reqwest::Response, limit: u64, secrets: &[&str]) -> Result<Vec<u8>, LlmError> {
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(LlmError::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport_error(&e, secrets))? {
        if body.len() as u64 + chunk.len() as u64 > limit {
            return Err(LlmError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// POSTs `body` (already serialised JSON) and returns the parsed JSON answer of a 2xx response, with every
/// secret of `headers` masked in it. Answers larger than `max_response_bytes` are refused.
pub async fn post_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: String,
    max_response_bytes: u64,
) -> Result<serde_json::Value, LlmError> {
    let secrets = secrets_of(headers);
    let mut rb = client.post(url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
    for (name, value) in headers {
        rb = rb.header(*name, *value);
    }
    let resp = rb.send().await.map_err(|e| transport_error(&e, &secrets))?;
    let status = resp.status().as_u16();
    let retry_after = retry_after_ms(resp.headers());
    let bytes = read_capped(resp, max_response_bytes, &secrets).await?;
    // Masked as text before anything else sees it: a key echoed in an answer is not recorded either.
    let text = redact_known(&String::from_utf8_lossy(&bytes), &secrets);
    if !(200..300).contains(&status) {
        let body = shorten(&redact(&text, &secrets));
        return Err(match retry_after {
            Some(ms) if status == 429 || status == 503 => LlmError::RateLimited { status, retry_after_ms: ms, body },
            _ => LlmError::Http { status, body },
        });
    }
    serde_json::from_str(&text)
        .map_err(|e| LlmError::Malformed(format!("answer is not JSON ({e}): {}", shorten(&redact(&text, &secrets)))))
}
