//! Raw agent logs read in place: the files of a directory, a glob or one file, gzip-compressed or not,
//! imported on the fly into [`Conversation`]s, with a cache of the conversions keyed by content hash so a
//! corpus that must not be copied into the repository (real sessions under their own licence) is read
//! where it lies and converted once per content.

use crate::import::{self, Format, Imported};
use crate::json::{self, Value};
use crate::{Conversation, DatasetError};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bumped whenever an importer's output changes, so cached conversions of older importers are not used.
pub const IMPORTER_VERSION: u32 = 8;

/// File name endings of raw agent logs in a directory (each also with `.gz`).
const RAW_ENDINGS: [&str; 5] = [".jsonl", ".json", ".traj", ".md", ".txt"];

/// The bytes of a source file, gunzipped when they are gzip (by their magic bytes, whatever the name).
pub fn read_source(path: &Path) -> Result<Vec<u8>, DatasetError> {
    read_source_named(path, &path.display().to_string())
}

/// [`read_source`], its errors naming the file `name` (a raw log's name relative to its directory, as every
/// other error of its import names it; never the machine's absolute path).
pub fn read_source_named(path: &Path, name: &str) -> Result<Vec<u8>, DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(name, e))?;
    gunzip_if_gzip(bytes, name)
}

/// The first `limit` bytes of a source file (gunzipped as [`read_source`] does), cut after its last whole
/// line when it is longer: enough to tell a JSON-lines session's format without reading all of it.
pub fn read_source_prefix(path: &Path, name: &str, limit: usize) -> Result<Vec<u8>, DatasetError> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| DatasetError::io(name, e))?;
    let mut reader = std::io::BufReader::new(file);
    let gzip = reader.fill_buf().map_err(|e| DatasetError::io(name, e))?.starts_with(&GZIP_MAGIC);
    let mut out = Vec::new();
    let read = if gzip {
        flate2::read::MultiGzDecoder::new(reader).take(limit as u64 + 1).read_to_end(&mut out)
    } else {
        reader.take(limit as u64 + 1).read_to_end(&mut out)
    };
    read.map_err(|e| DatasetError::whole(name, format!("cannot read: {e}")))?;
    if out.len() > limit {
        let cut = out.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        out.truncate(cut);
    }
    Ok(out)
}

/// The first bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// `path` with a leading `~` read as the user's home directory, as a shell reads it (sessions live under
/// `~/.claude`, `~/.codex`; a quoted argument or a config value reaches us unexpanded); `None` when it has no
/// leading `~` or `$HOME` is unset.
pub fn home_path(path: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix("~").ok()?;
    Some(PathBuf::from(std::env::var_os("HOME")?).join(rest))
}

/// `text` with every home directory (`/Users/<name>`, `/home/<name>`) shown as `~`: what a report or a
/// listing shows of a session may be published, and a user name is nobody else's business.
pub fn home_as_tilde(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // A home directory starts a path: at the start of the text or after a character no path holds.
    let starts_path = |text: &str, i: usize| {
        text[..i]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | '(' | '[' | '=' | ':' | ','))
    };
    let find = |text: &str, home: &str| text.match_indices(home).map(|(i, _)| i).find(|&i| starts_path(text, i));
    while let Some(at) = ["/Users/", "/home/"].iter().filter_map(|h| find(rest, h).map(|i| (i, h.len()))).min() {
        let (i, len) = at;
        let name_end = rest[i + len..]
            .find(|c: char| c == '/' || c.is_whitespace() || matches!(c, '`' | '\'' | '"' | ')' | ']' | ','))
            .map_or(rest.len(), |e| i + len + e);
        out.push_str(&rest[..i]);
        if name_end > i + len {
            out.push('~');
        } else {
            out.push_str(&rest[i..name_end]);
        }
        rest = &rest[name_end..];
    }
    out.push_str(rest);
    out
}

/// `bytes` unchanged, or decompressed when they start with the gzip magic bytes.
pub fn gunzip_if_gzip(bytes: Vec<u8>, file: &str) -> Result<Vec<u8>, DatasetError> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() * 6);
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .read_to_end(&mut out)
        .map_err(|e| DatasetError::whole(file, format!("not a readable gzip file: {e}")))?;
    Ok(out)
}

/// The name of a file a raw log is imported under: its path relative to `root` (the directory the user
/// pointed at), with `/` separators; never the importing machine's absolute path.
pub fn relative_name(path: &Path, root: &Path) -> String {
    let rel = if root.is_file() {
        path.file_name().map(PathBuf::from).unwrap_or_else(|| path.to_path_buf())
    } else {
        path.strip_prefix(root)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| path.file_name().map(PathBuf::from).unwrap_or_else(|| path.to_path_buf()))
    };
    rel.to_string_lossy().replace('\\', "/")
}

