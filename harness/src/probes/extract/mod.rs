//! The deterministic extractor: probes read off a conversation's structure (tool calls, tool outputs, the
//! user's requests and directives, the agent's stated reasons and plans).
//!
//! Only probes whose evidence lies before the default split point are kept: the reference keeps roughly
//! the newest 30 % of the history verbatim, so evidence in that tail would survive any compression and the
//! probe would measure nothing.

use super::text_match;
use super::{Probe, ProbeFile, PROBE_FORMAT};
use crate::data::{ProbeKind, ProbeOrigin};
use crate::datasets::Conversation;
use crate::history::{self, Content};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// `findCompressSplitPoint` fraction under the default `preserve_fraction` of 0.3.
pub const DEFAULT_SPLIT_FRACTION: f64 = 0.7;

/// At most this many probes per kind and conversation, taken in history order.
fn cap(kind: ProbeKind) -> usize {
    match kind {
        ProbeKind::Recall => 5,
        ProbeKind::Artifact => 4,
        // Not extracted: the deterministic forms that name a directive with its object, a decision with its
        // whole reason, or a next step with what was being done are too rare to check against labels, and
        // looser ones gave fragments (`probes generate` drafts them where a model is configured).
        ProbeKind::Decision | ProbeKind::Continuation | ProbeKind::Constraint => 0,
    }
}

/// Golds are short: a fact, not a passage to copy (the lint's limit).
const MAX_GOLD_WORDS: usize = super::lint::MAX_GOLD_WORDS;
const MAX_HINT_CHARS: usize = 70;

macro_rules! re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($pat).expect("valid regex"));
    };
}

// Declared after `re!`, which it uses.
mod tool_calls;

use tool_calls::*;
pub use tool_calls::{patched_files, WRITE_TOOLS};

