//! The grader against labels (judged here, rendered by `report::grader_check`): where a run's `[probes] labels` names a file of judgements of
//! (probe, compression) pairs (`compactbench.labels/1`), each labelled pair is set beside the grader's own
//! verdict at that compression (the cell's `retained`: an accepted answer, normalised, occurs in the history)
//! and counted per probe kind and per strategy: agreement, precision and recall (`grader_agreement`,
//! `grader_precision`, `grader_recall` in `harness/docs/metrics.md`). A label whose probe no longer exists, or
//! whose question has changed since it was labelled, is *stale*: listed, never used.
//!
//! The one rule the report's per-kind figures follow ([`Gradability`]): a kind is *gradable offline* when,
//! for every strategy with labels of that kind, the grader agrees with that strategy's labels on at least
//! [`AGREEMENT_FLOOR`] of at least [`MIN_PAIRS`] labelled pairs (each strategy lays its history out in
//! its own way, so agreement is checked where the comparison is made: per kind × strategy). Where labels
//! exist, the per-kind table draws no conclusion from the other kinds and pools its `all` row over the
//! gradable ones ([`kept_parts`]); without a labels file nothing is gated.

use crate::data::ProbeKind;
use crate::data::{CellResult, Plan};
use crate::metrics::probe_figures::conversation_tally_of_kind;
use crate::metrics::{percent, FigureId, Parts, PercentStyle, Share};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The figure the per-kind tables (`probe_kinds`, `compare`) restrict by kind, and [`kept_parts`] pools over
/// the gradable kinds.
pub const KEPT_FIGURE: FigureId = FigureId::KeptAtCompressions;
/// Format tag of a labels file.
pub const LABELS_FORMAT: &str = "compactbench.labels/1";
/// The least agreement with the labels at which a kind is gradable offline.
pub const AGREEMENT_FLOOR: f64 = 0.9;
/// The fewest labelled pairs on which a kind can be gradable offline.
pub const MIN_PAIRS: usize = 20;
/// How tables mark a kind that is not gradable offline.
pub const NOT_GRADABLE: &str = "not gradable offline";
/// The gold digest of a label whose gold was not recorded when it was judged (labels of extracted probes
/// made before the extractor named its golds whole): such a label is stale, since its gold may have changed.
pub const UNRECORDED_GOLD: &str = "000000000000";
/// Hex digits of a question's SHA-256 a label carries.
const DIGEST_DIGITS: usize = 12;

/// One judgement: could the history right after compression `ordinal` of `strategy` answer `probe`?
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Label {
    /// The conversation's source (dataset) as the run names it.
    pub source: String,
    pub conversation: String,
    /// The probe's id.
    pub probe: String,
    /// The strategy's name, as in `results/probes.csv`; its default point is the one checked.
    pub strategy: String,
    /// The compression's ordinal, as in `results/probes.csv` (rows at a compression).
    pub ordinal: u32,
    /// The first 12 hex digits of the SHA-256 of the probe's question when it was labelled.
    pub question_sha256: String,
    /// The same of its gold, where the label records it: a label whose gold changed is stale too.
    #[serde(default)]
    pub gold_sha256: Option<String>,
    pub answerable: bool,
    /// Could a reader of the whole session tell which single fact the question asks for (where judged)?
    #[serde(default)]
    pub well_posed: Option<bool>,
}

impl Label {
    /// How reports name the label.
    pub fn id(&self) -> String {
        format!("{}/{}@{}#{}", self.conversation, self.probe, self.strategy, self.ordinal)
    }
}

/// A labels file as stored.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct LabelsFile {
    pub format: String,
    /// The config (run) name the labels were made for.
    pub dataset: String,
    /// How the labels were made (who judged, reading what, blind to what), where the file says.
    #[serde(default)]
    pub method: Option<String>,
    pub labels: Vec<Label>,
}

/// The first 12 hex digits (`DIGEST_DIGITS`) of the SHA-256 of a question.
pub fn question_digest(question: &str) -> String {
    hex::encode(Sha256::digest(question.as_bytes()))[..DIGEST_DIGITS].to_string()
}

/// Parses a labels file; errors name the JSON path.
pub fn parse_labels(bytes: &[u8]) -> Result<LabelsFile, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let file: LabelsFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        format!("at `{path}`: {}", e.into_inner())
    })?;
    if file.format != LABELS_FORMAT {
        return Err(format!("at `format`: `{}` is not `{LABELS_FORMAT}`", file.format));
    }
    Ok(file)
}

