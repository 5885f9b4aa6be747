//! Aggregation of a run's stored cells with polars: per event, per conversation (cell) and per config
//! point (mean, median, p90 and bootstrap 95 % confidence intervals over conversations).

use crate::sweep::{CellResult, Plan};
use polars::prelude::*;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;

/// Per-conversation figures, by metric name. The gate compares these pairwise.
pub fn conversation_metrics(c: &CellResult) -> BTreeMap<&'static str, f64> {
    let r = &c.result;
    let mut m = BTreeMap::new();
    let count = |s: &str| r.events.iter().filter(|e| e.status == s).count() as f64;
    m.insert("compressed_events", count("COMPRESSED"));
    m.insert("inflated_events", count("COMPRESSION_FAILED_INFLATED_TOKEN_COUNT"));
    m.insert("empty_summary_events", count("COMPRESSION_FAILED_EMPTY_SUMMARY"));
    m.insert("truncation_only_events", count("CONTENT_TRUNCATED"));
    m.insert("hidden_inflation_events", r.events.iter().filter(|e| e.hidden_inflation).count() as f64);
    m.insert("overflow_events", r.overflow_events as f64);
    m.insert("peak_context", r.peak_context as f64);
    m.insert("failed", r.error.is_some() as u8 as f64);
    m.insert("summarizer_overhead_tokens", r.summarizer_overhead_tokens as f64);
    if r.baseline_cumulative_tokens > 0 {
        m.insert("cumulative_vs_none", r.cumulative_request_tokens as f64 / r.baseline_cumulative_tokens as f64);
    }
    if r.baseline_cumulative_true_tokens > 0 {
        m.insert("true_cumulative_vs_none", r.cumulative_true_tokens as f64 / r.baseline_cumulative_true_tokens as f64);
    }
    let reductions: Vec<f64> = r
        .events
        .iter()
        .filter(|e| e.status == "COMPRESSED" || e.status == "CONTENT_TRUNCATED")
        .map(|e| e.reduction)
        .collect();
    if !reductions.is_empty() {
        m.insert("mean_reduction", reductions.iter().sum::<f64>() / reductions.len() as f64);
    }
    // Probe figures (retention, early-only, at-risk, retrieval accuracy…): defined in `probes::figures`.
    m.extend(crate::probes::figures::conversation_metrics(c));
    // Retention right after each compression event, averaged over the events: what the summary kept, before
    // later turns can bring an answer back (the end figure above hides a lost answer that reappears).
    if let Some(p) = &c.probes {
        let at_events: Vec<f64> = p
            .checkpoints
            .iter()
            .filter(|k| k.event.is_some() && !k.scores.is_empty())
            .map(|k| k.scores.iter().filter(|s| s.retained).count() as f64 / k.scores.len() as f64)
            .collect();
        if !at_events.is_empty() {
            m.insert("retention_at_events", at_events.iter().sum::<f64>() / at_events.len() as f64);
        }
    }
    let verified: Vec<_> = r.events.iter().filter_map(|e| e.verification.as_ref()).collect();
    if !verified.is_empty() {
        let n = verified.len() as f64;
        m.insert("verification_changed", verified.iter().filter(|v| !v.identical).count() as f64 / n);
        m.insert("verification_edit_distance", verified.iter().map(|v| v.edit_distance).sum::<f64>() / n);
        m.insert("verification_token_delta", verified.iter().map(|v| v.token_delta as f64).sum::<f64>() / n);
    }
    m
}

/// Metrics aggregated per point, in this order in tables.
pub const POINT_METRICS: [&str; 11] = [
    "cumulative_vs_none",
    "retention",
    "retrieval_accuracy",
    "mean_reduction",
    "compressed_events",
    "inflated_events",
    "empty_summary_events",
    "truncation_only_events",
    "hidden_inflation_events",
    "overflow_events",
    "verification_changed",
];

/// Mean with a bootstrap 95 % interval (percentile method, fixed seed so reports are reproducible).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
    pub n: usize,
}

pub const BOOTSTRAP_RESAMPLES: usize = 2000;
pub const BOOTSTRAP_SEED: u64 = 0x00c0_ffee;

pub fn bootstrap_mean(values: &[f64]) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Some(Estimate { mean, low: mean, high: mean, n });
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(BOOTSTRAP_SEED);
    let mut means: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| (0..n).map(|_| values[rng.random_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (BOOTSTRAP_RESAMPLES - 1) as f64).round() as usize).min(BOOTSTRAP_RESAMPLES - 1)];
    Some(Estimate { mean, low: at(0.025), high: at(0.975), n })
}

/// The three frames of a run.
pub struct Frames {
    pub events: DataFrame,
    pub conversations: DataFrame,
    pub points: DataFrame,
}

fn axis_names(plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = plan.points.iter().flat_map(|p| p.axes.keys().cloned()).collect();
    names.sort();
    names.dedup();
    names.retain(|n| n != "strategy" && n != "summarizer");
    names
}

