//! File-system helpers shared by every writer of the crate. A leaf module: it imports nothing from the
//! crate, so any module may use it without creating an import cycle.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Prefix of the temporary files [`write_atomic`] creates; a killed writer can leave one behind, and
/// whoever owns the directory may remove files with this prefix.
pub const TEMP_PREFIX: &str = ".tmp";

/// A failed write, naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{}: cannot write: {source}", .path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory, synced, then renamed over the
/// final name, so readers and a killed writer never see half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let named = |source: std::io::Error| WriteError { path: path.to_path_buf(), source };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(named)?;
    let mut tmp = tempfile::Builder::new().prefix(TEMP_PREFIX).tempfile_in(dir).map_err(named)?;
    tmp.write_all(bytes).map_err(named)?;
    tmp.as_file().sync_all().map_err(named)?;
    tmp.persist(path).map_err(|e| named(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_the_whole_file_and_leave_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/x.json");
        write_atomic(&p, b"first, longer content").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> =
            std::fs::read_dir(dir.path().join("sub")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.json")]);
    }

    #[test]
    fn an_error_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), b"").unwrap();
        let p = dir.path().join("file/child.json");
        let e = write_atomic(&p, b"x").unwrap_err();
        assert!(e.to_string().contains("child.json"), "{e}");
    }
}
