//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): lines
//! `{timestamp, type, payload}` with `type` ∈ `session_meta`, `response_item`, `event_msg`,
//! `turn_context`, `compacted`. The model's context is the `response_item`s: `message {role, content:
//! [{type: input_text|output_text, text}]}`, `function_call {name, arguments, call_id}`,
//! `function_call_output {call_id, output}` (`output` a string or content items, `input_image` among them:
//! `view_image` returns its image so), `custom_tool_call` / `custom_tool_call_output`,
//! `local_shell_call`, `reasoning {summary: [{text}]}`. A user message's `input_image {image_url:
//! "data:image/png;base64,…"}` items and a tool output's become `inlineData` parts (a tool output's right
//! after its functionResponse, which keeps the output's text). `event_msg` `token_count` events carry the
//! prompt size (`info.last_token_usage.input_tokens`) of the request just answered.
//!
//! A `compacted` line is the agent's own compaction: `{message, replacement_history?}`, the summary and
//! (newer versions) the history the agent continued from, whose last item is the summary as a user message.
//! It becomes a [`RecordedCompaction`] at the index of the next Content, keeping the replacement's
//! `message` items before the summary (developer messages go to the system instruction, other items are
//! dropped); the history itself stays the uncompressed stream. A `compacted` line without a summary
//! (remote compaction, whose summary is encrypted) is skipped with a warning.

use super::{
    args_from_string, as_object, content_text, function_response_part, opt_count, opt_str, req, req_str, stem_id,
    Format, HistoryBuilder, Imported,
};
use crate::error::utf8;
use crate::json::{JsonPath, Value};
use crate::{Conversation, ConversationMeta, DatasetError, RecordedCompaction};

pub fn parse(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let text = utf8(bytes, file)?;
    let mut b = HistoryBuilder::default();
    let mut system: Vec<String> = Vec::new();
    let mut extra = Value::empty_object();
    let mut compactions: Vec<RecordedCompaction> = Vec::new();
    let mut warnings = Vec::new();
    let mut any = false;
    let mut unknown_kinds: std::collections::BTreeMap<String, usize> = Default::default();
    let (records, skipped) = super::jsonl_objects(text, file, &mut warnings)?;
    for (number, record) in records {
        let n = number - 1;
        if record.get("type").and_then(Value::as_str) == Some("compacted") {
            let at = JsonPath::root().key("payload");
            let payload = req(&record, "payload", &JsonPath::root(), file).map_err(|e| e.on_line(n + 1))?;
            match compaction(payload, &at, file, b.contents()).map_err(|e| e.on_line(n + 1))? {
                Some(mut c) => {
                    if let Some(t) = record.get("timestamp").filter(|t| t.as_str().is_some()) {
                        c.extra.get_or_insert_with(Value::empty_object).insert(super::COMPACTED_AT_KEY, t.clone());
                    }
                    b.seal();
                    compactions.push(c);
                }
                None => warnings.push(format!("{file}: line {}: compacted item without a summary; skipped", n + 1)),
            }
            any = true;
            continue;
        }
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "session_meta" | "response_item" | "event_msg" | "turn_context") {
            *unknown_kinds.entry(kind.to_string()).or_insert(0usize) += 1;
        }
        convert_line(&record, file, &mut b, &mut system, &mut extra, &mut warnings).map_err(|e| e.on_line(n + 1))?;
        any = true;
    }
    if !any {
        return Err(DatasetError::whole(file, "empty file; not a Codex rollout"));
    }
    if !unknown_kinds.is_empty() {
        let list: Vec<String> = unknown_kinds.iter().map(|(k, n)| format!("{k:?} ×{n}")).collect();
        warnings.push(format!("{file}: rollout line kinds this importer does not know, skipped: {}", list.join(", ")));
    }
    if skipped > 0 {
        extra.insert(super::SKIPPED_LINES_KEY, Value::num(skipped as f64));
    }
    let (history, recorded_prompt_tokens) = b.finish();
    let meta = ConversationMeta {
        id: stem_id(file),
        format: Format::Codex.name().into(),
        path: Some(file.to_string()),
        extra: extra.as_object().is_some_and(|m| !m.is_empty()).then_some(extra),
        ..Default::default()
    };
    let system_instruction = (!system.is_empty()).then(|| system.join("\n\n"));
    let conversation = Conversation {
        meta,
        system_instruction,
        tools: None,
        history,
        recorded_prompt_tokens,
        recorded_cache: Vec::new(),
        recorded_compactions: compactions,
    };
    Ok(Imported { conversations: vec![conversation], warnings })
}

/// The summary text a recorded Codex compaction carries when its summary is not readable (0.140+ writes an
/// empty `message` and an encrypted `compaction` item): what Codex kept is then its verbatim messages plus
/// a summary of unknown content, so scoring the recorded point gives a lower bound.
pub const OPAQUE_SUMMARY: &str = "[Codex compaction summary: encrypted in the recording; its content is unknown]";

