//! The agent's own compactions: imported as data beside the uncompressed history, stored in the
//! conversation file only when there are any, and replayed by the `recorded` strategy.

use super::*;
use crate::history;
use crate::{conversation_to_value, load_conversation, parse_conversation, write_conversation, RecordedCompaction};

const CLAUDE_CODE_BEFORE: &str = "user:text model:thought,text,call:Read user:response:Read model:call:Bash \
     user:response:Bash model:text user:text model:text";

#[test]
fn claude_code_compact_summary_is_a_recorded_compaction_not_a_turn() {
    let imported = import_fixture("claude-code-compacted.jsonl", Format::ClaudeCode);
    // The abandoned branch is still the only thing skipped; the boundary line is not counted as one.
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    let c = only(imported);
    // The whole session, across the boundary (whose parentUuid is null): before it as without compaction,
    // then the turns after it.
    assert_eq!(outline(&c), format!("{CLAUDE_CODE_BEFORE} user:text model:call:Edit user:response:Edit model:text"));
    assert!(c.history.iter().all(|h| !history::visible_text(h).contains("being continued")));
    let [rc] = c.recorded_compactions.as_slice() else { panic!("{:?}", c.recorded_compactions) };
    assert_eq!(rc.at, 8);
    assert_eq!(
        history::visible_text(&c.history[rc.at]),
        "Add a regression test that runs parse_date under TZ=Asia/Tokyo."
    );
    assert!(rc.summary.starts_with("This session is being continued from a previous conversation"));
    assert!(rc.summary.contains("use zoneinfo (stdlib), not pytz"));
    assert!(rc.kept.is_empty());
    let extra = rc.extra.as_ref().expect("compactMetadata");
    // The compactMetadata, and the boundary line's time (when the agent compacted).
    assert_eq!(to_json(extra), r#"{"trigger":"manual","preTokens":14150,"compactedAt":"2025-09-01T10:02:00.000Z"}"#);
    assert_eq!(c.recorded_prompt_tokens.len(), c.history.len());
    assert_eq!(c.recorded_prompt_tokens[9], Some(11103));
    // The cache traffic of the same requests, part of those counts (issue #38: the cache model is checked
    // against it).
    assert_eq!(c.recorded_cache.len(), c.history.len());
    assert_eq!(c.recorded_cache[9], Some(crate::CacheUsage { read: 9000, written: 2100 }));
    let counted = c.recorded_cache.iter().zip(&c.recorded_prompt_tokens).filter(|(u, _)| u.is_some());
    assert!(counted.clone().count() >= 3);
    assert!(counted.into_iter().all(|(u, n)| u.unwrap().read + u.unwrap().written <= n.unwrap()));
    assert_valid(&c);
}

#[test]
fn claude_code_without_compaction_records_none() {
    let c = only(import_fixture("claude-code.jsonl", Format::ClaudeCode));
    assert!(c.recorded_compactions.is_empty());
    assert_eq!(outline(&c), CLAUDE_CODE_BEFORE);
}

#[test]
fn codex_compacted_item_keeps_its_replacement_history() {
    let imported = import_fixture("codex-rollout-compacted.jsonl", Format::Codex);
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let c = only(imported);
    assert_eq!(
        outline(&c),
        "user:text,text model:thought,call:shell user:response:shell model:call:shell user:response:shell \
         model:text user:text model:call:apply_patch user:response:apply_patch model:text"
    );
    let [rc] = c.recorded_compactions.as_slice() else { panic!("{:?}", c.recorded_compactions) };
    assert_eq!(rc.at, 6);
    assert_eq!(history::visible_text(&c.history[6]), "Return 503 instead when the pool is missing.");
    assert!(rc.summary.starts_with("Summary of the work so far: /health returns 500"));
    // The replacement's user messages before the summary, merged into one turn; the developer message is
    // the system instruction, and the summary itself is not kept twice.
    assert_eq!(rc.kept.len(), 1);
    let kept = history::visible_text(&rc.kept[0]);
    assert!(kept.starts_with("<environment_context>") && kept.ends_with("Why is /health returning 500?"), "{kept}");
    assert!(!kept.contains("Summary of the work"));
    assert_eq!(rc.history().len(), 2);
    // When Codex compacted: the `compacted` line's time.
    let at = rc.extra.as_ref().and_then(|e| e.get(crate::import::COMPACTED_AT_KEY)).and_then(|t| t.as_str());
    assert_eq!(at, Some("2025-09-10T14:05:00.000Z"));
    assert_eq!(c.recorded_prompt_tokens.last(), Some(&Some(2890)));
    assert_valid(&c);
}

#[test]
fn codex_compacted_item_without_summary_is_skipped_with_a_warning() {
    let text = String::from_utf8(fixture("codex-rollout.jsonl")).unwrap()
        + r#"{"timestamp":"2025-09-10T14:05:00.000Z","type":"compacted","payload":{"compaction_response_id":"r1"}}"#;
    let imported = Format::Codex.parse(text.as_bytes(), "r.jsonl").unwrap();
    assert_eq!(imported.warnings.len(), 1);
    assert!(imported.warnings[0].contains("line 15"), "{:?}", imported.warnings);
    assert!(only(imported).recorded_compactions.is_empty());
}

#[test]
fn compactions_round_trip_and_are_absent_from_files_without_them() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["claude-code-compacted.jsonl", "codex-rollout-compacted.jsonl"] {
        let format = if name.starts_with("codex") { Format::Codex } else { Format::ClaudeCode };
        let c = only(import_fixture(name, format));
        let path = dir.path().join("c.json");
        write_conversation(&path, &c).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"recordedCompactions\": ["), "{name}");
        // Claude Code records its cache traffic; Codex's importer keeps none, and the member is absent.
        assert_eq!(text.contains("\"recordedCache\": ["), format == Format::ClaudeCode, "{name}");
        assert_eq!(load_conversation(&path).unwrap(), c, "{name}");
    }
    let plain = only(import_fixture("claude-code.jsonl", Format::ClaudeCode));
    assert!(conversation_to_value(&plain).get("recordedCompactions").is_none());
    // The manifest counts them, and says nothing where there are none.
    let compacted = only(import_fixture("claude-code-compacted.jsonl", Format::ClaudeCode));
    let manifest = crate::manifest_value("d", &[("a.json".into(), &compacted), ("b.json".into(), &plain)]);
    let entries = manifest.get("conversations").and_then(Value::as_array).unwrap();
    assert_eq!(entries[0].get("recordedCompactions").and_then(Value::as_f64), Some(1.0));
    assert!(entries[1].get("recordedCompactions").is_none());
}

