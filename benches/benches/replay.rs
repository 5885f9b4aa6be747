//! Whole replays, in bytes of conversation per second: equal throughput at n, 2n and 4n rounds means the
//! replay's cost grows linearly with the conversation's length.
//!
//! `generated`: conversations of n, 2n and 4n generated rounds (the same generator, so the longer ones
//! extend the shorter), through the reference (scripted summarizer, 32k window: it compresses every few
//! rounds), observation masking, OpenCode's and Aider's policies and `none`, true request sizes measured
//! with o200k as in the default run.
//! `shipped`: the three largest shipped conversations through the default run's reference configuration
//! (extractive summarizer), read and parsed from their files each time.

mod common;

use compactbench_benches::{
    default_points, generate, largest_conversations, registry_default, replay_file, Stop, SEED,
};
use compactbench_core::compress::{CallerKind, CompressSettings, Latch};
use compactbench_core::json::{self, Value};
use compactbench_core::llm::ScriptedModel;
use compactbench_core::replay::{replay, strategies, PromptCountSource, ReplayInput, ReplaySettings, TokenLimit};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

const WINDOW: u64 = 32_768;
/// Rounds (four Contents each) of the smallest generated conversation.
const ROUNDS: usize = 100;

fn generated(c: &mut Criterion) {
    let settings = ReplaySettings {
        token_limit: TokenLimit::Tokens(WINDOW),
        prompt_count_source: PromptCountSource::Heuristic,
        system_prompt_tokens: 1000,
        ..ReplaySettings::default()
    };
    let strategies = [
        ("gemini", strategies::gemini::spec(CompressSettings::default(), CallerKind::Interactive, Latch::Latched)),
        ("observation-masking", strategies::observation_masking::spec(5, "[masked]")),
        // Other agents' policies that do work at every request (pruning, sizing the done messages).
        ("opencode", registry_default("opencode")),
        ("aider", registry_default("aider")),
        ("none", strategies::none::spec()),
    ];
    let mut g = c.benchmark_group("replay");
    for rounds in [ROUNDS, 2 * ROUNDS, 4 * ROUNDS] {
        let history = generate(SEED, Stop::Contents(4 * rounds));
        let bytes = json::to_string(&Value::Array(history.clone())).len() as u64;
        let recorded = vec![None; history.len()];
        for (name, spec) in &strategies {
            let strategy = spec.compressor();
            g.throughput(Throughput::Bytes(bytes));
            g.bench_with_input(BenchmarkId::new(*name, format!("{rounds}-rounds")), &history, |b, h| {
                b.iter(|| {
                    let model = ScriptedModel::new(["<state_snapshot>summary</state_snapshot>"]);
                    let input = ReplayInput {
                        recorded_prompt_tokens: &recorded,
                        ..ReplayInput::history("bench", black_box(h))
                    };
                    futures::executor::block_on(replay(input, strategy, &settings, &model))
                })
            });
        }
    }
    g.finish();
}

fn shipped(c: &mut Criterion) {
    let (settings, points) = default_points();
    let reference = points.iter().find(|p| p.strategy.kind() == "gemini").expect("the default run has the reference");
    let mut g = c.benchmark_group("replay_shipped");
    for path in largest_conversations(3) {
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        g.throughput(Throughput::Bytes(size));
        g.bench_function(BenchmarkId::new("gemini", name), |b| b.iter(|| replay_file(&path, &settings, reference)));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(5)).sample_size(10);
    targets = generated, shipped
}
criterion_main!(benches);
