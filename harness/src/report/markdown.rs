//! The report's pages, each section written by its own function from the tables, findings and plots the
//! sibling modules build: `report.md` leads with what the run supports, a short headline, the headline by
//! scope and the plots, on one page; `details.md` holds every point, the comparisons per source, the sources,
//! the findings, the corpus and the configuration; `probes.md` every probe figure.

use super::findings::probe_comparisons;
use super::tables::{configuration_slices, configuration_table, pareto_key_table};
use super::{
    aggregate, cell_count, claims, comparisons, corpus, findings, grader_check, probe_kinds, scopes_tables,
    sources_table, split_variants_table, systems, triggers_table, PlotList,
};
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::FigureId;
use crate::report::summary::{notable_points, short_table, summarize, table_at, Notable, PointSummary, TableOptions};
use crate::verdict;
use crate::verdict::claims::Against;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// The main page: the file `report` writes it to.
pub const MAIN: &str = "report.md";
/// The page of details next to it.
pub const DETAILS: &str = "details.md";
/// The page of probe figures next to it.
pub const PROBES: &str = "probes.md";

/// The main page's sections (`##`), in order; any of them may be left out where the run has nothing to
/// show in it. Everything else goes to [`DETAILS`] or [`PROBES`].
pub const MAIN_SECTIONS: [&str; 6] =
    ["Conversations that failed", "What this run supports", "Headline", "Headline by scope", "Per system", "Plots"];

/// How the pages are written: wide tables; whether `compactions.md` is written beside them (linked from
/// the main page).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PageOptions {
    pub wide: bool,
    pub compactions_page: bool,
}

/// The report's pages: the main one (`report.md`) and the two it links.
pub(super) struct Pages {
    pub main: String,
    pub details: String,
    pub probes: String,
}

/// The cells a report's figures read ([`verdict::labels::scored_cells`]: the gradable kinds' scores), every
/// cell as stored (for the grader's check and the per-kind table, which show every kind), and the labels'
/// verdict.
#[derive(Clone, Copy)]
pub(super) struct Scored<'a> {
    pub cells: &'a [CellResult],
    pub all_cells: &'a [CellResult],
    pub labels: &'a verdict::labels::Labels,
}

/// Every page of the report.
pub(super) fn pages(
    run_dir: &Path,
    plan: &Plan,
    scored: Scored,
    scopes: &[aggregate::ScopeFigures],
    claims: &[verdict::claims::Claim],
    plots: &PlotList,
    options: PageOptions,
) -> Pages {
    let wide = options.wide;
    let (cells, labels) = (scored.cells, scored.labels);
    let summaries = summarize(plan, cells);
    let mut main = main_page(plan, cells, &summaries, scopes, claims, labels, options);
    plots_section(&mut main, run_dir, plots);
    Pages { main, details: details_page(plan, cells, &summaries, scopes, wide), probes: probes_page(plan, scored) }
}

/// `report.md` up to its plots: one page of what matters, with a line per page next to it saying what that
/// page holds.
fn main_page(
    plan: &Plan,
    cells: &[CellResult],
    summaries: &[PointSummary],
    scopes: &[aggregate::ScopeFigures],
    claims: &[verdict::claims::Claim],
    labels: &verdict::labels::Labels,
    PageOptions { wide, compactions_page }: PageOptions,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# compactbench report: {}\n", plan.name);
    let _ = writeln!(
        md,
        "{}
",
        cell_count(plan, cells)
    );
    md.push_str("This page: what the run supports, the headline, the headline by scope and the plots. Next to it:\n\n");
    let _ = writeln!(
        md,
        "- [{DETAILS}]({DETAILS}): every configuration point (slices and the probe figures per kind included), the headline per source, the paired comparisons per source, the sources under the reference point, the findings, the corpus and the configuration."
    );
    let grader = if matches!(labels, verdict::labels::Labels::Unset) { "" } else { ", the grader against labels" };
    let _ = writeln!(
        md,
        "- [{PROBES}]({PROBES}): the probe figures of every point, the paired probe comparisons{grader}, what each strategy keeps at the compression points by probe kind, and the breakdowns by source, kind, origin and compression ordinal."
    );
    if compactions_page {
        let page = super::rework::PAGE;
        let _ = writeln!(
            md,
            "- [{page}]({page}): what the agent did after each of its own compactions (files read again, commands run again, prompts restated, turns to its next edit), the chain of summaries by ordinal, each compaction's cost in the prompt cache, and the cache model against the recorded usage."
        );
    }
    md.push_str("- `results/`: every figure with its n and interval, `{events,conversations,points,scopes}.{parquet,csv,json}`, `claims.{csv,json}`, `probes.{csv,parquet}`; raw cells: `cells/`.\n\n");
    failed_section(&mut md, cells);
    md.push_str(&claims::markdown(plan, cells, claims));
    if let Some(line) = grader_check::main_line(labels, PROBES) {
        let _ = writeln!(md, "{line}\n");
    }
    headline_section(&mut md, plan, summaries, wide);
    scopes_section(&mut md, plan, scopes);
    systems_section(&mut md, plan, cells);
    md
}

