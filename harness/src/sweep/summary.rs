//! The run's summary (per config point), printed after `run` and written as `summary.json`.

use super::runner::{CellResult, Plan};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Aggregates of one config point over its conversations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointSummary {
    pub point: String,
    pub strategy: String,
    pub summarizer: String,
    pub axes: BTreeMap<String, String>,
    pub conversations: usize,
    pub failed: usize,
    pub events_by_status: BTreeMap<String, u64>,
    /// Mean of `1 − after/before` over COMPRESSED and CONTENT_TRUNCATED events.
    pub mean_reduction: Option<f64>,
    pub hidden_inflation: u64,
    pub hidden_deflation: u64,
    pub overflow_events: u64,
    /// Σ cumulative request tokens / Σ the same without compression (1.0 = no saving).
    pub cumulative_vs_none: Option<f64>,
    pub summarizer_overhead_tokens: u64,
    /// Share of verified events whose verification pass changed the summary.
    pub verification_changed: Option<f64>,
    /// Probe figures, when the run scored probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbeSummary>,
}

/// Probe figures of one kind (or all kinds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeFigures {
    /// Probes scored at the end of the replay.
    pub probes: usize,
    /// Share of probes whose gold answer is in the final history.
    pub retention_end: Option<f64>,
    /// The same over every (probe, compression event) pair.
    pub retention_events: Option<f64>,
    /// Share of end-of-replay answers containing a gold answer; mean token F1; share of exact matches.
    pub accuracy_end: Option<f64>,
    pub f1_end: Option<f64>,
    pub exact_end: Option<f64>,
    /// Mean judge score (0–5) at the end.
    pub judge_end: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub all: ProbeFigures,
    pub by_kind: BTreeMap<String, ProbeFigures>,
    /// Mean of (retained with the verified summary − retained with the first-pass one) over probes scored at
    /// events where verification changed the summary; positive = verification recovered facts.
    pub verification_retention_delta: Option<f64>,
    /// The same for answer containment, when first-pass answers were asked for.
    pub verification_accuracy_delta: Option<f64>,
    pub injection: Option<InjectionSummary>,
    /// Early-only / at-risk retention with n, verification gain with its interval (`probes::figures`).
    #[serde(flatten)]
    pub headline: crate::probes::figures::Headline,
    /// Every probe figure with n and interval, and its breakdowns by source, kind, origin and ordinal.
    pub figures: Option<crate::probes::figures::ProbeFigures>,
    /// Cells whose probes could not be loaded or scored.
    pub errors: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InjectionSummary {
    pub conversations: usize,
    pub snapshots: u64,
    pub obeyed_snapshots: u64,
    /// Summaries that quoted the canary only on lines flagging it as an injection (`probes::inject::classify`).
    #[serde(default)]
    pub flagged_snapshots: u64,
    /// Conversations whose instruction was planted in a user turn (no tool output to carry it).
    #[serde(default)]
    pub planted_in_user_turn: usize,
    /// Share of conversations whose last summary obeyed the planted instruction.
    pub final_obeyed: Option<f64>,
    /// Share of summaries that obeyed it.
    pub obeyed_rate: Option<f64>,
}

#[derive(Default)]
struct FigureAcc {
    end: Vec<f64>,
    events: Vec<f64>,
    contains: Vec<f64>,
    f1: Vec<f64>,
    exact: Vec<f64>,
    judge: Vec<f64>,
}

impl FigureAcc {
    fn figures(&self) -> ProbeFigures {
        ProbeFigures {
            probes: self.end.len(),
            retention_end: mean(&self.end),
            retention_events: mean(&self.events),
            accuracy_end: mean(&self.contains),
            f1_end: mean(&self.f1),
            exact_end: mean(&self.exact),
            judge_end: mean(&self.judge),
        }
    }
}

