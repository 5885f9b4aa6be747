//! compactbench: evaluate and benchmark LLM chat-history compression ("compaction") as coding agents do it.
//!
//! The crate follows the pipeline: [`json`] and [`history`] (the data model), [`tokens`] and [`models`]
//! (counting and model tables), [`compress`] (the reference port and other strategies), [`llm`] (models
//! behind one trait with a record/replay cache), [`datasets`] (importers and the shipped corpus), then
//! replay, probes, sweeps and reports. Algorithms are pure functions over data; files, network and clocks
//! stay in the CLI and backend edges.

pub mod cli;
pub mod compress;
pub mod datasets;
pub mod history;
pub mod inspect;
pub mod json;
pub mod llm;
pub mod metrics;
pub mod models;
mod named;
pub mod probes;
pub mod replay;
pub mod report;
pub mod sweep;
pub mod tokens;
