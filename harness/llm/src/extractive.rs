//! `extractive`: a deterministic rule-based baseline that calls no LLM — the agent-history analogue of
//! Lead-3 in news summarisation. Its outputs are a floor to compare models against, not summaries.
//!
//! As a summarizer (the system instruction holds an XML template such as `<state_snapshot>` with child
//! sections) it fills each requested section from the history by rules: the goal from the first user request,
//! constraints from user directives, the artifact trail from tool calls naming files, recent actions from
//! the last tool calls, the task state from the user's requests. For a verification request it repeats the
//! previous snapshot. As an answerer (anything else) it returns the passage of the context with the best
//! lexical overlap with the last user turn.

use crate::history::{self, Content};
use crate::json::{self, Value};
use crate::{LanguageModel, LlmError, LlmRequest, LlmResponse, Usage};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet};

/// Sections used when a summarization request names none (the pre-template v0 prompt).
const DEFAULT_SECTIONS: &[&str] =
    &["overall_goal", "key_knowledge", "file_system_state", "recent_actions", "current_plan"];
const ROOT_TAGS: &[&str] = &["state_snapshot", "compressed_chat_history"];
/// Words that mark a user sentence as a directive.
const DIRECTIVE_MARKERS: &[&str] = &[
    "must",
    "don't",
    "do not",
    "dont",
    "always",
    "never",
    "should",
    "shouldn't",
    "only",
    "avoid",
    "make sure",
    "ensure",
    "required",
    "require",
    "prefer",
    "instead of",
    "keep",
    "without",
];
const PATH_KEYS: &[&str] = &["path", "file_path", "absolute_path", "dir_path", "filename", "file", "directory"];
const RECENT_ACTIONS: usize = 6;
const MAX_ITEM_CHARS: usize = 240;

#[derive(Debug, Default)]
pub struct ExtractiveModel;

impl ExtractiveModel {
    pub fn new() -> Self {
        ExtractiveModel
    }
}

#[async_trait]
impl LanguageModel for ExtractiveModel {
    fn spec(&self) -> &str {
        "extractive"
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let text = respond(req);
        let prompt_chars: usize = req.contents.iter().map(|c| json::to_string(c).len()).sum();
        Ok(LlmResponse {
            usage: Usage {
                prompt_tokens: prompt_chars as u64 / 4,
                output_tokens: text.len() as u64 / 4,
                thought_tokens: 0,
            },
            text,
            thoughts: String::new(),
            finish_reason: Some("STOP".into()),
        })
    }
}

/// The baseline's answer to a request (pure function, exposed for tests and reports).
pub fn respond(req: &LlmRequest) -> String {
    let last_user = req.contents.iter().rposition(history::is_user);
    let question = last_user.map(|i| history::visible_text(&req.contents[i])).unwrap_or_default();
    let template = req.system_instruction.as_deref().and_then(parse_template);
    let asks_summary = template.is_some() || question.to_lowercase().contains("summar");
    if !asks_summary {
        let context = &req.contents[..last_user.unwrap_or(req.contents.len())];
        return best_passage(context, &question);
    }
    let (root, sections) = template
        .unwrap_or_else(|| ("state_snapshot".to_string(), DEFAULT_SECTIONS.iter().map(|s| s.to_string()).collect()));
    let history_end = last_user.unwrap_or(req.contents.len());
    if is_verification(&question) {
        // The previous model turn holds the snapshot under review; the baseline stands by it.
        if let Some(prev) = req.contents[..history_end].iter().rev().find(|c| history::is_model(c)) {
            let text = history::visible_text(prev);
            return extract_root(&text, &root).unwrap_or(text);
        }
    }
    summarize(&req.contents[..history_end], &root, &sections)
}

fn is_verification(question: &str) -> bool {
    let q = question.to_lowercase();
    q.contains("critically evaluate")
        || (q.contains("evaluate") && q.contains("snapshot") && q.contains("you just generated"))
}

