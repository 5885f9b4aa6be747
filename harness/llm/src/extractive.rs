//! `extractive`: a deterministic rule-based baseline that calls no LLM — the agent-history analogue of
//! Lead-3 in news summarisation. Its outputs are a floor to compare models against, not summaries.
//!
//! As a summarizer (the system instruction holds an XML template such as `<state_snapshot>` with child
//! sections) it picks content by generic salience, with no vocabulary of its own: the history is cut into
//! units (sentences of user and model text, tool calls, lines of tool output), each scored by position
//! (primacy of the first request, recency), identifier density (tokens with digits, paths, `snake_case`,
//! `CamelCase`, dotted names) and the speaker, then chosen greedily for novelty (share of terms not yet
//! covered) within a character budget, and filed under the template's sections by the unit's origin. For a
//! verification request it re-reads the summarised part for identifiers, paths, numbers, error lines and
//! user sentences that the snapshot lacks and adds the most salient within a budget. As an answerer
//! (anything else) it returns the passage of the context with the best lexical overlap with the last user
//! turn.

use crate::history::{self, Content};
use crate::json::{self, Value};
use crate::{LanguageModel, LlmError, LlmRequest, LlmResponse, Usage};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Sections used when a summarization request names none (the pre-template v0 prompt).
const DEFAULT_SECTIONS: &[&str] =
    &["overall_goal", "key_knowledge", "file_system_state", "recent_actions", "current_plan"];
const ROOT_TAGS: &[&str] = &["state_snapshot", "compressed_chat_history"];
/// Characters of fresh units a snapshot may hold (the previous snapshot's items come on top).
const SUMMARY_BUDGET_CHARS: usize = 3000;
/// Characters a verification pass may add.
const VERIFY_BUDGET_CHARS: usize = 900;
/// Items kept per section, newest last, when a previous snapshot is carried over.
const MAX_SECTION_ITEMS: usize = 14;
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
        let prompt_chars: usize = req.contents.iter().map(json::utf8_len).sum();
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
        // The previous model turn holds the snapshot under review; the history before it is what it summarised.
        if let Some(at) = req.contents[..history_end].iter().rposition(history::is_model) {
            let text = history::visible_text(&req.contents[at]);
            let snapshot = extract_root(&text, &root).unwrap_or(text);
            return verify(&req.contents[..at], &snapshot, &root, &sections);
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

fn str_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_js_str).map(|s| s.to_str_lossy().into_owned())
}

fn response_text(fr: &Value) -> String {
    let resp = fr.get("response");
    str_of(resp.and_then(|r| r.get("output")))
        .or_else(|| str_of(resp.and_then(|r| r.get("error"))).map(|e| format!("error: {e}")))
        .unwrap_or_else(|| resp.map(json::to_string).unwrap_or_default())
}

fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        cur.push(ch);
        // A stop ends a sentence only before whitespace (`src/main.rs` and `v1.2` stay whole).
        let stop = matches!(ch, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace());
        if stop || ch == '\n' {
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

/// Where a unit of the history comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    User,
    Model,
    Call,
    Output,
}

/// A sentence, tool call or output line, with its salience.
struct Unit {
    text: String,
    origin: Origin,
    /// Index of the Content it came from.
    at: usize,
    terms: BTreeSet<String>,
    /// Share of its tokens that look like identifiers.
    density: f64,
}

/// The words of a unit, stripped of surrounding punctuation.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !(c.is_alphanumeric() || matches!(c, '/' | '_' | '.' | '-'))))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| !w.is_empty())
}

/// A token that names something specific: it holds a digit, a path separator, an underscore, an inner dot
/// or an inner capital (`src/a.py`, `user_id`, `obj.attr`, `CamelCase`, `8080`, `3f2a9c1`).
fn is_identifier(w: &str) -> bool {
    let inner = w.char_indices().skip(1);
    w.chars().any(|c| c.is_ascii_digit() || c == '/' || c == '_')
        || inner.clone().any(|(i, c)| c == '.' && i + 1 < w.len())
        || inner.into_iter().any(|(_, c)| c.is_uppercase())
}

/// A token that looks like a file path (a separator, or a name with a short extension).
fn is_path(w: &str) -> bool {
    let ext = w.rsplit_once('.').is_some_and(|(stem, e)| {
        !stem.is_empty()
            && (1..=5).contains(&e.len())
            && e.chars().all(|c| c.is_ascii_alphanumeric())
            && e.chars().any(|c| c.is_ascii_alphabetic())
    });
    (w.contains('/') && w.chars().any(char::is_alphabetic) && !w.starts_with("http")) || ext
}

