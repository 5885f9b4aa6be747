//! What happened after each of the agent's own compactions, read from the recording: the rework the
//! agent did (files read again, commands run again, instructions the user typed again), how long it took to
//! make its next change, what each summary carried over from the one before, and what the compaction cost
//! in the provider's prompt cache. Pure functions of an imported conversation; the columns are defined in
//! `harness/docs/rework.md`, the figures in the figure table (`metrics::FigureId`, level `compaction`), and
//! `report::rework` renders them.
//!
//! The span after compaction *n* runs from the first Content after it to the next compaction or the end.
//! Every count is also taken over a **control span**: the same number of model turns just before the
//! compaction, counted against what came before that span. Agents re-read and re-run as they work; the
//! difference between the two spans is what the compaction added.

pub mod calls;
pub mod figures;

use crate::datasets::Conversation;
use crate::history::{self, Content};
use crate::json::Value;
use crate::probes::grader::{Grader, Matcher};
use crate::probes::text_match::{self, Haystack};
use calls::{file_key, Action};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A typed prompt restates an earlier one when at least this share of its key words (stems of words of four
/// letters or more, stop words out) are key words of one earlier prompt.
pub const RESTATED_SHARE: f64 = 0.6;
/// A summary echoes a typed prompt when at least this share of the prompt's key words occur in it.
pub const ECHOED_SHARE: f64 = 0.5;
/// Prompts with fewer key words than this are never counted as restated (`continue`, `yes`, `go on`).
pub const MIN_PROMPT_WORDS: usize = 3;
/// Anthropic bills a write to the 5-minute prompt cache at 1.25 × the input price
/// (<https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing>).
pub const CACHE_WRITE_MULTIPLIER: f64 = 1.25;

/// One compaction the agent made, and what followed it (one row of `results/rework.csv`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CompactionRework {
    pub conversation: String,
    /// 1 for the session's first compaction, 2 for the second, …
    pub ordinal: usize,
    /// Index in the recorded history of the first Content after the compaction.
    pub at: usize,
    /// Index among the replay's requests of the first request after it (the model turns before `at`).
    #[serde(skip)]
    pub first_request: usize,
    /// The request before the compaction as the agent counted it (Claude Code: `preTokens`; else the last
    /// recorded request before it).
    pub tokens_before: Option<u64>,
    /// The first recorded request after it.
    pub tokens_after: Option<u64>,
    /// The summary, o200k tokens (of the placeholder where the summary is unreadable).
    pub summary_tokens: u64,
    /// The recording holds the summary's text (Codex 0.140+ stores it encrypted: what it names is unknown,
    /// and every "named" figure of the compaction is empty).
    pub summary_readable: bool,
    /// Model turns from the compaction to the next one or the end.
    pub turns_after: usize,
    /// File reads after it; of those, reads of a file read or changed before it (re-reads), split by whether
    /// the summary (or the messages the agent kept beside it) names the file.
    pub reads_after: usize,
    pub rereads: usize,
    pub rereads_named: Option<usize>,
    pub rereads_not_named: Option<usize>,
    /// The same count over the control span (as many model turns just before the compaction).
    pub control_turns: usize,
    pub control_reads: usize,
    pub control_rereads: usize,
    /// Shell commands after it; of those, commands run before it, word for word (whitespace collapsed).
    pub commands_after: usize,
    pub repeated_commands: usize,
    pub control_commands: usize,
    pub control_repeated_commands: usize,
    /// Prompts the user typed after it; of those, prompts that restate one typed before it.
    pub prompts_after: usize,
    pub restated_prompts: usize,
    /// Model turns, and o200k tokens of the Contents the agent added, from the compaction to its first
    /// change of a file (empty when it changed none before the span ends); the share of those tokens that
    /// are re-read file outputs.
    pub turns_to_first_edit: Option<usize>,
    pub tokens_to_first_edit: Option<u64>,
    pub reread_share_to_first_edit: Option<f64>,
    /// Files changed since the session's start, and of those the ones the summary names.
    pub files_edited_before: usize,
    pub files_edited_named: Option<usize>,
    /// Of the session's files the previous summary named, how many this one names no longer (empty for a
    /// first compaction); the same for the user's typed prompts the previous summary echoed.
    pub previous_named_files: Option<usize>,
    pub previous_named_files_dropped: Option<usize>,
    pub previous_echoed_prompts: Option<usize>,
    pub previous_echoed_prompts_dropped: Option<usize>,
    /// Cache traffic of the first request after it (Claude Code records it): tokens read from and written to
    /// the prompt cache.
    pub cache_read_after: Option<u64>,
    pub cache_written_after: Option<u64>,
}

