//! `extractive`: a deterministic rule-based baseline (placeholder).
use super::types::{LanguageModel, LlmError, LlmRequest, LlmResponse};
use async_trait::async_trait;

#[derive(Debug, Default)]
pub struct ExtractiveModel;

impl ExtractiveModel {
    pub fn new() -> Self {
        ExtractiveModel
    }
}

#[async_trait]
impl LanguageModel for ExtractiveModel {
    fn spec(&self) -> &str {
        "extractive"
    }
    async fn generate(&self, _req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        Ok(LlmResponse::default())
    }
}
