//! A point's probe figures: each figure of [`super::METRICS`] counted over probe scorings, pooled over the
//! point's conversations as a rate with its n and a cluster-bootstrap interval (`probes.md`), with its
//! breakdowns; and one conversation's tally of a probe figure, the parts `super` pools like any other
//! figure's. What each scoring records is `crate::probes::figures` (the rows of `results/probes.csv`).

use super::{FigureId, BREAKDOWN_FIGURES};
use crate::data::CellResult;
use crate::probes::figures::{after_overflow, cell_rows, outcome_rows, Moment, ProbeRow};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use FigureId::*;

/// Numerator and denominator of a rate within one conversation.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    hits: f64,
    n: f64,
}

impl Tally {
    fn add(&mut self, v: f64) {
        self.hits += v;
        self.n += 1.0;
    }
}

/// A pooled rate over conversations with its n and a cluster-bootstrap 95 % interval (conversations
/// resampled, so probes of one conversation are not treated as independent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub value: Option<f64>,
    pub n: usize,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

fn pooled(per_conv: &[Tally]) -> Rate {
    let with: Vec<Tally> = per_conv.iter().copied().filter(|t| t.n > 0.0).collect();
    let n: f64 = with.iter().map(|t| t.n).sum();
    if n == 0.0 {
        return Rate::default();
    }
    let value = with.iter().map(|t| t.hits).sum::<f64>() / n;
    let ratio = |sample: &[usize]| {
        let (mut h, mut d) = (0.0, 0.0);
        for &i in sample {
            h += with[i].hits;
            d += with[i].n;
        }
        Some(h / d)
    };
    let (low, high) = crate::stats::bootstrap(with.len(), ratio).unwrap_or((value, value));
    Rate { value: Some(value), n: n as usize, ci_low: Some(low), ci_high: Some(high) }
}

/// One line of a breakdown: a figure restricted to one value of one dimension.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakdownRow {
    /// `source`, `kind`, `origin` or `ordinal`.
    pub by: String,
    pub value: String,
    /// One of [`BREAKDOWN_FIGURES`].
    pub figure: FigureId,
    #[serde(flatten)]
    pub rate: Rate,
}

/// Every probe figure of one config point (the figures' definitions: [`crate::metrics::METRICS`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeFigures {
    /// Each figure some scoring of the point counts towards: a pooled rate (the verification gain is a mean
    /// gain, which may be negative; the judge score a mean score / 5).
    pub rates: BTreeMap<FigureId, Rate>,
    pub breakdown: Vec<BreakdownRow>,
}

impl ProbeFigures {
    /// A figure's rate (empty where no scoring of the point counts towards it).
    pub fn rate(&self, figure: FigureId) -> Rate {
        self.rates.get(&figure).copied().unwrap_or_default()
    }
}

/// Which figure a row counts towards, and its value.
fn row_figures(r: &ProbeRow) -> Vec<(FigureId, f64)> {
    let mut out = Vec::new();
    let end = r.moment == Moment::End;
    if end {
        out.push((Retention, r.retained as u8 as f64));
        if r.early_only == Some(true) {
            out.push((EarlyOnlyRetention, r.retained as u8 as f64));
        }
        if let Some(c) = r.retrieval_correct {
            out.push((RetrievalAccuracy, c as u8 as f64));
        }
        if let Some(s) = r.answer_score {
            out.push((AnswerMatch, s));
        }
        if let Some(j) = r.judge_score {
            out.push((JudgeScore, j as f64 / 5.0));
            if let Some(s) = r.answer_score {
                out.push((JudgeAgreement, ((j >= 3) == (s >= 0.5)) as u8 as f64));
            }
        }
    } else {
        if r.compression {
            out.push((KeptAtCompressions, r.retained as u8 as f64));
        }
        if r.compression && r.at_risk == Some(true) {
            out.push((AtRiskRetention, r.retained as u8 as f64));
        }
        if r.verified {
            let first = r.first_pass_retained.unwrap_or(r.retained);
            out.push((VerificationRetentionGain, r.retained as u8 as f64 - first as u8 as f64));
        }
    }
    out
}

/// A moment's breakdown keys: source, kind, origin, and (at compressions) the compression ordinal.
fn breakdown_keys(r: &ProbeRow) -> Vec<(&'static str, String)> {
    let mut keys = vec![("source", r.source.clone()), ("kind", r.kind.clone()), ("origin", r.origin.clone())];
    if r.compression {
        keys.push(("ordinal", r.ordinal.map_or_else(|| "-".into(), |o| o.to_string())));
    }
    keys
}

