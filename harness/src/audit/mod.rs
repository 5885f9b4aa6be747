//! `compactbench audit DIR…`: what an agent's own compactions dropped, in a user's own sessions read in
//! place, with no config to write. Each directory's agents are recognised from its files
//! ([`detect_agents`]), the run is planned as `configs/long-sessions.toml` plans the shared sessions
//! ([`config_text`]: each session in the window its recorded usage gives, compressed exactly where the agent
//! compacted, by the agent's own summary, the reference and the baselines, with the extractive summarizer,
//! probes derived in memory and any hand-written ones), and the finished run is read back per compaction ([`read`]): tokens before and after, the
//! files changed before it that the summary does not name, the typed prompts it does not echo, and the
//! probes each strategy kept there. [`render`] writes the terminal listing; the listing also serialises as
//! `--json` output.
//!
//! Everything figure-like here is defined elsewhere, once: file naming and prompt echoes by the rework
//! reading ([`crate::rework`]), probes kept by the project's grader ([`crate::probes::grader`]).

mod render;

pub use render::render;

use crate::data::{CellResult, Plan, PlannedConversation, ProbeKind};
use crate::datasets::import::{self, Format};
use crate::datasets::{self, DatasetError};
use crate::replay::strategy::Role;
use crate::view::recording::{self, Sanitizer};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The agents `audit` recognises, in the order a tie between them is settled.
pub const AGENT_FORMATS: [Format; 4] = [Format::ClaudeCode, Format::Codex, Format::GeminiJsonl, Format::GeminiSession];

/// Bytes of a JSON-lines file read to tell which agent wrote it (a whole-file `.json` session is read whole).
const DETECTION_PREFIX: usize = 256 * 1024;

/// The strategies an audit replays at the agent's compaction points, by role: the agent's own summary, the
/// reference, the baselines (no summarizer: masking, dropping), and no compression (each session's peak).
pub fn audited_strategies() -> Vec<&'static str> {
    use crate::replay::registry;
    let mut names: Vec<&'static str> =
        [Role::Recorded, Role::Reference].into_iter().filter_map(registry::role_name).collect();
    names.extend(
        registry::registry()
            .into_iter()
            .filter(|s| s.role() == Role::Baseline && !s.takes_argument() && !s.summarizes())
            .map(|s| s.name()),
    );
    names.extend(registry::role_name(Role::NoCompression));
    names
}

/// A prompt or probe text is shown up to this many characters in the terminal listing and the JSON.
pub const SHOWN_CHARS: usize = 160;

/// Why an audit could not start.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A directory holds no session of an agent `audit` knows.
    #[error("{}: no Claude Code, Codex or Gemini CLI session found among its {looked} session-like files (*.jsonl, *.json, each also .gz); pass --format to name the agent", .dir.display())]
    NoSessions { dir: PathBuf, looked: usize },
    /// A directory that cannot be listed.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

/// The agent's name as users know it.
pub fn agent_name(format: Format) -> &'static str {
    match format {
        Format::ClaudeCode => "Claude Code",
        Format::Codex => "Codex",
        Format::GeminiJsonl | Format::GeminiSession => "Gemini CLI",
        other => other.name(),
    }
}

/// The agents whose sessions are under `dir`, most files first (a tie in [`AGENT_FORMATS`] order), with how
/// many files each wrote; files of no agent (notes, reports, other tools' logs) are not counted. Each file is
/// told by its first `DETECTION_PREFIX` bytes.
pub fn detect_agents(dir: &Path) -> Result<Vec<(Format, usize)>, AuditError> {
    let (root, files) = datasets::raw::raw_files(dir)?;
    let mut counts = [0usize; AGENT_FORMATS.len()];
    for path in &files {
        let name = datasets::raw::relative_name(path, &root);
        let plain = name.strip_suffix(".gz").unwrap_or(&name);
        let bytes = if plain.to_ascii_lowercase().ends_with(".json") {
            datasets::raw::read_source_named(path, &name)
        } else {
            datasets::raw::read_source_prefix(path, &name, DETECTION_PREFIX)
        };
        let Ok(bytes) = bytes else { continue };
        if let Some(i) = import::detect(&bytes, plain).ok().and_then(|f| AGENT_FORMATS.iter().position(|&a| a == f)) {
            counts[i] += 1;
        }
    }
    let mut found: Vec<(usize, Format, usize)> =
        counts.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| (i, AGENT_FORMATS[i], n)).collect();
    found.sort_by_key(|&(i, _, n)| (std::cmp::Reverse(n), i));
    if found.is_empty() {
        return Err(AuditError::NoSessions { dir: dir.to_path_buf(), looked: files.len() });
    }
    Ok(found.into_iter().map(|(_, f, n)| (f, n)).collect())
}