/// A shipped conversation file is rewritten byte for byte: the new member changes nothing for sources
/// without compactions.
#[test]
fn shipped_files_are_written_back_unchanged() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let dir = tempfile::tempdir().unwrap();
    for rel in ["aider/chat-history-2024-08-05-20-40-10.json", "mini-swe-agent/django__django-14915.json"] {
        let original = std::fs::read(root.join(rel)).unwrap();
        let c = load_conversation(&root.join(rel)).unwrap();
        let out = dir.path().join("c.json");
        write_conversation(&out, &c).unwrap();
        assert!(std::fs::read(&out).unwrap() == original, "{rel} changed when written back");
    }
}

#[test]
fn malformed_compactions_are_reported_at_their_path() {
    let c = only(import_fixture("claude-code-compacted.jsonl", Format::ClaudeCode));
    let text = json::to_string(&conversation_to_value(&c));
    let bad = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        parse_conversation(text.replacen(from, to, 1).as_bytes(), "c.json").unwrap_err().to_string()
    };
    let e = bad(r#""at":8"#, r#""at":99"#);
    assert!(e.contains("$.recordedCompactions[0].at") && e.contains("history's length (12)"), "{e}");
    let e = bad(r#""at":8"#, r#""at":"8""#);
    assert!(e.contains("$.recordedCompactions[0].at"), "{e}");
    let e = bad(r#""summary":"This"#, r#""summary":7,"x":"This"#);
    assert!(e.contains("$.recordedCompactions[0].summary"), "{e}");
    let e = bad(r#""recordedCompactions":["#, r#""recordedCompactions":[{"at":9,"summary":"later"},"#);
    assert!(e.contains("$.recordedCompactions[1].at") && e.contains("history order"), "{e}");

    let mut invalid = c.clone();
    invalid.recorded_compactions.push(RecordedCompaction { at: 99, summary: " ".into(), ..Default::default() });
    let problems: Vec<String> = crate::validate_conversation(&invalid).iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "$.recordedCompactions[1].at: 99 is past the history's 12 Contents",
            "$.recordedCompactions[1].summary: empty summary"
        ]
    );
}

/// The imported session through the `recorded` strategy: the history is replaced by the agent's summary
/// before the first request after the compaction, and the turns after it follow the summary.
#[test]
fn recorded_replays_the_imported_compaction_where_the_agent_made_it() {
    use compactbench_core::replay::{self, strategies, ReplaySettings};
    let c = only(import_fixture("claude-code-compacted.jsonl", Format::ClaudeCode));
    let settings = ReplaySettings::default();
    let llm = compactbench_core::llm::ScriptedModel::new(["unused"]);
    let run = |spec: &replay::StrategySpec| {
        futures::executor::block_on(replay::replay(c.replay_input("c"), spec.compressor(), &settings, &llm))
    };
    let recorded = run(&strategies::recorded::spec());
    let none = run(&strategies::none::spec());
    assert_eq!(recorded.error, None);
    // Model turns 1 3 5 7 9 11; the compaction (at 8) applies to the request of turn 9.
    assert_eq!(recorded.events.iter().map(|e| e.turn).collect::<Vec<_>>(), [9]);
    assert_eq!(recorded.request_tokens[..4], none.request_tokens[..4]);
    assert!(recorded.request_tokens[4] < none.request_tokens[4]);
    assert_eq!(recorded.final_history_contents, 4);
    assert!(recorded.final_history_tokens < none.final_history_tokens);
}

/// claude-code-log's fixture of a compaction that preserved the newest messages (Claude Code 2.1): the
/// segment is moved after the summary, and the boundary's logical parent is the segment's tail.
#[test]
fn claude_code_preserved_segment_is_kept_after_the_summary_and_in_the_history_once() {
    let imported = import_fixture("claude-code-log-dag_compact_after_rewind_preserved.jsonl", Format::ClaudeCode);
    // The rewound first attempt is the abandoned branch.
    assert_eq!(
        imported.warnings,
        ["claude-code-log-dag_compact_after_rewind_preserved.jsonl: 2 message line(s) on abandoned branches skipped"]
    );
    let c = only(imported);
    let texts: Vec<String> = c.history.iter().map(history::visible_text).collect();
    assert_eq!(
        texts,
        [
            "Start",
            "Ready",
            "Second attempt",
            "Second answer",
            "Keep going",
            "Kept going",
            "After compaction",
            "Final answer"
        ]
    );
    let [rc] = c.recorded_compactions.as_slice() else { panic!("{:?}", c.recorded_compactions) };
    assert_eq!(rc.at, 6);
    assert!(rc.summary.ends_with("Summary: the user asked for a plan."));
    let preserved: Vec<String> = rc.preserved.iter().map(history::visible_text).collect();
    assert_eq!(preserved, ["Second answer", "Keep going", "Kept going"]);
    assert_eq!(rc.preserved, c.history[3..6]);
    // What the agent continued from: the summary, then the preserved segment.
    let continued: Vec<String> = rc.history().iter().map(history::visible_text).collect();
    assert_eq!(continued[1..], preserved[..]);
    assert!(continued[0].starts_with("This session is being continued"));
    assert_eq!(rc.extra.as_ref().and_then(|e| e.get("trigger")).and_then(Value::as_str), Some("auto"));
    assert_valid(&c);
}

/// The first lines of a Claude Code 2.1 session as Entire checkpoints store them (entireio/cli, MIT): no
/// message before the hook `progress` line, whose `sessionId` must not make it a Gemini CLI log.
#[test]
fn claude_code_2x_bookkeeping_lines_are_detected() {
    // Made-up records of the shape Claude Code 2.1 opens a transcript with: a file-history snapshot, then a
    // hook `progress` line with a null parent (ids, paths and branch invented).
    let head = concat!(
        r#"{"type":"file-history-snapshot","messageId":"11111111-2222-4333-8444-555555555555","snapshot":{"messageId":"11111111-2222-4333-8444-555555555555","trackedFileBackups":{},"timestamp":"2026-01-02T03:04:05.000Z"},"isSnapshotUpdate":false}"#,
        "\n",
        r#"{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/dev/app","sessionId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","version":"2.1.31","gitBranch":"feature/example","type":"progress","data":{"type":"hook_progress","hookEvent":"SessionStart","hookName":"SessionStart:startup","command":"${CLAUDE_PLUGIN_ROOT}/hooks/session-start.sh"},"parentToolUseID":"99999999-8888-4777-8666-555555555555","toolUseID":"99999999-8888-4777-8666-555555555555","timestamp":"2026-01-02T03:04:00.000Z","uuid":"12345678-1234-4234-8234-123456789abc"}"#,
        "\n",
    );
    assert_eq!(crate::import::detect(head.as_bytes(), "full.jsonl").unwrap(), Format::ClaudeCode);
    assert_eq!(
        crate::import::detect(&head.as_bytes()[head.find('\n').unwrap() + 1..], "full.jsonl").unwrap(),
        Format::ClaudeCode
    );
}

/// A file parsed once is not parsed again in the same process, but a file written again is read again:
/// the memo of parsed conversations keys a file by its path, length and modification time.
#[test]
fn a_conversation_file_written_again_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let first = only(import_fixture("claude-code-compacted.jsonl", Format::ClaudeCode));
    let second = only(import_fixture("claude-code.jsonl", Format::ClaudeCode));
    write_conversation(&path, &first).unwrap();
    assert_eq!(load_conversation(&path).unwrap(), first);
    assert_eq!(load_conversation(&dir.path().join(".").join("c.json")).unwrap(), first, "the same file, another path");
    write_conversation(&path, &second).unwrap();
    assert_eq!(load_conversation(&path).unwrap(), second);
    std::fs::write(&path, "{").unwrap();
    let err = load_conversation(&path).unwrap_err().to_string();
    assert!(err.contains("c.json"), "a damaged file is an error naming it, not the conversation kept: {err}");
}
