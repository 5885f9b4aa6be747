//! The one model interface the reference and the strategies call ([`LanguageModel`]), and a scripted model
//! for tests. The backends (embedded model, Gemini, OpenAI-compatible servers, the extractive baseline) and
//! the record/replay cache live in the `compactbench-llm` crate.

mod scripted;
mod types;

pub use scripted::ScriptedModel;
pub use types::{GenerationParams, LanguageModel, LlmError, LlmRequest, LlmResponse, RequestLabel, Usage};
