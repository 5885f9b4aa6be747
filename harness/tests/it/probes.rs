//! Probes on shipped conversations: extraction, retention under `none` and `drop-oldest`, the observer.

use compactbench::data::ProbeOrigin;
use compactbench::datasets;
use compactbench::llm::ExtractiveModel;
use compactbench::probes::{self, extract, text_match, ProbeObserver, ProbeOptions};
use compactbench::replay::{
    replay_observed, strategies, PromptCountSource, ReplayInput, ReplaySettings, StrategySpec, TokenLimit, Tokenizer,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn conversation(rel: &str) -> datasets::Conversation {
    datasets::load_conversation(&repo().join(rel)).unwrap()
}

const SAMPLES: &[&str] = &[
    "datasets/aider/chat-history-2024-08-13-13-42-45.json",
    "datasets/tau-bench/task003-trial0.json",
    "datasets/mini-swe-agent/django__django-11099.json",
    "datasets/swe-agent/marshmallow-code__marshmallow-1867.json",
];

fn settings(limit: u64) -> ReplaySettings {
    ReplaySettings {
        token_limit: TokenLimit::Tokens(limit),
        prompt_count_source: PromptCountSource::Heuristic,
        tokenizer: Tokenizer::Heuristic,
        ..ReplaySettings::default()
    }
}

async fn observe(
    conv: &datasets::Conversation,
    spec: &StrategySpec,
    limit: u64,
    answer: bool,
) -> compactbench::data::ProbeResults {
    let probes = extract::extract(conv);
    let answerer: Option<Arc<dyn compactbench::llm::LanguageModel>> =
        answer.then(|| Arc::new(ExtractiveModel::new()) as Arc<dyn compactbench::llm::LanguageModel>);
    observe_probes(conv, probes, spec, limit, answerer).await.1
}

async fn observe_probes(
    conv: &datasets::Conversation,
    probes: Vec<probes::Probe>,
    spec: &StrategySpec,
    limit: u64,
    answerer: Option<Arc<dyn compactbench::llm::LanguageModel>>,
) -> (compactbench::replay::ConversationResult, compactbench::data::ProbeResults) {
    let mut obs = ProbeObserver::new(&conv.meta.id, probes, answerer, None, ProbeOptions::default())
        .with_recording(&conv.history);
    // Without the recorded system prompt: requests are the history alone.
    let input = ReplayInput { system_instruction: None, ..conv.replay_input(&conv.meta.id) };
    let r = replay_observed(input, spec.compressor(), &settings(limit), &ExtractiveModel::new(), &mut obs).await;
    assert_eq!(r.error, None);
    (r, obs.into_results())
}

fn cell(
    conv: &datasets::Conversation,
    point: &str,
    result: compactbench::replay::ConversationResult,
    probes: compactbench::data::ProbeResults,
) -> compactbench::data::CellResult {
    compactbench::data::CellResult {
        cell: compactbench::data::Cell { point: point.into(), conversation: conv.meta.id.clone(), repeat: 0 },
        source: conv.meta.source.clone(),
        result,
        probes: Some(probes),
        transient_failure: false,
        plan: String::new(),
        digest: String::new(),
    }
}

/// Early-only probes are a fixed set per conversation that `none` keeps by construction; drop-oldest puts
/// probes at risk at its compressions and, keeping no snapshot, retains none of them.
#[tokio::test]
async fn early_only_set_is_fixed_none_keeps_it_and_drop_oldest_loses_its_at_risk_probes() {
    use compactbench::metrics::{probe_figures, FigureId};
    use compactbench::probes::figures;
    let (mut none_cells, mut drop_cells) = (Vec::new(), Vec::new());
    for rel in SAMPLES {
        let conv = conversation(rel);
        let (r, none) =
            observe_probes(&conv, extract::extract(&conv), &strategies::none::spec(), 1_000_000, None).await;
        let flags = |p: &compactbench::data::ProbeResults| -> Vec<(String, Option<bool>)> {
            p.at_end().unwrap().scores.iter().map(|s| (s.probe.clone(), s.early_only)).collect()
        };
        let end = none.at_end().unwrap();
        assert!(end.scores.iter().all(|s| s.at_risk == Some(false)), "{rel}: `none` drops nothing");
        assert!(end.scores.iter().filter(|s| s.early_only == Some(true)).all(|s| s.retained), "{rel}");
        let spec = strategies::drop_oldest::spec(strategies::drop_oldest::DropOldestParams {
            threshold: 0.5,
            keep_fraction: 0.3,
        });
        let (dr, dropped) = observe_probes(&conv, extract::extract(&conv), &spec, 4096, None).await;
        assert_eq!(flags(&none), flags(&dropped), "{rel}: the early-only set does not depend on the strategy");
        none_cells.push(cell(&conv, "none", r, none));
        drop_cells.push(cell(&conv, "drop", dr, dropped));
    }
    let none_refs: Vec<_> = none_cells.iter().collect();
    let drop_refs: Vec<_> = drop_cells.iter().collect();
    let n = probe_figures::point_figures(&none_refs, "none").unwrap();
    let (n_early, n_at_risk) = (n.rate(FigureId::EarlyOnlyRetention), n.rate(FigureId::AtRiskRetention));
    assert!(n_early.n > 0, "some shipped probes are early-only");
    assert_eq!(n_early.value, Some(1.0));
    assert_eq!(n_at_risk.n, 0);
    let d = probe_figures::point_figures(&drop_refs, "drop-oldest").unwrap();
    let (d_early, d_at_risk) = (d.rate(FigureId::EarlyOnlyRetention), d.rate(FigureId::AtRiskRetention));
    // Drop-oldest drops evidence (the observer flags probes at risk) but writes no summary that could keep
    // it: at-risk retention does not apply to it (it would be 0 by construction).
    let flagged = drop_cells.iter().flat_map(|c| &c.probes.as_ref().unwrap().checkpoints).flat_map(|k| &k.scores);
    assert!(flagged.filter(|s| s.at_risk == Some(true)).count() > 0, "drop-oldest puts probes at risk");
    assert_eq!((d_at_risk.n, d_at_risk.value), (0, None), "not applicable, not 0");
    assert!(d_early.value.unwrap() < 1.0);
    assert_eq!(d_early.n, n_early.n);
    // Ordinal breakdown: early-only probes right after the first compression are counted.
    assert!(d
        .breakdown
        .iter()
        .any(|b| b.by == "ordinal" && b.value == "1" && b.figure == FigureId::EarlyOnlyRetention));
    // Per-conversation tallies (what `metrics` pools) are the rows' own counts.
    for c in &drop_cells {
        let rows = figures::cell_rows(c, "drop-oldest");
        let early: Vec<_> = rows
            .iter()
            .filter(|r| r.moment == compactbench::probes::figures::Moment::End && r.early_only == Some(true))
            .collect();
        let tally = probe_figures::conversation_tally(c, FigureId::EarlyOnlyRetention);
        if !early.is_empty() {
            let (hits, n) = tally.expect("early-only probes were scored");
            let share = early.iter().filter(|r| r.retained).count() as f64 / early.len() as f64;
            assert_eq!(hits / n, share);
            assert_eq!(n, early.len() as f64);
        }
    }
}

#[test]
fn extractor_is_deterministic_and_keeps_evidence_before_the_tail() {
    for rel in SAMPLES {
        let conv = conversation(rel);
        let a = probes::probe_file_bytes(&extract::extract_file(&conv));
        let b = probes::probe_file_bytes(&extract::extract_file(&conversation(rel)));
        assert_eq!(a, b, "{rel}");
        let probes = extract::extract(&conv);
        assert!(!probes.is_empty(), "{rel}: no probe");
        // Questions a reader could answer (#44): no turn number, no empty hint, no gold cut mid-phrase, no
        // question asked twice.
        let lints = compactbench::probes::lint::lint_conversation(&probes, None, Some(&conv));
        let wrong: Vec<String> = lints
            .iter()
            .filter(|l| {
                use compactbench::data::LintKind::*;
                matches!(l.kind, TurnNumber | EmptyHint | FragmentGold | DuplicateQuestion)
            })
            .map(|l| l.to_string())
            .collect();
        assert!(wrong.is_empty(), "{rel}: {wrong:?}");
        let boundary = extract::removable_before(&conv.history);
        let hay = text_match::history_haystack(&conv.history);
        for p in &probes {
            assert!(p.evidence.iter().all(|&e| e < boundary), "{rel} {}", p.id);
            assert!(hay.contains(&p.gold), "{rel} {}: gold `{}` not in the conversation", p.id, p.gold);
            assert!(p.source == ProbeOrigin::Auto);
        }
    }
}

#[test]
fn shipped_probe_files_match_the_extractor_and_load() {
    for rel in SAMPLES {
        let conv = conversation(rel);
        let dir = repo().join("datasets/probes");
        let stored =
            std::fs::read(probes::probe_path(&dir, &conv.meta.source, &conv.meta.id, ProbeOrigin::Auto)).unwrap();
        // The extractor lints against every conversation of the source.
        let source_dir = repo().join("datasets").join(&conv.meta.source);
        let files = datasets::find_conversations(&[source_dir]).unwrap();
        let convs: Vec<datasets::Conversation> =
            files.iter().map(|f| datasets::load_conversation(f).unwrap()).collect();
        let refs: Vec<&datasets::Conversation> = convs.iter().collect();
        let corpus = extract::extract_corpus(&refs);
        let mine = corpus.iter().find(|f| f.conversation == conv.meta.id).unwrap();
        assert_eq!(stored, probes::probe_file_bytes(mine), "{rel}: re-run `probes extract`");
        let all = probes::load_probes(&dir, &conv.meta.source, &conv.meta.id, ProbeOrigin::ALL, conv.history.len());
        assert!(all.is_ok(), "{rel}: {:?}", all.err());
        // Scoring leaves out exactly the probes a lint marks.
        let (kept, lints) =
            probes::load_scored_probes(&dir, &conv.meta.source, &conv.meta.id, ProbeOrigin::ALL, &conv).unwrap();
        let all = all.unwrap();
        assert_eq!(
            kept.len() + lints.iter().map(|l| &l.probe).collect::<std::collections::BTreeSet<_>>().len(),
            all.len()
        );
        assert!(kept.iter().all(|p| lints.iter().all(|l| l.probe != p.id)));
    }
}

/// No shipped auto probe shares its gold with a probe of another conversation of its source, has a long
/// verbatim gold, a duplicate or garbled question, or asks for the error of a command that succeeded.
#[test]
fn shipped_auto_probes_pass_every_lint() {
    use compactbench::probes::lint;
    let dir = repo().join("datasets/probes");
    for source in ["aider", "mini-swe-agent", "swe-agent", "tau-bench"] {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir.join(source)).unwrap() {
            let path = entry.unwrap().path();
            files.push(probes::load_probe_file(&path).unwrap());
        }
        // Auto golds against auto golds: manual probes are linted (and excluded) on their own.
        files.retain(|f| f.probes.iter().all(|p| p.source == ProbeOrigin::Auto));
        let index = lint::gold_index(files.iter().flat_map(|f| f.probes.iter()));
        let mut auto = 0;
        for f in &files {
            let conv = conversation(&format!("datasets/{source}/{}.json", f.conversation));
            let lints = lint::lint_conversation(&f.probes, Some(&index), Some(&conv));
            assert!(lints.is_empty(), "{source}: {:?}", lints.iter().map(ToString::to_string).collect::<Vec<_>>());
            auto += f.probes.len();
        }
        assert!(auto > 0, "{source} has auto probes");
    }
}

