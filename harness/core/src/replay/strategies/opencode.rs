//! OpenCode's compaction, modelled from `sst/opencode` @`31e22f65`: `packages/opencode/src/session/overflow.ts`
//! (trigger), `compaction.ts` (`prune`, the recent tail, `buildPrompt`) and `compaction-suffix.ts` (the
//! summary template; `configs/prompts/opencode.txt`). Prepend mode (the default path).
//!
//! - Prune, before every request: walking back past the last `prune_skip_turns` user turns and stopping
//!   at a previous summary, tool outputs beyond the newest `prune_protect` tokens of outputs are cleared to
//!   `[Old tool result content cleared]`, if at least `prune_minimum` tokens would go.
//! - Compaction when the last request ≥ usable = window − `reserved` tokens: the head is serialised as
//!   `[User]: …`, `[Assistant]: …`, `[Assistant tool call]: name(json)`, `[Tool result]: <2,000 chars>`
//!   and summarised in one user message, anchored on the previous summary when there is one; a recent
//!   tail of `preserve_recent` tokens (0: `min(15,000, max(2,000, 25 % of usable))`) stays verbatim.

use super::common::{self, call, clip_chars, is_plain_user, pieces, section, Piece};
use crate::compress::CompressionStatus;
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct OpenCode;

const CLEARED: &str = "[Old tool result content cleared]";
/// Marks the summary message so the next compaction anchors on it.
const SUMMARY_HEADER: &str = "[Compaction summary]";

#[derive(Clone, Debug, Serialize, Deserialize)]
struct OpenCodeParams {
    reserved: u64,
    preserve_recent: u64,
    prune: bool,
    prune_protect: u64,
    prune_minimum: u64,
    tool_result_chars: u64,
}

impl Strategy for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }
    fn about(&self) -> &'static str {
        "OpenCode: prune old tool outputs; anchored summary of the head; recent tail kept by tokens"
    }
    fn system(&self) -> Option<&'static str> {
        Some("OpenCode")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::integer("reserved", 20_000, 0, "tokens reserved below the window (usable = window − reserved)"),
            Knob::integer(
                "preserve_recent",
                0,
                0,
                "recent tail kept verbatim (tokens; 0: min(15k, max(2k, usable/4)))",
            ),
            Knob::boolean("prune", true, "clear old tool outputs before every request"),
            Knob::integer("prune_protect", 40_000, 0, "newest tool-output tokens never pruned (PRUNE_PROTECT)"),
            Knob::integer("prune_minimum", 20_000, 0, "prune only when this many tokens would go (PRUNE_MINIMUM)"),
            Knob::integer("tool_result_chars", 2_000, 1, "tool result characters in the serialised head"),
        ]
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }

    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        let p: OpenCodeParams = parse_params(self.name(), params)?;
        let s = |n: &str| section("opencode", &format!("opencode:{n}"));
        let prompts = Prompts {
            template: s("summary_template")?,
            update: s("summary_update_instructions")?,
            conversation: s("build_prompt_conversation_block")?,
            new_instruction: s("build_prompt_new_instruction")?,
            prior: s("build_prompt_prior_summary_block")?,
        };
        Ok(Arc::new(OpenCodeCompressor { p, prompts }))
    }
}

struct OpenCodeCompressor {
    p: OpenCodeParams,
    prompts: Prompts,
}

impl Compressor for OpenCodeCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(OpenCodeSession { p: self.p.clone(), prompts: self.prompts.clone(), window: conversation.window })
    }
    /// Compacts when the count reaches the usable window (window − reserved).
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        Some(token_limit.saturating_sub(self.p.reserved))
    }
}

#[derive(Clone)]
struct Prompts {
    template: String,
    update: String,
    conversation: String,
    new_instruction: String,
    prior: String,
}

struct OpenCodeSession {
    p: OpenCodeParams,
    prompts: Prompts,
    window: Window,
}

fn is_summary(c: &Content) -> bool {
    history::is_user(c) && history::visible_text(c).starts_with(SUMMARY_HEADER)
}

/// The head as OpenCode serialises it for the summarizer.
fn serialize(h: &[Content], tool_chars: usize) -> String {
    let mut lines = Vec::new();
    for piece in pieces(h) {
        lines.push(match piece {
            Piece::User(t) => format!("[User]: {t}"),
            Piece::Assistant(t) => format!("[Assistant]: {t}"),
            Piece::ToolCall { name, args } => format!("[Assistant tool call]: {name}({args})"),
            Piece::ToolResult { text, .. } => match clip_chars(&text, tool_chars) {
                (t, true) => format!("[Tool result]: {t}\n[truncated]"),
                (t, false) => format!("[Tool result]: {t}"),
            },
        });
    }
    lines.join("\n")
}

impl OpenCodeSession {
    fn usable(&self) -> u64 {
        self.window.token_limit.saturating_sub(self.p.reserved)
    }

    /// `prune`: the outputs to clear, as in-place edits (empty when below the minimum).
    fn prune(&self, stored: &[Content]) -> Vec<(usize, Content)> {
        let mut user_turns = 0;
        let mut protected = 0u64;
        let mut prunable = 0u64;
        let mut victims: Vec<(usize, usize)> = Vec::new();
        for (ci, c) in stored.iter().enumerate().rev() {
            if is_summary(c) {
                break;
            }
            if is_plain_user(c) {
                user_turns += 1;
            }
            if user_turns < 2 {
                continue;
            }
            for (pi, part) in history::parts(c).iter().enumerate().rev() {
                let Some(fr) = history::function_response(part) else { continue };
                let text = common::response_text(fr);
                if text == CLEARED {
                    continue;
                }
                let t = common::text_tokens(&text);
                if protected < self.p.prune_protect {
                    protected += t;
                    continue;
                }
                prunable += t;
                victims.push((ci, pi));
            }
        }
        if prunable < self.p.prune_minimum || victims.is_empty() {
            return Vec::new();
        }
        victims.sort_unstable();
        let mut edits: Vec<(usize, Content)> = Vec::new();
        for (ci, pi) in victims {
            if edits.last().is_none_or(|(i, _)| *i != ci) {
                edits.push((ci, stored[ci].clone()));
            }
            let Some((_, c)) = edits.last_mut() else { continue };
            let Some(Value::Array(parts)) = c.get_mut("parts") else { continue };
            let Some(fr) = parts[pi].get_mut("functionResponse") else { continue };
            fr.insert("response", Value::object([("output", Value::str(CLEARED))]));
        }
        edits
    }

