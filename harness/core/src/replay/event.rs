//! One compression event as the results record it, from what the strategy answered and the request sizes
//! on both sides.

use super::results::{self, CompressionEvent};
use super::settings::ReplaySettings;
use super::strategy::TurnOutcome;
use crate::compress::CompressionStatus;
use crate::tokens::Estimator;

pub(super) fn build_event(
    turn: usize,
    request: usize,
    forced: bool,
    outcome: &TurnOutcome,
    before_contents: usize,
    (request_before, request_after): (u64, u64),
    settings: &ReplaySettings,
) -> CompressionEvent {
    let info = outcome.info;
    let status = info.compression_status;
    // The strategy reported a smaller (COMPRESSED, CONTENT_TRUNCATED) or a larger (INFLATED) history.
    let reported_smaller = matches!(status, CompressionStatus::Compressed | CompressionStatus::ContentTruncated);
    let reported_larger = status == CompressionStatus::FailedInflatedTokenCount;
    let mut e = CompressionEvent {
        turn,
        request,
        forced,
        status,
        status_code: status.code(),
        reference_original_tokens: info.original_token_count,
        reference_new_tokens: info.new_token_count,
        request_tokens_before: request_before,
        request_tokens_after: request_after,
        reduction: results::reduction(request_before, request_after),
        stored_contents_before: before_contents,
        stored_contents_after: outcome.replaced.as_ref().map(Vec::len).unwrap_or(before_contents),
        hidden_inflation: reported_smaller && request_after > request_before,
        hidden_deflation: reported_larger && request_after < request_before,
        ..Default::default()
    };
    if let Some(t) = &outcome.trace {
        e.summarized_contents = t.summarized_contents;
        e.kept_contents = t.kept_contents;
        e.truncated_outputs = t.truncated.len();
        e.summarizer_calls = t.llm_calls.len() as u32;
        e.anchored = t.anchored_on_previous_snapshot;
        let reported_in: u64 = t.llm_calls.iter().map(|c| c.usage.prompt_tokens).sum();
        let reported_out: u64 = t.llm_calls.iter().map(|c| c.usage.output_tokens).sum();
        // Backends without usage (scripted, extractive): estimate from what was sent and returned.
        e.summarizer_input_tokens = if reported_in > 0 || t.llm_calls.is_empty() {
            reported_in
        } else {
            t.llm_calls.iter().map(|c| c.prompt_estimate).sum()
        };
        e.summarizer_output_tokens = if reported_out > 0 {
            reported_out
        } else {
            t.llm_calls.iter().map(|c| (c.response_chars / 4) as u64).sum()
        };
        if let (Some(first), Some(_)) = (&t.first_summary, &t.verified_summary) {
            let est = |s: &str| Estimator::Current.text(&crate::json::JsStr::new(s)) as i64;
            let final_text = t.final_summary.as_deref().unwrap_or(first);
            e.verification = Some(results::verification_delta(first, final_text, est(final_text) - est(first)));
        }
        if settings.keep_summaries {
            e.first_summary = t.first_summary.clone();
            e.final_summary = t.final_summary.clone();
        }
    }
    e
}