/// The grader's verdicts set beside the labels over a set of pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agreement {
    /// Labelled pairs.
    pub pairs: usize,
    /// Pairs where the grader's verdict equals the label.
    pub agree: usize,
    /// Pairs the grader kept (`retained`).
    pub kept: usize,
    /// Pairs labelled answerable.
    pub answerable: usize,
    /// Pairs the grader kept and labelled answerable.
    pub kept_answerable: usize,
}

/// `num / den`, none of nothing.
pub fn share(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

impl Agreement {
    pub fn add(&mut self, retained: bool, answerable: bool) {
        self.pairs += 1;
        self.agree += (retained == answerable) as usize;
        self.kept += retained as usize;
        self.answerable += answerable as usize;
        self.kept_answerable += (retained && answerable) as usize;
    }

    /// `grader_agreement`: share of pairs where the grader's verdict equals the label.
    pub fn agreement(&self) -> Option<f64> {
        share(self.agree, self.pairs)
    }

    /// `grader_precision`: of the pairs the grader kept, the share labelled answerable.
    pub fn precision(&self) -> Option<f64> {
        share(self.kept_answerable, self.kept)
    }

    /// `grader_recall`: of the pairs labelled answerable, the share the grader kept.
    pub fn recall(&self) -> Option<f64> {
        share(self.kept_answerable, self.answerable)
    }

    /// At least [`MIN_PAIRS`] labelled pairs and agreement at least [`AGREEMENT_FLOOR`].
    pub fn gradable(&self) -> bool {
        self.pairs >= MIN_PAIRS && self.agreement().is_some_and(|a| a >= AGREEMENT_FLOOR)
    }

    /// Why a kind is not gradable offline (`None` when it is).
    pub fn why_not(&self) -> Option<String> {
        if self.pairs < MIN_PAIRS {
            Some(format!("{} labelled pairs, fewer than {MIN_PAIRS}", self.pairs))
        } else if !self.gradable() {
            Some(format!(
                "agreement below {}",
                percent(Some(Share::Fraction(AGREEMENT_FLOOR)), PercentStyle::PROSE_WHOLE)
            ))
        } else {
            None
        }
    }
}

/// A label set aside, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unused {
    pub id: String,
    pub reason: String,
}

/// The labels checked against a run's cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraderCheck {
    pub path: PathBuf,
    /// The run the file says it labels.
    pub dataset: String,
    /// Labels in the file.
    pub labels: usize,
    /// How the file says its labels were made.
    pub method: Option<String>,
    /// Every probe kind, labelled or not.
    pub by_kind: BTreeMap<String, Agreement>,
    pub by_strategy: BTreeMap<String, Agreement>,
    /// Per kind, per strategy: where the comparison between strategies is made.
    pub by_kind_strategy: BTreeMap<String, BTreeMap<String, Agreement>>,
    pub all: Agreement,
    /// The probe no longer exists or its question changed (or cannot be read): not used.
    pub stale: Vec<Unused>,
    /// No compression of the run scored the labelled pair (another run, strategy or ordinal), or the pair
    /// was labelled twice: not used.
    pub unmatched: Vec<Unused>,
}

/// What a run's labels come to.
#[derive(Clone, Debug, PartialEq)]
pub enum Labels {
    /// The run names no labels file.
    Unset,
    /// It names one that does not exist (yet).
    Missing(PathBuf),
    /// The file could not be read or parsed.
    Invalid {
        path: PathBuf,
        error: String,
    },
    Checked(GraderCheck),
}

/// Which probe kinds the grader is trusted on, from the labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Gradability {
    /// Every probe kind with its agreement over the labels, per labelled strategy.
    pub kinds: BTreeMap<String, BTreeMap<String, Agreement>>,
}

impl Gradability {
    /// Every strategy with labels (of any kind) has enough labels of this kind, and the grader passes on
    /// each: a kind is not taken as gradable for a strategy whose histories no one judged on it.
    pub fn is_gradable(&self, kind: &str) -> bool {
        let strategies = self.strategies();
        !strategies.is_empty()
            && strategies.iter().all(|s| self.kinds.get(kind).and_then(|k| k.get(*s)).is_some_and(Agreement::gradable))
    }

    /// The strategies with labels of any kind.
    pub fn strategies(&self) -> BTreeSet<&str> {
        self.kinds.values().flat_map(|k| k.keys()).map(String::as_str).collect()
    }

    /// The gradable kinds, in name order.
    pub fn gradable(&self) -> Vec<&str> {
        self.kinds.keys().filter(|k| self.is_gradable(k)).map(String::as_str).collect()
    }

