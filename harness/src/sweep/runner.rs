//! The sweep runner: cells (config point × conversation × repeat) replayed concurrently, each finished
//! cell written atomically to the run directory, so a killed run resumes where it stopped.

use super::config::{ConfigPoint, ProbesConfig, SweepConfig};
use crate::datasets::{self, Conversation};
use crate::llm::{self, BackendOptions, CacheMode, LanguageModel, LlmError};
use crate::probes::{ProbeObserver, ProbeResults};
use crate::replay::{self, ConversationResult, ReplayInput, ReplaySettings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A conversation of the run, as listed in the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedConversation {
    pub id: String,
    pub path: PathBuf,
    pub source: String,
    /// Set when the file could not be loaded (its cells record the error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything a run will do, written first so shards and merges can check they belong together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    pub points: Vec<ConfigPoint>,
    pub conversations: Vec<PlannedConversation>,
    pub repeats: u32,
    pub replay: ReplaySettings,
    /// Probe settings when probes are enabled (part of the plan: changing them needs a new run directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbesConfig>,
    /// Prices for the USD cost figures (reports read them from here).
    #[serde(default)]
    pub cost: crate::metrics::CostConfig,
}

/// One unit of work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub point: String,
    pub conversation: String,
    pub repeat: u32,
}

impl Cell {
    /// File of the cell's result, relative to the run directory.
    pub fn relative_path(&self) -> PathBuf {
        let file = if self.repeat == 0 {
            format!("{}.json", self.conversation)
        } else {
            format!("{}.r{}.json", self.conversation, self.repeat)
        };
        PathBuf::from("cells").join(&self.point).join(file)
    }
}

/// A finished cell, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub cell: Cell,
    pub source: String,
    pub result: ConversationResult,
    /// Probe scores and injection obedience (cells of runs without probes have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<crate::probes::ProbeResults>,
}

impl Plan {
    /// All cells in their canonical order (point, conversation, repeat); shards take every Nth.
    pub fn cells(&self) -> Vec<Cell> {
        let mut out = Vec::new();
        for p in &self.points {
            let limit = p.max_conversations.unwrap_or(usize::MAX);
            let of_source = self.conversations.iter().filter(|c| p.source.as_ref().is_none_or(|s| &c.source == s));
            for c in of_source.take(limit) {
                for r in 0..self.repeats {
                    out.push(Cell { point: p.id.clone(), conversation: c.id.clone(), repeat: r });
                }
            }
        }
        out
    }
}

/// `I/N`: the I-th of N shards (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("shard `{s}`: expected I/N, e.g. 2/3"))?;
        let index: usize = i.parse().map_err(|_| format!("shard `{s}`: `{i}` is not a number"))?;
        let count: usize = n.parse().map_err(|_| format!("shard `{s}`: `{n}` is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard `{s}`: need 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }
}

/// Builds the plan: loads the conversation list (not their contents) and expands the grid.
pub fn make_plan(config: &SweepConfig, base_dir: &Path) -> Result<Plan, String> {
    let roots: Vec<PathBuf> =
        config.datasets.iter().map(|d| if d.is_absolute() { d.clone() } else { base_dir.join(d) }).collect();
    let mut files = datasets::find_conversations(&roots).map_err(|e| e.to_string())?;
    if config.max_conversations > 0 {
        files.truncate(config.max_conversations);
    }
    let mut conversations = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for f in files {
        let (id, source, error) = match datasets::load_conversation(&f) {
            Ok(c) => (c.meta.id.clone(), c.meta.source.clone(), None),
            Err(e) => {
                let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                (stem, String::new(), Some(e.to_string()))
            }
        };
        let mut id = sanitize_id(&id);
        if !seen.insert(id.clone()) {
            id = format!("{}-{}", sanitize_id(&source), id);
            seen.insert(id.clone());
        }
        let rel = f.strip_prefix(base_dir).map(Path::to_path_buf).unwrap_or(f.clone());
        conversations.push(PlannedConversation { id, path: rel, source, error });
    }
    let points = config.points()?;
    Ok(Plan {
        name: config.name.clone(),
        points,
        conversations,
        repeats: config.repeats,
        replay: config.replay.clone(),
        probes: config.probes.clone().filter(|p| p.enabled),
        cost: config.cost.clone(),
    })
}

fn sanitize_id(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}

/// Writes `bytes` to `path` atomically (temp file in the same directory, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Reads a stored cell; `None` when absent or unreadable (it will be run again).
pub fn read_cell(run_dir: &Path, cell: &Cell) -> Option<CellResult> {
    let bytes = std::fs::read(run_dir.join(cell.relative_path())).ok()?;
    serde_json::from_slice::<CellResult>(&bytes).ok().filter(|r| &r.cell == cell)
}

pub fn write_cell(run_dir: &Path, r: &CellResult) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_atomic(&run_dir.join(r.cell.relative_path()), &bytes)
}

