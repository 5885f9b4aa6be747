//! What the recording says about each probe (early-only, at risk) and the per-probe rows of
//! `results/probes.csv`: the outcomes every probe figure counts. The figures (early-only and at-risk
//! retention, retention, retrieval accuracy, …) are defined in `crate::metrics::METRICS` and pooled over a
//! point's probes by `crate::metrics::probe_figures`; the glossary is `harness/docs/metrics.md`, the probes' description `harness/docs/probes.md`.
//!
//! - **early-only** probes: a set fixed by the recording, the same for every strategy. A probe is early-only
//!   when (1) all its evidence lies before the *final stretch*, the shortest suffix of the recording that
//!   holds [`FINAL_STRETCH_SHARE`] of its text (what the reference keeps verbatim at its default preserve
//!   fraction, and what every strategy still holds at the end); (2) an accepted answer occurs (normalised,
//!   whole tokens) in a recorded Content at or before its last evidence turn; (3) no accepted answer occurs
//!   in any recorded Content after it (not restated later). With (2), `none` keeps every early-only probe:
//!   its early-only retention is 1.0 by construction.
//! - **at risk**: a (probe, compression) pair where that strategy, right after that compression, no longer
//!   holds the probe's evidence verbatim (summarised, rewritten or dropped) and no accepted answer survives
//!   in any part of the history that is a verbatim recorded part (kept tail, later turns).
//! - From a conversation's first request over the window on, every probe scores as lost
//!   ([`after_overflow`]).

use super::grader::{Grader, Matcher};
use super::text_match::{self, Haystack};
use super::Probe;
use crate::data::CellResult;
use crate::data::ProbeResults;
use crate::history::{self, Content};
use rustc_hash::FxHashSet as HashSet;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// Share of the recording's text (characters of what the agent reads) that makes up the final stretch.
pub const FINAL_STRETCH_SHARE: f64 = 0.3;

fn text_hash(s: &str) -> u64 {
    // SipHash with fixed keys: deterministic across runs.
    let mut h = std::hash::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The readable text of each non-thought part of a Content, skipping empty ones.
fn part_texts(c: &Content) -> impl Iterator<Item = String> + '_ {
    history::parts(c)
        .iter()
        .filter(|p| !history::is_thought(p))
        .map(text_match::graded_part_text)
        .filter(|t| !t.trim().is_empty())
}

/// Index of the first Content of the final stretch: the shortest suffix holding at least
/// [`FINAL_STRETCH_SHARE`] of the recording's characters.
pub fn final_stretch_start(recorded: &[Content]) -> usize {
    let lens: Vec<usize> = recorded.iter().map(|c| text_match::content_text(c).chars().count()).collect();
    let total: usize = lens.iter().sum();
    let need = (total as f64 * FINAL_STRETCH_SHARE).ceil() as usize;
    let mut acc = 0;
    for i in (0..lens.len()).rev() {
        acc += lens[i];
        if acc >= need {
            return i;
        }
    }
    0
}

/// Per probe, whether the grader finds its fact in each recorded Content alone (`kept[probe][content]`).
fn kept_per_content(recorded: &[Content], grader: &Grader, matchers: &[Matcher]) -> Vec<Vec<bool>> {
    let mut kept = vec![vec![false; recorded.len()]; matchers.len()];
    for (c, content) in recorded.iter().enumerate() {
        let hay = Haystack::of_lines([text_match::graded_text(content)]);
        for (m, by) in grader.kept_all(&hay, matchers).into_iter().enumerate() {
            kept[m][c] = by.is_some();
        }
    }
    kept
}

/// Which probes of a conversation are early-only (definition in the module docs), given where the
/// grader finds each probe's fact in the recording ([`kept_per_content`]).
fn early_only(recorded: &[Content], probes: &[Probe], kept: &[Vec<bool>]) -> Vec<bool> {
    let stretch = final_stretch_start(recorded);
    probes
        .iter()
        .zip(kept)
        .map(|(p, kept)| {
            let Some(&last) = p.evidence.iter().max() else { return false };
            if last >= stretch || last >= kept.len() {
                return false;
            }
            let stated = kept[..=last].iter().any(|k| *k);
            let restated = kept[last + 1..].iter().any(|k| *k);
            stated && !restated
        })
        .collect()
}

