//! What each strategy keeps at the compression points, per probe kind (artifact, constraint, continuation,
//! decision, recall): `kept_at_compressions` restricted to one kind, each strategy's figure with its own
//! number of (probe, compression) pairs (a strategy that did not act at a compaction has fewer), with paired
//! differences against the agent's own compaction (`recorded`) and against the reference, judged as the
//! report's claims are (`super::claims::judge`). With `replay.compress_at = "recorded"` every strategy
//! compresses at the agent's own points, so these pairs are the same compactions on both sides.
//!
//! Where the run's grader is checked against labels ([`super::grader_check`]), a kind it is not
//! trusted on is marked *not gradable offline* and no difference is drawn from it, and the `all` rows pool
//! the gradable kinds only (named in the row).

use crate::data::ProbeKind;
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::probe_figures::conversation_tally_of_kind;
use crate::metrics::{self, percent, percentage_points, Parts, PercentStyle, PointsStyle, Share};
use crate::replay::strategy::Role;
use crate::table::Table;
use crate::verdict;
use crate::verdict::claims;
use crate::verdict::labels::{Gradability, KEPT_FIGURE, NOT_GRADABLE};

/// The probe kinds' names in table order (by name).
fn kind_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ProbeKind::ALL.iter().map(|k| k.name()).collect();
    names.sort_unstable();
    names
}

/// One point's (conversation, parts) over the probes of `kinds` (`None`: every kind).
fn parts(cells: &[CellResult], p: &ConfigPoint, kinds: Option<&[&str]>) -> Vec<(String, Parts)> {
    cells
        .iter()
        .filter(|c| c.cell.point == p.id)
        .filter_map(|c| {
            let parts = match kinds {
                None => {
                    let (hits, n) = conversation_tally_of_kind(c, KEPT_FIGURE, None)?;
                    Parts { num: hits, den: n }
                }
                Some(k) => verdict::labels::kept_parts(c, k)?,
            };
            Some((c.cell.conversation.clone(), parts))
        })
        .collect()
}

fn difference(m: &metrics::Metric, a: &[(String, Parts)], b: &[(String, Parts)]) -> String {
    let Some(j) = claims::judge_pairs(m, a, b, None) else { return "–".into() };
    let d = j.difference;
    let mark = if j.verdict == claims::Verdict::Established { " ✓" } else { "" };
    format!("{}{mark}", percentage_points(d.value, (d.low < d.high).then_some((d.low, d.high)), PointsStyle::TABLE))
}

/// One row's kind: its name and the probe kinds it counts (`None`: every kind), and whether a difference
/// may be drawn from it.
struct RowKind {
    label: String,
    kinds: Option<Vec<&'static str>>,
    gradable: bool,
}

/// The rows' kinds: each probe kind, then all of them; with `gradable`, the kinds the grader is not trusted
/// on are marked and the `all` row counts the gradable ones.
fn row_kinds(gradable: Option<&Gradability>) -> Vec<RowKind> {
    let mut out: Vec<RowKind> = kind_names()
        .into_iter()
        .map(|k| match gradable {
            Some(g) if !g.is_gradable(k) => {
                RowKind { label: format!("{k} ({NOT_GRADABLE})"), kinds: Some(vec![k]), gradable: false }
            }
            _ => RowKind { label: k.to_string(), kinds: Some(vec![k]), gradable: true },
        })
        .collect();
    out.push(match gradable {
        None => RowKind { label: "all".into(), kinds: None, gradable: true },
        Some(g) => {
            let kinds: Vec<&'static str> = kind_names().into_iter().filter(|k| g.is_gradable(k)).collect();
            if kinds.is_empty() {
                RowKind { label: format!("all ({NOT_GRADABLE}: no kind is)"), kinds: None, gradable: false }
            } else {
                RowKind { label: format!("all gradable ({})", kinds.join(", ")), kinds: Some(kinds), gradable: true }
            }
        }
    });
    out
}

/// The table, or `None` when no point scored probes at a compression. With `gradable` (the run's grader
/// checked against labels), kinds it is not trusted on draw no difference and `all` pools the others.
pub fn table(plan: &Plan, cells: &[CellResult], gradable: Option<&Gradability>) -> Option<Table> {
    let m = KEPT_FIGURE.metric();
    let points: Vec<&ConfigPoint> = plan
        .default_points()
        .into_iter()
        .map(|i| &plan.points[i])
        .filter(|p| p.strategy.role() != Some(Role::NoCompression) && claims::acted(cells, p))
        .collect();
    let recorded = plan.point_of_role(Role::Recorded).filter(|p| claims::acted(cells, p));
    let reference = plan.reference_point();
    let mut header: Vec<String> =
        ["#", "strategy", "kind", "compressions", "kept at compressions ↑"].map(String::from).to_vec();
    if recorded.is_some() {
        header.push("Δ − recorded (pp)".into());
    }
    header.push("Δ − reference (pp)".into());
    let mut rows = Vec::new();
    for kind in row_kinds(gradable) {
        let of = kind.kinds.as_deref();
        let base_recorded = recorded.map(|r| parts(cells, r, of));
        let base_reference = reference.map(|r| parts(cells, r, of));
        let judged = |mine: &[(String, Parts)], base: &[(String, Parts)]| {
            if kind.gradable {
                difference(m, mine, base)
            } else {
                NOT_GRADABLE.to_string()
            }
        };
        for p in &points {
            let mine = parts(cells, p, of);
            let Some(f) = metrics::figure(m, &mine.iter().map(|x| x.1).collect::<Vec<_>>()) else { continue };
            let compressions: usize = cells
                .iter()
                .filter(|c| c.cell.point == p.id && mine.iter().any(|(conv, _)| conv == &c.cell.conversation))
                .map(|c| c.result.compressions().count())
                .sum();
            let mut row = vec![
                plan.point_number(&p.id).map(|n| n.to_string()).unwrap_or_default(),
                p.strategy.kind().to_string(),
                kind.label.clone(),
                compressions.to_string(),
                format!(
                    "{} [{:.1}, {:.1}] (n={})",
                    percent(Some(Share::Fraction(f.value)), PercentStyle::TABLE),
                    f.low * 100.0,
                    f.high * 100.0,
                    f.n
                ),
            ];
            if let Some(b) = &base_recorded {
                row.push(if Some(*p) == recorded { "–".into() } else { judged(&mine, b) });
            }
            row.push(match &base_reference {
                Some(b) if reference.is_some_and(|r| r.id != p.id) => judged(&mine, b),
                _ => "–".into(),
            });
            rows.push(row);
        }
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}
