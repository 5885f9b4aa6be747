//! The command line: one clap definition drives parsing and help.

use clap::{Parser, Subcommand};

pub mod bench_split;
pub mod datasets;
pub mod inspect;
pub mod llm;
pub mod report;
pub mod run;

pub use crate::exit::{
    CliError, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INCOMPLETE, EXIT_REGRESSION, EXIT_STATUS_HELP, EXIT_SUCCESS,
};

#[derive(Debug, Parser)]
#[command(
    name = "compactbench",
    version,
    about = "Evaluate and benchmark LLM chat-history compression as coding agents do it",
    after_help = EXIT_STATUS_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay the corpus through a grid of compressors (the main job).
    Run(run::RunArgs),
    /// Print one conversation's compression timeline.
    Replay(run::ReplayArgs),
    /// Join shard run directories into one.
    Merge(run::MergeArgs),
    /// Rebuild results, plots and report.md from a run directory.
    Report(report::ReportArgs),
    /// Compare a run with a baseline: exit 0 pass, 1 regression, 2 unusable input, 4 incomplete.
    Gate(report::GateArgs),
    /// One table across runs of the same strategies on different corpora (one per agent), and the paired
    /// differences against the reference pooled over every run's conversations.
    Compare(report::CompareArgs),
    /// Run the reference's pieces on one history and print them as JSON (the golden vectors' fields).
    Inspect(inspect::InspectArgs),
    /// Manage the embedded model's weights (fetch, path, list).
    #[command(subcommand)]
    Models(llm::ModelsCommand),
    /// Ask a model one question and print the answer.
    Ask(llm::AskArgs),
    /// Import, list, summarise and validate recorded conversations.
    Datasets(datasets::DatasetsArgs),
    /// Time the reference's split point, token estimate and truncation on one history (medians in ms).
    BenchSplit(bench_split::BenchSplitArgs),
    /// Extract, draft and check probe questions stored with the datasets.
    Probes(crate::probes::cli::ProbesArgs),
    /// List the strategies a sweep grid can name, with their knobs and defaults.
    Strategies,
}

/// The clap command, every subcommand's help ending with the exit statuses (one table for all: `exit.rs`).
pub fn command() -> clap::Command {
    fn with_statuses(c: clap::Command) -> clap::Command {
        c.after_help(EXIT_STATUS_HELP).mut_subcommands(with_statuses)
    }
    with_statuses(<Cli as clap::CommandFactory>::command())
}

/// Runs the CLI and returns the process exit status.
pub fn main() -> i32 {
    let parsed = command().try_get_matches().and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_BAD_INPUT } else { 0 };
        }
    };
    match run(cli) {
        Ok(()) => EXIT_SUCCESS,
        // The reader went away (`… | head`): nothing left to say to anyone.
        Err(e) if is_broken_pipe(&e) => EXIT_SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit_status(&e)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// The one mapping of typed errors to the documented exit statuses (see [`crate::exit`]).
pub fn exit_status(e: &anyhow::Error) -> i32 {
    use crate::llm::LlmError;
    use crate::sweep::runner::RunError;
    if let Some(c) = e.downcast_ref::<CliError>() {
        return c.status;
    }
    let run_error = |r: &RunError| match r {
        RunError::Io(_) | RunError::Write(_) | RunError::Locked { .. } | RunError::Panicked(_) => EXIT_FAILURE,
        _ => EXIT_BAD_INPUT,
    };
    if let Some(r) = e.downcast_ref::<RunError>() {
        return run_error(r);
    }
    if let Some(r) = e.downcast_ref::<crate::report::ReportError>() {
        use crate::report::ReportError;
        return match r {
            ReportError::Plan(r) => run_error(r),
            ReportError::Aggregate { .. } => EXIT_BAD_INPUT,
            ReportError::Results { .. } | ReportError::Write(_) => EXIT_FAILURE,
        };
    }
    if let Some(l) = e.downcast_ref::<LlmError>() {
        return match l {
            LlmError::Config(_) | LlmError::ContextOverflow { .. } => EXIT_BAD_INPUT,
            _ => EXIT_FAILURE,
        };
    }
    if e.downcast_ref::<crate::datasets::DatasetError>().is_some() {
        return EXIT_BAD_INPUT;
    }
    if e.downcast_ref::<crate::sweep::config::ConfigError>().is_some()
        || e.downcast_ref::<crate::report::gate::GateError>().is_some()
    {
        return EXIT_BAD_INPUT;
    }
    EXIT_FAILURE
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Replay(args) => run::replay_one(args),
        Command::Merge(args) => run::merge(args),
        Command::Report(args) => report::run_report(args),
        Command::Gate(args) => report::run_gate(args),
        Command::Compare(args) => report::run_compare(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Models(cmd) => llm::run_models(cmd),
        Command::Ask(args) => llm::run_ask(args),
        Command::Datasets(args) => datasets::run(args),
        Command::BenchSplit(args) => bench_split::run(args),
        Command::Probes(args) => crate::probes::cli::run(args),
        Command::Strategies => {
            print!("{}", crate::replay::registry::describe());
            Ok(())
        }
    }
}
