//! The replay settings: what a config or plan sets for every conversation of a run, whatever the strategy
//! (the window, the tokenizer, where the prompt count, the fixed part of every request and the scale of
//! the counts come from, where strategies may compress).

use super::model_counter::CounterHandle;
use super::window::{TokenLimit, Tokenizer, FROM_RECORDING};
use crate::compress::callers::OverflowGuard;
use serde::{Deserialize, Serialize};

/// What the trigger sees as `getLastPromptTokenCount()` between requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptCountSource {
    /// The replayed request (system prompt + tools + history + pending turn) counted with the replay's
    /// tokenizer: what the API would report for the request the replay sends.
    #[default]
    #[serde(alias = "tiktoken")]
    Measured,
    /// The conversation's recorded API counts while the history is as recorded, for conversations whose
    /// counts measure the context the replay holds
    /// ([`PromptCountOrigin::counts_replayed_context`](super::window::PromptCountOrigin));
    /// the measured request otherwise and once a compression has changed the history.
    Recorded,
    /// The reference heuristic over the stored history plus the measured system prompt and tools.
    Heuristic,
}

impl PromptCountSource {
    pub fn name(self) -> &'static str {
        match self {
            PromptCountSource::Measured => "measured",
            PromptCountSource::Recorded => FROM_RECORDING,
            PromptCountSource::Heuristic => "heuristic",
        }
    }
}

/// Where a strategy may compress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompressAt {
    /// Before every request, by the strategy's own trigger (its policy).
    #[default]
    Own,
    /// Only before the requests where the recording holds the agent's own compactions, and forced there
    /// (as `/compress`): every strategy compresses exactly where the agent did, so the comparison isolates
    /// what each one keeps. Conversations without recorded compactions are never compressed.
    Recorded,
}

impl CompressAt {
    pub fn is_own(&self) -> bool {
        *self == CompressAt::Own
    }
}

/// Where the fixed part of every request (system prompt, tool declarations, instruction files: what the
/// agent sends besides the history) comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverheadSource {
    /// The conversation's recorded system instruction and tool declarations, measured with the tokenizer;
    /// `system_prompt_tokens` / `tool_declaration_tokens` for what it does not record.
    #[default]
    Measured,
    /// The recorded usage: the first recorded request's prompt tokens minus the replay's size of the history that
    /// request carried, never below 0 (the provider's count of everything the agent sent besides the history: system
    /// prompt, tools, instruction files, environment). Conversations without usage that measures the replayed context
    /// ([`PromptCountOrigin::counts_replayed_context`](super::window::PromptCountOrigin)) are measured instead.
    Recorded,
}

impl OverheadSource {
    pub fn is_measured(&self) -> bool {
        *self == OverheadSource::Measured
    }
}

/// A factor on every count of the tokenizer (each Content, a measured system prompt or tool list, a summary): written
/// as a positive number, or `"recorded"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TokenScale {
    /// A fixed factor; 1 (the default) leaves the counts as they are.
    Factor(f64),
    /// Calibrated per conversation from its recorded usage ([`calibrated_scale`](super::counting::calibrated_scale)):
    /// the least-squares slope of the agent's recorded request sizes over the replay's measured history, over the
    /// requests before the agent's first compaction, counted from the first recorded request. A fit to the recording,
    /// not a measurement: it stands for the provider's tokenizer against the replay's and for what the recording does
    /// not hold. 1 where the conversation has fewer than two comparable counts.
    Recorded,
}

impl Default for TokenScale {
    fn default() -> Self {
        TokenScale::Factor(1.0)
    }
}

impl TokenScale {
    pub fn is_one(&self) -> bool {
        *self == TokenScale::Factor(1.0)
    }
}

impl Serialize for TokenScale {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TokenScale::Factor(f) => s.serialize_f64(*f),
            TokenScale::Recorded => s.serialize_str(FROM_RECORDING),
        }
    }
}

impl<'de> Deserialize<'de> for TokenScale {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let bad = |shown: String| {
            serde::de::Error::custom(format!("token_scale `{shown}`: expected a positive number or `{FROM_RECORDING}`"))
        };
        match Raw::deserialize(d)? {
            Raw::Number(f) if f.is_finite() && f > 0.0 => Ok(TokenScale::Factor(f)),
            Raw::Number(f) => Err(bad(f.to_string())),
            Raw::Text(t) if t.trim() == FROM_RECORDING => Ok(TokenScale::Recorded),
            Raw::Text(t) => Err(bad(t)),
        }
    }
}