    /// Why a kind is not gradable offline (`None` when it is): the strategies it fails on.
    pub fn why_not(&self, kind: &str) -> Option<String> {
        let strategies = self.strategies();
        if strategies.is_empty() {
            return Some("no labelled pairs".into());
        }
        let none = Agreement::default();
        let failing: Vec<String> = strategies
            .iter()
            .filter_map(|s| {
                let a = self.kinds.get(kind).and_then(|k| k.get(*s)).unwrap_or(&none);
                a.why_not().map(|w| format!("{s}: {w}"))
            })
            .collect();
        (!failing.is_empty()).then(|| failing.join("; "))
    }

    /// The gradable kinds as a phrase: `artifact, recall`, or `no kind`.
    pub fn gradable_list(&self) -> String {
        let g = self.gradable();
        if g.is_empty() {
            "no kind".into()
        } else {
            g.join(", ")
        }
    }
}

/// `results/gradable.json`: the probe kinds a labelled run's figures pool, and each kind × strategy's
/// agreement behind that ([`Gradability`]), for readers of the committed results (`compactbench findings`)
/// where the cells are not committed.
pub const GRADABLE_FILE: &str = "gradable.json";

#[derive(serde::Serialize, serde::Deserialize)]
pub struct GradableFile {
    /// The kinds every probe figure of the run pools.
    pub gradable: Vec<String>,
    /// Per kind and strategy: the labelled pairs and whether the grader passes on them.
    pub kinds: BTreeMap<String, BTreeMap<String, GradableCell>>,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct GradableCell {
    pub pairs: usize,
    pub agree: usize,
    pub passes: bool,
}

/// Writes `results/gradable.json` for a run with labels, and removes a stale one from a run without.
pub fn write_gradable(labels: &Labels, dir: &std::path::Path) -> Result<(), crate::fsutil::WriteError> {
    let path = dir.join(GRADABLE_FILE);
    let Some(g) = labels.gradability() else {
        return match std::fs::remove_file(&path) {
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                Err(crate::fsutil::WriteError { path, source })
            }
            _ => Ok(()),
        };
    };
    let file = GradableFile {
        gradable: g.gradable().into_iter().map(String::from).collect(),
        kinds: g
            .kinds
            .iter()
            .map(|(kind, by)| {
                let cells = by
                    .iter()
                    .map(|(s, a)| (s.clone(), GradableCell { pairs: a.pairs, agree: a.agree, passes: a.gradable() }))
                    .collect();
                (kind.clone(), cells)
            })
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).expect("a map of counts serializes");
    bytes.push(b'\n');
    crate::fsutil::write_atomic(&path, &bytes)
}

impl Labels {
    /// The kinds the grader is trusted on; `None` (nothing gated) unless a labels file was read.
    pub fn gradability(&self) -> Option<Gradability> {
        match self {
            Labels::Checked(c) => Some(Gradability { kinds: c.by_kind_strategy.clone() }),
            _ => None,
        }
    }
}

/// A conversation's probe questions and golds by probe id, or why they cannot be read.
pub type Questions = Result<BTreeMap<String, (String, String)>, String>;

/// Reads the run's labels file (its path relative to the working directory, as the run read its probes) and
/// checks it against the cells.
pub fn check(plan: &Plan, cells: &[CellResult]) -> Labels {
    let Some(path) = plan.probes.as_ref().filter(|p| p.enabled).and_then(|p| p.labels.clone()) else {
        return Labels::Unset;
    };
    if !path.exists() {
        return Labels::Missing(path);
    }
    let file = match std::fs::read(&path).map_err(|e| e.to_string()).and_then(|b| parse_labels(&b)) {
        Ok(f) => f,
        Err(error) => return Labels::Invalid { path, error },
    };
    let mut questions: BTreeMap<String, Questions> = BTreeMap::new();
    for l in &file.labels {
        if !questions.contains_key(&l.conversation) {
            questions.insert(l.conversation.clone(), current_questions(plan, &l.conversation));
        }
    }
    let lookup = |conversation: &str| questions.get(conversation).cloned().unwrap_or_else(|| Ok(BTreeMap::new()));
    Labels::Checked(tally(plan, cells, &path, &file, &lookup))
}

/// [`check`]'s verdict on the kinds: `None` where the run has no labels file to check the grader against.
pub fn gradable_kinds(plan: &Plan, cells: &[CellResult]) -> Option<Gradability> {
    check(plan, cells).gradability()
}

