//! `compactbench gate`: compares a run with a committed baseline, conversation by conversation, and
//! fails only on regressions the data supports (a bootstrap interval of the paired differences beyond the
//! tolerance), so noise does not fail the build.

use crate::data::store::{self, Stage, StoreError};
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{conversation_values, point_pricing, FigureId};
use crate::stats::{bootstrap_mean, Estimate};
use crate::table::Table;
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
    /// A per-conversation metric, by name (see `crate::metrics::METRICS` and `harness/docs/metrics.md`); an
    /// unknown name fails loading the rules.
    pub metric: FigureId,
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
    /// Which conversations the rule compares: `all`, or `compressed` (those where compression acted in
    /// either run), so a loss is not diluted over conversations where nothing happened.
    #[serde(default)]
    pub only: Only,
    /// How the rule decides: `bootstrap` (the paired interval against the tolerance), or
    /// `none_if_baseline_none` (a hard count: any conversation with a nonzero value where the baseline's is 0).
    #[serde(default, skip_serializing_if = "RuleKind::is_bootstrap")]
    pub kind: RuleKind,
}

/// How a rule decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Fails when the bootstrap 95 % interval of the mean paired difference lies beyond the tolerance.
    #[default]
    Bootstrap,
    /// Fails on any paired conversation whose current value is nonzero where the baseline's is 0 (a fault
    /// that must never appear, such as a request a provider rejects); tolerances are not used.
    NoneIfBaselineNone,
}

impl RuleKind {
    fn is_bootstrap(&self) -> bool {
        *self == RuleKind::Bootstrap
    }
}

/// The conversations a rule compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Only {
    #[default]
    All,
    /// Conversations with at least one event that changed the history (COMPRESSED or CONTENT_TRUNCATED) in
    /// the baseline or the current run.
    Compressed,
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
        use FigureId::*;
        let r = |metric, direction, abs_tolerance, rel_tolerance| Rule {
            metric,
            direction,
            abs_tolerance,
            rel_tolerance,
            min_samples: 5,
            strategies: Vec::new(),
            only: Only::All,
            kind: RuleKind::Bootstrap,
        };
        let compressed = |metric| Rule { only: Only::Compressed, ..r(metric, Direction::Higher, 0.02, 0.0) };
        Rules {
            rule: vec![
                r(TokensVsNone, Direction::Lower, 0.01, 0.0),
                r(UsdVsNone, Direction::Lower, 0.01, 0.0),
                r(Reduction, Direction::Higher, 0.02, 0.0),
                r(StormEvents, Direction::Lower, 0.1, 0.0),
                r(InflatedEvents, Direction::Lower, 0.1, 0.0),
                r(EmptySummaryEvents, Direction::Lower, 0.1, 0.0),
                r(HiddenInflationEvents, Direction::Lower, 0.1, 0.0),
                // One failed conversation is a regression whatever the sample.
                Rule { min_samples: 1, ..r(Failed, Direction::Lower, 0.0, 0.0) },
                r(OverflowRequests, Direction::Lower, 0.1, 0.0),
                r(OverflowedConversations, Direction::Lower, 0.0, 0.0),
                Rule {
                    min_samples: 1,
                    kind: RuleKind::NoneIfBaselineNone,
                    ..r(InvalidRequests, Direction::Lower, 0.0, 0.0)
                },
                r(EarlyOnlyRetention, Direction::Higher, 0.02, 0.0),
                Rule { abs_tolerance: 0.005, ..compressed(RetentionAtEvents) },
                compressed(EarlyOnlyRetention),
                compressed(AtRiskRetention),
                r(RetrievalAccuracy, Direction::Higher, 0.02, 0.0),
            ],
        }
    }
}

