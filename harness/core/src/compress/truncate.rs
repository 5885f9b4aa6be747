//! `truncateHistoryToBudget` (`packages/core/src/context/chatCompressionService.ts`): the reverse token budget over
//! function responses, the placeholder formats, and where full outputs are saved. Saving goes through
//! [`ToolOutputStore`] so the algorithm stays pure: the CLI writes real files, tests and replays keep them in memory.

use crate::history::{self, Content};
use crate::json::{self, JsStr, Value};
use crate::tokens::Estimator;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub const COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET: u64 = 50_000;
pub const DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD: i64 = 40_000;
pub const TOOL_OUTPUTS_DIR: &str = "tool-outputs";

/// Truncation behaviours, named by the date they took effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum TruncationVariant {
    /// Before 2026-01-18: function responses are never truncated.
    None,
    /// 2026-01-18: last-30-lines placeholder, files `<tmp>/<tool>_<id>.txt`, sanitizer `[^a-z0-9]`.
    V20260118,
    /// 2026-01-29: files under `tool_output/`.
    V20260129,
    /// 2026-02-05: the sanitizer keeps `_` and `-`.
    V20260205,
    /// 2026-02-06 (`30354892b3`): directory `tool-outputs/`.
    V20260206Dir,
    /// 2026-02-06 (`28805a4b2d`): 20 % head / 80 % tail of the character threshold.
    V20260206HeadTail,
    /// 2026-02-09: no duplicated tool name when the id already starts with it (current).
    #[default]
    Current,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placeholder {
    LastLines,
    HeadTail,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sanitizer {
    LowerAlnum,
    KeepDashUnderscore,
}

struct Rules {
    placeholder: Placeholder,
    dir: &'static str,
    sanitizer: Sanitizer,
    dedupe_prefix: bool,
}

crate::named_variants!(TruncationVariant, "truncation variant", {
    None => "none",
    V20260118 => "2026-01-18",
    V20260129 => "2026-01-29",
    V20260205 => "2026-02-05",
    V20260206Dir => "2026-02-06-dir",
    V20260206HeadTail => "2026-02-06-head-tail",
    Current => "current",
});

impl TruncationVariant {
    fn rules(self) -> Option<Rules> {
        let r = |placeholder, dir, sanitizer, dedupe_prefix| Some(Rules { placeholder, dir, sanitizer, dedupe_prefix });
        use Placeholder::*;
        use Sanitizer::*;
        match self {
            TruncationVariant::None => None,
            TruncationVariant::V20260118 => r(LastLines, "", LowerAlnum, false),
            TruncationVariant::V20260129 => r(LastLines, "tool_output", LowerAlnum, false),
            TruncationVariant::V20260205 => r(LastLines, "tool_output", KeepDashUnderscore, false),
            TruncationVariant::V20260206Dir => r(LastLines, TOOL_OUTPUTS_DIR, KeepDashUnderscore, false),
            TruncationVariant::V20260206HeadTail => r(HeadTail, TOOL_OUTPUTS_DIR, KeepDashUnderscore, false),
            TruncationVariant::Current => r(HeadTail, TOOL_OUTPUTS_DIR, KeepDashUnderscore, true),
        }
    }
}

/// Where full tool outputs go. `save` gets a path relative to the project temp dir and returns the path
/// the placeholder names (the reference's `path.join(projectTempDir, …)`). A store may defer its writes
/// until `flush`; a truncation pass whose flush fails is walked again with `write_through`, so a failed
/// save keeps its original part exactly as when saving synchronously.
pub trait ToolOutputStore: Send {
    fn save(&mut self, relative: &str, content: &JsStr) -> Result<String, ToolOutputError>;

    /// Completes deferred writes; the first error, if any.
    fn flush(&mut self) -> Result<(), ToolOutputError> {
        Ok(())
    }

    /// From now on, write (and fail) within `save`.
    fn write_through(&mut self) {}
}

/// Why a full tool output could not be saved (the reference then keeps the output untruncated).
#[derive(Debug, thiserror::Error)]
pub enum ToolOutputError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A memory store set up to fail (the reference's "disk full" tests).
    #[error("{0}")]
    Refused(String),
}

impl ToolOutputError {
    fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        ToolOutputError::Io { path: path.to_path_buf(), source }
    }
}