fn col_str(name: &str, v: Vec<Option<String>>) -> Column {
    Column::new(name.into(), v)
}

pub fn frames(plan: &Plan, cells: &[CellResult]) -> PolarsResult<Frames> {
    let points: BTreeMap<&str, &crate::sweep::ConfigPoint> = plan.points.iter().map(|p| (p.id.as_str(), p)).collect();
    let axes = axis_names(plan);

    // Events.
    let mut e_point = Vec::new();
    let mut e_strategy = Vec::new();
    let mut e_conv = Vec::new();
    let mut e_source = Vec::new();
    let mut e_turn = Vec::new();
    let mut e_status = Vec::new();
    let mut e_before = Vec::new();
    let mut e_after = Vec::new();
    let mut e_reduction = Vec::new();
    let mut e_true_before = Vec::new();
    let mut e_true_after = Vec::new();
    let mut e_hidden = Vec::new();
    let mut e_summarized = Vec::new();
    let mut e_kept = Vec::new();
    let mut e_summary_tokens = Vec::new();
    let mut e_v_identical: Vec<Option<bool>> = Vec::new();
    let mut e_v_delta: Vec<Option<i64>> = Vec::new();
    let mut e_v_edit: Vec<Option<f64>> = Vec::new();
    for c in cells {
        let strategy = points.get(c.cell.point.as_str()).map(|p| p.strategy.kind()).unwrap_or("?");
        for e in &c.result.events {
            e_point.push(c.cell.point.clone());
            e_strategy.push(strategy.to_string());
            e_conv.push(c.cell.conversation.clone());
            e_source.push(c.source.clone());
            e_turn.push(e.turn as u64);
            e_status.push(e.status.clone());
            e_before.push(e.tokens_before);
            e_after.push(e.tokens_after);
            e_reduction.push(e.reduction);
            e_true_before.push(e.true_tokens_before);
            e_true_after.push(e.true_tokens_after);
            e_hidden.push(e.hidden_inflation);
            e_summarized.push(e.summarized_contents as u64);
            e_kept.push(e.kept_contents as u64);
            e_summary_tokens.push(e.summary_tokens);
            e_v_identical.push(e.verification.as_ref().map(|v| v.identical));
            e_v_delta.push(e.verification.as_ref().map(|v| v.token_delta));
            e_v_edit.push(e.verification.as_ref().map(|v| v.edit_distance));
        }
    }
    let n_events = e_point.len();
    let events = DataFrame::new(
        n_events,
        vec![
            Column::new("point".into(), e_point),
            Column::new("strategy".into(), e_strategy),
            Column::new("conversation".into(), e_conv),
            Column::new("source".into(), e_source),
            Column::new("turn".into(), e_turn),
            Column::new("status".into(), e_status),
            Column::new("tokens_before".into(), e_before),
            Column::new("tokens_after".into(), e_after),
            Column::new("reduction".into(), e_reduction),
            Column::new("true_tokens_before".into(), e_true_before),
            Column::new("true_tokens_after".into(), e_true_after),
            Column::new("hidden_inflation".into(), e_hidden),
            Column::new("summarized_contents".into(), e_summarized),
            Column::new("kept_contents".into(), e_kept),
            Column::new("summary_tokens".into(), e_summary_tokens),
            Column::new("verification_identical".into(), e_v_identical),
            Column::new("verification_token_delta".into(), e_v_delta),
            Column::new("verification_edit_distance".into(), e_v_edit),
        ],
    )?;

    // Conversations (one row per cell).
    let metric_names: Vec<&str> = {
        let mut v: Vec<&str> = cells.iter().flat_map(|c| conversation_metrics(c).into_keys()).collect();
        v.sort();
        v.dedup();
        v
    };
    let per_cell: Vec<BTreeMap<&str, f64>> = cells.iter().map(conversation_metrics).collect();
    let mut columns = vec![
        Column::new("point".into(), cells.iter().map(|c| c.cell.point.clone()).collect::<Vec<_>>()),
        Column::new(
            "strategy".into(),
            cells
                .iter()
                .map(|c| points.get(c.cell.point.as_str()).map(|p| p.strategy.kind()).unwrap_or("?"))
                .collect::<Vec<_>>(),
        ),
        col_str(
            "summarizer",
            cells.iter().map(|c| points.get(c.cell.point.as_str()).and_then(|p| p.summarizer.clone())).collect(),
        ),
    ];
    for a in &axes {
        columns.push(col_str(
            a,
            cells.iter().map(|c| points.get(c.cell.point.as_str()).and_then(|p| p.axes.get(a).cloned())).collect(),
        ));
    }
    columns.push(Column::new(
        "conversation".into(),
        cells.iter().map(|c| c.cell.conversation.clone()).collect::<Vec<_>>(),
    ));
    columns.push(Column::new("repeat".into(), cells.iter().map(|c| c.cell.repeat).collect::<Vec<_>>()));
    columns.push(Column::new("source".into(), cells.iter().map(|c| c.source.clone()).collect::<Vec<_>>()));
    columns.push(Column::new("requests".into(), cells.iter().map(|c| c.result.requests as u64).collect::<Vec<_>>()));
    columns.push(Column::new(
        "cumulative_request_tokens".into(),
        cells.iter().map(|c| c.result.cumulative_request_tokens).collect::<Vec<_>>(),
    ));
    columns.push(Column::new(
        "baseline_cumulative_tokens".into(),
        cells.iter().map(|c| c.result.baseline_cumulative_tokens).collect::<Vec<_>>(),
    ));
    for m in &metric_names {
        columns
            .push(Column::new((*m).into(), per_cell.iter().map(|x| x.get(m).copied()).collect::<Vec<Option<f64>>>()));
    }
    columns.push(col_str("error", cells.iter().map(|c| c.result.error.clone()).collect()));
    let conversations = DataFrame::new(cells.len(), columns)?;

    // Points: polars for mean/median/p90, our bootstrap for the intervals.
    let present: Vec<&str> = POINT_METRICS.iter().copied().filter(|m| metric_names.contains(m)).collect();
    let mut aggs = vec![col("conversation").count().alias("conversations")];
    for m in &present {
        aggs.push(col(*m).mean().alias(format!("{m}_mean")));
        aggs.push(col(*m).median().alias(format!("{m}_median")));
        aggs.push(col(*m).quantile(lit(0.9), QuantileMethod::Linear).alias(format!("{m}_p90")));
    }
    let order: Vec<String> = plan.points.iter().map(|p| p.id.clone()).collect();
    let grouped = conversations.clone().lazy().group_by_stable([col("point")]).agg(aggs).collect()?;
    // Keep the plan's point order.
    let mut rows: Vec<usize> = Vec::new();
    let ids = grouped.column("point")?.str()?.clone();
    for id in &order {
        if let Some(i) = ids.iter().position(|x| x == Some(id.as_str())) {
            rows.push(i);
        }
    }
    let idx = IdxCa::from_vec("idx".into(), rows.iter().map(|&i| i as IdxSize).collect());
    let mut grouped = grouped.take(&idx)?;
    let point_ids: Vec<String> =
        grouped.column("point")?.str()?.iter().map(|s| s.unwrap_or_default().to_string()).collect();
    let strategies: Vec<String> = point_ids
        .iter()
        .map(|id| points.get(id.as_str()).map(|p| p.strategy.kind().to_string()).unwrap_or_default())
        .collect();
    let summarizers: Vec<Option<String>> =
        point_ids.iter().map(|id| points.get(id.as_str()).and_then(|p| p.summarizer.clone())).collect();
    grouped.with_column(Column::new("strategy".into(), strategies))?;
    grouped.with_column(col_str("summarizer", summarizers))?;
    for a in &axes {
        let v: Vec<Option<String>> =
            point_ids.iter().map(|id| points.get(id.as_str()).and_then(|p| p.axes.get(a).cloned())).collect();
        grouped.with_column(col_str(a, v))?;
    }
    for m in &present {
        let mut lows = Vec::new();
        let mut highs = Vec::new();
        for id in &point_ids {
            let values: Vec<f64> = cells
                .iter()
                .zip(&per_cell)
                .filter(|(c, _)| &c.cell.point == id)
                .filter_map(|(_, x)| x.get(m).copied())
                .collect();
            let est = bootstrap_mean(&values);
            lows.push(est.map(|e| e.low));
            highs.push(est.map(|e| e.high));
        }
        grouped.with_column(Column::new(format!("{m}_ci_low").into(), lows))?;
        grouped.with_column(Column::new(format!("{m}_ci_high").into(), highs))?;
    }
    for column in crate::probes::figures::point_columns(plan, cells, &point_ids) {
        grouped.with_column(column)?;
    }
    Ok(Frames { events, conversations, points: grouped })
}

/// Writes every frame as Parquet, CSV and JSON under `dir`.
pub fn write_frames(frames: &mut Frames, dir: &Path) -> PolarsResult<()> {
    std::fs::create_dir_all(dir)?;
    for (name, df) in
        [("events", &mut frames.events), ("conversations", &mut frames.conversations), ("points", &mut frames.points)]
    {
        ParquetWriter::new(std::fs::File::create(dir.join(format!("{name}.parquet")))?).finish(df)?;
        CsvWriter::new(std::fs::File::create(dir.join(format!("{name}.csv")))?).finish(df)?;
        JsonWriter::new(std::fs::File::create(dir.join(format!("{name}.json")))?)
            .with_json_format(JsonFormat::Json)
            .finish(df)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_mean() {
        let v: Vec<f64> = (0..40).map(|i| (i % 7) as f64 / 7.0).collect();
        let a = bootstrap_mean(&v).unwrap();
        assert_eq!(Some(a), bootstrap_mean(&v));
        assert!(a.low <= a.mean && a.mean <= a.high && a.low < a.high);
        assert_eq!(bootstrap_mean(&[0.5]).unwrap().low, 0.5);
        assert!(bootstrap_mean(&[]).is_none());
    }
}