/// One directory of an audit and its agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditedDir {
    pub dir: PathBuf,
    /// The importer's name (`claude-code`, `codex`, `gemini-jsonl`, `gemini-session`).
    pub format: String,
    pub agent: String,
    /// The source name its conversations carry in the run (unique among the audit's directories).
    pub source: String,
}

impl AuditedDir {
    /// `dir` read as `format`'s sessions; its source name is the directory's name (with the importer's when
    /// `shared`: the directory holds several agents' sessions), made unique among `taken`.
    pub fn new(dir: &Path, format: Format, shared: bool, taken: &[AuditedDir]) -> AuditedDir {
        let base = dir
            .components()
            .rev()
            .find_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .unwrap_or_else(|| "sessions".into());
        let base = if shared { format!("{base}-{}", format.name()) } else { base };
        let mut source = base.clone();
        let mut n = 1;
        while taken.iter().any(|d| d.source == source) {
            n += 1;
            source = format!("{base}-{n}");
        }
        AuditedDir { dir: dir.to_path_buf(), format: format.name().into(), agent: agent_name(format).into(), source }
    }
}

/// A TOML string (quoted, escaped).
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The sweep config of an audit (as text: it is stored in the run directory as `config.toml`, so `report`
/// and `view` treat the directory as any run's). Probes: the extractor's, derived in memory, and the
/// hand-written ones stored under `probe_dir` for a directory of that name (the shared sessions' own,
/// `datasets/probes/claude-code-long.manual.json`, when run from the repository). The replay is that of
/// `configs/long-sessions.toml`; the model cache is off (the extractive summarizer and answerer call no model).
pub fn config_text(dirs: &[AuditedDir], probe_dir: &Path, concurrency: usize) -> String {
    let datasets: Vec<String> = dirs
        .iter()
        .map(|d| {
            format!(
                "  {{ raw = {}, format = {}, source = {} }},",
                toml_string(&d.dir.to_string_lossy()),
                toml_string(&d.format),
                toml_string(&d.source)
            )
        })
        .collect();
    let strategies: Vec<String> = audited_strategies().iter().map(|s| toml_string(s)).collect();
    format!(
        r#"# Written by `compactbench audit`: the agent's own compactions in these sessions, read in place.
name = "audit"
description = "The agent's own compactions vs the reference and baselines at the same points, each session in the window its recorded usage gives, extractive summarizer, probes derived in memory and hand-written ones"
datasets = [
{datasets}
]
concurrency = {concurrency}

[replay]
token_limit = "recorded"
compress_at = "recorded"
tokenizer = "o200k"
prompt_count_source = "measured"
overhead = "recorded"
token_scale = "recorded"
system_prompt_tokens = 3000
tool_declaration_tokens = 12000
overflow_guard = "after"

[llm]
cache_mode = "off"
max_output_tokens = 2048
threads = 1

[grid]
strategy = [{strategies}]
summarizer = ["extractive"]
threshold = [0.8]
preserve_fraction = [0.3]
prompt = ["v5"]
verification = [false]
drop_keep_fraction = [0.3]

[probes]
enabled = true
dir = {probe_dir}
sources = ["auto", "manual"]
answerer = "extractive"
injection = false
answer_at_events = false
derive_auto = true
{labels}"#,
        datasets = datasets.join("\n"),
        strategies = strategies.join(", "),
        probe_dir = toml_string(&probe_dir.to_string_lossy()),
        labels = labels_line(dirs, probe_dir),
    )
}

/// The project's labels of a directory's sessions, when one directory is audited and the project holds labels
/// for a directory of that name (`datasets/labels/claude-code-long.labels.json` for the shared sessions):
/// its probe figures and its listing then count only the kinds the grader is trusted on there.
fn labels_line(dirs: &[AuditedDir], probe_dir: &Path) -> String {
    let [dir] = dirs else { return String::new() };
    let Some(labels) = probe_dir.parent().map(|d| d.join("labels").join(format!("{}.labels.json", dir.source))) else {
        return String::new();
    };
    if !labels.is_file() {
        return String::new();
    }
    format!("labels = {}\n", toml_string(&labels.to_string_lossy()))
}

/// A strategy of the audit, as its columns name it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditedStrategy {
    /// The point's id in the run directory (`cells/<point>/`).
    pub point: String,
    /// The strategy's registry name (`recorded`, `gemini`, …).
    pub strategy: String,
    /// What the listing calls it (`agent`, `reference`, …).
    pub label: String,
}

