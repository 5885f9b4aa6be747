//! `compactbench view`: writes a run's page and prints its path.

use super::Failure;
use crate::view::{self, ViewOptions};
use clap::Args;
use std::path::{Path, PathBuf};

/// Write one self-contained HTML page of a run to click through: points, conversations, compressions.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The run directory (`run --out`).
    pub run_dir: PathBuf,
    /// Another run directory to compare with (the baseline): the differences, and the cells the regression
    /// gate flags.
    #[arg(long)]
    pub compare: Option<PathBuf>,
    /// The page to write (default `RUN_DIR/view.html`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Open the page in the default browser.
    #[arg(long)]
    pub open: bool,
}

/// The program that opens a file with the desktop's default application.
fn opener() -> &'static str {
    if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(target_os = "windows") {
        "explorer"
    } else {
        "xdg-open"
    }
}

fn open(path: &Path) -> Result<(), Failure> {
    let program = opener();
    let status = std::process::Command::new(program)
        .arg(path)
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| Failure::Failed(format!("cannot open {} with `{program}`: {e}", path.display())))?;
    // `explorer` answers 1 even when it opened the file.
    if !status.success() && program != "explorer" {
        return Err(Failure::Failed(format!("`{program} {}` failed ({status})", path.display())));
    }
    Ok(())
}

pub fn run(args: ViewArgs) -> Result<(), Failure> {
    let out = args.out.clone().unwrap_or_else(|| args.run_dir.join(view::VIEW_FILE));
    let options = ViewOptions { base_dir: PathBuf::from("."), compare: args.compare.clone() };
    if args.compare.is_some() {
        eprintln!("view: running the regression gate on the two runs (its paired checks take a while)…");
    }
    let written = view::write(&args.run_dir, &out, &options)?;
    for line in &written.problems {
        eprintln!("warning: left out of the page: {line}");
    }
    for line in &written.unread {
        eprintln!("warning: recording not read (the page shows its figures only): {line}");
    }
    crate::outln!("{}", written.path.display())?;
    eprintln!("view: {:.1} MB", written.bytes as f64 / 1e6);
    if args.open {
        open(&written.path)?;
    }
    Ok(())
}

/// Builds the report with `build` and, on a second thread at the same time, the report stage's page
/// (`RUN_DIR/view.html`, added to the pages the report names): the two read the cells independently.
pub fn report_with_view(
    run_dir: &Path,
    build: impl FnOnce() -> Result<crate::report::ReportOutput, Failure>,
) -> Result<crate::report::ReportOutput, Failure> {
    let (report, view) = std::thread::scope(|scope| {
        let view = scope.spawn(|| view::write_beside_report(run_dir));
        let report = build();
        // A panic while writing the page is a bug: raise it here, as one thread would have.
        (report, view.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    let mut report = report?;
    let written = view?;
    for line in &written.unread {
        eprintln!("warning: view.html: recording not read (the page shows its figures only): {line}");
    }
    report.pages.push(written.path);
    Ok(report)
}
