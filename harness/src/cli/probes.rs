//! `compactbench probes extract|generate|check`.

use super::Failure;
use crate::datasets::{self, Conversation};
use crate::fsutil::WriteError;
use crate::llm::{self, BackendOptions, CacheMode};
use crate::probes::{
    check_evidence, extract, generate, lint, load_probe_file, probe_path, save_probe_file, Probe, ProbeError,
    ProbeFile, ProbeOrigin,
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
    /// Load every probe file under a directory and check it against its conversation.
    Check {
        /// Probe directory to check.
        #[arg(default_value = "datasets/probes")]
        dir: PathBuf,
        /// Where the conversations are.
        #[arg(long, default_value = "datasets")]
        datasets: PathBuf,
    },
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
        ProbesCommand::Check { dir, datasets } => check(&dir, &datasets),
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
    let mut lints: BTreeMap<lint::LintKind, usize> = BTreeMap::new();
    let mut marked = 0;
    for ((dataset, _), conv_probes) in &loaded {
        let index = lint::gold_index(loaded.iter().filter(|((d, _), _)| d == dataset).flat_map(|(_, ps)| ps.iter()));
        let key = (dataset.clone(), conv_probes.first().map(|p| p.conversation.clone()).unwrap_or_default());
        let history = histories.get(&key).map(|c| c.history.as_slice());
        let found = lint::lint_conversation(conv_probes, Some(&index), history);
        marked += found.iter().map(|l| (&l.conversation, &l.probe)).collect::<std::collections::BTreeSet<_>>().len();
        for l in found {
            crate::outln!("lint: {dataset}/{l}")?;
            *lints.entry(l.kind).or_default() += 1;
        }
    }
    crate::outln!("{} files, {probes} probes, {bad} bad", files.len())?;
    let by_kind: Vec<String> = lints.iter().map(|(k, n)| format!("{} {n}", k.name())).collect();
    crate::outln!(
        "{marked} probes marked by lints (excluded from scoring){}",
        if by_kind.is_empty() { String::new() } else { format!(": {}", by_kind.join(", ")) }
    )?;
    if bad > 0 {
        return Err(Failure::BadInput(format!("{bad} bad probe files")));
    }
    Ok(())
}
