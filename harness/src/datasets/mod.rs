//! Datasets: recorded agent conversations in one canonical format, importers from the agent formats they
//! were recorded in, corpus statistics and structural validation.
//!
//! A conversation file is a JSON object (see `datasets/README.md`) holding a Gemini `Content[]` history plus
//! the system instruction, tool declarations, recorded prompt token counts and provenance. Importers are
//! pure functions from bytes to [`Conversation`]s so they can be fuzzed; the CLI in [`cli`] adds files.

pub mod cli;
mod error;
mod file;
pub mod import;
pub mod layout;
mod stats;
mod validate;

#[cfg(test)]
mod tests;

pub use error::DatasetError;
pub use file::{
    conversation_from_value, conversation_to_value, export_history, find_conversations, load_conversation,
    load_dataset, parse_conversation, write_conversation, Dataset, CONVERSATION_FORMAT, MANIFEST_FILE,
};
pub use layout::Layout;
pub use stats::{manifest_value, write_manifest, ConversationStats, Totals};
pub use validate::{validate_conversation, Problem};

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
    /// Importer format name ([`import::Format::name`]).
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
    pub source_layout: Option<Layout>,
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
}
