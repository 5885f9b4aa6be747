//! Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`): one JSON object per line,
//! `{type: "user"|"assistant", uuid, parentUuid, isSidechain?, isMeta?, message: {role, content, usage?}}`
//! plus bookkeeping lines (`summary`, `system`, `file-history-snapshot`, …) that are skipped.
//!
//! Lines form a tree through `parentUuid` (edits and retries branch it); the conversation is the chain
//! from the last message back to the root. `content` is a string or blocks: `text`, `thinking`,
//! `tool_use {id, name, input}`, `tool_result {tool_use_id, content, is_error?}` (its content a string or
//! blocks, among them images), and `image` / `document` blocks `{source: {type: "base64", media_type,
//! data}}`, which become `inlineData` parts (a tool result's right after its functionResponse, which keeps
//! the result's text). Assistant
//! `usage.input_tokens + cache_creation_input_tokens + cache_read_input_tokens` is the prompt size.
//!
//! Compaction (`/compact` or auto-compact) writes a `system` line with `subtype: "compact_boundary"`
//! (`parentUuid: null`, `logicalParentUuid` = the last message before it, `compactMetadata {trigger,
//! preTokens}`), then a user line with `isCompactSummary: true` whose text is what the agent continued
//! from. The chain follows `logicalParentUuid` across the boundary, so the history is the whole session
//! uncompressed; the summary is not a turn of it but a [`RecordedCompaction`] at the index of the next
//! Content (older transcripts have the summary line without a boundary).

use super::{
    as_object, content_text, function_response_part, opt_count, opt_str, stem_id, Format, HistoryBuilder, Imported,
    COMPACTED_AT_KEY,
};
use crate::error::utf8;
use crate::json::{JsonPath, Value};
use crate::{Conversation, ConversationMeta, DatasetError, RecordedCompaction};
use std::collections::{BTreeMap, HashMap};

struct Line {
    number: usize,
    record: Value,
}

/// The text before a tool result whose call the recording does not hold.
pub(crate) const ORPHAN_RESULT: &str = "[tool result; its call is not in the recording]";

/// Line kinds Claude Code writes besides messages; they are bookkeeping, skipped without a warning. Any
/// other kind (a newer version's) is skipped too, and counted in a warning.
pub(crate) const BOOKKEEPING_KINDS: &[&str] = &[
    "system",
    "progress",
    "summary",
    "file-history-snapshot",
    "file-history-delta",
    "queue-operation",
    "attachment",
    "last-prompt",
    "mode",
    "permission-mode",
    "ai-title",
    "custom-title",
    "agent-name",
    "bridge-session",
    "pr-link",
];

pub fn parse(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let text = utf8(bytes, file)?;
    let mut imported = Imported::default();
    let Scan { lines, session_id, cwd, unknown_kinds, skipped: unreadable } =
        scan_lines(text, file, &mut imported.warnings)?;
    if !unknown_kinds.is_empty() {
        let list: Vec<String> = unknown_kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        imported.warnings.push(format!("{file}: line kinds this importer does not know, skipped: {}", list.join(", ")));
    }
    if !lines.iter().any(is_message) {
        return Err(DatasetError::whole(file, "no user or assistant lines; not a Claude Code transcript"));
    }
    let chain = with_parallel_calls(&lines, main_chain(&lines));
    let (mut b, recorded_compactions) = convert_chain(&lines, &chain, file, &mut imported)?;
    let recorded_cache = b.take_cache();
    let (history, recorded_prompt_tokens) = b.finish();
    let mut on_chain = vec![false; lines.len()];
    chain.iter().for_each(|&i| on_chain[i] = true);
    let skipped = lines.iter().zip(&on_chain).filter(|(l, &on)| !on && is_message(l)).count();
    if skipped > 0 {
        imported.warnings.push(format!("{file}: {skipped} message line(s) on abandoned branches skipped"));
    }
    let meta = ConversationMeta {
        id: stem_id(file),
        format: Format::ClaudeCode.name().into(),
        path: Some(file.to_string()),
        extra: session_extra(session_id, cwd, unreadable),
        ..Default::default()
    };
    imported.conversations.push(Conversation {
        meta,
        history,
        recorded_prompt_tokens,
        recorded_cache,
        recorded_compactions,
        ..Default::default()
    });
    Ok(imported)
}