/// One (compaction, file) pair: a file read or changed before the compaction, and whether the agent read it
/// again after (one row of `results/rework_files.csv`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FileAfterCompaction {
    pub conversation: String,
    pub ordinal: usize,
    pub file: String,
    /// The summary (or the messages kept beside it) names the file, by the project's path rule; empty when
    /// the summary is not readable.
    pub named: Option<bool>,
    /// Reads and changes of the file before the compaction.
    pub reads_before: usize,
    pub edits_before: usize,
    /// Model turns between the file's last read or change and the compaction.
    pub turns_since_touch: usize,
    /// Read again between the compaction and the next one (or the end).
    pub reread: bool,
}

/// One (compaction, typed prompt) pair: a prompt the user typed before the compaction (of at least
/// [`MIN_PROMPT_WORDS`] key words), and whether the history the agent continued from echoes it
/// ([`ECHOED_SHARE`] of its key words). What `audit` lists as instructions a summary did not keep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptBeforeCompaction {
    pub ordinal: usize,
    /// Index of the prompt's Content in the recorded history.
    pub at: usize,
    /// Empty when the summary is not readable.
    pub echoed: Option<bool>,
}

/// What the rework reading gives for one conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConversationRework {
    pub compactions: Vec<CompactionRework>,
    pub files: Vec<FileAfterCompaction>,
    pub prompts: Vec<PromptBeforeCompaction>,
}

/// A tool call or typed prompt, placed in the history.
#[derive(Clone, Debug)]
struct Event {
    /// Index of the Content.
    at: usize,
    /// Model turns before it (its turn's ordinal).
    turn: usize,
    kind: EventKind,
}

#[derive(Clone, Debug)]
enum EventKind {
    Read { file: String, output_tokens: u64 },
    Edit(Vec<String>),
    Command(String),
    Prompt(BTreeSet<String>),
}

const STOP_WORDS: &[&str] = &[
    "this", "that", "with", "from", "have", "what", "when", "where", "which", "there", "their", "then", "than", "them",
    "they", "will", "would", "could", "should", "into", "also", "just", "like", "make", "sure", "please", "about",
    "some", "more", "does", "done", "need", "want", "lets", "let's", "okay", "yeah", "it's", "don't",
];

/// A user text the user typed (not a command wrapper, reminder or injected context).
fn is_typed_prompt(text: &str) -> bool {
    let t = text.trim_start();
    !(t.is_empty()
        || t.starts_with('<')
        || t.starts_with("[Request interrupted")
        || t.starts_with("Caveat:")
        || t.starts_with("# AGENTS.md")
        || t.starts_with("This session is being continued"))
}

/// The key words of a prompt: stems of its alphabetic words of four letters or more, stop words out.
fn key_words(grader: &Grader, text: &str) -> BTreeSet<String> {
    text_match::tokens(text)
        .iter()
        .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic) && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| grader.key(w))
        .collect()
}

fn share_within(words: &BTreeSet<String>, of: &BTreeSet<String>) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    words.iter().filter(|w| of.contains(*w)).count() as f64 / words.len() as f64
}

/// The o200k tokens of a function response answering call `id`, searched in the Contents after `at`.
fn response_tokens(h: &[Content], at: usize, id: Option<&str>) -> u64 {
    for c in h.iter().skip(at + 1).take(2) {
        for p in history::parts(c) {
            let Some(r) = history::function_response(p) else { continue };
            let rid = r.get("id").and_then(Value::as_str);
            if id.is_none() || rid == id {
                let alone = Value::object([("role", Value::str("user")), ("parts", Value::Array(vec![p.clone()]))]);
                return crate::tokens::o200k_count_text(&text_match::content_text(&alone));
            }
        }
    }
    0
}