#[tokio::test]
async fn none_strategy_retains_every_answer_in_the_history() {
    for rel in SAMPLES {
        let conv = conversation(rel);
        let r = observe(&conv, &strategies::none::spec(), 1_000_000, false).await;
        let end = r.at_end().expect("end checkpoint");
        assert_eq!(end.scores.len(), r.probes);
        assert!(end.scores.iter().all(|s| s.retained), "{rel}: {:?}", end.scores);
    }
}

#[tokio::test]
async fn drop_oldest_in_a_small_window_loses_early_evidence() {
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let spec =
        strategies::drop_oldest::spec(strategies::drop_oldest::DropOldestParams { threshold: 0.5, keep_fraction: 0.3 });
    let r = observe(&conv, &spec, 4096, false).await;
    let end = r.at_end().unwrap();
    let lost = end.scores.iter().filter(|s| !s.retained).count();
    assert!(lost * 2 >= end.scores.len(), "most early-evidence probes are dropped: {:?}", end.scores);
    assert!(r.checkpoints.iter().any(|c| c.event.is_some()), "probes are scored at events");
}

#[tokio::test]
async fn observer_scores_a_real_compression_with_answers() {
    use compactbench::compress::{CallerKind, CompressSettings, CompressionPrompts, Latch};
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let spec = strategies::gemini::spec(
        CompressSettings {
            threshold: Some(0.5),
            prompts: CompressionPrompts::current(),
            ..CompressSettings::default()
        },
        CallerKind::Interactive,
        Latch::Latched,
    );
    let a = observe(&conv, &spec, 8192, true).await;
    let b = observe(&conv, &spec, 8192, true).await;
    assert_eq!(a, b, "deterministic");
    let events: Vec<_> = a.checkpoints.iter().filter(|c| c.event.is_some()).collect();
    assert!(!events.is_empty());
    let end = a.at_end().unwrap();
    assert_eq!(end.scores.len(), a.probes);
    assert!(end.scores.iter().all(|s| s.answer.as_ref().is_some_and(|x| x.error.is_none())));
    // Compression loses some facts but not all (the extractive snapshot keeps the goal and files).
    let kept = end.scores.iter().filter(|s| s.retained).count();
    assert!(kept > 0 && kept < end.scores.len(), "{kept}/{}", end.scores.len());
    // Results round-trip through JSON (as stored in sweep cells).
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(serde_json::from_str::<compactbench::data::ProbeResults>(&json).unwrap(), a);
}