/// A `compacted` payload as a compaction at history index `at`; `None` when it holds neither a summary nor a
/// replacement history.
fn compaction(p: &Value, at: &JsonPath, file: &str, index: usize) -> Result<Option<RecordedCompaction>, DatasetError> {
    as_object(p, at, file)?;
    let mut summary = opt_str(p, "message", at, file)?.unwrap_or_default();
    let replacement = p.get("replacement_history").filter(|v| !v.is_null());
    let opaque = summary.trim().is_empty();
    if opaque && replacement.is_none() {
        return Ok(None);
    }
    let mut turns: Vec<(&str, String)> = Vec::new();
    let mut opaque_items = 0usize;
    if let Some(items) = replacement {
        let rat = at.key("replacement_history");
        for (i, item) in super::as_array(items, &rat, file)?.iter().enumerate() {
            let iat = rat.index(i);
            as_object(item, &iat, file)?;
            if item.get("type").and_then(Value::as_str) == Some("compaction") {
                opaque_items += 1;
                continue;
            }
            if item.get("type").and_then(Value::as_str) != Some("message") {
                continue;
            }
            let text = content_text(item.get("content").unwrap_or(&Value::Null), &iat.key("content"), file)?;
            match item.get("role").and_then(Value::as_str) {
                Some("user") => turns.push(("user", text)),
                Some("assistant") => turns.push(("model", text)),
                _ => {}
            }
        }
        // The summary closes the replacement; it is `summary` itself, not a kept turn.
        if turns.last().is_some_and(|(role, t)| *role == "user" && t.trim() == summary.trim()) {
            turns.pop();
        }
    }
    let mut kept = HistoryBuilder::default();
    for (role, text) in &turns {
        kept.push_text(role, text);
    }
    let extra = replacement.map(|h| {
        let mut extra =
            Value::object([("replacementHistoryItems", Value::num(h.as_array().map_or(0, <[Value]>::len) as f64))]);
        if opaque {
            extra.insert("summaryOpaque", Value::Bool(true));
            extra.insert("opaqueCompactionItems", Value::num(opaque_items as f64));
        }
        for key in ["window_number", "window_id"] {
            if let Some(v) = p.get(key).filter(|v| !v.is_null()) {
                extra.insert(key, v.clone());
            }
        }
        extra
    });
    if opaque {
        summary = OPAQUE_SUMMARY.to_string();
    }
    Ok(Some(RecordedCompaction { at: index, summary, kept: kept.finish().0, preserved: Vec::new(), extra }))
}

fn convert_line(
    record: &Value,
    file: &str,
    b: &mut HistoryBuilder,
    system: &mut Vec<String>,
    extra: &mut Value,
    warnings: &mut Vec<String>,
) -> Result<(), DatasetError> {
    let root = JsonPath::root();
    as_object(record, &root, file)?;
    let kind = req_str(record, "type", &root, file)?;
    let at = root.key("payload");
    let payload = req(record, "payload", &root, file)?;
    match kind.as_str() {
        "session_meta" => {
            as_object(payload, &at, file)?;
            for key in ["id", "cwd", "originator", "cli_version", "model_provider"] {
                if let Some(v) = payload.get(key).filter(|v| !v.is_null()) {
                    extra.insert(key, v.clone());
                }
            }
            if let Some(instructions) = opt_str(payload, "instructions", &at, file)? {
                system.push(instructions);
            }
            Ok(())
        }
        "response_item" => response_item(payload, &at, file, b, system, warnings),
        "event_msg" => {
            let is_token_count = payload.get("type").and_then(Value::as_str) == Some("token_count");
            if is_token_count {
                let usage = payload.get("info").and_then(|i| i.get("last_token_usage"));
                if let Some(n) = opt_count(usage.and_then(|u| u.get("input_tokens"))) {
                    b.set_last_tokens(n);
                }
                note_context_window(payload, extra);
            }
            Ok(())
        }
        "turn_context" => Ok(()),
        // A kind a newer version added: skipped and counted by the caller.
        _ => Ok(()),
    }
}

/// Keeps the largest `info.model_context_window` a `token_count` event states, under
/// `meta.extra.model_context_window` ([`crate::model::CONTEXT_WINDOW_KEY`]): the window the agent ran in,
/// which a replay's `token_limit = "recorded"` reads.
fn note_context_window(payload: &Value, extra: &mut Value) {
    let key = crate::model::CONTEXT_WINDOW_KEY;
    let stated =
        payload.get("info").and_then(|i| i.get(key)).and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 1.0);
    if let Some(n) = stated {
        if extra.get(key).and_then(Value::as_f64).is_none_or(|known| n > known) {
            extra.insert(key, Value::num(n));
        }
    }
}

/// Whether a content list holds an `input_image` item.
fn has_images(content: &Value) -> bool {
    content
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i.get("type").and_then(Value::as_str) == Some("input_image")))
}

