//! Reports and the regression gate, on a real (small) sweep run once per test binary.

use compactbench::data::{store, CellResult};
use compactbench::metrics::FigureId;
use compactbench::report;
use compactbench::sweep;
use compactbench::verdict::gate;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::{copy_dir, repo, TestConfig};

/// The module's run: twelve aider and tau-bench conversations.
fn config() -> TestConfig {
    TestConfig::small("gate-test", &["datasets/aider", "datasets/tau-bench"], 12)
}

/// One shared baseline run (the binary, as a user runs it).
fn baseline() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = tmp.path().join("gate.toml");
        std::fs::write(&cfg, config().text()).unwrap();
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

/// A copy of the baseline with every stored cell rewritten by `f`.
fn planted(name: &str, f: impl Fn(&mut CellResult)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    copy_dir(baseline(), &dir);
    let plan = store::load_plan(&dir).unwrap();
    for mut c in store::collect(&dir, &plan) {
        f(&mut c);
        sweep::run_dir::write_cell(&dir, &c).unwrap();
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
    assert!(r.checks.iter().any(|c| c.metric == FigureId::TokensVsNone && c.verdict == gate::Verdict::Pass));
}

#[test]
fn a_planted_regression_fails_with_exit_1_and_junit() {
    // Every reference replay now costs 10 % more tokens than before.
    let (_tmp, dir) = planted("regressed", |c| {
        if !c.result.events.is_empty() {
            c.result.request_tokens_total = (c.result.request_tokens_total as f64 * 1.10) as u64;
        }
    });
    let out = gate_cli(&dir);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("compactbench gate: FAIL") && md.contains("tokens_vs_none"), "{md}");
    let junit = std::fs::read_to_string(dir.join("gate-junit.xml")).unwrap();
    assert!(junit.contains("<failure message=\"tokens_vs_none") && junit.contains("<testsuites"));
}

#[test]
fn noise_within_the_interval_passes() {
    // Deterministic ± jitter of up to 0.5 % per conversation, centred on zero.
    let (_tmp, dir) = planted("noisy", |c| {
        let h = c.cell.conversation.bytes().fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64));
        let jitter = ((h % 11) as f64 - 5.0) / 1000.0;
        c.result.request_tokens_total = (c.result.request_tokens_total as f64 * (1.0 + jitter)) as u64;
    });
    let out = gate_cli(&dir);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("compactbench gate: PASS"));
}

#[test]
fn mismatched_inputs_are_incomplete_and_a_missing_run_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("other.toml");
    std::fs::write(&cfg, config().set("max_conversations", 5).text()).unwrap();
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
    let out = report::build(&dir, false).unwrap();
    for f in ["events", "conversations", "points"] {
        for ext in ["parquet", "csv", "json"] {
            let p = dir.join("results").join(format!("{f}.{ext}"));
            assert!(std::fs::metadata(&p).unwrap().len() > 0, "{}", p.display());
        }
    }
    let md = std::fs::read_to_string(&out.markdown_path).unwrap();
    // Rebuilding gives the same bytes.
    report::build(&dir, false).unwrap();
    assert_eq!(std::fs::read_to_string(&out.markdown_path).unwrap(), md);
    let plan = store::load_plan(&dir).unwrap();
    let cells = store::collect(&dir, &plan);
    insta::assert_snapshot!("headline_markdown", report::headline(&plan, &cells, false, true));
    let terminal = report::headline(&plan, &cells, false, false);
    insta::assert_snapshot!("headline_terminal", terminal);
    assert!(terminal.lines().all(|l| l.chars().count() <= 120), "{terminal}");
    // Every page is written, and rebuilt byte for byte; every Markdown table on them fits 120 columns too
    // (points are keyed by `#`, slices get tables of their own).
    assert_eq!(out.pages, [report::MAIN, report::DETAILS, report::PROBES].map(|p| dir.join(p)));
    let pages: Vec<String> = out.pages.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    report::build(&dir, false).unwrap();
    for (path, text) in out.pages.iter().zip(&pages) {
        assert_eq!(&std::fs::read_to_string(path).unwrap(), text, "{}", path.display());
        let wide: Vec<&str> = text.lines().filter(|l| l.starts_with('|') && l.chars().count() > 120).collect();
        assert!(wide.is_empty(), "{}: table lines wider than 120 columns: {wide:#?}", path.display());
        assert!(text.starts_with("# compactbench report: gate-test"), "{}", path.display());
    }
    assert!(md.contains(&report::cell_count(&plan, &cells)));
    assert!(md.contains("## What this run supports") && md.contains("## Headline"));
    let details = &pages[1];
    assert!(
        details.contains("## Every point") && details.contains("## Corpus") && details.contains("## Configuration")
    );
    // The full headline table (the one `run` prints) is on the details page, row for row.
    let full = report::headline(&plan, &cells, false, true);
    let rows: Vec<&str> = full.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() > plan.points.len() && rows.iter().all(|r| details.contains(r)), "{full}");
    // This run scores no probes: the probes page says so (the main page links it whatever the run).
    let probes = &pages[2];
    assert!(probes.contains("## Probes") && probes.contains("### By ordinal") || probes.contains("scored no probes"));
    // Points frame: one row per configuration, with intervals.
    let points = std::fs::read_to_string(dir.join("results/points.csv")).unwrap();
    assert_eq!(points.lines().count(), 1 + plan.points.len());
    assert!(points.lines().next().unwrap().contains("tokens_vs_none_ci_low"));
    check_results_agree(&dir);
    check_parquet_schema(&dir);
}

