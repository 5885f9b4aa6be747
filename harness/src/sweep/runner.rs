//! The sweep runner: cells (config point × conversation × repeat) replayed concurrently, each finished
//! cell written atomically to the run directory, so a killed run resumes where it stopped.

use super::config::SweepConfig;
use super::error::RunError;
use super::models::{backend_options, ModelWrapper};
use super::models::{run_counter, Models, Unavailable, Watched, WatchedCounter};
use super::planner::Shard;
use super::run_dir::{ensure_plan, lock_run_dir, remove_orphaned_temp_files, write_cell};
use crate::data::store::{load_plan, read_cell, CellDamage, CellState};
use crate::data::{Cell, CellResult, ConfigPoint, Plan, PlannedConversation, ProbeResults, ProbesConfig};
use crate::datasets::{self, Conversation};
use crate::fsutil::write_atomic;
use crate::llm::{CacheMode, LanguageModel};
use crate::probes::{ProbeObserver, ProbeOptions};
use crate::replay::{self, ConversationResult, CounterHandle, ReplaySettings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Options of one invocation.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub run_dir: PathBuf,
    pub base_dir: PathBuf,
    pub shard: Option<Shard>,
    pub cache_mode: Option<CacheMode>,
    pub progress: bool,
    /// Redo every failed cell (without it only cells that failed on a transient model error are redone).
    pub retry_failed: bool,
    /// The config file's text, stored as `config.toml` once the directory is locked and its plan checked.
    pub config_text: Option<Vec<u8>>,
    /// Wraps every model the run builds (instrumentation; mutation tests of the gate). Not part of the plan,
    /// so results under a wrapper are not reproducible from the config: the CLI never sets it.
    pub wrap_model: Option<ModelWrapper>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub total_cells: usize,
    /// Cells found done and kept.
    pub skipped: usize,
    pub ran: usize,
    /// Cells of this invocation's share that hold an error at the end (run now or kept).
    pub failed: usize,
    /// Of the cells run: damaged ones redone.
    pub redone_damaged: usize,
    /// Of the cells run: failed ones retried.
    pub retried_failed: usize,
}

/// Why a cell is run by this invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    New,
    Damaged,
    Failed,
}

/// Prints a plain progress line every few seconds when stderr is not a terminal (CI logs, redirects),
/// where a progress bar would print nothing.
struct PlainProgress {
    every: std::time::Duration,
    start: std::time::Instant,
    last: std::time::Instant,
    total: usize,
}

impl PlainProgress {
    fn tick(&mut self, done: usize, failed: usize) {
        if self.last.elapsed() >= self.every || done == self.total {
            self.last = std::time::Instant::now();
            let elapsed = self.start.elapsed().as_secs_f64();
            let eta = if done == 0 || done == self.total {
                String::new()
            } else {
                format!(", about {:.0} s left", elapsed / done as f64 * (self.total - done) as f64)
            };
            eprintln!("run: {done}/{} cells done ({failed} with an error) after {elapsed:.0} s{eta}", self.total);
        }
    }
}

/// The cells of this shard still to run, with why (new, failed before, damaged), slices first; and the
/// summary of those already done.
fn pending_cells(plan: &Plan, plan_digest: &str, opts: &RunOptions) -> (Vec<(Cell, Reason)>, RunSummary) {
    let cells: Vec<Cell> = plan
        .cells()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| opts.shard.is_none_or(|s| i % s.count == s.index - 1))
        .map(|(_, c)| c)
        .collect();
    let mut summary = RunSummary { total_cells: cells.len(), ..Default::default() };
    let mut todo: Vec<(Cell, Reason)> = Vec::new();
    for c in cells {
        match read_cell(&opts.run_dir, plan_digest, &c) {
            CellState::Done(r) if r.result.error.is_some() && (opts.retry_failed || r.transient_failure) => {
                todo.push((c, Reason::Failed))
            }
            CellState::Done(r) => {
                summary.skipped += 1;
                summary.failed += r.result.error.is_some() as usize;
            }
            CellState::Missing => todo.push((c, Reason::New)),
            CellState::Damaged(why) => {
                eprintln!("warning: {}: {why}; running it again", opts.run_dir.join(c.relative_path()).display());
                todo.push((c, Reason::Damaged));
            }
        }
    }
    // Slices usually hold the slow models: start them first so they overlap the fast cells instead of
    // running alone at the end. Results do not depend on the order.
    let in_slice: std::collections::BTreeSet<&str> =
        plan.points.iter().filter(|p| p.slice.is_some()).map(|p| p.id.as_str()).collect();
    todo.sort_by_key(|(c, _)| !in_slice.contains(c.point.as_str()));
    (todo, summary)
}

