//! Probe hygiene: probes that cannot measure what compression lost, whatever their origin. `probes check`
//! reports them; scoring excludes them ([`super::load_scored_probes`]); the extractor never writes them.

use super::grader::Grader;
use super::text_match::{self, Haystack};
use super::Probe;
use crate::data::ProbeKind;
use crate::data::{Lint, LintKind};
use crate::datasets::Conversation;
use crate::history::{self, Content};
use std::collections::{BTreeMap, BTreeSet};

/// A gold is the fact asked (an identifier, a number, a path, a name, a short directive): more than this
/// many normalised words is a passage, which a summary that states the fact in its own words fails.
pub const MAX_GOLD_WORDS: usize = 8;

/// Files an agent reads into every request (Claude Code's `CLAUDE.md`, Codex's `AGENTS.md`, Gemini CLI's
/// `GEMINI.md`): what they say is not the history's to lose.
const INSTRUCTION_FILES: [&str; 3] = ["claude.md", "agents.md", "gemini.md"];

/// What the agent is given at the start of every request, as far as the recording shows it: the system
/// instruction, tool outputs of reads of an instruction file, `CLAUDE.md:12:…` lines of searches in one,
/// and the instruction blocks agents inject into the first messages (`Contents of …/CLAUDE.md`,
/// `<user_instructions>`).
pub fn start_context(conv: &Conversation) -> Haystack {
    let mut pieces: Vec<String> = conv.system_instruction.iter().cloned().collect();
    // The names are ASCII, so ASCII case folding finds them wherever full folding would, and keeps every
    // byte where it was: a line of the folded text is the same line of the text.
    let slashed: Vec<String> = INSTRUCTION_FILES.iter().map(|f| format!("/{f}")).collect();
    let cited: Vec<String> = INSTRUCTION_FILES.iter().map(|f| format!("{f}:")).collect();
    let cited_path: Vec<String> = INSTRUCTION_FILES.iter().map(|f| format!("/{f}:")).collect();
    let names_instruction_file = |s: &str| {
        let lower = s.to_ascii_lowercase();
        INSTRUCTION_FILES.iter().zip(&slashed).any(|(f, sf)| lower.ends_with(sf.as_str()) || lower == *f)
    };
    let mut reads_instructions = false;
    for c in &conv.history {
        let mut next_reads = false;
        for p in history::parts(c) {
            if let Some(args) = history::function_call(p).and_then(|fc| fc.get("args")) {
                let text = text_match::part_text(args);
                next_reads |= text.lines().any(|l| names_instruction_file(l.trim()));
            }
            let text = text_match::part_text(p);
            if history::function_response(p).is_some() && reads_instructions {
                pieces.push(text.clone());
            }
            let lower = text.to_ascii_lowercase();
            if lower.contains("<user_instructions>")
                || (lower.contains("contents of ") && INSTRUCTION_FILES.iter().any(|f| lower.contains(f)))
            {
                pieces.push(text.clone());
            }
            if !INSTRUCTION_FILES.iter().any(|f| lower.contains(f)) {
                continue;
            }
            for (line, l) in text.lines().zip(lower.lines()) {
                let l = l.trim_start();
                if cited.iter().zip(&cited_path).any(|(c, cp)| l.starts_with(c.as_str()) || l.contains(cp.as_str())) {
                    pieces.push(line.to_string());
                }
            }
        }
        if history::is_model(c) {
            reads_instructions = next_reads;
        }
    }
    Haystack::of_lines(pieces)
}

/// Normalised golds of a source's probes, by gold, with the conversations they occur in.
pub type GoldIndex = BTreeMap<String, BTreeSet<String>>;

/// Indexes the golds of every conversation of one source.
pub fn gold_index<'a>(probes: impl IntoIterator<Item = &'a Probe>) -> GoldIndex {
    let mut index = GoldIndex::new();
    for p in probes {
        index.entry(text_match::normalize(&p.gold)).or_default().insert(p.conversation.clone());
    }
    index
}

/// A question made of a loose list of words (`What did the user require about use, non-interactive, flags?`)
/// or too short to ask anything.
pub fn garbled(question: &str) -> bool {
    let words = question.split_whitespace().count();
    let tail = question.trim_end_matches('?');
    let list = tail.rsplit(" about ").next().is_some_and(|t| {
        let items: Vec<&str> = t.split(", ").collect();
        items.len() >= 3 && items.iter().all(|w| !w.contains(' '))
    });
    words < 4 || list
}

static TURN_NUMBER: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)\b(?:turn|message|step) #?\d+\b").expect("valid regex"));

/// A quoted hint of the question that holds nothing but whitespace or punctuation (`` (``) ``, `""`).
pub fn empty_hint(question: &str) -> Option<String> {
    static QUOTED: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r#"`([^`]*)`|"([^"]*)""#).expect("valid regex"));
    QUOTED.captures_iter(question).find_map(|m| {
        let inner = m.get(1).or_else(|| m.get(2)).map_or("", |g| g.as_str());
        (!inner.chars().any(char::is_alphanumeric)).then(|| m[0].to_string())
    })
}

