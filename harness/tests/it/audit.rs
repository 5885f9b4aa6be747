//! `compactbench audit DIR…` (issue #36): a user's own session directories, read in place with no config.

use super::support::{repo, shared_dir};
use compactbench::audit::{detect_agents, AuditError};
use compactbench::datasets::import::Format;
use std::path::Path;
use std::process::{Command, Output};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(repo().join("harness/datasets/src/fixtures").join(name)).unwrap()
}

fn audit(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .arg("audit")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run compactbench audit")
}

/// A user's directory: a session Claude Code compacted, one it did not, one still being written (its last line
/// cut), a README, a JSON report and a damaged `.gz`.
fn users_directory(root: &Path) -> std::path::PathBuf {
    let sessions = root.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join("compacted.jsonl"), fixture("claude-code-compacted.jsonl")).unwrap();
    let plain = fixture("claude-code.jsonl");
    std::fs::write(sessions.join("plain.jsonl"), &plain).unwrap();
    let cut = "{\"parentUuid\":\"x\",\"type\":\"assistant\",\"message\":{\"role\":\"assist";
    std::fs::write(sessions.join("live.jsonl"), format!("{}\n{cut}", plain.trim_end())).unwrap();
    std::fs::write(sessions.join("README.md"), "# my sessions\n").unwrap();
    std::fs::write(sessions.join("report.json"), "{\"name\": \"weekly\", \"figures\": [1, 2]}\n").unwrap();
    std::fs::write(sessions.join("damaged.jsonl.gz"), b"\x1f\x8b\x08\x00not gzip at all").unwrap();
    sessions
}