/// Joins like Node's `path.join` for the simple cases we produce (no `..`, single separators).
fn join_display(root: &str, relative: &str) -> String {
    let root = root.trim_end_matches('/');
    if root.is_empty() {
        relative.to_string()
    } else {
        format!("{root}/{relative}")
    }
}

/// Writes files under a real directory. `save` hands each output to writer threads started with the pass's
/// first save, so the files are written while the walk goes on; `flush` waits for them. A pass writes
/// hundreds of files, and the kernel's time per file, not the bytes, is the cost: overlapping it with the
/// walk (and spreading it over up to four threads) hides most of it.
pub struct FsToolOutputStore {
    root: PathBuf,
    root_display: String,
    /// Directories known to exist (each pass would otherwise ask once per file).
    made_dirs: std::collections::HashSet<PathBuf>,
    writers: Option<Writers>,
    write_through: bool,
}

/// The writer threads of one pass and the first error they met.
struct Writers {
    queue: std::sync::mpsc::Sender<(PathBuf, JsStr)>,
    threads: Vec<std::thread::JoinHandle<()>>,
    first_error: std::sync::Arc<std::sync::Mutex<Option<ToolOutputError>>>,
}

impl Writers {
    fn start() -> Self {
        let (queue, jobs) = std::sync::mpsc::channel::<(PathBuf, JsStr)>();
        let jobs = std::sync::Arc::new(std::sync::Mutex::new(jobs));
        let first_error = std::sync::Arc::new(std::sync::Mutex::new(None));
        let count = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
        let threads = (0..count)
            .map(|_| {
                let (jobs, first_error) = (jobs.clone(), first_error.clone());
                std::thread::spawn(move || loop {
                    // The lock is held only while taking the next job; a closed queue ends the thread.
                    let next = jobs.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok((path, content)) = next else { break };
                    if let Err(e) = write_output(&path, &content) {
                        first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                    }
                })
            })
            .collect();
        Writers { queue, threads, first_error }
    }

    /// Closes the queue, waits for every queued write, and returns the first error.
    fn finish(self) -> Result<(), ToolOutputError> {
        drop(self.queue);
        for thread in self.threads {
            // A writer cannot panic short of an allocation failure; its files are then reported missing.
            if thread.join().is_err() {
                return Err(ToolOutputError::Refused("a tool-output writer thread panicked".into()));
            }
        }
        let error = self.first_error.lock().unwrap_or_else(|p| p.into_inner()).take();
        error.map_or(Ok(()), Err)
    }
}

impl FsToolOutputStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        FsToolOutputStore {
            root_display: root.to_string_lossy().into_owned(),
            root,
            made_dirs: Default::default(),
            writers: None,
            write_through: false,
        }
    }
}

impl Drop for FsToolOutputStore {
    /// A store dropped without `flush` still completes its writes (and drops their errors).
    fn drop(&mut self) {
        if let Some(writers) = self.writers.take() {
            let _ = writers.finish();
        }
    }
}

/// Writes one output as UTF-8 (lone surrogates become U+FFFD, as when Node writes a JS string).
fn write_output(path: &std::path::Path, content: &JsStr) -> Result<(), ToolOutputError> {
    std::fs::write(path, content.to_str_lossy().as_bytes()).map_err(|e| ToolOutputError::io(path, e))
}