/// Words that cannot end a phrase (articles, prepositions, conjunctions, auxiliaries waiting for their verb).
const DANGLING_END: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "from", "with", "into", "onto", "and", "or", "but",
    "nor", "which", "whose", "than", "as", "if", "will", "would", "should", "can", "could", "must", "its", "their",
    "our", "your", "my", "his", "her", "via", "between", "per",
];
/// Words that cannot start a fact cut from a sentence (it continues an earlier clause).
const DANGLING_START: &[&str] = &["and", "or", "but", "nor", "of", "than"];

/// Why a gold reads as a fragment cut from a sentence, if it does: a bracket or quote it opens and does not
/// close (or closes and did not open), a last word that waits for more, a first word that continues a clause.
pub fn fragment(gold: &str) -> Option<String> {
    let gold = gold.trim();
    for (open, close) in [('(', ')'), ('[', ']'), ('{', '}')] {
        let (o, c) = (gold.matches(open).count(), gold.matches(close).count());
        if o != c {
            return Some(format!("has {o} `{open}` and {c} `{close}`"));
        }
    }
    if gold.matches('"').count() % 2 == 1 || gold.matches('`').count() % 2 == 1 {
        return Some("leaves a quote open".into());
    }
    // Plain words only: a path, identifier or number ends a phrase whatever it is.
    let words: Vec<&str> = gold.split_whitespace().collect();
    if words.len() < 2 {
        return None;
    }
    let plain = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    let last = plain(words[words.len() - 1]);
    let ends_clause = words[words.len() - 1].ends_with(['.', '!', '?']);
    if !ends_clause && DANGLING_END.contains(&last.as_str()) {
        return Some(format!("ends with `{last}`"));
    }
    let first = plain(words[0]);
    if DANGLING_START.contains(&first.as_str()) {
        return Some(format!("starts with `{first}`"));
    }
    None
}

/// The command behind an evidence Content exited with code 0 (mini-swe-agent's `<returncode>`, SWE-agent's
/// and Gemini CLI's `Exit Code: 0`).
fn exited_zero(c: &Content) -> bool {
    let t = text_match::content_text(c);
    t.contains("<returncode>0</returncode>") || t.contains("Exit Code: 0")
}

