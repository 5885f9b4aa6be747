//! `compactbench audit DIR…`.

use super::Failure;
use crate::audit::{self, AuditedDir};
use crate::datasets::import::Format;
use crate::sweep::config::SweepConfig;
use crate::sweep::{self, runner};
use clap::Args;
use std::path::PathBuf;

/// Where audits keep their run directories by default, relative to the working directory.
pub const AUDIT_ROOT: &str = ".compactbench/audit";

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Session directories or files, read in place: `~/.claude/projects/<project>` (or all of
    /// `~/.claude/projects`), `~/.codex/sessions`, `~/.gemini/tmp/<hash>/chats`.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The agent of every DIR, as an importer name (`claude-code`, `codex`, `gemini-jsonl`,
    /// `gemini-session`); default: recognised from each DIR's files.
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    /// Run directory (default `.compactbench/audit/<DIR name>-<plan digest>`); an interrupted audit resumes
    /// there, and `compactbench report DIR` writes the full report of it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the audit as JSON (every file, prompt and probe) instead of the listing.
    #[arg(long)]
    pub json: bool,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
}

fn parse_format(name: &str) -> Result<Format, String> {
    Format::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = audit::AGENT_FORMATS.iter().map(|f| f.name()).collect();
        format!("unknown format `{name}` (an audit reads {})", known.join(", "))
    })
}

pub fn run(args: AuditArgs) -> Result<(), Failure> {
    let mut dirs: Vec<AuditedDir> = Vec::new();
    for dir in &args.dirs {
        let dir = crate::datasets::raw::home_path(dir).unwrap_or_else(|| dir.clone());
        let formats = match args.format {
            Some(f) => vec![f],
            None => audit::detect_agents(&dir)?.into_iter().map(|(f, _)| f).collect(),
        };
        for &format in &formats {
            let d = AuditedDir::new(&dir, format, formats.len() > 1, &dirs);
            dirs.push(d);
        }
    }
    let root = PathBuf::from(AUDIT_ROOT);
    // Read, never written: the extractor's probes are derived in memory; hand-written ones are found here
    // for a directory of the same name (the shared sessions', from the repository's root).
    let probe_dir = crate::data::ProbesConfig::default().dir;
    let concurrency = std::thread::available_parallelism().map_or(2, |n| n.get());
    let config_text = audit::config_text(&dirs, &probe_dir, concurrency);
    let config = SweepConfig::parse(&config_text, "audit config")?;
    let base_dir = PathBuf::from(".");
    let counts = sweep::token_counts::KeptCounts::load(&base_dir.join(&config.import_cache));
    let (plan, notes) = sweep::planner::make_plan_noting(&config, &base_dir)?;
    for note in &notes {
        eprintln!("note: {note}");
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let names: Vec<&str> = dirs.iter().map(|d| d.source.as_str()).collect();
        root.join(format!("{}-{}", names.join("+"), &plan.digest()[..12]))
    });
    let opts = runner::RunOptions {
        run_dir: out.clone(),
        base_dir: base_dir.clone(),
        shard: None,
        cache_mode: None,
        progress: !args.quiet,
        retry_failed: false,
        config_text: Some(config_text.into_bytes()),
        wrap_model: None,
    };
    super::run::runtime()?.block_on(runner::run(&config, &plan, &opts))?;
    // Probes of the kinds the grader is trusted on for these sessions (where the project labelled them).
    let cells = crate::verdict::labels::scored_cells(&plan, crate::data::store::collect(&out, &plan)).1;
    let mut report = audit::read(&dirs, &out, &plan, &cells, &base_dir);
    let view = crate::view::write_beside_report(&out)?;
    report.view = Some(view.path.clone());
    super::run::keep_counts(&counts);
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        crate::outln!("{}", audit::render(&report))?;
    }
    for f in report.failed.iter().take(20) {
        eprintln!("failed: {}: {}", f.session, f.reason);
    }
    eprintln!("view: {}", view.path.display());
    if !report.failed.is_empty() {
        return Err(Failure::Incomplete(format!(
            "{} of {} sessions failed (listed above); the audit of the others is written: {}",
            report.failed.len(),
            report.sessions,
            view.path.display()
        )));
    }
    Ok(())
}
