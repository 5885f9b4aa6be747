//! Findings worth a sentence in the report (its `details.md`), computed from the data: the setup under the
//! reference point, unsplittable conversations, hidden inflation, and the paired probe comparisons (in
//! `probes.md`). What repeats across points is said once, with the count of points it holds for.

use super::aggregate;
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{self, percent, percentage_points, FigureId, PercentStyle, PointsStyle, Share};
use crate::replay::strategies::reference_grid::THRESHOLD;
use crate::replay::strategy::Role;
use crate::report::summary::summarize;
use crate::verdict::claims;
use std::collections::BTreeMap;

/// Findings on the setup and the paired comparisons, from the scope figures.
fn scope_findings(plan: &Plan, cells: &[CellResult], scopes: &[aggregate::ScopeFigures]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(reference) = plan.reference_point() else { return out };
    let Some(ri) = plan.points.iter().position(|p| p.id == reference.id) else { return out };
    let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == reference.id).collect();
    let below = mine.iter().filter(|c| c.result.trigger_below_first_request()).count();
    let compressions: usize = mine.iter().map(|c| c.result.compressions().count()).sum();
    let storms: u64 = mine.iter().map(|c| c.result.storm_events()).sum();
    let per_source: Vec<String> = scopes
        .iter()
        .filter(|r| r.point == ri && matches!(r.scope, aggregate::Scope::Source(_)))
        .filter_map(|r| {
            let f = r.figures.get(&FigureId::CompressionsPer100Requests)?;
            Some(format!("{} {:.1}", r.scope.to_string().trim_start_matches("source:"), f.value))
        })
        .collect();
    out.push(format!(
        "Under `{}` (window `{}`): {below} of {} conversations have a trigger at or below their first request; {compressions} compressions, {storms} of them left the request at or above the trigger (storm events); compressions per 100 requests by source: {}.",
        reference.short_label(),
        plan.replay.token_limit,
        mine.len(),
        per_source.join(", ")
    ));
    let get = |i: usize, scope: &aggregate::Scope| scopes.iter().find(|r| r.point == i && &r.scope == scope);
    if let (Some(pooled), Some(actionable)) =
        (get(ri, &aggregate::Scope::Pooled), get(ri, &aggregate::Scope::Actionable))
    {
        let tokens = FigureId::TokensVsNone;
        if let (Some(p), Some(a)) = (pooled.figures.get(&tokens), actionable.figures.get(&tokens)) {
            out.push(format!(
                "The reference's tokens vs none is {} pooled over {} conversations and {} [{:.1}, {:.1}] over the {} it can act on.",
                percent(Some(Share::Fraction(p.value)), PercentStyle::PROSE),
                pooled.conversations,
                percent(Some(Share::Fraction(a.value)), PercentStyle::PROSE),
                a.low * 100.0,
                a.high * 100.0,
                actionable.conversations
            ));
        }
    }
    out
}

