//! The first pass: the conversation replayed without compression. It measures every Content once (the
//! replay proper reuses the figures), gives the `none` figures of every request, the peak a relative
//! window is resolved against, and what the recorded usage says: the fixed part of every request
//! ([`OverheadSource::Recorded`]), the factor on the tokenizer's counts ([`TokenScale::Recorded`]) and the
//! window the agent ran in ([`TokenLimit::Recorded`](super::window::TokenLimit::Recorded)).

use super::counting::{calibrated_scale, first_compaction_at, overhead, recorded_count, Counting};
use super::input::ReplayInput;
use super::model_counter::CountError;
use super::settings::{OverheadSource, ReplaySettings, TokenScale};
use super::stored::{Measure, Stored};
use super::window::{recorded_window, WindowBasis};
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
    /// System prompt and tool declarations (or, from the recorded usage, everything the agent sent besides
    /// the history).
    pub overhead: u64,
    /// The overhead came from the recorded usage.
    pub overhead_recorded: bool,
    /// The part of `overhead` the provider's cache still serves when the history's head changes (after a
    /// compaction): the system prompt and tool declarations. It is `overhead` where that was measured from
    /// them; where `overhead` came from the recorded usage it also holds what the agent sends at the head of
    /// its messages (instruction files, reminders), which a compaction rewrites, so the stable part is the
    /// recording's system prompt and tools (or `[replay] system_prompt_tokens + tool_declaration_tokens`
    /// where it records none), at most `overhead`. Where the recording has the provider's cache read on the
    /// first request after the agent's first compaction (`recorded_stable_prefix`), that read is the
    /// stable part instead (at most `overhead`): what the provider really kept across a compaction of this
    /// session. That request is then in-sample, and the cache check of `compactions.md` leaves it out.
    pub cache_stable_overhead: u64,
    /// The factor on every count of the tokenizer (1 unless `[replay] token_scale` sets or calibrates one).
    pub scale: f64,
    /// The window the recording implies (see [`recorded_window`]), where it says anything of it.
    pub recorded_window: Option<u64>,
}

/// One measuring pass over the uncompressed history.
struct Pass {
    measures: Vec<Option<Measure>>,
    env: Option<Measure>,
    /// Per request: the index of its model turn, the history it sends, its pending turn, and the history
    /// prefix it shares with the previous request (`None` for the first).
    turns: Vec<usize>,
    history: Vec<u64>,
    /// Per request: the part of `history` that is media (billed by the provider, never scaled).
    media: Vec<u64>,
    pending: Vec<u64>,
    shared: Vec<Option<u64>>,
}

impl Pass {
    async fn run(
        input: &ReplayInput<'_>,
        settings: &ReplaySettings,
        counting: Counting<'_>,
    ) -> Result<Pass, CountError> {
        let mut stored = Stored::new(counting);
        let env = match &settings.env_text {
            Some(e) => stored.push(&history::user_text(e), None).await?,
            None => None,
        };
        let mut pass = Pass {
            measures: Vec::with_capacity(input.history.len()),
            env,
            turns: Vec::new(),
            history: Vec::new(),
            media: Vec::new(),
            pending: Vec::new(),
            shared: Vec::new(),
        };
        let mut previous: Option<Vec<u64>> = None;
        let mut before_pending = stored.measured();
        for (i, turn) in input.history.iter().enumerate() {
            if history::is_model(turn) {
                pass.turns.push(i);
                pass.history.push(stored.measured());
                pass.media.push(stored.media());
                pass.pending.push(stored.measured() - before_pending.min(stored.measured()));
                pass.shared.push(previous.as_ref().map(|p| stored.shared_prefix_tokens(p)));
                previous = Some(stored.serials());
            }
            pass.measures.push(stored.push(turn, None).await?);
            if history::is_model(turn) {
                before_pending = stored.measured();
            }
        }
        Ok(pass)
    }

    /// `(history, recorded, media)` of the requests before the agent's first compaction that have a recorded
    /// count.
    fn recorded_pairs(&self, input: &ReplayInput<'_>) -> Vec<(u64, u64, u64)> {
        let before = first_compaction_at(input);
        self.turns
            .iter()
            .zip(self.history.iter().zip(&self.media))
            .filter(|(&turn, _)| turn < before)
            .filter_map(|(&turn, (&h, &m))| Some((h, recorded_count(input, turn)?, m)))
            .collect()
    }

