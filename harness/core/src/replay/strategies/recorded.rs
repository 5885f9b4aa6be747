//! The agent's own compactions, replayed: where the recording holds a compaction the agent made (Claude
//! Code's compact summary, a Codex `compacted` item), the stored history becomes what the agent continued
//! from (Contents it kept, its summary as a user turn, Contents it preserved) at the request where it did;
//! otherwise nothing
//! is compressed. Conversations without recorded compactions replay exactly as `none`.
//!
//! The compactions reach the session through [`SessionContext`] (the replay hands each session its
//! conversation's). A compaction at `at` fires before the first request whose model turn is at or after
//! `at`: the stored history is replaced, and of that request's pending user turns only those at or after
//! `at` are appended after it. When the agent compacted after a pending turn arrived (a tool result, before
//! its next request), the summary covers that turn as it did for the agent ([`TurnOutcome::covers_until`]);
//! appending it would leave a tool result whose call the summary replaced, a request no provider accepts
//! (issue #38). `/compress` (forced) turns are ignored: the recording already says when the agent compacted.

use crate::compress::{CompressTrace, CompressionStatus};
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use crate::tokens::Estimator;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct Recorded;

impl Strategy for Recorded {
    fn name(&self) -> &'static str {
        "recorded"
    }
    fn about(&self) -> &'static str {
        "the agent's own compactions where the recording has them (its summary, at its turn); otherwise none"
    }
    fn uses_llm(&self) -> bool {
        false
    }
    /// The agent's own summary (Codex's is opaque, but the agent wrote one).
    fn summarizes(&self) -> bool {
        true
    }
    fn role(&self) -> Role {
        Role::Recorded
    }
    fn knobs(&self) -> Vec<Knob> {
        Vec::new()
    }
    fn expand(&self, _: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        Ok(vec![Variant { params: Params::new(), axes: BTreeMap::new(), summarizer: None }])
    }
    fn configure(&self, _: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(RecordedCompressor))
    }
}

/// The spec of `recorded`.
pub fn spec() -> StrategySpec {
    StrategySpec::configure("recorded", Params::new()).expect("`recorded` takes no parameters")
}

struct RecordedCompressor;

impl Compressor for RecordedCompressor {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        let mut compactions = conversation.recorded_compactions.to_vec();
        compactions.sort_by_key(|c| c.at);
        Box::new(RecordedSession { compactions, next: 0 })
    }
}

struct RecordedSession {
    compactions: Vec<RecordedCompaction>,
    /// The first compaction not applied yet.
    next: usize,
}

