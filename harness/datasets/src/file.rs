//! The canonical conversation file: reading, writing and finding them.

use super::layout::Layout;
use super::{error::utf8, CacheUsage, Conversation, ConversationMeta, DatasetError, RecordedCompaction};
use crate::history;
use crate::json::{self, JsonPath, Value};
use std::path::{Path, PathBuf};

/// Value of the `format` member of every conversation file.
pub const CONVERSATION_FORMAT: &str = "compactbench.conversation/1";
/// Per-directory statistics file (not a conversation).
pub const MANIFEST_FILE: &str = "manifest.json";

/// A dataset directory: every conversation file under it, each loaded or with its error.
#[derive(Debug)]
pub struct Dataset {
    pub name: String,
    pub dir: PathBuf,
    pub conversations: Vec<(PathBuf, Result<Conversation, DatasetError>)>,
}

fn opt_str(v: &Option<String>) -> Value {
    v.as_deref().map_or(Value::Null, Value::str)
}

fn meta_to_value(m: &ConversationMeta) -> Value {
    let mut v = Value::object([
        ("id", Value::str(&m.id)),
        ("source", Value::str(&m.source)),
        ("format", Value::str(&m.format)),
        ("license", opt_str(&m.license)),
        ("repository", opt_str(&m.repository)),
        ("commit", opt_str(&m.commit)),
        ("path", opt_str(&m.path)),
    ]);
    if let Some(t) = &m.title {
        v.insert("title", Value::str(t));
    }
    if let Some(l) = &m.source_layout {
        v.insert("sourceLayout", layout_to_value(l));
    }
    if let Some(e) = &m.extra {
        v.insert("extra", e.clone());
    }
    v
}

/// The conversation as the JSON object stored on disk.
pub fn conversation_to_value(c: &Conversation) -> Value {
    let mut v = Value::object([("format", Value::str(CONVERSATION_FORMAT)), ("meta", meta_to_value(&c.meta))]);
    if let Some(s) = &c.system_instruction {
        v.insert("systemInstruction", Value::str(s));
    }
    if let Some(t) = &c.tools {
        v.insert("tools", t.clone());
    }
    if !c.recorded_prompt_tokens.is_empty() {
        let counts = c.recorded_prompt_tokens.iter().map(|n| n.map_or(Value::Null, |n| Value::num(n as f64))).collect();
        v.insert("recordedPromptTokens", Value::Array(counts));
    }
    // `[read, written]` per Content; absent when empty, so files of other sources stay as they were.
    if !c.recorded_cache.is_empty() {
        let pair = |u: &CacheUsage| Value::Array(vec![Value::num(u.read as f64), Value::num(u.written as f64)]);
        let usage = c.recorded_cache.iter().map(|u| u.as_ref().map_or(Value::Null, pair)).collect();
        v.insert("recordedCache", Value::Array(usage));
    }
    // Absent when empty, so files of sources without compactions stay as they were.
    if !c.recorded_compactions.is_empty() {
        v.insert("recordedCompactions", Value::Array(c.recorded_compactions.iter().map(compaction_to_value).collect()));
    }
    v.insert("history", Value::Array(c.history.clone()));
    v
}

fn compaction_to_value(c: &RecordedCompaction) -> Value {
    let mut v = Value::object([("at", Value::num(c.at as f64)), ("summary", Value::str(&c.summary))]);
    if !c.kept.is_empty() {
        v.insert("kept", Value::Array(c.kept.clone()));
    }
    if !c.preserved.is_empty() {
        v.insert("preserved", Value::Array(c.preserved.clone()));
    }
    if let Some(e) = &c.extra {
        v.insert("extra", e.clone());
    }
    v
}