fn unit(text: &str, origin: Origin, at: usize) -> Option<Unit> {
    let text = clip(text, MAX_ITEM_CHARS);
    let ws: Vec<&str> = words(&text).collect();
    if ws.is_empty() {
        return None;
    }
    let density = ws.iter().filter(|w| is_identifier(w)).count() as f64 / ws.len() as f64;
    let terms = ws.iter().map(|w| w.to_lowercase()).filter(|w| w.chars().count() > 2).collect();
    Some(Unit { text, origin, at, terms, density })
}

/// The history cut into units, skipping previous snapshots (carried over separately).
fn units(contents: &[Content]) -> Vec<Unit> {
    let mut out = Vec::new();
    for (i, c) in contents.iter().enumerate() {
        let user = history::is_user(c);
        for p in history::parts(c) {
            if history::is_thought(p) {
                continue;
            }
            if let Some(t) = history::part_text(p) {
                let t = t.to_str_lossy();
                if ROOT_TAGS.iter().any(|r| t.contains(&format!("<{r}>"))) {
                    continue;
                }
                let origin = if user { Origin::User } else { Origin::Model };
                out.extend(sentences(&t).iter().filter_map(|s| unit(s, origin, i)));
            } else if let Some(fc) = history::function_call(p) {
                let name = str_of(fc.get("name")).unwrap_or_default();
                let args = fc.get("args").map(json::to_string).unwrap_or_default();
                out.extend(unit(&format!("{name} {}", clip(&args, 160)), Origin::Call, i));
            } else if let Some(fr) = history::function_response(p) {
                let text = response_text(fr);
                out.extend(text.lines().filter(|l| !l.trim().is_empty()).filter_map(|l| unit(l, Origin::Output, i)));
            }
        }
    }
    out
}

/// Salience before novelty: identifier density, recency, speaker; short fragments count half.
fn base_score(u: &Unit, n_contents: usize) -> f64 {
    let recency = (u.at + 1) as f64 / n_contents.max(1) as f64;
    let speaker = match u.origin {
        Origin::User => 0.25,
        Origin::Model | Origin::Call => 0.15,
        Origin::Output => 0.05,
    };
    let s = 0.45 * u.density + 0.35 * recency + speaker;
    if u.text.chars().count() < 20 {
        s * 0.5
    } else {
        s
    }
}

/// Most candidates considered by the greedy novelty pass (the best by base score).
const CANDIDATES: usize = 400;

/// Greedy selection for salience × novelty (share of terms not yet covered) within a character budget;
/// returns indices into `units` in history order.
fn select(units: &[Unit], n_contents: usize, budget: usize, covered: &mut BTreeSet<String>) -> Vec<usize> {
    let mut order: Vec<(f64, usize)> = units.iter().enumerate().map(|(i, u)| (base_score(u, n_contents), i)).collect();
    // Best first; ties to the later unit (later turns supersede earlier ones).
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    order.truncate(CANDIDATES);
    // Each candidate's terms not yet covered (counted with repeats), kept up to date as terms get covered:
    // where each term occurs among the candidates, and how often, so that choosing a unit updates only the
    // candidates sharing its terms instead of recounting every candidate's terms at every step.
    let mut uncovered: Vec<usize> = Vec::with_capacity(order.len());
    let mut postings: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (k, &(_, i)) in order.iter().enumerate() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for w in units[i].terms.iter().filter(|w| !covered.contains(*w)) {
            *counts.entry(w.as_str()).or_default() += 1;
        }
        uncovered.push(counts.values().sum());
        for (w, n) in counts {
            postings.entry(w).or_default().push((k, n));
        }
    }
    let mut taken = vec![false; order.len()];
    let mut chosen = Vec::new();
    let mut used = 0;
    loop {
        let best = order
            .iter()
            .enumerate()
            .filter(|&(k, &(_, i))| !taken[k] && used + units[i].text.len() <= budget)
            .map(|(k, &(s, i))| {
                let novel = uncovered[k] as f64 / units[i].terms.len().max(1) as f64;
                (s * novel, i, k)
            })
            .filter(|(v, _, _)| *v > 0.0)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let Some((_, i, k)) = best else { break };
        used += units[i].text.len();
        taken[k] = true;
        for w in &units[i].terms {
            if covered.insert(w.clone()) {
                for &(other, n) in postings.get(w.as_str()).map(Vec::as_slice).unwrap_or_default() {
                    uncovered[other] -= n;
                }
            }
        }
        chosen.push(i);
    }
    chosen.sort_unstable();
    chosen
}

/// What a template section holds, read from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Goal,
    Directives,
    Knowledge,
    Files,
    Actions,
    State,
    Other,
}