/// The replay against the agent's recorded usage, and the windows it ran in: one sentence for runs whose
/// conversations record usage that measures the replayed context (none otherwise). Read from the point that
/// replays the agent's own compactions (`Role::Recorded`), else `none`'s.
fn recorded_usage_finding(plan: &Plan, cells: &[CellResult]) -> Option<String> {
    use std::fmt::Write;
    let point = plan.point_of_role(Role::Recorded).or_else(|| plan.point_of_role(Role::NoCompression))?;
    let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == point.id).collect();
    let (before, after) = metrics::recorded_request_quantiles(mine.iter().copied());
    let (n, p10, median, p90) = before?;
    let spread = |x: f64, lo: f64, hi: f64| format!("median {x:.3} (p10 {lo:.3}, p90 {hi:.3})");
    let with_counts = mine.iter().filter(|c| !c.result.recorded_request_pairs().0.is_empty()).count();
    let mut line = format!(
        "Replay against the agent's recorded usage (`{}`, {with_counts} of {} conversations), replayed / recorded tokens of the same request: before the agent's first compaction {} over {n} requests",
        point.short_label(),
        mine.len(),
        spread(median, p10, p90)
    );
    // Fitted on these very requests (the scale, and the fixed part on the first of them), the figures before
    // the compaction hold by construction; the size model is checked on requests it was not fitted on.
    let fitted = plan.replay.token_scale == crate::replay::TokenScale::Recorded
        || plan.replay.overhead == crate::replay::OverheadSource::Recorded;
    if fitted {
        let _ = write!(
            line,
            " (in sample: the token scale and fixed part are fitted on these requests, so this holds by construction)"
        );
        if let Some((n, p10, median, p90)) = metrics::recorded_request_holdout(mine.iter().copied()) {
            let _ = write!(
                line,
                "; out of sample, the scale fitted on each conversation's first half of them predicts the second half at {} over {n} requests",
                spread(median, p10, p90)
            );
        }
    }
    if let (Some((n, p10, median, p90)), Some(Role::Recorded)) = (after, point.strategy.role()) {
        let _ = write!(line, "; after its compactions {} over {n} requests", spread(median, p10, p90));
    }
    let range = |values: Vec<f64>, digits: usize| {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (!values.is_empty()).then(|| format!("{lo:.digits$}–{hi:.digits$}"))
    };
    let first: Vec<f64> = mine
        .iter()
        .filter_map(|c| c.result.recorded_request_pairs().0.first().map(|&(x, y)| x as f64 / y as f64))
        .collect();
    if let Some(r) = range(first, 3) {
        let construction = if fitted { " (by construction: the fixed part is fitted on it)" } else { "" };
        let _ = write!(line, "; each conversation's first request {r} of its recorded size{construction}");
    }
    let fixed: Vec<f64> = mine.iter().filter_map(|c| c.result.recorded_overhead_tokens.map(|t| t as f64)).collect();
    if let Some(r) = range(fixed, 0) {
        let _ = write!(line, "; fixed part from the recorded usage {r} tokens");
    }
    let scales: Vec<f64> = mine.iter().filter_map(|c| c.result.token_scale).collect();
    if let Some(r) = range(scales, 2) {
        let setting = serde_json::to_string(&plan.replay.token_scale).unwrap_or_default();
        let _ = write!(line, "; token scale {r} (`[replay] token_scale = {setting}`)");
    }
    let mut windows: BTreeMap<u64, usize> = BTreeMap::new();
    for c in &mine {
        *windows.entry(c.result.token_limit).or_default() += 1;
    }
    let windows: Vec<String> = windows.iter().map(|(w, n)| format!("{w} for {n}")).collect();
    let overflowed = mine.iter().filter(|c| c.result.overflowed()).count();
    let _ = write!(
        line,
        "; windows (`{}`): {}; {overflowed} of {} overflow it.",
        point.token_limit,
        windows.join(", "),
        mine.len()
    );
    Some(line)
}

/// Findings worth a sentence, computed from the data.
pub fn findings(plan: &Plan, cells: &[CellResult], scopes: &[aggregate::ScopeFigures]) -> Vec<String> {
    let mut out = scope_findings(plan, cells, scopes);
    out.extend(recorded_usage_finding(plan, cells));
    if let Some(p) = plan.reference_point() {
        let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
        let unsplittable: Vec<&&CellResult> = mine.iter().filter(|c| c.result.unsplittable).collect();
        if !unsplittable.is_empty() {
            let mut per_source: BTreeMap<&str, usize> = BTreeMap::new();
            for c in &unsplittable {
                *per_source.entry(c.source.as_str()).or_default() += 1;
            }
            let never = unsplittable.iter().filter(|c| c.result.compressed_events() == 0).count();
            out.push(format!(
                "{} of {} conversations are unsplittable ({}): one user task followed only by tool responses, so the current `findCompressSplitPoint` (upstream 2025-09-27, and the 2025-09-18 candidate rules) has no split candidate but index 0 and the reference returns NOOP; {never} of them never compress under `{}`. The split-variant table shows what the historical variants do with them.",
                unsplittable.len(),
                mine.len(),
                per_source.iter().map(|(s, n)| format!("{s}: {n}")).collect::<Vec<_>>().join(", "),
                p.short_label()
            ));
        }
    }
    // One line for every point with hidden inflation or deflation (they repeat across a grid).
    let summaries = summarize(plan, cells);
    let mut flagged = Vec::new();
    for s in &summaries {
        let hidden = s.figures.get(&FigureId::HiddenInflationEvents).copied().unwrap_or(0.0);
        let deflated = s.figures.get(&FigureId::HiddenDeflationEvents).copied().unwrap_or(0.0);
        if hidden > 0.0 || deflated > 0.0 {
            let number = plan.point_number(&s.point).map(|n| n.to_string()).unwrap_or_default();
            flagged.push((number, hidden, deflated));
        }
    }
    if !flagged.is_empty() {
        // Points with the same counts share one entry: the counts, then the points.
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (n, h, d) in &flagged {
            let counts = format!("{h}/{d}");
            match groups.iter_mut().find(|(c, _)| *c == counts) {
                Some((_, points)) => points.push(format!("#{n}")),
                None => groups.push((counts, vec![format!("#{n}")])),
            }
        }
        let list: Vec<String> = groups
            .iter()
            .map(|(counts, points)| match points.len() {
                1 => format!("{counts} at {}", points[0]),
                k => format!("{counts} at each of {k} points ({})", points.join(", ")),
            })
            .collect();
        let total: f64 = flagged.iter().map(|(_, h, _)| h).sum();
        out.push(format!(
            "Hidden inflation at {} points ({total} events in all): a reduction was reported while the request grew; hidden deflation: discarded as inflated while the request would have shrunk. Inflation/deflation events per point: {}.",
            flagged.len(),
            list.join("; ")
        ));
    }
    out
}

