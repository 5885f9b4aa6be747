//! `compactbench run`, `replay` and `merge`.

use super::Failure;
use crate::data::store;
use crate::data::ConfigPoint;
use crate::datasets;
use crate::llm::CacheMode;
use crate::metrics::{percent, PercentStyle, Share};
use crate::replay;
use crate::report::summary::{summarize, table, TableOptions};
use crate::sweep::config::SweepConfig;
use crate::sweep::{models, planner, runner};
use crate::table::Table;
use clap::Args;
use std::path::{Path, PathBuf};

pub const DEFAULT_CONFIG: &str = "configs/default.toml";

/// Replay the corpus through a grid of compressors (the main job).
/// `--shard`, with `auto` read from the process environment.
fn parse_shard(spec: &str) -> Result<planner::Shard, planner::BadShard> {
    planner::Shard::resolve(spec, |name| std::env::var(name).ok())
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Sweep config (TOML). Paths inside it are relative to the working directory.
    #[arg(long, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Run directory (default `reports/<config name>`). An interrupted run resumes here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only the I-th of N deterministic slices of the cells (1-based), e.g. `2/3`; or `auto` / `auto/N`
    /// in a Kubernetes Indexed Job: I from $JOB_COMPLETION_INDEX + 1, N after the slash or from
    /// $COMPACTBENCH_SHARD_COUNT.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<planner::Shard>,
    /// Override the config's LLM cache mode: `read-write`, `replay` (a miss is an error) or `off`.
    #[arg(long)]
    pub cache: Option<CacheMode>,
    /// No progress output (no bar on a terminal, no progress lines otherwise).
    #[arg(long)]
    pub quiet: bool,
    /// Redo every failed cell. Without it a run redoes only cells that failed on a transient model error
    /// (rate limit, timeout, server error, malformed answer), besides missing and damaged cells.
    #[arg(long)]
    pub retry_failed: bool,
    /// Every column of the summary table (default: the main ones, fitted to 120 columns).
    #[arg(long)]
    pub wide: bool,
    /// Do not build the report (results files, plots, report.md) at the end of a complete run.
    #[arg(long)]
    pub no_report: bool,
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(Failure::Runtime)
}

/// Writes `summary.json` and returns the terminal table. Its probe figures pool the kinds the report's do
/// (those the run's labels show the grader is trusted on: `crate::verdict::labels::scored_cells`), so a figure has
/// one value under its name in `summary.json`, the report and `results/`.
pub fn write_summary(run_dir: &Path, plan: &crate::data::Plan, wide: bool) -> Result<String, Failure> {
    let (_, cells) = crate::verdict::labels::scored_cells(plan, store::collect(run_dir, plan));
    let summaries = summarize(plan, &cells);
    let mut bytes = serde_json::to_vec_pretty(&summaries)?;
    bytes.push(b'\n');
    crate::fsutil::write_atomic(&run_dir.join("summary.json"), &bytes)?;
    Ok(table(&summaries, TableOptions { wide, ..Default::default() }))
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let config = SweepConfig::load(&args.config)?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("reports").join(&config.name));
    let base_dir = PathBuf::from(".");
    let counts = crate::sweep::token_counts::KeptCounts::load(&base_dir.join(&config.import_cache));
    let (plan, notes) = crate::sweep::planner::make_plan_noting(&config, &base_dir)?;
    for note in &notes {
        eprintln!("note: {note}");
    }
    let config_text =
        std::fs::read(&args.config).map_err(|source| Failure::Read { path: args.config.clone(), source })?;
    let opts = runner::RunOptions {
        run_dir: out.clone(),
        base_dir,
        shard: args.shard,
        cache_mode: args.cache,
        progress: !args.quiet,
        retry_failed: args.retry_failed,
        config_text: Some(config_text),
        wrap_model: None,
    };
    let summary = runtime()?.block_on(runner::run(&config, &plan, &opts))?;
    let table = write_summary(&out, &plan, args.wide)?;
    crate::outln!("{table}")?;
    eprintln!(
        "{}: {} cells ({} already done, {} run of which {} damaged and {} failed before; {} hold an error) over {} conversations",
        out.display(),
        summary.total_cells,
        summary.skipped,
        summary.ran,
        summary.redone_damaged,
        summary.retried_failed,
        summary.failed,
        plan.conversations.len()
    );
    // One failed conversation does not withhold the report of the others: it is written, names the failed
    // ones, and the run still exits as incomplete.
    let incomplete = (summary.failed > 0).then(|| (summary.failed, list_failed(&out, &plan)));
    if args.shard.is_some() {
        eprintln!("next: `compactbench merge --out DIR <shard dirs>`, then `compactbench report DIR`");
    } else if !args.no_report {
        let report = super::view::report_with_view(&out, || {
            Ok(crate::report::build_with_progress(&out, args.wide, &mut super::report::stage_printer(args.quiet))?)
        })?;
        eprintln!("{}", crate::report::written_line(&report));
    }
    keep_counts(&counts);
    if let Some((cells, conversations)) = incomplete {
        let report = if args.shard.is_some() || args.no_report {
            "no report was written (`compactbench report DIR` writes one of the others)"
        } else {
            "the report of the others was written"
        };
        return Err(Failure::Incomplete(format!(
            "{cells} of {} cells ({conversations} conversations, listed above) recorded an error; {report}; run again to retry transient failures, or with --retry-failed to retry all",
            summary.total_cells
        )));
    }
    Ok(())
}

