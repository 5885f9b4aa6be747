//! `report.md`: its sections in order, each written by its own function from the tables, findings and
//! plots the sibling modules build.

use super::findings::probe_comparisons;
use super::tables::{configuration_slices, configuration_table, pareto_key_table};
use super::{
    aggregate, cell_count, comparisons, corpus, findings, headline, kinds, scopes_tables, sources_table,
    split_variants_table, supports, systems, triggers_table, varying_axes, Against, PlotList,
};
use crate::data::{CellResult, ConfigPoint, Plan};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// The whole of `report.md`.
pub(super) fn report(
    run_dir: &Path,
    plan: &Plan,
    cells: &[CellResult],
    scopes: &[aggregate::ScopeFigures],
    claims: &[supports::Claim],
    plots: &PlotList,
    wide: bool,
) -> String {
    let mut md = String::new();
    headline_section(&mut md, plan, cells, wide);
    md.push_str(&supports::markdown(plan, cells, claims));
    scopes_section(&mut md, plan, scopes);
    comparisons_section(&mut md, plan, cells);
    sources_section(&mut md, plan, cells);
    findings_section(&mut md, plan, cells, scopes);
    md.push_str(&super::probe_section::markdown_section(plan, cells, &probe_comparisons(plan, cells)));
    kinds_section(&mut md, plan, cells);
    systems_section(&mut md, plan, cells);
    plots_section(&mut md, run_dir, plots);
    md.push_str("\n## Corpus\n\n");
    md.push_str(&corpus(plan, cells).markdown());
    configuration_section(&mut md, plan);
    md.push_str("Results: `results/{events,conversations,points}.{parquet,csv,json}`, `results/probes.{csv,parquet}`; raw cells: `cells/`.\n");
    md
}

/// Title, cell count, and the headline table with how its figures are defined.
fn headline_section(md: &mut String, plan: &Plan, cells: &[CellResult], wide: bool) {
    let _ = writeln!(md, "# compactbench report: {}\n", plan.name);
    let _ = writeln!(md, "{}\n", cell_count(plan, cells));
    md.push_str("## Headline\n\n");
    let _ = writeln!(
        md,
        "Every token figure is a request as it would be sent (system prompt + tool declarations + history + pending turn) counted with `{}`; *tokens vs none* is Σ (request + summarizer tokens) / Σ request tokens of the same conversations without compression (a ratio of sums, lower is cheaper); *USD vs none* is the same in USD at the configured prices; *cached USD* bills each request's prefix shared with the previous request at the cached input price. Every figure here is pooled over all conversations; per source and over the conversations a strategy can act on: *Headline by scope*. Intervals are bootstrap 95 % intervals over conversations ({} resamples, seed {:#x}). Definitions: `harness/docs/metrics.md`.\n",
        plan.replay.tokenizer.name(),
        crate::stats::BOOTSTRAP_RESAMPLES,
        crate::stats::BOOTSTRAP_SEED
    );
    md.push_str(&headline(plan, cells, wide, true));
    md.push_str("\n\n");
}

/// Each strategy's default point per scope: cost, retention, storms.
fn scopes_section(md: &mut String, plan: &Plan, scopes: &[aggregate::ScopeFigures]) {
    md.push_str("## Headline by scope\n\nThe default point of each strategy over every conversation (*pooled*, diluted by conversations it cannot act on), over the conversations it can act on (*actionable*: it compressed, or the uncompressed replay reaches its trigger and has a split candidate), and per source. Points by `#` (the headline table's numbers); Δ: point − reference, paired by conversation over the same scope (for *actionable*: the conversations either can act on, their number as n= where it differs from the row's), 95 % cluster-bootstrap intervals; n of every figure in `results/scopes.csv`.\n\n");
    let [cost, quality, storms] = scopes_tables(plan, scopes);
    md.push_str("Cost:\n\n");
    md.push_str(&cost.markdown());
    md.push_str("\n\nWhat the history keeps:\n\n");
    md.push_str(&quality.markdown());
    md.push_str("\n\nHow often it compresses, and compressions that leave the request at or above the trigger:\n\n");
    md.push_str(&storms.markdown());
}

/// Paired comparisons against `none` and against the reference point, pooled and per source.
fn comparisons_section(md: &mut String, plan: &Plan, cells: &[CellResult]) {
    let reference = aggregate::reference_point(plan);
    let _ = write!(
        md,
        "\n\n## Comparisons\n\nEach configuration (`#` as in the headline table) minus `none`, then minus the reference point (#{} `{}`), paired per conversation (the same conversations and probes on both sides; cluster bootstrap: conversations resampled jointly): differences in percentage points with 95 % intervals. Which of them the data supports (interval excluding 0, sign kept with any one conversation left out): *What this run supports*.\n\n### All sources (pooled)\n\n",
        reference.and_then(|r| plan.point_number(&r.id)).map(|n| n.to_string()).unwrap_or_default(),
        reference.map(ConfigPoint::short_label).unwrap_or_default()
    );
    let sources: BTreeSet<&str> = cells.iter().map(|c| c.source.as_str()).filter(|s| !s.is_empty()).collect();
    for source in std::iter::once(None).chain(sources.into_iter().map(Some)) {
        if let Some(s) = source {
            let _ = write!(md, "\n\n### {s}\n\n");
        }
        md.push_str("Against `none`:\n\n");
        md.push_str(&comparisons(plan, cells, source, Against::NoCompression).markdown());
        md.push_str("\n\nAgainst the reference point:\n\n");
        md.push_str(&comparisons(plan, cells, source, Against::Reference).markdown());
    }
}

