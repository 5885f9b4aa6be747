//! Bad input: every error names the file and the line or JSON path; nothing panics; batch import goes on.

use super::*;
use crate::{parse_conversation, validate_conversation};

fn err(format: Format, input: &str) -> String {
    match format.parse(input.as_bytes(), "bad.file") {
        Ok(i) => panic!("{format:?} accepted {input:?}: {:?}", i.conversations),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("bad.file: "), "{msg}");
            msg
        }
    }
}

#[test]
fn truncated_json_names_line_and_column() {
    let m = err(Format::OpenaiChat, "{\"messages\": [\n {\"role\": \"user\", \"content\": \"hi");
    assert!(m.contains("line 2, column") && m.contains("not valid JSON"), "{m}");
    let m = err(Format::GeminiSession, "{\"sessionId\": \"x\", \"messages\": [");
    assert!(m.contains("line 1, column"), "{m}");
    let m = err(Format::GeminiContents, "[{\"role\":\"user\",\"parts\":[{\"text\":\"a\"}]},");
    assert!(m.contains("line 1, column"), "{m}");
    let m = err(Format::SweAgent, "{\"history\": [{\"role\": ");
    assert!(m.contains("line 1"), "{m}");
    // JSONL formats: more torn lines than a live session has (one, or 1 % of them) fail at the first, named
    // once by its line and column.
    let m = err(
        Format::ClaudeCode,
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n{\"type\":\"assist\n[1,",
    );
    assert!(m.contains("bad.file: line 2, column") && m.contains("2 of 3 lines unreadable"), "{m}");
    assert!(!m.contains("line 1"), "one line number: {m}");
    let m = err(Format::Codex, "{\"type\":\"session_meta\",\"payload\":{}}\n\n{\"type\":\n{\"type");
    assert!(m.contains("line 3, column"), "{m}");
}

/// Issue #36: a session still being written ends in a line cut mid-write; it is read, the cut line skipped
/// with a warning naming the file and line, and counted in the conversation's `meta.extra.skippedLines`.
#[test]
fn a_live_session_s_cut_last_line_is_skipped_with_a_warning() {
    let live = "{\"type\":\"user\",\"uuid\":\"u1\",\"message\":{\"role\":\"user\",\"content\":\"fix it\"}}\n\
                {\"type\":\"assistant\",\"uuid\":\"a1\",\"parentUuid\":\"u1\",\"message\":{\"role\":\"assistant\",\"content\":\"on it\"}}\n\
                {\"type\":\"assistant\",\"uuid\":\"a2\",\"parentUuid\":\"a1\",\"message\":{\"role\":\"assi";
    let imported = Format::ClaudeCode.parse(live.as_bytes(), "live.jsonl").expect("a live session is read");
    let c = &imported.conversations[0];
    assert_eq!(c.history.len(), 2);
    let warning = imported.warnings.iter().find(|w| w.contains("not valid JSON")).expect("a warning");
    assert!(warning.starts_with("live.jsonl: line 3, column") && warning.contains("skipped"), "{warning}");
    let skipped = c.meta.extra.as_ref().and_then(|e| e.get(crate::import::SKIPPED_LINES_KEY)).and_then(Value::as_f64);
    assert_eq!(skipped, Some(1.0));
    // A whole session has no such count.
    let whole = Format::ClaudeCode.parse(live.rsplit_once('\n').unwrap().0.as_bytes(), "whole.jsonl").unwrap();
    assert!(whole.conversations[0].meta.extra.as_ref().and_then(|e| e.get(crate::import::SKIPPED_LINES_KEY)).is_none());
    // Codex: the same.
    let rollout = "{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}}\n{\"type\":\"respo";
    let imported = Format::Codex.parse(rollout.as_bytes(), "rollout.jsonl").expect("a live rollout is read");
    assert!(
        imported.warnings.iter().any(|w| w.starts_with("rollout.jsonl: line 2, column")),
        "{:?}",
        imported.warnings
    );
}

#[test]
fn wrong_types_name_the_json_path() {
    let m = err(
        Format::OpenaiChat,
        r#"{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": 5}]}"#,
    );
    assert!(m.contains("$.messages[1].content"), "{m}");
    let m = err(Format::OpenaiChat, r#"{"messages": {"role": "user"}}"#);
    assert!(m.contains("$.messages") && m.contains("expected an array"), "{m}");
    let m = err(Format::GeminiContents, r#"[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":"x"}]"#);
    assert!(m.contains("$[1].parts"), "{m}");
    let m = err(Format::GeminiSession, r#"{"sessionId":"s","messages":[{"id":"a","type":"gemini","toolCalls":{}}]}"#);
    assert!(m.contains("$.messages[0].toolCalls"), "{m}");
    let m = err(Format::GeminiJsonl, "{\"sessionId\":\"s\"}\n{\"id\":\"a\",\"type\":7}\n");
    assert!(m.contains("line 2") && m.contains("$.type"), "{m}");
    let m = err(
        Format::Codex,
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[1]}}",
    );
    assert!(m.contains("line 1") && m.contains("$.payload.content[0]"), "{m}");
    let m = err(Format::ClaudeCode, "{\"type\":\"user\",\"message\":\"hi\"}");
    assert!(m.contains("line 1") && m.contains("$.message"), "{m}");
}

#[test]
fn unknown_roles_are_rejected_with_their_path() {
    let m = err(Format::OpenaiChat, r#"[{"role": "user", "content": "a"}, {"role": "narrator", "content": "b"}]"#);
    assert!(m.contains("$[1].role") && m.contains("narrator"), "{m}");
    let m = err(Format::GeminiSession, r#"{"sessionId":"s","messages":[{"id":"a","type":"robot","content":"x"}]}"#);
    assert!(m.contains("$.messages[0].type") && m.contains("robot"), "{m}");
    let m = err(
        Format::Codex,
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"oracle\",\"content\":\"x\"}}",
    );
    assert!(m.contains("$.payload.role"), "{m}");
}

#[test]
fn tool_response_without_a_call_is_an_error() {
    let m = err(
        Format::OpenaiChat,
        r#"{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "call_9", "content": "out"}]}"#,
    );
    assert!(m.contains("$.messages[1].tool_call_id") && m.contains("call_9"), "{m}");
}

#[test]
fn agent_log_tool_result_without_its_call_is_kept_as_text() {
    // Claude Code does not write every line, and a resumed Codex rollout starts mid-session: the result of
    // a call the file does not hold keeps its content, as text (a functionResponse must answer a call).
    let claude = "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"x1\"}]}}";
    let codex = "{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"x1\"}}";
    for (format, text) in [(Format::ClaudeCode, claude), (Format::Codex, codex)] {
        let imported = format.parse(text.as_bytes(), "s.jsonl").unwrap();
        let c = &imported.conversations[0];
        assert_eq!(super::outline(c), "user:text", "{format:?}");
        let shown = crate::history::visible_text(&c.history[0]);
        assert!(shown.contains("its call is not in the recording") && shown.ends_with("x1"), "{shown}");
        assert!(crate::validate_conversation(c).is_empty());
    }
}

#[test]
fn invalid_utf8_names_line_and_column() {
    let mut bytes = b"{\"messages\": [\n{\"role\": \"user\", \"content\": \"caf".to_vec();
    bytes.extend_from_slice(&[0xC3, 0x28]);
    bytes.extend_from_slice(b"\"}]}");
    for format in Format::ALL {
        let e = format.parse(&bytes, "bad.file").unwrap_err().to_string();
        assert!(e.starts_with("bad.file: line 2, column 33") && e.contains("invalid UTF-8"), "{format:?}: {e}");
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    let names = [
        ("gemini-session-legacy.json", Format::GeminiSession),
        ("gemini-session.jsonl", Format::GeminiJsonl),
        ("golden-case000.history.json", Format::GeminiContents),
        ("tau-bench-gpt-4o-airline.excerpt.json", Format::OpenaiChat),
        ("swe-agent-function-calling-simple.traj", Format::SweAgent),
        ("aider-chat-history.excerpt.md", Format::Aider),
        ("claude-code.jsonl", Format::ClaudeCode),
        ("codex-rollout.jsonl", Format::Codex),
    ];
    // A small deterministic xorshift: byte flips, deletions and truncations.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (name, format) in names {
        let original = fixture(name);
        for _ in 0..150 {
            let mut bytes = original.clone();
            for _ in 0..(next() % 4 + 1) {
                let i = (next() as usize) % bytes.len().max(1);
                match next() % 3 {
                    0 if !bytes.is_empty() => bytes[i] = b"{}[]\":,\\\n0a\xc3"[(next() % 12) as usize],
                    1 if !bytes.is_empty() => {
                        bytes.remove(i);
                    }
                    _ => bytes.truncate(i),
                }
            }
            for f in [Some(format), None] {
                let _ = crate::import::import_bytes(&bytes, name, f);
            }
        }
    }
}

#[test]
fn canonical_file_errors_name_paths() {
    let e = parse_conversation(b"{\"history\": []}", "c.json").unwrap_err().to_string();
    assert!(e.contains("c.json: $.format: missing"), "{e}");
    let base = r#"{"format":"compactbench.conversation/1","meta":{"id":"x"},"#;
    let e = parse_conversation(format!(r#"{base}"history":[{{"role":"user","parts":[1]}}]}}"#).as_bytes(), "c.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("$.history[0].parts[0]"), "{e}");
    let e = parse_conversation(
        format!(r#"{base}"recordedPromptTokens":[1,2],"history":[{{"role":"user","parts":[{{"text":"a"}}]}}]}}"#)
            .as_bytes(),
        "c.json",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("$.recordedPromptTokens") && e.contains("2 entries"), "{e}");
    let e = parse_conversation(
        format!(r#"{base}"recordedPromptTokens":[-1],"history":[{{"role":"user","parts":[{{"text":"a"}}]}}]}}"#)
            .as_bytes(),
        "c.json",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("$.recordedPromptTokens[0]"), "{e}");
    let e = parse_conversation(format!(r#"{base}"meta":5,"history":[]}}"#).as_bytes(), "c.json").unwrap_err();
    assert!(e.to_string().contains("$.meta"), "{e}");
}

#[test]
fn validation_reports_structural_problems() {
    let base = r#"{"format":"compactbench.conversation/1","meta":{"id":"x"},"history":"#;
    let history = r#"[
        {"role":"user","parts":[{"text":"a"}]},
        {"role":"assistant","parts":[{"functionCall":{"id":"1","name":"ls","args":{}}}]},
        {"role":"user","parts":[{"functionResponse":{"id":"2","name":"ls","response":{}}}]},
        {"role":"model","parts":[]},
        {"role":"user","parts":[{"functionResponse":{"id":"1","name":"ls","response":{}}}]}
    ]}"#;
    let c = parse_conversation(format!("{base}{history}").as_bytes(), "c.json").unwrap();
    let problems: Vec<String> = validate_conversation(&c).iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "$.history[1].role: role must be \"user\" or \"model\", found Some(\"assistant\")",
            "$.history[1].parts[0]: functionCall outside a model turn",
            "$.history[2].parts[0].functionResponse: answers no earlier functionCall (name \"ls\", id Some(\"2\"))",
            "$.history[3].parts: empty turn (no parts)",
        ]
    );
}

#[test]
fn claude_code_parent_cycle_terminates() {
    let text = "{\"type\":\"user\",\"uuid\":\"a\",\"parentUuid\":\"b\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n\
                {\"type\":\"assistant\",\"uuid\":\"b\",\"parentUuid\":\"a\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"y\"}]}}\n";
    let c = Format::ClaudeCode.parse(text.as_bytes(), "cycle.jsonl").unwrap().conversations.remove(0);
    assert_eq!(outline(&c), "user:text model:text");
}