#[test]
fn audit_lists_each_compaction_of_a_users_directory_and_writes_a_page() {
    let dir = tempfile::tempdir().unwrap();
    users_directory(dir.path());
    let out = audit(dir.path(), &["sessions", "--json", "--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The damaged file fails, named; the audit of the others is written and the status says incomplete.
    assert_eq!(out.status.code(), Some(compactbench::exit::EXIT_INCOMPLETE), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(v["dirs"][0]["agent"], "Claude Code", "{v}");
    assert_eq!((v["sessions"].as_u64(), v["compactions"].as_u64()), (Some(4), Some(1)), "{v}");
    let failed = v["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{v}");
    assert!(failed[0]["reason"].as_str().unwrap().contains("damaged.jsonl.gz"), "{failed:?}");
    assert!(stderr.contains("failed: ") && stderr.contains("damaged.jsonl.gz"), "{stderr}");
    // The cut line is skipped with a note naming it; the JSON report is skipped with a note (the README is
    // no session file at all).
    assert!(stderr.contains("live.jsonl: line"), "{stderr}");
    assert!(stderr.contains("not claude-code sessions, skipped: report.json"), "{stderr}");

    let c = &v["compacted"][0]["compactions"][0];
    assert_eq!(c["ordinal"], 1);
    // The boundary line's own time and trigger, and the recorded sizes around it.
    assert_eq!(c["time"], "2025-09-01T10:02:00.000Z", "{c}");
    assert!(c["tokens_before"].as_u64().is_some() && c["summary_readable"] == true, "{c}");
    assert!(c["files_edited_not_named"].is_array() && c["prompts_not_echoed"].is_array(), "{c}");
    let labels: Vec<&str> = c["strategies"].as_array().unwrap().iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["agent", "reference", "observation-masking", "drop-oldest", "uncompressed"], "{c}");
    // Every strategy compressed at the agent's point and was scored there on the same probes.
    let asked: Vec<u64> =
        c["strategies"].as_array().unwrap().iter().map(|s| s["probes_asked"].as_u64().unwrap()).collect();
    assert!(asked.iter().all(|&n| n == asked[0]), "{c}");
    for p in c["probes"].as_array().unwrap() {
        assert_eq!(p["kept"].as_object().unwrap().len(), labels.len(), "{p}");
    }
    // The sessions never compacted are listed with their peak context.
    let never = v["not_compacted"].as_array().unwrap();
    assert_eq!(never.len(), 2, "{v}");
    assert!(never.iter().all(|s| s["peak_tokens"].as_u64().is_some_and(|n| n > 0)), "{never:?}");
    // The page is written and named last.
    let view = Path::new(v["view"].as_str().unwrap());
    assert!(dir.path().join(view).is_file(), "{}", view.display());
    assert!(stderr.contains(&format!("\nview: {}\n", view.display())), "{stderr}");
    assert!(
        stderr.trim_end().ends_with(&format!("the audit of the others is written: {}", view.display())),
        "{stderr}"
    );

    // Again, as a listing: the run resumes from its cells.
    let out = audit(dir.path(), &["sessions", "--quiet"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(compactbench::exit::EXIT_INCOMPLETE));
    assert!(listing.contains("4 sessions, 1 compactions in 1 of them"), "{listing}");
    assert!(listing.contains("  #1 2025-09-01T10:02:00.000Z, after model turn"), "{listing}");
    assert!(listing.contains("kept at this point: agent "), "{listing}");
    assert!(listing.contains("never compacted: 2 sessions"), "{listing}");
}

#[test]
fn the_agent_of_each_directory_is_recognised_from_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed");
    std::fs::create_dir_all(mixed.join("claude")).unwrap();
    std::fs::create_dir_all(mixed.join("codex/2025/09/01")).unwrap();
    std::fs::write(mixed.join("claude/a.jsonl"), fixture("claude-code.jsonl")).unwrap();
    std::fs::write(mixed.join("claude/b.jsonl"), fixture("claude-code-compacted.jsonl")).unwrap();
    std::fs::write(mixed.join("codex/2025/09/01/rollout-1.jsonl"), fixture("codex-rollout.jsonl")).unwrap();
    std::fs::write(mixed.join("notes.md"), "# notes\n").unwrap();
    assert_eq!(detect_agents(&mixed).unwrap(), [(Format::ClaudeCode, 2), (Format::Codex, 1)]);
    assert_eq!(detect_agents(&mixed.join("codex")).unwrap(), [(Format::Codex, 1)]);
    let gemini = dir.path().join("chats");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(gemini.join("session-1.json"), fixture("gemini-session-legacy.json")).unwrap();
    std::fs::write(gemini.join("session-2.jsonl"), fixture("gemini-session.jsonl")).unwrap();
    let found: Vec<Format> = detect_agents(&gemini).unwrap().into_iter().map(|(f, _)| f).collect();
    assert_eq!(found, [Format::GeminiJsonl, Format::GeminiSession]);
    // A directory of no agent's sessions is refused, named, as bad input.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("README.md"), "# nothing here\n").unwrap();
    let err = detect_agents(&empty).unwrap_err();
    assert!(matches!(err, AuditError::NoSessions { .. }) && err.to_string().contains("empty"), "{err}");
    let out = audit(dir.path(), &["empty"]);
    assert_eq!(out.status.code(), Some(compactbench::exit::EXIT_BAD_INPUT));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Claude Code, Codex or Gemini CLI session"));
}

/// The done-when of issue #36 on the shared sessions, against an independent reading: `audit` on the 24 Claude
/// Code sessions of `claude-code-long` lists every compaction `tests/data/independent_edit_recall.py` counts
/// (19), and the files each summary names of those changed before it agree with the script's pooled share.
#[test]
fn audit_of_the_shared_claude_code_sessions_lists_every_compaction() {
    let Some(raw) = super::support::shared_or_skip("datasets-raw/claude-code-long", "audit") else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let out = audit(&repo(), &[raw.to_str().unwrap(), "--json", "--quiet", "--out", run.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let script = repo().join("harness/tests/data/independent_edit_recall.py");
    let ind = Command::new("python3")
        .arg(&script)
        .arg("claude-code-long")
        .env("COMPACTBENCH_SHARED", shared_dir())
        .output()
        .unwrap();
    assert!(ind.status.success(), "{}", String::from_utf8_lossy(&ind.stderr));
    let ind: serde_json::Value = serde_json::from_slice(&ind.stdout).unwrap();
    let ind = &ind["claude-code-long"];
    assert_eq!(v["sessions"], 24);
    assert_eq!(v["compactions"], ind["compactions"], "audit vs the independent count");
    let sessions = v["compacted"].as_array().unwrap();
    assert_eq!(sessions.len() + v["not_compacted"].as_array().unwrap().len(), 24);
    let (mut named, mut edited) = (0u64, 0u64);
    for c in sessions.iter().flat_map(|s| s["compactions"].as_array().unwrap()) {
        let before = c["files_edited_before"].as_u64().unwrap();
        edited += before;
        named += before - c["files_edited_not_named"].as_array().unwrap().len() as u64;
        assert!(c["time"].is_string() && c["tokens_before"].is_u64() && c["tokens_after"].is_u64(), "{c}");
    }
    // The shared sessions' hand-written probes (datasets/probes, read from the repository's root) are scored
    // beside the extracted ones.
    let origins: Vec<&str> = sessions
        .iter()
        .flat_map(|s| s["compactions"].as_array().unwrap())
        .flat_map(|c| c["probes"].as_array().unwrap())
        .map(|p| p["origin"].as_str().unwrap())
        .collect();
    assert!(origins.contains(&"manual") && origins.contains(&"auto"), "{origins:?}");
    let (ind_named, ind_edited) =
        (ind["since_start"]["named"].as_f64().unwrap(), ind["since_start"]["edited"].as_f64().unwrap());
    let (ours, theirs) = (100.0 * named as f64 / edited as f64, 100.0 * ind_named / ind_edited);
    eprintln!("audit: files changed and named {ours:.1} % ({named}/{edited}); independent {theirs:.1} %");
    assert!((ours - theirs).abs() <= 5.0, "audit {ours:.1} % vs independent {theirs:.1} %");
}
