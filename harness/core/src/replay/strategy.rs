//! The strategy interface: what a strategy declares (knobs, role) and what its sessions see and answer.
//!
//! A [`Strategy`] is one entry of the registry: it declares its knobs (the sweep axes it reads), expands its
//! part of a sweep grid into points, and turns one point's parameters into a [`Compressor`], which starts a
//! [`CompressorSession`] per conversation. The built-in strategies live in `replay/strategies/`, one file
//! each; the registry of them (`replay/registry.rs`) lists them once and takes more at run time (a test or
//! an embedding program). `harness/ARCHITECTURE.md` walks through adding one.

use crate::compress::{CompressError, CompressTrace, CompressionInfo, CompressionStatus};
use crate::history::Content;
use crate::llm::LanguageModel;
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a strategy sees before a model request.
#[derive(Clone, Debug)]
pub struct TurnInput<'a> {
    /// The stored history (without the pending request).
    pub stored: &'a [Content],
    /// The request's pending user turns as recorded (tool results, or the user's next message): the replay
    /// appends them after the session answers. A strategy modelling an agent that compacts after they are
    /// in its history (Codex, OpenCode: mid-task, once the tool outputs are recorded) summarises them too
    /// and says so with [`TurnOutcome::covers_until`].
    pub pending: &'a [Content],
    /// `getLastPromptTokenCount()`: the size of the last request as the replay measured it.
    pub last_prompt_tokens: u64,
    /// `/compress` at this turn.
    pub force: bool,
    pub prompt_id: String,
    /// Index of the first Content of `stored` that is new or changed since the previous request (0 at the
    /// first request and after the strategy replaced the history): a session that keeps state about the
    /// history only needs to look at `stored[changed_from..]`.
    pub changed_from: usize,
    /// Index in the recorded history of the model turn this request produces: where the replay is in the
    /// recording, for sessions that act on recorded data ([`SessionContext`]).
    pub turn: usize,
}

/// What a strategy did.
#[derive(Clone, Debug)]
pub struct TurnOutcome {
    pub info: CompressionInfo,
    /// The new stored history, when the strategy replaced it.
    pub replaced: Option<Vec<Content>>,
    /// Contents rewritten in place (index into the stored history, new Content), when the strategy changed
    /// a few Contents and kept the rest (masking): the replay re-measures only these.
    pub edits: Vec<(usize, Content)>,
    /// The reference's trace (summaries, LLM calls, split) when there was one.
    pub trace: Option<CompressTrace>,
    /// The stored history after a COMPRESSED result is `[env, ...new]` for the interactive caller; the
    /// candidate history (even when discarded) for "hidden inflation" measurements.
    pub candidate: Option<Vec<Content>>,
    /// The replaced history also stands for the recorded Contents before this index that are still
    /// pending (the agent compacted after they arrived, e.g. a tool result): they are not appended after it.
    /// `None`: the pending turns follow the new history (the reference compresses before the new message).
    pub covers_until: Option<usize>,
}

impl TurnOutcome {
    /// The strategy replaced the stored history without a model call.
    pub fn replaced(orig: u64, new: u64, status: CompressionStatus, history: Vec<Content>) -> Self {
        TurnOutcome {
            info: CompressionInfo { original_token_count: orig, new_token_count: new, compression_status: status },
            candidate: Some(history.clone()),
            replaced: Some(history),
            edits: Vec::new(),
            trace: None,
            covers_until: None,
        }
    }

    /// The strategy replaced the stored history, with the model calls and summaries it made.
    pub fn summarized(orig: u64, new: u64, history: Vec<Content>, trace: CompressTrace) -> Self {
        TurnOutcome { trace: Some(trace), ..Self::replaced(orig, new, CompressionStatus::Compressed, history) }
    }

    /// The strategy rewrote a few Contents in place.
    pub fn edited(orig: u64, new: u64, status: CompressionStatus, edits: Vec<(usize, Content)>) -> Self {
        TurnOutcome {
            info: CompressionInfo { original_token_count: orig, new_token_count: new, compression_status: status },
            replaced: None,
            edits,
            trace: None,
            candidate: None,
            covers_until: None,
        }
    }

