//! What the extractor reads off tool calls: the files a call writes or patches (and the identifier or
//! heading its change introduces, the anchor of an artifact probe), shell commands and their outcomes, and
//! the structured arguments of other tools.

use super::*;

pub(super) fn strip_root(path: &str) -> Vec<String> {
    let mut accept = Vec::new();
    for root in ["/testbed/", "/repo/"] {
        if let Some(rest) = path.strip_prefix(root) {
            accept.push(rest.to_string());
        }
    }
    // An absolute path under an unknown checkout (`/home/me/projects/app/src/lib/x.ts`): a summary names the
    // file relative to the project, so its last directory and name are accepted too.
    if accept.is_empty() && path.starts_with('/') {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() >= 3 {
            accept.push(parts[parts.len() - 2..].join("/"));
        }
    }
    accept
}

/// The files a call's Codex patches change: every `apply_patch` body among its argument strings (given to
/// `apply_patch` or through a shell: `exec_command`, `shell`).
pub fn patched_files(args: &serde_json::Value) -> Vec<String> {
    patch_sections(args).into_iter().map(|s| s.path).collect()
}

/// One file of a Codex patch: its path, whether the patch adds it, and the lines it adds and removes.
pub(super) struct PatchSection {
    pub(super) path: String,
    pub(super) created: bool,
    pub(super) added: String,
    pub(super) removed: String,
}

/// Every file section of the Codex patches among a call's argument strings (an `*** Add File:`, `Update
/// File:`, `Delete File:` or `Move to:` header, and the `+`/`-` lines under it).
pub(super) fn patch_sections(args: &serde_json::Value) -> Vec<PatchSection> {
    const HEADERS: [(&str, bool); 4] = [
        ("*** Add File: ", true),
        ("*** Update File: ", false),
        ("*** Delete File: ", false),
        ("*** Move to: ", false),
    ];
    let mut out: Vec<PatchSection> = Vec::new();
    for text in argument_strings(args).into_iter().filter(|s| s.contains("*** Begin Patch")) {
        for line in text.lines() {
            let trimmed = line.trim_start();
            if let Some((path, created)) = HEADERS.iter().find_map(|(h, c)| trimmed.strip_prefix(h).map(|p| (p, *c))) {
                let path = path.trim();
                if !path.is_empty() {
                    out.push(PatchSection {
                        path: path.to_string(),
                        created,
                        added: String::new(),
                        removed: String::new(),
                    });
                }
                continue;
            }
            let Some(section) = out.last_mut() else { continue };
            if let Some(added) = line.strip_prefix('+') {
                section.added.push_str(added);
                section.added.push('\n');
            } else if let Some(removed) = line.strip_prefix('-') {
                section.removed.push_str(removed);
                section.removed.push('\n');
            }
        }
    }
    out
}

/// The text a file-writing call puts into the file and the text it replaces: `new_string`/`old_string`
/// (Claude Code's `Edit`, Gemini CLI's `replace`), each edit of a `MultiEdit`, `content` (`Write`,
/// `write_file`), SWE-agent's `file_text`/`new_str`/`old_str`, a notebook cell's `new_source`.
pub(super) fn written_text(args: &serde_json::Value) -> (String, String) {
    const NEW: &[&str] = &["new_string", "new_str", "content", "file_text", "new_source", "replace", "new_text"];
    const OLD: &[&str] = &["old_string", "old_str", "search", "old_text"];
    let pick = |v: &serde_json::Value, keys: &[&str]| {
        keys.iter().filter_map(|k| v.get(*k).and_then(|x| x.as_str())).collect::<Vec<_>>().join("\n")
    };
    let (mut added, mut removed) = (pick(args, NEW), pick(args, OLD));
    if let Some(edits) = args.get("edits").and_then(|e| e.as_array()) {
        for e in edits {
            added.push('\n');
            added.push_str(&pick(e, NEW));
            removed.push('\n');
            removed.push_str(&pick(e, OLD));
        }
    }
    (added, removed)
}

/// What a change introduced, by which the question names it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Anchor {
    /// A definition the change added: a function, type, test, class, constant.
    Definition(String),
    /// A Markdown heading the change added.
    Heading(String),
    /// An identifier the new text uses and the old did not (a rename, a new call).
    Identifier(String),
}