fn is_raw_log(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    RAW_ENDINGS.iter().any(|e| name.ends_with(e)) && !name.starts_with('.')
}

/// The raw logs `spec` names, sorted: a file; a directory, searched recursively for agent logs
/// (`*.jsonl`, `*.json`, `*.traj`, `*.md`, `*.txt`, each also `.gz`; Markdown notes such as `SOURCE.md` and
/// `README.md` are not logs); or a glob pattern. Returns the root names are made relative to.
pub fn raw_files(spec: &Path) -> Result<(PathBuf, Vec<PathBuf>), DatasetError> {
    let text = spec.to_string_lossy();
    let shown = text.to_string();
    if text.contains(['*', '?', '[']) {
        let paths = glob::glob(&text).map_err(|e| DatasetError::whole(&shown, format!("not a valid glob: {e}")))?;
        let mut out: Vec<PathBuf> = paths.filter_map(Result::ok).filter(|p| p.is_file()).collect();
        out.sort();
        let root = glob_root(spec);
        return Ok((root, out));
    }
    if spec.is_file() {
        return Ok((spec.to_path_buf(), vec![spec.to_path_buf()]));
    }
    if !spec.is_dir() {
        return Err(DatasetError::whole(&shown, "no such file or directory"));
    }
    let mut out = Vec::new();
    walk(spec, &mut out)?;
    out.retain(|p| !is_note(p));
    out.sort();
    Ok((spec.to_path_buf(), out))
}

/// Provenance notes kept beside raw logs.
fn is_note(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_uppercase()).unwrap_or_default();
    ["README", "SOURCE", "SOURCES", "LICENSE", "NOTICE", "CHANGELOG"].iter().any(|n| name.starts_with(n))
}

