//! Importers: recorded agent conversations in their native formats → [`Conversation`]s.
//!
//! Every importer is a pure `parse(bytes, file) -> Result<Imported, DatasetError>`: no file system, no
//! panics on any input (they are fuzzed), errors naming the file and the line or JSON path.

pub mod aider;
pub mod claude_code;
pub mod codex;
pub mod gemini;
pub mod openai;
pub mod swe_agent;

use super::error::utf8;
use super::{Conversation, DatasetError};
use crate::history::Content;
use crate::json::{self, JsonPath, Value};
use std::collections::HashMap;

/// The formats we import. Names and the list of all of them come from `named_variants!` below, which
/// `--format`, the import cache and sweep configs read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Gemini CLI session, legacy single-object `.json` (`ConversationRecord`).
    GeminiSession,
    /// Gemini CLI session, append-only `.jsonl` with `$set` / `$rewindTo` records.
    GeminiJsonl,
    /// A plain Gemini `Content[]` JSON array.
    GeminiContents,
    /// OpenAI-style chat messages with tool calls (mini-swe-agent, tau-bench, plain message lists).
    OpenaiChat,
    /// SWE-agent `.traj` (thought-action or function-calling).
    SweAgent,
    /// aider `.aider.chat.history.md`.
    Aider,
    /// Claude Code transcript JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
}

compactbench_core::named_variants!(Format, "format", {
    GeminiSession => "gemini-session",
    GeminiJsonl => "gemini-jsonl",
    GeminiContents => "gemini-contents",
    OpenaiChat => "openai-chat",
    SweAgent => "swe-agent",
    Aider => "aider",
    ClaudeCode => "claude-code",
    Codex => "codex",
});

impl Format {
    /// The format called `name` (as [`Format::name`] writes it).
    pub fn from_name(name: &str) -> Option<Format> {
        name.parse().ok()
    }

    /// Parses `bytes` in this format.
    pub fn parse(self, bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
        match self {
            Format::GeminiSession => gemini::parse_session(bytes, file),
            Format::GeminiJsonl => gemini::parse_jsonl(bytes, file),
            Format::GeminiContents => gemini::parse_contents(bytes, file),
            Format::OpenaiChat => openai::parse(bytes, file),
            Format::SweAgent => swe_agent::parse(bytes, file),
            Format::Aider => aider::parse(bytes, file),
            Format::ClaudeCode => claude_code::parse(bytes, file),
            Format::Codex => codex::parse(bytes, file),
        }
    }
}

/// What an importer produced from one file.
#[derive(Debug, Default)]
pub struct Imported {
    pub conversations: Vec<Conversation>,
    /// Things skipped or approximated, each naming the file and where.
    pub warnings: Vec<String>,
}

/// The share of a JSON-lines session's lines that may be unreadable before the file fails: a session still
/// being written ends in a line cut mid-write, and a crash can leave one in the middle. More than one line
/// and more than 1 % of them is a damaged file, not a live one.
pub const MAX_UNREADABLE_LINE_SHARE: f64 = 0.01;

/// How an import warning says it skipped an unreadable line.
pub const SKIPPED_LINE_NOTE: &str = "the line is skipped";

/// The key of a recorded compaction's `extra` under which an importer keeps when the agent compacted, as the
/// recording writes it (an ISO 8601 time: Claude Code's boundary line, Codex's `compacted` line).
pub const COMPACTED_AT_KEY: &str = "compactedAt";

/// The key of `meta.extra` under which an importer counts the lines it skipped as unreadable.
pub const SKIPPED_LINES_KEY: &str = "skippedLines";

/// Each non-empty line of a JSON-lines text that is a JSON object, with its 1-based line number. A line
/// that is not (cut, or not JSON) is skipped with a warning naming the file and line; when more lines than
/// [`MAX_UNREADABLE_LINE_SHARE`] allows are unreadable, or no line is readable, the file fails with the first
/// of them. Also returns
/// how many were skipped.
pub(crate) fn jsonl_objects(
    text: &str,
    file: &str,
    warnings: &mut Vec<String>,
) -> Result<(Vec<(usize, Value)>, usize), DatasetError> {
    let mut records = Vec::new();
    let mut bad: Vec<DatasetError> = Vec::new();
    let mut lines = 0usize;
    for (n, raw) in text.split('\n').enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        lines += 1;
        let parsed = json::parse_str(raw).map_err(|e| DatasetError::json_line(file, &e, n + 1)).and_then(|v| {
            as_object(&v, &JsonPath::root(), file).map_err(|e| e.on_line(n + 1))?;
            Ok(v)
        });
        match parsed {
            Ok(v) => records.push((n + 1, v)),
            Err(e) => bad.push(e),
        }
    }
    let allowed = ((lines as f64 * MAX_UNREADABLE_LINE_SHARE).floor() as usize).max(1);
    // Nothing readable at all is a damaged file too, however short.
    if bad.len() > allowed || (records.is_empty() && !bad.is_empty()) {
        let first = bad.swap_remove(0);
        return Err(match first {
            DatasetError::Invalid { file, location, message } => DatasetError::Invalid {
                file,
                location,
                message: format!(
                    "{message} ({} of {lines} lines unreadable; at most {allowed} are skipped)",
                    bad.len() + 1
                ),
            },
            other => other,
        });
    }
    for e in &bad {
        warnings.push(format!("{e}; {SKIPPED_LINE_NOTE} (a session still being written ends in a cut line)"));
    }
    Ok((records, bad.len()))
}

