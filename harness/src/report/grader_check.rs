//! The grader check's tables and the probes page's section on it, from [`crate::verdict::labels`].

use crate::metrics::{percent, FigureId, PercentStyle, Share};
use crate::table::Table;
use crate::verdict::labels::{
    share, Agreement, Gradability, GraderCheck, Labels, Unused, AGREEMENT_FLOOR, MIN_PAIRS, NOT_GRADABLE,
};
use std::fmt::Write as _;

fn rate(v: Option<f64>, num: usize, den: usize) -> String {
    match v {
        Some(v) => format!("{} ({num}/{den})", percent(Some(Share::Fraction(v)), PercentStyle::TABLE)),
        None => percent(None, PercentStyle::TABLE),
    }
}

fn agreement_cells(a: &Agreement) -> [String; 4] {
    [
        a.pairs.to_string(),
        rate(a.agreement(), a.agree, a.pairs),
        rate(a.precision(), a.kept_answerable, a.kept),
        rate(a.recall(), a.kept_answerable, a.answerable),
    ]
}

fn header(first: &str) -> Vec<String> {
    vec![
        first.into(),
        "labelled pairs".into(),
        FigureId::GraderAgreement.metric().title(),
        FigureId::GraderPrecision.metric().title(),
        FigureId::GraderRecall.metric().title(),
    ]
}

/// Per kind (every probe kind, then all): the counts and whether the kind is gradable offline.
pub fn kinds_table(c: &GraderCheck) -> Table {
    let g = Gradability { kinds: c.by_kind_strategy.clone() };
    let mut h = header("kind");
    h.push("gradable offline".into());
    let mut rows: Vec<Vec<String>> = c
        .by_kind
        .iter()
        .map(|(k, a)| {
            let mut row = vec![k.clone()];
            row.extend(agreement_cells(a));
            row.push(g.why_not(k).map_or_else(|| "yes".into(), |w| format!("no: {w}")));
            row
        })
        .collect();
    let mut all = vec!["all".to_string()];
    all.extend(agreement_cells(&c.all));
    all.push("–".into());
    rows.push(all);
    Table { header: h, rows }
}

/// Per kind × strategy: the counts, whether the pair passes, and what the labels and the grader each say
/// the strategy keeps (the share of labelled pairs answerable, and kept), so that a difference between two
/// strategies can be read in the labels beside the grader's.
pub fn kind_strategy_table(c: &GraderCheck) -> Table {
    let mut h = header("kind × strategy");
    h.extend(["passes".into(), "answerable (labels)".into(), "kept (grader)".into()]);
    let mut rows = Vec::new();
    for (kind, strategies) in &c.by_kind_strategy {
        for (strategy, a) in strategies {
            let mut row = vec![format!("{kind} × {strategy}")];
            row.extend(agreement_cells(a));
            row.push(a.why_not().map_or_else(|| "yes".into(), |w| format!("no: {w}")));
            row.push(rate(share(a.answerable, a.pairs), a.answerable, a.pairs));
            row.push(rate(share(a.kept, a.pairs), a.kept, a.pairs));
            rows.push(row);
        }
    }
    Table { header: h, rows }
}

/// Per kind, for each two labelled strategies: the difference in what they keep, by the labels and by the
/// grader (percentage points, first − second), and whether the difference may be drawn (both pass).
pub fn differences_table(c: &GraderCheck) -> Table {
    let h = vec![
        "kind".to_string(),
        "strategies".into(),
        "Δ answerable, labels (pp)".into(),
        "Δ kept, grader (pp)".into(),
        "drawn".into(),
    ];
    let mut rows = Vec::new();
    for (kind, strategies) in &c.by_kind_strategy {
        let list: Vec<(&String, &Agreement)> = strategies.iter().collect();
        for (i, (s1, a1)) in list.iter().enumerate() {
            for (s2, a2) in &list[i + 1..] {
                let diff = |n1: usize, n2: usize| match (share(n1, a1.pairs), share(n2, a2.pairs)) {
                    (Some(x), Some(y)) => {
                        crate::metrics::percentage_points(x - y, None, crate::metrics::PointsStyle::TABLE)
                    }
                    _ => "–".into(),
                };
                let drawn = if a1.gradable() && a2.gradable() { "yes" } else { "no: a strategy does not pass" };
                rows.push(vec![
                    kind.clone(),
                    format!("{s1} − {s2}"),
                    diff(a1.answerable, a2.answerable),
                    diff(a1.kept, a2.kept),
                    drawn.into(),
                ]);
            }
        }
    }
    Table { header: h, rows }
}

/// Per strategy: the counts.
pub fn strategies_table(c: &GraderCheck) -> Table {
    let rows = c
        .by_strategy
        .iter()
        .map(|(s, a)| {
            let mut row = vec![s.clone()];
            row.extend(agreement_cells(a));
            row
        })
        .collect();
    Table { header: header("strategy"), rows }
}