fn glob_root(spec: &Path) -> PathBuf {
    let mut root = PathBuf::new();
    for c in spec.components() {
        if c.as_os_str().to_string_lossy().contains(['*', '?', '[']) {
            break;
        }
        root.push(c);
    }
    root
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), DatasetError> {
    let shown = dir.display().to_string();
    for entry in std::fs::read_dir(dir).map_err(|e| DatasetError::io(&shown, e))? {
        let path = entry.map_err(|e| DatasetError::io(&shown, e))?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if is_raw_log(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// What an import records besides the logs' content: the source name and provenance given by the user
/// (config or command line); empty fields leave what the importer found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawOptions {
    /// Importer; detected per file when `None`.
    pub format: Option<Format>,
    /// `meta.source` of every conversation.
    pub source: Option<String>,
    /// Name each file's conversations after its project instead ([`project_of`]).
    pub source_by_project: bool,
    pub license: Option<String>,
    pub repository: Option<String>,
    pub commit: Option<String>,
    /// Each conversation's history appended to itself this many times (0 and 1: as recorded), for
    /// measuring how a run's cost grows with a session's length ([`Conversation::repeated`]).
    pub copies: usize,
}

impl RawOptions {
    fn key(&self) -> String {
        let f = |o: &Option<String>| o.clone().unwrap_or_default();
        let mut key = format!(
            "{}\0{}\0{}\0{}\0{}",
            self.format.map_or("detect", Format::name),
            f(&self.source),
            f(&self.license),
            f(&self.repository),
            f(&self.commit)
        );
        // Only when set, so the cache keys of imports as recorded stay those of earlier versions.
        if self.copies > 1 {
            key.push_str(&format!("\0copies={}", self.copies));
        }
        key
    }

    fn apply(&self, c: &mut Conversation, row: Option<&ProvenanceRow>) {
        if let Some(s) = &self.source {
            c.meta.source = s.clone();
        }
        let pick = |given: &Option<String>, listed: Option<&String>| given.clone().or_else(|| listed.cloned());
        c.meta.license = pick(&self.license, row.and_then(|r| r.license.as_ref())).or(c.meta.license.take());
        c.meta.repository =
            pick(&self.repository, row.and_then(|r| r.repository.as_ref())).or(c.meta.repository.take());
        c.meta.commit = pick(&self.commit, row.and_then(|r| r.commit.as_ref())).or(c.meta.commit.take());
        if let Some(path) = row.and_then(|r| r.path.clone()) {
            c.meta.path = Some(path);
        }
    }
}

/// Imports one raw log (gzip or not) under `name` (see [`relative_name`]), with `options` applied.
pub fn import_file(path: &Path, name: &str, options: &RawOptions) -> Result<(Format, Imported), DatasetError> {
    let bytes = read_source_named(path, name)?;
    import_bytes(&bytes, name, options, None)
}

fn import_bytes(
    bytes: &[u8],
    name: &str,
    options: &RawOptions,
    row: Option<&ProvenanceRow>,
) -> Result<(Format, Imported), DatasetError> {
    // Importers see the name without `.gz`, so ids and format detection are those of the plain file.
    let plain = name.strip_suffix(".gz").unwrap_or(name);
    let (format, mut imported) = import::import_bytes(bytes, plain, options.format)?;
    if options.copies > 1 {
        for c in &mut imported.conversations {
            *c = c.repeated(options.copies);
        }
    }
    for c in &mut imported.conversations {
        c.meta.path = Some(name.to_string());
        c.meta.format = format.name().into();
        options.apply(c, row);
    }
    Ok((format, imported))
}

/// One raw log converted into canonical conversation files in a cache directory.
#[derive(Clone, Debug)]
pub struct CachedImport {
    pub format: Format,
    pub warnings: Vec<String>,
    /// One canonical conversation file per conversation, in the importer's order.
    pub files: Vec<PathBuf>,
}

/// [`import_file`] through a cache: the conversion of the same bytes under the same name, options,
/// provenance row and [`IMPORTER_VERSION`] is `cache/<sha256>/`, written on the first import (canonical
/// conversation files `0.json`, `1.json`, … and `import.json` with the format and warnings) and read
/// afterwards.
pub fn import_file_cached(
    path: &Path,
    name: &str,
    options: &RawOptions,
    row: Option<&ProvenanceRow>,
    cache: &Path,
) -> Result<CachedImport, DatasetError> {
    let bytes = read_source_named(path, name)?;
    let mut h = Sha256::new();
    h.update(format!("compactbench-import/{IMPORTER_VERSION}\0{name}\0{}\0{row:?}\0", options.key()));
    h.update(&bytes);
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let dir = cache.join(&key[..32]);
    if let Some(hit) = read_cached(&dir) {
        return Ok(hit);
    }
    let (format, imported) = import_bytes(&bytes, name, options, row)?;
    let mut files = Vec::new();
    for (i, c) in imported.conversations.iter().enumerate() {
        let file = dir.join(format!("{i}.json"));
        crate::write_conversation(&file, c)?;
        files.push(file);
    }
    let index = Value::object([
        ("format", Value::str(format.name())),
        ("warnings", Value::Array(imported.warnings.iter().map(|w| Value::str(w)).collect())),
        ("conversations", Value::num(files.len() as f64)),
    ]);
    let shown = dir.join("import.json");
    crate::fsutil::write_atomic(&shown, json::to_string(&index).as_bytes())
        .map_err(|e| DatasetError::io(&shown.display().to_string(), e.source))?;
    Ok(CachedImport { format, warnings: imported.warnings, files })
}

fn read_cached(dir: &Path) -> Option<CachedImport> {
    let v = json::parse(&std::fs::read(dir.join("import.json")).ok()?).ok()?;
    let format = Format::from_name(v.get("format")?.as_str()?)?;
    let warnings = v.get("warnings")?.as_array()?.iter().filter_map(|w| w.as_str().map(str::to_string)).collect();
    let n = v.get("conversations")?.as_f64()? as usize;
    let files: Vec<PathBuf> = (0..n).map(|i| dir.join(format!("{i}.json"))).collect();
    files.iter().all(|f| f.is_file()).then_some(CachedImport { format, warnings, files })
}

/// A row of a provenance table kept beside raw logs (`SOURCE.md` / `SOURCES.md`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProvenanceRow {
    pub repository: Option<String>,
    pub license: Option<String>,
    pub commit: Option<String>,
    /// The file's path in its repository.
    pub path: Option<String>,
}

/// The project a raw log belongs to: the repository's name (after its owner) from its provenance row, else
/// the file name's part before `--` (`<project>--<session>.jsonl.gz`), else the file's stem.
pub fn project_of(file_name: &str, row: Option<&ProvenanceRow>) -> String {
    if let Some(repo) = row.and_then(|r| r.repository.as_deref()) {
        if let Some(name) = repo.rsplit('/').next().filter(|n| !n.trim().is_empty()) {
            return name.trim().to_string();
        }
    }
    match file_name.split_once("--") {
        Some((project, _)) if !project.is_empty() => project.to_string(),
        _ => file_name.split('.').next().unwrap_or(file_name).to_string(),
    }
}

/// The provenance tables of `SOURCE.md` or `SOURCES.md` in `root`, by file name: Markdown tables whose
/// header names a `file` column and any of `repository` (`owner/name (licence)` cells are split),
/// `licence`/`license`, `commit`, `upstream path`. A note in the parent directory counts too (a corpus
/// with one folder per agent and one table for all, like `agent-sessions/`); the nearer note wins. Empty when
/// there is no such file.
pub fn provenance_table(root: &Path) -> std::collections::HashMap<String, ProvenanceRow> {
    let mut out = std::collections::HashMap::new();
    let dir = if root.is_dir() { root } else { root.parent().unwrap_or(root) };
    let notes = ["SOURCE.md", "SOURCES.md"];
    let near = notes.iter().map(|n| dir.join(n));
    let far = dir.parent().into_iter().flat_map(|p| notes.iter().map(move |n| p.join(n)));
    // The far notes first: the nearer ones overwrite their rows.
    let paths: Vec<PathBuf> = far.chain(near).collect();
    for note in paths {
        let Ok(text) = std::fs::read_to_string(&note) else { continue };
        let mut header: Option<Vec<String>> = None;
        for line in text.lines() {
            let line = line.trim();
            if !line.starts_with('|') {
                header = None;
                continue;
            }
            let cells: Vec<String> =
                line.trim_matches('|').split('|').map(|c| c.trim().trim_matches('`').to_string()).collect();
            let Some(columns) = &header else {
                header = Some(cells.iter().map(|c| c.to_ascii_lowercase()).collect());
                continue;
            };
            if cells.iter().all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' '))) {
                continue; // the separator row
            }
            let cell = |pred: &dyn Fn(&str) -> bool| {
                columns.iter().position(|c| pred(c)).and_then(|i| cells.get(i)).filter(|c| !c.is_empty()).cloned()
            };
            let Some(file) = cell(&|c| c == "file") else { continue };
            let mut row = ProvenanceRow {
                repository: cell(&|c| c.starts_with("repository") || c == "repo"),
                license: cell(&|c| c.starts_with("licen")),
                commit: cell(&|c| c.starts_with("commit")),
                path: cell(&|c| c.starts_with("upstream path")),
            };
            // `owner/name (Licence)`
            if let Some(repo) = row.repository.clone() {
                if let Some((name, rest)) = repo.split_once(" (") {
                    row.repository = Some(name.trim().to_string());
                    row.license = row.license.or_else(|| Some(rest.trim_end_matches(')').trim().to_string()));
                }
            }
            let base = file.rsplit('/').next().unwrap_or(&file).to_string();
            out.insert(base, row);
        }
    }
    out
}

