//! Reports: aggregation of a run's stored cells, tables, Markdown, plots, and the regression gate.
//!
//! Everything is rebuilt from the run directory (`plan.json`, `cells/`), so `compactbench report RUN_DIR`
//! reproduces a report byte for byte.

pub mod aggregate;
pub mod gate;
pub mod plots;
pub mod systems;

use crate::sweep::{self, CellResult, ConfigPoint, Plan};
use aggregate::{bootstrap_mean, conversation_metrics, Estimate};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A table defined once and rendered for the terminal or as Markdown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn build(&self) -> tabled::Table {
        let mut b = tabled::builder::Builder::default();
        b.push_record(self.header.clone());
        for r in &self.rows {
            b.push_record(r.clone());
        }
        b.build()
    }

    pub fn terminal(&self) -> String {
        let mut t = self.build();
        t.with(tabled::settings::Style::sharp());
        t.to_string()
    }

    pub fn markdown(&self) -> String {
        let mut t = self.build();
        t.with(tabled::settings::Style::markdown());
        t.to_string()
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_else(|| "–".into())
}

fn pct_ci(e: Option<Estimate>) -> String {
    match e {
        Some(e) if e.n > 1 => format!("{:.1}% [{:.1}, {:.1}]", e.mean * 100.0, e.low * 100.0, e.high * 100.0),
        Some(e) => format!("{:.1}%", e.mean * 100.0),
        None => "–".into(),
    }
}

/// Axes whose value differs between points (the columns worth showing).
pub fn varying_axes(points: &[&ConfigPoint]) -> Vec<String> {
    let all: BTreeSet<&String> = points.iter().flat_map(|p| p.axes.keys()).collect();
    all.into_iter()
        .filter(|a| *a != "strategy" && *a != "summarizer")
        .filter(|a| points.iter().filter_map(|p| p.axes.get(*a)).collect::<BTreeSet<_>>().len() > 1)
        .cloned()
        .collect()
}

/// Per-point metric values over its conversations.
pub fn metric_values(cells: &[CellResult], point: &str, metric: &str) -> Vec<f64> {
    cells
        .iter()
        .filter(|c| c.cell.point == point)
        .filter_map(|c| conversation_metrics(c).get(metric).copied())
        .collect()
}

/// The headline table: one row per config point.
pub fn headline(plan: &Plan, cells: &[CellResult]) -> Table {
    let points: Vec<&ConfigPoint> = plan.points.iter().collect();
    let axes = varying_axes(&points);
    let mut header: Vec<String> = vec!["strategy".into(), "summarizer".into()];
    header.extend(axes.iter().cloned());
    header.extend(
        [
            "convs",
            "compressed",
            "inflated",
            "empty summary",
            "truncation-only",
            "mean reduction [95% CI]",
            "hidden inflation",
            "verification changed",
            "cumulative tokens vs none [95% CI]",
            "retention [95% CI]",
            "retrieval accuracy",
            "failed",
        ]
        .map(String::from),
    );
    let rows = points
        .iter()
        .map(|p| {
            let sum = |m: &str| metric_values(cells, &p.id, m).iter().sum::<f64>() as u64;
            let mut row = vec![p.strategy.kind().to_string(), p.summarizer.clone().unwrap_or_else(|| "–".into())];
            row.extend(axes.iter().map(|a| p.axes.get(a).cloned().unwrap_or_else(|| "–".into())));
            let convs = cells.iter().filter(|c| c.cell.point == p.id).count();
            row.extend([
                convs.to_string(),
                sum("compressed_events").to_string(),
                sum("inflated_events").to_string(),
                sum("empty_summary_events").to_string(),
                sum("truncation_only_events").to_string(),
                pct_ci(bootstrap_mean(&metric_values(cells, &p.id, "mean_reduction"))),
                sum("hidden_inflation_events").to_string(),
                pct(bootstrap_mean(&metric_values(cells, &p.id, "verification_changed")).map(|e| e.mean)),
                pct_ci(bootstrap_mean(&metric_values(cells, &p.id, "cumulative_vs_none"))),
                pct_ci(bootstrap_mean(&metric_values(cells, &p.id, "retention"))),
                pct(bootstrap_mean(&metric_values(cells, &p.id, "retrieval_accuracy")).map(|e| e.mean)),
                sum("failed").to_string(),
            ]);
            row
        })
        .collect();
    Table { header, rows }
}

