//! Downstream probes: questions about a conversation whose answers lie where compression can remove them.
//!
//! A probe set is stored per conversation and origin under `datasets/probes/<source>/<id>.<origin>.json`
//! (`auto` from the extractor, `manual` hand-written, `llm` drafts for review), so regenerating one origin
//! never touches another. [`ProbeObserver`] scores them during a replay: retention (is a gold answer still in
//! the history the agent would send) and answer accuracy (an answerer model asked the question over that
//! history). [`inject`] builds prompt-injection variants of conversations.

pub mod extract;
pub mod figures;
pub mod generate;
pub mod grader;
pub mod inject;
pub mod lint;
pub mod observer;
pub mod snapshots;
pub mod text_match;

pub use observer::{ProbeObserver, ProbeOptions};

use crate::data::{Lint, ProbeKind, ProbeOrigin};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Format tag of a probe file.
pub const PROBE_FORMAT: &str = "compactbench.probes/1";

/// One question about one conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// Unique within the conversation's probes of all origins (origins use distinct prefixes by convention).
    pub id: String,
    /// The conversation's `meta.id`.
    pub conversation: String,
    pub kind: ProbeKind,
    pub question: String,
    /// The gold answer.
    pub gold: String,
    /// Other answers graded as correct (spellings, shorter forms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept: Vec<String>,
    /// Key terms of a free-text fact (constraint, decision, continuation): kept when every term occurs
    /// within one span of the history, in any order, inflections folded ([`grader`] has the rule). A term
    /// may list alternatives separated by `|` (`remove|delete`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
    /// Indices of the Contents (in the recorded history) that hold the answer.
    pub evidence: Vec<usize>,
    pub source: ProbeOrigin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Probe {
    /// The gold answer, then the accepted variants.
    pub fn answers(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.gold.as_str()).chain(self.accept.iter().map(String::as_str))
    }

    /// The probe is askable once the replay has passed all its evidence.
    pub fn available_before(&self) -> usize {
        self.evidence.iter().max().map_or(0, |m| m + 1)
    }
}

/// The probes of one conversation from one origin, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeFile {
    pub format: String,
    pub conversation: String,
    /// The conversation's dataset (`meta.source`).
    pub dataset: String,
    pub probes: Vec<Probe>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{file}: cannot read: {source}")]
    Io { file: String, source: std::io::Error },
    #[error("{file}: at `{path}`: {message}")]
    Invalid { file: String, path: String, message: String },
}

fn invalid(file: &Path, path: &str, message: impl Into<String>) -> ProbeError {
    ProbeError::Invalid { file: file.display().to_string(), path: path.into(), message: message.into() }
}

/// Where a conversation's probes of one origin live.
pub fn probe_path(dir: &Path, dataset: &str, conversation: &str, origin: ProbeOrigin) -> PathBuf {
    dir.join(dataset).join(format!("{conversation}.{}.json", origin.name()))
}

/// Parses a probe file; errors name the file and the JSON path.
pub fn parse_probe_file(bytes: &[u8], file: &Path) -> Result<ProbeFile, ProbeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed: ProbeFile = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        invalid(file, &path, e.into_inner().to_string())
    })?;
    if parsed.format != PROBE_FORMAT {
        return Err(invalid(file, "format", format!("`{}` is not `{PROBE_FORMAT}`", parsed.format)));
    }
    let mut ids = std::collections::BTreeSet::new();
    for (i, p) in parsed.probes.iter().enumerate() {
        let at = |field: &str| format!("probes[{i}].{field}");
        if p.conversation != parsed.conversation {
            return Err(invalid(
                file,
                &at("conversation"),
                format!("`{}` differs from the file's `{}`", p.conversation, parsed.conversation),
            ));
        }
        if !ids.insert(p.id.as_str()) {
            return Err(invalid(file, &at("id"), format!("duplicate probe id `{}`", p.id)));
        }
        if p.question.trim().is_empty() {
            return Err(invalid(file, &at("question"), "empty question"));
        }
        if text_match::normalize(&p.gold).is_empty() {
            return Err(invalid(file, &at("gold"), "the gold answer is empty after normalisation"));
        }
        if p.evidence.is_empty() {
            return Err(invalid(file, &at("evidence"), "needs at least one Content index"));
        }
    }
    Ok(parsed)
}

pub fn load_probe_file(path: &Path) -> Result<ProbeFile, ProbeError> {
    let bytes = std::fs::read(path).map_err(|source| ProbeError::Io { file: path.display().to_string(), source })?;
    parse_probe_file(&bytes, path)
}

