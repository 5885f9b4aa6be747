//! Each importer on real files (or fixtures for formats with no public recordings).

use super::*;
use crate::history;
use crate::{export_history, load_conversation, parse_conversation, write_conversation, ConversationStats};

#[test]
fn gemini_legacy_session_converts_as_gemini_cli_does() {
    let c = only(import_fixture("gemini-session-legacy.json", Format::GeminiSession));
    assert_eq!(
        outline(&c),
        "user:text model:thought,thought,text,call:run_shell_command,call:read_file,call:glob \
         user:response:run_shell_command,response:read_file model:text user:text \
         model:thought,call:replace user:response:replace"
    );
    let model = &c.history[1];
    assert_eq!(
        history::parts(model)[0].get("text").and_then(Value::as_str),
        Some("**Planning** Run the tests to see the failure.")
    );
    // An empty subject is falsy: the description alone.
    assert_eq!(history::parts(model)[1].get("text").and_then(Value::as_str), Some("Then read the parser source."));
    assert_eq!(
        to_json(&history::parts(&c.history[2])[0]),
        r#"{"functionResponse":{"id":"run_shell_command-1","name":"run_shell_command","response":{"output":"error[E0308]: mismatched types\n  --> crates/parser/src/lib.rs:42:9"}}}"#
    );
    assert_eq!(c.recorded_prompt_tokens, vec![None, Some(8123), None, Some(9710), None, Some(9902), None]);
    assert_eq!(c.meta.title.as_deref(), Some("Fix parser return type"));
    assert_valid(&c);
}

#[test]
fn gemini_jsonl_applies_upserts_set_and_rewind() {
    let imported = import_fixture("gemini-session.jsonl", Format::GeminiJsonl);
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    assert!(imported.warnings[0].contains("line 14"), "{}", imported.warnings[0]);
    let c = only(imported);
    assert_eq!(
        outline(&c),
        "user:text model:text,call:search_file_content user:response:search_file_content model:text user:text model:text"
    );
    assert_eq!(history::visible_text(&c.history[4]), "Only fix a.rs.");
    assert_eq!(c.recorded_prompt_tokens, vec![None, Some(5120), None, Some(5301), None, Some(5480)]);
    assert_eq!(c.meta.title.as_deref(), Some("TODO cleanup"));
    assert_valid(&c);
}

#[test]
fn gemini_jsonl_rewind_to_unknown_id_clears_everything() {
    let text = "{\"sessionId\":\"s\"}\n{\"id\":\"a\",\"type\":\"user\",\"content\":\"hi\"}\n{\"$rewindTo\":\"zz\"}\n";
    let c = only(Format::GeminiJsonl.parse(text.as_bytes(), "s.jsonl").unwrap());
    assert!(c.history.is_empty());
    // `$set.messages` replaces all messages.
    let text = "{\"sessionId\":\"s\"}\n{\"id\":\"a\",\"type\":\"user\",\"content\":\"one\"}\n\
                {\"$set\":{\"messages\":[{\"id\":\"b\",\"type\":\"user\",\"content\":\"two\"}]}}\n";
    let c = only(Format::GeminiJsonl.parse(text.as_bytes(), "s.jsonl").unwrap());
    assert_eq!(outline(&c), "user:text");
    assert_eq!(history::visible_text(&c.history[0]), "two");
}

const GOLDEN: [&str; 4] = [
    "golden-case000.history.json",
    "golden-case003.history.json",
    "golden-case003.pretty.history.json",
    "golden-case003.ascii.history.json",
];

#[test]
fn contents_round_trip_byte_identically_through_the_conversation_file() {
    let dir = tempfile::tempdir().unwrap();
    for name in GOLDEN {
        let bytes = fixture(name);
        let imported = import_fixture(name, Format::GeminiContents);
        assert!(imported.warnings.is_empty(), "{name}: {:?}", imported.warnings);
        let c = only(imported);
        let path = dir.path().join(format!("{}.json", c.meta.id));
        write_conversation(&path, &c).unwrap();
        let back = load_conversation(&path).unwrap();
        assert_eq!(back, c, "{name}: conversation file round trip");
        assert!(export_history(&back).as_bytes() == bytes.as_slice(), "{name}: export differs from input");
    }
}

#[test]
fn contents_round_trip_in_js_layouts() {
    let v = json::parse(&fixture("golden-case003.history.json")).unwrap();
    for text in [json::to_string_source(&v), json::to_string_pretty_source(&v), format!("{}\n", json::to_string(&v))] {
        let c = only(Format::GeminiContents.parse(text.as_bytes(), "h.json").unwrap());
        assert_eq!(export_history(&c), text);
    }
}

