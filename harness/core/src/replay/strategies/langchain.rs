//! LangChain v1's `SummarizationMiddleware`, modelled from `langchain-ai/langchain` @`d1382304`,
//! `libs/langchain_v1/langchain/agents/middleware/summarization.py` (prompt in `configs/prompts/langchain.txt`).
//!
//! - Trigger: the request's tokens ≥ `max_tokens_before_summary`.
//! - Keep the last `messages_to_keep` messages; the cutoff moves earlier so a tool call is never split
//!   from its response (a kept part never starts with a tool response).
//! - The messages before the cutoff (the previous summary message among them), trimmed to their last
//!   `trim_tokens` tokens, fill `{messages}` of the prompt, sent as one string; all of them are replaced by
//!   one human message "Here is a summary of the conversation to date:\n\n{summary}".

use super::common::{self, call, pieces, section, Piece};
use crate::history::{self, Content};
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct LangChain;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LangChainParams {
    max_tokens_before_summary: u64,
    messages_to_keep: usize,
    trim_tokens: u64,
}

impl Strategy for LangChain {
    fn name(&self) -> &'static str {
        "langchain"
    }
    fn about(&self) -> &'static str {
        "LangChain SummarizationMiddleware: above a token count, summarise all but the last N messages, never splitting a tool call from its response"
    }
    fn system(&self) -> Option<&'static str> {
        Some("LangChain")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::integer("max_tokens_before_summary", 4_000, 1, "summarise when the request reaches this many tokens"),
            Knob::integer("messages_to_keep", 20, 0, "newest messages kept verbatim"),
            Knob::integer(
                "trim_tokens",
                4_000,
                1,
                "the summarizer sees the last this-many tokens of what it summarises",
            ),
        ]
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }

    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        let p: LangChainParams = parse_params(self.name(), params)?;
        let prompt = section("langchain", "langchain:middleware_summary_prompt")?;
        let message = section("langchain", "langchain:middleware_summary_message")?;
        Ok(Arc::new(LangChainCompressor { p, prompt, message }))
    }
}

struct LangChainCompressor {
    p: LangChainParams,
    prompt: String,
    message: String,
}

impl Compressor for LangChainCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(LangChainSession {
            p: self.p.clone(),
            prompt: self.prompt.clone(),
            message: self.message.clone(),
            max_output_tokens: conversation.window.max_output_tokens,
        })
    }
    /// Summarises when the request reaches `max_tokens_before_summary`, whatever the window.
    fn trigger_tokens(&self, _token_limit: u64) -> Option<u64> {
        Some(self.p.max_tokens_before_summary)
    }
}

struct LangChainSession {
    p: LangChainParams,
    prompt: String,
    message: String,
    max_output_tokens: Option<u32>,
}

/// The cutoff: `len − keep`, moved earlier while the kept part would start with a tool response.
pub fn safe_cutoff(h: &[Content], keep: usize) -> usize {
    let mut cut = h.len().saturating_sub(keep);
    while cut > 0 && history::has_function_response(&h[cut]) {
        cut -= 1;
    }
    cut
}

/// Messages as Python prints a list of LangChain messages, one per line (what `{messages}` receives).
fn render(h: &[Content]) -> Vec<String> {
    pieces(h)
        .into_iter()
        .map(|p| match p {
            Piece::User(t) => format!("HumanMessage(content={t:?})"),
            Piece::Assistant(t) => format!("AIMessage(content={t:?})"),
            Piece::ToolCall { name, args } => {
                format!("AIMessage(content='', tool_calls=[{{'name': {name:?}, 'args': {args}}}])")
            }
            Piece::ToolResult { name, text } => format!("ToolMessage(content={text:?}, name={name:?})"),
        })
        .collect()
}

#[async_trait]
impl CompressorSession for LangChainSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        if !turn.force && orig < self.p.max_tokens_before_summary {
            return Ok(TurnOutcome::noop(orig));
        }
        let cut = safe_cutoff(turn.stored, self.p.messages_to_keep);
        if cut == 0 {
            return Ok(TurnOutcome::noop(orig));
        }
        // `trim_messages(strategy="last")`: the newest messages within the token budget.
        let lines = render(&turn.stored[..cut]);
        let mut used = 0;
        let mut from = lines.len();
        while from > 0 {
            let t = common::text_tokens(&lines[from - 1]);
            if used + t > self.p.trim_tokens {
                break;
            }
            used += t;
            from -= 1;
        }
        let prompt = self.prompt.replace("{messages}", &lines[from..].join("\n"));
        let id = format!("{}-summarize", turn.prompt_id);
        let (summary, record) = call(llm, None, vec![history::user_text(&prompt)], &id, self.max_output_tokens).await?;
        let mut new = vec![history::user_text(&self.message.replace("{summary}", &summary))];
        new.extend_from_slice(&turn.stored[cut..]);
        Ok(common::summarized(orig, &summary, vec![record], cut, turn.stored.len() - cut, new))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::fixtures::*;
    use super::*;

    #[test]
    fn keeps_the_last_messages_without_splitting_a_tool_pair() {
        let h = session(4, 20); // user, call, result, answer × 4
                                // Keeping 6 would start at round 2's tool result (index 10): the cutoff moves to its call (9).
        assert_eq!(safe_cutoff(&h, 6), 9);
        assert_eq!(safe_cutoff(&h, 5), 11);
        let llm = Recorder::new("S");
        let mut s = session_of("langchain", serde_json::json!({"messages_to_keep": 6}), 100_000);
        assert!(run(s.as_mut(), &h, 3_999, &llm).replaced.is_none());
        let new = run(s.as_mut(), &h, 4_000, &llm).replaced.unwrap();
        assert_eq!(text_of(&new[0]), "Here is a summary of the conversation to date:\n\nS");
        assert_eq!(new[1..], h[9..]);
        let prompt = text_of(&llm.sent()[0].contents[0]);
        assert!(prompt.contains("HumanMessage(content=\"request 0: fix src/file0.rs\")"), "{prompt}");
        assert!(prompt.contains("ToolMessage(content=\"1:xxxx") && !prompt.contains("request 3"));
    }

    #[test]
    fn the_summarizer_sees_only_the_last_trim_tokens() {
        let h = session(6, 400);
        let llm = Recorder::new("S");
        let mut s = session_of("langchain", serde_json::json!({"messages_to_keep": 2, "trim_tokens": 150}), 100_000);
        let _ = run(s.as_mut(), &h, 5_000, &llm);
        let prompt = text_of(&llm.sent()[0].contents[0]);
        assert!(!prompt.contains("request 0") && prompt.contains("answer 4"), "{prompt}");
    }
}