/// The corpus table: conversations, requests and tokens per source.
pub fn corpus(plan: &Plan, cells: &[CellResult]) -> Table {
    let none_like = plan.points.first().map(|p| p.id.clone()).unwrap_or_default();
    let mut by_source: BTreeMap<String, (usize, u64, u64)> = BTreeMap::new();
    for c in cells.iter().filter(|c| c.cell.point == none_like) {
        let e = by_source.entry(c.source.clone()).or_default();
        e.0 += 1;
        e.1 += c.result.requests as u64;
        e.2 += c.result.request_tokens.last().copied().unwrap_or(0);
    }
    for p in &plan.conversations {
        by_source.entry(p.source.clone()).or_default();
    }
    let rows = by_source
        .into_iter()
        .map(|(s, (n, req, tok))| {
            vec![if s.is_empty() { "(unreadable)".into() } else { s }, n.to_string(), req.to_string(), tok.to_string()]
        })
        .collect();
    Table {
        header: ["source", "conversations", "model requests", "final request tokens (sum)"].map(String::from).to_vec(),
        rows,
    }
}

/// Findings worth a sentence, computed from the data.
pub fn findings(plan: &Plan, cells: &[CellResult]) -> Vec<String> {
    let mut out = Vec::new();
    let gemini: Vec<&ConfigPoint> = plan.points.iter().filter(|p| p.strategy.kind() == "gemini").collect();
    if let Some(p) = gemini.first() {
        let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
        let never = mine.iter().filter(|c| c.result.events.is_empty() && c.result.overflow_events > 0).count();
        if never > 0 {
            out.push(format!(
                "{never} of {} conversations overflowed the simulated window without a single compression under the first reference configuration: their history is one user task followed only by tool responses, so `findCompressSplitPoint` has no candidate but index 0 and `compress` returns NOOP at every request.",
                mine.len()
            ));
        }
        let hidden: u64 =
            mine.iter().map(|c| c.result.events.iter().filter(|e| e.hidden_inflation).count() as u64).sum();
        if hidden > 0 {
            out.push(format!("{hidden} compressions were reported as COMPRESSED although the true request (o200k tokens plus the configured system and tool overhead) grew."));
        }
    }
    let inflated: u64 = cells
        .iter()
        .map(|c| {
            c.result.events.iter().filter(|e| e.status == "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT").count() as u64
        })
        .sum();
    if inflated > 0 {
        out.push(format!("{inflated} compression attempts were discarded by the inflation guard over the whole run."));
    }
    out
}

/// Plot images written for the report, with their captions.
#[derive(Clone, Debug, Default)]
pub struct PlotList {
    pub written: Vec<(String, plots::PlotFiles)>,
    pub failed: Vec<String>,
}

fn note(list: &mut PlotList, caption: &str, r: Result<plots::PlotFiles, plots::PlotError>) {
    match r {
        Ok(f) => list.written.push((caption.to_string(), f)),
        Err(e) => list.failed.push(e.to_string()),
    }
}

