//! `compactbench probes snapshots`: the history right after every compression of a config's replays, as
//! text, with the probes askable there, for judging by hand whether a snapshot answers each question
//! (`crate::probes::snapshots`).

use super::super::Failure;
use crate::datasets;
use crate::llm::CacheMode;
use crate::probes::snapshots::{scored_probes, SnapshotObserver};
use crate::replay;
use crate::sweep::config::SweepConfig;
use crate::sweep::{models, planner};
use clap::Args;
use std::path::{Path, PathBuf};

/// Write, for each conversation of a config and each named strategy, the history right after every
/// compression (`DIR/<conversation>/<strategy>-<ordinal>.txt`) and the probes askable there
/// (`…-<ordinal>.probes.json`: those whose evidence lies before it, as `run` scores them). The snapshots
/// hold the sessions' text: DIR must lie outside the repository or be ignored by git.
#[derive(Debug, Args)]
pub struct SnapshotsArgs {
    /// Sweep config (TOML): its datasets, replay settings, grid points and `[probes]`.
    #[arg(long)]
    pub config: PathBuf,
    /// A strategy of the config's grid (repeatable); every main-grid point of it is replayed.
    #[arg(long = "strategy", required = true)]
    pub strategies: Vec<String>,
    /// Output directory (outside the repository, or git-ignored).
    #[arg(long)]
    pub out: PathBuf,
    /// Only these conversations (ids as in the run's results; repeatable).
    #[arg(long = "conversation")]
    pub conversations: Vec<String>,
    /// Override the config's LLM cache mode: `read-write`, `replay` (a miss is an error) or `off`.
    #[arg(long)]
    pub cache: Option<CacheMode>,
}

pub fn run(args: SnapshotsArgs) -> Result<(), Failure> {
    refuse_tracked_output(&args.out)?;
    let config = SweepConfig::load(&args.config)?;
    let base_dir = PathBuf::from(".");
    let plan = planner::make_plan(&config, &base_dir)?;
    let Some(probes_config) = plan.probes.clone() else {
        return Err(Failure::BadInput(format!("{}: probes are not enabled (`[probes]`)", args.config.display())));
    };
    let mut points = Vec::new();
    for name in &args.strategies {
        let of_name: Vec<_> = plan.points.iter().filter(|p| p.slice.is_none() && p.strategy.kind() == name).collect();
        if of_name.is_empty() {
            return Err(Failure::BadInput(format!(
                "{}: no point of the main grid has strategy `{name}`",
                args.config.display()
            )));
        }
        // Files are named after the strategy, and after the point when the strategy has several.
        let several = of_name.len() > 1;
        points.extend(of_name.into_iter().map(|p| {
            let label = if several { format!("{name}@{}", p.id) } else { name.clone() };
            (label, p.clone())
        }));
    }
    let opts = models::backend_options(&config, &base_dir, args.cache)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(Failure::Runtime)?;
    let (mut snapshots, mut failed) = (0usize, 0usize);
    for planned in &plan.conversations {
        if !args.conversations.is_empty() && !args.conversations.contains(&planned.id) {
            continue;
        }
        if let Some(e) = &planned.error {
            eprintln!("warning: {}: skipped: {e}", planned.id);
            failed += 1;
            continue;
        }
        let conversation = datasets::load_conversation(&base_dir.join(&planned.path))?;
        let probes = scored_probes(&probes_config, &base_dir, &conversation)?;
        for (label, point) in &points {
            if point.source.as_ref().is_some_and(|s| s != &planned.source) {
                continue;
            }
            let spec = point.summarizer.clone().unwrap_or_else(|| "extractive".into());
            let llm = crate::llm::from_spec(&spec, &opts).map_err(Failure::ModelSpec)?;
            let mut settings = replay::ReplaySettings { token_limit: point.token_limit, ..plan.replay.clone() };
            if let Some(spec) = settings.tokenizer.model_spec() {
                let model = crate::llm::from_spec(spec, &opts)
                    .map_err(|e| Failure::ModelSpec(e).context("key `replay.tokenizer`"))?;
                settings.counter = replay::CounterHandle::new(std::sync::Arc::new(replay::ModelCounter::new(model)));
            }
            let dir = args.out.join(&planned.id);
            let mut observer = SnapshotObserver::new(&dir, &planned.id, label, probes.clone());
            let input = conversation.replay_input(&planned.id);
            let result =
                runtime.block_on(replay::replay_spec(input, &point.strategy, &settings, llm.as_ref(), &mut observer));
            let written = observer.finish()?;
            if let Some(e) = &result.error {
                eprintln!("warning: {} ({label}): the replay stopped: {e}", planned.id);
                failed += 1;
            }
            for w in &written {
                crate::outln!("{} ({} probes askable)", w.text.display(), w.askable)?;
            }
            snapshots += written.len();
        }
    }
    crate::outln!("{snapshots} snapshots under {}", args.out.display())?;
    if failed > 0 {
        return Err(Failure::Incomplete(format!("{failed} conversations or replays failed (warnings above)")));
    }
    Ok(())
}

/// Snapshots hold session text: refuses an output directory inside a git work tree unless git ignores it.
/// Without git, or outside a work tree, anything goes.
fn refuse_tracked_output(out: &Path) -> Result<(), Failure> {
    let absolute = std::path::absolute(out).map_err(|source| Failure::Read { path: out.to_path_buf(), source })?;
    let Some(existing) = absolute.ancestors().find(|a| a.is_dir()) else { return Ok(()) };
    let git = |args: &[&str]| std::process::Command::new("git").arg("-C").arg(existing).args(args).output();
    let inside = git(&["rev-parse", "--is-inside-work-tree"]);
    if !inside.is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"true")) {
        return Ok(());
    }
    // A trailing slash: directory patterns (`.compactbench/`) match a directory not created yet.
    let mut probe = absolute.clone().into_os_string();
    probe.push("/");
    let ignored = std::process::Command::new("git")
        .arg("-C")
        .arg(existing)
        .args(["check-ignore", "-q", "--"])
        .arg(&probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if ignored {
        return Ok(());
    }
    Err(Failure::BadInput(format!(
        "--out {}: inside a git work tree and not ignored; snapshots hold the sessions' text: write them \
         outside the repository or under an ignored directory",
        out.display()
    )))
}
