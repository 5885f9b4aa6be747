//! OpenAI-style chat messages with tool calls: mini-swe-agent trajectories (`{messages, info}`),
//! tau-bench result files (`[{task_id, trial, traj}]`), bare message arrays, and the message list of
//! SWE-agent function-calling trajectories (via `convert_messages`).

use super::{
    args_from_string, as_array, as_object, content_text, function_response_part, opt_str, parse_json, req, stem_id,
    Format, HistoryBuilder, Imported,
};
use crate::json::{JsonPath, Value};
use crate::{Conversation, ConversationMeta, DatasetError};

/// Options for message-list quirks of particular agents.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Quirks {
    /// SWE-agent thought-action: an assistant message with an `action` and no `tool_calls` runs that
    /// action in a shell; the next `user` message is its output.
    pub actions_as_shell_calls: bool,
}

/// Name of the tool thought-action agents' commands are attributed to.
pub const SHELL_TOOL: &str = "shell";

pub fn parse(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let v = parse_json(bytes, file)?;
    let root = JsonPath::root();
    let mut imported = Imported::default();
    match &v {
        Value::Array(items) if items.first().is_some_and(|f| f.get("traj").is_some()) => {
            // tau-bench: one conversation per (task, trial).
            for (i, item) in items.iter().enumerate() {
                let at = root.index(i);
                as_object(item, &at, file)?;
                imported.conversations.push(tau_conversation(item, &at, file)?);
            }
        }
        Value::Array(messages) => {
            let mut c = convert_messages(messages, &root, file, Quirks::default())?;
            c.meta.id = stem_id(file);
            imported.conversations.push(c);
        }
        Value::Object(_) if v.get("traj").is_some() => imported.conversations.push(tau_conversation(&v, &root, file)?),
        Value::Object(_) => {
            let messages = as_array(req(&v, "messages", &root, file)?, &root.key("messages"), file)?;
            let mut c = convert_messages(messages, &root.key("messages"), file, Quirks::default())?;
            c.meta.id = match opt_str(&v, "instance_id", &root, file)? {
                Some(id) => super::sanitize_id(&id),
                None => stem_id(file),
            };
            if let Some(info) = v.get("info") {
                for key in ["exit_status", "mini_version"] {
                    if let Some(x) = info.get(key).filter(|x| !x.is_null()) {
                        extra(&mut c).insert(key, x.clone());
                    }
                }
                if let Some(model) = info.get("config").and_then(|c| c.get("model")).and_then(|m| m.get("model_name")) {
                    extra(&mut c).insert("model", model.clone());
                }
            }
            if let Some(f) = v.get("trajectory_format").filter(|x| !x.is_null()) {
                extra(&mut c).insert("trajectory_format", f.clone());
            }
            imported.conversations.push(c);
        }
        other => {
            return Err(DatasetError::field(
                file,
                &root,
                format!("expected a message array or an object with \"messages\", found {}", other.kind()),
            ))
        }
    }
    Ok(imported)
}

fn extra(c: &mut Conversation) -> &mut Value {
    c.meta.extra.get_or_insert_with(Value::empty_object)
}

fn tau_conversation(item: &Value, at: &JsonPath, file: &str) -> Result<Conversation, DatasetError> {
    let messages = as_array(req(item, "traj", at, file)?, &at.key("traj"), file)?;
    let mut c = convert_messages(messages, &at.key("traj"), file, Quirks::default())?;
    let number = |key: &str| item.get(key).and_then(Value::as_f64).filter(|x| x.fract() == 0.0 && *x >= 0.0);
    c.meta.id = match (number("task_id"), number("trial")) {
        (Some(t), Some(r)) => format!("task{t:03}-trial{r}"),
        _ => format!("{}-{}", stem_id(file), at.to_string().trim_start_matches("$[").trim_end_matches(']')),
    };
    for key in ["task_id", "trial", "reward"] {
        if let Some(x) = item.get(key).filter(|x| !x.is_null()) {
            extra(&mut c).insert(key, x.clone());
        }
    }
    if let Some(instruction) = item.get("info").and_then(|i| i.get("task")).and_then(|t| t.get("instruction")) {
        extra(&mut c).insert("instruction", instruction.clone());
    }
    Ok(c)
}

/// Converts one OpenAI chat message list. `at` is the path of the list, for errors.
pub(crate) fn convert_messages(
    messages: &[Value],
    at: &JsonPath,
    file: &str,
    quirks: Quirks,
) -> Result<Conversation, DatasetError> {
    let mut converter = MessageConverter::new(file, quirks);
    for (i, m) in messages.iter().enumerate() {
        converter.message(m, &at.index(i))?;
    }
    Ok(converter.finish())
}

/// The state of a message list being converted, one message at a time.
struct MessageConverter<'f> {
    file: &'f str,
    quirks: Quirks,
    b: HistoryBuilder,
    /// `system` / `developer` texts, joined into the system instruction.
    system: Vec<String>,
    /// The text of an `exit` message (mini-swe-agent's last one), kept in `meta.extra`.
    exit: Option<Value>,
    /// Thought-action: the id of the shell call waiting for its output, if any.
    pending_action: Option<String>,
    action_count: usize,
}

impl<'f> MessageConverter<'f> {
    fn new(file: &'f str, quirks: Quirks) -> Self {
        MessageConverter {
            file,
            quirks,
            b: HistoryBuilder::default(),
            system: Vec::new(),
            exit: None,
            pending_action: None,
            action_count: 0,
        }
    }

