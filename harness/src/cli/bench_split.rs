//! `compactbench bench-split HISTORY.json [--iterations N] [--json]`: a quick timing of the reference's
//! split point, token estimate and truncation on one history, without criterion. The figures the project
//! quotes come from `cargo bench -p compactbench-benches`; this command is for a history at hand.

use super::Failure;
use crate::compress::truncate::{
    effective_max_chars, COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET, DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD,
};
use crate::compress::{
    find_compress_split_point, truncate_history_to_budget, CompressSettings, FsToolOutputStore, TruncationSettings,
    TruncationVariant,
};
use crate::history::{self, Content};
use crate::tokens::Estimator;
use clap::Args;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Time `findCompressSplitPoint(history, 0.7)`, the current token estimate of all parts and
/// `truncateHistoryToBudget` (writing to a fresh temporary directory each iteration) on one `Content[]`
/// history; print each one's median in milliseconds.
#[derive(Debug, Args)]
pub struct BenchSplitArgs {
    /// A JSON file holding a Gemini `Content[]` history.
    pub history: PathBuf,
    /// Timed calls of each operation (the median is reported).
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,
    /// Print exactly `{"split_ms":…,"estimate_ms":…,"truncate_ms":…}`.
    #[arg(long)]
    pub json: bool,
}

/// Medians of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Medians {
    pub split: Duration,
    pub estimate: Duration,
    pub truncate: Duration,
}

impl Medians {
    /// The `--json` line.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"split_ms\":{},\"estimate_ms\":{},\"truncate_ms\":{}}}",
            ms(self.split),
            ms(self.estimate),
            ms(self.truncate)
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn time_each<T>(iterations: u32, mut f: impl FnMut() -> T) -> Duration {
    let samples = (0..iterations)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed()
        })
        .collect();
    median(samples)
}

/// The truncation `compress` runs for `gemini-2.5-pro` with an empty UI prompt count.
fn reference_truncation() -> TruncationSettings {
    TruncationSettings {
        variant: TruncationVariant::Current,
        budget: COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET,
        max_chars: effective_max_chars(
            CompressSettings::default().token_limit(),
            0,
            DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD,
        ),
        estimator: Estimator::Current,
    }
}

/// Times the three operations on a parsed history.
pub fn measure(history: &[Content], iterations: u32) -> Result<Medians, Failure> {
    let split = time_each(iterations, || find_compress_split_point(history, 0.7));
    let estimate = time_each(iterations, || Estimator::Current.history(history));
    let settings = reference_truncation();
    let mut samples = Vec::with_capacity(iterations as usize);
    for _ in 0..iterations {
        let dir = tempfile::tempdir().map_err(Failure::TempDir)?;
        let mut store = FsToolOutputStore::new(dir.path());
        let mut id = 0;
        let start = Instant::now();
        let out = truncate_history_to_budget(history, &settings, &mut id, &mut store);
        samples.push(start.elapsed());
        drop(black_box(out));
    }
    Ok(Medians { split, estimate, truncate: median(samples) })
}

/// Peak resident set size so far (`VmHWM`), in bytes, where the OS reports it.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

/// Runs the command and returns what it prints.
pub fn output(args: &BenchSplitArgs) -> Result<String, Failure> {
    let before = peak_rss();
    let start = Instant::now();
    let history = history::load_history(&args.history)?;
    let load = start.elapsed();
    let after_load = peak_rss();
    let m = measure(&history, args.iterations)?;
    if args.json {
        return Ok(m.to_json());
    }
    let file_size = std::fs::metadata(&args.history).map(|md| md.len()).unwrap_or(0);
    let mut out = format!(
        "{}: {} Contents, {} bytes, {} estimated tokens; medians of {} calls\n",
        args.history.display(),
        history.len(),
        file_size,
        Estimator::Current.history(&history),
        args.iterations
    );
    out.push_str(&format!("split_ms     {:.3}\n", ms(m.split)));
    out.push_str(&format!("estimate_ms  {:.3}\n", ms(m.estimate)));
    out.push_str(&format!("truncate_ms  {:.3}\n", ms(m.truncate)));
    out.push_str(&format!("load_ms      {:.3} (read + parse + shape check, once)\n", ms(load)));
    if let (Some(b), Some(l), Some(end)) = (before, after_load, peak_rss()) {
        out.push_str(&format!(
            "peak RSS: {} before loading, {} after loading, {} at the end\n",
            mib(b),
            mib(l),
            mib(end)
        ));
    }
    Ok(out.trim_end().to_string())
}

pub fn run(args: BenchSplitArgs) -> Result<(), Failure> {
    crate::outln!("{}", output(&args)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command, EXIT_BAD_INPUT};
    use clap::Parser;

    fn write(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn args(path: &std::path::Path, extra: &[&str]) -> BenchSplitArgs {
        let mut argv = vec!["compactbench", "bench-split", path.to_str().unwrap()];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::BenchSplit(a) => a,
            other => panic!("parsed {other:?}"),
        }
    }

    #[test]
    fn json_output_has_exactly_the_three_medians() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(300_000);
        let text = format!(
            r#"[{{"role":"user","parts":[{{"text":"hi é中😀"}}]}},
                {{"role":"model","parts":[{{"functionCall":{{"name":"run_shell_command","args":{{}}}}}}]}},
                {{"role":"user","parts":[{{"functionResponse":{{"name":"run_shell_command","response":{{"output":"{big}"}}}}}}]}},
                {{"role":"model","parts":[{{"text":"done"}}]}}]"#
        );
        let path = write(dir.path(), "h.json", &text);
        let a = args(&path, &["--iterations", "3", "--json"]);
        assert_eq!(a.iterations, 3);
        let out = output(&a).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["split_ms", "estimate_ms", "truncate_ms"]);
        assert!(v.as_object().unwrap().values().all(|x| x.as_f64().is_some_and(|f| f >= 0.0)));
        // The truncation really ran: the 300 000-character output is over the 50 000-token budget.
        let h = history::load_history(&path).unwrap();
        let m = measure(&h, 1).unwrap();
        assert!(m.truncate > Duration::ZERO);
        let plain = output(&args(&path, &["--iterations", "1"])).unwrap();
        assert!(plain.contains("split_ms") && plain.contains("4 Contents"), "{plain}");
    }

    #[test]
    fn bad_input_names_the_file_and_exits_2() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "broken.json", "[{\"role\": \"user\", \"parts\": 5}]");
        let e = output(&args(&path, &["--json"])).unwrap_err();
        assert_eq!(e.exit_code(), EXIT_BAD_INPUT);
        assert!(e.to_string().contains("broken.json") && e.to_string().contains("$[0].parts"), "{e}");
        let missing = dir.path().join("missing.json");
        let e = output(&args(&missing, &[])).unwrap_err();
        assert_eq!(e.exit_code(), EXIT_BAD_INPUT);
        assert!(e.to_string().contains("missing.json"), "{e}");
        assert!(Cli::try_parse_from(["compactbench", "bench-split", "x.json", "--iterations", "0"]).is_err());
    }

    #[test]
    fn median_of_even_and_odd_counts() {
        let d = Duration::from_millis;
        assert_eq!(median(vec![d(3), d(1), d(2)]), d(2));
        assert_eq!(median(vec![d(4), d(1), d(2), d(3)]), Duration::from_micros(2500));
    }
}
