//! Cline's context management, two modes, modelled from `cline/cline`:
//!
//! - `summary` (the SDK, @`21cb8d25`, `sdk/packages/core/src/extensions/context/compaction-shared.ts`):
//!   at `COMPACTION_TRIGGER_RATIO = 0.9` of the window (Cline's name for the `threshold` knob, which was
//!   `trigger_ratio` here) the head is serialised and summarised (system `sdk_system`, one user message `sdk_summary_request` + previous summary + transcript, files read and
//!   edited listed); the newest `DEFAULT_PRESERVE_RECENT_TOKENS = 20,000` are kept verbatim.
//! - `truncate` (the classic rule-based fallback, @`0fe207c0`, `src/core/context/context-management/`):
//!   above `maxAllowedSize` (window − 27k/30k/40k for 64k/128k/200k windows, else
//!   `max(window − 40k, 0.8 × window)`) the first user/assistant pair is kept and half (`half`) or three
//!   quarters (`quarter` kept) of the messages after it are dropped, an even number so the roles still
//!   alternate.

use super::common::{self, call, pieces, section, Piece};
use super::reference_grid::THRESHOLD;
use crate::compress::CompressionStatus;
use crate::history::{self, Content};
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct Cline;

const SUMMARY_HEADER: &str = "[Cline compaction summary]";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Mode {
    Summary,
    Truncate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Keep {
    Half,
    Quarter,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct ClineParams {
    mode: Mode,
    /// Plans written before the rename call it `trigger_ratio`.
    #[serde(alias = "trigger_ratio")]
    threshold: f64,
    preserve_recent: u64,
    truncate_keep: Keep,
}

impl Strategy for Cline {
    fn name(&self) -> &'static str {
        "cline"
    }
    fn about(&self) -> &'static str {
        "Cline: summary of the head + recent tail (SDK), or the rule-based fallback: keep the first pair, drop ½ or ¾"
    }
    fn system(&self) -> Option<&'static str> {
        Some("Cline")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::choice(
                "mode",
                Mode::Summary,
                &["summary", "truncate"],
                "SDK summary or the classic rule-based truncation",
            )
            .labelled("mode"),
            Knob::number(
                THRESHOLD,
                0.9,
                Bound::Open(0.0),
                Bound::Closed(1.0),
                "summary mode: compact at this share of the window (COMPACTION_TRIGGER_RATIO)",
            )
            .renamed_from("trigger_ratio"),
            Knob::integer("preserve_recent", 20_000, 0, "summary mode: recent tokens kept verbatim"),
            Knob::choice(
                "truncate_keep",
                Keep::Half,
                &["half", "quarter"],
                "truncate mode: share of the later messages kept",
            ),
        ]
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }

    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        let p: ClineParams = parse_params(self.name(), params)?;
        let s = |n: &str| section("cline", &format!("cline:{n}"));
        let prompts = [
            s("sdk_system")?,
            s("sdk_summary_request")?,
            s("sdk_previous_summary_block")?,
            s("sdk_conversation_block")?,
        ];
        Ok(Arc::new(ClineCompressor { p, prompts }))
    }
}

struct ClineCompressor {
    p: ClineParams,
    /// system, summary request, previous-summary block, conversation block.
    prompts: [String; 4],
}

impl Compressor for ClineCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(ClineSession { p: self.p.clone(), prompts: self.prompts.clone(), window: conversation.window })
    }
    /// Summary mode: ⌈threshold × window⌉; truncate mode: the context-window guard's allowed size.
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        Some(match self.p.mode {
            Mode::Truncate => max_allowed_size(token_limit),
            Mode::Summary => threshold_trigger(self.p.threshold, token_limit),
        })
    }
}

struct ClineSession {
    p: ClineParams,
    /// system, summary request, previous-summary block, conversation block.
    prompts: [String; 4],
    window: Window,
}

/// `maxAllowedSize` of the classic context manager.
pub fn max_allowed_size(window: u64) -> u64 {
    match window {
        64_000 => window - 27_000,
        128_000 => window - 30_000,
        200_000 => window - 40_000,
        w => (w.saturating_sub(40_000)).max((w as f64 * 0.8) as u64),
    }
}

/// `getNextTruncationRange`: the Contents kept after dropping ½ or ¾ of those after the first pair.
fn truncated(stored: &[Content], keep: Keep) -> Option<Vec<Content>> {
    let start = 2.min(stored.len());
    let rest = stored.len() - start;
    let drop = match keep {
        Keep::Half => rest / 2,
        Keep::Quarter => rest * 3 / 4,
    };
    // An even number, so user and assistant turns still alternate.
    let drop = drop - drop % 2;
    if drop == 0 {
        return None;
    }
    let mut out = stored[..start].to_vec();
    out.extend_from_slice(&stored[start + drop..]);
    Some(out)
}

fn file_paths(h: &[Content]) -> (Vec<String>, Vec<String>) {
    let (mut read, mut edited) = (Vec::new(), Vec::new());
    for piece in pieces(h) {
        if let Piece::ToolCall { name, args } = piece {
            let Ok(serde_json::Value::Object(a)) = serde_json::from_str::<serde_json::Value>(&args) else { continue };
            let Some(path) = ["path", "file_path", "filename", "file"].iter().find_map(|k| a.get(*k)?.as_str()) else {
                continue;
            };
            let n = name.to_lowercase();
            let list = if n.contains("write") || n.contains("edit") || n.contains("replace") || n.contains("create") {
                &mut edited
            } else {
                &mut read
            };
            if !list.iter().any(|p| p == path) {
                list.push(path.to_string());
            }
        }
    }
    (read, edited)
}

