//! Plans from configs: the grid expanded into points, the corpus listed, the plan checked for size; and
//! the shards a plan's cells are dealt into.

use super::config::{DatasetEntry, SweepConfig};
use super::error::RunError;
use crate::data::{Plan, PlannedConversation};
use crate::datasets;
use std::path::{Path, PathBuf};

/// `I/N`: the I-th of N shards (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// A `--shard` value that is not `I/N` with 1 ≤ I ≤ N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shard `{given}`: {problem}")]
pub struct BadShard {
    pub given: String,
    pub problem: String,
}

impl std::str::FromStr for Shard {
    type Err = BadShard;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem: String| BadShard { given: s.to_string(), problem };
        let (i, n) = s.split_once('/').ok_or_else(|| bad("expected I/N, e.g. 2/3".into()))?;
        let index: usize = i.parse().map_err(|_| bad(format!("`{i}` is not a number")))?;
        let count: usize = n.parse().map_err(|_| bad(format!("`{n}` is not a number")))?;
        if count == 0 || index == 0 || index > count {
            return Err(bad("need 1 <= I <= N".into()));
        }
        Ok(Shard { index, count })
    }
}

/// The environment variable a Kubernetes Indexed Job sets in each pod: its 0-based completion index.
pub const JOB_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The environment variable that gives N to `--shard auto` (the Job's `completions`).
pub const SHARD_COUNT_ENV: &str = "COMPACTBENCH_SHARD_COUNT";

impl Shard {
    /// `--shard I/N`, or `auto` / `auto/N`: I from an Indexed Job's [`JOB_INDEX_ENV`] (0-based, so pod 0
    /// runs shard 1), N after the slash or from [`SHARD_COUNT_ENV`]. `env` reads a variable (the CLI passes
    /// the process environment; tests pass a map).
    pub fn resolve(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<Shard, BadShard> {
        let Some(rest) = spec.strip_prefix("auto") else { return spec.parse() };
        let bad = |problem: String| BadShard { given: spec.to_string(), problem };
        let count = match rest.strip_prefix('/') {
            Some(n) => n.to_string(),
            None if rest.is_empty() => {
                env(SHARD_COUNT_ENV).ok_or_else(|| bad(format!("`auto` needs N: `auto/N` or ${SHARD_COUNT_ENV}")))?
            }
            None => return Err(bad("expected `auto` or `auto/N`".into())),
        };
        let index = env(JOB_INDEX_ENV).ok_or_else(|| {
            bad(format!("`auto` reads the shard from ${JOB_INDEX_ENV} (a Kubernetes Indexed Job), which is not set"))
        })?;
        let index: usize =
            index.trim().parse().map_err(|_| bad(format!("${JOB_INDEX_ENV} = `{index}` is not a number")))?;
        format!("{}/{}", index + 1, count.trim()).parse().map_err(|e: BadShard| bad(e.problem))
    }
}

/// Builds the plan: loads the conversation list (not their contents) and expands the grid.
pub fn make_plan(config: &SweepConfig, base_dir: &Path) -> Result<Plan, RunError> {
    make_plan_noting(config, base_dir).map(|(plan, _)| plan)
}

/// [`make_plan`], with the notes a user should see about the raw logs read (files that are not sessions
/// of the configured agent, skipped; unreadable lines of a session still being written, skipped).
pub fn make_plan_noting(config: &SweepConfig, base_dir: &Path) -> Result<(Plan, Vec<String>), RunError> {
    if config.datasets.is_empty() {
        return Err(RunError::Config("key `datasets`: needs at least one dataset directory or file".into()));
    }
    let mut notes = Vec::new();
    let files = dataset_files(config, base_dir, &mut notes)?;
    let mut conversations = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (f, failure) in files {
        let loaded = match failure {
            Some(failure) => Err(failure),
            None => datasets::load_conversation(&f).map_err(|e| (String::new(), e.to_string())),
        };
        let (id, source, error) = match loaded {
            Ok(c) => (c.meta.id.clone(), c.meta.source.clone(), None),
            Err((source, e)) => {
                let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                let stem = stem.split('.').next().unwrap_or_default().to_string();
                (stem, source, Some(e))
            }
        };
        let mut id = sanitize_id(&id);
        if !seen.insert(id.clone()) {
            id = format!("{}-{}", sanitize_id(&source), id);
            seen.insert(id.clone());
        }
        let rel = f.strip_prefix(base_dir).map(Path::to_path_buf).unwrap_or(f.clone());
        conversations.push(PlannedConversation { id, path: rel, source, error });
    }
    let points = config.points()?;
    for s in &config.slice {
        if let Some(source) = &s.source {
            if !conversations.iter().any(|c| &c.source == source) {
                let known: std::collections::BTreeSet<&str> = conversations.iter().map(|c| c.source.as_str()).collect();
                return Err(RunError::Config(format!(
                    "slice `{}`: source `{source}` matches no conversation of the datasets (sources: {})",
                    s.name,
                    known.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    let plan = Plan {
        name: config.name.clone(),
        points,
        conversations,
        repeats: config.repeats,
        replay: config.replay.clone(),
        probes: config.probes.clone().filter(|p| p.enabled),
        cost: config.cost.clone(),
    };
    plan.check_size()?;
    if plan.cell_count() == 0 {
        return Err(RunError::Config("the plan has no cells: the datasets hold no conversation".into()));
    }
    Ok((plan, notes))
}

/// The conversation files of the config's datasets, in sorted order per entry and at most
/// `max_conversations` of them; raw agent logs are imported into the import cache first, and a raw log
/// that cannot be imported is listed with (its source, the error), so its cells record it and the run goes on.
type DatasetFile = (PathBuf, Option<(String, String)>);

/// Whether a raw log that the configured importer could not read is no session of that agent at all (a
/// report, a manifest or another tool's JSON beside the sessions): by content, it is recognised as another
/// format; or it is recognised as none and does not have the agent's extension (`.jsonl` for the agents
/// that write JSON lines). A damaged session of the agent (recognised as the agent's, or unrecognisable
/// with its extension, or an unreadable `.gz`) fails, named.
fn not_a_session_of(format: Option<datasets::import::Format>, path: &Path, name: &str) -> bool {
    use datasets::import::Format;
    let Some(format) = format else { return false };
    let Ok(bytes) = datasets::raw::read_source_named(path, name) else { return false };
    let plain = name.strip_suffix(".gz").unwrap_or(name);
    let jsonl_agent = matches!(format, Format::ClaudeCode | Format::Codex | Format::GeminiJsonl);
    match datasets::import::detect(&bytes, plain) {
        Ok(found) => found != format,
        Err(_) => !(jsonl_agent && plain.to_ascii_lowercase().ends_with(".jsonl")),
    }
}

fn dataset_files(config: &SweepConfig, base_dir: &Path, notes: &mut Vec<String>) -> Result<Vec<DatasetFile>, RunError> {
    let rooted = |d: &Path| if d.is_absolute() { d.to_path_buf() } else { base_dir.join(d) };
    let mut converted: Vec<PathBuf> = Vec::new();
    let mut raw: Vec<DatasetFile> = Vec::new();
    for entry in &config.datasets {
        match entry {
            DatasetEntry::Converted(d) => converted.push(rooted(d)),
            DatasetEntry::Raw(r) => {
                let source = r.source_name();
                let options = datasets::raw::RawOptions {
                    format: r.import_format().map_err(|e| RunError::Config(e.to_string()))?,
                    source: Some(source.clone()),
                    source_by_project: r.source_by == crate::sweep::config::SourceBy::Project,
                    license: r.license.clone(),
                    repository: r.repository.clone(),
                    commit: r.commit.clone(),
                    copies: r.copies,
                };
                let cache = rooted(&config.import_cache);
                let spec = datasets::raw::home_path(&r.raw).unwrap_or_else(|| rooted(&r.raw));
                let mut not_sessions = Vec::new();
                for file in datasets::raw::import_all_cached(&spec, &options, &cache)? {
                    match file.result {
                        Ok(done) => {
                            for w in &done.warnings {
                                tracing::debug!("{w}");
                                // The lines a session still being written has cut are worth a user's notice.
                                if w.contains(datasets::import::SKIPPED_LINE_NOTE) {
                                    notes.push(format!("{source}: {w}"));
                                }
                            }
                            if done.files.is_empty() {
                                let e = format!("{}: holds no conversation", file.name);
                                raw.push((file.path.clone(), Some((source.clone(), e))));
                            }
                            raw.extend(done.files.into_iter().map(|f| (f, None)));
                        }
                        Err(_) if not_a_session_of(options.format, &file.path, &file.name) => {
                            not_sessions.push(file.name.clone());
                        }
                        Err(e) => raw.push((file.path.clone(), Some((source.clone(), e.to_string())))),
                    }
                }
                if !not_sessions.is_empty() {
                    let format = options.format.map_or("", datasets::import::Format::name);
                    notes.push(format!(
                        "{source}: {} file(s) are not {format} sessions, skipped: {}",
                        not_sessions.len(),
                        not_sessions.join(", ")
                    ));
                }
            }
        }
    }
    let mut files: Vec<DatasetFile> = if converted.is_empty() {
        Vec::new()
    } else {
        datasets::find_conversations(&converted)?.into_iter().map(|f| (f, None)).collect()
    };
    files.extend(raw);
    if config.max_conversations > 0 {
        files.truncate(config.max_conversations);
    }
    Ok(files)
}

fn sanitize_id(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn auto_shards_come_from_an_indexed_job() {
        let job = [(JOB_INDEX_ENV, "0"), (SHARD_COUNT_ENV, "4")];
        assert_eq!(Shard::resolve("auto", env(&job)), Ok(Shard { index: 1, count: 4 }));
        assert_eq!(Shard::resolve("auto/2", env(&[(JOB_INDEX_ENV, "1")])), Ok(Shard { index: 2, count: 2 }));
        assert_eq!(Shard::resolve("2/3", env(&[])), Ok(Shard { index: 2, count: 3 }));
        let e = |spec: &str, vars: &[(&str, &str)]| Shard::resolve(spec, env(vars)).unwrap_err().to_string();
        assert!(e("auto", &[(JOB_INDEX_ENV, "0")]).contains(SHARD_COUNT_ENV));
        assert!(e("auto/3", &[]).contains(JOB_INDEX_ENV));
        assert!(e("auto/3", &[(JOB_INDEX_ENV, "3")]).contains("1 <= I <= N"));
        assert!(e("auto/3", &[(JOB_INDEX_ENV, "x")]).contains("not a number"));
        assert!(e("autox", &[]).contains("auto/N"));
    }
}
