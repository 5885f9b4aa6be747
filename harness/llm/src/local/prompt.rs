//! From a request to the model's prompt text: `Content[]` become chat messages (function calls and responses
//! as text, since the embedded model has no tool format), then the GGUF's own chat template renders them.

use crate::history::{self, Content};
use crate::json;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

fn content_text(c: &Content) -> String {
    let mut pieces = Vec::new();
    for p in history::parts(c) {
        if let Some(t) = history::part_text(p) {
            if !history::is_thought(p) {
                pieces.push(t.to_str_lossy().into_owned());
            }
        } else if let Some(fc) = history::function_call(p) {
            let name = fc.get("name").and_then(|n| n.as_str()).unwrap_or("?");
            let args = fc.get("args").map(json::to_string).unwrap_or_else(|| "{}".into());
            pieces.push(format!("[function call] {name}({args})"));
        } else if let Some(fr) = history::function_response(p) {
            let name = fr.get("name").and_then(|n| n.as_str()).unwrap_or("?");
            let response = fr.get("response").map(json::to_string).unwrap_or_else(|| "{}".into());
            pieces.push(format!("[function response] {name}: {response}"));
        }
    }
    pieces.join("\n")
}

/// System instruction → `system`; `model` → `assistant`; everything else → `user`. Turns with nothing to
/// show are dropped.
pub fn chat_messages(system: Option<&str>, contents: &[Content]) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    if let Some(s) = system {
        out.push(ChatMessage { role: "system".into(), content: s.to_string() });
    }
    for c in contents {
        let text = content_text(c);
        if text.is_empty() {
            continue;
        }
        let role = if history::is_model(c) { "assistant" } else { "user" };
        out.push(ChatMessage { role: role.into(), content: text });
    }
    out
}

/// A chat template: the GGUF's Jinja template when it renders, else plain ChatML.
pub struct ChatTemplate {
    source: Option<String>,
}

impl ChatTemplate {
    pub fn new(source: Option<String>) -> Self {
        ChatTemplate { source }
    }

    pub fn render(&self, messages: &[ChatMessage]) -> String {
        if let Some(src) = &self.source {
            match render_jinja(src, messages) {
                Ok(s) => return s,
                Err(e) => tracing::warn!("GGUF chat template failed ({e}); falling back to ChatML"),
            }
        }
        chatml(messages)
    }
}

fn render_jinja(src: &str, messages: &[ChatMessage]) -> Result<String, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.add_function("raise_exception", |msg: String| -> Result<String, minijinja::Error> {
        Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg))
    });
    env.add_template("chat", src)?;
    env.get_template("chat")?.render(minijinja::context! {
        messages => messages,
        add_generation_prompt => true,
        bos_token => "",
        eos_token => "<|im_end|>",
    })
}

fn chatml(messages: &[ChatMessage]) -> String {
    let mut s = String::new();
    for m in messages {
        s.push_str(&format!("<|im_start|>{}\n{}<|im_end|>\n", m.role, m.content));
    }
    s.push_str("<|im_start|>assistant\n");
    s
}