/// Guesses the format from the file name and content.
pub fn detect(bytes: &[u8], file: &str) -> Result<Format, DatasetError> {
    let lower = file.to_ascii_lowercase();
    let text = utf8(bytes, file)?;
    if lower.ends_with(".md") || text.starts_with("# aider chat started at") {
        return Ok(Format::Aider);
    }
    if lower.ends_with(".traj") {
        return Ok(Format::SweAgent);
    }
    if let Ok(v) = json::parse(bytes) {
        if let Some(items) = v.as_array() {
            let first = items.first();
            return Ok(match first {
                None => Format::GeminiContents,
                Some(f) if f.get("parts").is_some() => Format::GeminiContents,
                Some(_) => Format::OpenaiChat,
            });
        }
        if v.get("history").is_some_and(|h| h.as_array().is_some()) {
            return Ok(Format::SweAgent);
        }
        if v.get("sessionId").is_some() && v.get("messages").is_some() {
            return Ok(Format::GeminiSession);
        }
        if v.get("messages").is_some() || v.get("traj").is_some() {
            return Ok(Format::OpenaiChat);
        }
        if v.get("parentUuid").is_some() {
            return Ok(Format::ClaudeCode); // a one-line Claude Code transcript
        }
        if v.get("sessionId").is_some() {
            // A one-line JSONL session (metadata only) is also a JSON object.
            return Ok(Format::GeminiJsonl);
        }
        return Err(DatasetError::whole(file, "cannot tell the format of this JSON file; pass --format"));
    }
    // JSON Lines: look at the first few parseable lines.
    for line in text.lines().filter(|l| !l.trim().is_empty()).take(20) {
        let Ok(v) = json::parse_str(line) else { continue };
        let kind = v.get("type").and_then(Value::as_str);
        if matches!(kind, Some("user" | "assistant")) && v.get("message").is_some() {
            return Ok(Format::ClaudeCode);
        }
        // Claude Code 2.x opens with bookkeeping lines (`file-history-snapshot`, `queue-operation`, hook
        // `progress`, `custom-title`, `agent-name`, …) that carry a `sessionId` like Gemini CLI's metadata
        // line; they have a `parentUuid` or one of Claude Code's line kinds.
        if v.get("parentUuid").is_some() || kind.is_some_and(|k| claude_code::BOOKKEEPING_KINDS.contains(&k)) {
            return Ok(Format::ClaudeCode);
        }
        if v.get("$set").is_some() || v.get("$rewindTo").is_some() || v.get("sessionId").is_some() {
            return Ok(Format::GeminiJsonl);
        }
        match kind {
            Some("session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted")
                if v.get("payload").is_some() =>
            {
                return Ok(Format::Codex)
            }
            Some(_) if v.get("uuid").is_some() || v.get("message").is_some() => return Ok(Format::ClaudeCode),
            Some("user" | "gemini" | "info" | "error" | "warning") if v.get("id").is_some() => {
                return Ok(Format::GeminiJsonl)
            }
            _ => {}
        }
    }
    Err(DatasetError::whole(
        file,
        "cannot tell the format (not JSON, JSON Lines of a known agent, or aider markdown); pass --format",
    ))
}

/// Detects the format (unless given) and parses.
pub fn import_bytes(bytes: &[u8], file: &str, format: Option<Format>) -> Result<(Format, Imported), DatasetError> {
    let format = match format {
        Some(f) => f,
        None => detect(bytes, file)?,
    };
    Ok((format, format.parse(bytes, file)?))
}

/// A file stem usable as a conversation id (`dir/a.traj.json` → `a`).
pub fn stem_id(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = name.split('.').next().filter(|s| !s.is_empty()).unwrap_or(name);
    sanitize_id(stem)
}

/// Keeps ids to `[A-Za-z0-9._-]` so they are safe as file names.
pub fn sanitize_id(s: &str) -> String {
    let id: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    if id.is_empty() || id.starts_with('.') {
        format!("conversation{id}")
    } else {
        id
    }
}

