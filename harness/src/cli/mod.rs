//! The command line: one clap definition drives parsing and help.

use clap::{Parser, Subcommand};

pub mod audit;
pub mod bench_split;
pub mod datasets;
pub mod failure;
pub mod inspect;
pub mod llm;
pub mod probes;
pub mod report;
pub mod run;
pub mod view;

pub use crate::exit::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INCOMPLETE, EXIT_REGRESSION, EXIT_STATUS_HELP, EXIT_SUCCESS};
pub use failure::Failure;

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
    /// What your agent's own compactions dropped: your session directories read in place, no config
    /// (Claude Code, Codex, Gemini CLI recognised); lists every compaction and writes a page.
    Audit(audit::AuditArgs),
    /// Print one conversation's compression timeline.
    Replay(run::ReplayArgs),
    /// Join shard run directories into one.
    Merge(run::MergeArgs),
    /// Rebuild results, plots and report.md from a run directory.
    Report(report::ReportArgs),
    /// Compare a run with a baseline: exit 0 pass, 1 regression, 2 unusable input, 4 incomplete.
    Gate(report::GateArgs),
    /// Write one self-contained HTML page of a run (points, conversations, each compression beside what it
    /// replaced) and print its path.
    View(view::ViewArgs),
    /// One table across runs of the same strategies on different corpora (one per agent), and the paired
    /// differences against the reference pooled over every run's conversations.
    Compare(report::CompareArgs),
    /// Write the findings page (`reports/FINDINGS.md`) and the README's findings box from the committed runs
    /// a manifest names; `--check` fails (exit 1) when either is stale.
    Findings(report::FindingsArgs),
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
    Probes(probes::ProbesArgs),
    /// List the strategies a sweep grid can name, with their knobs and defaults.
    Strategies,
}

/// The clap command, every subcommand's help ending with the exit statuses (one table for all: `exit.rs`).
pub fn command() -> clap::Command {
    fn with_statuses(c: clap::Command) -> clap::Command {
        c.after_help(EXIT_STATUS_HELP).mut_subcommands(with_statuses)
    }
    let gate_rules = format!(
        "Without --rules, these rules apply (the same as configs/gate.toml). Each is checked per configuration \
         point on the conversations both runs have: a regression is a mean paired change (current − baseline, \
         per conversation) whose 95 % bootstrap interval lies wholly beyond the tolerance on the worse side.\n{}\n\
         {EXIT_STATUS_HELP}",
        crate::verdict::gate::Rules::default().describe()
    );
    with_statuses(<Cli as clap::CommandFactory>::command()).mut_subcommand("gate", |c| c.after_help(gate_rules))
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
        Err(e) if e.is_broken_pipe() => EXIT_SUCCESS,
        Err(e) => {
            // Not the source chain: every message already ends with its cause.
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Replay(args) => run::replay_one(args),
        Command::Merge(args) => run::merge(args),
        Command::Report(args) => report::run_report(args),
        Command::Gate(args) => report::run_gate(args),
        Command::View(args) => view::run(args),
        Command::Compare(args) => report::run_compare(args),
        Command::Findings(args) => report::run_findings(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Models(cmd) => llm::run_models(cmd),
        Command::Ask(args) => llm::run_ask(args),
        Command::Datasets(args) => datasets::run(args),
        Command::BenchSplit(args) => bench_split::run(args),
        Command::Probes(args) => probes::run(args),
        Command::Strategies => {
            print!("{}", crate::replay::registry::describe());
            Ok(())
        }
    }
}