#[test]
fn conversation_file_round_trips_every_field() {
    let mut c = only(import_fixture("gemini-session-legacy.json", Format::GeminiSession));
    c.system_instruction = Some("sys \u{1F600}".into());
    c.tools =
        Some(json::parse_str(r#"[{"functionDeclarations":[{"name":"x","parameters":{"type":"object"}}]}]"#).unwrap());
    c.meta.license = Some("MIT".into());
    let text = crate::layout::Layout::js_pretty().write(&crate::conversation_to_value(&c));
    let back = parse_conversation(text.as_bytes(), "c.json").unwrap();
    assert_eq!(back, c);
}

#[test]
fn mini_swe_agent_real_trajectory() {
    let c = only(import_fixture("mini-swe-agent-django__django-14915.excerpt.traj.json", Format::OpenaiChat));
    assert_eq!(c.meta.id, "django__django-14915");
    assert!(c.system_instruction.as_deref().unwrap().starts_with("You are a helpful assistant"));
    assert!(outline(&c).starts_with("user:text model:text,call:bash user:response:bash model:text,call:bash"));
    let call = history::function_call(&history::parts(&c.history[1])[1]).unwrap();
    assert!(call
        .get("args")
        .and_then(|a| a.get("command"))
        .and_then(Value::as_str)
        .unwrap()
        .starts_with("find /testbed"));
    let extra = c.meta.extra.as_ref().unwrap();
    assert!(extra.get("exit").and_then(Value::as_str).unwrap().starts_with("diff --git"));
    assert_eq!(extra.get("exit_status").and_then(Value::as_str), Some("Submitted"));
    assert_valid(&c);
}

#[test]
fn tau_bench_real_file_with_reused_call_ids() {
    let imported = import_fixture("tau-bench-gpt-4o-airline.excerpt.json", Format::OpenaiChat);
    let ids: Vec<&str> = imported.conversations.iter().map(|c| c.meta.id.as_str()).collect();
    assert_eq!(ids, ["task000-trial0", "task001-trial0"]);
    for c in &imported.conversations {
        assert!(c.system_instruction.as_deref().unwrap().starts_with("# Airline Agent Policy"));
        assert_valid(c);
    }
    let first = &imported.conversations[0];
    let s = ConversationStats::of(first);
    assert!(s.tool_calls >= 8, "{s:?}");
    // `call_oIHaz…` is used for get_user_details and later for calculate: each response takes the name of
    // the latest call with that id.
    assert!(outline(first).contains("call:calculate user:response:calculate"));
}

#[test]
fn swe_agent_thought_action_becomes_shell_calls() {
    let c = only(import_fixture("swe-agent-humanevalfix-python-0.traj", Format::SweAgent));
    let o = outline(&c);
    assert!(o.starts_with("user:text model:text,call:shell user:response:shell"), "{o}");
    assert_eq!(c.meta.extra.as_ref().unwrap().get("style").and_then(Value::as_str), Some("thought-action"));
    let call = history::function_call(&history::parts(&c.history[1])[1]).unwrap();
    assert!(call.get("args").and_then(|a| a.get("command")).and_then(Value::as_str).is_some());
    assert_valid(&c);
}

#[test]
fn swe_agent_function_calling_keeps_tool_names() {
    let c = only(import_fixture("swe-agent-function-calling-simple.traj", Format::SweAgent));
    assert!(outline(&c).starts_with("user:text model:text,call:find_file user:response:find_file model:text,call:open"));
    assert_eq!(c.meta.extra.as_ref().unwrap().get("style").and_then(Value::as_str), Some("function-calling"));
    assert_valid(&c);
}

#[test]
fn aider_sessions_split_on_headers() {
    let imported = import_fixture("aider-chat-history.excerpt.md", Format::Aider);
    // 10 sessions, 7 of them only a header: those give no conversation.
    assert_eq!(imported.conversations.len(), 3);
    let c = &imported.conversations[0];
    assert_eq!(c.meta.id, "aider-chat-history-2024-08-10-11-14-11");
    assert!(outline(c).starts_with("user:text"));
    // `>>>>>>> REPLACE` inside an edit block is the assistant's, not a quote.
    assert!(history::visible_text(&c.history[3]).contains(">>>>>>> REPLACE"));
    // `> Tokens: 12,301 sent` is the prompt size of the reply before it.
    assert_eq!(c.recorded_prompt_tokens[3], Some(12301));
    assert!(history::role(&c.history[3]) == Some("model"));
    for c in &imported.conversations {
        assert_valid(c);
        // Markdown hard breaks are not content.
        assert!(!history::visible_text(&c.history[0]).contains("  \n"));
    }
}

#[test]
fn claude_code_follows_the_main_branch() {
    let imported = import_fixture("claude-code.jsonl", Format::ClaudeCode);
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    let c = only(imported);
    assert_eq!(
        outline(&c),
        "user:text model:thought,text,call:Read user:response:Read model:call:Bash user:response:Bash model:text user:text model:text"
    );
    assert_eq!(history::visible_text(&c.history[6]), "Use zoneinfo (stdlib), not pytz.");
    let error = history::function_response(&history::parts(&c.history[4])[0]).unwrap();
    assert_eq!(to_json(error.get("response").unwrap()), r#"{"error":"F\nAssertionError: assert 5 == 0"}"#);
    assert_eq!(
        c.recorded_prompt_tokens,
        vec![None, Some(13504), None, Some(13806), None, Some(13905), None, Some(14125)]
    );
    assert_valid(&c);
}

#[test]
fn codex_rollout_items_and_token_counts() {
    let c = only(import_fixture("codex-rollout.jsonl", Format::Codex));
    assert_eq!(c.system_instruction.as_deref(), Some("Follow the repository's AGENTS.md."));
    assert_eq!(
        outline(&c),
        "user:text,text model:thought,call:shell user:response:shell model:call:shell user:response:shell model:text"
    );
    let bad_args = history::function_call(&history::parts(&c.history[3])[0]).unwrap();
    assert_eq!(to_json(bad_args.get("args").unwrap()), r#"{"raw":"not json"}"#);
    assert_eq!(c.recorded_prompt_tokens, vec![None, Some(6012), None, None, None, Some(6488)]);
    // The window the rollout states (`info.model_context_window`), which `token_limit = "recorded"` reads.
    assert_eq!(c.context_window(), Some(272_000));
    assert_eq!(c.replay_input("c").context_window, Some(272_000));
    assert_valid(&c);
}

#[test]
fn stats_count_what_they_say() {
    let c = only(import_fixture("codex-rollout.jsonl", Format::Codex));
    let s = ConversationStats::of(&c);
    assert_eq!((s.contents, s.user_turns, s.model_turns, s.tool_calls), (6, 3, 3, 2));
    assert!(s.estimated_tokens > 0 && s.characters > 200 && s.longest_tool_output > 100);
}

/// Every golden input history (copied into the repository with the vectors) round-trips byte for byte.
#[test]
fn all_golden_histories_round_trip() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/golden/inputs");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut checked = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("case0") && name.ends_with(".history.json")) {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let c = only(Format::GeminiContents.parse(&bytes, &name).unwrap_or_else(|e| panic!("{e}")));
        assert!(export_history(&c).as_bytes() == bytes.as_slice(), "{name}");
        checked += 1;
    }
    assert!(checked > 0);
}

#[test]
fn format_names_are_stable_and_round_trip() {
    // Written into conversation files, the import cache and configs: a rename breaks them.
    let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(
        names,
        [
            "gemini-session",
            "gemini-jsonl",
            "gemini-contents",
            "openai-chat",
            "swe-agent",
            "aider",
            "claude-code",
            "codex"
        ]
    );
    for &f in Format::ALL {
        assert_eq!(Format::from_name(f.name()), Some(f));
        assert_eq!(f.to_string(), f.name());
    }
    assert_eq!(Format::from_name("gemini"), None);
    let e = "gemini".parse::<Format>().unwrap_err().to_string();
    assert!(e.contains("unknown format `gemini`") && e.contains("gemini-session, gemini-jsonl"), "{e}");
}

/// Regression: one response with two parallel tool calls is written as a line per `tool_use` block (same
/// `message.id`), and each result's parent is its own call's line. Walking back from the last line followed
/// the second call and its result only, so the first call and its result were dropped as an "abandoned
/// branch" (tens of lines per long session).
#[test]
fn claude_code_keeps_every_parallel_tool_call_and_its_result() {
    let line = |uuid: &str, parent: &str, kind: &str, message: &str| {
        format!(
            r#"{{"parentUuid":{parent},"isSidechain":false,"type":"{kind}","message":{message},"uuid":"{uuid}","sessionId":"s","cwd":"/w"}}"#,
            parent = if parent.is_empty() { "null".to_string() } else { format!("\"{parent}\"") }
        )
    };
    let call = |id: &str, path: &str| {
        format!(
            r#"{{"id":"msg_1","role":"assistant","content":[{{"type":"tool_use","id":"{id}","name":"Read","input":{{"file_path":"{path}"}}}}]}}"#
        )
    };
    let result = |id: &str, text: &str| {
        format!(r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{id}","content":"{text}"}}]}}"#)
    };
    let jsonl = [
        line("u1", "", "user", r#"{"role":"user","content":"read both files"}"#),
        line("a1", "u1", "assistant", &call("t1", "/w/a.go")),
        line("a2", "a1", "assistant", &call("t2", "/w/b.go")),
        line("r1", "a1", "user", &result("t1", "package a")),
        line("r2", "a2", "user", &result("t2", "package b")),
        line(
            "a3",
            "r2",
            "assistant",
            r#"{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"Both read."}]}"#,
        ),
    ]
    .join("\n");
    let imported = crate::import::Format::ClaudeCode.parse(jsonl.as_bytes(), "parallel.jsonl").unwrap();
    assert!(imported.warnings.iter().all(|w| !w.contains("abandoned")), "{:?}", imported.warnings);
    let c = only(imported);
    assert_eq!(
        outline(&c),
        "user:text model:call:Read user:response:Read model:call:Read user:response:Read model:text"
    );
    let text: String = c.history.iter().map(history::visible_text).collect();
    assert_eq!(c.meta.extra.as_ref().and_then(|e| e.get("cwd")).and_then(|v| v.as_str()), Some("/w"));
    assert_valid(&c);
    let _ = text;
}