fn probe_summary(cells: &[&CellResult], strategy: &str) -> Option<ProbeSummary> {
    let with: Vec<&crate::probes::ProbeResults> = cells.iter().filter_map(|c| c.probes.as_ref()).collect();
    if with.is_empty() {
        return None;
    }
    let mut all = FigureAcc::default();
    let mut kinds: BTreeMap<String, FigureAcc> = BTreeMap::new();
    let (mut vr, mut va) = (Vec::new(), Vec::new());
    let mut inj = InjectionSummary::default();
    let mut final_obeyed = 0usize;
    let mut errors = 0;
    for r in with {
        errors += r.error.is_some() as usize;
        for cp in &r.checkpoints {
            for s in &cp.scores {
                let k = kinds.entry(s.kind.name().to_string()).or_default();
                let retained = s.retained as u8 as f64;
                if cp.event.is_some() {
                    all.events.push(retained);
                    k.events.push(retained);
                    if let Some(first) = s.first_pass_retained {
                        vr.push(retained - first as u8 as f64);
                    }
                    if let (Some(a), Some(f)) = (&s.answer, &s.first_pass_answer) {
                        va.push(a.grade.contains as u8 as f64 - f.grade.contains as u8 as f64);
                    }
                    continue;
                }
                for acc in [&mut all, &mut *k] {
                    acc.end.push(retained);
                    if let Some(a) = s.answer.as_ref().filter(|a| a.error.is_none()) {
                        acc.contains.push(a.grade.contains as u8 as f64);
                        acc.f1.push(a.grade.f1);
                        acc.exact.push(a.grade.exact as u8 as f64);
                        if let Some(j) = a.judge {
                            acc.judge.push(j as f64);
                        }
                    }
                }
            }
        }
        if let Some(i) = &r.injection {
            inj.conversations += 1;
            inj.snapshots += i.snapshots as u64;
            inj.obeyed_snapshots += i.obeyed_snapshots as u64;
            inj.flagged_snapshots += i.flagged_snapshots as u64;
            inj.planted_in_user_turn += (i.carrier == "user-turn") as usize;
            final_obeyed += i.final_obeyed as usize;
        }
    }
    let injection = (inj.conversations > 0).then(|| InjectionSummary {
        final_obeyed: Some(final_obeyed as f64 / inj.conversations as f64),
        obeyed_rate: (inj.snapshots > 0).then(|| inj.obeyed_snapshots as f64 / inj.snapshots as f64),
        ..inj
    });
    let figures = crate::probes::figures::point_figures(cells, strategy);
    Some(ProbeSummary {
        headline: figures.as_ref().map(|f| f.headline()).unwrap_or_default(),
        figures,
        all: all.figures(),
        by_kind: kinds.iter().map(|(k, a)| (k.clone(), a.figures())).collect(),
        verification_retention_delta: mean(&vr),
        verification_accuracy_delta: mean(&va),
        injection,
        errors,
    })
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

pub fn summarize(plan: &Plan, cells: &[CellResult]) -> Vec<PointSummary> {
    plan.points
        .iter()
        .map(|p| {
            let mine: Vec<&CellResult> = cells.iter().filter(|c| c.cell.point == p.id).collect();
            let mut s = PointSummary {
                point: p.id.clone(),
                strategy: p.strategy.kind().to_string(),
                summarizer: p.summarizer.clone().unwrap_or_else(|| "-".into()),
                axes: p.axes.clone(),
                conversations: mine.len(),
                ..Default::default()
            };
            let mut reductions = Vec::new();
            let mut verified = 0usize;
            let mut changed = 0usize;
            let (mut cum, mut base) = (0u64, 0u64);
            for c in &mine {
                let r = &c.result;
                s.failed += r.error.is_some() as usize;
                for e in &r.events {
                    *s.events_by_status.entry(e.status.clone()).or_default() += 1;
                    if e.status == "COMPRESSED" || e.status == "CONTENT_TRUNCATED" {
                        reductions.push(e.reduction);
                    }
                    s.hidden_inflation += e.hidden_inflation as u64;
                    s.hidden_deflation += e.hidden_deflation as u64;
                    if let Some(v) = &e.verification {
                        verified += 1;
                        changed += !v.identical as usize;
                    }
                }
                s.overflow_events += r.overflow_events;
                s.summarizer_overhead_tokens += r.summarizer_overhead_tokens;
                cum += r.cumulative_request_tokens;
                base += r.baseline_cumulative_tokens;
            }
            s.mean_reduction = mean(&reductions);
            s.cumulative_vs_none = (base > 0).then(|| cum as f64 / base as f64);
            s.verification_changed = (verified > 0).then(|| changed as f64 / verified as f64);
            s.probes = probe_summary(&mine, p.strategy.kind());
            s
        })
        .collect()
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or_else(|| "-".into())
}

/// A terminal table of the summary (the axes that vary across points, then the figures).
pub fn table(summaries: &[PointSummary]) -> String {
    let mut varying: Vec<String> = Vec::new();
    let all_axes: std::collections::BTreeSet<&String> = summaries.iter().flat_map(|s| s.axes.keys()).collect();
    for a in all_axes {
        if a == "strategy" || a == "summarizer" {
            continue;
        }
        let values: std::collections::BTreeSet<Option<&String>> = summaries.iter().map(|s| s.axes.get(a)).collect();
        if values.len() > 1 {
            varying.push(a.clone());
        }
    }
    let mut builder = tabled::builder::Builder::default();
    let mut header: Vec<String> = vec!["strategy".into(), "summarizer".into()];
    header.extend(varying.iter().cloned());
    header.extend(
        [
            "convs",
            "compressed",
            "inflated",
            "empty",
            "truncated",
            "mean reduction",
            "hidden infl.",
            "cum. vs none",
            "verif. changed",
            "failed",
        ]
        .map(String::from),
    );
    let with_probes = summaries.iter().any(|s| s.probes.is_some());
    if with_probes {
        header.extend(
            [
                "probes",
                "early-only ret. (n)",
                "at-risk ret. (n)",
                "retained",
                "retrieval acc.",
                "verif. gain",
                "inject obeyed",
            ]
            .map(String::from),
        );
    }
    builder.push_record(header);
    for s in summaries {
        let status = |k: &str| s.events_by_status.get(k).copied().unwrap_or(0).to_string();
        let mut row = vec![s.strategy.clone(), s.summarizer.clone()];
        row.extend(varying.iter().map(|a| s.axes.get(a).cloned().unwrap_or_else(|| "-".into())));
        row.extend([
            s.conversations.to_string(),
            status("COMPRESSED"),
            status("COMPRESSION_FAILED_INFLATED_TOKEN_COUNT"),
            status("COMPRESSION_FAILED_EMPTY_SUMMARY"),
            status("CONTENT_TRUNCATED"),
            pct(s.mean_reduction),
            s.hidden_inflation.to_string(),
            pct(s.cumulative_vs_none),
            pct(s.verification_changed),
            s.failed.to_string(),
        ]);
        if with_probes {
            let p = s.probes.clone().unwrap_or_default();
            let h = &p.headline;
            row.extend([
                p.all.probes.to_string(),
                format!("{} ({})", pct(h.early_only_retention), h.early_only_n),
                format!("{} ({})", pct(h.at_risk_retention), h.at_risk_n),
                pct(p.all.retention_end),
                pct(p.all.accuracy_end),
                signed_pct(h.verification_retention_gain),
                p.injection.map(|i| pct(i.final_obeyed)).unwrap_or_else(|| "-".into()),
            ]);
        }
        builder.push_record(row);
    }
    let mut t = builder.build();
    t.with(tabled::settings::Style::sharp());
    let mut out = t.to_string();
    if with_probes {
        out.push('\n');
        out.push_str(&kind_table(summaries, &varying));
    }
    out
}

fn signed_pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:+.1}%", v * 100.0)).unwrap_or_else(|| "-".into())
}

