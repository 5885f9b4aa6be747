//! The grader's artifact probes against an independent count, on the two Claude Code corpora of
//! `../shared/datasets-raw` (read in place). `tests/data/independent_edit_recall.py`, written apart from the
//! importer, the probe extractor and the grader, counts from the raw transcripts the files each session
//! edited before each of its compactions and the share of them Claude Code's own summary names (pooled over
//! (file, compaction) pairs). The corpus's config is run into a temporary directory and `recorded`'s kept
//! share over artifact probes at its compressions (`results/probes.csv`) must agree with it within 5
//! percentage points: both measure whether the agent's summary names the files it changed.

use super::support::{repo, shared_dir};
use compactbench::sweep::config::DatasetEntry;
use compactbench::sweep::config::SweepConfig;
use std::path::PathBuf;

/// The largest allowed gap between the grader's share and the independent one, in percentage points.
const TOLERANCE_PP: f64 = 5.0;

/// The independent pooled shares of one corpus: (since the session's start, since the previous compaction),
/// each as (named, edited).
fn independent(corpus: &str) -> ((u64, u64), (u64, u64), u64) {
    let script = repo().join("harness/tests/data/independent_edit_recall.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(corpus)
        .env("COMPACTBENCH_SHARED", shared_dir())
        .output()
        .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
    assert!(out.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    let c = &v[corpus];
    assert!(c["compactions"].as_u64().unwrap_or(0) > 0, "{corpus}: no compaction read: {c}");
    let pair = |key: &str| {
        let n = |k: &str| c[key][k].as_u64().unwrap_or_else(|| panic!("{corpus}: {key}.{k} missing"));
        (n("named"), n("edited"))
    };
    (pair("since_start"), pair("since_previous"), c["compactions"].as_u64().unwrap_or(0))
}

/// The rework reading's own count (`results/rework.csv`, issue #38): compactions, and the files changed
/// since the session's start and named by each summary, pooled: (rows, (named, edited)).
fn rework_edit_recall(out: &std::path::Path) -> (u64, (u64, u64)) {
    let text = std::fs::read_to_string(out.join("results/rework.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("rework.csv has a header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let (named, edited) = (col("files_edited_named"), col("files_edited_before"));
    let (mut rows, mut pooled) = (0, (0, 0));
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        rows += 1;
        pooled.0 += f[named].parse::<u64>().unwrap_or_else(|_| panic!("files_edited_named: {line}"));
        pooled.1 += f[edited].parse::<u64>().unwrap();
    }
    (rows, pooled)
}

/// Runs the corpus's config (`recorded` alone; its raw logs imported afresh into the run's directory) and returns `recorded`'s
/// artifact probes at compressions: (kept, pairs), and the rework reading's count ([`rework_edit_recall`]).
fn recorded_artifacts_kept(config: &str) -> ((u64, u64), (u64, (u64, u64))) {
    let mut cfg = SweepConfig::load(&repo().join(config)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Only `recorded`'s cells are read: each cell is one (point, conversation) replay, so the other
    // strategies' points change nothing in them and would only triple the run's time.
    cfg.grid.strategy = vec!["recorded".into()];
    // A fresh import with the current importer, not a conversion cached by an older one.
    cfg.import_cache = dir.path().join("imports");
    if let Some(shared) = std::env::var_os("COMPACTBENCH_SHARED") {
        for entry in &mut cfg.datasets {
            if let DatasetEntry::Raw(r) = entry {
                if let Ok(rest) = r.raw.strip_prefix("../shared") {
                    r.raw = PathBuf::from(&shared).join(rest);
                }
            }
        }
    }
    let out = dir.path().join("out");
    super::support::sweep(&cfg, &out, false);
    compactbench::report::build(&out, false).unwrap();
    let text = std::fs::read_to_string(out.join("results/probes.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("probes.csv has a header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let (strategy, kind, moment, compression, retained) =
        (col("strategy"), col("kind"), col("moment"), col("compression"), col("retained"));
    let (mut kept, mut pairs) = (0, 0);
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), header.len(), "probes.csv: a quoted field or a bad row: {line}");
        if f[strategy] == "recorded" && f[kind] == "artifact" && f[moment] != "end" && f[compression] == "true" {
            pairs += 1;
            kept += u64::from(f[retained] == "true");
        }
    }
    ((kept, pairs), rework_edit_recall(&out))
}

fn pct((a, b): (u64, u64)) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn check(corpus: &str, config: &str) {
    let raw = shared_dir().join("datasets-raw").join(corpus);
    if !raw.is_dir() {
        eprintln!(
            "\n!!!!!!!! SKIPPED edit_recall on {corpus}: {} is missing (../shared beside the checkout, or \
             $COMPACTBENCH_SHARED); this test checks nothing without it !!!!!!!!\n",
            raw.display()
        );
        return;
    }
    let (start, previous, compactions) = independent(corpus);
    let (grader, (rework_rows, rework)) = recorded_artifacts_kept(config);
    // The rework reading (results/rework.csv) lists every compaction and counts the files each summary names
    // of those changed before it as the independent script does.
    let rework_report = format!(
        "{corpus}: rework.csv {rework_rows} compactions, files changed and named {:.1} % ({}/{}); independent:          {compactions} compactions, {:.1} %",
        pct(rework),
        rework.0,
        rework.1,
        pct(start)
    );
    eprintln!("{rework_report}");
    assert_eq!(rework_rows, compactions, "{rework_report}");
    assert!((pct(rework) - pct(start)).abs() <= TOLERANCE_PP, "{rework_report}");
    let (ind, got) = (pct(start), pct(grader));
    let report = format!(
        "{corpus} ({config}): recorded's artifact probes kept at compressions {got:.1} % ({}/{}) vs the \
         independent count of files edited before each compaction that its summary names {ind:.1} % ({}/{}; \
         edited since the previous compaction: {:.1} %, {}/{}); gap {:+.1} pp, tolerance {TOLERANCE_PP} pp",
        grader.0,
        grader.1,
        start.0,
        start.1,
        pct(previous),
        previous.0,
        previous.1,
        got - ind,
    );
    eprintln!("{report}");
    assert!(grader.1 > 0, "{report}: no artifact probe scored at a compression");
    assert!((got - ind).abs() <= TOLERANCE_PP, "{report}");
}

#[test]
fn claude_code_long_agrees_with_the_independent_count() {
    check("claude-code-long", "configs/long-sessions.toml");
}

#[test]
fn agent_sessions_claude_code_agrees_with_the_independent_count() {
    check("agent-sessions/claude-code", "configs/agent-sessions-claude-code.toml");
}
