//! Whole-history scans on every fixture, in bytes of history JSON per second: `jslen` of every Content,
//! the current token estimate, `findCompressSplitPoint(history, 0.7)`, and — for honesty, since parsing is
//! where the per-string UTF-16 metrics are computed — `json::parse` of the history text and parse + split.

mod common;

use compactbench_benches::{all, Fixture};
use compactbench_core::compress::find_compress_split_point;
use compactbench_core::history;
use compactbench_core::json;
use compactbench_core::tokens::Estimator;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

fn each(c: &mut Criterion, fixtures: &[Fixture], group: &str, mut f: impl FnMut(&Fixture) -> u64) {
    let mut g = c.benchmark_group(group);
    for fx in fixtures {
        g.throughput(Throughput::Bytes(fx.bytes()));
        g.bench_with_input(BenchmarkId::from_parameter(&fx.name), fx, |b, fx| b.iter(|| f(black_box(fx))));
    }
    g.finish();
}

fn scans(c: &mut Criterion) {
    let fixtures = all();
    each(c, &fixtures, "jslen", |fx| fx.history.iter().map(json::jslen).sum::<usize>() as u64);
    each(c, &fixtures, "estimate", |fx| Estimator::Current.history(&fx.history));
    each(c, &fixtures, "split", |fx| find_compress_split_point(&fx.history, 0.7).unwrap() as u64);
    each(c, &fixtures, "parse", |fx| history::parse_history(&fx.json, "bench").unwrap().len() as u64);
    each(c, &fixtures, "parse_split", |fx| {
        let h = history::parse_history(&fx.json, "bench").unwrap();
        find_compress_split_point(&h, 0.7).unwrap() as u64
    });
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(2));
    targets = scans
}
criterion_main!(benches);
