//! A run directory on disk: the plan, the cells (digest-checked, written atomically), the lock that keeps
//! two runs out of one directory.

use super::error::RunError;
use crate::data::{Cell, CellResult, Plan};
use crate::fsutil::{write_atomic, TEMP_PREFIX};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What a run directory holds for one cell.
#[derive(Clone, Debug, PartialEq)]
pub enum CellState {
    Done(Box<CellResult>),
    Missing,
    /// Present but unusable.
    Damaged(CellDamage),
}

/// Why a stored cell is not used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CellDamage {
    #[error("cannot read: {0}")]
    Unreadable(String),
    #[error("no digest")]
    NoDigest,
    #[error("digest mismatch: the file was changed after it was written")]
    DigestMismatch,
    #[error("not a cell result: {0}")]
    NotACell(String),
    #[error("holds another cell's result")]
    OtherCell,
    #[error("run under another plan ({0})")]
    OtherPlan(String),
}

const DIGEST_FIELD: &[u8] = b"\n  \"digest\": \"";

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

fn sha256_tag(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The stored form of a cell: pretty JSON whose last field, `digest`, is the sha256 of the same bytes with
/// that field empty. Hashing bytes (not re-serialised values) keeps the check exact for every number.
pub fn cell_bytes(r: &CellResult) -> Result<Vec<u8>, RunError> {
    let blank = CellResult { digest: String::new(), ..r.clone() };
    let mut bytes = serde_json::to_vec_pretty(&blank).map_err(|e| RunError::Io(std::io::Error::other(e)))?;
    bytes.push(b'\n');
    let at = find_last(&bytes, DIGEST_FIELD)
        .map(|i| i + DIGEST_FIELD.len())
        .ok_or_else(|| RunError::Io(std::io::Error::other("cell serialisation lost its digest field")))?;
    let digest = sha256_tag(&bytes);
    bytes.splice(at..at, digest.bytes());
    Ok(bytes)
}

/// Checks a stored cell's digest against its bytes.
fn verify_digest(bytes: &[u8]) -> Result<(), CellDamage> {
    let at = find_last(bytes, DIGEST_FIELD).map(|i| i + DIGEST_FIELD.len()).ok_or(CellDamage::NoDigest)?;
    let len = bytes[at..].iter().position(|&b| b == b'"').ok_or(CellDamage::NoDigest)?;
    let claimed = String::from_utf8_lossy(&bytes[at..at + len]).into_owned();
    let mut blank = bytes[..at].to_vec();
    blank.extend_from_slice(&bytes[at + len..]);
    let actual = sha256_tag(&blank);
    if claimed.is_empty() {
        return Err(CellDamage::NoDigest);
    }
    if claimed != actual {
        return Err(CellDamage::DigestMismatch);
    }
    Ok(())
}

/// Reads and verifies a stored cell.
pub fn read_cell(run_dir: &Path, plan_digest: &str, cell: &Cell) -> CellState {
    let bytes = match std::fs::read(run_dir.join(cell.relative_path())) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CellState::Missing,
        Err(e) => return CellState::Damaged(CellDamage::Unreadable(e.to_string())),
    };
    if let Err(reason) = verify_digest(&bytes) {
        return CellState::Damaged(reason);
    }
    match serde_json::from_slice::<CellResult>(&bytes) {
        Err(e) => CellState::Damaged(CellDamage::NotACell(e.to_string())),
        Ok(r) if &r.cell != cell => CellState::Damaged(CellDamage::OtherCell),
        Ok(r) if r.plan != plan_digest => CellState::Damaged(CellDamage::OtherPlan(r.plan)),
        Ok(r) => CellState::Done(Box::new(r)),
    }
}

/// Writes a cell atomically, stamped with its digest.
pub fn write_cell(run_dir: &Path, r: &CellResult) -> Result<(), RunError> {
    Ok(write_atomic(&run_dir.join(r.cell.relative_path()), &cell_bytes(r)?)?)
}

/// Every cell of a plan as a run directory holds it.
#[derive(Clone, Debug, Default)]
pub struct StoredCells {
    /// Verified cells, in the plan's order.
    pub cells: Vec<CellResult>,
    pub missing: Vec<Cell>,
    pub damaged: Vec<(Cell, CellDamage)>,
}

impl StoredCells {
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty() && self.damaged.is_empty()
    }

    /// One line per missing or damaged cell, naming its file (at most `limit`, then a count).
    pub fn problems(&self, run_dir: &Path, limit: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .damaged
            .iter()
            .map(|(c, why)| format!("damaged: {}: {why}", run_dir.join(c.relative_path()).display()))
            .chain(self.missing.iter().map(|c| format!("missing: {}", run_dir.join(c.relative_path()).display())))
            .collect();
        let total = lines.len();
        if total > limit {
            lines.truncate(limit);
            lines.push(format!("… and {} more", total - limit));
        }
        lines
    }
}

