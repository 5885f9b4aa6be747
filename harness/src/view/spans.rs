//! Where each compression event's history lies in the recording. Cells keep an event's counts (Contents
//! before and after, summarised, kept), not the histories themselves, so the page locates them: before the
//! request of recorded model turn `T`, the replay's stored history is a head the strategy wrote (earlier
//! summaries, kept messages, the environment turn) followed by the recorded Contents from the last
//! verbatim point `v` up to the request's pending turns, curated as the replay stores them (thoughts
//! stripped, consecutive turns of one role merged). A replacing event keeps the newest `kept` of those
//! stored Contents, so it replaced the recorded Contents between `v` and the start of that tail, which
//! becomes the next `v`. The replay-backed test in `tests/it/view.rs` checks this against the histories a
//! replay really stored.

use crate::compress::{curated, CompressionStatus};
use crate::history::{self, Content};
use crate::replay::CompressionEvent;
use serde::Serialize;

/// What an event did to the stored history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acted {
    /// A new history replaced the recorded Contents `from..to` (by a summary, or by nothing).
    Replaced,
    /// Contents were rewritten in place (masked or truncated tool outputs); which ones, the cell does not
    /// record.
    InPlace,
    /// The history stayed as it was (a failed, inflated or empty compression).
    Unchanged,
}

/// One event's place in the recording: the recorded Contents `from..to` went into the new history's head
/// (summarised or dropped), `to..end` stayed verbatim, and `end` is where the request's pending turns
/// start (they are appended after the event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    pub from: usize,
    pub to: usize,
    pub end: usize,
    pub acted: Acted,
}

/// Index in the recording of each request's model turn, in request order: the replay makes one request per
/// recorded model turn.
pub fn request_turns(history: &[Content]) -> Vec<usize> {
    (0..history.len()).filter(|&i| history::is_model(&history[i])).collect()
}

/// How many Contents the replay stores for any run of recorded Contents, answered in O(1) after one pass:
/// which Contents survive thought stripping, and which of those start a new stored Content (the previous
/// survivor has another role; same roles merge).
struct StoredShape {
    /// `next_survivor[i]`: the first surviving Content at or after `i` (`len` when none).
    next_survivor: Vec<usize>,
    /// `starts[i]`: surviving Contents in `..i` that start a new stored Content after the survivor before
    /// them (the first survivor of the recording counts too).
    starts: Vec<usize>,
}

impl StoredShape {
    fn new(history: &[Content]) -> Self {
        let n = history.len();
        let mut starts = vec![0; n + 1];
        let mut previous: Option<&Content> = None;
        let mut survives = vec![false; n];
        for (i, c) in history.iter().enumerate() {
            // The replay's own rules, on copies (Contents are shared, so a copy costs a reference count).
            let mut stripped = c.clone();
            survives[i] = curated::strip_thoughts(&mut stripped);
            let starts_new = survives[i] && previous.is_none_or(|p| !curated::coalesce_into(&mut p.clone(), &stripped));
            starts[i + 1] = starts[i] + starts_new as usize;
            if survives[i] {
                previous = Some(c);
            }
        }
        let mut next_survivor = vec![n; n + 1];
        for i in (0..n).rev() {
            next_survivor[i] = if survives[i] { i } else { next_survivor[i + 1] };
        }
        StoredShape { next_survivor, starts }
    }

    /// Stored Contents the recorded Contents `from..end` become when appended to a history whose last
    /// Content cannot merge with them (a strategy's head ends with a model turn or the tail starts with a
    /// user turn).
    fn stored_len(&self, from: usize, end: usize) -> usize {
        let first = self.next_survivor[from.min(self.next_survivor.len() - 1)];
        if first >= end {
            return 0;
        }
        1 + self.starts[end] - self.starts[first + 1]
    }