/// `meta.extra`: the session id and the working directory, where the transcript records them, and how many
/// unreadable lines were skipped, where any were.
fn session_extra(session_id: Option<String>, cwd: Option<String>, skipped: usize) -> Option<Value> {
    let mut pairs: Vec<(&str, Value)> = [("sessionId", session_id), (crate::model::CWD_KEY, cwd)]
        .into_iter()
        .filter_map(|(k, v)| Some((k, Value::str(&v?))))
        .collect();
    if skipped > 0 {
        pairs.push((super::SKIPPED_LINES_KEY, Value::num(skipped as f64)));
    }
    (!pairs.is_empty()).then(|| Value::object(pairs))
}

/// What the first pass over the file keeps.
struct Scan {
    /// The lines that can be on the conversation's chain, in file order.
    lines: Vec<Line>,
    /// The `sessionId` of the first main-conversation message that has one.
    session_id: Option<String>,
    /// The working directory (`cwd`) of the first main-conversation message that has one: the root that
    /// the session's relative paths are relative to (graders resolve paths against it).
    cwd: Option<String>,
    /// Line kinds neither messages nor known bookkeeping, with how many lines have each.
    unknown_kinds: BTreeMap<String, usize>,
    /// Unreadable lines skipped (a cut last line of a session still being written).
    skipped: usize,
}

/// Parses every line, keeping the nodes of the main conversation's tree.
fn scan_lines(text: &str, file: &str, warnings: &mut Vec<String>) -> Result<Scan, DatasetError> {
    let (records, skipped) = super::jsonl_objects(text, file, warnings)?;
    let mut scan = Scan { lines: Vec::new(), session_id: None, cwd: None, unknown_kinds: BTreeMap::new(), skipped };
    for (number, record) in records {
        let root = JsonPath::root();
        let kind = opt_str(&record, "type", &root, file).map_err(|e| e.on_line(number))?.unwrap_or_default();
        let is_message = matches!(kind.as_str(), "user" | "assistant");
        if !is_message && !BOOKKEEPING_KINDS.contains(&kind.as_str()) {
            let kind = if kind.is_empty() { "(no type)".into() } else { kind.clone() };
            *scan.unknown_kinds.entry(kind).or_default() += 1;
        }
        // Every line that carries a uuid is a node of the tree (the chain runs through progress and system
        // lines); messages without one (older transcripts) are taken in file order.
        if !is_message && record.get("uuid").and_then(Value::as_str).is_none() {
            continue;
        }
        if record.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            continue; // a sub-agent's conversation, not the main one
        }
        if scan.session_id.is_none() && is_message {
            scan.session_id = opt_str(&record, "sessionId", &root, file).map_err(|e| e.on_line(number))?;
        }
        if scan.cwd.is_none() && is_message {
            scan.cwd = opt_str(&record, "cwd", &root, file).map_err(|e| e.on_line(number))?;
        }
        scan.lines.push(Line { number, record });
    }
    Ok(scan)
}

/// A compact boundary whose summary line has not come yet: its `compactMetadata` and preserved lines.
type PendingBoundary = (Option<Value>, Vec<usize>);

