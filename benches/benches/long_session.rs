//! Whole replays of a long real Claude Code session (160k+ tokens of context at its compactions), as the
//! long-sessions config runs them: the 200k window, compressions forced at the agent's own compaction
//! points (`configs/long-sessions.toml`'s `[replay]`), the extractive summarizer, o200k request counts.
//! Each strategy replays the session as recorded (`x1`) and appended to itself (`x2`); equal throughput
//! at both means the cost grows linearly with the session's length.
//!
//! The sessions are read in place from `../shared/datasets-raw/claude-code-long` (or the directory in
//! `COMPACTBENCH_LONG_SESSIONS`) and never copied into the repository; without them the bench says so and
//! measures nothing. It takes the largest session that has a recorded compaction.

mod common;

use compactbench_benches::{registry_default, replay_settings_of, workspace_root};
use compactbench_core::json;
use compactbench_datasets::raw::{self, RawOptions};
use compactbench_datasets::Conversation;
use compactbench_llm::ExtractiveModel;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::path::PathBuf;
use std::time::Duration;

/// The long-sessions config's grid.
const STRATEGIES: [&str; 6] = ["recorded", "gemini", "codex", "observation-masking", "drop-oldest", "none"];

fn sessions_dir() -> PathBuf {
    std::env::var_os("COMPACTBENCH_LONG_SESSIONS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/datasets-raw/claude-code-long"))
}

/// The largest session (by file size) that holds a recorded compaction.
fn largest_compacted_session() -> Option<Conversation> {
    let (root, files) = raw::raw_files(&sessions_dir()).ok()?;
    let mut sized: Vec<(u64, PathBuf)> =
        files.into_iter().map(|p| (std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0), p)).collect();
    sized.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let options =
        RawOptions { format: compactbench_datasets::import::Format::from_name("claude-code"), ..Default::default() };
    sized.into_iter().find_map(|(_, path)| {
        let name = raw::relative_name(&path, &root);
        let (_, imported) = raw::import_file(&path, &name, &options).ok()?;
        imported.conversations.into_iter().find(|c| !c.recorded_compactions.is_empty())
    })
}

fn long_session(c: &mut Criterion) {
    let Some(session) = largest_compacted_session() else {
        eprintln!(
            "long_session: no session with a recorded compaction under {}; nothing measured",
            sessions_dir().display()
        );
        return;
    };
    let settings = replay_settings_of("long-sessions");
    let model = ExtractiveModel::new();
    let mut g = c.benchmark_group("long_session");
    for copies in [1, 2] {
        let conversation = session.repeated(copies);
        let bytes: usize = conversation.history.iter().map(|c| json::to_string(c).len()).sum();
        g.throughput(Throughput::Bytes(bytes as u64));
        for name in STRATEGIES {
            let spec = registry_default(name);
            g.bench_function(BenchmarkId::new(name, format!("x{copies}")), |b| {
                b.iter(|| {
                    let input = conversation.replay_input(&conversation.meta.id);
                    futures::executor::block_on(compactbench_core::replay::replay_spec(
                        input,
                        &spec,
                        &settings,
                        &model,
                        &mut compactbench_core::replay::NoObserver,
                    ))
                })
            });
        }
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(10)).sample_size(10);
    targets = long_session
}
criterion_main!(benches);