re!(AIDER_APPLIED, r"Applied edit to (\S+)");
re!(AIDER_COMMIT, r"(?m)^Commit ([0-9a-f]{7,40}) (.+)$");
re!(CAT_WRITE, r#"cat\s+(?:<<-?\s*['"]?\w+['"]?\s*)?>>?\s*([^\s;&|<>'"]+)(?:\s*<<-?\s*['"]?\w+['"]?)?"#);
// `-i`, `-i.bak`, or BSD/macOS `-i ''` (an empty backup suffix as its own argument) before the expression.
re!(SED_INPLACE, r#"sed\s+-i(?:\s+(?:''|"")|\S*)\s+(?:-e\s+)?('[^']*'|"[^"]*"|\S+)\s+([^\s;&|<>]+)"#);
re!(OPEN_FILE, r"\(Open file: ([^)\n]+)\)");
re!(RETURNCODE, r"<returncode>(-?\d+)</returncode>");
re!(
    ERROR_LINE,
    r"^\s*((?:[A-Za-z_][\w.]*(?:Error|Exception)|error|fatal|E\s)\b.*|.*(?:No such file or directory|command not found).*)$"
);
re!(
    PYTEST_SUMMARY,
    r"=+ ((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)(?:, )?)+)(?: in [\d.]+s)"
);
re!(UNITTEST_RAN, r"Ran (\d+) tests? in [\d.]+s");
/// Words that make a user sentence a directive: never a key term of a task's gold (a summarizer that copied
/// exactly such sentences would be rewarded by construction), and the `extractive` baseline must not share
/// them (a test checks).
pub const DIRECTIVE_WORDS: &[&str] =
    &["must", "don't", "do not", "never", "always", "make sure", "should not", "shouldn't", "avoid", "only"];

static DIRECTIVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\b({})\b", DIRECTIVE_WORDS.join("|"))).expect("valid regex"));

/// One candidate probe before filtering and numbering.
struct Candidate {
    kind: ProbeKind,
    question: String,
    gold: String,
    accept: Vec<String>,
    evidence: Vec<usize>,
    /// How the probe's key terms are chosen.
    terms: Terms,
    /// What an artifact's change introduced, by which its question names it.
    anchor: Option<Anchor>,
}

/// A candidate's key terms ([`super::grader`]'s term rule), besides an artifact's anchor ([`Candidate::terms`]).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Terms {
    /// None: the gold is graded verbatim (identifiers, numbers, errors) or as a path.
    Verbatim,
    /// The gold's own key terms ([`key_terms`]): a sentence a paraphrase may state.
    OfGold,
}

impl Candidate {
    /// The probe's key terms. An artifact named by a definition or identifier its change introduced carries
    /// that name as its one term: the history must say it too (the grader requires it beside the file). A
    /// document's name says what it is about (`2026-02-06-session-phase-review-notes.md`): a history that
    /// names it as written answers which file holds the section, in the words of its name rather than the
    /// heading's, so the heading is not required of the history.
    fn terms(&self, frequency: &BTreeMap<String, usize>) -> Vec<String> {
        match (&self.anchor, self.terms) {
            (Some(Anchor::Definition(name) | Anchor::Identifier(name)), _) => vec![name.clone()],
            (_, Terms::OfGold) => key_terms(&self.gold, &self.question, frequency),
            (_, Terms::Verbatim) => Vec::new(),
        }
    }
}

/// Key terms a free-text gold's fact is graded by ([`super::grader`]): the gold's content words that the
/// question does not already say and that carry its meaning (identifiers first, then the rarest words in
/// the conversation: what tells this fact from the rest of the session; not adverbs, contraction stubs or
/// the function words of [`TERM_STOP`]), at most [`MAX_TERMS`], in the gold's order; none when fewer than
/// two remain (the gold is then graded verbatim only).
fn key_terms(gold: &str, question: &str, frequency: &BTreeMap<String, usize>) -> Vec<String> {
    let asked: BTreeSet<String> = text_match::tokens(question).into_iter().collect();
    let meaningful = |w: &String| {
        let identifier = !w.chars().all(char::is_alphabetic);
        identifier || (w.len() >= 4 && !w.ends_with("ly") && !TERM_STOP.contains(&w.as_str()))
    };
    let mut words: Vec<(bool, usize, usize, String)> = content_words(gold)
        .into_iter()
        .filter(|w| !asked.contains(w) && meaningful(w))
        .enumerate()
        .map(|(i, w)| (w.chars().all(char::is_alphabetic), frequency.get(&w).copied().unwrap_or(0), i, w))
        .collect();
    words.sort();
    words.dedup_by(|a, b| a.3 == b.3);
    if words.len() < 2 {
        return Vec::new();
    }
    let mut chosen: Vec<(usize, String)> = words.into_iter().take(MAX_TERMS).map(|(_, _, i, w)| (i, w)).collect();
    chosen.sort();
    chosen.into_iter().map(|(_, w)| w).collect()
}

/// Key terms per free-text probe.
const MAX_TERMS: usize = 3;

/// Words too common in agent sessions, or too loose, to tell one fact from another.
const TERM_STOP: &[&str] = &[
    "are",
    "was",
    "were",
    "has",
    "have",
    "had",
    "not",
    "but",
    "can",
    "will",
    "would",
    "should",
    "could",
    "all",
    "any",
    "there",
    "then",
    "than",
    "what",
    "which",
    "when",
    "where",
    "from",
    "into",
    "just",
    "also",
    "now",
    "here",
    "they",
    "them",
    "their",
    "its",
    "our",
    "out",
    "use",
    "using",
    "used",
    "need",
    "needs",
    "make",
    "sure",
    "file",
    "files",
    "code",
    "change",
    "changes",
    "test",
    "tests",
    "run",
    "first",
    "want",
    "like",
    "get",
    "these",
    "those",
    "this",
    "that",
    "with",
    "already",
    "ever",
    "still",
    "keep",
    "does",
    "doesn",
    "isn",
    "aren",
    "wasn",
    "won",
    "don",
    "didn",
    "haven",
    "hasn",
    "shouldn",
    "wouldn",
    "couldn",
    "can't",
    "it's",
    "each",
    "every",
    "some",
    "more",
    "most",
    "other",
    "same",
    "been",
    "being",
    "only",
    "even",
    "much",
    "many",
    "very",
    "well",
    "back",
    "about",
    "after",
    "before",
    "because",
    "since",
    "while",
    "both",
    "either",
    "else",
    "instead",
    "thing",
    "things",
    "something",
    "anything",
    "nothing",
    "way",
    "able",
    "new",
    "old",
    "right",
    "good",
];
/// Probes of a conversation, deterministically (same conversation → same probes, same order).
pub fn extract(conv: &Conversation) -> Vec<Probe> {
    let h = &conv.history;
    let split = removable_before(h);
    let is_aider = conv.meta.source == "aider" || conv.meta.format == "aider";
    let mut cands = Vec::new();
    goal(h, is_aider, &mut cands);
    if is_aider {
        aider_commits(h, &mut cands);
    }
    tool_calls(h, &mut cands);
    unique_anchors(h, &mut cands);

    let frequency = token_frequency(h);
    let mut out: Vec<Probe> = Vec::new();
    let mut seen_golds: BTreeSet<(ProbeKind, String)> = BTreeSet::new();
    for &kind in ProbeKind::ALL {
        let mut n = 0;
        for c in cands.iter().filter(|c| c.kind == kind) {
            // In a session with the agent's own compactions every file changed is a probe, so `artifact`
            // at a compaction is the set recall of the files changed before it (what a summary is asked to
            // carry), not of the first few.
            let every_file = kind == ProbeKind::Artifact && !conv.recorded_compactions.is_empty();
            if n >= cap(kind) && !every_file {
                break;
            }
            let norm = text_match::normalize(&c.gold);
            let informative = norm.len() >= 3 && !norm.chars().all(|ch| ch.is_ascii_digit() || ch == ' ');
            let before_tail = c.evidence.iter().all(|&e| e < split);
            if !informative || !before_tail || !seen_golds.insert((kind, norm)) {
                continue;
            }
            n += 1;
            out.push(Probe {
                id: format!("auto-{}-{n}", kind.name()),
                conversation: conv.meta.id.clone(),
                kind,
                question: c.question.clone(),
                gold: c.gold.clone(),
                accept: c.accept.clone(),
                terms: c.terms(&frequency),
                evidence: c.evidence.clone(),
                source: ProbeOrigin::Auto,
                note: None,
            });
        }
    }
    disambiguate_questions(&mut out);
    out
}

/// Drops each artifact whose anchor (what its change introduced) another file's changes also write: the
/// question would fit both files.
fn unique_anchors(h: &[Content], cands: &mut Vec<Candidate>) {
    let written = written_by_file(h);
    cands.retain(|c| {
        let pattern = match &c.anchor {
            None => return true,
            Some(Anchor::Definition(name) | Anchor::Identifier(name)) => format!(r"\b{}\b", regex::escape(name)),
            // A heading another file also has ("Quick Start", "Technical Specification") tells no file apart.
            Some(Anchor::Heading(h)) => format!(r"(?m)^#{{1,4}}[ \t]+[*`_]*{}", regex::escape(h)),
        };
        let anchor = Regex::new(&pattern).expect("escaped");
        let other = |path: &String, text: &String| *path != c.gold && anchor.is_match(text);
        !written.iter().any(|(path, text)| other(path, text))
    });
}

/// What the session's file-writing calls put into each file (structured writes and Codex patches).
fn written_by_file(h: &[Content]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for c in h {
        for p in history::parts(c) {
            let Some(call) = history::function_call(p) else { continue };
            let name = call.get("name").and_then(|v| v.as_str()).unwrap_or("").to_ascii_lowercase();
            let args = call.get("args").map(|v| v.to_serde()).unwrap_or_default();
            for section in patch_sections(&args) {
                out.entry(section.path).or_default().push_str(&section.added);
            }
            let path = PATH_KEYS.iter().find_map(|k| args.get(*k).and_then(|v| v.as_str()));
            if let (true, Some(path)) = (WRITE_TOOLS.contains(&name.as_str()) || name.contains("editor"), path) {
                let text = out.entry(path.to_string()).or_default();
                text.push_str(&written_text(&args).0);
                text.push('\n');
            }
        }
    }
    out
}

/// How many Contents of the history each token occurs in.
fn token_frequency(h: &[Content]) -> BTreeMap<String, usize> {
    let mut frequency = BTreeMap::new();
    for c in h {
        let tokens: BTreeSet<String> = text_match::tokens(&text_match::content_text(c)).into_iter().collect();
        for t in tokens {
            *frequency.entry(t).or_default() += 1;
        }
    }
    frequency
}

/// A question asked twice in a conversation with different golds names no single fact: every probe that
/// asks it is dropped (the agent never sees turn numbers, so a turn cannot tell them apart).
fn disambiguate_questions(probes: &mut Vec<Probe>) {
    let mut count: BTreeMap<String, usize> = Default::default();
    for p in probes.iter() {
        *count.entry(text_match::normalize(&p.question)).or_default() += 1;
    }
    probes.retain(|p| count[&text_match::normalize(&p.question)] == 1);
    // Numbered again per kind, in order.
    let mut n: BTreeMap<ProbeKind, usize> = Default::default();
    for p in probes.iter_mut() {
        let k = n.entry(p.kind).or_default();
        *k += 1;
        p.id = format!("auto-{}-{k}", p.kind.name());
    }
}

/// Probes of many conversations: each conversation's [`extract`], minus every probe a lint marks against
/// the conversations of its source (golds shared with another conversation are template lines), numbered
/// again per kind. Files in the order of `convs`.
pub fn extract_corpus(convs: &[&Conversation]) -> Vec<ProbeFile> {
    let files: Vec<ProbeFile> = convs.iter().map(|c| extract_file(c)).collect();
    let mut by_source: std::collections::BTreeMap<&str, Vec<&Probe>> = Default::default();
    for f in &files {
        by_source.entry(f.dataset.as_str()).or_default().extend(&f.probes);
    }
    let indexes: std::collections::BTreeMap<&str, super::lint::GoldIndex> =
        by_source.into_iter().map(|(s, ps)| (s, super::lint::gold_index(ps))).collect();
    files
        .iter()
        .zip(convs)
        .map(|(f, conv)| {
            let lints = super::lint::lint_conversation(&f.probes, indexes.get(f.dataset.as_str()), Some(conv));
            let marked: BTreeSet<&str> = lints.iter().map(|l| l.probe.as_str()).collect();
            let mut n: std::collections::BTreeMap<ProbeKind, usize> = Default::default();
            let probes = f
                .probes
                .iter()
                .filter(|p| !marked.contains(p.id.as_str()))
                .map(|p| {
                    let k = n.entry(p.kind).or_default();
                    *k += 1;
                    Probe { id: format!("auto-{}-{k}", p.kind.name()), ..p.clone() }
                })
                .collect();
            ProbeFile { probes, ..f.clone() }
        })
        .collect()
}

/// Contents before this index can be removed under the default settings: the default split point, or, when
/// the history has no plain user turn to split at after the first (agent trajectories, whose later user turns
/// are all tool outputs), the first Content of the newest 30 % by JSON size — those older tool outputs are
/// what truncation, masking and dropping remove.
pub fn removable_before(h: &[Content]) -> usize {
    let split = crate::compress::find_compress_split_point(h, DEFAULT_SPLIT_FRACTION).unwrap_or(0);
    if split > 0 {
        return split;
    }
    let sizes: Vec<usize> = h.iter().map(|c| crate::json::to_string(c).len()).collect();
    let total: usize = sizes.iter().sum();
    let mut acc = 0;
    for (i, s) in sizes.iter().enumerate() {
        if acc as f64 >= DEFAULT_SPLIT_FRACTION * total as f64 {
            return i;
        }
        acc += s;
    }
    h.len()
}

/// The extractor's output as a probe file.
pub fn extract_file(conv: &Conversation) -> ProbeFile {
    ProbeFile {
        format: PROBE_FORMAT.into(),
        conversation: conv.meta.id.clone(),
        dataset: conv.meta.source.clone(),
        probes: extract(conv),
    }
}

fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{}…", cut.trim_end())
}