#[async_trait]
impl CompressorSession for RecordedSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        // Several compactions with no request between them (e.g. `/compact` twice): the last one stands.
        let mut due = None;
        while self.compactions.get(self.next).is_some_and(|c| c.at <= turn.turn) {
            due = Some(self.next);
            self.next += 1;
        }
        let Some(k) = due else {
            return Ok(TurnOutcome::noop(orig));
        };
        let c = &self.compactions[k];
        let new_history = c.history();
        let new = Estimator::Current.history(&new_history);
        let trace = CompressTrace {
            final_summary: Some(c.summary.clone()),
            summarized_contents: turn.stored.len(),
            kept_contents: c.kept.len() + c.preserved.len(),
            ..Default::default()
        };
        let mut outcome = TurnOutcome::summarized(orig, new, new_history, trace);
        // The agent compacted whatever the sizes were: never reported as an inflation the replay discards.
        outcome.info.compression_status = CompressionStatus::Compressed;
        // Its summary stands for everything before `at`, pending turns included (a tool result that arrived
        // before the agent compacted): they are not appended after it, as the agent did not send them.
        outcome.covers_until = Some(c.at);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{self, Content};
    use crate::replay::input::ReplayInput;
    use crate::replay::observer::ReplayObserver;
    use crate::replay::results::CompressionEvent;
    use crate::replay::run::replay_observed;
    use crate::replay::settings::ReplaySettings;

    /// The stored history after every event and at the end.
    #[derive(Default)]
    struct Seen {
        events: Vec<(usize, Vec<Content>)>,
        end: Vec<Content>,
    }

    #[async_trait]
    impl crate::replay::observer::ReplayObserver for Seen {
        async fn after_event(&mut self, _: usize, e: &CompressionEvent, stored: &[Content], _: Option<&[Content]>) {
            self.events.push((e.turn, stored.to_vec()));
        }
        async fn at_end(&mut self, stored: &[Content]) {
            self.end = stored.to_vec();
        }
    }

    fn replay_with(
        h: &[Content],
        compactions: &[RecordedCompaction],
        spec: &StrategySpec,
    ) -> (crate::replay::results::ConversationResult, Seen) {
        let input = ReplayInput { recorded_compactions: compactions, ..ReplayInput::history("c", h) };
        let settings = ReplaySettings::default();
        let mut seen = Seen::default();
        let llm = crate::llm::ScriptedModel::new(["unused"]);
        let observer: &mut dyn ReplayObserver = &mut seen;
        let result = futures::executor::block_on(replay_observed(input, spec.compressor(), &settings, &llm, observer));
        (result, seen)
    }

    /// Three user prompts, the second answered through a tool call.
    fn session() -> Vec<Content> {
        vec![
            history::user_text("Add a --verbose flag to the CLI."),
            history::model_text("Added `--verbose` in src/cli.rs; it sets the log level to debug."),
            history::user_text("Now make the tests pass."),
            history::model_text("Running the tests."),
            history::user_text("(test output) 2 failed: test_verbose, test_quiet"),
            history::model_text("Fixed both: the flags were parsed in the wrong order."),
            history::user_text("Write the changelog entry."),
            history::model_text("Added a line under Unreleased."),
        ]
    }

    fn compaction(at: usize, summary: &str, kept: Vec<Content>) -> RecordedCompaction {
        RecordedCompaction { at, summary: summary.into(), kept, ..Default::default() }
    }

    /// The history as the replay stores it (same roles merged).
    fn curated(h: Vec<Content>) -> Vec<Content> {
        crate::compress::curated::strip_thoughts_and_coalesce(h)
    }

    #[test]
    fn the_compaction_fires_at_its_turn_and_later_turns_follow_the_summary() {
        let h = session();
        let summary = "Summary: a --verbose flag was added to src/cli.rs; the user asked for passing tests.";
        let (r, seen) = replay_with(&h, &[compaction(4, summary, Vec::new())], &spec());
        assert_eq!(r.error, None);
        // One event, at the first model turn at or after the recorded point (turn 5), none before.
        let turns: Vec<usize> = r.events.iter().map(|e| e.turn).collect();
        assert_eq!(turns, [5]);
        assert_eq!(r.events[0].status, CompressionStatus::Compressed);
        assert_eq!(r.events[0].stored_contents_before, 4);
        assert_eq!(r.events[0].stored_contents_after, 1);
        // Right after it the agent holds only its summary ...
        assert_eq!(seen.events, [(5, vec![history::user_text(summary)])]);
        // ... and every later turn is appended after it, unchanged (the next prompt joins the summary's
        // user turn, as consecutive user turns do in the stored history).
        let mut expected = vec![history::user_text(summary)];
        expected.extend_from_slice(&h[4..]);
        let expected = curated(expected);
        assert_eq!(seen.end, expected);
        assert_eq!(history::visible_text(&expected[0]), format!("{summary}{}", history::visible_text(&h[4])));
        // The requests before the compaction are the uncompressed ones; the one after holds summary + prompt.
        let none = replay_with(&h, &[], &crate::replay::strategies::none::spec()).0;
        assert_eq!(r.request_tokens[..2], none.request_tokens[..2]);
        assert_eq!(r.request_tokens[2], crate::tokens::o200k_count_history(&expected[..1], Default::default()));
        assert!(r.request_tokens[3] < none.request_tokens[3]);
    }

    #[test]
    fn kept_contents_precede_the_summary_and_a_later_compaction_replaces_the_first() {
        let h = session();
        let kept = vec![
            history::user_text("<environment_context>cwd: /repo</environment_context>"),
            history::model_text("(a kept model turn)"),
        ];
        let compactions = [compaction(6, "second summary", kept.clone()), compaction(2, "first summary", Vec::new())];
        let (r, seen) = replay_with(&h, &compactions, &spec());
        assert_eq!(r.events.iter().map(|e| e.turn).collect::<Vec<_>>(), [3, 7]);
        assert_eq!(seen.events[0].1, [history::user_text("first summary")]);
        let second = vec![kept[0].clone(), kept[1].clone(), history::user_text("second summary")];
        assert_eq!(seen.events[1].1, second);
        assert_eq!(seen.end, curated([second, h[6..].to_vec()].concat()));
    }

    /// Issue #38 (regression): the agent compacted after a tool result arrived, so its summary covers the
    /// result; appending it after the summary left a response whose call was gone, a request no provider
    /// accepts (14 of them on claude-code-long).
    #[test]
    fn a_tool_result_the_agent_compacted_after_is_covered_by_its_summary() {
        let call = |id: &str| {
            crate::json::parse(format!(r#"{{"role":"model","parts":[{{"functionCall":{{"id":"{id}","name":"Bash","args":{{"command":"cargo test"}}}}}}]}}"#).as_bytes()).unwrap()
        };
        let result = |id: &str| {
            crate::json::parse(format!(r#"{{"role":"user","parts":[{{"functionResponse":{{"id":"{id}","name":"Bash","response":{{"output":"2 failed"}}}}}}]}}"#).as_bytes()).unwrap()
        };
        let h = vec![
            history::user_text("Make the tests pass."),
            call("t1"),
            result("t1"),
            history::model_text("Two tests fail; fixing the flag order."),
            history::user_text("Now the changelog."),
            call("t2"),
            result("t2"),
            history::model_text("Still failing: the parser."),
        ];
        // Claude Code compacted at 7: after the result at 6, before its next request.
        let summary = "Summary: the tests fail in the parser; the changelog is next.";
        let (r, seen) = replay_with(&h, &[compaction(7, summary, Vec::new())], &spec());
        assert_eq!(r.error, None);
        assert_eq!(r.events.iter().map(|e| e.turn).collect::<Vec<_>>(), [7]);
        // The summary alone, the covered result not appended after it; the request is valid.
        assert_eq!(seen.events[0].1, [history::user_text(summary)]);
        assert_eq!(seen.end, [history::user_text(summary), h[7].clone()]);
        assert_eq!(r.invalid_requests, 0, "{:?}", r.events[0].request_violations);
        assert_eq!(r.events[0].request_tokens_after, r.request_tokens[r.events[0].request]);
        // A compaction at the pending turn itself (before it arrived) still keeps it after the summary.
        let (r, seen) = replay_with(&h, &[compaction(4, summary, Vec::new())], &spec());
        assert_eq!(seen.events[0].1, [history::user_text(summary)]);
        assert_eq!(r.invalid_requests, 0);
        assert!(seen.end.iter().any(|c| history::visible_text(c).contains("Now the changelog.")));
    }

    #[test]
    fn without_recorded_compactions_it_is_none() {
        let h = session();
        let (r, seen) = replay_with(&h, &[], &spec());
        let none = replay_with(&h, &[], &crate::replay::strategies::none::spec()).0;
        assert!(r.events.is_empty());
        assert_eq!(r.request_tokens, none.request_tokens);
        assert_eq!(seen.end, h);
        // A compaction past the last model turn never fires.
        let (late, _) = replay_with(&h, &[compaction(h.len(), "too late", Vec::new())], &spec());
        assert!(late.events.is_empty());
        assert_eq!(late.request_tokens, none.request_tokens);
    }
}