/// Reads every cell of the plan from a run directory, sorting them into verified, missing and damaged.
pub fn load_cells(run_dir: &Path, plan: &Plan) -> StoredCells {
    let digest = plan.digest();
    let mut out = StoredCells::default();
    for cell in plan.cells() {
        match read_cell(run_dir, &digest, &cell) {
            CellState::Done(r) => out.cells.push(*r),
            CellState::Missing => out.missing.push(cell),
            CellState::Damaged(why) => out.damaged.push((cell, why)),
        }
    }
    out
}

pub fn plan_path(run_dir: &Path) -> PathBuf {
    run_dir.join("plan.json")
}

/// Writes (or checks) the plan in the run directory: resuming with another config is refused.
pub fn ensure_plan(run_dir: &Path, plan: &Plan) -> Result<(), RunError> {
    let path = plan_path(run_dir);
    let bytes = plan.to_bytes();
    if let Ok(existing) = std::fs::read(&path) {
        if existing != bytes {
            return Err(RunError::PlanMismatch { path });
        }
        return Ok(());
    }
    Ok(write_atomic(&path, &bytes)?)
}

pub fn load_plan(run_dir: &Path) -> Result<Plan, RunError> {
    let path = plan_path(run_dir);
    let bytes = std::fs::read(&path).map_err(|e| RunError::BadPlan { path: path.clone(), reason: e.to_string() })?;
    let plan: Plan =
        serde_json::from_slice(&bytes).map_err(|e| RunError::BadPlan { path: path.clone(), reason: e.to_string() })?;
    plan.check_size()?;
    Ok(plan)
}

/// The lock a run holds on its directory (`run.lock`, holding the holder's pid and host). The lock is an
/// advisory `flock` the kernel drops when the holder dies, so a lock file left by a killed run is stale by
/// construction and the next run takes it over.
#[derive(Debug)]
pub struct RunLock {
    file: std::fs::File,
    path: PathBuf,
}

impl Drop for RunLock {
    /// Removes the lock file while still holding the lock, so a finished run leaves none. A run that opened
    /// the file just before and locks it after finds it unlinked and starts over (`lock_run_dir`).
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether `path` still names the file `file` has open (not unlinked or replaced since it was opened).
fn still_linked(file: &std::fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

pub const LOCK_FILE: &str = "run.lock";

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown host".into())
}

/// Takes the run directory's lock, or refuses naming the holder.
pub fn lock_run_dir(run_dir: &Path) -> Result<RunLock, RunError> {
    use std::io::{Read, Seek, Write};
    std::fs::create_dir_all(run_dir).map_err(|e| RunError::Io(named_io(run_dir, e)))?;
    let path = run_dir.join(LOCK_FILE);
    let mut file = loop {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| RunError::Io(named_io(&path, e)))?;
        match fs4::FileExt::try_lock(&file) {
            Ok(()) if still_linked(&file, &path) => break file,
            // The holder finished and removed the file between our open and our lock: open it again.
            Ok(()) => continue,
            Err(fs4::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() { "another run".to_string() } else { holder.to_string() };
                return Err(RunError::Locked { path: run_dir.to_path_buf(), holder });
            }
            Err(fs4::TryLockError::Error(e)) => return Err(RunError::Io(named_io(&path, e))),
        }
    };
    let record = format!("pid {} on {}\n", std::process::id(), host_name());
    let written = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| file.write_all(record.as_bytes()));
    written.map_err(|e| RunError::Io(named_io(&path, e)))?;
    Ok(RunLock { file, path })
}

fn named_io(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Removes temporary files a killed run left behind (a kill between writing and renaming a cell).
pub(super) fn remove_orphaned_temp_files(run_dir: &Path) {
    let Ok(points) = std::fs::read_dir(run_dir.join("cells")) else { return };
    for point in points.flatten() {
        let Ok(files) = std::fs::read_dir(point.path()) else { continue };
        for f in files.flatten() {
            if f.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                let _ = std::fs::remove_file(f.path());
            }
        }
    }
}

/// Every verified cell of a run directory, in the plan's order (missing and damaged cells are left out;
/// [`load_cells`] names them).
pub fn collect(run_dir: &Path, plan: &Plan) -> Vec<CellResult> {
    load_cells(run_dir, plan).cells
}