    fn prompt(&self, previous: Option<&str>, head: &[Content]) -> String {
        let conversation = self
            .prompts
            .conversation
            .replace("{serialized_conversation}", &serialize(head, self.p.tool_result_chars as usize));
        match previous {
            None => format!("{conversation}\n\n{}\n\n{}", self.prompts.new_instruction, self.prompts.template),
            Some(prev) => format!(
                "{conversation}\n\n{}\n\n{}\n\n{}",
                self.prompts.prior.replace("{previous_summary}", prev),
                self.prompts.update,
                self.prompts.template
            ),
        }
    }
}

#[async_trait]
impl CompressorSession for OpenCodeSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        if !turn.force && orig < self.usable() {
            if !self.p.prune {
                return Ok(TurnOutcome::noop(orig));
            }
            let edits = self.prune(turn.stored);
            if edits.is_empty() {
                return Ok(TurnOutcome::noop(orig));
            }
            let mut after = turn.stored.to_vec();
            for (i, c) in &edits {
                after[*i] = c.clone();
            }
            return Ok(TurnOutcome::edited(orig, common::tokens(&after), CompressionStatus::ContentTruncated, edits));
        }
        let budget = match self.p.preserve_recent {
            0 => (self.usable() / 4).clamp(2_000, 15_000),
            n => n,
        };
        // OpenCode compacts once a step has finished, its tool results in the history: the pending turns are
        // part of what it summarises or keeps.
        let whole: Vec<Content> = turn.stored.iter().chain(turn.pending).cloned().collect();
        let cut = common::tail_start_by_tokens(&whole, budget);
        let (mut head, tail) = whole.split_at(cut);
        let previous = match head.first() {
            Some(c) if is_summary(c) => {
                head = &head[1..];
                Some(history::visible_text(c)[SUMMARY_HEADER.len()..].trim_start().to_string())
            }
            _ => None,
        };
        if head.is_empty() {
            return Ok(TurnOutcome::noop(orig));
        }
        let request = vec![history::user_text(&self.prompt(previous.as_deref(), head))];
        let id = format!("{}-compaction", turn.prompt_id);
        let (summary, record) = call(llm, None, request, &id, self.window.max_output_tokens).await?;
        let mut new = vec![history::user_text(&format!("{SUMMARY_HEADER}\n{summary}"))];
        new.extend_from_slice(tail);
        let mut outcome = common::summarized(orig, &summary, vec![record], head.len(), tail.len(), new);
        outcome.covers_until = Some(turn.turn);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::fixtures::*;

    #[test]
    fn prunes_old_outputs_beyond_the_protected_tokens_and_compacts_at_usable() {
        // 6 rounds with ~250-token outputs; protect 500 tokens, minimum 300.
        let h = session(6, 1000);
        let llm = Recorder::new("## Objective\nfix");
        let knobs = serde_json::json!({"reserved": 1000, "prune_protect": 500, "prune_minimum": 300, "preserve_recent": 600, "tool_result_chars": 500});
        let mut s = session_of("opencode", knobs, 5000);
        let out = run(s.as_mut(), &h, 3999, &llm);
        // The last 2 user turns are skipped (rounds 4, 5), the next 500 tokens protected (rounds 3, 2),
        // rounds 1 and 0 cleared.
        let cleared: Vec<usize> = out.edits.iter().map(|(i, _)| *i).collect();
        assert_eq!(cleared, [2, 6]);
        assert!(out.edits.iter().all(|(_, c)| crate::json::to_string(c).contains("[Old tool result content cleared]")));
        assert!(llm.sent().is_empty(), "pruning calls no model");
        // At usable = 5000 − 1000 the head is summarised; the tail of ≤ 600 tokens starts at a user turn.
        let out = run(s.as_mut(), &h, 4000, &llm);
        let new = out.replaced.expect("compacted");
        assert!(text_of(&new[0]).starts_with("[Compaction summary]\n## Objective"));
        assert_eq!(text_of(&new[1]), "request 4: fix src/file4.rs");
        assert_eq!(new.len(), 1 + 8);
        let prompt = text_of(&llm.sent()[0].contents[0]);
        assert!(prompt.contains("[User]: request 0: fix src/file0.rs"));
        assert!(prompt.contains("[Assistant tool call]: read_file({\"path\":\"src/file0.rs\"})"));
        assert!(prompt.contains("[truncated]") && !prompt.contains("request 4"), "the tail is not sent");
        assert!(prompt.contains("Create a new anchored summary"));
        // The next compaction is anchored on this summary.
        let mut again = new.clone();
        again.extend(session(3, 1000));
        let _ = run(s.as_mut(), &again, 4500, &llm);
        let prompt = text_of(&llm.sent()[1].contents[0]);
        assert!(prompt.contains("<prior-summary>\n## Objective\nfix\n</prior-summary>"), "{prompt}");
        assert!(!prompt.contains("[Compaction summary]"));
    }
}
