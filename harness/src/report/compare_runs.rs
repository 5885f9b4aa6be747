//! `compactbench compare`: one table across runs of the same strategies on different corpora (one run per
//! agent, each in its own window and with its own prices), and the paired differences against the reference
//! pooled over every run's conversations, judged as a report's claims are (`super::claims::judge`, with
//! each run left out in turn in place of each source). Only like is pooled with like: a strategy is pooled
//! when it is the same algorithm in every run; the agent's own compaction (the strategy of role
//! [`Role::Recorded`]) is a different algorithm per agent, so it keeps one row per run, over that run's
//! conversations only. Where a run's grader is checked against labels ([`super::grader_check`]), its
//! `kept_at_compressions` counts the probe kinds the grader is trusted on only.

use crate::data::store::{self, StoreError};
use crate::data::{CellResult, Plan};
use crate::metrics::{
    self, percentage_points, Figure, FigureId, Level, Parts, PercentStyle, PointsStyle, ACROSS_RUNS_DIFFERENCES,
    ACROSS_RUNS_FIGURES,
};
use crate::replay::registry;
use crate::replay::strategy::Role;
use crate::table::Table;
use crate::verdict;
use crate::verdict::claims;
use crate::verdict::labels::Gradability;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The figure a run's labels restrict to the gradable kinds.
const KEPT: FigureId = verdict::labels::KEPT_FIGURE;

/// One run: its name, the agent whose sessions it replays, plan and cells, and the probe kinds its grader is
/// trusted on (`None`: no labels to check it against, every kind counts).
pub struct Run {
    pub name: String,
    pub agent: String,
    pub plan: Plan,
    pub cells: Vec<CellResult>,
    pub gradable: Option<Gradability>,
}

/// The agent a run replays: the one import format of its datasets (`claude-code`, `codex`) as its
/// `config.toml` names it, else the run's name.
fn agent_of(dir: &Path, plan: &Plan) -> String {
    let config = std::fs::read_to_string(dir.join("config.toml")).ok().and_then(|t| t.parse::<toml::Table>().ok());
    let formats: BTreeSet<String> = config
        .as_ref()
        .and_then(|c| c.get("datasets")?.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|d| Some(d.as_table()?.get("format")?.as_str()?.to_string()))
        .collect();
    match formats.len() {
        1 => formats.into_iter().next().unwrap_or_default(),
        _ => plan.name.clone(),
    }
}

impl Run {
    pub fn load(dir: &Path) -> Result<Run, StoreError> {
        let plan = store::load_plan(dir)?;
        // Every figure of a run pools the kinds its grader is trusted on, as its own report does.
        let (labels, cells) = verdict::labels::scored_cells(&plan, store::collect(dir, &plan));
        let gradable = labels.gradability();
        Ok(Run { name: plan.name.clone(), agent: agent_of(dir, &plan), plan, cells, gradable })
    }

    /// Each metric's parts of the run's default point of `strategy`, named `run/conversation`.
    fn parts(&self, strategy: &str) -> BTreeMap<FigureId, Vec<(String, Parts)>> {
        let Some(point) = self.plan.default_point(strategy) else {
            return BTreeMap::new();
        };
        let pricing = metrics::point_pricing(&self.plan, point);
        let mine = || self.cells.iter().filter(|c| c.cell.point == point.id);
        let mut parts = metrics::point_parts(mine(), pricing.as_ref());
        if let Some(g) = &self.gradable {
            let kinds = g.gradable();
            let kept: Vec<(String, Parts)> = mine()
                .filter_map(|c| Some((c.cell.conversation.clone(), verdict::labels::kept_parts(c, &kinds)?)))
                .collect();
            parts.insert(KEPT, kept);
        }
        for list in parts.values_mut() {
            for (conv, _) in list.iter_mut() {
                *conv = format!("{}/{conv}", self.name);
            }
        }
        parts
    }

    fn compressions(&self, strategy: &str) -> usize {
        let ids: Vec<&str> = self
            .plan
            .default_points()
            .into_iter()
            .map(|i| &self.plan.points[i])
            .filter(|p| p.strategy.kind() == strategy)
            .map(|p| p.id.as_str())
            .collect();
        self.cells
            .iter()
            .filter(|c| ids.contains(&c.cell.point.as_str()))
            .map(|c| c.result.compressions().count())
            .sum()
    }
}