impl Rules {
    /// One line per rule, for `gate --help`: the metric, which way is worse, the tolerance, the pairs
    /// needed and the conversations compared.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for r in &self.rule {
            let worse = match r.direction {
                Direction::Lower => "higher is worse",
                Direction::Higher => "lower is worse",
            };
            let tolerance = if r.kind == RuleKind::NoneIfBaselineNone {
                "none where the baseline has none".to_string()
            } else if r.rel_tolerance > 0.0 {
                format!("max({}, {} × |baseline|)", r.abs_tolerance, r.rel_tolerance)
            } else {
                format!("{}", r.abs_tolerance)
            };
            let only = match r.only {
                Only::All => "all conversations",
                Only::Compressed => "conversations compression acted on",
            };
            let strategies =
                if r.strategies.is_empty() { String::new() } else { format!(", only {}", r.strategies.join(", ")) };
            out.push_str(&format!(
                "  {:<26} {worse}, tolerance {tolerance}, ≥ {} pairs, {only}{strategies}\n",
                r.metric, r.min_samples
            ));
        }
        out
    }

    pub fn load(path: &Path) -> Result<Rules, GateError> {
        let bad = |message: String| GateError::Rules { path: path.to_path_buf(), message };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let rules: Rules = toml::from_str(&text).map_err(|e| bad(e.to_string().trim().to_string()))?;
        // The gate pairs per-conversation values; a figure pooled over a point's probes or read from the
        // recordings has none, and a rule on it could only ever be skipped.
        if let Some((i, r)) = rules.rule.iter().enumerate().find(|(_, r)| !r.metric.metric().per_cell()) {
            return Err(bad(format!(
                "rule[{i}].metric: `{}` has no value per conversation (it is pooled over a point's probes or read \
                 from the recordings), and the gate compares per-conversation values; see harness/docs/metrics.md",
                r.metric
            )));
        }
        Ok(rules)
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
    pub metric: FigureId,
    pub n: usize,
    pub baseline_mean: Option<f64>,
    pub current_mean: Option<f64>,
    /// Mean paired difference (current − baseline) with its bootstrap 95 % interval.
    pub difference: Option<Estimate>,
    pub tolerance: f64,
    pub verdict: Verdict,
    /// Why a check was skipped, or which conversations failed a hard count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `compressed` when the check compares only conversations where compression acted.
    #[serde(default)]
    pub only: Only,
    /// How the rule decided.
    #[serde(default, skip_serializing_if = "RuleKind::is_bootstrap")]
    pub kind: RuleKind,
    /// The smallest regression of the mean this check detects on the baseline: every paired conversation
    /// made worse by the same fraction of its baseline value, the smallest such shift whose bootstrap
    /// interval lies beyond the tolerance (see [`detectable_shift`]). `None` when skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
}

/// The smallest mean shift (in the metric's unit, on the bad side) that fails a check on these baseline
/// values. Model: the regression worsens every paired conversation by the same fraction `r` of its
/// baseline value, so the differences are `r·b` and their bootstrap interval is `r` times the interval of
/// the baseline mean (same resamples); the check fails once the interval's near end passes the tolerance,
/// at `r* = tolerance / near end`, a mean shift of `r*·mean`. When the baseline interval reaches zero (a
/// metric that is usually 0, such as failures) no proportional change shows, and the model is a uniform
/// additive shift, detected once it exceeds the tolerance.
pub fn detectable_shift(baseline: &[f64], tolerance: f64) -> Option<f64> {
    let b = bootstrap_mean(baseline)?;
    let near = if b.mean >= 0.0 { b.low } else { -b.high };
    if near <= 0.0 || !near.is_finite() {
        return Some(tolerance);
    }
    Some(tolerance / near * b.mean.abs())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    /// What makes the comparison incomplete (missing or damaged cells, configurations or conversations in
    /// one run only, plans that differ). Checked first: any entry fails the gate with its own status.
    pub completeness: Vec<String>,
    pub checks: Vec<Check>,
}

impl GateReport {
    pub fn regressions(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Regression)
    }

    pub fn complete(&self) -> bool {
        self.completeness.is_empty()
    }

    pub fn passed(&self) -> bool {
        self.complete() && self.regressions().next().is_none()
    }
}

/// Why the gate could not run at all (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("{}: {message}", .path.display())]
    Rules { path: std::path::PathBuf, message: String },
    #[error(transparent)]
    Plan(#[from] StoreError),
}

/// At most this many lines per kind of completeness problem.
const MAX_LISTED: usize = 20;

fn listed(kind: &str, items: Vec<String>) -> Vec<String> {
    let total = items.len();
    let mut out: Vec<String> = items.into_iter().take(MAX_LISTED).map(|i| format!("{kind}: {i}")).collect();
    if total > MAX_LISTED {
        out.push(format!("{kind}: … and {} more", total - MAX_LISTED));
    }
    out
}

