//! The grader's path rule against an independent count, on the two Claude Code corpora of
//! `../shared/datasets-raw` (read in place). `tests/data/independent_edit_recall.py`, written apart from the
//! importer, the probe extractor and the grader, counts from the raw transcripts the files each session
//! edited before each of its compactions and the share of them Claude Code's own summary names (pooled over
//! (file, compaction) pairs). The corpus's config is run into a temporary directory and the rework reading's
//! count of the same (`results/rework.csv`: files changed before each compaction that the summary names, by
//! the grader's path rule) must agree with it within 5 percentage points.
//!
//! The artifact probes are not compared with this count any more (#44): an extracted artifact probe asks for
//! a file by what its change introduced (`Which file did the agent edit to add `X`?`), a stricter fact than
//! "the summary names the file", and only for the changes that introduced something nameable. They are
//! checked against the labels instead (`report::grader_check`, *Grader against labels* in `probes.md`).

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

/// Runs the corpus's config (`recorded` alone; its raw logs imported afresh into the run's directory) and returns
/// the rework reading's count ([`rework_edit_recall`]).
fn recorded_rework(config: &str) -> (u64, (u64, u64)) {
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
    rework_edit_recall(&out)
}

fn pct((a, b): (u64, u64)) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn check(corpus: &str, config: &str) {
    if super::support::shared_or_skip(&format!("datasets-raw/{corpus}"), "edit_recall").is_none() {
        return;
    }
    let (start, previous, compactions) = independent(corpus);
    let (rework_rows, rework) = recorded_rework(config);
    // The rework reading (results/rework.csv) lists every compaction and counts the files each summary names
    // of those changed before it as the independent script does.
    let report = format!(
        "{corpus} ({config}): rework.csv {rework_rows} compactions, files changed and named {:.1} % ({}/{}); \
         independent: {compactions} compactions, {:.1} % ({}/{}; edited since the previous compaction: {:.1} %, \
         {}/{}); tolerance {TOLERANCE_PP} pp",
        pct(rework),
        rework.0,
        rework.1,
        pct(start),
        start.0,
        start.1,
        pct(previous),
        previous.0,
        previous.1,
    );
    eprintln!("{report}");
    assert_eq!(rework_rows, compactions, "{report}");
    assert!(rework.1 > 0, "{report}: no file changed before a compaction");
    assert!((pct(rework) - pct(start)).abs() <= TOLERANCE_PP, "{report}");
}

#[test]
fn claude_code_long_agrees_with_the_independent_count() {
    check("claude-code-long", "configs/long-sessions.toml");
}

#[test]
fn agent_sessions_claude_code_agrees_with_the_independent_count() {
    check("agent-sessions/claude-code", "configs/agent-sessions-claude-code.toml");
}