/// What the recording says about a conversation's probes, computed once per replay.
#[derive(Debug)]
pub struct RecordingIndex {
    /// Hashes of the text of every recorded part: a stored part with one of them is kept verbatim.
    recorded_parts: HashSet<u64>,
    /// Per probe, the hashes of its evidence Contents' parts.
    evidence_parts: Vec<Vec<u64>>,
    early_only: Vec<bool>,
    /// Early-only probes whose fact the session's first user message holds.
    in_first_prompt: Vec<bool>,
}

/// The history at one moment, split by what is verbatim from the recording.
pub struct StoredView {
    parts: HashSet<u64>,
    /// Per probe: the grader keeps it in the parts that are verbatim from the recording.
    kept_verbatim: Vec<bool>,
}

impl RecordingIndex {
    pub fn new(recorded: &[Content], probes: &[Probe], grader: &Grader, matchers: &[Matcher]) -> Self {
        let per_content: Vec<Vec<u64>> =
            recorded.iter().map(|c| part_texts(c).map(|t| text_hash(&t)).collect()).collect();
        let evidence_parts = probes
            .iter()
            .map(|p| p.evidence.iter().filter_map(|&e| per_content.get(e)).flatten().copied().collect())
            .collect();
        let kept = kept_per_content(recorded, grader, matchers);
        let early_only = early_only(recorded, probes, &kept);
        let first_prompt = recorded.iter().position(history::is_user);
        let in_first_prompt =
            kept.iter().zip(&early_only).map(|(k, early)| *early && first_prompt.is_some_and(|f| k[f])).collect();
        RecordingIndex {
            recorded_parts: per_content.into_iter().flatten().collect(),
            evidence_parts,
            early_only,
            in_first_prompt,
        }
    }

    pub fn in_first_prompt(&self, probe: usize) -> bool {
        self.in_first_prompt.get(probe).copied().unwrap_or(false)
    }

    pub fn early_only(&self, probe: usize) -> bool {
        self.early_only.get(probe).copied().unwrap_or(false)
    }

    pub fn view(&self, stored: &[Content], grader: &Grader, matchers: &[Matcher]) -> StoredView {
        let mut parts = HashSet::default();
        let mut verbatim = Vec::new();
        for c in stored {
            for t in part_texts(c) {
                let h = text_hash(&t);
                if self.recorded_parts.contains(&h) {
                    verbatim.push(t);
                }
                parts.insert(h);
            }
        }
        let verbatim = Haystack::of_lines(verbatim);
        let kept = grader.kept_all(&verbatim, matchers).iter().map(Option::is_some).collect();
        StoredView { parts, kept_verbatim: kept }
    }

    /// The probe's evidence is no longer all there verbatim and no accepted answer survives verbatim.
    pub fn at_risk(&self, probe: usize, view: &StoredView) -> bool {
        let evidence = self.evidence_parts.get(probe).map(Vec::as_slice).unwrap_or(&[]);
        let intact = evidence.iter().all(|h| view.parts.contains(h));
        !intact && !view.kept_verbatim.get(probe).copied().unwrap_or(false)
    }
}

/// The answerer that only retrieves a passage (its grade is retrieval accuracy, not answer accuracy).
pub const RETRIEVAL_ANSWERER: &str = "extractive";

/// When a probe was scored: after a compression event (its index among the conversation's events) or at
/// the end of the replay; written `3` or `end` in `results/probes.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    Event(usize),
    End,
}

impl std::fmt::Display for Moment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Moment::Event(i) => write!(f, "{i}"),
            Moment::End => f.write_str("end"),
        }
    }
}

impl Serialize for Moment {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Moment {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "end" => Ok(Moment::End),
            n => n.parse().map(Moment::Event).map_err(|_| serde::de::Error::custom(format!("bad moment `{n}`"))),
        }
    }
}

