//! How a replay measures requests and how large its simulated window is.

use serde::{Deserialize, Serialize};

/// The one tokenizer every request size of a replay is counted with. Written as `"o200k"`, `"heuristic"`
/// or a model spec (`"gemini:gemini-2.5-flash"`) in configs and plans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Tokenizer {
    /// OpenAI's o200k BPE (embedded): a real tokenizer, independent of the reference's heuristic.
    #[default]
    O200k,
    /// The reference's own character heuristic (`estimateTokenCountSync`, current variant): faster, but it is
    /// the figure under test, so sizes measured with it cannot show hidden inflation.
    Heuristic,
    /// The tokenizer of the model this spec names, through its backend's token counter (Gemini
    /// `countTokens`): the sizes the provider would bill. Each Content is counted alone and a request is the
    /// sum of its parts; the replay needs a [`TokenCounter`](super::model_counter::TokenCounter) for it
    /// ([`ReplaySettings::counter`](super::settings::ReplaySettings::counter)).
    Model(String),
}

impl Tokenizer {
    pub fn name(&self) -> &str {
        match self {
            Tokenizer::O200k => "o200k",
            Tokenizer::Heuristic => "heuristic",
            Tokenizer::Model(spec) => spec,
        }
    }

    /// The model spec of a model tokenizer.
    pub fn model_spec(&self) -> Option<&str> {
        match self {
            Tokenizer::Model(spec) => Some(spec),
            _ => None,
        }
    }
}

impl std::str::FromStr for Tokenizer {
    type Err = TokenizerError;
    /// `o200k`, `heuristic`, or any other non-blank text as a model spec (the caller checks that it names a
    /// backend with a token counter: the core does not know the backends).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "o200k" => Ok(Tokenizer::O200k),
            "heuristic" => Ok(Tokenizer::Heuristic),
            "" => Err(TokenizerError),
            spec => Ok(Tokenizer::Model(spec.to_string())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("tokenizer: expected `o200k`, `heuristic` or a model spec whose backend counts tokens (gemini:<model>)")]
pub struct TokenizerError;

impl Serialize for Tokenizer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Tokenizer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// The value a setting takes where it comes from the conversation's recording (`token_limit`, `overhead`,
/// `token_scale`, and the `recorded` prompt-count source). Here, with the window that parses it first, so that
/// the settings (which hold a window) import it and this module imports nothing of theirs.
pub const FROM_RECORDING: &str = "recorded";

/// The simulated context window: a number of tokens, or a window relative to each conversation, so that one
/// setting makes conversations of every size compress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TokenLimit {
    Tokens(u64),
    /// `peak:F`: this fraction of the largest request of the conversation replayed without compression. With
    /// a large fixed part (system prompt + tools) the trigger can sit below the first request, and every
    /// request compresses (a stress setting: configs/stress-storm.toml).
    PeakFraction(f64),
    /// `overhead+peak:F`: the fixed part (the first request: system prompt + tool declarations + first turn)
    /// plus F × the conversation's growth beyond it, and never less than [`MAX_FIXED_SHARE`]⁻¹ × the fixed
    /// part. Deployed agents spend a few per cent of their window on the fixed part (Gemini CLI: ~2 %, Claude
    /// Code: ~10 %), so every threshold above [`MAX_FIXED_SHARE`] triggers above the first request, and a
    /// conversation whose growth is small next to its fixed part never reaches the trigger, as it would not
    /// in a deployment.
    FixedPlusGrowth(f64),
    /// `recorded`: the window the agent ran in, from its recording ([`recorded_window`]): the model's context
    /// window where the recording states it (Codex: `model_context_window`) or its model family's windows
    /// imply it (Claude: 200,000, or 1,000,000 where the agent counted a larger request), and never less than
    /// the largest request the agent itself counted. A conversation without recorded usage gets the largest
    /// request of its replay without compression (all a recording without usage says is that the agent's
    /// requests fit).
    Recorded,
}

/// The largest share of an `overhead+peak:F` window the fixed part of the request may take.
pub const MAX_FIXED_SHARE: f64 = 0.25;

/// What a relative window is resolved against: the conversation replayed without compression, and its
/// recording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowBasis {
    /// The first request (system prompt + tool declarations + first turn).
    pub first_request: u64,
    /// The largest request.
    pub peak: u64,
    /// The window the recording implies ([`recorded_window`]), where it records usage.
    pub recorded: Option<u64>,
}