/// Every read, change, command and typed prompt of the recording, in order.
fn events(conv: &Conversation, grader: &Grader, cwd: Option<&str>) -> Vec<Event> {
    let h = &conv.history;
    let mut out = Vec::new();
    let mut turn = 0;
    for (i, c) in h.iter().enumerate() {
        if history::is_model(c) {
            for (action, id) in calls::actions(c) {
                let kind = match action {
                    Action::Read(f) => {
                        EventKind::Read { file: file_key(&f, cwd), output_tokens: response_tokens(h, i, id.as_deref()) }
                    }
                    Action::Edit(fs) => EventKind::Edit(fs.iter().map(|f| file_key(f, cwd)).collect()),
                    Action::Command(cmd) => EventKind::Command(cmd),
                    Action::Other => continue,
                };
                out.push(Event { at: i, turn, kind });
            }
            turn += 1;
        } else if history::is_user(c) {
            for p in history::parts(c) {
                let Some(text) = history::part_text(p).map(|t| t.to_str_lossy().into_owned()) else { continue };
                if is_typed_prompt(&text) {
                    out.push(Event { at: i, turn, kind: EventKind::Prompt(key_words(grader, &text)) });
                }
            }
        }
    }
    out
}

/// The `files` that `hay` names: the project's path rule (any form that identifies the file; no word of
/// change needed), and also any suffix of two components or more even when another file ends the same way
/// (a session that works in several git worktrees of one repository has each file once per worktree, and a
/// summary names it relative to the repository). The history is indexed once for all of them.
fn named_files<'f>(grader: &Grader, hay: &Haystack, files: impl Iterator<Item = &'f String>) -> BTreeSet<String> {
    let files: Vec<&String> = files.collect();
    let matchers: Vec<Matcher> = files
        .iter()
        .map(|file| {
            let parts: Vec<&str> = file.trim_start_matches('/').split('/').collect();
            grader.file_matcher(file, (2..parts.len()).map(|k| parts[parts.len() - k..].join("/")).collect())
        })
        .collect();
    files
        .into_iter()
        .zip(grader.kept_all(hay, &matchers))
        .filter(|(_, by)| by.is_some())
        .map(|(f, _)| f.clone())
        .collect()
}

/// A file as results show it: relative to the session's working directory, else its last two components
/// after `…/`. A results file never holds the machine's home directory or user name.
fn shown_path(file: &str, cwd: Option<&str>) -> String {
    if let Some(rest) = cwd.and_then(|root| file.strip_prefix(&format!("{}/", root.trim_end_matches('/')))) {
        return rest.to_string();
    }
    if !file.starts_with('/') && !file.starts_with('~') {
        return file.to_string();
    }
    // Outside the working directory: the last two components, after the home directory, which is shown as
    // `~` (a file directly in it would otherwise show its owner's user name).
    let file = crate::datasets::raw::home_as_tilde(file);
    let parts: Vec<&str> = file.rsplit('/').take(3).collect();
    if parts.len() < 3 || parts[2] == "~" {
        return file;
    }
    format!("…/{}/{}", parts[1], parts[0])
}

/// The turns and events around one compaction: the span after it (to the next compaction or the end) and the
/// control span (as many model turns just before it).
struct Spans<'e> {
    start: usize,
    end: usize,
    start_turn: usize,
    span_turns: usize,
    control_start_turn: usize,
    before: Vec<&'e Event>,
    after: Vec<&'e Event>,
    control: Vec<&'e Event>,
    earlier_than_control: Vec<&'e Event>,
}