/// `details.md`: every point, the headline per source, the comparisons, the sources, the findings, the
/// corpus and the configuration.
fn details_page(
    plan: &Plan,
    cells: &[CellResult],
    summaries: &[PointSummary],
    scopes: &[aggregate::ScopeFigures],
    wide: bool,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# compactbench report: {}, details\n", plan.name);
    let _ = writeln!(
        md,
        "The details behind [{MAIN}]({MAIN}) (what the run supports, the headline, the plots). Probe figures: [{PROBES}]({PROBES}).\n"
    );
    md.push_str("## Every point\n\n");
    let _ = writeln!(
        md,
        "Every configuration point, numbered `#` as throughout the report, each slice in a table of its own, with the probe figures per kind under each table; the figures are defined under *Headline* in [{MAIN}]({MAIN}).\n"
    );
    let scopes_at = format!("*Headline by scope* in {MAIN}, *Headline by source* below, results/scopes.csv");
    md.push_str(&table_at(summaries, TableOptions { wide, intervals: true, markdown: true }, &scopes_at));
    md.push_str("\n\n");
    sources_scope_section(&mut md, plan, scopes);
    comparisons_section(&mut md, plan, cells);
    sources_section(&mut md, plan, cells);
    findings_section(&mut md, plan, cells, scopes);
    md.push_str("## Corpus\n\n");
    md.push_str(&corpus(plan, cells).markdown());
    configuration_section(&mut md, plan);
    md.push_str("Results: `results/{events,conversations,points,scopes}.{parquet,csv,json}`, `results/claims.{csv,json}`, `results/probes.{csv,parquet}`; raw cells: `cells/`.\n");
    md
}

/// `probes.md`: the probe figures of every point, what each strategy keeps at the compression points by
/// kind, then the breakdowns.
fn probes_page(plan: &Plan, scored: Scored) -> String {
    let (cells, labels) = (scored.cells, scored.labels);
    let mut md = String::new();
    let _ = writeln!(md, "# compactbench report: {}, probes\n", plan.name);
    let _ = writeln!(
        md,
        "The probe figures behind [{MAIN}]({MAIN}); points are numbered `#` as in [{DETAILS}]({DETAILS}#every-point).\n"
    );
    let Some((figures, breakdowns)) =
        super::probe_section::markdown_sections(plan, cells, &probe_comparisons(plan, cells))
    else {
        md.push_str("This run scored no probes.\n");
        return md;
    };
    md.push_str(&figures);
    md.push_str(&grader_check::markdown(labels));
    kinds_section(&mut md, plan, scored.all_cells, labels.gradability().as_ref());
    md.push_str(&super::kept_by::markdown(plan, cells));
    md.push_str(&breakdowns);
    md
}