/// Draws every plot of the report into `dir`.
pub fn draw_plots(plan: &Plan, cells: &[CellResult], dir: &Path) -> PlotList {
    let mut list = PlotList::default();
    let _ = std::fs::create_dir_all(dir);
    // 1. The sawtooth: the conversation with the most reference compressions, one series per strategy.
    let first_of_kind: Vec<&ConfigPoint> = {
        let mut seen = BTreeSet::new();
        plan.points.iter().filter(|p| p.slice.is_none() && seen.insert(p.strategy.kind())).collect()
    };
    let gemini = first_of_kind.iter().find(|p| p.strategy.kind() == "gemini");
    let conv = gemini.and_then(|g| {
        cells
            .iter()
            .filter(|c| c.cell.point == g.id)
            .max_by_key(|c| {
                (
                    c.result.events.iter().filter(|e| e.status == "COMPRESSED").count(),
                    std::cmp::Reverse(c.cell.conversation.clone()),
                )
            })
            .map(|c| c.cell.conversation.clone())
    });
    if let Some(conv) = conv {
        let mut series = Vec::new();
        let mut markers = Vec::new();
        for p in &first_of_kind {
            if let Some(c) = cells.iter().find(|c| c.cell.point == p.id && c.cell.conversation == conv) {
                let idx = series.len();
                series.push(plots::Series {
                    name: p.strategy.kind().to_string(),
                    points: c.result.request_tokens.iter().enumerate().map(|(i, t)| (i as f64, *t as f64)).collect(),
                });
                markers.extend(c.result.events.iter().map(|e| plots::Marker {
                    x: e.request as f64,
                    series: idx,
                    label: e.status.clone(),
                }));
            }
        }
        note(
            &mut list,
            &format!("Context size per request of `{conv}`, with compression events, per strategy"),
            plots::timeline(dir, "timeline", &format!("Context timeline: {conv}"), &series, &markers),
        );
    }
    // 2. Token reduction versus threshold, one series per prompt variant (reference points).
    let mut by_prompt: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in plan.points.iter().filter(|p| p.strategy.kind() == "gemini" && p.slice.is_none()) {
        let (Some(t), Some(prompt)) = (p.axes.get("threshold"), p.axes.get("prompt")) else { continue };
        let key = format!("{prompt} (verification {})", p.axes.get("verification").map(String::as_str).unwrap_or("–"));
        if let (Ok(t), Some(e)) = (t.parse::<f64>(), bootstrap_mean(&metric_values(cells, &p.id, "mean_reduction"))) {
            by_prompt.entry(key).or_default().push((t, e.mean * 100.0));
        }
    }
    let series: Vec<plots::Series> = by_prompt
        .into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            // Several points per threshold (other axes): average them.
            let mut merged: Vec<(f64, f64, usize)> = Vec::new();
            for (x, y) in points {
                match merged.last_mut() {
                    Some(m) if m.0 == x => {
                        m.1 += y;
                        m.2 += 1;
                    }
                    _ => merged.push((x, y, 1)),
                }
            }
            plots::Series { name, points: merged.into_iter().map(|(x, y, n)| (x, y / n as f64)).collect() }
        })
        .collect();
    note(
        &mut list,
        "Mean token reduction per compression versus the threshold, per prompt variant",
        plots::lines(
            dir,
            "reduction-vs-threshold",
            "Token reduction vs threshold",
            "threshold (fraction of the window)",
            "mean reduction (%)",
            &series,
        ),
    );
    // 3. Heatmap: a quality metric versus preserve fraction (rows) and threshold (columns).
    let metric = if cells.iter().any(|c| conversation_metrics(c).contains_key("retention")) {
        "retention"
    } else {
        "cumulative_vs_none"
    };
    let gem: Vec<&ConfigPoint> =
        plan.points.iter().filter(|p| p.strategy.kind() == "gemini" && p.slice.is_none()).collect();
    let uniq = |axis: &str| -> Vec<String> {
        let mut v: Vec<String> = gem.iter().filter_map(|p| p.axes.get(axis).cloned()).collect();
        v.sort_by(|a, b| a.parse::<f64>().unwrap_or(0.0).total_cmp(&b.parse::<f64>().unwrap_or(0.0)));
        v.dedup();
        v
    };
    let (cols, rows) = (uniq("threshold"), uniq("preserve_fraction"));
    let values: Vec<Vec<Option<f64>>> = rows
        .iter()
        .map(|r| {
            cols.iter()
                .map(|c| {
                    let vals: Vec<f64> = gem
                        .iter()
                        .filter(|p| p.axes.get("threshold") == Some(c) && p.axes.get("preserve_fraction") == Some(r))
                        .flat_map(|p| metric_values(cells, &p.id, metric))
                        .collect();
                    bootstrap_mean(&vals).map(|e| e.mean)
                })
                .collect()
        })
        .collect();
    let x_labels: Vec<String> = cols.iter().map(|c| format!("threshold {c}")).collect();
    let y_labels: Vec<String> = rows.iter().map(|r| format!("preserve {r}")).collect();
    note(
        &mut list,
        &format!("Mean `{metric}` by preserve fraction and threshold (reference)"),
        plots::heatmap(
            dir,
            "heatmap",
            &format!("{metric} by preserve fraction × threshold"),
            &x_labels,
            &y_labels,
            &values,
        ),
    );
    // 4. Pareto: cumulative tokens versus quality, one point per config.
    let quality = if cells.iter().any(|c| conversation_metrics(c).contains_key("early_only_retention")) {
        "early_only_retention"
    } else {
        "retention"
    };
    // Slices cover other conversations, so their points are not comparable with the main grid's.
    let pts: Vec<(String, f64, f64)> = plan
        .points
        .iter()
        .filter(|p| p.slice.is_none())
        .filter_map(|p| {
            let x = bootstrap_mean(&metric_values(cells, &p.id, "cumulative_vs_none"))?.mean;
            let y = bootstrap_mean(&metric_values(cells, &p.id, quality))?.mean;
            Some((short_label(p), x, y))
        })
        .collect();
    note(&mut list, &format!("Cumulative tokens versus {quality}, one point per configuration; the front is the set no other point beats on both"), plots::pareto(dir, "pareto", &format!("Cumulative tokens vs {quality}"), "cumulative request tokens vs none", quality, &pts));
    // 5. Histogram of verification-pass deltas.
    let deltas: Vec<f64> = cells
        .iter()
        .flat_map(|c| c.result.events.iter().filter_map(|e| e.verification.as_ref().map(|v| v.edit_distance)))
        .collect();
    note(
        &mut list,
        "How much the verification pass changed the first summary (normalised edit distance per compression)",
        plots::histogram(
            dir,
            "verification-delta",
            "Verification-pass change",
            "normalised edit distance (0 = identical)",
            &deltas,
            20,
        ),
    );
    list
}