impl<'e> Spans<'e> {
    fn of(all: &'e [Event], start: usize, end: usize, turn_of: impl Fn(usize) -> usize) -> Spans<'e> {
        let (start_turn, end_turn) = (turn_of(start), turn_of(end));
        let span_turns = end_turn.saturating_sub(start_turn);
        let control_start_turn = start_turn.saturating_sub(span_turns);
        let before: Vec<&Event> = all.iter().filter(|e| e.at < start).collect();
        let after = all.iter().filter(|e| e.at >= start && e.at < end).collect();
        let control = before.iter().copied().filter(|e| e.turn >= control_start_turn).collect();
        let earlier_than_control = before.iter().copied().filter(|e| e.turn < control_start_turn).collect();
        Spans { start, end, start_turn, span_turns, control_start_turn, before, after, control, earlier_than_control }
    }
}

/// Each file read or changed before the compaction: (reads, changes, the model turn of the last touch).
type Touched = BTreeMap<String, (usize, usize, usize)>;

fn touched_before(before: &[&Event]) -> Touched {
    let mut touched = Touched::new();
    for e in before {
        match &e.kind {
            EventKind::Read { file, .. } => {
                let t = touched.entry(file.clone()).or_default();
                t.0 += 1;
                t.2 = e.turn;
            }
            EventKind::Edit(files) => {
                for f in files {
                    let t = touched.entry(f.clone()).or_default();
                    t.1 += 1;
                    t.2 = e.turn;
                }
            }
            _ => {}
        }
    }
    touched
}

/// Reads in the span after and in the control span, and the files each read again.
struct Rereads {
    reads_after: usize,
    rereads: Vec<String>,
    control_reads: usize,
    control_rereads: Vec<String>,
}

fn rereads(spans: &Spans, touched: &Touched) -> Rereads {
    let reads = |span: &[&Event], known: &dyn Fn(&str) -> bool| {
        let mut total = 0;
        let mut again = Vec::new();
        for e in span {
            if let EventKind::Read { file, .. } = &e.kind {
                total += 1;
                if known(file) {
                    again.push(file.clone());
                }
            }
        }
        (total, again)
    };
    let (reads_after, rereads) = reads(&spans.after, &|f| touched.contains_key(f));
    let touched_before_control: BTreeSet<String> = spans
        .earlier_than_control
        .iter()
        .flat_map(|e| match &e.kind {
            EventKind::Read { file, .. } => vec![file.clone()],
            EventKind::Edit(files) => files.clone(),
            _ => Vec::new(),
        })
        .collect();
    let (control_reads, control_rereads) = reads(&spans.control, &|f| touched_before_control.contains(f));
    Rereads { reads_after, rereads, control_reads, control_rereads }
}

/// Shell commands in the span after and the control span, and of those the ones run before, word for word:
/// `(commands_after, repeated_commands, control_commands, control_repeated_commands)`.
fn repeated_commands(spans: &Spans) -> (usize, usize, usize, usize) {
    fn command<'a>(e: &&'a Event) -> Option<&'a str> {
        match &e.kind {
            EventKind::Command(c) => Some(c.as_str()),
            _ => None,
        }
    }
    let commands = |span: &[&Event], earlier: &[&Event]| {
        let run: BTreeSet<&str> = earlier.iter().filter_map(command).collect();
        let cmds: Vec<&str> = span.iter().filter_map(command).collect();
        (cmds.len(), cmds.iter().filter(|c| run.contains(*c)).count())
    };
    let (after, repeated) = commands(&spans.after, &spans.before);
    let (control, control_repeated) = commands(&spans.control, &spans.earlier_than_control);
    (after, repeated, control, control_repeated)
}

/// Prompts typed in the span after, and of those the ones that restate a prompt typed before the compaction:
/// `(prompts_after, restated_prompts)`.
fn restated_prompts(spans: &Spans, prompts: &[(usize, &BTreeSet<String>)]) -> (usize, usize) {
    let earlier: Vec<&BTreeSet<String>> = prompts.iter().filter(|(at, _)| *at < spans.start).map(|p| p.1).collect();
    let after: Vec<&Event> = spans.after.iter().copied().filter(|e| matches!(e.kind, EventKind::Prompt(_))).collect();
    let restated = after
        .iter()
        .filter(|e| match &e.kind {
            EventKind::Prompt(w) if w.len() >= MIN_PROMPT_WORDS => {
                earlier.iter().any(|q| share_within(w, q) >= RESTATED_SHARE)
            }
            _ => false,
        })
        .count();
    (after.len(), restated)
}