    pub fn noop(orig: u64) -> Self {
        TurnOutcome {
            info: CompressionInfo {
                original_token_count: orig,
                new_token_count: orig,
                compression_status: CompressionStatus::Noop,
            },
            replaced: None,
            edits: Vec::new(),
            trace: None,
            candidate: None,
            covers_until: None,
        }
    }
}

/// Why a strategy could not be configured or failed during a replay.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StrategyError {
    #[error(transparent)]
    Compress(#[from] CompressError),
    #[error("summarizer call failed: {0}")]
    Llm(#[from] crate::llm::LlmError),
    #[error("unknown strategy `{name}` (expected one of: {known})")]
    Unknown { name: String, known: String },
    #[error("strategy `{strategy}` is already registered")]
    Duplicate { strategy: String },
    #[error("strategy `{strategy}`, knob `{knob}`: {message}")]
    Knob { strategy: String, knob: String, message: String },
    #[error("strategy `{strategy}`: bad parameters: {message}")]
    Params { strategy: String, message: String },
    #[error("strategy `{strategy}`: {message}")]
    Failed { strategy: String, message: String },
}

/// One conversation's compressor state.
#[async_trait]
pub trait CompressorSession: Send {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError>;
}

/// One compaction the recorded agent made itself (Claude Code's compact summary, a Codex `compacted` item),
/// kept with the conversation as data so a replay can apply it where the agent did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedCompaction {
    /// Index in the recorded history of the first Content the compaction did not cover: the agent replaced
    /// its history (everything before `history[at]`, as compacted so far) before the request that follows.
    pub at: usize,
    /// The summary the agent wrote; it continued from `kept`, this text as a user turn, then `preserved`.
    pub summary: String,
    /// Contents the agent carried over verbatim before the summary (Codex keeps its initial context and
    /// recent user messages).
    pub kept: Vec<Content>,
    /// Contents the agent carried over verbatim after the summary (Claude Code's preserved segment: the
    /// newest messages before the compaction).
    pub preserved: Vec<Content>,
    /// What the recording says about the event (trigger, token counts before and after): a JSON object.
    pub extra: Option<crate::json::Value>,
}

/// The prompt-cache traffic the provider billed for one recorded request (Claude Code's
/// `usage.cache_read_input_tokens` and `cache_creation_input_tokens`): part of the request's prompt tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Prompt tokens served from the cache.
    pub read: u64,
    /// Prompt tokens written to the cache by this request.
    pub written: u64,
}

impl RecordedCompaction {
    /// The history the agent continued from: `kept`, the summary as a user turn, `preserved`.
    pub fn history(&self) -> Vec<Content> {
        let mut out = self.kept.clone();
        out.push(crate::history::user_text(&self.summary));
        out.extend(self.preserved.iter().cloned());
        out
    }
}

/// The window a conversation is replayed in, as its session sees it: never a parameter of a strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The simulated window in tokens, resolved for this conversation (`[replay] token_limit`; a window
    /// relative to each conversation is resolved against its uncompressed replay). Never 0.
    pub token_limit: u64,
    /// `[llm] max_output_tokens`: the limit every summarizer request carries.
    pub max_output_tokens: Option<u32>,
}

/// What a session knows of its conversation besides the turns: its window, and the agent's own recorded
/// compactions (for `recorded`, which replays them instead of compressing). Strategies compress from what
/// they are shown.
#[derive(Clone, Copy, Debug)]
pub struct SessionContext<'a> {
    pub window: Window,
    /// Sorted by `at`; empty for most sources.
    pub recorded_compactions: &'a [RecordedCompaction],
}

impl From<Window> for SessionContext<'static> {
    /// A conversation with nothing recorded (tests, benches).
    fn from(window: Window) -> Self {
        SessionContext { window, recorded_compactions: &[] }
    }
}

/// A strategy with its knob values parsed (once, when its point is made or read): starts a session per
/// conversation.
pub trait Compressor: Send + Sync {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession>;

