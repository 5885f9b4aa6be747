//! The deterministic extractor: probes read off a conversation's structure (tool calls, tool outputs, the
//! user's requests and directives, the agent's stated reasons and plans).
//!
//! Only probes whose evidence lies before the default split point are kept: the reference keeps roughly
//! the newest 30 % of the history verbatim, so evidence in that tail would survive any compression and the
//! probe would measure nothing.

use super::grade;
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
        ProbeKind::Decision => 2,
        ProbeKind::Continuation => 1,
        ProbeKind::Constraint => 3,
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

re!(AIDER_APPLIED, r"Applied edit to (\S+)");
re!(AIDER_COMMIT, r"(?m)^Commit ([0-9a-f]{7,40}) (.+)$");
re!(CAT_WRITE, r#"cat\s+(?:<<-?\s*['"]?\w+['"]?\s*)?>>?\s*([^\s;&|<>'"]+)(?:\s*<<-?\s*['"]?\w+['"]?)?"#);
// `-i`, `-i.bak`, or BSD/macOS `-i ''` (an empty backup suffix as its own argument) before the expression.
re!(SED_INPLACE, r#"sed\s+-i(?:\s+(?:''|"")|\S*)\s+(?:-e\s+)?('[^']*'|"[^"]*"|\S+)\s+([^\s;&|<>]+)"#);
re!(ECHO_WRITE, r#"(?:echo|printf)\s[^\n>|;]*?>>?\s*([^\s;&|<>'"]+)"#);
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
/// Words that make a user sentence a directive, a model sentence a reason, or a plan. The `extractive`
/// baseline must not share them (a test checks): a summarizer that copied exactly these sentences would be
/// rewarded by construction.
pub const DIRECTIVE_WORDS: &[&str] = &[
    "must",
    "don't",
    "do not",
    "never",
    "always",
    "make sure",
    "should not",
    "shouldn't",
    "avoid",
    "instead of",
    "only",
];
pub const REASON_WORDS: &[&str] = &["because", "since", "so that", "in order to"];
pub const PLAN_WORDS: &[&str] = &["let's", "let me", "i'll", "i will", "i need to", "we need to"];

static DIRECTIVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\b({})\b", DIRECTIVE_WORDS.join("|"))).expect("valid regex"));
static BECAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)^(.{{12,}}?)\s*,?\s+(?:{})\s+(.+)$", REASON_WORDS.join("|"))).expect("valid regex")
});
static NEXT_STEP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)^(?:now,?\s+|next,?\s+|then,?\s+)?(?:{})\s+(.+)$", PLAN_WORDS.join("|")))
        .expect("valid regex")
});

/// One candidate probe before filtering and numbering.
struct Candidate {
    kind: ProbeKind,
    question: String,
    gold: String,
    accept: Vec<String>,
    evidence: Vec<usize>,
    /// The task statement (a sentence, graded by its key terms too).
    goal: bool,
}

/// Key terms a free-text gold's fact is graded by ([`super::grader`]): the gold's content words that the
/// question does not already say and that carry its meaning (identifiers first, then the rarest words in
/// the conversation: what tells this fact from the rest of the session; not adverbs, contraction stubs or
/// the function words of [`TERM_STOP`]), at most [`MAX_TERMS`], in the gold's order; none when fewer than
/// two remain (the gold is then graded verbatim only).
fn key_terms(gold: &str, question: &str, frequency: &BTreeMap<String, usize>) -> Vec<String> {
    let asked: BTreeSet<String> = grade::tokens(question).into_iter().collect();
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
    directives(h, is_aider, &mut cands);
    reasons_and_plans(h, split, &mut cands);

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
            let norm = grade::normalize(&c.gold);
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
                terms: match kind {
                    ProbeKind::Constraint | ProbeKind::Decision | ProbeKind::Continuation => {
                        key_terms(&c.gold, &c.question, &frequency)
                    }
                    // The task is a sentence too: its words graded as a paraphrase may say them.
                    ProbeKind::Recall if c.goal => key_terms(&c.gold, &c.question, &frequency),
                    ProbeKind::Recall | ProbeKind::Artifact => Vec::new(),
                },
                evidence: c.evidence.clone(),
                source: ProbeOrigin::Auto,
                note: None,
            });
        }
    }
    disambiguate_questions(&mut out);
    out
}