/// Checks evidence indices against the conversation's length.
pub fn check_evidence(file: &ProbeFile, path: &Path, history_len: usize) -> Result<(), ProbeError> {
    for (i, p) in file.probes.iter().enumerate() {
        if let Some(&bad) = p.evidence.iter().find(|&&e| e >= history_len) {
            return Err(invalid(
                path,
                &format!("probes[{i}].evidence"),
                format!("index {bad} is past the conversation's {history_len} Contents"),
            ));
        }
    }
    Ok(())
}

/// The probe file's bytes: pretty JSON with a trailing newline (deterministic: fields in declared order).
pub fn probe_file_bytes(file: &ProbeFile) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(file).expect("probe files serialise");
    bytes.push(b'\n');
    bytes
}

pub fn save_probe_file(path: &Path, file: &ProbeFile) -> Result<(), ProbeError> {
    crate::fsutil::write_atomic(path, &probe_file_bytes(file))
        .map_err(|source| ProbeError::Io { file: path.display().to_string(), source: source.source })
}

/// Format tag of a corpus probe file: the probes of many conversations of one dataset in one file,
/// `<dir>/<dataset>.<origin>.json`, for corpora whose sessions are read in place and must not have files
/// named after them in the repository.
pub const CORPUS_PROBE_FORMAT: &str = "compactbench.corpus-probes/1";

/// Where a dataset's corpus probe file of one origin lives.
pub fn corpus_probe_path(dir: &Path, dataset: &str, origin: ProbeOrigin) -> PathBuf {
    dir.join(format!("{dataset}.{}.json", origin.name()))
}

/// The probe files of a corpus probe file, each checked as a probe file is (errors name the corpus file and
/// `conversations[i].…`).
pub fn load_corpus_probe_file(path: &Path) -> Result<Vec<ProbeFile>, ProbeError> {
    let bytes = std::fs::read(path).map_err(|source| ProbeError::Io { file: path.display().to_string(), source })?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| invalid(path, "", e.to_string()))?;
    if v.get("format").and_then(|f| f.as_str()) != Some(CORPUS_PROBE_FORMAT) {
        return Err(invalid(path, "format", format!("not `{CORPUS_PROBE_FORMAT}`")));
    }
    let Some(items) = v.get("conversations").and_then(|c| c.as_array()) else {
        return Err(invalid(path, "conversations", "needs an array of probe files"));
    };
    let mut out: Vec<ProbeFile> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let file = parse_probe_file(item.to_string().as_bytes(), path).map_err(|e| match e {
            ProbeError::Invalid { file, path, message } => {
                ProbeError::Invalid { file, path: format!("conversations[{i}].{path}"), message }
            }
            other => other,
        })?;
        if out.iter().any(|f| f.conversation == file.conversation) {
            let message = format!("conversation `{}` appears twice", file.conversation);
            return Err(invalid(path, &format!("conversations[{i}].conversation"), message));
        }
        out.push(file);
    }
    Ok(out)
}

/// One conversation's probe file of one origin: its own file, else its entry in the dataset's corpus file.
fn conversation_probe_file(
    dir: &Path,
    dataset: &str,
    conversation: &str,
    origin: ProbeOrigin,
) -> Result<Option<(ProbeFile, PathBuf)>, ProbeError> {
    let path = probe_path(dir, dataset, conversation, origin);
    if path.exists() {
        return Ok(Some((load_probe_file(&path)?, path)));
    }
    let corpus = corpus_probe_path(dir, dataset, origin);
    if !corpus.exists() {
        return Ok(None);
    }
    let files = load_corpus_probe_file(&corpus)?;
    Ok(files.into_iter().find(|f| f.conversation == conversation).map(|f| (f, corpus)))
}

/// A conversation's probes from the given origins (missing files are no probes), checked against its length.
pub fn load_probes(
    dir: &Path,
    dataset: &str,
    conversation: &str,
    origins: &[ProbeOrigin],
    history_len: usize,
) -> Result<Vec<Probe>, ProbeError> {
    let mut out: Vec<Probe> = Vec::new();
    for &origin in origins {
        let Some((file, path)) = conversation_probe_file(dir, dataset, conversation, origin)? else { continue };
        check_evidence(&file, &path, history_len)?;
        for p in file.probes {
            if out.iter().any(|q| q.id == p.id) {
                return Err(invalid(&path, "probes", format!("probe id `{}` is also used by another origin", p.id)));
            }
            out.push(p);
        }
    }
    Ok(out)
}

