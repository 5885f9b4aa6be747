//! Sweeps: a grid of compressor settings over a corpus, run as resumable, shardable cells. A finished run
//! is read through `crate::data::store`.

pub mod config;
pub mod error;
pub mod models;
pub mod planner;
pub mod run_dir;
pub mod runner;
pub mod token_counts;
