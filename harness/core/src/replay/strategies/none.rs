//! Never compress: the upper bound on what the agent knows, the lower bound on savings.

use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct NoCompression;

impl Strategy for NoCompression {
    fn name(&self) -> &'static str {
        "none"
    }
    fn about(&self) -> &'static str {
        "never compress (the baseline every cost is compared with)"
    }
    fn role(&self) -> Role {
        Role::NoCompression
    }
    fn uses_llm(&self) -> bool {
        false
    }
    fn knobs(&self) -> Vec<Knob> {
        Vec::new()
    }
    fn expand(&self, _: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        Ok(vec![Variant { params: Params::new(), axes: BTreeMap::new(), summarizer: None }])
    }
    fn configure(&self, _: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(NoneCompressor))
    }
}

/// The spec of `none`.
pub fn spec() -> StrategySpec {
    StrategySpec::configure("none", Params::new()).expect("`none` takes no parameters")
}

struct NoneCompressor;

impl Compressor for NoneCompressor {
    fn start(&self, _: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(NoneSession)
    }
}

struct NoneSession;

#[async_trait]
impl CompressorSession for NoneSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        Ok(TurnOutcome::noop(turn.last_prompt_tokens))
    }
}
