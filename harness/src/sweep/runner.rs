//! The sweep runner: cells (config point × conversation × repeat) replayed concurrently, each finished
//! cell written atomically to the run directory, so a killed run resumes where it stopped.

use super::config::{ConfigPoint, DatasetEntry, ProbesConfig, SweepConfig};
use crate::datasets::{self, Conversation};
use crate::fsutil::{write_atomic, TEMP_PREFIX};
use crate::llm::{self, BackendOptions, CacheMode, LanguageModel, LlmError};
use crate::probes::{ProbeObserver, ProbeResults};
use crate::replay::{self, ConversationResult, CountError, CounterHandle, ModelCounter, ReplaySettings, TokenCounter};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Largest plan a run accepts, in cells; checked before any cell list is allocated.
pub const MAX_PLAN_CELLS: u64 = 1_000_000;

/// Why a run, a merge or a plan could not be made. Exit statuses are assigned in `cli::exit_status`.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The sweep config does not expand to a grid.
    #[error("{0}")]
    Config(String),
    /// A strategy of the grid is unknown or refuses its knob values.
    #[error(transparent)]
    Grid(#[from] crate::replay::StrategyError),
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    #[error(
        "the plan has {cells} cells ({points} configurations, {conversations} conversations, {repeats} repeat(s)), \
         more than the limit of {limit}; lower `repeats`, the grid or `max_conversations`"
    )]
    TooLarge { cells: u128, points: usize, conversations: usize, repeats: u32, limit: u64 },
    #[error("{}: the run directory holds another plan (different config or corpus); use a new --out", .path.display())]
    PlanMismatch { path: PathBuf },
    #[error("{}: {reason}", .path.display())]
    BadPlan { path: PathBuf, reason: String },
    /// A read or directory operation failed (the message names the path).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Write(#[from] crate::fsutil::WriteError),
    #[error(
        "{}: the run directory is in use by {holder}; wait for that run to finish or use another --out",
        .path.display()
    )]
    Locked { path: PathBuf, holder: String },
    #[error("a cell panicked: {0}")]
    Panicked(String),
    #[error("{}: its plan differs from {}'s (different config or corpus)", .shard.display(), .first.display())]
    ShardsDiffer { shard: PathBuf, first: PathBuf },
    #[error("merge needs at least one shard directory")]
    NoShards,
    #[error("{0}")]
    BadOption(String),
}

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
    pub cost: crate::pricing::CostConfig,
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
    /// The cell failed on a transient model error (rate limit, timeout, server error, bad answer): the next
    /// `run` into the directory redoes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transient_failure: bool,
    /// [`Plan::digest`] of the plan the cell was run under: a cell copied from another run is not used.
    #[serde(default)]
    pub plan: String,
    /// `sha256:` of the stored file with this field empty (see [`cell_bytes`]): a damaged or hand-edited
    /// cell is detected, named and redone, never used. Always the last field.
    #[serde(default)]
    pub digest: String,
}

impl Plan {
    /// A point's number in reports (1-based, in plan order): the `#` by which every table of a report names
    /// its points.
    pub fn point_number(&self, id: &str) -> Option<usize> {
        self.points.iter().position(|p| p.id == id).map(|i| i + 1)
    }

    /// The number of cells, computed without listing them.
    pub fn cell_count(&self) -> u128 {
        self.points
            .iter()
            .map(|p| {
                let of_source =
                    self.conversations.iter().filter(|c| p.source.as_ref().is_none_or(|s| &c.source == s)).count();
                of_source.min(p.max_conversations.unwrap_or(usize::MAX)) as u128 * u128::from(self.repeats)
            })
            .sum()
    }