/// Up to the first change of a file in the span after: model turns, o200k tokens of the Contents the agent
/// added, and the share of those that are outputs of re-reads (all empty when it changed none).
fn first_edit(h: &[Content], spans: &Spans, touched: &Touched) -> (Option<usize>, Option<u64>, Option<f64>) {
    let Some(e) = spans.after.iter().find(|e| matches!(e.kind, EventKind::Edit(_))) else { return (None, None, None) };
    let tokens: u64 =
        h[spans.start..e.at].iter().map(|c| crate::tokens::o200k_count_text(&text_match::content_text(c))).sum();
    let reread_tokens: u64 = spans
        .after
        .iter()
        .filter(|x| x.at < e.at)
        .filter_map(|x| match &x.kind {
            EventKind::Read { file, output_tokens } if touched.contains_key(file) => Some(*output_tokens),
            _ => None,
        })
        .sum();
    let share = (tokens > 0).then(|| (reread_tokens as f64 / tokens as f64).min(1.0));
    (Some(e.turn - spans.start_turn), Some(tokens), share)
}

/// What this summary dropped of the previous one's: `(previous_named_files, …_dropped,
/// previous_echoed_prompts, …_dropped)`, all empty for a first compaction (or after an unreadable summary).
type Chain = (Option<usize>, Option<usize>, Option<usize>, Option<usize>);

fn chain(previous: Option<&(BTreeSet<String>, Vec<usize>)>, named: &BTreeSet<String>, echoed: &[usize]) -> Chain {
    match previous {
        Some((prev_files, prev_prompts)) => (
            Some(prev_files.len()),
            Some(prev_files.iter().filter(|f| !named.contains(*f)).count()),
            Some(prev_prompts.len()),
            Some(prev_prompts.iter().filter(|i| !echoed.contains(i)).count()),
        ),
        None => (None, None, None, None),
    }
}

/// The recorded counts around the compaction: the request before it as the agent counted it (Claude Code's
/// `preTokens`, else the last recorded request before it), the first recorded request after it, and that
/// request's cache traffic.
fn recorded_usage(
    conv: &Conversation,
    c: &crate::datasets::RecordedCompaction,
    spans: &Spans,
) -> (Option<u64>, Option<u64>, Option<crate::datasets::CacheUsage>) {
    let recorded = |i: usize| conv.recorded_prompt_tokens.get(i).copied().flatten().filter(|&n| n > 0);
    let after = (spans.start..spans.end).find_map(recorded);
    let cache_after = (spans.start..spans.end).find_map(|i| conv.recorded_cache.get(i).copied().flatten());
    let before = c
        .extra
        .as_ref()
        .and_then(|e| e.get("preTokens"))
        .and_then(Value::as_f64)
        .map(|x| x as u64)
        .or_else(|| (0..spans.start).rev().find_map(recorded));
    (before, after, cache_after)
}

/// The typed prompts before the compaction that the continued history echoes (indices into `prompts`), and
/// one row per prompt typed before it.
fn echoed_prompts(
    grader: &Grader,
    hay: &Haystack,
    prompts: &[(usize, &BTreeSet<String>)],
    start: usize,
    ordinal: usize,
    readable: bool,
) -> (Vec<usize>, Vec<PromptBeforeCompaction>) {
    let summary_words = key_words(grader, hay.normalized());
    let echoed: Vec<usize> = prompts
        .iter()
        .enumerate()
        .filter(|(_, (at, w))| *at < start && share_within(w, &summary_words) >= ECHOED_SHARE)
        .map(|(i, _)| i)
        .collect();
    let rows = prompts
        .iter()
        .enumerate()
        .filter(|(_, (at, _))| *at < start)
        .map(|(i, (at, _))| PromptBeforeCompaction { ordinal, at: *at, echoed: readable.then(|| echoed.contains(&i)) })
        .collect();
    (echoed, rows)
}