/// A bar on a terminal, periodic lines otherwise (when progress is asked for at all).
fn progress(enabled: bool, cells: usize) -> (indicatif::ProgressBar, Option<PlainProgress>) {
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let bar = if enabled && terminal {
        let b = indicatif::ProgressBar::new(cells as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} cells, ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let plain = (enabled && !terminal).then(|| PlainProgress {
        every: std::time::Duration::from_secs(5),
        start: std::time::Instant::now(),
        last: std::time::Instant::now(),
        total: cells,
    });
    (bar, plain)
}

/// Runs (or resumes) every cell of the plan that belongs to this shard: cells that are missing or
/// damaged, and failed ones when their failure was transient or `retry_failed` is set.
pub async fn run(config: &SweepConfig, plan: &Plan, opts: &RunOptions) -> Result<RunSummary, RunError> {
    plan.check_size()?;
    let _lock = lock_run_dir(&opts.run_dir)?;
    ensure_plan(&opts.run_dir, plan)?;
    if let Some(text) = &opts.config_text {
        write_atomic(&opts.run_dir.join("config.toml"), text)?;
    }
    remove_orphaned_temp_files(&opts.run_dir);
    let models = Arc::new(Models {
        opts: backend_options(config, &opts.base_dir, opts.cache_mode)?,
        built: Default::default(),
        wrap: opts.wrap_model.clone(),
    });
    let counter = run_counter(&plan.replay.tokenizer, &models);
    let plan_digest = plan.digest();
    let (todo, mut summary) = pending_cells(plan, &plan_digest, opts);
    let (bar, mut plain) = progress(opts.progress, todo.len());
    let points: BTreeMap<String, ConfigPoint> = plan.points.iter().map(|p| (p.id.clone(), p.clone())).collect();
    let conversations: BTreeMap<String, PlannedConversation> =
        plan.conversations.iter().map(|c| (c.id.clone(), c.clone())).collect();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(config.concurrency));
    let prepared = Arc::new(PreparedProbes::default());
    let first_passes = Arc::new(FirstPasses::default());
    let mut tasks = tokio::task::JoinSet::new();
    for (cell, reason) in todo {
        let point = points[&cell.point].clone();
        let conv = conversations[&cell.conversation].clone();
        let models = Arc::clone(&models);
        let sem = Arc::clone(&semaphore);
        let run_dir = opts.run_dir.clone();
        let base_dir = opts.base_dir.clone();
        let mut replay_settings = ReplaySettings { token_limit: point.token_limit, ..plan.replay.clone() };
        let probes_config = plan.probes.clone();
        let plan_digest = plan_digest.clone();
        let counter = counter.clone();
        let prepared = Arc::clone(&prepared);
        let first_passes = Arc::clone(&first_passes);
        tasks.spawn(async move {
            let _permit = sem.acquire_owned().await.expect("semaphore open");
            let transient = Arc::new(AtomicBool::new(false));
            if let Some(inner) = counter {
                let watched = WatchedCounter { inner, transient: Arc::clone(&transient) };
                replay_settings.counter = CounterHandle::new(Arc::new(watched));
            }
            let (result, probes) = run_cell(
                &cell,
                &point,
                &conv,
                &base_dir,
                &replay_settings,
                &transient,
                Shared {
                    models: &models,
                    first_passes: &first_passes,
                    probes: probes_config.as_ref().map(|pc| (pc, prepared.as_ref())),
                },
            )
            .await;
            let failed = result.error.is_some();
            let stored = CellResult {
                cell,
                source: conv.source.clone(),
                result,
                probes,
                transient_failure: failed && transient.load(Ordering::Relaxed),
                plan: plan_digest,
                digest: String::new(),
            };
            write_cell(&run_dir, &stored).map(|_| (failed, reason))
        });
    }
    let mut done = 0;
    while let Some(finished) = tasks.join_next().await {
        let (failed, reason) = match finished {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(RunError::Panicked(e.to_string())),
        };
        summary.ran += 1;
        summary.failed += failed as usize;
        summary.redone_damaged += (reason == Reason::Damaged) as usize;
        summary.retried_failed += (reason == Reason::Failed) as usize;
        done += 1;
        bar.inc(1);
        if let Some(p) = &mut plain {
            p.tick(done, summary.failed);
        }
    }
    bar.finish_and_clear();
    Ok(summary)
}

