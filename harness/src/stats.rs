//! Resampling statistics shared by the metrics and the probe figures: a percentile bootstrap with a fixed
//! seed, so that every interval in a report is reproducible.

use rand::{Rng, SeedableRng};

pub const BOOTSTRAP_RESAMPLES: usize = 2000;
pub const BOOTSTRAP_SEED: u64 = 0x00c0_ffee;

/// Percentile interval of `stat` over conversation resamples (fixed seed: reports are reproducible).
pub fn bootstrap(n: usize, stat: impl Fn(&[usize]) -> Option<f64>) -> Option<(f64, f64)> {
    if n < 2 {
        return None;
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(BOOTSTRAP_SEED);
    let mut values: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .filter_map(|_| {
            let sample: Vec<usize> = (0..n).map(|_| rng.random_range(0..n)).collect();
            stat(&sample)
        })
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((q * (values.len() - 1) as f64).round() as usize).min(values.len() - 1)];
    Some((at(0.025), at(0.975)))
}

/// `(n, p10, median, p90)` of a sample.
pub type Quantiles = (usize, f64, f64, f64);

/// `(n, p10, median, p90)` of `xs` (linear interpolation between the nearest ranks).
pub fn quantiles(mut xs: Vec<f64>) -> Option<Quantiles> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let k = (xs.len() - 1) as f64 * p;
        let (lo, hi) = (k.floor() as usize, k.ceil() as usize);
        xs[lo] + (xs[hi] - xs[lo]) * (k - lo as f64)
    };
    Some((xs.len(), at(0.1), at(0.5), at(0.9)))
}

/// The median of `xs` (the mean of the two middle values of an even sample); `None` when empty.
pub fn median(xs: Vec<f64>) -> Option<f64> {
    quantiles(xs).map(|(_, _, m, _)| m)
}

/// Mean with a bootstrap 95 % interval (the gate's paired differences).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
    pub n: usize,
}

pub fn bootstrap_mean(values: &[f64]) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let (low, high) =
        bootstrap(n, |s| Some(s.iter().map(|&i| values[i]).sum::<f64>() / n as f64)).unwrap_or((mean, mean));
    Some(Estimate { mean, low, high, n })
}
