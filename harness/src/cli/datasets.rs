//! `compactbench datasets …`: import, list, stats, validate, export, manifest.

use super::Failure;
use crate::datasets::import::Format;
use crate::datasets::{
    export_history, find_conversations, load_conversation, validate_conversation, write_conversation, write_manifest,
    Conversation,
};
use crate::datasets::{ConversationStats, Totals};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use tabled::{settings::Style, Table, Tabled};

#[derive(Debug, Args)]
pub struct DatasetsArgs {
    #[command(subcommand)]
    pub command: DatasetsCommand,
}

#[derive(Debug, Subcommand)]
pub enum DatasetsCommand {
    /// Convert recorded conversations into canonical conversation files (and refresh the manifest).
    Import(ImportArgs),
    /// One line per conversation.
    List(PathsArgs),
    /// The corpus table: totals per source.
    Stats {
        #[command(flatten)]
        paths: PathsArgs,
        /// Also print one row per conversation.
        #[arg(long)]
        per_conversation: bool,
    },
    /// Check structure (roles, tool call/response pairing, empty turns, shape); non-zero exit on problems.
    Validate(PathsArgs),
    /// Write a conversation's history as a `Content[]` JSON file (in the layout it was imported from).
    Export {
        /// A conversation file (canonical format).
        conversation: PathBuf,
        /// Output file (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Rewrite `manifest.json` in each dataset directory.
    Manifest {
        /// Dataset directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Fetch the raw sessions a manifest lists (`datasets/manifests/*.toml`) with git, each checked against
    /// its sha256; a mismatch is refused and nothing unchecked is written.
    Fetch {
        /// The manifest (TOML: repository, ref, and per file its commit, upstream path and sha256).
        manifest: PathBuf,
        /// Directory to write the sessions into (a config's `raw = "DIR"` can then read them).
        #[arg(long)]
        into: PathBuf,
    },
    /// Write the manifest of a directory of raw sessions: per file its upstream path, repository and commit
    /// (from the `SOURCE.md` table beside it, else these flags) and the sha256 of its uncompressed bytes.
    DescribeRaw {
        /// The directory of raw sessions.
        dir: PathBuf,
        /// One line saying what the corpus is.
        #[arg(long)]
        corpus: String,
        /// Repository of files whose table row names none (`owner/name`, a URL or a path).
        #[arg(long)]
        repository: Option<String>,
        /// Branch or tag holding the commits.
        #[arg(long = "ref")]
        git_ref: Option<String>,
        /// Commit of files whose table row names none.
        #[arg(long)]
        commit: Option<String>,
        /// Licence of the corpus.
        #[arg(long)]
        license: Option<String>,
        /// Manifest file to write.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct PathsArgs {
    /// Conversation files or directories (searched recursively).
    #[arg(default_value = "datasets")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Input format (default: detected per file).
    #[arg(long, value_parser = format_parser())]
    pub format: Option<Format>,
    /// Files to import (`.gz` read as they are), or directories searched for agent logs.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// Dataset directory to write (`datasets/NAME`).
    #[arg(long)]
    pub out: PathBuf,
    /// Source name stored in each conversation (default: the output directory's name).
    #[arg(long)]
    pub source: Option<String>,
    /// A SOURCES.md with `| file | repo | commit | license |` tables under `## dir/` headings; files found
    /// there get that provenance (paths relative to the SOURCES.md's directory).
    #[arg(long)]
    pub provenance: Option<PathBuf>,
    /// Licence recorded in every imported conversation (overrides the provenance file's).
    #[arg(long)]
    pub license: Option<String>,
    /// Source repository recorded in every imported conversation (overrides the provenance file's).
    #[arg(long)]
    pub repository: Option<String>,
    /// Source commit recorded in every imported conversation (overrides the provenance file's).
    #[arg(long)]
    pub commit: Option<String>,
    /// Keep only conversations with at least this many characters (as counted in the manifest).
    #[arg(long)]
    pub min_chars: Option<u64>,
    /// Keep only the first N conversations (in file and source order) that pass the other filters.
    #[arg(long)]
    pub limit: Option<usize>,
}

/// `--format`: the importer names (listed by `--help` and in the error for any other value).
fn format_parser() -> impl TypedValueParser<Value = Format> {
    PossibleValuesParser::new(Format::ALL.iter().map(|f| f.name())).try_map(|name| name.parse::<Format>())
}

pub fn run(args: DatasetsArgs) -> Result<(), Failure> {
    match args.command {
        DatasetsCommand::Import(a) => import_cmd(a),
        DatasetsCommand::List(p) => list_cmd(&p.paths),
        DatasetsCommand::Stats { paths, per_conversation } => stats_cmd(&paths.paths, per_conversation),
        DatasetsCommand::Validate(p) => validate_cmd(&p.paths),
        DatasetsCommand::Export { conversation, out } => {
            let c = load_conversation(&conversation)?;
            let text = export_history(&c);
            match out {
                Some(path) => crate::fsutil::write_atomic(&path, text.as_bytes())?,
                None => print!("{text}"),
            }
            Ok(())
        }
        DatasetsCommand::Manifest { dirs } => {
            for d in dirs {
                write_manifest(&d)?;
                crate::outln!("wrote {}", d.join(crate::datasets::MANIFEST_FILE).display())?;
            }
            Ok(())
        }
        DatasetsCommand::Fetch { manifest, into } => fetch_cmd(&manifest, &into),
        DatasetsCommand::DescribeRaw { dir, corpus, repository, git_ref, commit, license, out } => {
            use crate::datasets::manifest::Manifest;
            let mut m =
                Manifest::of_directory(&dir, &corpus, repository.as_deref(), git_ref.as_deref(), commit.as_deref())?;
            m.license = license;
            let text = toml::to_string(&m)?;
            let header = "# Raw sessions kept outside this repository: fetch them with\n#   compactbench datasets fetch THIS_FILE --into DIR\n# Each file is checked against its sha256 (of the upstream bytes); regenerate with `datasets describe-raw`.\n\n";
            crate::fsutil::write_atomic(&out, format!("{header}{text}").as_bytes())?;
            crate::outln!("wrote {} ({} files)", out.display(), m.files.len())?;
            Ok(())
        }
    }
}

fn fetch_cmd(manifest: &Path, into: &Path) -> Result<(), Failure> {
    use crate::datasets::manifest::{self, Manifest};
    let m = Manifest::load(manifest)?;
    let report = manifest::fetch(&m, into).map_err(|e| Failure::Manifest(e).context(manifest.display().to_string()))?;
    crate::outln!(
        "{}: {} fetched, {} already present (sha256 checked) in {}",
        manifest.display(),
        report.fetched.len(),
        report.present.len(),
        into.display()
    )?;
    Ok(())
}

/// Provenance of one raw file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    pub repository: String,
    pub commit: String,
    pub license: String,
    /// Path inside the repository.
    pub path: String,
}

/// Reads the tables of a SOURCES.md: rows `| \`file\` | repo | \`commit\` | license | …` under headings
/// `## dir/ — …`. Keys are `dir/file`.
pub fn parse_provenance(text: &str) -> HashMap<String, Provenance> {
    let mut out = HashMap::new();
    let mut dir = String::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            dir = h.split_whitespace().next().unwrap_or("").trim_end_matches('/').to_string();
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "| a | b |" splits into ["", a, b, ""].
        if cells.len() < 6 || !cells[1].starts_with('`') {
            continue;
        }
        let unquote = |s: &str| s.trim_matches('`').to_string();
        let path = unquote(cells[1]);
        let p =
            Provenance { repository: unquote(cells[2]), commit: unquote(cells[3]), license: unquote(cells[4]), path };
        let key = if dir.is_empty() { p.path.clone() } else { format!("{dir}/{}", p.path) };
        out.insert(key, p);
    }
    out
}

fn import_cmd(a: ImportArgs) -> Result<(), Failure> {
    let mut import = Import::new(&a)?;
    let files = import.raw_files();
    for (src, name) in &files {
        if import.import_file(src, name).is_break() {
            break;
        }
    }
    import.finish()
}

/// A `--provenance` file read: the directory its paths are relative to, and its table.
struct ProvenanceFile {
    base: PathBuf,
    table: HashMap<String, Provenance>,
}

impl ProvenanceFile {
    fn read(path: &Path) -> Result<ProvenanceFile, Failure> {
        let text =
            std::fs::read_to_string(path).map_err(|source| Failure::Read { path: path.to_path_buf(), source })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(ProvenanceFile { base, table: parse_provenance(&text) })
    }

