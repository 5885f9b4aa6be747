//! Replays of real shipped conversations, and the sweep runner's resume / determinism / sharding guarantees.

use compactbench::compress::{CallerKind, CompressSettings, CompressionPrompts, Latch};
use compactbench::datasets;
use compactbench::history;
use compactbench::llm::{ExtractiveModel, ScriptedModel};
use compactbench::replay::{
    replay, strategies, ConversationResult, PromptCountSource, ReplaySettings, StrategySpec, TokenLimit,
};
use compactbench::tokens::Estimator;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{files, repo};

fn conversation(rel: &str) -> datasets::Conversation {
    datasets::load_conversation(&repo().join(rel)).unwrap()
}

fn settings(limit: u64) -> ReplaySettings {
    ReplaySettings {
        token_limit: TokenLimit::Tokens(limit),
        prompt_count_source: PromptCountSource::Heuristic,
        system_prompt_tokens: 2000,
        tool_declaration_tokens: 1000,
        ..ReplaySettings::default()
    }
}

fn gemini(threshold: f64) -> StrategySpec {
    strategies::gemini::spec(
        CompressSettings {
            threshold: Some(threshold),
            prompts: CompressionPrompts::current(),
            ..CompressSettings::default()
        },
        CallerKind::Interactive,
        Latch::Latched,
    )
}

async fn run(conv: &datasets::Conversation, spec: &StrategySpec, s: &ReplaySettings) -> ConversationResult {
    let llm = ExtractiveModel::new();
    replay(conv.replay_input(&conv.meta.id), spec.compressor(), s, &llm).await
}

/// The first model turn whose preceding request reached the threshold, computed straight from the
/// recorded history (what the replay must find without any compression having happened yet).
fn first_trigger(conv: &datasets::Conversation, limit: u64, threshold: f64, overhead: u64) -> Option<usize> {
    let mut prev_request: Option<u64> = None;
    let mut raw = 0.0f64;
    for (i, c) in conv.history.iter().enumerate() {
        if history::is_model(c) {
            if let Some(p) = prev_request {
                if p as f64 >= threshold * limit as f64 {
                    return Some(i);
                }
            }
            prev_request = Some(raw.floor() as u64 + overhead);
        }
        raw += Estimator::Current.content_raw(c);
    }
    None
}

