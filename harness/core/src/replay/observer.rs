//! What watches a replay: the observer the probes implement, and the history a first-pass summary would
//! have given.

use super::results::CompressionEvent;
use crate::history::{self, Content};

/// Watches a replay: probes score what the agent still knows at each compression and at the end.
#[async_trait::async_trait]
pub trait ReplayObserver: Send {
    /// After every recorded event (status other than NOOP, or forced), with the stored history the agent
    /// would now send, and, when a verification pass replaced the first summary, the history the first
    /// summary would have given.
    async fn after_event(
        &mut self,
        event_index: usize,
        event: &CompressionEvent,
        stored: &[Content],
        first_pass: Option<&[Content]>,
    );
    /// After the last request, with the final stored history.
    async fn at_end(&mut self, stored: &[Content]);
}

/// Observes nothing.
pub struct NoObserver;

#[async_trait::async_trait]
impl ReplayObserver for NoObserver {
    async fn after_event(&mut self, _: usize, _: &CompressionEvent, _: &[Content], _: Option<&[Content]>) {}
    async fn at_end(&mut self, _: &[Content]) {}
}

/// The stored history with the final summary swapped for the first-pass one.
pub(super) fn first_pass_history(stored: &[Content], first: &str, final_summary: &str) -> Option<Vec<Content>> {
    let first = crate::compress::js_trim(first);
    if first.is_empty() || first == final_summary {
        return None;
    }
    let i = stored.iter().position(|c| history::visible_text(c).contains(final_summary))?;
    let mut out = stored.to_vec();
    let replaced = history::visible_text(&out[i]).replacen(final_summary, first, 1);
    out[i] = history::text_content(history::role(&stored[i]).unwrap_or("user"), &replaced);
    Some(out)
}
