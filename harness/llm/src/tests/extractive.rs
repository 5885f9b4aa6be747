//! The extractive baseline: template-driven snapshots, verification, passage retrieval.

use super::*;
use crate::extractive::{parse_template, respond};
use crate::json;

const TEMPLATE: &str = "You are a specialized system component responsible for distilling chat history into a structured XML <state_snapshot>.\n\nThe structure MUST be as follows:\n\n<state_snapshot>\n    <overall_goal>\n        <!-- A single, concise sentence. -->\n    </overall_goal>\n\n    <active_constraints>\n        <!-- Example: \"<b>Use tailwind</b>\" -->\n    </active_constraints>\n\n    <key_knowledge>\n    </key_knowledge>\n\n    <artifact_trail>\n    </artifact_trail>\n\n    <recent_actions>\n    </recent_actions>\n\n    <task_state>\n    </task_state>\n</state_snapshot>";

fn agent_history() -> Vec<history::Content> {
    json::parse_str(
        r#"[
        {"role":"user","parts":[{"text":"Add a --verbose flag to the CLI in src/main.rs. You must keep the public API stable. Never edit the vendor/ directory."}]},
        {"role":"model","parts":[{"functionCall":{"name":"read_file","args":{"absolute_path":"/repo/src/main.rs"}}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"fn main() { run(); }"}}}]},
        {"role":"model","parts":[{"functionCall":{"name":"replace","args":{"file_path":"/repo/src/main.rs","old_string":"run()","new_string":"run(verbose)"}}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"replace","response":{"output":"Successfully modified file"}}}]},
        {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"cargo test"}}}]},
        {"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"test result: FAILED. 1 failed; port 8080 already in use"}}}]},
        {"role":"model","parts":[{"text":"The test failed because port 8080 is busy."}]},
        {"role":"user","parts":[{"text":"Use port 9090 for tests instead."}]}
    ]"#,
    )
    .unwrap()
    .as_array()
    .unwrap()
    .to_vec()
}

fn summary_request(contents: Vec<history::Content>) -> LlmRequest {
    LlmRequest {
        system_instruction: Some(TEMPLATE.into()),
        contents,
        params: GenerationParams::default(),
        label: RequestLabel::default(),
    }
}

#[test]
fn reads_sections_from_the_template() {
    let (root, sections) = parse_template(TEMPLATE).unwrap();
    assert_eq!(root, "state_snapshot");
    assert_eq!(
        sections,
        ["overall_goal", "active_constraints", "key_knowledge", "artifact_trail", "recent_actions", "task_state"]
    );
    assert!(parse_template("Answer the question.").is_none());
}

#[test]
fn fills_a_snapshot_from_the_history_by_salience() {
    let mut contents = agent_history();
    contents.push(history::user_text("Generate a new <state_snapshot> based on the provided history."));
    let out = respond(&summary_request(contents.clone()));
    assert!(out.starts_with("<state_snapshot>\n    <overall_goal>\n        Add a --verbose flag"), "{out}");
    assert!(out.ends_with("</state_snapshot>"));
    let section = |name: &str| {
        let body = &out[out.find(&format!("<{name}>")).unwrap()..out.find(&format!("</{name}>")).unwrap()];
        body.to_string()
    };
    // Files named in tool calls, with the tool that touched them.
    assert!(section("artifact_trail").contains("- `/repo/src/main.rs` (read_file)"), "{out}");
    // Identifier-dense, recent units are picked: the failing test's port, the user's newest request.
    assert!(out.contains("port 8080"), "{out}");
    assert!(section("task_state").contains("Latest request: Use port 9090 for tests instead."), "{out}");
    assert!(section("active_constraints").contains("Use port 9090"), "{out}");
    // The anchor instruction is not a user request.
    assert!(!out.contains("Generate a new"));
    // Deterministic.
    assert_eq!(out, respond(&summary_request(contents)));
}