    /// The latest `v` in `from..=end` whose Contents `v..end` store as at most `kept` Contents: the start of
    /// the verbatim tail an event kept.
    fn tail_start(&self, from: usize, end: usize, kept: usize) -> usize {
        let (mut lo, mut hi) = (from, end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.stored_len(mid, end) <= kept {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

/// Stored Contents an event replaced at the head of the history: the ones it summarised, else (a strategy
/// that drops without a summary) those it no longer holds; 0 when it rewrote the history in place.
fn replaced_head(e: &CompressionEvent) -> usize {
    if e.summarized_contents > 0 {
        e.summarized_contents.min(e.stored_contents_before)
    } else {
        e.stored_contents_before.saturating_sub(e.stored_contents_after)
    }
}

/// Each event's [`Span`], in event order.
pub fn event_spans(history: &[Content], events: &[CompressionEvent]) -> Vec<Span> {
    let shape = StoredShape::new(history);
    let turns = request_turns(history);
    let mut verbatim_from = 0;
    events
        .iter()
        .map(|e| {
            // The request's pending turns start after the previous model turn.
            let end = turns.iter().take_while(|&&t| t < e.turn).last().map_or(0, |t| t + 1).min(history.len());
            let from = verbatim_from.min(end);
            let head = replaced_head(e);
            let acted = match e.status {
                CompressionStatus::Compressed if head > 0 => Acted::Replaced,
                CompressionStatus::Compressed | CompressionStatus::ContentTruncated => Acted::InPlace,
                _ => Acted::Unchanged,
            };
            let to = match acted {
                Acted::Replaced => {
                    let kept = e.stored_contents_before - head;
                    shape.tail_start(from, end, kept)
                }
                Acted::InPlace | Acted::Unchanged => from,
            };
            verbatim_from = to;
            Span { from, to, end, acted }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    fn history(json: &str) -> Vec<Content> {
        parse_str(json).unwrap().as_array().unwrap().to_vec()
    }

    fn event(turn: usize, before: usize, summarized: usize, after: usize) -> CompressionEvent {
        CompressionEvent {
            turn,
            status: CompressionStatus::Compressed,
            stored_contents_before: before,
            summarized_contents: summarized,
            stored_contents_after: after,
            ..Default::default()
        }
    }

    const SIX_ROUNDS: &str = r#"[
        {"role":"user","parts":[{"text":"u0"}]},{"role":"model","parts":[{"text":"m1"}]},
        {"role":"user","parts":[{"text":"u2"}]},{"role":"user","parts":[{"text":"u3 merges into u2"}]},
        {"role":"model","parts":[{"text":"m4"}]},
        {"role":"user","parts":[{"text":"u5"}]},{"role":"model","parts":[{"text":"thinking","thought":true}]},
        {"role":"model","parts":[{"text":"m7"}]},
        {"role":"user","parts":[{"text":"u8"}]},{"role":"model","parts":[{"text":"m9"}]},
        {"role":"user","parts":[{"text":"u10"}]},{"role":"model","parts":[{"text":"m11"}]}]"#;

    #[test]
    fn stored_lengths_follow_the_curation_rules() {
        let h = history(SIX_ROUNDS);
        let shape = StoredShape::new(&h);
        // u0 m1 (u2+u3) m4 u5 (m7; the thought-only turn is dropped) u8 m9 u10 m11.
        assert_eq!(shape.stored_len(0, 12), 10);
        assert_eq!(shape.stored_len(3, 5), 2, "u3 alone, then m4");
        assert_eq!(shape.stored_len(6, 8), 1, "the dropped thought turn stores nothing");
        assert_eq!(shape.stored_len(7, 7), 0);
        assert_eq!(request_turns(&h), vec![1, 4, 6, 7, 9, 11]);
    }

    #[test]
    fn a_replacing_event_replaces_up_to_its_kept_tail_and_the_next_starts_there() {
        let h = history(SIX_ROUNDS);
        // Before the request of m9 the history holds u0..m7 as 6 stored Contents; the first event summarises
        // 4 of them and keeps the last 2 (u5, m7). The second, before m11, holds summary + ack + u5 m7 u8 m9
        // (6): it summarises 4 and keeps u8 m9.
        let spans = event_spans(&h, &[event(9, 6, 4, 4), event(11, 6, 4, 4)]);
        assert_eq!(spans[0], Span { from: 0, to: 5, end: 8, acted: Acted::Replaced });
        assert_eq!(spans[1], Span { from: 5, to: 8, end: 10, acted: Acted::Replaced });
    }

    #[test]
    fn a_drop_without_summary_replaces_what_it_no_longer_holds_and_in_place_edits_move_nothing() {
        let h = history(SIX_ROUNDS);
        let dropped = event(9, 6, 0, 2);
        let masked = CompressionEvent { status: CompressionStatus::ContentTruncated, ..event(11, 4, 0, 4) };
        let failed = CompressionEvent { status: CompressionStatus::FailedInflatedTokenCount, ..event(11, 4, 4, 4) };
        let spans = event_spans(&h, &[dropped, masked, failed]);
        assert_eq!(spans[0], Span { from: 0, to: 5, end: 8, acted: Acted::Replaced });
        assert_eq!(spans[1], Span { from: 5, to: 5, end: 10, acted: Acted::InPlace });
        assert_eq!(spans[2], Span { from: 5, to: 5, end: 10, acted: Acted::Unchanged });
    }
}
