//! What each strategy keeps at the compression points, per probe kind (artifact, constraint, continuation,
//! decision, recall): `kept_at_compressions` restricted to one kind, with paired differences against the
//! agent's own compaction (`recorded`) and against the reference, judged as the report's claims are
//! ([`super::supports::judge`]). With `replay.compress_at = "recorded"` every strategy compresses at the
//! agent's own points, so these pairs are the same compactions on both sides.

use super::aggregate::reference_point;
use super::{default_points, supports, Table};
use crate::data::{CellResult, ConfigPoint, Plan};
use crate::metrics::{self, Parts};
use crate::probes::figures::conversation_tally_of_kind;
use crate::replay::strategy::Role;

/// The figure the table restricts by kind.
pub const FIGURE: &str = "kept_at_compressions";

/// The probe kinds in table order; `all` is every kind.
const KINDS: [&str; 6] = ["artifact", "constraint", "continuation", "decision", "recall", "all"];

/// One point's (conversation, parts) for one kind.
fn parts(cells: &[CellResult], p: &ConfigPoint, kind: &str) -> Vec<(String, Parts)> {
    let kind = (kind != "all").then_some(kind);
    cells
        .iter()
        .filter(|c| c.cell.point == p.id)
        .filter_map(|c| {
            let (hits, n) = conversation_tally_of_kind(c, FIGURE, kind)?;
            Some((c.cell.conversation.clone(), Parts { num: hits, den: n }))
        })
        .collect()
}

fn difference(m: &metrics::Metric, a: &[(String, Parts)], b: &[(String, Parts)]) -> String {
    let Some(j) = supports::judge_pairs(m, a, b, None) else { return "–".into() };
    let d = j.difference;
    let mark = if j.verdict == supports::Verdict::Established { " ✓" } else { "" };
    if d.low < d.high {
        format!("{:+.1} [{:+.1}, {:+.1}]{mark}", d.value * 100.0, d.low * 100.0, d.high * 100.0)
    } else {
        format!("{:+.1}{mark}", d.value * 100.0)
    }
}

/// The table, or `None` when no point scored probes at a compression.
pub fn table(plan: &Plan, cells: &[CellResult]) -> Option<Table> {
    let m = metrics::metric(FIGURE)?;
    let points: Vec<&ConfigPoint> = default_points(plan)
        .into_iter()
        .map(|i| &plan.points[i])
        .filter(|p| p.strategy.role() != Some(Role::NoCompression) && supports::acted(cells, p))
        .collect();
    let recorded = points.iter().copied().find(|p| p.strategy.role() == Some(Role::Recorded));
    let reference = reference_point(plan);
    let mut header: Vec<String> =
        ["#", "strategy", "kind", "pairs", "compressions", "kept at compressions ↑"].map(String::from).to_vec();
    if recorded.is_some() {
        header.push("Δ − recorded (pp)".into());
    }
    header.push("Δ − reference (pp)".into());
    let mut rows = Vec::new();
    for kind in KINDS {
        let base_recorded = recorded.map(|r| parts(cells, r, kind));
        let base_reference = reference.map(|r| parts(cells, r, kind));
        for p in &points {
            let mine = parts(cells, p, kind);
            let Some(f) = metrics::figure(m, &mine.iter().map(|x| x.1).collect::<Vec<_>>()) else { continue };
            let compressions: usize = cells
                .iter()
                .filter(|c| c.cell.point == p.id && mine.iter().any(|(conv, _)| conv == &c.cell.conversation))
                .map(|c| c.result.compressions().count())
                .sum();
            let mut row = vec![
                plan.point_number(&p.id).map(|n| n.to_string()).unwrap_or_default(),
                p.strategy.kind().to_string(),
                kind.to_string(),
                f.n.to_string(),
                compressions.to_string(),
                format!("{:.1}% [{:.1}, {:.1}]", f.value * 100.0, f.low * 100.0, f.high * 100.0),
            ];
            if let Some(b) = &base_recorded {
                row.push(if Some(*p) == recorded { "–".into() } else { difference(m, &mine, b) });
            }
            row.push(match &base_reference {
                Some(b) if reference.is_some_and(|r| r.id != p.id) => difference(m, &mine, b),
                _ => "–".into(),
            });
            rows.push(row);
        }
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}
