//! `compactbench gate`: compares a run with a committed baseline, conversation by conversation, and
//! fails only on regressions the data supports (a bootstrap interval of the paired differences beyond the
//! tolerance), so noise does not fail the build.

use super::{short_label, Table};
use crate::metrics::{bootstrap_mean, conversation_values, point_pricing, Estimate};
use crate::sweep::{self, CellResult, Plan};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Lower values are better (tokens, failures).
    Lower,
    /// Higher values are better (reduction, retention, accuracy).
    Higher,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// A per-conversation metric (see `crate::metrics::METRICS` and `docs/metrics.md`).
    pub metric: String,
    pub direction: Direction,
    /// A change smaller than `max(abs_tolerance, rel_tolerance × |baseline mean|)` is never a regression.
    #[serde(default)]
    pub abs_tolerance: f64,
    #[serde(default)]
    pub rel_tolerance: f64,
    /// Fewer paired conversations than this: the check is skipped, not failed.
    #[serde(default = "default_min_samples")]
    pub min_samples: usize,
    /// Only these strategies (empty: all).
    #[serde(default)]
    pub strategies: Vec<String>,
}

fn default_min_samples() -> usize {
    5
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    pub rule: Vec<Rule>,
}

impl Default for Rules {
    fn default() -> Self {
        let r = |metric: &str, direction, abs_tolerance, rel_tolerance| Rule {
            metric: metric.into(),
            direction,
            abs_tolerance,
            rel_tolerance,
            min_samples: 5,
            strategies: Vec::new(),
        };
        Rules {
            rule: vec![
                r("cost_vs_none", Direction::Lower, 0.01, 0.0),
                r("mean_reduction", Direction::Higher, 0.02, 0.0),
                r("inflated_events", Direction::Lower, 0.1, 0.0),
                r("empty_summary_events", Direction::Lower, 0.1, 0.0),
                r("hidden_inflation_events", Direction::Lower, 0.1, 0.0),
                r("failed", Direction::Lower, 0.0, 0.0),
                r("retention", Direction::Higher, 0.02, 0.0),
                r("accuracy", Direction::Higher, 0.02, 0.0),
            ],
        }
    }
}

impl Rules {
    pub fn load(path: &Path) -> Result<Rules, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.to_string().trim()))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Regression,
    Skipped,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub point: String,
    pub label: String,
    pub strategy: String,
    pub metric: String,
    pub n: usize,
    pub baseline_mean: Option<f64>,
    pub current_mean: Option<f64>,
    /// Mean paired difference (current − baseline) with its bootstrap 95 % interval.
    pub difference: Option<Estimate>,
    pub tolerance: f64,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    pub checks: Vec<Check>,
}

impl GateReport {
    pub fn regressions(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Regression)
    }

    pub fn passed(&self) -> bool {
        self.regressions().next().is_none()
    }
}

/// Why two runs cannot be compared (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

fn load(dir: &Path) -> Result<(Plan, Vec<CellResult>), Unusable> {
    let plan = sweep::runner::load_plan(dir).map_err(Unusable)?;
    let cells = sweep::collect(dir, &plan);
    if cells.is_empty() {
        return Err(Unusable(format!("{}: no stored results", dir.display())));
    }
    Ok((plan, cells))
}

