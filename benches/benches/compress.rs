//! A whole forced `compress()` (truncation, split, high-fidelity check, two scripted summarizer calls, new
//! history and its token count) on every fixture, in bytes of history JSON per second. A fresh scripted
//! model and memory store are built outside the timed call; the scripted model clones each request it
//! receives, which is part of the figure.

mod common;

use compactbench_benches::all;
use compactbench_core::compress::{compress, CompressEnv, CompressRequest, CompressSettings, MemoryToolOutputStore};
use compactbench_core::llm::ScriptedModel;
use compactbench_core::tokens::Estimator;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn whole_compress(c: &mut Criterion) {
    let fixtures = all();
    let settings = CompressSettings::default();
    let mut g = c.benchmark_group("compress");
    for fx in &fixtures {
        let req = CompressRequest {
            prompt_id: "bench".into(),
            force: true,
            has_failed: false,
            last_prompt_tokens: Estimator::Current.history(&fx.history),
            ui_last_prompt_tokens: 0,
        };
        g.throughput(Throughput::Bytes(fx.bytes()));
        g.bench_with_input(BenchmarkId::from_parameter(&fx.name), fx, |b, fx| {
            b.iter_batched(
                || (ScriptedModel::new(["summary", "verified"]), MemoryToolOutputStore::new("/tmp/compactbench")),
                |(model, mut store)| {
                    let mut id = 0;
                    let mut env = CompressEnv { next_truncation_id: &mut id, tool_outputs: &mut store };
                    let out = futures::executor::block_on(compress(
                        black_box(&fx.history),
                        &req,
                        &settings,
                        &mut env,
                        &model,
                    ))
                    .expect("compress");
                    (out, model, store)
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(3));
    targets = whole_compress
}
criterion_main!(benches);
