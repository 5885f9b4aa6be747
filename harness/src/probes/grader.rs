//! The grading rule, in one place: when does a history *keep* a probe's fact?
//!
//! Three rules, tried in this order; the first that holds decides, and [`KeptBy`] records which:
//!
//! 1. **Exact**: the gold or an `accept` variant occurs in the history, normalised, at token boundaries
//!    ([`text_match::Haystack::contains`]). Identifiers, numbers and error strings are graded this way only.
//! 2. **Path**: a gold that names a file (it holds a `/`, or it is the file name of one of the session's
//!    files) is kept when the history names that file in any form that identifies it: the absolute path;
//!    the path relative to the session's working directory or another root of it (`cwd` as the recording
//!    gives it; a git worktree's main checkout); any suffix of at least two components that no other file
//!    of the session ends with, also under another root (`/tmp/x/cmd/cli/reset.go` names
//!    `cmd/cli/reset.go`); and `path:line` forms of all of these. The bare file name counts only when no
//!    other file of the session has that name ([`KeptBy::BareName`], counted apart in the reports). The
//!    session's files are the paths its tool calls name (arguments without spaces that hold a `/` or a
//!    file extension), resolved against the working directory, plus the probes' own path golds.
//! 3. **Terms**: a free-text fact (constraint, decision, continuation) lists its key terms; it is kept when
//!    every term occurs within one window of [`TERM_SPAN`] consecutive tokens of the history, in any order.
//!    Words are compared after lowercasing and Snowball English stemming (`limiting` = `limit`), so a
//!    paraphrase in the agent's own inflection counts; a term holding a digit or a character such as `_ . /
//!    - :` is an identifier and must occur as a whole token (or a dotted component of one). A term may list
//!    alternatives (`remove|delete|drop`), each a word or a short phrase of consecutive words.
//!
//! Kept: `Edited cmd/entire/cli/reset.go` keeps the gold `/Users/x/ws/cli/cmd/entire/cli/reset.go`
//! (worktree-relative); `decided to drop the PhaseFromString round-trip` keeps the terms
//! `[PhaseFromString, drop|remove, round-trip|roundtrip]`. Lost: `cli/reset.go` when the session also
//! edited `internal/cli/reset.go` (two files end so); `reset.go` when two files have that name; the terms
//! above when `PhaseFromString` is named in one paragraph and the removal 200 words later.

use super::text_match::{self, Haystack, Segments};
use super::Probe;
use crate::history::{self, Content};
use crate::json::Value;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeSet;
use std::sync::{LazyLock, Mutex};

/// Tokens a free-text fact's key terms must all fall within. A summary states one fact in a sentence or a
/// bullet (the Claude Code and reference summaries' bullets run 10–35 tokens); 40 lets the terms sit in
/// one sentence or two adjacent ones, and keeps terms named in unrelated paragraphs apart.
pub const TERM_SPAN: usize = 40;

use crate::data::KeptBy;

/// What the grader knows about a session: its roots and the files it touched.
#[derive(Debug, Default)]
pub struct Grader {
    /// Normalised roots (no trailing `/`), most specific first.
    roots: Vec<String>,
    /// How many distinct session files end with each component suffix (`reset.go`, `cli/reset.go`, …).
    suffix_owners: HashMap<String, usize>,
    /// The session's files, normalised (absolute where the working directory is known).
    files: BTreeSet<String>,
    /// Stems of tokens already seen (a session's histories share most of their tokens).
    stems: Mutex<HashMap<String, String>>,
}

/// One probe, ready to grade: its exact answers, its path forms, its terms.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    answers: Vec<String>,
    /// The answers normalised as paths (`normal_path`), for the path rule's exact lookup.
    answer_paths: Vec<String>,
    /// An artifact probe asks which file was *changed*: the file must be named within [`CHANGE_SPAN`] tokens
    /// of a word of change (edited, added, `Write`, …), not only listed as read.
    changed: bool,
    /// Forms of at least two components (or absolute) that name the file.
    path_forms: Vec<String>,
    /// The bare file name, when it identifies the file.
    bare_name: Option<String>,
    /// Each term's alternatives; each alternative a sequence of keys (stems or identifiers).
    terms: Vec<Vec<Vec<String>>>,
}

/// Normalises a path the way the haystack normalises tokens, without a trailing `:line[:col]`.
fn normal_path(p: &str) -> Option<String> {
    let n = text_match::normalize(p);
    if n.is_empty() || n.contains(' ') {
        return None;
    }
    Some(strip_line_suffix(&n).to_string())
}

/// `a/b.go:12:3` → `a/b.go` (a path followed by a line and column, as compilers and grep print them).
fn strip_line_suffix(token: &str) -> &str {
    match token.find(':') {
        Some(i) if i > 0 && token[i + 1..].chars().next().is_some_and(|c| c.is_ascii_digit()) => &token[..i],
        _ => token,
    }
}

