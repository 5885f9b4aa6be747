//! Exit statuses of the `compactbench` binary. A leaf module: it imports nothing from the crate. The
//! subcommands live in `cli/` (one file per area: `cli::run`, `cli::datasets`, `cli::llm`, `cli::probes`,
//! …) and return `cli::Failure`, whose `exit_code` is the one mapping of typed errors to these statuses.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | `gate`: a regression beyond the tolerance; `findings --check`: a stale page |
//! | 2 | bad input: unreadable or invalid file, config or flag; runs that cannot be compared |
//! | 3 | I/O or model failure: a write failed, a model could not answer, a run directory is locked |
//! | 4 | incomplete: cells failed or are missing or damaged (`run`, `report`, `merge`, `gate`) |

/// Everything went as asked.
pub const EXIT_SUCCESS: i32 = 0;
/// `gate` found a regression.
pub const EXIT_REGRESSION: i32 = 1;
/// Bad input (unreadable file, wrong shape, bad flag or config value, runs that cannot be compared).
pub const EXIT_BAD_INPUT: i32 = 2;
/// An I/O or model failure (a write failed, a model call failed, the run directory is locked).
pub const EXIT_FAILURE: i32 = 3;
/// Results are incomplete: cells failed, or are missing or damaged.
pub const EXIT_INCOMPLETE: i32 = 4;

/// The exit-status table as shown in `--help`.
pub const EXIT_STATUS_HELP: &str =
    "Exit status: 0 success; 1 regression (gate) or stale page (findings --check); 2 bad input (file, config, flag, \
runs that cannot be compared); 3 I/O or model failure (also a locked run directory); 4 incomplete results \
(failed, missing or damaged cells).";
