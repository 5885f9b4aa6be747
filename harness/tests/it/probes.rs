//! Probes on shipped conversations: extraction, retention under `none` and `drop-oldest`, the observer.

use compactbench::datasets;
use compactbench::llm::ExtractiveModel;
use compactbench::probes::{self, extract, grade, ProbeObserver, ProbeOptions, ProbeOrigin};
use compactbench::replay::{
    replay_observed, PromptCountSource, ReplayInput, ReplaySettings, StrategySpec, TokenLimit, Tokenizer,
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

async fn observe(conv: &datasets::Conversation, spec: &StrategySpec, limit: u64, answer: bool) -> probes::ProbeResults {
    let probes = extract::extract(conv);
    let answerer: Option<Arc<dyn compactbench::llm::LanguageModel>> =
        answer.then(|| Arc::new(ExtractiveModel::new()) as Arc<dyn compactbench::llm::LanguageModel>);
    let mut obs = ProbeObserver::new(&conv.meta.id, probes, answerer, None, ProbeOptions::default());
    // Without the recorded system prompt: requests are the history alone.
    let input = ReplayInput { system_instruction: None, ..ReplayInput::of(&conv.meta.id, conv) };
    let r = replay_observed(input, spec.build().as_ref(), &settings(limit), &ExtractiveModel::new(), &mut obs).await;
    assert_eq!(r.error, None);
    obs.into_results()
}

#[test]
fn extractor_is_deterministic_and_keeps_evidence_before_the_tail() {
    for rel in SAMPLES {
        let conv = conversation(rel);
        let a = probes::probe_file_bytes(&extract::extract_file(&conv));
        let b = probes::probe_file_bytes(&extract::extract_file(&conversation(rel)));
        assert_eq!(a, b, "{rel}");
        let probes = extract::extract(&conv);
        assert!(probes.len() >= 3, "{rel}: {} probes", probes.len());
        let boundary = extract::removable_before(&conv.history);
        let hay = grade::history_haystack(&conv.history);
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
        assert_eq!(stored, probes::probe_file_bytes(&extract::extract_file(&conv)), "{rel}: re-run `probes extract`");
        let all = probes::load_probes(&dir, &conv.meta.source, &conv.meta.id, &ProbeOrigin::ALL, conv.history.len());
        assert!(all.is_ok(), "{rel}: {:?}", all.err());
    }
}

#[tokio::test]
async fn none_strategy_retains_every_answer_in_the_history() {
    for rel in SAMPLES {
        let conv = conversation(rel);
        let r = observe(&conv, &StrategySpec::None, 1_000_000, false).await;
        let end = r.at_end().expect("end checkpoint");
        assert_eq!(end.scores.len(), r.probes);
        assert!(end.scores.iter().all(|s| s.retained), "{rel}: {:?}", end.scores);
    }
}

#[tokio::test]
async fn drop_oldest_in_a_small_window_loses_early_evidence() {
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let spec = StrategySpec::DropOldest { threshold: 0.5, keep_fraction: 0.3, token_limit: 4096 };
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
    let spec = StrategySpec::Gemini {
        settings: CompressSettings {
            token_limit: Some(8192),
            threshold: Some(0.5),
            prompts: CompressionPrompts::current(),
            ..CompressSettings::default()
        },
        caller: CallerKind::Interactive,
        latch: Latch::Latched,
    };
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
    assert_eq!(serde_json::from_str::<probes::ProbeResults>(&json).unwrap(), a);
}

#[tokio::test]
async fn injection_is_planted_and_counted_per_prompt_variant() {
    use compactbench::compress::{CallerKind, CompressSettings, CompressionPrompts, Latch};
    let conv = conversation("datasets/aider/chat-history-2024-08-13-13-42-45.json");
    let (injected, planted) = probes::inject::plant(&conv).unwrap();
    assert!(grade::content_text(&injected.history[planted.at]).contains(&planted.canary));
    for variant in ["v5", "v2"] {
        let spec = StrategySpec::Gemini {
            settings: CompressSettings {
                token_limit: Some(8192),
                threshold: Some(0.5),
                prompts: CompressionPrompts::from_spec(variant).unwrap(),
                ..CompressSettings::default()
            },
            caller: CallerKind::Interactive,
            latch: Latch::Latched,
        };
        let mut obs =
            ProbeObserver::new(&conv.meta.id, Vec::new(), None, None, ProbeOptions::default()).with_injection(&planted);
        let input = ReplayInput { system_instruction: None, ..ReplayInput::of(&conv.meta.id, &injected) };
        replay_observed(input, spec.build().as_ref(), &settings(8192), &ExtractiveModel::new(), &mut obs).await;
        let inj = obs.into_results().injection.unwrap();
        assert!(inj.snapshots > 0, "{variant}: summaries were written after the planted output");
        assert!(inj.obeyed_snapshots <= inj.snapshots);
    }
}

#[test]
fn manual_probes_cover_ten_conversations_with_removable_evidence() {
    let dir = repo().join("datasets/probes");
    let mut files = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for dataset in ["aider", "tau-bench"] {
        for entry in std::fs::read_dir(dir.join(dataset)).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".manual.json") {
                continue;
            }
            files += 1;
            let file = probes::load_probe_file(&path).unwrap();
            let conv = conversation(&format!("datasets/{dataset}/{}.json", file.conversation));
            let boundary = extract::removable_before(&conv.history);
            assert!(file.probes.len() >= 5, "{}", path.display());
            for p in &file.probes {
                assert_eq!(p.source, ProbeOrigin::Manual);
                kinds.insert(p.kind);
                assert!(
                    p.evidence.iter().all(|&e| e < boundary),
                    "{}: {} evidence past {boundary}",
                    path.display(),
                    p.id
                );
                let evidence: Vec<_> = p.evidence.iter().map(|&e| conv.history[e].clone()).collect();
                assert!(
                    grade::history_haystack(&evidence).contains(&p.gold),
                    "{}: {} gold not in its evidence",
                    path.display(),
                    p.id
                );
            }
        }
    }
    assert!(files >= 10, "{files} manual probe files");
    assert_eq!(kinds.len(), 5, "every kind: {kinds:?}");
}