// ---- typed field access with path-naming errors ----

pub(crate) fn parse_json(bytes: &[u8], file: &str) -> Result<Value, DatasetError> {
    utf8(bytes, file)?;
    json::parse(bytes).map_err(|e| DatasetError::json(file, &e, 0))
}

pub(crate) fn as_object<'a>(v: &'a Value, at: &JsonPath, file: &str) -> Result<&'a Value, DatasetError> {
    if v.as_object().is_some() {
        Ok(v)
    } else {
        Err(DatasetError::field(file, at, format!("expected an object, found {}", v.kind())))
    }
}

pub(crate) fn as_array<'a>(v: &'a Value, at: &JsonPath, file: &str) -> Result<&'a [Value], DatasetError> {
    v.as_array().ok_or_else(|| DatasetError::field(file, at, format!("expected an array, found {}", v.kind())))
}

pub(crate) fn req<'a>(v: &'a Value, key: &str, at: &JsonPath, file: &str) -> Result<&'a Value, DatasetError> {
    v.get(key).ok_or_else(|| DatasetError::field(file, &at.key(key), "missing"))
}

/// A string member; `None` when absent or null, an error for other types.
pub(crate) fn opt_str(v: &Value, key: &str, at: &JsonPath, file: &str) -> Result<Option<String>, DatasetError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.to_str_lossy().into_owned())),
        Some(other) => {
            Err(DatasetError::field(file, &at.key(key), format!("expected a string, found {}", other.kind())))
        }
    }
}

pub(crate) fn req_str(v: &Value, key: &str, at: &JsonPath, file: &str) -> Result<String, DatasetError> {
    opt_str(v, key, at, file)?.ok_or_else(|| DatasetError::field(file, &at.key(key), "missing"))
}

/// A non-negative integer member; `None` when absent, null or not a count.
pub(crate) fn opt_count(v: Option<&Value>) -> Option<u64> {
    let x = v?.as_f64()?;
    (x >= 0.0 && x.fract() == 0.0 && x < 9.0e15).then_some(x as u64)
}

/// Tool-call arguments: a JSON-encoded object string is decoded; anything else is kept as `{"raw": s}`.
pub(crate) fn args_from_string(s: &str) -> Value {
    match json::parse_str(s) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::object([("raw", Value::str(s))]),
    }
}

pub(crate) fn function_call_part(id: Option<&str>, name: &str, args: Value) -> Value {
    let mut call = Value::empty_object();
    if let Some(id) = id {
        call.insert("id", Value::str(id));
    }
    call.insert("name", Value::str(name));
    call.insert("args", args);
    Value::object([("functionCall", call)])
}

pub(crate) fn function_response_part(id: Option<&str>, name: &str, response: Value) -> Value {
    let mut resp = Value::empty_object();
    if let Some(id) = id {
        resp.insert("id", Value::str(id));
    }
    resp.insert("name", Value::str(name));
    resp.insert("response", response);
    Value::object([("functionResponse", resp)])
}

/// An image (or PDF) as the canonical history holds it: a Gemini `inlineData` part `{"inlineData":
/// {"mimeType", "data"}}` with the base64 as recorded. An image whose size its header does not give is
/// kept too, with a warning naming where it is: the replay counts it as the most its provider bills for one
/// image ([`crate::tokens::images`]).
pub(crate) fn media_part(mime: &str, data: &str, at: &JsonPath, file: &str, warnings: &mut Vec<String>) -> Value {
    let part =
        Value::object([("inlineData", Value::object([("mimeType", Value::str(mime)), ("data", Value::str(data))]))]);
    if let Some(m) = crate::tokens::images::media_of(&part) {
        if m.kind == crate::tokens::images::MediaKind::Image(None) {
            warnings.push(format!(
                "{file}: {at}: an image ({mime}) whose size its header does not give; counted as the most its provider bills for one image"
            ));
        }
    }
    part
}

/// The MIME type and base64 of a `data:<mime>;base64,<data>` URL (Codex's `input_image.image_url`).
pub(crate) fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (head, data) = rest.split_once(',')?;
    let mime = head.strip_suffix(";base64")?;
    Some((if mime.is_empty() { "application/octet-stream" } else { mime }, data))
}

/// The text part an image stands as when the recording holds no bytes of it (a URL or file reference).
pub(crate) const IMAGE_WITHOUT_DATA: &str = "[image]";