impl ToolOutputStore for FsToolOutputStore {
    fn save(&mut self, relative: &str, content: &JsStr) -> Result<String, ToolOutputError> {
        let path = self.root.join(relative);
        if let Some(dir) = path.parent() {
            if !self.made_dirs.contains(dir) {
                std::fs::create_dir_all(dir).map_err(|e| ToolOutputError::io(dir, e))?;
                self.made_dirs.insert(dir.to_path_buf());
            }
        }
        if self.write_through {
            write_output(&path, content)?;
        } else {
            let writers = self.writers.get_or_insert_with(Writers::start);
            // The receivers live until `finish`, so the queue cannot be closed here.
            let _ = writers.queue.send((path, content.clone()));
        }
        Ok(join_display(&self.root_display, relative))
    }

    fn flush(&mut self) -> Result<(), ToolOutputError> {
        self.writers.take().map_or(Ok(()), Writers::finish)
    }

    fn write_through(&mut self) {
        if let Some(writers) = self.writers.take() {
            let _ = writers.finish();
        }
        self.write_through = true;
    }
}

/// Keeps files in memory (sharing the outputs' text); the placeholder names them under `root` as if
/// written there.
#[derive(Debug, Default, Clone)]
pub struct MemoryToolOutputStore {
    pub root: String,
    pub files: BTreeMap<String, JsStr>,
    /// When set, every save fails with this message (the reference's "Disk Full" test).
    pub fail_with: Option<String>,
}

impl MemoryToolOutputStore {
    pub fn new(root: impl Into<String>) -> Self {
        MemoryToolOutputStore { root: root.into(), ..Default::default() }
    }
}

impl ToolOutputStore for MemoryToolOutputStore {
    fn save(&mut self, relative: &str, content: &JsStr) -> Result<String, ToolOutputError> {
        if let Some(e) = &self.fail_with {
            return Err(ToolOutputError::Refused(e.clone()));
        }
        self.files.insert(relative.to_string(), content.clone());
        Ok(join_display(&self.root, relative))
    }
}

/// Settings of one truncation pass.
#[derive(Clone, Copy, Debug)]
pub struct TruncationSettings {
    pub variant: TruncationVariant,
    /// Function-response token budget (50 000).
    pub budget: u64,
    /// Effective placeholder size: `min(4 × (tokenLimit − uiLastPromptTokenCount), threshold)`; may be ≤ 0.
    pub max_chars: i64,
    pub estimator: Estimator,
}

/// `getTruncateToolOutputThreshold()`.
pub fn effective_max_chars(token_limit: u64, ui_last_prompt_tokens: u64, threshold: i64) -> i64 {
    let room = 4 * (token_limit as i64 - ui_last_prompt_tokens as i64);
    room.min(threshold)
}

/// One rewritten part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedPart {
    pub content_index: usize,
    pub part_index: usize,
    pub name: String,
    pub original_chars: usize,
    pub new_output_chars: usize,
    pub output_head: JsStr,
    pub file: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    pub history: Vec<Content>,
    /// Rewritten parts, oldest first.
    pub changed: Vec<ChangedPart>,
}

/// `contentStr(response)` (`packages/core/src/utils/fileUtils.ts`): `None` for a missing response (JS `undefined`).
fn content_str(response: Option<&Value>) -> Option<ContentStr<'_>> {
    match response? {
        Value::String(s) => Some(ContentStr::Borrowed(s)),
        v @ Value::Object(_) => {
            for key in ["output", "content"] {
                if let Some(Value::String(s)) = v.get(key) {
                    return Some(ContentStr::Borrowed(s));
                }
            }
            Some(ContentStr::Pretty(v, None))
        }
        v => Some(ContentStr::Pretty(v, None)),
    }
}