/// Aider writes its own output (token counts, edits, commits, command echoes) as user-side text parts.
fn is_aider_output(text: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "Tokens:",
        "Applied edit",
        "Commit ",
        "Removed:",
        "Now at:",
        "You can use",
        "Added ",
        "Aider v",
        "Git repo",
        "Repo-map",
        "Use /help",
        "Model",
        "Warning",
        "Only ",
        "Run shell",
        "Running ",
        "Dropping",
        "Removed ",
        "^C",
        "Add ",
        "Drop ",
        "Allow ",
        "Create new file",
        "Did not",
        "litellm",
        "Unable",
        "Cur working dir",
        "Git working dir",
        "The LLM did not",
        "# ",
        "Undo",
        "Scraping",
        "No changes",
    ];
    let first = text.trim_start();
    first.starts_with('/') && first.contains(".venv/bin/aider")
        || PREFIXES.iter().any(|p| first.starts_with(p))
        || first.contains("\nApplied edit to ")
}

/// The user's typed texts of a Content (no tool outputs, no aider output, no slash commands alone).
fn user_texts(c: &Content, is_aider: bool) -> Vec<String> {
    if !history::is_user(c) {
        return Vec::new();
    }
    history::parts(c)
        .iter()
        .filter_map(|p| history::part_text(p).map(|t| t.to_str_lossy().to_string()))
        .filter(|t| !(is_aider && is_aider_output(t)))
        .filter(|t| !t.trim().is_empty())
        .collect()
}

