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
fn fills_a_snapshot_from_the_history() {
    let mut contents = agent_history();
    contents.push(history::user_text("Generate a new <state_snapshot> based on the provided history."));
    let out = respond(&summary_request(contents.clone()));
    assert!(out.starts_with("<state_snapshot>\n    <overall_goal>\n        Add a --verbose flag"), "{out}");
    assert!(out.ends_with("</state_snapshot>"));
    for needle in [
        "- You must keep the public API stable.",
        "- Never edit the vendor/ directory.",
        "- `/repo/src/main.rs`: MODIFIED",
        "- Ran `run_shell_command` {\"command\":\"cargo test\"} → test result: FAILED",
        "[IN PROGRESS] Use port 9090 for tests instead.",
        "`run_shell_command` reported: test result: FAILED",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    // The anchor instruction is not a user request.
    assert!(!out.contains("Generate a new"));
    // Deterministic.
    assert_eq!(out, respond(&summary_request(contents)));
}

#[test]
fn verification_repeats_the_previous_snapshot() {
    let mut contents = agent_history();
    contents.push(history::model_text(
        "scratchpad...\n<state_snapshot>\n    <overall_goal>\n        X\n    </overall_goal>\n</state_snapshot>",
    ));
    contents.push(history::user_text(
        "Critically evaluate the <state_snapshot> you just generated. Did you omit anything?",
    ));
    assert_eq!(
        respond(&summary_request(contents)),
        "<state_snapshot>\n    <overall_goal>\n        X\n    </overall_goal>\n</state_snapshot>"
    );
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
    assert!(out.contains("- Do not bump MSRV.") && out.contains("- Never edit the vendor/ directory."), "{out}");
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