/// Per source under the reference point: splittability, triggers, and the historical split variants.
fn sources_section(md: &mut String, plan: &Plan, cells: &[CellResult]) {
    md.push_str("\n\n## Sources under the reference point\n\n");
    md.push_str("Unsplittable: the recorded history has no split candidate (a user turn without function responses) after its first Content. *Trigger sees*: what the trigger saw as the last prompt count.\n\n");
    md.push_str(&sources_table(plan, cells).markdown());
    md.push_str("\n\nWhere the trigger sits and how often it fires. *Trigger ≤ 1st request*: conversations whose first request (system prompt + tools + first turn) already reaches the trigger (`trigger_below_overhead`). *Compressions*: COMPRESSED and CONTENT_TRUNCATED events. *Storms*: compressions that leave the request at or above the trigger, so the next request compresses again (`storm_events`).\n\n");
    md.push_str(&triggers_table(plan, cells).markdown());
    if let Some(t) = split_variants_table(plan, cells) {
        md.push_str("\n\nWhere each historical `findCompressSplitPoint` variant would split the unsplittable histories (the history before the last request, keeping 30 %):\n\n");
        md.push_str(&t.markdown());
    }
    md.push_str("\n\n");
}

/// The findings as a list (nothing without any).
fn findings_section(md: &mut String, plan: &Plan, cells: &[CellResult], scopes: &[aggregate::ScopeFigures]) {
    let f = findings(plan, cells, scopes);
    if !f.is_empty() {
        md.push_str("## Findings\n\n");
        for x in f {
            let _ = writeln!(md, "- {x}");
        }
        md.push('\n');
    }
}

/// Retention at the compression points by probe kind (when the run has probes).
fn kinds_section(md: &mut String, plan: &Plan, cells: &[CellResult]) {
    if let Some(t) = kinds::table(plan, cells) {
        md.push_str("## At the compression points, by probe kind\n\n");
        md.push_str("*Kept at compressions* (`kept_at_compressions`): over (probe, compression) pairs, probes whose evidence lies before the compression, the share whose gold the history holds right after it (0 from the conversation's first request over the window on); per kind, for each strategy's default point that compressed. *Pairs*: probe × compression scorings; *compressions*: that point's compressions in the conversations scored. Δ: paired by conversation against the agent's own compaction (`recorded`, where the plan has it) and against the reference, 95 % cluster-bootstrap intervals; ✓ marks an established difference (interval excludes 0 and no one conversation, left out, turns its sign). With `compress_at = \"recorded\"` every strategy compresses at the agent's own points, so both sides are the same compactions.\n\n");
        md.push_str(&t.markdown());
        md.push_str("\n\n");
    }
}

/// One row per agent's modelled policy (when the plan has them).
fn systems_section(md: &mut String, plan: &Plan, cells: &[CellResult]) {
    if let Some(t) = systems::per_system(plan, cells) {
        md.push_str("## Per system\n\n");
        md.push_str("Each agent's policy as modelled in `replay/strategies/` (`compactbench strategies`). *Tokens vs none*: the sum of every request's size and the summarizer's tokens against the same replay without compression; *early-only retention*: share of the probes whose answer only the early history holds that are still answerable from the final history; *compressions*: COMPRESSED and CONTENT_TRUNCATED events; *storms*: compressions that left the request at or above the strategy's own trigger (– where the trigger is not a token count); *overflows*: requests larger than the window.\n\n");
        md.push_str(&t.markdown());
        md.push_str("\n\n");
    }
}

/// Every plot written, linked relative to the run directory, the Pareto key, and the plots not drawn.
fn plots_section(md: &mut String, run_dir: &Path, plots: &PlotList) {
    md.push_str("## Plots\n\n");
    for (caption, files) in &plots.written {
        let rel = files.png.strip_prefix(run_dir).unwrap_or(&files.png).display().to_string();
        let svg = files.svg.strip_prefix(run_dir).unwrap_or(&files.svg).display().to_string();
        let _ = writeln!(md, "![{caption}]({rel})\n\n*{caption}* ([SVG]({svg}))\n");
    }
    if !plots.pareto_key.is_empty() {
        let key = pareto_key_table(&plots.pareto_key);
        md.push_str("Pareto plot key:\n\n");
        md.push_str(&key.markdown());
        md.push_str("\n\n");
    }
    for e in &plots.failed {
        let _ = writeln!(md, "- not drawn: {e}");
    }
}

/// Replay settings, prices, and the configuration keys: one table for the main grid and one per slice,
/// each with the axes that vary in it (a slice's points show every axis that varies anywhere in the plan).
fn configuration_section(md: &mut String, plan: &Plan) {
    md.push_str("\n\n## Configuration\n\n");
    let replay = serde_json::to_string_pretty(&plan.replay).unwrap_or_default();
    let _ = writeln!(md, "Replay settings:\n\n```json\n{replay}\n```\n");
    let cost = serde_json::to_string_pretty(&plan.cost).unwrap_or_default();
    let _ = writeln!(md, "Prices (USD per million tokens):\n\n```json\n{cost}\n```\n");
    let all_varying = varying_axes(&plan.points.iter().collect::<Vec<_>>());
    for slice in configuration_slices(plan) {
        let varying = match slice {
            None => varying_axes(&plan.points.iter().filter(|p| p.slice.is_none()).collect::<Vec<_>>()),
            Some(name) => {
                let _ = writeln!(md, "Slice `{name}`:\n");
                all_varying.clone()
            }
        };
        md.push_str(&configuration_table(plan, slice, &varying).markdown());
        md.push_str("\n\n");
    }
}
