//! A finished cell as stored in `cells/<point>/<conversation>.json`.

use super::plan::Cell;
use super::probe_results::ProbeResults;
use crate::replay::ConversationResult;
use serde::{Deserialize, Serialize};

/// A finished cell, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub cell: Cell,
    pub source: String,
    pub result: ConversationResult,
    /// Probe scores and injection obedience (cells of runs without probes have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeResults>,
    /// The cell failed on a transient model error (rate limit, timeout, server error, bad answer): the next
    /// `run` into the directory redoes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transient_failure: bool,
    /// `Plan::digest` of the plan the cell was run under: a cell copied from another run is not used.
    #[serde(default)]
    pub plan: String,
    /// `sha256:` of the stored file with this field empty (see [`super::store::cell_bytes`]): a damaged or hand-edited
    /// cell is detected, named and redone, never used. Always the last field.
    #[serde(default)]
    pub digest: String,
}
