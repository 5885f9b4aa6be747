//! The extractive answerer, the offline stand-in that answers every probe question of a run: in bytes of
//! context per second, on the generated histories (100 to 1,000 Contents and ~1M estimated tokens).
//!
//! `answer_event`: one new context and ten questions, as at one probed compression (the context's passages
//! and their term index are built once, then each question is a lookup). `answer_cached`: one more
//! question on a context already indexed. The context is made new for each `answer_event` iteration by a
//! marker turn, so the per-context index is rebuilt every time.

mod common;

use compactbench_benches::{generate, Stop, SEED};
use compactbench_core::history;
use compactbench_core::history::Content;
use compactbench_core::llm::{GenerationParams, LanguageModel, LlmRequest, RequestLabel};
use compactbench_llm::ExtractiveModel;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::time::Duration;

/// Questions shaped like the extracted probes' (files, commands, identifiers, decisions).
const QUESTIONS: [&str; 10] = [
    "Which file did the user ask to fix in round 12?",
    "What command ran the tests of module 40?",
    "What did the grep for fn f_ in src find?",
    "Which module holds the failing test about the stream buffer?",
    "What was the error when parsing the config value?",
    "Which path did read_file open for module 7?",
    "What did the model say it would inspect first?",
    "What is the result of the async await split?",
    "Which trait did the struct implement in module 3?",
    "What was done in the last round?",
];

fn request(context: &[Content], question: &str) -> LlmRequest {
    let mut contents = context.to_vec();
    if contents.last().is_some_and(history::is_user) {
        contents.push(history::model_text("OK."));
    }
    contents.push(history::user_text(question));
    LlmRequest {
        system_instruction: Some("Answer from the conversation only.".into()),
        contents,
        params: GenerationParams { temperature: Some(0.0), ..Default::default() },
        label: RequestLabel { prompt_id: "bench".into(), role: "answerer".into(), model_alias: None },
    }
}

fn answer(model: &ExtractiveModel, req: &LlmRequest) -> String {
    futures::executor::block_on(model.generate(req)).expect("the extractive model does not fail").text
}

fn answerer(c: &mut Criterion) {
    let model = ExtractiveModel::new();
    let contexts: Vec<(String, Vec<Content>)> = [100, 300, 1000]
        .into_iter()
        .map(|n| (format!("gen-{n}"), generate(SEED, Stop::Contents(n))))
        .chain(std::iter::once(("gen-1Mtok".to_string(), generate(SEED, Stop::Tokens(1_000_000)))))
        .collect();
    let mut g = c.benchmark_group("answer_event");
    for (name, context) in &contexts {
        let bytes: usize = context.iter().map(|c| compactbench_core::json::to_string(c).len()).sum();
        g.throughput(Throughput::Bytes(bytes as u64));
        let mut fresh = 0u64;
        g.bench_with_input(BenchmarkId::from_parameter(name), context, |b, context| {
            b.iter_batched(
                || {
                    fresh += 1;
                    let mut context = context.clone();
                    context.push(history::user_text(&format!("marker {fresh}")));
                    context.push(history::model_text("OK."));
                    QUESTIONS.map(|q| request(&context, q))
                },
                |requests| requests.iter().map(|r| answer(&model, r)).collect::<Vec<_>>(),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    let mut g = c.benchmark_group("answer_cached");
    for (name, context) in &contexts {
        let req = request(context, QUESTIONS[0]);
        answer(&model, &req);
        g.bench_with_input(BenchmarkId::from_parameter(name), &req, |b, req| b.iter(|| answer(&model, req)));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(3));
    targets = answerer
}
criterion_main!(benches);
