//! OpenAI Codex CLI's local compaction, modelled from `openai/codex` `codex-rs/core/src/compact.rs`
//! @`0100b103` (`build_compacted_history`), the trigger of `protocol/src/openai_models.rs`
//! (`auto_compact_token_limit = min(configured, 90 % of the window)`) and the prompt
//! `codex-rs/core/templates/compact/prompt.md` @`11baefb5` (`configs/prompts/codex.txt`).
//!
//! - Trigger: the last request ≥ `auto_compact_token_limit` = ⌊`threshold` × window⌋ (Codex: 90 % of the
//!   window; the knob was `trigger_fraction` here), or `/compress`.
//! - The summarizer gets the whole history with the prompt appended as a user turn; when that request does
//!   not fit the window, the oldest items are dropped until it does ("Trimmed N older conversation items").
//! - New history: the previous user messages, newest first, within `user_message_budget` tokens (the
//!   oldest kept one cut with a "tokens truncated" marker), in their original order, then one user message
//!   `"{summary_prefix}\n{summary}"`. Assistant turns, tool calls and tool outputs are dropped, and so are
//!   earlier summary messages (the new summary covers them).

use super::common::{self, call, clip_chars, is_plain_user, section, text_tokens};
use super::reference_grid::THRESHOLD;
use crate::history::{self, Content};
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct Codex;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct CodexParams {
    /// Plans written before the rename call it `trigger_fraction`.
    #[serde(alias = "trigger_fraction")]
    threshold: f64,
    user_message_budget: u64,
    summary_prompt: String,
}

impl Strategy for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }
    fn about(&self) -> &'static str {
        "Codex CLI: summary of the whole history; newest user messages kept up to a token budget; the rest dropped"
    }
    fn system(&self) -> Option<&'static str> {
        Some("Codex CLI")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::number(
                THRESHOLD,
                0.9,
                Bound::Open(0.0),
                Bound::Closed(1.0),
                "auto-compact at this share of the window (auto_compact_token_limit: 90 %)",
            )
            .renamed_from("trigger_fraction"),
            Knob::integer(
                "user_message_budget",
                20_000,
                0,
                "tokens of previous user messages kept (COMPACT_USER_MESSAGE_MAX_TOKENS)",
            ),
            prompt_knob("summary_prompt", "codex:prompt_handoff", "the compaction prompt"),
        ]
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }

    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        let p: CodexParams = parse_params(self.name(), params)?;
        let prompt = section(self.name(), &p.summary_prompt)?;
        let prefix = section(self.name(), "codex:summary_prefix")?;
        Ok(Arc::new(CodexCompressor { p, prompt, prefix }))
    }
}

struct CodexCompressor {
    p: CodexParams,
    prompt: String,
    prefix: String,
}

impl CodexCompressor {
    /// `auto_compact_token_limit`: ⌊threshold × window⌋.
    fn limit(&self, token_limit: u64) -> u64 {
        (self.p.threshold * token_limit as f64) as u64
    }
}

impl Compressor for CodexCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(CodexSession {
            p: self.p.clone(),
            prompt: self.prompt.clone(),
            prefix: self.prefix.clone(),
            window: conversation.window,
            limit: self.limit(conversation.window.token_limit),
        })
    }
    /// Compacts when the count is not below `auto_compact_token_limit`.
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        Some(self.limit(token_limit))
    }
}

struct CodexSession {
    p: CodexParams,
    prompt: String,
    prefix: String,
    window: Window,
    /// `auto_compact_token_limit`.
    limit: u64,
}

/// The marker Codex puts in a user message cut to the budget.
fn truncated(text: &str, keep_tokens: u64) -> String {
    let total = text_tokens(text);
    let (head, _) = clip_chars(text, (keep_tokens * 4) as usize);
    format!("{head}…{} tokens truncated…", total.saturating_sub(keep_tokens))
}

impl CodexSession {
    /// `build_compacted_history`: user messages newest first within the budget, then the summary.
    fn compacted(&self, stored: &[Content], summary: &str) -> Vec<Content> {
        let mut kept: Vec<String> = Vec::new();
        let mut left = self.p.user_message_budget;
        for c in stored.iter().rev().filter(|c| is_plain_user(c)) {
            let text = history::visible_text(c);
            if text.is_empty() || text.starts_with(&self.prefix) {
                continue;
            }
            if left == 0 {
                break;
            }
            let t = text_tokens(&text);
            if t <= left {
                left -= t;
                kept.push(text);
            } else {
                kept.push(truncated(&text, left));
                left = 0;
            }
        }
        kept.reverse();
        let mut out: Vec<Content> = kept.iter().map(|t| history::user_text(t)).collect();
        out.push(history::user_text(&format!("{}\n{summary}", self.prefix)));
        out
    }
}

