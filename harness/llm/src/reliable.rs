//! Robustness around a backend: a concurrency limit, a per-call timeout, retries with exponential backoff
//! and jitter (the reference's `retryWithBackoff` defaults), coalescing of identical in-flight requests, and
//! usage accounting in a shared [`UsageLedger`]. Token counts (`count_tokens`) get the same limit, timeout
//! and retries, and count as calls of no tokens.

use super::cache::request_hash;
use crate::{LanguageModel, LlmError, LlmRequest, LlmResponse, Usage};
use async_trait::async_trait;
use futures::future::{BoxFuture, FutureExt, Shared};
use rand::Rng;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Retry behaviour. Defaults are the reference's (`retryWithBackoff`, `packages/core/src/utils/retry.ts`): 5 attempts,
/// 5 s doubling to 30 s, ±30 % jitter, empty answers retried.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
    /// Fraction of the delay added or removed at random (0.3 = ±30 %).
    pub jitter: f64,
    pub retry_empty_answers: bool,
    /// Upper bound on a server's `Retry-After` (60 s by default), so a hostile header cannot stall a run.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            initial_delay: Duration::from_millis(5000),
            max_delay: Duration::from_millis(30000),
            jitter: 0.3,
            retry_empty_answers: true,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (1-based), jitter included.
    pub fn delay_for(&self, retry: u32) -> Duration {
        let base = self.initial_delay.as_secs_f64() * 2f64.powi(retry.saturating_sub(1).min(30) as i32);
        let base = base.min(self.max_delay.as_secs_f64());
        let jitter = if self.jitter > 0.0 { rand::rng().random_range(-self.jitter..=self.jitter) } else { 0.0 };
        Duration::from_secs_f64((base * (1.0 + jitter)).max(0.0))
    }
}

/// Whether an error is worth another attempt: transport failures, timeouts, throttling, server errors and
/// malformed answers are; client errors (4xx other than 408/429), cache and configuration errors are not.
pub fn is_retryable(e: &LlmError) -> bool {
    match e {
        LlmError::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
        // An oversized answer is retried like a malformed one: a sampling model may answer shorter next time.
        LlmError::RateLimited { .. }
        | LlmError::Timeout { .. }
        | LlmError::Transport(_)
        | LlmError::Malformed(_)
        | LlmError::TooLarge { .. } => true,
        _ => false,
    }
}

/// Price of a model per million tokens (USD), for cost accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct TokenPrices {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

/// Accumulated usage of one model spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SpecUsage {
    /// Backend calls that returned an answer.
    pub calls: u64,
    /// Requests answered from the record/replay cache.
    pub cache_hits: u64,
    /// Requests answered by joining an identical in-flight request.
    pub coalesced: u64,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub thought_tokens: u64,
    /// Failed attempts (each retry follows one).
    pub errors: u64,
    pub retries: u64,
    /// Requests that failed after all attempts.
    pub failed_requests: u64,
    pub latency_ms: u64,
    pub cost_usd: Option<f64>,
}

/// Usage of all models in a run, shared by every wrapper that reports into it.
#[derive(Debug, Default)]
pub struct UsageLedger {
    by_spec: Mutex<BTreeMap<String, SpecUsage>>,
    prices: Mutex<HashMap<String, TokenPrices>>,
}

impl UsageLedger {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the price used for future calls of `spec`.
    pub fn set_prices(&self, spec: &str, prices: TokenPrices) {
        self.prices.lock().expect("ledger lock").insert(spec.to_string(), prices);
    }

    fn with<R>(&self, spec: &str, f: impl FnOnce(&mut SpecUsage) -> R) -> R {
        let mut m = self.by_spec.lock().expect("ledger lock");
        f(m.entry(spec.to_string()).or_default())
    }

    pub fn record_call(&self, spec: &str, usage: &Usage, latency: Duration) {
        let price = self.prices.lock().expect("ledger lock").get(spec).copied();
        self.with(spec, |u| {
            u.calls += 1;
            u.prompt_tokens += usage.prompt_tokens;
            u.output_tokens += usage.output_tokens;
            u.thought_tokens += usage.thought_tokens;
            u.latency_ms += latency.as_millis() as u64;
            if let Some(p) = price {
                let cost = usage.prompt_tokens as f64 * p.input_per_million / 1e6
                    + (usage.output_tokens + usage.thought_tokens) as f64 * p.output_per_million / 1e6;
                *u.cost_usd.get_or_insert(0.0) += cost;
            }
        })
    }

