//! The entry points: one conversation replayed through a built strategy or a strategy spec, with or
//! without an observer.

use super::input::ReplayInput;
use super::observer::{NoObserver, ReplayObserver};
use super::results::{ConversationResult, ReplayError};
use super::settings::ReplaySettings;
use super::strategy::{Compressor, StrategySpec};
use super::turns::replay_prepared;
use super::uncompressed::Uncompressed;
use crate::llm::LanguageModel;

/// Replays one conversation through one strategy. Never fails: an error stops this conversation's replay
/// and is recorded in the result. A relative window is resolved against the conversation's uncompressed
/// replay here and handed to the strategy's session ([`SessionContext`](super::strategy::SessionContext)).
pub async fn replay(
    input: ReplayInput<'_>,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
) -> ConversationResult {
    replay_observed(input, strategy, settings, llm, &mut NoObserver).await
}

/// [`replay`] with an observer.
pub async fn replay_observed(
    input: ReplayInput<'_>,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    match Uncompressed::new(&input, settings).await {
        Ok(uncompressed) => replay_prepared(input, &uncompressed, strategy, settings, llm, observer).await,
        Err(e) => failed(&input, ReplayError::Tokenizer { turn: None, message: e.to_string() }),
    }
}

/// The result of a replay that could not start.
fn failed(input: &ReplayInput<'_>, error: ReplayError) -> ConversationResult {
    ConversationResult {
        conversation: input.id.to_string(),
        contents: input.history.len(),
        error: Some(error),
        ..Default::default()
    }
}

