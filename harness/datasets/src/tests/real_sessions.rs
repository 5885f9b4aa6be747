//! The importers on the long real sessions in `../shared/datasets-raw` (read in place, never copied into
//! the repository), checked against the independent readers in `../shared/tools`, which were written apart
//! from these importers: the imported content must be 95–105 % of the reading and every compaction of the
//! active branch must be recorded.
//!
//! The shared folder sits beside the checkout in CI and in every session (`COMPACTBENCH_SHARED` points
//! elsewhere); without it these tests fail rather than pass unchecked.

use crate::history;
use crate::json::{self, Value};
use crate::raw;
use crate::Conversation;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(super) fn shared_dir() -> PathBuf {
    match std::env::var_os("COMPACTBENCH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// What an independent reader says of each session: (content characters, compactions, image and document
/// blocks: `None` where the reader does not count them), by file stem.
fn reading(tool: &str, files: &[PathBuf]) -> BTreeMap<String, (u64, u64, Option<u64>)> {
    // `claude_chain.py` walks one parent per line and so leaves parallel tool calls off its chain; our
    // supplement (`harness/tests/data/claude_chain_parallel.py`) adds them back with the reader's own counting.
    let script = if tool == "claude_chain.py" {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/claude_chain_parallel.py")
    } else {
        shared_dir().join("tools").join(tool)
    };
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args(files)
        .env("COMPACTBENCH_SHARED", shared_dir())
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
    assert!(out.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&out.stderr));
    let v = json::parse(&out.stdout).expect("the reader prints JSON");
    let Value::Object(map) = v else { panic!("the reader prints an object") };
    map.iter()
        .map(|(k, r)| {
            let n = |key: &str| r.get(key).and_then(Value::as_f64).unwrap_or(-1.0) as u64;
            let images = r.get("images").and_then(Value::as_f64).map(|n| n as u64);
            (k.to_string(), (n("chars"), n("compactions"), images))
        })
        .collect()
}

/// Characters (code points, as Python counts them) of the content a conversation holds: text and
/// thoughts, call arguments as JSON, response outputs, and the system instruction.
pub(super) fn content_chars(c: &Conversation) -> u64 {
    let mut n = c.system_instruction.as_deref().map_or(0, |s| s.chars().count());
    for p in history::all_parts(&c.history) {
        if let Some(t) = history::part_text(p) {
            n += t.to_str_lossy().chars().count();
        } else if let Some(call) = history::function_call(p) {
            n += call.get("args").map_or(0, |a| json::to_string(a).chars().count());
        } else if let Some(r) = history::function_response(p) {
            let response = r.get("response");
            for key in ["output", "error"] {
                if let Some(s) = response.and_then(|o| o.get(key)).and_then(Value::as_str) {
                    n += s.chars().count();
                }
            }
        }
    }
    n as u64
}

fn corpus(dir: &str) -> Vec<PathBuf> {
    let root = shared_dir().join("datasets-raw").join(dir);
    assert!(root.is_dir(), "{} is missing: the real-session tests need ../shared beside the checkout", root.display());
    let (_, files) = raw::raw_files(&root).unwrap();
    assert!(!files.is_empty(), "no sessions in {}", root.display());
    files
}

/// Imports each file and compares it with the reader; returns (sessions, compactions recorded).
fn check_against_reader(dir: &str, tool: &str) -> (usize, usize) {
    let files = corpus(dir);
    let expected = reading(tool, &files);
    let mut problems = Vec::new();
    let mut compactions = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let stem = name.split('.').next().unwrap().to_string();
        let (_, imported) =
            raw::import_file(path, &name, &raw::RawOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let [c] = imported.conversations.as_slice() else { panic!("{name}: one conversation per session") };
        assert!(!c.history.is_empty(), "{name}: no turns");
        let (chars, expected_compactions, expected_images) = expected[&stem];
        let images = image_parts(c);
        if expected_images.is_some_and(|n| n != images) {
            problems.push(format!("{name}: {images} image parts imported, {expected_images:?} blocks on the chain"));
        }
        let got = content_chars(c);
        let ratio = got as f64 / chars as f64;
        if !(0.95..=1.05).contains(&ratio) {
            problems.push(format!("{name}: {got} characters imported, {chars} read independently ({ratio:.3})"));
        }
        if c.recorded_compactions.len() as u64 != expected_compactions {
            problems.push(format!(
                "{name}: {} compactions recorded, {expected_compactions} on the active branch",
                c.recorded_compactions.len()
            ));
        }
        assert_eq!(c.meta.path.as_deref(), Some(name.as_str()), "provenance is the file's name, not a machine path");
        compactions += c.recorded_compactions.len();
        assert!(
            super::super::validate_conversation(c).is_empty(),
            "{name}: {:?}",
            super::super::validate_conversation(c)
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    (files.len(), compactions)
}

/// The image and document parts of a conversation's history (each an `inlineData` part).
fn image_parts(c: &Conversation) -> u64 {
    history::all_parts(&c.history).filter(|p| crate::tokens::images::is_media_part(p)).count() as u64
}

/// Issue #36, part 5: a real session's screenshots stay in the history as image parts, as many as the raw
/// file's main chain holds image blocks (counted apart by `claude_chain_parallel.py`, the independent reader
/// plus the parallel calls it passes by), every one of them a PNG whose size is read.
#[test]
fn a_real_session_keeps_its_images_as_image_parts() {
    let name = "cipher-box--12f1f541-2a05-4a60-a551-14b836a1ad82.jsonl.gz";
    let path = shared_dir().join("datasets-raw/agent-sessions/claude-code").join(name);
    if !path.is_file() {
        eprintln!("SKIPPED a_real_session_keeps_its_images_as_image_parts: {} is absent", path.display());
        return;
    }
    let (_, imported) = raw::import_file(&path, name, &raw::RawOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let [c] = imported.conversations.as_slice() else { panic!("one conversation") };
    let stem = name.split('.').next().unwrap();
    let (_, _, blocks) = reading("claude_chain.py", std::slice::from_ref(&path))[stem];
    assert_eq!(blocks, Some(9), "the reader's count");
    assert_eq!(image_parts(c), 9);
    let media: Vec<_> = c.history.iter().flat_map(crate::tokens::images::content_media).collect();
    assert!(
        media.iter().all(|m| matches!(m.kind, crate::tokens::images::MediaKind::Image(Some(_)))),
        "every size is read: {media:?}"
    );
    // Each is a tool result's, right after its functionResponse.
    for content in c.history.iter().filter(|h| crate::tokens::images::has_media(h)) {
        let parts = history::parts(content);
        for (i, _) in parts.iter().enumerate().filter(|(_, p)| crate::tokens::images::is_media_part(p)) {
            assert!(i > 0 && history::function_response(&parts[i - 1]).is_some(), "an image after its result");
        }
    }
}

#[test]
fn claude_code_long_sessions_import_whole_with_every_compaction() {
    assert_eq!(check_against_reader("claude-code-long", "claude_chain.py"), (24, 19));
}

#[test]
fn agent_sessions_claude_code_import_whole_with_every_compaction() {
    assert_eq!(check_against_reader("agent-sessions/claude-code", "claude_chain.py"), (24, 19));
}

#[test]
fn agent_sessions_codex_import_whole_with_every_compaction() {
    assert_eq!(check_against_reader("agent-sessions/codex", "codex_read.py"), (8, 8));
}

/// Each agent-sessions file belongs to its project: the repository named in `SOURCE.md`, which agrees with
/// the `<project>--<session>` file name; five Claude Code projects, one Codex project.
#[test]
fn agent_sessions_files_name_their_projects() {
    assert_eq!(raw::project_of("FitToday--06560e53.jsonl.gz", None), "FitToday");
    assert_eq!(raw::project_of("plain.jsonl", None), "plain");
    for (dir, projects) in [("claude-code", 5), ("codex", 1)] {
        let root = shared_dir().join("datasets-raw/agent-sessions").join(dir);
        let table = raw::provenance_table(&root);
        let mut seen = std::collections::BTreeSet::new();
        for f in corpus(&format!("agent-sessions/{dir}")) {
            let base = f.file_name().unwrap().to_string_lossy().into_owned();
            let row = table.get(&base);
            assert!(row.is_some_and(|r| r.repository.is_some()), "{base}: no provenance row");
            let project = raw::project_of(&base, row);
            assert_eq!(Some(project.as_str()), base.split_once("--").map(|p| p.0), "{base}");
            seen.insert(project);
        }
        assert_eq!(seen.len(), projects, "{dir}: {seen:?}");
    }
}
