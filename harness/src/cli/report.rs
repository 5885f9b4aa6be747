//! `compactbench report` and `compactbench gate`.

use super::Failure;
use crate::report;
use crate::verdict::gate;
use clap::Args;
use std::path::PathBuf;

/// Rebuild results (Parquet/CSV/JSON), plots and `report.md` from a run directory.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory (`run --out`); results, plots and report.md are written into it.
    pub run_dir: PathBuf,
    /// Every column of the tables (default: the main ones, fitted to 120 columns).
    #[arg(long)]
    pub wide: bool,
}

/// Prints each stage of a report as it starts, with the time since the first (nothing when `quiet`).
pub fn stage_printer(quiet: bool) -> impl FnMut(&crate::data::store::Stage) {
    stage_printer_for("report", quiet)
}

/// [`stage_printer`] for any command: `command: stage (elapsed, about N s left)`.
pub fn stage_printer_for(command: &'static str, quiet: bool) -> impl FnMut(&crate::data::store::Stage) {
    let start = std::time::Instant::now();
    move |stage: &crate::data::store::Stage| {
        if quiet {
            return;
        }
        let elapsed = start.elapsed().as_secs_f64();
        // Estimated once a stage has finished: the time so far over the share of a typical report done.
        let left = if stage.done_share >= 0.1 && stage.done_share < 1.0 {
            format!(", about {:.0} s left", elapsed / stage.done_share * (1.0 - stage.done_share))
        } else {
            String::new()
        };
        eprintln!("{command}: {} ({elapsed:.1} s{left})", stage.name);
    }
}

pub fn run_report(args: ReportArgs) -> Result<(), Failure> {
    // Named before the report is built: the report covers only verified cells.
    let plan = crate::data::store::load_plan(&args.run_dir)?;
    let stored = crate::data::store::load_cells(&args.run_dir, &plan);
    for line in stored.problems(&args.run_dir, 50) {
        eprintln!("warning: {line}");
    }
    let out = super::view::report_with_view(&args.run_dir, || {
        Ok(report::build_with_progress(&args.run_dir, args.wide, &mut stage_printer(false))?)
    })?;
    crate::outln!("{}", out.terminal)?;
    for f in &out.plots.failed {
        eprintln!("warning: {f}");
    }
    eprintln!("{}", crate::report::written_line(&out));
    if !stored.is_complete() {
        return Err(Failure::Incomplete(format!(
            "the report covers {} of {} cells: {} missing, {} damaged (named above; `run` redoes them)",
            stored.cells.len(),
            stored.cells.len() + stored.missing.len() + stored.damaged.len(),
            stored.missing.len(),
            stored.damaged.len()
        )));
    }
    Ok(())
}

/// One table across runs (e.g. one per agent, each in its own window).
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run directories (`run --out`), each complete.
    #[arg(required = true, num_args = 2..)]
    pub run_dirs: Vec<PathBuf>,
    /// Markdown file to write.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run_compare(args: CompareArgs) -> Result<(), Failure> {
    let md = report::compare_runs::write(&args.run_dirs, &args.out)?;
    crate::outln!("{md}")?;
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// Write the findings page and the README's findings box from the committed runs a manifest names.
#[derive(Debug, Args)]
pub struct FindingsArgs {
    /// The manifest (`reports/findings.toml`): the runs, the glance lines, notes and corrections.
    #[arg(default_value = "reports/findings.toml")]
    pub manifest: PathBuf,
    /// Write nothing; exit 1 when a page or the README's box differs from what the runs give (CI).
    #[arg(long)]
    pub check: bool,
}

pub fn run_findings(args: FindingsArgs) -> Result<(), Failure> {
    let pages = report::findings_page::build(&args.manifest)?;
    let stale = report::findings_page::write_or_check(&pages, args.check).map_err(report::ReportError::from)?;
    if !stale.is_empty() {
        return Err(Failure::Regression(format!(
            "stale: {} (written again from the runs they would read differently); run `compactbench findings {}`",
            stale.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            args.manifest.display()
        )));
    }
    for (path, _) in &pages.files {
        eprintln!("{} {}", if args.check { "up to date:" } else { "wrote" }, path.display());
    }
    Ok(())
}

/// Compare a run with a baseline; exit 0 (pass), 1 (regression), 2 (unusable input), 3 (the JUnit file
/// cannot be written), 4 (incomplete: cells, configurations or conversations missing or damaged).
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The committed baseline run directory.
    #[arg(long)]
    pub baseline: PathBuf,
    /// The run to check.
    #[arg(long)]
    pub current: PathBuf,
    /// Rules (TOML `[[rule]]` tables: metric, direction, abs_tolerance, rel_tolerance, min_samples, strategies).
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// JUnit XML output (default `<current>/gate-junit.xml`).
    #[arg(long)]
    pub junit: Option<PathBuf>,
}

pub fn run_gate(args: GateArgs) -> Result<(), Failure> {
    let rules = match &args.rules {
        Some(p) => gate::Rules::load(p)?,
        None => gate::Rules::default(),
    };
    let start = std::time::Instant::now();
    eprintln!(
        "gate: checking and pairing every cell of {} and {} against {} rules…",
        args.baseline.display(),
        args.current.display(),
        rules.rule.len()
    );
    let report =
        gate::compare_with_progress(&args.baseline, &args.current, &rules, &mut stage_printer_for("gate", false))?;
    eprintln!("gate: {} checks in {:.1} s", report.checks.len(), start.elapsed().as_secs_f64());
    let md = gate::markdown(&report);
    crate::outln!("{md}")?;
    if let Ok(summary) = std::env::var("GITHUB_STEP_SUMMARY") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&summary) {
            let _ = writeln!(f, "{md}");
        }
    }
    let junit = args.junit.clone().unwrap_or_else(|| args.current.join("gate-junit.xml"));
    crate::fsutil::write_atomic(&junit, gate::junit(&report).as_bytes())
        .map_err(|e| Failure::Write(e).context("the JUnit report"))?;
    if !report.complete() {
        return Err(Failure::Incomplete(format!(
            "incomplete: {} completeness problem(s) (listed above); the gate judges only complete runs",
            report.completeness.len()
        )));
    }
    match report.regressions().count() {
        0 => Ok(()),
        n => Err(Failure::Regression(format!("{n} regressions (see above)"))),
    }
}
