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
    let mut problems = Vec::new();
    let root = JsonPath::root().key("history");
    let mut push = |path: &JsonPath, message: String| problems.push(Problem { path: path.to_string(), message });
    if let Err(e) = history::validate_shape(&Value::Array(c.history.clone())) {
        push(&JsonPath::root(), format!("{}: {}", e.path.replacen('$', "$.history", 1), e.message));
        return problems;
    }
    if c.history.is_empty() {
        push(&root, "history is empty".into());
    }
    if !c.recorded_prompt_tokens.is_empty() && c.recorded_prompt_tokens.len() != c.history.len() {
        push(
            &JsonPath::root().key("recordedPromptTokens"),
            format!("{} entries for {} Contents", c.recorded_prompt_tokens.len(), c.history.len()),
        );
    }
    let compactions = JsonPath::root().key("recordedCompactions");
    for (i, rc) in c.recorded_compactions.iter().enumerate() {
        if rc.at > c.history.len() {
            push(
                &compactions.index(i).key("at"),
                format!("{} is past the history's {} Contents", rc.at, c.history.len()),
            );
        }
        if i > 0 && c.recorded_compactions[i - 1].at > rc.at {
            push(&compactions.index(i).key("at"), "compactions must be in history order".into());
        }
        if rc.summary.trim().is_empty() {
            push(&compactions.index(i).key("summary"), "empty summary".into());
        }
    }
    // Calls not answered yet: (id, name).
    let mut open_calls: Vec<(Option<String>, String)> = Vec::new();
    for (i, content) in c.history.iter().enumerate() {
        let at = root.index(i);
        let role = history::role(content);
        if !matches!(role, Some("user" | "model")) {
            push(&at.key("role"), format!("role must be \"user\" or \"model\", found {role:?}"));
        }
        let parts = history::parts(content);
        if parts.is_empty() {
            push(&at.key("parts"), "empty turn (no parts)".into());
        }
        for (j, p) in parts.iter().enumerate() {
            let pat = at.key("parts").index(j);
            if let Some(call) = history::function_call(p) {
                if role != Some("model") {
                    push(&pat, "functionCall outside a model turn".into());
                }
                let Some(name) = call.get("name").and_then(Value::as_str) else {
                    push(&pat.key("functionCall").key("name"), "missing or not a string".into());
                    continue;
                };
                let id = call.get("id").and_then(Value::as_str).map(str::to_string);
                open_calls.push((id, name.to_string()));
            } else if let Some(resp) = history::function_response(p) {
                if role != Some("user") {
                    push(&pat, "functionResponse outside a user turn".into());
                }
                let Some(name) = resp.get("name").and_then(Value::as_str) else {
                    push(&pat.key("functionResponse").key("name"), "missing or not a string".into());
                    continue;
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
                    None => push(
                        &pat.key("functionResponse"),
                        format!("answers no earlier functionCall (name {name:?}, id {id:?})"),
                    ),
                }
            } else if p.as_object().is_some_and(|o| o.is_empty()) {
                push(&pat, "empty part".into());
            }
        }
    }
    problems
}
