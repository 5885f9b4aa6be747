//! Sweep configs (TOML): which conversations, which replay settings, and a grid of compressor settings.
//! Unknown keys and bad values are errors that name the key and the file.

use crate::data::plan::{STRATEGY_AXIS, SUMMARIZER_AXIS, WINDOW_AXIS};
pub use crate::data::{ConfigPoint, ProbesConfig};
use crate::replay::registry;
use crate::replay::strategy::{GridContext, Knob, StrategyError, Variant};
use crate::replay::{ReplaySettings, StrategySpec, TokenLimit};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A key of a sweep config whose value is wrong (the file is added by [`ConfigError`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key `{key}`: {problem}")]
pub struct InvalidKey {
    /// The key's dotted path (`grid.threshold`, `slice.small.conversations`).
    pub key: String,
    pub problem: String,
}

fn invalid(key: impl Into<String>, problem: impl Into<String>) -> InvalidKey {
    InvalidKey { key: key.into(), problem: problem.into() }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Dataset directories or conversation files, or raw agent logs read in place (`{ raw = DIR, … }`).
    pub datasets: Vec<DatasetEntry>,
    /// Where raw agent logs are converted, keyed by content hash (relative to the working directory).
    #[serde(default = "default_import_cache")]
    pub import_cache: PathBuf,
    /// At most this many conversations (in sorted path order) from all datasets; 0 = all.
    #[serde(default)]
    pub max_conversations: usize,
    #[serde(default = "one")]
    pub repeats: u32,
    /// Cells replayed at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    #[serde(default)]
    pub replay: ReplaySettings,
    #[serde(default)]
    pub llm: LlmConfig,
    /// Base values of the reference's knobs; grid axes override them.
    #[serde(default)]
    pub base: BaseSettings,
    pub grid: Grid,
    /// Extra grids over the first conversations only (e.g. a slow model on a small slice).
    #[serde(default)]
    pub slice: Vec<Slice>,
    /// Downstream probes scored during every cell's replay (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbesConfig>,
    /// Prices for the USD cost figures.
    #[serde(default)]
    pub cost: crate::pricing::CostConfig,
}

fn one() -> u32 {
    1
}

fn default_import_cache() -> PathBuf {
    PathBuf::from(".compactbench/imports")
}

/// One entry of `datasets`: converted conversations (a directory, searched recursively, or a file), or a
/// directory, glob or file of raw agent logs imported on the fly (`.gz` read as is) and never copied into
/// the repository: `{ raw = "../shared/datasets-raw/claude-code-long", format = "claude-code" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DatasetEntry {
    Converted(PathBuf),
    Raw(RawDataset),
}

/// Raw agent logs read in place.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDataset {
    /// A directory (searched recursively for `*.jsonl`, `*.json`, `*.traj`, `*.md`, each also `.gz`), a glob
    /// or a file; relative to the working directory.
    pub raw: PathBuf,
    /// The importer (`claude-code`, `codex`, …); detected per file when absent.
    #[serde(default)]
    pub format: Option<String>,
    /// Source name of its conversations (probe directory, report rows); default: the directory's name.
    #[serde(default)]
    pub source: Option<String>,
    /// `project`: each conversation's source is its project instead (the repository's name from the
    /// `SOURCE.md` table, else the file name's part before `--`), so every per-source table and the
    /// leave-one-source-out checks of the report are per project.
    #[serde(default, skip_serializing_if = "SourceBy::is_entry")]
    pub source_by: SourceBy,
    /// Provenance recorded in each conversation; a `SOURCE.md` table beside the logs fills what is absent.
    #[serde(default)]
    pub license: Option<String>,
    #[serde(default)]
    pub repository: Option<String>,
    #[serde(default)]
    pub commit: Option<String>,
    /// Each session's history appended to itself this many times (0 and 1: as recorded): a session of
    /// twice the length whose every part is real, for measuring how a run's cost grows with length.
    #[serde(default, skip_serializing_if = "is_one_copy")]
    pub copies: usize,
}

fn is_one_copy(copies: &usize) -> bool {
    *copies <= 1
}