    /// The row of the raw file `src`, if the table lists it.
    fn of(&self, src: &Path) -> Option<Provenance> {
        let rel = src.strip_prefix(&self.base).ok()?.to_string_lossy().replace('\\', "/");
        self.table.get(&rel).cloned()
    }
}

/// A `datasets import` in progress: its options resolved, the ids taken so far and what happened.
struct Import<'a> {
    args: &'a ImportArgs,
    provenance: Option<ProvenanceFile>,
    source_name: String,
    ids: HashSet<String>,
    // Unreadable or malformed sources are bad input; a conversation that cannot be written is an I/O failure.
    failed: usize,
    write_failed: usize,
    skipped_empty: usize,
    written: usize,
}

impl<'a> Import<'a> {
    fn new(args: &'a ImportArgs) -> Result<Import<'a>, Failure> {
        let provenance = args.provenance.as_deref().map(ProvenanceFile::read).transpose()?;
        let source_name = args.source.clone().unwrap_or_else(|| {
            args.out.file_name().map_or_else(|| "dataset".to_string(), |n| n.to_string_lossy().into_owned())
        });
        Ok(Import {
            args,
            provenance,
            source_name,
            ids: HashSet::new(),
            failed: 0,
            write_failed: 0,
            skipped_empty: 0,
            written: 0,
        })
    }

    /// The files to import with their names relative to the source they were found under. Directories are
    /// searched for agent logs; `.gz` files are read as they are.
    fn raw_files(&mut self) -> Vec<(PathBuf, String)> {
        let mut files: Vec<(PathBuf, String)> = Vec::new();
        for src in &self.args.sources {
            match crate::datasets::raw::raw_files(src) {
                Ok((root, found)) => files.extend(found.into_iter().map(|p| {
                    let name = crate::datasets::raw::relative_name(&p, &root);
                    (p, name)
                })),
                Err(e) => {
                    eprintln!("error: {e}");
                    self.failed += 1;
                }
            }
        }
        files
    }

    /// Imports the conversations of one raw file; breaks once `--limit` conversations are written.
    fn import_file(&mut self, src: &Path, name: &str) -> ControlFlow<()> {
        let file = src.display().to_string();
        let options = crate::datasets::raw::RawOptions { format: self.args.format, ..Default::default() };
        let (format, imported) = match crate::datasets::raw::import_file(src, name, &options) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                self.failed += 1;
                return ControlFlow::Continue(());
            }
        };
        for w in &imported.warnings {
            eprintln!("warning: {w}");
        }
        let prov = self.provenance.as_ref().and_then(|p| p.of(src));
        if self.provenance.is_some() && prov.is_none() {
            eprintln!("warning: {file}: not listed in the provenance file");
        }
        for c in imported.conversations {
            self.add(c, &file, format, prov.as_ref())?;
        }
        ControlFlow::Continue(())
    }

    /// Writes one imported conversation unless it is empty or filtered out; breaks when `--limit` is reached.
    fn add(&mut self, mut c: Conversation, file: &str, format: Format, prov: Option<&Provenance>) -> ControlFlow<()> {
        let a = self.args;
        if c.history.is_empty() {
            // Never dropped silently: an empty conversation is a failed import with its reason.
            eprintln!("error: {file}: conversation {:?} has no turns; not imported", c.meta.id);
            self.skipped_empty += 1;
            self.failed += 1;
            return ControlFlow::Continue(());
        }
        if a.min_chars.is_some_and(|min| ConversationStats::of(&c).characters < min) {
            return ControlFlow::Continue(());
        }
        if a.limit.is_some_and(|n| self.written >= n) {
            return ControlFlow::Break(());
        }
        self.stamp(&mut c, format, prov);
        let path = a.out.join(format!("{}.json", c.meta.id));
        if let Err(e) = write_conversation(&path, &c) {
            eprintln!("error: {e}");
            self.write_failed += 1;
            return ControlFlow::Continue(());
        }
        self.written += 1;
        ControlFlow::Continue(())
    }

    /// Records the source, format and provenance (flags over the provenance file) in `c`, and gives it an
    /// id no earlier conversation of this import has (`id-2`, `id-3`, … on a clash).
    fn stamp(&mut self, c: &mut Conversation, format: Format, prov: Option<&Provenance>) {
        let a = self.args;
        c.meta.source = self.source_name.clone();
        c.meta.format = format.name().into();
        if let Some(p) = prov {
            c.meta.repository = Some(p.repository.clone());
            c.meta.commit = Some(p.commit.clone());
            c.meta.license = Some(p.license.clone());
            c.meta.path = Some(p.path.clone());
        }
        c.meta.repository = a.repository.clone().or(c.meta.repository.take());
        c.meta.commit = a.commit.clone().or(c.meta.commit.take());
        c.meta.license = a.license.clone().or(c.meta.license.take());
        let mut id = c.meta.id.clone();
        let mut n = 1;
        while !self.ids.insert(id.clone()) {
            n += 1;
            id = format!("{}-{n}", c.meta.id);
        }
        c.meta.id = id;
    }

    /// Refreshes the manifest, reports, and turns the counts into the exit status.
    fn finish(self) -> Result<(), Failure> {
        let out = &self.args.out;
        let (written, skipped_empty) = (self.written, self.skipped_empty);
        if written > 0 || out.is_dir() {
            write_manifest(out).map_err(Failure::ImportManifest)?;
        }
        crate::outln!("imported {written} conversation(s) into {}", out.display())?;
        if self.write_failed > 0 {
            return Err(Failure::Failed(format!("{} conversation(s) could not be written", self.write_failed)));
        }
        if written == 0 && skipped_empty > 0 {
            return Err(Failure::BadInput(format!(
                "nothing imported: {skipped_empty} conversation(s) had no turns (wrong --format?)"
            )));
        }
        if self.failed > 0 {
            return Err(Failure::BadInput(format!("{} file(s) or conversation(s) failed to import", self.failed)));
        }
        Ok(())
    }
}

