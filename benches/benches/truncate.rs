//! `truncateHistoryToBudget` on every fixture with the reference's settings (50 000-token budget,
//! 40 000-character placeholders), in bytes of history JSON per second: once with the in-memory store and
//! writing the full outputs to files: into a fresh temporary directory per iteration (created before and
//! removed after the timed call; the worst case for the file system's inode allocator), and into one
//! directory reused by every iteration (files overwritten, as a new session on the same project does).

mod common;

use compactbench_benches::{all, truncation_settings};
use compactbench_core::compress::{truncate_history_to_budget, FsToolOutputStore, MemoryToolOutputStore};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn truncation(c: &mut Criterion) {
    let fixtures = all();
    let settings = truncation_settings();
    let mut g = c.benchmark_group("truncate_mem");
    for fx in &fixtures {
        g.throughput(Throughput::Bytes(fx.bytes()));
        g.bench_with_input(BenchmarkId::from_parameter(&fx.name), fx, |b, fx| {
            b.iter_batched(
                || MemoryToolOutputStore::new("/tmp/compactbench"),
                |mut store| {
                    let mut id = 0;
                    let t = truncate_history_to_budget(black_box(&fx.history), &settings, &mut id, &mut store);
                    (t, store)
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    let mut g = c.benchmark_group("truncate_fs");
    for fx in &fixtures {
        g.throughput(Throughput::Bytes(fx.bytes()));
        g.bench_with_input(BenchmarkId::from_parameter(&fx.name), fx, |b, fx| {
            b.iter_batched(
                || tempfile::tempdir().expect("temp dir"),
                |dir| {
                    let mut store = FsToolOutputStore::new(dir.path());
                    let mut id = 0;
                    let t = truncate_history_to_budget(black_box(&fx.history), &settings, &mut id, &mut store);
                    (t, dir)
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    // One directory for all iterations, ids restarting at 1 as in a new session on the same project: each
    // pass overwrites the previous pass's files instead of allocating new inodes in a fresh directory.
    let mut g = c.benchmark_group("truncate_fs_reuse");
    for fx in &fixtures {
        let dir = tempfile::tempdir().expect("temp dir");
        g.throughput(Throughput::Bytes(fx.bytes()));
        g.bench_with_input(BenchmarkId::from_parameter(&fx.name), fx, |b, fx| {
            b.iter(|| {
                let mut store = FsToolOutputStore::new(dir.path());
                let mut id = 0;
                truncate_history_to_budget(black_box(&fx.history), &settings, &mut id, &mut store)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(3));
    targets = truncation
}
criterion_main!(benches);
