//! Which rule of the grader kept each probe at the compression points (`kept_by` in `results/probes.csv`):
//! the gold verbatim, the file in another form, the file's bare name (unique in its session), the key terms.
//! The bare-name count is reported apart: it is the loosest form the path rule accepts.

use crate::data::{CellResult, KeptBy, Plan};
use crate::metrics::{percent, PercentStyle, Share};
use crate::probes::figures::{cell_rows, strategy_of, Moment};
use crate::table::Table;

const RULES: [KeptBy; 4] = [KeptBy::Exact, KeptBy::Path, KeptBy::BareName, KeptBy::Terms];

/// Per default point: kept (probe, compression) pairs by rule, and the pairs; `None` when no point scored
/// probes at a compression.
pub fn table(plan: &Plan, cells: &[CellResult]) -> Option<Table> {
    let mut header = vec!["strategy".to_string(), "pairs".into(), "kept".into()];
    header.extend(RULES.iter().map(|r| r.name().to_string()));
    let mut rows = Vec::new();
    for i in plan.default_points() {
        let point = &plan.points[i];
        let strategy = strategy_of(plan, &point.id);
        let (mut pairs, mut by) = (0usize, [0usize; RULES.len()]);
        for c in cells.iter().filter(|c| c.cell.point == point.id) {
            for r in cell_rows(c, &strategy).into_iter().filter(|r| r.compression && !r.after_overflow) {
                pairs += 1;
                if let Some(k) = r.kept_by.and_then(|k| RULES.iter().position(|x| *x == k)) {
                    by[k] += 1;
                }
            }
        }
        if pairs == 0 {
            continue;
        }
        let mut row = vec![point.short_label(), pairs.to_string(), by.iter().sum::<usize>().to_string()];
        row.extend(by.iter().map(|n| n.to_string()));
        rows.push(row);
    }
    (!rows.is_empty()).then_some(Table { header, rows })
}

/// Per default point: early-only retention at the end with and without the probes whose fact the session's
/// first user message holds (`in_first_prompt`), which a summary that restates the task keeps for free.
pub fn first_prompt_table(plan: &Plan, cells: &[CellResult]) -> Option<Table> {
    let header = ["strategy", "early-only retention", "without first-prompt facts", "first-prompt facts"]
        .map(String::from)
        .to_vec();
    let share = |kept: usize, n: usize| {
        if n == 0 {
            percent(None, PercentStyle::TABLE)
        } else {
            format!("{} (n={n})", percent(Some(Share::Of(kept as f64, n as f64)), PercentStyle::TABLE))
        }
    };
    let mut rows = Vec::new();
    let mut any_marked = false;
    for i in plan.default_points() {
        let point = &plan.points[i];
        let strategy = strategy_of(plan, &point.id);
        let (mut all, mut rest, mut marked) = ((0, 0), (0, 0), 0);
        for c in cells.iter().filter(|c| c.cell.point == point.id) {
            for r in cell_rows(c, &strategy)
                .into_iter()
                .filter(|r| matches!(r.moment, Moment::End) && r.early_only == Some(true))
            {
                all.0 += r.retained as usize;
                all.1 += 1;
                if r.in_first_prompt {
                    marked += 1;
                } else {
                    rest.0 += r.retained as usize;
                    rest.1 += 1;
                }
            }
        }
        if all.1 == 0 {
            continue;
        }
        any_marked |= marked > 0;
        rows.push(vec![point.short_label(), share(all.0, all.1), share(rest.0, rest.1), marked.to_string()]);
    }
    (any_marked && !rows.is_empty()).then_some(Table { header, rows })
}

/// The sections of `probes.md`.
pub fn markdown(plan: &Plan, cells: &[CellResult]) -> String {
    let first_prompt = first_prompt_table(plan, cells).map_or_else(String::new, |t| {
        format!(
            "## Early-only retention without first-prompt facts\n\nEarly-only probes whose fact the session's first \
             user message holds (`in_first_prompt` in `results/probes.csv`) are kept by any summary that restates \
             the task; the figure read without them:\n\n{}\n\n",
            t.markdown()
        )
    });
    let Some(t) = table(plan, cells) else { return first_prompt };
    first_prompt
        + &format!(
            "## Kept at compressions, by grading rule\n\n(probe, compression) pairs before any overflow, and which \
         rule of the grader kept each (`harness/docs/probes.md`, *Grading*): `exact` the gold or a variant verbatim; `path` the \
         file named in another form that identifies it (absolute, relative to the session's root, a suffix no \
         other session file ends with); `bare-name` the file's name alone, unique among the session's files; \
         `terms` the key terms of a free-text fact within one span.\n\n{}\n\n",
            t.markdown()
        )
}
