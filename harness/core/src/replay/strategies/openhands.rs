//! OpenHands' condensers, modelled from `All-Hands-AI/OpenHands` @`156d0686`,
//! `openhands/memory/condenser/impl/` (`llm_summarizing_condenser.py`, `amortized_forgetting_condenser.py`;
//! prompt in `configs/prompts/openhands.txt`). Each stored Content is one event of the view.
//!
//! - `openhands` (`LLMSummarizingCondenser(max_size=100, keep_first=1, max_event_length=10_000)`): when the
//!   view holds more than `max_size` events, keep the first `keep_first`, a summary event, and enough tail
//!   for `max_size / 2` in all; the forgotten events go to the summarizer as `<EVENT id=…>` blocks (each
//!   cut to `max_event_length` characters) after the rules and the `<PREVIOUS SUMMARY>`.
//! - `openhands-amortized` (`AmortizedForgettingCondenser`): the same trigger and kept set, no summary.

use super::common::{self, call, section};
use crate::compress::CompressionStatus;
use crate::history::{self, Content};
use crate::json;
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct OpenHands;
pub struct OpenHandsAmortized;

const SUMMARY_HEADER: &str = "[OpenHands condensation summary]";

#[derive(Clone, Debug, Serialize, Deserialize)]
struct OpenHandsParams {
    max_size: usize,
    keep_first: usize,
    #[serde(default)]
    max_event_length: usize,
}

fn common_knobs() -> Vec<Knob> {
    vec![
        Knob::integer("max_size", 100, 2, "condense when the view holds more events than this"),
        Knob::integer("keep_first", 1, 0, "head events always kept"),
    ]
}

impl Strategy for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }
    fn about(&self) -> &'static str {
        "OpenHands LLMSummarizingCondenser: above max_size events, keep the first ones + a summary + a tail to max_size/2"
    }
    fn system(&self) -> Option<&'static str> {
        Some("OpenHands")
    }
    fn uses_llm(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        let mut k = common_knobs();
        k.push(Knob::integer("max_event_length", 10_000, 1, "characters of each forgotten event sent"));
        k
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        let p: OpenHandsParams = parse_params(self.name(), params)?;
        let s = |n: &str| section("openhands", &format!("openhands:{n}"));
        let prompts =
            [s("summarizer_rules")?, s("previous_summary_block")?, s("event_block")?, s("summarizer_closing")?];
        Ok(Arc::new(OpenHandsCompressor { p, prompts: Some(prompts) }))
    }
}

impl Strategy for OpenHandsAmortized {
    fn name(&self) -> &'static str {
        "openhands-amortized"
    }
    fn about(&self) -> &'static str {
        "OpenHands AmortizedForgettingCondenser: above max_size events, drop the middle down to max_size/2 (no model)"
    }
    fn system(&self) -> Option<&'static str> {
        Some("OpenHands (amortized forgetting)")
    }
    fn uses_llm(&self) -> bool {
        false
    }
    fn knobs(&self) -> Vec<Knob> {
        common_knobs()
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(0)
    }
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(OpenHandsCompressor { p: parse_params(self.name(), params)?, prompts: None }))
    }
}

struct OpenHandsCompressor {
    p: OpenHandsParams,
    /// rules, previous-summary block, event block, closing; `None`: amortized forgetting.
    prompts: Option<[String; 4]>,
}

impl Compressor for OpenHandsCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(OpenHandsSession {
            p: self.p.clone(),
            prompts: self.prompts.clone(),
            max_output_tokens: conversation.window.max_output_tokens,
        })
    }
}

struct OpenHandsSession {
    p: OpenHandsParams,
    /// rules, previous-summary block, event block, closing; `None`: amortized forgetting.
    prompts: Option<[String; 4]>,
    max_output_tokens: Option<u32>,
}

/// The kept head and tail: `(head_end, tail_start)` for a view of `len` events.
pub fn kept_range(len: usize, max_size: usize, keep_first: usize, with_summary: bool) -> (usize, usize) {
    let target = max_size / 2;
    let from_tail = target.saturating_sub(keep_first + usize::from(with_summary));
    let head_end = keep_first.min(len);
    (head_end, len.saturating_sub(from_tail).max(head_end))
}

fn event_text(c: &Content) -> String {
    let text = history::visible_text(c);
    if text.is_empty() {
        // An event of calls, results or images: its JSON, each image as what it is, never its base64.
        match crate::tokens::images::with_media_described(c, None) {
            Some(described) => json::to_string(&described),
            None => json::to_string(c),
        }
    } else {
        text
    }
}

