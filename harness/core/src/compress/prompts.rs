//! Prompt files (`configs/prompts/*.txt`, the format of `../shared/prompts/README.md`) and the prompt set
//! a compression uses. The shipped files are embedded so the reference runs without a checkout.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A parsed prompt file: attribution header lines and named sections of verbatim text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptFile {
    pub name: String,
    pub header: Vec<String>,
    pub sections: IndexMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("{file}: cannot read: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}, line {line}: {message}")]
    Format { file: String, line: usize, message: String },
    #[error("unknown prompt `{0}` (built in: {1})")]
    Unknown(String, String),
    #[error("prompt `{file}` has no section `{section}` (sections: {available})")]
    MissingSection { file: String, section: String, available: String },
    /// Configs name prompts, never paths (a path would read files outside the prompt directory).
    #[error("`{0}`: expected a version (v0…v5) or FILE:SECTION naming a prompt of configs/prompts, not a path")]
    IsAPath(String),
}

impl PromptFile {
    pub fn parse(name: &str, text: &str) -> Result<PromptFile, PromptError> {
        let mut header = Vec::new();
        let mut sections: IndexMap<String, String> = IndexMap::new();
        let mut current: Option<(String, Vec<&str>)> = None;
        for (i, line) in text.split('\n').enumerate() {
            if let Some(rest) = line.strip_prefix("=== ") {
                let Some(sec) = rest.strip_suffix(" ===") else {
                    return Err(PromptError::Format {
                        file: name.into(),
                        line: i + 1,
                        message: "a section line must read `=== <name> ===`".into(),
                    });
                };
                if let Some((n, lines)) = current.take() {
                    sections.insert(n, lines.join("\n"));
                }
                current = Some((sec.to_string(), Vec::new()));
                continue;
            }
            match &mut current {
                None => {
                    if let Some(h) = line.strip_prefix("# ") {
                        header.push(h.to_string());
                    } else if !line.trim().is_empty() {
                        return Err(PromptError::Format {
                            file: name.into(),
                            line: i + 1,
                            message: "text before the first section must be `# ` header lines".into(),
                        });
                    }
                }
                Some((_, lines)) => {
                    if !line.starts_with("#! ") {
                        lines.push(line);
                    }
                }
            }
        }
        if let Some((n, mut lines)) = current.take() {
            // The newline ending the last text line is not part of the text.
            if lines.last() == Some(&"") {
                lines.pop();
            }
            sections.insert(n, lines.join("\n"));
        }
        Ok(PromptFile { name: name.to_string(), header, sections })
    }

    pub fn load(path: &Path) -> Result<PromptFile, PromptError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| PromptError::Io { file: path.display().to_string(), source })?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        PromptFile::parse(&name, &text)
    }

    pub fn section(&self, name: &str) -> Result<&str, PromptError> {
        self.sections.get(name).map(String::as_str).ok_or_else(|| PromptError::MissingSection {
            file: self.name.clone(),
            section: name.into(),
            available: self.sections.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }
}

macro_rules! builtin {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../../configs/prompts/", $name, ".txt")))),*]
    };
}

/// Every shipped prompt file, by file stem.
pub const BUILTIN_PROMPTS: &[(&str, &str)] = builtin!(
    "gemini-cli-v0-2025-06-03-fa5b616a10",
    "gemini-cli-v1-2025-06-30-0ca5c07135",
    "gemini-cli-v2-2025-07-12-642d2e8d51",
    "gemini-cli-v2b-2025-12-17-bf90b59935",
    "gemini-cli-v3-2026-01-20-1182168bd9",
    "gemini-cli-v4-2026-01-27-dacc178d4e",
    "gemini-cli-v5-2026-03-06-06a176e33e",
    "gemini-cli",
    "aider",
    "anthropic-sdk",
    "cline",
    "codex",
    "goose",
    "inspect-ai",
    "langchain",
    "opencode",
    "openhands",
    "roo-code",
    "swe-agent",
);

/// A built-in prompt file by stem, or by short variant name (`v0` … `v5`, `v2b`).
pub fn builtin_prompt(name: &str) -> Result<PromptFile, PromptError> {
    let found = BUILTIN_PROMPTS.iter().find(|(stem, _)| {
        *stem == name || stem.strip_prefix("gemini-cli-").is_some_and(|rest| rest.split('-').next() == Some(name))
    });
    match found {
        Some((stem, text)) => PromptFile::parse(stem, text),
        None => Err(PromptError::Unknown(
            name.into(),
            BUILTIN_PROMPTS.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(", "),
        )),
    }
}

/// Everything a compression says to the summarizer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompressionPrompts {
    /// Variant name for reports (`v5`, `codex:prompt_handoff`, …).
    pub name: String,
    /// System instruction (`None` for v0, which sent the request through the main chat).
    pub system: Option<String>,
    /// System instruction with the approved-plan block, `{approved_plan_path}` unfilled (v5 only).
    pub system_with_plan: Option<String>,
    /// The user turn appended after the history to compress.
    pub instruction: String,
    /// The instruction used when the history holds a previous `<state_snapshot>` (anchored variants).
    pub instruction_with_previous: Option<String>,
    /// The verification turn (`None`: no second pass, as before 2026-01-20).
    pub verification: Option<String>,
    /// The model turn placed after the summary (`None` for v0).
    pub acknowledgement: Option<String>,
    /// v0: the new history is `[user: instruction, model: summary]` instead of `[user: summary, model: ack]`.
    pub summary_as_model_reply: bool,
}