/// Golds of every conversation of a source, per (probe dir, dataset, origins): read once per run.
type GoldCacheKey = (PathBuf, String, Vec<ProbeOrigin>);
static GOLD_CACHE: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<GoldCacheKey, std::sync::Arc<Vec<Probe>>>>,
> = std::sync::LazyLock::new(Default::default);

/// Every probe of a dataset's files of the given origins (unreadable files are skipped: their own
/// conversations report them).
fn source_probes(dir: &Path, dataset: &str, origins: &[ProbeOrigin]) -> std::sync::Arc<Vec<Probe>> {
    let key = (dir.to_path_buf(), dataset.to_string(), origins.to_vec());
    if let Some(hit) = GOLD_CACHE.lock().expect("gold cache").get(&key) {
        return std::sync::Arc::clone(hit);
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join(dataset))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.sort();
    let mut all = Vec::new();
    for origin in origins {
        if let Ok(files) = load_corpus_probe_file(&corpus_probe_path(dir, dataset, *origin)) {
            all.extend(files.into_iter().flat_map(|f| f.probes));
        }
    }
    for path in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if origins.iter().any(|o| name.ends_with(&format!(".{}.json", o.name()))) {
            if let Ok(file) = load_probe_file(&path) {
                all.extend(file.probes);
            }
        }
    }
    let all = std::sync::Arc::new(all);
    GOLD_CACHE.lock().expect("gold cache").insert(key, std::sync::Arc::clone(&all));
    all
}

/// The probes a sweep scores: [`load_probes`] minus every probe a [`lint`] marks (golds shared with another
/// conversation of the source, long verbatim golds, duplicate or garbled questions, errors of commands that
/// succeeded), and those lints.
pub fn load_scored_probes(
    dir: &Path,
    dataset: &str,
    conversation: &str,
    origins: &[ProbeOrigin],
    conv: &crate::datasets::Conversation,
) -> Result<(Vec<Probe>, Vec<Lint>), ProbeError> {
    let probes = load_probes(dir, dataset, conversation, origins, conv.history.len())?;
    let source = source_probes(dir, dataset, origins);
    let index = lint::gold_index(probes.iter().chain(source.iter().filter(|p| p.conversation != conversation)));
    let lints = lint::lint_conversation(&probes, Some(&index), Some(conv));
    Ok((without_linted(probes, &lints), lints))
}

/// The probes no lint marks.
fn without_linted(probes: Vec<Probe>, lints: &[Lint]) -> Vec<Probe> {
    let marked: std::collections::BTreeSet<&str> = lints.iter().map(|l| l.probe.as_str()).collect();
    probes.into_iter().filter(|p| !marked.contains(p.id.as_str())).collect()
}

/// For a conversation without a stored `auto` probe file (raw sessions read in place, whose probes must not
/// be written into the repository), the extractor's probes derived in memory, minus those a lint marks
/// (linted within the conversation: no other conversation's derived golds are at hand), with those lints.
/// Empty when the file exists or `auto` is not among `origins`.
pub fn derived_auto_probes(
    dir: &Path,
    conversation: &crate::datasets::Conversation,
    origins: &[ProbeOrigin],
    stored: &[Probe],
) -> (Vec<Probe>, Vec<Lint>) {
    let auto = ProbeOrigin::Auto;
    if !origins.contains(&auto) || probe_path(dir, &conversation.meta.source, &conversation.meta.id, auto).exists() {
        return (Vec::new(), Vec::new());
    }
    // Every point of a run derives the same probes from the same conversation: derive them once per process.
    let key = derived_key(conversation, stored);
    if let Some(hit) = DERIVED_CACHE.lock().expect("derived cache").get(&key) {
        return (hit.0.clone(), hit.1.clone());
    }
    let derived: Vec<Probe> =
        extract::extract(conversation).into_iter().filter(|p| !stored.iter().any(|q| q.id == p.id)).collect();
    let lints = lint::lint_conversation(&derived, None, Some(conversation));
    let out = (without_linted(derived, &lints), lints);
    DERIVED_CACHE.lock().expect("derived cache").insert(key, std::sync::Arc::new(out.clone()));
    out
}

type Derived = (Vec<Probe>, Vec<Lint>);

static DERIVED_CACHE: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<u64, std::sync::Arc<Derived>>>> =
    std::sync::LazyLock::new(Default::default);