/// Converts the lines of `chain` into a history and the compactions recorded along it.
fn convert_chain(
    lines: &[Line],
    chain: &[usize],
    file: &str,
    imported: &mut Imported,
) -> Result<(HistoryBuilder, Vec<RecordedCompaction>), DatasetError> {
    let mut b = HistoryBuilder::default();
    let mut recorded_compactions = Vec::new();
    let mut boundary: Option<PendingBoundary> = None;
    // A preserved segment is on the chain twice (before the boundary, and moved after the summary).
    let mut done = vec![false; lines.len()];
    let by_uuid = uuid_index(lines);
    let mut orphan_results = 0usize;
    for &i in chain {
        let line = &lines[i];
        if std::mem::replace(&mut done[i], true) {
            continue;
        }
        if is_compact_boundary(&line.record) {
            let mut metadata = line.record.get("compactMetadata").filter(|m| m.as_object().is_some()).cloned();
            // When the agent compacted (audits list it): the boundary line's own time.
            if let Some(t) = line.record.get("timestamp").filter(|t| t.as_str().is_some()) {
                metadata.get_or_insert_with(Value::empty_object).insert(COMPACTED_AT_KEY, t.clone());
            }
            boundary = Some((metadata, preserved_lines(&line.record, &by_uuid)));
            continue;
        }
        if !is_message(line) {
            continue;
        }
        if line.record.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            let pending = boundary.take().unwrap_or_default();
            let (compaction, orphans) = summary_compaction(line, pending, lines, file, &mut b, imported)?;
            orphan_results += orphans;
            recorded_compactions.push(compaction);
            continue;
        }
        orphan_results += convert_line(&line.record, file, &mut b, imported).map_err(|e| e.on_line(line.number))?;
    }
    if boundary.is_some() {
        imported.warnings.push(format!("{file}: the last compact boundary has no summary line; ignored"));
    }
    if orphan_results > 0 {
        imported.warnings.push(format!(
            "{file}: {orphan_results} tool result(s) answer a call the file does not hold; kept as text"
        ));
    }
    Ok((b, recorded_compactions))
}

/// The compaction a summary line records, at the index of the next Content of `b` (which it seals), with
/// the boundary's preserved segment converted apart; also how many of that segment's tool results are
/// orphans.
fn summary_compaction(
    line: &Line,
    (extra, preserved_at): PendingBoundary,
    lines: &[Line],
    file: &str,
    b: &mut HistoryBuilder,
    imported: &mut Imported,
) -> Result<(RecordedCompaction, usize), DatasetError> {
    let at = JsonPath::root().key("message");
    let message = super::req(&line.record, "message", &JsonPath::root(), file).map_err(|e| e.on_line(line.number))?;
    let summary = content_text(message.get("content").unwrap_or(&Value::Null), &at.key("content"), file)
        .map_err(|e| e.on_line(line.number))?;
    let mut preserved = b.fork();
    let mut orphans = 0;
    for &p in preserved_at.iter().filter(|&&p| is_message(&lines[p])) {
        let l = &lines[p];
        orphans += convert_line(&l.record, file, &mut preserved, imported).map_err(|e| e.on_line(l.number))?;
    }
    b.seal();
    let compaction =
        RecordedCompaction { at: b.contents(), summary, kept: Vec::new(), preserved: preserved.finish().0, extra };
    Ok((compaction, orphans))
}

fn is_message(line: &Line) -> bool {
    matches!(line.record.get("type").and_then(Value::as_str), Some("user" | "assistant"))
}

/// A `system` line marking a compaction (its parent is `logicalParentUuid`).
fn is_compact_boundary(record: &Value) -> bool {
    record.get("type").and_then(Value::as_str) == Some("system")
        && record.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
}

fn uuid_index(lines: &[Line]) -> HashMap<String, usize> {
    let uuid = |l: &Line| l.record.get("uuid").and_then(Value::as_str).map(str::to_string);
    lines.iter().enumerate().filter_map(|(i, l)| Some((uuid(l)?, i))).collect()
}

/// The lines of a boundary's preserved segment (`compactMetadata.preservedMessages.uuids`, newer
/// versions: the newest messages, kept verbatim after the summary), in order; empty when it has none.
fn preserved_lines(boundary: &Value, by_uuid: &HashMap<String, usize>) -> Vec<usize> {
    let uuids = boundary.get("compactMetadata").and_then(|m| m.get("preservedMessages")).and_then(|p| p.get("uuids"));
    let uuids = uuids.and_then(Value::as_array).unwrap_or_default();
    uuids.iter().filter_map(|u| by_uuid.get(u.as_str()?).copied()).collect()
}