/// One row per file touched before the compaction; `named` is `None` when the summary is unreadable.
fn file_rows(
    conversation: &str,
    ordinal: usize,
    touched: &Touched,
    spans: &Spans,
    reads: &Rereads,
    named: Option<&BTreeSet<String>>,
    cwd: Option<&str>,
) -> Vec<FileAfterCompaction> {
    touched
        .iter()
        .map(|(file, &(reads_before, edits_before, last_turn))| FileAfterCompaction {
            conversation: conversation.to_string(),
            ordinal,
            file: shown_path(file, cwd),
            named: named.map(|n| n.contains(file)),
            reads_before,
            edits_before,
            turns_since_touch: spans.start_turn.saturating_sub(last_turn + 1),
            reread: reads.rereads.contains(file),
        })
        .collect()
}

/// The model turn of each Content (the model turns before it), and of an index past the end.
fn turn_index(h: &[Content]) -> impl Fn(usize) -> usize {
    let mut t = 0;
    let turn_at: Vec<usize> = h
        .iter()
        .map(|c| {
            let here = t;
            t += history::is_model(c) as usize;
            here
        })
        .collect();
    move |at: usize| turn_at.get(at).copied().unwrap_or_else(|| turn_at.last().copied().unwrap_or(0) + 1)
}

