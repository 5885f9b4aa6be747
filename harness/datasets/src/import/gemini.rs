//! Gemini CLI sessions (legacy `.json`, current `.jsonl`) and plain `Content[]` files.
//!
//! Sessions convert exactly as Gemini CLI's `convertSessionToClientHistory` does on resume
//! (`packages/core/src/utils/sessionUtils.ts`): no merging of turns, the same skipped messages, the same rebuilt parts.

use super::{as_array, as_object, opt_count, parse_json, stem_id, Format, Imported};
use crate::error::utf8;
use crate::history::{self, Content};
use crate::json::{self, JsonPath, Value};
use crate::layout::Layout;
use crate::{Conversation, ConversationMeta, DatasetError};
use indexmap::IndexMap;

/// A plain `Content[]` file, remembering its layout so export reproduces it byte for byte.
pub fn parse_contents(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let v = parse_json(bytes, file)?;
    history::validate_shape(&v).map_err(|e| DatasetError::at(file, e.path, e.message))?;
    let source_layout = Layout::detect(bytes, &v);
    let mut warnings = Vec::new();
    if source_layout.is_none() {
        warnings.push(format!(
            "{file}: no known JSON layout reproduces this file byte for byte (unusual escapes or spacing); export will use 2-space JSON"
        ));
    }
    let Value::Array(history) = v else { unreachable!("validated as an array") };
    let meta = ConversationMeta {
        id: stem_id(file),
        format: Format::GeminiContents.name().into(),
        path: Some(file.to_string()),
        source_layout,
        ..Default::default()
    };
    let conversation = Conversation { meta, history, ..Default::default() };
    Ok(Imported { conversations: vec![conversation], warnings })
}

/// Legacy session file: one `ConversationRecord` object.
pub fn parse_session(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let v = parse_json(bytes, file)?;
    let root = JsonPath::root();
    as_object(&v, &root, file)?;
    let messages = match v.get("messages") {
        Some(m) => as_array(m, &root.key("messages"), file)?.to_vec(),
        None => return Err(DatasetError::field(file, &root.key("messages"), "missing; not a Gemini CLI session")),
    };
    let paths: Vec<Loc> = (0..messages.len()).map(|i| (None, root.key("messages").index(i))).collect();
    let conversation = convert(&v, &messages, &paths, file, Format::GeminiSession)?;
    Ok(Imported { conversations: vec![conversation], warnings: Vec::new() })
}

/// Current session file: a metadata line, then message records (upserted by id), `{"$set": …}` patches
/// (`$set.messages` replaces all messages) and `{"$rewindTo": id}` truncations. Unparseable lines are
/// ignored as Gemini CLI ignores them (a crash can leave a torn last line); each becomes a warning.
pub fn parse_jsonl(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let text = utf8(bytes, file)?;
    let mut warnings = Vec::new();
    let mut metadata = Value::empty_object();
    // id → (record, line it was last written on); order of first appearance is kept.
    let mut messages: IndexMap<String, (Value, Loc)> = IndexMap::new();
    let mut anonymous = 0usize;
    let mut any_record = false;
    for (n, line) in text.split('\n').enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let record = match json::parse_str(line) {
            Ok(r @ Value::Object(_)) => r,
            Ok(other) => {
                warnings.push(format!("{file}: line {line_no}: ignored a {} (records are objects)", other.kind()));
                continue;
            }
            Err(e) => {
                warnings.push(format!("{file}: line {line_no}: ignored unparseable line: {e}"));
                continue;
            }
        };
        any_record = true;
        if let Some(Value::String(target)) = record.get("$rewindTo") {
            let target = target.to_str_lossy();
            match messages.get_index_of(target.as_ref()) {
                Some(i) => messages.truncate(i),
                None => messages.clear(),
            }
        } else if let Some(patch) = record.get("$set") {
            let Some(patch_map) = patch.as_object() else {
                return Err(DatasetError::at(file, format!("line {line_no}, $.$set"), "expected an object"));
            };
            for (k, val) in patch_map.iter() {
                if k.as_str() == Some("messages") {
                    let Some(items) = val.as_array() else {
                        return Err(DatasetError::at(
                            file,
                            format!("line {line_no} (at $.$set.messages)"),
                            format!("expected an array, found {}", val.kind()),
                        ));
                    };
                    messages.clear();
                    for (i, m) in items.iter().enumerate() {
                        let at = JsonPath::root().key("$set").key("messages").index(i);
                        upsert(&mut messages, m.clone(), (Some(line_no), at), &mut anonymous);
                    }
                } else {
                    metadata.as_object_mut().map(|m| m.insert(k.clone(), val.clone()));
                }
            }
        } else if matches!(record.get("id"), Some(Value::String(_))) {
            upsert(&mut messages, record, (Some(line_no), JsonPath::root()), &mut anonymous);
        } else if let Some(map) = record.as_object() {
            for (k, val) in map.iter() {
                metadata.as_object_mut().map(|m| m.insert(k.clone(), val.clone()));
            }
        }
    }
    if !any_record {
        return Err(DatasetError::whole(file, "no JSON records found; not a Gemini CLI session"));
    }
    let (records, paths): (Vec<Value>, Vec<Loc>) = messages.into_values().unzip();
    let conversation = convert(&metadata, &records, &paths, file, Format::GeminiJsonl)?;
    Ok(Imported { conversations: vec![conversation], warnings })
}