fn goal(h: &[Content], is_aider: bool, out: &mut Vec<Candidate>) {
    for (i, c) in h.iter().enumerate() {
        let texts = user_texts(c, is_aider);
        let Some(text) = texts.iter().rev().find(|t| !t.trim_start().starts_with('/') || t.contains("\n\n")) else {
            continue;
        };
        let line = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('/'))
            .find(|l| {
                let lower = l.to_lowercase();
                l.split_whitespace().count() >= 3
                    && !l.starts_with('<')
                    && !l.ends_with(':')
                    && !lower.starts_with("consider the following")
                    && !lower.starts_with("we're currently solving")
                    && !lower.starts_with("please solve")
            })
            .or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('<')));
        // The task's first sentence when it is short enough to be one fact. A Markdown heading is the title
        // of a document the user pasted (`Implement the following plan:` then `# Plan: …`): not the user's
        // words of request, and a summary that says "implement the plan" keeps the task without its title.
        let first = line.filter(|l| !l.starts_with('#')).and_then(|l| sentences(l).into_iter().next());
        let gold = first.and_then(|f| {
            let f = f.trim_end_matches(['.', '!', '?', ':']).to_string();
            let short = f.split_whitespace().count() <= MAX_GOLD_WORDS && super::lint::fragment(&f).is_none();
            let task = f.chars().next().is_some_and(char::is_alphanumeric) && !f.to_lowercase().starts_with("you are");
            (short && task).then_some(f)
        });
        if let Some(gold) = gold {
            out.push(Candidate {
                kind: ProbeKind::Recall,
                question: "What task did the user ask for at the start of the conversation?".into(),
                gold,
                accept: Vec::new(),
                evidence: vec![i],
                terms: Terms::OfGold,
                anchor: None,
            });
        }
        return;
    }
}