/// Keeps the token counts of this run for the next one; a cache that cannot be written costs only speed.
pub fn keep_counts(counts: &crate::sweep::token_counts::KeptCounts) {
    if let Err(e) = counts.save() {
        eprintln!("note: the token counts were not kept for the next run: {e}");
    }
}

/// Prints the conversations whose cells hold an error (at most 20, then a count) and returns how many.
fn list_failed(run_dir: &Path, plan: &crate::data::Plan) -> usize {
    let failed = crate::report::failed_conversations(&store::collect(run_dir, plan));
    for f in failed.iter().take(20) {
        eprintln!("failed: {} ({} cells): {}", f.conversation, f.cells, f.reason);
    }
    if failed.len() > 20 {
        eprintln!("failed: … and {} more conversations", failed.len() - 20);
    }
    failed.len()
}

/// Join shard run directories into one.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The merged run directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Shard run directories (same config and corpus).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
}

pub fn merge(args: MergeArgs) -> Result<(), Failure> {
    let merged = runner::merge(&args.out, &args.shards)?;
    let plan = store::load_plan(&args.out)?;
    crate::outln!("{}", write_summary(&args.out, &plan, false)?)?;
    eprintln!("{}: merged {} of {} cells", args.out.display(), merged.copied, merged.total);
    for (shard, cell, why) in merged.damaged.iter().take(20) {
        eprintln!("warning: damaged: {}: {why}", shard.join(cell.relative_path()).display());
    }
    for cell in merged.missing.iter().take(20) {
        eprintln!("warning: missing in every shard: {}", cell.relative_path().display());
    }
    if !merged.missing.is_empty() {
        return Err(Failure::Incomplete(format!(
            "{} of {} cells are missing or damaged in every shard (a shard did not finish?)",
            merged.missing.len(),
            merged.total
        )));
    }
    // A complete merge ends as a complete run does: with its report, written also when some conversations
    // failed (named, and the merge exits incomplete, as `run` does).
    let report = super::view::report_with_view(&args.out, || Ok(crate::report::build(&args.out, false)?))?;
    eprintln!("{}", crate::report::written_line(&report));
    let failed = list_failed(&args.out, &plan);
    if failed > 0 {
        return Err(Failure::Incomplete(format!(
            "{failed} conversations (listed above) recorded an error in the shards; the report of the others was \
             written; run the shards again to retry transient failures, or with --retry-failed to retry all"
        )));
    }
    Ok(())
}

/// Print one conversation's compression timeline.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A conversation file (canonical format) or a plain `Content[]` JSON file.
    pub conversation: PathBuf,
    /// Take the config point from this sweep config.
    #[arg(long, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// Which point of the config: its id, or the first point of this strategy.
    #[arg(long)]
    pub point: Option<String>,
    /// Without --point: the first point of this strategy in the config (default: the reference).
    #[arg(long)]
    pub strategy: Option<String>,
    /// Override the summarizer model spec.
    #[arg(long)]
    pub summarizer: Option<String>,
    /// Override the config's LLM cache mode: `read-write`, `replay` (a miss is an error) or `off`.
    #[arg(long)]
    pub cache: Option<CacheMode>,
    /// Print the events as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn replay_one(args: ReplayArgs) -> Result<(), Failure> {
    let config = SweepConfig::load(&args.config)?;
    let point = replay_point(&config, &args)?;
    let conv = load_replay_conversation(&args.conversation)?;
    let opts = models::backend_options(&config, Path::new("."), args.cache)?;
    let spec = args.summarizer.clone().or(point.summarizer.clone()).unwrap_or_else(|| "extractive".into());
    let llm = crate::llm::from_spec(&spec, &opts).map_err(Failure::ModelSpec)?;
    let id = args.conversation.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let input = conv.replay_input(&id);
    let settings = replay_settings(&config, &point, &opts)?;
    let result = runtime()?.block_on(replay::replay_spec(
        input,
        &point.strategy,
        &settings,
        llm.as_ref(),
        &mut replay::NoObserver,
    ));
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&result)?)?;
        return Ok(());
    }
    print_replay(&id, &point, &settings, &result)
}