/// Indexes of the lines on the path from the root to the last message, in order, through every line
/// kind that carries a uuid. Messages without a `uuid` (older transcripts) are taken in file order.
///
/// A compact boundary starts a new root: the path goes on at the message it follows
/// (`logicalParentUuid`); when the boundary preserved a segment (which then hangs after the summary), at
/// the segment's head's parent, followed by the segment, so that the segment is on the path twice, before
/// the boundary and after the summary. Claude Code does not write every line it links to (some progress
/// lines are missing): a parent that is not in the file is bridged to the nearest earlier line not yet on
/// the path.
fn main_chain(lines: &[Line]) -> Vec<usize> {
    if lines.iter().any(|l| is_message(l) && l.record.get("uuid").and_then(Value::as_str).is_none()) {
        return (0..lines.len()).filter(|&i| is_message(&lines[i])).collect();
    }
    let by_uuid = uuid_index(lines);
    let mut chain = Vec::new();
    let mut visited = vec![false; lines.len()];
    let mut current = (0..lines.len()).rev().find(|&i| is_message(&lines[i]));
    while let Some(i) = current {
        if std::mem::replace(&mut visited[i], true) {
            break; // a cycle: malformed parents
        }
        chain.push(i);
        let record = &lines[i].record;
        let key = |r: &Value, key: &str| r.get(key).and_then(Value::as_str).map(str::to_string);
        // The parent line, bridged to the nearest earlier unvisited line when it is not in the file.
        let resolve = |uuid: Option<String>, from: usize, visited: &[bool]| match uuid {
            None => None,
            Some(u) => by_uuid.get(&u).copied().or_else(|| (0..from).rev().find(|&j| !visited[j])),
        };
        let mut parent = key(record, "parentUuid");
        if parent.is_none() {
            let preserved = if is_compact_boundary(record) { preserved_lines(record, &by_uuid) } else { Vec::new() };
            if let Some(&head) = preserved.first() {
                chain.extend(preserved.iter().rev());
                current = resolve(key(&lines[head].record, "parentUuid"), head, &visited);
                continue;
            }
            parent = key(record, "logicalParentUuid");
        }
        current = resolve(parent, i, &visited);
    }
    chain.reverse();
    chain
}

/// The chain with the parallel tool calls it passed by. One API response with several `tool_use` blocks is
/// written as one line per block, all with the response's `message.id`; a line's parent is the block
/// before it, or (newer versions) each result's parent is its own call's line, so the walk from the last
/// line back follows one call and its result and leaves the others off the chain. Each such sibling line
/// (same `message.id` as a chain line) and each tool-result line answering one is put back, in file order,
/// right after the chain line of its response.
fn with_parallel_calls(lines: &[Line], chain: Vec<usize>) -> Vec<usize> {
    let message_id = |i: usize| -> Option<&str> {
        let l = &lines[i];
        (l.record.get("type").and_then(Value::as_str) == Some("assistant"))
            .then(|| l.record.get("message").and_then(|m| m.get("id")).and_then(Value::as_str))
            .flatten()
    };
    let uuid = |i: usize| lines[i].record.get("uuid").and_then(Value::as_str);
    let parent = |i: usize| lines[i].record.get("parentUuid").and_then(Value::as_str);
    let mut on_chain = vec![false; lines.len()];
    chain.iter().for_each(|&i| on_chain[i] = true);
    let mut by_message: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for i in (0..lines.len()).filter(|&i| !on_chain[i]) {
        if let Some(id) = message_id(i) {
            by_message.entry(id).or_default().push(i);
        }
    }
    // Off-chain user lines by the uuid of their parent: the results of the sibling calls.
    let mut results: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let holds_result = |i: usize| {
        let content = lines[i].record.get("message").and_then(|m| m.get("content"));
        content
            .and_then(Value::as_array)
            .is_some_and(|parts| parts.iter().any(|p| p.get("type").and_then(Value::as_str) == Some("tool_result")))
    };
    for i in (0..lines.len()).filter(|&i| !on_chain[i] && message_id(i).is_none() && holds_result(i)) {
        if let Some(p) = parent(i) {
            results.entry(p).or_default().push(i);
        }
    }
    if by_message.is_empty() && results.is_empty() {
        return chain;
    }
    let mut out = Vec::with_capacity(chain.len());
    for i in chain {
        out.push(i);
        if message_id(i).is_none() {
            continue;
        }
        let siblings = message_id(i).and_then(|id| by_message.remove(id)).unwrap_or_default();
        // Results left off the chain whose call is this line or one of its siblings.
        let mut extra: Vec<usize> = uuid(i).and_then(|u| results.remove(u)).unwrap_or_default();
        for s in siblings {
            extra.push(s);
            if let Some(rs) = uuid(s).and_then(|u| results.remove(u)) {
                extra.extend(rs);
            }
        }
        extra.sort_unstable();
        out.extend(extra);
    }
    out
}

