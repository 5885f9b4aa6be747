//! The built-in strategies, one file each. To add one: write `NAME.rs` implementing
//! [`Strategy`] and add one line to [`builtin`] (see `harness/ARCHITECTURE.md`).

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
pub mod reference_grid;
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

#[cfg(test)]
mod tests {
    use super::common::fixtures::{run, spec_of, Recorder};
    use crate::compress::CompressionStatus;
    use crate::history;
    use crate::replay::strategy::Window;

    /// Every strategy whose trigger is a token count says where it is, and its session agrees: one token
    /// below, no compression; at the trigger, it acts.
    #[test]
    fn declared_triggers_are_where_sessions_fire() {
        let words = |i: usize| format!("turn {i}: {}", "the build log says the parser failed on line 42 ".repeat(40));
        let stored: Vec<history::Content> =
            (0..12).map(|i| history::text_content(if i % 2 == 0 { "user" } else { "model" }, &words(i))).collect();
        let llm = Recorder::new("<state_snapshot>summary</state_snapshot>");
        // About 6k tokens of history in a window of 8k.
        let window = 8_000;
        let specs = [
            super::drop_oldest::spec(super::drop_oldest::DropOldestParams { threshold: 0.5, keep_fraction: 0.3 }),
            spec_of("codex", serde_json::json!({})),
            spec_of("cline", serde_json::json!({"preserve_recent": 1000})),
            spec_of("cline", serde_json::json!({"mode": "truncate"})),
            spec_of("opencode", serde_json::json!({"prune": false, "reserved": 1000})),
            spec_of("langchain", serde_json::json!({"max_tokens_before_summary": 3000, "messages_to_keep": 4})),
            spec_of("goose", serde_json::json!({})),
        ];
        for spec in specs {
            let trigger = spec.trigger_tokens(window).unwrap_or_else(|| panic!("{spec:?}: no trigger"));
            let status = |last: u64| {
                let mut s = spec.compressor().start(Window { token_limit: window, max_output_tokens: None }.into());
                run(s.as_mut(), &stored, last, &llm).info.compression_status
            };
            assert_eq!(status(trigger - 1), CompressionStatus::Noop, "{} below {trigger}", spec.kind());
            assert_ne!(status(trigger), CompressionStatus::Noop, "{} at {trigger}", spec.kind());
        }
        // Event-count and budget triggers declare none.
        let masking = super::observation_masking::spec(5, "[omitted]");
        let (openhands, aider) = (spec_of("openhands", serde_json::json!({})), spec_of("aider", serde_json::json!({})));
        for spec in [masking, openhands, aider, super::none::spec()] {
            assert_eq!(spec.trigger_tokens(window), None, "{}", spec.kind());
        }
    }
}