re!(
    DEFINITION,
    r"(?m)^[ \t]*(?:export\s+(?:default\s+)?)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:static\s+)?(?:func\s+(?:\([^)]*\)\s*)?|(?:fn|def|class|struct|enum|trait|interface|type|function|const|impl|module)\s+)([A-Za-z_][A-Za-z0-9_]*)"
);
re!(HEADING, r"(?m)^#{1,4}[ \t]+(.+?)[ \t#]*$");
re!(IDENTIFIER, r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*");

/// Names too generic to tell one change from another.
pub(super) const GENERIC_NAMES: &[&str] = &[
    "main", "init", "new", "test", "self", "this", "setup", "teardown", "default", "string", "error", "result",
    "value", "config", "options", "handler", "helper", "data", "type", "func", "function", "return", "const", "true",
    "false", "null", "nil",
];

/// An identifier that names something specific: `handleGeminiNotification`, `push_sessions` — mixed case
/// inside or an underscore, at least 6 characters, and not dotted: a dotted call (`assert.False`,
/// `user.Save`) names a library's function, used in many files.
pub(super) fn specific_identifier(word: &str) -> bool {
    let inner_upper =
        word.chars().skip(1).any(|c| c.is_ascii_uppercase()) && word.chars().any(|c| c.is_ascii_lowercase());
    word.len() >= 6
        && !word.contains('.')
        && (inner_upper || word.contains('_'))
        && !word.starts_with("__")
        && !GENERIC_NAMES.contains(&word.to_ascii_lowercase().as_str())
}

/// What `added` introduces that `removed` did not hold: its first new definition, else its first new
/// Markdown heading, else its first new specific identifier.
pub(super) fn introduced(added: &str, removed: &str, document: bool) -> Option<Anchor> {
    let old_headings: BTreeSet<String> = HEADING.captures_iter(removed).map(|m| clean_heading(&m[1])).collect();
    let heading = HEADING.captures_iter(added).map(|m| clean_heading(&m[1])).find(|h| {
        let words = h.split_whitespace().count();
        (2..=10).contains(&words) && !old_headings.contains(h) && h.chars().any(char::is_alphabetic)
    });
    // A document (a plan, notes, a README) is named by its sections, not by the code it quotes.
    if document {
        return heading.map(Anchor::Heading);
    }
    let old_words: BTreeSet<&str> = removed.split(|c: char| !c.is_alphanumeric() && c != '_').collect();
    let new_name = |name: &str| {
        name.len() >= 4 && !old_words.contains(name) && !GENERIC_NAMES.contains(&name.to_ascii_lowercase().as_str())
    };
    if let Some(name) = DEFINITION.captures_iter(added).map(|m| m[1].to_string()).find(|n| new_name(n)) {
        return Some(Anchor::Definition(name));
    }
    IDENTIFIER
        .find_iter(added)
        .map(|m| m.as_str())
        .find(|w| specific_identifier(w) && !removed.contains(w))
        .map(|w| Anchor::Identifier(w.to_string()))
}

/// A heading's words without Markdown emphasis or code marks.
pub(super) fn clean_heading(h: &str) -> String {
    h.replace(['*', '`', '_'], " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An artifact probe for a file a call wrote, named by what the change introduced; none when the change
/// introduced nothing nameable (a later change to the same file may).
pub(super) fn anchored_artifact(
    out: &mut Vec<Candidate>,
    seen: &mut BTreeSet<String>,
    path: &str,
    verb: &str,
    added: &str,
    removed: &str,
    at: usize,
) {
    const DOCUMENTS: &[&str] = &["md", "mdx", "markdown", "txt", "rst", "adoc", "org"];
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let Some(anchor) = introduced(added, removed, DOCUMENTS.contains(&extension.as_str())) else { return };
    let question = match &anchor {
        Anchor::Definition(name) => format!("Which file did the agent {verb} to add `{name}`?"),
        Anchor::Identifier(name) => format!("Which file did the agent {verb} to introduce `{name}`?"),
        Anchor::Heading(h) => format!("Which file did the agent {verb} with the section \"{h}\"?"),
    };
    artifact(out, seen, path, question, at, Some(anchor));
}

/// Every string in a call's arguments (an `input` patch, a `cmd` string, a `command` array).
pub(super) fn argument_strings(args: &serde_json::Value) -> Vec<&str> {
    match args {
        serde_json::Value::String(s) => vec![s.as_str()],
        serde_json::Value::Array(a) => a.iter().flat_map(argument_strings).collect(),
        serde_json::Value::Object(m) => m.values().flat_map(argument_strings).collect(),
        _ => Vec::new(),
    }
}

pub(super) fn artifact(
    out: &mut Vec<Candidate>,
    seen: &mut BTreeSet<String>,
    path: &str,
    question: String,
    at: usize,
    anchor: Option<Anchor>,
) {
    let path = path.trim_matches(|c| c == '\'' || c == '"');
    if path.is_empty() || path.starts_with("/dev/") || path.starts_with('-') || !seen.insert(path.to_string()) {
        return;
    }
    out.push(Candidate {
        kind: ProbeKind::Artifact,
        question,
        gold: path.to_string(),
        accept: strip_root(path),
        evidence: vec![at],
        terms: Terms::Verbatim,
        anchor,
    });
}

pub(super) fn first_content_line(body: &str) -> String {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && *l != "EOF")
        .map(|l| clip(l, MAX_HINT_CHARS))
        .unwrap_or_default()
}

pub(super) fn tool_calls(h: &[Content], out: &mut Vec<Candidate>) {
    let mut seen_paths = BTreeSet::new();
    let mut seen_args = BTreeSet::new();
    let mut open_file: Option<String> = None;
    for (i, c) in h.iter().enumerate() {
        for p in history::parts(c) {
            if let Some(r) = history::function_response(p) {
                let text = r.get("response").map(|v| v.to_serde().to_string()).unwrap_or_default();
                if let Some(m) = OPEN_FILE.captures_iter(&text).last() {
                    open_file = Some(m[1].trim().to_string());
                }
                continue;
            }
            let Some(call) = history::function_call(p) else { continue };
            let name = call.get("name").and_then(|v| v.as_str()).unwrap_or("").to_string();
            let args = call.get("args").map(|v| v.to_serde()).unwrap_or_default();
            let id = call.get("id").and_then(|v| v.as_str());
            let command = args.get("command").and_then(|v| v.as_str()).map(str::to_string);
            if let Some(cmd) = &command {
                shell_artifacts(cmd, i, &mut open_file, out, &mut seen_paths);
                if let Some((j, output)) = response_for(h, i, id) {
                    command_outcome(cmd, &output, j, out);
                }
            } else {
                structured_call(&name, &args, i, out, &mut seen_paths, &mut seen_args, &open_file);
            }
        }
    }
}

pub(super) fn shell_artifacts(
    cmd: &str,
    at: usize,
    open_file: &mut Option<String>,
    out: &mut Vec<Candidate>,
    seen: &mut BTreeSet<String>,
) {
    for m in CAT_WRITE.captures_iter(cmd) {
        let body = &cmd[m.get(0).map_or(0, |x| x.end())..];
        let body = body.split("\nEOF").next().unwrap_or(body);
        anchored_artifact(out, seen, &m[1], "write", body, "", at);
    }
    for m in SED_INPLACE.captures_iter(cmd) {
        let expr = clip(m[1].trim_matches(|c| c == '\'' || c == '"'), MAX_HINT_CHARS);
        if expr.chars().any(char::is_alphanumeric) {
            artifact(
                out,
                seen,
                &m[2],
                format!("Which file did the agent edit in place with the `sed -i` expression `{expr}`?"),
                at,
                None,
            );
        }
    }
    // `echo … > f` says nothing a question could name the file by: no probe.
    // SWE-agent's file commands: `create F`, `open F`, `edit N:M` (on the open file).
    let first = cmd.lines().next().unwrap_or("").trim();
    let mut words = first.split_whitespace();
    match (words.next(), words.next()) {
        (Some("create"), Some(path)) => {
            let q = "Which new file did the agent create with the `create` command?".to_string();
            artifact(out, seen, path, q, at, None);
            *open_file = Some(path.to_string());
        }
        (Some("open"), Some(path)) => *open_file = Some(path.trim_matches('"').to_string()),
        (Some("edit"), Some(range)) if range.contains(':') => {
            if let Some(path) = open_file.clone() {
                let hint = first_content_line(cmd.split_once('\n').map_or("", |x| x.1));
                if hint.chars().any(char::is_alphanumeric) {
                    let q = format!("Which file did the agent edit, inserting `{hint}`?");
                    artifact(out, seen, &path, q, at, None);
                }
            }
        }
        _ => {}
    }
}

/// An error line as a gold: whole when short enough, else its leading `: `-separated parts that fit
/// (`error[E0308]: mismatched types`), else none: a gold cut mid-message is a fragment.
pub(super) fn error_gold(line: &str) -> Option<String> {
    let line = line.trim();
    let mut gold = String::new();
    for part in line.split(": ") {
        let candidate = if gold.is_empty() { part.to_string() } else { format!("{gold}: {part}") };
        if candidate.split_whitespace().count() > MAX_GOLD_WORDS {
            break;
        }
        gold = candidate;
    }
    let gold = gold.trim_end_matches([':', ',', ';']).to_string();
    (gold.split_whitespace().count() >= 2 && crate::probes::lint::fragment(&gold).is_none()).then_some(gold)
}

pub(super) fn command_outcome(cmd: &str, output: &str, at: usize, out: &mut Vec<Candidate>) {
    let cmd_hint = clip(cmd.lines().next().unwrap_or(""), MAX_HINT_CHARS);
    let code: Option<i64> = RETURNCODE.captures(output).and_then(|m| m[1].parse().ok());
    // A command that exited 0 did not fail, whatever its output prints (source text, logs of handled errors).
    let failed = match code {
        Some(c) => c != 0,
        None => output.contains("Traceback (most recent call last)"),
    };
    if failed {
        let error = output.lines().rev().find(|l| ERROR_LINE.is_match(l) && l.split_whitespace().count() >= 2);
        if let Some(line) = error.and_then(error_gold) {
            let code_note = code.map(|c| format!(" (exit code {c})")).unwrap_or_default();
            out.push(Candidate {
                kind: ProbeKind::Recall,
                question: format!("What error did the command `{cmd_hint}` report{code_note}?"),
                gold: line,
                accept: Vec::new(),
                evidence: vec![at],
                terms: Terms::Verbatim,
                anchor: None,
            });
        }
    }
    let tests = PYTEST_SUMMARY
        .captures_iter(output)
        .last()
        .map(|m| m[1].trim_end_matches(", ").to_string())
        .or_else(|| UNITTEST_RAN.captures_iter(output).last().map(|m| format!("Ran {} tests", &m[1])));
    if let Some(summary) = tests {
        out.push(Candidate {
            kind: ProbeKind::Recall,
            question: format!("What was the test outcome when the agent ran `{cmd_hint}`?"),
            gold: summary,
            accept: Vec::new(),
            evidence: vec![at],
            terms: Terms::Verbatim,
            anchor: None,
        });
    }
}

/// Tools that write files, by lower-cased name: Gemini CLI's and SWE-agent's, Claude Code's (`Edit`, `Write`,
/// `MultiEdit`, `NotebookEdit`) and Codex's `apply_patch`.
pub const WRITE_TOOLS: &[&str] = &[
    "write_file",
    "create_file",
    "edit",
    "edit_file",
    "replace",
    "insert",
    "str_replace",
    "apply_patch",
    "write",
    "multiedit",
    "notebookedit",
];
pub(super) const PATH_KEYS: &[&str] = &["path", "file_path", "absolute_path", "filename", "file"];

pub(super) fn structured_call(
    name: &str,
    args: &serde_json::Value,
    at: usize,
    out: &mut Vec<Candidate>,
    seen_paths: &mut BTreeSet<String>,
    seen_args: &mut BTreeSet<String>,
    open_file: &Option<String>,
) {
    let sub = args.get("command").and_then(|v| v.as_str()).unwrap_or("");
    let lower = name.to_ascii_lowercase();
    let writes = WRITE_TOOLS.contains(&lower.as_str()) || (lower.contains("editor") && sub != "view");
    let path = PATH_KEYS.iter().find_map(|k| args.get(*k).and_then(|v| v.as_str())).map(str::to_string);
    // A Codex patch, given to `apply_patch` or through a shell (`exec_command`, `shell`): one artifact per file.
    let patched = patch_sections(args);
    if !patched.is_empty() {
        for section in patched {
            let verb = if section.created { "create" } else { "edit" };
            anchored_artifact(out, seen_paths, &section.path, verb, &section.added, &section.removed, at);
        }
        return;
    }
    if writes {
        let (added, removed) = written_text(args);
        let verb = if ["write", "write_file", "create_file"].contains(&lower.as_str()) || sub == "create" {
            "create"
        } else {
            "edit"
        };
        if let Some(path) = path.or_else(|| open_file.clone()) {
            anchored_artifact(out, seen_paths, &path, verb, &added, &removed, at);
        }
        return;
    }
    // Business tools (tau-bench): identifiers the agent acted on or looked up.
    let acts = ["update", "cancel", "book", "modify", "create", "send", "transfer", "delete"]
        .iter()
        .any(|v| name.starts_with(v));
    let reads = name.starts_with("get_") || name.starts_with("search_") || name.starts_with("find");
    if !(acts || reads) {
        return;
    }
    let Some(obj) = args.as_object() else { return };
    for (key, v) in obj {
        let Some(val) = v.as_str() else { continue };
        // An identifier (a user id, a booking code), not prose: an agent's own tools (Codex's `update_plan`
        // with its `explanation`) take sentences, which are no fact to ask for.
        let identifier = !val.contains(char::is_whitespace);
        if val.len() < 3 || !identifier || !seen_args.insert(format!("{name}\u{0}{key}\u{0}{val}")) {
            continue;
        }
        let (kind, verb) =
            if acts { (ProbeKind::Artifact, "use when calling") } else { (ProbeKind::Recall, "look up with") };
        out.push(Candidate {
            kind,
            question: format!("Which {} did the agent {verb} `{name}`?", key.replace('_', " ")),
            gold: val.to_string(),
            accept: Vec::new(),
            evidence: vec![at],
            terms: Terms::Verbatim,
            anchor: None,
        });
        break;
    }
}