#[tokio::test]
async fn injection_is_planted_and_counted_per_prompt_variant() {
    use compactbench::compress::{CallerKind, CompressSettings, CompressionPrompts, Latch};
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let (injected, planted) = probes::inject::plant(&conv).unwrap();
    assert!(text_match::content_text(&injected.history[planted.at]).contains(&planted.canary));
    for variant in ["v5", "v2"] {
        let spec = strategies::gemini::spec(
            CompressSettings {
                threshold: Some(0.5),
                prompts: CompressionPrompts::from_spec(variant).unwrap(),
                ..CompressSettings::default()
            },
            CallerKind::Interactive,
            Latch::Latched,
        );
        let mut obs =
            ProbeObserver::new(&conv.meta.id, Vec::new(), None, None, ProbeOptions::default()).with_injection(&planted);
        let input = ReplayInput { system_instruction: None, ..injected.replay_input(&conv.meta.id) };
        replay_observed(input, spec.compressor(), &settings(8192), &ExtractiveModel::new(), &mut obs).await;
        let inj = obs.into_results().injection.unwrap();
        assert!(inj.snapshots > 0, "{variant}: summaries were written after the planted output");
        assert!(inj.obeyed_snapshots <= inj.snapshots);
    }
}

#[test]
fn manual_probes_are_a_checked_headline_set() {
    // The hand-written set: >= 150 probes over >= 30 conversations of all four sources, every kind. Each answer
    // (gold and accepted variants) sits in its evidence, which the reference's default split can remove, and no
    // answer is shared with a manual probe of another conversation of the same source.
    let dir = repo().join("datasets/probes");
    let (mut conversations, mut total) = (0, 0);
    let mut kinds = std::collections::BTreeSet::new();
    let mut owners: std::collections::BTreeMap<(&str, String), std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for dataset in ["aider", "mini-swe-agent", "swe-agent", "tau-bench"] {
        let mut in_dataset = 0;
        for entry in std::fs::read_dir(dir.join(dataset)).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".manual.json") {
                continue;
            }
            in_dataset += 1;
            let file = probes::load_probe_file(&path).unwrap();
            let conv = conversation(&format!("datasets/{dataset}/{}.json", file.conversation));
            let boundary = extract::removable_before(&conv.history);
            assert!(file.probes.len() >= 3, "{}", path.display());
            for p in &file.probes {
                total += 1;
                assert_eq!(p.source, ProbeOrigin::Manual);
                kinds.insert(p.kind);
                assert!(
                    p.evidence.iter().all(|&e| e < boundary),
                    "{}: {} evidence past {boundary}",
                    path.display(),
                    p.id
                );
                let evidence: Vec<_> = p.evidence.iter().map(|&e| conv.history[e].clone()).collect();
                let haystack = text_match::history_haystack(&evidence);
                for answer in p.answers() {
                    assert!(haystack.contains(answer), "{}: {} `{answer}` not in its evidence", path.display(), p.id);
                    owners
                        .entry((dataset, text_match::normalize(answer)))
                        .or_default()
                        .insert(file.conversation.clone());
                }
            }
        }
        assert!(in_dataset > 0, "no manual probes for {dataset}");
        conversations += in_dataset;
    }
    assert!(conversations >= 30, "{conversations} conversations");
    assert!(total >= 150, "{total} manual probes");
    assert_eq!(kinds.len(), 5, "every kind: {kinds:?}");
    for ((dataset, answer), convs) in &owners {
        assert_eq!(convs.len(), 1, "{dataset}: `{answer}` answers probes of {convs:?}");
    }
}