/// Finds the output template in a system instruction: the root tag whose opening and closing both appear,
/// and its child section tags in order.
pub fn parse_template(system: &str) -> Option<(String, Vec<String>)> {
    for root in ROOT_TAGS {
        let close = format!("</{root}>");
        let Some(end) = system.find(&close) else { continue };
        let open = format!("<{root}>");
        let Some(start) = system[..end].rfind(&open) else { continue };
        let body = strip_comments(&system[start + open.len()..end]);
        let mut sections = Vec::new();
        let mut rest = body.as_str();
        while let Some(i) = rest.find('<') {
            rest = &rest[i + 1..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let is_section =
                !name.is_empty() && rest[name.len()..].starts_with('>') && body.contains(&format!("</{name}>"));
            if is_section && !sections.contains(&name) {
                sections.push(name);
            }
        }
        if !sections.is_empty() {
            return Some((root.to_string(), sections));
        }
    }
    None
}

fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("<!--") {
        out.push_str(&rest[..i]);
        match rest[i..].find("-->") {
            Some(j) => rest = &rest[i + j + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

fn extract_root(text: &str, root: &str) -> Option<String> {
    let open = format!("<{root}>");
    let close = format!("</{root}>");
    let start = text.find(&open)?;
    let end = text[start..].find(&close)? + start + close.len();
    Some(text[start..end].to_string())
}

/// The items of a previous snapshot's section, one per non-empty line.
fn previous_section(snapshot: &str, name: &str) -> Vec<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let Some(start) = snapshot.find(&open) else { return Vec::new() };
    let body_start = start + open.len();
    let Some(len) = snapshot[body_start..].find(&close) else { return Vec::new() };
    strip_comments(&snapshot[body_start..body_start + len])
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn clip(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let mut c: String = flat.chars().take(max).collect();
        c.push('…');
        c
    }
}

/// A tool call with its (first) response.
struct ToolEvent {
    name: String,
    args: Value,
    result: Option<String>,
}

fn str_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_js_str).map(|s| s.to_str_lossy().into_owned())
}

fn response_text(fr: &Value) -> String {
    let resp = fr.get("response");
    str_of(resp.and_then(|r| r.get("output")))
        .or_else(|| str_of(resp.and_then(|r| r.get("error"))).map(|e| format!("error: {e}")))
        .unwrap_or_else(|| resp.map(json::to_string).unwrap_or_default())
}

fn tool_events(contents: &[Content]) -> Vec<ToolEvent> {
    let mut events: Vec<ToolEvent> = Vec::new();
    for c in contents {
        for p in history::parts(c) {
            if let Some(fc) = history::function_call(p) {
                events.push(ToolEvent {
                    name: str_of(fc.get("name")).unwrap_or_default(),
                    args: fc.get("args").cloned().unwrap_or(Value::Null),
                    result: None,
                });
            } else if let Some(fr) = history::function_response(p) {
                let name = str_of(fr.get("name")).unwrap_or_default();
                if let Some(ev) = events.iter_mut().rev().find(|e| e.result.is_none() && e.name == name) {
                    ev.result = Some(response_text(fr));
                }
            }
        }
    }
    events
}

fn paths_of(args: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(m) = args.as_object() {
        for (k, v) in m.iter() {
            let key = k.to_str_lossy();
            if PATH_KEYS.contains(&key.as_ref()) {
                if let Some(s) = v.as_js_str() {
                    out.push(s.to_str_lossy().into_owned());
                }
            } else if key == "paths" || key == "file_paths" {
                for p in v.as_array().unwrap_or(&[]) {
                    if let Some(s) = p.as_js_str() {
                        out.push(s.to_str_lossy().into_owned());
                    }
                }
            }
        }
    }
    out
}

/// What a tool did to a file, in the snapshot's vocabulary.
fn file_action(tool: &str) -> &'static str {
    let t = tool.to_lowercase();
    if t.contains("write") || t.contains("create") {
        "WRITTEN"
    } else if t.contains("replace") || t.contains("edit") || t.contains("patch") {
        "MODIFIED"
    } else if t.contains("delete") || t.contains("remove") {
        "DELETED"
    } else if t.contains("read") || t.contains("view") || t.contains("cat") {
        "READ"
    } else if t.contains("ls") || t.contains("list") || t.contains("glob") || t.contains("grep") || t.contains("search")
    {
        "SEARCHED"
    } else {
        "USED"
    }
}