/// Options of one invocation.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub run_dir: PathBuf,
    pub base_dir: PathBuf,
    pub shard: Option<Shard>,
    pub cache_mode: Option<CacheMode>,
    pub progress: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub total_cells: usize,
    pub skipped: usize,
    pub ran: usize,
    pub failed: usize,
}

pub fn plan_path(run_dir: &Path) -> PathBuf {
    run_dir.join("plan.json")
}

/// Writes (or checks) the plan in the run directory: resuming with another config is refused.
pub fn ensure_plan(run_dir: &Path, plan: &Plan) -> Result<(), String> {
    let path = plan_path(run_dir);
    let mut bytes = serde_json::to_vec_pretty(plan).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    if let Ok(existing) = std::fs::read(&path) {
        if existing != bytes {
            return Err(format!(
                "{}: the run directory holds another plan (different config or corpus); use a new --out",
                path.display()
            ));
        }
        return Ok(());
    }
    write_atomic(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn load_plan(run_dir: &Path) -> Result<Plan, String> {
    let path = plan_path(run_dir);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The LLM backend options a sweep config asks for; `cache_mode` overrides the config's.
pub fn backend_options(
    config: &SweepConfig,
    base_dir: &Path,
    cache_mode: Option<CacheMode>,
) -> Result<BackendOptions, String> {
    let defaults = BackendOptions::default();
    let reliability = llm::ReliabilityOptions {
        timeout: Some(std::time::Duration::from_secs(config.llm.timeout_secs)),
        concurrency: config.llm.concurrency,
        retry: llm::RetryPolicy { max_attempts: config.llm.max_attempts, ..defaults.reliability.retry.clone() },
        ..defaults.reliability.clone()
    };
    Ok(BackendOptions {
        cache_dir: config.llm.cache_dir.as_ref().map(|d| if d.is_absolute() { d.clone() } else { base_dir.join(d) }),
        cache_mode: match cache_mode {
            Some(m) => m,
            None => config.llm.cache_mode.parse().map_err(|e| format!("llm.cache_mode: {e}"))?,
        },
        reliability,
        threads: config.llm.threads,
        ..defaults
    })
}

/// Models by spec, built on first use and shared by all cells.
struct Models {
    opts: BackendOptions,
    built: std::sync::Mutex<BTreeMap<String, Arc<dyn LanguageModel>>>,
}

impl Models {
    fn get(&self, spec: &str) -> Result<Arc<dyn LanguageModel>, LlmError> {
        let mut built = self.built.lock().expect("models lock");
        if let Some(m) = built.get(spec) {
            return Ok(Arc::clone(m));
        }
        let m = llm::from_spec(spec, &self.opts)?;
        built.insert(spec.to_string(), Arc::clone(&m));
        Ok(m)
    }
}

/// A model that fails every call: stands in for a summarizer that could not be built, so the cells that
/// need it record the error and the others go on.
struct Unavailable(String);

#[async_trait::async_trait]
impl LanguageModel for Unavailable {
    fn spec(&self) -> &str {
        "unavailable"
    }
    async fn generate(&self, _req: &llm::LlmRequest) -> Result<llm::LlmResponse, LlmError> {
        Err(LlmError::Config(self.0.clone()))
    }
}

/// Removes temporary files a killed run left behind (a kill between writing and renaming a cell).
fn remove_orphaned_temp_files(run_dir: &Path) {
    let Ok(points) = std::fs::read_dir(run_dir.join("cells")) else { return };
    for point in points.flatten() {
        let Ok(files) = std::fs::read_dir(point.path()) else { continue };
        for f in files.flatten() {
            if f.file_name().to_string_lossy().starts_with(".tmp") {
                let _ = std::fs::remove_file(f.path());
            }
        }
    }
}

/// Runs (or resumes) every cell of the plan that belongs to this shard.
pub async fn run(config: &SweepConfig, plan: &Plan, opts: &RunOptions) -> Result<RunSummary, String> {
    ensure_plan(&opts.run_dir, plan)?;
    remove_orphaned_temp_files(&opts.run_dir);
    let models =
        Arc::new(Models { opts: backend_options(config, &opts.base_dir, opts.cache_mode)?, built: Default::default() });
    let cells: Vec<Cell> = plan
        .cells()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| opts.shard.is_none_or(|s| i % s.count == s.index - 1))
        .map(|(_, c)| c)
        .collect();
    let mut summary = RunSummary { total_cells: cells.len(), ..Default::default() };
    let mut todo: Vec<Cell> = cells.into_iter().filter(|c| read_cell(&opts.run_dir, c).is_none()).collect();
    // Slices usually hold the slow models: start them first so they overlap the fast cells instead of
    // running alone at the end. Results do not depend on the order.
    let in_slice: std::collections::BTreeSet<&str> =
        plan.points.iter().filter(|p| p.slice.is_some()).map(|p| p.id.as_str()).collect();
    todo.sort_by_key(|c| !in_slice.contains(c.point.as_str()));
    summary.skipped = summary.total_cells - todo.len();
    let bar = if opts.progress {
        let b = indicatif::ProgressBar::new(todo.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} cells {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let points: BTreeMap<String, ConfigPoint> = plan.points.iter().map(|p| (p.id.clone(), p.clone())).collect();
    let conversations: BTreeMap<String, PlannedConversation> =
        plan.conversations.iter().map(|c| (c.id.clone(), c.clone())).collect();
    // Group by conversation so each file is parsed once per worker batch.
    let semaphore = Arc::new(tokio::sync::Semaphore::new(config.concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    for cell in todo {
        let point = points[&cell.point].clone();
        let conv = conversations[&cell.conversation].clone();
        let models = Arc::clone(&models);
        let sem = Arc::clone(&semaphore);
        let run_dir = opts.run_dir.clone();
        let base_dir = opts.base_dir.clone();
        let replay_settings = ReplaySettings { token_limit: point.token_limit, ..plan.replay.clone() };
        let probes_config = plan.probes.clone();
        tasks.spawn(async move {
            let _permit = sem.acquire_owned().await.expect("semaphore open");
            let (result, probes) =
                run_cell(&cell, &point, &conv, &base_dir, &replay_settings, &models, probes_config.as_ref()).await;
            let failed = result.error.is_some();
            let stored = CellResult { cell, source: conv.source.clone(), result, probes };
            write_cell(&run_dir, &stored).map(|_| failed).map_err(|e| format!("{}: {e}", run_dir.display()))
        });
    }
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Ok(failed)) => {
                summary.ran += 1;
                summary.failed += failed as usize;
            }
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(format!("a cell panicked: {e}")),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(summary)
}

async fn run_cell(
    cell: &Cell,
    point: &ConfigPoint,
    conv: &PlannedConversation,
    base_dir: &Path,
    settings: &ReplaySettings,
    models: &Models,
    probes: Option<&ProbesConfig>,
) -> (ConversationResult, Option<ProbeResults>) {
    let failed = |e: String| {
        (ConversationResult { conversation: cell.conversation.clone(), error: Some(e), ..Default::default() }, None)
    };
    if let Some(e) = &conv.error {
        return failed(e.clone());
    }
    let conversation: Conversation = match datasets::load_conversation(&base_dir.join(&conv.path)) {
        Ok(c) => c,
        Err(e) => return failed(e.to_string()),
    };
    let llm: Arc<dyn LanguageModel> = match &point.summarizer {
        Some(spec) => models.get(spec).unwrap_or_else(|e| Arc::new(Unavailable(format!("summarizer `{spec}`: {e}")))),
        None => Arc::new(Unavailable("this strategy calls no model".into())),
    };
    let input = ReplayInput::of(&cell.conversation, &conversation);
    let Some(pc) = probes.filter(|p| p.enabled) else {
        let result = replay::replay_spec(input, &point.strategy, settings, llm.as_ref(), &mut replay::NoObserver).await;
        return (result, None);
    };
    let dir = if pc.dir.is_absolute() { pc.dir.clone() } else { base_dir.join(&pc.dir) };
    let mut errors = Vec::new();
    let loaded = crate::probes::load_probes(
        &dir,
        &conversation.meta.source,
        &conversation.meta.id,
        &pc.sources,
        conversation.history.len(),
    );
    let probe_set = loaded.unwrap_or_else(|e| {
        errors.push(e.to_string());
        Vec::new()
    });
    let mut model_for = |role: &str, spec: Option<&String>| {
        let spec = spec?;
        models.get(spec).map_err(|e| errors.push(format!("{role} `{spec}`: {e}"))).ok()
    };
    let answerer = model_for("answerer", point.probe_answerer.as_ref().or(pc.answerer.as_ref()));
    let judge = model_for("judge", pc.judge.as_ref());
    let mut observer = ProbeObserver::new(
        &conversation.meta.id,
        probe_set,
        answerer,
        judge,
        pc.options(point.probe_answers_at_end_only),
    );
    let result = replay::replay_spec(input, &point.strategy, settings, llm.as_ref(), &mut observer).await;
    let mut probe_results = observer.into_results();
    // Only strategies that write summaries can obey a planted instruction.
    if pc.injection && point.summarizer.is_some() && !point.probe_no_injection {
        if let Some((injected, planted)) = crate::probes::inject::plant(&conversation) {
            let input = ReplayInput::of(&cell.conversation, &injected);
            let settings = ReplaySettings { keep_summaries: true, ..settings.clone() };
            let mut watcher = ProbeObserver::new(&conversation.meta.id, Vec::new(), None, None, Default::default())
                .with_injection(&planted);
            let r = replay::replay_spec(input, &point.strategy, &settings, llm.as_ref(), &mut watcher).await;
            let mut injection = watcher.into_results().injection;
            if let (Some(inj), Some(e)) = (&mut injection, r.error) {
                inj.error = Some(e);
            }
            probe_results.injection = injection;
        }
    }
    if !errors.is_empty() {
        probe_results.error = Some(errors.join("; "));
    }
    (result, Some(probe_results))
}

/// Every stored cell of a run directory, in the plan's order (missing cells are skipped).
pub fn collect(run_dir: &Path, plan: &Plan) -> Vec<CellResult> {
    plan.cells().iter().filter_map(|c| read_cell(run_dir, c)).collect()
}

/// Joins shard directories into `out`: their plans must be identical.
pub fn merge(out: &Path, shards: &[PathBuf]) -> Result<usize, String> {
    let first = shards.first().ok_or("merge needs at least one shard directory")?;
    let plan = load_plan(first)?;
    for s in &shards[1..] {
        if load_plan(s)? != plan {
            return Err(format!(
                "{}: its plan differs from {}'s (different config or corpus)",
                s.display(),
                first.display()
            ));
        }
    }
    ensure_plan(out, &plan)?;
    let mut copied = 0;
    for cell in plan.cells() {
        if let Some(r) = shards.iter().find_map(|s| read_cell(s, &cell)) {
            write_cell(out, &r).map_err(|e| format!("{}: {e}", out.display()))?;
            copied += 1;
        }
    }
    for s in shards {
        if let Ok(cfg) = std::fs::read(s.join("config.toml")) {
            write_atomic(&out.join("config.toml"), &cfg).map_err(|e| e.to_string())?;
            break;
        }
    }
    Ok(copied)
}
