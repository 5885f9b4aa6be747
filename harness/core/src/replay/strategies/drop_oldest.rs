//! Sliding window at user-turn boundaries: above the threshold, drop the oldest turns until the history
//! fits `keep_fraction × window` tokens.

use super::reference_grid::{threshold_knob, THRESHOLD};
use crate::compress::CompressionStatus;
use crate::history;
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use crate::tokens::Estimator;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub struct DropOldest;

/// The knob of the share of the window kept (named apart from other strategies' keep fractions).
pub const KEEP_FRACTION: &str = "drop_keep_fraction";

/// Stored parameters (the field order is part of the point id).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DropOldestParams {
    pub threshold: f64,
    pub keep_fraction: f64,
}

impl Strategy for DropOldest {
    fn name(&self) -> &'static str {
        "drop-oldest"
    }
    fn about(&self) -> &'static str {
        "sliding window: above the threshold, drop the oldest turns down to a share of the window (no model)"
    }
    fn uses_llm(&self) -> bool {
        false
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::At(2)
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            threshold_knob(0.5),
            Knob::number(KEEP_FRACTION, 0.3, Bound::Open(0.0), Bound::Open(1.0), "share of the window kept")
                .labelled("drop-keep")
                .headed("drop keep"),
        ]
    }
    fn expand(&self, g: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        let mut out = Vec::new();
        for (threshold, t_shown) in g.values::<f64>(THRESHOLD)? {
            for (keep_fraction, k_shown) in g.values::<f64>(KEEP_FRACTION)? {
                let p = DropOldestParams { threshold, keep_fraction };
                let axes = [(THRESHOLD.to_string(), t_shown.clone()), (KEEP_FRACTION.to_string(), k_shown)];
                out.push(Variant {
                    params: to_params(self.name(), &p)?,
                    axes: axes.into_iter().collect(),
                    summarizer: None,
                });
            }
        }
        Ok(out)
    }
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(parse_params::<DropOldestParams>(self.name(), params)?))
    }
}

impl Compressor for DropOldestParams {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(DropOldestSession { p: self.clone(), token_limit: conversation.window.token_limit })
    }
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        Some(threshold_trigger(self.threshold, token_limit))
    }
}

/// The spec of `drop-oldest` (tests).
pub fn spec(p: DropOldestParams) -> StrategySpec {
    StrategySpec::new("drop-oldest", &p).expect("plain numbers serialize")
}

struct DropOldestSession {
    p: DropOldestParams,
    token_limit: u64,
}

#[async_trait]
impl CompressorSession for DropOldestSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let (p, window) = (&self.p, self.token_limit as f64);
        let orig = turn.last_prompt_tokens;
        if !turn.force && (orig as f64) < p.threshold * window {
            return Ok(TurnOutcome::noop(orig));
        }
        let budget = p.keep_fraction * window;
        // Walk back from the newest turn; cut at the oldest plain user turn whose suffix fits the budget.
        let mut suffix = 0.0;
        let mut cut = turn.stored.len();
        for (i, c) in turn.stored.iter().enumerate().rev() {
            suffix += Estimator::Current.content_raw(c);
            if suffix > budget {
                break;
            }
            if history::is_user(c) && !history::has_function_response(c) {
                cut = i;
            }
        }
        if cut == 0 || cut == turn.stored.len() {
            return Ok(TurnOutcome::noop(orig));
        }
        let kept = turn.stored[cut..].to_vec();
        let new = Estimator::Current.history(&kept);
        Ok(TurnOutcome::replaced(orig, new, CompressionStatus::Compressed, kept))
    }
}
