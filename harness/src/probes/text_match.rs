//! The text primitives of grading: answer normalisation, exact match, token F1, containment of an answer in
//! a history. When a history keeps a probe (exact, path and key-term rules) is decided in [`super::grader`].
//!
//! Normalisation makes surface differences that do not change an answer compare equal: case, punctuation
//! around words, `./` path prefixes, thousands separators (`1,000` = `1000`), whitespace. Characters that
//! carry meaning inside tokens (`/ . _ - : @ #`) are kept there, so `src/a.py` stays one token.

use crate::data::AnswerGrade;
use crate::history::{self, Content};
use crate::json::Value;
use compactbench_core::memo::DigestMemo;
use std::collections::BTreeMap;

/// Characters kept inside a token (paths, identifiers, versions, times).
fn inner_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | ':' | '@' | '#' | '$' | '%' | '+')
}

/// Lowercased tokens with surface noise removed.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_token(text, |t| out.push(t.to_string()));
    out
}

/// The normalised text: tokens joined by single spaces.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    each_token(text, |t| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    });
    out
}

/// Calls `f` with each token of `text` in order, without allocating per token: the lowercased text with
/// thousands separators dropped and other characters than [`inner_char`] made spaces, split at
/// whitespace, each piece without its leading `./` and the sentence punctuation around it.
fn each_token(text: &str, mut f: impl FnMut(&str)) {
    let lower = text.to_lowercase();
    let mut cleaned = String::with_capacity(lower.len());
    // The previous character (a thousands separator needs a digit before it), and what follows it.
    let mut prev: Option<char> = None;
    let mut rest = lower.chars();
    while let Some(c) = rest.next() {
        // A comma between a digit and exactly three digits is a thousands separator.
        let thousands = c == ',' && prev.is_some_and(|p| p.is_ascii_digit()) && {
            let mut ahead = rest.clone();
            (0..3).all(|_| ahead.next().is_some_and(|d| d.is_ascii_digit()))
                && !ahead.next().is_some_and(|d| d.is_ascii_digit())
        };
        prev = Some(c);
        if thousands {
            continue;
        }
        cleaned.push(if inner_char(c) { c } else { ' ' });
    }
    for piece in cleaned.split_whitespace() {
        let mut t = piece;
        while let Some(rest) = t.strip_prefix("./") {
            t = rest;
        }
        // Sentence punctuation around a token is not part of it; `/` at the start is (absolute paths).
        let t = t.trim_matches(|c: char| matches!(c, '.' | ':' | '-' | '#' | '@' | '+'));
        if !t.is_empty() {
            f(t);
        }
    }
}

/// Normalised answers equal.
pub fn exact_match(answer: &str, gold: &str) -> bool {
    let g = normalize(gold);
    !g.is_empty() && normalize(answer) == g
}

/// SQuAD-style token F1 (bag of tokens).
pub fn token_f1(answer: &str, gold: &str) -> f64 {
    let a = tokens(answer);
    let g = tokens(gold);
    if a.is_empty() || g.is_empty() {
        return 0.0;
    }
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for t in &g {
        *counts.entry(t).or_default() += 1;
    }
    let mut common = 0i64;
    for t in &a {
        if let Some(n) = counts.get_mut(t.as_str()) {
            if *n > 0 {
                *n -= 1;
                common += 1;
            }
        }
    }
    if common == 0 {
        return 0.0;
    }
    let p = common as f64 / a.len() as f64;
    let r = common as f64 / g.len() as f64;
    2.0 * p * r / (p + r)
}

/// A normalised haystack, searched for whole-token phrases.
#[derive(Clone, Debug, Default)]
pub struct Haystack {
    text: String,
    /// The same with tokens also split at dots and slashes, so `attr` is found in `obj.attr` (`Coder.flag` →
    /// `flag`) and an id in a URL path.
    dotless: String,
    /// The pieces `text` joins, with what is kept per piece ([`Haystack::keyed_tokens`]).
    pieces: Vec<std::sync::Arc<NormalPiece>>,
}