/// Loads every conversation under `paths`, printing errors; returns the loaded ones and the error count.
fn load_all(paths: &[PathBuf]) -> Result<(Vec<(PathBuf, Conversation)>, usize), Failure> {
    let files = find_conversations(paths)?;
    let mut out = Vec::new();
    let mut errors = 0;
    for f in files {
        match load_conversation(&f) {
            Ok(c) => out.push((f, c)),
            Err(e) => {
                eprintln!("error: {e}");
                errors += 1;
            }
        }
    }
    Ok((out, errors))
}

fn list_cmd(paths: &[PathBuf]) -> Result<(), Failure> {
    let (loaded, errors) = load_all(paths)?;
    let mut stdout = std::io::stdout().lock();
    for (f, c) in &loaded {
        let s = ConversationStats::of(c);
        // A closed pipe (`| head`) ends the listing quietly.
        let written = writeln!(
            stdout,
            "{}\t{}\t{}\t{} contents\t{} chars\t{} tokens",
            f.display(),
            c.meta.source,
            c.meta.id,
            s.contents,
            s.characters,
            s.estimated_tokens
        );
        if written.is_err() {
            break;
        }
    }
    if errors > 0 {
        return Err(Failure::BadInput(format!("{errors} file(s) could not be read")));
    }
    Ok(())
}