/// How many Contents of the history each token occurs in.
fn token_frequency(h: &[Content]) -> BTreeMap<String, usize> {
    let mut frequency = BTreeMap::new();
    for c in h {
        let tokens: BTreeSet<String> = grade::tokens(&grade::content_text(c)).into_iter().collect();
        for t in tokens {
            *frequency.entry(t).or_default() += 1;
        }
    }
    frequency
}

/// Repeated questions name their evidence turn; a question still repeated after that is dropped.
fn disambiguate_questions(probes: &mut Vec<Probe>) {
    let mut count: std::collections::BTreeMap<String, usize> = Default::default();
    for p in probes.iter() {
        *count.entry(grade::normalize(&p.question)).or_default() += 1;
    }
    for p in probes.iter_mut() {
        if count[&grade::normalize(&p.question)] > 1 {
            let turn = p.evidence.first().copied().unwrap_or_default();
            let q = p.question.trim_end_matches('?');
            p.question = format!("{q} (turn {turn})?");
        }
    }
    let mut seen = BTreeSet::new();
    probes.retain(|p| seen.insert(grade::normalize(&p.question)));
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

fn first_words(s: &str, n: usize) -> String {
    s.split_whitespace().take(n).collect::<Vec<_>>().join(" ")
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
        if let Some(line) = line {
            out.push(Candidate {
                kind: ProbeKind::Recall,
                question: "What task did the user ask for at the start of the conversation?".into(),
                gold: first_words(line, MAX_GOLD_WORDS),
                accept: Vec::new(),
                evidence: vec![i],
                goal: true,
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
                        goal: false,
                    });
                }
                out.push(Candidate {
                    kind: ProbeKind::Recall,
                    question: format!("What is the hash of the commit \"{message}\"?"),
                    gold: hash,
                    accept: Vec::new(),
                    evidence: vec![i],
                    goal: false,
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

fn strip_root(path: &str) -> Vec<String> {
    let mut accept = Vec::new();
    for root in ["/testbed/", "/repo/"] {
        if let Some(rest) = path.strip_prefix(root) {
            accept.push(rest.to_string());
        }
    }
    // An absolute path under an unknown checkout (`/home/me/projects/app/src/lib/x.ts`): a summary names the
    // file relative to the project, so its last directory and name are accepted too.
    if accept.is_empty() && path.starts_with('/') {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() >= 3 {
            accept.push(parts[parts.len() - 2..].join("/"));
        }
    }
    accept
}

/// The files a call's Codex patches change: every `apply_patch` body among its argument strings (given to
/// `apply_patch` or through a shell: `exec_command`, `shell`).
pub fn patched_files(args: &serde_json::Value) -> Vec<String> {
    argument_strings(args).into_iter().filter(|s| s.contains("*** Begin Patch")).flat_map(patch_paths).collect()
}

/// The files a patch in Codex's `apply_patch` format adds, updates, deletes or moves to.
fn patch_paths(text: &str) -> Vec<String> {
    const HEADERS: [&str; 4] = ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "];
    text.lines()
        .filter_map(|l| HEADERS.iter().find_map(|h| l.trim_start().strip_prefix(h)))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Every string in a call's arguments (an `input` patch, a `cmd` string, a `command` array).
fn argument_strings(args: &serde_json::Value) -> Vec<&str> {
    match args {
        serde_json::Value::String(s) => vec![s.as_str()],
        serde_json::Value::Array(a) => a.iter().flat_map(argument_strings).collect(),
        serde_json::Value::Object(m) => m.values().flat_map(argument_strings).collect(),
        _ => Vec::new(),
    }
}

fn artifact(out: &mut Vec<Candidate>, seen: &mut BTreeSet<String>, path: &str, question: String, at: usize) {
    let path = path.trim_matches(|c| c == '\'' || c == '"');
    if path.is_empty() || path.starts_with("/dev/") || path.starts_with('-') || !seen.insert(path.to_string()) {
        return;
    }
    out.push(Candidate {
        kind: ProbeKind::Artifact,
        question,
        gold: path.to_string(),
        accept: strip_root(path),
        evidence: vec![at],
        goal: false,
    });
}

fn first_content_line(body: &str) -> String {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && *l != "EOF")
        .map(|l| clip(l, MAX_HINT_CHARS))
        .unwrap_or_default()
}

fn tool_calls(h: &[Content], out: &mut Vec<Candidate>) {
    let mut seen_paths = BTreeSet::new();
    let mut seen_args = BTreeSet::new();
    let mut open_file: Option<String> = None;
    for (i, c) in h.iter().enumerate() {
        for p in history::parts(c) {
            if let Some(r) = history::function_response(p) {
                let text = r.get("response").map(|v| v.to_serde().to_string()).unwrap_or_default();
                if let Some(m) = OPEN_FILE.captures_iter(&text).last() {
                    open_file = Some(m[1].trim().to_string());
                }
                continue;
            }
            let Some(call) = history::function_call(p) else { continue };
            let name = call.get("name").and_then(|v| v.as_str()).unwrap_or("").to_string();
            let args = call.get("args").map(|v| v.to_serde()).unwrap_or_default();
            let id = call.get("id").and_then(|v| v.as_str());
            let command = args.get("command").and_then(|v| v.as_str()).map(str::to_string);
            if let Some(cmd) = &command {
                shell_artifacts(cmd, i, &mut open_file, out, &mut seen_paths);
                if let Some((j, output)) = response_for(h, i, id) {
                    command_outcome(cmd, &output, j, out);
                }
            } else {
                structured_call(&name, &args, i, out, &mut seen_paths, &mut seen_args, &open_file);
            }
        }
    }
}

fn shell_artifacts(
    cmd: &str,
    at: usize,
    open_file: &mut Option<String>,
    out: &mut Vec<Candidate>,
    seen: &mut BTreeSet<String>,
) {
    for m in CAT_WRITE.captures_iter(cmd) {
        let body = &cmd[m.get(0).map_or(0, |x| x.end())..];
        let hint = first_content_line(body);
        artifact(out, seen, &m[1], format!("Which file did the agent write with `cat >`, starting with `{hint}`?"), at);
    }
    for m in SED_INPLACE.captures_iter(cmd) {
        let expr = clip(m[1].trim_matches(|c| c == '\'' || c == '"'), MAX_HINT_CHARS);
        artifact(
            out,
            seen,
            &m[2],
            format!("Which file did the agent edit in place with `sed -i` expression `{expr}`?"),
            at,
        );
    }
    for m in ECHO_WRITE.captures_iter(cmd) {
        artifact(out, seen, &m[1], "Which file did the agent write with `echo`/`printf` redirection?".into(), at);
    }
    // SWE-agent's file commands: `create F`, `open F`, `edit N:M` (on the open file).
    let first = cmd.lines().next().unwrap_or("").trim();
    let mut words = first.split_whitespace();
    match (words.next(), words.next()) {
        (Some("create"), Some(path)) => {
            artifact(out, seen, path, "Which new file did the agent create with the `create` command?".into(), at);
            *open_file = Some(path.to_string());
        }
        (Some("open"), Some(path)) => *open_file = Some(path.trim_matches('"').to_string()),
        (Some("edit"), Some(range)) if range.contains(':') => {
            if let Some(path) = open_file.clone() {
                let hint = first_content_line(cmd.split_once('\n').map_or("", |x| x.1));
                artifact(out, seen, &path, format!("Which file did the agent edit, inserting `{hint}`?"), at);
            }
        }
        _ => {}
    }
}

fn command_outcome(cmd: &str, output: &str, at: usize, out: &mut Vec<Candidate>) {
    let cmd_hint = clip(cmd.lines().next().unwrap_or(""), MAX_HINT_CHARS);
    let code: Option<i64> = RETURNCODE.captures(output).and_then(|m| m[1].parse().ok());
    // A command that exited 0 did not fail, whatever its output prints (source text, logs of handled errors).
    let failed = match code {
        Some(c) => c != 0,
        None => output.contains("Traceback (most recent call last)"),
    };
    if failed {
        let error = output.lines().rev().find(|l| ERROR_LINE.is_match(l) && l.split_whitespace().count() >= 2);
        if let Some(line) = error {
            let code_note = code.map(|c| format!(" (exit code {c})")).unwrap_or_default();
            out.push(Candidate {
                kind: ProbeKind::Recall,
                question: format!("What error did the command `{cmd_hint}` report{code_note}?"),
                gold: first_words(line.trim(), MAX_GOLD_WORDS),
                accept: Vec::new(),
                evidence: vec![at],
                goal: false,
            });
        }
    }
    let tests = PYTEST_SUMMARY
        .captures_iter(output)
        .last()
        .map(|m| m[1].trim_end_matches(", ").to_string())
        .or_else(|| UNITTEST_RAN.captures_iter(output).last().map(|m| format!("Ran {} tests", &m[1])));
    if let Some(summary) = tests {
        out.push(Candidate {
            kind: ProbeKind::Recall,
            question: format!("What was the test outcome when the agent ran `{cmd_hint}`?"),
            gold: summary,
            accept: Vec::new(),
            evidence: vec![at],
            goal: false,
        });
    }
}

/// Tools that write files, by lower-cased name: Gemini CLI's and SWE-agent's, Claude Code's (`Edit`, `Write`,
/// `MultiEdit`, `NotebookEdit`) and Codex's `apply_patch`.
pub const WRITE_TOOLS: &[&str] = &[
    "write_file",
    "create_file",
    "edit",
    "edit_file",
    "replace",
    "insert",
    "str_replace",
    "apply_patch",
    "write",
    "multiedit",
    "notebookedit",
];
const PATH_KEYS: &[&str] = &["path", "file_path", "absolute_path", "filename", "file"];

fn structured_call(
    name: &str,
    args: &serde_json::Value,
    at: usize,
    out: &mut Vec<Candidate>,
    seen_paths: &mut BTreeSet<String>,
    seen_args: &mut BTreeSet<String>,
    open_file: &Option<String>,
) {
    let sub = args.get("command").and_then(|v| v.as_str()).unwrap_or("");
    let lower = name.to_ascii_lowercase();
    let writes = WRITE_TOOLS.contains(&lower.as_str()) || (lower.contains("editor") && sub != "view");
    let path = PATH_KEYS.iter().find_map(|k| args.get(*k).and_then(|v| v.as_str())).map(str::to_string);
    // A Codex patch, given to `apply_patch` or through a shell (`exec_command`, `shell`): one artifact per file.
    let patched = patched_files(args);
    if !patched.is_empty() {
        for p in patched {
            artifact(out, seen_paths, &p, format!("Which file did the agent change with `{name}` (a patch)?"), at);
        }
        return;
    }
    if writes {
        let hint = ["search", "old_str", "content", "new_str", "replace"]
            .iter()
            .find_map(|k| args.get(*k).and_then(|v| v.as_str()))
            .map(first_content_line)
            .unwrap_or_default();
        if let Some(path) = path.or_else(|| open_file.clone()) {
            artifact(out, seen_paths, &path, format!("Which file did the agent change with `{name}` (`{hint}`)?"), at);
        }
        return;
    }
    // Business tools (tau-bench): identifiers the agent acted on or looked up.
    let acts = ["update", "cancel", "book", "modify", "create", "send", "transfer", "delete"]
        .iter()
        .any(|v| name.starts_with(v));
    let reads = name.starts_with("get_") || name.starts_with("search_") || name.starts_with("find");
    if !(acts || reads) {
        return;
    }
    let Some(obj) = args.as_object() else { return };
    for (key, v) in obj {
        let Some(val) = v.as_str() else { continue };
        if val.len() < 3 || val.contains('\n') || !seen_args.insert(format!("{name}\u{0}{key}\u{0}{val}")) {
            continue;
        }
        let (kind, verb) =
            if acts { (ProbeKind::Artifact, "use when calling") } else { (ProbeKind::Recall, "look up with") };
        out.push(Candidate {
            kind,
            question: format!("Which {} did the agent {verb} `{name}`?", key.replace('_', " ")),
            gold: val.to_string(),
            accept: Vec::new(),
            evidence: vec![at],
            goal: false,
        });
        break;
    }
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
    let mut words: Vec<String> = grade::tokens(s)
        .into_iter()
        .filter(|w| w.len() > 2 && !STOP.contains(&w.as_str()) && !DIRECTIVE.is_match(w))
        .collect();
    words.dedup();
    words
}

fn directives(h: &[Content], is_aider: bool, out: &mut Vec<Candidate>) {
    let mut found: Vec<(bool, usize, String)> = Vec::new();
    for (i, c) in h.iter().enumerate() {
        for text in user_texts(c, is_aider) {
            for s in sentences(&text) {
                let words = s.split_whitespace().count();
                if (4..=40).contains(&words) && DIRECTIVE.is_match(&s) && !s.contains('`') {
                    found.push((i == 0, i, s));
                }
            }
        }
    }
    // Directives typed later in the conversation first: the first turn of agent harnesses is a template.
    found.sort_by_key(|(first, i, _)| (*first, *i));
    for (_, i, s) in found {
        // The gold is the directive itself (its marker and the words after it), short enough to be a fact;
        // the question names the directive's most specific word, not a list of words.
        let Some(m) = DIRECTIVE.find(&s) else { continue };
        let gold = first_words(&s[m.start()..], 8).trim_end_matches(['.', '!', ',', ';', ':']).to_string();
        let topic = content_words(&s).into_iter().max_by_key(|w| (w.len(), std::cmp::Reverse(w.clone())));
        let (Some(topic), true) = (topic, gold.split_whitespace().count() >= 3) else { continue };
        out.push(Candidate {
            kind: ProbeKind::Constraint,
            question: format!("What did the user direct in turn {i} regarding `{topic}`?"),
            gold,
            accept: Vec::new(),
            evidence: vec![i],
            goal: false,
        });
    }
}

fn reasons_and_plans(h: &[Content], split: usize, out: &mut Vec<Candidate>) {
    let mut last_plan: Option<Candidate> = None;
    for (i, c) in h.iter().enumerate().take(split) {
        if !history::is_model(c) {
            continue;
        }
        let text = history::visible_text(c);
        let mut previous: Option<String> = None;
        for s in sentences(&text) {
            if let Some(m) = BECAUSE.captures(&s) {
                let (what, why) = (m[1].trim(), m[2].trim().trim_end_matches(['.', ':']));
                let n = why.split_whitespace().count();
                if (3..=MAX_GOLD_WORDS + 9).contains(&n) && what.split_whitespace().count() >= 3 {
                    let what = what.split_whitespace().rev().take(12).collect::<Vec<_>>();
                    let what = what.into_iter().rev().collect::<Vec<_>>().join(" ");
                    out.push(Candidate {
                        kind: ProbeKind::Decision,
                        question: format!("Why did the agent say: \"{what}\"?"),
                        gold: first_words(why, MAX_GOLD_WORDS),
                        accept: Vec::new(),
                        evidence: vec![i],
                        goal: false,
                    });
                }
            }
            if let Some(m) = NEXT_STEP.captures(&s) {
                let step = m[1].trim().trim_end_matches(['.', ':']);
                if (3..=MAX_GOLD_WORDS).contains(&step.split_whitespace().count()) {
                    let context =
                        previous.clone().map(|p| format!("After the agent noted \"{}\", what", first_words(&p, 12)));
                    last_plan = Some(Candidate {
                        kind: ProbeKind::Continuation,
                        question: format!("{} did it say it would do next?", context.unwrap_or_else(|| "What".into())),
                        gold: step.to_string(),
                        accept: Vec::new(),
                        evidence: vec![i],
                        goal: false,
                    });
                }
            }
            previous = Some(s);
        }
    }
    // The newest stated plan before the split: what the agent was about to do when the history was compressed.
    out.extend(last_plan);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_no_marker_words_with_the_probe_extractor() {
        // The baseline lives in compactbench-llm, the extractor here. Every string literal of the baseline's source, lowercased: none may hold an extractor marker word.
        let source = include_str!("../../llm/src/extractive.rs");
        let literals: Vec<String> = regex::Regex::new(r#""((?:[^"\\\n]|\\.)*)""#)
            .unwrap()
            .captures_iter(source)
            .map(|c| format!(" {} ", c[1].to_lowercase()))
            .collect();
        assert!(literals.len() > 20, "{} literals", literals.len());
        use super::{DIRECTIVE_WORDS, PLAN_WORDS, REASON_WORDS};
        for word in DIRECTIVE_WORDS.iter().chain(REASON_WORDS).chain(PLAN_WORDS) {
            let re = regex::Regex::new(&format!(r"\b{}\b", regex::escape(word))).unwrap();
            let hit = literals.iter().find(|l| re.is_match(l));
            assert!(hit.is_none(), "marker `{word}` in the extractive baseline: {hit:?}");
        }
    }

    #[test]
    fn shell_writes_are_found() {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut open = None;
        shell_artifacts("cd /testbed && cat > test_x.py << 'EOF'\nimport os\nEOF", 1, &mut open, &mut out, &mut seen);
        shell_artifacts("sed -i 's/a/b/g' ./src/a.py && echo hi > out.txt", 2, &mut open, &mut out, &mut seen);
        shell_artifacts("create rep.py", 3, &mut open, &mut out, &mut seen);
        shell_artifacts("edit 1:1\nprint(1)\nend_of_edit", 4, &mut open, &mut out, &mut seen);
        let golds: Vec<&str> = out.iter().map(|c| c.gold.as_str()).collect();
        assert_eq!(golds, ["test_x.py", "./src/a.py", "out.txt", "rep.py"]);
        assert!(out[0].question.contains("import os"), "{}", out[0].question);
        assert!(out[1].question.contains("s/a/b/g"));
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
    /// are file changes: one artifact per file, an absolute path also accepted as its last directory and name.
    #[test]
    fn claude_code_and_codex_file_changes_are_artifacts() {
        let mut out = Vec::new();
        let (mut paths, mut args) = (BTreeSet::new(), BTreeSet::new());
        let call = |name: &str, a: serde_json::Value, at, out: &mut Vec<Candidate>, p: &mut _, g: &mut _| {
            structured_call(name, &a, at, out, p, g, &None)
        };
        call(
            "Edit",
            serde_json::json!({"file_path": "/home/u/app/src/lib.rs", "old_string": "a"}),
            1,
            &mut out,
            &mut paths,
            &mut args,
        );
        call(
            "MultiEdit",
            serde_json::json!({"file_path": "/home/u/app/Cargo.toml"}),
            2,
            &mut out,
            &mut paths,
            &mut args,
        );
        let patch = "*** Begin Patch\n*** Update File: /w/p/apps/cli/a.ts\n@@\n-x\n+y\n*** Add File: docs/b.md\n+z\n*** End Patch";
        call("apply_patch", serde_json::json!({"input": patch}), 3, &mut out, &mut paths, &mut args);
        let shell = format!("apply_patch <<'EOF'\n{}\nEOF", patch.replace("docs/b.md", "docs/c.md"));
        call("exec_command", serde_json::json!({"cmd": shell}), 4, &mut out, &mut paths, &mut args);
        call("Read", serde_json::json!({"file_path": "/home/u/app/README.md"}), 5, &mut out, &mut paths, &mut args);
        let golds: Vec<(&str, usize)> = out.iter().map(|c| (c.gold.as_str(), c.evidence[0])).collect();
        assert_eq!(
            golds,
            [
                ("/home/u/app/src/lib.rs", 1),
                ("/home/u/app/Cargo.toml", 2),
                ("/w/p/apps/cli/a.ts", 3),
                ("docs/b.md", 3),
                ("docs/c.md", 4)
            ]
        );
        assert!(out.iter().all(|c| c.kind == ProbeKind::Artifact));
        assert_eq!(out[0].accept, ["src/lib.rs"]);
        assert_eq!(out[3].accept, Vec::<String>::new(), "a relative path is accepted as it is");
    }

    #[test]
    fn sentences_split_on_terminal_punctuation() {
        assert_eq!(sentences("Do it. Never use tabs! ok\n- second"), ["Do it.", "Never use tabs!", "ok", "second"]);
    }
}