/// Everything that keeps the two runs from being compared cell for cell.
fn completeness(baseline: &Path, bplan: &Plan, current: &Path, cplan: &Plan) -> (Vec<String>, [Vec<CellResult>; 2]) {
    let mut problems = Vec::new();
    let only_in = |a: &Plan, b: &Plan| -> Vec<String> {
        a.points
            .iter()
            .filter(|p| !b.points.iter().any(|q| q.id == p.id))
            .map(|p| format!("{} ({})", p.short_label(), p.id))
            .collect()
    };
    problems.extend(listed("configuration missing from the current run", only_in(bplan, cplan)));
    problems.extend(listed("configuration not in the baseline", only_in(cplan, bplan)));
    let convs_only_in = |a: &Plan, b: &Plan| -> Vec<String> {
        a.conversations.iter().filter(|c| !b.conversations.iter().any(|d| d.id == c.id)).map(|c| c.id.clone()).collect()
    };
    problems.extend(listed("conversation missing from the current run", convs_only_in(bplan, cplan)));
    problems.extend(listed("conversation not in the baseline", convs_only_in(cplan, bplan)));
    for p in &cplan.points {
        if let Some(b) = bplan.points.iter().find(|q| q.id == p.id) {
            if b != p {
                problems.push(format!("plan differs: configuration {} has other settings than in the baseline", p.id));
            }
        }
    }
    if bplan.repeats != cplan.repeats {
        problems.push(format!("plan differs: repeats {} in the baseline, {} now", bplan.repeats, cplan.repeats));
    }
    if bplan.replay != cplan.replay {
        problems.push("plan differs: the replay settings ([replay]) are not the baseline's".into());
    }
    if bplan.probes != cplan.probes {
        problems.push("plan differs: the probe settings ([probes]) are not the baseline's".into());
    }
    let bstored = store::load_cells(baseline, bplan);
    let cstored = store::load_cells(current, cplan);
    for (which, dir, stored) in [("current run", current, &cstored), ("baseline", baseline, &bstored)] {
        let missing = stored.missing.iter().map(|c| dir.join(c.relative_path()).display().to_string()).collect();
        problems.extend(listed(&format!("cell missing from the {which}"), missing));
        let damaged =
            stored.damaged.iter().map(|(c, why)| format!("{}: {why}", dir.join(c.relative_path()).display())).collect();
        problems.extend(listed(&format!("cell damaged in the {which}"), damaged));
    }
    // Each run's probe figures pool the kinds its own grader is trusted on, as its report does.
    let scored = |plan: &Plan, cells: Vec<CellResult>| super::labels::scored_cells(plan, cells).1;
    (problems, [scored(bplan, bstored.cells), scored(cplan, cstored.cells)])
}

/// Compares `current` with `baseline`: completeness first, then every rule on every configuration both
/// runs hold.
pub fn compare(baseline: &Path, current: &Path, rules: &Rules) -> Result<GateReport, GateError> {
    compare_with_progress(baseline, current, rules, &mut |_: &Stage| {})
}

/// [`compare`], announcing each stage to `progress` as it starts, with the share of a typical gate's time
/// done before it (reading and verifying the cells is most of it).
pub fn compare_with_progress(
    baseline: &Path,
    current: &Path,
    rules: &Rules,
    progress: &mut dyn FnMut(&Stage),
) -> Result<GateReport, GateError> {
    let mut stage = |name: &str, done_share: f64| progress(&Stage { name: name.into(), done_share });
    stage("reading and verifying the cells of both runs", 0.0);
    let bplan = store::load_plan(baseline)?;
    let cplan = store::load_plan(current)?;
    let (completeness, [bcells, ccells]) = completeness(baseline, &bplan, current, &cplan);
    stage("per-conversation figures", GATE_READ_SHARE);
    let (bi, ci) = (values_by_cell(&bplan, &bcells), values_by_cell(&cplan, &ccells));
    let mut checks = unproduced_metrics(rules, &bi);
    let shared: Vec<&ConfigPoint> = cplan.points.iter().filter(|p| bplan.points.iter().any(|q| q.id == p.id)).collect();
    for (k, p) in shared.iter().enumerate() {
        // Announced at each quarter of the points: the checks are most of the time.
        if k == 0 || (k * 4 / shared.len()) != ((k - 1) * 4 / shared.len()) {
            let done = GATE_FIGURES_SHARE + (1.0 - GATE_FIGURES_SHARE) * k as f64 / shared.len() as f64;
            stage(&format!("paired checks, configuration {} of {}", k + 1, shared.len()), done);
        }
        for rule in &rules.rule {
            if !rule.strategies.is_empty() && !rule.strategies.iter().any(|s| s == p.strategy.kind()) {
                continue;
            }
            checks.extend(check(p, rule, &bi, &ci));
        }
    }
    Ok(GateReport { completeness, checks })
}

