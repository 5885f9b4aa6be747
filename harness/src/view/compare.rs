//! `view --compare`: what the regression gate says about two runs, down to the cells. The gate judges a
//! configuration by the paired mean over its conversations; the page lists, for every check that failed,
//! the cells whose own value moved beyond the check's tolerance on the worse side, so a reader goes from
//! the verdict to the conversations behind it.

use crate::data::{CellResult, Plan};
use crate::metrics::{self, FigureId};
use crate::stats::Estimate;
use crate::verdict::gate::{self, Direction, GateReport, Rules};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub struct GateFlags {
    /// Index of the baseline and the current run in the page's runs.
    pub baseline: usize,
    pub current: usize,
    /// What keeps the runs from being compared cell for cell (the gate fails them whatever the figures).
    pub completeness: Vec<String>,
    pub checks: usize,
    pub regressions: Vec<FlaggedCheck>,
    pub cells: Vec<FlaggedCell>,
}

#[derive(Debug, Serialize)]
pub struct FlaggedCheck {
    pub point: String,
    pub label: String,
    pub metric: FigureId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<Estimate>,
    pub tolerance: f64,
}

#[derive(Debug, Serialize)]
pub struct FlaggedCell {
    pub point: String,
    pub conversation: String,
    pub repeat: u32,
    pub metric: FigureId,
    pub baseline: f64,
    pub current: f64,
}

/// A run's per-conversation values of one metric at one point, by (conversation, repeat).
fn values(plan: &Plan, cells: &[CellResult], point: &str, metric: FigureId) -> BTreeMap<(String, u32), f64> {
    let pricing = plan.points.iter().find(|p| p.id == point).and_then(|p| metrics::point_pricing(plan, p));
    cells
        .iter()
        .filter(|c| c.cell.point == point)
        .filter_map(|c| {
            let v = *metrics::conversation_values(c, pricing.as_ref()).get(&metric)?;
            Some(((c.cell.conversation.clone(), c.cell.repeat), v))
        })
        .collect()
}

/// The cells behind each regression of `report`: those whose value moved beyond the check's tolerance in
/// the direction its rule calls worse.
pub fn flags(
    report: &GateReport,
    rules: &Rules,
    (baseline_plan, baseline_cells): (&Plan, &[CellResult]),
    (current_plan, current_cells): (&Plan, &[CellResult]),
) -> GateFlags {
    let mut regressions = Vec::new();
    let mut cells = Vec::new();
    for check in report.regressions() {
        regressions.push(FlaggedCheck {
            point: check.point.clone(),
            label: check.label.clone(),
            metric: check.metric,
            difference: check.difference,
            tolerance: check.tolerance,
        });
        let Some(rule) = rules.rule.iter().find(|r| r.metric == check.metric && r.only == check.only) else {
            continue;
        };
        let before = values(baseline_plan, baseline_cells, &check.point, check.metric);
        let after = values(current_plan, current_cells, &check.point, check.metric);
        for (key, b) in &before {
            let Some(c) = after.get(key) else { continue };
            let worse = match rule.direction {
                Direction::Lower => c - b > check.tolerance,
                Direction::Higher => b - c > check.tolerance,
            };
            if worse {
                cells.push(FlaggedCell {
                    point: check.point.clone(),
                    conversation: key.0.clone(),
                    repeat: key.1,
                    metric: check.metric,
                    baseline: *b,
                    current: *c,
                });
            }
        }
    }
    GateFlags {
        baseline: 1,
        current: 0,
        completeness: report.completeness.clone(),
        checks: report.checks.len(),
        regressions,
        cells,
    }
}

/// Runs the gate with its default rules (the shipped `configs/gate.toml`) on the two run directories.
pub fn gate(baseline: &std::path::Path, current: &std::path::Path) -> Result<(GateReport, Rules), gate::GateError> {
    let rules = Rules::default();
    Ok((gate::compare(baseline, current, &rules)?, rules))
}