/// Reads `recordedCompactions`: objects `{at, summary, kept?, extra?}` with `at` ascending and at most the
/// history's length.
fn compactions_from_value(
    v: Option<&Value>,
    history_len: usize,
    file: &str,
) -> Result<Vec<RecordedCompaction>, DatasetError> {
    let at = JsonPath::root().key("recordedCompactions");
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(t) => return Err(DatasetError::field(file, &at, format!("expected an array, found {}", t.kind()))),
    };
    let mut out: Vec<RecordedCompaction> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let iat = at.index(i);
        if item.as_object().is_none() {
            return Err(DatasetError::field(file, &iat, format!("expected an object, found {}", item.kind())));
        }
        let index = match item.get("at").and_then(Value::as_f64) {
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x <= history_len as f64 => x as usize,
            _ => {
                return Err(DatasetError::field(
                    file,
                    &iat.key("at"),
                    format!("expected an integer from 0 to the history's length ({history_len})"),
                ))
            }
        };
        if out.last().is_some_and(|p| p.at > index) {
            return Err(DatasetError::field(file, &iat.key("at"), "compactions must be in history order"));
        }
        let summary = get_str(item, "summary", &iat, file, true)?.unwrap_or_default();
        let kept = contents_member(item, "kept", &iat, file)?;
        let preserved = contents_member(item, "preserved", &iat, file)?;
        let extra = match item.get("extra") {
            None | Some(Value::Null) => None,
            Some(e @ Value::Object(_)) => Some(e.clone()),
            Some(e) => {
                return Err(DatasetError::field(
                    file,
                    &iat.key("extra"),
                    format!("expected an object, found {}", e.kind()),
                ))
            }
        };
        out.push(RecordedCompaction { at: index, summary, kept, preserved, extra });
    }
    Ok(out)
}

/// An optional `Content[]` member of a compaction (`kept`, `preserved`).
fn contents_member(item: &Value, key: &str, at: &JsonPath, file: &str) -> Result<Vec<Value>, DatasetError> {
    match item.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(k @ Value::Array(items)) => {
            history::validate_shape(k)
                .map_err(|e| DatasetError::at(file, e.path.replacen('$', &at.key(key).to_string(), 1), e.message))?;
            Ok(items.clone())
        }
        Some(k) => Err(DatasetError::field(file, &at.key(key), format!("expected an array, found {}", k.kind()))),
    }
}

/// Writes a conversation file (2-space JSON, final newline), creating parent directories.
pub fn write_conversation(path: &Path, c: &Conversation) -> Result<(), DatasetError> {
    let file = path.display().to_string();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(&file, e))?;
    }
    let text = Layout { trailing_newline: true, ..Layout::js_pretty() }.write(&conversation_to_value(c));
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| DatasetError::io(&file, e.source))
}

/// The history as a `Content[]` JSON text, in the layout it was imported from when known.
pub fn export_history(c: &Conversation) -> String {
    let layout =
        c.meta.source_layout.clone().unwrap_or_else(|| Layout { trailing_newline: true, ..Layout::js_pretty() });
    layout.write(&Value::Array(c.history.clone()))
}

fn get_str(v: &Value, key: &str, at: &JsonPath, file: &str, required: bool) -> Result<Option<String>, DatasetError> {
    match v.get(key) {
        None | Some(Value::Null) if !required => Ok(None),
        None => Err(DatasetError::field(file, &at.key(key), "missing")),
        Some(s) => match s.as_js_str() {
            Some(s) => Ok(Some(s.to_str_lossy().into_owned())),
            None => Err(DatasetError::field(file, &at.key(key), format!("expected a string, found {}", s.kind()))),
        },
    }
}

fn meta_from_value(v: &Value, file: &str) -> Result<ConversationMeta, DatasetError> {
    let at = JsonPath::root().key("meta");
    if v.as_object().is_none() {
        return Err(DatasetError::field(file, &at, format!("expected an object, found {}", v.kind())));
    }
    let source_layout = match v.get("sourceLayout") {
        None | Some(Value::Null) => None,
        Some(l) => Some(
            layout_from_value(l)
                .ok_or_else(|| DatasetError::field(file, &at.key("sourceLayout"), "not a valid layout object"))?,
        ),
    };
    let extra = match v.get("extra") {
        None | Some(Value::Null) => None,
        Some(e @ Value::Object(_)) => Some(e.clone()),
        Some(e) => {
            return Err(DatasetError::field(file, &at.key("extra"), format!("expected an object, found {}", e.kind())))
        }
    };
    Ok(ConversationMeta {
        id: get_str(v, "id", &at, file, true)?.unwrap_or_default(),
        source: get_str(v, "source", &at, file, false)?.unwrap_or_default(),
        format: get_str(v, "format", &at, file, false)?.unwrap_or_default(),
        license: get_str(v, "license", &at, file, false)?,
        repository: get_str(v, "repository", &at, file, false)?,
        commit: get_str(v, "commit", &at, file, false)?,
        path: get_str(v, "path", &at, file, false)?,
        title: get_str(v, "title", &at, file, false)?,
        source_layout,
        extra,
    })
}