/// The questions of a conversation's probes as the run scored them (stored, then derived), by probe id.
fn current_questions(plan: &Plan, conversation: &str) -> Questions {
    let Some(planned) = plan.conversations.iter().find(|c| c.id == conversation) else {
        return Err("its conversation is not in this run".into());
    };
    let Some(pc) = plan.probes.as_ref() else { return Ok(BTreeMap::new()) };
    if let Some(e) = &planned.error {
        return Err(format!("its conversation could not be read: {e}"));
    }
    let conv = crate::datasets::load_conversation(&planned.path)
        .map_err(|e| format!("its conversation could not be read: {e}"))?;
    let meta = &conv.meta;
    let mut probes = crate::probes::load_probes(&pc.dir, &meta.source, &meta.id, &pc.sources, conv.history.len())
        .map_err(|e| format!("its probes could not be read: {e}"))?;
    if pc.derive_auto {
        let (derived, _) = crate::probes::derived_auto_probes(&pc.dir, &conv, &pc.sources, &probes);
        probes.extend(derived);
    }
    Ok(probes.into_iter().map(|p| (p.id, (p.question, p.gold))).collect())
}

/// The labels set beside the cells, the questions of each conversation given by `questions`.
pub fn tally(
    plan: &Plan,
    cells: &[CellResult],
    path: &Path,
    file: &LabelsFile,
    questions: &dyn Fn(&str) -> Questions,
) -> GraderCheck {
    let mut out = GraderCheck {
        path: path.to_path_buf(),
        dataset: file.dataset.clone(),
        labels: file.labels.len(),
        method: file.method.clone(),
        by_kind: ProbeKind::ALL.iter().map(|k| (k.name().to_string(), Agreement::default())).collect(),
        by_kind_strategy: ProbeKind::ALL.iter().map(|k| (k.name().to_string(), BTreeMap::new())).collect(),
        ..Default::default()
    };
    let points: BTreeMap<&str, &str> = plan
        .default_points()
        .into_iter()
        .map(|i| (plan.points[i].strategy.kind(), plan.points[i].id.as_str()))
        .collect();
    let mut seen = BTreeSet::new();
    for l in &file.labels {
        let unused = |reason: String| Unused { id: l.id(), reason };
        if !plan.conversations.iter().any(|c| c.id == l.conversation) {
            out.unmatched.push(unused("its conversation is not in this run".into()));
            continue;
        }
        match questions(&l.conversation) {
            Err(reason) => {
                out.stale.push(unused(reason));
                continue;
            }
            Ok(q) => match q.get(&l.probe) {
                None => {
                    out.stale.push(unused("the probe no longer exists".into()));
                    continue;
                }
                Some((question, gold)) => {
                    let same = |digest: &str, text: &str| {
                        digest
                            .trim()
                            .to_ascii_lowercase()
                            .get(..DIGEST_DIGITS)
                            .is_some_and(|d| d == question_digest(text))
                    };
                    if !same(&l.question_sha256, question) {
                        out.stale.push(unused("its question changed since it was labelled".into()));
                        continue;
                    }
                    if l.gold_sha256.as_deref() == Some(UNRECORDED_GOLD) {
                        out.stale.push(unused("the gold it was judged against was not recorded".into()));
                        continue;
                    }
                    if l.gold_sha256.as_deref().is_some_and(|g| !same(g, gold)) {
                        out.stale.push(unused("its gold changed since it was labelled".into()));
                        continue;
                    }
                }
            },
        }
        let Some(point) = points.get(l.strategy.as_str()) else {
            out.unmatched.push(unused(format!("this run has no point of `{}`", l.strategy)));
            continue;
        };
        let cell = cells.iter().find(|c| c.cell.point == *point && c.cell.conversation == l.conversation);
        let Some(cell) = cell.filter(|c| c.source == l.source) else {
            out.unmatched.push(unused(format!("no cell of `{}` on this conversation of `{}`", l.strategy, l.source)));
            continue;
        };
        let score = cell
            .probes
            .iter()
            .flat_map(|r| &r.checkpoints)
            .filter(|cp| cp.event.is_some() && cp.replaced && cp.ordinal == Some(l.ordinal))
            .flat_map(|cp| &cp.scores)
            .find(|s| s.probe == l.probe);
        let Some(score) = score else {
            out.unmatched.push(unused(format!("compression {} scored no such probe", l.ordinal)));
            continue;
        };
        if !seen.insert((l.conversation.as_str(), l.probe.as_str(), l.strategy.as_str(), l.ordinal)) {
            out.unmatched.push(unused("labelled twice: the first label counts".into()));
            continue;
        }
        for a in [
            out.by_kind.entry(score.kind.name().to_string()).or_default(),
            out.by_strategy.entry(l.strategy.clone()).or_default(),
            out.by_kind_strategy
                .entry(score.kind.name().to_string())
                .or_default()
                .entry(l.strategy.clone())
                .or_default(),
            &mut out.all,
        ] {
            a.add(score.retained, l.answerable);
        }
    }
    out
}