/// Claude's context windows: 200,000 tokens, and 1,000,000 for the models and plans that offer it. Claude
/// Code records `message.model` without the `[1m]` marker of a 1M-context session, so which one a session
/// ran in is told by its usage: a request above 200,000 tokens ran in the 1M window.
pub const CLAUDE_WINDOWS: [u64; 2] = [200_000, 1_000_000];

/// The window a recording implies: `stated` (the context window the recording states, e.g. Codex's
/// `model_context_window`), else the smallest of the model family's windows (by the origin of its counts)
/// that holds the largest recorded request, and never less than that request (`recorded_peak`, the largest
/// prompt the agent itself counted). `None` where the recording says nothing of its window (no stated window
/// and no comparable usage).
pub fn recorded_window(origin: PromptCountOrigin, stated: Option<u64>, recorded_peak: u64) -> Option<u64> {
    let peak = if origin.counts_replayed_context() { recorded_peak } else { 0 };
    let model = stated.or_else(|| {
        let windows = origin.model_windows();
        (peak > 0).then(|| windows.iter().copied().find(|&w| w >= peak).or(windows.last().copied())).flatten()
    });
    let window = model.unwrap_or(0).max(peak);
    (window > 0).then_some(window)
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("token limit `{0}`: expected a positive number of tokens, `peak:F`, `overhead+peak:F` with 0 < F <= 10, or `recorded`")]
pub struct TokenLimitError(pub String);

impl TokenLimit {
    /// The window in tokens for a conversation whose uncompressed replay is summarised by `basis`.
    pub fn resolve(self, basis: WindowBasis) -> u64 {
        let WindowBasis { first_request: fixed, peak, recorded } = basis;
        let window = match self {
            TokenLimit::Tokens(n) => return n,
            TokenLimit::Recorded => recorded.unwrap_or(peak) as f64,
            TokenLimit::PeakFraction(f) => f * peak as f64,
            TokenLimit::FixedPlusGrowth(f) => {
                let growth = peak.saturating_sub(fixed) as f64;
                (fixed as f64 + f * growth).max(fixed as f64 / MAX_FIXED_SHARE)
            }
        };
        (window.ceil() as u64).max(1)
    }

    pub fn is_relative(self) -> bool {
        !matches!(self, TokenLimit::Tokens(_))
    }

    /// The absolute window, or `None` for a relative one.
    pub fn tokens(self) -> Option<u64> {
        match self {
            TokenLimit::Tokens(n) => Some(n),
            _ => None,
        }
    }
}

impl Default for TokenLimit {
    fn default() -> Self {
        TokenLimit::Tokens(crate::model_tables::DEFAULT_TOKEN_LIMIT)
    }
}

impl std::fmt::Display for TokenLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenLimit::Tokens(n) => write!(f, "{n}"),
            TokenLimit::PeakFraction(x) => write!(f, "peak:{}", crate::json::js_format(*x)),
            TokenLimit::FixedPlusGrowth(x) => write!(f, "overhead+peak:{}", crate::json::js_format(*x)),
            TokenLimit::Recorded => f.write_str(FROM_RECORDING),
        }
    }
}

impl std::str::FromStr for TokenLimit {
    type Err = TokenLimitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || TokenLimitError(s.to_string());
        let fraction = |f: &str| match f.trim().parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 10.0 => Ok(f),
            _ => Err(bad()),
        };
        if s.trim() == FROM_RECORDING {
            return Ok(TokenLimit::Recorded);
        }
        if let Some(f) = s.trim().strip_prefix("overhead+peak:") {
            return fraction(f).map(TokenLimit::FixedPlusGrowth);
        }
        if let Some(f) = s.trim().strip_prefix("peak:") {
            return fraction(f).map(TokenLimit::PeakFraction);
        }
        match s.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(TokenLimit::Tokens(n)),
            _ => Err(bad()),
        }
    }
}

