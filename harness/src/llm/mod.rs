//! The LLM layer: one trait, several backends, a record/replay cache in front of them.

mod scripted;
mod types;

pub use scripted::ScriptedModel;
pub use types::{GenerationParams, LanguageModel, LlmError, LlmRequest, LlmResponse, RequestLabel, Usage};
