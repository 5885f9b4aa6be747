//! Datasets: recorded agent conversations in one canonical format, importers from the agent formats they
//! were recorded in, corpus statistics and structural validation.
//!
//! A conversation file is a JSON object (see `datasets/README.md`) holding a Gemini `Content[]` history plus
//! the system instruction, tool declarations, recorded prompt token counts and provenance. Importers are
//! pure functions from bytes to [`Conversation`]s so they can be fuzzed; the `compactbench` CLI adds files.

// The data model every module below uses through `crate::json` / `crate::history`.
use compactbench_core::{fsutil, history, json, replay, tokens};

mod error;
mod file;
pub mod import;
pub mod layout;
pub mod manifest;
mod model;
pub mod raw;
mod stats;
mod validate;

#[cfg(test)]
mod tests;

pub use error::DatasetError;
pub use file::{
    conversation_from_value, conversation_to_value, export_history, find_conversations, load_conversation,
    load_conversation_mapped, load_dataset, parse_conversation, write_conversation, Dataset, CONVERSATION_FORMAT,
    MANIFEST_FILE,
};
pub use layout::Layout;
pub use model::{CacheUsage, Conversation, ConversationMeta, PromptCountOrigin, RecordedCompaction};
pub use stats::{manifest_value, write_manifest, ConversationStats, Totals};
pub use validate::{validate_conversation, Problem};
