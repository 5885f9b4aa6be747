//! Reports and the regression gate, on a real (small) sweep run once per test binary.

use compactbench::report::{self, gate};
use compactbench::sweep::{self, runner};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::repo;

const CONFIG: &str = r#"
name = "gate-test"
datasets = ["datasets/aider", "datasets/tau-bench"]
max_conversations = 12
concurrency = 2
[replay]
token_limit = 4096
prompt_count_source = "heuristic"
system_prompt_tokens = 500
[llm]
cache_mode = "off"
[grid]
strategy = ["gemini", "drop-oldest", "none"]
summarizer = ["extractive"]
threshold = [0.5]
prompt = ["v5"]
verification = [true]
"#;

/// One shared baseline run (the binary, as a user runs it).
fn baseline() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = tmp.path().join("gate.toml");
        std::fs::write(&cfg, CONFIG).unwrap();
        let out = tmp.path().join("baseline");
        let status = Command::new(env!("CARGO_BIN_EXE_compactbench"))
            .args(["run", "--quiet", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .current_dir(repo())
            .output()
            .unwrap();
        assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
        (tmp, out)
    })
    .1
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

/// A copy of the baseline with every stored cell rewritten by `f`.
fn planted(name: &str, f: impl Fn(&mut sweep::CellResult)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    copy_dir(baseline(), &dir);
    let plan = runner::load_plan(&dir).unwrap();
    for mut c in sweep::collect(&dir, &plan) {
        f(&mut c);
        runner::write_cell(&dir, &c).unwrap();
    }
    (tmp, dir)
}

fn gate_cli(current: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .args(["gate", "--baseline", baseline().to_str().unwrap(), "--current", current.to_str().unwrap()])
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

#[test]
fn identical_runs_pass_the_gate() {
    let r = gate::compare(baseline(), baseline(), &gate::Rules::default()).unwrap();
    assert!(r.passed());
    assert!(r.checks.iter().any(|c| c.metric == "cumulative_vs_none" && c.verdict == gate::Verdict::Pass));
}

#[test]
fn a_planted_regression_fails_with_exit_1_and_junit() {
    // Every reference replay now costs 10 % more tokens than before.
    let (_tmp, dir) = planted("regressed", |c| {
        if !c.result.events.is_empty() {
            c.result.cumulative_request_tokens = (c.result.cumulative_request_tokens as f64 * 1.10) as u64;
        }
    });
    let out = gate_cli(&dir);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("compactbench gate: FAIL") && md.contains("cumulative_vs_none"), "{md}");
    let junit = std::fs::read_to_string(dir.join("gate-junit.xml")).unwrap();
    assert!(junit.contains("<failure message=\"cumulative_vs_none") && junit.contains("<testsuites"));
}

#[test]
fn noise_within_the_interval_passes() {
    // Deterministic ± jitter of up to 0.5 % per conversation, centred on zero.
    let (_tmp, dir) = planted("noisy", |c| {
        let h = c.cell.conversation.bytes().fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64));
        let jitter = ((h % 11) as f64 - 5.0) / 1000.0;
        c.result.cumulative_request_tokens = (c.result.cumulative_request_tokens as f64 * (1.0 + jitter)) as u64;
    });
    let out = gate_cli(&dir);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("compactbench gate: PASS"));
}

#[test]
fn mismatched_inputs_are_incomplete_and_a_missing_run_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("other.toml");
    std::fs::write(&cfg, CONFIG.replace("max_conversations = 12", "max_conversations = 5")).unwrap();
    let other = tmp.path().join("other");
    let out = Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .args(["run", "--quiet", "--config", cfg.to_str().unwrap(), "--out", other.to_str().unwrap()])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = gate_cli(&other);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("conversation missing from the current run"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = gate_cli(&tmp.path().join("missing"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_rebuilds_results_and_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("copy");
    copy_dir(baseline(), &dir);
    let out = report::build(&dir).unwrap();
    for f in ["events", "conversations", "points"] {
        for ext in ["parquet", "csv", "json"] {
            let p = dir.join("results").join(format!("{f}.{ext}"));
            assert!(std::fs::metadata(&p).unwrap().len() > 0, "{}", p.display());
        }
    }
    let md = std::fs::read_to_string(&out.markdown_path).unwrap();
    // Rebuilding gives the same bytes.
    report::build(&dir).unwrap();
    assert_eq!(std::fs::read_to_string(&out.markdown_path).unwrap(), md);
    let plan = runner::load_plan(&dir).unwrap();
    let cells = sweep::collect(&dir, &plan);
    insta::assert_snapshot!("headline_markdown", report::headline(&plan, &cells).markdown());
    insta::assert_snapshot!("headline_terminal", report::headline(&plan, &cells).terminal());
    assert!(md.starts_with("# compactbench report: gate-test"));
    assert!(md.contains("## Headline") && md.contains("## Corpus") && md.contains("## Configuration"));
    // Points frame: one row per configuration, with intervals.
    let points = std::fs::read_to_string(dir.join("results/points.csv")).unwrap();
    assert_eq!(points.lines().count(), 1 + plan.points.len());
    assert!(points.lines().next().unwrap().contains("cumulative_vs_none_ci_low"));
}