/// The whole audit.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Audit {
    pub dirs: Vec<AuditedDir>,
    /// The run directory (cells, plan, view page).
    pub run_dir: PathBuf,
    /// The page `audit` wrote (set once it is written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<PathBuf>,
    /// The strategies compared at each compaction; the agent's own first.
    pub strategies: Vec<AuditedStrategy>,
    pub sessions: usize,
    pub compactions: usize,
    /// Sessions the agent compacted, each with its compactions.
    pub compacted: Vec<SessionAudit>,
    /// Sessions it never compacted, with their peak context.
    pub not_compacted: Vec<SessionPeak>,
    /// Sessions that could not be read or replayed, with why.
    pub failed: Vec<FailedSession>,
}

/// A session the agent compacted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionAudit {
    pub session: String,
    pub source: String,
    /// The file, relative to its directory (or its upstream path, where a `SOURCE.md` table beside the
    /// sessions names one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The recording's own title (Claude Code: the session's first time or title).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The window the session is replayed in (from its recorded usage).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_tokens: Option<u64>,
    pub compactions: Vec<CompactionAudit>,
}

/// One compaction the agent made.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CompactionAudit {
    pub ordinal: usize,
    /// When the agent compacted, as the recording gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `auto` or `manual` where the recording says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Model turns before it.
    pub turn: usize,
    /// The request the agent compacted at and the first request after it, as recorded (tokens).
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    /// o200k tokens of the summary.
    pub summary_tokens: u64,
    /// `false`: the summary is encrypted in the recording (Codex 0.140+), so nothing is said of what it names.
    pub summary_readable: bool,
    pub files_edited_before: usize,
    /// Files changed before the compaction that the summary (and the messages kept beside it) does not name,
    /// by the project's path rule; empty when the summary is not readable.
    pub files_edited_not_named: Option<Vec<String>>,
    /// Prompts the user typed before it (of at least [`crate::rework::MIN_PROMPT_WORDS`] key words).
    pub prompts_before: usize,
    /// Of those, the ones the continued history does not echo ([`crate::rework::ECHOED_SHARE`] of their key
    /// words), each shortened to [`SHOWN_CHARS`]; empty when the summary is not readable.
    pub prompts_not_echoed: Option<Vec<String>>,
    /// The probes whose evidence precedes the compaction, and which strategies kept each.
    pub probes: Vec<ProbeAtCompaction>,
    /// What each strategy held after compressing at the same point.
    pub strategies: Vec<StrategyAtCompaction>,
}

/// A probe asked at a compaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeAtCompaction {
    pub probe: String,
    pub kind: ProbeKind,
    /// `auto` (extracted from the session) or `manual` (hand-written).
    pub origin: crate::data::ProbeOrigin,
    pub question: String,
    pub gold: String,
    /// Strategy label → kept, for the strategies that scored it there.
    pub kept: BTreeMap<String, bool>,
}

/// A strategy at a compaction point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StrategyAtCompaction {
    pub label: String,
    /// The request after it compressed, as the replay counts it.
    pub request_tokens_after: Option<u64>,
    pub probes_asked: usize,
    pub probes_kept: usize,
}

/// A session the agent never compacted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionPeak {
    pub session: String,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The largest request the agent sent, as recorded; else as the replay counts it uncompressed.
    pub peak_tokens: Option<u64>,
    /// Whether `peak_tokens` is the recorded count.
    pub peak_recorded: bool,
    pub window_tokens: Option<u64>,
}

/// A session that failed, with why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedSession {
    pub session: String,
    pub reason: String,
}

/// What the listing calls the agent's own summary (`Role::Recorded`); the JSON's `kept` maps are keyed by
/// these labels.
pub const AGENT_LABEL: &str = "agent";

