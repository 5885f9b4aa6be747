//! What `compress` sees: `getHistory(curated = true)` at the reference commit (`packages/core/src/core/geminiChat.ts`).

use crate::history::{self, Content};
use crate::json::{JsStr, Value};

/// A part that is blank text: only `text`/`thought`/`callIndex` keys, `text === ""`, not a thought.
fn is_blank_text(p: &Value) -> bool {
    let Some(m) = p.as_object() else { return false };
    m.keys().all(|k| matches!(k.as_wtf8(), b"text" | b"thought" | b"callIndex"))
        && p.get("text").and_then(Value::as_js_str).is_some_and(JsStr::is_empty)
        && !history::is_thought(p)
}

fn is_valid_model_content(c: &Content) -> bool {
    let parts = history::parts(c);
    parts.is_empty() || parts.iter().all(|p| p.as_object().is_some_and(|m| !m.is_empty()) && !is_blank_text(p))
}

/// `extractCuratedHistory`: user turns are kept; a run of model turns is kept only if all are valid.
pub fn extract_curated_history(turns: &[Content]) -> Vec<Content> {
    let mut out = Vec::with_capacity(turns.len());
    let mut i = 0;
    while i < turns.len() {
        if history::is_user(&turns[i]) {
            out.push(turns[i].clone());
            i += 1;
            continue;
        }
        let start = i;
        while i < turns.len() && !history::is_user(&turns[i]) {
            i += 1;
        }
        let run = &turns[start..i];
        if run.iter().all(is_valid_model_content) {
            out.extend(run.iter().cloned());
        }
    }
    out
}

/// `stripThoughts` for one Content: removes thought parts and, in a turn that had some, marks the first
/// remaining function call with the skip signature. Returns false when the turn is left with no parts
/// (such turns are dropped; a turn without a `parts` key is kept).
pub fn strip_thoughts(c: &mut Content) -> bool {
    // Read first: a Content without thoughts stays as it is, shared, not copied on write.
    match c.get("parts") {
        Some(Value::Array(parts)) if !parts.iter().any(history::is_thought) => return !parts.is_empty(),
        Some(Value::Array(_)) => {}
        _ => return true,
    }
    let Some(Value::Array(parts)) = c.get_mut("parts") else { return true };
    parts.retain(|p| !history::is_thought(p));
    if let Some(fc) = parts.iter_mut().find(|p| history::function_call(p).is_some()) {
        if fc.get("thoughtSignature").is_none() {
            fc.insert("thoughtSignature", Value::str("skip_thought_signature_validator"));
        }
    }
    !parts.is_empty()
}

/// `coalesceConsecutiveRoles` for one step: appends `c`'s parts to `prev` when both have the same role.
/// Returns false (and leaves `prev` alone) when the roles differ.
pub fn coalesce_into(prev: &mut Content, c: &Content) -> bool {
    if history::role(prev) != history::role(c) {
        return false;
    }
    let extra: Vec<Value> = history::parts(c).to_vec();
    match prev.get_mut("parts") {
        Some(Value::Array(p)) => p.extend(extra),
        _ => prev.insert("parts", Value::Array(extra)),
    }
    true
}

/// `stripThoughts` then `coalesceConsecutiveRoles`.
pub fn strip_thoughts_and_coalesce(turns: Vec<Content>) -> Vec<Content> {
    let mut out: Vec<Content> = Vec::with_capacity(turns.len());
    for mut c in turns {
        if !strip_thoughts(&mut c) {
            continue;
        }
        if let Some(prev) = out.last_mut() {
            if coalesce_into(prev, &c) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The curated history `compress` receives (context management off, Gemini 2.x/3.x model).
pub fn curated_history(turns: &[Content]) -> Vec<Content> {
    strip_thoughts_and_coalesce(extract_curated_history(turns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;

    /// Regression: stripping used to take the parts mutably, which copied every shared Content (the whole
    /// recorded history, at every replay push) even when there was nothing to strip.
    #[test]
    fn a_content_without_thoughts_stays_shared() {
        let c = parse_str(r#"{"role":"user","parts":[{"text":"q"}]}"#).unwrap();
        let mut copy = c.clone();
        assert!(strip_thoughts(&mut copy));
        let (Value::Object(a), Value::Object(b)) = (&c, &copy) else { panic!("objects") };
        assert!(std::sync::Arc::ptr_eq(a, b));
    }

    #[test]
    fn invalid_model_runs_are_dropped_and_roles_coalesced() {
        let h = parse_str(
            r#"[{"role":"user","parts":[{"text":"env"}]},{"role":"user","parts":[{"text":"q"}]},
                {"role":"model","parts":[{"text":"t","thought":true},{"functionCall":{"name":"ls","args":{}}}]},
                {"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"text":""}]}]"#,
        )
        .unwrap();
        let out = curated_history(h.as_array().unwrap());
        assert_eq!(out.len(), 3);
        assert_eq!(history::parts(&out[0]).len(), 2);
        assert_eq!(
            history::parts(&out[1])[0].get("thoughtSignature").and_then(Value::as_str),
            Some("skip_thought_signature_validator")
        );
    }
}
