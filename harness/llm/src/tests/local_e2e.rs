//! End to end with the real embedded model: fetched on first use through the same code path as
//! `compactbench models fetch`, then asked the same short question twice.

use super::*;

fn model_dir() -> std::path::PathBuf {
    match std::env::var_os("COMPACTBENCH_MODEL_DIR") {
        Some(d) if !d.is_empty() => d.into(),
        _ => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join("models"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_model_is_deterministic() {
    let mut opts = BackendOptions { model_dir: model_dir(), auto_fetch: true, threads: Some(1), ..test_options(1) };
    opts.reliability.timeout = Some(Duration::from_secs(600));
    let model = from_spec(DEFAULT_MODEL_SPEC, &opts).expect("embedded model loads (fetching it when absent)");
    let mut req = request("Name one primary colour.");
    req.params = GenerationParams { max_output_tokens: Some(16), temperature: None, stop: vec![] };
    let first = model.generate(&req).await.unwrap();
    // Coalescing would hide a second computation; change only the label so the same prompt is recomputed.
    let mut again = req.clone();
    again.label.prompt_id = "again".into();
    tokio::time::sleep(Duration::from_millis(1)).await;
    let second = model.generate(&again).await.unwrap();
    eprintln!("embedded model answered {:?}", first.text);
    assert!(!first.text.trim().is_empty());
    assert_eq!(first, second);
    assert!(first.usage.output_tokens <= 16 && first.usage.prompt_tokens > 0);
    assert_eq!(opts.ledger.usage_of(DEFAULT_MODEL_SPEC).calls, 2);

    // Stop strings cut the answer.
    let mut stopped = req.clone();
    let half = first.text.chars().count() / 2;
    stopped.params.stop = vec![first.text.chars().skip(half).take(3).collect()];
    let cut = model.generate(&stopped).await.unwrap();
    assert!(cut.text.len() < first.text.len(), "{:?} vs {:?}", cut.text, first.text);

    // A prompt beyond the usable context is an error for that call only.
    let mut huge = req.clone();
    huge.contents = vec![history::user_text(&"lorem ipsum dolor ".repeat(2500))];
    let err = model.generate(&huge).await.unwrap_err();
    assert!(matches!(err, LlmError::ContextOverflow { context: 4096, .. }), "{err:?}");
    assert_eq!(model.generate(&req).await.unwrap(), first);
    assert!(model.count_tokens(&req).await.unwrap().unwrap() == first.usage.prompt_tokens);
}
