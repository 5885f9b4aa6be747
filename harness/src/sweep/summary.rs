//! The run's summary table (per config point), printed after `run` and rebuilt from stored cells.
