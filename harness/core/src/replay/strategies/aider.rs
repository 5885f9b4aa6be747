//! Aider's chat-history summarisation, modelled from `Aider-AI/aider` @`5dc9490b`: `aider/history.py`
//! (`ChatSummary.summarize_real`, `summarize_all`), `aider/models.py` (the budget) and `aider/prompts.py`
//! (`configs/prompts/aider.txt`).
//!
//! - Budget: `max_chat_history_tokens` (0: `min(max(window / 16, 1024), 8192)`); it applies to the done
//!   messages (the stored history), sized by the session itself, not by the last request's count.
//! - Above the budget: keep a tail up to half the budget, move the split back so the head ends with an
//!   assistant message, summarise the head (capped at the model's input − 512 tokens, newest kept) and, if
//!   summary + tail still exceed the budget, do it again on the result, up to depth `max_depth`; four
//!   messages or fewer (or past the depth) are summarised whole.
//! - Only the text of user and assistant messages is summarised (`# USER` / `# ASSISTANT` blocks), written
//!   "as the user"; the summary is a user message prefixed "I spoke to you previously about a number of
//!   things." followed by the assistant's "Ok.".

use super::common::{self, call, section, RunningEstimates};
use crate::compress::LlmCallRecord;
use crate::history::{self, Content};
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct Aider;

const MIN_SPLIT: usize = 4;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct AiderParams {
    max_chat_history_tokens: u64,
    max_depth: u32,
}

impl Strategy for Aider {
    fn name(&self) -> &'static str {
        "aider"
    }
    fn about(&self) -> &'static str {
        "Aider: when the done messages exceed their budget, summarise the head recursively (depth ≤ 3), tail up to half the budget"
    }
    fn system(&self) -> Option<&'static str> {
        Some("Aider")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::integer(
                "max_chat_history_tokens",
                0,
                0,
                "budget of the done messages (0: min(max(window/16, 1024), 8192))",
            ),
            Knob::integer("max_depth", 3, 0, "recursion depth of summarize_real"),
        ]
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        let p: AiderParams = parse_params(self.name(), params)?;
        let s = |n: &str| section("aider", &format!("aider:{n}"));
        let prompts = [s("system")?, s("summary_prefix")?, s("assistant_ack_after_summary")?];
        Ok(Arc::new(AiderCompressor { p, prompts }))
    }
}

struct AiderCompressor {
    p: AiderParams,
    /// system, summary prefix, acknowledgement.
    prompts: [String; 3],
}

impl Compressor for AiderCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(AiderSession {
            p: self.p.clone(),
            prompts: self.prompts.clone(),
            window: conversation.window,
            sizes: RunningEstimates::default(),
        })
    }
}

struct AiderSession {
    p: AiderParams,
    /// system, summary prefix, acknowledgement.
    prompts: [String; 3],
    window: Window,
    sizes: RunningEstimates,
}

/// `max_chat_history_tokens` for a window.
pub fn default_budget(window: u64) -> u64 {
    (window / 16).clamp(1024, 8192)
}