/// Converts one message line; returns how many of its tool results answer no call seen so far (kept as
/// text: their call lies in a line the file does not hold).
fn convert_line(
    record: &Value,
    file: &str,
    b: &mut HistoryBuilder,
    imported: &mut Imported,
) -> Result<usize, DatasetError> {
    let root = JsonPath::root();
    if record.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return Ok(0); // injected context (command caveats), not a turn
    }
    let at = root.key("message");
    let message = as_object(super::req(record, "message", &root, file)?, &at, file)?;
    let role = turn_role(record, message, &at, file)?;
    let content = message.get("content").unwrap_or(&Value::Null);
    let (parts, orphans) = content_parts(content, &at.key("content"), file, b, imported)?;
    let is_new_model_turn = role == "model" && !parts.is_empty();
    b.push(role, parts);
    if is_new_model_turn {
        if let Some(usage) = message.get("usage") {
            let fields = ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"];
            let counts: Vec<u64> = fields.iter().filter_map(|k| opt_count(usage.get(k))).collect();
            if !counts.is_empty() {
                b.set_last_tokens(counts.iter().sum());
                let [read, written] = [fields[2], fields[1]].map(|k| opt_count(usage.get(k)).unwrap_or(0));
                b.set_last_cache(crate::CacheUsage { read, written });
            }
        }
    }
    Ok(orphans)
}

/// The Gemini role of a message line: its `message.role`, else its line `type`.
fn turn_role(record: &Value, message: &Value, at: &JsonPath, file: &str) -> Result<&'static str, DatasetError> {
    match opt_str(message, "role", at, file)?.as_deref() {
        Some("user") | None if record.get("type").and_then(Value::as_str) == Some("user") => Ok("user"),
        Some("assistant") | None => Ok("model"),
        Some(other) => Err(DatasetError::field(
            file,
            &at.key("role"),
            format!("unknown role {other:?} (expected user or assistant)"),
        )),
    }
}

/// The parts of a message's `content` (at `cat`): a string, or blocks converted one by one. Also returns
/// how many tool results answer no call seen so far.
fn content_parts(
    content: &Value,
    cat: &JsonPath,
    file: &str,
    b: &mut HistoryBuilder,
    imported: &mut Imported,
) -> Result<(Vec<Value>, usize), DatasetError> {
    let Value::Array(blocks) = content else {
        let t = content_text(content, cat, file)?;
        let parts = if t.trim().is_empty() { Vec::new() } else { vec![crate::history::text_part(&t)] };
        return Ok((parts, 0));
    };
    let mut parts = Vec::new();
    let mut orphans = 0;
    for (i, block) in blocks.iter().enumerate() {
        let bat = cat.index(i);
        as_object(block, &bat, file)?;
        match opt_str(block, "type", &bat, file)?.as_deref() {
            Some("text") => {
                let t = super::req_str(block, "text", &bat, file)?;
                if !t.is_empty() {
                    parts.push(crate::history::text_part(&t));
                }
            }
            Some("thinking") => {
                let t = opt_str(block, "thinking", &bat, file)?.unwrap_or_default();
                if !t.is_empty() {
                    parts.push(Value::object([("text", Value::str(&t)), ("thought", Value::Bool(true))]));
                }
            }
            Some("redacted_thinking") => {}
            Some("tool_use") => parts.push(tool_use_part(block, &bat, file, b)?),
            Some("tool_result") => {
                let (part, orphan) = tool_result_part(block, &bat, file, b)?;
                orphans += usize::from(orphan);
                parts.push(part);
                // The result's images right after its functionResponse, as Gemini CLI sends a tool's images.
                if let Some(Value::Array(inner)) = block.get("content") {
                    for (j, item) in inner.iter().enumerate() {
                        let iat = bat.key("content").index(j);
                        if matches!(item.get("type").and_then(Value::as_str), Some("image" | "document")) {
                            parts.extend(media_block(item, &iat, file, &mut imported.warnings)?);
                        }
                    }
                }
            }
            Some("image") | Some("document") => parts.extend(media_block(block, &bat, file, &mut imported.warnings)?),
            Some(other) => imported
                .warnings
                .push(format!("{file}: {}: content block type {other:?} is not known to this importer; skipped", bat)),
            None => return Err(DatasetError::field(file, &bat.key("type"), "missing")),
        }
    }
    Ok((parts, orphans))
}