/// Shares of a gate's time spent before its second and third stages (the default run against its
/// baseline, debug build: reading 3.4 s, figures 0.3 s, the bootstrapped paired checks 25.6 s).
const GATE_READ_SHARE: f64 = 0.12;
const GATE_FIGURES_SHARE: f64 = 0.13;

/// A run's per-conversation metric values by cell (point, conversation, repeat).
type CellValues = BTreeMap<(String, String, u32), BTreeMap<FigureId, f64>>;

/// Every figure from its one definition (`crate::metrics`), with the plan's prices.
fn values_by_cell(plan: &Plan, cells: &[CellResult]) -> CellValues {
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
}

/// A skipped check for every rule whose metric no configuration of the baseline produces, so a rule that
/// checks nothing is listed rather than passing silently.
fn unproduced_metrics(rules: &Rules, baseline: &CellValues) -> Vec<Check> {
    let produced: std::collections::BTreeSet<FigureId> = baseline.values().flat_map(|m| m.keys().copied()).collect();
    rules
        .rule
        .iter()
        .filter(|r| !produced.contains(&r.metric))
        .map(|rule| Check {
            point: String::new(),
            label: "every configuration".into(),
            strategy: String::new(),
            metric: rule.metric,
            n: 0,
            baseline_mean: None,
            current_mean: None,
            difference: None,
            tolerance: rule.abs_tolerance,
            verdict: Verdict::Skipped,
            reason: Some("no configuration of the baseline produces this metric".into()),
            only: rule.only,
            kind: rule.kind,
            detectable: None,
        })
        .collect()
}

/// The rule's metric for point `p`, paired by cell: (baseline values, current values), over the
/// conversations the rule compares.
fn paired_values(p: &ConfigPoint, rule: &Rule, bi: &CellValues, ci: &CellValues) -> (Vec<f64>, Vec<f64>) {
    let acted = |m: &BTreeMap<FigureId, f64>| {
        let count = |id| m.get(&id).copied().unwrap_or(0.0);
        count(FigureId::CompressedEvents) + count(FigureId::TruncationOnlyEvents) > 0.0
    };
    let mut base = Vec::new();
    let mut cur = Vec::new();
    for (key, bm) in bi.iter().filter(|(k, _)| k.0 == p.id) {
        let cm = ci.get(key);
        if rule.only == Only::Compressed && !(acted(bm) || cm.is_some_and(acted)) {
            continue;
        }
        if let (Some(b), Some(c)) = (bm.get(&rule.metric), cm.and_then(|m| m.get(&rule.metric))) {
            base.push(*b);
            cur.push(*c);
        }
    }
    (base, cur)
}

/// One rule on one configuration: the paired difference's bootstrap interval against the tolerance.
/// `None` when the metric does not apply to this point (or nothing compressed there).
fn check(p: &ConfigPoint, rule: &Rule, bi: &CellValues, ci: &CellValues) -> Option<Check> {
    let (base, cur) = paired_values(p, rule, bi, ci);
    if base.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let diffs: Vec<f64> = cur.iter().zip(&base).map(|(c, b)| c - b).collect();
    let difference = bootstrap_mean(&diffs);
    let tolerance = rule.abs_tolerance.max(rule.rel_tolerance * mean(&base).abs());
    // A hard count: conversations with a nonzero value where the baseline has 0.
    let new_faults = cur.iter().zip(&base).filter(|(c, b)| **b == 0.0 && **c != 0.0).count();
    let verdict = match difference {
        _ if base.len() < rule.min_samples => Verdict::Skipped,
        _ if rule.kind == RuleKind::NoneIfBaselineNone => {
            if new_faults > 0 {
                Verdict::Regression
            } else {
                Verdict::Pass
            }
        }
        Some(d) if rule.direction == Direction::Lower && d.low > tolerance => Verdict::Regression,
        Some(d) if rule.direction == Direction::Higher && d.high < -tolerance => Verdict::Regression,
        _ => Verdict::Pass,
    };
    Some(Check {
        point: p.id.clone(),
        label: p.short_label(),
        strategy: p.strategy.kind().into(),
        metric: rule.metric,
        n: base.len(),
        baseline_mean: Some(mean(&base)),
        current_mean: Some(mean(&cur)),
        difference,
        tolerance,
        verdict,
        reason: match verdict {
            Verdict::Skipped => {
                Some(format!("{} paired conversations, fewer than min_samples = {}", base.len(), rule.min_samples))
            }
            Verdict::Regression if rule.kind == RuleKind::NoneIfBaselineNone => {
                Some(format!("{new_faults} conversation(s) with {} > 0 where the baseline has 0", rule.metric))
            }
            _ => None,
        },
        only: rule.only,
        kind: rule.kind,
        // A hard count fails on one fault in one conversation: a mean shift of 1/n.
        detectable: match verdict {
            Verdict::Skipped => None,
            _ if rule.kind == RuleKind::NoneIfBaselineNone => Some(1.0 / base.len() as f64),
            _ => detectable_shift(&base, tolerance),
        },
    })
}

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.4}")).unwrap_or_else(|| "–".into())
}

