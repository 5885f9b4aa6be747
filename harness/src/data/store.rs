//! A run directory as stored, read side: the plan (`plan.json`) and the cells (`cells/<point>/<conversation>.json`,
//! each digest-checked), sorted into verified, missing and damaged. Reports, the view, the gate and `compare`
//! read a finished run through here; the sweep writes it (`sweep::run_dir`: the plan, the cells with
//! [`cell_bytes`], the lock).

use super::cell::CellResult;
use super::plan::{Cell, Plan, PlanTooLarge};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Why a run directory's plan cannot be used, or a cell cannot be given its stored form.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `plan.json` is missing, unreadable or not a plan.
    #[error("{}: {reason}", .path.display())]
    BadPlan { path: PathBuf, reason: String },
    #[error(transparent)]
    TooLarge(#[from] PlanTooLarge),
    /// A cell could not be serialised.
    #[error("{0}")]
    Encode(String),
}

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
pub fn cell_bytes(r: &CellResult) -> Result<Vec<u8>, StoreError> {
    let blank = CellResult { digest: String::new(), ..r.clone() };
    let mut bytes = serde_json::to_vec_pretty(&blank).map_err(|e| StoreError::Encode(e.to_string()))?;
    bytes.push(b'\n');
    let at = find_last(&bytes, DIGEST_FIELD)
        .map(|i| i + DIGEST_FIELD.len())
        .ok_or_else(|| StoreError::Encode("cell serialisation lost its digest field".into()))?;
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

/// Every verified cell of a run directory, in the plan's order (missing and damaged cells are left out;
/// [`load_cells`] names them).
pub fn collect(run_dir: &Path, plan: &Plan) -> Vec<CellResult> {
    load_cells(run_dir, plan).cells
}

/// Where a run directory keeps its plan.
pub fn plan_path(run_dir: &Path) -> PathBuf {
    run_dir.join("plan.json")
}

/// The plan of a run directory, checked for size ([`Plan::check_size`]).
pub fn load_plan(run_dir: &Path) -> Result<Plan, StoreError> {
    let path = plan_path(run_dir);
    let bytes = std::fs::read(&path).map_err(|e| StoreError::BadPlan { path: path.clone(), reason: e.to_string() })?;
    let plan: Plan = serde_json::from_slice(&bytes)
        .map_err(|e| StoreError::BadPlan { path: path.clone(), reason: e.to_string() })?;
    plan.check_size()?;
    Ok(plan)
}

/// A stage of reading a run, as the report (`report::build_with_progress`) and the gate announce it: its name and the share of a typical report's time
/// spent before it (measured on the default run and the long sessions alike: the figures ~24 %, the results
/// files ~21 %, the pages ~49 %), from which the CLI estimates the time left.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub name: String,
    pub done_share: f64,
}