impl CompressionPrompts {
    /// The reference's current prompts (v5).
    pub fn current() -> CompressionPrompts {
        Self::reference("v5").expect("v5 prompt file is built in")
    }

    /// One of Gemini CLI's own prompt versions (`v0` … `v5`).
    pub fn reference(variant: &str) -> Result<CompressionPrompts, PromptError> {
        let f = builtin_prompt(variant)?;
        Self::from_reference_file(variant, &f)
    }

    pub fn from_reference_file(name: &str, f: &PromptFile) -> Result<CompressionPrompts, PromptError> {
        if let Ok(request) = f.section("summarization_request_user_turn") {
            return Ok(CompressionPrompts {
                name: name.into(),
                system: None,
                system_with_plan: None,
                instruction: request.to_string(),
                instruction_with_previous: None,
                verification: None,
                acknowledgement: None,
                summary_as_model_reply: true,
            });
        }
        let anchored = f.sections.contains_key("anchor_first");
        Ok(CompressionPrompts {
            name: name.into(),
            system: Some(f.section("system")?.to_string()),
            system_with_plan: f.sections.get("system_with_approved_plan").cloned(),
            instruction: if anchored { f.section("anchor_first")? } else { f.section("instruction")? }.to_string(),
            instruction_with_previous: f.sections.get("anchor_with_previous_snapshot").cloned(),
            verification: f.sections.get("verification").cloned(),
            acknowledgement: Some(f.section("model_ack_after_summary")?.to_string()),
            summary_as_model_reply: false,
        })
    }

    /// Another system's prompt standing in for the reference's system instruction; the reference's
    /// current instruction turns and acknowledgement are kept so only the prompt text varies.
    pub fn foreign(file: &PromptFile, section: &str) -> Result<CompressionPrompts, PromptError> {
        let mut p = Self::current();
        p.name = format!("{}:{}", file.name, section);
        p.system = Some(file.section(section)?.to_string());
        p.system_with_plan = None;
        Ok(p)
    }

    /// Resolves a prompt spec: `v0`…`v5` / a built-in file stem (reference files), `FILE:SECTION` for another
    /// system's prompt (built-in stem or a path to a prompt file).
    pub fn from_spec(spec: &str) -> Result<CompressionPrompts, PromptError> {
        if let Some((file, section)) = spec.rsplit_once(':') {
            let f = if Path::new(file).exists() { PromptFile::load(Path::new(file))? } else { builtin_prompt(file)? };
            return Self::foreign(&f, section);
        }
        if Path::new(spec).exists() {
            let f = PromptFile::load(Path::new(spec))?;
            return Self::from_reference_file(&f.name.clone(), &f);
        }
        Self::reference(spec)
    }

    /// `getCompressionPrompt(config)`: the plan block only for the modern family with a plan path.
    pub fn system_instruction(&self, modern_family: bool, approved_plan_path: Option<&str>) -> Option<String> {
        match (&self.system_with_plan, approved_plan_path) {
            (Some(with_plan), Some(path)) if modern_family && !path.is_empty() => {
                Some(with_plan.replace("{approved_plan_path}", path))
            }
            _ => self.system.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses() {
        for (stem, text) in BUILTIN_PROMPTS {
            let f = PromptFile::parse(stem, text).unwrap();
            assert!(!f.sections.is_empty(), "{stem}");
            assert!(!f.header.is_empty(), "{stem} keeps its attribution header");
        }
        for v in ["v0", "v1", "v2", "v2b", "v3", "v4", "v5"] {
            CompressionPrompts::reference(v).unwrap();
        }
    }

    #[test]
    fn current_prompts_match_the_spec() {
        let p = CompressionPrompts::current();
        assert_eq!(
            p.instruction,
            "Generate a new <state_snapshot> based on the provided history.\n\nFirst, reason in your scratchpad. Then, generate the updated <state_snapshot>."
        );
        assert_eq!(p.acknowledgement.as_deref(), Some("Got it. Thanks for the additional context!"));
        assert!(p.verification.as_deref().unwrap().starts_with("Critically evaluate the <state_snapshot>"));
        let sys = p.system_instruction(true, Some("/custom/plan/path.md")).unwrap();
        assert!(sys.contains("### APPROVED PLAN PRESERVATION") && sys.contains("/custom/plan/path.md"));
        assert!(!p.system_instruction(false, Some("/p.md")).unwrap().contains("APPROVED PLAN"));
        assert!(!p.system_instruction(true, None).unwrap().contains("APPROVED PLAN"));
        let v2 = CompressionPrompts::reference("v2").unwrap();
        assert!(v2.verification.is_none() && v2.instruction_with_previous.is_none());
        assert!(CompressionPrompts::reference("v0").unwrap().summary_as_model_reply);
    }
}
