//! The in-memory conversation model (kept free of file-system and CLI code so the importers can be built
//! alone, e.g. by the fuzz targets).

use crate::history::Content;
use crate::json::Value;
pub use crate::replay::CacheUsage;
pub use crate::replay::PromptCountOrigin;
pub use crate::replay::RecordedCompaction;
use crate::replay::ReplayInput;

/// Where a conversation came from. Importers fill `id`, `format` and `extra`; provenance (source, licence,
/// repository, commit, path) is attached by the caller that knows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConversationMeta {
    /// Stable id, unique within its dataset; also the file stem.
    pub id: String,
    /// Dataset / source name (`mini-swe-agent`, `tau-bench`, …).
    pub source: String,
    /// Importer format name (`import::Format::name`).
    pub format: String,
    pub license: Option<String>,
    /// `owner/name` of the repository the recording was published in.
    pub repository: Option<String>,
    pub commit: Option<String>,
    /// Path of the original file inside `repository` (or as given on the command line).
    pub path: Option<String>,
    /// Human-readable title (session start time, task id, …).
    pub title: Option<String>,
    /// JSON layout of a `Content[]` input, so exporting the history reproduces it byte for byte.
    pub source_layout: Option<super::layout::Layout>,
    /// Format-specific facts worth keeping (exit status, reward, session id, …): a JSON object.
    pub extra: Option<Value>,
}

/// One recorded conversation ready for replay.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conversation {
    pub meta: ConversationMeta,
    pub system_instruction: Option<String>,
    /// Tool declarations as the source recorded them (a JSON array), when it did.
    pub tools: Option<Value>,
    pub history: Vec<Content>,
    /// Prompt token count the API reported for the request that produced each Content (aligned with
    /// `history`; `None` where unknown). Empty when the source records no counts at all.
    pub recorded_prompt_tokens: Vec<Option<u64>>,
    /// The prompt-cache traffic of the request that produced each Content (aligned with `history`; `None`
    /// where unknown): part of its recorded prompt tokens. Empty when the source records none (all but
    /// Claude Code).
    pub recorded_cache: Vec<Option<CacheUsage>>,
    /// The agent's own compactions, in history order (`at` ascending); empty for sources that record none.
    pub recorded_compactions: Vec<RecordedCompaction>,
}

impl Conversation {
    /// True when any recorded prompt token count is known.
    pub fn has_recorded_tokens(&self) -> bool {
        self.recorded_prompt_tokens.iter().any(Option::is_some)
    }

    /// Where the recorded prompt token counts came from (`None` when there are none).
    pub fn prompt_count_origin(&self) -> PromptCountOrigin {
        if self.has_recorded_tokens() {
            PromptCountOrigin::of_format(&self.meta.format)
        } else {
            PromptCountOrigin::None
        }
    }
}

impl Conversation {
    /// The session appended to itself: `copies` times the history, its recorded token counts and its
    /// recorded compactions (each copy's at its own offset). Scaling measurements replay a session of
    /// twice the length whose every part is real.
    pub fn repeated(&self, copies: usize) -> Conversation {
        let copies = copies.max(1);
        let len = self.history.len();
        let mut out = self.clone();
        out.history = self.history.iter().cycle().take(len * copies).cloned().collect();
        if !self.recorded_prompt_tokens.is_empty() {
            out.recorded_prompt_tokens =
                (0..copies).flat_map(|_| self.recorded_prompt_tokens.iter().copied()).collect();
        }
        if !self.recorded_cache.is_empty() {
            out.recorded_cache = (0..copies).flat_map(|_| self.recorded_cache.iter().copied()).collect();
        }
        out.recorded_compactions = (0..copies)
            .flat_map(|k| {
                self.recorded_compactions.iter().map(move |c| RecordedCompaction { at: c.at + k * len, ..c.clone() })
            })
            .collect();
        out
    }

    /// This conversation as a replay reads it (`id` names it in results).
    pub fn replay_input<'a>(&'a self, id: &'a str) -> ReplayInput<'a> {
        ReplayInput {
            id,
            history: &self.history,
            recorded_prompt_tokens: &self.recorded_prompt_tokens,
            prompt_count_origin: self.prompt_count_origin(),
            recorded_cache: &self.recorded_cache,
            system_instruction: self.system_instruction.as_deref(),
            tools: self.tools.as_ref(),
            recorded_compactions: &self.recorded_compactions,
            context_window: self.context_window(),
            image_billing: self.image_billing(),
        }
    }

    /// Whose rule counts the conversation's images: the provider its source format's agent sends to
    /// (Claude Code: Anthropic, Codex: OpenAI, every other format: Gemini).
    pub fn image_billing(&self) -> crate::tokens::ImageBilling {
        crate::tokens::ImageBilling::of_format(&self.meta.format)
    }

    /// The session's working directory as the recording gives it (`meta.extra.cwd`: Claude Code, Codex): the
    /// root its relative paths are relative to.
    pub fn cwd(&self) -> Option<&str> {
        self.meta.extra.as_ref()?.get(CWD_KEY)?.as_str()
    }

    /// The model's context window as the recording states it (`meta.extra.model_context_window`: Codex
    /// rollouts), if it does.
    pub fn context_window(&self) -> Option<u64> {
        let n = self.meta.extra.as_ref()?.get(CONTEXT_WINDOW_KEY)?.as_f64()?;
        (n.is_finite() && n >= 1.0).then_some(n as u64)
    }
}

/// The key of `meta.extra` under which an importer records the model's context window the recording
/// states.
pub const CONTEXT_WINDOW_KEY: &str = "model_context_window";

/// The key of `meta.extra` under which an importer records the session's working directory.
pub const CWD_KEY: &str = "cwd";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{model_text, user_text};

    #[test]
    fn a_repeated_session_is_the_session_then_itself_with_each_compaction_at_its_own_offset() {
        let conversation = Conversation {
            history: vec![user_text("a"), model_text("b"), user_text("c")],
            recorded_prompt_tokens: vec![Some(10), None, Some(30)],
            recorded_compactions: vec![RecordedCompaction { at: 2, summary: "s".into(), ..Default::default() }],
            ..Default::default()
        };
        let twice = conversation.repeated(2);
        assert_eq!(twice.history.len(), 6);
        assert_eq!(twice.history[3..], conversation.history[..]);
        assert_eq!(twice.recorded_prompt_tokens, [Some(10), None, Some(30), Some(10), None, Some(30)]);
        assert_eq!(twice.recorded_compactions.iter().map(|c| c.at).collect::<Vec<_>>(), [2, 5]);
        assert_eq!(twice.recorded_compactions[1].summary, "s");
        assert_eq!(conversation.repeated(1), conversation);
        assert_eq!(conversation.repeated(0), conversation);
        let unknown = Conversation { recorded_prompt_tokens: Vec::new(), ..conversation.clone() };
        assert!(unknown.repeated(3).recorded_prompt_tokens.is_empty());
    }
}