#[async_trait]
impl CompressorSession for CodexSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        if turn.stored.is_empty() || (!turn.force && orig < self.limit) {
            return Ok(TurnOutcome::noop(orig));
        }
        // Codex compacts mid-task, once the tool outputs (or the user's new message) are in its history:
        // the pending turns are compacted with the rest.
        let whole: Vec<Content> = turn.stored.iter().chain(turn.pending).cloned().collect();
        // The whole history plus the prompt; the oldest items go first when it does not fit the window.
        let prompt_turn = history::user_text(&self.prompt);
        let mut from = 0;
        let mut size = common::tokens(&whole) + common::content_tokens(&prompt_turn);
        while size > self.window.token_limit && from + 1 < whole.len() {
            size -= common::content_tokens(&whole[from]).min(size);
            from += 1;
        }
        let mut request = whole[from..].to_vec();
        request.push(prompt_turn);
        let id = format!("{}-compact", turn.prompt_id);
        let (summary, record) = call(llm, None, request, &id, self.window.max_output_tokens).await?;
        let new = self.compacted(&whole, &summary);
        let mut outcome = common::summarized(orig, &summary, vec![record], whole.len(), 0, new);
        outcome.covers_until = Some(turn.turn);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::fixtures::*;
    use crate::history::Content;

    /// Issue #38 (regression): Codex compacts after the tool outputs are in its history. Compacting before the
    /// pending tool result and appending it after the summary left a result whose call was gone.
    #[test]
    fn a_pending_tool_result_is_compacted_with_the_history() {
        let h = session(2, 40);
        // Stored up to the call of round 1; its result is pending.
        let (stored, pending) = (&h[..6], &h[6..7]);
        let llm = Recorder::new("SUMMARY");
        let mut s = session_of("codex", serde_json::json!({}), 1000);
        let turn = crate::replay::strategy::TurnInput { pending, turn: 7, ..turn(stored, 950) };
        let out = futures::executor::block_on(s.before_request(turn, &llm)).unwrap();
        assert_eq!(out.covers_until, Some(7));
        let sent: String = llm.sent()[0].contents.iter().map(crate::json::to_string).collect();
        assert!(sent.contains("1:xxxx"), "the pending result is summarised: {sent}");
        let new = out.replaced.unwrap();
        let calls = |c: &Content| crate::history::has_function_response(c) || crate::history::has_function_call(c);
        assert!(!new.iter().any(calls));
    }

    #[test]
    fn triggers_at_ninety_percent_and_keeps_only_user_messages_and_the_summary() {
        let h = session(3, 40);
        let llm = Recorder::new("SUMMARY");
        let mut s = session_of("codex", serde_json::json!({}), 1000);
        assert!(run(s.as_mut(), &h, 899, &llm).replaced.is_none(), "below 0.9 × 1000");
        assert!(llm.sent().is_empty());
        let out = run(s.as_mut(), &h, 900, &llm);
        let new = out.replaced.expect("compacted at 900");
        let texts: Vec<String> = new.iter().map(text_of).collect();
        assert_eq!(
            texts[..3],
            ["request 0: fix src/file0.rs", "request 1: fix src/file1.rs", "request 2: fix src/file2.rs"]
        );
        assert!(
            texts[3].starts_with("Another language model started to solve this problem")
                && texts[3].ends_with("\nSUMMARY")
        );
        assert_eq!(new.len(), 4, "assistant turns and tool outputs are dropped");
        // The summarizer saw the whole history with the handoff prompt as the last user turn.
        let sent = llm.sent();
        assert_eq!(sent[0].contents.len(), h.len() + 1);
        assert!(
            text_of(sent[0].contents.last().unwrap()).starts_with("You are performing a CONTEXT CHECKPOINT COMPACTION")
        );
    }

    #[test]
    fn user_messages_are_kept_newest_first_within_the_budget() {
        let mut h = vec![user(&"old ".repeat(200)), model("ok")];
        h.extend([user("newest request"), model("done")]);
        let llm = Recorder::new("S");
        // 20 tokens: the newest message fits whole, the older one is cut with a marker.
        let mut s = session_of("codex", serde_json::json!({"user_message_budget": 20}), 1000);
        let new = run(s.as_mut(), &h, 950, &llm).replaced.unwrap();
        let texts: Vec<String> = new.iter().map(text_of).collect();
        assert!(texts[0].starts_with("old old") && texts[0].contains("tokens truncated"), "{texts:?}");
        assert_eq!(texts[1], "newest request");
        // An earlier summary message is not carried over as a user message.
        let mut s2 = session_of("codex", serde_json::json!({}), 1000);
        let again = run(s2.as_mut(), &new, 950, &llm).replaced.unwrap();
        assert_eq!(again.iter().filter(|c| text_of(c).starts_with("Another language model")).count(), 1);
    }
}