/// The config point `replay` runs: `--point` by id, else the first point of `--strategy` (default: the
/// reference strategy).
fn replay_point(config: &SweepConfig, args: &ReplayArgs) -> Result<ConfigPoint, Failure> {
    let points = config.points()?;
    let point = match &args.point {
        Some(id) => points.iter().find(|p| &p.id == id),
        None => {
            // The reference by its role: strategy names are written only in the registry.
            let reference = || replay::registry::role_name(replay::strategy::Role::Reference).unwrap_or_default();
            let strategy = args.strategy.as_deref().unwrap_or_else(reference);
            points.iter().find(|p| p.strategy.kind() == strategy)
        }
    };
    point.cloned().ok_or_else(|| Failure::BadInput(format!("{}: no matching config point", args.config.display())))
}

/// A conversation file, or a plain `Content[]` file as a conversation with only a history.
fn load_replay_conversation(path: &Path) -> Result<datasets::Conversation, Failure> {
    match datasets::load_conversation(path) {
        Ok(c) => Ok(c),
        Err(e) => {
            // When it is neither, the conversation's error is the one shown.
            let history = crate::history::load_history(path).map_err(|_| Failure::Dataset(e))?;
            Ok(datasets::Conversation { history, ..Default::default() })
        }
    }
}

/// The config's replay settings at the point's window, with the config's tokenizer model when it names one.
fn replay_settings(
    config: &SweepConfig,
    point: &ConfigPoint,
    opts: &crate::llm::BackendOptions,
) -> Result<replay::ReplaySettings, Failure> {
    let mut settings = replay::ReplaySettings { token_limit: point.token_limit, ..config.replay.clone() };
    if let Some(spec) = settings.tokenizer.model_spec() {
        // Built like the summarizer: the same cache directory and `--cache` mode.
        let model =
            crate::llm::from_spec(spec, opts).map_err(|e| Failure::ModelSpec(e).context("key `replay.tokenizer`"))?;
        settings.counter = replay::CounterHandle::new(std::sync::Arc::new(replay::ModelCounter::new(model)));
    }
    Ok(settings)
}

/// Prints a replay as a heading, the table of its compression events and a line of totals.
fn print_replay(
    id: &str,
    point: &ConfigPoint,
    settings: &replay::ReplaySettings,
    result: &replay::ConversationResult,
) -> Result<(), Failure> {
    crate::outln!(
        "{} ({} strategy, point {}, window {} = {} tokens; trigger count: {}; request sizes: system prompt + tools + history + pending turn in {} tokens)",
        id,
        point.strategy.kind(),
        point.id,
        point.token_limit,
        result.token_limit,
        result.prompt_count_source,
        settings.tokenizer.name()
    )?;
    crate::outln!("{}", events_table(&result.events))?;
    crate::outln!(
        "{} requests, peak request {} tokens (uncompressed {}), request tokens {} + summarizer tokens {} = {} of no compression ({}), overflow guard refusals {}, requests over the window {}, invalid requests {}{}{}",
        result.requests,
        result.peak_request_tokens,
        result.none_peak_request_tokens,
        result.request_tokens_total,
        result.summarizer_tokens_total(),
        percent(
            Some(Share::Of(
                (result.request_tokens_total + result.summarizer_tokens_total()) as f64,
                result.none_request_tokens_total.max(1) as f64
            )),
            PercentStyle::TABLE
        ),
        result.none_request_tokens_total,
        result.overflow_guard_refusals,
        result.overflow_requests,
        result.invalid_requests,
        if result.unsplittable { "; unsplittable history (no split candidate after the task)" } else { "" },
        result.error.as_ref().map(|e| format!("; stopped: {e}")).unwrap_or_default()
    )?;
    Ok(())
}

/// One row per compression event.
fn events_table(events: &[replay::CompressionEvent]) -> String {
    // Events are numbered by request index everywhere (results' `request` column, the timeline plot's x axis);
    // the recorded Content index (`turn`) is shown next to it.
    let header = [
        "request",
        "turn",
        "status",
        "request tokens before → after",
        "reduction ↑",
        "summarised/kept",
        "reference's count before → after",
        "flags",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for e in events {
        let mut flags = Vec::new();
        if e.forced {
            flags.push("forced");
        }
        if e.hidden_inflation {
            flags.push("hidden inflation");
        }
        if e.hidden_deflation {
            flags.push("hidden deflation");
        }
        let invalid = e.request_violations.iter().map(|v| format!("invalid: {v}")).collect::<Vec<_>>();
        flags.extend(invalid.iter().map(String::as_str));
        rows.push(vec![
            e.request.to_string(),
            e.turn.to_string(),
            e.status.name().to_string(),
            format!("{} → {}", e.request_tokens_before, e.request_tokens_after),
            percent(Some(Share::Fraction(e.reduction)), PercentStyle::TABLE),
            format!("{}/{}", e.summarized_contents, e.kept_contents),
            format!("{} → {}", e.reference_original_tokens, e.reference_new_tokens),
            flags.join(", "),
        ]);
    }
    Table { header, rows }.terminal()
}
