//! SWE-agent `.traj` files. The `history` list is what the model saw; thought-action runs put commands in
//! the assistant's `action` (and observations come back as `user` messages), which become calls of a
//! shell tool and their responses; function-calling runs carry OpenAI `tool_calls` already.

use super::openai::{convert_messages, Quirks};
use super::{as_array, as_object, parse_json, req, stem_id, Format, Imported};
use crate::json::{JsonPath, Value};
use crate::DatasetError;

pub fn parse(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let v = parse_json(bytes, file)?;
    let root = JsonPath::root();
    as_object(&v, &root, file)?;
    let messages = as_array(req(&v, "history", &root, file)?, &root.key("history"), file)?;
    let mut c = convert_messages(messages, &root.key("history"), file, Quirks { actions_as_shell_calls: true })?;
    c.meta.id = stem_id(file);
    c.meta.format = Format::SweAgent.name().into();
    let function_calling = messages.iter().any(|m| m.get("tool_calls").is_some_and(|t| t.is_truthy()));
    let mut extra = c.meta.extra.take().unwrap_or_else(Value::empty_object);
    extra.insert("style", Value::str(if function_calling { "function-calling" } else { "thought-action" }));
    if let Some(info) = v.get("info") {
        for key in ["exit_status", "submission"] {
            if let Some(x) = info.get(key).filter(|x| !x.is_null()) {
                extra.insert(key, x.clone());
            }
        }
    }
    c.meta.extra = Some(extra);
    Ok(Imported { conversations: vec![c], warnings: Vec::new() })
}
