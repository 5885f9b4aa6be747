//! Reports: aggregation of a run's stored cells, tables, Markdown and plots, rendering the verdicts of
//! [`crate::verdict`] (the claims, the gate, the grader check).
//!
//! Everything is rebuilt from the run directory (`plan.json`, `cells/`), so `compactbench report RUN_DIR`
//! reproduces a report byte for byte.
//!
//! This module runs the stages ([`build_with_progress`]); `tables` builds the tables, `findings` the
//! sentences computed from the data, `plot_list` the plots, `markdown` assembles the pages: `report.md` (one
//! page of what matters) and, linked from it, `details.md` and `probes.md`.

pub mod aggregate;
pub mod claims;
pub mod compare_runs;
mod findings;
pub mod findings_page;
pub mod grader_check;
mod kept_by;
mod markdown;
mod plot_list;
pub mod plots;
pub mod probe_kinds;
mod probe_section;
pub mod rework;
pub mod summary;
pub mod systems;
mod tables;

// The builders keep their paths under `report::` (callers and the sibling modules name them there).
pub use findings::findings;
pub use markdown::{DETAILS, MAIN, MAIN_SECTIONS, PROBES};
pub use plot_list::{draw_plots, PlotList};
pub use tables::{comparisons, corpus, scopes_tables, sources_table, split_variants_table, triggers_table};

use crate::data::store::{self, Stage, StoreError};
use crate::data::{CellResult, Plan};
use crate::metrics;
use crate::report::summary::{summarize, table, TableOptions};
use crate::verdict;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Per-point metric values over its conversations (one per conversation where the metric applies).
pub fn metric_values(plan: &Plan, cells: &[CellResult], point: &str, metric: metrics::FigureId) -> Vec<f64> {
    let pricing = plan.points.iter().find(|p| p.id == point).and_then(|p| metrics::point_pricing(plan, p));
    cells
        .iter()
        .filter(|c| c.cell.point == point)
        .filter_map(|c| metrics::conversation_values(c, pricing.as_ref()).get(&metric).copied())
        .collect()
}

/// The headline table: one row per config point (the same table `run` prints, with intervals).
pub fn headline(plan: &Plan, cells: &[CellResult], wide: bool, markdown: bool) -> String {
    let summaries = summarize(plan, cells);
    table(&summaries, TableOptions { wide, intervals: true, markdown })
}

/// What `report` produced.
pub struct ReportOutput {
    /// The main page, `report.md`.
    pub markdown_path: PathBuf,
    /// Every page written: the main one, then the pages it links (`details.md`, `probes.md`).
    pub pages: Vec<PathBuf>,
    pub terminal: String,
    pub plots: PlotList,
}

/// The line `run`, `merge` and `report` end with: the pages written, the plots and the results directory.
pub fn written_line(out: &ReportOutput) -> String {
    let pages: Vec<String> = out.pages.iter().map(|p| p.display().to_string()).collect();
    let results = out.markdown_path.parent().map(|d| d.join("results").display().to_string()).unwrap_or_default();
    format!("written: {} ({} plots); results in {results}/", pages.join(", "), out.plots.written.len())
}

