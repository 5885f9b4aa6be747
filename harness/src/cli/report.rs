//! `compactbench report` and `compactbench gate`.

use super::{CliError, EXIT_FAILURE};
use crate::report::{self, gate};
use clap::Args;
use std::path::PathBuf;

/// Rebuild results (Parquet/CSV/JSON), plots and `report.md` from a run directory.
#[derive(Debug, Args)]
pub struct ReportArgs {
    pub run_dir: PathBuf,
    /// Every column of the tables (default: the main ones, fitted to 120 columns).
    #[arg(long)]
    pub wide: bool,
}

pub fn run_report(args: ReportArgs) -> anyhow::Result<()> {
    let out = report::build(&args.run_dir, args.wide).map_err(CliError::bad_input)?;
    println!("{}", out.terminal);
    for f in &out.plots.failed {
        eprintln!("warning: {f}");
    }
    eprintln!("{}: {} plots", out.markdown_path.display(), out.plots.written.len());
    Ok(())
}

/// Compare a run with a baseline; exit 0 (pass), 1 (regression), 2 (unusable input).
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

pub fn run_gate(args: GateArgs) -> anyhow::Result<()> {
    let rules = match &args.rules {
        Some(p) => gate::Rules::load(p).map_err(CliError::bad_input)?,
        None => gate::Rules::default(),
    };
    let report = gate::compare(&args.baseline, &args.current, &rules).map_err(|e| CliError::bad_input(e.0))?;
    let md = gate::markdown(&report);
    println!("{md}");
    if let Ok(summary) = std::env::var("GITHUB_STEP_SUMMARY") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&summary) {
            let _ = writeln!(f, "{md}");
        }
    }
    let junit = args.junit.clone().unwrap_or_else(|| args.current.join("gate-junit.xml"));
    std::fs::write(&junit, gate::junit(&report))?;
    if report.passed() {
        Ok(())
    } else {
        Err(CliError {
            status: EXIT_FAILURE,
            message: format!("{} regressions (see above)", report.regressions().count()),
        }
        .into())
    }
}
