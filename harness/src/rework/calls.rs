//! What a recorded tool call did, as far as rework is concerned: read a file, change files, run a command.
//! Claude Code's and Gemini CLI's structured tools are read by name; Codex's shell calls by the command they
//! run (`cat`, `sed -n`, `nl`, `head`, `tail` of a file are reads; an `apply_patch` body changes files).

use crate::history::{self, Content};
use crate::json::Value;
use crate::probes::extract::{patched_files, WRITE_TOOLS};

/// One tool call of the recording, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A read of a whole file or a range of it (the path as the call gives it).
    Read(String),
    /// A change to one or more files (create, edit, patch, delete).
    Edit(Vec<String>),
    /// A shell command, normalised (whitespace collapsed), when it neither reads nor changes a file.
    Command(String),
    /// Anything else (search, list, web, task tools).
    Other,
}

/// Tools that read one file, by lower-cased name.
const READ_TOOLS: &[&str] = &["read", "read_file", "view", "notebookread"];
/// Tools that run a shell command.
const SHELL_TOOLS: &[&str] = &["bash", "shell", "exec_command", "local_shell", "run_shell_command", "container.exec"];
const PATH_KEYS: &[&str] = &["file_path", "absolute_path", "path", "notebook_path", "filename"];
/// Shell programs that print a file (`cat F`, `sed -n 1,80p F`, `nl -ba F`, `head -n 40 F`).
const READ_PROGRAMS: &[&str] = &["cat", "sed", "nl", "head", "tail", "less", "bat"];

/// The shell command a call runs: a `command`/`cmd` string, or the last element of a `["bash", "-lc", …]`
/// array.
fn shell_command(args: &Value) -> Option<String> {
    let v = args.get("command").or_else(|| args.get("cmd"))?;
    let s = match v {
        Value::Array(items) => items.last()?.as_str()?.to_string(),
        other => other.as_str()?.to_string(),
    };
    Some(s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The file a one-file print command reads: `cat F`, `sed -n '1,80p' F`, `nl -ba F`, `head -n 40 F`; none
/// when the command pipes, chains or redirects (it is then a command, not a read).
fn shell_read(cmd: &str) -> Option<String> {
    if cmd.contains(['|', ';', '>', '&', '`', '$']) {
        return None;
    }
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let (program, rest) = words.split_first()?;
    if !READ_PROGRAMS.contains(program) {
        return None;
    }
    let file = rest.last()?.trim_matches(|c| c == '\'' || c == '"');
    let is_option = file.starts_with('-') || (*program == "sed" && rest.len() < 2);
    (!is_option && !file.is_empty() && (file.contains('/') || file.contains('.'))).then(|| file.to_string())
}

/// What one function call does.
pub fn classify(call: &Value) -> Action {
    let name = call.get("name").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
    let Some(args) = call.get("args") else { return Action::Other };
    let patch = patched_files(&args.to_serde());
    if !patch.is_empty() {
        return Action::Edit(patch);
    }
    let path = PATH_KEYS.iter().find_map(|k| args.get(k).and_then(Value::as_str)).map(str::to_string);
    // str_replace_editor-style tools: `command = view | create | str_replace | insert`.
    let sub = args.get("command").and_then(Value::as_str).unwrap_or("");
    if name.contains("editor") {
        return match (sub, path) {
            ("view", Some(p)) => Action::Read(p),
            (_, Some(p)) => Action::Edit(vec![p]),
            _ => Action::Other,
        };
    }
    // The tools the probe extractor counts as changing files (`probes::extract::WRITE_TOOLS`).
    if WRITE_TOOLS.contains(&name.as_str()) {
        return path.map_or(Action::Other, |p| Action::Edit(vec![p]));
    }
    if READ_TOOLS.contains(&name.as_str()) {
        return path.map_or(Action::Other, Action::Read);
    }
    if SHELL_TOOLS.contains(&name.as_str()) {
        if let Some(cmd) = shell_command(args) {
            return match shell_read(&cmd) {
                Some(file) => Action::Read(file),
                None => Action::Command(cmd),
            };
        }
    }
    Action::Other
}

/// Every tool call of a Content, classified, with the call's id (to find its response).
pub fn actions(c: &Content) -> Vec<(Action, Option<String>)> {
    history::parts(c)
        .iter()
        .filter_map(history::function_call)
        .map(|call| (classify(call), call.get("id").and_then(Value::as_str).map(str::to_string)))
        .collect()
}

/// A path as one file: absolute under `cwd` when relative, `./` and trailing `/` dropped.
pub fn file_key(path: &str, cwd: Option<&str>) -> String {
    let p = path.trim().trim_end_matches('/');
    let p = p.strip_prefix("./").unwrap_or(p);
    match cwd {
        Some(root) if !p.starts_with('/') && !p.starts_with('~') => format!("{}/{p}", root.trim_end_matches('/')),
        _ => p.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Value;

    fn call(name: &str, args: serde_json::Value) -> Value {
        Value::from_serde(&serde_json::json!({"name": name, "args": args}))
    }

    #[test]
    fn claude_code_and_codex_calls_are_read_as_reads_edits_and_commands() {
        assert_eq!(
            classify(&call("Read", serde_json::json!({"file_path": "/r/a.rs"}))),
            Action::Read("/r/a.rs".into())
        );
        assert_eq!(
            classify(&call("Edit", serde_json::json!({"file_path": "/r/a.rs"}))),
            Action::Edit(vec!["/r/a.rs".into()])
        );
        assert_eq!(
            classify(&call("Bash", serde_json::json!({"command": "cargo   test -p x"}))),
            Action::Command("cargo test -p x".into())
        );
        assert_eq!(
            classify(&call("shell", serde_json::json!({"command": ["bash", "-lc", "sed -n '1,80p' src/lib.rs"]}))),
            Action::Read("src/lib.rs".into())
        );
        assert_eq!(
            classify(&call("shell", serde_json::json!({"command": ["bash", "-lc", "cat src/lib.rs | head"]}))),
            Action::Command("cat src/lib.rs | head".into())
        );
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: src/b.rs\n+z\n*** End Patch";
        assert_eq!(
            classify(&call("apply_patch", serde_json::json!({"input": patch}))),
            Action::Edit(vec!["src/a.rs".into(), "src/b.rs".into()])
        );
        assert_eq!(classify(&call("Grep", serde_json::json!({"pattern": "x"}))), Action::Other);
        assert_eq!(file_key("./src/a.rs", Some("/r/")), "/r/src/a.rs");
        assert_eq!(file_key("/abs/a.rs", Some("/r")), "/abs/a.rs");
    }
}