    /// The smallest last prompt count at which a session in a window of `token_limit` tokens compresses, when
    /// its trigger is a token count; `None` when it is not (event counts, done-message budgets). Storms and
    /// actionability are measured against it.
    fn trigger_tokens(&self, _token_limit: u64) -> Option<u64> {
        None
    }
}

/// A strategy's parameters at one grid point (knob values and whatever else it needs), as stored in the plan.
pub type Params = Map<String, Json>;

/// What a strategy is to a comparison. Reports find the reference, the `none` baseline and the pairs they
/// compare by role, so a strategy's name appears only in its own file and the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The faithful port the others are measured against (one in the registry).
    Reference,
    /// Never compresses: the denominator of every "vs none" figure.
    NoCompression,
    /// Replays the agent's own compactions recorded with the conversation.
    Recorded,
    /// A control without a summary (dropping, masking), compared with the reference at the same trigger.
    Baseline,
    /// One part of the reference alone (its tool-output truncation without a summary).
    Ablation,
    /// Models another agent's policy ([`Strategy::system`]).
    OtherSystem,
}

/// One registry entry.
pub trait Strategy: Send + Sync {
    /// The name used in `[grid] strategy = [...]` (for strategies that take an argument, the part before `:`).
    fn name(&self) -> &'static str;
    /// One line for `compactbench strategies`.
    fn about(&self) -> &'static str;
    /// The knobs it reads: its sweep axes.
    fn knobs(&self) -> Vec<Knob>;
    /// Whether it calls the summarizer model (then it is swept over the grid's `summarizer` values).
    fn uses_llm(&self) -> bool;
    /// Whether it writes a summary of what it removes (then a fact whose evidence it dropped can still
    /// survive, and at-risk retention applies). Strategies that only drop, mask or truncate keep nothing at
    /// risk. By default: whatever calls the summarizer.
    fn summarizes(&self) -> bool {
        self.uses_llm()
    }
    /// The agent whose policy it models (`Codex CLI`), for the per-system report; `None` for baselines.
    fn system(&self) -> Option<&'static str> {
        None
    }
    /// Its part in comparisons; by default a strategy that models a system is one, any other a baseline.
    fn role(&self) -> Role {
        if self.system().is_some() {
            Role::OtherSystem
        } else {
            Role::Baseline
        }
    }
    /// Whether it rewrites a few Contents in place at most requests (masking): its `CONTENT_TRUNCATED`
    /// events are too many to mark one by one on a timeline.
    fn edits_in_place(&self) -> bool {
        false
    }
    /// Whether it is written `NAME:ARGUMENT` (`exec:COMMAND`).
    fn takes_argument(&self) -> bool {
        false
    }
    /// Its part of the grid: one [`Variant`] per point. The default is the product of its knobs' values
    /// (and of the summarizers when it uses a model), with parameters `{knob: value, …}`.
    fn expand(&self, grid: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        grid.knob_product()
    }
    /// Parameters of one point → the compressor: the one place they are parsed (into the strategy's typed
    /// parameters), when the point is made or read. The window is not among them: sessions get it from their
    /// [`SessionContext`].
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError>;
    /// Where its stored parameters held the window before it left them; [`WindowInIds::Absent`] for a new
    /// strategy.
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::Absent
    }
}

/// Where a strategy's stored parameters held the window (`token_limit`, the tokens of an absolute window and
/// 0 for one relative to each conversation) and `max_output_tokens` until issue #35 moved them to the replay
/// settings. Point ids hash the parameters as stored then, so that the ids of stored runs (cell directories,
/// results rows, gate baselines) keep naming the same points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowInIds {
    /// Nowhere: ids hash the parameters as they are (strategies without a window then, and every new one).
    Absent,
    /// `token_limit` at this position of the parameters, followed by `max_output_tokens` for a strategy that
    /// calls the summarizer.
    At(usize),
    /// In the reference's `settings`: `token_limit` before `tool_output_chars_limit`, `max_output_tokens` last.
    InSettings,
}

/// `⌈threshold × token_limit⌉`: the trigger of a strategy that compresses when the count is not below the
/// product.
pub fn threshold_trigger(threshold: f64, token_limit: u64) -> u64 {
    (threshold * token_limit as f64).ceil() as u64
}

