//! The o200k counts of recorded texts, kept between runs beside the import cache
//! (`<import_cache>/o200k-counts.bin`). Counting the long sessions' texts for the first time is about a fifth
//! of a run, and the same sessions are replayed run after run. The file holds each text's SHA-256 and its
//! count, after the tokenizer's fingerprint (the counts of a few fixed texts, [`tokens::o200k_fingerprint`]),
//! and ends with the SHA-256 of everything before it. A file of another fingerprint, or a damaged or
//! truncated one, is not read (the counts are computed again, and the file written anew); a file that cannot
//! be written costs the next run its speed, nothing else. Counts from the file equal the ones computed: the
//! results of a run are the same bytes with or without it.

use crate::fsutil::WriteError;
use crate::tokens;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The file's name in the import cache.
pub const FILE: &str = "o200k-counts.bin";
const MAGIC: &[u8; 16] = b"cb-o200k-count/1";
const RECORD: usize = 32 + 8;

/// The counts a run started from, and where they are kept.
#[derive(Debug)]
pub struct KeptCounts {
    path: PathBuf,
    loaded: usize,
}

fn header() -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    for n in tokens::o200k_fingerprint() {
        h.extend_from_slice(&n.to_le_bytes());
    }
    h
}

/// The (digest, count) records of a file's bytes, or `None` when it is not a whole file of this tokenizer.
fn parse(bytes: &[u8], header: &[u8]) -> Option<Vec<([u8; 32], u64)>> {
    let body_end = bytes.len().checked_sub(32)?;
    let (body, sum) = bytes.split_at(body_end);
    if Sha256::digest(body).as_slice() != sum || !body.starts_with(header) {
        return None;
    }
    let records = &body[header.len()..];
    if records.len() % RECORD != 0 {
        return None;
    }
    Some(
        records
            .chunks_exact(RECORD)
            .map(|r| {
                let (digest, count) = r.split_at(32);
                (digest.try_into().unwrap_or([0; 32]), u64::from_le_bytes(count.try_into().unwrap_or([0; 8])))
            })
            .collect(),
    )
}

impl KeptCounts {
    /// Starts this process from the counts kept in `import_cache` (none where there is no usable file).
    pub fn load(import_cache: &Path) -> KeptCounts {
        let path = import_cache.join(FILE);
        let records = std::fs::read(&path).ok().and_then(|bytes| parse(&bytes, &header())).unwrap_or_default();
        let loaded = records.len();
        tokens::preload_o200k_counts(records);
        KeptCounts { path, loaded }
    }

    /// Writes every count this process knows, when it knows more than it started from.
    pub fn save(&self) -> Result<(), WriteError> {
        let known = tokens::known_o200k_counts();
        if known.len() <= self.loaded {
            return Ok(());
        }
        let mut bytes = header();
        bytes.reserve(known.len() * RECORD + 32);
        for (digest, count) in &known {
            bytes.extend_from_slice(digest);
            bytes.extend_from_slice(&count.to_le_bytes());
        }
        let sum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&sum);
        crate::fsutil::write_atomic(&self.path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept file is read back whole; one of another tokenizer's fingerprint, a flipped byte or a cut end
    /// is not read at all.
    #[test]
    fn kept_counts_are_read_back_only_from_a_whole_file_of_this_tokenizer() {
        let header = header();
        let records = [([7u8; 32], 12u64), ([9u8; 32], 345u64)];
        let mut bytes = header.clone();
        for (d, n) in &records {
            bytes.extend_from_slice(d);
            bytes.extend_from_slice(&n.to_le_bytes());
        }
        let whole = |body: &[u8]| [body, Sha256::digest(body).as_slice()].concat();
        assert_eq!(parse(&whole(&bytes), &header), Some(records.to_vec()));
        let mut other = bytes.clone();
        other[MAGIC.len()] ^= 1; // another fingerprint
        assert_eq!(parse(&whole(&other), &header), None);
        let mut flipped = whole(&bytes);
        flipped[header.len() + 3] ^= 0x40;
        assert_eq!(parse(&flipped, &header), None);
        let file = whole(&bytes);
        assert_eq!(parse(&file[..file.len() - 5], &header), None);
        assert_eq!(parse(&[], &header), None);
    }
}