/// The Markdown verdict: the summary, completeness problems, the checks table (the regressions, or every
/// check that ran when there are none), the power of each rule, and the skipped checks.
pub fn markdown(report: &GateReport) -> String {
    let mut md = String::new();
    let regressions: Vec<&Check> = report.regressions().collect();
    let skipped = report.checks.iter().filter(|c| c.verdict == Verdict::Skipped).count();
    let verdict = match (report.complete(), regressions.is_empty()) {
        (false, _) => "INCOMPLETE",
        (true, true) => "PASS",
        (true, false) => "FAIL",
    };
    let _ = writeln!(
        md,
        "## compactbench gate: {verdict}\n\n{} checks, {} regressions, {} skipped (listed below with the reason). \
         Each check pairs the two runs conversation by conversation: *baseline* and *current* are means of the \
         per-conversation values over the `n` paired conversations (not the pooled point figures of the \
         report), the difference is their paired mean with a bootstrap 95 % interval.\n",
        report.checks.len(),
        regressions.len(),
        skipped
    );
    if !report.complete() {
        let _ = writeln!(md, "### Completeness: {} problem(s)\n", report.completeness.len());
        for p in &report.completeness {
            let _ = writeln!(md, "- {p}");
        }
        md.push('\n');
    }
    let mut rows: Vec<&Check> = regressions.clone();
    if regressions.is_empty() {
        rows = report.checks.iter().filter(|c| c.verdict != Verdict::Skipped).collect();
    }
    md.push_str(&checks_table(&rows).markdown());
    md.push('\n');
    power_section(&mut md, report);
    skipped_section(&mut md, report);
    md
}

