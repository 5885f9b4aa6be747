//! Issue #28: model calls scale out within one process. Against a loopback OpenAI-compatible server that
//! answers after 200 ms, 8 requests in flight finish at least 6× sooner than 1; the bound holds (the server
//! never sees more than 8 at once); and the record/replay cache stays exact under concurrency: one recording
//! per distinct request, duplicates in flight coalesced, nothing lost.

use super::*;
use std::time::Instant;

const LATENCY: Duration = Duration::from_millis(200);
const DISTINCT: usize = 32;

/// `DISTINCT` requests, each asked twice at once, through a cached model allowing `in_flight` calls.
async fn ask_all(server: &MockServer, in_flight: usize, cache: &std::path::Path) -> Duration {
    let mut opts = test_options(1);
    opts.reliability.concurrency = in_flight;
    opts.cache_dir = Some(cache.to_path_buf());
    opts.cache_mode = crate::CacheMode::ReadWrite;
    let model = from_spec(&format!("openai:m@{}/v1", server.base), &opts).unwrap();
    let requests: Vec<LlmRequest> = (0..DISTINCT).map(|i| request(&format!("question {i}"))).collect();
    let start = Instant::now();
    let answers = futures::future::join_all(requests.iter().chain(&requests).map(|r| model.generate(r))).await;
    let elapsed = start.elapsed();
    assert!(answers.iter().all(|a| a.as_ref().is_ok_and(|a| a.text == "ok")), "every call answered");
    elapsed
}

fn recordings(dir: &std::path::Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                n += 1;
            }
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_in_flight_is_six_times_faster_than_one_bounded_and_recorded_once() {
    let tmp = tempfile::tempdir().unwrap();
    let one = MockServer::start(vec![Reply::json(openai_answer("ok")).delayed(LATENCY)]).await;
    let serial = ask_all(&one, 1, &tmp.path().join("one")).await;
    assert_eq!(one.max_in_flight(), 1);
    let eight = MockServer::start(vec![Reply::json(openai_answer("ok")).delayed(LATENCY)]).await;
    let parallel = ask_all(&eight, 8, &tmp.path().join("eight")).await;
    assert_eq!(eight.max_in_flight(), 8, "the bound is reached and never passed");
    let speedup = serial.as_secs_f64() / parallel.as_secs_f64();
    assert!(speedup >= 6.0, "8 in flight: {parallel:?}, 1 in flight: {serial:?} ({speedup:.1}×)");
    // Each distinct request reached the server once (its twin coalesced) and was recorded once.
    for (server, dir) in [(&one, "one"), (&eight, "eight")] {
        assert_eq!(server.calls(), DISTINCT);
        assert_eq!(recordings(&tmp.path().join(dir)), DISTINCT, "{dir}: one recording per distinct request");
    }
    // Replayed, nothing reaches the server.
    let again = ask_all(&eight, 8, &tmp.path().join("eight")).await;
    assert_eq!(eight.calls(), DISTINCT, "replayed from the cache in {again:?}");
}