/// A loopback OpenAI-compatible server: the answerer always says the port was 8080; the judge gives 4.
async fn answer_and_judge_server() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&seen);
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let log = Arc::clone(&log);
        async move {
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let system = req["messages"][0]["content"].as_str().unwrap_or_default().to_string();
            let text = if system.contains("You grade answers") { "Score: 4" } else { "The port was 8080." };
            log.lock().unwrap().push(if system.contains("You grade answers") { "judge" } else { "answerer" }.into());
            axum::Json(serde_json::json!({
                "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3}
            }))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

/// With a model answerer and a judge, answers are graded by normalised match and by the rubric, and the
/// judge's agreement with the match grades is reported; the extractive-only retrieval figure stays empty.
#[tokio::test]
async fn model_answers_are_matched_and_judged_end_to_end_over_loopback() {
    use compactbench::data::ProbeKind;
    use compactbench::llm::{self, BackendOptions, CacheMode};
    use compactbench::metrics::{probe_figures, FigureId};
    use compactbench::probes::{figures, Probe};
    let (base, seen) = answer_and_judge_server().await;
    let opts = BackendOptions { cache_mode: CacheMode::Off, cache_dir: None, ..BackendOptions::default() };
    let model = llm::from_spec(&format!("openai:test-model@{base}"), &opts).unwrap();
    let conv = conversation(SAMPLES[0]);
    let probe = |id: &str, gold: &str| Probe {
        id: id.into(),
        conversation: conv.meta.id.clone(),
        kind: ProbeKind::Recall,
        question: format!("Question {id}?"),
        gold: gold.into(),
        accept: vec![],
        terms: Vec::new(),
        evidence: vec![0],
        source: ProbeOrigin::Manual,
        note: None,
    };
    let set = vec![probe("m-1", "8080"), probe("m-2", "src/main.rs")];
    let mut obs =
        ProbeObserver::new(&conv.meta.id, set, Some(Arc::clone(&model)), Some(model), ProbeOptions::default())
            .with_recording(&conv.history);
    let input = conv.replay_input(&conv.meta.id);
    let r = replay_observed(
        input,
        strategies::none::spec().compressor(),
        &settings(1_000_000),
        &ExtractiveModel::new(),
        &mut obs,
    )
    .await;
    let results = obs.into_results();
    assert!(results.answerer.as_deref().is_some_and(|a| a.starts_with("openai:test-model@")), "{:?}", results.answerer);
    let end = results.at_end().unwrap();
    let grades: Vec<(bool, Option<u8>)> =
        end.scores.iter().map(|s| s.answer.as_ref().map(|a| (a.grade.contains, a.judge)).unwrap()).collect();
    assert_eq!(grades, [(true, Some(4)), (false, Some(4))]);
    let cell = cell(&conv, "openai", r, results);
    let rows = figures::cell_rows(&cell, "none");
    assert!(rows.iter().all(|r| r.retrieval_correct.is_none() && r.answer_score.is_some()));
    let f = probe_figures::point_figures(&[&cell], "none").unwrap();
    let answer_match = f.rate(FigureId::AnswerMatch);
    assert_eq!((answer_match.value, answer_match.n), (Some(0.5), 2));
    assert_eq!(f.rate(FigureId::JudgeScore).value, Some(0.8));
    // The judge (4 ≥ 3) agrees with the match grade on the first probe only.
    let agreement = f.rate(FigureId::JudgeAgreement);
    assert_eq!((agreement.value, agreement.n), (Some(0.5), 2));
    assert_eq!(f.rate(FigureId::RetrievalAccuracy).n, 0);
    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls.iter().filter(|c| *c == "answerer").count(), 2);
    assert_eq!(calls.iter().filter(|c| *c == "judge").count(), 2);
}