/// Lints of one conversation's probes (all origins), given the source's gold index (`None`: skip the
/// shared-gold check) and the conversation (`None`: skip the checks that read it).
pub fn lint_conversation(probes: &[Probe], golds: Option<&GoldIndex>, conv: Option<&Conversation>) -> Vec<Lint> {
    let mut out = Vec::new();
    let mut questions: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for p in probes {
        questions.entry(text_match::normalize(&p.question)).or_default().push(&p.id);
    }
    let grader = match conv {
        Some(c) => Grader::of_conversation(c, probes),
        None => Grader::new(&[], None, probes),
    };
    let at_start = conv.map(start_context);
    for p in probes {
        let lint =
            |kind, message: String| Lint { conversation: p.conversation.clone(), probe: p.id.clone(), kind, message };
        let gold = text_match::normalize(&p.gold);
        if let Some(others) = golds.and_then(|g| g.get(&gold)) {
            let elsewhere: Vec<&String> = others.iter().filter(|c| **c != p.conversation).collect();
            if !elsewhere.is_empty() {
                out.push(lint(
                    LintKind::SharedGold,
                    format!(
                        "gold `{}` is also a gold in {} other conversation(s), e.g. {}",
                        p.gold,
                        elsewhere.len(),
                        elsewhere[0]
                    ),
                ));
            }
        }
        let words = gold.split(' ').count();
        if words > MAX_GOLD_WORDS {
            out.push(lint(
                LintKind::LongGold,
                format!("gold has {words} words (at most {MAX_GOLD_WORDS}): ask for the fact"),
            ));
        }
        let matcher = grader.matcher(p);
        let keeps = |hay: &Haystack| grader.kept_one(hay, &matcher);
        if keeps(&Haystack::new(&p.question)).is_some() {
            out.push(lint(LintKind::GoldInQuestion, "the question alone holds the answer".into()));
        }
        if let Some(c) = conv {
            let evidence =
                Haystack::of_lines(p.evidence.iter().filter_map(|&e| c.history.get(e)).map(text_match::graded_text));
            if keeps(&evidence).is_none() {
                out.push(lint(
                    LintKind::DeadGold,
                    format!("`{}` is not found in its evidence {:?}", p.gold, p.evidence),
                ));
            }
            if at_start.as_ref().is_some_and(|h| keeps(h).is_some()) {
                out.push(lint(
                    LintKind::KnownAtStart,
                    "the agent is given this at the start (system prompt or instruction file)".into(),
                ));
            }
        }
        let same = &questions[&text_match::normalize(&p.question)];
        if same.len() > 1 {
            let others: Vec<&str> = same.iter().copied().filter(|id| *id != p.id).collect();
            out.push(lint(LintKind::DuplicateQuestion, format!("same question as {}", others.join(", "))));
        }
        let asks_error = p.kind == ProbeKind::Recall && p.question.to_lowercase().contains("error");
        if asks_error {
            if let Some(c) = conv {
                if p.evidence.iter().filter_map(|&e| c.history.get(e)).any(exited_zero) {
                    out.push(lint(LintKind::SucceededError, "the evidence command exited with code 0".into()));
                }
            }
        }
        if garbled(&p.question) {
            out.push(lint(LintKind::GarbledQuestion, format!("`{}`", p.question)));
        }
        if let Some(turn) = TURN_NUMBER.find(&p.question) {
            out.push(lint(LintKind::TurnNumber, format!("`{}`: the agent never sees turn numbers", turn.as_str())));
        }
        if let Some(hint) = empty_hint(&p.question) {
            out.push(lint(LintKind::EmptyHint, format!("the hint `{hint}` names nothing")));
        }
        if let Some(why) = fragment(&p.gold) {
            out.push(lint(LintKind::FragmentGold, format!("gold `{}` {why}", p.gold)));
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::ProbeOrigin;

    fn probe(conv: &str, id: &str, q: &str, gold: &str, evidence: usize) -> Probe {
        Probe {
            id: id.into(),
            conversation: conv.into(),
            kind: ProbeKind::Recall,
            question: q.into(),
            gold: gold.into(),
            accept: vec![],
            terms: Vec::new(),
            evidence: vec![evidence],
            source: ProbeOrigin::Auto,
            note: None,
        }
    }

    #[test]
    fn each_lint_fires_on_its_case_and_not_on_a_clean_probe() {
        let history: Vec<Content> = vec![
            crate::history::user_text(
                "Fix the bug. DO NOT MODIFY: Tests in the tests directory must stay as they are now",
            ),
            crate::history::user_text("<returncode>0</returncode>\nValueError: bad value in the source text"),
            crate::history::user_text("port 8080 busy"),
        ];
        let a = vec![
            probe("a", "p1", "What rule did the task state about tests?", "DO NOT MODIFY: Tests", 0),
            probe(
                "a",
                "p2",
                "Which line said the tests must stay?",
                "DO NOT MODIFY: Tests in the tests directory must stay as they are now",
                0,
            ),
            probe("a", "p3", "What error did the command `cat x.py` report?", "ValueError: bad value", 1),
            probe("a", "p4", "What did the user require about use, non-interactive, flags?", "port 8080", 2),
            probe("a", "p5", "Which port was busy?", "8080", 2),
            probe("a", "p6", "Which port was busy?", "port 8080", 2),
        ];
        let b = vec![probe("b", "p1", "What rule did the task state about tests?", "DO NOT MODIFY: Tests", 0)];
        let index = gold_index(a.iter().chain(&b));
        let conv = Conversation { history, ..Default::default() };
        let lints = lint_conversation(&a, Some(&index), Some(&conv));
        let of = |id: &str| lints.iter().filter(|l| l.probe == id).map(|l| l.kind).collect::<Vec<_>>();
        assert_eq!(of("p1"), [LintKind::SharedGold]);
        assert_eq!(of("p2"), [LintKind::LongGold]);
        assert_eq!(of("p3"), [LintKind::SucceededError]);
        assert_eq!(of("p4"), [LintKind::GarbledQuestion]);
        assert_eq!(of("p5"), [LintKind::DuplicateQuestion]);
        assert_eq!(of("p6"), [LintKind::DuplicateQuestion]);
        assert!(lints.iter().all(|l| l.to_string().starts_with("a: p")));
        // Questions no reader could answer, golds cut from a sentence (#44).
        let c = vec![
            probe("c", "q1", "Which file did the agent change with `Edit` (``) (turn 55)?", "port 8080", 2),
            probe("c", "q2", "Which file did the agent change with `Edit` (``)?", "port 8080", 2),
            probe(
                "c",
                "q3",
                "What did the agent say about the checkpoint?",
                "of checkpoint ID and session ID in the",
                2,
            ),
            probe("c", "q4", "Why did the agent wait for the checkpoint?", "it doesn't get imported by them)", 2),
            probe("c", "q5", "Which port did the server say was busy?", "8080", 2),
        ];
        let lints = lint_conversation(&c, None, None);
        let of = |id: &str| lints.iter().filter(|l| l.probe == id).map(|l| l.kind).collect::<Vec<_>>();
        assert_eq!(of("q1"), [LintKind::TurnNumber, LintKind::EmptyHint]);
        assert_eq!(of("q2"), [LintKind::EmptyHint]);
        assert_eq!(of("q3"), [LintKind::FragmentGold]);
        assert_eq!(of("q4"), [LintKind::FragmentGold]);
        assert_eq!(of("q5"), Vec::<LintKind>::new());
        assert!([LintKind::TurnNumber, LintKind::EmptyHint, LintKind::FragmentGold, LintKind::DuplicateQuestion]
            .iter()
            .all(|k| k.is_error()));
        // Without the index and the history only the self-contained checks run.
        let alone = lint_conversation(&a[..1], None, None);
        assert!(alone.is_empty(), "{alone:?}");
    }
}
