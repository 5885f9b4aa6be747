//! The recorded side of the page: each conversation of the plan read once, its Contents as readable text
//! with their token counts, and its probes' questions and golds. Every string that leaves here is safe to
//! show: secrets masked by the project's one redaction ([`crate::llm::redact`]) and control characters
//! (ANSI escapes) turned into visible symbols. The page escapes nothing itself beyond that: it only ever
//! sets text, never markup.

use crate::data::{Plan, PlannedConversation, ProbeKind};
use crate::datasets::Conversation;
use crate::history::{self, Content};
use crate::json;
use crate::probes::{self, Probe};
use crate::replay::Tokenizer;
use crate::tokens::{self, Estimator, ImageBilling};
use serde::Serialize;
use std::path::Path;

/// What the page shows of strings from a run: secrets masked, control characters made visible.
#[derive(Clone, Debug)]
pub struct Sanitizer {
    /// Values of the environment variables the model backends read their keys from.
    secrets: Vec<String>,
}

impl Sanitizer {
    /// Masks the keys the backends would read from this environment (the variables `BackendOptions` names)
    /// and anything shaped like a credential header.
    pub fn from_env() -> Self {
        let options = crate::llm::BackendOptions::default();
        let secrets = [options.gemini_key_var, options.openai_key_var]
            .iter()
            .filter_map(|var| std::env::var(var).ok())
            .map(|key| key.trim().to_string())
            .filter(|key| !key.is_empty())
            .collect();
        Sanitizer { secrets }
    }

    /// With these secrets only (tests).
    pub fn with_secrets(secrets: Vec<String>) -> Self {
        Sanitizer { secrets }
    }

    /// `text` as the page may show it.
    pub fn clean(&self, text: &str) -> String {
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        visible_controls(&crate::llm::redact(text, &secrets))
    }
}

/// Control characters other than line breaks and tabs written as `\x1b`-style escapes, so an ANSI escape
/// sequence reads as the characters it is made of (in any font) instead of vanishing or colouring.
pub fn visible_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' | '\r' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            _ => out.push(c),
        }
    }
    out
}

/// One recorded Content as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShownContent {
    pub role: String,
    /// Its parts as text: a text part as written, a tool call as `▶ name {arguments}`, a tool output as
    /// `◀ name` and the strings it holds; thoughts left out (the replay strips them).
    pub text: String,
    /// Tokens of the Content with the run's tokenizer (o200k when the run counted with a model's).
    pub tokens: u64,
}

/// A probe as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShownProbe {
    pub kind: ProbeKind,
    pub question: String,
    pub gold: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accept: Vec<String>,
    /// Recorded Contents that hold the answer.
    pub evidence: Vec<usize>,
}

/// A conversation of the run as read for the page.
pub struct Recording {
    pub conversation: Conversation,
    pub probes: Vec<Probe>,
    /// Why the probes could not be read (the page shows the cells' scores without questions).
    pub probe_problem: Option<String>,
}

/// Reads a conversation the plan names (paths relative to `base_dir`, as the run read them) and its probes.
pub fn load(plan: &Plan, base_dir: &Path, planned: &PlannedConversation) -> Result<Recording, String> {
    if let Some(e) = &planned.error {
        return Err(e.clone());
    }
    let path = if planned.path.is_absolute() { planned.path.clone() } else { base_dir.join(&planned.path) };
    let conversation = crate::datasets::load_conversation(&path).map_err(|e| e.to_string())?;
    let (probes, probe_problem) = match plan.probes.as_ref().filter(|p| p.enabled) {
        None => (Vec::new(), None),
        Some(pc) => {
            let dir = if pc.dir.is_absolute() { pc.dir.clone() } else { base_dir.join(&pc.dir) };
            let meta = &conversation.meta;
            match probes::load_probes(&dir, &meta.source, &meta.id, &pc.sources, conversation.history.len()) {
                Ok(mut stored) => {
                    if pc.derive_auto {
                        let (derived, _) = probes::derived_auto_probes(&dir, &conversation, &pc.sources, &stored);
                        stored.extend(derived);
                    }
                    (stored, None)
                }
                Err(e) => (Vec::new(), Some(e.to_string())),
            }
        }
    };
    Ok(Recording { conversation, probes, probe_problem })
}

/// Tokens of one Content as the run counted them (its images as the agent's provider bills them); a
/// model's tokenizer (an API) is not called: o200k stands in, and the page says so.
pub fn content_tokens(tokenizer: &Tokenizer, billing: ImageBilling, c: &Content) -> u64 {
    match tokenizer {
        Tokenizer::Heuristic => Estimator::Current.content(c),
        Tokenizer::O200k | Tokenizer::Model(_) => tokens::o200k_count_history(std::slice::from_ref(c), billing),
    }
}

