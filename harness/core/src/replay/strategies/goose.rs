//! Goose's auto-compaction, modelled from `block/goose` `crates/goose/src/context_mgmt/mod.rs` @`0036b819`
//! (`DEFAULT_COMPACTION_THRESHOLD = 0.8`, `compact_messages`) and the prompt
//! `crates/goose/src/prompts/compaction.md` @`11453df8` (`configs/prompts/goose.txt`).
//!
//! - Trigger: last request / window > `threshold` (≤ 0 or ≥ 1 disables, as `GOOSE_AUTO_COMPACT_THRESHOLD`).
//! - The whole agent-visible history is serialised into the *system* prompt; the user turn asks for the
//!   summary. When that request does not fit the window, 0, 10, 20, 50 then 100 % of the tool responses are
//!   removed "middle-out" and it is tried again; if even 100 % does not fit, compaction fails (the history
//!   is left as it is, and the window overflows).
//! - New history: the summary (a user message) with the continuation text, then the last user text
//!   message again (auto mode).

use super::common::{self, call, is_plain_user, pieces, section, Piece};
use super::reference_grid::THRESHOLD;
use crate::history;
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct Goose;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct GooseParams {
    threshold: f64,
}

impl Strategy for Goose {
    fn name(&self) -> &'static str {
        "goose"
    }
    fn about(&self) -> &'static str {
        "Goose: above 0.8 of the window the whole history is summarised, the last user message kept; middle-out tool-response removal on overflow"
    }
    fn system(&self) -> Option<&'static str> {
        Some("Goose")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![Knob::number(
            THRESHOLD,
            0.8,
            Bound::None,
            Bound::None,
            "compact above this share of the window (≤0 or ≥1: off)",
        )
        .labelled("t")
        .headed("thr")]
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }

    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        let p: GooseParams = parse_params(self.name(), params)?;
        let s = |n: &str| section("goose", &format!("goose:{n}"));
        let prompts = [s("compaction_system")?, s("do_compact_user")?, s("continuation_conversation")?];
        Ok(Arc::new(GooseCompressor { p, prompts }))
    }
}

struct GooseCompressor {
    p: GooseParams,
    prompts: [String; 3],
}

impl Compressor for GooseCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(GooseSession { p: self.p.clone(), prompts: self.prompts.clone(), window: conversation.window })
    }
    /// Compacts strictly above threshold × window (off outside (0, 1)).
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        let t = self.p.threshold;
        (t > 0.0 && t < 1.0).then(|| (t * token_limit as f64).floor() as u64 + 1)
    }
}

struct GooseSession {
    p: GooseParams,
    prompts: [String; 3],
    window: Window,
}

/// The shares of tool responses removed on successive overflow retries.
pub const REMOVAL_STEPS: [u32; 5] = [0, 10, 20, 50, 100];

/// The history as Goose embeds it in the system prompt, without the tool responses at `removed`.
fn serialize(pieces: &[Piece], removed: &[bool]) -> String {
    let mut lines = Vec::new();
    let mut r = 0;
    for p in pieces {
        match p {
            Piece::User(t) => lines.push(format!("[user]: {t}")),
            Piece::Assistant(t) => lines.push(format!("[assistant]: {t}")),
            Piece::ToolCall { name, args } => lines.push(format!("[assistant]: tool_request({name}): {args}")),
            Piece::ToolResult { text, .. } => {
                if !removed[r] {
                    lines.push(format!("tool_response: {text}"));
                }
                r += 1;
            }
        }
    }
    lines.join("\n")
}

/// Which of `n` tool responses to remove for `percent`: middle-out, the middle one first.
pub fn middle_out(n: usize, percent: u32) -> Vec<bool> {
    let k = (n * percent as usize).div_ceil(100).min(n);
    let mut removed = vec![false; n];
    let mid = n / 2;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (i.abs_diff(mid), i));
    for &i in &order[..k] {
        removed[i] = true;
    }
    removed
}

