//! `compactbench probes extract|generate|check|snapshots`.

pub mod snapshots;

use super::Failure;
use crate::data::{LintKind, ProbeOrigin};
use crate::datasets::{self, Conversation};
use crate::fsutil::WriteError;
use crate::llm::{self, BackendOptions, CacheMode};
use crate::probes::{
    check_evidence, extract, generate, lint, load_probe_file, probe_path, save_probe_file, Probe, ProbeError, ProbeFile,
};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ProbesArgs {
    #[command(subcommand)]
    pub command: ProbesCommand,
}

#[derive(Debug, Subcommand)]
pub enum ProbesCommand {
    /// Derive probes from conversations' structure (deterministic) into `<out>/<dataset>/<id>.auto.json`.
    Extract {
        /// Conversation files or dataset directories (default: datasets).
        paths: Vec<PathBuf>,
        /// Probe directory written into.
        #[arg(long, default_value = "datasets/probes")]
        out: PathBuf,
    },
    /// Draft probes with a model for review, into `<out>/<dataset>/<id>.llm.json`.
    Generate {
        /// Model spec: extractive, local:smollm2-135m, gemini:<model>, openai:<model>@<base-url>.
        #[arg(long)]
        model: String,
        /// Conversation files or dataset directories.
        paths: Vec<PathBuf>,
        /// Probe directory written into.
        #[arg(long, default_value = "datasets/probes")]
        out: PathBuf,
        /// Drafts asked for per conversation.
        #[arg(long, default_value_t = 8)]
        max: usize,
        /// Record/replay cache directory.
        #[arg(long, default_value = llm::DEFAULT_RECORDINGS_DIR)]
        cache_dir: PathBuf,
        /// Cache mode: read-write, replay (a miss is an error) or off.
        #[arg(long, default_value = "read-write")]
        cache: CacheMode,
    },
    /// Load every probe file under a directory and check it against its conversation; with `--config`,
    /// the probes a sweep config scores (its corpus probe files, raw sessions read in place). A dead gold,
    /// a gold its question names, a gold over 8 words or one the agent is given at start is an error
    /// (exit 2); the other lints mark probes that scoring leaves out.
    Check {
        /// Probe directory to check.
        #[arg(default_value = "datasets/probes")]
        dir: PathBuf,
        /// Where the conversations are.
        #[arg(long, default_value = "datasets")]
        datasets: PathBuf,
        /// Check the probes of these sweep configs' conversations instead (repeatable).
        #[arg(long = "config")]
        configs: Vec<PathBuf>,
    },
    /// Write the history right after every compression of a config's replays, with the probes askable
    /// there, for judging by hand (outside the repository: snapshots hold the sessions' text).
    Snapshots(snapshots::SnapshotsArgs),
}

fn conversations(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Conversation)>, Failure> {
    let roots = if paths.is_empty() { vec![PathBuf::from("datasets")] } else { paths.to_vec() };
    let files = datasets::find_conversations(&roots)?;
    let mut out = Vec::new();
    for f in files {
        // The probe directory holds JSON files too; they are not conversations.
        if f.components().any(|c| c.as_os_str() == "probes" || c.as_os_str() == "recordings") {
            continue;
        }
        let c = datasets::load_conversation(&f)?;
        out.push((f, c));
    }
    Ok(out)
}

pub fn run(args: ProbesArgs) -> Result<(), Failure> {
    match args.command {
        ProbesCommand::Extract { paths, out } => {
            let mut total = 0;
            let convs: Vec<Conversation> = conversations(&paths)?.into_iter().map(|(_, c)| c).collect();
            let refs: Vec<&Conversation> = convs.iter().collect();
            for (conv, file) in convs.iter().zip(extract::extract_corpus(&refs)) {
                total += file.probes.len();
                let path = probe_path(&out, &conv.meta.source, &conv.meta.id, ProbeOrigin::Auto);
                save(&path, &file)?;
                crate::outln!("{}: {} probes", path.display(), file.probes.len())?;
            }
            crate::outln!("{total} probes")?;
            Ok(())
        }
        ProbesCommand::Generate { model, paths, out, max, cache_dir, cache } => {
            let opts = BackendOptions { cache_dir: Some(cache_dir), cache_mode: cache, ..Default::default() };
            let model = llm::from_spec(&model, &opts).map_err(|e| Failure::ModelSpec(e).context("--model"))?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(Failure::Runtime)?;
            for (_, conv) in conversations(&paths)? {
                let drafts = runtime
                    .block_on(generate::generate(model.as_ref(), &conv, max))
                    .map_err(|source| Failure::Drafting { conversation: conv.meta.id.clone(), source })?;
                let path = probe_path(&out, &conv.meta.source, &conv.meta.id, ProbeOrigin::Llm);
                for r in &drafts.rejected {
                    eprintln!("{}: draft rejected: {r}", conv.meta.id);
                }
                let n = drafts.probes.len();
                save(&path, &generate::drafts_file(&conv, drafts.probes))?;
                crate::outln!(
                    "{}: {n} drafts (review before use; sweeps read `llm` probes only when asked)",
                    path.display()
                )?;
            }
            Ok(())
        }
        ProbesCommand::Check { configs, .. } if !configs.is_empty() => check_configs(&configs),
        ProbesCommand::Check { dir, datasets, .. } => check(&dir, &datasets),
        ProbesCommand::Snapshots(args) => snapshots::run(args),
    }
}

/// Saves a probe file; its I/O error is a failed write (status 3), whatever `ProbeError::Io` says.
fn save(path: &Path, file: &ProbeFile) -> Result<(), Failure> {
    save_probe_file(path, file).map_err(|e| match e {
        ProbeError::Io { file, source } => Failure::Write(WriteError { path: file.into(), source }),
        invalid @ ProbeError::Invalid { .. } => Failure::Probe(invalid),
    })
}

