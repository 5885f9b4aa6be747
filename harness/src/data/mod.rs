//! The data of a run, as stored: the plan (`plan.json`), the cells (`cells/<point>/<conversation>.json`)
//! and the probe results they carry, and `store`, which reads a run directory (the plan, the cells
//! verified). A low module: the sweep writes these types, probes, metrics, the report and the view read
//! them, and nothing here imports any of those (the architecture test checks it).

pub mod cell;
pub mod plan;
pub mod probe_results;
pub mod store;

pub use cell::CellResult;
pub use plan::{Cell, ConfigPoint, Plan, PlannedConversation, ProbesConfig};
pub use probe_results::{
    ActionGrade, AnswerGrade, AnswerResult, Checkpoint, InjectionResult, KeptBy, Lint, LintKind, NextAction, ProbeKind,
    ProbeOrigin, ProbeResults, ProbeScore,
};
