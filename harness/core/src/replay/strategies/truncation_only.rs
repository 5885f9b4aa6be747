//! Tool-output truncation only (the reference's fallback path, used as a strategy), at the threshold.

use super::reference_grid::{
    axis, base_settings, in_window, settings_trigger, threshold_knob, truncation_axes, truncation_knobs, Variants,
    THRESHOLD,
};
use crate::compress::truncate::{effective_max_chars, truncate_history_to_budget, TruncationSettings};
use crate::compress::{CompressSettings, CompressionStatus, MemoryToolOutputStore};
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use crate::tokens::Estimator;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct TruncationOnly;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct TruncationParams {
    settings: CompressSettings,
}

impl Strategy for TruncationOnly {
    fn name(&self) -> &'static str {
        "truncation-only"
    }
    fn about(&self) -> &'static str {
        "the reference's tool-output budget truncation alone, above the threshold (no model)"
    }
    fn uses_llm(&self) -> bool {
        false
    }
    fn role(&self) -> Role {
        Role::Ablation
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::InSettings
    }
    fn knobs(&self) -> Vec<Knob> {
        let mut k = vec![threshold_knob(0.5)];
        k.extend(truncation_knobs());
        k
    }
    fn expand(&self, g: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        let mut variants: Variants = vec![(base_settings(g, false), BTreeMap::new())];
        variants = axis(g, variants, THRESHOLD, |s, v: &f64| s.threshold = Some(*v))?;
        variants = truncation_axes(g, variants)?;
        variants
            .into_iter()
            .map(|(settings, axes)| {
                Ok(Variant { params: to_params(self.name(), &TruncationParams { settings })?, axes, summarizer: None })
            })
            .collect()
    }
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(parse_params::<TruncationParams>(self.name(), params)?))
    }
}

impl Compressor for TruncationParams {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(TruncationOnlySession {
            settings: in_window(&self.settings, conversation),
            next_id: 0,
            store: MemoryToolOutputStore::new("/tmp/compactbench/project"),
        })
    }
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        settings_trigger(&self.settings, token_limit)
    }
}

struct TruncationOnlySession {
    settings: CompressSettings,
    next_id: u64,
    store: MemoryToolOutputStore,
}

#[async_trait]
impl CompressorSession for TruncationOnlySession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        let limit = self.settings.token_limit();
        if !turn.force && (orig as f64) < self.settings.effective_threshold() * limit as f64 {
            return Ok(TurnOutcome::noop(orig));
        }
        let ts = TruncationSettings {
            variant: self.settings.truncation,
            budget: self.settings.function_response_budget,
            max_chars: effective_max_chars(limit, orig, self.settings.truncate_tool_output_threshold),
            estimator: Estimator::Current,
        };
        let t = truncate_history_to_budget(turn.stored, &ts, &mut self.next_id, &mut self.store);
        self.store.files.clear();
        let tc = self.settings.estimator.history(&t.history);
        if t.changed.is_empty() || tc >= orig {
            return Ok(TurnOutcome::noop(orig));
        }
        Ok(TurnOutcome::replaced(orig, tc, CompressionStatus::ContentTruncated, t.history))
    }
}
