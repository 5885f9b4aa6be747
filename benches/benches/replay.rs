//! A whole replay (the reference strategy with a scripted summarizer, and `none`) of generated conversations
//! of n and 2n Contents, in Contents per second: equal throughput at n and 2n means the replay's cost grows
//! linearly with the conversation's length. True request sizes (o200k) are measured, as in the default run.

use compactbench::compress::{CallerKind, CompressSettings, Latch};
use compactbench::llm::ScriptedModel;
use compactbench::replay::{replay, PromptCountSource, ReplayInput, ReplaySettings, StrategySpec};
use compactbench_benches::{generate, Stop, SEED};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

const WINDOW: u64 = 32_768;

fn replay_n_and_2n(c: &mut Criterion) {
    let settings = ReplaySettings {
        token_limit: WINDOW,
        prompt_count_source: PromptCountSource::Heuristic,
        system_prompt_tokens: 1000,
        ..ReplaySettings::default()
    };
    let strategies = [
        (
            "gemini",
            StrategySpec::Gemini {
                settings: CompressSettings { token_limit: Some(WINDOW), ..CompressSettings::default() },
                caller: CallerKind::Interactive,
                latch: Latch::Latched,
            },
        ),
        ("none", StrategySpec::None),
    ];
    let mut g = c.benchmark_group("replay");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for n in [200usize, 400, 800] {
        let history = generate(SEED, Stop::Contents(n));
        let recorded = vec![None; history.len()];
        for (name, spec) in &strategies {
            let strategy = spec.build();
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(*name, n), &history, |b, h| {
                b.iter(|| {
                    let model = ScriptedModel::new(["<state_snapshot>summary</state_snapshot>"]);
                    let input = ReplayInput { id: "bench", history: black_box(h), recorded_prompt_tokens: &recorded };
                    futures::executor::block_on(replay(input, strategy.as_ref(), &settings, &model))
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    // Criterion's charts need system fonts this project does not assume; estimates and baselines are kept.
    config = Criterion::default().without_plots();
    targets = replay_n_and_2n
}
criterion_main!(benches);