/// Early-only retention of each reference point against each baseline at the same threshold (a baseline
/// swept over the reference's trigger knob): the paired difference over the same conversations and probes
/// (cluster bootstrap), judged as the claims are ([`claims::judge`]); overlapping marginal intervals
/// decide nothing. The pairs of one baseline with one verdict (and reason) make one line, with their count.
pub(super) fn probe_comparisons(plan: &Plan, cells: &[CellResult]) -> String {
    use std::fmt::Write;
    let m = FigureId::EarlyOnlyRetention.metric();
    // (baseline, verdict) → the pairs' differences and the conversations each is over, in plan order.
    type Pairs = Vec<(String, usize)>;
    let mut groups: Vec<((String, String), Pairs)> = Vec::new();
    let number = |p: &ConfigPoint| plan.point_number(&p.id).map(|n| format!("#{n}")).unwrap_or_else(|| p.id.clone());
    let parts = |p: &ConfigPoint| claims::point_parts(plan, cells, p).remove(&m.id);
    let threshold = |p: &ConfigPoint| p.axes.get(THRESHOLD).cloned();
    let mut out = String::new();
    for d in plan.points_of_role(Role::Baseline).filter(|d| threshold(d).is_some()) {
        let Some(dp) = parts(d) else { continue };
        for g in plan.points_of_role(Role::Reference).filter(|g| threshold(g) == threshold(d)) {
            let Some(j) = parts(g).and_then(|gp| claims::judge_pairs(m, &gp, &dp, None)) else { continue };
            let diff = j.difference;
            let verdict = match j.verdict {
                claims::Verdict::Established => j.verdict.name().to_string(),
                v => format!("{} ({})", v.name(), j.reason),
            };
            let pair = format!(
                "{} `{}` {}",
                number(g),
                g.short_label(),
                percentage_points(diff.value, Some((diff.low, diff.high)), PointsStyle::PROSE)
            );
            let key = (format!("{} `{}`", number(d), d.short_label()), verdict);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, pairs)) => pairs.push((pair, diff.n)),
                None => groups.push((key, vec![(pair, diff.n)])),
            }
        }
    }
    for ((baseline, verdict), pairs) in &groups {
        let of = groups.iter().filter(|((b, _), _)| b == baseline).map(|(_, p)| p.len()).sum::<usize>();
        let list = if pairs.iter().all(|(_, n)| *n == pairs[0].1) {
            let each = if pairs.len() > 1 { " each" } else { "" };
            format!(
                "{} (over {} conversations{each})",
                pairs.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join("; "),
                pairs[0].1
            )
        } else {
            pairs.iter().map(|(p, n)| format!("{p} over {n} conversations")).collect::<Vec<_>>().join("; ")
        };
        let count = if of > 1 {
            format!(" for {} of the {of} reference points at its threshold", pairs.len())
        } else {
            String::new()
        };
        let _ = writeln!(out, "- Early-only retention, reference − {baseline}: {verdict}{count}: {list}.");
    }
    if !out.is_empty() {
        out.insert_str(
            0,
            "\nPaired differences of each reference point and the baseline at its threshold (same conversations and probes, cluster bootstrap), one line per baseline and verdict:\n\n",
        );
    }
    out
}
