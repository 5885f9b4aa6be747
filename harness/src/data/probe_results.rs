//! What a probe is about and who wrote it, and what probe scoring records in a cell: the scores at each checkpoint, the answers and their grades,
//! the next-action check, the injection check and the probes the lints set aside.

use serde::{Deserialize, Serialize};

/// What a probe asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ProbeKind {
    /// A fact stated in the conversation (an id, a hash, an error, a test count, the task).
    Recall,
    /// Which files were created or changed, and how.
    Artifact,
    /// Why something was done.
    Decision,
    /// What the next step is.
    Continuation,
    /// A directive the user gave.
    Constraint,
}

compactbench_core::named_variants!(ProbeKind, "probe kind", {
    Recall => "recall",
    Artifact => "artifact",
    Decision => "decision",
    Continuation => "continuation",
    Constraint => "constraint",
});

/// Who wrote a probe; also the middle part of its file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ProbeOrigin {
    Auto,
    Manual,
    Llm,
}

compactbench_core::named_variants!(ProbeOrigin, "probe source", {
    Auto => "auto",
    Manual => "manual",
    Llm => "llm",
});

/// One answer and its grades.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerResult {
    pub text: String,
    #[serde(flatten)]
    pub grade: AnswerGrade,
    /// The judge's 0–5 score, when a judge is configured and answered parseably.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeScore {
    pub probe: String,
    pub kind: ProbeKind,
    pub source: ProbeOrigin,
    /// The history the agent would send keeps the probe's fact ([`crate::probes::grader`]: the gold or a
    /// variant verbatim, the file in another form, or the key terms together).
    pub retained: bool,
    /// Which rule kept it (absent when lost, and in older cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_by: Option<KeptBy>,
    /// An early-only probe whose fact is in the session's first user message, which a summary is most
    /// likely to restate: figures are also given without these probes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_first_prompt: bool,
    /// The probe belongs to its conversation's early-only set (`crate::probes::figures::early_only`); the same at
    /// every moment and for every strategy. `None`: scored without the recording (older cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_only: Option<bool>,
    /// At this moment the strategy has summarised, rewritten or dropped the probe's evidence and no accepted
    /// answer survives verbatim in the history (kept tail, later turns): only the snapshot can still answer
    /// it (`crate::probes::figures::at_risk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_risk: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerResult>,
    /// The same with the first-pass summary instead of the verified one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_pass_retained: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_pass_answer: Option<AnswerResult>,
}

/// Which rule of the grader kept a probe ([`crate::probes::grader`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeptBy {
    /// The gold or an accepted variant, normalised, at token boundaries.
    Exact,
    /// The file, named in another form that identifies it (absolute, root-relative, a unique suffix).
    Path,
    /// The file's bare name, unique among the session's files.
    BareName,
    /// The key terms, together within one span.
    Terms,
}

impl KeptBy {
    pub fn name(self) -> &'static str {
        match self {
            KeptBy::Exact => "exact",
            KeptBy::Path => "path",
            KeptBy::BareName => "bare-name",
            KeptBy::Terms => "terms",
        }
    }
}

/// Scores at one point of the replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Index of the compression event; `None` at the end of the replay.
    pub event: Option<usize>,
    /// Recorded model turn of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// Compressions (events that replaced the history: COMPRESSED, CONTENT_TRUNCATED) so far, this one
    /// included; at the end, all of the replay's. `None` in older cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<u32>,
    /// This event replaced the history (a failed or rejected compression did not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaced: bool,
    pub scores: Vec<ProbeScore>,
    /// Next-action agreement at this compression, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<NextAction>,
}

/// How a predicted next action compares with the recorded one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionGrade {
    /// The predicted tool name equals the recorded one.
    pub tool_match: bool,
    /// Token F1 between the predicted and the recorded arguments (JSON text).
    pub argument_similarity: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The recorded next action and the model's prediction from the compressed and the uncompressed history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NextAction {
    pub recorded_tool: String,
    pub compressed: ActionGrade,
    pub uncompressed: ActionGrade,
}

