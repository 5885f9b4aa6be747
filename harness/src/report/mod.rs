//! Reports: aggregation of a run's stored cells, tables, Markdown, plots, and the regression gate.

pub mod plots;
