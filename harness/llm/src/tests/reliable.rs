//! The robustness wrapper: coalescing, concurrency limit, backoff, accounting.

use super::cache::CountingModel;
use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn reliable(inner: Arc<dyn LanguageModel>, concurrency: usize, attempts: u32) -> (ReliableModel, Arc<UsageLedger>) {
    let ledger = Arc::new(UsageLedger::new());
    let opts = ReliabilityOptions {
        retry: fast_retry(attempts),
        timeout: Some(Duration::from_secs(5)),
        deadline: None,
        concurrency,
        coalesce: true,
    };
    (ReliableModel::new(inner, opts, Arc::clone(&ledger)), ledger)
}

#[tokio::test]
async fn identical_in_flight_requests_share_one_call() {
    let inner = CountingModel::new(Duration::from_millis(200));
    let (model, ledger) = reliable(inner.clone(), 4, 1);
    let req = request("same");
    let (a, b) = tokio::join!(model.generate(&req), model.generate(&req));
    assert_eq!(a.unwrap(), b.unwrap());
    assert_eq!(inner.calls(), 1);
    assert_eq!(ledger.usage_of("counting").coalesced, 1);
    // Different requests are not merged, and a finished request is not reused.
    let (one, two) = (request("one"), request("two"));
    let (c, d) = tokio::join!(model.generate(&one), model.generate(&two));
    assert_ne!(c.unwrap().text, d.unwrap().text);
    model.generate(&req).await.unwrap();
    assert_eq!(inner.calls(), 4);
}

/// Tracks the most calls running at once.
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
}

#[async_trait::async_trait]
impl LanguageModel for Gauge {
    fn spec(&self) -> &str {
        "gauge"
    }
    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        Ok(LlmResponse { text: history::visible_text(&req.contents[0]), ..Default::default() })
    }
}

#[tokio::test]
async fn concurrency_is_limited() {
    let gauge = Arc::new(Gauge { now: AtomicUsize::new(0), peak: AtomicUsize::new(0) });
    let (model, _) = reliable(gauge.clone(), 2, 1);
    let reqs: Vec<_> = (0..6).map(|i| request(&format!("q{i}"))).collect();
    let answers = futures::future::join_all(reqs.iter().map(|r| model.generate(r))).await;
    assert!(answers.iter().all(Result::is_ok));
    assert_eq!(gauge.peak.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn retries_count_and_non_retryable_errors_stop() {
    let flaky = Arc::new(ScriptedModel::with_results(vec![
        Err(LlmError::Transport("reset".into())),
        Err(LlmError::Http { status: 502, body: "".into() }),
        Ok("third time".into()),
    ]));
    let (model, ledger) = reliable(flaky.clone(), 1, 5);
    assert_eq!(model.generate(&request("q")).await.unwrap().text, "third time");
    assert_eq!(ledger.usage_of("scripted").retries, 2);

    for fatal in [
        LlmError::Http { status: 401, body: "".into() },
        LlmError::ContextOverflow { prompt_tokens: 9000, context: 4096 },
        LlmError::Config("x".into()),
    ] {
        let once = Arc::new(ScriptedModel::with_results(vec![Err(fatal.clone()), Ok("never".into())]));
        let (model, _) = reliable(once.clone(), 1, 5);
        assert_eq!(model.generate(&request("q")).await.unwrap_err(), fatal);
        assert_eq!(once.requests().len(), 1);
    }
    let timeout408 = Arc::new(ScriptedModel::with_results(vec![
        Err(LlmError::Http { status: 408, body: "".into() }),
        Ok("ok".into()),
    ]));
    let (model, _) = reliable(timeout408, 1, 5);
    assert_eq!(model.generate(&request("q")).await.unwrap().text, "ok");
}

#[test]
fn backoff_follows_the_reference_schedule() {
    let p = RetryPolicy::default();
    assert_eq!(
        (p.max_attempts, p.initial_delay, p.max_delay, p.jitter),
        (5, Duration::from_secs(5), Duration::from_secs(30), 0.3)
    );
    for _ in 0..200 {
        for (retry, base) in [(1u32, 5.0f64), (2, 10.0), (3, 20.0), (4, 30.0), (9, 30.0)] {
            let d = p.delay_for(retry).as_secs_f64();
            assert!(d >= base * 0.7 - 1e-9 && d <= base * 1.3 + 1e-9, "retry {retry}: {d}");
        }
    }
    let exact = RetryPolicy { jitter: 0.0, ..p };
    assert_eq!(exact.delay_for(2), Duration::from_secs(10));
}

#[tokio::test]
async fn ledger_accounts_tokens_and_cost() {
    let inner = CountingModel::new(Duration::ZERO);
    let (model, ledger) = reliable(inner, 1, 1);
    ledger.set_prices("counting", TokenPrices { input_per_million: 1.0, output_per_million: 10.0 });
    model.generate(&request("a")).await.unwrap();
    model.generate(&request("b")).await.unwrap();
    let u = ledger.usage_of("counting");
    assert_eq!((u.calls, u.prompt_tokens, u.output_tokens, u.errors), (2, 20, 4, 0));
    let cost = u.cost_usd.unwrap();
    assert!((cost - (20.0 * 1.0 + 4.0 * 10.0) / 1e6).abs() < 1e-12, "{cost}");
    assert!(ledger.snapshot().contains_key("counting"));
}