/// The cells as every probe figure of a report reads them: where the run's grader is checked against labels,
/// each checkpoint's scores of the gradable kinds only (so that early-only retention, kept at compressions,
/// the claims, the comparisons across runs and the gate pool only what the grader is trusted on); the cells
/// as they are where the run names no labels, or its labels cannot be read. With the labels' verdict.
pub fn scored_cells(plan: &Plan, mut cells: Vec<CellResult>) -> (Labels, Vec<CellResult>) {
    let labels = check(plan, &cells);
    if let Some(g) = labels.gradability() {
        retain_kinds(&mut cells, &g.gradable());
    }
    (labels, cells)
}

/// Keeps each checkpoint's probe scores of `kinds` only.
pub fn retain_kinds(cells: &mut [CellResult], kinds: &[&str]) {
    for p in cells.iter_mut().filter_map(|c| c.probes.as_mut()) {
        for cp in &mut p.checkpoints {
            cp.scores.retain(|s| kinds.contains(&s.kind.name()));
        }
    }
}

/// A cell's `kept_at_compressions` over the probes of `kinds` only (each probe has one kind: the sum of the
/// kinds' tallies).
pub fn kept_parts(c: &CellResult, kinds: &[&str]) -> Option<Parts> {
    let (mut num, mut den) = (0.0, 0.0);
    for k in kinds {
        if let Some((h, n)) = conversation_tally_of_kind(c, KEPT_FIGURE, Some(k)) {
            num += h;
            den += n;
        }
    }
    (den > 0.0).then_some(Parts { num, den })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_precision_and_recall_count_as_defined() {
        let mut a = Agreement::default();
        // (retained, answerable): 3 true positives, 1 false positive, 2 false negatives, 4 true negatives.
        for (r, l, n) in [(true, true, 3), (true, false, 1), (false, true, 2), (false, false, 4)] {
            for _ in 0..n {
                a.add(r, l);
            }
        }
        assert_eq!(a.pairs, 10);
        assert_eq!(a.agreement(), Some(0.7));
        assert_eq!(a.precision(), Some(0.75));
        assert_eq!(a.recall(), Some(0.6));
        assert!(!a.gradable());
        assert_eq!(a.why_not().as_deref(), Some("10 labelled pairs, fewer than 20"));
        let mut b = Agreement::default();
        for _ in 0..MIN_PAIRS - 1 {
            b.add(true, true);
        }
        assert_eq!(b.agreement(), Some(1.0));
        assert!(!b.gradable(), "{} pairs are too few", MIN_PAIRS - 1);
        b.add(false, false);
        assert!(b.gradable());
        // A kind is gradable only where every labelled strategy passes.
        let kinds = BTreeMap::from([(
            "artifact".to_string(),
            BTreeMap::from([("gemini".to_string(), b), ("recorded".to_string(), a)]),
        )]);
        let g = Gradability { kinds };
        assert!(!g.is_gradable("artifact"));
        assert!(g.why_not("artifact").is_some_and(|w| w.starts_with("recorded: ")), "{:?}", g.why_not("artifact"));
        assert!(!g.is_gradable("decision"), "no labels, not gradable");
        assert_eq!(Agreement::default().precision(), None);
    }

    #[test]
    fn a_label_carries_the_first_twelve_hex_digits_of_its_question() {
        assert_eq!(question_digest("abc"), "ba7816bf8f01");
        let ok = br#"{"format": "compactbench.labels/1", "dataset": "d", "labels": []}"#;
        assert_eq!(parse_labels(ok).unwrap().dataset, "d");
        let e = parse_labels(br#"{"format": "other", "dataset": "d", "labels": []}"#).unwrap_err();
        assert!(e.contains("format"), "{e}");
        let e = parse_labels(br#"{"format": "compactbench.labels/1", "dataset": "d", "labels": [{"probe": 1}]}"#)
            .unwrap_err();
        assert!(e.contains("labels[0]"), "{e}");
    }
}