/// Parses a point's parameters into a strategy's typed parameter struct; an error names the parameter.
pub fn parse_params<P: DeserializeOwned>(strategy: &str, params: &Params) -> Result<P, StrategyError> {
    serde_path_to_error::deserialize(Json::Object(params.clone()))
        .map_err(|e| StrategyError::Params { strategy: strategy.into(), message: e.to_string() })
}

/// A strategy's typed parameters → the stored map.
pub fn to_params<P: Serialize>(strategy: &str, p: &P) -> Result<Params, StrategyError> {
    match serde_json::to_value(p) {
        Ok(Json::Object(m)) => Ok(m),
        Ok(Json::Null) => Ok(Map::new()),
        Ok(other) => {
            Err(StrategyError::Params { strategy: strategy.into(), message: format!("not an object: {other}") })
        }
        Err(e) => Err(StrategyError::Params { strategy: strategy.into(), message: e.to_string() }),
    }
}

/// The type of a knob's values: how reports type its column and how `compactbench strategies` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobKind {
    Number,
    Integer,
    Bool,
    Text,
    Choice,
}

impl KnobKind {
    /// The name shown by `compactbench strategies`.
    pub fn name(self) -> &'static str {
        match self {
            KnobKind::Number => "number",
            KnobKind::Integer => "integer",
            KnobKind::Bool => "bool",
            KnobKind::Text => "string",
            KnobKind::Choice => "enum",
        }
    }
}

/// A knob: one sweep axis a strategy reads. What reports show of it comes from here too: its column
/// type ([`KnobKind`]), its table header and whether (and how) it is part of a point's label.
#[derive(Clone)]
pub struct Knob {
    pub name: &'static str,
    pub kind: KnobKind,
    pub default: Json,
    /// The valid values, for help and errors (`(0, 1]`, `≥ 1`, `current | none`).
    pub range: String,
    pub help: &'static str,
    /// Shown in point labels as `SHORT=value` (`gemini t=0.5 keep=0.3`); `None`: left out of labels.
    pub short: Option<&'static str>,
    /// The column header in summary tables (default: the name).
    pub header: &'static str,
    /// The name it had before a rename: a config that still uses it is refused with the new name.
    pub former_name: Option<&'static str>,
    check: KnobCheck,
}

/// Checks one knob value, with an error saying what is wrong.
type KnobCheck = Arc<dyn Fn(&Json) -> Result<(), BadValue> + Send + Sync>;

/// Why a value does not fit a knob.
#[derive(Debug, thiserror::Error)]
pub enum BadValue {
    /// Of the wrong type or outside the knob's range (`1.5 is not in (0, 1]`).
    #[error("{value} {problem}")]
    Out { value: String, problem: String },
    /// Refused by the knob's own check (an unknown prompt, a path).
    #[error(transparent)]
    Refused(Box<dyn std::error::Error + Send + Sync>),
}

impl BadValue {
    fn out(v: &Json, problem: impl Into<String>) -> BadValue {
        BadValue::Out { value: label(v), problem: problem.into() }
    }
}

impl std::fmt::Debug for Knob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Knob").field("name", &self.name).field("default", &self.default).finish()
    }
}

/// Bounds of a number knob.
#[derive(Clone, Copy, Debug)]
pub enum Bound {
    Open(f64),
    Closed(f64),
    None,
}

impl Knob {
    fn new(
        name: &'static str,
        kind: KnobKind,
        default: Json,
        range: String,
        help: &'static str,
        check: KnobCheck,
    ) -> Knob {
        Knob { name, kind, default, range, help, short: None, header: name, former_name: None, check }
    }

    /// Shows the knob in point labels as `short=value`.
    pub fn labelled(mut self, short: &'static str) -> Knob {
        self.short = Some(short);
        self
    }

    /// Heads its column in summary tables with `header` instead of its name.
    pub fn headed(mut self, header: &'static str) -> Knob {
        self.header = header;
        self
    }

    /// Was called `former` in configs before.
    pub fn renamed_from(mut self, former: &'static str) -> Knob {
        self.former_name = Some(former);
        self
    }