/// Two haystacks are equal when their texts are, however they were pieced.
impl PartialEq for Haystack {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.dotless == other.dotless
    }
}

/// One piece's normalised text and its dot-split form, and its tokens' keys once a grader asked for them.
#[derive(Debug)]
struct NormalPiece {
    text: String,
    dotless: String,
    keys: std::sync::OnceLock<Vec<String>>,
    /// Where each token sits in the piece's lines and sentences ([`Segments`]).
    segments: Segments,
}

impl NormalPiece {
    fn of(piece: &str) -> Self {
        let text = normalize(piece);
        let tokens = text.split(' ').filter(|t| !t.is_empty()).count();
        let segments = Segments::of(piece, tokens);
        NormalPiece { dotless: split_dots(&text), text, keys: std::sync::OnceLock::new(), segments }
    }

    fn tokens(&self) -> impl Iterator<Item = &str> {
        self.text.split(' ').filter(|t| !t.is_empty())
    }
}

/// One piece's normalised text and its dot-split form, kept per piece by digest ([`DigestMemo`]).
fn normalized_piece(piece: &str) -> std::sync::Arc<NormalPiece> {
    // Characters of normalised text kept before the memo starts afresh.
    static PIECES: DigestMemo<std::sync::Arc<NormalPiece>> =
        DigestMemo::new(256 << 20, |p| p.text.len() + p.dotless.len());
    PIECES.get(piece, |piece| std::sync::Arc::new(NormalPiece::of(piece)))
}

/// The text's segments: each line, cut at sentence ends (`. `, `! `, `? `), is one or more segments; a line
/// indented deeper than the line above it (a nested list item, a heading's paragraphs) has that line's first
/// segment as its parent. What a summary says of a file in one bullet, or in the bullets nested under it,
/// is said of that file; what its neighbour's bullet says is not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segments {
    /// Per token, its segment.
    pub token_segment: Vec<u32>,
    /// Per segment, its parent segment ([`Segments::NONE`] for none).
    pub parent: Vec<u32>,
}

impl Segments {
    pub const NONE: u32 = u32::MAX;

    /// The segments of a raw text whose normalised form has `tokens` tokens; one segment for the whole text
    /// if the per-segment tokens do not add up to that (they always should: a token never spans whitespace).
    fn of(raw: &str, tokens: usize) -> Segments {
        let mut out = Segments::default();
        // Open lines: (indent, first segment), shallowest first.
        let mut open: Vec<(i32, u32)> = Vec::new();
        for line in raw.split('\n') {
            let trimmed = line.trim_start();
            if trimmed.trim().is_empty() {
                continue;
            }
            let indent = match trimmed.bytes().take_while(|&b| b == b'#').count() {
                // A Markdown heading holds what follows it, and a shallower heading holds a deeper one.
                level @ 1..=6 if trimmed.as_bytes().get(level) == Some(&b' ') => level as i32 - 10,
                _ => line[..line.len() - trimmed.len()].chars().map(|c| if c == '\t' { 4 } else { 1 }).sum(),
            };
            while open.last().is_some_and(|&(i, _)| i >= indent) {
                open.pop();
            }
            let parent = open.last().map_or(Self::NONE, |&(_, s)| s);
            let first = out.parent.len() as u32;
            for sentence in sentence_spans(trimmed) {
                let segment = out.parent.len() as u32;
                out.parent.push(parent);
                each_token(sentence, |_| out.token_segment.push(segment));
            }
            if out.parent.len() as u32 > first {
                open.push((indent, first));
            }
        }
        if out.token_segment.len() != tokens {
            return Segments { token_segment: vec![0; tokens], parent: vec![Self::NONE] };
        }
        out
    }
}

/// A line cut after each `.`, `!` or `?` that a space follows.
fn sentence_spans(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = line;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let bytes = rest.as_bytes();
        let end = (0..bytes.len().saturating_sub(1))
            .find(|&i| matches!(bytes[i], b'.' | b'!' | b'?') && bytes[i + 1] == b' ')
            .map_or(rest.len(), |i| i + 1);
        let (sentence, tail) = rest.split_at(end);
        rest = tail;
        Some(sentence)
    })
}