/// Builds a Gemini history from turns of any role order: consecutive same-role turns are merged (the API
/// wants alternation), empty turns dropped, and tool call ids remembered so responses can be named.
#[derive(Default)]
pub(crate) struct HistoryBuilder {
    history: Vec<Content>,
    tokens: Vec<Option<u64>>,
    /// Cache traffic of the request behind each Content (aligned with `history`).
    cache: Vec<Option<crate::CacheUsage>>,
    /// Call id → tool name of calls seen so far (ids can be reused: the latest wins).
    calls: HashMap<String, String>,
    /// The next push starts a new Content even when the role repeats (a recorded compaction lies between).
    sealed: bool,
}

impl HistoryBuilder {
    /// Appends parts to the history under `role` (merging into the previous turn of the same role).
    pub fn push(&mut self, role: &str, parts: Vec<Value>) {
        if parts.is_empty() {
            return;
        }
        let sealed = std::mem::take(&mut self.sealed);
        if let Some(last) = self.history.last_mut().filter(|_| !sealed) {
            if crate::history::role(last) == Some(role) {
                if let Some(existing) = last.get_mut("parts").and_then(Value::as_array_mut) {
                    existing.extend(parts);
                    return;
                }
            }
        }
        self.history.push(Value::object([("role", Value::str(role)), ("parts", Value::Array(parts))]));
        self.tokens.push(None);
        self.cache.push(None);
    }

    pub fn push_text(&mut self, role: &str, text: &str) {
        if !text.trim().is_empty() {
            self.push(role, vec![crate::history::text_part(text)]);
        }
    }

    /// An empty builder that knows this one's tool calls (to convert Contents kept apart from the history).
    pub fn fork(&self) -> HistoryBuilder {
        HistoryBuilder { calls: self.calls.clone(), ..Default::default() }
    }

    /// Number of Contents so far: the index the next Content will have.
    pub fn contents(&self) -> usize {
        self.history.len()
    }

    /// Ends the current Content: what is pushed next starts a new one, so an index taken now (a recorded
    /// compaction's `at`) separates what came before from what comes after.
    pub fn seal(&mut self) {
        self.sealed = true;
    }

    pub fn last_role(&self) -> Option<&str> {
        self.history.last().and_then(crate::history::role)
    }

    /// Records the prompt token count of the request that produced the last Content.
    /// The cache traffic of the request that produced the last Content.
    pub fn set_last_cache(&mut self, usage: crate::CacheUsage) {
        if let Some(c) = self.cache.last_mut() {
            *c = Some(usage);
        }
    }

    /// The cache traffic per Content (empty when none was set); call before [`finish`](Self::finish).
    pub fn take_cache(&mut self) -> Vec<Option<crate::CacheUsage>> {
        let cache = std::mem::take(&mut self.cache);
        if cache.iter().any(Option::is_some) {
            cache
        } else {
            Vec::new()
        }
    }

    pub fn set_last_tokens(&mut self, n: u64) {
        if let Some(t) = self.tokens.last_mut() {
            *t = Some(n);
        }
    }

    /// A functionCall part, remembering its id for the response.
    pub fn call(&mut self, id: Option<&str>, name: &str, args: Value) -> Value {
        if let Some(id) = id {
            self.calls.insert(id.to_string(), name.to_string());
        }
        function_call_part(id, name, args)
    }

    /// The tool name of the call `id` answers, if any call had that id.
    pub fn call_name(&self, id: &str) -> Option<&str> {
        self.calls.get(id).map(String::as_str)
    }

    /// The history and its recorded token counts (empty when none is known).
    pub fn finish(self) -> (Vec<Content>, Vec<Option<u64>>) {
        let tokens = if self.tokens.iter().any(Option::is_some) { self.tokens } else { Vec::new() };
        (self.history, tokens)
    }
}

/// Text of an OpenAI / Anthropic style content value: a string, or an array of `{type:"text", text}` blocks
/// (other block types are skipped), or null.
pub(crate) fn content_text(v: &Value, at: &JsonPath, file: &str) -> Result<String, DatasetError> {
    match v {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.to_str_lossy().into_owned()),
        Value::Array(items) => {
            let mut out = String::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push_str(&s.to_str_lossy()),
                    Value::Object(_) => {
                        if let Some(t) = item.get("text") {
                            let t = t.as_js_str().ok_or_else(|| {
                                DatasetError::field(file, &at.index(i).key("text"), "expected a string")
                            })?;
                            if !out.is_empty() && !out.ends_with('\n') {
                                out.push('\n');
                            }
                            out.push_str(&t.to_str_lossy());
                        }
                    }
                    other => {
                        return Err(DatasetError::field(
                            file,
                            &at.index(i),
                            format!("expected a content block, found {}", other.kind()),
                        ))
                    }
                }
            }
            Ok(out)
        }
        other => Err(DatasetError::field(file, at, format!("expected a string or an array, found {}", other.kind()))),
    }
}
