//! Sweep configs (TOML): which conversations, which replay settings, and a grid of compressor settings.
//! Unknown keys and bad values are errors that name the key and the file.

use crate::compress::{
    CallerKind, CompressSettings, CompressionPrompts, FailurePath, Latch, SplitVariant, TruncationVariant,
};
use crate::replay::{ReplaySettings, StrategySpec, TokenLimit};
use crate::tokens::Estimator;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Dataset directories or conversation files.
    pub datasets: Vec<PathBuf>,
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
    pub cost: crate::metrics::CostConfig,
}

/// The `[probes]` table: which probe sets to score, and with which models.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProbesConfig {
    pub enabled: bool,
    /// Probe directory (`<dir>/<dataset>/<id>.<source>.json`), relative to the working directory.
    pub dir: PathBuf,
    /// Probe sources used: `auto`, `manual`, `llm`.
    pub sources: Vec<crate::probes::ProbeOrigin>,
    /// Model spec of the answerer (`None`: retention only).
    pub answerer: Option<String>,
    /// Model spec of the 0–5 judge (`None`: no judge grading).
    pub judge: Option<String>,
    /// Also replay a copy of each conversation with an instruction planted in an early tool output, and
    /// count summaries that obey it (strategies that write summaries only).
    pub injection: bool,
    /// Ask the answerer after every compression event too, not only at the end of the replay.
    pub answer_at_events: bool,
    /// Also ask the answerer on the first-pass history when verification changed the summary.
    pub verification_accuracy: bool,
    pub max_answer_tokens: Option<u32>,
}

impl ProbesConfig {
    pub fn options(&self, at_end_only: bool) -> crate::probes::ProbeOptions {
        crate::probes::ProbeOptions {
            answer_at_events: self.answer_at_events && !at_end_only,
            verification_accuracy: self.verification_accuracy,
            max_output_tokens: self.max_answer_tokens,
        }
    }
}

impl Default for ProbesConfig {
    fn default() -> Self {
        ProbesConfig {
            enabled: true,
            dir: PathBuf::from("datasets/probes"),
            sources: vec![crate::probes::ProbeOrigin::Auto, crate::probes::ProbeOrigin::Manual],
            answerer: Some("extractive".into()),
            judge: None,
            injection: true,
            answer_at_events: true,
            verification_accuracy: false,
            max_answer_tokens: Some(128),
        }
    }
}

fn one() -> u32 {
    1
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
    pub cache_mode: String,
    pub timeout_secs: u64,
    pub max_attempts: u32,
    pub concurrency: usize,
    pub max_output_tokens: Option<u32>,
    pub threads: Option<usize>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            cache_dir: Some(PathBuf::from(crate::llm::DEFAULT_RECORDINGS_DIR)),
            cache_mode: "read-write".into(),
            timeout_secs: 300,
            max_attempts: 5,
            concurrency: 4,
            max_output_tokens: Some(1024),
            threads: None,
        }
    }
}

/// Base values of settings the grid does not vary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BaseSettings {
    pub model: String,
    pub active_model: Option<String>,
    pub approved_plan_path: Option<String>,
    pub model_table: crate::models::ModelTable,
    pub high_fidelity: bool,
    pub inflation_guard: bool,
    pub env_text: Option<String>,
    pub mask_placeholder: String,
}

