//! Structural checks a replayable conversation must pass.

use super::Conversation;
use crate::history;
use crate::json::{JsonPath, Value};

/// One problem found by [`validate_conversation`], at a JSON path of the conversation file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Checks roles (`user`/`model` only), non-empty turns, that every `functionResponse` answers an earlier,
/// still unanswered `functionCall` with the same name (and id when both have one), and that recorded token
/// counts line up with the history.
pub fn validate_conversation(c: &Conversation) -> Vec<Problem> {
    let mut problems = Problems::default();
    let root = JsonPath::root().key("history");
    if let Err(e) = history::validate_shape(&Value::Array(c.history.clone())) {
        problems.push(&JsonPath::root(), format!("{}: {}", e.path.replacen('$', "$.history", 1), e.message));
        return problems.0;
    }
    if c.history.is_empty() {
        problems.push(&root, "history is empty".into());
    }
    if !c.recorded_prompt_tokens.is_empty() && c.recorded_prompt_tokens.len() != c.history.len() {
        problems.push(
            &JsonPath::root().key("recordedPromptTokens"),
            format!("{} entries for {} Contents", c.recorded_prompt_tokens.len(), c.history.len()),
        );
    }
    check_compactions(c, &mut problems);
    let mut open_calls = OpenCalls::new();
    for (i, content) in c.history.iter().enumerate() {
        check_content(content, &root.index(i), &mut open_calls, &mut problems);
    }
    problems.0
}

/// Calls not answered yet: (id, name).
type OpenCalls = Vec<(Option<String>, String)>;

/// Problems in the order found.
#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn push(&mut self, path: &JsonPath, message: String) {
        self.0.push(Problem { path: path.to_string(), message });
    }
}

/// Recorded compactions lie inside the history, in its order, each with a summary.
fn check_compactions(c: &Conversation, problems: &mut Problems) {
    let compactions = JsonPath::root().key("recordedCompactions");
    for (i, rc) in c.recorded_compactions.iter().enumerate() {
        if rc.at > c.history.len() {
            problems.push(
                &compactions.index(i).key("at"),
                format!("{} is past the history's {} Contents", rc.at, c.history.len()),
            );
        }
        if i > 0 && c.recorded_compactions[i - 1].at > rc.at {
            problems.push(&compactions.index(i).key("at"), "compactions must be in history order".into());
        }
        if rc.summary.trim().is_empty() {
            problems.push(&compactions.index(i).key("summary"), "empty summary".into());
        }
    }
}

/// Checks one Content (at `at`): its role, that it has parts, and its calls and responses against the calls
/// still open (which it updates).
fn check_content(content: &Value, at: &JsonPath, open_calls: &mut OpenCalls, problems: &mut Problems) {
    let role = history::role(content);
    if !matches!(role, Some("user" | "model")) {
        problems.push(&at.key("role"), format!("role must be \"user\" or \"model\", found {role:?}"));
    }
    let parts = history::parts(content);
    if parts.is_empty() {
        problems.push(&at.key("parts"), "empty turn (no parts)".into());
    }
    for (j, p) in parts.iter().enumerate() {
        let pat = at.key("parts").index(j);
        if let Some(call) = history::function_call(p) {
            if role != Some("model") {
                problems.push(&pat, "functionCall outside a model turn".into());
            }
            let Some(name) = call.get("name").and_then(Value::as_str) else {
                problems.push(&pat.key("functionCall").key("name"), "missing or not a string".into());
                continue;
            };
            let id = call.get("id").and_then(Value::as_str).map(str::to_string);
            open_calls.push((id, name.to_string()));
        } else if let Some(resp) = history::function_response(p) {
            if role != Some("user") {
                problems.push(&pat, "functionResponse outside a user turn".into());
            }
            check_response(resp, &pat, open_calls, problems);
        } else if let Some(d) = p.get("inlineData") {
            let has = |k: &str| d.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
            if !has("mimeType") || !has("data") {
                problems.push(&pat.key("inlineData"), "an inline medium needs a mimeType and data".into());
            }
        } else if p.as_object().is_some_and(|o| o.is_empty()) {
            problems.push(&pat, "empty part".into());
        }
    }
}

/// A functionResponse (part at `pat`) must answer an open call of its name (and id when both have one);
/// the call it answers is closed.
fn check_response(resp: &Value, pat: &JsonPath, open_calls: &mut OpenCalls, problems: &mut Problems) {
    let Some(name) = resp.get("name").and_then(Value::as_str) else {
        problems.push(&pat.key("functionResponse").key("name"), "missing or not a string".into());
        return;
    };
    let id = resp.get("id").and_then(Value::as_str);
    let answered = open_calls.iter().position(|(cid, cname)| {
        cname == name
            && match (cid.as_deref(), id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    });
    match answered {
        Some(k) => {
            open_calls.remove(k);
        }
        None => problems
            .push(&pat.key("functionResponse"), format!("answers no earlier functionCall (name {name:?}, id {id:?})")),
    }
}