    /// Refuses plans larger than [`MAX_PLAN_CELLS`], before anything is allocated for them.
    pub fn check_size(&self) -> Result<(), RunError> {
        let cells = self.cell_count();
        if cells > u128::from(MAX_PLAN_CELLS) {
            return Err(RunError::TooLarge {
                cells,
                points: self.points.len(),
                conversations: self.conversations.len(),
                repeats: self.repeats,
                limit: MAX_PLAN_CELLS,
            });
        }
        Ok(())
    }

    /// The plan as stored in `plan.json`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Short digest of the stored plan, carried by every cell run under it.
    pub fn digest(&self) -> String {
        hex::encode(&Sha256::digest(self.to_bytes())[..8])
    }

    /// All cells in their canonical order (point, conversation, repeat); shards take every Nth.
    /// Call [`Plan::check_size`] first on a plan from outside (`make_plan` and `load_plan` do).
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

/// A `--shard` value that is not `I/N` with 1 ≤ I ≤ N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shard `{given}`: {problem}")]
pub struct BadShard {
    pub given: String,
    pub problem: String,
}

impl std::str::FromStr for Shard {
    type Err = BadShard;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem: String| BadShard { given: s.to_string(), problem };
        let (i, n) = s.split_once('/').ok_or_else(|| bad("expected I/N, e.g. 2/3".into()))?;
        let index: usize = i.parse().map_err(|_| bad(format!("`{i}` is not a number")))?;
        let count: usize = n.parse().map_err(|_| bad(format!("`{n}` is not a number")))?;
        if count == 0 || index == 0 || index > count {
            return Err(bad("need 1 <= I <= N".into()));
        }
        Ok(Shard { index, count })
    }
}

