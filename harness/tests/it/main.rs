//! One integration-test binary (faster to link than one per file), a module per area.

mod golden;
mod support;
