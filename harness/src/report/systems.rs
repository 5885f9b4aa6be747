//! The per-system table: each strategy that models another agent's policy (and the reference and `none`
//! beside them), with its cost, what it kept, how often it compressed and how often the window overflowed.

use super::Table;
use crate::sweep::summary::{summarize, PointSummary};
use crate::sweep::{CellResult, ConfigPoint, Plan};

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_else(|| "–".into())
}

/// The agent a strategy models, from the registry (`None` for baselines and unknown strategies).
fn system_of(p: &ConfigPoint) -> Option<&'static str> {
    crate::replay::strategy::registry().into_iter().find(|s| s.name() == p.strategy.kind()).and_then(|s| s.system())
}

/// Axis values that tell two points of one system apart (all but the shared ones).
fn variant(p: &ConfigPoint) -> String {
    let shared = ["strategy", "summarizer", "token_limit"];
    p.axes
        .iter()
        .filter(|(k, _)| !shared.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The table, when the run holds at least one strategy modelling another agent.
pub fn per_system(plan: &Plan, cells: &[CellResult]) -> Option<Table> {
    let others = plan.points.iter().any(|p| system_of(p).is_some() && p.strategy.kind() != "gemini");
    if !others {
        return None;
    }
    let summaries = summarize(plan, cells);
    let header = [
        "system",
        "strategy",
        "variant",
        "cells",
        "failed",
        "cumulative tokens vs none",
        "retention at end",
        "compressions",
        "overflows",
    ];
    let mut rows = Vec::new();
    for (p, s) in plan.points.iter().zip(&summaries).filter(|(p, _)| p.slice.is_none()) {
        let system =
            system_of(p).unwrap_or(if p.strategy.kind() == "none" { "(no compression)" } else { "(baseline)" });
        rows.push(row(system, p, s));
    }
    Some(Table { header: header.map(String::from).to_vec(), rows })
}

fn row(system: &str, p: &ConfigPoint, s: &PointSummary) -> Vec<String> {
    let compressions: u64 = ["COMPRESSED", "CONTENT_TRUNCATED"].iter().filter_map(|k| s.events_by_status.get(*k)).sum();
    vec![
        system.to_string(),
        p.axes.get("strategy").cloned().unwrap_or_else(|| p.strategy.kind().to_string()),
        variant(p),
        s.conversations.to_string(),
        s.failed.to_string(),
        pct(s.cumulative_vs_none),
        pct(s.probes.as_ref().and_then(|x| x.all.retention_end)),
        compressions.to_string(),
        s.overflow_events.to_string(),
    ]
}
