//! The command line: one clap definition drives parsing and help.

use clap::{Parser, Subcommand};

pub mod bench_split;
pub mod datasets;
pub mod inspect;
pub mod llm;
pub mod report;
pub mod run;

/// Exit status for bad input (unreadable file, wrong shape, bad flag value).
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit status for a failed run or a detected regression.
pub const EXIT_FAILURE: i32 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "compactbench",
    version,
    about = "Evaluate and benchmark LLM chat-history compression as coding agents do it"
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
    /// Compare a run with a baseline: exit 0 pass, 1 regression, 2 unusable input.
    Gate(report::GateArgs),
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
}

/// Runs the CLI and returns the process exit status.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_BAD_INPUT } else { 0 };
        }
    };
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            let status = e.downcast_ref::<CliError>().map(|c| c.status).unwrap_or(EXIT_FAILURE);
            eprintln!("error: {e:#}");
            status
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Replay(args) => run::replay_one(args),
        Command::Merge(args) => run::merge(args),
        Command::Report(args) => report::run_report(args),
        Command::Gate(args) => report::run_gate(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Models(cmd) => llm::run_models(cmd),
        Command::Ask(args) => llm::run_ask(args),
        Command::Datasets(args) => datasets::run(args),
        Command::BenchSplit(args) => bench_split::run(args),
        Command::Probes(args) => crate::probes::cli::run(args),
        Command::Strategies => {
            print!("{}", crate::replay::strategy::describe());
            Ok(())
        }
    }
}
