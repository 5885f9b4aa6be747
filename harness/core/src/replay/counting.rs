//! How a replay counts tokens: the tokenizer (with the counter a model tokenizer needs), and the fixed part
//! of every request, the system prompt and the tool declarations.

use super::input::ReplayInput;
use super::model_counter::{self, CountError, TokenCounter};
use super::settings::ReplaySettings;
use super::window::Tokenizer;
use crate::history::Content;
use crate::tokens::images::{self, ImageBilling};
use crate::tokens::{self, Estimator};

/// How a replay counts: the tokenizer, with the counter a model tokenizer needs, the factor on its
/// counts ([`TokenScale`](super::settings::TokenScale), 1 unless set), and the rule that counts media (images, PDFs)
/// as the agent's provider bills them ([`ImageBilling`], from the conversation's source format). Media
/// are the provider's count, not the tokenizer's: the factor never applies to them.
#[derive(Clone, Copy)]
pub(super) struct Counting<'c> {
    by: By<'c>,
    scale: f64,
    billing: ImageBilling,
}

#[derive(Clone, Copy)]
enum By<'c> {
    O200k,
    Heuristic,
    Model(&'c dyn TokenCounter),
}

impl<'c> Counting<'c> {
    pub(super) fn of(settings: &'c ReplaySettings, billing: ImageBilling) -> Result<Self, CountError> {
        let by = match &settings.tokenizer {
            Tokenizer::O200k => By::O200k,
            Tokenizer::Heuristic => By::Heuristic,
            Tokenizer::Model(spec) => By::Model(settings.counter.get(spec)?),
        };
        Ok(Counting { by, scale: 1.0, billing })
    }

    /// o200k, unscaled, media billed as Gemini bills them.
    #[cfg(test)]
    pub(super) fn o200k() -> Self {
        Counting { by: By::O200k, scale: 1.0, billing: ImageBilling::Gemini }
    }

    /// The same tokenizer with every count multiplied by `scale` (each count rounded).
    pub(super) fn scaled(self, scale: f64) -> Self {
        Counting { scale, ..self }
    }

    /// The reference's heuristic, whose figures are estimates, not counts (never scaled).
    pub(super) fn is_heuristic(self) -> bool {
        matches!(self.by, By::Heuristic)
    }

    fn scale(self, n: u64) -> u64 {
        if self.scale == 1.0 {
            n
        } else {
            (n as f64 * self.scale).round() as u64
        }
    }

    /// Tokens of a text (a model counts it as one user Content).
    pub(super) async fn text(self, text: &str) -> Result<u64, CountError> {
        match self.by {
            By::O200k => Ok(self.scale(tokens::o200k_count_text(text))),
            By::Heuristic => Ok(Estimator::Current.text(&crate::json::JsStr::new(text))),
            By::Model(m) => Ok(self.scale(m.count(&model_counter::text_as_content(text)).await?)),
        }
    }

    /// Tokens of one Content (0 with the heuristic, which [`Measure::est`](super::stored::Measure::est)
    /// holds): its text by the tokenizer, scaled, plus its media as the provider bills them
    /// ([`media`](Self::media)). A model's tokenizer counts the Content without its media (the Content as
    /// it is when it holds none, so its counting request is unchanged; nothing when only media are left).
    pub(super) async fn content(self, c: &Content) -> Result<u64, CountError> {
        let text = match self.by {
            By::O200k => tokens::o200k_count_history_text(std::slice::from_ref(c)),
            By::Heuristic => return Ok(0),
            By::Model(m) => match images::without_media(c) {
                None => m.count(c).await?,
                Some(t) if crate::history::parts(&t).is_empty() => 0,
                Some(t) => m.count(&t).await?,
            },
        };
        Ok(self.scale(text) + self.media(c))
    }

    /// The tokens of a Content's media as the agent's provider bills them (0 with the heuristic, whose
    /// estimate counts them its own way).
    pub(super) fn media(self, c: &Content) -> u64 {
        match self.by {
            By::Heuristic => 0,
            By::O200k | By::Model(_) => images::content_media_tokens(c, self.billing),
        }
    }
}

/// The agent's recorded usage where it measures the context the replay holds
/// ([`PromptCountOrigin::counts_replayed_context`](super::window::PromptCountOrigin::counts_replayed_context)):
/// each request's recorded prompt tokens (a count of 0, a message the agent wrote itself, is none).
pub(super) fn recorded_count(input: &ReplayInput<'_>, turn: usize) -> Option<u64> {
    if !input.prompt_count_origin.counts_replayed_context() {
        return None;
    }
    input.recorded_prompt_tokens.get(turn).copied().flatten().filter(|&n| n > 0)
}

/// The index in the recorded history of the first Content after the agent's first compaction: requests
/// for model turns before it sent the uncompressed history.
pub(super) fn first_compaction_at(input: &ReplayInput<'_>) -> usize {
    input.recorded_compactions.iter().map(|c| c.at).min().unwrap_or(usize::MAX)
}

/// The factor that brings the replay's measured history onto the agent's recorded requests
/// ([`TokenScale::Recorded`](super::settings::TokenScale::Recorded)): over the requests before the agent's first
/// compaction that have a recorded count, `(history_k, recorded_k)`, the least-squares slope through the
/// first of them of the recorded growth over the measured growth, Σ Δm·Δr / Σ Δm². 1 where there are fewer
/// than two such requests, the history does not grow, or the slope is not positive.
///
/// The pairs are of the text alone: the caller takes the history's media tokens (the provider's own
/// count, never scaled) off both sides, so the factor fits the tokenizer's text against the provider's.
pub fn calibrated_scale(pairs: &[(u64, u64)]) -> f64 {
    let Some(&(m0, r0)) = pairs.first() else { return 1.0 };
    let (mut num, mut den) = (0.0, 0.0);
    for &(m, r) in &pairs[1..] {
        let (dm, dr) = (m as f64 - m0 as f64, r as f64 - r0 as f64);
        num += dm * dr;
        den += dm * dm;
    }
    let s = num / den;
    if den > 0.0 && s.is_finite() && s > 0.0 {
        s
    } else {
        1.0
    }
}

/// Tokens every request carries besides the history: the recorded system instruction and tool
/// declarations measured with the tokenizer, or the configured sizes where the conversation has none.
pub async fn request_overhead(input: &ReplayInput<'_>, settings: &ReplaySettings) -> Result<u64, CountError> {
    overhead(input, settings, Counting::of(settings, input.image_billing)?).await
}

pub(super) async fn overhead(
    input: &ReplayInput<'_>,
    settings: &ReplaySettings,
    counting: Counting<'_>,
) -> Result<u64, CountError> {
    let system = match input.system_instruction.filter(|s| !s.is_empty()) {
        Some(s) => counting.text(s).await?,
        None => settings.system_prompt_tokens,
    };
    let tools = match input.tools {
        Some(t) => {
            let mut text = String::new();
            crate::json::write_compact(t, crate::json::Numbers::Js, &mut text);
            counting.text(&text).await?
        }
        None => settings.tool_declaration_tokens,
    };
    Ok(system + tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibrated_scale_is_the_slope_of_a_growing_count() {
        assert_eq!(calibrated_scale(&[(10, 100), (20, 130), (40, 190)]), 3.0);
        assert_eq!(calibrated_scale(&[(10, 100)]), 1.0, "one request: nothing to fit");
        assert_eq!(calibrated_scale(&[(10, 100), (20, 90)]), 1.0, "a shrinking count is not a scale");
    }
}