/// A share figure with its interval, and its n where that counts probes (each row its own).
fn share_cell(m: &metrics::Metric, f: Option<Figure>) -> String {
    let n = |f: &Figure| if m.level == Level::Probe { format!(" (n={})", f.n) } else { String::new() };
    let value = |f: &Figure| metrics::percent(Some(metrics::Share::Fraction(f.value)), PercentStyle::TABLE);
    match f {
        Some(f) if f.low < f.high => {
            format!("{} [{:.1}, {:.1}]{}", value(&f), f.low * 100.0, f.high * 100.0, n(&f))
        }
        Some(f) => format!("{}{}", value(&f), n(&f)),
        None => metrics::percent(None, PercentStyle::TABLE),
    }
}

/// A paired difference with its verdict; `by_run` leaves each run out in turn.
fn judged(m: &metrics::Metric, a: &[(String, Parts)], b: &[(String, Parts)]) -> String {
    let run = |c: &str| c.split_once('/').map_or(c, |(run, _)| run).to_string();
    let Some(j) = claims::judge_pairs(m, a, b, Some(&run)) else { return "–".into() };
    let d = j.difference;
    let mark = if j.verdict == claims::Verdict::Established { " ✓" } else { "" };
    format!("{}{mark} (n={})", percentage_points(d.value, Some((d.low, d.high)), PointsStyle::TABLE), d.n)
}

/// The registry name of the reference.
fn reference_name() -> &'static str {
    registry::role_name(Role::Reference).unwrap_or_default()
}

/// The strategies every run has, in the first run's order.
fn shared_strategies(runs: &[Run]) -> Vec<String> {
    let Some(first) = runs.first() else { return Vec::new() };
    first
        .plan
        .default_points()
        .into_iter()
        .map(|i| first.plan.points[i].strategy.kind().to_string())
        .filter(|k| runs.iter().all(|r| r.plan.points.iter().any(|p| p.strategy.kind() == k)))
        .collect()
}

/// Per run and strategy: conversations, compressions, the compared figures and Δ − reference (within the run).
pub fn per_run_table(runs: &[Run]) -> Table {
    let mut header: Vec<String> = ["run", "strategy", "convs", "compressions"].map(String::from).to_vec();
    header.extend(ACROSS_RUNS_FIGURES.iter().map(|id| id.metric().title()));
    header.push("Δ early-only − ref. (pp)".into());
    header.push("Δ kept − ref. (pp)".into());
    let mut rows = Vec::new();
    for run in runs {
        let reference = run.parts(reference_name());
        for strategy in shared_strategies(runs) {
            let parts = run.parts(&strategy);
            let convs = parts.get(&FigureId::TokensVsNone).map_or(0, Vec::len);
            let mut row =
                vec![run.name.clone(), strategy.clone(), convs.to_string(), run.compressions(&strategy).to_string()];
            for m in ACROSS_RUNS_FIGURES.iter().map(|id| id.metric()) {
                let f = parts.get(&m.id).and_then(|p| metrics::figure(m, &p.iter().map(|x| x.1).collect::<Vec<_>>()));
                row.push(share_cell(m, f));
            }
            for id in ACROSS_RUNS_DIFFERENCES {
                let d = match (parts.get(id), reference.get(id)) {
                    (Some(a), Some(b)) if !registry::has_role(&strategy, Role::Reference) => judged(id.metric(), a, b),
                    _ => "–".into(),
                };
                row.push(d);
            }
            rows.push(row);
        }
    }
    Table { header, rows }
}

