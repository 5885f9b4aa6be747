//! aider `.aider.chat.history.md`: sessions start at `# aider chat started at …`; `#### ` lines are the
//! user's input, `> ` lines are tool/system output shown in the terminal, other lines are the assistant.
//! Tool output is kept as user-side text (it is what the user saw before the next turn, as SWE-agent
//! observations are), merged with the next user input.

use super::{sanitize_id, stem_id, Format, HistoryBuilder, Imported};
use crate::error::utf8;
use crate::json::Value;
use crate::{Conversation, ConversationMeta, DatasetError};

const SESSION_HEADER: &str = "# aider chat started at";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Output,
    Assistant,
}

pub fn parse(bytes: &[u8], file: &str) -> Result<Imported, DatasetError> {
    let text = utf8(bytes, file)?;
    let mut imported = Imported::default();
    let mut session: Option<Session> = None;
    let mut sessions = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(started) = line.strip_prefix(SESSION_HEADER) {
            sessions.extend(session.take());
            session = Some(Session::new(started.trim(), n + 1));
            continue;
        }
        let Some(s) = session.as_mut() else {
            if !line.trim().is_empty() && sessions.is_empty() && imported.warnings.is_empty() {
                imported.warnings.push(format!("{file}: line {}: text before the first session header ignored", n + 1));
            }
            continue;
        };
        // aider ends user and output lines with two spaces (a Markdown hard break); they are not content.
        // `>>>>>>> REPLACE` in an edit block is not a quote, hence the required space.
        let (kind, body) = if let Some(rest) = line.strip_prefix("#### ").or((line == "####").then_some("")) {
            (Kind::User, hard_break(rest))
        } else if let Some(rest) = line.strip_prefix("> ").or((line == ">").then_some("")) {
            (Kind::Output, hard_break(rest))
        } else if line.trim().is_empty() {
            // Blank lines belong to whatever block they are in, and end a quoted paragraph.
            s.lazy_output = false;
            (s.kind, "")
        } else if s.lazy_output {
            // Markdown lazy continuation: multi-line tool output is quoted on its first line only.
            (Kind::Output, hard_break(line))
        } else {
            (Kind::Assistant, line)
        };
        if kind == Kind::Output && !line.trim().is_empty() {
            s.lazy_output = true;
        }
        s.line(kind, body);
    }
    sessions.extend(session);
    if sessions.is_empty() {
        return Err(DatasetError::whole(file, format!("no \"{SESSION_HEADER}\" line; not an aider chat history")));
    }
    let base = stem_id(file);
    for s in sessions {
        let started = s.started.clone();
        let header_line = s.header_line;
        let (history, recorded_prompt_tokens) = s.finish();
        if history.is_empty() {
            continue;
        }
        let id = sanitize_id(&format!("{base}-{}", started.replace([' ', ':'], "-")));
        let meta = ConversationMeta {
            id,
            format: Format::Aider.name().into(),
            path: Some(file.to_string()),
            title: Some(format!("aider chat started at {started}")),
            extra: Some(Value::object([("startedAt", Value::str(&started)), ("line", Value::num(header_line as f64))])),
            ..Default::default()
        };
        imported.conversations.push(Conversation { meta, history, recorded_prompt_tokens, ..Default::default() });
    }
    dedup_ids(&mut imported.conversations);
    Ok(imported)
}

/// Two sessions started in the same second get `-2`, `-3`, … suffixes.
fn dedup_ids(conversations: &mut [Conversation]) {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for c in conversations {
        let n = seen.entry(c.meta.id.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            c.meta.id = format!("{}-{n}", c.meta.id);
        }
    }
}

/// The prompt size from aider's `Tokens: 12,301 sent, 595 received. …` line (`2.5k sent` is rounded by
/// aider to 100 tokens; we keep it as 2500).
fn tokens_sent(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("Tokens: ")?;
    let (number, _) = rest.split_once(" sent")?;
    let number = number.replace(',', "");
    match number.strip_suffix('k') {
        Some(k) => {
            let x: f64 = k.parse().ok()?;
            (x.is_finite() && (0.0..1e9).contains(&x)).then(|| (x * 1000.0).round() as u64)
        }
        None => number.parse().ok(),
    }
}

fn hard_break(s: &str) -> &str {
    s.strip_suffix("  ").unwrap_or(s)
}

struct Session {
    started: String,
    header_line: usize,
    kind: Kind,
    /// Inside a quoted (`> `) paragraph, where unquoted lines still belong to the quote.
    lazy_output: bool,
    block: Vec<String>,
    builder: HistoryBuilder,
}

impl Session {
    fn new(started: &str, header_line: usize) -> Self {
        Session {
            started: started.into(),
            header_line,
            kind: Kind::Output,
            lazy_output: false,
            block: Vec::new(),
            builder: HistoryBuilder::default(),
        }
    }

    fn line(&mut self, kind: Kind, body: &str) {
        if kind != self.kind {
            self.flush();
            self.kind = kind;
        }
        if kind == Kind::Output && self.builder.last_role() == Some("model") {
            if let Some(n) = tokens_sent(body) {
                self.builder.set_last_tokens(n);
            }
        }
        self.block.push(body.to_string());
    }

    fn flush(&mut self) {
        let text = self.block.join("\n");
        self.block.clear();
        let text = text.trim_matches('\n');
        let role = if self.kind == Kind::Assistant { "model" } else { "user" };
        self.builder.push_text(role, text);
    }

    fn finish(mut self) -> (Vec<crate::history::Content>, Vec<Option<u64>>) {
        self.flush();
        self.builder.finish()
    }
}
