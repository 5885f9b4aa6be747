//! A conversation's input: one recorded conversation as replay needs it (its history and what the
//! recording says about the requests), borrowed from the dataset. Not a setting: it changes with every
//! conversation of a run, the settings do not.

use super::strategy::{CacheUsage, RecordedCompaction};
use super::window::PromptCountOrigin;
use crate::history::Content;
use crate::json::Value;
use crate::tokens::ImageBilling;

/// One recorded conversation as replay needs it.
#[derive(Clone, Copy, Debug)]
pub struct ReplayInput<'a> {
    pub id: &'a str,
    pub history: &'a [Content],
    /// Prompt token counts the API reported, aligned with `history` (at model turns).
    pub recorded_prompt_tokens: &'a [Option<u64>],
    /// What those counts measured.
    pub prompt_count_origin: PromptCountOrigin,
    /// The cache traffic of those requests, aligned with `history` (empty when the source records none).
    pub recorded_cache: &'a [Option<CacheUsage>],
    /// The agent's system prompt and tool declarations, when recorded (part of every request).
    pub system_instruction: Option<&'a str>,
    pub tools: Option<&'a Value>,
    /// The agent's own compactions, sorted by `at` (handed to the session, see
    /// [`SessionContext`](super::strategy::SessionContext)).
    pub recorded_compactions: &'a [RecordedCompaction],
    /// The model's context window as the recording states it (Codex: `model_context_window`), if it does.
    pub context_window: Option<u64>,
    /// Whose rule counts the history's images (and PDFs): the provider the agent's requests went to, from
    /// the conversation's source format ([`ImageBilling::of_format`]).
    pub image_billing: ImageBilling,
}

impl<'a> ReplayInput<'a> {
    /// A bare history: no recorded counts, system prompt or tools.
    pub fn history(id: &'a str, history: &'a [Content]) -> Self {
        ReplayInput {
            id,
            history,
            recorded_prompt_tokens: &[],
            prompt_count_origin: PromptCountOrigin::None,
            recorded_cache: &[],
            system_instruction: None,
            tools: None,
            recorded_compactions: &[],
            context_window: None,
            image_billing: ImageBilling::default(),
        }
    }
}