fn slot(section: &str) -> Slot {
    let n = section.to_lowercase();
    let has = |k: &[&str]| k.iter().any(|x| n.contains(x));
    if has(&["goal"]) {
        Slot::Goal
    } else if has(&["constraint"]) {
        Slot::Directives
    } else if has(&["artifact", "file"]) {
        // Before knowledge: `artifact` contains `fact`.
        Slot::Files
    } else if has(&["knowledge", "context", "fact"]) {
        Slot::Knowledge
    } else if has(&["action", "step"]) {
        Slot::Actions
    } else if has(&["plan", "task", "state", "progress"]) {
        Slot::State
    } else {
        Slot::Other
    }
}

/// The sections a unit may go to, in order of preference.
fn preferred(origin: Origin) -> &'static [Slot] {
    match origin {
        Origin::User => &[Slot::Directives, Slot::Knowledge, Slot::State, Slot::Other],
        Origin::Model => &[Slot::Knowledge, Slot::State, Slot::Other],
        Origin::Call => &[Slot::Actions, Slot::Knowledge, Slot::Other, Slot::State],
        Origin::Output => &[Slot::Knowledge, Slot::Actions, Slot::Other, Slot::State],
    }
}

/// The first section of the template that takes a unit of this origin.
fn home(origin: Origin, sections: &[String]) -> Option<usize> {
    preferred(origin).iter().find_map(|want| sections.iter().position(|s| slot(s) == *want))
}