#[derive(Tabled)]
struct Row {
    #[tabled(rename = "source")]
    source: String,
    #[tabled(rename = "convs")]
    conversations: u64,
    #[tabled(rename = "contents")]
    contents: u64,
    #[tabled(rename = "user")]
    user_turns: u64,
    #[tabled(rename = "model")]
    model_turns: u64,
    #[tabled(rename = "chars")]
    characters: u64,
    #[tabled(rename = "est. tokens")]
    estimated_tokens: u64,
    #[tabled(rename = "tool calls")]
    tool_calls: u64,
    #[tabled(rename = "max tool out")]
    longest_tool_output: u64,
    #[tabled(rename = "images")]
    images: u64,
    #[tabled(rename = ">100k chars")]
    over_100k: u64,
}

fn row(source: &str, t: &Totals) -> Row {
    Row {
        source: source.to_string(),
        conversations: t.conversations,
        contents: t.sum.contents,
        user_turns: t.sum.user_turns,
        model_turns: t.sum.model_turns,
        characters: t.sum.characters,
        estimated_tokens: t.sum.estimated_tokens,
        tool_calls: t.sum.tool_calls,
        longest_tool_output: t.sum.longest_tool_output,
        images: t.sum.images,
        over_100k: t.over_100k_chars,
    }
}