/// The conversation replayed again with an instruction planted in an early tool output, its summaries
/// watched for obeying it; `None` when it has no place to plant one.
async fn injection_check(
    cell: &Cell,
    point: &ConfigPoint,
    conversation: &Conversation,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
) -> Option<crate::data::InjectionResult> {
    let (injected, planted) = crate::probes::inject::plant(conversation)?;
    let input = injected.replay_input(&cell.conversation);
    let settings = ReplaySettings { keep_summaries: true, ..settings.clone() };
    let mut watcher =
        ProbeObserver::new(&conversation.meta.id, Vec::new(), None, None, Default::default()).with_injection(&planted);
    let r = replay::replay_spec(input, &point.strategy, &settings, llm, &mut watcher).await;
    let mut injection = watcher.into_results().injection;
    if let (Some(inj), Some(e)) = (&mut injection, r.error) {
        inj.error = Some(e.to_string());
    }
    injection
}

/// What every cell of a run shares: the models, each conversation's first pass, and its prepared probes
/// (with the config that asks for them).
struct Shared<'a> {
    models: &'a Models,
    first_passes: &'a FirstPasses,
    probes: Option<(&'a ProbesConfig, &'a PreparedProbes)>,
}

async fn run_cell(
    cell: &Cell,
    point: &ConfigPoint,
    conv: &PlannedConversation,
    base_dir: &Path,
    settings: &ReplaySettings,
    transient: &Arc<AtomicBool>,
    shared: Shared<'_>,
) -> (ConversationResult, Option<ProbeResults>) {
    let Shared { models, first_passes, probes } = shared;
    let watched = |m: Arc<dyn LanguageModel>| -> Arc<dyn LanguageModel> {
        Arc::new(Watched { inner: m, transient: Arc::clone(transient) })
    };
    let failed = |e: String| {
        let error = Some(replay::ReplayError::Conversation(e));
        (ConversationResult { conversation: cell.conversation.clone(), error, ..Default::default() }, None)
    };
    if let Some(e) = &conv.error {
        return failed(e.clone());
    }
    // SAFETY: a run reads the corpus and writes only under its run directory; corpus files are not rewritten
    // while a sweep runs (importers write new files).
    let conversation: Conversation = match unsafe { datasets::load_conversation_mapped(&base_dir.join(&conv.path)) } {
        Ok(c) => c,
        Err(e) => return failed(e.to_string()),
    };
    let llm: Arc<dyn LanguageModel> = match &point.summarizer {
        Some(spec) => {
            models.get(spec).map(watched).unwrap_or_else(|e| Arc::new(Unavailable(format!("summarizer `{spec}`: {e}"))))
        }
        None => Arc::new(Unavailable("this strategy calls no model".into())),
    };
    let input = conversation.replay_input(&cell.conversation);
    let first_pass = first_passes.of(&base_dir.join(&conv.path), &input, settings).await;
    let Some((pc, prepared)) = probes.filter(|(p, _)| p.enabled) else {
        let result =
            replay_cell(input, first_pass.as_deref(), point, settings, llm.as_ref(), &mut replay::NoObserver).await;
        return (result, None);
    };
    let ready = prepared.of(&base_dir.join(&conv.path), || prepare_probes(pc, base_dir, &conversation));
    let mut errors = ready.errors.clone();
    let mut model_for = |role: &str, spec: Option<&String>| {
        let spec = spec?;
        models.get(spec).map(watched).map_err(|e| errors.push(format!("{role} `{spec}`: {e}"))).ok()
    };
    let answerer = model_for("answerer", point.probe_answerer.as_ref().or(pc.answerer.as_ref()));
    let judge = model_for("judge", pc.judge.as_ref());
    let mut observer = ProbeObserver::new(
        &conversation.meta.id,
        ready.probes.clone(),
        answerer,
        judge,
        ProbeOptions::of(pc, point.probe_answers_at_end_only),
    )
    .with_prepared(Arc::clone(&ready.grader), Arc::clone(&ready.matchers), Arc::clone(&ready.recording))
    .with_recording(&conversation.history);
    let result = replay_cell(input, first_pass.as_deref(), point, settings, llm.as_ref(), &mut observer).await;
    let mut probe_results = observer.into_results();
    probe_results.excluded = ready.excluded.clone();
    // Only strategies that write summaries can obey a planted instruction.
    if pc.injection && point.summarizer.is_some() && !point.probe_no_injection {
        probe_results.injection = injection_check(cell, point, &conversation, settings, llm.as_ref()).await;
    }
    if !errors.is_empty() {
        probe_results.error = Some(errors.join("; "));
    }
    (result, Some(probe_results))
}