    pub fn record_error(&self, spec: &str) {
        self.with(spec, |u| u.errors += 1)
    }

    pub fn record_retry(&self, spec: &str) {
        self.with(spec, |u| u.retries += 1)
    }

    pub fn record_failure(&self, spec: &str) {
        self.with(spec, |u| u.failed_requests += 1)
    }

    pub fn record_cache_hit(&self, spec: &str) {
        self.with(spec, |u| u.cache_hits += 1)
    }

    pub fn record_coalesced(&self, spec: &str) {
        self.with(spec, |u| u.coalesced += 1)
    }

    /// A copy of the usage of every spec seen so far.
    pub fn snapshot(&self) -> BTreeMap<String, SpecUsage> {
        self.by_spec.lock().expect("ledger lock").clone()
    }

    /// The usage of one spec (zeroes when never seen).
    pub fn usage_of(&self, spec: &str) -> SpecUsage {
        self.by_spec.lock().expect("ledger lock").get(spec).cloned().unwrap_or_default()
    }
}

/// Settings of a [`ReliableModel`].
#[derive(Clone, Debug)]
pub struct ReliabilityOptions {
    pub retry: RetryPolicy,
    /// Limit on one attempt; `None` waits forever.
    pub timeout: Option<Duration>,
    /// Limit on one call, all attempts and waits between them included; `None`: only the attempts' limits.
    pub deadline: Option<Duration>,
    /// Concurrent backend calls allowed.
    pub concurrency: usize,
    pub coalesce: bool,
}

impl Default for ReliabilityOptions {
    fn default() -> Self {
        ReliabilityOptions {
            retry: RetryPolicy::default(),
            timeout: Some(Duration::from_secs(300)),
            deadline: Some(Duration::from_secs(900)),
            concurrency: 4,
            coalesce: true,
        }
    }
}

type SharedCall = Shared<BoxFuture<'static, Result<LlmResponse, LlmError>>>;

struct Core {
    inner: Arc<dyn LanguageModel>,
    opts: ReliabilityOptions,
    permits: Semaphore,
    ledger: Arc<UsageLedger>,
}

/// A backend wrapped with concurrency limit, timeout, retries, coalescing and accounting.
pub struct ReliableModel {
    core: Arc<Core>,
    in_flight: Mutex<HashMap<String, SharedCall>>,
}

impl ReliableModel {
    pub fn new(inner: Arc<dyn LanguageModel>, opts: ReliabilityOptions, ledger: Arc<UsageLedger>) -> Self {
        let permits = Semaphore::new(opts.concurrency.max(1));
        ReliableModel { core: Arc::new(Core { inner, opts, permits, ledger }), in_flight: Mutex::default() }
    }

    pub fn ledger(&self) -> &Arc<UsageLedger> {
        &self.core.ledger
    }
}

