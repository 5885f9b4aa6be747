//! The built-in strategies, one file each. To add one: write `NAME.rs` implementing
//! [`Strategy`](crate::replay::Strategy) and add one line to [`builtin`] (see `harness/ARCHITECTURE.md`).

pub mod aider;
pub mod cline;
pub mod codex;
pub mod common;
pub mod drop_oldest;
pub mod exec;
pub mod gemini;
pub mod goose;
pub mod langchain;
pub mod none;
pub mod observation_masking;
pub mod opencode;
pub mod openhands;
pub mod recorded;
pub mod truncation_only;

use crate::replay::strategy::Strategy;
use std::sync::Arc;

/// The registry's initial list, in the order `compactbench strategies` prints it.
pub fn builtin() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(gemini::Gemini),
        Arc::new(truncation_only::TruncationOnly),
        Arc::new(observation_masking::ObservationMasking),
        Arc::new(drop_oldest::DropOldest),
        Arc::new(none::NoCompression),
        Arc::new(codex::Codex),
        Arc::new(opencode::OpenCode),
        Arc::new(cline::Cline),
        Arc::new(goose::Goose),
        Arc::new(aider::Aider),
        Arc::new(openhands::OpenHands),
        Arc::new(openhands::OpenHandsAmortized),
        Arc::new(langchain::LangChain),
        Arc::new(exec::Exec),
        Arc::new(recorded::Recorded),
    ]
}
