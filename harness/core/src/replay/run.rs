//! The entry points: one conversation replayed through a built strategy or a strategy spec, with or
//! without an observer.

use super::observer::{NoObserver, ReplayObserver};
use super::results::{ConversationResult, ReplayError};
use super::strategy::{Compressor, StrategySpec};
use super::turns::replay_prepared;
use super::uncompressed::Uncompressed;
use super::{ReplayInput, ReplaySettings};
use crate::llm::LanguageModel;

/// Replays one conversation through one strategy. Never fails: an error stops this conversation's replay
/// and is recorded in the result. A relative window is resolved against the conversation's uncompressed
/// peak here, but `strategy` must have been built with the same window ([`StrategySpec::with_token_limit`]); the
/// sweep runner does both through [`replay_spec`].
pub async fn replay(
    input: ReplayInput<'_>,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
) -> ConversationResult {
    replay_observed(input, strategy, settings, llm, &mut NoObserver).await
}

/// [`replay`] with an observer.
pub async fn replay_observed(
    input: ReplayInput<'_>,
    strategy: &dyn Compressor,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    match Uncompressed::new(&input, settings).await {
        Ok(uncompressed) => replay_prepared(input, &uncompressed, strategy, settings, llm, observer).await,
        Err(e) => failed(&input, ReplayError::Tokenizer { turn: None, message: e.to_string() }),
    }
}

/// The result of a replay that could not start.
fn failed(input: &ReplayInput<'_>, error: ReplayError) -> ConversationResult {
    ConversationResult {
        conversation: input.id.to_string(),
        contents: input.history.len(),
        error: Some(error),
        ..Default::default()
    }
}

/// Replays a strategy spec, building it with the window resolved for this conversation.
pub async fn replay_spec(
    input: ReplayInput<'_>,
    spec: &StrategySpec,
    settings: &ReplaySettings,
    llm: &dyn LanguageModel,
    observer: &mut dyn ReplayObserver,
) -> ConversationResult {
    let uncompressed = match Uncompressed::new(&input, settings).await {
        Ok(u) => u,
        Err(e) => return failed(&input, ReplayError::Tokenizer { turn: None, message: e.to_string() }),
    };
    let limit = settings.token_limit.resolve(uncompressed.window_basis());
    let spec = spec.with_token_limit(limit);
    match spec.build() {
        Ok(strategy) => {
            let mut result = replay_prepared(input, &uncompressed, strategy.as_ref(), settings, llm, observer).await;
            result.trigger_tokens = spec.trigger_tokens();
            result.summarizes = spec.summarizes();
            result
        }
        Err(e) => failed(&input, ReplayError::Config(e.to_string())),
    }
}