/// Compares `current` with `baseline`.
pub fn compare(baseline: &Path, current: &Path, rules: &Rules) -> Result<GateReport, Unusable> {
    let (bplan, bcells) = load(baseline)?;
    let (cplan, ccells) = load(current)?;
    let ids = |p: &Plan| p.points.iter().map(|x| x.id.clone()).collect::<Vec<_>>();
    if ids(&bplan) != ids(&cplan) {
        return Err(Unusable(format!(
            "{} and {} were run with different configurations ({} vs {} points, or other settings); re-run the baseline",
            baseline.display(),
            current.display(),
            bplan.points.len(),
            cplan.points.len()
        )));
    }
    let convs = |p: &Plan| p.conversations.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    if convs(&bplan) != convs(&cplan) {
        return Err(Unusable(format!(
            "{} and {} cover different corpora ({} vs {} conversations)",
            baseline.display(),
            current.display(),
            bplan.conversations.len(),
            cplan.conversations.len()
        )));
    }
    // Every figure from its one definition (`crate::metrics`), with the plan's prices.
    let index = |plan: &Plan, cells: &[CellResult]| -> BTreeMap<(String, String, u32), BTreeMap<&'static str, f64>> {
        let pricing: BTreeMap<&str, _> = plan.points.iter().map(|p| (p.id.as_str(), point_pricing(plan, p))).collect();
        cells
            .iter()
            .map(|c| {
                let prices = pricing.get(c.cell.point.as_str()).copied().flatten();
                (
                    (c.cell.point.clone(), c.cell.conversation.clone(), c.cell.repeat),
                    conversation_values(c, prices.as_ref()),
                )
            })
            .collect()
    };
    let (bi, ci) = (index(&bplan, &bcells), index(&cplan, &ccells));
    let mut checks = Vec::new();
    for p in &cplan.points {
        for rule in &rules.rule {
            if !rule.strategies.is_empty() && !rule.strategies.iter().any(|s| s == p.strategy.kind()) {
                continue;
            }
            let mut base = Vec::new();
            let mut cur = Vec::new();
            for (key, bm) in bi.iter().filter(|(k, _)| k.0 == p.id) {
                if let (Some(b), Some(c)) =
                    (bm.get(rule.metric.as_str()), ci.get(key).and_then(|m| m.get(rule.metric.as_str())))
                {
                    base.push(*b);
                    cur.push(*c);
                }
            }
            if base.is_empty() {
                continue; // the metric does not apply to this point
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let diffs: Vec<f64> = cur.iter().zip(&base).map(|(c, b)| c - b).collect();
            let difference = bootstrap_mean(&diffs);
            let tolerance = rule.abs_tolerance.max(rule.rel_tolerance * mean(&base).abs());
            let verdict = match difference {
                _ if base.len() < rule.min_samples => Verdict::Skipped,
                Some(d) if rule.direction == Direction::Lower && d.low > tolerance => Verdict::Regression,
                Some(d) if rule.direction == Direction::Higher && d.high < -tolerance => Verdict::Regression,
                _ => Verdict::Pass,
            };
            checks.push(Check {
                point: p.id.clone(),
                label: short_label(p),
                strategy: p.strategy.kind().into(),
                metric: rule.metric.clone(),
                n: base.len(),
                baseline_mean: Some(mean(&base)),
                current_mean: Some(mean(&cur)),
                difference,
                tolerance,
                verdict,
            });
        }
    }
    Ok(GateReport { checks })
}

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.4}")).unwrap_or_else(|| "–".into())
}

/// The Markdown verdict.
pub fn markdown(report: &GateReport) -> String {
    let mut md = String::new();
    let regressions: Vec<&Check> = report.regressions().collect();
    let skipped = report.checks.iter().filter(|c| c.verdict == Verdict::Skipped).count();
    let _ = writeln!(
        md,
        "## compactbench gate: {}\n\n{} checks, {} regressions, {} skipped (too few paired conversations).\n",
        if regressions.is_empty() { "PASS" } else { "FAIL" },
        report.checks.len(),
        regressions.len(),
        skipped
    );
    let mut rows: Vec<&Check> = regressions.clone();
    if regressions.is_empty() {
        rows = report.checks.iter().filter(|c| c.verdict != Verdict::Skipped).collect();
    }
    let table = Table {
        header: ["verdict", "configuration", "metric", "n", "baseline", "current", "difference [95% CI]", "tolerance"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .iter()
            .map(|c| {
                vec![
                    format!("{:?}", c.verdict).to_lowercase(),
                    c.label.clone(),
                    c.metric.clone(),
                    c.n.to_string(),
                    num(c.baseline_mean),
                    num(c.current_mean),
                    c.difference
                        .map(|d| format!("{:+.4} [{:+.4}, {:+.4}]", d.mean, d.low, d.high))
                        .unwrap_or_else(|| "–".into()),
                    format!("{:.4}", c.tolerance),
                ]
            })
            .collect(),
    };
    md.push_str(&table.markdown());
    md.push('\n');
    md
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// JUnit XML: one test case per check.
pub fn junit(report: &GateReport) -> String {
    let failures = report.regressions().count();
    let skipped = report.checks.iter().filter(|c| c.verdict == Verdict::Skipped).count();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"compactbench-gate\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        report.checks.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"compactbench-gate\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        report.checks.len()
    );
    for c in &report.checks {
        let name = xml_escape(&format!("{} :: {}", c.label, c.metric));
        let _ = write!(x, "    <testcase classname=\"{}\" name=\"{name}\"", xml_escape(&c.strategy));
        match c.verdict {
            Verdict::Pass => x.push_str("/>\n"),
            Verdict::Skipped => {
                let _ = writeln!(x, "><skipped message=\"only {} paired conversations\"/></testcase>", c.n);
            }
            Verdict::Regression => {
                let d =
                    c.difference.map(|d| format!("{:+.4} [{:+.4}, {:+.4}]", d.mean, d.low, d.high)).unwrap_or_default();
                let msg = xml_escape(&format!(
                    "{}: baseline {} → current {}, difference {d} beyond tolerance {:.4}",
                    c.metric,
                    num(c.baseline_mean),
                    num(c.current_mean),
                    c.tolerance
                ));
                let _ = writeln!(x, "><failure message=\"{msg}\"/></testcase>");
            }
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}
