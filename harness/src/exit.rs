//! Exit statuses of the `compactbench` binary and the error that carries one. A leaf module: the CLI code
//! of every area (`cli`, `datasets::cli`, `llm::cli`, `probes::cli`) imports it and it imports none of
//! them. The mapping of typed library errors to these statuses lives in one place, `cli::exit_status`.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | `gate`: a regression beyond the tolerance |
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
pub const EXIT_STATUS_HELP: &str = "Exit status: 0 success; 1 regression (gate); 2 bad input (file, config, flag, \
runs that cannot be compared); 3 I/O or model failure (also a locked run directory); 4 incomplete results \
(failed, missing or damaged cells).";

/// An error that carries its exit status.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CliError {
    pub status: i32,
    pub message: String,
}

impl CliError {
    pub fn bad_input(message: impl Into<String>) -> Self {
        CliError { status: EXIT_BAD_INPUT, message: message.into() }
    }
    pub fn failure(message: impl Into<String>) -> Self {
        CliError { status: EXIT_FAILURE, message: message.into() }
    }
    pub fn incomplete(message: impl Into<String>) -> Self {
        CliError { status: EXIT_INCOMPLETE, message: message.into() }
    }
    pub fn regression(message: impl Into<String>) -> Self {
        CliError { status: EXIT_REGRESSION, message: message.into() }
    }
}

/// Writes one line to stdout and returns the write error instead of panicking as `println!` does, so a
/// closed pipe (`compactbench inspect … | head -c 10`) ends the command quietly (see `cli::main`).
pub fn write_stdout_line(args: std::fmt::Arguments) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// `println!` that returns `std::io::Result<()>` (use with `?`).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => { $crate::exit::write_stdout_line(format_args!($($arg)*)) };
}