/// The name of the tokenizer [`content_tokens`] uses for a run.
pub fn shown_tokenizer(tokenizer: &Tokenizer) -> &'static str {
    match tokenizer {
        Tokenizer::Heuristic => "heuristic",
        Tokenizer::O200k => "o200k",
        Tokenizer::Model(_) => "o200k (the run counted with a model's tokenizer)",
    }
}

fn part_shown(p: &json::Value, billing: ImageBilling, out: &mut String) {
    if history::is_thought(p) {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    if let Some(media) = tokens::images::media_of(p) {
        // Never the base64: what it is, its size and what its provider bills for it.
        out.push_str(&media.describe(billing));
    } else if let Some(t) = history::part_text(p) {
        out.push_str(&t.to_str_lossy());
    } else if let Some(call) = history::function_call(p) {
        out.push_str("▶ ");
        out.push_str(call.get("name").and_then(json::Value::as_str).unwrap_or("call"));
        if let Some(args) = call.get("args") {
            out.push(' ');
            json::write_compact(args, json::Numbers::Js, out);
        }
    } else if let Some(response) = history::function_response(p) {
        out.push_str("◀ ");
        out.push_str(response.get("name").and_then(json::Value::as_str).unwrap_or("result"));
        out.push('\n');
        let strings = probes::text_match::part_text(response.get("response").unwrap_or(response));
        out.push_str(strings.trim_end());
    } else {
        json::write_compact(p, json::Numbers::Js, out);
    }
}

/// A Content as the page shows it (an image as `[image 1280×720 png, 1,229 tokens (Anthropic)]`, by the
/// rule of the agent's provider, `billing`).
pub fn shown_content(c: &Content, tokenizer: &Tokenizer, billing: ImageBilling, clean: &Sanitizer) -> ShownContent {
    let mut text = String::new();
    for p in history::parts(c) {
        part_shown(p, billing, &mut text);
    }
    ShownContent {
        role: history::role(c).unwrap_or("?").to_string(),
        text: clean.clean(&text),
        tokens: content_tokens(tokenizer, billing, c),
    }
}

/// A probe as the page shows it.
pub fn shown_probe(p: &Probe, clean: &Sanitizer) -> ShownProbe {
    ShownProbe {
        kind: p.kind,
        question: clean.clean(&p.question),
        gold: clean.clean(&p.gold),
        accept: p.accept.iter().map(|a| clean.clean(a)).collect(),
        evidence: p.evidence.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_and_keys_are_masked() {
        let clean = Sanitizer::with_secrets(vec!["sk-test-0123456789".into()]);
        let shown = clean.clean("\u{1b}[31mred\u{1b}[0m key=sk-test-0123456789\tx\n");
        assert_eq!(shown, "\\x1b[31mred\\x1b[0m key=[REDACTED]\tx\n");
        assert_eq!(clean.clean("Authorization: Bearer abcdef"), "Authorization: Bearer [REDACTED]");
        assert_eq!(visible_controls("a\u{7f}b\u{0}\r\n"), "a\\x7fb\\x00\r\n");
    }

    #[test]
    fn contents_show_text_calls_and_outputs_without_thoughts() {
        let c = json::parse_str(
            r#"{"role":"model","parts":[{"text":"hidden","thought":true},{"text":"Let me look."},
                {"functionCall":{"name":"read_file","args":{"path":"a.py"}}}]}"#,
        )
        .unwrap();
        let shown =
            shown_content(&c, &Tokenizer::Heuristic, ImageBilling::Gemini, &Sanitizer::with_secrets(Vec::new()));
        assert_eq!(shown.text, "Let me look.\n▶ read_file {\"path\":\"a.py\"}");
        assert_eq!(shown.role, "model");
        assert!(shown.tokens > 0);
        let r = json::parse_str(
            r#"{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"line 1\nline 2"}}}]}"#,
        )
        .unwrap();
        let shown = shown_content(&r, &Tokenizer::O200k, ImageBilling::Gemini, &Sanitizer::with_secrets(Vec::new()));
        assert_eq!(shown.text, "◀ read_file\nline 1\nline 2");
    }

    /// An image is shown as what it is and what its provider bills, never as its base64.
    #[test]
    fn images_show_their_size_and_tokens_not_their_base64() {
        // A PNG header of 1280 × 720, base64.
        let data = "iVBORw0KGgoAAAANSUhEUgAABQAAAALQCAYAAAA";
        let c = json::parse_str(&format!(
            r#"{{"role":"user","parts":[{{"text":"see"}},{{"inlineData":{{"mimeType":"image/png","data":"{data}"}}}}]}}"#
        ))
        .unwrap();
        let shown = shown_content(&c, &Tokenizer::O200k, ImageBilling::Anthropic, &Sanitizer::with_secrets(Vec::new()));
        assert_eq!(shown.text, "see\n[image 1280×720 png, 1,229 tokens (Anthropic)]");
        assert_eq!(shown.tokens, 1229 + tokens::o200k_count_history_text(std::slice::from_ref(&c)));
    }
}