fn stats_cmd(paths: &[PathBuf], per_conversation: bool) -> Result<(), Failure> {
    let (loaded, errors) = load_all(paths)?;
    let mut by_source: BTreeMap<String, Totals> = BTreeMap::new();
    let mut all = Totals::default();
    let mut rows = Vec::new();
    for (_, c) in &loaded {
        let s = ConversationStats::of(c);
        by_source.entry(c.meta.source.clone()).or_default().add(&s);
        all.add(&s);
        if per_conversation {
            let mut one = Totals::default();
            one.add(&s);
            rows.push(row(&format!("{}/{}", c.meta.source, c.meta.id), &one));
        }
    }
    if per_conversation {
        crate::outln!("{}\n", Table::new(rows).with(Style::markdown()))?;
    }
    let mut table: Vec<Row> = by_source.iter().map(|(s, t)| row(s, t)).collect();
    table.push(row("TOTAL", &all));
    crate::outln!("{}", Table::new(table).with(Style::markdown()))?;
    crate::outln!(
        "\n{} conversation(s) from {} source(s); {} over 100,000 characters",
        all.conversations,
        by_source.len(),
        all.over_100k_chars
    )?;
    if errors > 0 {
        return Err(Failure::BadInput(format!("{errors} file(s) could not be read")));
    }
    Ok(())
}

fn validate_cmd(paths: &[PathBuf]) -> Result<(), Failure> {
    let (loaded, mut bad_files) = load_all(paths)?;
    for (f, c) in &loaded {
        let problems = validate_conversation(c);
        for p in &problems {
            eprintln!("{}: {p}", f.display());
        }
        if !problems.is_empty() {
            bad_files += 1;
        }
    }
    if bad_files > 0 {
        return Err(Failure::BadInput(format!("{bad_files} file(s) with problems")));
    }
    if loaded.is_empty() {
        let dirs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(Failure::BadInput(format!("no conversation found under {}", dirs.join(", "))));
    }
    crate::outln!("{} conversation(s) valid", loaded.len())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasets::load_dataset;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/src/fixtures").join(name)
    }

    #[test]
    fn batch_import_continues_past_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"messages\": [").unwrap();
        let out = dir.path().join("out");
        let args = ImportArgs {
            format: None,
            sources: vec![bad, fixture("codex-rollout.jsonl"), fixture("claude-code.jsonl")],
            out: out.clone(),
            source: Some("mixed".into()),
            provenance: None,
            license: None,
            repository: None,
            commit: None,
            min_chars: None,
            limit: None,
        };
        let result = run(DatasetsArgs { command: DatasetsCommand::Import(args) });
        let e = result.unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::EXIT_BAD_INPUT);
        let files = find_conversations(std::slice::from_ref(&out)).unwrap();
        let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["claude-code.json", "codex-rollout.json"]);
        assert!(out.join("manifest.json").exists());
        // A corrupt conversation file in a dataset is reported in place; the others still load.
        std::fs::write(out.join("broken.json"), "{").unwrap();
        let ds = load_dataset(&out).unwrap();
        let ok: Vec<bool> = ds.conversations.iter().map(|(_, r)| r.is_ok()).collect();
        assert_eq!(ok, [false, true, true]);
        assert!(ds.conversations[0].1.as_ref().unwrap_err().to_string().contains("broken.json: line 1"));
    }

    #[test]
    fn provenance_tables_are_read() {
        let text = "## swe-agent/ — SWE-agent (MIT)\n| file | repo | commit | license |\n|---|---|---|---|\n\
                    | `a/b.traj` | SWE-agent/SWE-agent | `3ea7` | MIT | 10 | | |\n";
        let table = parse_provenance(text);
        let p = &table["swe-agent/a/b.traj"];
        assert_eq!(
            (p.repository.as_str(), p.commit.as_str(), p.license.as_str(), p.path.as_str()),
            ("SWE-agent/SWE-agent", "3ea7", "MIT", "a/b.traj")
        );
    }
}