/// The labels set aside, one entry per probe and reason: `conversation/probe` (reason; n labels).
fn unused_list(items: &[Unused]) -> String {
    let mut groups: Vec<(&str, &str, usize)> = Vec::new();
    for u in items {
        let probe = u.id.split_once('@').map_or(u.id.as_str(), |(p, _)| p);
        match groups.iter_mut().find(|(p, r, _)| *p == probe && *r == u.reason) {
            Some(g) => g.2 += 1,
            None => groups.push((probe, &u.reason, 1)),
        }
    }
    groups
        .iter()
        .map(|(p, r, n)| format!("`{p}` ({r}; {n} label{})", if *n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The probes page's section, or nothing where the run names no labels file.
pub fn markdown(labels: &Labels) -> String {
    let mut md = String::new();
    let rule = format!(
        "A kind is *gradable offline* when, for every strategy with labels of that kind, the grader agrees with that strategy's labels on at least {} of at least {MIN_PAIRS} labelled pairs",
        percent(Some(Share::Fraction(AGREEMENT_FLOOR)), PercentStyle::PROSE_WHOLE)
    );
    match labels {
        Labels::Unset => return md,
        Labels::Missing(path) => {
            let _ = write!(
                md,
                "## Grader against labels\n\nNo labels file at `{}` yet: the grader is not checked against labels, and every probe kind is taken as gradable. {rule}.\n\n",
                path.display()
            );
        }
        Labels::Invalid { path, error } => {
            let _ = write!(
                md,
                "## Grader against labels\n\nThe labels file `{}` could not be read ({error}): the grader is not checked against labels, and every probe kind is taken as gradable. {rule}.\n\n",
                path.display()
            );
        }
        Labels::Checked(c) => {
            let g = Gradability { kinds: c.by_kind_strategy.clone() };
            let _ = write!(
                md,
                "## Grader against labels\n\nThe grader's verdict (`retained` in the cells: the history keeps the probe's fact) at each compression of a strategy's default point, against labels of whether that history answers the probe (`answerable`): {} labels in `{}` (made for `{}`; {}), {} pairs used. *Agreement*: share of pairs where the grader's verdict equals the label; *precision*: of the pairs the grader kept, the share labelled answerable; *recall*: of the pairs labelled answerable, the share the grader kept (counts in brackets; `harness/docs/metrics.md`). {rule}; the others are marked *{NOT_GRADABLE}* in *At the compression points, by probe kind*, which draws no conclusion from them, and every other probe figure of the report (early-only retention, kept at compressions, the claims, `results/conversations.*`, `points.*`) pools the gradable kinds only (`results/probes.csv` keeps every kind's rows). Gradable offline: {}.\n\n",
                c.labels,
                c.path.display(),
                c.dataset,
                c.method.as_deref().unwrap_or("the file does not say how they were made"),
                c.all.pairs,
                g.gradable_list()
            );
            md.push_str(&kinds_table(c).markdown());
            md.push_str("\n\n");
            let kind_strategy = kind_strategy_table(c);
            if !kind_strategy.rows.is_empty() {
                md.push_str("Per kind × strategy (*answerable*: share of the strategy's labelled pairs the labels call answerable; *kept*: the share the grader keeps):\n\n");
                md.push_str(&kind_strategy.markdown());
                md.push_str("\n\n");
                let differences = differences_table(c);
                if !differences.rows.is_empty() {
                    md.push_str("Differences between strategies on a kind, by the labels and by the grader; a difference is drawn only where both strategies pass:\n\n");
                    md.push_str(&differences.markdown());
                    md.push_str("\n\n");
                }
            }
            if !c.by_strategy.is_empty() {
                md.push_str(&strategies_table(c).markdown());
                md.push_str("\n\n");
            }
            let _ = writeln!(
                md,
                "Stale labels (the probe no longer exists or its question changed since it was labelled; not used): {}.\n",
                if c.stale.is_empty() { "0".into() } else { format!("{}: {}", c.stale.len(), unused_list(&c.stale)) }
            );
            if !c.unmatched.is_empty() {
                let _ = writeln!(
                    md,
                    "Labels of no pair this run scored (not used): {}: {}.\n",
                    c.unmatched.len(),
                    unused_list(&c.unmatched)
                );
            }
        }
    }
    md
}

/// The main page's line, or `None` where the run names no labels file.
pub fn main_line(labels: &Labels, probes_page: &str) -> Option<String> {
    let anchor = format!("[{probes_page}]({probes_page}#grader-against-labels)");
    match labels {
        Labels::Unset => None,
        Labels::Missing(path) => Some(format!(
            "Grader against labels ({anchor}): no labels file at `{}` yet; the grader is unchecked and every probe kind is taken as gradable.",
            path.display()
        )),
        Labels::Invalid { path, .. } => Some(format!(
            "Grader against labels ({anchor}): the labels file `{}` could not be read; the grader is unchecked and every probe kind is taken as gradable.",
            path.display()
        )),
        Labels::Checked(c) => {
            let g = Gradability { kinds: c.by_kind_strategy.clone() };
            Some(format!(
                "Grader against labels ({anchor}): agreement {} over {} labelled pairs; gradable offline (agreement ≥ {} over ≥ {MIN_PAIRS} pairs for every labelled strategy): {} of {} kinds ({}); every probe figure of this report (early-only retention, kept at compressions, the claims) pools those kinds only; {} stale labels.",
                rate(c.all.agreement(), c.all.agree, c.all.pairs),
                c.all.pairs,
                percent(Some(Share::Fraction(AGREEMENT_FLOOR)), PercentStyle::PROSE_WHOLE),
                g.gradable().len(),
                c.by_kind.len(),
                g.gradable_list(),
                c.stale.len()
            ))
        }
    }
}
