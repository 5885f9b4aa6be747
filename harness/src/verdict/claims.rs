//! The claims' verdicts: each claim is one paired difference (a strategy's default point minus `none` or
//! minus the reference) over one stated set of conversations, with its interval, its
//! leave-one-conversation-out range and the difference with each source left out. A claim is *established*
//! only when its interval excludes 0 and no single conversation or source, left out, turns its sign; a
//! point that never compressed *did not act* and makes no claim. `report::claims` writes them out.

use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{self, percentage_points, Figure, FigureId, Fragility, Parts, PointsStyle, CLAIM_FIGURES};
use crate::replay::strategy::Role;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// What a paired comparison subtracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Against {
    /// The `none` point of the same window.
    NoCompression,
    /// The reference's default point.
    Reference,
}

impl Against {
    /// The name in results files: the no-compression strategy's registry name, or `reference`.
    pub fn name(self) -> &'static str {
        match self {
            Against::NoCompression => {
                crate::replay::registry::role_name(Role::NoCompression).unwrap_or("no compression")
            }
            Against::Reference => "reference",
        }
    }
}

impl serde::Serialize for Against {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What the data says of one claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The paired interval excludes 0 and no single conversation, left out, flips the sign.
    Established,
    /// The interval includes 0, or one conversation decides the sign, or too few conversations pair.
    NotEstablished,
    /// The point never compressed on these conversations: it equals `none`, and no difference is a finding.
    DidNotAct,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Established => "established",
            Verdict::NotEstablished => "not established",
            Verdict::DidNotAct => "did not act",
        }
    }
}

/// The verdict on a paired difference and why; `by_source` is the difference with each source (or
/// project) left out in turn, when there are several.
pub fn judge(d: &Figure, fragility: Option<&Fragility>, by_source: &[(String, f64)]) -> (Verdict, String) {
    if d.low <= 0.0 && d.high >= 0.0 {
        return (Verdict::NotEstablished, "the paired interval includes 0".into());
    }
    let flipped = |v: f64| v * d.value <= 0.0;
    if let Some((source, v)) = by_source.iter().find(|(_, v)| flipped(*v)) {
        return (
            Verdict::NotEstablished,
            format!(
                "carried by one source: without `{source}` it is {}",
                percentage_points(*v, None, PointsStyle::PROSE)
            ),
        );
    }
    match fragility {
        None => (Verdict::NotEstablished, "fewer than two paired conversations".into()),
        Some(f) if f.sign_flips(d.value) => (
            Verdict::NotEstablished,
            format!(
                "leaving one conversation out gives {} to {}",
                percentage_points(f.loo_low, None, PointsStyle::TABLE),
                percentage_points(f.loo_high, None, PointsStyle::PROSE)
            ),
        ),
        Some(_) => (Verdict::Established, String::new()),
    }
}

/// A paired difference with everything its verdict rests on.
#[derive(Clone, Debug)]
pub struct Judged {
    pub difference: Figure,
    pub fragility: Option<Fragility>,
    /// The difference with each group (source, project or run) left out in turn; empty without `group_of`
    /// or with one group.
    pub without_group: Vec<(String, f64)>,
    pub verdict: Verdict,
    pub reason: String,
}

/// `point − base` paired by conversation ([`metrics::paired_difference`]), its fragility, the difference
/// with each group of `group_of` left out, and the verdict on them ([`judge`]); `None` when nothing pairs.
pub fn judge_pairs(
    m: &metrics::Metric,
    point: &[(String, Parts)],
    base: &[(String, Parts)],
    group_of: Option<&dyn Fn(&str) -> String>,
) -> Option<Judged> {
    let difference = metrics::paired_difference(m, point, base)?;
    let fragility = metrics::paired_fragility(m, point, base);
    let without_group = group_of.map(|g| metrics::leave_group_out(m, point, base, g)).unwrap_or_default();
    let (verdict, reason) = judge(&difference, fragility.as_ref(), &without_group);
    Some(Judged { difference, fragility, without_group, verdict, reason })
}

/// One claim of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    /// The point's number in the report (`#`).
    pub point: usize,
    pub strategy: String,
    pub against: Against,
    pub metric: FigureId,
    /// `pooled` (every conversation both points have) or `actionable` (those either can act on).
    pub scope: &'static str,
    pub verdict: Verdict,
    pub reason: String,
    pub difference: Option<Figure>,
    pub fragility: Option<Fragility>,
    /// The difference with each source (or project) left out in turn, when the claim spans several.
    pub without_source: Vec<(String, f64)>,
}

/// Each metric's parts over one point's cells, at the point's prices.
pub fn point_parts(plan: &Plan, cells: &[CellResult], p: &ConfigPoint) -> BTreeMap<FigureId, Vec<(String, Parts)>> {
    metrics::point_parts(cells.iter().filter(|c| c.cell.point == p.id), metrics::point_pricing(plan, p).as_ref())
}

