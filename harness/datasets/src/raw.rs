//! Raw agent logs read in place: the files of a directory, a glob or one file, gzip-compressed or not,
//! imported on the fly into [`Conversation`]s, with a cache of the conversions keyed by content hash so a
//! corpus that must not be copied into the repository (real sessions under their own licence) is read
//! where it lies and converted once per content.

use crate::import::{self, Format, Imported};
use crate::json::{self, Value};
use crate::{conversation_from_value, conversation_to_value, Conversation, DatasetError};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bumped whenever an importer's output changes, so cached conversions of older importers are not used.
pub const IMPORTER_VERSION: u32 = 2;

/// File name endings of raw agent logs in a directory (each also with `.gz`).
const RAW_ENDINGS: [&str; 5] = [".jsonl", ".json", ".traj", ".md", ".txt"];

/// The bytes of a source file, gunzipped when they are gzip (by their magic bytes, whatever the name).
pub fn read_source(path: &Path) -> Result<Vec<u8>, DatasetError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(&file, e))?;
    gunzip_if_gzip(bytes, &file)
}

/// `bytes` unchanged, or decompressed when they start with the gzip magic bytes.
pub fn gunzip_if_gzip(bytes: Vec<u8>, file: &str) -> Result<Vec<u8>, DatasetError> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
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

/// Imports one raw log (gzip or not) under `name` (see [`relative_name`]): the format is `format` or
/// detected. With a `cache` directory, the conversion is read from there when the same bytes were
/// imported under the same name, format and [`IMPORTER_VERSION`] before, and written there otherwise.
pub fn import_file(
    path: &Path,
    name: &str,
    format: Option<Format>,
    cache: Option<&Path>,
) -> Result<(Format, Imported), DatasetError> {
    let bytes = read_source(path)?;
    let key = cache.map(|dir| dir.join(format!("{}.json", cache_key(&bytes, name, format))));
    if let Some(hit) = key.as_deref().and_then(|k| read_cached(k, name)) {
        return Ok(hit);
    }
    // Importers see the name without `.gz`, so ids and format detection are those of the plain file.
    let plain = name.strip_suffix(".gz").unwrap_or(name);
    let (format, mut imported) = import::import_bytes(&bytes, plain, format)?;
    for c in &mut imported.conversations {
        c.meta.path = Some(name.to_string());
    }
    if let Some(k) = &key {
        // A cache that cannot be written costs a re-import next time, nothing else.
        let _ = write_cached(k, format, &imported);
    }
    Ok((format, imported))
}

fn cache_key(bytes: &[u8], name: &str, format: Option<Format>) -> String {
    let mut h = Sha256::new();
    h.update(format!("compactbench-import/{IMPORTER_VERSION}\0{name}\0{}\0", format.map_or("detect", Format::name)));
    h.update(bytes);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn read_cached(path: &Path, name: &str) -> Option<(Format, Imported)> {
    let bytes = std::fs::read(path).ok()?;
    let v = json::parse(&bytes).ok()?;
    let format = Format::ALL.into_iter().find(|f| Some(f.name()) == v.get("format").and_then(Value::as_str))?;
    let warnings = v.get("warnings")?.as_array()?.iter().filter_map(|w| w.as_str().map(str::to_string)).collect();
    let mut conversations = Vec::new();
    for c in v.get("conversations")?.as_array()? {
        conversations.push(conversation_from_value(c.clone(), name).ok()?);
    }
    Some((format, Imported { conversations, warnings }))
}

fn write_cached(path: &Path, format: Format, imported: &Imported) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let warnings = Value::Array(imported.warnings.iter().map(|w| Value::str(w)).collect());
    let conversations = Value::Array(imported.conversations.iter().map(conversation_to_value).collect());
    let v = Value::object([
        ("format", Value::str(format.name())),
        ("warnings", warnings),
        ("conversations", conversations),
    ]);
    crate::fsutil::write_atomic(path, json::to_string(&v).as_bytes()).map_err(|e| e.source)
}

/// Every conversation of a raw source, one result per file (a file that cannot be read or parsed is an
/// error naming it; the others are imported).
pub fn import_all(spec: &Path, format: Option<Format>, cache: Option<&Path>) -> Result<Vec<RawFile>, DatasetError> {
    let (root, files) = raw_files(spec)?;
    Ok(files
        .into_iter()
        .map(|path| {
            let name = relative_name(&path, &root);
            let result = import_file(&path, &name, format, cache);
            RawFile { path, name, result }
        })
        .collect())
}

/// One raw log and what importing it gave.
pub struct RawFile {
    pub path: PathBuf,
    /// The name it was imported under (relative to the source's root).
    pub name: String,
    pub result: Result<(Format, Imported), DatasetError>,
}

impl RawFile {
    /// The conversations, or the error as a message.
    pub fn conversations(&self) -> Result<&[Conversation], String> {
        match &self.result {
            Ok((_, imported)) => Ok(&imported.conversations),
            Err(e) => Err(e.to_string()),
        }
    }
}
