//! How a replay counts tokens: the tokenizer (with the counter a model tokenizer needs), and the fixed part
//! of every request, the system prompt and the tool declarations.

use super::counter::{self, CountError, TokenCounter};
use super::window::Tokenizer;
use super::{ReplayInput, ReplaySettings};
use crate::history::Content;
use crate::tokens::{self, Estimator};

/// How a replay counts: the tokenizer, with the counter a model tokenizer needs.
#[derive(Clone, Copy)]
pub(super) enum Counting<'c> {
    O200k,
    Heuristic,
    Model(&'c dyn TokenCounter),
}

impl<'c> Counting<'c> {
    pub(super) fn of(settings: &'c ReplaySettings) -> Result<Self, CountError> {
        Ok(match &settings.tokenizer {
            Tokenizer::O200k => Counting::O200k,
            Tokenizer::Heuristic => Counting::Heuristic,
            Tokenizer::Model(spec) => Counting::Model(settings.counter.get(spec)?),
        })
    }

    /// Tokens of a text (a model counts it as one user Content).
    pub(super) async fn text(self, text: &str) -> Result<u64, CountError> {
        match self {
            Counting::O200k => Ok(tokens::o200k_count_text(text)),
            Counting::Heuristic => Ok(Estimator::Current.text(&crate::json::JsStr::new(text))),
            Counting::Model(m) => m.count(&counter::text_as_content(text)).await,
        }
    }

    /// Tokens of one Content (0 with the heuristic, which [`Measure::est`](super::stored::Measure::est)
    /// holds).
    pub(super) async fn content(self, c: &Content) -> Result<u64, CountError> {
        match self {
            Counting::O200k => Ok(tokens::o200k_count_history(std::slice::from_ref(c))),
            Counting::Heuristic => Ok(0),
            Counting::Model(m) => m.count(c).await,
        }
    }
}

/// Tokens every request carries besides the history: the recorded system instruction and tool
/// declarations measured with the tokenizer, or the configured sizes where the conversation has none.
pub async fn request_overhead(input: &ReplayInput<'_>, settings: &ReplaySettings) -> Result<u64, CountError> {
    overhead(input, settings, Counting::of(settings)?).await
}

pub(super) async fn overhead(
    input: &ReplayInput<'_>,
    settings: &ReplaySettings,
    counting: Counting<'_>,
) -> Result<u64, CountError> {
    let system = match input.system_instruction.filter(|s| !s.is_empty()) {
        Some(s) => counting.text(s).await?,
        None => settings.system_prompt_tokens,
    };
    let tools = match input.tools {
        Some(t) => {
            let mut text = String::new();
            crate::json::write_compact(t, crate::json::Numbers::Js, &mut text);
            counting.text(&text).await?
        }
        None => settings.tool_declaration_tokens,
    };
    Ok(system + tools)
}