    /// `(history the request carried, recorded, the part of that history that is media)` of the requests of
    /// the first stretch of the recording whose history the replay knows and that has recorded counts:
    /// before the agent's first compaction; else, for a session that opens with a compaction (continued
    /// from an earlier one), from that compaction (the history the agent continued from, then what followed)
    /// to the next.
    async fn recorded_stretch(
        &self,
        input: &ReplayInput<'_>,
        counting: Counting<'_>,
    ) -> Result<Vec<(u64, u64, u64)>, CountError> {
        let before = self.recorded_pairs(input);
        let mut compactions: Vec<_> = input.recorded_compactions.iter().collect();
        compactions.sort_by_key(|c| c.at);
        let (Some(first), true) = (compactions.first(), before.is_empty()) else { return Ok(before) };
        let end = compactions.get(1).map_or(input.history.len(), |c| c.at.min(input.history.len()));
        let mut stored = Stored::new(counting);
        for c in first.history() {
            stored.push(&c, None).await?;
        }
        // As `recorded` replays it: the history is replaced before the first request at or after the
        // compaction, and that request's pending user turns follow the summary.
        let start =
            input.history[..first.at.min(input.history.len())].iter().rposition(history::is_model).map_or(0, |i| i + 1);
        let mut pairs = Vec::new();
        for (turn, content) in input.history.iter().enumerate().take(end).skip(start) {
            if history::is_model(content) {
                pairs.extend(recorded_count(input, turn).map(|r| (stored.measured(), r, stored.media())));
            }
            stored.push(content, None).await?;
        }
        Ok(pairs)
    }
}

/// The provider's cache read on the first request after the agent's first compaction that records one:
/// the prefix that survived the compaction (system prompt, tools, what the agent keeps at the head).
pub fn recorded_stable_prefix(input: &ReplayInput<'_>) -> Option<u64> {
    input
        .recorded_compactions
        .iter()
        .find_map(|c| input.recorded_cache.iter().skip(c.at).find_map(|u| u.as_ref()).map(|u| u.read))
}

impl Uncompressed {
    /// Fails only when the tokenizer is a model's and a count fails.
    pub async fn new(input: &ReplayInput<'_>, settings: &ReplaySettings) -> Result<Self, CountError> {
        let unscaled = Counting::of(settings, input.image_billing)?;
        let mut pass = Pass::run(input, settings, unscaled).await?;
        let scale = match settings.token_scale {
            TokenScale::Factor(f) => f,
            // The factor fits the text: media are the provider's own count on both sides (never scaled),
            // so they come off the measured history and off the recorded request alike.
            TokenScale::Recorded => {
                let stretch = pass.recorded_stretch(input, unscaled).await?;
                let text: Vec<(u64, u64)> =
                    stretch.iter().map(|&(h, r, m)| (h.saturating_sub(m), r.saturating_sub(m))).collect();
                calibrated_scale(&text)
            }
        };
        let counting = unscaled.scaled(scale);
        if scale != 1.0 {
            pass = Pass::run(input, settings, counting).await?;
        }
        let first_recorded = match settings.overhead {
            OverheadSource::Recorded => pass.recorded_stretch(input, counting).await?.first().map(|&(h, r, _)| (h, r)),
            OverheadSource::Measured => None,
        };
        let declared = overhead(input, settings, counting).await?;
        let overhead = match first_recorded {
            Some((history, recorded)) => recorded.saturating_sub(history),
            None => declared,
        };
        let recorded_peak = (0..input.history.len())
            .filter_map(|turn| recorded_count(input, turn))
            .chain(input.recorded_compactions.iter().filter_map(|c| compaction_pre_tokens(c.extra.as_ref())))
            .max()
            .unwrap_or(0);
        Ok(Uncompressed {
            requests: pass.history.iter().map(|h| h + overhead).collect(),
            cached: pass.shared.iter().map(|s| s.map_or(0, |s| overhead + s)).collect(),
            measures: pass.measures,
            env: pass.env,
            pending: pass.pending,
            overhead,
            overhead_recorded: first_recorded.is_some(),
            cache_stable_overhead: recorded_stable_prefix(input).unwrap_or(declared).min(overhead),
            scale,
            recorded_window: recorded_window(input.prompt_count_origin, input.context_window, recorded_peak),
        })
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
        WindowBasis { first_request: self.first_request(), peak: self.peak(), recorded: self.recorded_window }
    }
}

/// The context size the agent counted when it compacted, where the compaction records it (Claude Code's
/// `compactMetadata.preTokens`).
fn compaction_pre_tokens(extra: Option<&crate::json::Value>) -> Option<u64> {
    let n = extra?.get("preTokens")?.as_f64()?;
    (n.is_finite() && n > 0.0).then_some(n as u64)
}