impl Serialize for TokenLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // A number, as before relative windows existed: point ids of absolute windows do not change.
            TokenLimit::Tokens(n) => s.serialize_u64(*n),
            _ => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for TokenLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(0) => Err(serde::de::Error::custom(TokenLimitError("0".into()))),
            Raw::Number(n) => Ok(TokenLimit::Tokens(n)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numbers_and_peak_fractions_and_resolves_them() {
        #[derive(Deserialize)]
        struct T {
            l: Vec<TokenLimit>,
        }
        let t: T = toml::from_str("l = [16384, \"peak:0.6\", \"4096\"]").unwrap();
        assert_eq!(t.l, [TokenLimit::Tokens(16384), TokenLimit::PeakFraction(0.6), TokenLimit::Tokens(4096)]);
        let peak = |peak| WindowBasis { first_request: 0, peak, recorded: None };
        assert_eq!(t.l[0].resolve(peak(1_000_000)), 16384);
        // 0.6 × 10,001 = 6,000.6 → 6,001 (rounded up: a window never below the fraction).
        assert_eq!(t.l[1].resolve(peak(10_001)), 6001);
        assert_eq!(TokenLimit::PeakFraction(0.5).resolve(peak(0)), 1);
        assert_eq!(serde_json::to_string(&t.l).unwrap(), "[16384,\"peak:0.6\",4096]");
        for bad in ["l = [0]", "l = [\"peak:0\"]", "l = [\"peak:x\"]", "l = [\"half\"]", "l = [-3]"] {
            assert!(toml::from_str::<T>(bad).is_err(), "{bad}");
        }
        let e = toml::from_str::<T>("l = [\"peak:11\"]").err().unwrap().to_string();
        assert!(e.contains("peak:11") && e.contains("peak:F"), "{e}");
    }

    /// `overhead+peak:F` adds F × the growth to the fixed part, and never lets the fixed part take more than
    /// a quarter of the window: the trigger of any threshold above 0.25 is above the first request.
    #[test]
    fn fixed_plus_growth_keeps_the_trigger_above_the_first_request() {
        let l: TokenLimit = "overhead+peak:0.6".parse().unwrap();
        assert_eq!(l, TokenLimit::FixedPlusGrowth(0.6));
        assert_eq!(l.to_string(), "overhead+peak:0.6");
        assert_eq!(serde_json::to_string(&l).unwrap(), "\"overhead+peak:0.6\"");
        assert!(l.is_relative() && l.tokens().is_none());
        // Growth large next to the fixed part: 1,000 + 0.6 × 99,000.
        assert_eq!(l.resolve(WindowBasis { first_request: 1_000, peak: 100_000, recorded: None }), 60_400);
        // tau-bench-like: the fixed part is half the peak; 5,000 + 0.6 × 5,000 = 8,000 < 4 × 5,000.
        let w = l.resolve(WindowBasis { first_request: 5_000, peak: 10_000, recorded: None });
        assert_eq!(w, 20_000);
        // Threshold 0.5 triggers at twice the fixed part: here the peak itself.
        assert_eq!(0.5 * w as f64, 10_000.0);
        for bad in ["overhead+peak:0", "overhead+peak:", "overhead+peak:11", "overhead:0.6"] {
            assert!(bad.parse::<TokenLimit>().is_err(), "{bad}");
        }
    }

    /// `recorded` resolves to the window the recording implies: the stated one, else the smallest Claude
    /// window that holds the largest recorded request; never below that request; without recorded usage, the
    /// replay's own peak.
    #[test]
    fn recorded_windows_come_from_the_recording() {
        let l: TokenLimit = "recorded".parse().unwrap();
        assert_eq!(l, TokenLimit::Recorded);
        assert_eq!((l.to_string(), serde_json::to_string(&l).unwrap()), ("recorded".into(), "\"recorded\"".into()));
        assert!(l.is_relative() && l.tokens().is_none());
        let claude = |peak| recorded_window(PromptCountOrigin::ClaudeCodeApi, None, peak);
        assert_eq!(claude(167_512), Some(200_000));
        assert_eq!(claude(200_000), Some(200_000));
        assert_eq!(claude(267_451), Some(1_000_000), "a request above 200k ran in the 1M window");
        assert_eq!(claude(1_200_000), Some(1_200_000), "never below what the agent counted");
        assert_eq!(claude(0), None);
        let codex = |stated, peak| recorded_window(PromptCountOrigin::CodexApi, stated, peak);
        assert_eq!(codex(Some(258_400), 238_000), Some(258_400));
        assert_eq!(codex(Some(121_600), 130_000), Some(130_000));
        assert_eq!(codex(None, 238_000), Some(238_000), "no stated window: the largest recorded request");
        // aider's counts include what the replay does not hold: not a window.
        assert_eq!(recorded_window(PromptCountOrigin::AiderSent, None, 50_000), None);
        let basis = |recorded| WindowBasis { first_request: 10, peak: 5_000, recorded };
        assert_eq!(l.resolve(basis(Some(200_000))), 200_000);
        assert_eq!(l.resolve(basis(None)), 5_000);
    }

    proptest::proptest! {
        /// Whatever the conversation, a threshold above the maximum fixed share triggers above the first
        /// request.
        #[test]
        fn trigger_is_above_the_first_request(fixed in 1u64..2_000_000, growth in 0u64..5_000_000, f in 0.01f64..10.0, t in 0.2501f64..1.0) {
            let w = TokenLimit::FixedPlusGrowth(f).resolve(WindowBasis { first_request: fixed, peak: fixed + growth, recorded: None });
            proptest::prop_assert!(t * w as f64 > fixed as f64);
        }
    }

    /// The built-in tokenizers keep the names plans already hold; any other name is a model spec.
    #[test]
    fn tokenizers_are_written_as_their_names() {
        #[derive(Deserialize, Serialize)]
        struct T {
            t: Vec<Tokenizer>,
        }
        let t: T = toml::from_str("t = [\"o200k\", \"heuristic\", \"gemini:gemini-2.5-flash\"]").unwrap();
        assert_eq!(t.t, [Tokenizer::O200k, Tokenizer::Heuristic, Tokenizer::Model("gemini:gemini-2.5-flash".into())]);
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"t":["o200k","heuristic","gemini:gemini-2.5-flash"]}"#);
        assert_eq!(t.t[2].model_spec(), Some("gemini:gemini-2.5-flash"));
        assert!(toml::from_str::<T>("t = [\" \"]").is_err());
    }
}