#[tokio::test]
async fn reference_replay_of_a_real_trajectory() {
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let (limit, threshold) = (8192, 0.5);
    let r = run(&conv, &gemini(threshold), &settings(limit)).await;
    assert_eq!(r.error, None);
    assert_eq!(r.requests, conv.history.iter().filter(|c| history::is_model(c)).count());
    let compressed: Vec<_> =
        r.events.iter().filter(|e| e.status == compactbench::compress::CompressionStatus::Compressed).collect();
    assert!(
        compressed.len() >= 2,
        "a 16k-token session in an 8k window compresses repeatedly: {:?}",
        r.events_by_status
    );
    // The first compression fires exactly where the recorded history first crosses the threshold.
    assert_eq!(r.events[0].turn, first_trigger(&conv, limit, threshold, 3000).unwrap());
    for e in &compressed {
        assert!(e.reference_new_tokens < e.reference_original_tokens, "{e:?}");
        // A re-compression that rewrites an identical snapshot leaves the request as it was.
        assert!(e.request_tokens_after <= e.request_tokens_before, "{e:?}");
        assert!(!e.hidden_inflation);
        assert_eq!(e.reduction, 1.0 - e.request_tokens_after as f64 / e.request_tokens_before as f64);
        assert!(e.summarized_contents > 0 && e.summarizer_calls == 2);
        assert!(e.final_summary.as_deref().unwrap().contains("<state_snapshot>"));
    }
    assert!(compressed[0].request_tokens_after < compressed[0].request_tokens_before);
    // Later compressions see the earlier snapshot and anchor on it.
    assert!(!compressed[0].anchored);
    assert!(compressed[1].anchored);
    // Compression saves tokens over the whole replay and keeps every request under the window.
    assert!(r.request_tokens_total < r.none_request_tokens_total);
    assert!(r.peak_request_tokens < r.none_peak_request_tokens);
    insta::assert_json_snapshot!(
        "aider_session_timeline",
        r.events
            .iter()
            .map(|e| (e.turn, e.status, e.reference_original_tokens, e.reference_new_tokens))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_single_task_tool_loop_has_no_split_point() {
    // One user task followed only by tool responses: the only split candidate is index 0, so the reference returns NOOP
    // at every request however large the history grows (`findCompressSplitPoint`, then `compress` returns NOOP when
    // nothing is before the split).
    let conv = conversation("datasets/mini-swe-agent/django__django-11099.json");
    let r = run(&conv, &gemini(0.5), &settings(16_384)).await;
    assert!(r.events.is_empty(), "{:?}", r.events_by_status);
    assert_eq!(r.events_by_status.get(compactbench::compress::CompressionStatus::Noop), r.requests as u64);
    assert!(r.overflow_guard_refusals > 0, "the window overflows instead");
}

#[tokio::test]
async fn none_strategy_is_the_uncompressed_baseline() {
    let conv = conversation("datasets/tau-bench/task000-trial0.json");
    let r = run(&conv, &strategies::none::spec(), &settings(4096)).await;
    assert!(r.events.is_empty());
    assert_eq!(r.request_tokens_total, r.none_request_tokens_total);
    assert_eq!(r.cached_request_tokens_total, r.none_cached_request_tokens_total);
    assert_eq!(r.peak_request_tokens, r.none_peak_request_tokens);
    // The recorded system prompt is part of every request.
    let system = compactbench::tokens::o200k_count_text(conv.system_instruction.as_deref().unwrap());
    assert!(r.request_tokens[0] > system + 1000, "{} vs {system}", r.request_tokens[0]);
    // The stored history is kept curated (consecutive same-role turns merged, as the reference does) and
    // ends with the last model turn: user turns after it were never sent.
    let last_model = conv.history.iter().rposition(history::is_model).unwrap();
    let curated = compactbench::compress::curated::curated_history(&conv.history[..=last_model]);
    assert_eq!(r.final_history_contents, curated.len());
}

#[tokio::test]
async fn drop_oldest_keeps_the_window_and_cuts_at_user_turns() {
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let spec =
        strategies::drop_oldest::spec(strategies::drop_oldest::DropOldestParams { threshold: 0.5, keep_fraction: 0.3 });
    let r = run(&conv, &spec, &settings(8192)).await;
    assert!(!r.events.is_empty());
    for e in &r.events {
        assert_eq!(e.status, compactbench::compress::CompressionStatus::Compressed);
        assert!(e.reference_new_tokens as f64 <= 0.3 * 8192.0 + 1.0, "{e:?}");
    }
}

#[tokio::test]
async fn an_llm_failure_is_recorded_and_stops_only_that_replay() {
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let llm = ScriptedModel::with_results(vec![Err(compactbench::llm::LlmError::Timeout { seconds: 1 })]);
    let r = replay(conv.replay_input("x"), gemini(0.5).compressor(), &settings(8192), &llm).await;
    let e = r.error.expect("the summarizer timed out");
    assert_eq!(e.kind(), compactbench::replay::ReplayErrorKind::Model, "a summarizer failure is the model's: {e}");
    assert!(e.to_string().contains("timed out"), "{e}");
}

// --- the runner, through the binary -------------------------------------------------------------------

const SMALL: &str = r#"
name = "small"
datasets = ["datasets/aider", "datasets/tau-bench"]
max_conversations = 6
concurrency = 2
[replay]
token_limit = 4096
prompt_count_source = "heuristic"
system_prompt_tokens = 500
[llm]
cache_mode = "off"
[grid]
strategy = ["gemini", "truncation-only", "drop-oldest", "none"]
summarizer = ["extractive"]
threshold = [0.5, 0.7]
"#;

fn compactbench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_compactbench")).args(args).current_dir(repo()).output().unwrap()
}

/// Paths present on one side only or with different contents.
fn differing(a: &[(PathBuf, String)], b: &[(PathBuf, String)]) -> Vec<String> {
    let ma: std::collections::BTreeMap<_, _> = a.iter().cloned().collect();
    let mb: std::collections::BTreeMap<_, _> = b.iter().cloned().collect();
    ma.keys()
        .chain(mb.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| ma.get(*k) != mb.get(*k))
        .map(|k| k.display().to_string())
        .collect()
}

fn run_small(cfg: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "--quiet", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend(extra);
    compactbench(&args)
}

#[test]
fn sweep_is_deterministic_resumable_and_shardable() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("small.toml");
    std::fs::write(&cfg, SMALL).unwrap();

    // Two uninterrupted runs are byte-identical.
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    for d in [&a, &b] {
        let out = run_small(&cfg, d, &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let fa = files(&a);
    assert!(fa.iter().filter(|(p, _)| p.starts_with("cells")).count() >= 40);
    let summary = std::fs::read_to_string(a.join("summary.json")).unwrap();
    assert!(summary.contains("\"COMPRESSED\""), "the small sweep compresses something");
    assert_eq!(differing(&fa, &files(&b)), Vec::<String>::new());

    // A run killed midway resumes and ends equal to the uninterrupted one.
    let k = tmp.path().join("killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .args(["run", "--quiet", "--config", cfg.to_str().unwrap(), "--out", k.to_str().unwrap()])
        .current_dir(repo())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        let n = std::fs::read_dir(k.join("cells")).map(|d| d.count()).unwrap_or(0);
        if n > 0 || started.elapsed().as_secs() > 60 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = files(&k).iter().filter(|(p, _)| p.starts_with("cells")).count();
    let out = run_small(&cfg, &k, &[]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already done"), "{stderr}");
    assert_eq!(differing(&files(&k), &fa), Vec::<String>::new(), "resumed after {partial} stored cell files");

    // Three shards merged equal the unsharded run.
    let mut shard_dirs = Vec::new();
    for i in 1..=3 {
        let d = tmp.path().join(format!("shard{i}"));
        let out = run_small(&cfg, &d, &["--shard", &format!("{i}/3")]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        shard_dirs.push(d);
    }
    let merged = tmp.path().join("merged");
    let mut args = vec!["merge".to_string(), "--out".into(), merged.to_string_lossy().into_owned()];
    args.extend(shard_dirs.iter().map(|d| d.to_string_lossy().into_owned()));
    let out = compactbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(differing(&files(&merged), &fa), Vec::<String>::new());

    // Resuming into a directory of another plan is refused with exit 2.
    std::fs::write(&cfg, SMALL.replace("max_conversations = 6", "max_conversations = 3")).unwrap();
    let out = run_small(&cfg, &a, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another plan"));
}

#[test]
fn config_errors_name_the_key_and_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("bad.toml");
    std::fs::write(&cfg, SMALL.replace("[grid]", "[grid]\nthreshhold = [0.5]")).unwrap();
    let out = run_small(&cfg, &tmp.path().join("o"), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("bad.toml") && err.contains("threshhold"), "{err}");
}

/// The relative window of `configs/stress-storm.toml` (`peak:0.6`) puts the trigger at or below the first
/// request of most tau-bench conversations (system prompt + tools + first turn), and the reference then
/// compresses at most requests, most compressions leaving the request above the trigger. The default
/// `overhead+peak:0.6` keeps every trigger above the first request and compresses far less often.
#[test]
fn the_stress_window_storms_on_tau_bench_and_the_default_window_does_not() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(repo().join("datasets/tau-bench"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("manifest.json"))
        .collect();
    paths.sort();
    let conversations: Vec<datasets::Conversation> =
        paths.iter().map(|p| datasets::load_conversation(p).unwrap()).collect();
    let llm = ExtractiveModel::new();
    // The reference's default point, as the default config sweeps it.
    let config = compactbench::sweep::config::SweepConfig::load(&repo().join("configs/default.toml")).unwrap();
    let reference = config.points().unwrap().into_iter().next().unwrap();
    assert_eq!(reference.strategy.kind(), "gemini");
    let tally = |window: TokenLimit| {
        let settings = ReplaySettings { token_limit: window, ..config.replay.clone() };
        let (mut below, mut storms, mut compressions, mut requests) = (0, 0, 0, 0);
        for c in &conversations {
            let r = futures::executor::block_on(compactbench::replay::replay_spec(
                c.replay_input(&c.meta.id),
                &reference.strategy,
                &settings,
                &llm,
                &mut compactbench::replay::NoObserver,
            ));
            assert!(r.error.is_none(), "{:?}", r.error);
            assert_eq!(r.trigger_tokens, Some((0.5 * r.token_limit as f64).ceil() as u64));
            below += r.trigger_below_first_request() as u64;
            storms += r.storm_events();
            compressions += r.compressions().count() as u64;
            requests += r.requests as u64;
        }
        (below, storms, compressions, requests)
    };
    let (below, storms, compressions, requests) = tally(TokenLimit::PeakFraction(0.6));
    assert!(below * 2 > conversations.len() as u64, "{below} of {}", conversations.len());
    assert!(compressions * 2 > requests && storms * 4 > compressions * 3, "{storms}/{compressions}/{requests}");
    let (below, storms, compressions, requests) = tally(TokenLimit::FixedPlusGrowth(0.6));
    assert_eq!(below, 0);
    assert!(compressions * 4 <= requests && storms * 4 < compressions.max(1), "{storms}/{compressions}/{requests}");
}
