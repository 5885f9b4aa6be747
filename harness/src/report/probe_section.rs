//! The probes' part of a report: `results/probes.{csv,parquet}` (one row per point × conversation × probe ×
//! moment) and the Markdown section of probe figures. The rows are `probes::figures`', the figures
//! `metrics::probe_figures`'.

use crate::data::CellResult;
use crate::metrics::probe_figures::{all_point_figures, Rate};
use crate::metrics::{percent, percentage_points, FigureId, PercentStyle, PointsStyle, Share};
use crate::probes::figures::{cell_rows, strategy_of, ProbeRow, FINAL_STRETCH_SHARE};

/// Writes `results/probes.{csv,parquet}`: one row per point × conversation × probe × moment.
pub fn write_probe_rows(
    plan: &crate::data::Plan,
    cells: &[CellResult],
    dir: &std::path::Path,
) -> polars::prelude::PolarsResult<usize> {
    use polars::prelude::*;
    let rows: Vec<ProbeRow> = cells.iter().flat_map(|c| cell_rows(c, &strategy_of(plan, &c.cell.point))).collect();
    let s = |f: fn(&ProbeRow) -> String| rows.iter().map(f).collect::<Vec<String>>();
    let mut df = DataFrame::new(
        rows.len(),
        vec![
            Column::new("point".into(), s(|r| r.point.clone())),
            Column::new("strategy".into(), s(|r| r.strategy.clone())),
            Column::new("conversation".into(), s(|r| r.conversation.clone())),
            Column::new("source".into(), s(|r| r.source.clone())),
            Column::new("probe_id".into(), s(|r| r.probe_id.clone())),
            Column::new("kind".into(), s(|r| r.kind.clone())),
            Column::new("origin".into(), s(|r| r.origin.clone())),
            Column::new("moment".into(), s(|r| r.moment.to_string())),
            Column::new("ordinal".into(), rows.iter().map(|r| r.ordinal).collect::<Vec<_>>()),
            Column::new("compression".into(), rows.iter().map(|r| r.compression).collect::<Vec<_>>()),
            Column::new("early_only".into(), rows.iter().map(|r| r.early_only).collect::<Vec<_>>()),
            Column::new("at_risk".into(), rows.iter().map(|r| r.at_risk).collect::<Vec<_>>()),
            Column::new("retained".into(), rows.iter().map(|r| r.retained).collect::<Vec<_>>()),
            Column::new("held".into(), rows.iter().map(|r| r.held).collect::<Vec<_>>()),
            Column::new("after_overflow".into(), rows.iter().map(|r| r.after_overflow).collect::<Vec<_>>()),
            Column::new("first_pass_retained".into(), rows.iter().map(|r| r.first_pass_retained).collect::<Vec<_>>()),
            Column::new("verified".into(), rows.iter().map(|r| r.verified).collect::<Vec<_>>()),
            Column::new("retrieval_correct".into(), rows.iter().map(|r| r.retrieval_correct).collect::<Vec<_>>()),
            Column::new("answer_score".into(), rows.iter().map(|r| r.answer_score).collect::<Vec<_>>()),
            Column::new("judge_score".into(), rows.iter().map(|r| r.judge_score.map(u32::from)).collect::<Vec<_>>()),
            Column::new("kept_by".into(), rows.iter().map(|r| r.kept_by.map(|k| k.name())).collect::<Vec<_>>()),
            Column::new("in_first_prompt".into(), rows.iter().map(|r| r.in_first_prompt).collect::<Vec<_>>()),
        ],
    )?;
    std::fs::create_dir_all(dir)?;
    CsvWriter::new(std::fs::File::create(dir.join("probes.csv"))?).finish(&mut df)?;
    super::aggregate::write_parquet(&df, &dir.join("probes.parquet"))?;
    Ok(rows.len())
}