/// One cell's replay: from the conversation's first pass where [`FirstPasses`] has it, else from the start
/// (`replay_spec`, which records a failed first pass as the cell's error).
async fn replay_cell(
    input: replay::ReplayInput<'_>,
    first_pass: Option<&replay::Uncompressed>,
    point: &ConfigPoint,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn replay::ReplayObserver,
) -> ConversationResult {
    let Some(uncompressed) = first_pass else {
        return replay::replay_spec(input, &point.strategy, settings, llm, observer).await;
    };
    let mut result =
        replay::replay_prepared(input, uncompressed, point.strategy.compressor(), settings, llm, observer).await;
    result.summarizes = point.strategy.summarizes();
    result
}

/// Each conversation's first pass (the history replayed without compression, every Content measured:
/// [`replay::Uncompressed`]), made once per run for every point whose replay settings are the same: it
/// depends on the conversation and those settings only, not on the strategy, and it was a fifth of a
/// long-session run when every cell made its own. A pass that fails is not kept (its cell records the
/// error, and the next cell tries again).
#[derive(Default)]
pub struct FirstPasses {
    by_key: MadeOnce<(PathBuf, String, String), replay::Uncompressed>,
}

impl FirstPasses {
    async fn of(
        &self,
        conversation: &Path,
        input: &replay::ReplayInput<'_>,
        settings: &ReplaySettings,
    ) -> Option<Arc<replay::Uncompressed>> {
        let key = (conversation.to_path_buf(), input.id.to_string(), serde_json::to_string(settings).ok()?);
        if let Some(hit) = self.by_key.get(&key) {
            return Some(hit);
        }
        let made = replay::Uncompressed::new(input, settings).await.ok()?;
        Some(self.by_key.keep(key, made))
    }
}

/// Values made once per run and shared by every cell that needs them. Two cells that start together may
/// both make a value: it is the same, and the first kept is the one every cell gets.
struct MadeOnce<K, V>(std::sync::Mutex<BTreeMap<K, Arc<V>>>);

impl<K, V> Default for MadeOnce<K, V> {
    fn default() -> Self {
        MadeOnce(Default::default())
    }
}

impl<K: Ord, V> MadeOnce<K, V> {
    fn get(&self, key: &K) -> Option<Arc<V>> {
        self.0.lock().expect("values made once").get(key).map(Arc::clone)
    }

    /// Keeps `made` under `key` unless a value is there already; returns the one kept.
    fn keep(&self, key: K, made: V) -> Arc<V> {
        Arc::clone(self.0.lock().expect("values made once").entry(key).or_insert_with(|| Arc::new(made)))
    }
}

/// What every cell of one conversation scores alike, prepared once per run (`prepare_probes`): every point
/// replays the same recorded Contents against the same probes, so the probes (loaded and linted), the
/// session's grader, each probe compiled against it, and what the recording says about each probe (the
/// grader run over every recorded Content) are the same in all of them.
#[derive(Default)]
pub struct PreparedProbes {
    by_conversation: MadeOnce<PathBuf, ConversationProbes>,
}