/// One row of `results/probes.csv`: a probe scored at one moment of one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeRow {
    pub point: String,
    pub strategy: String,
    pub conversation: String,
    pub source: String,
    pub probe_id: String,
    pub kind: String,
    pub origin: String,
    /// Event index, or `end`.
    pub moment: Moment,
    /// Compressions so far (see `super::Checkpoint::ordinal`).
    pub ordinal: Option<u32>,
    /// The moment is a compression that replaced the history (at-risk pairs are counted only there).
    pub compression: bool,
    pub early_only: Option<bool>,
    /// `None` where it does not apply: strategies that write no summary keep nothing at risk.
    pub at_risk: Option<bool>,
    /// What counts: the history held an accepted answer (`held`) and the moment is not after the
    /// conversation's first request over the window (`after_overflow`).
    pub retained: bool,
    /// The history held an accepted answer at this moment, overflow or not.
    pub held: bool,
    /// The moment lies at or after the first request larger than the window: the provider refused it, the
    /// agent could not have gone on, so the probe scores as lost.
    pub after_overflow: bool,
    /// Verification changed the summary and the probe was retained with the first-pass one.
    pub first_pass_retained: Option<bool>,
    /// The moment's compression ran a verification pass.
    pub verified: bool,
    /// The `extractive` answerer's passage contains an accepted answer.
    pub retrieval_correct: Option<bool>,
    /// A model answerer's answer contains an accepted answer (normalised match), 0 or 1.
    pub answer_score: Option<f64>,
    /// The judge's 0–5 score.
    pub judge_score: Option<u8>,
    /// Which rule of the grader found the fact (`exact`, `path`, `bare-name`, `terms`), overflow or not.
    pub kept_by: Option<crate::data::KeptBy>,
    /// An early-only probe whose fact is in the session's first user message.
    pub in_first_prompt: bool,
}

/// Whether a checkpoint lies at or after the cell's first request over the window: the end always does
/// when there was one; a compression does when it came before that request or a later one.
pub fn after_overflow(c: &CellResult, event: Option<usize>) -> bool {
    let Some(first) = c.result.first_overflow_request() else { return false };
    match event {
        None => true,
        Some(e) => c.result.events.get(e).is_some_and(|e| e.request >= first),
    }
}

/// The rows of one cell, in checkpoint order.
pub fn cell_rows(c: &CellResult, strategy: &str) -> Vec<ProbeRow> {
    rows_of(c, strategy, Names::Filled, None)
}

/// The rows of one cell with their outcomes only (no names), of the probes of one kind when `kind` is given:
/// what the per-conversation tallies count.
pub fn outcome_rows(c: &CellResult, kind: Option<&str>) -> Vec<ProbeRow> {
    rows_of(c, "", Names::Empty, kind)
}

/// Whether rows carry their names (point, conversation, probe id, …) or only their outcomes: the
/// per-conversation tallies resampled by every paired difference need the outcomes alone, and copying
/// the names into each row was most of a report's time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Names {
    Filled,
    Empty,
}

/// [`cell_rows`], with or without names, of the probes of one kind when `kind` is given.
fn rows_of(c: &CellResult, strategy: &str, names: Names, kind: Option<&str>) -> Vec<ProbeRow> {
    let Some(r) = &c.probes else { return Vec::new() };
    let name = |s: &str| if names == Names::Filled { s.to_string() } else { String::new() };
    let retrieval = r.answerer.as_deref().is_none_or(|a| a == RETRIEVAL_ANSWERER);
    let mut out = Vec::new();
    for cp in &r.checkpoints {
        let verified = cp.event.and_then(|e| c.result.events.get(e)).is_some_and(|e| e.verification.is_some());
        let lost = after_overflow(c, cp.event);
        for s in cp.scores.iter().filter(|s| kind.is_none_or(|k| s.kind.name() == k)) {
            let answer = s.answer.as_ref().filter(|a| a.error.is_none());
            out.push(ProbeRow {
                point: name(&c.cell.point),
                strategy: name(strategy),
                conversation: name(&c.cell.conversation),
                source: name(&c.source),
                probe_id: name(&s.probe),
                kind: name(s.kind.name()),
                origin: name(s.source.name()),
                moment: cp.event.map_or(Moment::End, Moment::Event),
                ordinal: cp.ordinal,
                compression: cp.replaced,
                early_only: s.early_only,
                at_risk: s.at_risk.filter(|_| c.result.summarizes),
                retained: s.retained && !lost,
                held: s.retained,
                after_overflow: lost,
                first_pass_retained: s.first_pass_retained.map(|f| f && !lost),
                verified,
                retrieval_correct: answer.filter(|_| retrieval).map(|a| a.grade.contains && !lost),
                answer_score: answer.filter(|_| !retrieval).map(|a| (a.grade.contains && !lost) as u8 as f64),
                judge_score: answer.and_then(|a| a.judge).map(|j| if lost { 0 } else { j }),
                kept_by: s.kept_by,
                in_first_prompt: s.in_first_prompt,
            });
        }
    }
    out
}