#[async_trait]
impl CompressorSession for GooseSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        let t = self.p.threshold;
        let enabled = t > 0.0 && t < 1.0;
        let ratio = orig as f64 / self.window.token_limit as f64;
        if turn.stored.is_empty() || !(turn.force || (enabled && ratio > t)) {
            return Ok(TurnOutcome::noop(orig));
        }
        let all = pieces(turn.stored);
        let n_results = all.iter().filter(|p| matches!(p, Piece::ToolResult { .. })).count();
        let user = history::user_text(&self.prompts[1]);
        let mut system = None;
        for percent in REMOVAL_STEPS {
            let s = self.prompts[0].replace("{{ messages }}", &serialize(&all, &middle_out(n_results, percent)));
            if common::text_tokens(&s) + common::content_tokens(&user) <= self.window.token_limit {
                system = Some(s);
                break;
            }
        }
        // "context limit exceeded even after removing all tool responses": nothing changes.
        let Some(system) = system else { return Ok(TurnOutcome::noop(orig)) };
        let id = format!("{}-compact", turn.prompt_id);
        let (summary, record) = call(llm, Some(system), vec![user], &id, self.window.max_output_tokens).await?;
        let mut new = vec![history::user_text(&format!("{summary}\n\n{}", self.prompts[2]))];
        if let Some(last) = turn.stored.iter().rev().find(|c| is_plain_user(c) && !history::visible_text(c).is_empty())
        {
            new.push(history::user_text(&history::visible_text(last)));
        }
        Ok(common::summarized(orig, &summary, vec![record], turn.stored.len(), 0, new))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::fixtures::*;
    use super::*;

    #[test]
    fn middle_out_removes_from_the_middle() {
        assert_eq!(middle_out(5, 0), [false; 5]);
        assert_eq!(middle_out(5, 20), [false, false, true, false, false]);
        assert_eq!(middle_out(5, 50), [false, true, true, true, false]);
        assert_eq!(middle_out(5, 100), [true; 5]);
    }

    #[test]
    fn summarises_everything_above_eighty_percent_and_keeps_the_last_user_message() {
        let h = session(3, 40);
        let llm = Recorder::new("## Goal\nfix");
        let mut s = session_of("goose", serde_json::json!({}), 1000);
        assert!(run(s.as_mut(), &h, 800, &llm).replaced.is_none(), "strictly above 0.8");
        let new = run(s.as_mut(), &h, 801, &llm).replaced.unwrap();
        assert_eq!(new.len(), 2);
        assert!(text_of(&new[0]).starts_with("## Goal\nfix\n\nYour context was compacted."));
        assert_eq!(text_of(&new[1]), "request 2: fix src/file2.rs");
        let sent = &llm.sent()[0];
        let system = sent.system_instruction.as_deref().unwrap();
        assert!(system.contains("[user]: request 0") && system.contains("tool_response: 2:xxxx"));
        assert!(system.contains("[assistant]: tool_request(read_file): {\"path\":\"src/file0.rs\"}"));
        assert_eq!(
            text_of(&sent.contents[0]),
            "Please summarize the conversation history provided in the system prompt."
        );
    }

    #[test]
    fn tool_responses_go_middle_out_until_the_request_fits() {
        // Three ~500-token outputs and a ~450-token prompt in a 1,200-token window: 0 %, 10 % and 20 % (one
        // output) do not fit, 50 % (two: the middle one, then the oldest) does.
        let h = session(3, 2000);
        let llm = Recorder::new("S");
        let mut s = session_of("goose", serde_json::json!({}), 1200);
        assert!(run(s.as_mut(), &h, 1100, &llm).replaced.is_some());
        let system = llm.sent()[0].system_instruction.clone().unwrap();
        assert!(system.contains("tool_response: 2:xx"), "the newest output stays");
        assert!(!system.contains("tool_response: 0:") && !system.contains("tool_response: 1:"));
        // With outputs the window cannot hold even without them (a huge user message), it gives up.
        let huge = vec![user(&"word ".repeat(2000)), model("ok")];
        let mut s = session_of("goose", serde_json::json!({}), 1000);
        assert!(run(s.as_mut(), &huge, 900, &llm).replaced.is_none());
        assert_eq!(llm.sent().len(), 1);
    }
}