/// What a recorded prompt token count counted: each importer reads it from one field of its format, so the
/// origin follows from the importer (`meta.format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PromptCountOrigin {
    /// No recorded counts.
    #[default]
    None,
    /// Gemini `usageMetadata.promptTokenCount` (`tokens.input` of a Gemini CLI session): the whole request,
    /// system prompt and tools included, of the history the replay holds.
    GeminiApi,
    /// Claude Code usage: input plus cache-read and cache-creation tokens (the whole request).
    ClaudeCodeApi,
    /// Codex CLI `token_count` events, `last_token_usage.input_tokens` (the whole request).
    CodexApi,
    /// aider's `Tokens: N sent`: includes the repository map and the files added to the chat, which the
    /// recorded chat history (and so the replay) does not hold.
    AiderSent,
    /// A format whose count's scope is not documented.
    Unknown,
}

crate::named_variants!(PromptCountOrigin, "prompt count origin", {
    None => "none",
    GeminiApi => "gemini-api",
    ClaudeCodeApi => "claude-code-api",
    CodexApi => "codex-api",
    AiderSent => "aider-sent",
    Unknown => "unknown",
});

impl PromptCountOrigin {
    pub fn of_format(format: &str) -> Self {
        match format {
            "gemini-session" | "gemini-jsonl" => PromptCountOrigin::GeminiApi,
            "claude-code" => PromptCountOrigin::ClaudeCodeApi,
            "codex" => PromptCountOrigin::CodexApi,
            "aider" => PromptCountOrigin::AiderSent,
            _ => PromptCountOrigin::Unknown,
        }
    }

    /// Whether the count measures the context a replay of the recorded history holds (so a replay may use
    /// it for the trigger while the history is as recorded).
    pub fn counts_replayed_context(self) -> bool {
        matches!(self, PromptCountOrigin::GeminiApi | PromptCountOrigin::ClaudeCodeApi | PromptCountOrigin::CodexApi)
    }

    /// The context windows of the models whose usage these counts are, smallest first (empty where the
    /// recording states its window, as Codex's rollouts do, or where the models are unknown).
    pub fn model_windows(self) -> &'static [u64] {
        match self {
            PromptCountOrigin::ClaudeCodeApi => &CLAUDE_WINDOWS,
            PromptCountOrigin::GeminiApi => &[crate::model_tables::DEFAULT_TOKEN_LIMIT],
            _ => &[],
        }
    }
}
