//! Snapshots for reading by hand: at every compression of a replay, the history the agent would have right
//! after it, as readable text, next to the probes askable there (those whose evidence lies before it).
//! `compactbench probes snapshots` writes them, so that a person can judge whether a snapshot answers a
//! probe's question, blind to the automatic grade (`retained` in `results/probes.csv`).
//!
//! A compression here is what the [`super::ProbeObserver`] counts as one: an event that replaced the history
//! (`COMPRESSED`, `CONTENT_TRUNCATED`); its ordinal (1-based) is the `ordinal` of that checkpoint's rows in
//! `results/probes.csv`. Snapshots hold the sessions' text: write them outside the repository.

use super::{text_match, Probe};
use crate::compress::CompressionStatus;
use crate::data::ProbesConfig;
use crate::fsutil::{write_atomic, WriteError};
use crate::history::{self, Content};
use crate::replay::{CompressionEvent, ReplayObserver};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Format tag of a snapshot's probe file.
pub const SNAPSHOT_PROBES_FORMAT: &str = "compactbench.snapshot-probes/1";

/// One probe as a snapshot's probe file lists it: what a reader needs to judge it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AskableProbe {
    pub id: String,
    pub kind: String,
    pub origin: String,
    pub question: String,
    pub gold: String,
    #[serde(default)]
    pub accept: Vec<String>,
    #[serde(default)]
    pub terms: Vec<String>,
}

impl AskableProbe {
    fn of(p: &Probe) -> Self {
        AskableProbe {
            id: p.id.clone(),
            kind: p.kind.name().to_string(),
            origin: p.source.name().to_string(),
            question: p.question.clone(),
            gold: p.gold.clone(),
            accept: p.accept.clone(),
            terms: p.terms.clone(),
        }
    }
}

/// `<strategy>-<ordinal>.probes.json`: the probes askable right after one compression.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotProbes {
    pub format: String,
    /// The conversation's id in the run (`conversation` in `results/probes.csv`).
    pub conversation: String,
    pub strategy: String,
    /// Compressions so far, this one included (`ordinal` in `results/probes.csv`).
    pub ordinal: u32,
    /// The event's index among the replay's events (`moment` in `results/probes.csv`).
    pub event: usize,
    /// The recorded Content index of the model turn about to be requested.
    pub turn: usize,
    pub probes: Vec<AskableProbe>,
}

/// One snapshot written.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    pub ordinal: u32,
    pub text: PathBuf,
    pub probes: PathBuf,
    pub askable: usize,
}

/// The readable text of a history: each Content under a header with its index and role, its text as the
/// grader reads it ([`text_match::content_text`]: text, call names and arguments, tool outputs; no thoughts).
pub fn history_text(stored: &[Content]) -> String {
    let mut out = String::new();
    for (i, c) in stored.iter().enumerate() {
        let role = history::role(c).unwrap_or("?");
        out.push_str(&format!("===== [{i}] {role} =====\n"));
        let text = text_match::content_text(c);
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// The probes a sweep scores for a conversation (the same calls as the runner's: stored files minus linted
/// probes, then, with `derive_auto`, the extractor's probes derived in memory minus linted ones).
pub fn scored_probes(
    config: &ProbesConfig,
    base_dir: &Path,
    conversation: &crate::datasets::Conversation,
) -> Result<Vec<Probe>, super::ProbeError> {
    let dir = if config.dir.is_absolute() { config.dir.clone() } else { base_dir.join(&config.dir) };
    let (mut probes, _) = super::load_scored_probes(
        &dir,
        &conversation.meta.source,
        &conversation.meta.id,
        &config.sources,
        conversation,
    )?;
    if config.derive_auto {
        let (derived, _) = super::derived_auto_probes(&dir, conversation, &config.sources, &probes);
        probes.extend(derived);
    }
    Ok(probes)
}

/// A [`ReplayObserver`] that writes `<dir>/<strategy>-<ordinal>.txt` and `.probes.json` at every
/// compression that replaced the history.
pub struct SnapshotObserver {
    dir: PathBuf,
    conversation: String,
    strategy: String,
    probes: Vec<Probe>,
    compressions: u32,
    written: Vec<Written>,
    error: Option<WriteError>,
}

impl SnapshotObserver {
    /// `dir` is the conversation's own directory; `strategy` names the files.
    pub fn new(dir: &Path, conversation: &str, strategy: &str, probes: Vec<Probe>) -> Self {
        SnapshotObserver {
            dir: dir.to_path_buf(),
            conversation: conversation.into(),
            strategy: strategy.into(),
            probes,
            compressions: 0,
            written: Vec::new(),
            error: None,
        }
    }

    /// The snapshots written, or the first write that failed.
    pub fn finish(self) -> Result<Vec<Written>, WriteError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.written),
        }
    }

    fn write(&mut self, event_index: usize, event: &CompressionEvent, stored: &[Content]) -> Result<(), WriteError> {
        let ordinal = self.compressions;
        let stem = format!("{}-{ordinal}", self.strategy);
        let askable: Vec<AskableProbe> =
            self.probes.iter().filter(|p| p.available_before() <= event.turn).map(AskableProbe::of).collect();
        let header = format!(
            "# {} · {} · compression {ordinal} (event {event_index}, {}, before recorded Content {}) · {} Contents\n\n",
            self.conversation,
            self.strategy,
            event.status.name(),
            event.turn,
            stored.len()
        );
        let text_path = self.dir.join(format!("{stem}.txt"));
        write_atomic(&text_path, (header + &history_text(stored)).as_bytes())?;
        let file = SnapshotProbes {
            format: SNAPSHOT_PROBES_FORMAT.into(),
            conversation: self.conversation.clone(),
            strategy: self.strategy.clone(),
            ordinal,
            event: event_index,
            turn: event.turn,
            probes: askable,
        };
        let mut bytes = serde_json::to_vec_pretty(&file).expect("snapshot probes serialise");
        bytes.push(b'\n');
        let probes_path = self.dir.join(format!("{stem}.probes.json"));
        write_atomic(&probes_path, &bytes)?;
        self.written.push(Written { ordinal, text: text_path, probes: probes_path, askable: file.probes.len() });
        Ok(())
    }
}

#[async_trait::async_trait]
impl ReplayObserver for SnapshotObserver {
    async fn after_event(
        &mut self,
        event_index: usize,
        event: &CompressionEvent,
        stored: &[Content],
        _first_pass: Option<&[Content]>,
    ) {
        // Counted as the probe observer counts compressions, so ordinals match `results/probes.csv`.
        if !matches!(event.status, CompressionStatus::Compressed | CompressionStatus::ContentTruncated) {
            return;
        }
        self.compressions += 1;
        if self.error.is_none() {
            if let Err(e) = self.write(event_index, event, stored) {
                self.error = Some(e);
            }
        }
    }

    async fn at_end(&mut self, _stored: &[Content]) {}
}
