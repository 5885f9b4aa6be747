//! The replay memory target as a regression test: reading, parsing and replaying a conversation peaks at
//! most 3× the file's size on the heap, for every strategy of the default run, with true request sizes
//! measured (o200k). Allocation counts are deterministic, so this is not a timed test; the one test in this
//! binary keeps other tests' allocations out of the count.
//!
//! The reference runs with a scripted summarizer here: the figure is the replay's, not a summarizer's
//! working memory (the extractive baseline's is in `cargo bench --bench replay_memory`).

use compactbench_benches::{default_points, replay_file_with, workspace_root};
use compactbench_core::llm::ScriptedModel;
use peakmem_alloc::{PeakMemAlloc, PeakMemAllocTrait, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &PeakMemAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn replay_peaks_within_three_times_the_file() {
    // The vocabulary is loaded once per process; it is not the replay's.
    compactbench_core::tokens::o200k_count_text("load the vocabulary");
    let (settings, points) = default_points();
    let mut failures = Vec::new();
    // The largest shipped conversation of the two shapes: many small tool turns, few huge messages.
    for file in ["mini-swe-agent/django__django-13265.json", "aider/chat-history-2024-08-14-06-20-09.json"] {
        let path = workspace_root().join("datasets").join(file);
        let size = std::fs::metadata(&path).unwrap().len() as f64;
        for point in &points {
            let model = ScriptedModel::new(["<state_snapshot>summary</state_snapshot>"]);
            GLOBAL.reset_peak_memory();
            let result = replay_file_with(&path, &settings, point, &model);
            let ratio = GLOBAL.get_peak_memory() as f64 / size;
            assert!(result.error.is_none(), "{file}: {:?}", result.error);
            assert!(result.requests > 0);
            eprintln!("{file} {}: {ratio:.2}× the file", point.strategy.kind());
            if ratio > 3.0 {
                failures.push(format!("{file} {}: {ratio:.2}× the file", point.strategy.kind()));
            }
        }
    }
    assert!(failures.is_empty(), "peak heap above 3× the file: {failures:#?}");
}