/// A string that could name a file: one token, no URL, with a `/` or a short extension.
fn path_like(s: &str) -> bool {
    let s = s.trim();
    if s.is_empty() || s.len() > 300 || s.contains(char::is_whitespace) || s.contains("://") {
        return false;
    }
    let last = s.rsplit('/').next().unwrap_or(s);
    let ext = last.rsplit_once('.').map(|(stem, ext)| {
        !stem.is_empty() && (1..=6).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    (s.contains('/') && !last.is_empty()) || ext == Some(true)
}

fn join(root: &str, rel: &str) -> String {
    format!("{}/{}", root.trim_end_matches('/'), rel.trim_start_matches("./"))
}

/// Every suffix of a path's components (`a/b/c` → `c`, `b/c`, `a/b/c`), shortest first.
fn suffixes(path: &str) -> Vec<&str> {
    let trimmed = path.trim_start_matches('/');
    let mut out: Vec<&str> = trimmed.match_indices('/').map(|(i, _)| &trimmed[i + 1..]).collect();
    out.reverse();
    out.push(trimmed);
    out.retain(|s| !s.is_empty());
    out
}

/// The string arguments of every function call in a history (what its tools were pointed at).
fn call_arguments(h: &[Content], out: &mut Vec<String>) {
    fn strings(v: &Value, out: &mut Vec<String>, depth: usize) {
        match v {
            Value::String(s) => out.push(s.to_str_lossy().into_owned()),
            Value::Array(a) if depth < 3 => a.iter().for_each(|x| strings(x, out, depth + 1)),
            Value::Object(m) if depth < 3 => m.iter().for_each(|(_, x)| strings(x, out, depth + 1)),
            _ => {}
        }
    }
    for c in h {
        for p in history::parts(c) {
            if let Some(args) = history::function_call(p).and_then(|fc| fc.get("args")) {
                strings(args, out, 0);
            }
        }
    }
}

impl Grader {
    /// The grader of one session: `cwd` from the recording (`meta.extra.cwd`), files from its tool calls
    /// and from the probes' own path golds (a relative one that ends an absolute path is that file).
    pub fn new(recorded: &[Content], cwd: Option<&str>, probes: &[Probe]) -> Grader {
        let mut roots = Vec::new();
        if let Some(cwd) = cwd.and_then(normal_path) {
            // A git worktree (`<repo>/.worktrees/<name>`, `<repo>/.git/worktrees/…`) also names files
            // relative to the main checkout.
            for marker in ["/.worktrees/", "/.git/worktrees/", "/worktrees/"] {
                if let Some(i) = cwd.find(marker) {
                    roots.push(cwd[..i].to_string());
                }
            }
            roots.insert(0, cwd.trim_end_matches('/').to_string());
        }
        let mut candidates = Vec::new();
        call_arguments(recorded, &mut candidates);
        candidates.extend(probes.iter().map(|p| p.gold.clone()));
        let normal: Vec<String> = candidates.iter().filter(|c| path_like(c)).filter_map(|c| normal_path(c)).collect();
        let mut files: BTreeSet<String> = normal.iter().filter(|n| n.starts_with('/')).cloned().collect();
        // A relative path that is the tail of an absolute one is that file; others are under the root.
        for n in normal.iter().filter(|n| !n.starts_with('/')) {
            let tail = format!("/{}", n.trim_start_matches("./"));
            if files.iter().any(|f| f.starts_with('/') && f.ends_with(&tail)) {
                continue;
            }
            files.insert(match roots.first() {
                Some(root) if !n.starts_with('~') => join(root, n),
                _ => n.clone(),
            });
        }
        let mut suffix_owners: HashMap<String, usize> = HashMap::default();
        for f in &files {
            for s in suffixes(f) {
                *suffix_owners.entry(s.to_string()).or_default() += 1;
            }
        }
        Grader { roots, suffix_owners, files, stems: Mutex::new(HashMap::default()) }
    }

    /// The grader of a conversation as imported: its `cwd` from `meta.extra`.
    pub fn of_conversation(conv: &crate::datasets::Conversation, probes: &[Probe]) -> Grader {
        Grader::new(&conv.history, conv.cwd(), probes)
    }

    /// The session's files, as the path rule knows them.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(String::as_str)
    }

    fn owners(&self, suffix: &str) -> usize {
        self.suffix_owners.get(suffix).copied().unwrap_or(0)
    }

    /// The session file a path gold names: itself when absolute, else the one session file it is a tail
    /// of, else the gold under the working directory.
    fn resolve(&self, gold: &str) -> String {
        if gold.starts_with('/') {
            return gold.to_string();
        }
        let tail = format!("/{gold}");
        let mut hits = self.files.iter().filter(|f| f.ends_with(&tail) || *f == gold);
        match (hits.next(), hits.next()) {
            (Some(one), None) => one.clone(),
            _ => self.roots.first().map_or_else(|| gold.to_string(), |r| join(r, gold)),
        }
    }

    /// The probe compiled against this session.
    pub fn matcher(&self, probe: &Probe) -> Matcher {
        let answers: Vec<String> = probe.answers().map(str::to_string).collect();
        let answer_paths = answers.iter().filter_map(|a| normal_path(a)).collect();
        let changed = probe.kind == super::ProbeKind::Artifact;
        let mut m = Matcher { answers, answer_paths, changed, ..Default::default() };
        for answer in probe.answers() {
            let Some(gold) = normal_path(answer).filter(|_| path_like(answer)) else { continue };
            let named_file = gold.contains('/') || self.owners(&gold) > 0;
            if !named_file {
                continue;
            }
            let path = self.resolve(&gold);
            let mut forms = BTreeSet::new();
            if path.starts_with('/') {
                forms.insert(path.clone());
            }
            for root in &self.roots {
                if let Some(rel) = path.strip_prefix(&format!("{root}/")) {
                    if rel.contains('/') {
                        forms.insert(rel.to_string());
                    }
                }
            }
            for s in suffixes(&path).into_iter().filter(|s| s.contains('/')) {
                if self.owners(s) <= 1 {
                    forms.insert(s.to_string());
                }
            }
            // The gold as written always names its file.
            if gold.contains('/') {
                forms.insert(gold.trim_start_matches('/').to_string());
                forms.insert(gold.clone());
            }
            let name = path.rsplit('/').next().unwrap_or(&path).to_string();
            if self.owners(&name) <= 1 && m.bare_name.is_none() {
                m.bare_name = Some(name);
            }
            m.path_forms.extend(forms);
        }
        m.path_forms.sort();
        m.path_forms.dedup();
        m.terms = probe
            .terms
            .iter()
            .map(|t| {
                t.split('|')
                    .map(|alt| text_match::tokens(alt).iter().map(|w| self.key(w)).collect::<Vec<_>>())
                    .filter(|seq| !seq.is_empty())
                    .collect()
            })
            .filter(|alts: &Vec<Vec<String>>| !alts.is_empty())
            .collect();
        m
    }

    /// A matcher for the question "does this text name `file`?": the path rule of a recall probe whose gold
    /// is `file` and which also accepts `also` (other forms the caller takes as naming it), with no word of
    /// change required.
    pub fn file_matcher(&self, file: &str, also: Vec<String>) -> Matcher {
        self.matcher(&Probe {
            id: String::new(),
            conversation: String::new(),
            kind: super::ProbeKind::Recall,
            question: String::new(),
            gold: file.to_string(),
            accept: also,
            terms: Vec::new(),
            evidence: Vec::new(),
            source: crate::data::ProbeOrigin::Auto,
            note: None,
        })
    }

    /// Which rule keeps each of `matchers` in `hay` (`None`: not kept): the grader's one call. The history is
    /// indexed once for all of them.
    pub fn kept_all(&self, hay: &Haystack, matchers: &[Matcher]) -> Vec<Option<KeptBy>> {
        let index = self.index(hay, matchers);
        matchers.iter().map(|m| self.kept(m, hay, &index)).collect()
    }

    /// [`Grader::kept_all`] for the matchers at `which` only, in that order (a scored moment asks for the
    /// probes already askable; the index covers every matcher, as the moment's index always has).
    pub fn kept_some(&self, hay: &Haystack, matchers: &[Matcher], which: &[usize]) -> Vec<Option<KeptBy>> {
        let index = self.index(hay, matchers);
        which.iter().map(|&i| self.kept(&matchers[i], hay, &index)).collect()
    }

    /// Which rule keeps one matcher in `hay`.
    pub fn kept_one(&self, hay: &Haystack, matcher: &Matcher) -> Option<KeptBy> {
        self.kept_all(hay, std::slice::from_ref(matcher)).pop().flatten()
    }

    /// A token's key: its stem when it is a plain word, else the token (an identifier, matched exactly).
    pub fn key(&self, token: &str) -> String {
        if !token.chars().all(char::is_alphabetic) {
            return token.to_string();
        }
        let mut stems = self.stems.lock().expect("stem cache");
        if let Some(s) = stems.get(token) {
            return s.clone();
        }
        let s = STEMMER.stem(token).into_owned();
        if stems.len() > 1 << 20 {
            stems.clear();
        }
        stems.insert(token.to_string(), s.clone());
        s
    }

    /// Which rule keeps the probe in the history, if any (callers ask [`Grader::kept_all`]).
    fn kept(&self, m: &Matcher, hay: &Haystack, index: &HistoryIndex) -> Option<KeptBy> {
        let path_gold = !m.path_forms.is_empty() || m.bare_name.is_some();
        if !path_gold && m.answers.iter().any(|a| hay.contains(a)) {
            return Some(KeptBy::Exact);
        }
        // An artifact probe names its file by what the change introduced (its anchor, the probe's terms):
        // the history must say that too, or a reader could not tell which of the files changed it asks for.
        let anchored = !m.changed || m.terms.is_empty() || index.terms.within_span(&m.terms);
        if path_gold && !anchored {
            return None;
        }
        if path_gold {
            let named = |positions: Option<&Vec<u32>>| {
                positions.is_some_and(|ps| !m.changed || ps.iter().any(|&p| index.paths.near_change(p)))
            };
            let exact = m.answer_paths.iter().any(|a| named(index.paths.whole.get(a)));
            if exact {
                return Some(KeptBy::Exact);
            }
            if m.path_forms
                .iter()
                .any(|f| named(index.paths.whole.get(f)) || named(index.paths.tails.get(f.trim_start_matches('/'))))
            {
                return Some(KeptBy::Path);
            }
            if m.bare_name.as_ref().is_some_and(|n| named(index.paths.whole.get(n))) {
                return Some(KeptBy::BareName);
            }
        }
        if !path_gold && !m.terms.is_empty() && index.terms.within_span(&m.terms) {
            return Some(KeptBy::Terms);
        }
        None
    }

    /// What the path and term rules need of one history, for the given matchers, in one pass each.
    fn index(&self, hay: &Haystack, matchers: &[Matcher]) -> HistoryIndex {
        let wants_paths = matchers.iter().any(|m| !m.path_forms.is_empty() || m.bare_name.is_some());
        let wants_change = wants_paths && matchers.iter().any(|m| m.changed);
        let names: Vec<String> = matchers
            .iter()
            .flat_map(|m| m.terms.iter().flatten().flatten())
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // Each token's key, computed once for both rules that read it (words of change, key terms).
        let key = |t: &str| self.key(t);
        let (tokens, keys) =
            hay.keyed_tokens((wants_change || !names.is_empty()).then_some(&key as &dyn Fn(&str) -> String));
        HistoryIndex {
            paths: if wants_paths {
                let change = wants_change.then(|| (keys.as_slice(), hay.segments()));
                path_index(&tokens, change, &path_lookups(matchers))
            } else {
                PathIndex::default()
            },
            terms: self.term_index(&tokens, &keys, names),
        }
    }

    /// Where each key a term needs occurs, given the haystack's tokens and their keys.
    fn term_index(&self, tokens: &[&str], token_keys: &[&str], names: Vec<String>) -> TermIndex {
        if names.is_empty() {
            return TermIndex::default();
        }
        let ids: HashMap<&str, u32> = names.iter().enumerate().map(|(i, k)| (k.as_str(), i as u32)).collect();
        let mut positions: Vec<Vec<u32>> = vec![Vec::new(); names.len()];
        for (pos, (token, key)) in tokens.iter().zip(token_keys).enumerate() {
            let whole = ids.get(key).copied();
            if !token.contains('.') {
                if let Some(id) = whole {
                    positions[id as usize].push(pos as u32);
                }
                continue;
            }
            // `obj.attr` names `obj` and `attr`, as the exact rule's dot-split haystack does.
            let mut here: Vec<u32> = whole.into_iter().collect();
            here.extend(token.split('.').filter_map(|part| ids.get(self.key(part).as_str()).copied()));
            here.sort_unstable();
            here.dedup();
            for id in here {
                positions[id as usize].push(pos as u32);
            }
        }
        let ids = names.iter().enumerate().map(|(i, k)| (k.clone(), i as u32)).collect();
        TermIndex { ids, positions }
    }
}

/// Path-shaped tokens with their positions, and (given the tokens' keys) where words of change occur.
/// Every path [`Grader::kept`] may look up in a [`PathIndex`] for these matchers (whole or as a tail): the
/// index holds these alone, not every path-shaped token of the history.
fn path_lookups(matchers: &[Matcher]) -> HashSet<String> {
    matchers
        .iter()
        .filter(|m| !m.path_forms.is_empty() || m.bare_name.is_some())
        .flat_map(|m| {
            let forms = m.path_forms.iter().flat_map(|f| [f.clone(), f.trim_start_matches('/').to_string()]);
            m.answer_paths.iter().cloned().chain(forms).chain(m.bare_name.clone())
        })
        .collect()
}

fn path_index(tokens: &[&str], change: Option<(&[&str], Segments)>, lookups: &HashSet<String>) -> PathIndex {
    let mut index = PathIndex::default();
    let keys = change.map(|(keys, segments)| {
        index.token_segment = segments.token_segment;
        index.parent = segments.parent;
        keys
    });
    // Looked up once per word of every history scored: sets, not a scan of each list.
    static CHANGE: LazyLock<HashSet<&'static str>> = LazyLock::new(|| CHANGE_STEMS.iter().copied().collect());
    static READ: LazyLock<HashSet<&'static str>> = LazyLock::new(|| READ_STEMS.iter().copied().collect());
    for (pos, token) in tokens.iter().enumerate() {
        if let Some(keys) = keys {
            let word = token.chars().all(char::is_alphabetic);
            if word && CHANGE.contains(keys[pos]) {
                index.change.push(pos as u32);
                index.change_segments.insert(index.token_segment[pos]);
            } else if word && READ.contains(keys[pos]) {
                index.read_segments.insert(index.token_segment[pos]);
            }
        }
        if !(token.contains('/') || token.contains('.')) {
            continue;
        }
        let token = strip_line_suffix(token);
        if lookups.contains(token) {
            index.whole.entry(token.to_string()).or_default().push(pos as u32);
        }
        for (i, _) in token.match_indices('/') {
            let tail = &token[i + 1..];
            if !tail.is_empty() && lookups.contains(tail) {
                index.tails.entry(tail.to_string()).or_default().push(pos as u32);
            }
        }
    }
    index
}

/// What the path and term rules read of one history (`Grader::index`).
#[derive(Debug, Default)]
pub struct HistoryIndex {
    paths: PathIndex,
    terms: TermIndex,
}

static STEMMER: LazyLock<rust_stemmers::Stemmer> =
    LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));