/// Replays a strategy spec: [`replay_observed`], and whether the strategy writes summaries.
pub async fn replay_spec(
    input: ReplayInput<'_>,
    spec: &StrategySpec,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    let mut result = replay_observed(input, spec.compressor(), settings, llm, observer).await;
    result.summarizes = spec.summarizes();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{self, Content};
    use crate::json::Value;
    use crate::replay::accounting::is_unsplittable;
    use crate::replay::counting::request_overhead;
    use crate::replay::model_counter::{self, CounterHandle, ModelCounter};
    use crate::replay::settings::{OverheadSource, TokenScale};
    use crate::replay::strategies;
    use crate::replay::strategy::{CacheUsage, RecordedCompaction};
    use crate::replay::window::{PromptCountOrigin, TokenLimit, Tokenizer};
    use crate::tokens::{self, ImageBilling};
    use std::sync::atomic::Ordering;

    fn text(role: &str, t: &str) -> Content {
        history::text_content(role, t)
    }

    fn call(name: &str, n: usize) -> Content {
        crate::json::parse(
            format!(r#"{{"role":"model","parts":[{{"functionCall":{{"name":"{name}","args":{{"n":{n}}}}}}}]}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    fn response(name: &str, lines: usize) -> Content {
        let out: String = (0..lines).map(|i| format!("line {i} of the output of {name}\\n")).collect();
        crate::json::parse(
            format!(r#"{{"role":"user","parts":[{{"functionResponse":{{"name":"{name}","response":{{"output":"{out}"}}}}}}]}}"#)
                .as_bytes(),
        )
        .unwrap()
    }

    /// A task, then four tool rounds with large outputs, then a final answer.
    fn tool_history() -> Vec<Content> {
        let mut h = vec![text("user", "fix the failing test in src/lib.rs")];
        for i in 0..4 {
            h.push(call("shell", i));
            h.push(response("shell", 40));
        }
        h.push(text("model", "done"));
        h
    }

    fn run(spec: &StrategySpec, input: ReplayInput<'_>, settings: &ReplaySettings) -> ConversationResult {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(replay_spec(input, spec, settings, &crate::llm::ScriptedModel::new(["unused"]), &mut NoObserver))
    }

    /// One accounting on a handmade history: every size is system prompt + history + pending turn in o200k
    /// tokens, on both sides of every event, and the `none` figures are the uncompressed replay's.
    #[test]
    fn every_size_is_the_request_as_sent_in_one_tokenizer() {
        let h = tool_history();
        let system = "You are a careful coding agent. Use the shell tool.";
        let input = ReplayInput { system_instruction: Some(system), ..ReplayInput::history("t", &h) };
        let settings = ReplaySettings { system_prompt_tokens: 999, tool_declaration_tokens: 7, ..Default::default() };
        // The recorded system prompt is measured; the configured size stands in for the absent tools.
        let overhead = tokens::o200k_count_text(system) + 7;
        assert_eq!(futures::executor::block_on(request_overhead(&input, &settings)), Ok(overhead));
        let none = run(&strategies::none::spec(), input, &settings);
        // Request k holds everything before model turn k.
        let model_turns: Vec<usize> = (0..h.len()).filter(|&i| history::is_model(&h[i])).collect();
        let expected: Vec<u64> =
            model_turns.iter().map(|&i| overhead + tokens::o200k_count_history(&h[..i], Default::default())).collect();
        assert_eq!(none.request_tokens, expected);
        assert_eq!(none.request_tokens_total, expected.iter().sum::<u64>());
        assert_eq!(none.none_request_tokens_total, none.request_tokens_total);
        assert_eq!(none.peak_request_tokens, *expected.iter().max().unwrap());
        // Without compression the history only grows: each request's cacheable prefix is the whole previous
        // request.
        let cached: u64 = expected[..expected.len() - 1].iter().sum();
        assert_eq!((none.cached_request_tokens_total, none.none_cached_request_tokens_total), (cached, cached));

        let masking = strategies::observation_masking::spec(1, "[omitted]");
        let r = run(&masking, input, &settings);
        assert_eq!(r.none_request_tokens_total, none.request_tokens_total);
        assert!(!r.events.is_empty());
        for e in &r.events {
            // Before: the request the previous history would send (the uncompressed one at the first event).
            assert_eq!(e.reduction, 1.0 - e.request_tokens_after as f64 / e.request_tokens_before as f64);
            assert!(e.request_tokens_after < e.request_tokens_before, "{e:?}");
            // After: exactly the request the replay then sends.
            assert_eq!(e.request_tokens_after, r.request_tokens[e.request]);
        }
        assert_eq!(r.events[0].request_tokens_before, expected[r.events[0].request]);
        assert_eq!(r.request_tokens_total, r.request_tokens.iter().sum::<u64>());
        assert!(r.request_tokens_total < none.request_tokens_total);
        // Masking rewrites an old output at every request: less of each request is a cached prefix.
        assert!(r.cached_request_tokens_total < none.cached_request_tokens_total);
        assert!(r.cached_request_tokens_total >= overhead * (r.requests as u64 - 1));
        assert_eq!(r.prompt_count_source, "measured");
    }

    /// `peak:F` resolves against the uncompressed peak request; the trigger sees the measured request.
    #[test]
    fn relative_window_resolves_against_the_uncompressed_peak() {
        let h = tool_history();
        let input = ReplayInput::history("t", &h);
        let settings = ReplaySettings { token_limit: TokenLimit::PeakFraction(0.6), ..Default::default() };
        let peak = futures::executor::block_on(Uncompressed::new(&input, &settings)).unwrap().peak();
        let spec = strategies::drop_oldest::spec(strategies::drop_oldest::DropOldestParams {
            threshold: 0.5,
            keep_fraction: 0.3,
        });
        let r = run(&spec, input, &settings);
        assert_eq!(r.none_peak_request_tokens, peak);
        assert_eq!(r.token_limit, (0.6 * peak as f64).ceil() as u64);
        assert_eq!(r.trigger_tokens, Some((0.5 * r.token_limit as f64).ceil() as u64), "the trigger in that window");
        assert_eq!(r.overflow_requests, r.request_tokens.iter().filter(|&&t| t > r.token_limit).count() as u64);
        // No trigger sees the last request: the peak it sees is the largest of the others.
        let seen = r.request_tokens[..r.request_tokens.len() - 1].iter().copied().max().unwrap();
        assert_eq!(r.none_trigger_seen_peak_tokens, seen);
        assert!(r.none_trigger_seen_peak_tokens < r.none_peak_request_tokens, "the last request is the largest here");
        assert!(!r.summarizes, "drop-oldest writes no summary");
        // One task then only tool responses: nothing for drop-oldest (or the reference) to cut at.
        assert!(r.unsplittable && r.events.is_empty());
        assert_eq!(r.split_points["current"], 0, "{:?}", r.split_points);
        // The 2025-07-07 variant still split at function-response turns.
        assert_ne!(r.split_points["2025-07-07"], 0, "{:?}", r.split_points);
    }

    /// A relative window reaches each session as the tokens it resolves to for that conversation (never a
    /// placeholder), with the configured output limit.
    #[test]
    fn sessions_get_the_resolved_window() {
        use crate::replay::strategy::{CompressorSession, SessionContext, TurnInput, TurnOutcome, Window};
        use std::sync::{Arc, Mutex};
        #[derive(Default)]
        struct Seen(Arc<Mutex<Vec<Window>>>);
        struct Noop;
        #[async_trait::async_trait]
        impl CompressorSession for Noop {
            async fn before_request(
                &mut self,
                turn: TurnInput<'_>,
                _: &dyn crate::llm::LanguageModel,
            ) -> Result<TurnOutcome, crate::replay::StrategyError> {
                Ok(TurnOutcome::noop(turn.last_prompt_tokens))
            }
        }
        impl Compressor for Seen {
            fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
                self.0.lock().unwrap().push(conversation.window);
                Box::new(Noop)
            }
        }
        let h = tool_history();
        for window in [TokenLimit::PeakFraction(0.6), TokenLimit::FixedPlusGrowth(0.6), TokenLimit::Tokens(5000)] {
            let settings = ReplaySettings { token_limit: window, max_output_tokens: Some(128), ..Default::default() };
            let seen = Seen::default();
            let llm = crate::llm::ScriptedModel::new(["unused"]);
            let r = futures::executor::block_on(replay(ReplayInput::history("t", &h), &seen, &settings, &llm));
            assert!(r.token_limit > 0, "{window}");
            let expected = Window { token_limit: r.token_limit, max_output_tokens: Some(128) };
            assert_eq!(*seen.0.lock().unwrap(), [expected], "{window}");
        }
    }

    /// An image part: `{"inlineData": …}` holding the base64 of a PNG header of `w` × `h`.
    fn png_part(w: u32, h: u32) -> Value {
        use base64::Engine;
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b.extend(std::iter::repeat_n(7u8, 3000)); // a body, so that the base64 is long
        let data = base64::engine::general_purpose::STANDARD.encode(&b);
        Value::object([(
            "inlineData",
            Value::object([("mimeType", Value::str("image/png")), ("data", Value::str(&data))]),
        )])
    }

    /// Images count as the agent's provider bills them in every request, never as their base64 and never
    /// scaled: `token_scale = "recorded"` fits the text alone (recorded minus image tokens against the
    /// measured text).
    #[test]
    fn images_count_as_their_provider_bills_them_and_are_never_scaled() {
        let mut h = tool_history();
        // The task comes with a screenshot; the second tool result with another, after its response part.
        h[0] = Value::object([
            ("role", Value::str("user")),
            ("parts", Value::Array(vec![history::text_part("fix what this shows"), png_part(1280, 720)])),
        ]);
        h[4].get_mut("parts").unwrap().as_array_mut().unwrap().push(png_part(512, 320));
        let text_only: Vec<Content> = h.iter().map(|c| tokens::images::without_media(c).unwrap_or(c.clone())).collect();
        let measure = |h: &[Content], billing: ImageBilling| {
            let input = ReplayInput { image_billing: billing, ..ReplayInput::history("t", h) };
            futures::executor::block_on(Uncompressed::new(&input, &Default::default())).unwrap().requests
        };
        let text = measure(&text_only, ImageBilling::Anthropic);
        // By hand: 1280 × 720 / 750 = 1228.8 → 1229 (Anthropic); 512 × 320 / 750 = 218.5 → 219. OpenAI: 6
        // and 1 tiles of 512 px (70 + 140 a tile); Gemini: 2 tiles of 768 px, then one small image.
        let media = |first: u64, second: u64| -> Vec<u64> {
            let at: Vec<usize> = (0..h.len()).filter(|&i| history::is_model(&h[i])).collect();
            at.iter().map(|&i| if i > 4 { first + second } else { first }).collect()
        };
        for (billing, per) in [
            (ImageBilling::Anthropic, media(1229, 219)),
            (ImageBilling::OpenAi, media(70 + 6 * 140, 70 + 140)),
            (ImageBilling::Gemini, media(2 * 258, 258)),
        ] {
            let with: Vec<u64> = text.iter().zip(&per).map(|(t, m)| t + m).collect();
            assert_eq!(measure(&h, billing), with, "{billing}");
        }
        // The agent's counts: 20,000 besides the history, twice o200k for text, images as billed.
        let per = media(1229, 219);
        let mut recorded = vec![None; h.len()];
        for (k, i) in (0..h.len()).filter(|&i| history::is_model(&h[i])).enumerate() {
            recorded[i] = Some(20_000 + 2 * text[k] + per[k]);
        }
        let input = ReplayInput {
            recorded_prompt_tokens: &recorded,
            prompt_count_origin: PromptCountOrigin::ClaudeCodeApi,
            image_billing: ImageBilling::Anthropic,
            ..ReplayInput::history("t", &h)
        };
        let settings = ReplaySettings {
            overhead: OverheadSource::Recorded,
            token_scale: TokenScale::Recorded,
            ..Default::default()
        };
        let r = run(&strategies::none::spec(), input, &settings);
        assert_eq!((r.token_scale, r.recorded_overhead_tokens), (Some(2.0), Some(20_000)));
        let expected: Vec<u64> = recorded.iter().filter_map(|&r| r).collect();
        assert_eq!(r.request_tokens, expected);
    }

    /// With usage that measures the replayed context, the fixed part is the first recorded request minus the
    /// history it carried, `token_scale = "recorded"` fits the history's growth onto the recorded one, and a
    /// `recorded` window comes from the usage; without such usage every one falls back.
    #[test]
    fn sizes_and_windows_come_from_the_recorded_usage() {
        let h = tool_history();
        let plain = futures::executor::block_on(Uncompressed::new(&ReplayInput::history("t", &h), &Default::default()));
        let history = plain.unwrap().requests;
        // The agent's counts: 20,000 tokens besides the history, and its tokenizer counts twice o200k.
        let mut recorded = vec![None; h.len()];
        let models = (0..h.len()).filter(|&i| history::is_model(&h[i]));
        for (k, i) in models.enumerate() {
            recorded[i] = Some(20_000 + 2 * history[k]);
        }
        let input = ReplayInput {
            recorded_prompt_tokens: &recorded,
            prompt_count_origin: PromptCountOrigin::ClaudeCodeApi,
            ..ReplayInput::history("t", &h)
        };
        let settings = ReplaySettings {
            token_limit: TokenLimit::Recorded,
            overhead: OverheadSource::Recorded,
            token_scale: TokenScale::Recorded,
            system_prompt_tokens: 999,
            ..Default::default()
        };
        let r = run(&strategies::none::spec(), input, &settings);
        assert_eq!((r.token_scale, r.recorded_overhead_tokens), (Some(2.0), Some(20_000)));
        let expected: Vec<Option<u64>> = recorded.iter().copied().filter(Option::is_some).collect();
        assert_eq!(r.request_tokens.iter().map(|&t| Some(t)).collect::<Vec<_>>(), expected);
        assert_eq!(r.recorded_request_tokens, expected);
        assert_eq!(r.recorded_before_requests, r.requests, "no compaction: every request sent the agent's history");
        assert_eq!(r.token_limit, 200_000, "Claude's window holds the largest recorded request");
        assert!(r.recorded_request_pairs().0.iter().all(|(x, y)| x == y));
        // The overhead alone: the fixed part from the usage, the history unscaled.
        let alone = ReplaySettings { token_scale: TokenScale::default(), ..settings.clone() };
        let r = run(&strategies::none::spec(), input, &alone);
        assert_eq!((r.token_scale, r.recorded_overhead_tokens), (None, Some(20_000 + history[0])));
        assert_eq!(r.request_tokens[0], recorded[1].unwrap());
        // Usage that does not measure the replayed context (aider's): configured sizes, scale 1, the window
        // the replay's own peak.
        let aider = ReplayInput { prompt_count_origin: PromptCountOrigin::AiderSent, ..input };
        let r = run(&strategies::none::spec(), aider, &settings);
        assert_eq!((r.token_scale, r.recorded_overhead_tokens), (Some(1.0), None));
        assert!(r.recorded_request_tokens.is_empty() && r.recorded_before_requests == 0);
        assert_eq!(r.request_tokens[0], 999 + history[0]);
        assert_eq!(r.token_limit, r.none_peak_request_tokens);
    }

    /// Issue #38: after a compaction the provider's cache still holds the system prompt and tools, not the
    /// context the agent sends at the head of its messages; per-request figures sit beside the recorded
    /// cache reads where the recording has them. Issue #46: where the recording has the provider's read on
    /// the first request after the agent's compaction, that read is the prefix that survives.
    #[test]
    fn after_a_compaction_the_cache_serves_the_prefix_the_recording_read_or_the_system_prompt_and_tools() {
        let h: Vec<Content> =
            ["fix the parser", "reading it", "now the lexer", "reading that", "and the tests", "done"]
                .iter()
                .enumerate()
                .map(|(i, t)| text(if i % 2 == 0 { "user" } else { "model" }, t))
                .collect();
        let history =
            futures::executor::block_on(Uncompressed::new(&ReplayInput::history("t", &h), &Default::default()))
                .unwrap()
                .requests;
        let mut recorded = vec![None; h.len()];
        let mut cache = vec![None; h.len()];
        for (k, i) in [1, 3, 5].into_iter().enumerate() {
            recorded[i] = Some(20_000 + history[k]);
            cache[i] = Some(CacheUsage { read: 100 * k as u64, written: 7 });
        }
        let compactions = [RecordedCompaction {
            at: 4,
            summary: "The user asked to fix the parser and lexer.".into(),
            ..Default::default()
        }];
        let input = ReplayInput {
            recorded_prompt_tokens: &recorded,
            prompt_count_origin: PromptCountOrigin::ClaudeCodeApi,
            recorded_compactions: &compactions,
            recorded_cache: &cache,
            ..ReplayInput::history("t", &h)
        };
        let settings = ReplaySettings {
            overhead: OverheadSource::Recorded,
            system_prompt_tokens: 3_000,
            tool_declaration_tokens: 12_000,
            ..Default::default()
        };
        let r = run(&strategies::recorded::spec(), input, &settings);
        assert_eq!(r.recorded_overhead_tokens, Some(20_000));
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.cached_request_tokens.len(), r.requests);
        // Before the compaction the whole previous request is a cached prefix; after it, what the provider
        // read on the first request after the agent's compaction (200 here), at most the fixed part.
        assert_eq!(r.cached_request_tokens[..2], [0, r.request_tokens[0]]);
        assert_eq!(r.cached_request_tokens[2], 200);
        assert_eq!(r.cached_request_tokens_total, r.cached_request_tokens.iter().sum::<u64>());
        assert_eq!(r.recorded_cache_read_tokens, [Some(0), Some(100), Some(200)]);
        // Where the fixed part was measured from the system prompt and tools, all of it stays cached.
        let measured = ReplaySettings { overhead: OverheadSource::Measured, ..settings.clone() };
        let m = run(&strategies::recorded::spec(), input, &measured);
        assert_eq!(m.cached_request_tokens[2], 200);
        // Where the recording has no read after the compaction: the declared system prompt and tools (15,000
        // of the 20,000 fixed tokens).
        let mut unread = cache.clone();
        unread[5] = None;
        let without = ReplayInput { recorded_cache: &unread, ..input };
        assert_eq!(run(&strategies::recorded::spec(), without, &settings).cached_request_tokens[2], 15_000);
        // Without recorded cache traffic no per-request figures are kept.
        let bare = ReplayInput { recorded_cache: &[], ..input };
        assert!(run(&strategies::recorded::spec(), bare, &settings).cached_request_tokens.is_empty());
    }

    #[test]
    fn unsplittable_means_no_plain_user_turn_after_the_first() {
        let mut h = tool_history();
        assert!(is_unsplittable(&h));
        h.push(text("user", "now the docs"));
        h.push(text("model", "ok"));
        assert!(!is_unsplittable(&h));
        assert!(is_unsplittable(&[]));
    }

    /// A backend whose tokenizer counts a quarter of the request's contents as JSON bytes, and fails on a
    /// Content that says FAIL: the engine's side of a model tokenizer, without HTTP (the loopback tests of
    /// `compactbench-llm` cover the backend and its cache).
    struct QuarterBytes {
        calls: std::sync::atomic::AtomicUsize,
    }

    fn quarter(contents: &[Content]) -> u64 {
        crate::json::to_string(&Value::Array(contents.to_vec())).len() as u64 / 4
    }

    #[async_trait::async_trait]
    impl LanguageModel for QuarterBytes {
        fn spec(&self) -> &str {
            "test:quarter"
        }
        async fn generate(&self, _: &crate::llm::LlmRequest) -> Result<crate::llm::LlmResponse, crate::llm::LlmError> {
            Err(crate::llm::LlmError::Other("a tokenizer only".into()))
        }
        async fn count_tokens(&self, req: &crate::llm::LlmRequest) -> Result<Option<u64>, crate::llm::LlmError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            assert!(req.system_instruction.is_none() && req.contents.len() == 1, "one Content at a time");
            if crate::json::to_string(&req.contents[0]).contains("FAIL") {
                return Err(crate::llm::LlmError::Transport("connection refused".into()));
            }
            Ok(Some(quarter(&req.contents)))
        }
    }

    fn model_settings(model: &std::sync::Arc<QuarterBytes>) -> (ReplaySettings, std::sync::Arc<ModelCounter>) {
        let counter = std::sync::Arc::new(ModelCounter::new(model.clone()));
        let settings = ReplaySettings {
            tokenizer: Tokenizer::Model("test:quarter".into()),
            counter: CounterHandle::new(counter.clone()),
            ..Default::default()
        };
        (settings, counter)
    }

    /// With a model tokenizer every request is the sum of its parts' counts (system prompt as one user
    /// Content, each stored Content alone), on both sides of every event; each distinct Content is counted
    /// once however many replays share the counter.
    #[test]
    fn a_model_tokenizer_sums_the_counts_of_the_parts() {
        let h = tool_history();
        let system = "You are a careful coding agent.";
        let input = ReplayInput { system_instruction: Some(system), ..ReplayInput::history("t", &h) };
        let model = std::sync::Arc::new(QuarterBytes { calls: Default::default() });
        let (settings, counter) = model_settings(&model);
        let overhead = quarter(&[model_counter::text_as_content(system)]) + settings.tool_declaration_tokens;
        let none = run(&strategies::none::spec(), input, &settings);
        assert_eq!(none.error, None);
        let expected: Vec<u64> = (0..h.len())
            .filter(|&i| history::is_model(&h[i]))
            .map(|i| overhead + h[..i].iter().map(|c| quarter(std::slice::from_ref(c))).sum::<u64>())
            .collect();
        assert_eq!(none.request_tokens, expected);
        let after_none = model.calls.load(Ordering::Relaxed);
        assert_eq!(after_none, counter.distinct_counted());

        let r = run(&strategies::observation_masking::spec(1, "[omitted]"), input, &settings);
        assert_eq!(r.error, None);
        assert!(!r.events.is_empty());
        for e in &r.events {
            assert_eq!(e.request_tokens_after, r.request_tokens[e.request]);
            assert!(e.request_tokens_after < e.request_tokens_before, "{e:?}");
        }
        assert_eq!(r.none_request_tokens_total, none.request_tokens_total);
        // The second replay counted only the Contents masking rewrote.
        assert_eq!(model.calls.load(Ordering::Relaxed), counter.distinct_counted());
        assert!(counter.distinct_counted() > after_none);
    }

    /// A failed count stops that conversation with the error in its result; a model tokenizer without a
    /// counter is an error too. Neither panics.
    #[test]
    fn a_failed_count_fails_the_conversation() {
        let mut h = tool_history();
        h.insert(3, text("user", "FAIL here"));
        let model = std::sync::Arc::new(QuarterBytes { calls: Default::default() });
        let (settings, _) = model_settings(&model);
        let r = run(&strategies::none::spec(), ReplayInput::history("t", &h), &settings);
        let e = r.error.unwrap().to_string();
        assert!(e.contains("tokenizer `test:quarter`") && e.contains("connection refused"), "{e}");
        // A Content a strategy wrote fails when it is measured, mid-replay: the figures stop there.
        let masking = strategies::observation_masking::spec(1, "FAIL");
        let r = run(&masking, ReplayInput::history("t", &tool_history()), &settings);
        let e = r.error.unwrap().to_string();
        assert!(e.starts_with("turn ") && e.contains("connection refused"), "{e}");
        assert!(r.requests > 0 && r.events.is_empty());

        let bare = ReplaySettings { counter: CounterHandle::default(), ..settings };
        let r = run(&strategies::none::spec(), ReplayInput::history("t", &tool_history()), &bare);
        assert!(r.error.unwrap().to_string().contains("no token counter"));
    }
}