/// One row per check: verdict, configuration, metric, n, both means, the difference, tolerance, power.
fn checks_table(rows: &[&Check]) -> Table {
    Table {
        header: [
            "verdict",
            "configuration",
            "metric",
            "n",
            "baseline (mean per conv.)",
            "current (mean per conv.)",
            "difference [95% CI]",
            "tolerance",
            "detects ≥",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .map(|c| {
                vec![
                    format!("{:?}", c.verdict).to_lowercase(),
                    c.label.clone(),
                    metric_label(c),
                    c.n.to_string(),
                    num(c.baseline_mean),
                    num(c.current_mean),
                    c.difference
                        .map(|d| format!("{:+.4} [{:+.4}, {:+.4}]", d.mean, d.low, d.high))
                        .unwrap_or_else(|| "–".into()),
                    format!("{:.4}", c.tolerance),
                    num(c.detectable),
                ]
            })
            .collect(),
    }
}

/// Per rule, the median and range of the smallest regression its checks detect (nothing without any).
fn power_section(md: &mut String, report: &GateReport) {
    let power = power(report);
    if power.is_empty() {
        return;
    }
    md.push_str("\n### Power: the smallest regression each rule detects on the baseline\n\n");
    md.push_str("Median (range) over configurations of the smallest mean shift that fails the check, when every paired conversation is worse by the same fraction of its baseline value.\n\n");
    for (metric, values) in power {
        let _ = writeln!(
            md,
            "- {metric}: {:.4} ({:.4}–{:.4}, {} configurations)",
            values[values.len() / 2],
            values[0],
            values[values.len() - 1],
            values.len()
        );
    }
}

/// The skipped checks with their reasons (nothing without any).
fn skipped_section(md: &mut String, report: &GateReport) {
    let skipped: Vec<&Check> = report.checks.iter().filter(|c| c.verdict == Verdict::Skipped).collect();
    if skipped.is_empty() {
        return;
    }
    md.push_str("\n### Skipped checks\n\n");
    for c in skipped {
        let _ = writeln!(md, "- {} :: {}: {}", c.label, metric_label(c), c.reason.as_deref().unwrap_or("skipped"));
    }
}

fn metric_label(c: &Check) -> String {
    let label = match c.only {
        Only::All => c.metric.to_string(),
        Only::Compressed => format!("{} (compressed)", c.metric),
    };
    match c.kind {
        RuleKind::Bootstrap => label,
        RuleKind::NoneIfBaselineNone => format!("{label} (none where the baseline has none)"),
    }
}

/// Per rule (metric and conversation filter), the detectable shifts of its checks, sorted.
pub fn power(report: &GateReport) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for c in &report.checks {
        if let Some(d) = c.detectable {
            out.entry(metric_label(c)).or_default().push(d);
        }
    }
    for v in out.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// JUnit XML: one test case per check.
pub fn junit(report: &GateReport) -> String {
    let incomplete = !report.complete() as usize;
    let failures = report.regressions().count() + incomplete;
    let skipped = report.checks.iter().filter(|c| c.verdict == Verdict::Skipped).count();
    let tests = report.checks.len() + 1;
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"compactbench-gate\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"compactbench-gate\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">"
    );
    x.push_str("    <testcase classname=\"completeness\" name=\"every cell of both runs present and verified\"");
    if report.complete() {
        x.push_str("/>\n");
    } else {
        let msg = xml_escape(&report.completeness.join("; "));
        let _ = writeln!(x, "><failure message=\"{msg}\"/></testcase>");
    }
    for c in &report.checks {
        let name = xml_escape(&format!("{} :: {}", c.label, metric_label(c)));
        let _ = write!(x, "    <testcase classname=\"{}\" name=\"{name}\"", xml_escape(&c.strategy));
        match c.verdict {
            Verdict::Pass => x.push_str("/>\n"),
            Verdict::Skipped => {
                let why = c.reason.clone().unwrap_or_else(|| format!("only {} paired conversations", c.n));
                let _ = writeln!(x, "><skipped message=\"{}\"/></testcase>", xml_escape(&why));
            }
            Verdict::Regression if c.kind == RuleKind::NoneIfBaselineNone => {
                let why = c.reason.clone().unwrap_or_default();
                let msg = xml_escape(&format!("{}: {why}", c.metric));
                let _ = writeln!(x, "><failure message=\"{msg}\"/></testcase>");
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule on a figure with no per-conversation value is refused when the rules are read, naming the
    /// file and the rule, instead of being skipped at every run.
    #[test]
    fn a_rule_on_a_figure_without_conversation_values_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.toml");
        let rule =
            |metric: &str| format!("[[rule]]\nmetric = \"{metric}\"\ndirection = \"lower\"\nabs_tolerance = 0.1\n");
        std::fs::write(&path, rule("tokens_vs_none") + &rule("rereads_per_10_turns_after")).unwrap();
        let e = Rules::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("rules.toml") && e.contains("rule[1].metric") && e.contains("rereads_per_10_turns_after"),
            "{e}"
        );
        std::fs::write(&path, rule("tokens_vs_none")).unwrap();
        assert_eq!(Rules::load(&path).unwrap().rule.len(), 1);
    }

    /// `gate --help` documents the default rules as the ones of configs/gate.toml: keep them one set.
    #[test]
    fn the_default_rules_are_the_committed_gate_toml() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gate.toml");
        assert_eq!(Rules::load(&file).unwrap(), Rules::default());
        let described = Rules::default().describe();
        assert_eq!(described.lines().count(), Rules::default().rule.len());
        assert!(described.contains("overflowed_conversations") && described.contains("compression acted on"));
    }

    #[test]
    fn detectable_shift_grows_with_the_spread_and_falls_back_to_the_tolerance() {
        // Identical values: the interval is a point, so a shift just past the tolerance shows.
        let flat = vec![0.5; 20];
        assert!((detectable_shift(&flat, 0.02).unwrap() - 0.02).abs() < 1e-12);
        // Spread values with the same mean need a larger shift.
        let spread: Vec<f64> = (0..20).map(|i| if i % 2 == 0 { 0.1 } else { 0.9 }).collect();
        let d = detectable_shift(&spread, 0.02).unwrap();
        assert!(d > 0.021 && d < 0.05, "{d}");
        // A metric that is usually 0: an additive shift beyond the tolerance.
        assert_eq!(detectable_shift(&[0.0; 10], 0.1), Some(0.1));
        assert_eq!(detectable_shift(&[], 0.1), None);
    }
}