/// The `# USER` / `# ASSISTANT` transcript of the text messages.
fn flatten(h: &[Content]) -> String {
    let mut out = String::new();
    for c in h {
        let text = history::visible_text(c);
        if text.trim().is_empty() {
            continue;
        }
        out.push_str(if history::is_model(c) { "# ASSISTANT\n" } else { "# USER\n" });
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

impl AiderSession {
    fn budget(&self) -> u64 {
        match self.p.max_chat_history_tokens {
            0 => default_budget(self.window.token_limit),
            n => n,
        }
    }

    async fn summarize_all(
        &self,
        h: &[Content],
        llm: &dyn LanguageModel,
        id: &str,
        calls: &mut Vec<LlmCallRecord>,
    ) -> Result<(String, Vec<Content>), StrategyError> {
        let request = vec![history::user_text(&flatten(h))];
        let (summary, record) =
            call(llm, Some(self.prompts[0].clone()), request, id, self.window.max_output_tokens).await?;
        calls.push(record);
        let text = format!("{}\n{summary}", self.prompts[1]);
        Ok((summary, vec![history::user_text(&text), history::model_text(&self.prompts[2])]))
    }

    /// `summarize_real`.
    async fn summarize(
        &self,
        h: Vec<Content>,
        llm: &dyn LanguageModel,
        id: &str,
        calls: &mut Vec<LlmCallRecord>,
    ) -> Result<(String, Vec<Content>), StrategyError> {
        let budget = self.budget();
        let mut messages = h;
        let mut last_summary = String::new();
        for depth in 0..=self.p.max_depth + 1 {
            if messages.len() <= MIN_SPLIT || depth > self.p.max_depth {
                return self.summarize_all(&messages, llm, &format!("{id}-{depth}"), calls).await;
            }
            let sizes: Vec<u64> = messages.iter().map(common::content_tokens).collect();
            let (mut tail_tokens, mut split) = (0, messages.len());
            for i in (0..messages.len()).rev() {
                if tail_tokens + sizes[i] < budget / 2 {
                    tail_tokens += sizes[i];
                    split = i;
                } else {
                    break;
                }
            }
            // The head ends with an assistant message.
            while split > 1 && !history::is_model(&messages[split - 1]) {
                split -= 1;
            }
            if split <= MIN_SPLIT {
                return self.summarize_all(&messages, llm, &format!("{id}-{depth}"), calls).await;
            }
            // The newest head messages that fit the summarizer's input.
            let cap = self.window.token_limit.saturating_sub(512);
            let (mut total, mut keep_from) = (0, split);
            while keep_from > 0 && total + sizes[keep_from - 1] <= cap {
                total += sizes[keep_from - 1];
                keep_from -= 1;
            }
            let (summary, mut result) =
                self.summarize_all(&messages[keep_from..split], llm, &format!("{id}-{depth}"), calls).await?;
            last_summary = summary;
            result.extend_from_slice(&messages[split..]);
            if common::tokens(&result) < budget {
                return Ok((last_summary, result));
            }
            messages = result;
        }
        Ok((last_summary, messages))
    }
}

#[async_trait]
impl CompressorSession for AiderSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        self.sizes.update(turn.stored, turn.changed_from);
        let done = self.sizes.tokens(0..turn.stored.len());
        if turn.stored.is_empty() || (!turn.force && done <= self.budget()) {
            return Ok(TurnOutcome::noop(orig));
        }
        let mut calls = Vec::new();
        let id = format!("{}-summarize", turn.prompt_id);
        let (summary, new) = self.summarize(turn.stored.to_vec(), llm, &id, &mut calls).await?;
        let kept = new.len().saturating_sub(2);
        Ok(common::summarized(orig, &summary, calls, turn.stored.len() - kept.min(turn.stored.len()), kept, new))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::fixtures::*;
    use super::*;

    #[test]
    fn budget_is_a_sixteenth_of_the_window_within_1k_and_8k() {
        assert_eq!(default_budget(16_384), 1024);
        assert_eq!(default_budget(128_000), 8000);
        assert_eq!(default_budget(1_000_000), 8192);
    }

    #[test]
    fn summarises_the_head_when_done_messages_exceed_the_budget_and_keeps_half_as_tail() {
        let h: Vec<Content> = (0..12)
            .flat_map(|i| {
                [user(&format!("question {i} {}", "w".repeat(60))), model(&format!("answer {i} {}", "v".repeat(60)))]
            })
            .collect();
        let total = common::tokens(&h);
        let llm = Recorder::new("I asked you to fix things.");
        let mut s = session_of("aider", serde_json::json!({"max_chat_history_tokens": total}), 16_384);
        // The trigger is the session's own count of the done messages, not the last request.
        assert!(run(s.as_mut(), &h, 1_000_000, &llm).replaced.is_none());
        let mut s = session_of("aider", serde_json::json!({"max_chat_history_tokens": total - 1}), 16_384);
        let new = run(s.as_mut(), &h, 0, &llm).replaced.unwrap();
        assert!(text_of(&new[0]).starts_with("I spoke to you previously about a number of things.\nI asked you"));
        assert_eq!(text_of(&new[1]), "Ok.");
        let tail = &new[2..];
        // Up to half the budget, plus the user message the split moved back to.
        assert!(tail.len() >= 2 && common::tokens(&tail[1..]) < (total - 1) / 2, "{}", tail.len());
        assert!(history::is_user(&tail[0]), "the head ends with an assistant message");
        assert_eq!(tail, &h[h.len() - tail.len()..]);
        let sent = &llm.sent()[0];
        let text = text_of(&sent.contents[0]);
        assert!(text.starts_with("# USER\nquestion 0") && text.contains("# ASSISTANT\nanswer 0"));
        assert!(sent.system_instruction.as_deref().unwrap().contains("Start the summary with \"I asked you...\""));
    }

    #[test]
    fn recursion_stops_at_the_depth_limit() {
        // A summary longer than the budget forces recursion: depth 0…3 split, then everything is summarised.
        let h: Vec<Content> = (0..20).flat_map(|i| [user(&format!("q{i} {}", "w".repeat(40))), model("a")]).collect();
        let llm = Recorder::new(&"long summary ".repeat(100));
        let mut s = session_of("aider", serde_json::json!({"max_chat_history_tokens": 100}), 16_384);
        let new = run(s.as_mut(), &h, 0, &llm).replaced.unwrap();
        assert!(llm.sent().len() <= 5, "{} calls", llm.sent().len());
        assert!(text_of(&new[0]).starts_with("I spoke to you previously"));
    }
}