/// Reads a conversation from its JSON object; `file` names it in errors.
pub fn conversation_from_value(v: Value, file: &str) -> Result<Conversation, DatasetError> {
    let root = JsonPath::root();
    if v.as_object().is_none() {
        return Err(DatasetError::field(file, &root, format!("expected a conversation object, found {}", v.kind())));
    }
    check_conversation_format(&v, file)?;
    let meta = meta_from_value(v.get("meta").unwrap_or(&Value::Null), file)?;
    let system_instruction = get_str(&v, "systemInstruction", &root, file, false)?;
    let tools = match v.get("tools") {
        None | Some(Value::Null) => None,
        Some(t @ Value::Array(_)) => Some(t.clone()),
        Some(t) => {
            return Err(DatasetError::field(file, &root.key("tools"), format!("expected an array, found {}", t.kind())))
        }
    };
    let history_value = v.get("history").ok_or_else(|| DatasetError::field(file, &root.key("history"), "missing"))?;
    history::validate_shape(history_value).map_err(|e| {
        // Shape paths are relative to the history array.
        let path = e.path.replacen('$', "$.history", 1);
        DatasetError::at(file, path, e.message)
    })?;
    let history_len = history_value.as_array().map_or(0, <[Value]>::len);
    let recorded_prompt_tokens = prompt_tokens_from_value(v.get("recordedPromptTokens"), history_len, file)?;
    let recorded_cache = cache_from_value(v.get("recordedCache"), history_len, file)?;
    let recorded_compactions = compactions_from_value(v.get("recordedCompactions"), history_len, file)?;
    // Moved out, not copied: a conversation is never held twice while it loads.
    let mut v = v;
    let history = match v.get_mut("history").map(|h| std::mem::replace(h, Value::Null)) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    Ok(Conversation {
        meta,
        system_instruction,
        tools,
        history,
        recorded_prompt_tokens,
        recorded_cache,
        recorded_compactions,
    })
}

/// The `format` member must name this conversation format.
fn check_conversation_format(v: &Value, file: &str) -> Result<(), DatasetError> {
    let at = JsonPath::root().key("format");
    match v.get("format").and_then(Value::as_str) {
        Some(CONVERSATION_FORMAT) => Ok(()),
        Some(other) => Err(DatasetError::field(
            file,
            &at,
            format!("unsupported format {other:?} (expected {CONVERSATION_FORMAT:?})"),
        )),
        None => Err(DatasetError::field(
            file,
            &at,
            format!("missing; not a conversation file (expected \"format\": {CONVERSATION_FORMAT:?})"),
        )),
    }
}

/// A member holding one entry per Content of the history (at `at`): `None` when absent or null.
fn aligned_items<'v>(
    v: Option<&'v Value>,
    history_len: usize,
    at: &JsonPath,
    file: &str,
) -> Result<Option<&'v [Value]>, DatasetError> {
    let items = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(t) => return Err(DatasetError::field(file, at, format!("expected an array, found {}", t.kind()))),
    };
    if items.len() != history_len {
        return Err(DatasetError::field(
            file,
            at,
            format!("has {} entries but history has {history_len} Contents", items.len()),
        ));
    }
    Ok(Some(items))
}