/// The string a response stands for. Pretty JSON is built at most once per response, and only when an
/// estimator needs the text or the output must be written out.
enum ContentStr<'a> {
    Borrowed(&'a JsStr),
    Pretty(&'a Value, Option<JsStr>),
}

impl ContentStr<'_> {
    fn tokens(&mut self, estimator: Estimator) -> u64 {
        match self {
            ContentStr::Borrowed(s) => estimator.text(s),
            ContentStr::Pretty(v, None) if estimator == Estimator::Current => {
                // Escapes are ASCII, so the pretty form has the same non-ASCII units as its strings.
                estimator.text_from_counts(json::pretty_len(v), json::non_ascii16(v))
            }
            ContentStr::Pretty(..) => estimator.text(self.text()),
        }
    }

    fn text(&mut self) -> &JsStr {
        match self {
            ContentStr::Borrowed(s) => s,
            ContentStr::Pretty(v, built) => built.get_or_insert_with(|| JsStr::from(json::to_string_pretty(v))),
        }
    }
}

/// `{...v, [key]: value}` for an object (an existing key keeps its position, a new one goes last), without
/// cloning the member being replaced; a non-object comes back unchanged.
fn with_member(v: &Value, key: &str, value: Value) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    let mut out = json::Map::with_capacity_and_hasher(m.len() + 1, Default::default());
    let mut value = Some(value);
    for (k, x) in m.iter() {
        let x = match value.take_if(|_| k.as_wtf8() == key.as_bytes()) {
            Some(new) => new,
            None => x.clone(),
        };
        out.insert(k.clone(), x);
    }
    if let Some(new) = value {
        out.insert(JsStr::new(key), new);
    }
    Value::Object(std::sync::Arc::new(out))
}

/// `sanitizeFilenamePart`, per UTF-16 unit.
fn sanitize(s: &str, sanitizer: Sanitizer) -> String {
    let mut out = String::with_capacity(s.len());
    for u in s.encode_utf16() {
        let keep = match sanitizer {
            Sanitizer::KeepDashUnderscore => {
                u < 128 && ((u as u8).is_ascii_alphanumeric() || u == b'_' as u16 || u == b'-' as u16)
            }
            Sanitizer::LowerAlnum => u < 128 && ((u as u8).is_ascii_lowercase() || (u as u8).is_ascii_digit()),
        };
        out.push(if keep { u as u8 as char } else { '_' });
    }
    out
}

/// The file name for a saved output (`saveTruncatedToolOutput`, `packages/core/src/utils/fileUtils.ts`).
pub fn output_file_name(tool_name: &str, id: &str) -> String {
    file_name(tool_name, id, Sanitizer::KeepDashUnderscore, true)
}

fn file_name(tool_name: &str, id: &str, sanitizer: Sanitizer, dedupe_prefix: bool) -> String {
    let (tool, sid) = match sanitizer {
        Sanitizer::KeepDashUnderscore => {
            (sanitize(tool_name, sanitizer).to_lowercase(), sanitize(id, sanitizer).to_lowercase())
        }
        Sanitizer::LowerAlnum => {
            (sanitize(&tool_name.to_lowercase(), sanitizer), sanitize(&id.to_lowercase(), sanitizer))
        }
    };
    if dedupe_prefix && sid.starts_with(&tool) {
        format!("{sid}.txt")
    } else {
        format!("{tool}_{sid}.txt")
    }
}

