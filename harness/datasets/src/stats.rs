//! Per-conversation statistics and the per-directory manifest.

use super::file::{find_conversations, load_conversation, MANIFEST_FILE};
use super::layout::Layout;
use super::{Conversation, DatasetError};
use crate::history::{self, Content};
use crate::json::{self, Value};
use crate::tokens::Estimator;
use std::path::Path;

/// Size and shape of one conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConversationStats {
    pub contents: u64,
    pub user_turns: u64,
    pub model_turns: u64,
    /// UTF-16 length of all text parts plus the JSON of every other part (calls, responses, …) but images
    /// and other inline media, which are no text (`images` counts them).
    pub characters: u64,
    /// `Estimator::Current` over the whole history.
    pub estimated_tokens: u64,
    pub tool_calls: u64,
    /// Longest single `functionResponse` (JSON length of its `response`).
    pub longest_tool_output: u64,
    /// Images and other inline media (`inlineData` parts, those nested in a functionResponse included).
    pub images: u64,
}

impl ConversationStats {
    pub fn of(c: &Conversation) -> Self {
        Self::of_history(&c.history)
    }

    pub fn of_history(h: &[Content]) -> Self {
        let mut s = ConversationStats {
            contents: h.len() as u64,
            estimated_tokens: Estimator::Current.history(h),
            ..Default::default()
        };
        for c in h {
            s.images += crate::tokens::images::content_media(c).len() as u64;
            match history::role(c) {
                Some("user") => s.user_turns += 1,
                Some("model") => s.model_turns += 1,
                _ => {}
            }
            for p in history::parts(c) {
                s.characters += part_chars(p);
                if history::function_call(p).is_some() {
                    s.tool_calls += 1;
                }
                if let Some(r) = history::function_response(p) {
                    let len = r.get("response").map_or(0, json::jslen) as u64;
                    s.longest_tool_output = s.longest_tool_output.max(len);
                }
            }
        }
        s
    }

    fn to_value(&self) -> Vec<(&'static str, Value)> {
        let mut fields = vec![
            ("contents", Value::num(self.contents as f64)),
            ("userTurns", Value::num(self.user_turns as f64)),
            ("modelTurns", Value::num(self.model_turns as f64)),
            ("characters", Value::num(self.characters as f64)),
            ("estimatedTokens", Value::num(self.estimated_tokens as f64)),
            ("toolCalls", Value::num(self.tool_calls as f64)),
            ("longestToolOutput", Value::num(self.longest_tool_output as f64)),
        ];
        // Only where there are any, so the manifests of sources without images stay as they were.
        if self.images > 0 {
            fields.push(("images", Value::num(self.images as f64)));
        }
        fields
    }
}

fn part_chars(p: &Value) -> u64 {
    if crate::tokens::images::is_media_part(p) {
        return 0;
    }
    match history::part_text(p) {
        Some(t) => t.len16() as u64,
        None => json::jslen(p) as u64,
    }
}

/// Sums over a set of conversations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub conversations: u64,
    pub sum: ConversationStats,
    /// Conversations over 100,000 characters.
    pub over_100k_chars: u64,
}

impl Totals {
    pub fn add(&mut self, s: &ConversationStats) {
        self.conversations += 1;
        self.sum.contents += s.contents;
        self.sum.user_turns += s.user_turns;
        self.sum.model_turns += s.model_turns;
        self.sum.characters += s.characters;
        self.sum.estimated_tokens += s.estimated_tokens;
        self.sum.tool_calls += s.tool_calls;
        self.sum.longest_tool_output = self.sum.longest_tool_output.max(s.longest_tool_output);
        self.sum.images += s.images;
        if s.characters > 100_000 {
            self.over_100k_chars += 1;
        }
    }
}

/// The manifest object for a dataset directory: one entry per conversation plus totals.
pub fn manifest_value(name: &str, entries: &[(String, &Conversation)]) -> Value {
    let mut totals = Totals::default();
    let mut items = Vec::new();
    for (file, c) in entries {
        let s = ConversationStats::of(c);
        totals.add(&s);
        let mut e = Value::object([
            ("file", Value::str(file)),
            ("id", Value::str(&c.meta.id)),
            ("source", Value::str(&c.meta.source)),
            ("format", Value::str(&c.meta.format)),
        ]);
        for (k, v) in s.to_value() {
            e.insert(k, v);
        }
        e.insert("recordedPromptTokens", Value::Bool(c.has_recorded_tokens()));
        // Only where there are any, so the manifests of sources without them stay as they were.
        if !c.recorded_compactions.is_empty() {
            e.insert("recordedCompactions", Value::num(c.recorded_compactions.len() as f64));
        }
        items.push(e);
    }
    let mut t = Value::object([("conversations", Value::num(totals.conversations as f64))]);
    for (k, v) in totals.sum.to_value() {
        t.insert(k, v);
    }
    t.insert("over100kCharacters", Value::num(totals.over_100k_chars as f64));
    Value::object([
        ("dataset", Value::str(name)),
        ("tokenEstimator", Value::str(Estimator::Current.name())),
        ("conversations", Value::Array(items)),
        ("totals", t),
    ])
}

/// Rewrites `dir/manifest.json` from the conversation files under `dir`. Fails on the first unreadable file
/// (a manifest must describe every conversation).
pub fn write_manifest(dir: &Path) -> Result<Value, DatasetError> {
    let files = find_conversations(&[dir.to_path_buf()])?;
    let mut loaded = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(dir).unwrap_or(f).to_string_lossy().replace('\\', "/");
        loaded.push((rel, load_conversation(f)?));
    }
    let entries: Vec<(String, &Conversation)> = loaded.iter().map(|(f, c)| (f.clone(), c)).collect();
    let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    let manifest = manifest_value(&name, &entries);
    let path = dir.join(MANIFEST_FILE);
    let text = Layout { trailing_newline: true, ..Layout::js_pretty() }.write(&manifest);
    crate::fsutil::write_atomic(&path, text.as_bytes())
        .map_err(|e| DatasetError::io(&path.display().to_string(), e.source))?;
    Ok(manifest)
}
