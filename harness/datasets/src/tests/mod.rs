//! Dataset tests: importers on real files and fixtures, malformed input, the canonical file, validation.

mod compactions;
mod images;
mod importers;
mod malformed;
mod manifest;
mod real_sessions;

use super::import::{Format, Imported};
use super::Conversation;
use crate::json::{self, Value};

pub(super) fn fixture_path(name: &str) -> String {
    format!("{}/src/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub(super) fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

pub(super) fn import_fixture(name: &str, format: Format) -> Imported {
    let bytes = fixture(name);
    let detected = super::import::detect(&bytes, name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(detected, format, "detected format of {name}");
    format.parse(&bytes, name).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn only(imported: Imported) -> Conversation {
    assert_eq!(imported.conversations.len(), 1);
    imported.conversations.into_iter().next().unwrap()
}

/// Roles and part kinds, e.g. `user:text model:thought,text,call:read_file user:response:read_file`.
pub(super) fn outline(c: &Conversation) -> String {
    let mut out = Vec::new();
    for content in &c.history {
        let role = crate::history::role(content).unwrap_or("?");
        let parts: Vec<String> = crate::history::parts(content)
            .iter()
            .map(|p| {
                if let Some(call) = crate::history::function_call(p) {
                    format!("call:{}", call.get("name").and_then(Value::as_str).unwrap_or("?"))
                } else if let Some(r) = crate::history::function_response(p) {
                    format!("response:{}", r.get("name").and_then(Value::as_str).unwrap_or("?"))
                } else if crate::tokens::images::is_media_part(p) {
                    "image".into()
                } else if crate::history::is_thought(p) {
                    "thought".into()
                } else {
                    "text".into()
                }
            })
            .collect();
        out.push(format!("{role}:{}", parts.join(",")));
    }
    out.join(" ")
}

pub(super) fn assert_valid(c: &Conversation) {
    let problems = super::validate_conversation(c);
    assert!(problems.is_empty(), "{}: {problems:?}", c.meta.id);
}

pub(super) fn to_json(v: &Value) -> String {
    json::to_string(v)
}

#[test]
fn probe_and_recording_directories_are_not_conversations() {
    // Regression: `datasets/probes/` was walked as conversations, doubling the default sweep's corpus.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let files = crate::find_conversations(&[root]).unwrap();
    assert_eq!(files.len(), 89);
    assert!(files.iter().all(|f| !f.components().any(|c| c.as_os_str() == "probes" || c.as_os_str() == "recordings")));
}