fn fmt_rate(r: &Rate) -> String {
    let value = |v: f64| percent(Some(Share::Fraction(v)), PercentStyle::TABLE);
    match (r.value, r.ci_low, r.ci_high) {
        (Some(v), Some(l), Some(h)) => format!("{} [{:.1}, {:.1}] (n={})", value(v), l * 100.0, h * 100.0, r.n),
        (Some(v), _, _) => format!("{} (n={})", value(v), r.n),
        _ => percent(None, PercentStyle::TABLE),
    }
}

fn fmt_gain(r: &Rate) -> String {
    match (r.value, r.ci_low, r.ci_high) {
        (Some(v), Some(l), Some(h)) => {
            format!("{} (n={})", percentage_points(v, Some((l, h)), PointsStyle::PROSE_FINE), r.n)
        }
        _ => "–".into(),
    }
}

/// Points by their number (`#` of the headline table): one short key keeps every table narrow.
fn label(plan: &crate::data::Plan, id: &str) -> String {
    plan.point_number(id).map(|n| n.to_string()).unwrap_or_else(|| id.to_string())
}

/// The probes page's two sections, or `None` when the run scored no probes: the figures of every point
/// (`comparisons`, Markdown, after its tables), and their breakdowns by source, kind, origin and
/// compression ordinal.
pub fn markdown_sections(
    plan: &crate::data::Plan,
    cells: &[CellResult],
    comparisons: &str,
) -> Option<(String, String)> {
    use std::fmt::Write;
    let figs = all_point_figures(plan, cells);
    if figs.iter().all(|(_, f)| f.is_none()) {
        return None;
    }
    let label = |id: &str| label(plan, id);
    let mut md = String::from("## Probes\n\n");
    md.push_str(&format!(
        "*Early-only retention*: share of each conversation's early-only probes (gold only before the final stretch \
         of {} of the recording's text, never restated later) whose gold is in the final history; `none` is 1.0 \
         by construction. *At-risk retention*: over (probe, compression) pairs where the strategy no longer holds \
         the evidence verbatim and no gold survives verbatim, the share the snapshot still holds. *Retention*: \
         unconditional, at the end. *Retrieval accuracy*: the `extractive` answerer's passage contains a gold. \
         *Verification gain*: retained with the verified minus the first-pass summary, over probes at verified \
         compressions. Pooled rates, n = probes (or probe × compression pairs), 95 % bootstrap intervals over \
         conversations. Points are numbered as in the headline table.\n\n",
        percent(Some(Share::Fraction(FINAL_STRETCH_SHARE)), PercentStyle::PROSE_WHOLE)
    ));
    md.push_str("| # | early-only retention ↑ | at-risk retention ↑ | retention (end) ↑ |\n|---|---|---|---|\n");
    for (id, f) in &figs {
        let Some(f) = f else { continue };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            label(id),
            fmt_rate(&f.rate(FigureId::EarlyOnlyRetention)),
            fmt_rate(&f.rate(FigureId::AtRiskRetention)),
            fmt_rate(&f.rate(FigureId::Retention)),
        );
    }
    md.push_str("\n| # | retrieval accuracy ↑ | verification gain ↑ |\n|---|---|---|\n");
    for (id, f) in &figs {
        let Some(f) = f else { continue };
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            label(id),
            fmt_rate(&f.rate(FigureId::RetrievalAccuracy)),
            fmt_gain(&f.rate(FigureId::VerificationRetentionGain))
        );
    }
    md.push_str(comparisons);
    md.push('\n');
    let mut by = String::from(
        "## Breakdowns\n\nEach figure of every point by source, probe kind, origin and compression ordinal (after the \
         1st, 2nd, … compression of a conversation).\n",
    );
    for axis in ["source", "kind", "origin", "ordinal"] {
        let _ = writeln!(by, "\n### By {axis}\n");
        by.push_str("| # | figure | value | rate |\n|---|---|---|---|\n");
        for (id, f) in &figs {
            let Some(f) = f else { continue };
            for b in f.breakdown.iter().filter(|b| b.by == axis) {
                let _ = writeln!(by, "| {} | {} | {} | {} |", label(id), b.figure, b.value, fmt_rate(&b.rate));
            }
        }
    }
    by.push('\n');
    Some((md, by))
}