/// The Parquet files, read back with the Apache `parquet` crate (not polars): typed axes, integer counts,
/// boolean flags, plain UTF-8 strings (no `string_view`).
fn check_parquet_schema(dir: &Path) {
    use arrow_schema::DataType;
    let schema = |name: &str| {
        let f = std::fs::File::open(dir.join(format!("results/{name}.parquet"))).unwrap();
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap().schema().clone()
    };
    let points = schema("points");
    let ty = |s: &arrow_schema::Schema, c: &str| {
        s.field_with_name(c).unwrap_or_else(|e| panic!("{c}: {e}")).data_type().clone()
    };
    assert_eq!(ty(&points, "threshold"), DataType::Float64);
    assert_eq!(ty(&points, "verification"), DataType::Boolean);
    assert_eq!(ty(&points, "token_limit"), DataType::UInt64);
    assert_eq!(ty(&points, "tokens_vs_none"), DataType::Float64);
    assert_eq!(ty(&points, "compressed_events"), DataType::Int64);
    assert_eq!(ty(&points, "strategy"), DataType::Utf8);
    let convs = schema("conversations");
    assert_eq!(ty(&convs, "unsplittable"), DataType::Boolean);
    assert_eq!(ty(&convs, "request_tokens_total"), DataType::UInt64);
    assert_eq!(ty(&convs, "source"), DataType::Utf8);
    let events = schema("events");
    assert_eq!(ty(&events, "hidden_inflation"), DataType::Boolean);
    assert_eq!(ty(&events, "request_tokens_before"), DataType::UInt64);
    for s in [&points, &convs, &events] {
        for f in s.fields() {
            assert!(
                !matches!(f.data_type(), DataType::Utf8View | DataType::BinaryView),
                "{}: {}",
                f.name(),
                f.data_type()
            );
        }
    }
}