    /// A number within `lo`..`hi`.
    pub fn number(name: &'static str, default: f64, lo: Bound, hi: Bound, help: &'static str) -> Knob {
        let range = format!(
            "{}{}, {}{}",
            match lo {
                Bound::Open(_) | Bound::None => "(",
                Bound::Closed(_) => "[",
            },
            match lo {
                Bound::Open(x) | Bound::Closed(x) => crate::json::js_format(x),
                Bound::None => "-∞".into(),
            },
            match hi {
                Bound::Open(x) | Bound::Closed(x) => crate::json::js_format(x),
                Bound::None => "∞".into(),
            },
            match hi {
                Bound::Closed(_) => "]",
                _ => ")",
            }
        );
        let shown = range.clone();
        let check = move |v: &Json| {
            let x = v.as_f64().ok_or_else(|| BadValue::out(v, "is not a number"))?;
            let ok_lo = match lo {
                Bound::Open(l) => x > l,
                Bound::Closed(l) => x >= l,
                Bound::None => true,
            };
            let ok_hi = match hi {
                Bound::Open(h) => x < h,
                Bound::Closed(h) => x <= h,
                Bound::None => true,
            };
            if ok_lo && ok_hi {
                Ok(())
            } else {
                Err(BadValue::out(v, format!("is not in {shown}")))
            }
        };
        Knob::new(name, KnobKind::Number, Json::from(default), range, help, Arc::new(check))
    }

    /// A whole number ≥ `min`.
    pub fn integer(name: &'static str, default: i64, min: i64, help: &'static str) -> Knob {
        let check = move |v: &Json| match v.as_i64() {
            Some(x) if x >= min => Ok(()),
            Some(_) => Err(BadValue::out(v, format!("is less than {min}"))),
            None => Err(BadValue::out(v, "is not a whole number")),
        };
        Knob::new(name, KnobKind::Integer, Json::from(default), format!("≥ {min}"), help, Arc::new(check))
    }

    pub fn boolean(name: &'static str, default: bool, help: &'static str) -> Knob {
        let check = |v: &Json| if v.is_boolean() { Ok(()) } else { Err(BadValue::out(v, "is not true or false")) };
        Knob::new(name, KnobKind::Bool, Json::from(default), "true | false".into(), help, Arc::new(check))
    }

    /// One of a named enum's values (checked by deserializing into `T`).
    pub fn choice<T: DeserializeOwned + Serialize + 'static>(
        name: &'static str,
        default: T,
        values: &[&str],
        help: &'static str,
    ) -> Knob {
        let check =
            |v: &Json| serde_json::from_value::<T>(v.clone()).map(|_| ()).map_err(|e| BadValue::Refused(Box::new(e)));
        let default = serde_json::to_value(default).unwrap_or(Json::Null);
        Knob::new(name, KnobKind::Choice, default, values.join(" | "), help, Arc::new(check))
    }

    /// A string, checked by `check`.
    pub fn text<E: std::error::Error + Send + Sync + 'static>(
        name: &'static str,
        default: &str,
        range: &str,
        help: &'static str,
        check: impl Fn(&str) -> Result<(), E> + Send + Sync + 'static,
    ) -> Knob {
        let check = move |v: &Json| match v.as_str() {
            Some(s) => check(s).map_err(|e| BadValue::Refused(Box::new(e))),
            None => Err(BadValue::out(v, "is not a string")),
        };
        Knob::new(name, KnobKind::Text, Json::from(default), range.into(), help, Arc::new(check))
    }

    /// Checks one value of this knob.
    pub fn check(&self, v: &Json) -> Result<(), BadValue> {
        (self.check)(v)
    }
}

/// A knob that names a prompt section, `FILE:SECTION` (a built-in file stem of `configs/prompts/`).
pub fn prompt_knob(name: &'static str, default: &str, help: &'static str) -> Knob {
    Knob::text(name, default, "FILE:SECTION", help, |s| {
        refuse_prompt_path(s)?;
        prompt_section(s).map(|_| ())
    })
}