#[test]
fn verification_adds_what_the_snapshot_missed() {
    let first = "<state_snapshot>\n    <overall_goal>\n        Add a --verbose flag\n    </overall_goal>\n    <key_knowledge>\n    </key_knowledge>\n</state_snapshot>";
    let verify = |snapshot: &str| {
        let mut contents = agent_history();
        contents.push(history::model_text(&format!("scratchpad...\n{snapshot}")));
        contents.push(history::user_text(
            "Critically evaluate the <state_snapshot> you just generated. Did you omit anything?",
        ));
        respond(&summary_request(contents))
    };
    let out = verify(first);
    assert_ne!(out, first);
    assert!(out.starts_with("<state_snapshot>\n    <overall_goal>\n        Add a --verbose flag\n"), "{out}");
    // The failure and the identifiers the first snapshot lacked are back, within the budget.
    assert!(out.contains("port 8080 already in use"), "{out}");
    assert!(out.contains("9090"), "{out}");
    assert!(out.len() <= first.len() + 900 + 100, "{} chars", out.len());
    // Verifying the verified snapshot adds at most the next budget's worth, and what it already has stays.
    let again = verify(&out);
    assert!(again.contains("port 8080 already in use") && again.len() <= out.len() + 1000, "{again}");
}

#[test]
fn carries_over_a_previous_snapshot() {
    let mut contents = vec![
        history::user_text("<state_snapshot>\n<overall_goal>\nShip release 2.0\n</overall_goal>\n<active_constraints>\n- Do not bump MSRV.\n</active_constraints>\n</state_snapshot>"),
        history::model_text("Got it. Thanks for the additional context!"),
    ];
    contents.extend(agent_history());
    contents.push(history::user_text("A previous <state_snapshot> exists in the history."));
    let out = respond(&summary_request(contents));
    assert!(out.contains("<overall_goal>\n        Ship release 2.0\n"), "{out}");
    assert!(out.contains("- Do not bump MSRV."), "the previous snapshot's items are carried over: {out}");
}

#[tokio::test]
async fn answers_with_the_best_matching_passage() {
    let model = from_spec("extractive", &test_options(1)).unwrap();
    let mut contents = agent_history();
    contents.push(history::user_text("Which port was already in use?"));
    let req = LlmRequest {
        system_instruction: None,
        contents,
        params: GenerationParams::default(),
        label: RequestLabel::default(),
    };
    let resp = model.generate(&req).await.unwrap();
    assert!(resp.text.contains("port 8080 already in use"), "{}", resp.text);
    assert_eq!(model.spec(), "extractive");
    let mut nothing = req.clone();
    nothing.contents = vec![history::user_text("zebra quokka?")];
    assert!(model.generate(&nothing).await.unwrap().text.starts_with("No passage"));
}

/// The passage index is built once per context and reused: answers interleaved over two contexts (as
/// concurrent cells ask them) are those of each context alone, and the same context asked again after the
/// other gives the same answer.
#[test]
fn answers_interleaved_over_contexts_match_each_context_alone() {
    let ask = |contents: &[history::Content], q: &str| {
        let mut c = contents.to_vec();
        c.push(history::user_text(q));
        respond(&LlmRequest {
            system_instruction: None,
            contents: c,
            params: GenerationParams::default(),
            label: RequestLabel::default(),
        })
    };
    let a = agent_history();
    let b: Vec<history::Content> = vec![
        history::user_text("The staging server listens on port 7070 behind nginx."),
        history::model_text("Noted: staging uses port 7070."),
    ];
    let questions =
        ["Which port was already in use?", "Which file gets the verbose flag?", "Which port does staging use?"];
    let alone_a: Vec<String> = questions.iter().map(|q| ask(&a, q)).collect();
    let alone_b: Vec<String> = questions.iter().map(|q| ask(&b, q)).collect();
    for (i, q) in questions.iter().enumerate() {
        assert_eq!(ask(&b, q), alone_b[i]);
        assert_eq!(ask(&a, q), alone_a[i]);
    }
    assert!(alone_a[0].contains("8080") && alone_b[2].contains("7070"), "{alone_a:?} {alone_b:?}");
}