/// Where each needed key occurs in one haystack.
#[derive(Debug, Default)]
struct TermIndex {
    ids: HashMap<String, u32>,
    /// Per needed key, the positions of the tokens that hold it, ascending (a dotted token may hold several
    /// keys, and is then in several lists).
    positions: Vec<Vec<u32>>,
}

impl TermIndex {
    /// Where an alternative (a sequence of keys) starts.
    fn occurrences(&self, alt: &[String]) -> Vec<u32> {
        let ids: Vec<Option<u32>> = alt.iter().map(|k| self.ids.get(k).copied()).collect();
        let Some(Some(first)) = ids.first() else { return Vec::new() };
        self.positions[*first as usize]
            .iter()
            .copied()
            .filter(|&p| {
                ids[1..].iter().enumerate().all(|(j, id)| {
                    id.is_some_and(|id| self.positions[id as usize].binary_search(&(p + j as u32 + 1)).is_ok())
                })
            })
            .collect()
    }

    /// Every term (any of its alternatives) occurs within one window of [`TERM_SPAN`] tokens.
    fn within_span(&self, terms: &[Vec<Vec<String>>]) -> bool {
        let mut events: Vec<(u32, usize)> = Vec::new();
        for (t, alts) in terms.iter().enumerate() {
            let before = events.len();
            for alt in alts {
                events.extend(self.occurrences(alt).into_iter().map(|p| (p, t)));
            }
            if events.len() == before {
                return false;
            }
        }
        events.sort_unstable();
        // The shortest window holding every term: two pointers over the merged occurrences.
        let mut count = vec![0usize; terms.len()];
        let mut covered = 0;
        let mut left = 0;
        for right in 0..events.len() {
            let t = events[right].1;
            count[t] += 1;
            if count[t] == 1 {
                covered += 1;
            }
            while covered == terms.len() {
                if events[right].0 - events[left].0 < TERM_SPAN as u32 {
                    return true;
                }
                let lt = events[left].1;
                count[lt] -= 1;
                if count[lt] == 0 {
                    covered -= 1;
                }
                left += 1;
            }
        }
        false
    }
}