/// The normalised text with tokens also split at dots and slashes: `obj.attr` names `attr`, and an id in a
/// URL or API path (`pulls/comments/2778486622`) names that id.
fn split_dots(normalized: &str) -> String {
    normalized.split([' ', '.', '/']).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" ")
}

impl Haystack {
    pub fn new(text: &str) -> Self {
        let piece = NormalPiece::of(text);
        Haystack {
            dotless: format!(" {} ", piece.dotless),
            text: format!(" {} ", piece.text),
            pieces: vec![std::sync::Arc::new(piece)],
        }
    }

    /// `Haystack::new` of the pieces each followed by a line break, built from each piece's normalised
    /// text. A token never spans a line break (it is not a token character, a thousands separator needs
    /// digits on both sides, and case mapping does not look across it), so the normalised whole is the
    /// normalised pieces joined by spaces. Pieces are remembered by digest: a sweep reads the same
    /// recorded Contents in every cell of a conversation.
    pub fn of_lines<S: AsRef<str>>(pieces: impl IntoIterator<Item = S>) -> Self {
        let (mut text, mut dotless) = (String::from(" "), String::from(" "));
        let mut kept = Vec::new();
        for piece in pieces {
            let normal = normalized_piece(piece.as_ref());
            if !normal.text.is_empty() {
                text.push_str(&normal.text);
                text.push(' ');
            }
            if !normal.dotless.is_empty() {
                dotless.push_str(&normal.dotless);
                dotless.push(' ');
            }
            kept.push(normal);
        }
        // An empty text is still wrapped in two spaces, as `Haystack::new` wraps it.
        for s in [&mut text, &mut dotless] {
            if s.len() == 1 {
                s.push(' ');
            }
        }
        Haystack { text, dotless, pieces: kept }
    }

    /// The normalised text's tokens, and with `key` (a function of the token alone, e.g. its stem) each
    /// token's key: computed once per piece, which is remembered by digest, so a history scored at many
    /// moments keys each recorded Content once, not at every moment.
    pub fn keyed_tokens(&self, key: Option<&dyn Fn(&str) -> String>) -> (Vec<&str>, Vec<&str>) {
        let tokens = self.pieces.iter().flat_map(|p| p.tokens()).collect();
        let Some(key) = key else { return (tokens, Vec::new()) };
        let keys = self
            .pieces
            .iter()
            .flat_map(|p| p.keys.get_or_init(|| p.tokens().map(key).collect()).iter().map(String::as_str))
            .collect();
        (tokens, keys)
    }

    /// Where each token sits in the lines and sentences of its piece ([`Segments`]), over the whole
    /// haystack: segment ids are numbered on from piece to piece, and no segment's parent lies in another
    /// piece.
    pub fn segments(&self) -> Segments {
        let mut out = Segments::default();
        for p in &self.pieces {
            let offset = out.parent.len() as u32;
            out.token_segment.extend(p.segments.token_segment.iter().map(|s| s + offset));
            out.parent.extend(p.segments.parent.iter().map(|&s| if s == Segments::NONE { s } else { s + offset }));
        }
        out
    }

    /// The normalised text: tokens separated by single spaces, with a space at each end.
    pub fn normalized(&self) -> &str {
        &self.text
    }

    /// The whole normalised `needle` occurs at token boundaries, dots not counting as boundaries (a path
    /// is not found inside `path.orig`).
    pub fn contains_whole(&self, needle: &str) -> bool {
        let n = normalize(needle);
        !n.is_empty() && self.text.contains(&format!(" {n} "))
    }

    /// The whole normalised `needle` occurs at token boundaries (dots and slashes count as boundaries too).
    pub fn contains(&self, needle: &str) -> bool {
        let n = normalize(needle);
        !n.is_empty()
            && (self.text.contains(&format!(" {n} ")) || self.dotless.contains(&format!(" {} ", split_dots(&n))))
    }
}

