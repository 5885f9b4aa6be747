//! The figures of a conversation's result: opened with what the recorded history and the uncompressed pass
//! say, one request added at a time (sizes, cacheable prefix, overflow of the window, beside the `none`
//! figures of the same request), closed with the totals.

use super::input::ReplayInput;
use super::results::ConversationResult;
use super::settings::{PromptCountSource, ReplaySettings, TokenScale};
use super::uncompressed::Uncompressed;
use crate::compress::SplitVariant;
use crate::history::{self, Content};
use std::collections::BTreeMap;

/// A history with no split candidate after its first Content (a user turn without function responses):
/// one task followed only by tool responses. The current `findCompressSplitPoint` then returns 0 and the
/// reference cannot compress it.
pub fn is_unsplittable(history: &[Content]) -> bool {
    !history.iter().skip(1).any(|c| history::is_user(c) && !history::has_function_response(c))
}

/// Where each historical split variant would split the history the strategy sees before the last request
/// (through the model turn before it), keeping the default 30 %.
fn split_points(history: &[Content]) -> (BTreeMap<String, usize>, usize) {
    let models: Vec<usize> = (0..history.len()).filter(|&i| history::is_model(&history[i])).collect();
    let end = match models.as_slice() {
        [.., previous, _last] => previous + 1,
        _ => history.len(),
    };
    let seen = &history[..end];
    let points =
        SplitVariant::ALL.iter().filter_map(|v| Some((v.name().to_string(), v.split(seen, 0.7).ok()?))).collect();
    (points, seen.len())
}

/// Whether the trigger sees the recorded API counts: asked for, and the counts measure the context the
/// replay holds.
pub(super) fn uses_recorded_counts(input: &ReplayInput<'_>, settings: &ReplaySettings) -> bool {
    settings.prompt_count_source == PromptCountSource::Recorded && input.prompt_count_origin.counts_replayed_context()
}

/// The result before the first request: what the recorded history and the uncompressed pass give.
pub(super) fn opening_result(
    input: &ReplayInput<'_>,
    uncompressed: &Uncompressed,
    settings: &ReplaySettings,
    token_limit: u64,
) -> ConversationResult {
    let prompt_count_source = match settings.prompt_count_source {
        PromptCountSource::Recorded if !uses_recorded_counts(input, settings) => {
            format!("measured ({} counts not comparable)", input.prompt_count_origin.name())
        }
        PromptCountSource::Recorded => format!("recorded ({})", input.prompt_count_origin.name()),
        s => s.name().to_string(),
    };
    let unsplittable = is_unsplittable(input.history);
    let (split_points, split_history_contents) =
        if unsplittable { split_points(input.history) } else { (BTreeMap::new(), 0) };
    ConversationResult {
        conversation: input.id.to_string(),
        contents: input.history.len(),
        token_limit,
        none_peak_request_tokens: uncompressed.peak(),
        none_trigger_seen_peak_tokens: uncompressed.trigger_seen_peak(),
        first_request_tokens: uncompressed.first_request(),
        token_scale: (uncompressed.scale != 1.0 || settings.token_scale != TokenScale::default())
            .then_some(uncompressed.scale),
        recorded_overhead_tokens: uncompressed.overhead_recorded.then_some(uncompressed.overhead),
        prompt_count_source,
        unsplittable,
        split_points,
        split_history_contents,
        ..Default::default()
    }
}

/// Adds the next request, of `request` tokens whose first `cached` tokens repeat the previous request, next
/// to the same request without compression; `per_request_cache`: also keep `cached` per request (the
/// recording has the provider's cache traffic to compare it with).
pub(super) fn record_request(
    result: &mut ConversationResult,
    uncompressed: &Uncompressed,
    token_limit: u64,
    (request, cached): (u64, u64),
    per_request_cache: bool,
) {
    if per_request_cache {
        result.cached_request_tokens.push(cached);
    }
    let k = result.requests;
    result.requests += 1;
    result.request_tokens.push(request);
    result.request_tokens_total += request;
    result.cached_request_tokens_total += cached;
    result.peak_request_tokens = result.peak_request_tokens.max(request);
    result.overflow_requests += (request > token_limit) as u64;
    let none_request = uncompressed.requests.get(k).copied().unwrap_or(request);
    result.none_request_tokens_total += none_request;
    result.none_cached_request_tokens_total += uncompressed.cached.get(k).copied().unwrap_or(0);
    result.none_overflow_requests += (none_request > token_limit) as u64;
}

/// Adds the agent's recorded count of the request just recorded (model turn `turn`), for conversations
/// whose recorded usage measures the replayed context; `as_recorded`: the replay sent the agent's own
/// history (before the agent's first compaction and any change of the strategy's), which extends
/// `recorded_before_requests`.
pub(super) fn record_recorded_count(
    result: &mut ConversationResult,
    input: &ReplayInput<'_>,
    turn: usize,
    as_recorded: bool,
) {
    if !input.prompt_count_origin.counts_replayed_context() || input.recorded_prompt_tokens.is_empty() {
        return;
    }
    result.recorded_request_tokens.push(super::counting::recorded_count(input, turn));
    if !input.recorded_cache.is_empty() {
        let read = input.recorded_cache.get(turn).copied().flatten().map(|u| u.read);
        result.recorded_cache_read_tokens.push(read);
    }
    if as_recorded && result.recorded_before_requests + 1 == result.recorded_request_tokens.len() {
        result.recorded_before_requests += 1;
    }
}

/// The totals over the events, and the history the replay ends with (`final_history_tokens`: as a request).
pub(super) fn close(result: &mut ConversationResult, final_history_tokens: u64, final_history_contents: usize) {
    result.summarizer_input_tokens_total = result.events.iter().map(|e| e.summarizer_input_tokens).sum();
    result.summarizer_output_tokens_total = result.events.iter().map(|e| e.summarizer_output_tokens).sum();
    result.final_history_tokens = final_history_tokens;
    result.final_history_contents = final_history_contents;
}