/// What names the source of a raw dataset's conversations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceBy {
    /// The entry's `source` (or its directory's name).
    #[default]
    Entry,
    /// Each file's project.
    Project,
}

impl SourceBy {
    fn is_entry(&self) -> bool {
        *self == SourceBy::Entry
    }
}

impl RawDataset {
    /// The importer named by `format`, if any.
    pub fn import_format(&self) -> Result<Option<crate::datasets::import::Format>, InvalidKey> {
        use crate::datasets::import::Format;
        match &self.format {
            None => Ok(None),
            Some(name) => Format::from_name(name).map(Some).ok_or_else(|| {
                let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                invalid("datasets.format", format!("unknown format `{name}` (known: {})", known.join(", ")))
            }),
        }
    }

    /// The source name: `source`, or the last component of `raw` before any glob.
    pub fn source_name(&self) -> String {
        if let Some(s) = &self.source {
            return s.clone();
        }
        let plain: PathBuf =
            self.raw.components().take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '['])).collect();
        let plain =
            if plain.extension().is_some() { plain.parent().map(Path::to_path_buf).unwrap_or(plain) } else { plain };
        plain.file_name().map_or_else(|| "raw".to_string(), |n| n.to_string_lossy().into_owned())
    }
}

fn default_concurrency() -> usize {
    4
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// Record/replay cache directory (relative to the working directory).
    pub cache_dir: Option<PathBuf>,
    /// `read-write`, `replay` or `off`.
    pub cache_mode: crate::llm::CacheMode,
    pub timeout_secs: u64,
    pub max_attempts: u32,
    pub concurrency: usize,
    pub max_output_tokens: Option<u32>,
    pub threads: Option<usize>,
    /// Largest answer body accepted from a model server, in bytes.
    pub max_response_bytes: u64,
    /// Limit on one model call, retries and waits included, in seconds.
    pub deadline_secs: u64,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            cache_dir: Some(PathBuf::from(crate::llm::DEFAULT_RECORDINGS_DIR)),
            cache_mode: crate::llm::CacheMode::ReadWrite,
            timeout_secs: 300,
            max_attempts: 5,
            concurrency: 4,
            max_output_tokens: Some(1024),
            threads: None,
            max_response_bytes: 4 * 1024 * 1024,
            deadline_secs: 900,
        }
    }
}

pub use crate::replay::strategy::BaseSettings;

/// Every axis is a list and the grid their product, so an axis written as `[]` would silently make a grid of
/// no cells. (An absent axis takes its default; only lists written empty are refused.)
fn explicit_empty_axis(text: &str) -> Option<String> {
    let doc = text.parse::<toml::Table>().ok()?;
    let mut grids: Vec<(String, &toml::Table)> = Vec::new();
    if let Some(g) = doc.get("grid").and_then(toml::Value::as_table) {
        grids.push(("grid".into(), g));
    }
    for s in doc.get("slice").and_then(toml::Value::as_array).into_iter().flatten() {
        let name = s.get("name").and_then(toml::Value::as_str).unwrap_or("?");
        if let Some(g) = s.get("grid").and_then(toml::Value::as_table) {
            grids.push((format!("slice.{name}.grid"), g));
        }
    }
    for (at, g) in grids {
        for (axis, values) in g {
            if values.as_array().is_some_and(Vec::is_empty) {
                return Some(format!("key `{at}.{axis}`: needs at least one value"));
            }
        }
    }
    None
}

/// The axes. Every axis is a list; the grid is their product, restricted to the knobs each strategy
/// declares. `strategy`, `summarizer` and `token_limit` are shared; every other key is a strategy knob
/// (`compactbench strategies` lists them), checked against the registry. A table named after a strategy
/// (`[grid.codex]`) sets that strategy's knobs only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Grid {
    pub strategy: Vec<String>,
    pub summarizer: Vec<String>,
    pub token_limit: Vec<TokenLimit>,
    /// Knob values by name (a list, or one value), or a strategy's own table.
    #[serde(flatten)]
    pub knobs: BTreeMap<String, toml::Value>,
}