impl Core {
    /// One attempt of `call` under a permit and the timeout; `usage` reads what a success used.
    async fn attempt<T>(
        &self,
        call: BoxFuture<'_, Result<T, LlmError>>,
        remaining: Option<Duration>,
        usage: fn(&T) -> Usage,
    ) -> Result<T, LlmError> {
        let _permit = self.permits.acquire().await.map_err(|_| LlmError::Other("backend closed".into()))?;
        let started = Instant::now();
        let limit = match (self.opts.timeout, remaining) {
            (Some(t), Some(r)) => Some(t.min(r)),
            (t, r) => t.or(r),
        };
        let result = match limit {
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(r) => r,
                Err(_) => Err(LlmError::Timeout { seconds: limit.as_secs_f64().ceil() as u64 }),
            },
            None => call.await,
        };
        if let Ok(answer) = &result {
            self.ledger.record_call(self.inner.spec(), &usage(answer), started.elapsed());
        }
        result
    }

    async fn call_with_retries(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let empty = |r: &LlmResponse| r.text.trim().is_empty();
        self.retrying(|| self.inner.generate(req), empty, |r| r.usage).await
    }

    /// A token count, retried like a generation (a count has no empty answer; it uses no tokens).
    async fn count_with_retries(&self, req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        self.retrying(|| self.inner.count_tokens(req), |_| false, |_| Usage::default()).await
    }

    /// Calls `call` until it succeeds, fails for good, or the attempts or the deadline run out. `empty`
    /// says whether an answer is empty (retried like an error when the policy says so).
    async fn retrying<'a, T>(
        &self,
        call: impl Fn() -> BoxFuture<'a, Result<T, LlmError>> + Send + Sync,
        empty: fn(&T) -> bool,
        usage: fn(&T) -> Usage,
    ) -> Result<T, LlmError> {
        let spec = self.inner.spec();
        let policy = &self.opts.retry;
        let attempts = policy.max_attempts.max(1);
        let started = Instant::now();
        let deadline = self.opts.deadline;
        let mut attempt = 1;
        loop {
            let remaining = deadline.map(|d| d.saturating_sub(started.elapsed()));
            // `None` stands for an empty answer, which the reference retries like an error.
            let err: Option<LlmError> = match self.attempt(call(), remaining, usage).await {
                Ok(answer) if policy.retry_empty_answers && empty(&answer) => None,
                Ok(answer) => return Ok(answer),
                Err(e) => Some(e),
            };
            self.ledger.record_error(spec);
            let retryable = err.as_ref().is_none_or(is_retryable);
            if !retryable || attempt >= attempts {
                self.ledger.record_failure(spec);
                return Err(match err {
                    Some(e) => e,
                    None => {
                        LlmError::RetriesExhausted { attempts: attempt, last: "empty or whitespace-only answer".into() }
                    }
                });
            }
            let delay = match &err {
                Some(LlmError::RateLimited { retry_after_ms, .. }) => {
                    Duration::from_millis(*retry_after_ms).min(policy.max_retry_after)
                }
                _ => policy.delay_for(attempt),
            };
            if let Some(d) = deadline.filter(|d| started.elapsed() + delay >= *d) {
                self.ledger.record_failure(spec);
                let last = err.map(|e| e.to_string()).unwrap_or_else(|| "empty or whitespace-only answer".into());
                return Err(LlmError::RetriesExhausted {
                    attempts: attempt,
                    last: format!(
                        "the call's deadline of {} s leaves no time for another attempt; last: {last}",
                        d.as_secs()
                    ),
                });
            }
            tracing::debug!(spec, attempt, ?delay, error = ?err, "retrying LLM call");
            self.ledger.record_retry(spec);
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }
}

#[async_trait]
impl LanguageModel for ReliableModel {
    fn spec(&self) -> &str {
        self.core.inner.spec()
    }

    fn cache_identity(&self) -> String {
        self.core.inner.cache_identity()
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        if !self.core.opts.coalesce {
            return self.core.call_with_retries(req).await;
        }
        let key = request_hash(&self.core.inner.cache_identity(), req);
        let (call, leader) = {
            let mut map = self.in_flight.lock().expect("in-flight lock");
            match map.get(&key) {
                Some(existing) => (existing.clone(), false),
                None => {
                    let core = Arc::clone(&self.core);
                    let owned = req.clone();
                    let call: SharedCall = async move { core.call_with_retries(&owned).await }.boxed().shared();
                    map.insert(key.clone(), call.clone());
                    (call, true)
                }
            }
        };
        if !leader {
            self.core.ledger.record_coalesced(self.spec());
        }
        let result = call.clone().await;
        let mut map = self.in_flight.lock().expect("in-flight lock");
        if map.get(&key).is_some_and(|c| c.ptr_eq(&call)) {
            map.remove(&key);
        }
        result
    }

    /// Counts under the same permits, timeout and retries as generations (not coalesced: the replay's
    /// counter already waits for one count of each Content).
    async fn count_tokens(&self, req: &LlmRequest) -> Result<Option<u64>, LlmError> {
        self.core.count_with_retries(req).await
    }
}