/// Sweep configs name prompts of `configs/prompts/` by version or `FILE:SECTION`, never by a path: a path
/// (`../../x:y`) would read files outside the prompt directory into requests and recordings.
pub fn refuse_prompt_path(spec: &str) -> Result<(), crate::compress::prompts::PromptError> {
    if spec.contains(['/', '\\']) || spec.contains("..") || spec.starts_with('~') {
        return Err(crate::compress::prompts::PromptError::IsAPath(spec.into()));
    }
    Ok(())
}

/// The text of a prompt section named `FILE:SECTION`.
pub fn prompt_section(spec: &str) -> Result<String, crate::compress::prompts::PromptError> {
    use crate::compress::prompts::{builtin_prompt, PromptError, PromptFile};
    let Some((file, section)) = spec.rsplit_once(':') else {
        return Err(PromptError::Unknown(spec.into(), "a FILE:SECTION spec".into()));
    };
    let path = std::path::Path::new(file);
    let f = if path.exists() { PromptFile::load(path)? } else { builtin_prompt(file)? };
    Ok(f.section(section)?.to_string())
}

/// How a grid value is shown in axes and reports: strings verbatim, numbers as JavaScript prints them.
pub fn label(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Number(n) if n.is_f64() => crate::json::js_format(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

/// Base values of settings the grid does not vary (the config's `[base]` table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BaseSettings {
    pub model: String,
    pub active_model: Option<String>,
    pub approved_plan_path: Option<String>,
    pub model_table: crate::model_tables::ModelTable,
    pub high_fidelity: bool,
    pub inflation_guard: bool,
    pub env_text: Option<String>,
    pub mask_placeholder: String,
}

impl Default for BaseSettings {
    fn default() -> Self {
        let d = crate::compress::CompressSettings::default();
        BaseSettings {
            model: d.model,
            active_model: None,
            approved_plan_path: None,
            model_table: d.model_table,
            high_fidelity: true,
            inflation_guard: true,
            env_text: None,
            mask_placeholder: "Old environment output: ({num_text_lines} lines omitted)".into(),
        }
    }
}

/// One point of a strategy's part of the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub params: Params,
    /// Axis values for reports (the knobs this strategy reads).
    pub axes: BTreeMap<String, String>,
    /// The summarizer's model spec, for strategies that call one.
    pub summarizer: Option<String>,
}

/// What a strategy's `expand` reads: the grid's values for its knobs and the settings around them.
pub struct GridContext<'a> {
    /// The strategy as written in the grid (`exec:python3 x.py`).
    pub strategy: &'a str,
    /// The part after `NAME:` for strategies that take an argument.
    pub argument: Option<&'a str>,
    pub summarizers: &'a [String],
    pub base: &'a BaseSettings,
    /// The grid's knob values (`[grid]` keys), and this strategy's own table (`[grid.NAME]`), which wins.
    pub shared: &'a BTreeMap<String, Json>,
    pub own: Option<&'a Map<String, Json>>,
    pub knobs: Vec<Knob>,
    pub uses_llm: bool,
}

