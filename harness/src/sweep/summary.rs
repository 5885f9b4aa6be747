//! The run's summary (per config point), printed after `run` and written as `summary.json`.

use super::runner::{CellResult, Plan};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Aggregates of one config point over its conversations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointSummary {
    pub point: String,
    pub strategy: String,
    pub summarizer: String,
    pub axes: BTreeMap<String, String>,
    pub conversations: usize,
    pub failed: usize,
    pub events_by_status: BTreeMap<String, u64>,
    /// Mean of `1 − after/before` over COMPRESSED and CONTENT_TRUNCATED events.
    pub mean_reduction: Option<f64>,
    pub hidden_inflation: u64,
    pub hidden_deflation: u64,
    pub overflow_events: u64,
    /// Σ cumulative request tokens / Σ the same without compression (1.0 = no saving).
    pub cumulative_vs_none: Option<f64>,
    pub summarizer_overhead_tokens: u64,
    /// Share of verified events whose verification pass changed the summary.
    pub verification_changed: Option<f64>,
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

pub fn summarize(plan: &Plan, cells: &[CellResult]) -> Vec<PointSummary> {
    plan.points
        .iter()
        .map(|p| {
            let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
            let mut s = PointSummary {
                point: p.id.clone(),
                strategy: p.strategy.kind().to_string(),
                summarizer: p.summarizer.clone().unwrap_or_else(|| "-".into()),
                axes: p.axes.clone(),
                conversations: mine.len(),
                ..Default::default()
            };
            let mut reductions = Vec::new();
            let mut verified = 0usize;
            let mut changed = 0usize;
            let (mut cum, mut base) = (0u64, 0u64);
            for c in &mine {
                let r = &c.result;
                s.failed += r.error.is_some() as usize;
                for e in &r.events {
                    *s.events_by_status.entry(e.status.clone()).or_default() += 1;
                    if e.status == "COMPRESSED" || e.status == "CONTENT_TRUNCATED" {
                        reductions.push(e.reduction);
                    }
                    s.hidden_inflation += e.hidden_inflation as u64;
                    s.hidden_deflation += e.hidden_deflation as u64;
                    if let Some(v) = &e.verification {
                        verified += 1;
                        changed += !v.identical as usize;
                    }
                }
                s.overflow_events += r.overflow_events;
                s.summarizer_overhead_tokens += r.summarizer_overhead_tokens;
                cum += r.cumulative_request_tokens;
                base += r.baseline_cumulative_tokens;
            }
            s.mean_reduction = mean(&reductions);
            s.cumulative_vs_none = (base > 0).then(|| cum as f64 / base as f64);
            s.verification_changed = (verified > 0).then(|| changed as f64 / verified as f64);
            s
        })
        .collect()
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_else(|| "-".into())
}

/// A terminal table of the summary (the axes that vary across points, then the figures).
pub fn table(summaries: &[PointSummary]) -> String {
    let mut varying: Vec<String> = Vec::new();
    let all_axes: std::collections::BTreeSet<&String> = summaries.iter().flat_map(|s| s.axes.keys()).collect();
    for a in all_axes {
        if a == "strategy" || a == "summarizer" {
            continue;
        }
        let values: std::collections::BTreeSet<Option<&String>> = summaries.iter().map(|s| s.axes.get(a)).collect();
        if values.len() > 1 {
            varying.push(a.clone());
        }
    }
    let mut builder = tabled::builder::Builder::default();
    let mut header: Vec<String> = vec!["strategy".into(), "summarizer".into()];
    header.extend(varying.iter().cloned());
    header.extend(
        [
            "convs",
            "compressed",
            "inflated",
            "empty",
            "truncated",
            "mean reduction",
            "hidden infl.",
            "cum. vs none",
            "verif. changed",
            "failed",
        ]
        .map(String::from),
    );
    builder.push_record(header);
    for s in summaries {
        let status = |k: &str| s.events_by_status.get(k).copied().unwrap_or(0).to_string();
        let mut row = vec![s.strategy.clone(), s.summarizer.clone()];
        row.extend(varying.iter().map(|a| s.axes.get(a).cloned().unwrap_or_else(|| "-".into())));
        row.extend([
            s.conversations.to_string(),
            status("COMPRESSED"),
            status("COMPRESSION_FAILED_INFLATED_TOKEN_COUNT"),
            status("COMPRESSION_FAILED_EMPTY_SUMMARY"),
            status("CONTENT_TRUNCATED"),
            pct(s.mean_reduction),
            s.hidden_inflation.to_string(),
            pct(s.cumulative_vs_none),
            pct(s.verification_changed),
            s.failed.to_string(),
        ]);
        builder.push_record(row);
    }
    let mut t = builder.build();
    t.with(tabled::settings::Style::sharp());
    t.to_string()
}