    /// Converts the message at `mat`, dispatching on its role.
    fn message(&mut self, m: &Value, mat: &JsonPath) -> Result<(), DatasetError> {
        let file = self.file;
        as_object(m, mat, file)?;
        let role = match m.get("role") {
            Some(Value::String(r)) => r.to_str_lossy().into_owned(),
            Some(other) => {
                return Err(DatasetError::field(
                    file,
                    &mat.key("role"),
                    format!("expected a string, found {}", other.kind()),
                ))
            }
            None => return Err(DatasetError::field(file, &mat.key("role"), "missing")),
        };
        let text = content_text(m.get("content").unwrap_or(&Value::Null), &mat.key("content"), file)?;
        match role.as_str() {
            "system" | "developer" => self.system.push(text),
            "user" => self.user(&text),
            "assistant" => self.assistant(m, mat, text)?,
            "tool" | "function" => self.tool_response(m, mat, &text)?,
            "exit" => self.exit = Some(Value::str(&text)),
            other => {
                return Err(DatasetError::field(
                    file,
                    &mat.key("role"),
                    format!("unknown role {other:?} (expected system, user, assistant, tool or exit)"),
                ))
            }
        }
        Ok(())
    }

    /// A user message: the output of a pending thought-action shell call, else a plain user turn.
    fn user(&mut self, text: &str) {
        if let Some(id) = self.pending_action.take() {
            let response = Value::object([("output", Value::str(text))]);
            self.b.push("user", vec![function_response_part(Some(&id), SHELL_TOOL, response)]);
        } else {
            self.b.push_text("user", text);
        }
    }

    /// An assistant message: its text (or thought-action pair) and its tool calls, as one model turn.
    fn assistant(&mut self, m: &Value, mat: &JsonPath, text: String) -> Result<(), DatasetError> {
        let file = self.file;
        self.pending_action = None;
        let calls = match m.get("tool_calls") {
            None | Some(Value::Null) => &[][..],
            Some(v) => as_array(v, &mat.key("tool_calls"), file)?,
        };
        let mut parts = Vec::new();
        if calls.is_empty() && self.quirks.actions_as_shell_calls {
            self.thought_action(m, mat, text, &mut parts)?;
        } else if !text.trim().is_empty() {
            parts.push(crate::history::text_part(&text));
        }
        for (j, call) in calls.iter().enumerate() {
            parts.push(self.tool_call(call, &mat.key("tool_calls").index(j))?);
        }
        self.b.push("model", parts);
        Ok(())
    }

    /// SWE-agent thought-action: the thought as text, the action as a shell call whose output is the next
    /// user message.
    fn thought_action(
        &mut self,
        m: &Value,
        mat: &JsonPath,
        text: String,
        parts: &mut Vec<Value>,
    ) -> Result<(), DatasetError> {
        let file = self.file;
        let thought = opt_str(m, "thought", mat, file)?.unwrap_or(text);
        if !thought.trim().is_empty() {
            parts.push(crate::history::text_part(thought.trim_end()));
        }
        if let Some(action) = opt_str(m, "action", mat, file)?.filter(|a| !a.trim().is_empty()) {
            self.action_count += 1;
            let id = format!("action-{}", self.action_count);
            let args = Value::object([("command", Value::str(action.trim_end_matches('\n')))]);
            parts.push(self.b.call(Some(&id), SHELL_TOOL, args));
            self.pending_action = Some(id);
        }
        Ok(())
    }

    /// One entry of an assistant message's `tool_calls`, at `cat`, as a functionCall part.
    fn tool_call(&mut self, call: &Value, cat: &JsonPath) -> Result<Value, DatasetError> {
        let file = self.file;
        as_object(call, cat, file)?;
        let id = opt_str(call, "id", cat, file)?;
        let function = as_object(req(call, "function", cat, file)?, &cat.key("function"), file)?;
        let name = super::req_str(function, "name", &cat.key("function"), file)?;
        let args = match function.get("arguments") {
            Some(Value::String(s)) => args_from_string(&s.to_str_lossy()),
            Some(obj @ Value::Object(_)) => obj.clone(),
            None | Some(Value::Null) => Value::empty_object(),
            Some(other) => Value::object([("raw", other.clone())]),
        };
        Ok(self.b.call(id.as_deref(), &name, args))
    }

    /// A `tool` / `function` message: the response to the earlier call its `tool_call_id` names.
    fn tool_response(&mut self, m: &Value, mat: &JsonPath, text: &str) -> Result<(), DatasetError> {
        let file = self.file;
        let ids: Vec<String> = match (m.get("tool_call_id"), m.get("tool_call_ids")) {
            (Some(Value::String(id)), _) => vec![id.to_str_lossy().into_owned()],
            (_, Some(Value::Array(ids))) => ids.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let Some(id) = ids.first() else {
            return Err(DatasetError::field(
                file,
                &mat.key("tool_call_id"),
                "tool message without a tool_call_id: it answers no tool call",
            ));
        };
        let Some(name) = self.b.call_name(id).map(str::to_string) else {
            return Err(DatasetError::field(
                file,
                &mat.key("tool_call_id"),
                format!("tool response answers no earlier tool call (no call has id {id:?})"),
            ));
        };
        let response = Value::object([("output", Value::str(text))]);
        self.b.push("user", vec![function_response_part(Some(id), &name, response)]);
        Ok(())
    }

    fn finish(self) -> Conversation {
        let (history, recorded_prompt_tokens) = self.b.finish();
        let mut meta = ConversationMeta {
            format: Format::OpenaiChat.name().into(),
            path: Some(self.file.to_string()),
            ..Default::default()
        };
        if let Some(exit) = self.exit {
            meta.extra = Some(Value::object([("exit", exit)]));
        }
        let system_instruction = (!self.system.is_empty()).then(|| self.system.join("\n\n"));
        Conversation { meta, system_instruction, tools: None, history, recorded_prompt_tokens, ..Default::default() }
    }
}
