//! One integration-test binary (faster to link than one per file), a module per area.

mod architecture;
mod audit;
mod cli;
mod count_tokens;
mod docs;
mod edit_recall;
mod golden;
mod grader_labels;
mod hand_written_probes;
mod probe_snapshots;
mod probes;
mod properties;
mod raw_sessions;
mod reliability;
mod replay;
mod report;
mod strategies;
mod support;
mod upstream;
mod view;