impl Default for Grid {
    fn default() -> Self {
        Grid {
            strategy: crate::replay::registry::role_name(crate::replay::strategy::Role::Reference)
                .into_iter()
                .map(String::from)
                .collect(),
            summarizer: vec!["extractive".into()],
            token_limit: Vec::new(),
            knobs: BTreeMap::new(),
        }
    }
}

impl Grid {
    /// The knob values as JSON (what strategies read).
    fn knob_values(&self) -> BTreeMap<String, serde_json::Value> {
        self.knobs
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null)))
            .collect()
    }

    /// Every strategy exists and every knob key is declared by a registered strategy, with valid values.
    fn check(&self, at: &str) -> Result<(), InvalidKey> {
        for (name, len) in [("strategy", self.strategy.len()), ("summarizer", self.summarizer.len())] {
            if len == 0 {
                return Err(invalid(format!("{at}.{name}"), "needs at least one value"));
            }
        }
        let mut listed = Vec::new();
        for s in &self.strategy {
            listed.push(registry::find(s).map_err(|e| invalid(format!("{at}.strategy"), e.to_string()))?);
        }
        let all = registry::registry();
        for (key, value) in self.knob_values() {
            // `[grid.NAME]`: one strategy's own knobs.
            if let (Some(def), serde_json::Value::Object(table)) = (all.iter().find(|s| s.name() == key), &value) {
                for (k, v) in table {
                    if let Some(renamed) = def.knobs().into_iter().find(|kn| kn.former_name == Some(k.as_str())) {
                        return Err(renamed_knob(&format!("{at}.{key}.{k}"), &renamed));
                    }
                    let knob = def.knobs().into_iter().find(|kn| kn.name == k).ok_or_else(|| {
                        let names: Vec<_> = def.knobs().iter().map(|kn| kn.name).collect();
                        invalid(
                            format!("{at}.{key}.{k}"),
                            format!("`{key}` has no knob `{k}` (its knobs: {})", names.join(", ")),
                        )
                    })?;
                    check_values(&format!("{at}.{key}.{k}"), &knob, v)?;
                }
                continue;
            }
            let declaring: Vec<_> =
                all.iter().filter_map(|s| s.knobs().into_iter().find(|k| k.name == key).map(|k| (s, k))).collect();
            if declaring.is_empty() {
                if let Some(renamed) = all.iter().flat_map(|s| s.knobs()).find(|k| k.former_name == Some(key.as_str()))
                {
                    return Err(renamed_knob(&format!("{at}.{key}"), &renamed));
                }
                let mut names: Vec<&str> = all.iter().flat_map(|s| s.knobs()).map(|k| k.name).collect();
                names.sort_unstable();
                names.dedup();
                return Err(invalid(
                    format!("{at}.{key}"),
                    format!(
                        "no strategy has a knob `{key}` (knobs: {}; `compactbench strategies` lists them)",
                        names.join(", ")
                    ),
                ));
            }
            // Checked against the strategies of this grid that read it (another strategy's knob is moot here).
            for (def, knob) in &declaring {
                if listed.iter().any(|l| l.name() == def.name()) {
                    check_values(&format!("{at}.{key}"), knob, &value)?;
                }
            }
        }
        Ok(())
    }
}

/// A knob written under the name it had before a rename.
fn renamed_knob(at: &str, knob: &Knob) -> InvalidKey {
    invalid(at, format!("renamed `{}`", knob.name))
}