fn aider_commits(h: &[Content], out: &mut Vec<Candidate>) {
    for (i, c) in h.iter().enumerate() {
        if !history::is_user(c) {
            continue;
        }
        for p in history::parts(c) {
            let Some(text) = history::part_text(p).map(|t| t.to_str_lossy().to_string()) else { continue };
            let files: Vec<String> = AIDER_APPLIED.captures_iter(&text).map(|m| m[1].to_string()).collect();
            for m in AIDER_COMMIT.captures_iter(&text) {
                let (hash, message) = (m[1].to_string(), m[2].trim().to_string());
                if let Some((first, rest)) = files.split_first() {
                    out.push(Candidate {
                        kind: ProbeKind::Artifact,
                        question: format!("Which file did the commit \"{message}\" change?"),
                        gold: first.clone(),
                        accept: rest.to_vec(),
                        evidence: vec![i],
                        terms: Terms::Verbatim,
                        anchor: None,
                    });
                }
                out.push(Candidate {
                    kind: ProbeKind::Recall,
                    question: format!("What is the hash of the commit \"{message}\"?"),
                    gold: hash,
                    accept: Vec::new(),
                    evidence: vec![i],
                    terms: Terms::Verbatim,
                    anchor: None,
                });
            }
        }
    }
}

/// The response to a call: the part with the same id in a later user Content, else the next functionResponse.
fn response_for(h: &[Content], from: usize, id: Option<&str>) -> Option<(usize, String)> {
    for (j, c) in h.iter().enumerate().skip(from + 1).take(3) {
        for p in history::parts(c) {
            let Some(r) = history::function_response(p) else { continue };
            let rid = r.get("id").and_then(|v| v.as_str());
            if id.is_none() || rid.is_none() || rid == id {
                let resp = r.get("response").map(|v| v.to_serde()).unwrap_or_default();
                let text = match &resp {
                    serde_json::Value::Object(m) => m
                        .values()
                        .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    v => v.to_string(),
                };
                return Some((j, text));
            }
        }
    }
    None
}