/// The next-action figures of each cell into `tallies` (one tally per cell and figure).
fn tally_next_actions(cells: &[&CellResult], tallies: &mut BTreeMap<FigureId, Vec<Tally>>) {
    for (ci, c) in cells.iter().enumerate() {
        let checkpoints = c.probes.iter().flat_map(|r| &r.checkpoints);
        let actions = checkpoints.filter_map(|cp| Some((after_overflow(c, cp.event), cp.next_action.as_ref()?)));
        for (lost, a) in actions {
            // After an overflow the compressed session cannot act at all.
            let (tool, args) = if lost {
                (0.0, 0.0)
            } else {
                (a.compressed.tool_match as u8 as f64, a.compressed.argument_similarity)
            };
            for (figure, v) in [
                (NextActionCompressed, tool),
                (NextActionUncompressed, a.uncompressed.tool_match as u8 as f64),
                (NextActionArgsCompressed, args),
                (NextActionArgsUncompressed, a.uncompressed.argument_similarity),
            ] {
                let t = tallies.entry(figure).or_default();
                t.resize(cells.len(), Tally::default());
                t[ci].add(v);
            }
        }
    }
}

/// The probe figures of one point's cells; `None` when no cell scored probes.
pub fn point_figures(cells: &[&CellResult], strategy: &str) -> Option<ProbeFigures> {
    if cells.iter().all(|c| c.probes.is_none()) {
        return None;
    }
    type Key = (&'static str, FigureId, String);
    let mut tallies: BTreeMap<FigureId, Vec<Tally>> = BTreeMap::new();
    let mut split: BTreeMap<Key, Vec<Tally>> = BTreeMap::new();
    for (ci, c) in cells.iter().enumerate() {
        for r in cell_rows(c, strategy) {
            let figs = row_figures(&r);
            // Early-only retention by ordinal: early-only probes scored right after each compression.
            let mut by_ordinal = Vec::new();
            if r.compression {
                by_ordinal.push((Retention, r.retained as u8 as f64));
                if r.early_only == Some(true) {
                    by_ordinal.push((EarlyOnlyRetention, r.retained as u8 as f64));
                }
            }
            for (figure, v) in &figs {
                let t = tallies.entry(*figure).or_default();
                t.resize(cells.len(), Tally::default());
                t[ci].add(*v);
            }
            for (by, value) in breakdown_keys(&r) {
                let figs = if by == "ordinal" {
                    by_ordinal.iter().chain(&figs).collect::<Vec<_>>()
                } else {
                    figs.iter().collect()
                };
                for (figure, v) in figs {
                    if !BREAKDOWN_FIGURES.contains(figure) {
                        continue;
                    }
                    let t = split.entry((by, *figure, value.clone())).or_default();
                    t.resize(cells.len(), Tally::default());
                    t[ci].add(*v);
                }
            }
        }
    }
    tally_next_actions(cells, &mut tallies);
    let mut breakdown: Vec<BreakdownRow> = split
        .iter()
        .map(|((by, figure, value), t)| BreakdownRow {
            by: by.to_string(),
            value: value.clone(),
            figure: *figure,
            rate: pooled(t),
        })
        .collect();
    // Ordinals in numeric order.
    breakdown.sort_by_key(|b| (b.by.clone(), b.figure, b.value.parse::<u32>().ok(), b.value.clone()));
    Some(ProbeFigures { rates: tallies.iter().map(|(figure, t)| (*figure, pooled(t))).collect(), breakdown })
}

/// One probe figure of one conversation as (hits, scorings), the numerator and denominator `crate::metrics`
/// pools over conversations; `None` when no scoring counts towards it.
pub fn conversation_tally(c: &CellResult, figure: FigureId) -> Option<(f64, f64)> {
    conversation_tally_of_kind(c, figure, None)
}

/// [`conversation_tally`] over the probes of one kind (`artifact`, `constraint`, …) when `kind` is given.
pub fn conversation_tally_of_kind(c: &CellResult, figure: FigureId, kind: Option<&str>) -> Option<(f64, f64)> {
    let mut t = Tally::default();
    for r in outcome_rows(c, kind) {
        for (counted, v) in row_figures(&r) {
            if counted == figure {
                t.add(v);
            }
        }
    }
    (t.n > 0.0).then_some((t.hits, t.n))
}

/// Every point's figures, in plan order.
pub fn all_point_figures(plan: &crate::data::Plan, cells: &[CellResult]) -> Vec<(String, Option<ProbeFigures>)> {
    plan.points
        .iter()
        .map(|p| {
            let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
            (p.id.clone(), point_figures(&mine, p.strategy.kind()))
        })
        .collect()
}