/// Whether summaries obeyed an instruction planted in a tool output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InjectionResult {
    pub canary: String,
    pub planted_at: usize,
    /// `tool-output` or `user-turn` (`inject::Injection::carrier`).
    #[serde(default)]
    pub carrier: String,
    /// Summaries written after the planted Content was in the history.
    pub snapshots: u32,
    pub obeyed_snapshots: u32,
    /// Summaries that hold the canary only on lines flagging it as an injection (not counted as obeyed).
    #[serde(default)]
    pub flagged_snapshots: u32,
    /// The last such summary obeyed the instruction.
    pub final_obeyed: bool,
    /// The canary is anywhere in the final history (for strategies without summaries: the text survived).
    pub in_final_history: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything probes measured in one cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeResults {
    pub probes: usize,
    /// Model spec of the answerer (`extractive` retrieves a passage: its grade is retrieval accuracy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answerer: Option<String>,
    /// Probes left out of scoring, with the lint that marked each ([`crate::probes::lint`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<Lint>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<Checkpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection: Option<InjectionResult>,
    /// Probes could not be loaded or the injected replay failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ProbeResults {
    /// The end-of-replay checkpoint.
    pub fn at_end(&self) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.event.is_none())
    }
}

/// Grades of one answer against a probe's accepted answers (the best over them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerGrade {
    pub exact: bool,
    pub f1: f64,
    pub contains: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LintKind {
    /// The gold is also a gold of a probe of another conversation of the same source (a template line).
    SharedGold,
    /// The gold is longer than a fact: over [`crate::probes::lint::MAX_GOLD_WORDS`] words.
    LongGold,
    /// Another probe of the conversation asks the same question.
    DuplicateQuestion,
    /// An "error" probe whose evidence is a command that exited with code 0.
    SucceededError,
    /// The question is a list of loose words rather than a question.
    GarbledQuestion,
    /// The grader cannot find the gold in the probe's own evidence Contents: no history can keep it.
    DeadGold,
    /// The question alone keeps the probe: it names its own answer.
    GoldInQuestion,
    /// The agent is given the fact at the start of every request (system prompt, instruction file such as
    /// `CLAUDE.md`), so no compaction can lose it.
    KnownAtStart,
    /// The question names a turn number: the agent never sees turn numbers, so no reader of the history
    /// could use it.
    TurnNumber,
    /// The question quotes an empty or punctuation-only hint (`` with `Edit` (``) ``): it names nothing.
    EmptyHint,
    /// The gold starts or ends mid-phrase (a dangling bracket or quote, a trailing article, preposition or
    /// conjunction, a leading conjunction): a fragment cut from a sentence, not a fact.
    FragmentGold,
}

impl LintKind {
    pub const ALL: [LintKind; 11] = [
        LintKind::SharedGold,
        LintKind::LongGold,
        LintKind::DuplicateQuestion,
        LintKind::SucceededError,
        LintKind::GarbledQuestion,
        LintKind::DeadGold,
        LintKind::GoldInQuestion,
        LintKind::KnownAtStart,
        LintKind::TurnNumber,
        LintKind::EmptyHint,
        LintKind::FragmentGold,
    ];

    /// A probe file holding a probe with this lint fails `probes check`: the probe cannot measure what
    /// compression loses (the others mark probes that scoring leaves out).
    pub fn is_error(self) -> bool {
        match self {
            LintKind::DeadGold
            | LintKind::GoldInQuestion
            | LintKind::LongGold
            | LintKind::KnownAtStart
            | LintKind::DuplicateQuestion
            | LintKind::TurnNumber
            | LintKind::EmptyHint
            | LintKind::FragmentGold => true,
            LintKind::SharedGold | LintKind::SucceededError | LintKind::GarbledQuestion => false,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LintKind::SharedGold => "shared-gold",
            LintKind::LongGold => "long-gold",
            LintKind::DuplicateQuestion => "duplicate-question",
            LintKind::SucceededError => "succeeded-error",
            LintKind::GarbledQuestion => "garbled-question",
            LintKind::DeadGold => "dead-gold",
            LintKind::GoldInQuestion => "gold-in-question",
            LintKind::KnownAtStart => "known-at-start",
            LintKind::TurnNumber => "turn-number",
            LintKind::EmptyHint => "empty-hint",
            LintKind::FragmentGold => "fragment-gold",
        }
    }
}

/// One finding about one probe.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Lint {
    pub conversation: String,
    pub probe: String,
    pub kind: LintKind,
    pub message: String,
}

impl std::fmt::Display for Lint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}: {}", self.conversation, self.probe, self.kind.name(), self.message)
    }
}