impl Default for BaseSettings {
    fn default() -> Self {
        let d = CompressSettings::default();
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

/// The axes. Every axis is a list; the grid is their product, restricted to the axes a strategy reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Grid {
    pub strategy: Vec<String>,
    pub summarizer: Vec<String>,
    pub threshold: Vec<f64>,
    pub preserve_fraction: Vec<f64>,
    pub prompt: Vec<String>,
    pub verification: Vec<bool>,
    pub split: Vec<SplitVariant>,
    pub estimator: Vec<Estimator>,
    pub truncation: Vec<TruncationVariant>,
    pub function_response_budget: Vec<u64>,
    pub truncate_tool_output_threshold: Vec<i64>,
    pub failure_path: Vec<FailurePath>,
    pub caller: Vec<CallerKind>,
    pub latch: Vec<Latch>,
    pub token_limit: Vec<TokenLimit>,
    pub mask_keep_last: Vec<usize>,
    pub drop_keep_fraction: Vec<f64>,
}

impl Default for Grid {
    fn default() -> Self {
        Grid {
            strategy: vec!["gemini".into()],
            summarizer: vec!["extractive".into()],
            threshold: vec![0.5],
            preserve_fraction: vec![0.3],
            prompt: vec!["v5".into()],
            verification: vec![true],
            split: vec![SplitVariant::Current],
            estimator: vec![Estimator::Current],
            truncation: vec![TruncationVariant::Current],
            function_response_budget: vec![50_000],
            truncate_tool_output_threshold: vec![40_000],
            failure_path: vec![FailurePath::TruncateOnly],
            caller: vec![CallerKind::Interactive],
            latch: vec![Latch::Latched],
            token_limit: Vec::new(),
            mask_keep_last: vec![5],
            drop_keep_fraction: vec![0.3],
        }
    }
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

/// One point of the grid: a strategy with all its settings, and the summarizer it uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigPoint {
    /// Short stable hash of the point.
    pub id: String,
    /// Axis values, for reports (only the axes this strategy reads).
    pub axes: BTreeMap<String, String>,
    pub strategy: StrategySpec,
    /// Model spec of the summarizer (`None` for strategies without one).
    pub summarizer: Option<String>,
    /// Simulated context window (tokens, or a fraction of each conversation's uncompressed peak: the
    /// strategy's own window is then set per conversation by `replay::spec_with_token_limit`).
    pub token_limit: TokenLimit,
    /// The slice this point belongs to (`None`: the main grid), which limits its conversations.
    pub slice: Option<String>,
    pub max_conversations: Option<usize>,
    /// Only conversations of this source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The probe answerer of this point's slice, when it overrides `[probes].answerer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_answerer: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe_answers_at_end_only: bool,
    /// A slice point that skips the injection replays.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe_no_injection: bool,
}

pub const STRATEGIES: [&str; 5] = ["gemini", "truncation-only", "observation-masking", "drop-oldest", "none"];

impl SweepConfig {
    pub fn load(path: &Path) -> Result<SweepConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Io { file: path.display().to_string(), source })?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, file: &str) -> Result<SweepConfig, ConfigError> {
        let cfg: SweepConfig = toml::from_str(text)
            .map_err(|e| ConfigError::Invalid { file: file.into(), message: e.to_string().trim().to_string() })?;
        cfg.validate().map_err(|message| ConfigError::Invalid { file: file.into(), message })?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() || !self.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("key `name`: `{}` must be non-empty letters, digits, `-` or `_`", self.name));
        }
        if self.concurrency == 0 {
            return Err("key `concurrency`: must be at least 1".into());
        }
        if self.repeats == 0 {
            return Err("key `repeats`: must be at least 1".into());
        }
        self.cost.validate()?;
        match self.llm.cache_mode.as_str() {
            "read-write" | "replay" | "off" => {}
            m => return Err(format!("key `llm.cache_mode`: `{m}` is not one of read-write, replay, off")),
        }
        let grids = std::iter::once(("grid".to_string(), &self.grid))
            .chain(self.slice.iter().map(|s| (format!("slice.{}.grid", s.name), &s.grid)));
        for (at, g) in grids {
            for s in &g.strategy {
                if !STRATEGIES.contains(&s.as_str()) {
                    return Err(format!(
                        "key `{at}.strategy`: unknown strategy `{s}` (expected one of: {})",
                        STRATEGIES.join(", ")
                    ));
                }
            }
            for t in &g.threshold {
                if !(*t > 0.0 && *t <= 1.0) {
                    return Err(format!("key `{at}.threshold`: {t} is not in (0, 1]"));
                }
            }
            for p in &g.preserve_fraction {
                if !(*p > 0.0 && *p < 1.0) {
                    return Err(format!("key `{at}.preserve_fraction`: {p} is not in (0, 1)"));
                }
            }
            for f in &g.drop_keep_fraction {
                if !(*f > 0.0 && *f < 1.0) {
                    return Err(format!("key `{at}.drop_keep_fraction`: {f} is not in (0, 1)"));
                }
            }
            for p in &g.prompt {
                CompressionPrompts::from_spec(p).map_err(|e| format!("key `{at}.prompt`: {e}"))?;
            }
            for (name, len) in [("strategy", g.strategy.len()), ("summarizer", g.summarizer.len())] {
                if len == 0 {
                    return Err(format!("key `{at}.{name}`: needs at least one value"));
                }
            }
        }
        Ok(())
    }

    /// Every config point, main grid first, then each slice; deduplicated, in a stable order.
    pub fn points(&self) -> Result<Vec<ConfigPoint>, String> {
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
            for p in expand(g, &self.base, &self.replay, &self.llm)? {
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

fn fmt_f(x: f64) -> String {
    crate::json::js_format(x)
}

fn point_id(strategy: &StrategySpec, summarizer: &Option<String>, token_limit: TokenLimit) -> String {
    let canonical = serde_json::json!({ "strategy": strategy, "summarizer": summarizer, "token_limit": token_limit });
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    hex::encode(&digest[..6])
}

fn expand(g: &Grid, base: &BaseSettings, replay: &ReplaySettings, llm: &LlmConfig) -> Result<Vec<ConfigPoint>, String> {
    let limits: Vec<TokenLimit> =
        if g.token_limit.is_empty() { vec![replay.token_limit] } else { g.token_limit.clone() };
    let mut out = Vec::new();
    for strategy in &g.strategy {
        for &limit in &limits {
            let mut push = |spec: StrategySpec, summarizer: Option<String>, mut axes: BTreeMap<String, String>| {
                axes.insert("strategy".into(), strategy.clone());
                axes.insert("token_limit".into(), limit.to_string());
                if let Some(s) = &summarizer {
                    axes.insert("summarizer".into(), s.clone());
                }
                out.push(ConfigPoint {
                    id: point_id(&spec, &summarizer, limit),
                    axes,
                    strategy: spec,
                    summarizer,
                    token_limit: limit,
                    slice: None,
                    max_conversations: None,
                    source: None,
                    probe_answerer: None,
                    probe_answers_at_end_only: false,
                    probe_no_injection: false,
                });
            };
            let settings_for =
                |threshold: f64, preserve: f64, prompt: &CompressionPrompts, verification: bool| CompressSettings {
                    model: base.model.clone(),
                    active_model: base.active_model.clone(),
                    approved_plan_path: base.approved_plan_path.clone(),
                    threshold: Some(threshold),
                    preserve_fraction: preserve,
                    // A relative window is resolved per conversation; the model's own window stands in.
                    token_limit: limit.tokens(),
                    model_table: base.model_table,
                    high_fidelity: base.high_fidelity,
                    inflation_guard: base.inflation_guard,
                    verification,
                    prompts: prompt.clone(),
                    env_text: base.env_text.clone(),
                    max_output_tokens: llm.max_output_tokens,
                    ..CompressSettings::default()
                };
            match strategy.as_str() {
                "gemini" => {
                    let mut variants =
                        vec![(settings_for(0.5, 0.3, &CompressionPrompts::current(), true), BTreeMap::new())];
                    variants = axis(variants, "threshold", &g.threshold, |s, v| s.threshold = Some(*v), |v| fmt_f(*v));
                    variants = axis(
                        variants,
                        "preserve_fraction",
                        &g.preserve_fraction,
                        |s, v| s.preserve_fraction = *v,
                        |v| fmt_f(*v),
                    );
                    let prompts: Vec<(String, CompressionPrompts)> = g
                        .prompt
                        .iter()
                        .map(|p| CompressionPrompts::from_spec(p).map(|c| (p.clone(), c)).map_err(|e| e.to_string()))
                        .collect::<Result<_, _>>()?;
                    variants = axis(variants, "prompt", &prompts, |s, v| s.prompts = v.1.clone(), |v| v.0.clone());
                    variants =
                        axis(variants, "verification", &g.verification, |s, v| s.verification = *v, bool::to_string);
                    variants = axis(variants, "split", &g.split, |s, v| s.split = *v, ToString::to_string);
                    variants = axis(variants, "estimator", &g.estimator, |s, v| s.estimator = *v, ToString::to_string);
                    variants = truncation_axes(variants, g);
                    variants = axis(variants, "failure_path", &g.failure_path, |s, v| s.failure_path = *v, serde_plain);
                    // Prompts without a verification turn make the verification axis moot: one point, not two.
                    for (settings, axes) in variants.iter_mut() {
                        if settings.prompts.verification.is_none() {
                            settings.verification = false;
                            axes.insert("verification".into(), "n/a".into());
                        }
                    }
                    for summarizer in &g.summarizer {
                        for (settings, axes) in &variants {
                            for &caller in &g.caller {
                                for &latch in &g.latch {
                                    let mut axes = axes.clone();
                                    axes.insert("caller".into(), serde_plain(&caller));
                                    axes.insert("latch".into(), serde_plain(&latch));
                                    let spec = StrategySpec::Gemini { settings: settings.clone(), caller, latch };
                                    push(spec, Some(summarizer.clone()), axes);
                                }
                            }
                        }
                    }
                }
                "truncation-only" => {
                    let mut variants =
                        vec![(settings_for(0.5, 0.3, &CompressionPrompts::current(), false), BTreeMap::new())];
                    variants = axis(variants, "threshold", &g.threshold, |s, v| s.threshold = Some(*v), |v| fmt_f(*v));
                    variants = truncation_axes(variants, g);
                    for (settings, axes) in variants {
                        push(StrategySpec::TruncationOnly { settings }, None, axes);
                    }
                }
                "observation-masking" => {
                    for &keep_last in &g.mask_keep_last {
                        let axes = [("mask_keep_last".to_string(), keep_last.to_string())].into_iter().collect();
                        push(
                            StrategySpec::ObservationMasking { keep_last, placeholder: base.mask_placeholder.clone() },
                            None,
                            axes,
                        );
                    }
                }
                "drop-oldest" => {
                    for &threshold in &g.threshold {
                        for &keep_fraction in &g.drop_keep_fraction {
                            let axes = [("threshold", fmt_f(threshold)), ("drop_keep_fraction", fmt_f(keep_fraction))]
                                .into_iter()
                                .map(|(k, v)| (k.to_string(), v))
                                .collect();
                            let token_limit = limit.tokens().unwrap_or(0);
                            push(StrategySpec::DropOldest { threshold, keep_fraction, token_limit }, None, axes);
                        }
                    }
                }
                "none" => push(StrategySpec::None, None, BTreeMap::new()),
                other => return Err(format!("unknown strategy `{other}`")),
            }
        }
    }
    Ok(out)
}

type Variants = Vec<(CompressSettings, BTreeMap<String, String>)>;

/// One more grid axis: every variant so far times every value of the axis.
fn axis<T>(
    variants: Variants,
    name: &str,
    values: &[T],
    apply: impl Fn(&mut CompressSettings, &T),
    show: impl Fn(&T) -> String,
) -> Variants {
    variants
        .into_iter()
        .flat_map(|(settings, axes)| {
            values.iter().map(move |v| (settings.clone(), axes.clone(), v)).collect::<Vec<_>>()
        })
        .map(|(mut settings, mut axes, v)| {
            apply(&mut settings, v);
            axes.insert(name.to_string(), show(v));
            (settings, axes)
        })
        .collect()
}

/// The tool-output truncation axes, shared by the reference and the truncation-only strategy.
fn truncation_axes(variants: Variants, g: &Grid) -> Variants {
    let variants = axis(variants, "truncation", &g.truncation, |s, v| s.truncation = *v, ToString::to_string);
    let variants = axis(
        variants,
        "function_response_budget",
        &g.function_response_budget,
        |s, v| s.function_response_budget = *v,
        ToString::to_string,
    );
    axis(
        variants,
        "truncate_tool_output_threshold",
        &g.truncate_tool_output_threshold,
        |s, v| s.truncate_tool_output_threshold = *v,
        ToString::to_string,
    )
}

fn serde_plain<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