/// A compact label for a point: strategy plus its axis values.
pub fn short_label(p: &ConfigPoint) -> String {
    let mut s = p.strategy.kind().to_string();
    for (axis, short) in
        [("threshold", "t"), ("preserve_fraction", "keep"), ("prompt", "prompt"), ("verification", "verify")]
    {
        if let Some(v) = p.axes.get(axis) {
            let _ = write!(s, " {short}={v}");
        }
    }
    if let Some(sl) = &p.slice {
        let _ = write!(s, " [{sl}]");
    }
    s
}

/// What `report` produced.
pub struct ReportOutput {
    pub markdown_path: PathBuf,
    pub terminal: String,
    pub plots: PlotList,
}

/// Rebuilds results, plots and `report.md` from a run directory.
pub fn build(run_dir: &Path) -> Result<ReportOutput, String> {
    let plan = sweep::runner::load_plan(run_dir).map_err(|e| e.to_string())?;
    let cells = sweep::collect(run_dir, &plan);
    let mut frames = aggregate::frames(&plan, &cells).map_err(|e| format!("aggregation: {e}"))?;
    aggregate::write_frames(&mut frames, &run_dir.join("results"))
        .map_err(|e| format!("{}: {e}", run_dir.display()))?;
    crate::probes::figures::write_probe_rows(&plan, &cells, &run_dir.join("results"))
        .map_err(|e| format!("{}: probes.csv: {e}", run_dir.display()))?;
    let plots = draw_plots(&plan, &cells, &run_dir.join("plots"));
    let head = headline(&plan, &cells);
    let md = markdown(run_dir, &plan, &cells, &head, &plots);
    let markdown_path = run_dir.join("report.md");
    crate::fsutil::write_atomic(&markdown_path, md.as_bytes())
        .map_err(|e| format!("{}: {e}", markdown_path.display()))?;
    Ok(ReportOutput { markdown_path, terminal: head.terminal(), plots })
}

