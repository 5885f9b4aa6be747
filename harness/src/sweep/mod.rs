//! Sweeps: a grid of compressor settings over a corpus, run as resumable, shardable cells.

pub mod config;
pub mod runner;
pub mod summary;

pub use config::{ConfigPoint, SweepConfig};
pub use runner::{collect, make_plan, merge, run, Cell, CellResult, Plan, RunOptions, Shard};