#[async_trait]
impl CompressorSession for OpenHandsSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        let view = turn.stored;
        if !(view.len() > self.p.max_size || (turn.force && view.len() > self.p.keep_first + 1)) {
            return Ok(TurnOutcome::noop(orig));
        }
        let Some(prompts) = &self.prompts else {
            let (head_end, tail_start) = kept_range(view.len(), self.p.max_size, self.p.keep_first, false);
            let mut new = view[..head_end].to_vec();
            new.extend_from_slice(&view[tail_start..]);
            return Ok(TurnOutcome::replaced(orig, common::tokens(&new), CompressionStatus::Compressed, new));
        };
        let (head_end, tail_start) = kept_range(view.len(), self.p.max_size, self.p.keep_first, true);
        let mut forgotten = &view[head_end..tail_start];
        // The previous summary event sits right after the kept head.
        let previous = match forgotten.first() {
            Some(c) if history::visible_text(c).starts_with(SUMMARY_HEADER) => {
                forgotten = &forgotten[1..];
                history::visible_text(c)[SUMMARY_HEADER.len()..].trim_start().to_string()
            }
            _ => String::new(),
        };
        let mut prompt = format!("{}\n\n{}\n\n", prompts[0], prompts[1].replace("{previous_summary}", &previous));
        for (i, c) in forgotten.iter().enumerate() {
            let (text, _) = common::clip_chars(&event_text(c), self.p.max_event_length);
            let block = prompts[2].replace("{event_id}", &(head_end + i).to_string()).replace("{event_text}", &text);
            prompt.push_str(&block);
            prompt.push('\n');
        }
        prompt.push_str(&prompts[3]);
        let id = format!("{}-condense", turn.prompt_id);
        let (summary, record) = call(llm, None, vec![history::user_text(&prompt)], &id, self.max_output_tokens).await?;
        let mut new = view[..head_end].to_vec();
        new.push(history::user_text(&format!("{SUMMARY_HEADER}\n{summary}")));
        new.extend_from_slice(&view[tail_start..]);
        Ok(common::summarized(orig, &summary, vec![record], forgotten.len(), head_end + view.len() - tail_start, new))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::fixtures::*;

    #[test]
    fn condenses_above_max_size_to_keep_first_summary_and_tail() {
        let h = session(3, 20); // 12 events
        let llm = Recorder::new("USER_CONTEXT: fix files");
        let mut s = session_of("openhands", serde_json::json!({"max_size": 12, "keep_first": 1}), 100_000);
        assert!(run(s.as_mut(), &h, 0, &llm).replaced.is_none(), "12 events are not more than 12");
        let mut longer = h.clone();
        longer.push(user("one more"));
        let new = run(s.as_mut(), &longer, 0, &llm).replaced.unwrap();
        // max_size / 2 = 6: the first event, the summary, the last 4.
        assert_eq!(new.len(), 6);
        assert_eq!(new[0], longer[0]);
        assert!(text_of(&new[1]).ends_with("USER_CONTEXT: fix files"));
        assert_eq!(new[2..], longer[9..]);
        let prompt = text_of(&llm.sent()[0].contents[0]);
        assert!(prompt.contains("<PREVIOUS SUMMARY>\n\n</PREVIOUS SUMMARY>"));
        assert!(prompt.contains("<EVENT id=1>") && prompt.contains("<EVENT id=8>") && !prompt.contains("<EVENT id=9>"));
        assert!(prompt.trim_end().ends_with("Now summarize the events using the rules above."));
        // The next condensation passes the summary on as the previous one, not as an event.
        let mut next = new.clone();
        next.extend(session(2, 20));
        let _ = run(s.as_mut(), &next, 0, &llm);
        let prompt = text_of(&llm.sent()[1].contents[0]);
        assert!(prompt.contains("<PREVIOUS SUMMARY>\nUSER_CONTEXT: fix files\n</PREVIOUS SUMMARY>"), "{prompt}");
        assert!(!prompt.contains("<EVENT id=1>\n[OpenHands"));
    }

    #[test]
    fn amortized_forgetting_drops_the_middle_without_a_model() {
        let h = session(3, 20);
        let llm = Recorder::new("unused");
        let mut s = session_of("openhands-amortized", serde_json::json!({"max_size": 10, "keep_first": 2}), 100_000);
        let new = run(s.as_mut(), &h, 0, &llm).replaced.unwrap();
        assert_eq!(new.len(), 5);
        assert_eq!(new[..2], h[..2]);
        assert_eq!(new[2..], h[9..]);
        assert!(llm.sent().is_empty());
    }
}