/// Replay settings that do not depend on the strategy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySettings {
    /// Simulated context window (tokens, or relative to each conversation: `"peak:F"`, …), for the strategies'
    /// triggers and the overflow guard; each session gets it resolved for its conversation.
    pub token_limit: TokenLimit,
    /// The summarizer's output limit, which every strategy's summary requests carry. Set from `[llm]
    /// max_output_tokens` when a config is read (`[replay]` does not take it); not written into plans, whose
    /// point ids hash it for the strategies that call the summarizer (`StrategySpec::id_form`).
    #[serde(skip)]
    pub max_output_tokens: Option<u32>,
    pub prompt_count_source: PromptCountSource,
    /// The tokenizer every request size is counted with.
    pub tokenizer: Tokenizer,
    /// Tokens of the agent's system prompt and tool declarations, for conversations that record none (a
    /// recorded system instruction or tool list is measured with the tokenizer instead).
    pub system_prompt_tokens: u64,
    pub tool_declaration_tokens: u64,
    /// Where the fixed part of every request comes from: measured and configured as above, or from the
    /// recorded usage.
    #[serde(skip_serializing_if = "OverheadSource::is_measured")]
    pub overhead: OverheadSource,
    /// A factor on every count of the tokenizer, or calibrated per conversation from its recorded usage.
    #[serde(skip_serializing_if = "TokenScale::is_one")]
    pub token_scale: TokenScale,
    /// Recorded model-turn indices before which the user types `/compress`.
    pub manual_compress_turns: Vec<usize>,
    /// Where strategies may compress: by their own trigger, or only at the agent's recorded compactions.
    #[serde(skip_serializing_if = "CompressAt::is_own")]
    pub compress_at: CompressAt,
    pub overflow_guard: OverflowGuard,
    /// Text of the environment turn the agent's chat starts with (`None`: none).
    pub env_text: Option<String>,
    /// Keep summary texts in the events (needed by probes and reports).
    pub keep_summaries: bool,
    /// The counter of a model tokenizer ([`Tokenizer::Model`]), supplied by the caller: runtime state, not a
    /// setting (never serialised; a plan records the tokenizer's name only).
    #[serde(skip)]
    pub counter: CounterHandle,
}

impl Default for ReplaySettings {
    fn default() -> Self {
        ReplaySettings {
            token_limit: TokenLimit::default(),
            max_output_tokens: None,
            prompt_count_source: PromptCountSource::Measured,
            tokenizer: Tokenizer::O200k,
            system_prompt_tokens: 0,
            tool_declaration_tokens: 0,
            overhead: OverheadSource::Measured,
            token_scale: TokenScale::default(),
            manual_compress_turns: Vec::new(),
            compress_at: CompressAt::Own,
            overflow_guard: OverflowGuard::After,
            env_text: None,
            keep_summaries: true,
            counter: CounterHandle::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_scales_are_numbers_or_taken_from_the_recording() {
        #[derive(Deserialize)]
        struct T {
            s: TokenScale,
        }
        let parse = |t: &str| toml::from_str::<T>(&format!("s = {t}")).map(|t| t.s);
        assert_eq!(parse("\"recorded\"").unwrap(), TokenScale::Recorded);
        assert_eq!(parse("1.25").unwrap(), TokenScale::Factor(1.25));
        for bad in ["0", "-1.0", "\"twice\""] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("token_scale") && e.contains("positive number"), "{bad}: {e}");
        }
        assert_eq!(serde_json::to_string(&TokenScale::Recorded).unwrap(), "\"recorded\"");
        // Unset, neither setting is written into plans: their point ids and bytes stay as they were.
        let plain = serde_json::to_string(&ReplaySettings::default()).unwrap();
        assert!(!plain.contains("overhead") && !plain.contains("token_scale"), "{plain}");
    }

    #[test]
    fn the_recorded_prompt_count_source_is_named_as_configured() {
        for s in [PromptCountSource::Measured, PromptCountSource::Recorded, PromptCountSource::Heuristic] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.name()));
        }
    }
}