/// JS `n.toLocaleString()` in en-US: digit groups of three.
pub fn en_us_grouping(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    if n < 0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `formatTruncatedToolOutput(s, outputFile, maxChars)` (`packages/core/src/utils/fileUtils.ts`), JS slicing rules
/// included.
pub fn format_truncated_tool_output(s: &JsStr, output_file: &str, max_chars: i64) -> JsStr {
    let len = s.len16() as i64;
    if len <= max_chars {
        return s.clone();
    }
    let head = (max_chars as f64 * 0.2).floor() as i64;
    let tail = max_chars - head;
    let omitted = len - head - tail;
    let (head_start, head_end) = s.js_range(0, Some(head));
    let (tail_start, tail_end) = s.js_range(-tail, None);
    let prefix = JsStr::from(format!(
        "Output too large. Showing first {} and last {} characters. For full output see: {}\n",
        en_us_grouping(head),
        en_us_grouping(tail),
        output_file
    ));
    let middle = JsStr::from(format!("\n\n... [{} characters omitted] ...\n\n", en_us_grouping(omitted)));
    JsStr::concat_ranges(&[
        (&prefix, 0, prefix.len16()),
        (s, head_start, head_end),
        (&middle, 0, middle.len16()),
        (s, tail_start, tail_end),
    ])
}

/// The 2026-01-18 placeholder: the last 30 lines (each cut to 1000 chars), or the last 4000 chars of a
/// single-line output.
pub fn format_last_lines(s: &JsStr, output_file: &str) -> JsStr {
    const MAX_LINES: usize = 30;
    const MAX_LINE: usize = 1000;
    let text = s.to_str_lossy();
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.len() > 1 {
        let start = lines.len().saturating_sub(MAX_LINES);
        let mut long = false;
        let shown: Vec<String> = lines[start..]
            .iter()
            .map(|l| {
                let js = JsStr::new(l);
                if js.len16() > MAX_LINE {
                    long = true;
                    format!("{}... [LINE WIDTH TRUNCATED]", js.slice16(0, MAX_LINE).to_str_lossy())
                } else {
                    l.to_string()
                }
            })
            .collect();
        JsStr::from(format!(
            "Output too large. Showing the last {} of {} lines{}. For full output see: {}\n...\n{}",
            shown.len(),
            en_us_grouping(lines.len() as i64),
            if long { " (some long lines truncated)" } else { "" },
            output_file,
            shown.join("\n")
        ))
    } else {
        let tail = s.js_slice(-4000, None);
        let prefix = JsStr::from(format!(
            "Output too large. Showing the last 4,000 characters of the output. For full output see: {output_file}\n..."
        ));
        JsStr::concat(&[&prefix, &tail])
    }
}

/// `truncateHistoryToBudget(history, config)`. `next_id` is the per-session counter (pre-incremented).
pub fn truncate_history_to_budget(
    history: &[Content],
    settings: &TruncationSettings,
    next_id: &mut u64,
    store: &mut dyn ToolOutputStore,
) -> Truncation {
    let Some(rules) = settings.variant.rules() else {
        return Truncation { history: history.to_vec(), changed: Vec::new() };
    };
    let first_id = *next_id;
    let t = walk(history, settings, &rules, next_id, store);
    if store.flush().is_ok() {
        return t;
    }
    // A deferred write failed: walk again saving synchronously, so each failed save keeps its part (and
    // the budget counts it) as in the reference. Ids restart: the same files are written again.
    *next_id = first_id;
    store.write_through();
    walk(history, settings, &rules, next_id, store)
}

/// One newest-to-oldest pass of [`truncate_history_to_budget`].
fn walk(
    history: &[Content],
    settings: &TruncationSettings,
    rules: &Rules,
    next_id: &mut u64,
    store: &mut dyn ToolOutputStore,
) -> Truncation {
    let mut counter: u64 = 0;
    let mut changed = Vec::new();
    let mut out: Vec<Content> = Vec::with_capacity(history.len());
    for (ci, content) in history.iter().enumerate().rev() {
        let parts = history::parts(content);
        let mut new_parts: Vec<Value> = Vec::with_capacity(parts.len());
        for (pi, part) in parts.iter().enumerate().rev() {
            let Some(fr) = history::function_response(part) else {
                new_parts.push(part.clone());
                continue;
            };
            let mut s = content_str(fr.get("response"));
            let t = s.as_mut().map(|s| s.tokens(settings.estimator)).unwrap_or(0);
            if counter + t <= settings.budget {
                new_parts.push(part.clone());
                counter += t;
                continue;
            }
            *next_id += 1;
            let id = *next_id;
            match replace_part(fr, s.as_mut(), id, rules, settings, store) {
                Some(r) => {
                    counter += r.msg_tokens;
                    changed.push(ChangedPart {
                        content_index: ci,
                        part_index: pi,
                        name: r.name,
                        original_chars: json::jslen(part),
                        new_output_chars: r.msg_len16,
                        output_head: r.msg_head,
                        file: r.file,
                    });
                    new_parts.push(r.part);
                }
                None => {
                    new_parts.push(part.clone());
                    counter += t;
                }
            }
        }
        new_parts.reverse();
        // A Content without parts comes back with `parts: []`, as `{...content, parts}` does.
        out.push(with_member(content, "parts", Value::Array(new_parts)));
    }
    out.reverse();
    changed.sort_by_key(|c: &ChangedPart| (c.content_index, c.part_index));
    Truncation { history: out, changed }
}

/// A replacement part and what the caller records about its placeholder.
struct Replacement {
    part: Value,
    msg_tokens: u64,
    msg_len16: usize,
    msg_head: JsStr,
    file: String,
    name: String,
}

/// Saves the output and builds the replacement part; `None` when the save throws (the original is kept).
fn replace_part(
    fr: &Value,
    s: Option<&mut ContentStr<'_>>,
    id: u64,
    rules: &Rules,
    settings: &TruncationSettings,
    store: &mut dyn ToolOutputStore,
) -> Option<Replacement> {
    // `fr.name ?? "unknown_tool"`; a non-string name makes the sanitizer throw.
    let name = match fr.get("name") {
        None | Some(Value::Null) => "unknown_tool".to_string(),
        Some(Value::String(n)) => n.to_str_lossy().into_owned(),
        Some(_) => return None,
    };
    // A missing response is JS `undefined`: writing it throws.
    let s = s?.text();
    let fname = file_name(&name, &id.to_string(), rules.sanitizer, rules.dedupe_prefix);
    let relative = if rules.dir.is_empty() { fname.clone() } else { format!("{}/{}", rules.dir, fname) };
    let path = store.save(&relative, s).ok()?;
    let msg = match rules.placeholder {
        Placeholder::HeadTail => format_truncated_tool_output(s, &path, settings.max_chars),
        Placeholder::LastLines => format_last_lines(s, &path),
    };
    let msg_tokens = settings.estimator.text(&msg);
    let msg_len16 = msg.len16();
    let msg_head = msg.js_slice(0, Some(200));
    let part = Value::object([(
        "functionResponse",
        with_member(fr, "response", Value::object([("output", Value::String(msg))])),
    )]);
    Some(Replacement { part, msg_tokens, msg_len16, msg_head, file: fname, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deferred writes fail after the walk; the pass is then redone synchronously, so the result is the
    /// reference's: the part whose save failed is kept, the others point at their files.
    #[test]
    fn a_failed_deferred_write_keeps_its_part_as_a_synchronous_save_would() {
        let response = |id: &str| {
            let fr = Value::object([
                ("id", Value::str(id)),
                ("name", Value::str("shell")),
                ("response", Value::object([("output", Value::from("x".repeat(400)))])),
            ]);
            Value::object([
                ("role", Value::str("user")),
                ("parts", Value::Array(vec![Value::object([("functionResponse", fr)])])),
            ])
        };
        let history = vec![response("a"), response("b"), response("c")];
        let settings = TruncationSettings {
            variant: TruncationVariant::Current,
            budget: 10,
            max_chars: 50,
            estimator: Estimator::Current,
        };
        let dir = tempfile::tempdir().unwrap();
        // Ids go newest first: id 2 is "b"; a directory in place of its file makes the write fail.
        std::fs::create_dir_all(dir.path().join("tool-outputs/shell_2.txt")).unwrap();
        let (mut deferred_id, mut sync_id) = (0, 0);
        let deferred =
            truncate_history_to_budget(&history, &settings, &mut deferred_id, &mut FsToolOutputStore::new(dir.path()));
        let mut sync_store = FsToolOutputStore::new(dir.path());
        sync_store.write_through();
        let sync = truncate_history_to_budget(&history, &settings, &mut sync_id, &mut sync_store);
        assert_eq!(deferred, sync);
        assert_eq!(deferred_id, sync_id);
        assert_eq!(deferred.history[1], history[1]);
        assert_eq!(deferred.changed.iter().map(|c| c.content_index).collect::<Vec<_>>(), [0, 2]);
        for name in ["shell_1.txt", "shell_3.txt"] {
            let text = std::fs::read_to_string(dir.path().join("tool-outputs").join(name)).unwrap();
            assert_eq!(text, "x".repeat(400));
        }
    }

    #[test]
    fn last_lines_placeholder_of_2026_01_18() {
        let many: String = (1..=40).map(|i| format!("line {i}\n")).collect::<String>() + &"x".repeat(1200);
        let p = format_last_lines(&JsStr::new(&many), "/t/shell_1.txt").to_string();
        assert!(
            p.starts_with("Output too large. Showing the last 30 of 41 lines (some long lines truncated). For full output see: /t/shell_1.txt\n...\nline 12\n"),
            "{p}"
        );
        assert!(p.ends_with(&format!("{}... [LINE WIDTH TRUNCATED]", "x".repeat(1000))));
        let one = format_last_lines(&JsStr::new(&"y".repeat(5000)), "/t/a.txt").to_string();
        assert_eq!(one, format!("Output too large. Showing the last 4,000 characters of the output. For full output see: /t/a.txt\n...{}", "y".repeat(4000)));
        // Its file names: lower-case alphanumerics only, no de-duplication of the tool prefix.
        assert_eq!(file_name("Run-Shell", "run-shell_1", Sanitizer::LowerAlnum, false), "run_shell_run_shell_1.txt");
    }

    #[test]
    fn grouping() {
        assert_eq!(en_us_grouping(0), "0");
        assert_eq!(en_us_grouping(999), "999");
        assert_eq!(en_us_grouping(8000), "8,000");
        assert_eq!(en_us_grouping(1234567), "1,234,567");
        assert_eq!(en_us_grouping(-1000), "-1,000");
    }

    #[test]
    fn upstream_file_names() {
        assert_eq!(output_file_name("shell", "shell_123"), "shell_123.txt");
        assert_eq!(output_file_name("../../dangerous/tool", "1"), "______dangerous_tool_1.txt");
        assert_eq!(
            output_file_name("run_shell_command", "run_shell_command_1707400000000_0"),
            "run_shell_command_1707400000000_0.txt"
        );
        assert_eq!(output_file_name("shell", "../../etc/passwd"), "shell_______etc_passwd.txt");
        assert_eq!(output_file_name("", "7"), "7.txt");
    }

    #[test]
    fn upstream_format_cases() {
        let f = |s: &str, n| format_truncated_tool_output(&JsStr::new(s), "/tmp/out.txt", n).to_string();
        assert_eq!(
            f("abcdefghijklmnopqrstuvwxyz", 10),
            "Output too large. Showing first 2 and last 8 characters. For full output see: /tmp/out.txt\nab\n\n... [16 characters omitted] ...\n\nstuvwxyz"
        );
        let big = f(&"a".repeat(50000), 4000);
        assert!(big.contains("Showing first 800 and last 3,200 characters"));
        assert!(big.contains("[46,000 characters omitted]"));
        let g = |s: &str, n| format_truncated_tool_output(&JsStr::new(s), "/x", n).to_string();
        assert_eq!(g("abc", 3), "abc");
        assert_eq!(
            g("abcdef", 0),
            "Output too large. Showing first 0 and last 0 characters. For full output see: /x\n\n\n... [6 characters omitted] ...\n\nabcdef"
        );
        assert_eq!(
            g("abcdefghij", -5),
            "Output too large. Showing first -1 and last -4 characters. For full output see: /x\nabcdefghi\n\n... [15 characters omitted] ...\n\nefghij"
        );
    }
}
