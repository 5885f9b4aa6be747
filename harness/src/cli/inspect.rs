//! `compactbench inspect HISTORY.json`.

use super::Failure;
use crate::compress::{FsToolOutputStore, MemoryToolOutputStore, ToolOutputStore};
use crate::history;
use crate::inspect::{inspect, InspectCompress, InspectOptions};
use crate::json;
use clap::Args;
use std::path::PathBuf;

/// Run the reference's split, token estimation and truncation (and optionally `compress` with scripted
/// summaries) on one `Content[]` history; print one JSON object with the golden vectors' field names.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A JSON file holding a Gemini `Content[]` history.
    pub history: PathBuf,
    /// Split fraction for `findCompressSplitPoint` (exclusive range 0..1).
    #[arg(long, default_value_t = 0.7)]
    pub fraction: f64,
    /// Chat model (token limit and summarizer alias).
    #[arg(long, default_value = "gemini-2.5-pro")]
    pub model: String,
    /// `tools.truncateToolOutputThreshold` in characters.
    #[arg(long, default_value_t = 40_000, allow_negative_numbers = true)]
    pub truncate_threshold: i64,
    /// `chat.getLastPromptTokenCount()` (also the UI count that sizes truncation placeholders).
    #[arg(long, default_value_t = 0)]
    pub last_prompt_tokens: u64,
    /// Where truncated tool outputs are written (`<DIR>/tool-outputs/`). Without it nothing is written and
    /// placeholders name `/tmp/compactbench/tool-outputs/`.
    #[arg(long)]
    pub project_temp_dir: Option<PathBuf>,
    /// Compute placeholder paths under --project-temp-dir without writing files.
    #[arg(long)]
    pub no_write: bool,
    /// Also run `compress` with a scripted summarizer.
    #[arg(long)]
    pub compress: bool,
    /// `/compress` (forced) instead of automatic.
    #[arg(long, requires = "compress")]
    pub force: bool,
    /// A previous non-forced compression failed (`hasFailedCompressionAttempt`).
    #[arg(long, requires = "compress")]
    pub has_failed: bool,
    /// `model.compressionThreshold` (fraction of the token limit; default 0.5).
    #[arg(long, requires = "compress")]
    pub threshold: Option<f64>,
    /// Text the summarizer returns on the first call.
    #[arg(long, conflicts_with = "summary_file")]
    pub summary: Option<String>,
    /// File whose text the summarizer returns on the first call.
    #[arg(long)]
    pub summary_file: Option<PathBuf>,
    /// Text returned on the verification call (absent: same as the summary).
    #[arg(long, conflicts_with = "verify_file")]
    pub verify: Option<String>,
    /// File whose text is returned on the verification call.
    #[arg(long)]
    pub verify_file: Option<PathBuf>,
    /// Text of the environment-context turn counted in the new token count.
    #[arg(long)]
    pub env_text: Option<String>,
    /// Prompt id passed to the compression service (the reference's telemetry id).
    #[arg(long, default_value = "oracle-prompt")]
    pub prompt_id: String,
    /// Pretty-print (2-space indent) instead of compact JSON.
    #[arg(long)]
    pub pretty: bool,
}

fn read_text(path: &PathBuf) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|source| Failure::Read { path: path.clone(), source })
}

pub fn run(args: InspectArgs) -> Result<(), Failure> {
    if !(args.fraction > 0.0 && args.fraction < 1.0) {
        return Err(Failure::BadInput(format!("--fraction {}: Fraction must be between 0 and 1", args.fraction)));
    }
    if let Some(t) = args.threshold.filter(|t| !t.is_finite()) {
        return Err(Failure::BadInput(format!("--threshold {t}: must be a finite number")));
    }
    let history = history::load_history(&args.history)?;
    let summary = match (&args.summary, &args.summary_file) {
        (Some(s), _) => s.clone(),
        (None, Some(f)) => read_text(f)?,
        (None, None) => "<state_snapshot>scripted summary</state_snapshot>".to_string(),
    };
    let verify = match (&args.verify, &args.verify_file) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(f)) => Some(read_text(f)?),
        (None, None) => None,
    };
    let opts = InspectOptions {
        fraction: args.fraction,
        model: args.model.clone(),
        truncate_threshold: args.truncate_threshold,
        last_prompt_tokens: args.last_prompt_tokens,
        compress: args.compress.then(|| InspectCompress {
            force: args.force,
            has_failed: args.has_failed,
            threshold: args.threshold,
            summary,
            verify,
            env_text: args.env_text.clone(),
            prompt_id: args.prompt_id.clone(),
        }),
    };
    let (mut a, mut b): (Box<dyn ToolOutputStore>, Box<dyn ToolOutputStore>) = match &args.project_temp_dir {
        Some(dir) if !args.no_write => {
            (Box::new(FsToolOutputStore::new(dir.clone())), Box::new(FsToolOutputStore::new(dir.clone())))
        }
        Some(dir) => {
            let root = dir.to_string_lossy().into_owned();
            (Box::new(MemoryToolOutputStore::new(root.clone())), Box::new(MemoryToolOutputStore::new(root)))
        }
        None => (
            Box::new(MemoryToolOutputStore::new("/tmp/compactbench")),
            Box::new(MemoryToolOutputStore::new("/tmp/compactbench")),
        ),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(Failure::Runtime)?;
    let report = rt
        .block_on(inspect(&history, &opts, a.as_mut(), b.as_mut()))
        .map_err(|source| Failure::Inspect { history: args.history.clone(), source })?;
    let text = if args.pretty { json::to_string_pretty(&report) } else { json::to_string(&report) };
    crate::outln!("{text}")?;
    Ok(())
}