/// Whether a cell's probe results carry the recording-based flags (cells written before them do not).
pub fn has_flags(r: &ProbeResults) -> bool {
    r.checkpoints.iter().flat_map(|c| &c.scores).any(|s| s.early_only.is_some())
}

/// The strategy name of a point of the plan (empty when the plan has no such point).
pub fn strategy_of(plan: &crate::data::Plan, point: &str) -> String {
    plan.points.iter().find(|p| p.id == point).map(|p| p.strategy.kind().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Cell;
    use crate::data::Checkpoint;
    use crate::data::{ProbeKind, ProbeOrigin, ProbeScore};
    use crate::metrics::probe_figures::conversation_tally;
    use crate::metrics::FigureId::*;
    use crate::replay::{CompressionEvent, ConversationResult};

    fn score(retained: bool) -> ProbeScore {
        ProbeScore {
            probe: "p".into(),
            kind: ProbeKind::Recall,
            source: ProbeOrigin::Manual,
            retained,
            kept_by: None,
            in_first_prompt: false,
            early_only: Some(true),
            at_risk: Some(true),
            answer: None,
            first_pass_retained: None,
            first_pass_answer: None,
        }
    }

    fn checkpoint(event: Option<usize>) -> Checkpoint {
        Checkpoint {
            event,
            turn: None,
            ordinal: None,
            replaced: event.is_some(),
            scores: vec![score(true)],
            next_action: None,
        }
    }

    /// Compressions before requests 1 and 3; request 2 is the first over the window.
    fn cell(summarizes: bool) -> CellResult {
        let event = |request| CompressionEvent { request, ..Default::default() };
        CellResult {
            cell: Cell { point: "p".into(), conversation: "c".into(), repeat: 0 },
            source: "s".into(),
            transient_failure: false,
            plan: String::new(),
            digest: String::new(),
            result: ConversationResult {
                token_limit: 100,
                request_tokens: vec![50, 90, 130, 80],
                events: vec![event(1), event(3)],
                summarizes,
                ..Default::default()
            },
            probes: Some(ProbeResults {
                probes: 1,
                checkpoints: vec![checkpoint(Some(0)), checkpoint(Some(1)), checkpoint(None)],
                ..Default::default()
            }),
        }
    }

    /// From the first request over the window on, a probe the history still holds scores as lost: the
    /// provider refused that request and the agent could not go on.
    #[test]
    fn no_probe_counts_as_retained_after_the_first_overflow() {
        let c = cell(true);
        let rows = cell_rows(&c, "gemini");
        let flags: Vec<(bool, bool, bool)> = rows.iter().map(|r| (r.held, r.after_overflow, r.retained)).collect();
        assert_eq!(flags, [(true, false, true), (true, true, false), (true, true, false)]);
        assert_eq!(conversation_tally(&c, EarlyOnlyRetention), Some((0.0, 1.0)));
        assert_eq!(conversation_tally(&c, AtRiskRetention), Some((1.0, 2.0)));
        // Inside the window the same history keeps it.
        let mut inside = cell(true);
        inside.result.request_tokens[2] = 100;
        assert_eq!(conversation_tally(&inside, EarlyOnlyRetention), Some((1.0, 1.0)));
    }

    /// A strategy that writes no summary keeps nothing at risk: the figure does not apply (not 0).
    #[test]
    fn at_risk_retention_does_not_apply_without_a_summary() {
        let c = cell(false);
        assert!(cell_rows(&c, "drop-oldest").iter().all(|r| r.at_risk.is_none()));
        assert_eq!(conversation_tally(&c, AtRiskRetention), None);
    }
}
