//! The history model: Gemini `Content {role, parts}` objects held as [`Value`]s, so unknown fields and key
//! order survive, with typed accessors for the fields the algorithms read.

use crate::json::{self, JsonPath, Value};
use std::path::Path;

/// One Gemini `Content`. Kept as a JSON object: the reference treats parts as open-ended JSON.
pub type Content = Value;

/// `Content.role`, when it is a string.
pub fn role(c: &Content) -> Option<&str> {
    c.get("role").and_then(Value::as_str)
}

pub fn is_user(c: &Content) -> bool {
    role(c) == Some("user")
}

pub fn is_model(c: &Content) -> bool {
    role(c) == Some("model")
}

/// `Content.parts` (empty when absent or not an array).
pub fn parts(c: &Content) -> &[Value] {
    c.get("parts").and_then(Value::as_array).unwrap_or(&[])
}

/// True when the Content has a `parts` key holding an array.
pub fn has_parts_array(c: &Content) -> bool {
    c.get("parts").and_then(Value::as_array).is_some()
}

/// A part's `text` when it is a string.
pub fn part_text(p: &Value) -> Option<&json::JsStr> {
    p.get("text").and_then(Value::as_js_str)
}

pub fn is_thought(p: &Value) -> bool {
    p.get("thought").is_some_and(Value::is_truthy)
}

/// The part's `functionCall` when truthy.
pub fn function_call(p: &Value) -> Option<&Value> {
    p.get("functionCall").filter(|v| v.is_truthy())
}

/// The part's `functionResponse` when truthy.
pub fn function_response(p: &Value) -> Option<&Value> {
    p.get("functionResponse").filter(|v| v.is_truthy())
}

pub fn has_function_call(c: &Content) -> bool {
    parts(c).iter().any(|p| function_call(p).is_some())
}

pub fn has_function_response(c: &Content) -> bool {
    parts(c).iter().any(|p| function_response(p).is_some())
}

/// `{role, parts:[{text}]}`.
pub fn text_content(role: &str, text: &str) -> Content {
    Value::object([("role", Value::str(role)), ("parts", Value::Array(vec![text_part(text)]))])
}

pub fn user_text(text: &str) -> Content {
    text_content("user", text)
}

pub fn model_text(text: &str) -> Content {
    text_content("model", text)
}

pub fn text_part(text: &str) -> Value {
    Value::object([("text", Value::str(text))])
}

/// Concatenated non-thought text of a Content (for display, probes and retention checks).
pub fn visible_text(c: &Content) -> String {
    let mut out = String::new();
    for p in parts(c) {
        if let Some(t) = part_text(p) {
            if !is_thought(p) {
                out.push_str(&t.to_str_lossy());
            }
        }
    }
    out
}

/// Every part of every Content, in order (the reference's `history.flatMap(c => c.parts)`).
pub fn all_parts(history: &[Content]) -> impl Iterator<Item = &Value> {
    history.iter().flat_map(|c| parts(c).iter())
}

/// A shape problem in a history, with the JSON path where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ShapeError {
    pub path: String,
    pub message: String,
}

/// Checks that `v` is a `Content[]` the algorithms can read: an array of objects whose `role`, when present,
/// is a string and whose `parts`, when present, is an array of objects. Unknown fields are allowed.
pub fn validate_shape(v: &Value) -> Result<(), ShapeError> {
    let root = JsonPath::root();
    let items = v.as_array().ok_or_else(|| ShapeError {
        path: root.to_string(),
        message: format!("expected an array of Content objects, found {}", v.kind()),
    })?;
    for (i, c) in items.iter().enumerate() {
        let at = root.index(i);
        if c.as_object().is_none() {
            return Err(ShapeError {
                path: at.to_string(),
                message: format!("expected a Content object, found {}", c.kind()),
            });
        }
        if let Some(r) = c.get("role") {
            if r.as_js_str().is_none() {
                return Err(ShapeError {
                    path: at.key("role").to_string(),
                    message: format!("expected a string role, found {}", r.kind()),
                });
            }
        }
        if let Some(ps) = c.get("parts") {
            let Some(ps) = ps.as_array() else {
                return Err(ShapeError {
                    path: at.key("parts").to_string(),
                    message: format!("expected an array of parts, found {}", ps.kind()),
                });
            };
            for (j, p) in ps.iter().enumerate() {
                if p.as_object().is_none() {
                    return Err(ShapeError {
                        path: at.key("parts").index(j).to_string(),
                        message: format!("expected a Part object, found {}", p.kind()),
                    });
                }
            }
        }
    }
    Ok(())
}

/// An error loading a history file: names the file, and the line/column or JSON path.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}: not valid JSON: {source}")]
    Json { file: String, source: json::ParseError },
    #[error("{file}: wrong shape at {source}")]
    Shape { file: String, source: ShapeError },
}

/// Parses and validates a `Content[]` held in memory; `file` names it in errors.
pub fn parse_history(bytes: &[u8], file: &str) -> Result<Vec<Content>, LoadError> {
    let v = json::parse(bytes).map_err(|source| LoadError::Json { file: file.to_string(), source })?;
    validate_shape(&v).map_err(|source| LoadError::Shape { file: file.to_string(), source })?;
    match v {
        Value::Array(items) => Ok(items),
        _ => unreachable!("validated as an array"),
    }
}

/// Reads a `Content[]` JSON file.
pub fn load_history(path: &Path) -> Result<Vec<Content>, LoadError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io { file: file.clone(), source })?;
    parse_history(&bytes, &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_errors_name_the_path() {
        let v = json::parse_str(r#"[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[1]}]"#).unwrap();
        let e = validate_shape(&v).unwrap_err();
        assert_eq!(e.path, "$[1].parts[0]");
        let v = json::parse_str(r#"[{"role":5}]"#).unwrap();
        assert_eq!(validate_shape(&v).unwrap_err().path, "$[0].role");
        let v = json::parse_str(r#"{"role":"user"}"#).unwrap();
        assert!(validate_shape(&v).unwrap_err().message.contains("array"));
    }
}