/// Tokens between a changed file's name and the word that says it changed, in the same line or sentence:
/// a summary's bullet says it next to the path (`` `a.go`: added X ``, `Edited a.go`, a tool call's name
/// and its `file_path`); a list of files read with one edited file among them must not lend that word to
/// its neighbours, nor may the next bullet.
pub const CHANGE_SPAN: usize = 12;

/// Tokens after a file's name within which a bullet nested under it may say it changed (`- a.go` then
/// `  - Modified to add X`), before a code excerpt's words could.
pub const NESTED_SPAN: usize = 30;

/// Stems of the words that say a file was only looked at (`(Read)`, `grep`, `viewed`): a line that says so
/// does not take the word of change of the heading it sits under.
const READ_STEMS: &[&str] = &[
    "read", "grep", "glob", "view", "search", "list", "ls", "cat", "look", "inspect", "examin", "explor", "review",
    "open", "check", "consult", "studi",
];

/// Stems of the words that say a file was changed, and of the tools that change files (Claude Code's
/// `Edit`/`Write`/`MultiEdit`, Gemini CLI's `replace`/`write_file`, Codex's `apply_patch` patches).
const CHANGE_STEMS: &[&str] = &[
    "edit",
    "modifi",
    "modif",
    "chang",
    "updat",
    "creat",
    "write",
    "wrote",
    "written",
    "add",
    "ad",
    "fix",
    "remov",
    "delet",
    "renam",
    "refactor",
    "implement",
    "rewrit",
    "rewrot",
    "replac",
    "patch",
    "move",
    "insert",
    "extract",
    "multiedit",
    "new",
    "touch",
    "migrat",
    "introduc",
    "drop",
    "revert",
    "restor",
    "split",
    "merg",
    "generat",
    // A shell here-document (`cat > f.py << 'EOF'`) writes the file it names.
    "eof",
    // Shell commands that write the files they name (`sed -i`, `cp a a.bak`, `mv`, `tee`), and pasting or
    // saving into a file.
    "sed",
    "cp",
    "copi",
    "mv",
    "tee",
    "past",
    "save",
    "appli",
];

