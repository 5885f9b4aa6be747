//! The in-memory conversation model (kept free of file-system and CLI code so the importers can be built
//! alone, e.g. by the fuzz targets).

use crate::history::Content;
use crate::json::Value;

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

/// What a recorded prompt token count counted: each importer reads it from one field of its format, so the
/// origin follows from the importer (`meta.format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
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

    pub fn name(self) -> &'static str {
        match self {
            PromptCountOrigin::None => "none",
            PromptCountOrigin::GeminiApi => "gemini-api",
            PromptCountOrigin::ClaudeCodeApi => "claude-code-api",
            PromptCountOrigin::CodexApi => "codex-api",
            PromptCountOrigin::AiderSent => "aider-sent",
            PromptCountOrigin::Unknown => "unknown",
        }
    }

    /// Whether the count measures the context a replay of the recorded history holds (so a replay may use
    /// it for the trigger while the history is as recorded).
    pub fn counts_replayed_context(self) -> bool {
        matches!(self, PromptCountOrigin::GeminiApi | PromptCountOrigin::ClaudeCodeApi | PromptCountOrigin::CodexApi)
    }
}