/// An `image` or `document` block (in a user turn, or in a tool result's content): a base64 source becomes
/// an `inlineData` part with its media type (an image, or a PDF document), a plain-text document its text;
/// a source the recording holds no bytes of (a URL, a file id) the text `[image]` / `[document]`.
fn media_block(
    block: &Value,
    bat: &JsonPath,
    file: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Value>, DatasetError> {
    let kind = opt_str(block, "type", bat, file)?.unwrap_or_default();
    let sat = bat.key("source");
    let source = block.get("source").filter(|s| s.as_object().is_some());
    let source_type = match source {
        Some(s) => opt_str(s, "type", &sat, file)?,
        None => None,
    };
    let part = match (source, source_type.as_deref()) {
        (Some(s), Some("base64")) => {
            let mime = opt_str(s, "media_type", &sat, file)?.unwrap_or_else(|| {
                if kind == "document" {
                    "application/pdf".into()
                } else {
                    "image/png".into()
                }
            });
            let data = opt_str(s, "data", &sat, file)?.unwrap_or_default();
            super::media_part(&mime, &data, bat, file, warnings)
        }
        (Some(s), Some("text")) => {
            let text = opt_str(s, "data", &sat, file)?.unwrap_or_default();
            if text.is_empty() {
                return Ok(Vec::new());
            }
            crate::history::text_part(&text)
        }
        _ if kind == "document" => crate::history::text_part("[document]"),
        _ => crate::history::text_part(super::IMAGE_WITHOUT_DATA),
    };
    Ok(vec![part])
}

/// A `tool_use` block as a functionCall part.
fn tool_use_part(block: &Value, bat: &JsonPath, file: &str, b: &mut HistoryBuilder) -> Result<Value, DatasetError> {
    let id = super::req_str(block, "id", bat, file)?;
    let name = super::req_str(block, "name", bat, file)?;
    let args = match block.get("input") {
        Some(v @ Value::Object(_)) => v.clone(),
        None | Some(Value::Null) => Value::empty_object(),
        Some(other) => Value::object([("raw", other.clone())]),
    };
    Ok(b.call(Some(&id), &name, args))
}

/// A `tool_result` block as a functionResponse part; `true` with a text part instead when it is an orphan.
fn tool_result_part(
    block: &Value,
    bat: &JsonPath,
    file: &str,
    b: &HistoryBuilder,
) -> Result<(Value, bool), DatasetError> {
    let id = super::req_str(block, "tool_use_id", bat, file)?;
    let output = content_text(block.get("content").unwrap_or(&Value::Null), &bat.key("content"), file)?;
    let Some(name) = b.call_name(&id).map(str::to_string) else {
        // Its call is not in the file (a line Claude Code did not write): kept as text, since a
        // functionResponse must answer a functionCall.
        return Ok((crate::history::text_part(&format!("{ORPHAN_RESULT}\n{output}")), true));
    };
    let key = if block.get("is_error").and_then(Value::as_bool) == Some(true) { "error" } else { "output" };
    let response = Value::object([(key, Value::str(&output))]);
    Ok((function_response_part(Some(&id), &name, response), false))
}