fn markdown(run_dir: &Path, plan: &Plan, cells: &[CellResult], head: &Table, plots: &PlotList) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# compactbench report: {}\n", plan.name);
    let expected = plan.cells().len();
    let _ = writeln!(
        md,
        "{} of {} cells ({} configurations × {} conversations × {} repeat(s)).\n",
        cells.len(),
        expected,
        plan.points.len(),
        plan.conversations.len(),
        plan.repeats
    );
    md.push_str("## Headline\n\n");
    md.push_str("Token figures are the reference's own (`originalTokenCount`/`newTokenCount`); *cumulative tokens vs none* sums the size of every request of the replay against the same replay without compression (lower is cheaper). Intervals are bootstrap 95 % confidence intervals over conversations.\n\n");
    md.push_str(&head.markdown());
    md.push_str("\n\n");
    let f = findings(plan, cells);
    if !f.is_empty() {
        md.push_str("## Findings\n\n");
        for x in f {
            let _ = writeln!(md, "- {x}");
        }
        md.push('\n');
    }
    md.push_str(&crate::probes::figures::markdown_section(plan, cells));
    if let Some(t) = systems::per_system(plan, cells) {
        md.push_str("## Per system\n\n");
        md.push_str("Each agent's policy as modelled in `replay/strategies/` (`compactbench strategies`). *Cumulative tokens vs none*: the sum of every request's size against the same replay without compression; *retention at end*: share of probes whose answer is still in the final history; *compressions*: COMPRESSED and CONTENT_TRUNCATED events; *overflows*: requests larger than the window.\n\n");
        md.push_str(&t.markdown());
        md.push_str("\n\n");
    }
    md.push_str("## Plots\n\n");
    for (caption, files) in &plots.written {
        let rel = files.png.strip_prefix(run_dir).unwrap_or(&files.png).display().to_string();
        let svg = files.svg.strip_prefix(run_dir).unwrap_or(&files.svg).display().to_string();
        let _ = writeln!(md, "![{caption}]({rel})\n\n*{caption}* ([SVG]({svg}))\n");
    }
    for e in &plots.failed {
        let _ = writeln!(md, "- not drawn: {e}");
    }
    md.push_str("\n## Corpus\n\n");
    md.push_str(&corpus(plan, cells).markdown());
    md.push_str("\n\n## Configuration\n\n");
    let replay = serde_json::to_string_pretty(&plan.replay).unwrap_or_default();
    let _ = writeln!(md, "Replay settings:\n\n```json\n{replay}\n```\n");
    let mut cfg =
        Table { header: ["point", "strategy", "summarizer", "axes"].map(String::from).to_vec(), rows: Vec::new() };
    for p in &plan.points {
        let axes: Vec<String> = p
            .axes
            .iter()
            .filter(|(k, _)| *k != "strategy" && *k != "summarizer")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        cfg.rows.push(vec![
            p.id.clone(),
            p.strategy.kind().into(),
            p.summarizer.clone().unwrap_or_else(|| "–".into()),
            axes.join(", "),
        ]);
    }
    md.push_str(&cfg.markdown());
    md.push_str("\n\nResults: `results/{events,conversations,points}.{parquet,csv,json}`, `results/probes.{csv,parquet}`; raw cells: `cells/`.\n");
    md
}