/// Why `report` could not rebuild a run's outputs.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The run directory has no readable plan.
    #[error(transparent)]
    Plan(#[from] StoreError),
    /// The cells could not be turned into tables (a damaged cell that passed the loader's checks).
    #[error("{}: aggregation: {source}", .run_dir.display())]
    Aggregate { run_dir: PathBuf, source: polars::error::PolarsError },
    /// A results file could not be written.
    #[error("{}: {source}", .path.display())]
    Results { path: PathBuf, source: polars::error::PolarsError },
    #[error(transparent)]
    Write(#[from] crate::fsutil::WriteError),
    /// The findings manifest, a page it reads, or the README's box cannot be used.
    #[error(transparent)]
    Findings(#[from] findings_page::FindingsError),
}

/// Rebuilds results, plots and the report's pages (`report.md`, `details.md`, `probes.md`) from a run
/// directory.
pub fn build(run_dir: &Path, wide: bool) -> Result<ReportOutput, ReportError> {
    build_with_progress(run_dir, wide, &mut |_: &Stage| {})
}

/// [`build`], announcing each stage to `progress` as it starts (the CLI prints them with the time left: a
/// report of a large run takes a while).
pub fn build_with_progress(
    run_dir: &Path,
    wide: bool,
    progress: &mut dyn FnMut(&Stage),
) -> Result<ReportOutput, ReportError> {
    let mut stage = |name: String, done_share: f64| progress(&Stage { name, done_share });
    stage("reading cells".into(), 0.0);
    let plan = store::load_plan(run_dir)?;
    let all_cells = store::collect(run_dir, &plan);
    // Every probe figure pools the kinds the grader is trusted on (`verdict::labels::scored_cells`); the probe
    // rows and the grader's own check read every kind. Without labels both are the cells as stored.
    let labels = verdict::labels::check(&plan, &all_cells);
    let cells: std::borrow::Cow<[CellResult]> = match labels.gradability() {
        Some(g) => {
            let mut scored = all_cells.clone();
            verdict::labels::retain_kinds(&mut scored, &g.gradable());
            std::borrow::Cow::Owned(scored)
        }
        None => std::borrow::Cow::Borrowed(&all_cells),
    };
    stage(format!("figures of {} cells by scope", cells.len()), 0.01);
    let scopes = aggregate::scope_figures(&plan, &cells);
    stage("results files".into(), 0.25);
    let mut frames = aggregate::frames(&plan, &cells, &scopes)
        .map_err(|source| ReportError::Aggregate { run_dir: run_dir.to_path_buf(), source })?;
    let results = run_dir.join("results");
    aggregate::write_frames(&mut frames, &results)
        .map_err(|source| ReportError::Results { path: results.clone(), source })?;
    probe_section::write_probe_rows(&plan, &all_cells, &results)
        .map_err(|source| ReportError::Results { path: results.join("probes.csv"), source })?;
    let rework = rework::read(&plan, &cells);
    if let Some(reading) = &rework {
        rework::write_results(reading, &results)
            .map_err(|source| ReportError::Results { path: results.join("rework.csv"), source })?;
    }
    verdict::labels::write_gradable(&labels, &results)?;
    stage("claims".into(), 0.46);
    let claims = verdict::claims::claims(&plan, &cells);
    claims::write_claims(&claims, &results)
        .map_err(|source| ReportError::Results { path: results.join("claims.csv"), source })?;
    stage("plots".into(), 0.47);
    let plots = draw_plots(&plan, &cells, &run_dir.join("plots"));
    stage(format!("pages: {}, {}, {}", markdown::MAIN, markdown::DETAILS, markdown::PROBES), 0.51);
    let options = markdown::PageOptions { wide, compactions_page: rework.is_some() };
    let scored = markdown::Scored { cells: &cells, all_cells: &all_cells, labels: &labels };
    let md = markdown::pages(run_dir, &plan, scored, &scopes, &claims, &plots, options);
    let after = rework.as_ref().map(|reading| rework::markdown(&plan, reading));
    let mut pages = Vec::new();
    let mut written =
        vec![(markdown::MAIN, &md.main), (markdown::DETAILS, &md.details), (markdown::PROBES, &md.probes)];
    if let Some(text) = &after {
        written.push((rework::PAGE, text));
    }
    for (name, text) in written {
        let path = run_dir.join(name);
        crate::fsutil::write_atomic(&path, text.as_bytes())?;
        pages.push(path);
    }
    stage(format!("wrote {}", pages.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")), 1.0);
    let terminal = format!("{}\n\n{}", headline(&plan, &cells, wide, false), sources_table(&plan, &cells).terminal());
    Ok(ReportOutput { markdown_path: pages[0].clone(), pages, terminal, plots })
}

/// A conversation whose cells hold an error: how many, and the first error (which names the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedConversation {
    pub conversation: String,
    pub cells: usize,
    pub reason: String,
}

/// The conversations whose cells hold an error, in the order of the cells.
pub fn failed_conversations(cells: &[CellResult]) -> Vec<FailedConversation> {
    let mut out: Vec<FailedConversation> = Vec::new();
    for c in cells {
        let Some(e) = &c.result.error else { continue };
        match out.iter_mut().find(|f| f.conversation == c.cell.conversation) {
            Some(f) => f.cells += 1,
            None => out.push(FailedConversation {
                conversation: c.cell.conversation.clone(),
                cells: 1,
                reason: e.to_string(),
            }),
        }
    }
    out
}

/// `N of M cells`, with the grid behind M (slices cover fewer conversations).
pub fn cell_count(plan: &Plan, cells: &[CellResult]) -> String {
    let expected = plan.cells().len();
    let main = plan.points.iter().filter(|p| p.slice.is_none()).count();
    let main_convs = plan.conversations.len();
    let mut parts = vec![format!("{main} configurations × {main_convs} conversations")];
    let mut slices: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for p in plan.points.iter().filter(|p| p.slice.is_some()) {
        let n = plan
            .conversations
            .iter()
            .filter(|c| p.source.as_ref().is_none_or(|s| &c.source == s))
            .count()
            .min(p.max_conversations.unwrap_or(usize::MAX));
        let e = slices.entry(p.slice.as_deref().unwrap_or_default()).or_default();
        e.0 += 1;
        e.1 = n;
    }
    for (name, (points, convs)) in slices {
        parts.push(format!("slice `{name}`: {points} × {convs}"));
    }
    format!("{} of {expected} cells ({}; × {} repeat(s)).", cells.len(), parts.join(" + "), plan.repeats)
}