/// Sentences of a text (lines, then `. ! ?` followed by a space).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches(['-', '*', '#', '>']).trim();
        if line.is_empty() || line.starts_with("```") {
            continue;
        }
        let mut start = 0;
        let bytes: Vec<(usize, char)> = line.char_indices().collect();
        for (k, &(pos, ch)) in bytes.iter().enumerate() {
            let next_space = bytes.get(k + 1).is_some_and(|&(_, n)| n == ' ');
            if matches!(ch, '.' | '!' | '?') && next_space {
                out.push(line[start..pos + ch.len_utf8()].trim().to_string());
                start = pos + ch.len_utf8();
            }
        }
        let rest = line[start..].trim();
        if !rest.is_empty() {
            out.push(rest.to_string());
        }
    }
    out
}

fn content_words(s: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "the", "a", "an", "to", "of", "and", "or", "in", "on", "for", "is", "it", "that", "this", "with", "be", "you",
        "your", "i", "my", "me",
    ];
    let mut words: Vec<String> = text_match::tokens(s)
        .into_iter()
        .filter(|w| w.len() > 2 && !STOP.contains(&w.as_str()) && !DIRECTIVE.is_match(w))
        .collect();
    words.dedup();
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_no_marker_words_with_the_probe_extractor() {
        // The baseline lives in compactbench-llm, the extractor here. Every string literal of the baseline's source, lowercased: none may hold an extractor marker word.
        let source = include_str!("../../../llm/src/extractive.rs");
        let literals: Vec<String> = regex::Regex::new(r#""((?:[^"\\\n]|\\.)*)""#)
            .unwrap()
            .captures_iter(source)
            .map(|c| format!(" {} ", c[1].to_lowercase()))
            .collect();
        assert!(literals.len() > 20, "{} literals", literals.len());
        use super::DIRECTIVE_WORDS;
        for word in DIRECTIVE_WORDS {
            let re = regex::Regex::new(&format!(r"\b{}\b", regex::escape(word))).unwrap();
            let hit = literals.iter().find(|l| re.is_match(l));
            assert!(hit.is_none(), "marker `{word}` in the extractive baseline: {hit:?}");
        }
    }

    #[test]
    fn shell_writes_are_found_and_named_by_what_they_write() {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut open = None;
        shell_artifacts(
            "cd /testbed && cat > test_x.py << 'EOF'\nimport os\ndef check_parser():\n    pass\nEOF",
            1,
            &mut open,
            &mut out,
            &mut seen,
        );
        shell_artifacts("sed -i 's/a/b/g' ./src/a.py && echo hi > out.txt", 2, &mut open, &mut out, &mut seen);
        shell_artifacts("create rep.py", 3, &mut open, &mut out, &mut seen);
        shell_artifacts("edit 1:1\nprint(1)\nend_of_edit", 4, &mut open, &mut out, &mut seen);
        let golds: Vec<&str> = out.iter().map(|c| c.gold.as_str()).collect();
        // `echo … >` names nothing a question could use: no probe.
        assert_eq!(golds, ["test_x.py", "./src/a.py", "rep.py"]);
        assert_eq!(out[0].question, "Which file did the agent write to add `check_parser`?");
        assert_eq!(out[0].terms(&BTreeMap::new()), ["check_parser"]);
        assert!(out[1].question.contains("s/a/b/g"));
    }

    /// A here-document that defines nothing and has no heading gives no question to ask.
    #[test]
    fn a_write_that_introduces_nothing_nameable_is_no_probe() {
        let (mut out, mut seen, mut open) = (Vec::new(), BTreeSet::new(), None);
        shell_artifacts("cat > notes.txt << 'EOF'\nok\nEOF", 1, &mut open, &mut out, &mut seen);
        assert!(out.is_empty(), "{:?}", out.iter().map(|c| &c.question).collect::<Vec<_>>());
    }

    /// Regression: macOS `sed -i '' 's/x/y/' file` was read as the expression `''` and the path `s/x/y/`.
    #[test]
    fn bsd_sed_with_an_empty_backup_suffix_names_the_file() {
        for cmd in [
            "sed -i '' 's/if err/if err2/' cmd/entire/cli/reset.go",
            "sed -i \"\" -e 's/private/public/g' cmd/entire/cli/reset.go",
            "sed -i.bak 's/a/b/' cmd/entire/cli/reset.go",
        ] {
            let (mut out, mut seen, mut open) = (Vec::new(), BTreeSet::new(), None);
            shell_artifacts(cmd, 1, &mut open, &mut out, &mut seen);
            let golds: Vec<&str> = out.iter().map(|c| c.gold.as_str()).collect();
            assert_eq!(golds, ["cmd/entire/cli/reset.go"], "{cmd}");
        }
    }

    #[test]
    fn errors_and_tests_are_found() {
        let mut out = Vec::new();
        command_outcome(
            "python x.py",
            "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"x.py\"\nModuleNotFoundError: No module named 'foo'\n</output>",
            5,
            &mut out,
        );
        command_outcome("pytest", "==== 3 passed, 1 failed in 0.12s ====", 7, &mut out);
        command_outcome("./runtests.py", "...\nRan 23 tests in 0.5s\nOK", 9, &mut out);
        let golds: Vec<&str> = out.iter().map(|c| c.gold.as_str()).collect();
        assert_eq!(golds, ["ModuleNotFoundError: No module named 'foo'", "3 passed, 1 failed", "Ran 23 tests"]);
        assert!(out[0].question.contains("exit code 1"));
    }

    /// Claude Code's `Edit`/`Write`/`MultiEdit` and Codex's `apply_patch` (as its own tool or through a shell)
    /// are file changes: one artifact per file, asked by what the change introduced (a definition, else a new
    /// identifier, a document by its new heading), an absolute path also accepted as its last directory and
    /// name. A change that introduces nothing nameable, and a read, are no probe.
    #[test]
    fn claude_code_and_codex_file_changes_are_artifacts_named_by_what_they_add() {
        let mut out = Vec::new();
        let (mut paths, mut args) = (BTreeSet::new(), BTreeSet::new());
        let call = |name: &str, a: serde_json::Value, at, out: &mut Vec<Candidate>, p: &mut _, g: &mut _| {
            structured_call(name, &a, at, out, p, g, &None)
        };
        call(
            "Edit",
            serde_json::json!({"file_path": "/home/u/app/src/lib.rs", "old_string": "fn a() {}", "new_string": "fn a() {}\npub fn parse_header() {}"}),
            1,
            &mut out,
            &mut paths,
            &mut args,
        );
        // Only a value changed: nothing to name the change by.
        call(
            "Edit",
            serde_json::json!({"file_path": "/home/u/app/Cargo.toml", "old_string": "x = 1", "new_string": "x = 2"}),
            2,
            &mut out,
            &mut paths,
            &mut args,
        );
        call(
            "MultiEdit",
            serde_json::json!({"file_path": "/home/u/app/src/main.rs", "edits": [{"old_string": "run()", "new_string": "run_with_retries()"}]}),
            2,
            &mut out,
            &mut paths,
            &mut args,
        );
        call(
            "Write",
            serde_json::json!({"file_path": "/home/u/app/docs/plan.md", "content": "# Retry Design Notes\n\nfunc notThis()"}),
            3,
            &mut out,
            &mut paths,
            &mut args,
        );
        let patch = "*** Begin Patch\n*** Update File: /w/p/apps/cli/a.ts\n@@\n-x\n+export function loadConfig() {}\n*** Add File: docs/b.md\n+## Release Checklist Steps\n*** End Patch";
        call("apply_patch", serde_json::json!({"input": patch}), 4, &mut out, &mut paths, &mut args);
        call("Read", serde_json::json!({"file_path": "/home/u/app/README.md"}), 5, &mut out, &mut paths, &mut args);
        let got: Vec<(&str, &str, usize)> =
            out.iter().map(|c| (c.gold.as_str(), c.question.as_str(), c.evidence[0])).collect();
        assert_eq!(
            got,
            [
                ("/home/u/app/src/lib.rs", "Which file did the agent edit to add `parse_header`?", 1),
                ("/home/u/app/src/main.rs", "Which file did the agent edit to introduce `run_with_retries`?", 2),
                (
                    "/home/u/app/docs/plan.md",
                    "Which file did the agent create with the section \"Retry Design Notes\"?",
                    3
                ),
                ("/w/p/apps/cli/a.ts", "Which file did the agent edit to add `loadConfig`?", 4),
                ("docs/b.md", "Which file did the agent create with the section \"Release Checklist Steps\"?", 4),
            ]
        );
        assert!(out.iter().all(|c| c.kind == ProbeKind::Artifact));
        assert_eq!(out[0].accept, ["src/lib.rs"]);
        assert_eq!(out[4].accept, Vec::<String>::new(), "a relative path is accepted as it is");
        // A document's heading is not required of the history (its file name says what it holds).
        assert!(out[2].terms(&BTreeMap::new()).is_empty());
    }

    /// Regression: Codex's `update_plan` matched the business-tool rule and its `explanation` sentence became a
    /// gold; an MDX page was named by a code word instead of its heading.
    #[test]
    fn prose_arguments_and_mdx_pages_are_asked_as_facts() {
        let (mut out, mut paths, mut args) = (Vec::new(), BTreeSet::new(), BTreeSet::new());
        let call = |name: &str, a: serde_json::Value, out: &mut Vec<Candidate>, p: &mut _, g: &mut _| {
            structured_call(name, &a, 1, out, p, g, &None)
        };
        call(
            "update_plan",
            serde_json::json!({"explanation": "rebase the branch first"}),
            &mut out,
            &mut paths,
            &mut args,
        );
        call("update_reservation", serde_json::json!({"reservation_id": "ZFA04Y"}), &mut out, &mut paths, &mut args);
        call(
            "Write",
            serde_json::json!({"file_path": "docs/graders.mdx", "content": "## Composite Graders\n\nconst payload = 1"}),
            &mut out,
            &mut paths,
            &mut args,
        );
        let got: Vec<(&str, &str)> = out.iter().map(|c| (c.gold.as_str(), c.question.as_str())).collect();
        assert_eq!(
            got,
            [
                ("ZFA04Y", "Which reservation id did the agent use when calling `update_reservation`?"),
                ("docs/graders.mdx", "Which file did the agent create with the section \"Composite Graders\"?"),
            ]
        );
    }

    /// An anchor another file's changes also write names no single file: the probe is dropped.
    #[test]
    fn an_anchor_written_into_two_files_is_no_probe() {
        let edit = |path: &str, new: &str| -> Content {
            crate::json::parse_str(&serde_json::json!({"role": "model", "parts": [{"functionCall": {"name": "Edit", "args": {"file_path": path, "old_string": "", "new_string": new}}}]}).to_string()).unwrap()
        };
        let h = vec![
            edit("/r/a.go", "func sharedHelper() {}"),
            edit("/r/b.go", "x := sharedHelper()"),
            edit("/r/c.go", "func onlyHere() {}"),
        ];
        let mut cands = Vec::new();
        tool_calls(&h, &mut cands);
        unique_anchors(&h, &mut cands);
        let golds: Vec<&str> = cands.iter().map(|c| c.gold.as_str()).collect();
        assert_eq!(golds, ["/r/c.go"]);
    }

    #[test]
    fn error_golds_are_whole_messages_or_their_leading_parts() {
        assert_eq!(
            error_gold("ModuleNotFoundError: No module named 'foo'").as_deref(),
            Some("ModuleNotFoundError: No module named 'foo'")
        );
        assert_eq!(
            error_gold("error[E0308]: mismatched types: expected struct `Foo` found enum `Bar` in this call")
                .as_deref(),
            Some("error[E0308]: mismatched types")
        );
        assert_eq!(error_gold("fatal"), None, "one word is no fact");
    }

    #[test]
    fn sentences_split_on_terminal_punctuation() {
        assert_eq!(sentences("Do it. Never use tabs! ok\n- second"), ["Do it.", "Never use tabs!", "ok", "second"]);
    }
}
