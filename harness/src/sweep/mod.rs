//! Sweeps: a grid of compressor settings over a corpus, run as resumable, shardable cells.

pub mod config;
pub mod runner;
pub mod summary;

pub use config::{ConfigPoint, SweepConfig};
pub use runner::{
    collect, load_cells, make_plan, merge, run, Cell, CellResult, CellState, Plan, RunError, RunOptions, Shard,
    StoredCells,
};
