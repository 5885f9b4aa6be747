//! "What this run supports": the claims of [`crate::verdict::claims`] as sentences, tables and
//! `results/claims.csv`.

use crate::data::{CellResult, Plan};
use crate::metrics::{percent, percentage_points, PercentStyle, PointsStyle, Share};
use crate::metrics::{Figure, Fragility};
use crate::verdict::claims::{Against, Claim, Verdict};
use std::fmt::Write as _;

fn pp(x: f64) -> String {
    percentage_points(x, None, PointsStyle::TABLE)
}

/// One claim as a sentence.
pub fn sentence(c: &Claim) -> String {
    sentence_over(c, c.scope)
}

/// One claim as a sentence, its scope named `scope`.
fn sentence_over(c: &Claim, scope: &str) -> String {
    let what = c.metric.metric().header;
    let against = match c.against {
        Against::NoCompression => format!("`{}`", c.against.name()),
        Against::Reference => "the reference".to_string(),
    };
    let Some(d) = c.difference else {
        return format!("#{} `{}` **did not act**: {}; no finding.", c.point, c.strategy, c.reason);
    };
    let mut s = format!(
        "#{} `{}` − {against}, {what} ({scope}, n = {} conversations): {}",
        c.point,
        c.strategy,
        d.n,
        percentage_points(d.value, Some((d.low, d.high)), PointsStyle::PROSE)
    );
    if let Some(f) = &c.fragility {
        let _ = write!(
            s,
            "; leave-one-out {} to {}; largest conversation {} of the weight",
            pp(f.loo_low),
            pp(f.loo_high),
            percent(Some(Share::Fraction(f.top_share)), PercentStyle::PROSE_WHOLE)
        );
    }
    if !c.without_source.is_empty() {
        let (lo, hi) =
            c.without_source.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), (_, v)| (l.min(*v), h.max(*v)));
        let _ = write!(s, "; with one of its {} sources left out {} to {}", c.without_source.len(), pp(lo), pp(hi));
    }
    let _ = write!(s, ": **{}**", c.verdict.name());
    if !c.reason.is_empty() && c.verdict != Verdict::Established {
        let _ = write!(s, " ({})", c.reason);
    }
    s.push('.');
    s
}

/// The claims as list lines, in order: two neighbours that differ only in their scope (the same figures
/// pooled and over the actionable conversations, as when every conversation is actionable) make one line.
pub fn claim_lines(claims: &[&Claim]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < claims.len() {
        let c = claims[i];
        let twin = claims.get(i + 1).filter(|n| n.scope != c.scope && sentence_over(n, "") == sentence_over(c, ""));
        if twin.is_some() {
            out.push(sentence_over(c, "pooled and actionable alike"));
            i += 2;
        } else {
            out.push(sentence(c));
            i += 1;
        }
    }
    out
}

/// Whether each point finished its conversations inside the window, and how often it did not. The points
/// that all finished inside the window over the same conversations make one line, with their count.
pub fn overflow_lines(plan: &Plan, cells: &[CellResult]) -> Vec<String> {
    // Per line: its points (as `#n` and the strategy) and the rest of the sentence.
    let mut lines: Vec<(Vec<String>, String)> = Vec::new();
    for i in plan.default_points() {
        let p = &plan.points[i];
        let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
        let overflowed = mine.iter().filter(|c| c.result.overflowed()).count();
        let requests: u64 = mine.iter().map(|c| c.result.overflow_requests).sum();
        let label = format!("#{} `{}`", i + 1, p.strategy.kind());
        if overflowed == 0 && requests == 0 {
            let rest =
                format!("{} of {} conversations finished inside the window; none overflowed.", mine.len(), mine.len());
            match lines.iter_mut().find(|(_, r)| *r == rest) {
                Some((points, _)) => points.push(label),
                None => lines.push((vec![label], rest)),
            }
            continue;
        }
        lines.push((
            vec![label],
            format!(
                "{} of {} conversations finished inside the window; {overflowed} overflowed ({requests} request{} over the window; from the first one on, their probes score as lost).",
                mine.len() - overflowed,
                mine.len(),
                if requests == 1 { "" } else { "s" }
            ),
        ));
    }
    lines
        .into_iter()
        .map(|(points, rest)| match points.len() {
            1 => format!("{}: {rest}", points[0]),
            n => format!("{} ({n} points): {rest}", points.join(", ")),
        })
        .collect()
}