fn user_requests(contents: &[Content]) -> Vec<String> {
    contents
        .iter()
        .filter(|c| history::is_user(c) && !history::has_function_response(c))
        .map(history::visible_text)
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty() && !ROOT_TAGS.iter().any(|r| t.contains(&format!("<{r}>"))))
        .collect()
}

fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in text.chars() {
        cur.push(ch);
        if matches!(ch, '.' | '!' | '?' | '\n') {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn directives(requests: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in requests {
        for s in sentences(r) {
            let lower = format!(" {} ", s.to_lowercase());
            let marked = DIRECTIVE_MARKERS
                .iter()
                .any(|m| lower.contains(&format!(" {m} ")) || lower.contains(&format!(" {m},")));
            let item = clip(&s, MAX_ITEM_CHARS);
            if marked && !out.contains(&item) {
                out.push(item);
            }
        }
    }
    out
}

fn summarize(contents: &[Content], root: &str, sections: &[String]) -> String {
    let previous = contents
        .iter()
        .filter(|c| history::is_user(c))
        .map(history::visible_text)
        .filter_map(|t| extract_root(&t, root).or_else(|| ROOT_TAGS.iter().find_map(|r| extract_root(&t, r))))
        .next_back();
    let requests = user_requests(contents);
    let events = tool_events(contents);
    let has_constraints = sections.iter().any(|s| s.contains("constraint"));
    let mut out = format!("<{root}>\n");
    for name in sections {
        let mut items: Vec<String> = previous.as_deref().map(|p| previous_section(p, name)).unwrap_or_default();
        let fresh = section_items(name, &requests, &events, has_constraints);
        // A previous snapshot's goal stands unless the history has nothing to say.
        if name.contains("goal") && !items.is_empty() {
            items.truncate(1);
        } else {
            for f in fresh {
                if !items.contains(&f) {
                    items.push(f);
                }
            }
        }
        out.push_str(&format!("    <{name}>\n"));
        for it in items {
            out.push_str(&format!("        {it}\n"));
        }
        out.push_str(&format!("    </{name}>\n"));
    }
    out.push_str(&format!("</{root}>"));
    out
}

fn section_items(name: &str, requests: &[String], events: &[ToolEvent], has_constraints: bool) -> Vec<String> {
    let n = name.to_lowercase();
    if n.contains("goal") {
        return requests.first().map(|r| vec![clip(r, 400)]).unwrap_or_default();
    }
    if n.contains("constraint") {
        return directives(requests).into_iter().map(|d| format!("- {d}")).collect();
    }
    if n.contains("knowledge") {
        let mut items: Vec<String> = if has_constraints {
            Vec::new()
        } else {
            directives(requests).into_iter().map(|d| format!("- {d}")).collect()
        };
        for ev in events {
            let Some(r) = &ev.result else { continue };
            let lower = r.to_lowercase();
            if ["error", "fail", "passed", "not found", "exception"].iter().any(|k| lower.contains(k)) {
                let item = format!("- `{}` reported: {}", ev.name, clip(r, 160));
                if !items.contains(&item) {
                    items.push(item);
                }
            }
        }
        items.truncate(12);
        return items;
    }
    if n.contains("artifact") || n.contains("file_system") || n.contains("files") {
        // Last action per path, in order of first appearance.
        let mut order: Vec<String> = Vec::new();
        let mut last: BTreeMap<String, &'static str> = BTreeMap::new();
        for ev in events {
            for p in paths_of(&ev.args) {
                if !last.contains_key(&p) {
                    order.push(p.clone());
                }
                let action = file_action(&ev.name);
                let keep_stronger = matches!(last.get(&p), Some(&"WRITTEN" | &"MODIFIED")) && action == "READ";
                if !keep_stronger {
                    last.insert(p, action);
                }
            }
        }
        return order
            .into_iter()
            .map(|p| {
                let action = last[&p];
                if n.contains("artifact") {
                    format!("- `{p}`: {action}")
                } else {
                    format!("- {action}: `{p}`")
                }
            })
            .collect();
    }
    if n.contains("recent") || n.contains("action") {
        let start = events.len().saturating_sub(RECENT_ACTIONS);
        return events[start..]
            .iter()
            .map(|ev| {
                let args = clip(&json::to_string(&ev.args), 120);
                match &ev.result {
                    Some(r) => format!("- Ran `{}` {args} → {}", ev.name, clip(r, 160)),
                    None => format!("- Called `{}` {args} (no result)", ev.name),
                }
            })
            .collect();
    }
    if n.contains("plan") || n.contains("task") || n.contains("state") {
        let k = requests.len();
        return requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mark = if i + 1 == k { "[IN PROGRESS]" } else { "[DONE]" };
                format!("{}. {mark} {}", i + 1, clip(r, 200))
            })
            .collect();
    }
    Vec::new()
}