/// Where a message record came from: its JSONL line (if any) and its path within that line or file.
type Loc = (Option<usize>, JsonPath);

fn upsert(messages: &mut IndexMap<String, (Value, Loc)>, m: Value, at: Loc, anonymous: &mut usize) {
    let id = match m.get("id").and_then(Value::as_js_str) {
        Some(id) => id.to_str_lossy().into_owned(),
        None => {
            // A message without an id cannot be rewritten later; keep it under a private key.
            *anonymous += 1;
            format!("\u{0}anonymous-{anonymous}")
        }
    };
    messages.insert(id, (m, at));
}

/// Gemini CLI's `partListUnionToString` (non-verbose): strings and part texts concatenated.
fn part_list_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_str_lossy().into_owned(),
        Value::Array(items) => items.iter().map(part_list_text).collect(),
        Value::Object(_) => history::part_text(v).map(|t| t.to_str_lossy().into_owned()).unwrap_or_default(),
        _ => String::new(),
    }
}

/// Gemini CLI's `ensurePartArray`; parts that are not objects are errors (the API would reject them).
fn part_array(v: &Value, at: &JsonPath, file: &str) -> Result<Vec<Value>, DatasetError> {
    let one = |p: &Value, at: &JsonPath| match p {
        Value::String(s) => Ok(Value::object([("text", Value::String(s.clone()))])),
        Value::Object(_) => Ok(p.clone()),
        other => {
            Err(DatasetError::field(file, at, format!("expected a part (object or string), found {}", other.kind())))
        }
    };
    match v {
        Value::Array(items) => items.iter().enumerate().map(|(i, p)| one(p, &at.index(i))).collect(),
        other => Ok(vec![one(other, at)?]),
    }
}

fn js_string_of(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.to_str_lossy().into_owned(),
        Some(other) => json::to_string(other),
    }
}

/// `convertSessionToClientHistory`, plus the recorded `tokens.input` of each model turn.
fn convert(
    metadata: &Value,
    messages: &[Value],
    locs: &[Loc],
    file: &str,
    format: Format,
) -> Result<Conversation, DatasetError> {
    let mut history: Vec<Content> = Vec::new();
    let mut tokens: Vec<Option<u64>> = Vec::new();
    for (msg, (line, at)) in messages.iter().zip(locs) {
        convert_message(msg, at, file, &mut history, &mut tokens).map_err(|e| {
            if let Some(line) = line {
                e.on_line(*line)
            } else {
                e
            }
        })?;
    }
    let mut extra = Value::empty_object();
    for key in ["sessionId", "projectHash", "startTime", "lastUpdated", "summary", "kind"] {
        if let Some(v) = metadata.get(key).filter(|v| !v.is_null()) {
            extra.insert(key, v.clone());
        }
    }
    let title = metadata.get("summary").or(metadata.get("startTime")).and_then(Value::as_str).map(str::to_string);
    let meta = ConversationMeta {
        id: super::stem_id(file),
        format: format.name().into(),
        path: Some(file.to_string()),
        title,
        extra: extra.as_object().is_some_and(|m| !m.is_empty()).then_some(extra),
        ..Default::default()
    };
    let recorded_prompt_tokens = if tokens.iter().any(Option::is_some) { tokens } else { Vec::new() };
    Ok(Conversation { meta, history, recorded_prompt_tokens, ..Default::default() })
}

fn convert_message(
    msg: &Value,
    at: &JsonPath,
    file: &str,
    history: &mut Vec<Content>,
    tokens: &mut Vec<Option<u64>>,
) -> Result<(), DatasetError> {
    as_object(msg, at, file)?;
    let kind = match msg.get("type") {
        Some(Value::String(s)) => s.to_str_lossy().into_owned(),
        Some(other) => {
            return Err(DatasetError::field(
                file,
                &at.key("type"),
                format!("expected a string, found {}", other.kind()),
            ))
        }
        None => return Err(DatasetError::field(file, &at.key("type"), "missing")),
    };
    let content = msg.get("content").unwrap_or(&Value::Null);
    match kind.as_str() {
        "info" | "error" | "warning" => {}
        "user" => {
            let text = part_list_text(content);
            let t = text.trim();
            let ignored = t.is_empty()
                || t.starts_with('/')
                || t.starts_with('?')
                || t.starts_with("<session_context>")
                || t.starts_with("<hook_context>");
            if ignored {
                return Ok(());
            }
            let parts = part_array(content, &at.key("content"), file)?;
            history.push(Value::object([("role", Value::str("user")), ("parts", Value::Array(parts))]));
            tokens.push(None);
        }
        "gemini" => convert_model(msg, at, file, history, tokens)?,
        other => {
            return Err(DatasetError::field(
                file,
                &at.key("type"),
                format!("unknown message type {other:?} (expected user, gemini, info, error or warning)"),
            ))
        }
    }
    Ok(())
}