/// The rework after each of the conversation's recorded compactions (none when it records none): each
/// column family is read by its own function above; this walks the compactions and assembles the rows.
pub fn conversation_rework(conv: &Conversation) -> ConversationRework {
    let compactions = &conv.recorded_compactions;
    if compactions.is_empty() {
        return ConversationRework::default();
    }
    let cwd = conv.cwd();
    let grader = Grader::of_conversation(conv, &[]);
    let h = &conv.history;
    let all = events(conv, &grader, cwd);
    let turn_of = turn_index(h);
    let mut out = ConversationRework::default();
    let mut previous: Option<(BTreeSet<String>, Vec<usize>)> = None;
    let prompts: Vec<(usize, &BTreeSet<String>)> = all
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Prompt(w) if w.len() >= MIN_PROMPT_WORDS => Some((e.at, w)),
            _ => None,
        })
        .collect();
    for (n, c) in compactions.iter().enumerate() {
        let ordinal = n + 1;
        let spans = Spans::of(&all, c.at, compactions.get(n + 1).map_or(h.len(), |next| next.at), &turn_of);
        let readable = !c.extra.as_ref().and_then(|e| e.get("summaryOpaque")).and_then(Value::as_bool).unwrap_or(false);
        let hay = text_match::history_haystack(&c.history());
        let touched = touched_before(&spans.before);
        let named = named_files(&grader, &hay, touched.keys());
        let reads = rereads(&spans, &touched);
        let (commands_after, repeated_commands, control_commands, control_repeated_commands) =
            repeated_commands(&spans);
        let (prompts_after, restated_prompts) = restated_prompts(&spans, &prompts);
        let (turns_to_first_edit, tokens_to_first_edit, reread_share_to_first_edit) = first_edit(h, &spans, &touched);
        let edited: BTreeSet<&String> = touched.iter().filter(|(_, w)| w.1 > 0).map(|(f, _)| f).collect();
        let (echoed, before) = echoed_prompts(&grader, &hay, &prompts, spans.start, ordinal, readable);
        out.prompts.extend(before);
        let (
            previous_named_files,
            previous_named_files_dropped,
            previous_echoed_prompts,
            previous_echoed_prompts_dropped,
        ) = chain(previous.as_ref(), &named, &echoed);
        out.files.extend(file_rows(&conv.meta.id, ordinal, &touched, &spans, &reads, readable.then_some(&named), cwd));
        let (tokens_before, tokens_after, cache_after) = recorded_usage(conv, c, &spans);
        let named_count = |wanted: bool| reads.rereads.iter().filter(|f| named.contains(*f) == wanted).count();
        out.compactions.push(CompactionRework {
            conversation: conv.meta.id.clone(),
            ordinal,
            at: spans.start,
            first_request: spans.start_turn,
            tokens_before,
            tokens_after,
            summary_tokens: crate::tokens::o200k_count_text(&c.summary),
            summary_readable: readable,
            turns_after: spans.span_turns,
            reads_after: reads.reads_after,
            rereads: reads.rereads.len(),
            rereads_named: readable.then(|| named_count(true)),
            rereads_not_named: readable.then(|| named_count(false)),
            control_turns: spans.start_turn - spans.control_start_turn,
            control_reads: reads.control_reads,
            control_rereads: reads.control_rereads.len(),
            commands_after,
            repeated_commands,
            control_commands,
            control_repeated_commands,
            prompts_after,
            restated_prompts,
            turns_to_first_edit,
            tokens_to_first_edit,
            reread_share_to_first_edit,
            files_edited_before: edited.len(),
            files_edited_named: readable.then(|| edited.iter().filter(|f| named.contains(f.as_str())).count()),
            previous_named_files,
            previous_named_files_dropped,
            previous_echoed_prompts,
            previous_echoed_prompts_dropped,
            cache_read_after: cache_after.map(|u| u.read),
            cache_written_after: cache_after.map(|u| u.written),
        });
        previous = readable.then_some((named, echoed));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::{ConversationMeta, RecordedCompaction};
    use serde_json::json;

    fn content(v: serde_json::Value) -> Content {
        Value::from_serde(&v)
    }
    fn call(id: &str, name: &str, args: serde_json::Value) -> serde_json::Value {
        json!({"functionCall": {"id": id, "name": name, "args": args}})
    }
    fn response(id: &str, name: &str, text: &str) -> serde_json::Value {
        json!({"functionResponse": {"id": id, "name": name, "response": {"output": text}}})
    }

    /// A made-up session: the user asks for a fix, the agent reads and changes files, Claude Code-style
    /// compaction, then the agent reads a named and an unnamed file again, reruns a command and the user
    /// repeats the request.
    fn session() -> Conversation {
        let h = vec![
            content(json!({"role": "user", "parts": [{"text": "Fix the parser so numbers with underscores work"}]})),
            content(json!({"role": "model", "parts": [
                call("r1", "Read", json!({"file_path": "/r/src/parse.rs"})),
                call("b1", "Bash", json!({"command": "cargo test"}))]})),
            content(
                json!({"role": "user", "parts": [response("r1", "Read", "fn parse() {}"), response("b1", "Bash", "ok")]}),
            ),
            content(json!({"role": "model", "parts": [
                call("e1", "Edit", json!({"file_path": "src/parse.rs", "old_string": "a", "new_string": "b"})),
                call("r2", "Read", json!({"file_path": "/r/src/lex.rs"}))]})),
            content(
                json!({"role": "user", "parts": [response("e1", "Edit", "done"), response("r2", "Read", "fn lex() {}")]}),
            ),
            content(
                json!({"role": "user", "parts": [{"text": "Fix the parser so numbers with underscores work please"}]}),
            ),
            content(json!({"role": "model", "parts": [
                call("r3", "Read", json!({"file_path": "/r/src/lex.rs"})),
                call("r4", "Read", json!({"file_path": "/r/src/parse.rs"})),
                call("b2", "Bash", json!({"command": "cargo  test"}))]})),
            content(json!({"role": "user", "parts": [
                response("r3", "Read", "fn lex() {}"), response("r4", "Read", "fn parse() {}"), response("b2", "Bash", "ok")]})),
            content(json!({"role": "model", "parts": [call("e2", "Edit", json!({"file_path": "/r/src/lex.rs"}))]})),
            content(json!({"role": "user", "parts": [response("e2", "Edit", "done")]})),
            content(json!({"role": "model", "parts": [{"text": "Done."}]})),
        ];
        Conversation {
            meta: ConversationMeta {
                id: "s".into(),
                extra: Some(Value::from_serde(&json!({"cwd": "/r"}))),
                ..Default::default()
            },
            history: h,
            recorded_compactions: vec![RecordedCompaction {
                at: 5,
                summary: "Edited `src/parse.rs` to accept underscores in numbers.".into(),
                extra: Some(Value::from_serde(&json!({"preTokens": 1000}))),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn rework_after_a_compaction_counts_rereads_repeats_and_restated_prompts_against_the_summary() {
        let r = conversation_rework(&session());
        assert_eq!(r.compactions.len(), 1);
        let c = &r.compactions[0];
        assert_eq!((c.ordinal, c.at, c.turns_after, c.tokens_before), (1, 5, 3, Some(1000)));
        assert_eq!(c.first_request, 2, "two model turns before the compaction");
        assert_eq!((c.reads_after, c.rereads, c.rereads_named, c.rereads_not_named), (2, 2, Some(1), Some(1)));
        // The control span: the two model turns before the compaction, against nothing before them.
        assert_eq!((c.control_turns, c.control_reads, c.control_rereads), (2, 2, 0));
        assert_eq!(
            (c.commands_after, c.repeated_commands, c.control_commands, c.control_repeated_commands),
            (1, 1, 1, 0)
        );
        assert_eq!((c.prompts_after, c.restated_prompts), (1, 1));
        assert_eq!(c.turns_to_first_edit, Some(1));
        assert!(c.tokens_to_first_edit.unwrap() > 0);
        let share = c.reread_share_to_first_edit.unwrap();
        assert!(share > 0.0 && share < 1.0, "{share}");
        assert_eq!((c.files_edited_before, c.files_edited_named), (1, Some(1)));
        assert_eq!(c.previous_named_files, None);
        let files: Vec<(&str, Option<bool>, bool, usize, usize)> =
            r.files.iter().map(|f| (f.file.as_str(), f.named, f.reread, f.reads_before, f.edits_before)).collect();
        assert_eq!(files, [("src/lex.rs", Some(false), true, 1, 0), ("src/parse.rs", Some(true), true, 1, 1)]);
        assert_eq!(shown_path("/home/me/other/x/y.rs", Some("/r")), "…/x/y.rs");
        // Regression (#46): a file directly in a home directory showed its owner's user name.
        assert_eq!(shown_path("/Users/someone/notes.md", Some("/r")), "~/notes.md");
        assert_eq!(shown_path("/Users/someone/.claude/plan.md", Some("/r")), "~/.claude/plan.md");
        assert_eq!(shown_path("/opt/tools/bin/run.sh", Some("/r")), "…/bin/run.sh");
    }

    #[test]
    fn an_unreadable_summary_leaves_every_named_figure_empty() {
        let mut conv = session();
        conv.recorded_compactions[0].extra = Some(Value::from_serde(&json!({"summaryOpaque": true})));
        let r = conversation_rework(&conv);
        let c = &r.compactions[0];
        assert!(!c.summary_readable);
        assert_eq!((c.rereads, c.rereads_named, c.files_edited_named), (2, None, None));
        assert!(r.files.iter().all(|f| f.named.is_none()));
        assert!(!r.prompts.is_empty() && r.prompts.iter().all(|p| p.echoed.is_none()));
        // Without preTokens the last recorded request before the compaction stands in (none here).
        assert_eq!(c.tokens_before, None);
    }

    #[test]
    fn a_second_compaction_reports_what_it_dropped_of_the_first_summary() {
        let mut conv = session();
        conv.recorded_compactions[0].summary =
            "Edited `src/parse.rs` and read src/lex.rs. The user asked to fix the parser for numbers with underscores."
                .into();
        conv.recorded_compactions.push(RecordedCompaction {
            at: 9,
            summary: "Changed src/lex.rs.".into(),
            ..Default::default()
        });
        let r = conversation_rework(&conv);
        let second = &r.compactions[1];
        assert_eq!(second.ordinal, 2);
        // The first named parse.rs and lex.rs; the second names only lex.rs.
        assert_eq!((second.previous_named_files, second.previous_named_files_dropped), (Some(2), Some(1)));
        // The first echoed the typed request (both copies before the second compaction); the second echoes neither.
        assert_eq!((second.previous_echoed_prompts, second.previous_echoed_prompts_dropped), (Some(1), Some(1)));
        // parse.rs and lex.rs changed before it; it names lex.rs.
        assert_eq!((second.files_edited_before, second.files_edited_named), (2, Some(1)));
        // Each compaction lists the typed prompts before it, echoed or not.
        let prompts: Vec<(usize, usize, Option<bool>)> =
            r.prompts.iter().map(|p| (p.ordinal, p.at, p.echoed)).collect();
        assert_eq!(prompts, [(1, 0, Some(true)), (2, 0, Some(false)), (2, 5, Some(false))]);
    }
}