/// Next-action agreement over loopback: after each compression the model is asked for the next tool call on
/// the compressed and on the uncompressed history; the server predicts the recorded tool only when it sees
/// the whole history, so the compressed prediction disagrees and the uncompressed one agrees.
#[tokio::test]
async fn next_action_agreement_compares_compressed_and_uncompressed_histories_over_loopback() {
    use compactbench::llm::{self, BackendOptions, CacheMode};
    let conv = conversation("datasets/mini-swe-agent/django__django-11099.json");
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| async move {
        // Masked (compressed) histories: another tool; the whole history: the recorded one.
        let tool = if body.windows(13).any(|w| w == b"MASKED-OUTPUT") { "guess" } else { "bash" };
        let text = format!("{{\"tool\": \"{tool}\", \"args\": {{\"command\": \"ls\"}}}}");
        axum::Json(serde_json::json!({"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let opts = BackendOptions { cache_mode: CacheMode::Off, cache_dir: None, ..BackendOptions::default() };
    let model = llm::from_spec(&format!("openai:next@http://{addr}/v1"), &opts).unwrap();
    let spec = strategies::observation_masking::spec(2, "MASKED-OUTPUT");
    let options = ProbeOptions { next_action: true, answer_at_events: false, ..ProbeOptions::default() };
    let mut obs =
        ProbeObserver::new(&conv.meta.id, Vec::new(), Some(model), None, options).with_recording(&conv.history);
    let input = conv.replay_input(&conv.meta.id);
    let r = replay_observed(input, spec.compressor(), &settings(1_000_000), &ExtractiveModel::new(), &mut obs).await;
    assert_eq!(r.error, None);
    let results = obs.into_results();
    let actions: Vec<_> = results.checkpoints.iter().filter_map(|c| c.next_action.as_ref()).collect();
    assert!(!actions.is_empty(), "asked after compressions");
    assert!(actions.iter().all(|a| a.recorded_tool == "bash"), "{actions:?}");
    assert!(actions.iter().all(|a| a.uncompressed.tool_match && !a.compressed.tool_match), "{actions:?}");
    assert!(actions.iter().all(|a| a.uncompressed.argument_similarity < 1.0));
    assert!(actions.iter().all(|a| a.compressed.error.is_none() && a.uncompressed.error.is_none()));
    let c = cell(&conv, "masking", r, results);
    let f = compactbench::metrics::probe_figures::point_figures(&[&c], "observation-masking").unwrap();
    let (compressed, uncompressed) = (
        f.rate(compactbench::metrics::FigureId::NextActionCompressed),
        f.rate(compactbench::metrics::FigureId::NextActionUncompressed),
    );
    assert!(uncompressed.n > 0);
    assert_eq!((uncompressed.value, compressed.value), (Some(1.0), Some(0.0)));
}
