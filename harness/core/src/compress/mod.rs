//! The reference compressor (a port of Gemini CLI's `ChatCompressionService`) and its pieces.

pub mod callers;
pub mod curated;
pub mod env_context;
pub mod prompts;
pub mod service;
pub mod split;
pub mod truncate;
pub mod ui;

use serde::{Deserialize, Serialize};

pub use callers::{Caller, CallerKind, HistoryUpdate, Latch, OverflowGuard};
pub use prompts::CompressionPrompts;
pub use service::{
    compress, js_trim, CompressEnv, CompressError, CompressOutcome, CompressRequest, CompressSettings, CompressTrace,
    FailurePath, LlmCallRecord,
};
pub use split::{find_compress_split_point, SplitVariant};
pub use truncate::{
    format_truncated_tool_output, truncate_history_to_budget, FsToolOutputStore, MemoryToolOutputStore,
    ToolOutputError, ToolOutputStore, TruncationSettings, TruncationVariant,
};

/// `CompressionStatus`, with the reference's numeric values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CompressionStatus {
    Compressed = 1,
    #[serde(rename = "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT")]
    FailedInflatedTokenCount = 2,
    #[serde(rename = "COMPRESSION_FAILED_TOKEN_COUNT_ERROR")]
    FailedTokenCountError = 3,
    #[serde(rename = "COMPRESSION_FAILED_EMPTY_SUMMARY")]
    FailedEmptySummary = 4,
    #[default]
    Noop = 5,
    ContentTruncated = 6,
}

impl CompressionStatus {
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            CompressionStatus::Compressed => "COMPRESSED",
            CompressionStatus::FailedInflatedTokenCount => "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT",
            CompressionStatus::FailedTokenCountError => "COMPRESSION_FAILED_TOKEN_COUNT_ERROR",
            CompressionStatus::FailedEmptySummary => "COMPRESSION_FAILED_EMPTY_SUMMARY",
            CompressionStatus::Noop => "NOOP",
            CompressionStatus::ContentTruncated => "CONTENT_TRUNCATED",
        }
    }
}

/// `ChatCompressionInfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressionInfo {
    pub original_token_count: u64,
    pub new_token_count: u64,
    pub compression_status: CompressionStatus,
}
