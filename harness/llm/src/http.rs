//! Shared HTTP plumbing of the REST backends: one POST of a JSON body, errors mapped to [`LlmError`] without
//! ever echoing request headers (the API key lives only there).

use crate::LlmError;
use std::time::Duration;

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

fn transport_error(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout { seconds: 0 }
    } else {
        LlmError::Transport(describe(e))
    }
}

/// POSTs `body` (already serialised JSON) and returns the parsed JSON answer of a 2xx response.
pub async fn post_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: String,
) -> Result<serde_json::Value, LlmError> {
    let mut rb = client.post(url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
    for (name, value) in headers {
        rb = rb.header(*name, *value);
    }
    let resp = rb.send().await.map_err(|e| transport_error(&e))?;
    let status = resp.status().as_u16();
    let retry_after = retry_after_ms(resp.headers());
    let text = resp.text().await.map_err(|e| transport_error(&e))?;
    if !(200..300).contains(&status) {
        let body = shorten(&text);
        return Err(match retry_after {
            Some(ms) if status == 429 || status == 503 => LlmError::RateLimited { status, retry_after_ms: ms, body },
            _ => LlmError::Http { status, body },
        });
    }
    serde_json::from_str(&text)
        .map_err(|e| LlmError::Malformed(format!("answer is not JSON ({e}): {}", shorten(&text))))
}