/// Builds the plan: loads the conversation list (not their contents) and expands the grid.
pub fn make_plan(config: &SweepConfig, base_dir: &Path) -> Result<Plan, RunError> {
    if config.datasets.is_empty() {
        return Err(RunError::Config("key `datasets`: needs at least one dataset directory or file".into()));
    }
    let files = dataset_files(config, base_dir)?;
    let mut conversations = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (f, failure) in files {
        let loaded = match failure {
            Some(failure) => Err(failure),
            None => datasets::load_conversation(&f).map_err(|e| (String::new(), e.to_string())),
        };
        let (id, source, error) = match loaded {
            Ok(c) => (c.meta.id.clone(), c.meta.source.clone(), None),
            Err((source, e)) => {
                let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                let stem = stem.split('.').next().unwrap_or_default().to_string();
                (stem, source, Some(e))
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
    for s in &config.slice {
        if let Some(source) = &s.source {
            if !conversations.iter().any(|c| &c.source == source) {
                let known: std::collections::BTreeSet<&str> = conversations.iter().map(|c| c.source.as_str()).collect();
                return Err(RunError::Config(format!(
                    "slice `{}`: source `{source}` matches no conversation of the datasets (sources: {})",
                    s.name,
                    known.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    let plan = Plan {
        name: config.name.clone(),
        points,
        conversations,
        repeats: config.repeats,
        replay: config.replay.clone(),
        probes: config.probes.clone().filter(|p| p.enabled),
        cost: config.cost.clone(),
    };
    plan.check_size()?;
    if plan.cell_count() == 0 {
        return Err(RunError::Config("the plan has no cells: the datasets hold no conversation".into()));
    }
    Ok(plan)
}

/// The conversation files of the config's datasets, in sorted order per entry and at most
/// `max_conversations` of them; raw agent logs are imported into the import cache first, and a raw log
/// that cannot be imported is listed with (its source, the error), so its cells record it and the run goes on.
type DatasetFile = (PathBuf, Option<(String, String)>);

fn dataset_files(config: &SweepConfig, base_dir: &Path) -> Result<Vec<DatasetFile>, RunError> {
    let rooted = |d: &Path| if d.is_absolute() { d.to_path_buf() } else { base_dir.join(d) };
    let mut converted: Vec<PathBuf> = Vec::new();
    let mut raw: Vec<DatasetFile> = Vec::new();
    for entry in &config.datasets {
        match entry {
            DatasetEntry::Converted(d) => converted.push(rooted(d)),
            DatasetEntry::Raw(r) => {
                let source = r.source_name();
                let options = datasets::raw::RawOptions {
                    format: r.import_format().map_err(|e| RunError::Config(e.to_string()))?,
                    source: Some(source.clone()),
                    source_by_project: r.source_by == crate::sweep::config::SourceBy::Project,
                    license: r.license.clone(),
                    repository: r.repository.clone(),
                    commit: r.commit.clone(),
                };
                let cache = rooted(&config.import_cache);
                // `~/` is the user's home directory, as in a shell (sessions live under ~/.claude, ~/.codex).
                let spec = match (r.raw.strip_prefix("~"), std::env::var_os("HOME")) {
                    (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
                    _ => rooted(&r.raw),
                };
                for file in datasets::raw::import_all_cached(&spec, &options, &cache)? {
                    match file.result {
                        Ok(done) => {
                            for w in &done.warnings {
                                tracing::debug!("{w}");
                            }
                            if done.files.is_empty() {
                                let e = format!("{}: holds no conversation", file.name);
                                raw.push((file.path.clone(), Some((source.clone(), e))));
                            }
                            raw.extend(done.files.into_iter().map(|f| (f, None)));
                        }
                        Err(e) => raw.push((file.path.clone(), Some((source.clone(), e.to_string())))),
                    }
                }
            }
        }
    }
    let mut files: Vec<DatasetFile> = if converted.is_empty() {
        Vec::new()
    } else {
        datasets::find_conversations(&converted)?.into_iter().map(|f| (f, None)).collect()
    };
    files.extend(raw);
    if config.max_conversations > 0 {
        files.truncate(config.max_conversations);
    }
    Ok(files)
}

fn sanitize_id(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}

/// What a run directory holds for one cell.
#[derive(Clone, Debug, PartialEq)]
pub enum CellState {
    Done(Box<CellResult>),
    Missing,
    /// Present but unusable.
    Damaged(CellDamage),
}

/// Why a stored cell is not used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CellDamage {
    #[error("cannot read: {0}")]
    Unreadable(String),
    #[error("no digest")]
    NoDigest,
    #[error("digest mismatch: the file was changed after it was written")]
    DigestMismatch,
    #[error("not a cell result: {0}")]
    NotACell(String),
    #[error("holds another cell's result")]
    OtherCell,
    #[error("run under another plan ({0})")]
    OtherPlan(String),
}

const DIGEST_FIELD: &[u8] = b"\n  \"digest\": \"";

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

fn sha256_tag(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The stored form of a cell: pretty JSON whose last field, `digest`, is the sha256 of the same bytes with
/// that field empty. Hashing bytes (not re-serialised values) keeps the check exact for every number.
pub fn cell_bytes(r: &CellResult) -> Result<Vec<u8>, RunError> {
    let blank = CellResult { digest: String::new(), ..r.clone() };
    let mut bytes = serde_json::to_vec_pretty(&blank).map_err(|e| RunError::Io(std::io::Error::other(e)))?;
    bytes.push(b'\n');
    let at = find_last(&bytes, DIGEST_FIELD)
        .map(|i| i + DIGEST_FIELD.len())
        .ok_or_else(|| RunError::Io(std::io::Error::other("cell serialisation lost its digest field")))?;
    let digest = sha256_tag(&bytes);
    bytes.splice(at..at, digest.bytes());
    Ok(bytes)
}

/// Checks a stored cell's digest against its bytes.
fn verify_digest(bytes: &[u8]) -> Result<(), CellDamage> {
    let at = find_last(bytes, DIGEST_FIELD).map(|i| i + DIGEST_FIELD.len()).ok_or(CellDamage::NoDigest)?;
    let len = bytes[at..].iter().position(|&b| b == b'"').ok_or(CellDamage::NoDigest)?;
    let claimed = String::from_utf8_lossy(&bytes[at..at + len]).into_owned();
    let mut blank = bytes[..at].to_vec();
    blank.extend_from_slice(&bytes[at + len..]);
    let actual = sha256_tag(&blank);
    if claimed.is_empty() {
        return Err(CellDamage::NoDigest);
    }
    if claimed != actual {
        return Err(CellDamage::DigestMismatch);
    }
    Ok(())
}

/// Reads and verifies a stored cell.
pub fn read_cell(run_dir: &Path, plan_digest: &str, cell: &Cell) -> CellState {
    let bytes = match std::fs::read(run_dir.join(cell.relative_path())) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CellState::Missing,
        Err(e) => return CellState::Damaged(CellDamage::Unreadable(e.to_string())),
    };
    if let Err(reason) = verify_digest(&bytes) {
        return CellState::Damaged(reason);
    }
    match serde_json::from_slice::<CellResult>(&bytes) {
        Err(e) => CellState::Damaged(CellDamage::NotACell(e.to_string())),
        Ok(r) if &r.cell != cell => CellState::Damaged(CellDamage::OtherCell),
        Ok(r) if r.plan != plan_digest => CellState::Damaged(CellDamage::OtherPlan(r.plan)),
        Ok(r) => CellState::Done(Box::new(r)),
    }
}

/// Writes a cell atomically, stamped with its digest.
pub fn write_cell(run_dir: &Path, r: &CellResult) -> Result<(), RunError> {
    Ok(write_atomic(&run_dir.join(r.cell.relative_path()), &cell_bytes(r)?)?)
}

/// Every cell of a plan as a run directory holds it.
#[derive(Clone, Debug, Default)]
pub struct StoredCells {
    /// Verified cells, in the plan's order.
    pub cells: Vec<CellResult>,
    pub missing: Vec<Cell>,
    pub damaged: Vec<(Cell, CellDamage)>,
}

impl StoredCells {
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty() && self.damaged.is_empty()
    }

    /// One line per missing or damaged cell, naming its file (at most `limit`, then a count).
    pub fn problems(&self, run_dir: &Path, limit: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .damaged
            .iter()
            .map(|(c, why)| format!("damaged: {}: {why}", run_dir.join(c.relative_path()).display()))
            .chain(self.missing.iter().map(|c| format!("missing: {}", run_dir.join(c.relative_path()).display())))
            .collect();
        let total = lines.len();
        if total > limit {
            lines.truncate(limit);
            lines.push(format!("… and {} more", total - limit));
        }
        lines
    }
}

/// Reads every cell of the plan from a run directory, sorting them into verified, missing and damaged.
pub fn load_cells(run_dir: &Path, plan: &Plan) -> StoredCells {
    let digest = plan.digest();
    let mut out = StoredCells::default();
    for cell in plan.cells() {
        match read_cell(run_dir, &digest, &cell) {
            CellState::Done(r) => out.cells.push(*r),
            CellState::Missing => out.missing.push(cell),
            CellState::Damaged(why) => out.damaged.push((cell, why)),
        }
    }
    out
}

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

/// See [`RunOptions::wrap_model`].
#[derive(Clone)]
pub struct ModelWrapper(pub Arc<WrapModelFn>);

/// The function of a [`ModelWrapper`].
pub type WrapModelFn = dyn Fn(Arc<dyn LanguageModel>) -> Arc<dyn LanguageModel> + Send + Sync;

impl std::fmt::Debug for ModelWrapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelWrapper")
    }
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

pub fn plan_path(run_dir: &Path) -> PathBuf {
    run_dir.join("plan.json")
}

/// Writes (or checks) the plan in the run directory: resuming with another config is refused.
pub fn ensure_plan(run_dir: &Path, plan: &Plan) -> Result<(), RunError> {
    let path = plan_path(run_dir);
    let bytes = plan.to_bytes();
    if let Ok(existing) = std::fs::read(&path) {
        if existing != bytes {
            return Err(RunError::PlanMismatch { path });
        }
        return Ok(());
    }
    Ok(write_atomic(&path, &bytes)?)
}

pub fn load_plan(run_dir: &Path) -> Result<Plan, RunError> {
    let path = plan_path(run_dir);
    let bytes = std::fs::read(&path).map_err(|e| RunError::BadPlan { path: path.clone(), reason: e.to_string() })?;
    let plan: Plan =
        serde_json::from_slice(&bytes).map_err(|e| RunError::BadPlan { path: path.clone(), reason: e.to_string() })?;
    plan.check_size()?;
    Ok(plan)
}

/// The lock a run holds on its directory (`run.lock`, holding the holder's pid and host). The lock is an
/// advisory `flock` the kernel drops when the holder dies, so a lock file left by a killed run is stale by
/// construction and the next run takes it over.
#[derive(Debug)]
pub struct RunLock {
    file: std::fs::File,
}

impl Drop for RunLock {
    /// Empties the record before the kernel drops the lock with the handle. The file itself stays: removing
    /// it would let a run that opened it just before lock a file nobody else can see.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

pub const LOCK_FILE: &str = "run.lock";

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown host".into())
}

/// Takes the run directory's lock, or refuses naming the holder.
pub fn lock_run_dir(run_dir: &Path) -> Result<RunLock, RunError> {
    use std::io::{Read, Seek, Write};
    std::fs::create_dir_all(run_dir).map_err(|e| RunError::Io(named_io(run_dir, e)))?;
    let path = run_dir.join(LOCK_FILE);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| RunError::Io(named_io(&path, e)))?;
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => {}
        Err(fs4::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = if holder.is_empty() { "another run".to_string() } else { holder.to_string() };
            return Err(RunError::Locked { path: run_dir.to_path_buf(), holder });
        }
        Err(fs4::TryLockError::Error(e)) => return Err(RunError::Io(named_io(&path, e))),
    }
    let record = format!("pid {} on {}\n", std::process::id(), host_name());
    let written = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| file.write_all(record.as_bytes()));
    written.map_err(|e| RunError::Io(named_io(&path, e)))?;
    Ok(RunLock { file })
}

fn named_io(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The LLM backend options a sweep config asks for; `cache_mode` overrides the config's.
pub fn backend_options(
    config: &SweepConfig,
    base_dir: &Path,
    cache_mode: Option<CacheMode>,
) -> Result<BackendOptions, RunError> {
    let defaults = BackendOptions::default();
    let reliability = llm::ReliabilityOptions {
        timeout: Some(std::time::Duration::from_secs(config.llm.timeout_secs)),
        deadline: Some(std::time::Duration::from_secs(config.llm.deadline_secs)),
        concurrency: config.llm.concurrency,
        retry: llm::RetryPolicy { max_attempts: config.llm.max_attempts, ..defaults.reliability.retry.clone() },
        ..defaults.reliability.clone()
    };
    Ok(BackendOptions {
        cache_dir: config.llm.cache_dir.as_ref().map(|d| if d.is_absolute() { d.clone() } else { base_dir.join(d) }),
        cache_mode: match cache_mode {
            Some(m) => m,
            None => config.llm.cache_mode,
        },
        reliability,
        max_response_bytes: config.llm.max_response_bytes,
        threads: config.llm.threads,
        ..defaults
    })
}

/// Models by spec, built on first use and shared by all cells.
struct Models {
    opts: BackendOptions,
    built: std::sync::Mutex<BTreeMap<String, Arc<dyn LanguageModel>>>,
    wrap: Option<ModelWrapper>,
}

impl Models {
    fn get(&self, spec: &str) -> Result<Arc<dyn LanguageModel>, LlmError> {
        let mut built = self.built.lock().expect("models lock");
        if let Some(m) = built.get(spec) {
            return Ok(Arc::clone(m));
        }
        let mut m = llm::from_spec(spec, &self.opts)?;
        if let Some(w) = &self.wrap {
            m = (w.0)(m);
        }
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

/// A model tokenizer whose model could not be built: every count fails with why, so each cell records it.
struct UnavailableCounter {
    spec: String,
    why: String,
}

#[async_trait::async_trait]
impl TokenCounter for UnavailableCounter {
    fn spec(&self) -> &str {
        &self.spec
    }
    async fn count(&self, _: &crate::history::Content) -> Result<u64, CountError> {
        Err(CountError::Failed { spec: self.spec.clone(), source: LlmError::Config(self.why.clone()) })
    }
}

/// The run's counter of a model tokenizer (`[replay] tokenizer = "gemini:…"`): the model is built like the
/// summarizers (`llm::from_spec` with the run's backend options: the same cache directory and mode, the
/// same retries), and one counter is shared by every cell, so each distinct Content is counted once per run.
fn run_counter(tokenizer: &replay::Tokenizer, models: &Models) -> Option<Arc<dyn TokenCounter>> {
    let spec = tokenizer.model_spec()?;
    Some(match models.get(spec) {
        Ok(model) => Arc::new(ModelCounter::new(model)),
        Err(e) => Arc::new(UnavailableCounter { spec: spec.to_string(), why: e.to_string() }),
    })
}

/// The run's counter as one cell sees it: notes whether a count failed on a transient error, so the cell
/// can be marked for a retry by the next run (as [`Watched`] does for model calls).
struct WatchedCounter {
    inner: Arc<dyn TokenCounter>,
    transient: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl TokenCounter for WatchedCounter {
    fn spec(&self) -> &str {
        self.inner.spec()
    }
    async fn count(&self, content: &crate::history::Content) -> Result<u64, CountError> {
        let r = self.inner.count(content).await;
        if r.as_ref().is_err_and(CountError::is_transient) {
            self.transient.store(true, Ordering::Relaxed);
        }
        r
    }
}

/// Removes temporary files a killed run left behind (a kill between writing and renaming a cell).
fn remove_orphaned_temp_files(run_dir: &Path) {
    let Ok(points) = std::fs::read_dir(run_dir.join("cells")) else { return };
    for point in points.flatten() {
        let Ok(files) = std::fs::read_dir(point.path()) else { continue };
        for f in files.flatten() {
            if f.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                let _ = std::fs::remove_file(f.path());
            }
        }
    }
}

/// A model as one cell sees it: notes whether a call failed on a transient error, so the cell can be
/// marked for a retry by the next run.
struct Watched {
    inner: Arc<dyn LanguageModel>,
    transient: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl LanguageModel for Watched {
    fn spec(&self) -> &str {
        self.inner.spec()
    }
    fn cache_identity(&self) -> String {
        self.inner.cache_identity()
    }
    async fn generate(&self, req: &llm::LlmRequest) -> Result<llm::LlmResponse, LlmError> {
        let r = self.inner.generate(req).await;
        if r.as_ref().is_err_and(LlmError::is_transient) {
            self.transient.store(true, Ordering::Relaxed);
        }
        r
    }
    async fn count_tokens(&self, req: &llm::LlmRequest) -> Result<Option<u64>, LlmError> {
        self.inner.count_tokens(req).await
    }
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
    last: std::time::Instant,
    total: usize,
}

impl PlainProgress {
    fn tick(&mut self, done: usize, failed: usize) {
        if self.last.elapsed() >= self.every || done == self.total {
            self.last = std::time::Instant::now();
            eprintln!("run: {done}/{} cells done ({failed} with an error)", self.total);
        }
    }
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
    let cells: Vec<Cell> = plan
        .cells()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| opts.shard.is_none_or(|s| i % s.count == s.index - 1))
        .map(|(_, c)| c)
        .collect();
    let mut summary = RunSummary { total_cells: cells.len(), ..Default::default() };
    let plan_digest = plan.digest();
    let mut todo: Vec<(Cell, Reason)> = Vec::new();
    for c in cells {
        match read_cell(&opts.run_dir, &plan_digest, &c) {
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
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let bar = if opts.progress && terminal {
        let b = indicatif::ProgressBar::new(todo.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} cells {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut plain = (opts.progress && !terminal).then(|| PlainProgress {
        every: std::time::Duration::from_secs(5),
        last: std::time::Instant::now(),
        total: todo.len(),
    });
    let points: BTreeMap<String, ConfigPoint> = plan.points.iter().map(|p| (p.id.clone(), p.clone())).collect();
    let conversations: BTreeMap<String, PlannedConversation> =
        plan.conversations.iter().map(|c| (c.id.clone(), c.clone())).collect();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(config.concurrency));
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
                (&models, &transient),
                probes_config.as_ref(),
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

async fn run_cell(
    cell: &Cell,
    point: &ConfigPoint,
    conv: &PlannedConversation,
    base_dir: &Path,
    settings: &ReplaySettings,
    (models, transient): (&Models, &Arc<AtomicBool>),
    probes: Option<&ProbesConfig>,
) -> (ConversationResult, Option<ProbeResults>) {
    let watched = |m: Arc<dyn LanguageModel>| -> Arc<dyn LanguageModel> {
        Arc::new(Watched { inner: m, transient: Arc::clone(transient) })
    };
    let failed = |e: String| {
        (ConversationResult { conversation: cell.conversation.clone(), error: Some(e), ..Default::default() }, None)
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
    let Some(pc) = probes.filter(|p| p.enabled) else {
        let result = replay::replay_spec(input, &point.strategy, settings, llm.as_ref(), &mut replay::NoObserver).await;
        return (result, None);
    };
    let dir = if pc.dir.is_absolute() { pc.dir.clone() } else { base_dir.join(&pc.dir) };
    let mut errors = Vec::new();
    let loaded = crate::probes::load_scored_probes(
        &dir,
        &conversation.meta.source,
        &conversation.meta.id,
        &pc.sources,
        &conversation.history,
    );
    let (mut probe_set, mut excluded) = loaded.unwrap_or_else(|e| {
        errors.push(e.to_string());
        (Vec::new(), Vec::new())
    });
    if pc.derive_auto {
        let (derived, lints) = crate::probes::derived_auto_probes(&dir, &conversation, &pc.sources, &probe_set);
        probe_set.extend(derived);
        excluded.extend(lints);
    }
    let mut model_for = |role: &str, spec: Option<&String>| {
        let spec = spec?;
        models.get(spec).map(watched).map_err(|e| errors.push(format!("{role} `{spec}`: {e}"))).ok()
    };
    let answerer = model_for("answerer", point.probe_answerer.as_ref().or(pc.answerer.as_ref()));
    let judge = model_for("judge", pc.judge.as_ref());
    let mut observer = ProbeObserver::new(
        &conversation.meta.id,
        probe_set,
        answerer,
        judge,
        pc.options(point.probe_answers_at_end_only),
    )
    .with_recording(&conversation.history);
    let result = replay::replay_spec(input, &point.strategy, settings, llm.as_ref(), &mut observer).await;
    let mut probe_results = observer.into_results();
    probe_results.excluded = excluded;
    // Only strategies that write summaries can obey a planted instruction.
    if pc.injection && point.summarizer.is_some() && !point.probe_no_injection {
        if let Some((injected, planted)) = crate::probes::inject::plant(&conversation) {
            let input = injected.replay_input(&cell.conversation);
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

/// Every verified cell of a run directory, in the plan's order (missing and damaged cells are left out;
/// [`load_cells`] names them).
pub fn collect(run_dir: &Path, plan: &Plan) -> Vec<CellResult> {
    load_cells(run_dir, plan).cells
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