const STOPWORDS: &[&str] = &[
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "is", "are", "was", "were", "be", "it", "that",
    "this", "with", "as", "at", "by", "what", "which", "who", "how", "did", "do", "does", "we", "you", "i", "my",
    "our", "from", "its", "has", "have", "had", "not", "can", "will", "would", "there", "their", "any", "all",
];

fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// Passages of the context: paragraphs of each turn's text, tool calls and tool outputs, long ones cut into
/// windows of lines.
fn passages(contents: &[Content]) -> Vec<String> {
    let mut out = Vec::new();
    let mut push_text = |text: &str| {
        for para in text.split("\n\n") {
            let mut window = String::new();
            for line in para.lines() {
                if window.len() + line.len() > 800 && !window.trim().is_empty() {
                    out.push(window.trim().to_string());
                    window.clear();
                }
                window.push_str(line);
                window.push('\n');
            }
            if !window.trim().is_empty() {
                out.push(window.trim().to_string());
            }
        }
    };
    for c in contents {
        for p in history::parts(c) {
            if let Some(t) = history::part_text(p) {
                if !history::is_thought(p) {
                    push_text(&t.to_str_lossy());
                }
            } else if let Some(fc) = history::function_call(p) {
                let name = str_of(fc.get("name")).unwrap_or_default();
                push_text(&format!("{name} {}", fc.get("args").map(json::to_string).unwrap_or_default()));
            } else if let Some(fr) = history::function_response(p) {
                push_text(&response_text(fr));
            }
        }
    }
    out
}

/// The passage sharing the most (idf-weighted) terms with the question; ties go to the later passage, since
/// later turns in an agent history supersede earlier ones.
fn best_passage(contents: &[Content], question: &str) -> String {
    let query: BTreeSet<String> = terms(question).into_iter().collect();
    let ps = passages(contents);
    let sets: Vec<BTreeSet<String>> = ps.iter().map(|p| terms(p).into_iter().collect()).collect();
    let n = ps.len() as f64;
    let mut best: Option<(f64, usize)> = None;
    for (i, set) in sets.iter().enumerate() {
        let score: f64 = query
            .iter()
            .filter(|t| set.contains(*t))
            .map(|t| {
                let df = sets.iter().filter(|s| s.contains(t)).count() as f64;
                (n / df).ln() + 1.0
            })
            .sum();
        if score > 0.0 && best.is_none_or(|(b, _)| score >= b) {
            best = Some((score, i));
        }
    }
    match best {
        Some((_, i)) => clip(&ps[i], 1000),
        None => "No passage of the context matches the question.".into(),
    }
}
