//! The first pass: the conversation replayed without compression. It measures every Content once (the
//! replay proper reuses the figures), gives the `none` figures of every request, and the peak a relative
//! window is resolved against.

use super::counter::CountError;
use super::counting::{overhead, Counting};
use super::stored::{Measure, Stored};
use super::window::WindowBasis;
use super::{ReplayInput, ReplaySettings};
use crate::history;

/// The conversation replayed without compression: every Content measured once (the replay reuses the
/// figures), and the `none` figures of every request.
pub struct Uncompressed {
    /// Per recorded Content: its measure when it entered the history unmerged.
    pub(super) measures: Vec<Option<Measure>>,
    pub(super) env: Option<Measure>,
    /// Per request: tokens of the request, of its pending turn (what appending it added), and of its prefix
    /// shared with the previous request (0 for the first).
    pub requests: Vec<u64>,
    pub(super) pending: Vec<u64>,
    pub cached: Vec<u64>,
    /// System prompt and tool declarations.
    pub overhead: u64,
}

impl Uncompressed {
    /// Fails only when the tokenizer is a model's and a count fails.
    pub async fn new(input: &ReplayInput<'_>, settings: &ReplaySettings) -> Result<Self, CountError> {
        let counting = Counting::of(settings)?;
        let overhead = overhead(input, settings, counting).await?;
        let mut stored = Stored::new(counting);
        let env = match &settings.env_text {
            Some(e) => stored.push(&history::user_text(e), None).await?,
            None => None,
        };
        let mut out = Uncompressed {
            measures: Vec::with_capacity(input.history.len()),
            env,
            requests: Vec::new(),
            pending: Vec::new(),
            cached: Vec::new(),
            overhead,
        };
        let mut previous: Option<Vec<u64>> = None;
        let mut before_pending = stored.measured();
        for turn in input.history {
            if history::is_model(turn) {
                let request = stored.measured() + overhead;
                out.pending.push(stored.measured() - before_pending.min(stored.measured()));
                out.cached.push(previous.as_ref().map_or(0, |p| overhead + stored.shared_prefix_tokens(p)));
                out.requests.push(request);
                previous = Some(stored.serials());
            }
            out.measures.push(stored.push(turn, None).await?);
            if history::is_model(turn) {
                before_pending = stored.measured();
            }
        }
        Ok(out)
    }

    /// The largest request without compression.
    pub fn peak(&self) -> u64 {
        self.requests.iter().copied().max().unwrap_or(self.overhead)
    }

    /// The largest request a trigger sees: every request but the last (a trigger sees the previous request).
    pub fn trigger_seen_peak(&self) -> u64 {
        self.requests.split_last().and_then(|(_, seen)| seen.iter().copied().max()).unwrap_or(0)
    }

    /// The first request (system prompt + tool declarations + first turn): the fixed part of every request.
    pub fn first_request(&self) -> u64 {
        self.requests.first().copied().unwrap_or(self.overhead)
    }

    /// What a relative window is resolved against.
    pub fn window_basis(&self) -> WindowBasis {
        WindowBasis { first_request: self.first_request(), peak: self.peak() }
    }
}
