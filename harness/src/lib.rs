//! compactbench: evaluate and benchmark LLM chat-history compression ("compaction") as coding agents do it.
//!
//! The workspace follows the pipeline, one crate per concern:
//! - `compactbench-core`: [`json`] and [`history`] (the data model), [`tokens`] and [`model_tables`], [`compress`]
//!   (the reference port and its variants), the model interface, [`replay`] and [`inspect`];
//! - `compactbench-datasets`: [`datasets`] (importers and the shipped corpus);
//! - `compactbench-llm`: [`llm`] (backends behind one trait with a record/replay cache);
//! - this crate: [`data`] (a run as stored), [`probes`], [`rework`], [`metrics`], [`verdict`] (the gate, the
//!   claims' verdicts, the grader against its labels), [`sweep`], [`report`] (polars, plotters), [`view`] (the
//!   HTML page of a run), [`audit`] (a user's own sessions, no config) and the [`cli`].
//!
//! The lower crates are re-exported under their module names, so `compactbench::replay::…` and
//! `compactbench::datasets::…` name the same items as the crates themselves.

pub use compactbench_core::{compress, fsutil, history, inspect, json, model_tables, replay, tokens};
pub use compactbench_datasets as datasets;
pub use compactbench_llm as llm;

pub mod audit;
pub mod cli;
pub mod data;
pub mod exit;
pub mod metrics;
pub mod pricing;
pub mod probes;
pub mod report;
pub mod rework;
pub mod stats;
pub mod sweep;
pub mod table;
pub mod verdict;
pub mod view;