/// The gold answer (normalised) occurs in the answer at token boundaries.
pub fn contains_answer(answer: &str, gold: &str) -> bool {
    Haystack::new(answer).contains(gold)
}

/// Every string in a Content's parts (text, call arguments, tool outputs): what the agent would read.
pub fn content_text(c: &Content) -> String {
    content_strings(c, Layout::Lines)
}

/// [`content_text`] as the grader reads it: a function call's name on the line of its first argument
/// (`Edit /src/a.go`), so that the tool that changed a file and the file share a line
/// ([`Haystack::segments`]). The same tokens as [`content_text`]; only line breaks differ.
pub fn graded_text(c: &Content) -> String {
    content_strings(c, Layout::CallOnOneLine)
}

fn content_strings(c: &Content, layout: Layout) -> String {
    let mut out = String::new();
    for p in history::parts(c) {
        if history::is_thought(p) {
            continue;
        }
        collect_strings(p, &mut out, layout);
    }
    out
}

/// Every string in one part (text, call name and arguments, tool output), as [`content_text`] reads it.
pub fn part_text(p: &Value) -> String {
    let mut out = String::new();
    collect_strings(p, &mut out, Layout::Lines);
    out
}

/// One part as [`graded_text`] reads it.
pub fn graded_part_text(p: &Value) -> String {
    let mut out = String::new();
    collect_strings(p, &mut out, Layout::CallOnOneLine);
    out
}

/// How strings are laid out: each on its own line, or a function call's name before its first argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Lines,
    CallOnOneLine,
}