/// What the listing calls a strategy: by role for the agent's own, the reference and no compression, else
/// its registry name.
fn label_of(strategy: &str, role: Option<Role>) -> String {
    match role {
        Some(Role::Recorded) => AGENT_LABEL.into(),
        Some(Role::Reference) => "reference".into(),
        Some(Role::NoCompression) => "uncompressed".into(),
        _ => strategy.to_string(),
    }
}

/// The listing's column order: the agent's own first, then the reference, then the rest in plan order.
fn column_rank(role: Option<Role>) -> u8 {
    match role {
        Some(Role::Recorded) => 0,
        Some(Role::Reference) => 1,
        _ => 2,
    }
}

/// `text` on one line, at most [`SHOWN_CHARS`] characters (an ellipsis where it was cut).
pub fn shorten(text: &str) -> String {
    let flat: String = datasets::raw::home_as_tilde(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    if flat.chars().count() <= SHOWN_CHARS {
        return flat;
    }
    let mut out: String = flat.chars().take(SHOWN_CHARS - 1).collect();
    out.push('…');
    out
}

/// Reads a finished audit run: every planned session, its compactions and what each strategy kept there.
/// `base_dir` is where the run's relative paths start (the working directory of the run).
pub fn read(dirs: &[AuditedDir], run_dir: &Path, plan: &Plan, cells: &[CellResult], base_dir: &Path) -> Audit {
    let mut points: Vec<_> = plan.points.iter().filter(|p| p.slice.is_none()).collect();
    points.sort_by_key(|p| column_rank(p.strategy.role()));
    let strategies: Vec<AuditedStrategy> = points
        .iter()
        .map(|p| {
            let name = p.axes.get(crate::data::plan::STRATEGY_AXIS).cloned().unwrap_or_else(|| p.short_label());
            AuditedStrategy { point: p.id.clone(), label: label_of(&name, p.strategy.role()), strategy: name }
        })
        .collect();
    let clean = Sanitizer::from_env();
    // Each (point, conversation)'s first repeat, found once.
    let by_cell: std::collections::HashMap<(&str, &str), &CellResult> = cells
        .iter()
        .filter(|c| c.cell.repeat == 0)
        .map(|c| ((c.cell.point.as_str(), c.cell.conversation.as_str()), c))
        .collect();
    let cell_of = |point: &str, conversation: &str| by_cell.get(&(point, conversation)).copied();
    let mut audit = Audit {
        dirs: dirs.to_vec(),
        run_dir: run_dir.to_path_buf(),
        view: None,
        strategies: strategies.clone(),
        sessions: plan.conversations.len(),
        ..Default::default()
    };
    // The main grid's `none`: the columns above are the main grid's.
    let none_point = plan.point_of_role(Role::NoCompression).map(|p| &p.id);
    for planned in &plan.conversations {
        let failed_cell = cells.iter().find(|c| c.cell.conversation == planned.id && c.result.error.is_some());
        let reason =
            planned.error.clone().or_else(|| failed_cell.and_then(|c| c.result.error.as_ref()).map(|e| e.to_string()));
        if let Some(reason) = reason {
            audit.failed.push(FailedSession { session: planned.id.clone(), reason });
            continue;
        }
        let rec = match recording::load(plan, base_dir, planned) {
            Ok(r) => r,
            Err(reason) => {
                audit.failed.push(FailedSession { session: planned.id.clone(), reason });
                continue;
            }
        };
        let conv = &rec.conversation;
        let none_cell = none_point.and_then(|p| cell_of(p, &planned.id));
        let window = none_cell.map(|c| c.result.token_limit);
        if conv.recorded_compactions.is_empty() {
            audit.not_compacted.push(session_peak(planned, conv, none_cell, window));
            continue;
        }
        let session = session_audit(planned, conv, &rec.probes, &strategies, &cell_of, window, &clean);
        audit.compactions += session.compactions.len();
        audit.compacted.push(session);
    }
    audit
}

fn session_peak(
    planned: &PlannedConversation,
    conv: &datasets::Conversation,
    none: Option<&CellResult>,
    window: Option<u64>,
) -> SessionPeak {
    let recorded = conv.recorded_prompt_tokens.iter().flatten().copied().max();
    SessionPeak {
        session: planned.id.clone(),
        source: planned.source.clone(),
        file: conv.meta.path.clone(),
        peak_tokens: recorded.or_else(|| none.map(|c| c.result.peak_request_tokens)),
        peak_recorded: recorded.is_some(),
        window_tokens: window,
    }
}

fn session_audit<'c>(
    planned: &PlannedConversation,
    conv: &datasets::Conversation,
    probes: &[crate::probes::Probe],
    strategies: &[AuditedStrategy],
    cell_of: &dyn Fn(&str, &str) -> Option<&'c CellResult>,
    window: Option<u64>,
    clean: &Sanitizer,
) -> SessionAudit {
    let reading = crate::rework::conversation_rework(conv);
    let agent_point = strategies.iter().find(|s| s.label == AGENT_LABEL).map(|s| s.point.as_str());
    let agent_cell = agent_point.and_then(|p| cell_of(p, &planned.id));
    let compactions = reading
        .compactions
        .iter()
        .map(|row| {
            let extra = conv.recorded_compactions.get(row.ordinal - 1).and_then(|c| c.extra.as_ref());
            let text_of =
                |key: &str| extra.and_then(|e| e.get(key)).and_then(crate::json::Value::as_str).map(str::to_string);
            let files_edited_not_named = row.summary_readable.then(|| {
                reading
                    .files
                    .iter()
                    .filter(|f| f.ordinal == row.ordinal && f.edits_before > 0 && f.named == Some(false))
                    .map(|f| clean.clean(&f.file))
                    .collect()
            });
            let prompts: Vec<_> = reading.prompts.iter().filter(|p| p.ordinal == row.ordinal).collect();
            let prompts_not_echoed = row.summary_readable.then(|| {
                prompts
                    .iter()
                    .filter(|p| p.echoed == Some(false))
                    .filter_map(|p| conv.history.get(p.at))
                    .map(|c| clean.clean(&shorten(&crate::probes::text_match::content_text(c))))
                    .collect()
            });
            // The agent's checkpoint at this compaction gives the point (its turn) every strategy was forced at.
            let agent_checkpoint = agent_cell.and_then(|c| c.probes.as_ref()).and_then(|p| {
                p.checkpoints.iter().find(|k| k.event.is_some() && k.ordinal == Some(row.ordinal as u32))
            });
            let turn = agent_checkpoint.and_then(|k| k.turn).unwrap_or(row.at);
            let mut by_probe: BTreeMap<String, ProbeAtCompaction> = BTreeMap::new();
            let mut at_strategies = Vec::new();
            for s in strategies {
                let Some(cell) = cell_of(&s.point, &planned.id) else { continue };
                let event = cell.result.events.iter().find(|e| e.turn == turn);
                let checkpoint = cell
                    .probes
                    .as_ref()
                    .and_then(|p| p.checkpoints.iter().find(|k| k.event.is_some() && k.turn == Some(turn)));
                let scores = checkpoint.map(|k| k.scores.as_slice()).unwrap_or_default();
                for score in scores {
                    let entry = by_probe.entry(score.probe.clone()).or_insert_with(|| {
                        let probe = probes.iter().find(|p| p.id == score.probe);
                        ProbeAtCompaction {
                            probe: score.probe.clone(),
                            kind: score.kind,
                            origin: score.source,
                            question: probe.map(|p| clean.clean(&shorten(&p.question))).unwrap_or_default(),
                            gold: probe.map(|p| clean.clean(&shorten(&p.gold))).unwrap_or_default(),
                            kept: BTreeMap::new(),
                        }
                    });
                    entry.kept.insert(s.label.clone(), score.retained);
                }
                at_strategies.push(StrategyAtCompaction {
                    label: s.label.clone(),
                    request_tokens_after: event.map(|e| e.request_tokens_after),
                    probes_asked: scores.len(),
                    probes_kept: scores.iter().filter(|x| x.retained).count(),
                });
            }
            CompactionAudit {
                ordinal: row.ordinal,
                time: text_of(crate::datasets::import::COMPACTED_AT_KEY),
                trigger: text_of("trigger"),
                turn: row.first_request,
                tokens_before: row.tokens_before,
                tokens_after: row.tokens_after,
                summary_tokens: row.summary_tokens,
                summary_readable: row.summary_readable,
                files_edited_before: row.files_edited_before,
                files_edited_not_named,
                prompts_before: prompts.len(),
                prompts_not_echoed,
                probes: by_probe.into_values().collect(),
                strategies: at_strategies,
            }
        })
        .collect();
    SessionAudit {
        session: planned.id.clone(),
        source: planned.source.clone(),
        file: conv.meta.path.clone(),
        title: conv.meta.title.clone(),
        window_tokens: window,
        compactions,
    }
}