/// Per strategy: Δ − reference pooled over every run's conversations (cluster bootstrap over them), for the
/// strategies that are the same algorithm in every run; the agent's own compaction gets one row per run
/// (named by its agent), over that run's conversations only.
pub fn pooled_table(runs: &[Run]) -> Table {
    let header: Vec<String> =
        ["strategy", "Δ tokens vs none − ref. (pp)", "Δ early-only − ref. (pp)", "Δ kept − ref. (pp)"]
            .map(String::from)
            .to_vec();
    let row = |label: String, over: &[&Run], strategy: &str| {
        let mut row = vec![label];
        for &id in ACROSS_RUNS_FIGURES {
            let gather = |s: &str| -> Vec<(String, Parts)> {
                over.iter().flat_map(|r| r.parts(s).remove(&id).unwrap_or_default()).collect()
            };
            row.push(judged(id.metric(), &gather(strategy), &gather(reference_name())));
        }
        row
    };
    let mut rows = Vec::new();
    for strategy in shared_strategies(runs).into_iter().filter(|s| !registry::has_role(s, Role::Reference)) {
        // The agent's own compaction is a different algorithm per agent: never pooled across runs.
        if registry::has_role(&strategy, Role::Recorded) {
            for run in runs {
                rows.push(row(format!("{strategy} ({}, `{}` only)", run.agent, run.name), &[run], &strategy));
            }
        } else {
            rows.push(row(strategy.clone(), &runs.iter().collect::<Vec<_>>(), &strategy));
        }
    }
    Table { header, rows }
}

/// Writes the comparison as Markdown to `out` and returns its text.
pub fn write(dirs: &[PathBuf], out: &Path) -> Result<String, super::ReportError> {
    let mut runs: Vec<Run> = dirs.iter().map(|d| Run::load(d)).collect::<Result<_, _>>()?;
    // Conversations are keyed `run/conversation`: two runs of one name get distinct names.
    for i in 1..runs.len() {
        let taken = runs[..i]
            .iter()
            .filter(|r| r.name == runs[i].name || r.name.starts_with(&format!("{}#", runs[i].name)))
            .count();
        if taken > 0 {
            runs[i].name = format!("{}#{}", runs[i].name, taken + 1);
        }
    }
    let recorded = registry::role_name(Role::Recorded).unwrap_or("the agent's own compaction");
    let has_recorded = shared_strategies(&runs).iter().any(|s| registry::has_role(s, Role::Recorded));
    let like_with_like = if has_recorded {
        format!(" Only like is pooled with like: `{recorded}` replays each agent's own compaction, a different algorithm per agent (Claude Code writes a summary; Codex keeps the user messages plus an encrypted summary), so it is never pooled across runs.")
    } else {
        String::new()
    };
    let mut md = String::from("# compactbench: across runs\n\n");
    let _ = writeln!(
        md,
        "Runs: {}. Each run keeps its own window, overhead and prices; figures of each run's default point of every strategy they share (`harness/docs/metrics.md`), 95 % cluster-bootstrap intervals over conversations; n of a probe figure: that row's own probes (or probe × compression pairs). Δ: paired by conversation against the reference (`{}`); ✓ marks an established difference (interval excludes 0, and no single conversation or run, left out, turns its sign).{like_with_like}\n",
        runs.iter()
            .map(|r| format!("`{}` ({}, {} conversations)", r.name, r.agent, r.plan.conversations.len()))
            .collect::<Vec<_>>()
            .join(", "),
        reference_name()
    );
    let gated: Vec<String> =
        runs.iter().filter_map(|r| Some(format!("`{}`: {}", r.name, r.gradable.as_ref()?.gradable_list()))).collect();
    if !gated.is_empty() {
        let _ = writeln!(
            md,
            "Kept at compressions counts, in a run whose grader is checked against labels, only the probe kinds gradable offline there ({}); in the other runs, every kind.\n",
            gated.join("; ")
        );
    }
    md.push_str("## Per run\n\n");
    md.push_str(&per_run_table(&runs).markdown());
    md.push_str("\n\n## Pooled over the runs\n\nEach run's conversations paired with the same run's reference, pooled over the runs for every strategy that is the same algorithm in every run");
    if has_recorded {
        let _ = write!(
            md,
            "; `{recorded}` has one row per run instead, named by the run's agent, each over that run's conversations only"
        );
    }
    md.push_str(". n = conversations.\n\n");
    md.push_str(&pooled_table(&runs).markdown());
    md.push('\n');
    crate::fsutil::write_atomic(out, md.as_bytes())?;
    Ok(md)
}