/// The report's section.
pub fn markdown(plan: &Plan, cells: &[CellResult], claims: &[Claim]) -> String {
    let mut md = String::from("## What this run supports\n\n");
    md.push_str(
        "Generated from the data: each strategy's default point minus `none` and minus the reference, paired by \
         conversation, over every conversation both have (*pooled*) and over those either can act on \
         (*actionable*), with the 95 % cluster-bootstrap interval, the range with any one conversation left out, \
         and the largest conversation's share of the figure's weight. A difference is *established* only when its \
         interval excludes 0 and no single conversation, left out, turns its sign; otherwise it is *not \
         established*, whatever its size. A point that never compressed *did not act*. Every claim is in \
         `results/claims.csv`.\n\n",
    );
    let mut established: Vec<&Claim> = claims.iter().filter(|c| c.verdict == Verdict::Established).collect();
    established.sort_by_key(|c| (c.point, c.against, c.metric, c.scope));
    md.push_str("Established:\n\n");
    if established.is_empty() {
        md.push_str("- nothing.\n");
    }
    for l in claim_lines(&established) {
        let _ = writeln!(md, "- {l}");
    }
    md.push_str("\nNot established, or did not act:\n\n");
    let rest: Vec<&Claim> = claims.iter().filter(|c| c.verdict != Verdict::Established).collect();
    if rest.is_empty() {
        md.push_str("- nothing.\n");
    }
    for l in claim_lines(&rest) {
        let _ = writeln!(md, "- {l}");
    }
    md.push_str("\nOverflow (a request larger than the window is refused by the provider; the agent stops there):\n\n");
    for l in overflow_lines(plan, cells) {
        let _ = writeln!(md, "- {l}");
    }
    md.push('\n');
    md
}

/// Writes `results/claims.{csv,json}`.
pub fn write_claims(claims: &[Claim], dir: &std::path::Path) -> polars::prelude::PolarsResult<()> {
    use polars::prelude::*;
    let s = |f: &dyn Fn(&Claim) -> String| claims.iter().map(f).collect::<Vec<String>>();
    let d = |f: &dyn Fn(&Figure) -> f64| claims.iter().map(|c| c.difference.as_ref().map(f)).collect::<Vec<_>>();
    let g = |f: &dyn Fn(&Fragility) -> f64| claims.iter().map(|c| c.fragility.as_ref().map(f)).collect::<Vec<_>>();
    let mut df = DataFrame::new(
        claims.len(),
        vec![
            Column::new("point".into(), claims.iter().map(|c| c.point as u64).collect::<Vec<_>>()),
            Column::new("strategy".into(), s(&|c| c.strategy.clone())),
            Column::new("against".into(), s(&|c| c.against.name().to_string())),
            Column::new("metric".into(), s(&|c| c.metric.name().to_string())),
            Column::new("scope".into(), s(&|c| c.scope.to_string())),
            Column::new("verdict".into(), s(&|c| c.verdict.name().to_string())),
            Column::new(
                "conversations".into(),
                claims.iter().map(|c| c.difference.map(|d| d.n as u64)).collect::<Vec<_>>(),
            ),
            Column::new("difference".into(), d(&|f| f.value)),
            Column::new("ci_low".into(), d(&|f| f.low)),
            Column::new("ci_high".into(), d(&|f| f.high)),
            Column::new("loo_low".into(), g(&|f| f.loo_low)),
            Column::new("loo_high".into(), g(&|f| f.loo_high)),
            Column::new(
                "top_conversation".into(),
                claims.iter().map(|c| c.fragility.as_ref().map(|f| f.top_conversation.clone())).collect::<Vec<_>>(),
            ),
            Column::new("top_share".into(), g(&|f| f.top_share)),
            Column::new(
                "without_source".into(),
                s(&|c| c.without_source.iter().map(|(g, v)| format!("{g}={v}")).collect::<Vec<_>>().join(";")),
            ),
            Column::new("reason".into(), s(&|c| c.reason.clone())),
        ],
    )?;
    std::fs::create_dir_all(dir)?;
    CsvWriter::new(std::fs::File::create(dir.join("claims.csv"))?).finish(&mut df)?;
    crate::fsutil::write_atomic(
        &dir.join("claims.json"),
        serde_json::to_string_pretty(claims).unwrap_or_default().as_bytes(),
    )
    .map_err(|e| PolarsError::ComputeError(e.to_string().into()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::FigureId;

    fn fragile(loo_low: f64, loo_high: f64) -> Fragility {
        Fragility { loo_low, loo_high, top_conversation: "c".into(), top_share: 0.5 }
    }

    fn claim(scope: &'static str, value: f64, n: usize) -> Claim {
        Claim {
            point: 2,
            strategy: "gemini".into(),
            against: Against::NoCompression,
            metric: FigureId::TokensVsNone,
            scope,
            verdict: Verdict::Established,
            reason: String::new(),
            difference: Some(Figure { value, n, low: value - 0.1, high: value - 0.05 }),
            fragility: Some(fragile(value - 0.05, value + 0.01)),
            without_source: Vec::new(),
        }
    }

    /// A claim that says the same pooled and over the actionable conversations is one line; claims that
    /// differ keep a line each.
    #[test]
    fn the_same_claim_pooled_and_actionable_is_one_line() {
        let (pooled, actionable) = (claim("pooled", -0.5, 8), claim("actionable", -0.5, 8));
        let lines = claim_lines(&[&pooled, &actionable]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("(pooled and actionable alike, n = 8 conversations): -50.0 pp"), "{lines:?}");
        let fewer = claim("actionable", -0.6, 5);
        let lines = claim_lines(&[&pooled, &fewer]);
        assert_eq!(lines, [sentence(&pooled), sentence(&fewer)]);
    }
}