fn check(dir: &Path, datasets_dir: &Path) -> Result<(), Failure> {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| Failure::Read { path: d.clone(), source })?;
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                // A corpus probe file serves raw sessions read in place: `probes check --config` checks it.
                if crate::probes::load_corpus_probe_file(&p).is_ok() {
                    crate::outln!("{}: a corpus probe file: checked with `probes check --config`", p.display())?;
                    continue;
                }
                files.push(p);
            }
        }
    }
    files.sort();
    let mut bad = 0;
    let mut probes = 0;
    // Loaded files per (dataset, conversation), for the lints (which read all origins together).
    let mut loaded: BTreeMap<(String, String), Vec<Probe>> = BTreeMap::new();
    let mut histories: BTreeMap<(String, String), Conversation> = BTreeMap::new();
    for f in &files {
        let result = load_probe_file(f).and_then(|pf| {
            let conv_path = datasets_dir.join(&pf.dataset).join(format!("{}.json", pf.conversation));
            let conv = datasets::load_conversation(&conv_path).map_err(|e| ProbeError::Invalid {
                file: f.display().to_string(),
                path: "conversation".into(),
                message: e.to_string(),
            })?;
            check_evidence(&pf, f, conv.history.len())?;
            Ok((pf, conv))
        });
        match result {
            Ok((pf, conv)) => {
                probes += pf.probes.len();
                let key = (pf.dataset.clone(), pf.conversation.clone());
                loaded.entry(key.clone()).or_default().extend(pf.probes);
                histories.entry(key).or_insert(conv);
            }
            Err(e) => {
                bad += 1;
                eprintln!("{e}");
            }
        }
    }
    let mut lints: BTreeMap<LintKind, usize> = BTreeMap::new();
    let mut marked = 0;
    let mut errors = 0;
    for ((dataset, _), conv_probes) in &loaded {
        let index = lint::gold_index(loaded.iter().filter(|((d, _), _)| d == dataset).flat_map(|(_, ps)| ps.iter()));
        let key = (dataset.clone(), conv_probes.first().map(|p| p.conversation.clone()).unwrap_or_default());
        let found = lint::lint_conversation(conv_probes, Some(&index), histories.get(&key));
        marked += found.iter().map(|l| (&l.conversation, &l.probe)).collect::<std::collections::BTreeSet<_>>().len();
        for l in found {
            errors += l.kind.is_error() as usize;
            crate::outln!("{}: {dataset}/{l}", if l.kind.is_error() { "error" } else { "lint" })?;
            *lints.entry(l.kind).or_default() += 1;
        }
    }
    crate::outln!("{} files, {probes} probes, {bad} bad, {errors} errors", files.len())?;
    let by_kind: Vec<String> = lints.iter().map(|(k, n)| format!("{} {n}", k.name())).collect();
    crate::outln!(
        "{marked} probes marked by lints (excluded from scoring){}",
        if by_kind.is_empty() { String::new() } else { format!(": {}", by_kind.join(", ")) }
    )?;
    if bad > 0 || errors > 0 {
        return Err(Failure::BadInput(format!("{bad} bad probe files, {errors} probes with an error lint")));
    }
    Ok(())
}

/// `probes check --config`: every conversation of each config, its stored probes (own files and corpus
/// files, all origins) linted against it; the extractor's derived probes are counted (the lints leave them
/// out of scoring) but are not errors of a file.
fn check_configs(configs: &[PathBuf]) -> Result<(), Failure> {
    let base_dir = PathBuf::from(".");
    let (mut errors, mut stored, mut derived_marked, mut failed) = (0usize, 0usize, 0usize, 0usize);
    for path in configs {
        let config = crate::sweep::config::SweepConfig::load(path)?;
        let plan = crate::sweep::planner::make_plan(&config, &base_dir)?;
        let Some(pc) = plan.probes.clone() else {
            return Err(Failure::BadInput(format!("{}: probes are not enabled (`[probes]`)", path.display())));
        };
        let dir = if pc.dir.is_absolute() { pc.dir.clone() } else { base_dir.join(&pc.dir) };
        for planned in &plan.conversations {
            if let Some(e) = &planned.error {
                eprintln!("{}: {}: not checked: {e}", path.display(), planned.id);
                failed += 1;
                continue;
            }
            let conv = datasets::load_conversation(&base_dir.join(&planned.path))?;
            let probes =
                crate::probes::load_probes(&dir, &conv.meta.source, &conv.meta.id, &pc.sources, conv.history.len())?;
            stored += probes.len();
            for l in lint::lint_conversation(&probes, None, Some(&conv)) {
                errors += l.kind.is_error() as usize;
                crate::outln!("{}: {}/{l}", if l.kind.is_error() { "error" } else { "lint" }, conv.meta.source)?;
            }
            if pc.derive_auto {
                let all = extract::extract(&conv);
                let kept = crate::probes::derived_auto_probes(&dir, &conv, &pc.sources, &probes).0.len();
                derived_marked += all.len().saturating_sub(kept);
            }
        }
        crate::outln!("{}: {} conversations", path.display(), plan.conversations.len())?;
    }
    crate::outln!(
        "{stored} stored probes, {errors} with an error lint; {derived_marked} derived probes left out by lints; {failed} conversations not read"
    )?;
    if errors > 0 || failed > 0 {
        return Err(Failure::BadInput(format!("{errors} probes with an error lint, {failed} conversations not read")));
    }
    Ok(())
}