/// Path-shaped tokens of a haystack (whole, and every `/`-suffix) with their token positions, and the
/// positions of words of change.
#[derive(Debug, Default)]
struct PathIndex {
    whole: HashMap<String, Vec<u32>>,
    tails: HashMap<String, Vec<u32>>,
    /// Positions of words of change.
    change: Vec<u32>,
    /// The haystack's segments ([`Segments`]), and which hold a word of change or of reading.
    token_segment: Vec<u32>,
    parent: Vec<u32>,
    change_segments: HashSet<u32>,
    read_segments: HashSet<u32>,
}

impl PathIndex {
    /// The file named at this position is said to change: a word of change within [`CHANGE_SPAN`] tokens in
    /// its own segment (line or sentence), or within [`NESTED_SPAN`] tokens after it in a line nested under
    /// its line, or in the line its line is nested under (a heading or list item such as `Modified:`) when
    /// its own segment does not say the file was only read.
    fn near_change(&self, pos: u32) -> bool {
        let Some(&own) = self.token_segment.get(pos as usize) else { return false };
        let from = pos.saturating_sub(CHANGE_SPAN as u32);
        let i = self.change.partition_point(|&c| c < from);
        for &c in &self.change[i..] {
            if c > pos + NESTED_SPAN as u32 {
                break;
            }
            let segment = self.token_segment[c as usize];
            if segment == own && c <= pos + CHANGE_SPAN as u32 {
                return true;
            }
            if c > pos && self.nested_under(segment, own) {
                return true;
            }
        }
        let parent = self.parent.get(own as usize).copied().unwrap_or(Segments::NONE);
        parent != Segments::NONE && self.change_segments.contains(&parent) && !self.read_segments.contains(&own)
    }

