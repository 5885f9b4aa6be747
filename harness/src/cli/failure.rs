//! Why a command failed: one enum over every error the subcommands return, and the one mapping of it to
//! the exit statuses of [`crate::exit`]. The match in [`Failure::exit_code`] names every variant of every
//! wrapped error, so a new variant anywhere is a compile error until it is given a status.

use crate::audit::AuditError;
use crate::compress::CompressError;
use crate::data::store::StoreError;
use crate::datasets::manifest::ManifestError;
use crate::datasets::DatasetError;
use crate::exit::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INCOMPLETE, EXIT_REGRESSION};
use crate::fsutil::WriteError;
use crate::history::LoadError;
use crate::llm::LlmError;
use crate::probes::ProbeError;
use crate::replay::StrategyError;
use crate::report::ReportError;
use crate::sweep::config::ConfigError;
use crate::sweep::error::RunError;
use crate::verdict::gate::GateError;
use crate::view::ViewError;
use std::path::PathBuf;

/// A failed command. Library errors keep their type, so the status follows their kind; the variants that
/// fix a status whatever the kind say so (the command, not the error, decides there).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Bad input the CLI itself found (a flag out of range, nothing to do, files that failed to load).
    #[error("{0}")]
    BadInput(String),
    /// A failure the CLI itself found (conversations that could not be written).
    #[error("{0}")]
    Failed(String),
    /// Results are incomplete: cells failed, or are missing or damaged.
    #[error("{0}")]
    Incomplete(String),
    /// `gate` found regressions.
    #[error("{0}")]
    Regression(String),

    #[error(transparent)]
    Run(#[from] RunError),
    /// A run directory whose plan cannot be read (`report`, `merge`).
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    Gate(#[from] GateError),
    /// `view` could not write its page.
    #[error(transparent)]
    View(#[from] ViewError),
    /// `audit` found no sessions to audit, or could not list a directory.
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A config's grid names an unknown strategy or refuses its knobs.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// A model's answer (`ask`).
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A probe file that cannot be read or is invalid.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// A `Content[]` history file that cannot be read or has the wrong shape.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// An input file that cannot be read.
    #[error("{}: cannot read: {source}", .path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// An output file that cannot be written.
    #[error(transparent)]
    Write(#[from] WriteError),

    /// A model spec (flag or config key) that cannot be built: bad input, whatever the error.
    #[error(transparent)]
    ModelSpec(LlmError),
    /// The embedded model's weights could not be fetched: a failure, whatever the error.
    #[error(transparent)]
    ModelFetch(LlmError),
    /// A model call drafting probes failed: a failure, whatever the error.
    #[error("{conversation}: {source}")]
    Drafting { conversation: String, source: LlmError },
    /// `inspect` refused the history or its flags: bad input, whatever the error.
    #[error("{}: {source}", .history.display())]
    Inspect { history: PathBuf, source: CompressError },
    /// The manifest of freshly imported conversations could not be written: a failure, whatever the
    /// error (the same error from `datasets manifest` is bad input).
    #[error(transparent)]
    ImportManifest(DatasetError),

    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot create a temp dir: {0}")]
    TempDir(#[source] std::io::Error),
    /// Writing to standard output failed; a reader that went away ([`Failure::is_broken_pipe`]) is no error.
    #[error("{0}")]
    Stdout(#[source] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Toml(#[from] toml::ser::Error),

    /// `source` said where: `CONTEXT: SOURCE`, with the status of `source`.
    #[error("{context}: {source}")]
    Context { context: String, source: Box<Failure> },
}

impl Failure {
    /// `self` prefixed with `context` (a file, a flag, a config key), keeping its status.
    pub fn context(self, context: impl Into<String>) -> Failure {
        Failure::Context { context: context.into(), source: Box::new(self) }
    }

    /// The documented exit status ([`crate::exit`]).
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::BadInput(_) => EXIT_BAD_INPUT,
            Failure::Failed(_) => EXIT_FAILURE,
            Failure::Incomplete(_) => EXIT_INCOMPLETE,
            Failure::Regression(_) => EXIT_REGRESSION,
            Failure::Run(e) => run_code(e),
            Failure::Store(e) => store_code(e),
            Failure::Report(e) => match e {
                ReportError::Plan(r) => store_code(r),
                ReportError::Aggregate { .. } | ReportError::Findings(_) => EXIT_BAD_INPUT,
                ReportError::Results { .. } | ReportError::Write(_) => EXIT_FAILURE,
            },
            // The gate refuses runs it cannot read or pair with 2, however the plan failed to load.
            Failure::Gate(e) => match e {
                GateError::Rules { .. } | GateError::Plan(_) => EXIT_BAD_INPUT,
            },
            Failure::View(e) => match e {
                ViewError::Plan(r) => store_code(r),
                ViewError::Gate(GateError::Rules { .. } | GateError::Plan(_)) | ViewError::NothingInCommon { .. } => {
                    EXIT_BAD_INPUT
                }
                ViewError::Encode { .. } | ViewError::Write(_) => EXIT_FAILURE,
            },
            Failure::Audit(e) => match e {
                AuditError::NoSessions { .. } => EXIT_BAD_INPUT,
                AuditError::Dataset(DatasetError::Io { .. } | DatasetError::Invalid { .. }) => EXIT_BAD_INPUT,
            },
            Failure::Config(e) => match e {
                ConfigError::Io { .. } | ConfigError::Invalid { .. } => EXIT_BAD_INPUT,
            },
            // Returned while a config's points are expanded, never from a replay.
            Failure::Strategy(e) => match e {
                StrategyError::Compress(_)
                | StrategyError::Llm(_)
                | StrategyError::Unknown { .. }
                | StrategyError::Duplicate { .. }
                | StrategyError::Knob { .. }
                | StrategyError::Params { .. }
                | StrategyError::Failed { .. } => EXIT_BAD_INPUT,
            },
            Failure::Llm(e) => match e {
                LlmError::Config(_) | LlmError::CacheMiss { .. } | LlmError::ContextOverflow { .. } => EXIT_BAD_INPUT,
                LlmError::Http { .. }
                | LlmError::RateLimited { .. }
                | LlmError::Timeout { .. }
                | LlmError::Transport(_)
                | LlmError::Malformed(_)
                | LlmError::TooLarge { .. }
                | LlmError::RetriesExhausted { .. }
                | LlmError::CacheCorrupt { .. }
                | LlmError::Other(_) => EXIT_FAILURE,
            },
            Failure::Dataset(e) => match e {
                DatasetError::Io { .. } | DatasetError::Invalid { .. } => EXIT_BAD_INPUT,
            },
            Failure::Manifest(e) => match e {
                ManifestError::Read { .. } | ManifestError::Field { .. } | ManifestError::Checksum { .. } => {
                    EXIT_BAD_INPUT
                }
                ManifestError::Git { .. } | ManifestError::Write { .. } => EXIT_FAILURE,
            },
            Failure::Probe(e) => match e {
                ProbeError::Io { .. } | ProbeError::Invalid { .. } => EXIT_BAD_INPUT,
            },
            Failure::Load(e) => match e {
                LoadError::Io { .. } | LoadError::Json { .. } | LoadError::Shape { .. } => EXIT_BAD_INPUT,
            },
            Failure::Read { .. } => EXIT_BAD_INPUT,
            Failure::Write(_) => EXIT_FAILURE,
            Failure::ModelSpec(_) => EXIT_BAD_INPUT,
            Failure::ModelFetch(_) | Failure::Drafting { .. } => EXIT_FAILURE,
            Failure::Inspect { .. } => EXIT_BAD_INPUT,
            Failure::ImportManifest(_) => EXIT_FAILURE,
            Failure::Runtime(_) | Failure::TempDir(_) | Failure::Stdout(_) | Failure::Json(_) | Failure::Toml(_) => {
                EXIT_FAILURE
            }
            Failure::Context { source, .. } => source.exit_code(),
        }
    }

    /// The reader of standard output went away (`… | head`): nothing is left to say to anyone.
    pub fn is_broken_pipe(&self) -> bool {
        match self {
            Failure::Stdout(e) => e.kind() == std::io::ErrorKind::BrokenPipe,
            Failure::Context { source, .. } => source.is_broken_pipe(),
            _ => false,
        }
    }
}

/// A run's own failures (I/O, a lock, a panic) are 3; a config, corpus or run directory it refuses is 2.
fn run_code(e: &RunError) -> i32 {
    match e {
        RunError::Io(_) | RunError::Write(_) | RunError::Locked { .. } | RunError::Panicked(_) => EXIT_FAILURE,
        RunError::Store(e) => store_code(e),
        RunError::Config(_)
        | RunError::Grid(_)
        | RunError::Dataset(_)
        | RunError::TooLarge(_)
        | RunError::PlanMismatch { .. }
        | RunError::ShardsDiffer { .. }
        | RunError::NoShards
        | RunError::BadOption(_) => EXIT_BAD_INPUT,
    }
}

/// A run directory whose plan cannot be used is 2; a cell that cannot be serialised is 3.
fn store_code(e: &StoreError) -> i32 {
    match e {
        StoreError::BadPlan { .. } | StoreError::TooLarge(_) => EXIT_BAD_INPUT,
        StoreError::Encode(_) => EXIT_FAILURE,
    }
}

/// Writes one line to stdout and returns the write error instead of panicking as `println!` does, so a
/// closed pipe (`compactbench inspect … | head -c 10`) ends the command quietly (see `cli::main`).
pub fn write_stdout_line(args: std::fmt::Arguments) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(args).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush()).map_err(Failure::Stdout)
}

/// `println!` that returns `Result<(), Failure>` (use with `?`).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::failure::write_stdout_line(format_args!($($arg)*)) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::plan::PlanTooLarge;
    use crate::exit::EXIT_SUCCESS;
    use std::io::{Error as IoError, ErrorKind};

    fn io() -> IoError {
        IoError::other("disk on fire")
    }

    fn write_error() -> WriteError {
        WriteError { path: "out/x.json".into(), source: io() }
    }

    fn polars() -> polars::error::PolarsError {
        polars::error::PolarsError::ComputeError("no such column".into())
    }

    /// The top-level variant's name; exhaustive, so a new variant fails to compile here until the table
    /// below has a row for it.
    fn variant(f: &Failure) -> &'static str {
        match f {
            Failure::BadInput(_) => "BadInput",
            Failure::Failed(_) => "Failed",
            Failure::Incomplete(_) => "Incomplete",
            Failure::Regression(_) => "Regression",
            Failure::Run(_) => "Run",
            Failure::Store(_) => "Store",
            Failure::Report(_) => "Report",
            Failure::Gate(_) => "Gate",
            Failure::View(_) => "View",
            Failure::Audit(_) => "Audit",
            Failure::Config(_) => "Config",
            Failure::Strategy(_) => "Strategy",
            Failure::Llm(_) => "Llm",
            Failure::Dataset(_) => "Dataset",
            Failure::Manifest(_) => "Manifest",
            Failure::Probe(_) => "Probe",
            Failure::Load(_) => "Load",
            Failure::Read { .. } => "Read",
            Failure::Write(_) => "Write",
            Failure::ModelSpec(_) => "ModelSpec",
            Failure::ModelFetch(_) => "ModelFetch",
            Failure::Drafting { .. } => "Drafting",
            Failure::Inspect { .. } => "Inspect",
            Failure::ImportManifest(_) => "ImportManifest",
            Failure::Runtime(_) => "Runtime",
            Failure::TempDir(_) => "TempDir",
            Failure::Stdout(_) => "Stdout",
            Failure::Json(_) => "Json",
            Failure::Toml(_) => "Toml",
            Failure::Context { .. } => "Context",
        }
    }

    /// Every variant, and every variant of the errors they wrap, with its documented status.
    fn table() -> Vec<(Failure, i32)> {
        let (bad, fail) = (EXIT_BAD_INPUT, EXIT_FAILURE);
        let too_large = || PlanTooLarge { cells: 1 << 40, points: 1, conversations: 1, repeats: 1, limit: 1 };
        let store_errors = || -> Vec<(StoreError, i32)> {
            vec![
                (StoreError::BadPlan { path: "r".into(), reason: "damaged".into() }, bad),
                (StoreError::TooLarge(too_large()), bad),
                (StoreError::Encode("not serialisable".into()), fail),
            ]
        };
        let run_errors = || -> Vec<(RunError, i32)> {
            let mut rows = vec![
                (RunError::Config("no datasets".into()), bad),
                (RunError::Grid(StrategyError::Unknown { name: "x".into(), known: "none".into() }), bad),
                (RunError::Dataset(DatasetError::whole("a.json", "empty")), bad),
                (RunError::TooLarge(too_large()), bad),
                (RunError::PlanMismatch { path: "r".into() }, bad),
                (RunError::Io(io()), fail),
                (RunError::Write(write_error()), fail),
                (RunError::Locked { path: "r".into(), holder: "pid 1".into() }, fail),
                (RunError::Panicked("boom".into()), fail),
                (RunError::ShardsDiffer { shard: "a".into(), first: "b".into() }, bad),
                (RunError::NoShards, bad),
                (RunError::BadOption("--shard 3/2".into()), bad),
            ];
            rows.extend(store_errors().into_iter().map(|(e, code)| (RunError::Store(e), code)));
            rows
        };
        let llm_errors = || -> Vec<(LlmError, i32)> {
            vec![
                (LlmError::ContextOverflow { prompt_tokens: 9, context: 8 }, bad),
                (LlmError::Http { status: 500, body: String::new() }, fail),
                (LlmError::RateLimited { status: 429, retry_after_ms: 1, body: String::new() }, fail),
                (LlmError::Timeout { seconds: 1 }, fail),
                (LlmError::Transport("reset".into()), fail),
                (LlmError::Malformed("{".into()), fail),
                (LlmError::TooLarge { limit: 1 }, fail),
                (LlmError::RetriesExhausted { attempts: 3, last: "500".into() }, fail),
                (LlmError::CacheMiss { hash: "h".into(), description: "d".into() }, bad),
                (LlmError::CacheCorrupt { path: "p".into(), reason: "r".into() }, fail),
                (LlmError::Config("no key".into()), bad),
                (LlmError::Other("?".into()), fail),
            ]
        };
        let strategy = |e: StrategyError| (Failure::Strategy(e), bad);
        let mut rows = vec![
            (Failure::BadInput("x".into()), bad),
            (Failure::Failed("x".into()), fail),
            (Failure::Incomplete("x".into()), EXIT_INCOMPLETE),
            (Failure::Audit(AuditError::NoSessions { dir: "d".into(), looked: 0 }), bad),
            (Failure::Audit(AuditError::Dataset(DatasetError::whole("d", "cannot list"))), bad),
            (Failure::Regression("x".into()), EXIT_REGRESSION),
            (Failure::Report(ReportError::Aggregate { run_dir: "r".into(), source: polars() }), bad),
            (Failure::Report(ReportError::Results { path: "r".into(), source: polars() }), fail),
            (Failure::Report(ReportError::Write(write_error())), fail),
            (
                Failure::Report(ReportError::Findings(crate::report::findings_page::FindingsError {
                    path: "reports/findings.toml".into(),
                    message: "bad".into(),
                })),
                bad,
            ),
            (Failure::Gate(GateError::Rules { path: "g.toml".into(), message: "bad".into() }), bad),
            (Failure::View(ViewError::Gate(GateError::Rules { path: "g.toml".into(), message: "bad".into() })), bad),
            (Failure::View(ViewError::NothingInCommon { current: "a".into(), baseline: "b".into() }), bad),
            (Failure::View(ViewError::Encode { path: "v.html".into(), source: io() }), fail),
            (Failure::View(ViewError::Write(write_error())), fail),
            (Failure::Config(ConfigError::Io { file: "c.toml".into(), source: io() }), bad),
            (Failure::Config(ConfigError::Invalid { file: "c.toml".into(), message: "bad".into() }), bad),
            strategy(StrategyError::Compress(CompressError::Fraction(crate::compress::split::FractionError))),
            strategy(StrategyError::Llm(LlmError::Timeout { seconds: 1 })),
            strategy(StrategyError::Unknown { name: "x".into(), known: "none".into() }),
            strategy(StrategyError::Duplicate { strategy: "x".into() }),
            strategy(StrategyError::Knob { strategy: "x".into(), knob: "k".into(), message: "m".into() }),
            strategy(StrategyError::Params { strategy: "x".into(), message: "m".into() }),
            strategy(StrategyError::Failed { strategy: "x".into(), message: "m".into() }),
            (Failure::Dataset(DatasetError::io("a.json", io())), bad),
            (Failure::Dataset(DatasetError::whole("a.json", "empty")), bad),
            (Failure::Manifest(ManifestError::Read { path: "m".into(), message: "m".into() }), bad),
            (
                Failure::Manifest(ManifestError::Field { manifest: "m".into(), name: "n".into(), message: "m".into() }),
                bad,
            ),
            (
                Failure::Manifest(ManifestError::Checksum {
                    name: "n".into(),
                    expected: "a".into(),
                    actual: "b".into(),
                }),
                bad,
            ),
            (Failure::Manifest(ManifestError::Git { args: "fetch".into(), message: "down".into() }), fail),
            (Failure::Manifest(ManifestError::Write { path: "m".into(), source: io() }), fail),
            (Failure::Probe(ProbeError::Io { file: "p.json".into(), source: io() }), bad),
            (Failure::Probe(ProbeError::Invalid { file: "p".into(), path: "$".into(), message: "m".into() }), bad),
            (Failure::Load(LoadError::Io { file: "h.json".into(), source: io() }), bad),
            (
                Failure::Load(LoadError::Json {
                    file: "h.json".into(),
                    source: crate::json::ParseError { line: 1, column: 2, path: "$".into(), message: "m".into() },
                }),
                bad,
            ),
            (
                Failure::Load(LoadError::Shape {
                    file: "h.json".into(),
                    source: crate::history::ShapeError { path: "$".into(), message: "m".into() },
                }),
                bad,
            ),
            (Failure::Read { path: "c.toml".into(), source: io() }, bad),
            (Failure::Write(write_error()), fail),
            (Failure::ModelSpec(LlmError::Other("?".into())), bad),
            (Failure::ModelFetch(LlmError::Config("no dir".into())), fail),
            (
                Failure::Drafting {
                    conversation: "c".into(),
                    source: LlmError::ContextOverflow { prompt_tokens: 9, context: 8 },
                },
                fail,
            ),
            (
                Failure::Inspect {
                    history: "h.json".into(),
                    source: CompressError::Llm(LlmError::Timeout { seconds: 1 }),
                },
                bad,
            ),
            (Failure::ImportManifest(DatasetError::whole("a.json", "empty")), fail),
            (Failure::Runtime(io()), fail),
            (Failure::TempDir(io()), fail),
            (Failure::Stdout(io()), fail),
            (Failure::Json(serde_json::from_str::<u8>("x").unwrap_err()), fail),
            (Failure::Toml(<toml::ser::Error as serde::ser::Error>::custom("x")), fail),
            (Failure::Regression("x".into()).context("gate"), EXIT_REGRESSION),
            (Failure::Manifest(ManifestError::Git { args: "a".into(), message: "m".into() }).context("m.toml"), fail),
        ];
        for (e, code) in run_errors() {
            rows.push((Failure::Run(e), code));
        }
        for (e, code) in store_errors() {
            rows.push((Failure::Store(e), code));
        }
        // A report that cannot read its run's plan fails as the run would; the gate refuses it with 2.
        for (e, code) in store_errors() {
            rows.push((Failure::Report(ReportError::Plan(e)), code));
        }
        for (e, _) in store_errors() {
            rows.push((Failure::Gate(GateError::Plan(e)), bad));
        }
        // A page of a run whose plan cannot be read fails as the run would; `--compare` refuses it with 2.
        for (e, code) in store_errors() {
            rows.push((Failure::View(ViewError::Plan(e)), code));
        }
        for (e, _) in store_errors() {
            rows.push((Failure::View(ViewError::Gate(GateError::Plan(e))), bad));
        }
        for (e, code) in llm_errors() {
            rows.push((Failure::Llm(e), code));
        }
        rows
    }

    #[test]
    fn every_failure_maps_to_its_documented_status() {
        let rows = table();
        for (f, code) in &rows {
            assert_eq!(f.exit_code(), *code, "{}: {f}", variant(f));
            assert_ne!(f.exit_code(), EXIT_SUCCESS);
        }
        let covered: std::collections::BTreeSet<&str> = rows.iter().map(|(f, _)| variant(f)).collect();
        assert_eq!(covered.len(), 30, "a variant without a row: {covered:?}");
    }

    #[test]
    fn context_keeps_the_message_and_takes_the_status_of_its_source() {
        // As `fetch` printed it before (`{manifest}: {error}`), status by the error's kind.
        let git = ManifestError::Git { args: "fetch origin".into(), message: "unreachable".into() };
        let f = Failure::Manifest(git).context("datasets/manifests/x.toml");
        assert_eq!(f.to_string(), "datasets/manifests/x.toml: git fetch origin: unreachable");
        assert_eq!(f.exit_code(), EXIT_FAILURE);
        let sum = ManifestError::Checksum { name: "a.jsonl".into(), expected: "01".into(), actual: "02".into() };
        let f = Failure::Manifest(sum).context("x.toml");
        assert!(f.to_string().starts_with("x.toml: a.jsonl: sha256 02, the manifest says 01: refused"), "{f}");
        assert_eq!(f.exit_code(), EXIT_BAD_INPUT);
        // As `gate` printed an unwritable JUnit file.
        let f = Failure::Write(write_error()).context("the JUnit report");
        assert_eq!(f.to_string(), "the JUnit report: out/x.json: cannot write: disk on fire");
        assert_eq!(f.exit_code(), EXIT_FAILURE);
        // Contexts nest outermost first; a cause already in the message is not repeated.
        let f = Failure::ModelSpec(LlmError::Config("unknown backend `x`".into())).context("key `replay.tokenizer`");
        assert_eq!(f.to_string(), "key `replay.tokenizer`: configuration error: unknown backend `x`");
        assert_eq!(
            f.context("c.toml").to_string(),
            "c.toml: key `replay.tokenizer`: configuration error: unknown backend `x`"
        );
    }

    #[test]
    fn only_a_closed_stdout_is_a_quiet_end() {
        let pipe = || IoError::new(ErrorKind::BrokenPipe, "gone");
        assert!(Failure::Stdout(pipe()).is_broken_pipe());
        assert!(Failure::Stdout(pipe()).context("list").is_broken_pipe());
        assert!(!Failure::Stdout(io()).is_broken_pipe());
        assert!(!Failure::Read { path: "fifo".into(), source: pipe() }.is_broken_pipe());
    }
}