/// A `gemini` message: its model turn, then a user turn of the responses its tool calls recorded.
fn convert_model(
    msg: &Value,
    at: &JsonPath,
    file: &str,
    history: &mut Vec<Content>,
    tokens: &mut Vec<Option<u64>>,
) -> Result<(), DatasetError> {
    let content = msg.get("content").unwrap_or(&Value::Null);
    let content_parts = if content.is_truthy() { part_array(content, &at.key("content"), file)? } else { Vec::new() };
    let tool_calls = match msg.get("toolCalls") {
        None | Some(Value::Null) => &[][..],
        Some(v) => as_array(v, &at.key("toolCalls"), file)?,
    };
    for (i, tc) in tool_calls.iter().enumerate() {
        as_object(tc, &at.key("toolCalls").index(i), file)?;
    }
    let modern = content_parts.iter().any(|p| history::function_call(p).is_some() || history::is_thought(p));
    let model_parts =
        if modern { content_parts } else { legacy_model_parts(msg, at, file, content_parts, tool_calls)? };
    if model_parts.is_empty() {
        return Ok(());
    }
    history.push(Value::object([("role", Value::str("model")), ("parts", Value::Array(model_parts))]));
    tokens.push(opt_count(msg.get("tokens").and_then(|t| t.get("input"))));
    let response_parts = tool_response_parts(tool_calls, at, file)?;
    if !response_parts.is_empty() {
        history.push(Value::object([("role", Value::str("user")), ("parts", Value::Array(response_parts))]));
        tokens.push(None);
    }
    Ok(())
}

/// The model parts of a message whose content holds no calls or thoughts (older sessions keep them in
/// `thoughts` and `toolCalls`): the thoughts as thought parts, then the content, then the calls.
fn legacy_model_parts(
    msg: &Value,
    at: &JsonPath,
    file: &str,
    content_parts: Vec<Value>,
    tool_calls: &[Value],
) -> Result<Vec<Value>, DatasetError> {
    let mut model_parts = Vec::new();
    if let Some(thoughts) = msg.get("thoughts").filter(|t| !t.is_null()) {
        for (i, t) in as_array(thoughts, &at.key("thoughts"), file)?.iter().enumerate() {
            as_object(t, &at.key("thoughts").index(i), file)?;
            let description = js_string_of(t.get("description"));
            let text = match t.get("subject").filter(|s| s.is_truthy()) {
                Some(subject) => format!("**{}** {description}", js_string_of(Some(subject))),
                None => description,
            };
            model_parts.push(Value::object([("text", Value::str(&text)), ("thought", Value::Bool(true))]));
        }
    }
    model_parts.extend(content_parts);
    for tc in tool_calls {
        let mut call = Value::empty_object();
        for key in ["id", "name", "args"] {
            if let Some(v) = tc.get(key) {
                call.insert(key, v.clone());
            }
        }
        model_parts.push(Value::object([("functionCall", call)]));
    }
    Ok(model_parts)
}

/// The response parts of a message's `toolCalls` that have a `result`: a string becomes a functionResponse,
/// a part or part list is taken as it is.
fn tool_response_parts(tool_calls: &[Value], at: &JsonPath, file: &str) -> Result<Vec<Value>, DatasetError> {
    let mut response_parts = Vec::new();
    for (i, tc) in tool_calls.iter().enumerate() {
        let result = tc.get("result").unwrap_or(&Value::Null);
        if !result.is_truthy() {
            continue;
        }
        let rat = at.key("toolCalls").index(i).key("result");
        match result {
            Value::String(_) => {
                let mut resp = Value::empty_object();
                for key in ["id", "name"] {
                    if let Some(v) = tc.get(key) {
                        resp.insert(key, v.clone());
                    }
                }
                resp.insert("response", Value::object([("output", result.clone())]));
                response_parts.push(Value::object([("functionResponse", resp)]));
            }
            Value::Array(_) => response_parts.extend(part_array(result, &rat, file)?),
            Value::Object(_) => response_parts.push(result.clone()),
            other => {
                return Err(DatasetError::field(
                    file,
                    &rat,
                    format!("expected a string, part or part list, found {}", other.kind()),
                ))
            }
        }
    }
    Ok(response_parts)
}
