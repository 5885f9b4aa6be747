//! The per-system table: each strategy that models another agent's policy (and the reference and `none`
//! beside them), with its cost, what it kept, how often it compressed, how often a compression left the
//! request above its own trigger (a storm), how often the window overflowed and how many requests after a
//! compression a provider would reject.

use crate::compress::CompressionStatus;
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{percent, FigureId, PercentStyle, Share};
use crate::replay::strategy::Role;
use crate::report::summary::{summarize, PointSummary};
use crate::table::Table;

/// The axis values that tell this point from the other points of its strategy (`–` when it has no other).
fn variant(p: &ConfigPoint, plan: &Plan) -> String {
    let same: Vec<&ConfigPoint> =
        plan.points.iter().filter(|q| q.slice.is_none() && q.strategy.kind() == p.strategy.kind()).collect();
    let shown: Vec<String> = p
        .axes
        .iter()
        .filter(|(k, v)| same.iter().any(|q| q.axes.get(*k) != Some(*v)))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if shown.is_empty() {
        "–".into()
    } else {
        shown.join(" ")
    }
}

/// The table, when the run holds at least one strategy modelling another agent.
pub fn per_system(plan: &Plan, cells: &[CellResult]) -> Option<Table> {
    if !plan.has_role(Role::OtherSystem) {
        return None;
    }
    let summaries = summarize(plan, cells);
    let title = |id: FigureId| id.metric().title();
    let header = vec![
        "system".into(),
        "strategy".into(),
        "variant".into(),
        "cells".into(),
        FigureId::Failed.metric().header.into(),
        title(FigureId::TokensVsNone),
        title(FigureId::EarlyOnlyRetention),
        "compressions".into(),
        "storms ↓".into(),
        title(FigureId::OverflowRequests),
        title(FigureId::InvalidRequests),
    ];
    let mut rows = Vec::new();
    for (p, s) in plan.points.iter().zip(&summaries).filter(|(p, _)| p.slice.is_none()) {
        let system = p.strategy.system().unwrap_or(match p.strategy.role() {
            Some(Role::NoCompression) => "(no compression)",
            _ => "(baseline)",
        });
        rows.push(row(system, p, &variant(p, plan), s));
    }
    Some(Table { header, rows })
}

fn row(system: &str, p: &ConfigPoint, variant: &str, s: &PointSummary) -> Vec<String> {
    let total = |id| s.figure(id).map(|f| (f.value as u64).to_string()).unwrap_or_else(|| "0".into());
    let share = |id| percent(s.figure(id).map(|f| Share::Fraction(f.value)), PercentStyle::TABLE);
    let compressions: u64 = [CompressionStatus::Compressed, CompressionStatus::ContentTruncated]
        .iter()
        .map(|k| s.events_by_status.get(*k))
        .sum();
    vec![
        system.to_string(),
        p.axes.get(crate::data::plan::STRATEGY_AXIS).cloned().unwrap_or_else(|| p.strategy.kind().to_string()),
        variant.to_string(),
        s.conversations.to_string(),
        total(FigureId::Failed),
        share(FigureId::TokensVsNone),
        share(FigureId::EarlyOnlyRetention),
        compressions.to_string(),
        s.figure(FigureId::StormEvents).map(|f| (f.value as u64).to_string()).unwrap_or_else(|| "–".into()),
        total(FigureId::OverflowRequests),
        total(FigureId::InvalidRequests),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::config::SweepConfig;

    fn plan_of(file: &str) -> Plan {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        SweepConfig::load(&root.join(file)).unwrap().plan_without_conversations().unwrap()
    }

    #[test]
    fn a_row_per_point_of_the_systems_config_and_no_table_for_the_default_run() {
        let t = per_system(&plan_of("configs/systems.toml"), &[]).expect("other agents' strategies");
        let systems: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(systems.len(), 11);
        assert!(systems.contains(&"Codex CLI") && systems.contains(&"(no compression)"), "{systems:?}");
        let cline: Vec<&str> = t.rows.iter().filter(|r| r[1] == "cline").map(|r| r[2].as_str()).collect();
        assert_eq!(cline, ["mode=summary", "mode=truncate"]);
        assert!(per_system(&plan_of("configs/default.toml"), &[]).is_none());
    }
}
