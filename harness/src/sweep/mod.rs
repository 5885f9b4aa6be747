//! Sweeps: a grid of compressor settings over a corpus, run as resumable, shardable cells.

pub mod config;
pub mod error;
pub mod models;
pub mod planner;
pub mod runner;
pub mod store;

pub use crate::data::{Cell, CellResult, ConfigPoint, Plan};
pub use config::SweepConfig;
pub use runner::{collect, load_cells, make_plan, merge, run, CellState, RunError, RunOptions, Shard, StoredCells};
