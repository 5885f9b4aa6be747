//! Handlers of the `models` and `ask` subcommands.

use super::Failure;
use crate::history;
use crate::llm::local::{self, EMBEDDED_MODELS};
use crate::llm::{
    from_spec, BackendOptions, CacheMode, GenerationParams, LlmRequest, RequestLabel, DEFAULT_MODEL_SPEC,
};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download and unpack the embedded model's weights (verified by sha256).
    Fetch {
        #[command(flatten)]
        dir: ModelDirArg,
        /// Download again even when a valid file is present.
        #[arg(long)]
        force: bool,
    },
    /// Print the path of the embedded model file.
    Path {
        #[command(flatten)]
        dir: ModelDirArg,
    },
    /// List the embedded models and whether they are present.
    List {
        #[command(flatten)]
        dir: ModelDirArg,
    },
}

#[derive(Debug, Args)]
pub struct ModelDirArg {
    /// Model directory (default: $COMPACTBENCH_MODEL_DIR, else ./models).
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
}

impl ModelDirArg {
    fn resolve(&self) -> PathBuf {
        self.model_dir.clone().unwrap_or_else(local::default_model_dir)
    }
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// Model spec: local:smollm2-135m, gemini:<model>, openai:<model>@<base-url>, extractive.
    #[arg(long, default_value = DEFAULT_MODEL_SPEC)]
    pub model: String,
    /// System instruction.
    #[arg(long)]
    pub system: Option<String>,
    /// Largest number of tokens to generate.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature (the embedded model decodes greedily whatever the value).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Stop string (repeatable).
    #[arg(long)]
    pub stop: Vec<String>,
    /// Record/replay cache directory (no cache when absent).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Cache mode: read-write, replay or off.
    #[arg(long, default_value = "read-write")]
    pub cache: CacheMode,
    #[command(flatten)]
    pub dir: ModelDirArg,
    /// Threads for the embedded model.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Per-attempt timeout in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Print token usage and speed on stderr.
    #[arg(long)]
    pub stats: bool,
    /// Ask the same question N times in a row (for speed measurements; with --stats).
    #[arg(long, default_value_t = 1, hide = true)]
    pub repeat: u32,
    /// The question (the user turn).
    pub question: String,
}

pub fn run_models(cmd: ModelsCommand) -> Result<(), Failure> {
    let info = &EMBEDDED_MODELS[0];
    match cmd {
        ModelsCommand::Fetch { dir, force } => {
            let report = local::fetch_model(info, &dir.resolve(), force).map_err(Failure::ModelFetch)?;
            if !report.downloaded {
                eprintln!("compactbench: model already present and verified");
            }
            crate::outln!("{}", report.path.display())?;
        }
        ModelsCommand::Path { dir } => crate::outln!("{}", local::model_path(info, &dir.resolve()).display())?,
        ModelsCommand::List { dir } => {
            let dir = dir.resolve();
            for m in EMBEDDED_MODELS {
                let path = local::model_path(m, &dir);
                let state = if path.is_file() { "present" } else { "not fetched" };
                crate::outln!("local:{}\t{state}\t{}\t{}", m.name, path.display(), m.description)?;
            }
        }
    }
    Ok(())
}

pub fn run_ask(args: AskArgs) -> Result<(), Failure> {
    if let Some(n) = args.threads {
        // candle reads its thread count once, from the environment; set it while the process is still
        // single-threaded.
        for var in ["CANDLE_NUM_THREADS", "RAYON_NUM_THREADS"] {
            if std::env::var_os(var).is_none() {
                std::env::set_var(var, n.to_string());
            }
        }
    }
    if args.stats {
        // Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
        let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .with_env_filter("compactbench=info")
            .try_init();
    }
    let mut opts = BackendOptions { model_dir: args.dir.resolve(), threads: args.threads, ..Default::default() };
    opts.cache_dir = args.cache_dir.clone();
    opts.cache_mode = args.cache;
    opts.reliability.timeout = Some(Duration::from_secs(args.timeout.max(1)));
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(Failure::Runtime)?;
    let req = LlmRequest {
        system_instruction: args.system.clone(),
        contents: vec![history::user_text(&args.question)],
        params: GenerationParams { max_output_tokens: args.max_tokens, temperature: args.temperature, stop: args.stop },
        label: RequestLabel { prompt_id: "ask".into(), role: "answerer".into(), model_alias: None },
    };
    let answer = runtime.block_on(async {
        let model = from_spec(&args.model, &opts)?;
        let mut answer = model.generate(&req).await;
        for _ in 1..args.repeat {
            answer = model.generate(&req).await;
        }
        answer
    });
    let answer = answer?;
    crate::outln!("{}", answer.text)?;
    if args.stats {
        for (spec, u) in opts.ledger.snapshot() {
            eprintln!(
                "{spec}: calls {} cache hits {} prompt tokens {} output tokens {} retries {} latency {} ms",
                u.calls, u.cache_hits, u.prompt_tokens, u.output_tokens, u.retries, u.latency_ms
            );
        }
    }
    Ok(())
}
