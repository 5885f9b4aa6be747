//! A run directory as a run writes it: the plan written (or checked), the cells written atomically in their
//! stored form ([`crate::data::store::cell_bytes`]), the lock that keeps two runs out of one directory. The
//! read side (the plan, the cells verified) is `crate::data::store`.

use super::error::RunError;
use crate::data::store::{cell_bytes, plan_path};
use crate::data::{CellResult, Plan};
use crate::fsutil::{write_atomic, TEMP_PREFIX};
use std::path::{Path, PathBuf};

/// Writes a cell atomically, stamped with its digest.
pub fn write_cell(run_dir: &Path, r: &CellResult) -> Result<(), RunError> {
    Ok(write_atomic(&run_dir.join(r.cell.relative_path()), &cell_bytes(r)?)?)
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
