//! The price table (`[cost]` of a sweep config) and what a conversation costs under it, with and without
//! the provider's prompt cache. Metrics read costs from here; sweeps carry the table in their plan.

use crate::replay::ConversationResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Prices of one model, in USD per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_input_per_mtok: f64,
    pub output_per_mtok: f64,
}

/// The `[cost]` table: prices per model, the model the agent's requests are priced as, and the model each
/// summarizer spec is priced as (so `extractive` and `local:*` cost what a real summarizer would).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CostConfig {
    pub agent_model: String,
    /// Summarizer spec → priced-as model. Specs not listed are priced by their model name
    /// (`gemini:gemini-2.5-flash` → `gemini-2.5-flash`).
    pub price_as: BTreeMap<String, String>,
    pub prices: BTreeMap<String, Price>,
}

impl Default for CostConfig {
    fn default() -> Self {
        // Gemini API list prices (paid tier, prompts ≤ 200k tokens), USD per 1M tokens.
        let p = |i, c, o| Price { input_per_mtok: i, cached_input_per_mtok: c, output_per_mtok: o };
        CostConfig {
            agent_model: "gemini-2.5-flash".into(),
            price_as: [("extractive", "gemini-2.5-flash"), ("local:smollm2-135m", "gemini-2.5-flash")]
                .into_iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            prices: [("gemini-2.5-flash", p(0.30, 0.03, 2.50)), ("gemini-2.5-pro", p(1.25, 0.125, 10.0))]
                .into_iter()
                .map(|(a, b)| (a.to_string(), b))
                .collect(),
        }
    }
}

impl CostConfig {
    fn price_of(&self, model: &str) -> Option<Price> {
        self.prices.get(model).copied()
    }

    /// The prices of a point: its agent model and its summarizer's priced-as model. `None` when the agent
    /// model has no price (USD figures are then absent).
    pub fn pricing(&self, summarizer: Option<&str>) -> Option<Pricing> {
        let agent = self.price_of(&self.agent_model)?;
        let summarizer = match summarizer {
            None => None,
            Some(spec) => {
                let model = self.price_as.get(spec).map(String::as_str).unwrap_or_else(|| {
                    let rest = spec.split_once(':').map_or(spec, |(_, m)| m);
                    rest.split('@').next().unwrap_or(rest)
                });
                Some(self.price_of(model)?)
            }
        };
        Some(Pricing { agent, summarizer })
    }

    /// Checks that every priced-as model has a price.
    pub fn validate(&self) -> Result<(), UnpricedModel> {
        for m in std::iter::once(&self.agent_model).chain(self.price_as.values()) {
            if !self.prices.contains_key(m) {
                return Err(UnpricedModel { model: m.clone() });
            }
        }
        Ok(())
    }
}

/// A model named in `[cost]` (as the agent model or a priced-as model) without a price.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("model `{model}` has no entry in `cost.prices`")]
pub struct UnpricedModel {
    pub model: String,
}

/// The prices that apply to one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pricing {
    pub agent: Price,
    pub summarizer: Option<Price>,
}

/// A conversation's cost in USD, with and without the prompt cache, and the same for `none`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    pub usd: f64,
    pub cached_usd: f64,
    pub none_usd: f64,
    pub none_cached_usd: f64,
}

impl Pricing {
    pub fn costs(&self, r: &ConversationResult) -> Costs {
        let m = 1e-6;
        let a = self.agent;
        let summarizer = self.summarizer.map_or(0.0, |s| {
            r.summarizer_input_tokens_total as f64 * s.input_per_mtok * m
                + r.summarizer_output_tokens_total as f64 * s.output_per_mtok * m
        });
        let cached = |total: u64, cached: u64| {
            (total - cached.min(total)) as f64 * a.input_per_mtok * m + cached as f64 * a.cached_input_per_mtok * m
        };
        Costs {
            usd: r.request_tokens_total as f64 * a.input_per_mtok * m + summarizer,
            cached_usd: cached(r.request_tokens_total, r.cached_request_tokens_total) + summarizer,
            none_usd: r.none_request_tokens_total as f64 * a.input_per_mtok * m,
            none_cached_usd: cached(r.none_request_tokens_total, r.none_cached_request_tokens_total),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_resolve_through_price_as_and_model_names() {
        let cost = CostConfig::default();
        assert!(cost.validate().is_ok());
        let p = cost.pricing(Some("extractive")).unwrap();
        assert_eq!(p.summarizer, cost.prices.get("gemini-2.5-flash").copied());
        assert_eq!(
            cost.pricing(Some("gemini:gemini-2.5-pro")).unwrap().summarizer,
            cost.prices.get("gemini-2.5-pro").copied()
        );
        assert!(cost.pricing(Some("openai:unknown@http://x")).is_none());
        let bad = CostConfig { agent_model: "nope".into(), ..CostConfig::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("nope"));
    }
}