fn serialize(h: &[Content]) -> String {
    pieces(h)
        .into_iter()
        .map(|p| match p {
            Piece::User(t) => format!("user: {t}"),
            Piece::Assistant(t) => format!("assistant: {t}"),
            Piece::ToolCall { name, args } => format!("assistant: [tool call {name}] {args}"),
            Piece::ToolResult { name, text } => format!("tool: [{name} result] {text}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl ClineSession {
    fn request(&self, previous: Option<&str>, head: &[Content]) -> String {
        let (read, edited) = file_paths(head);
        let list = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        let mut text = self.prompts[1]
            .replace("{read_files or \"none\"}", &list(&read))
            .replace("{edited_files or \"none\"}", &list(&edited));
        if let Some(prev) = previous {
            text.push_str("\n\n");
            text.push_str(&self.prompts[2].replace("{previous_summary}", prev));
        }
        let conversation = serialize(head);
        text.push_str("\n\n");
        text.push_str(&self.prompts[3].replace(
            "{serialized_conversation or \"(empty)\"}",
            if conversation.is_empty() { "(empty)" } else { &conversation },
        ));
        text
    }
}

#[async_trait]
impl CompressorSession for ClineSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        if self.p.mode == Mode::Truncate {
            if !turn.force && orig < max_allowed_size(self.window.token_limit) {
                return Ok(TurnOutcome::noop(orig));
            }
            return Ok(match truncated(turn.stored, self.p.truncate_keep) {
                Some(kept) => TurnOutcome::replaced(orig, common::tokens(&kept), CompressionStatus::Compressed, kept),
                None => TurnOutcome::noop(orig),
            });
        }
        if !turn.force && (orig as f64) < self.p.threshold * self.window.token_limit as f64 {
            return Ok(TurnOutcome::noop(orig));
        }
        let cut = common::tail_start_by_tokens(turn.stored, self.p.preserve_recent);
        let (mut head, tail) = turn.stored.split_at(cut);
        let previous = match head.first() {
            Some(c) if history::visible_text(c).starts_with(SUMMARY_HEADER) => {
                head = &head[1..];
                Some(history::visible_text(c)[SUMMARY_HEADER.len()..].trim_start().to_string())
            }
            _ => None,
        };
        if head.is_empty() {
            return Ok(TurnOutcome::noop(orig));
        }
        let request = vec![history::user_text(&self.request(previous.as_deref(), head))];
        let id = format!("{}-compaction", turn.prompt_id);
        let (summary, record) =
            call(llm, Some(self.prompts[0].clone()), request, &id, self.window.max_output_tokens).await?;
        let mut new = vec![history::user_text(&format!("{SUMMARY_HEADER}\n{summary}"))];
        new.extend_from_slice(tail);
        Ok(common::summarized(orig, &summary, vec![record], head.len(), tail.len(), new))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::fixtures::*;
    use super::*;

    #[test]
    fn classic_window_sizes() {
        assert_eq!(max_allowed_size(200_000), 160_000);
        assert_eq!(max_allowed_size(128_000), 98_000);
        assert_eq!(max_allowed_size(16_384), 13_107);
    }

    #[test]
    fn truncate_mode_keeps_the_first_pair_and_drops_half_or_three_quarters() {
        let h = session(4, 10); // 16 Contents: first pair + 14
        let llm = Recorder::new("unused");
        let mut s = session_of("cline", serde_json::json!({"mode": "truncate"}), 16_384);
        assert!(run(s.as_mut(), &h, 13_106, &llm).replaced.is_none());
        let kept = run(s.as_mut(), &h, 13_107, &llm).replaced.unwrap();
        // Half of 14 = 7, rounded down to 6 (even): 2 + 8 kept.
        assert_eq!(kept.len(), 10);
        assert_eq!(kept[..2], h[..2]);
        assert_eq!(kept[2..], h[8..]);
        let mut q = session_of("cline", serde_json::json!({"mode": "truncate", "truncate_keep": "quarter"}), 16_384);
        let kept = run(q.as_mut(), &h, 14_000, &llm).replaced.unwrap();
        // Three quarters of 14 = 10: 2 + 4 kept.
        assert_eq!(kept.len(), 6);
        assert_eq!(kept[2..], h[12..]);
        assert!(llm.sent().is_empty());
    }

    #[test]
    fn summary_mode_sends_the_head_with_its_files_and_keeps_the_recent_tail() {
        let h = session(4, 200);
        let llm = Recorder::new("## Goal\nfix");
        let mut s = session_of("cline", serde_json::json!({"preserve_recent": 150}), 1000);
        assert!(run(s.as_mut(), &h, 899, &llm).replaced.is_none());
        let new = run(s.as_mut(), &h, 900, &llm).replaced.unwrap();
        // The last round (~70 tokens) fits 150 tokens, two rounds do not.
        assert_eq!(new.len(), 1 + 4);
        assert_eq!(new[1..], h[12..]);
        let sent = &llm.sent()[0];
        assert!(sent.system_instruction.as_deref().unwrap().starts_with("Summarize the provided coding session"));
        let text = text_of(&sent.contents[0]);
        assert!(text.contains("Read: src/file0.rs, src/file1.rs, src/file2.rs"), "{text}");
        assert!(text.contains("Edited: none") && text.contains("Conversation:\nuser: request 0"));
        assert!(!text.contains("request 3"));
    }
}
