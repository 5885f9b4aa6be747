//! Manifests of raw sessions kept elsewhere: for each file its upstream repository, commit, path and the
//! sha256 of its bytes, so that people without `../shared` can fetch the same sessions with git
//! (`compactbench datasets fetch`) and a changed or truncated file is refused, never used.
//!
//! The manifest is data (TOML); git runs at the edge ([`fetch`]), the rest is pure and tested offline.

use crate::raw::{self, ProvenanceRow};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A corpus of raw session files and where each comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// What the corpus is (one line).
    pub corpus: String,
    /// The repository every file comes from unless it names its own: `owner/name` (GitHub), a URL or a
    /// local path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The branch or tag to fetch, which holds every file's commit (abbreviated commits resolve in it).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(rename = "file")]
    pub files: Vec<ManifestFile>,
}

/// One file of a manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// The file name written into the target directory (the upstream bytes, uncompressed).
    pub name: String,
    /// Its repository, when it differs from the manifest's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    pub commit: String,
    /// Its path in the repository at that commit.
    pub path: String,
    /// Hex sha256 of the upstream bytes.
    pub sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{}: {message}", .path.display())]
    Read { path: PathBuf, message: String },
    #[error("{}: file `{name}`: {message}", .manifest.display())]
    Field { manifest: PathBuf, name: String, message: String },
    #[error("{name}: sha256 {actual}, the manifest says {expected}: refused (the upstream file changed or the fetch was cut short)")]
    Checksum { name: String, expected: String, actual: String },
    #[error("git {args}: {message}")]
    Git { args: String, message: String },
    #[error("{}: {source}", .path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

/// Hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes are the manifest's file, or the error that refuses them.
pub fn verify(file: &ManifestFile, bytes: &[u8]) -> Result<(), ManifestError> {
    let actual = sha256_hex(bytes);
    if actual.eq_ignore_ascii_case(&file.sha256) {
        Ok(())
    } else {
        Err(ManifestError::Checksum { name: file.name.clone(), expected: file.sha256.clone(), actual })
    }
}

/// What git is given for a repository: a URL or local path as written, `owner/name` as a GitHub URL.
pub fn repository_url(repository: &str) -> String {
    let local = repository.starts_with('/') || repository.starts_with('.');
    if repository.contains("://") || repository.starts_with("git@") || local {
        repository.to_string()
    } else {
        format!("https://github.com/{}.git", repository.trim_end_matches(".git"))
    }
}

impl Manifest {
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let read = |message: String| ManifestError::Read { path: path.to_path_buf(), message };
        let text = std::fs::read_to_string(path).map_err(|e| read(e.to_string()))?;
        let m: Manifest = toml::from_str(&text).map_err(|e| read(e.to_string().trim().to_string()))?;
        m.check(path)?;
        Ok(m)
    }

    /// Every file names a repository, a plain file name and a 64-digit sha256.
    fn check(&self, path: &Path) -> Result<(), ManifestError> {
        for f in &self.files {
            let bad = |message: &str| ManifestError::Field {
                manifest: path.to_path_buf(),
                name: f.name.clone(),
                message: message.to_string(),
            };
            if f.repository.is_none() && self.repository.is_none() {
                return Err(bad("no `repository` (neither the file's nor the manifest's)"));
            }
            if f.name.is_empty() || f.name.contains(['/', '\\']) || f.name.starts_with('.') {
                return Err(bad("`name` must be a plain file name"));
            }
            if f.sha256.len() != 64 || !f.sha256.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad("`sha256` must be 64 hex digits"));
            }
            if f.commit.is_empty() || f.path.is_empty() {
                return Err(bad("`commit` and `path` are required"));
            }
        }
        Ok(())
    }

    /// A manifest of the raw logs in `dir`: each file's upstream path (and repository and commit, where the
    /// `SOURCE.md` table has them) and the sha256 of its uncompressed bytes; `repository`, `git_ref` and
    /// `commit` fill what the table does not say. A file without an upstream path is an error.
    pub fn of_directory(
        dir: &Path,
        corpus: &str,
        repository: Option<&str>,
        git_ref: Option<&str>,
        commit: Option<&str>,
    ) -> Result<Manifest, ManifestError> {
        let (root, files) =
            raw::raw_files(dir).map_err(|e| ManifestError::Read { path: dir.to_path_buf(), message: e.to_string() })?;
        let table = raw::provenance_table(&root);
        let mut out = Vec::new();
        for path in files {
            let base = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let row: ProvenanceRow = table.get(&base).cloned().unwrap_or_default();
            let missing = |what: &str| ManifestError::Field {
                manifest: root.join("SOURCE.md"),
                name: base.clone(),
                message: format!("no {what}"),
            };
            let bytes = raw::read_source(&path)
                .map_err(|e| ManifestError::Read { path: path.clone(), message: e.to_string() })?;
            let upstream = row.path.clone().ok_or_else(|| missing("upstream path"))?;
            let own_repo = row.repository.clone().filter(|r| Some(r.as_str()) != repository);
            out.push(ManifestFile {
                name: base.trim_end_matches(".gz").to_string(),
                repository: own_repo,
                commit: row.commit.clone().or(commit.map(String::from)).ok_or_else(|| missing("commit"))?,
                path: upstream,
                sha256: sha256_hex(&bytes),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Manifest {
            corpus: corpus.to_string(),
            repository: repository.map(String::from),
            git_ref: git_ref.map(String::from),
            license: None,
            files: out,
        })
    }
}

/// What a fetch did.
#[derive(Debug, Default, PartialEq)]
pub struct FetchReport {
    pub fetched: Vec<String>,
    /// Already present with the right checksum.
    pub present: Vec<String>,
}

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, ManifestError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| ManifestError::Git { args: args.join(" "), message: e.to_string() })?;
    if !out.status.success() {
        let message = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(ManifestError::Git { args: args.join(" "), message });
    }
    Ok(out.stdout)
}