impl GridContext<'_> {
    fn knob(&self, name: &str) -> Result<&Knob, StrategyError> {
        self.knobs.iter().find(|k| k.name == name).ok_or_else(|| StrategyError::Knob {
            strategy: self.strategy.into(),
            knob: name.into(),
            message: "read but not declared by the strategy".into(),
        })
    }

    /// The raw values of a knob: the grid's list (a single value counts as a list of one), else its default.
    pub fn raw_values(&self, name: &str) -> Result<Vec<Json>, StrategyError> {
        let knob = self.knob(name)?;
        let v = self.own.and_then(|m| m.get(name)).or_else(|| self.shared.get(name));
        let values = match v {
            None => vec![knob.default.clone()],
            Some(Json::Array(a)) => a.clone(),
            Some(other) => vec![other.clone()],
        };
        if values.is_empty() {
            return Err(StrategyError::Knob {
                strategy: self.strategy.into(),
                knob: name.into(),
                message: "needs at least one value".into(),
            });
        }
        for v in &values {
            knob.check(v).map_err(|message| StrategyError::Knob {
                strategy: self.strategy.into(),
                knob: name.into(),
                message: message.to_string(),
            })?;
        }
        Ok(values)
    }

    /// A knob's values, typed, with their labels.
    pub fn values<T: DeserializeOwned>(&self, name: &str) -> Result<Vec<(T, String)>, StrategyError> {
        self.raw_values(name)?
            .into_iter()
            .map(|v| {
                let shown = label(&v);
                serde_json::from_value(v).map(|t| (t, shown)).map_err(|e| StrategyError::Knob {
                    strategy: self.strategy.into(),
                    knob: name.into(),
                    message: e.to_string(),
                })
            })
            .collect()
    }

    /// The default expansion: summarizers (when the strategy uses a model) × the product of all knobs.
    pub fn knob_product(&self) -> Result<Vec<Variant>, StrategyError> {
        let mut combos: Vec<(Params, BTreeMap<String, String>)> = vec![(Params::new(), BTreeMap::new())];
        for knob in &self.knobs {
            let values = self.raw_values(knob.name)?;
            combos = combos
                .into_iter()
                .flat_map(|(p, a)| {
                    values.iter().map(move |v| {
                        let (mut p, mut a) = (p.clone(), a.clone());
                        p.insert(knob.name.into(), v.clone());
                        a.insert(knob.name.into(), label(v));
                        (p, a)
                    })
                })
                .collect();
        }
        let summarizers: Vec<Option<String>> =
            if self.uses_llm { self.summarizers.iter().cloned().map(Some).collect() } else { vec![None] };
        let mut out = Vec::new();
        for s in &summarizers {
            for (params, axes) in &combos {
                out.push(Variant { params: params.clone(), axes: axes.clone(), summarizer: s.clone() });
            }
        }
        Ok(out)
    }
}

/// Which strategy, with its parameters and the compressor they configure. The sweep grid makes these and the
/// plan stores them, as `{"strategy": NAME, …parameters}`; the parameters are parsed once, when a spec is made
/// or read (`StrategySpec::configure` in `registry.rs`).
#[derive(Clone)]
pub struct StrategySpec {
    name: String,
    params: Params,
    compressor: Arc<dyn Compressor>,
}

impl StrategySpec {
    /// A spec from its parts; `compressor` is what the registry entry `name` configured from `params`.
    pub(crate) fn from_parts(name: String, params: Params, compressor: Arc<dyn Compressor>) -> StrategySpec {
        StrategySpec { name, params, compressor }
    }

    /// The registry name (`gemini`, `exec`, …).
    pub fn kind(&self) -> &str {
        &self.name
    }

    /// The parameters as the plan stores them.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The compressor its parameters configure.
    pub fn compressor(&self) -> &dyn Compressor {
        self.compressor.as_ref()
    }
}

/// The keys a plan written before issue #35 holds the window under: its tokens, the summarizer's output limit.
pub(crate) const WINDOW_KEYS: [&str; 2] = ["token_limit", "max_output_tokens"];

impl std::fmt::Debug for StrategySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategySpec").field("name", &self.name).field("params", &self.params).finish()
    }
}

impl Serialize for StrategySpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.params.len() + 1))?;
        m.serialize_entry("strategy", &self.name)?;
        for (k, v) in &self.params {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_serializes_as_a_tagged_object_and_round_trips() {
        let spec =
            StrategySpec::new("drop-oldest", &serde_json::json!({"threshold": 0.5, "keep_fraction": 0.3})).unwrap();
        let text = serde_json::to_string(&spec).unwrap();
        assert_eq!(text, r#"{"strategy":"drop-oldest","threshold":0.5,"keep_fraction":0.3}"#);
        assert_eq!(serde_json::from_str::<StrategySpec>(&text).unwrap(), spec);
    }

    #[test]
    fn number_knobs_check_their_range() {
        let k = Knob::number("threshold", 0.5, Bound::Open(0.0), Bound::Closed(1.0), "");
        assert_eq!(k.range, "(0, 1]");
        assert!(k.check(&Json::from(1.0)).is_ok());
        assert_eq!(k.check(&Json::from(1.5)).unwrap_err().to_string(), "1.5 is not in (0, 1]");
        assert!(k.check(&Json::from("x")).is_err());
    }
}