/// Strings and numbers, each followed by a line break, in document order (numbers as `serde_json` writes
/// them: the text these figures were first defined on).
fn collect_strings(v: &Value, out: &mut String, layout: Layout) {
    match v {
        Value::String(s) => {
            out.push_str(&s.to_str_lossy());
            out.push('\n');
        }
        Value::Number(_) => {
            if let serde_json::Value::Number(n) = v.to_serde() {
                out.push_str(&n.to_string());
                out.push('\n');
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out, layout)),
        Value::Object(m) => {
            let call = layout == Layout::CallOnOneLine && v.get("name").is_some() && v.get("args").is_some();
            for (k, x) in m.iter() {
                // Ids and signatures are transport details, not content; an image's base64 is no text.
                let k = k.to_str_lossy();
                if k != "id" && k != "thoughtSignature" && k != "inlineData" {
                    collect_strings(x, out, layout);
                    if call && k == "name" && out.ends_with('\n') {
                        out.pop();
                        out.push(' ');
                    }
                }
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// The normalised text of a whole history.
pub fn history_haystack(h: &[Content]) -> Haystack {
    Haystack::of_lines(h.iter().map(graded_text))
}

pub fn grade_answer<'a>(answer: &str, accepted: impl IntoIterator<Item = &'a str>) -> AnswerGrade {
    let hay = Haystack::new(answer);
    let mut g = AnswerGrade::default();
    for gold in accepted {
        g.exact |= exact_match(answer, gold);
        g.contains |= hay.contains(gold);
        g.f1 = g.f1.max(token_f1(answer, gold));
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first implementation (a char vector, a `String` per token, joined): the one-pass version must
    /// give the same tokens, so every stored grade stays what it was.
    fn tokens_by_vectors(text: &str) -> Vec<String> {
        let lower = text.to_lowercase();
        let chars: Vec<char> = lower.chars().collect();
        let mut cleaned = String::with_capacity(lower.len());
        for (i, &c) in chars.iter().enumerate() {
            let thousands = c == ','
                && i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1..i + 4).is_some_and(|d| d.iter().all(char::is_ascii_digit))
                && !chars.get(i + 4).is_some_and(char::is_ascii_digit);
            if thousands {
                continue;
            }
            cleaned.push(if inner_char(c) { c } else { ' ' });
        }
        cleaned
            .split_whitespace()
            .filter_map(|t| {
                let mut t = t;
                while let Some(rest) = t.strip_prefix("./") {
                    t = rest;
                }
                let t = t.trim_matches(|c: char| matches!(c, '.' | ':' | '-' | '#' | '@' | '+'));
                (!t.is_empty()).then(|| t.to_string())
            })
            .collect()
    }

    proptest! {
        /// Built from pieces (some long enough to be remembered) as from the whole text.
        #[test]
        fn a_haystack_of_lines_is_the_haystack_of_the_lines_joined(
            pieces in prop::collection::vec(("[0-9,.ΣσA-Za-z /\\n-]{0,30}", 1usize..20), 0..6)
        ) {
            let pieces: Vec<String> = pieces.into_iter().map(|(p, n)| p.repeat(n)).collect();
            let whole: String = pieces.iter().map(|p| format!("{p}\n")).collect();
            prop_assert_eq!(Haystack::of_lines(&pieces), Haystack::new(&whole));
            prop_assert_eq!(Haystack::of_lines(&pieces), Haystack::of_lines(&pieces));
        }

        #[test]
        fn one_pass_tokens_equal_the_first_implementations(text in "[0-9,./:#@+ a-zA-ZİẞΣé_\\-\n]{0,80}") {
            let expected = tokens_by_vectors(&text);
            prop_assert_eq!(&tokens(&text), &expected);
            prop_assert_eq!(normalize(&text), expected.join(" "));
        }
    }

    #[test]
    fn normalisation_ignores_surface_differences() {
        assert!(exact_match("The Answer.", "the answer"));
        assert!(exact_match("  src/a.py  ", "./src/a.py"));
        assert!(exact_match("`src/a.py`", "src/a.py"));
        assert!(exact_match("1,000", "1000"));
        assert!(exact_match("12,345,678 rows", "12345678 rows"));
        assert!(exact_match("a\n\tb", "a b"));
        assert!(exact_match("\"Hello, World!\"", "hello world"));
        // A comma that is not a thousands separator separates tokens.
        assert_eq!(tokens("1,2"), ["1", "2"]);
        assert_eq!(tokens("1,0000"), ["1", "0000"]);
        // Meaningful inner punctuation stays: versions, absolute paths, identifiers.
        assert_eq!(tokens("v0.50.1-dev /usr/bin/x user_id"), ["v0.50.1-dev", "/usr/bin/x", "user_id"]);
        assert!(!exact_match("src/a.py", "src/b.py"));
        assert!(!exact_match("", ""));
    }

    #[test]
    fn containment_is_at_token_boundaries() {
        assert!(contains_answer("I edited ./src/a.py today.", "src/a.py"));
        assert!(contains_answer("Total: 1,000 items", "1000 items"));
        assert!(!contains_answer("ran 10000 tests", "1000"));
        assert!(!contains_answer("cat", "concatenate"));
        assert!(contains_answer("add a Coder.commit_before_message variable", "commit_before_message"));
        assert!(!contains_answer("src/a.pyc", "src/a.py"));
        assert!(!contains_answer("anything", "  ...  "));
    }

    #[test]
    fn token_f1_is_bag_of_words() {
        assert_eq!(token_f1("a b c", "a b c"), 1.0);
        assert_eq!(token_f1("x", "a"), 0.0);
        let f = token_f1("the file src/a.py", "src/a.py");
        assert!((f - 0.5).abs() < 1e-9, "{f}");
        let g = grade_answer("It is SRC/A.PY", ["nope", "./src/a.py"]);
        assert!(g.contains && !g.exact && g.f1 > 0.0);
    }

    #[test]
    fn content_text_reads_calls_and_outputs() {
        let c = crate::json::parse_str(
            r#"{"role":"user","parts":[{"functionResponse":{"id":"call_9","name":"bash","response":{"output":"<returncode>2</returncode>\nNo such file"}}}]}"#,
        )
        .unwrap();
        let h = history_haystack(&[c]);
        assert!(h.contains("No such file") && h.contains("returncode 2"));
        assert!(!h.contains("call_9"));
    }
}
