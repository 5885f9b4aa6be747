//! Paired differences between two points over the conversations both have: the difference with its
//! cluster-bootstrap interval, how much one conversation (or one group) decides it.

use super::{aggregate, Aggregation, Figure, Metric, Parts};
use crate::stats::bootstrap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The conversations both sides have, with each side's parts, in the point's order.
fn pairs<'a>(point: &'a [(String, Parts)], reference: &[(String, Parts)]) -> Vec<(&'a str, Parts, Parts)> {
    let by_conv: BTreeMap<&str, Parts> = reference.iter().map(|(c, p)| (c.as_str(), *p)).collect();
    point.iter().filter_map(|(c, p)| Some((c.as_str(), *p, *by_conv.get(c.as_str())?))).collect()
}

/// The paired difference over some of the pairs (indices, repeats allowed).
fn difference_over(m: &Metric, pairs: &[(&str, Parts, Parts)], s: &[usize]) -> Option<f64> {
    let a: Vec<Parts> = s.iter().map(|&i| pairs[i].1).collect();
    let b: Vec<Parts> = s.iter().map(|&i| pairs[i].2).collect();
    match m.aggregation {
        Aggregation::RatioOfSums => Some(aggregate(m, &a)? - aggregate(m, &b)?),
        Aggregation::Total => Some((aggregate(m, &a)? - aggregate(m, &b)?) / s.len() as f64),
        // Compaction-level figures have no parts to pair.
        Aggregation::Median | Aggregation::Mean | Aggregation::Difference => None,
    }
}

/// `figure(point) − figure(reference)` over the conversations both have (paired), with a bootstrap interval
/// that resamples those conversations jointly. Totals are compared per conversation (mean difference).
pub fn paired_difference(m: &Metric, point: &[(String, Parts)], reference: &[(String, Parts)]) -> Option<Figure> {
    let pairs = pairs(point, reference);
    if pairs.is_empty() {
        return None;
    }
    let all: Vec<usize> = (0..pairs.len()).collect();
    let value = difference_over(m, &pairs, &all)?;
    let (low, high) = bootstrap(pairs.len(), |s| difference_over(m, &pairs, s)).unwrap_or((value, value));
    Some(Figure { value, n: pairs.len(), low, high })
}

/// How much one conversation decides a paired difference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fragility {
    /// The smallest and largest difference with one conversation left out (leave-one-out range).
    pub loo_low: f64,
    pub loo_high: f64,
    /// The conversation with the largest share of the figure's weight, and that share: of Σ denominators
    /// (both sides) for a ratio of sums, of Σ |per-conversation difference| for a total.
    pub top_conversation: String,
    pub top_share: f64,
}

impl Fragility {
    /// Leaving some one conversation out gives a difference of the other sign, or 0.
    pub fn sign_flips(&self, value: f64) -> bool {
        if value > 0.0 {
            self.loo_low <= 0.0
        } else if value < 0.0 {
            self.loo_high >= 0.0
        } else {
            true
        }
    }
}

/// The leave-one-conversation-out range and the largest single conversation's share of a paired
/// difference (same pairing as [`paired_difference`]); `None` with fewer than two paired conversations.
pub fn paired_fragility(m: &Metric, point: &[(String, Parts)], reference: &[(String, Parts)]) -> Option<Fragility> {
    let pairs = pairs(point, reference);
    if pairs.len() < 2 {
        return None;
    }
    let loo: Vec<f64> = (0..pairs.len())
        .filter_map(|out| {
            let rest: Vec<usize> = (0..pairs.len()).filter(|&i| i != out).collect();
            difference_over(m, &pairs, &rest)
        })
        .collect();
    let weight = |p: &(&str, Parts, Parts)| match m.aggregation {
        Aggregation::RatioOfSums => p.1.den + p.2.den,
        Aggregation::Total | Aggregation::Median | Aggregation::Mean | Aggregation::Difference => {
            (p.1.num - p.2.num).abs()
        }
    };
    let total: f64 = pairs.iter().map(weight).sum();
    let top = pairs.iter().max_by(|a, b| weight(a).total_cmp(&weight(b)).then_with(|| b.0.cmp(a.0)))?;
    Some(Fragility {
        loo_low: loo.iter().copied().fold(f64::INFINITY, f64::min),
        loo_high: loo.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        top_conversation: top.0.to_string(),
        top_share: if total > 0.0 { weight(top) / total } else { 0.0 },
    })
}

/// The paired difference with each group of conversations left out in turn (groups by `group_of`, e.g.
/// their source or project), in group order; empty with fewer than two groups.
pub fn leave_group_out(
    m: &Metric,
    point: &[(String, Parts)],
    reference: &[(String, Parts)],
    group_of: &dyn Fn(&str) -> String,
) -> Vec<(String, f64)> {
    let pairs = pairs(point, reference);
    let groups: Vec<String> = pairs.iter().map(|p| group_of(p.0)).collect();
    let names: std::collections::BTreeSet<&String> = groups.iter().collect();
    if names.len() < 2 {
        return Vec::new();
    }
    names
        .into_iter()
        .filter_map(|g| {
            let rest: Vec<usize> = (0..pairs.len()).filter(|&i| &groups[i] != g).collect();
            Some((g.clone(), difference_over(m, &pairs, &rest)?))
        })
        .collect()
}
