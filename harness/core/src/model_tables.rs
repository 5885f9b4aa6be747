//! Model tables (`packages/core/src/core/tokenLimits.ts`, `packages/core/src/config/models.ts`): context sizes, the
//! summarizer alias table and the prompt family.

use serde::{Deserialize, Serialize};

pub const DEFAULT_TOKEN_LIMIT: u64 = 1_048_576;
pub const GEMMA_4_TOKEN_LIMIT: u64 = 256_000;

/// Which revision of the model tables to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelTable {
    /// The tables at the reference commit.
    #[default]
    Current,
    /// The 2025 tables (token limits until 2026-01-09; alias table as introduced on 2025-11-24).
    Y2025,
}

/// The names the reference holds in mutable module state (`setFlashModels`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlashModels {
    pub preview_flash: String,
    pub default_flash: String,
}

impl Default for FlashModels {
    fn default() -> Self {
        FlashModels { preview_flash: "gemini-3-flash-preview".into(), default_flash: "gemini-2.5-flash".into() }
    }
}

/// `tokenLimit(model)`.
pub fn token_limit(model: &str, table: ModelTable) -> u64 {
    match table {
        ModelTable::Current => match model {
            "gemma-4-31b-it" | "gemma-4-26b-a4b-it" => GEMMA_4_TOKEN_LIMIT,
            _ => DEFAULT_TOKEN_LIMIT,
        },
        ModelTable::Y2025 => match model {
            "gemini-1.5-pro" => 2_097_152,
            "gemini-2.0-flash-preview-image-generation" => 32_000,
            _ => DEFAULT_TOKEN_LIMIT,
        },
    }
}

/// `modelStringToModelConfigAlias(model)`: the summarizer's model-config alias.
pub fn compression_model_alias(model: &str, table: ModelTable, flash: &FlashModels) -> &'static str {
    match table {
        ModelTable::Current => {
            if model == "gemini-3-pro-preview" || model == "gemini-3.1-pro-preview" {
                "chat-compression-3-pro"
            } else if model == flash.preview_flash {
                "chat-compression-3-flash"
            } else if model == "none" || model == "gemini-3.1-flash-lite" {
                "chat-compression-3.1-flash-lite"
            } else if model == "gemini-2.5-flash-lite" {
                "chat-compression-2.5-flash-lite"
            } else if model == "gemini-2.5-pro" {
                "chat-compression-2.5-pro"
            } else if model == flash.default_flash {
                "chat-compression-2.5-flash"
            } else {
                "chat-compression-default"
            }
        }
        ModelTable::Y2025 => match model {
            "gemini-2.5-flash-lite" => "chat-compression-2.5-flash-lite",
            "gemini-2.5-pro" => "chat-compression-2.5-pro",
            m if m == flash.default_flash => "chat-compression-2.5-flash",
            _ => "chat-compression-default",
        },
    }
}

/// The model a `chat-compression-*` alias resolves to (`defaultModelConfigs.ts`).
pub fn alias_target(alias: &str) -> &'static str {
    match alias {
        "chat-compression-3-pro" => "gemini-3-pro-preview",
        "chat-compression-3-flash" => "gemini-3-flash-preview",
        "chat-compression-3.1-flash-lite" => "gemini-3.1-flash-lite",
        "chat-compression-2.5-flash-lite" => "gemini-2.5-flash-lite",
        "chat-compression-2.5-pro" => "gemini-2.5-pro",
        "chat-compression-2.5-flash" => "gemini-2.5-flash",
        _ => "gemini-3-pro-preview",
    }
}

/// Which compression prompt family `getCompressionPrompt` picks for the session's active model
/// (`packages/core/src/prompts/promptProvider.ts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptFamily {
    /// `snippets.ts` (Gemini 3.x, Gemma, custom models): honours the approved-plan block.
    Modern,
    /// `snippets.legacy.ts` (Gemini 2.x): no plan block.
    Legacy,
}

pub fn prompt_family(active_model: &str) -> PromptFamily {
    let modern3 = active_model
        .strip_prefix("gemini-3")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('-'));
    if modern3 || !active_model.starts_with("gemini-") {
        PromptFamily::Modern
    } else {
        PromptFamily::Legacy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_alias_cases() {
        let f = FlashModels::default();
        for (m, a) in [
            ("gemini-flash-flash", "chat-compression-default"),
            ("gemini-3-pro-preview", "chat-compression-3-pro"),
            ("gemini-2.5-pro", "chat-compression-2.5-pro"),
            ("gemini-2.5-flash", "chat-compression-2.5-flash"),
            ("gemini-2.5-flash-lite", "chat-compression-2.5-flash-lite"),
            ("gemini-3-flash-preview", "chat-compression-3-flash"),
            ("gemini-3.1-flash-lite", "chat-compression-3.1-flash-lite"),
            ("auto", "chat-compression-default"),
        ] {
            assert_eq!(compression_model_alias(m, ModelTable::Current, &f), a, "{m}");
        }
    }

    #[test]
    fn upstream_token_limits() {
        for m in [
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "gemini-3.1-flash-lite",
            "gemini-3-pro-preview",
            "gemini-3-flash-preview",
            "unknown-model",
            "",
        ] {
            assert_eq!(token_limit(m, ModelTable::Current), 1_048_576);
        }
        assert_eq!(token_limit("gemma-4-31b-it", ModelTable::Current), 256_000);
        assert_eq!(token_limit("gemini-1.5-pro", ModelTable::Y2025), 2_097_152);
    }

    #[test]
    fn prompt_families() {
        assert_eq!(prompt_family("gemini-2.5-pro"), PromptFamily::Legacy);
        assert_eq!(prompt_family("gemini-3.1-pro-preview"), PromptFamily::Modern);
        assert_eq!(prompt_family("gemini-3"), PromptFamily::Modern);
        assert_eq!(prompt_family("gemini-30"), PromptFamily::Legacy);
        assert_eq!(prompt_family("gemma-4-31b-it"), PromptFamily::Modern);
    }
}