/// A point compressed somewhere (an event that changed the history).
pub fn acted(cells: &[CellResult], p: &ConfigPoint) -> bool {
    cells.iter().any(|c| c.cell.point == p.id && c.result.compressions().next().is_some())
}

fn actionable_conversations<'a>(cells: &'a [CellResult], p: &ConfigPoint) -> BTreeSet<&'a str> {
    cells
        .iter()
        .filter(|c| c.cell.point == p.id && c.result.actionable())
        .map(|c| c.cell.conversation.as_str())
        .collect()
}

/// Every claim of the run: each strategy's default point against `none` and against the reference, on
/// tokens and early-only retention, pooled and over the conversations either can act on.
pub fn claims(plan: &Plan, cells: &[CellResult]) -> Vec<Claim> {
    let reference = plan.reference_point();
    let source_of: BTreeMap<&str, &str> =
        cells.iter().map(|c| (c.cell.conversation.as_str(), c.source.as_str())).collect();
    let mut out = Vec::new();
    for i in plan.default_points() {
        let p = &plan.points[i];
        if p.strategy.role() == Some(Role::NoCompression) {
            continue;
        }
        let strategy = p.strategy.kind().to_string();
        if !acted(cells, p) {
            out.push(Claim {
                point: i + 1,
                strategy,
                against: Against::NoCompression,
                metric: FigureId::TokensVsNone,
                scope: "pooled",
                verdict: Verdict::DidNotAct,
                reason: "it never compressed: every figure equals `none`'s".into(),
                difference: None,
                fragility: None,
                without_source: Vec::new(),
            });
            continue;
        }
        let mine = point_parts(plan, cells, p);
        let bases =
            [(Against::NoCompression, plan.none_point(p)), (Against::Reference, reference.filter(|r| r.id != p.id))];
        for (against, base) in bases {
            let Some(base) = base else { continue };
            let theirs = point_parts(plan, cells, base);
            let either: BTreeSet<&str> =
                actionable_conversations(cells, p).union(&actionable_conversations(cells, base)).copied().collect();
            for &metric in CLAIM_FIGURES {
                let (Some(a), Some(b)) = (mine.get(&metric), theirs.get(&metric)) else { continue };
                let m = metric.metric();
                for scope in ["pooled", "actionable"] {
                    let keep = |v: &Vec<(String, Parts)>| -> Vec<(String, Parts)> {
                        v.iter().filter(|(c, _)| scope == "pooled" || either.contains(c.as_str())).cloned().collect()
                    };
                    let (a, b) = (keep(a), keep(b));
                    let source = |c: &str| source_of.get(c).map(|s| s.to_string()).unwrap_or_default();
                    let Some(j) = judge_pairs(m, &a, &b, Some(&source)) else { continue };
                    out.push(Claim {
                        point: i + 1,
                        strategy: strategy.clone(),
                        against,
                        metric,
                        scope,
                        verdict: j.verdict,
                        reason: j.reason,
                        difference: Some(j.difference),
                        fragility: j.fragility,
                        without_source: j.without_group,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(value: f64, low: f64, high: f64) -> Figure {
        Figure { value, n: 10, low, high }
    }

    fn fragile(loo_low: f64, loo_high: f64) -> Fragility {
        Fragility { loo_low, loo_high, top_conversation: "c".into(), top_share: 0.5 }
    }

    #[test]
    fn a_claim_is_established_only_when_the_interval_and_every_leave_one_out_agree() {
        let (v, _) = judge(&fig(-0.2, -0.3, -0.1), Some(&fragile(-0.25, -0.15)), &[]);
        assert_eq!(v, Verdict::Established);
        // One source (project) carries it: without it the sign turns.
        let by_source = [("a".to_string(), -0.3), ("b".to_string(), 0.01)];
        let (v, why) = judge(&fig(-0.2, -0.3, -0.1), Some(&fragile(-0.25, -0.15)), &by_source);
        assert_eq!(v, Verdict::NotEstablished);
        assert!(why.contains("`b`"), "{why}");
        let (v, why) = judge(&fig(-0.2, -0.3, 0.01), Some(&fragile(-0.25, -0.15)), &[]);
        assert_eq!(v, Verdict::NotEstablished);
        assert!(why.contains("includes 0"), "{why}");
        let (v, why) = judge(&fig(-0.2, -0.3, -0.1), Some(&fragile(-0.25, 0.02)), &[]);
        assert_eq!(v, Verdict::NotEstablished);
        assert!(why.contains("+2.0"), "{why}");
        assert_eq!(judge(&fig(0.2, 0.1, 0.3), None, &[]).0, Verdict::NotEstablished);
        // A difference of exactly 0 with a degenerate interval is not a finding either.
        assert_eq!(judge(&fig(0.0, 0.0, 0.0), Some(&fragile(0.0, 0.0)), &[]).0, Verdict::NotEstablished);
    }
}
