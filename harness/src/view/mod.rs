//! `compactbench view`: one self-contained HTML page of a run (`RUN_DIR/view.html`), to click through
//! instead of reading CSV: the points table, each conversation's request sizes with its compressions, and
//! each compression's replaced history beside the summary that replaced it, with the probes scored there.
//! With a second run, the differences between the two and the cells the gate flags.
//!
//! `recording` reads the conversations and probes, `spans` locates each event in its recording,
//! `payload` builds the page's data from the run (pure functions), `compare` the gate's flags, `html`
//! assembles the page with its assets (`harness/assets/view/`).

mod compare;
mod html;
mod payload;
pub mod recording;
pub mod spans;

use crate::data::store::{self, StoreError};
use crate::data::{CellResult, Plan};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The page's file name in a run directory, next to `report.md`.
pub const VIEW_FILE: &str = "view.html";

/// At most this many missing or damaged cells are named on the page (then a count).
const LISTED_PROBLEMS: usize = 20;

/// Why a page could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A run directory without a readable plan.
    #[error(transparent)]
    Plan(#[from] StoreError),
    /// `--compare`: the gate could not pair the runs.
    #[error(transparent)]
    Gate(#[from] crate::verdict::gate::GateError),
    /// `--compare` with a run that shares no configuration with the viewed one.
    #[error("{} and {}: no configuration in common (plan.json `points[].id`): nothing to compare", .current.display(), .baseline.display())]
    NothingInCommon { current: PathBuf, baseline: PathBuf },
    /// The page's data could not be encoded.
    #[error("{}: cannot encode the page's data: {source}", .path.display())]
    Encode { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Write(#[from] crate::fsutil::WriteError),
}

/// What `view` writes besides its defaults.
#[derive(Clone, Debug, Default)]
pub struct ViewOptions {
    /// The directory the run's conversation and probe paths are relative to (where the run was made).
    pub base_dir: PathBuf,
    /// A second run to compare with (the baseline).
    pub compare: Option<PathBuf>,
}

/// A written page.
#[derive(Clone, Debug)]
pub struct ViewOutput {
    pub path: PathBuf,
    pub bytes: usize,
    /// Conversations whose recording could not be read, with why (the page shows their figures only).
    pub unread: Vec<String>,
    /// Missing or damaged cells of the runs, named (the page leaves them out and lists them).
    pub problems: Vec<String>,
}

/// A run directory's plan and verified cells, with the problems of the others.
struct LoadedRun {
    dir: PathBuf,
    plan: Plan,
    cells: Vec<CellResult>,
    problems: Vec<String>,
}

fn load_run(dir: &Path) -> Result<LoadedRun, ViewError> {
    let plan = store::load_plan(dir)?;
    let stored = store::load_cells(dir, &plan);
    // Relative to the run directory: the page holds no path of its own run.
    let problems = stored.problems(Path::new(""), LISTED_PROBLEMS);
    // The page's probe figures pool the kinds the run's grader is trusted on, as its report does.
    let cells = crate::verdict::labels::scored_cells(&plan, stored.cells).1;
    Ok(LoadedRun { dir: dir.to_path_buf(), plan, cells, problems })
}

/// Writes the page of `run_dir` (compared with `options.compare` when given) to `out`.
pub fn write(run_dir: &Path, out: &Path, options: &ViewOptions) -> Result<ViewOutput, ViewError> {
    let mut runs = vec![load_run(run_dir)?];
    let mut gate = None;
    if let Some(other) = &options.compare {
        let baseline = load_run(other)?;
        if !runs[0].plan.points.iter().any(|p| baseline.plan.points.iter().any(|q| q.id == p.id)) {
            return Err(ViewError::NothingInCommon { current: run_dir.to_path_buf(), baseline: other.clone() });
        }
        let (report, rules) = compare::gate(other, run_dir)?;
        gate =
            Some(compare::flags(&report, &rules, (&baseline.plan, &baseline.cells), (&runs[0].plan, &runs[0].cells)));
        runs.push(baseline);
    }
    let clean = recording::Sanitizer::from_env();
    let mut recordings = BTreeMap::new();
    for run in &runs {
        for planned in &run.plan.conversations {
            if !recordings.contains_key(&planned.id) {
                recordings.insert(planned.id.clone(), recording::load(&run.plan, &options.base_dir, planned));
            }
        }
    }
    let data: Vec<payload::RunData<'_>> = runs
        .iter()
        .map(|r| payload::RunData { dir: &r.dir, plan: &r.plan, cells: &r.cells, problems: &r.problems })
        .collect();
    let (mut index, chunks) = payload::build(&data, &recordings, &clean);
    index.gate = gate;
    let page = html::page(&index, &chunks).map_err(|source| ViewError::Encode { path: out.to_path_buf(), source })?;
    crate::fsutil::write_atomic(out, page.as_bytes())?;
    let unread = recordings.iter().filter_map(|(id, r)| r.as_ref().err().map(|e| format!("{id}: {e}"))).collect();
    let problems =
        runs.iter().flat_map(|r| r.problems.iter().map(move |p| format!("{}: {p}", r.dir.display()))).collect();
    Ok(ViewOutput { path: out.to_path_buf(), bytes: page.len(), unread, problems })
}

/// The page a report writes: `RUN_DIR/view.html`, paths relative to the working directory (as `run` reads
/// the corpus).
pub fn write_beside_report(run_dir: &Path) -> Result<ViewOutput, ViewError> {
    write(run_dir, &run_dir.join(VIEW_FILE), &ViewOptions { base_dir: PathBuf::from("."), compare: None })
}