/// Fetches every file of the manifest into `into` with git (a bare cache per repository under
/// `into/.git-cache`), checks each file's sha256 and writes it only when it matches; a file already present
/// with the right checksum is left alone. The first mismatch or git failure stops the fetch with its error;
/// nothing unchecked is ever written.
pub fn fetch(manifest: &Manifest, into: &Path) -> Result<FetchReport, ManifestError> {
    let write_err = |path: &Path, source| ManifestError::Write { path: path.to_path_buf(), source };
    std::fs::create_dir_all(into).map_err(|e| write_err(into, e))?;
    let mut report = FetchReport::default();
    let mut fetched_repos: std::collections::BTreeMap<String, PathBuf> = Default::default();
    for f in &manifest.files {
        let target = into.join(&f.name);
        if let Ok(bytes) = std::fs::read(&target) {
            if verify(f, &bytes).is_ok() {
                report.present.push(f.name.clone());
                continue;
            }
        }
        let repository = f.repository.as_deref().or(manifest.repository.as_deref()).unwrap_or_default();
        let url = repository_url(repository);
        let cache = match fetched_repos.get(&url) {
            Some(c) => c.clone(),
            None => {
                let safe: String =
                    url.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
                let cache = into.join(".git-cache").join(safe);
                std::fs::create_dir_all(&cache).map_err(|e| write_err(&cache, e))?;
                git(&cache, &["init", "-q", "--bare"])?;
                // Blobs come on demand: a checkpoint branch holds far more than the sessions asked for.
                let what = manifest.git_ref.clone().unwrap_or_else(|| f.commit.clone());
                let refspec = format!("+{what}:refs/compactbench/fetched");
                let args = ["fetch", "-q", "--no-tags", "--filter=blob:none", url.as_str(), refspec.as_str()];
                if manifest.git_ref.is_some() {
                    git(&cache, &args)?;
                } else {
                    git(&cache, &["fetch", "-q", "--no-tags", "--filter=blob:none", url.as_str(), what.as_str()])?;
                }
                fetched_repos.insert(url.clone(), cache.clone());
                cache
            }
        };
        let object = format!("{}:{}", f.commit, f.path);
        let bytes = git(&cache, &["cat-file", "blob", object.as_str()])?;
        verify(f, &bytes)?;
        crate::fsutil::write_atomic(&target, &bytes)
            .map_err(|e| ManifestError::Write { path: target.clone(), source: std::io::Error::other(e.to_string()) })?;
        report.fetched.push(f.name.clone());
    }
    Ok(report)
}