/// Probe figures per point and kind: retention at the end / over events, answer containment, F1.
fn kind_table(summaries: &[PointSummary], varying: &[String]) -> String {
    let mut builder = tabled::builder::Builder::default();
    let mut header: Vec<String> = vec!["strategy".into(), "summarizer".into()];
    header.extend(varying.iter().cloned());
    header.extend(
        ["kind", "probes", "retained (end)", "retained (events)", "retrieval acc.", "F1", "judge"].map(String::from),
    );
    builder.push_record(header);
    for s in summaries {
        let Some(p) = &s.probes else { continue };
        for (kind, f) in p.by_kind.iter().chain(std::iter::once((&"all".to_string(), &p.all))) {
            let mut row = vec![s.strategy.clone(), s.summarizer.clone()];
            row.extend(varying.iter().map(|a| s.axes.get(a).cloned().unwrap_or_else(|| "-".into())));
            row.extend([
                kind.clone(),
                f.probes.to_string(),
                pct(f.retention_end),
                pct(f.retention_events),
                pct(f.accuracy_end),
                f.f1_end.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into()),
                f.judge_end.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into()),
            ]);
            builder.push_record(row);
        }
    }
    let mut t = builder.build();
    t.with(tabled::settings::Style::sharp());
    t.to_string()
}