fn summarize(contents: &[Content], root: &str, sections: &[String]) -> String {
    let previous = contents
        .iter()
        .filter(|c| history::is_user(c))
        .map(history::visible_text)
        .filter_map(|t| extract_root(&t, root).or_else(|| ROOT_TAGS.iter().find_map(|r| extract_root(&t, r))))
        .next_back();
    let units = units(contents);
    let first_request = units.iter().position(|u| u.origin == Origin::User);
    let mut covered: BTreeSet<String> = BTreeSet::new();
    if let Some(f) = first_request {
        covered.extend(units[f].terms.iter().cloned());
    }
    let chosen = select(&units, contents.len(), SUMMARY_BUDGET_CHARS, &mut covered);
    let mut fresh: Vec<Vec<String>> = vec![Vec::new(); sections.len()];
    for (k, name) in sections.iter().enumerate() {
        match slot(name) {
            // Primacy: the conversation's first request states the goal.
            Slot::Goal => fresh[k].extend(first_request.map(|f| units[f].text.clone())),
            Slot::Files => {
                let mut seen = BTreeSet::new();
                for u in units.iter().filter(|u| u.origin == Origin::Call) {
                    let tool = u.text.split_whitespace().next().unwrap_or_default();
                    let pieces =
                        u.text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '/' | '_' | '.' | '-' | '~')));
                    for w in pieces.map(|w| w.trim_end_matches('.')).filter(|w| is_path(w)) {
                        if seen.insert(w.to_string()) {
                            fresh[k].push(format!("- `{w}` ({tool})"));
                        }
                    }
                }
                let excess = fresh[k].len().saturating_sub(MAX_SECTION_ITEMS);
                fresh[k].drain(..excess);
            }
            Slot::State => {
                let last = |o: Origin| units.iter().rev().find(|u| u.origin == o);
                fresh[k].extend(last(Origin::User).map(|u| format!("- Latest request: {}", u.text)));
                fresh[k].extend(last(Origin::Model).map(|u| format!("- Latest note: {}", u.text)));
            }
            _ => {}
        }
    }
    for &i in &chosen {
        if Some(i) == first_request {
            continue;
        }
        if let Some(k) = home(units[i].origin, sections) {
            fresh[k].push(format!("- {}", units[i].text));
        }
    }
    let mut out = format!("<{root}>\n");
    for (k, name) in sections.iter().enumerate() {
        let mut items: Vec<String> = previous.as_deref().map(|p| previous_section(p, name)).unwrap_or_default();
        // A previous snapshot's goal stands unless the history has nothing to say.
        if slot(name) == Slot::Goal && !items.is_empty() {
            items.truncate(1);
        } else {
            for f in std::mem::take(&mut fresh[k]) {
                if !items.contains(&f) {
                    items.push(f);
                }
            }
            let excess = items.len().saturating_sub(MAX_SECTION_ITEMS);
            items.drain(..excess);
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

/// A unit reports a failure: an exception-style name (`ValueError`, `IOException`), or `error`/`failed`
/// as a word of a tool output.
fn reports_failure(u: &Unit) -> bool {
    words(&u.text).any(|w| {
        let camel_failure = (w.ends_with("Error") || w.ends_with("Exception")) && w.len() > 6;
        camel_failure || (u.origin == Origin::Output && matches!(w.to_lowercase().as_str(), "error" | "failed"))
    })
}

/// The verification pass: what the summarised part holds that the snapshot lacks (identifiers, paths,
/// numbers, failures, user sentences), most salient first, added within [`VERIFY_BUDGET_CHARS`].
fn verify(summarised: &[Content], snapshot: &str, root: &str, sections: &[String]) -> String {
    let lower = snapshot.to_lowercase();
    let units = units(summarised);
    let n = summarised.len();
    let mut scored: Vec<(f64, usize)> = Vec::new();
    for (i, u) in units.iter().enumerate() {
        if lower.contains(&u.text.to_lowercase()) {
            continue;
        }
        let missing_ids =
            words(&u.text).filter(|w| w.len() >= 3 && is_identifier(w) && !lower.contains(&w.to_lowercase())).count();
        let failure = reports_failure(u) as u8 as f64;
        let request = (u.origin == Origin::User) as u8 as f64;
        let weight = missing_ids.min(4) as f64 + 2.0 * failure + 1.5 * request;
        if weight > 0.0 {
            scored.push((weight * (1.0 + base_score(u, n)), i));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut added: Vec<Vec<String>> = vec![Vec::new(); sections.len()];
    let mut used = 0;
    for (_, i) in scored {
        let u = &units[i];
        if used + u.text.len() > VERIFY_BUDGET_CHARS {
            continue;
        }
        let Some(k) = home(u.origin, sections).or(sections.len().checked_sub(1)) else { break };
        let item = format!("- {}", u.text);
        if added[k].contains(&item) {
            continue;
        }
        used += u.text.len();
        added[k].push(item);
    }
    if added.iter().all(Vec::is_empty) {
        return snapshot.to_string();
    }
    let mut out = snapshot.to_string();
    for (k, name) in sections.iter().enumerate() {
        if added[k].is_empty() {
            continue;
        }
        let lines: String = added[k].iter().map(|l| format!("        {l}\n")).collect();
        let close = format!("    </{name}>");
        match out.find(&close) {
            Some(at) => out.insert_str(at, &lines),
            None => {
                let end = out.rfind(&format!("</{root}>")).unwrap_or(out.len());
                out.insert_str(end, &format!("    <{name}>\n{lines}    </{name}>\n"));
            }
        }
    }
    out
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

/// The passages of a context and an inverted index of their terms (term → the passages holding it, each
/// once, in order). Built once per context: the probes asked at one compression share it, and building it
/// again for every question was most of a run's time.
struct PassageIndex {
    passages: Vec<String>,
    postings: HashMap<String, Vec<u32>>,
}

impl PassageIndex {
    fn of(contents: &[Content]) -> PassageIndex {
        let passages = passages(contents);
        let mut postings: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, p) in passages.iter().enumerate() {
            for t in terms(p) {
                let list = postings.entry(t).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        }
        PassageIndex { passages, postings }
    }

    /// The index of `contents`, from the few most recent contexts when it is one of them. A context is
    /// recognised by its Contents: the probes of one event ask about the same stored Contents (shared, so
    /// comparing them is a pointer comparison each); an entry keeps its Contents alive, so a pointer can
    /// never be reused for other Contents while it is cached.
    fn cached(contents: &[Content]) -> Arc<PassageIndex> {
        type Recent = VecDeque<(Vec<Content>, Arc<PassageIndex>)>;
        static RECENT: Mutex<Recent> = Mutex::new(VecDeque::new());
        let same = |cached: &[Content]| {
            cached.len() == contents.len() && cached.iter().zip(contents).all(|(a, b)| a.same_as(b) || a == b)
        };
        if let Some((_, index)) = RECENT.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(c, _)| same(c)) {
            return Arc::clone(index);
        }
        let index = Arc::new(PassageIndex::of(contents));
        let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
        // A few: cells replay concurrently, each with its own context.
        if recent.len() >= 8 {
            recent.pop_front();
        }
        recent.push_back((contents.to_vec(), Arc::clone(&index)));
        index
    }
}

/// The passage sharing the most (idf-weighted) terms with the question; ties go to the later passage, since
/// later turns in an agent history supersede earlier ones. Each passage's score adds its query terms' weights
/// in the query's sorted order, so the sums are the same floating-point numbers whatever the index.
fn best_passage(contents: &[Content], question: &str) -> String {
    let query: BTreeSet<String> = terms(question).into_iter().collect();
    let index = PassageIndex::cached(contents);
    let n = index.passages.len() as f64;
    let mut scores = vec![0.0f64; index.passages.len()];
    for t in &query {
        let Some(holding) = index.postings.get(t) else { continue };
        let weight = (n / holding.len() as f64).ln() + 1.0;
        for &i in holding {
            scores[i as usize] += weight;
        }
    }
    let mut best: Option<(f64, usize)> = None;
    for (i, &score) in scores.iter().enumerate() {
        if score > 0.0 && best.is_none_or(|(b, _)| score >= b) {
            best = Some((score, i));
        }
    }
    match best {
        Some((_, i)) => clip(&index.passages[i], 1000),
        None => "No passage of the context matches the question.".into(),
    }
}