/// The headline: how its figures are defined, then the short table ([`notable_points`]) and how its rows
/// were chosen.
fn headline_section(md: &mut String, plan: &Plan, summaries: &[PointSummary], wide: bool) {
    md.push_str("## Headline\n\n");
    let _ = writeln!(
        md,
        "Every token figure is a request as it would be sent (system prompt + tool declarations + history + pending turn) counted with `{}`; *tokens vs none* is Σ (request + summarizer tokens) / Σ request tokens of the same conversations without compression (a ratio of sums, lower is cheaper); *USD vs none* is the same in USD at the configured prices; *cached USD* bills each request's prefix shared with the previous request at the cached input price. Every figure here is pooled over all conversations; per source and over the conversations a strategy can act on: *Headline by scope*. Intervals are bootstrap 95 % intervals over conversations ({} resamples, seed {:#x}). Definitions: `harness/docs/metrics.md`.\n",
        plan.replay.tokenizer.name(),
        crate::stats::BOOTSTRAP_RESAMPLES,
        crate::stats::BOOTSTRAP_SEED
    );
    let quality =
        if summaries.iter().any(|s| s.figures.contains_key(&QUALITY)) { QUALITY } else { FigureId::Retention };
    let notable = notable_points(summaries, quality);
    let shown: Vec<usize> = notable.iter().map(|(i, _)| *i).collect();
    md.push_str(&short_table(
        summaries,
        &shown,
        TableOptions { wide, intervals: true, markdown: true },
        "*Headline by scope* below, results/scopes.csv",
    ));
    let list = |why: Notable| {
        let numbers: Vec<String> =
            notable.iter().filter(|(_, w)| *w == why).map(|(i, _)| format!("#{}", i + 1)).collect();
        (!numbers.is_empty()).then(|| numbers.join(", "))
    };
    let mut rows = format!("\n\nRows: each strategy's default point ({})", list(Notable::Default).unwrap_or_default());
    let better: Vec<String> = [
        list(Notable::Cheapest).map(|l| format!("its cheapest by tokens vs none ({l})")),
        list(Notable::BestQuality).map(|l| format!("its best by {} ({l})", quality.metric().header)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !better.is_empty() {
        let _ = write!(
            rows,
            " and, where another of its points does better by the point estimate, {}",
            better.join(" and ")
        );
    }
    let main = plan.points.iter().filter(|p| p.slice.is_none()).count();
    let slices = plan.points.len() - main;
    let _ = write!(
        rows,
        ". All {main} points of the grid{}, with the probe figures per kind: [{DETAILS}]({DETAILS}#every-point); their cost and {} in the Pareto plot's key under *Plots*.\n\n",
        match slices {
            0 => String::new(),
            1 => " and the point of its slice".to_string(),
            n => format!(" and the {n} points of its slices"),
        },
        quality.metric().header
    );
    md.push_str(&rows);
}

/// The quality figure the headline picks a strategy's best point by (as the Pareto plot), when the run
/// scored probes; `retention` otherwise.
const QUALITY: FigureId = FigureId::EarlyOnlyRetention;

/// Each strategy's default point per scope: cost, retention, storms.
fn scopes_section(md: &mut String, plan: &Plan, scopes: &[aggregate::ScopeFigures]) {
    md.push_str("## Headline by scope\n\nThe default point of each strategy over every conversation (*pooled*, diluted by conversations it cannot act on) and over the conversations it can act on (*actionable*: it compressed, or the uncompressed replay reaches its trigger and has a split candidate); per source: ");
    let _ = write!(md, "[{DETAILS}]({DETAILS}#headline-by-source). ");
    md.push_str("Points by `#` (the headline table's numbers); Δ: point − reference, paired by conversation over the same scope (for *actionable*: the conversations either can act on, their number as n= where it differs from the row's), 95 % cluster-bootstrap intervals; n of every figure in `results/scopes.csv`.\n\n");
    scope_tables(md, plan, scopes, |s| !matches!(s, aggregate::Scope::Source(_)));
    md.push_str("\n\n");
}

/// The same tables per source (in `details.md`).
fn sources_scope_section(md: &mut String, plan: &Plan, scopes: &[aggregate::ScopeFigures]) {
    if !scopes.iter().any(|r| matches!(r.scope, aggregate::Scope::Source(_))) {
        return;
    }
    let _ = write!(
        md,
        "## Headline by source\n\n*Headline by scope* in [{MAIN}]({MAIN}) per source: the default point of each strategy over one source's conversations. Δ: point − reference, paired by conversation over the same source, 95 % cluster-bootstrap intervals; n of every figure in `results/scopes.csv`.\n\n"
    );
    scope_tables(md, plan, scopes, |s| matches!(s, aggregate::Scope::Source(_)));
    md.push_str("\n\n");
}

/// The three scope tables (cost, what the history keeps, storms) over the scopes `keep` lets through.
fn scope_tables(md: &mut String, plan: &Plan, scopes: &[aggregate::ScopeFigures], keep: fn(&aggregate::Scope) -> bool) {
    let [cost, quality, storms] = scopes_tables(plan, scopes, keep);
    md.push_str("Cost:\n\n");
    md.push_str(&cost.markdown());
    md.push_str("\n\nWhat the history keeps:\n\n");
    md.push_str(&quality.markdown());
    md.push_str("\n\nHow often it compresses, and compressions that leave the request at or above the trigger:\n\n");
    md.push_str(&storms.markdown());
}

/// Paired comparisons against `none` and against the reference point, pooled and per source.
fn comparisons_section(md: &mut String, plan: &Plan, cells: &[CellResult]) {
    let reference = plan.reference_point();
    let _ = write!(
        md,
        "## Comparisons\n\nEach configuration (`#` as in the headline table) minus `none`, then minus the reference point (#{} `{}`), paired per conversation (the same conversations and probes on both sides; cluster bootstrap: conversations resampled jointly): differences in percentage points with 95 % intervals. Which of them the data supports (interval excluding 0, sign kept with any one conversation left out): *What this run supports* in [{MAIN}]({MAIN}).\n\n### All sources (pooled)\n\n",
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

/// Retention at the compression points by probe kind (when the run has probes); with `gradable`, the kinds
/// the grader is not trusted on are marked and draw no difference.
fn kinds_section(md: &mut String, plan: &Plan, cells: &[CellResult], gradable: Option<&verdict::labels::Gradability>) {
    if let Some(t) = probe_kinds::table(plan, cells, gradable) {
        md.push_str("## At the compression points, by probe kind\n\n");
        md.push_str("*Kept at compressions* (`kept_at_compressions`): over (probe, compression) pairs, probes whose evidence lies before the compression, the share whose gold the history holds right after it (0 from the conversation's first request over the window on); per kind, for each strategy's default point that compressed. n: that strategy's own probe × compression pairs (a strategy that did not act at a compaction has fewer); *compressions*: that point's compressions in the conversations scored. Δ: paired by conversation against the agent's own compaction (`recorded`, where the plan has it) and against the reference, 95 % cluster-bootstrap intervals; ✓ marks an established difference (interval excludes 0 and no one conversation, left out, turns its sign). With `compress_at = \"recorded\"` every strategy compresses at the agent's own points, so both sides are the same compactions.");
        if let Some(g) = gradable {
            let all = if g.gradable().is_empty() {
                "no kind is gradable, so the `all` rows draw no difference either".to_string()
            } else {
                format!("the `all` rows pool the gradable kinds only ({})", g.gradable_list())
            };
            let _ = write!(
                md,
                " Kinds on which the grader disagrees with the labels (*Grader against labels* above) are marked *{}* and no difference is drawn from them; {all}.",
                verdict::labels::NOT_GRADABLE,
            );
        }
        md.push_str("\n\n");
        md.push_str(&t.markdown());
        md.push_str("\n\n");
    }
}

/// The conversations whose cells hold an error (a file that could not be read, a replay that stopped), each
/// with its first error: the figures are over the others (issue #36: one failure no longer withholds the
/// report of the rest).
fn failed_section(md: &mut String, cells: &[CellResult]) {
    let failed = super::failed_conversations(cells);
    if failed.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Conversations that failed

{} conversation(s) hold an error in at least one cell; every figure below is over the cells without one. `run` exits with status {} (incomplete) until they are fixed or removed.
",
        failed.len(),
        crate::exit::EXIT_INCOMPLETE
    );
    for f in &failed {
        let _ = writeln!(md, "- `{}` ({} of its cells): {}", f.conversation, f.cells, f.reason);
    }
    md.push('\n');
}

/// One row per agent's modelled policy (when the plan has them).
fn systems_section(md: &mut String, plan: &Plan, cells: &[CellResult]) {
    if let Some(t) = systems::per_system(plan, cells) {
        md.push_str("## Per system\n\n");
        md.push_str("Each agent's policy as modelled in `replay/strategies/` (`compactbench strategies`). *Tokens vs none*: the sum of every request's size and the summarizer's tokens against the same replay without compression; *early-only retention*: share of the probes whose answer only the early history holds that are still answerable from the final history; *compressions*: COMPRESSED and CONTENT_TRUNCATED events; *storms*: compressions that left the request at or above the strategy's own trigger (– where the trigger is not a token count); *overflows*: requests larger than the window; *invalid*: requests right after a compression that a provider would reject for a fault the compression introduced (an orphaned function call or response, roles out of turn, an empty part; `invalid_requests`).\n\n");
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
    let all_varying = crate::data::plan::varying_axes(&plan.points.iter().collect::<Vec<_>>());
    for slice in configuration_slices(plan) {
        let varying = match slice {
            None => {
                crate::data::plan::varying_axes(&plan.points.iter().filter(|p| p.slice.is_none()).collect::<Vec<_>>())
            }
            Some(name) => {
                let _ = writeln!(md, "Slice `{name}`:\n");
                all_varying.clone()
            }
        };
        md.push_str(&configuration_table(plan, slice, &varying).markdown());
        md.push_str("\n\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::config::SweepConfig;

    fn plan_of(file: &str) -> Plan {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        SweepConfig::load(&root.join(file)).unwrap().plan_without_conversations().unwrap()
    }

    /// The lines of one `##` section of a page.
    fn section<'a>(page: &'a str, name: &str) -> Vec<&'a str> {
        let start = page.find(&format!("\n## {name}\n")).unwrap_or_else(|| panic!("no section {name}: {page}"));
        page[start + 1..].lines().skip(1).take_while(|l| !l.starts_with("## ")).collect()
    }

    /// The main page of the default grid holds the fixed sections only, in their order, links the two other
    /// pages and never sends the reader to itself; its headline table holds at most three rows per strategy
    /// (19 points in the plan); every point is in `details.md`.
    #[test]
    fn the_main_page_holds_its_sections_only_and_a_short_headline() {
        let plan = plan_of("configs/default.toml");
        let key = (1..=plan.points.len()).map(|i| (i, format!("point {i}"), 0.9, 0.4)).collect();
        let plots = PlotList { pareto_key: key, ..Default::default() };
        let pages = pages(
            Path::new("/run"),
            &plan,
            Scored { cells: &[], all_cells: &[], labels: &verdict::labels::Labels::Unset },
            &[],
            &[],
            &plots,
            PageOptions::default(),
        );
        let sections: Vec<&str> = pages.main.lines().filter_map(|l| l.strip_prefix("## ")).collect();
        let order: Vec<usize> = sections
            .iter()
            .map(|s| MAIN_SECTIONS.iter().position(|m| m == s).unwrap_or_else(|| panic!("{s}: not a main section")))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{sections:?}");
        assert!(sections.contains(&"What this run supports") && sections.contains(&"Headline"), "{sections:?}");
        assert!(!pages.main.contains(MAIN), "{}", pages.main);
        for page in [DETAILS, PROBES] {
            assert!(pages.main.contains(&format!("- [{page}]({page}): ")), "{page} not linked");
        }
        let mut per_strategy: std::collections::BTreeMap<&str, usize> = Default::default();
        for row in section(&pages.main, "Headline").into_iter().filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
        {
            *per_strategy.entry(row.split('|').nth(2).unwrap().trim()).or_default() += 1;
        }
        assert_eq!(per_strategy.len(), 5, "{per_strategy:?}");
        assert!(per_strategy.values().all(|&n| n <= 3), "{per_strategy:?}");
        let every = section(&pages.details, "Every point");
        for n in 1..=plan.points.len() {
            assert!(every.iter().any(|l| l.starts_with(&format!("| {n} "))), "#{n} missing from {DETAILS}");
        }
        assert!(pages.details.contains("\n## Configuration\n") && pages.probes.contains("no probes"));
    }
}