/// Every raw log `spec` names, imported through the cache with the provenance table beside them: one
/// result per file (a file that cannot be read or parsed is an error naming it; the others are imported).
pub fn import_all_cached(spec: &Path, options: &RawOptions, cache: &Path) -> Result<Vec<RawFile>, DatasetError> {
    let (root, files) = raw_files(spec)?;
    let table = provenance_table(&root);
    Ok(files
        .into_iter()
        .map(|path| {
            let name = relative_name(&path, &root);
            let base = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let row = table.get(&base);
            let per_project = options
                .source_by_project
                .then(|| RawOptions { source: Some(project_of(&base, row)), ..options.clone() });
            let result = import_file_cached(&path, &name, per_project.as_ref().unwrap_or(options), row, cache);
            RawFile { path, name, result }
        })
        .collect())
}

/// One raw log and what importing it gave.
pub struct RawFile {
    pub path: PathBuf,
    /// The name it was imported under (relative to the source's root).
    pub name: String,
    pub result: Result<CachedImport, DatasetError>,
}

#[cfg(test)]
mod tests {
    use super::home_as_tilde;

    #[test]
    fn home_directories_are_shown_as_tilde_and_nothing_else_is() {
        assert_eq!(home_as_tilde("/Users/someone/.claude/plans/x.md"), "~/.claude/plans/x.md");
        assert_eq!(home_as_tilde("edited `/home/dev/ws/a.go` and /Users/me"), "edited `~/ws/a.go` and ~");
        // A directory named `home` inside a project is no home directory.
        assert_eq!(home_as_tilde("/Users/x/repo/home/agent-skills.nix"), "~/repo/home/agent-skills.nix");
        assert_eq!(home_as_tilde("nix/home/packages.nix"), "nix/home/packages.nix");
        assert_eq!(home_as_tilde("no paths here"), "no paths here");
    }
}