/// A fingerprint of what derivation reads: the conversation (id, source, every Content) and the stored
/// probes' ids. SipHash with fixed keys over the Debug rendering, streamed (no copy of a long history).
fn derived_key(conversation: &crate::datasets::Conversation, stored: &[Probe]) -> u64 {
    use std::hash::Hasher;
    struct Feed(std::hash::DefaultHasher);
    impl std::fmt::Write for Feed {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let mut feed = Feed(std::hash::DefaultHasher::new());
    let ids: Vec<&str> = stored.iter().map(|p| p.id.as_str()).collect();
    let _ = std::fmt::Write::write_fmt(
        &mut feed,
        format_args!("{}\0{}\0{:?}\0{:?}", conversation.meta.id, conversation.meta.source, ids, conversation.history),
    );
    feed.0.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ProbeFile {
        ProbeFile {
            format: PROBE_FORMAT.into(),
            conversation: "c1".into(),
            dataset: "d".into(),
            probes: vec![Probe {
                id: "m-1".into(),
                conversation: "c1".into(),
                kind: ProbeKind::Artifact,
                question: "Which file?".into(),
                gold: "src/a.py".into(),
                accept: vec![],
                terms: Vec::new(),
                evidence: vec![3],
                source: ProbeOrigin::Manual,
                note: None,
            }],
        }
    }

    #[test]
    fn round_trips_and_names_file_and_path_on_errors() {
        let f = sample();
        let bytes = probe_file_bytes(&f);
        assert_eq!(parse_probe_file(&bytes, Path::new("x.json")).unwrap(), f);
        let bad = String::from_utf8(bytes).unwrap().replace("\"artifact\"", "\"artefact\"");
        let e = parse_probe_file(bad.as_bytes(), Path::new("p/x.json")).unwrap_err().to_string();
        assert!(e.starts_with("p/x.json: at `probes[0].kind`"), "{e}");
        let e = parse_probe_file(b"{\"format\": 1}", Path::new("y.json")).unwrap_err().to_string();
        assert!(e.contains("y.json") && e.contains("format"), "{e}");
        let e = check_evidence(&f, Path::new("z.json"), 2).unwrap_err().to_string();
        assert!(e.contains("probes[0].evidence") && e.contains("index 3"), "{e}");
        let mut dup = sample();
        dup.probes.push(dup.probes[0].clone());
        let e = parse_probe_file(&probe_file_bytes(&dup), Path::new("d.json")).unwrap_err().to_string();
        assert!(e.contains("probes[1].id") && e.contains("duplicate"), "{e}");
    }

    /// A corpus probe file holds many conversations' probes; a conversation's own file wins over it, and an
    /// error names the corpus file and the entry.
    #[test]
    fn corpus_probe_files_serve_conversations_without_a_file_of_their_own() {
        let tmp = tempfile::tempdir().unwrap();
        let mut other = sample();
        other.conversation = "c2".into();
        other.probes[0].conversation = "c2".into();
        other.probes[0].gold = "src/b.py".into();
        let corpus =
            serde_json::json!({"format": CORPUS_PROBE_FORMAT, "dataset": "d", "conversations": [sample(), other]});
        let path = corpus_probe_path(tmp.path(), "d", ProbeOrigin::Manual);
        std::fs::write(&path, corpus.to_string()).unwrap();
        let manual = [ProbeOrigin::Manual];
        let p = load_probes(tmp.path(), "d", "c2", &manual, 10).unwrap();
        assert_eq!((p.len(), p[0].gold.as_str()), (1, "src/b.py"));
        assert!(load_probes(tmp.path(), "d", "c3", &manual, 10).unwrap().is_empty());
        let e = load_probes(tmp.path(), "d", "c1", &manual, 2).unwrap_err().to_string();
        assert!(e.contains("d.manual.json") && e.contains("index 3"), "{e}");
        // The conversation's own file wins.
        std::fs::create_dir_all(tmp.path().join("d")).unwrap();
        let mut own = sample();
        own.probes[0].gold = "src/own.py".into();
        save_probe_file(&probe_path(tmp.path(), "d", "c1", ProbeOrigin::Manual), &own).unwrap();
        assert_eq!(load_probes(tmp.path(), "d", "c1", &manual, 10).unwrap()[0].gold, "src/own.py");
        // A damaged entry is named.
        let bad = corpus.to_string().replace("\"artifact\"", "\"artefact\"");
        std::fs::write(&path, bad).unwrap();
        let e = load_probes(tmp.path(), "d", "c2", &manual, 10).unwrap_err().to_string();
        assert!(e.contains("conversations[0].probes[0].kind"), "{e}");
    }
}