/// A content list's items as parts, in order: each run of text items one text part (joined as
/// [`content_text`] joins them), each `input_image` an `inlineData` part (its `image_url` a base64 data URL;
/// an image by URL, whose bytes the rollout does not hold, the text `[image]`).
fn message_parts(
    content: &Value,
    at: &JsonPath,
    file: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Value>, DatasetError> {
    let items = super::as_array(content, at, file)?;
    let mut parts = Vec::new();
    let mut run: Vec<Value> = Vec::new();
    let flush = |run: &mut Vec<Value>, parts: &mut Vec<Value>| -> Result<(), DatasetError> {
        let text = content_text(&Value::Array(std::mem::take(run)), at, file)?;
        if !text.trim().is_empty() {
            parts.push(crate::history::text_part(&text));
        }
        Ok(())
    };
    for (i, item) in items.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("input_image") {
            run.push(item.clone());
            continue;
        }
        flush(&mut run, &mut parts)?;
        let iat = at.index(i);
        let url = opt_str(item, "image_url", &iat, file)?.unwrap_or_default();
        parts.push(match super::data_url(&url) {
            Some((mime, data)) => super::media_part(mime, data, &iat, file, warnings),
            None => crate::history::text_part(super::IMAGE_WITHOUT_DATA),
        });
    }
    flush(&mut run, &mut parts)?;
    Ok(parts)
}

fn response_item(
    p: &Value,
    at: &JsonPath,
    file: &str,
    b: &mut HistoryBuilder,
    system: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<(), DatasetError> {
    as_object(p, at, file)?;
    let kind = req_str(p, "type", at, file)?;
    match kind.as_str() {
        "message" => {
            let content = p.get("content").unwrap_or(&Value::Null);
            let text = content_text(content, &at.key("content"), file)?;
            match req_str(p, "role", at, file)?.as_str() {
                "user" if has_images(content) => {
                    b.push("user", message_parts(content, &at.key("content"), file, warnings)?)
                }
                "user" => b.push_text("user", &text),
                "assistant" => b.push_text("model", &text),
                "developer" | "system" => system.push(text),
                other => return Err(DatasetError::field(file, &at.key("role"), format!("unknown role {other:?}"))),
            }
        }
        "reasoning" => {
            let summary = p.get("summary").map(|s| content_text(s, &at.key("summary"), file)).transpose()?;
            if let Some(s) = summary.filter(|s| !s.trim().is_empty()) {
                b.push("model", vec![Value::object([("text", Value::str(&s)), ("thought", Value::Bool(true))])]);
            }
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let id = opt_str(p, "call_id", at, file)?.or(opt_str(p, "id", at, file)?);
            let (name, args) = match kind.as_str() {
                "function_call" => {
                    let args = match p.get("arguments") {
                        Some(Value::String(s)) => args_from_string(&s.to_str_lossy()),
                        Some(v @ Value::Object(_)) => v.clone(),
                        _ => Value::empty_object(),
                    };
                    (req_str(p, "name", at, file)?, args)
                }
                "custom_tool_call" => {
                    let input = opt_str(p, "input", at, file)?.unwrap_or_default();
                    (req_str(p, "name", at, file)?, Value::object([("input", Value::str(&input))]))
                }
                _ => ("local_shell".to_string(), p.get("action").cloned().unwrap_or_else(Value::empty_object)),
            };
            let part = b.call(id.as_deref(), &name, args);
            b.push("model", vec![part]);
        }
        "function_call_output" | "custom_tool_call_output" => {
            let id = req_str(p, "call_id", at, file)?;
            let name = b.call_name(&id).map(str::to_string);
            // `output` is a string, a list of content items (`input_text`, `input_image`: a tool's images, as
            // `view_image` returns them), or `{content, success?}` in some versions.
            let (items, iat) = match p.get("output") {
                Some(o @ Value::Object(_)) => {
                    (o.get("content").unwrap_or(&Value::Null), at.key("output").key("content"))
                }
                Some(v) => (v, at.key("output")),
                None => (&Value::Null, at.key("output")),
            };
            let output = content_text(items, &iat, file)?;
            // The output's images right after its functionResponse (which keeps its text), as Gemini CLI
            // sends a tool's images.
            let images: Vec<Value> = if has_images(items) {
                message_parts(items, &iat, file, warnings)?.into_iter().filter(|p| p.get("text").is_none()).collect()
            } else {
                Vec::new()
            };
            match name {
                Some(name) => {
                    let response = Value::object([("output", Value::str(&output))]);
                    let mut parts = vec![function_response_part(Some(&id), &name, response)];
                    parts.extend(images);
                    b.push("user", parts);
                }
                // Its call is not in the rollout (a resumed session): kept as text, since a
                // functionResponse must answer a functionCall.
                None => {
                    let mut parts =
                        vec![crate::history::text_part(&format!("{}\n{output}", super::claude_code::ORPHAN_RESULT))];
                    parts.extend(images);
                    b.push("user", parts);
                }
            }
        }
        // Web searches and other server-side items are not part of the replayable text.
        _ => {}
    }
    Ok(())
}
