//! Peak heap of a replay against the size of the conversation file: for the largest shipped conversations
//! and each strategy of the default run, the most bytes held at once while the file is read and parsed and
//! the conversation replayed (`cargo bench -p compactbench-benches --bench replay_memory`).
//!
//! Counted by an allocator wrapper from a reset just before reading the file, so the figure is what the
//! replay itself needs. Process-wide tables loaded once per process (the o200k vocabulary, ~48 MB) are
//! loaded before the reset and reported apart.

use compactbench_benches::{default_points, largest_conversations, replay_file};
use compactbench_core::replay::ReplaySettings;
use peakmem_alloc::{PeakMemAlloc, PeakMemAllocTrait, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &PeakMemAlloc<System> = &INSTRUMENTED_SYSTEM;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; a name filter selects files by substring.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    GLOBAL.reset_peak_memory();
    compactbench_core::tokens::o200k_count_text("load the vocabulary");
    println!("o200k vocabulary (once per process): {:.1} MiB", mib(GLOBAL.get_peak_memory()));
    let (settings, points) = default_points();
    let no_o200k = ReplaySettings { tokenizer: compactbench_core::replay::Tokenizer::Heuristic, ..settings.clone() };
    println!("| conversation | file | strategy | peak heap | peak / file | without o200k | peak / file |");
    println!("|---|---:|---|---:|---:|---:|---:|");
    let mut worst = (0.0f64, 0.0f64);
    for path in largest_conversations(5) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let size = std::fs::metadata(&path).map(|m| m.len() as usize).unwrap_or(0);
        for point in &points {
            let peak = |settings: &ReplaySettings| {
                GLOBAL.reset_peak_memory();
                let result = replay_file(&path, settings, point);
                let peak = GLOBAL.get_peak_memory();
                drop(result);
                peak
            };
            let (with, without) = (peak(&settings), peak(&no_o200k));
            let ratio = |p: usize| p as f64 / size as f64;
            worst = (worst.0.max(ratio(with)), worst.1.max(ratio(without)));
            println!(
                "| {name} | {:.0} KiB | {} | {:.2} MiB | {:.2}× | {:.2} MiB | {:.2}× |",
                size as f64 / 1024.0,
                point.strategy.kind(),
                mib(with),
                ratio(with),
                mib(without),
                ratio(without)
            );
        }
    }
    println!("largest ratio: {:.2}× the file with o200k, {:.2}× without (target: at most 3×)", worst.0, worst.1);
}