/// Regression: probes.parquet was written by polars' own writer (strings as `string_view`, which older
/// pyarrow, pandas, DuckDB and Spark cannot read) while every other frame used plain UTF-8. Read back with
/// the Apache `parquet` crate, the committed baseline's probes.parquet has no view types and holds
/// probes.csv cell for cell.
#[test]
fn probes_parquet_is_plain_utf8_and_holds_the_csv() {
    use arrow_array::{Array, BooleanArray, Float64Array, StringArray, UInt32Array};
    use arrow_schema::DataType;
    let results = repo().join("reports/baseline/results");
    let file = std::fs::File::open(results.join("probes.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let rows = csv(&results.join("probes.csv"));
    let mut row = 0;
    for batch in reader {
        let batch = batch.unwrap();
        for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
            assert!(!matches!(field.data_type(), DataType::Utf8View | DataType::BinaryView), "{}", field.name());
            for i in 0..column.len() {
                let cell = if column.is_null(i) {
                    String::new()
                } else {
                    match field.data_type() {
                        DataType::Utf8 => column.as_any().downcast_ref::<StringArray>().unwrap().value(i).to_string(),
                        DataType::Boolean => {
                            column.as_any().downcast_ref::<BooleanArray>().unwrap().value(i).to_string()
                        }
                        DataType::UInt32 => column.as_any().downcast_ref::<UInt32Array>().unwrap().value(i).to_string(),
                        DataType::Float64 => {
                            column.as_any().downcast_ref::<Float64Array>().unwrap().value(i).to_string()
                        }
                        other => panic!("{}: unexpected type {other}", field.name()),
                    }
                };
                let expected = &rows[row + i][field.name().as_str()];
                if field.data_type() == &DataType::Float64 && !cell.is_empty() {
                    assert_eq!(cell.parse::<f64>().unwrap(), expected.parse::<f64>().unwrap(), "{}", field.name());
                } else {
                    assert_eq!(&cell, expected, "row {} column {}", row + i, field.name());
                }
            }
        }
        row += batch.num_rows();
    }
    assert_eq!(row, rows.len());
    assert!(row > 1000, "the baseline scores its probes: {row} rows");
}

fn csv(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines.map(|l| header.iter().cloned().zip(l.split(',').map(String::from)).collect()).collect()
}

/// The acceptance checks on the results files: every event's reduction is 1 − after/before; `tokens_vs_none`
/// recomputed from conversations.csv equals points.csv and summary.json.
fn check_results_agree(dir: &Path) {
    let events = csv(&dir.join("results/events.csv"));
    assert!(!events.is_empty());
    for e in &events {
        let (b, a): (f64, f64) =
            (e["request_tokens_before"].parse().unwrap(), e["request_tokens_after"].parse().unwrap());
        let r: f64 = e["reduction"].parse().unwrap();
        assert!((r - (1.0 - a / b)).abs() < 1e-9, "{e:?}");
        assert!(e.contains_key("reference_original_tokens") && e.contains_key("reference_new_tokens"));
    }
    let convs = csv(&dir.join("results/conversations.csv"));
    let points = csv(&dir.join("results/points.csv"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    for p in &points {
        let mine: Vec<_> = convs.iter().filter(|c| c["point"] == p["point"]).collect();
        let sum = |k: &str| mine.iter().map(|c| c[k].parse::<f64>().unwrap()).sum::<f64>();
        let recomputed =
            (sum("request_tokens_total") + sum("summarizer_tokens_total")) / sum("none_request_tokens_total");
        let in_points: f64 = p["tokens_vs_none"].parse().unwrap();
        let in_summary = summary.as_array().unwrap().iter().find(|s| s["point"] == p["point"].as_str()).unwrap()
            ["tokens_vs_none"]
            .as_f64()
            .unwrap();
        assert!((recomputed - in_points).abs() < 1e-9 && (in_points - in_summary).abs() < 1e-12, "{p:?}");
        // Counts are integers in summary.json, as in the CSV.
        let s = summary.as_array().unwrap().iter().find(|s| s["point"] == p["point"].as_str()).unwrap();
        assert!(s["compressed_events"].is_u64() && s["failed"].is_u64(), "{s}");
        // Every paired-difference column is filled on every main-grid row.
        if p["slice"].is_empty() {
            for (k, v) in p.iter().filter(|(k, _)| k.contains("_diff_vs_")) {
                assert!(!v.is_empty(), "{k} empty: {p:?}");
            }
        }
    }
    // Over the actionable conversations, from conversations.csv: the same as scopes.csv.
    let scopes = csv(&dir.join("results/scopes.csv"));
    for s in scopes.iter().filter(|s| s["scope"] == "actionable") {
        let mine: Vec<_> = convs.iter().filter(|c| c["point"] == s["point"] && c["actionable"] == "true").collect();
        assert_eq!(mine.len().to_string(), s["conversations"], "{s:?}");
        let sum = |k: &str| mine.iter().map(|c| c[k].parse::<f64>().unwrap()).sum::<f64>();
        let recomputed =
            (sum("request_tokens_total") + sum("summarizer_tokens_total")) / sum("none_request_tokens_total");
        let in_scopes: f64 = s["tokens_vs_none"].parse().unwrap();
        assert!((recomputed - in_scopes).abs() < 1e-9, "{s:?}");
    }
}

/// The committed baseline runs on a window a deployment could have: at the reference's default point no
/// conversation has its trigger at or below its first request, and no source compresses more than 25 times
/// per 100 requests (the `peak:0.6` window compressed tau-bench at 244 of 285 requests).
#[test]
fn the_baseline_keeps_triggers_above_the_first_request_and_compressions_rare() {
    let dir = repo().join("reports/baseline/results");
    let points = csv(&dir.join("points.csv"));
    let reference = &points.iter().find(|p| p["strategy"] == "gemini" && p["slice"].is_empty()).unwrap()["point"];
    let convs: Vec<_> = csv(&dir.join("conversations.csv")).into_iter().filter(|c| &c["point"] == reference).collect();
    assert_eq!(convs.len(), 89);
    assert!(convs.iter().all(|c| c["trigger_below_overhead"] == "0"));
    let events = csv(&dir.join("events.csv"));
    let mut per_source: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for c in &convs {
        per_source.entry(c["source"].clone()).or_default().0 += c["requests"].parse::<u64>().unwrap();
    }
    for e in events.iter().filter(|e| &e["point"] == reference) {
        if e["status"] == "COMPRESSED" || e["status"] == "CONTENT_TRUNCATED" {
            per_source.get_mut(&e["source"]).unwrap().1 += 1;
        }
    }
    for (source, (requests, compressions)) in &per_source {
        assert!(compressions * 100 <= 25 * requests, "{source}: {compressions} compressions in {requests} requests");
    }
    assert!(per_source.values().any(|(_, c)| *c > 0), "the reference compresses somewhere: {per_source:?}");
}

/// The lines of one `##` section of a page.
fn section<'a>(page: &'a str, name: &str) -> Vec<&'a str> {
    let start = page.find(&format!("\n## {name}\n")).unwrap_or_else(|| panic!("no section {name}"));
    page[start + 1..].lines().skip(1).take_while(|l| !l.starts_with("## ")).collect()
}

/// The main page of a run leads with what matters, on one page: its sections are the fixed list, in order;
/// it links the pages next to it (each line saying what the page holds) and never sends the reader to
/// itself; its headline table holds at most three rows per strategy (each default point, and its cheapest
/// and best point where they beat it), every point being on `details.md`; a repeated claim is one line.
#[test]
fn the_main_page_leads_with_what_matters_and_links_the_rest() {
    let dir = baseline();
    let main = std::fs::read_to_string(dir.join(report::MAIN)).unwrap();
    let sections: Vec<&str> = main.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    let order: Vec<usize> = sections
        .iter()
        .map(|s| report::MAIN_SECTIONS.iter().position(|m| m == s).unwrap_or_else(|| panic!("{s}: not a main section")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{sections:?}");
    for s in ["What this run supports", "Headline", "Headline by scope", "Plots"] {
        assert!(sections.contains(&s), "{s} missing: {sections:?}");
    }
    assert!(!main.contains(report::MAIN), "the main page names itself: {main}");
    assert!(main.lines().count() < 300, "{} lines", main.lines().count());
    for page in [report::DETAILS, report::PROBES] {
        assert!(main.lines().any(|l| l.starts_with(&format!("- [{page}]({page}): "))), "{page} not linked");
        assert!(dir.join(page).is_file(), "{page} not written");
    }
    let plan = store::load_plan(dir).unwrap();
    let rows: Vec<&str> =
        section(&main, "Headline").into_iter().filter(|l| l.starts_with("| ") && !l.starts_with("| #")).collect();
    let mut per_strategy: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in &rows {
        *per_strategy.entry(r.split('|').nth(2).unwrap().trim()).or_default() += 1;
    }
    assert_eq!(per_strategy.len(), 3, "{per_strategy:?}");
    assert!(per_strategy.values().all(|&n| n <= 3), "{per_strategy:?}");
    // Scopes on the main page: pooled and actionable; per source on the details page.
    let scopes = section(&main, "Headline by scope").join("\n");
    assert!(scopes.contains("| pooled") && !scopes.contains("| aider"), "{scopes}");
    let details = std::fs::read_to_string(dir.join(report::DETAILS)).unwrap();
    assert!(section(&details, "Headline by source").iter().any(|l| l.contains("| aider")));
    let every = section(&details, "Every point");
    for n in 1..=plan.points.len() {
        assert!(every.iter().any(|l| l.starts_with(&format!("| {n} "))), "#{n} missing from {}", report::DETAILS);
    }
    // No claim line is said twice.
    let claims: Vec<&str> =
        section(&main, "What this run supports").into_iter().filter(|l| l.starts_with("- ")).collect();
    let distinct: std::collections::BTreeSet<&&str> = claims.iter().collect();
    assert_eq!(distinct.len(), claims.len(), "{claims:#?}");
}

/// The committed default run's main page is one page (under 300 lines of its 1,906 before the pages were
/// split); checked once the committed reports are rebuilt with pages next to `report.md`.
#[test]
fn the_committed_baseline_main_page_is_one_page() {
    let dir = repo().join("reports/baseline");
    assert!(dir.join(report::DETAILS).is_file() && dir.join(report::PROBES).is_file(), "details.md, probes.md");
    let main = std::fs::read_to_string(dir.join(report::MAIN)).unwrap();
    assert!(main.lines().count() < 300, "reports/baseline/report.md: {} lines", main.lines().count());
    assert!(!main.contains(report::MAIN));
    for s in main.lines().filter_map(|l| l.strip_prefix("## ")) {
        assert!(report::MAIN_SECTIONS.contains(&s), "{s}: not a main section");
    }
}

/// The findings page, its verdicts and the README's box are what `compactbench findings` writes from the
/// committed runs (CI runs the same check): a figure copied by hand, or a run regenerated without the page,
/// fails here.
#[test]
fn the_findings_page_and_the_readme_box_are_written_from_the_committed_runs() {
    let out = Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .current_dir(repo())
        .args(["findings", "reports/findings.toml", "--check"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let at = readme.find(report::findings_page::README_BEGIN).expect("the README has the findings box");
    assert!(readme[..at].lines().count() < 80, "the findings box is within the README's first 80 lines");
}

/// A manifest over the committed baseline, written in `dir` as `name`, with one glance line.
fn findings_manifest(dir: &Path, name: &str, glance: &str) -> PathBuf {
    let manifest = dir.join(name);
    let text = format!(
        "date = \"2026-01-01\"\npage = \"FINDINGS.md\"\nglance = [{glance:?}]\n\n[[runs]]\nname = \"base\"\ndir = {:?}\ntitle = \"Baseline\"\n",
        baseline().display().to_string()
    );
    std::fs::write(&manifest, text).unwrap();
    manifest
}

/// A figure enters the page's prose only through its label: a number typed into a sentence is refused
/// (exit 2, naming the manifest and the line), a label is replaced by the run's figure, and a sentence that
/// reads a claim otherwise than the run does is refused; `--check` fails (exit 1) on a page that differs.
#[test]
fn findings_prose_takes_its_numbers_from_labels_only() {
    let tmp = tempfile::tempdir().unwrap();
    let findings = |manifest: &Path, check: bool| {
        let mut args = vec!["findings".to_string(), manifest.display().to_string()];
        if check {
            args.push("--check".into());
        }
        Command::new(env!("CARGO_BIN_EXE_compactbench")).args(&args).output().unwrap()
    };
    let typed = findings_manifest(tmp.path(), "typed.toml", "the reference costs 76.4 % of none");
    let out = findings(&typed, false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("typed.toml") && err.contains("glance line 1") && err.contains("76.4 %"), "{err}");

    let plan = store::load_plan(baseline()).unwrap();
    let claims = compactbench::verdict::claims::claims(&plan, &store::collect(baseline(), &plan));
    let c = claims.iter().find(|c| c.difference.is_some()).expect("the baseline makes a claim");
    let label = format!("base:{}:{}:{}:{}", c.strategy, c.against.name(), c.metric.name(), c.scope);
    let labelled = findings_manifest(tmp.path(), "labelled.toml", &format!("the difference is {{{{{label}}}}}"));
    let out = findings(&labelled, false);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(tmp.path().join("FINDINGS.md")).unwrap();
    let d = c.difference.unwrap();
    let shown = compactbench::metrics::percentage_points(
        d.value,
        Some((d.low, d.high)),
        compactbench::metrics::PointsStyle::PROSE,
    );
    assert!(page.contains(&format!("the difference is {shown} over {} conversations", d.n)), "{page}");
    assert!(findings(&labelled, true).status.success(), "the page just written is up to date");

    let wrong = if c.verdict == compactbench::verdict::claims::Verdict::Established {
        "not-established"
    } else {
        "established-higher"
    };
    let misread = findings_manifest(tmp.path(), "misread.toml", &format!("it holds {{{{{label}:{wrong}}}}}"));
    let out = findings(&misread, true);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rewrite the sentence"));

    std::fs::write(tmp.path().join("FINDINGS.md"), page.replace(&shown, "+99.9 pp")).unwrap();
    let out = findings(&labelled, true);
    assert_eq!(out.status.code(), Some(1), "a page edited by hand is stale: {}", String::from_utf8_lossy(&out.stderr));
}

/// The committed baseline scores overflow as a failure: no probe counts as retained at or after its
/// conversation's first request over the window, and the rule is exercised (some probes are lost to it).
#[test]
fn the_baseline_keeps_no_probe_after_an_overflow_and_truncation_only_did_not_act() {
    let dir = repo().join("reports/baseline/results");
    let probes = csv(&dir.join("probes.csv"));
    assert!(probes.iter().all(|p| !(p["after_overflow"] == "true" && p["retained"] == "true")));
    assert!(probes.iter().any(|p| p["after_overflow"] == "true" && p["held"] == "true"), "the rule never bit");
    let claims = csv(&dir.join("claims.csv"));
    let truncation: Vec<_> = claims.iter().filter(|c| c["strategy"] == "truncation-only").collect();
    assert!(!truncation.is_empty() && truncation.iter().all(|c| c["verdict"] == "did not act"), "{truncation:?}");
    for c in claims.iter().filter(|c| c["verdict"] == "established") {
        let f = |k: &str| c[k].parse::<f64>().unwrap();
        let side = f("difference").signum();
        assert!(side != 0.0 && f("ci_low") * side > 0.0 && f("ci_high") * side > 0.0, "{c:?}");
        assert!(f("loo_low") * side > 0.0 && f("loo_high") * side > 0.0, "{c:?}");
    }
}

/// `compare` puts runs side by side and pools their paired differences: the same run twice gives each row
/// twice, and pooled differences over twice the conversations with the per-run value.
#[test]
fn compare_tables_runs_side_by_side_and_pools_their_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("across.md");
    let status = Command::new(env!("CARGO_BIN_EXE_compactbench"))
        .args(["compare", baseline().to_str().unwrap(), baseline().to_str().unwrap(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let md = std::fs::read_to_string(&out).unwrap();
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("| drop-oldest")).collect();
    assert_eq!(rows.len(), 3, "twice per run, once pooled: {md}");
    assert!(rows[0].starts_with("| gate-test ") && rows[1].starts_with("| gate-test#2 "), "{rows:?}");
    // The pooled Δ tokens − ref. is over both copies (n doubled) and equals the per-run difference of the
    // figures (the same conversations twice give the same ratios).
    let cells =
        |row: &str| row.split('|').map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect::<Vec<_>>();
    let share = |cell: &str| cell.split('%').next().unwrap().parse::<f64>().unwrap();
    let reference = md.lines().find(|l| l.starts_with("| gate-test ") && l.contains("| gemini")).unwrap();
    let (mine, theirs) = (cells(rows[0]), cells(reference));
    let convs: usize = mine[2].parse().unwrap();
    let pooled = cells(rows[2])[1].clone();
    let n: usize = pooled.rsplit("n=").next().unwrap().trim_end_matches(')').parse().unwrap();
    assert_eq!(n, 2 * convs, "{pooled}");
    let delta: f64 = pooled.split(' ').next().unwrap().parse().unwrap();
    assert!((delta - (share(&mine[4]) - share(&theirs[4]))).abs() <= 0.11, "{pooled} vs {mine:?} {theirs:?}");
}

/// Issue #38: a run that replays an agent's own compactions links `compactions.md`, which lists every one
/// of them (the committed long-session report: 19), and its results hold one rework row per compaction.
#[test]
fn the_long_session_report_shows_what_happened_after_each_compaction() {
    let dir = repo().join("reports/long-sessions");
    let main = std::fs::read_to_string(dir.join(report::MAIN)).unwrap();
    let page = report::rework::PAGE;
    assert!(main.lines().any(|l| l.starts_with(&format!("- [{page}]({page}): "))), "{page} not linked");
    let text = std::fs::read_to_string(dir.join(page)).unwrap();
    let every = text.split("## Every compaction").nth(1).expect("the per-compaction table");
    let rows = every.lines().filter(|l| l.starts_with("| claude-code-long ")).count();
    assert_eq!(rows, 19, "{every}");
    for section in [
        "## Rework after a compaction",
        "## Is a file the summary did not name re-read more often?",
        "## Chains of compactions",
        "## The cache model against the recorded usage",
    ] {
        assert!(text.contains(section), "{section} missing");
    }
    let rework = csv(&dir.join("results/rework.csv"));
    assert_eq!(rework.len(), 19);
    assert!(rework.iter().all(|r| r["summary_readable"] == "true"));
    // The baseline replays no agent's compactions: no such page.
    assert!(!baseline().join(page).exists());
}

/// The home-directory user names the raw sessions hold (`/Users/<name>`, `/home/<name>` in their first
/// 256 KB, where every session records its working directory).
fn raw_session_user_names(raw: &Path) -> std::collections::BTreeSet<String> {
    use std::io::Read;
    let name = regex::Regex::new(r"/(?:Users|home)/([A-Za-z0-9._-]{3,})/").unwrap();
    // Accounts of containers and CI machines (`/home/test`, `/home/runner`) name no person, and as words they
    // are also directory names of projects.
    const ACCOUNTS: &[&str] = &["test", "user", "runner", "root", "ubuntu", "admin", "dev", "node", "app", "work"];
    let mut names = std::collections::BTreeSet::new();
    for p in super::support::walk(raw, |_| false) {
        let file = p.to_string_lossy().to_string();
        if !(file.ends_with(".jsonl.gz") || file.ends_with(".jsonl")) {
            continue;
        }
        let mut head = Vec::new();
        let reader = std::fs::File::open(&p).unwrap();
        if file.ends_with(".gz") {
            let _ = flate2::read::MultiGzDecoder::new(reader).take(256 << 10).read_to_end(&mut head);
        } else {
            let _ = reader.take(256 << 10).read_to_end(&mut head);
        }
        let text = String::from_utf8_lossy(&head);
        names.extend(name.captures_iter(&text).map(|c| c[1].to_string()).filter(|n| !ACCOUNTS.contains(&n.as_str())));
    }
    names
}

/// Nothing private leaves the raw sessions (#46): no committed file (as `git ls-files` lists them; without
/// git, the reports and pages that describe the sessions) shows the home-directory user name of anyone who
/// recorded a session (`/Users/<name>/…`, or `…/<name>/x` as a shortened path showed a file directly in a
/// home directory), nor the absolute path of this checkout or of `../shared` on the machine that wrote it.
#[test]
fn no_committed_file_shows_a_user_name_from_the_raw_sessions_or_a_machine_path() {
    let Some(raw) = super::support::shared_or_skip("datasets-raw", "privacy of the committed files") else {
        return;
    };
    let names = raw_session_user_names(&raw);
    assert!(!names.is_empty(), "no home directory found in the raw sessions: the check would check nothing");
    let listed = Command::new("git").current_dir(repo()).args(["ls-files", "-z"]).output().ok();
    let files: Vec<PathBuf> = match listed.filter(|o| o.status.success() && !o.stdout.is_empty()) {
        Some(o) => o
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| repo().join(String::from_utf8_lossy(p).as_ref()))
            .collect(),
        None => {
            let mut files =
                vec![repo().join("README.md"), repo().join("datasets/README.md"), repo().join("datasets/SOURCES.md")];
            // Never committed (`.gitignore`): the cells and pages that hold the sessions' text.
            let uncommitted =
                |p: &Path| p.file_name().is_some_and(|n| n == "cells" || n == "view.html" || n == "run.lock");
            for dir in ["reports", "datasets/labels"] {
                files.extend(super::support::walk(&repo().join(dir), uncommitted));
            }
            files
        }
    };
    assert!(files.len() > 100, "the check reads the committed files: {}", files.len());
    let mut needles: Vec<String> =
        names.iter().flat_map(|n| [format!("/Users/{n}"), format!("/home/{n}"), format!("…/{n}/")]).collect();
    for dir in [repo().to_path_buf(), raw.parent().map(Path::to_path_buf).unwrap_or_default()] {
        let absolute = std::fs::canonicalize(&dir).unwrap_or(dir);
        if absolute.components().count() > 2 {
            needles.push(absolute.display().to_string());
        }
    }
    let mut found = Vec::new();
    for f in &files {
        let Ok(bytes) = std::fs::read(f) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        for shown in &needles {
            if text.contains(shown.as_str()) {
                found.push(format!("{}: {shown}", f.strip_prefix(repo()).unwrap_or(f).display()));
            }
        }
    }
    assert!(found.is_empty(), "user names of the raw sessions or machine paths in committed files: {found:?}");
}