/// `recordedPromptTokens`: absent or null, or one non-negative integer or null per Content of the history.
fn prompt_tokens_from_value(
    v: Option<&Value>,
    history_len: usize,
    file: &str,
) -> Result<Vec<Option<u64>>, DatasetError> {
    let at = JsonPath::root().key("recordedPromptTokens");
    let Some(items) = aligned_items(v, history_len, &at, file)? else { return Ok(Vec::new()) };
    let count = |(i, n): (usize, &Value)| match n {
        Value::Null => Ok(None),
        n => match n.as_f64() {
            Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 => Ok(Some(x as u64)),
            _ => Err(DatasetError::field(file, &at.index(i), "expected a non-negative integer or null")),
        },
    };
    items.iter().enumerate().map(count).collect()
}

/// `recordedCache`: absent or null, or one `[read, written]` pair of non-negative integers or null per
/// Content of the history.
fn cache_from_value(
    v: Option<&Value>,
    history_len: usize,
    file: &str,
) -> Result<Vec<Option<CacheUsage>>, DatasetError> {
    let at = JsonPath::root().key("recordedCache");
    let Some(items) = aligned_items(v, history_len, &at, file)? else { return Ok(Vec::new()) };
    let count = |x: &Value| x.as_f64().filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x < 9.0e15).map(|x| x as u64);
    let usage = |(i, u): (usize, &Value)| match u {
        Value::Null => Ok(None),
        Value::Array(pair) if pair.len() == 2 => match (count(&pair[0]), count(&pair[1])) {
            (Some(read), Some(written)) => Ok(Some(CacheUsage { read, written })),
            _ => Err(DatasetError::field(file, &at.index(i), "expected two non-negative integers")),
        },
        _ => Err(DatasetError::field(file, &at.index(i), "expected [read, written] or null")),
    };
    items.iter().enumerate().map(usage).collect()
}

/// Parses a conversation file held in memory.
pub fn parse_conversation(bytes: &[u8], file: &str) -> Result<Conversation, DatasetError> {
    utf8(bytes, file)?;
    let v = json::parse(bytes).map_err(|e| DatasetError::json(file, &e, 0))?;
    conversation_from_value(v, file)
}

/// Reads a conversation file onto the heap (from `LOADED` when this process parsed the same file before).
pub fn load_conversation(path: &Path) -> Result<Conversation, DatasetError> {
    loaded_or(path, || read_conversation(path))
}

/// Reads and parses a conversation file, past [`LOADED`].
fn read_conversation(path: &Path) -> Result<Conversation, DatasetError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(&file, e))?;
    parse_conversation(&bytes, &file)
}

/// A file as [`LOADED`] knows it: its canonical path, length and modification time (a rewritten file is
/// another key).
type FileKey = (PathBuf, u64, Option<std::time::SystemTime>);

/// Conversations this process parsed, by file. One run reads each of its files to plan, to replay, and
/// again for the report's label check, the rework reading and the view; parsing is most of what those
/// cost, and a parsed conversation clones cheaply (its Contents are shared objects). Holds at most
/// [`LOADED_BUDGET_BYTES`] of files, then forgets everything at once (a corpus larger than that is parsed
/// as before). Only successes are kept: an error is read again, and names the path it was asked for.
static LOADED: std::sync::Mutex<Option<(std::collections::HashMap<FileKey, Conversation>, u64)>> =
    std::sync::Mutex::new(None);

/// The file bytes [`LOADED`] keeps parsed at most.
pub const LOADED_BUDGET_BYTES: u64 = 32 << 20;

fn loaded_or(
    path: &Path,
    parse: impl FnOnce() -> Result<Conversation, DatasetError>,
) -> Result<Conversation, DatasetError> {
    let key = std::fs::canonicalize(path)
        .ok()
        .and_then(|p| std::fs::metadata(&p).ok().map(|m| (p, m.len(), m.modified().ok())));
    let Some(key) = key else { return parse() };
    let lock = || LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(c) = lock().as_ref().and_then(|(map, _)| map.get(&key)) {
        return Ok(c.clone());
    }
    let conversation = parse()?;
    let mut kept = lock();
    let (map, bytes) = kept.get_or_insert_with(Default::default);
    if *bytes + key.1 > LOADED_BUDGET_BYTES {
        map.clear();
        *bytes = 0;
    }
    if key.1 <= LOADED_BUDGET_BYTES {
        *bytes += key.1;
        map.insert(key, conversation.clone());
    }
    Ok(conversation)
}