    /// `segment` lies in a line nested (at any depth) under `ancestor`'s line.
    fn nested_under(&self, segment: u32, ancestor: u32) -> bool {
        let mut s = segment;
        for _ in 0..8 {
            match self.parent.get(s as usize) {
                Some(&p) if p == ancestor => return true,
                Some(&p) if p != Segments::NONE => s = p,
                _ => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{ProbeKind, ProbeOrigin};

    fn probe(kind: ProbeKind, gold: &str, terms: &[&str]) -> Probe {
        Probe {
            id: "p".into(),
            conversation: "c".into(),
            kind,
            question: "q?".into(),
            gold: gold.into(),
            accept: Vec::new(),
            terms: terms.iter().map(|t| t.to_string()).collect(),
            evidence: vec![0],
            source: ProbeOrigin::Manual,
            note: None,
        }
    }

    fn edit(path: &str) -> Content {
        crate::json::parse_str(&format!(
            r#"{{"role":"model","parts":[{{"functionCall":{{"name":"Edit","args":{{"file_path":"{path}","old_string":"a b","new_string":"c"}}}}}}]}}"#
        ))
        .unwrap()
    }

    fn grade(g: &Grader, p: &Probe, text: &str) -> Option<KeptBy> {
        let hay = Haystack::new(text);
        g.kept_one(&hay, &g.matcher(p))
    }

    const CWD: &str = "/Users/dev/workspace/cli/.worktrees/1";

    fn session() -> Grader {
        let h = vec![
            edit("/Users/dev/workspace/cli/.worktrees/1/cmd/entire/cli/reset.go"),
            edit("/Users/dev/workspace/cli/.worktrees/1/cmd/entire/cli/strategy/common.go"),
            edit("/Users/dev/workspace/cli/.worktrees/1/internal/strategy/common.go"),
            edit("/Users/dev/workspace/cli/.worktrees/1/README.md"),
        ];
        Grader::new(&h, Some(CWD), &[])
    }

    #[test]
    fn a_path_is_kept_in_any_form_that_identifies_the_file() {
        let g = session();
        let abs = probe(ProbeKind::Artifact, "/Users/dev/workspace/cli/.worktrees/1/cmd/entire/cli/reset.go", &[]);
        for (text, via) in [
            ("Edited /Users/dev/workspace/cli/.worktrees/1/cmd/entire/cli/reset.go today", KeptBy::Exact),
            ("- `cmd/entire/cli/reset.go`: dropped the round-trip", KeptBy::Path),
            ("fixed cli/reset.go:42: unused variable", KeptBy::Path),
            ("wrote a copy to /tmp/other/cmd/entire/cli/reset.go.", KeptBy::Path),
            ("modified entire/cli/reset.go", KeptBy::Path),
        ] {
            assert_eq!(grade(&g, &abs, text), Some(via), "{text}");
        }
        assert_eq!(grade(&g, &abs, "changed reset.go"), Some(KeptBy::BareName));
        // A relative gold resolves to the session's file; the absolute form then names it too.
        let rel = probe(ProbeKind::Artifact, "cmd/entire/cli/reset.go", &[]);
        assert_eq!(
            grade(&g, &rel, "edited /Users/dev/workspace/cli/.worktrees/1/cmd/entire/cli/reset.go"),
            Some(KeptBy::Path)
        );
        // The worktree's main checkout is another root.
        assert_eq!(grade(&g, &rel, "created /Users/dev/workspace/cli/cmd/entire/cli/reset.go"), Some(KeptBy::Path));
    }

    /// An artifact probe asks which file was changed: a file only listed (read, searched) does not answer it.
    #[test]
    fn a_changed_file_must_be_named_as_changed() {
        let g = session();
        let p = probe(ProbeKind::Artifact, "cmd/entire/cli/reset.go", &[]);
        assert_eq!(grade(&g, &p, "Files read: cmd/entire/cli/reset.go, go.mod"), None);
        assert_eq!(grade(&g, &p, "Read(cmd/entire/cli/reset.go)"), None);
        assert_eq!(grade(&g, &p, "- `cmd/entire/cli/reset.go`: removed the round-trip"), Some(KeptBy::Exact));
        let far = format!("Updated the docs. {} Looked at cmd/entire/cli/reset.go", "filler ".repeat(15));
        assert_eq!(grade(&g, &p, &far), None);
        // The same file as the answer to a recall question needs no word of change.
        let r = probe(ProbeKind::Recall, "cmd/entire/cli/reset.go", &[]);
        assert_eq!(grade(&g, &r, "Files read: cmd/entire/cli/reset.go"), Some(KeptBy::Exact));
    }

    /// Regression (#44): the reference's snapshot lists files with tool tags, one per bullet; the `(Edit)` of the
    /// next bullet lent itself to a file that was only read.
    #[test]
    fn a_word_of_change_applies_to_its_own_line_and_the_lines_under_it() {
        let g = session();
        let p = probe(ProbeKind::Artifact, "cmd/entire/cli/reset.go", &[]);
        let tagged = "- `cmd/entire/cli/reset.go` (Read)\n- `/repo/.git` (Edit)";
        assert_eq!(grade(&g, &p, tagged), None);
        assert_eq!(grade(&g, &p, "- `cmd/entire/cli/reset.go` (Edit)\n- `go.mod` (Read)"), Some(KeptBy::Exact));
        // Another sentence of the same line does not lend its word either.
        assert_eq!(grade(&g, &p, "Read cmd/entire/cli/reset.go first. Then edited go.mod"), None);
        // Claude Code's summary: the file as a bullet, what changed in the bullets nested under it.
        let nested = "3. Files and Code Sections:\n   - **`cmd/entire/cli/reset.go`**\n      - Removed the round-trip";
        assert_eq!(grade(&g, &p, nested), Some(KeptBy::Exact));
        // A heading or item the list sits under says it for every file in it, but not for one tagged as read.
        let under = "Key files modified:\n  - cmd/entire/cli/reset.go\n  - go.mod";
        assert_eq!(grade(&g, &p, under), Some(KeptBy::Exact));
        let read_under = "## Files modified and read\n- cmd/entire/cli/reset.go (Read)";
        assert_eq!(grade(&g, &p, read_under), None);
        // A tool call's name shares the line of its first argument, as the grader reads a history.
        let call: Content = crate::json::parse_str(
            r#"{"role":"model","parts":[{"functionCall":{"name":"Edit","args":{"file_path":"cmd/entire/cli/reset.go","old_string":"a","new_string":"b"}}}]}"#,
        )
        .unwrap();
        let hay = text_match::history_haystack(std::slice::from_ref(&call));
        let m = g.matcher(&p);
        assert_eq!(g.kept(&m, &hay, &g.index(&hay, std::slice::from_ref(&m))), Some(KeptBy::Exact));
    }

    /// An extracted artifact names the file by what the change introduced (its anchor, the probe's one term):
    /// a history that names the file as changed but not that does not answer which file it was.
    #[test]
    fn an_anchored_artifact_needs_its_anchor_too() {
        let g = session();
        let p = probe(ProbeKind::Artifact, "cmd/entire/cli/reset.go", &["resetShadowBranch"]);
        assert_eq!(grade(&g, &p, "- cmd/entire/cli/reset.go: edited"), None);
        assert_eq!(grade(&g, &p, "- cmd/entire/cli/reset.go: added resetShadowBranch"), Some(KeptBy::Exact));
        assert_eq!(grade(&g, &p, "added resetShadowBranch"), None, "the anchor alone names no file");
    }

    #[test]
    fn a_form_two_files_share_does_not_identify_either() {
        let g = session();
        let p =
            probe(ProbeKind::Artifact, "/Users/dev/workspace/cli/.worktrees/1/cmd/entire/cli/strategy/common.go", &[]);
        assert_eq!(grade(&g, &p, "updated common.go"), None);
        assert_eq!(grade(&g, &p, "updated strategy/common.go"), None);
        assert_eq!(grade(&g, &p, "updated cli/strategy/common.go"), Some(KeptBy::Path));
        assert_eq!(grade(&g, &p, "updated internal/strategy/common.go"), None);
        assert_eq!(grade(&g, &p, "updated cli/reset.go"), None);
        // A longer token is not the file: `reset.gox`, `cmd/entire/cli/reset.go.orig`.
        let r = probe(ProbeKind::Artifact, "cmd/entire/cli/reset.go", &[]);
        assert_eq!(grade(&g, &r, "reset.gox and cmd/entire/cli/reset.go.orig"), None);
    }

    #[test]
    fn a_root_file_is_named_by_its_name_only_when_unique() {
        let g = session();
        let p = probe(ProbeKind::Artifact, "README.md", &[]);
        assert_eq!(grade(&g, &p, "rewrote the readme.md intro"), Some(KeptBy::Exact));
        let q = probe(ProbeKind::Artifact, "/Users/dev/workspace/cli/.worktrees/1/README.md", &[]);
        assert_eq!(grade(&g, &q, "rewrote the README.md intro"), Some(KeptBy::BareName));
    }

    #[test]
    fn terms_are_kept_together_in_any_order_with_inflections_folded() {
        let g = Grader::default();
        let p = probe(
            ProbeKind::Decision,
            "drop the round-trip",
            &["PhaseFromString", "drop|remove|removed", "round-trip"],
        );
        assert_eq!(grade(&g, &p, "We removed the redundant round-trip through PhaseFromString."), Some(KeptBy::Terms));
        assert_eq!(grade(&g, &p, "Removing round-trip: state.PhaseFromString was redundant"), Some(KeptBy::Terms));
        let far = format!("PhaseFromString is used. {} Then we dropped a round-trip.", "filler ".repeat(60));
        assert_eq!(grade(&g, &p, &far), None);
        assert_eq!(grade(&g, &p, "we removed the round-trip"), None);
        // Stems fold inflections: limiting ~ limit, consumption stays itself.
        let c = probe(
            ProbeKind::Constraint,
            "stdin consumption is limiting",
            &["stdin", "consum|consumption|read", "limit"],
        );
        assert_eq!(grade(&g, &c, "the user finds that consuming stdin limits the handler"), Some(KeptBy::Terms));
        // A phrase alternative needs its words in a row.
        let s = probe(ProbeKind::Continuation, "x", &["session end|session-end", "handler"]);
        assert_eq!(grade(&g, &s, "the session end handler"), Some(KeptBy::Terms));
        assert_eq!(grade(&g, &s, "the end of the session handler"), None);
    }

    /// Regression: an accepted variant `cli/resume.go` joined to the root made a second `resume.go`, so the
    /// file's bare name no longer identified it.
    #[test]
    fn a_relative_variant_of_a_session_file_is_that_file() {
        let h = vec![edit("/Users/dev/ws/cli/cmd/entire/cli/resume.go")];
        let mut p = probe(ProbeKind::Artifact, "/Users/dev/ws/cli/cmd/entire/cli/resume.go", &[]);
        p.accept = vec!["cli/resume.go".into()];
        let q = probe(ProbeKind::Artifact, "cmd/entire/cli/resume.go", &[]);
        let g = Grader::new(&h, Some("/Users/dev/ws/cli"), &[p.clone(), q]);
        assert_eq!(g.files().count(), 1, "{:?}", g.files().collect::<Vec<_>>());
        assert_eq!(grade(&g, &p, "Updated callers in `resume.go`, `session.go`"), Some(KeptBy::BareName));
    }

    /// Regression: a dotted token named only its first needed part (`textutil.StripTags` held `textutil`).
    #[test]
    fn a_dotted_token_holds_every_part_a_term_needs() {
        let g = Grader::default();
        let p = probe(ProbeKind::Decision, "x", &["textutil", "StripTags"]);
        assert_eq!(grade(&g, &p, "call textutil.StripTags first"), Some(KeptBy::Terms));
    }

    #[test]
    fn identifiers_in_terms_match_whole_tokens_only() {
        let g = Grader::default();
        let p = probe(ProbeKind::Decision, "x", &["max_retries", "raise|increase"]);
        assert_eq!(grade(&g, &p, "raised max_retries to 5"), Some(KeptBy::Terms));
        assert_eq!(grade(&g, &p, "raised max_retries_total to 5"), None);
        assert_eq!(grade(&g, &p, "increase config.max_retries"), Some(KeptBy::Terms));
    }
}
