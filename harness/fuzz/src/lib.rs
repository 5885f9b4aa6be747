//! The importers compiled alone for fuzzing. Depending on `compactbench` itself would rebuild polars,
//! candle and tokenizers with sanitizer instrumentation (tens of minutes on a small machine) for code
//! the importers never call, so this crate compiles the same source files through `#[path]`.

#[path = "../../src/json/mod.rs"]
pub mod json;

#[path = "../../src/history.rs"]
pub mod history;

#[path = "datasets.rs"]
pub mod datasets;