/// One conversation's [`PreparedProbes`].
pub struct ConversationProbes {
    probes: Vec<crate::probes::Probe>,
    excluded: Vec<crate::data::Lint>,
    /// Probe files that could not be read.
    errors: Vec<String>,
    grader: Arc<crate::probes::grader::Grader>,
    matchers: Arc<Vec<crate::probes::grader::Matcher>>,
    recording: Arc<crate::probes::figures::RecordingIndex>,
}

impl PreparedProbes {
    /// The conversation's prepared probes (its file's path is the key: a run reads each file unchanged), made
    /// by `make` the first time ([`MadeOnce`]).
    fn of(&self, conversation: &Path, make: impl FnOnce() -> ConversationProbes) -> Arc<ConversationProbes> {
        let key = conversation.to_path_buf();
        match self.by_conversation.get(&key) {
            Some(hit) => hit,
            None => self.by_conversation.keep(key, make()),
        }
    }
}

/// The probes a conversation's cells score: stored and linted, then derived in memory where the config asks,
/// of the kinds it names; the session's grader and matchers; the recording's index.
fn prepare_probes(pc: &ProbesConfig, base_dir: &Path, conversation: &Conversation) -> ConversationProbes {
    let dir = if pc.dir.is_absolute() { pc.dir.clone() } else { base_dir.join(&pc.dir) };
    let mut errors = Vec::new();
    let loaded = crate::probes::load_scored_probes(
        &dir,
        &conversation.meta.source,
        &conversation.meta.id,
        &pc.sources,
        conversation,
    );
    let (mut probe_set, mut excluded) = loaded.unwrap_or_else(|e| {
        errors.push(e.to_string());
        (Vec::new(), Vec::new())
    });
    if pc.derive_auto {
        let (derived, lints) = crate::probes::derived_auto_probes(&dir, conversation, &pc.sources, &probe_set);
        probe_set.extend(derived);
        excluded.extend(lints);
    }
    if !pc.kinds.is_empty() {
        probe_set.retain(|p| pc.kinds.contains(&p.kind));
    }
    let grader = crate::probes::grader::Grader::of_conversation(conversation, &probe_set);
    let matchers: Vec<_> = probe_set.iter().map(|p| grader.matcher(p)).collect();
    let recording = crate::probes::figures::RecordingIndex::new(&conversation.history, &probe_set, &grader, &matchers);
    ConversationProbes {
        probes: probe_set,
        excluded,
        errors,
        grader: Arc::new(grader),
        matchers: Arc::new(matchers),
        recording: Arc::new(recording),
    }
}

/// What a merge did.
#[derive(Clone, Debug, Default)]
pub struct MergeSummary {
    pub copied: usize,
    pub total: usize,
    /// Cells found in no shard.
    pub missing: Vec<Cell>,
    /// Damaged copies met (the shard, the cell, why); a good copy in another shard is still used.
    pub damaged: Vec<(PathBuf, Cell, CellDamage)>,
}

/// Joins shard directories into `out`: their plans must be identical; every cell copied is verified.
pub fn merge(out: &Path, shards: &[PathBuf]) -> Result<MergeSummary, RunError> {
    let first = shards.first().ok_or(RunError::NoShards)?;
    let plan = load_plan(first)?;
    for s in &shards[1..] {
        if load_plan(s)? != plan {
            return Err(RunError::ShardsDiffer { shard: s.clone(), first: first.clone() });
        }
    }
    let _lock = lock_run_dir(out)?;
    ensure_plan(out, &plan)?;
    let digest = plan.digest();
    let mut summary = MergeSummary::default();
    for cell in plan.cells() {
        summary.total += 1;
        let mut found = None;
        for s in shards {
            match read_cell(s, &digest, &cell) {
                CellState::Done(r) => {
                    found = Some(r);
                    break;
                }
                CellState::Missing => {}
                CellState::Damaged(why) => summary.damaged.push((s.clone(), cell.clone(), why)),
            }
        }
        match found {
            Some(r) => {
                write_cell(out, &r)?;
                summary.copied += 1;
            }
            None => summary.missing.push(cell),
        }
    }
    for s in shards {
        if let Ok(cfg) = std::fs::read(s.join("config.toml")) {
            write_atomic(&out.join("config.toml"), &cfg)?;
            break;
        }
    }
    Ok(summary)
}