/// Reads a conversation file through a memory map instead of a heap copy (as ripgrep reads large files):
/// parsing then holds the file once, in the page cache, next to the tree it builds. Files that cannot be
/// mapped (empty files, pipes, special file systems) are read instead.
///
/// # Safety
///
/// Nothing may truncate or rewrite the file while this function runs: a mapped file changed underneath
/// the parser is undefined behaviour (a truncation faults with SIGBUS). The map is dropped before the
/// function returns, so the promise ends with the call.
pub unsafe fn load_conversation_mapped(path: &Path) -> Result<Conversation, DatasetError> {
    loaded_or(path, || {
        let file = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|e| DatasetError::io(&file, e))?;
        // SAFETY: the caller promises that nothing changes the file until we return; the map is read-only.
        match unsafe { memmap2::Mmap::map(&f) } {
            Ok(map) => parse_conversation(&map, &file),
            Err(_) => read_conversation(path),
        }
    })
}

fn is_conversation_file(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "json") && p.file_name().is_some_and(|n| n != MANIFEST_FILE)
}

/// Directories under a dataset root that hold other data than conversations.
pub const NOT_CONVERSATION_DIRS: [&str; 5] = ["probes", "recordings", "fixtures", "labels", "manifests"];

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DatasetError> {
    let file = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|e| DatasetError::io(&file, e))?;
    for entry in entries {
        let path = entry.map_err(|e| DatasetError::io(&file, e))?.path();
        if path.is_dir() {
            // Probe sets and recorded LLM responses live beside the conversations; they are not conversations.
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if !NOT_CONVERSATION_DIRS.contains(&name.as_str()) {
                walk(&path, out)?;
            }
        } else if is_conversation_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// Expands directories (recursively) to their conversation files (`*.json` except manifests, outside the
/// `NOT_CONVERSATION_DIRS`); files given directly are kept. The result is sorted and free of duplicates.
pub fn find_conversations(paths: &[PathBuf]) -> Result<Vec<PathBuf>, DatasetError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(DatasetError::whole(&p.display().to_string(), "no such file or directory"));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Loads every conversation under `dir`; a bad file is reported in place and does not stop the others.
pub fn load_dataset(dir: &Path) -> Result<Dataset, DatasetError> {
    let files = find_conversations(&[dir.to_path_buf()])?;
    let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    let conversations = files.into_iter().map(|p| {
        let loaded = load_conversation(&p);
        (p, loaded)
    });
    Ok(Dataset { name, dir: dir.to_path_buf(), conversations: conversations.collect() })
}

/// Layout as a JSON object for the conversation file.
fn layout_to_value(l: &Layout) -> Value {
    let mut v = Value::empty_object();
    v.insert("indent", l.indent.map_or(Value::Null, |n| Value::num(n as f64)));
    v.insert("itemSeparator", Value::str(&l.item_separator));
    v.insert("keySeparator", Value::str(&l.key_separator));
    v.insert("asciiOnly", Value::Bool(l.ascii_only));
    v.insert("trailingNewline", Value::Bool(l.trailing_newline));
    v
}

/// Reads a layout object; `None` when a field is missing or has the wrong type.
fn layout_from_value(v: &Value) -> Option<Layout> {
    let indent = match v.get("indent")? {
        Value::Null => None,
        n => {
            let n = n.as_f64()?;
            if !(0.0..=16.0).contains(&n) || n.fract() != 0.0 {
                return None;
            }
            Some(n as usize)
        }
    };
    let item_separator = v.get("itemSeparator")?.as_str()?.to_string();
    let key_separator = v.get("keySeparator")?.as_str()?.to_string();
    if !matches!(item_separator.as_str(), "," | ", ") || !matches!(key_separator.as_str(), ":" | ": ") {
        return None;
    }
    Some(Layout {
        indent,
        item_separator,
        key_separator,
        ascii_only: v.get("asciiOnly")?.as_bool()?,
        trailing_newline: v.get("trailingNewline")?.as_bool()?,
    })
}
