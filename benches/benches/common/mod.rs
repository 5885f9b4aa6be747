//! Criterion settings shared by the bench targets (a module, not a target: cargo only discovers files
//! directly in `benches/`).

use criterion::Criterion;
use std::time::Duration;

/// 20 samples after a short warm-up. No plots: the workspace's plotters is built without system fonts, so
/// criterion's charts would panic; estimates and saved baselines are kept.
pub fn criterion(measurement: Duration) -> Criterion {
    Criterion::default()
        .without_plots()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(measurement)
}
