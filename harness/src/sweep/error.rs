//! Why a run, a merge or a plan could not be made: the one error of the sweep modules.

use crate::datasets;
use std::path::PathBuf;

/// Why a run, a merge or a plan could not be made. Exit statuses are assigned in `cli::Failure::exit_code`.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The sweep config does not expand to a grid.
    #[error("{0}")]
    Config(String),
    /// A strategy of the grid is unknown or refuses its knob values.
    #[error(transparent)]
    Grid(#[from] crate::replay::StrategyError),
    #[error(transparent)]
    Dataset(#[from] datasets::DatasetError),
    /// A plan larger than a run accepts.
    #[error(transparent)]
    TooLarge(#[from] crate::data::plan::PlanTooLarge),
    #[error("{}: the run directory holds another plan (different config or corpus); use a new --out", .path.display())]
    PlanMismatch { path: PathBuf },
    /// A run directory's plan that cannot be read, or a cell that cannot be given its stored form.
    #[error(transparent)]
    Store(#[from] crate::data::store::StoreError),
    /// A read or directory operation failed (the message names the path).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Write(#[from] crate::fsutil::WriteError),
    #[error(
        "{}: the run directory is in use by {holder}; wait for that run to finish or use another --out",
        .path.display()
    )]
    Locked { path: PathBuf, holder: String },
    #[error("a cell panicked: {0}")]
    Panicked(String),
    #[error("{}: its plan differs from {}'s (different config or corpus)", .shard.display(), .first.display())]
    ShardsDiffer { shard: PathBuf, first: PathBuf },
    #[error("merge needs at least one shard directory")]
    NoShards,
    #[error("{0}")]
    BadOption(String),
}