fn check_values(at: &str, knob: &Knob, value: &serde_json::Value) -> Result<(), InvalidKey> {
    let values = match value {
        serde_json::Value::Array(a) if a.is_empty() => return Err(invalid(at, "needs at least one value")),
        serde_json::Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    values.iter().try_for_each(|v| knob.check(v).map_err(|e| invalid(at, e.to_string())))
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slice {
    pub name: String,
    /// The first N conversations of the selection (after the `source` filter).
    pub conversations: usize,
    /// Only conversations of this source (dataset name).
    #[serde(default)]
    pub source: Option<String>,
    /// The probe answerer on this slice (default: `[probes].answerer`).
    #[serde(default)]
    pub probe_answerer: Option<String>,
    /// Ask the answerer at the end of the replay only (a slow model).
    #[serde(default)]
    pub probe_answers_at_end_only: bool,
    /// Run `[probes].injection` replays on this slice too (off by default: the injected conversations'
    /// summarizer requests are not recorded, so a slow model would have to generate them live).
    #[serde(default)]
    pub probe_injection: bool,
    pub grid: Grid,
}

impl SweepConfig {
    pub fn load(path: &Path) -> Result<SweepConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Io { file: path.display().to_string(), source })?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, file: &str) -> Result<SweepConfig, ConfigError> {
        let mut cfg: SweepConfig = toml::from_str(text)
            .map_err(|e| ConfigError::Invalid { file: file.into(), message: e.to_string().trim().to_string() })?;
        // `[llm] max_output_tokens` is the summarizer's: the replay settings carry it to the strategies.
        cfg.replay.max_output_tokens = cfg.llm.max_output_tokens;
        cfg.validate().map_err(|e| ConfigError::Invalid { file: file.into(), message: e.to_string() })?;
        if let Some(message) = explicit_empty_axis(text) {
            return Err(ConfigError::Invalid { file: file.into(), message });
        }
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), InvalidKey> {
        if self.name.is_empty() || !self.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(invalid("name", format!("`{}` must be non-empty letters, digits, `-` or `_`", self.name)));
        }
        if self.concurrency == 0 {
            return Err(invalid("concurrency", "must be at least 1"));
        }
        if self.repeats == 0 {
            return Err(invalid("repeats", "must be at least 1"));
        }
        self.cost.validate().map_err(|e| invalid("cost", e.to_string()))?;
        for entry in &self.datasets {
            if let DatasetEntry::Raw(raw) = entry {
                raw.import_format()?;
            }
        }
        if let Some(spec) = self.replay.tokenizer.model_spec() {
            let counter = "a model spec whose backend counts tokens (gemini:<model>, local:<name>)";
            match crate::llm::counts_tokens(spec) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(invalid(
                        "replay.tokenizer",
                        format!("`{spec}` has no token counter; use o200k, heuristic or {counter}"),
                    ))
                }
                Err(e) => {
                    return Err(invalid(
                        "replay.tokenizer",
                        format!("`{spec}` is not o200k, heuristic or {counter}: {e}"),
                    ))
                }
            }
        }
        for (key, value) in [
            ("llm.timeout_secs", self.llm.timeout_secs),
            ("llm.deadline_secs", self.llm.deadline_secs),
            ("llm.max_response_bytes", self.llm.max_response_bytes),
            ("llm.max_attempts", u64::from(self.llm.max_attempts)),
            ("llm.concurrency", self.llm.concurrency as u64),
        ] {
            if value == 0 {
                return Err(invalid(key, "must be at least 1"));
            }
        }
        for s in &self.slice {
            if s.conversations == 0 {
                return Err(invalid(format!("slice.{}.conversations", s.name), "must be at least 1"));
            }
        }
        let grids = std::iter::once(("grid".to_string(), &self.grid))
            .chain(self.slice.iter().map(|s| (format!("slice.{}.grid", s.name), &s.grid)));
        for (at, g) in grids {
            g.check(&at)?;
        }
        Ok(())
    }

    /// Every config point, main grid first, then each slice; deduplicated, in a stable order.
    /// The plan of this config's grid with no conversation listed: what reports lay out before any cell
    /// exists (tests of tables and pages).
    pub fn plan_without_conversations(&self) -> Result<crate::data::Plan, StrategyError> {
        Ok(crate::data::Plan {
            name: self.name.clone(),
            points: self.points()?,
            conversations: Vec::new(),
            repeats: 1,
            replay: self.replay.clone(),
            probes: None,
            cost: self.cost.clone(),
        })
    }

    pub fn points(&self) -> Result<Vec<ConfigPoint>, StrategyError> {
        let mut out: Vec<ConfigPoint> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let grids =
            std::iter::once((None, None, None, None, false, false, &self.grid)).chain(self.slice.iter().map(|s| {
                let answers_at_end = s.probe_answers_at_end_only;
                (
                    Some(s.name.clone()),
                    Some(s.conversations),
                    s.source.clone(),
                    s.probe_answerer.clone(),
                    answers_at_end,
                    s.probe_injection,
                    &s.grid,
                )
            }));
        for (slice, max, source, probe_answerer, probe_answers_at_end_only, slice_injection, g) in grids {
            for p in expand(g, &self.base, &self.replay)? {
                let p = ConfigPoint {
                    slice: slice.clone(),
                    max_conversations: max,
                    source: source.clone(),
                    probe_answerer: probe_answerer.clone(),
                    probe_answers_at_end_only,
                    probe_no_injection: slice.is_some() && !slice_injection,
                    ..p
                };
                let key = (p.id.clone(), p.slice.clone());
                if seen.insert(key) {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }
}

/// A short stable hash of the point: its strategy and parameters, summarizer and window; the parameters as
/// plans stored them before the window left them and knobs were renamed ([`StrategySpec::id_form`]), so
/// that ids stay as they were.
fn point_id(
    strategy: &StrategySpec,
    summarizer: &Option<String>,
    token_limit: TokenLimit,
    max_output_tokens: Option<u32>,
) -> String {
    let strategy = strategy.id_form(token_limit, max_output_tokens);
    let canonical = serde_json::json!({ "strategy": strategy, "summarizer": summarizer, "token_limit": token_limit });
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    hex::encode(&digest[..6])
}

/// A grid's points: for every strategy and window, the strategy's own expansion of its knobs.
fn expand(g: &Grid, base: &BaseSettings, replay: &ReplaySettings) -> Result<Vec<ConfigPoint>, StrategyError> {
    let limits: Vec<TokenLimit> =
        if g.token_limit.is_empty() { vec![replay.token_limit] } else { g.token_limit.clone() };
    let shared = g.knob_values();
    let mut out = Vec::new();
    for strategy in &g.strategy {
        let def = registry::find(strategy)?;
        let own = match shared.get(def.name()) {
            Some(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        };
        let ctx = GridContext {
            strategy,
            argument: strategy.split_once(':').map(|(_, a)| a).filter(|_| def.takes_argument()),
            summarizers: &g.summarizer,
            base,
            shared: &shared,
            own,
            knobs: def.knobs(),
            uses_llm: def.uses_llm(),
        };
        // The knobs, parsed once per point; the window is each replay's (`ReplaySettings`).
        let variants: Vec<(StrategySpec, Variant)> = def
            .expand(&ctx)?
            .into_iter()
            .map(|v| Ok((StrategySpec::configure(def.name(), v.params.clone())?, v)))
            .collect::<Result<_, StrategyError>>()?;
        for &limit in &limits {
            for (spec, v) in &variants {
                let mut axes = v.axes.clone();
                axes.insert(STRATEGY_AXIS.into(), strategy.clone());
                axes.insert(WINDOW_AXIS.into(), limit.to_string());
                if let Some(s) = &v.summarizer {
                    axes.insert(SUMMARIZER_AXIS.into(), s.clone());
                }
                out.push(ConfigPoint {
                    id: point_id(spec, &v.summarizer, limit, replay.max_output_tokens),
                    axes,
                    strategy: spec.clone(),
                    summarizer: v.summarizer.clone(),
                    token_limit: limit,
                    slice: None,
                    max_conversations: None,
                    source: None,
                    probe_answerer: None,
                    probe_answers_at_end_only: false,
                    probe_no_injection: false,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped_config(name: &str) -> SweepConfig {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs").join(name);
        SweepConfig::load(&path).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The scaling measurement must replay exactly the long-sessions run, only on sessions twice as long.
    #[test]
    fn the_doubled_long_sessions_config_is_the_long_sessions_config_with_two_copies() {
        let single = shipped_config("long-sessions.toml");
        let mut doubled = shipped_config("long-sessions-x2.toml");
        for entry in &mut doubled.datasets {
            match entry {
                DatasetEntry::Raw(raw) => {
                    assert_eq!(raw.copies, 2);
                    raw.copies = 0;
                }
                DatasetEntry::Converted(d) => panic!("{}: only raw sessions can be doubled", d.display()),
            }
        }
        doubled.name = single.name.clone();
        doubled.description = single.description.clone();
        assert_eq!(format!("{doubled:?}"), format!("{single:?}"));
    }

    /// The long-session configs replay each session with the sizes and the window it ran in, taken from its
    /// recorded usage; the policy configs compare strategies under their own triggers in one fixed window.
    #[test]
    fn long_session_configs_take_sizes_and_windows_from_the_recording() {
        use crate::replay::{OverheadSource, TokenScale};
        for (name, scale) in [
            ("long-sessions.toml", TokenScale::Recorded),
            ("agent-sessions-claude-code.toml", TokenScale::Recorded),
            ("agent-sessions-codex.toml", TokenScale::default()),
        ] {
            let c = shipped_config(name);
            assert_eq!(c.replay.token_limit, TokenLimit::Recorded, "{name}");
            assert_eq!((c.replay.overhead, c.replay.token_scale), (OverheadSource::Recorded, scale), "{name}");
            assert!(c.points().unwrap().iter().all(|p| p.token_limit == TokenLimit::Recorded), "{name}");
        }
        for name in
            ["long-sessions-policy.toml", "agent-sessions-claude-code-policy.toml", "agent-sessions-codex-policy.toml"]
        {
            let c = shipped_config(name);
            assert!(c.replay.token_limit.tokens().is_some(), "{name}: one fixed window");
            assert_eq!(c.replay.overhead, OverheadSource::Measured, "{name}");
        }
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key_and_file() {
        let e = SweepConfig::parse(
            "name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"gemini\"]\ntreshold = [0.5]\n",
            "cfg.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("cfg.toml: ") && e.contains("treshold"), "{e}");
        let e = SweepConfig::parse("name = \"x\"\ndatasets = []\n[grid]\nthreshold = [1.5]\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("grid.threshold") && e.contains("1.5"), "{e}");
        let e = SweepConfig::parse("name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"magic\"]\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown strategy `magic`"), "{e}");
        let e = SweepConfig::parse("name = \"x\"\ndatasets = []\n[grid]\nsplit = [\"2024\"]\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("split") && e.contains("2024"), "{e}");
        let e = SweepConfig::parse("name = \"x\"\ndatasets = []\n[replay]\ntoken_limt = 5\n[grid]\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("token_limt"), "{e}");
    }

    /// A model tokenizer is explicit in the config and must name a backend with a token counter; the
    /// default stays o200k.
    #[test]
    fn a_model_tokenizer_names_a_backend_that_counts_tokens() {
        use crate::replay::Tokenizer;
        let parse = |t: &str| {
            let tokenizer = if t.is_empty() { String::new() } else { format!("tokenizer = \"{t}\"\n") };
            SweepConfig::parse(&format!("name = \"x\"\ndatasets = []\n[replay]\n{tokenizer}[grid]\n"), "c.toml")
        };
        assert_eq!(parse("").unwrap().replay.tokenizer, Tokenizer::O200k);
        assert_eq!(parse("heuristic").unwrap().replay.tokenizer, Tokenizer::Heuristic);
        let gemini = parse("gemini:gemini-2.5-flash").unwrap();
        assert_eq!(gemini.replay.tokenizer, Tokenizer::Model("gemini:gemini-2.5-flash".into()));
        assert_eq!(parse("local:smollm2-135m").unwrap().replay.tokenizer.name(), "local:smollm2-135m");
        for (t, why) in [
            ("extractive", "has no token counter"),
            ("openai:qwen@http://127.0.0.1:8080/v1", "has no token counter"),
            ("o200", "unknown model spec `o200`"),
            ("gemini:", "needs a model name"),
            ("local:nope", "unknown embedded model"),
        ] {
            let e = parse(t).unwrap_err().to_string();
            assert!(e.starts_with("c.toml: key `replay.tokenizer`: ") && e.contains(why), "{t}: {e}");
        }
    }

    /// The trigger fraction has one name in every strategy; a config using Codex's or Cline's former name is
    /// refused with the new one.
    #[test]
    fn former_names_of_the_trigger_fraction_are_refused_with_the_new_name() {
        for (grid, key) in [
            ("strategy = [\"codex\"]\n[grid.codex]\ntrigger_fraction = [0.9]", "grid.codex.trigger_fraction"),
            ("strategy = [\"cline\"]\n[grid.cline]\ntrigger_ratio = [0.9]", "grid.cline.trigger_ratio"),
            ("strategy = [\"cline\"]\ntrigger_ratio = [0.9]", "grid.trigger_ratio"),
        ] {
            let e = SweepConfig::parse(&format!("name = \"x\"\ndatasets = []\n[grid]\n{grid}\n"), "c.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("c.toml: key `{key}`: renamed `threshold`")), "{e}");
        }
        let cfg = SweepConfig::parse(
            "name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"codex\", \"cline\", \"gemini\"]\nthreshold = [0.7]\n",
            "c.toml",
        )
        .unwrap();
        // One shared value sweeps every strategy's trigger fraction.
        for p in cfg.points().unwrap() {
            assert_eq!(p.axes["threshold"], "0.7", "{}", p.strategy.kind());
        }
    }

    /// The window is the replay's: no point's parameters hold it, and a window relative to each conversation
    /// is no placeholder but each replay's own (`replay::run` tests resolve it per conversation).
    #[test]
    fn points_hold_no_window_and_the_output_limit_is_the_replays() {
        let cfg = SweepConfig::parse(
            "name = \"x\"\ndatasets = []\n[replay]\ntoken_limit = \"overhead+peak:0.6\"\n[llm]\nmax_output_tokens = 77\n\
             [grid]\nstrategy = [\"gemini\", \"codex\", \"drop-oldest\", \"truncation-only\"]\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(cfg.replay.max_output_tokens, Some(77));
        for p in cfg.points().unwrap() {
            let params = serde_json::to_string(p.strategy.params()).unwrap();
            assert!(!params.contains("token_limit") && !params.contains("max_output_tokens"), "{params}");
        }
        let e = SweepConfig::parse("name = \"x\"\ndatasets = []\n[replay]\nmax_output_tokens = 77\n[grid]\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_output_tokens"), "{e}");
    }

    #[test]
    fn grid_expands_per_strategy_axes_only() {
        let cfg = SweepConfig::parse(
            "name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"gemini\", \"none\", \"observation-masking\"]\nthreshold = [0.5, 0.7]\nprompt = [\"v5\", \"v2\"]\nverification = [true, false]\n",
            "c.toml",
        )
        .unwrap();
        let points = cfg.points().unwrap();
        let count = |s: &str| points.iter().filter(|p| p.strategy.kind() == s).count();
        // 2 thresholds × (v5 with and without verification + v2, which has no verification pass) = 6.
        assert_eq!((count("gemini"), count("none"), count("observation-masking")), (6, 1, 1));
        let ids: std::collections::BTreeSet<_> = points.iter().map(|p| &p.id).collect();
        assert_eq!(ids.len(), points.len());
        // Stable ids: the same config gives the same points.
        assert_eq!(points, cfg.points().unwrap());
    }

    #[test]
    fn strategy_tables_set_one_strategys_knobs_and_are_checked() {
        let cfg = SweepConfig::parse(
            "name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"goose\", \"drop-oldest\"]\nthreshold = [0.6]\n[grid.goose]\nthreshold = [0.7, 0.9]\n",
            "c.toml",
        )
        .unwrap();
        let points = cfg.points().unwrap();
        let of = |k: &str| {
            points.iter().filter(|p| p.strategy.kind() == k).map(|p| p.axes["threshold"].clone()).collect::<Vec<_>>()
        };
        assert_eq!(of("goose"), ["0.7", "0.9"]);
        assert_eq!(of("drop-oldest"), ["0.6"]);
        let e = SweepConfig::parse(
            "name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"codex\"]\n[grid.codex]\ntrigger = [0.9]\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("c.toml: ") && e.contains("grid.codex.trigger") && e.contains("threshold"), "{e}");
        let e = SweepConfig::parse(
            "name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"codex\"]\n[grid.codex]\nthreshold = [2]\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("c.toml: key `grid.codex.threshold`: 2 is not in (0, 1]"), "{e}");
        let e = SweepConfig::parse("name = \"x\"\ndatasets = []\n[grid]\nstrategy = [\"exec:\"]\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("grid.strategy") && e.contains("exec:…"), "{e}");
    }
}
