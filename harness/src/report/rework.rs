//! What happened after each of the agent's own compactions (`compactions.md` and `results/rework*.csv`,
//! `results/cache_requests.csv`), for runs that replay the agent's compactions (a `Role::Recorded` point):
//! the rework read from each recording ([`crate::rework`]), the chain of summaries by ordinal, each
//! compaction's cost in the prompt cache, and the cache model against the recorded usage.

use crate::data::{CellResult, Plan};
use crate::metrics::FigureId;
use crate::replay::strategy::Role;
use crate::rework::figures::{
    cache_check, cache_requests, compaction_cost, cost_figures, one_per_response, ordinal_figures, rework_figures,
    CacheRequest, ReworkFigures, CACHE_AGREEMENT_PP, POOLED_ORDINAL,
};
use crate::rework::{self, CompactionRework, FileAfterCompaction};
use crate::table::Table;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The page this module writes.
pub const PAGE: &str = "compactions.md";

/// One source's reading.
#[derive(Clone, Debug, Default)]
pub struct SourceReading {
    pub source: String,
    pub rows: Vec<CompactionRework>,
    pub files: Vec<FileAfterCompaction>,
    /// (conversation, request) of `recorded`'s replay where both the cache model and the usage give a share.
    pub cache: Vec<(String, CacheRequest)>,
}

/// The run's reading, per source in plan order; `None` when the run replays no agent's compactions.
pub fn read(plan: &Plan, cells: &[CellResult]) -> Option<Vec<SourceReading>> {
    let recorded_point = plan.point_of_role(Role::Recorded)?;
    let mut by_source: BTreeMap<String, SourceReading> = BTreeMap::new();
    for planned in plan.conversations.iter().filter(|c| c.error.is_none()) {
        let Ok(conv) = crate::datasets::load_conversation(&planned.path) else { continue };
        if conv.recorded_compactions.is_empty() {
            continue;
        }
        let reading = rework::conversation_rework(&conv);
        let entry = by_source
            .entry(planned.source.clone())
            .or_insert_with(|| SourceReading { source: planned.source.clone(), ..Default::default() });
        let firsts: Vec<usize> = reading.compactions.iter().map(|c| c.first_request).collect();
        entry.rows.extend(reading.compactions);
        entry.files.extend(reading.files);
        let cell = cells.iter().find(|c| c.cell.point == recorded_point.id && c.cell.conversation == planned.id);
        if let Some(r) = cell.map(|c| &c.result).filter(|r| !r.cached_request_tokens.is_empty()) {
            let requests = cache_requests(
                &r.request_tokens,
                &r.cached_request_tokens,
                &r.recorded_request_tokens,
                &r.recorded_cache_read_tokens,
                &firsts,
            );
            entry.cache.extend(requests.into_iter().map(|q| (planned.id.clone(), q)));
        }
    }
    (!by_source.is_empty()).then(|| by_source.into_values().collect())
}

/// A frame of serde rows: one column per field, numbers as f64 (integers as i64), booleans, strings.
fn frame<T: Serialize>(rows: &[T]) -> polars::prelude::PolarsResult<polars::prelude::DataFrame> {
    use polars::prelude::*;
    let values: Vec<serde_json::Map<String, serde_json::Value>> = rows
        .iter()
        .filter_map(|r| match serde_json::to_value(r) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect();
    let Some(first) = values.first() else { return Ok(DataFrame::empty()) };
    let mut columns = Vec::new();
    for key in first.keys() {
        let cells: Vec<&serde_json::Value> =
            values.iter().map(|m| m.get(key).unwrap_or(&serde_json::Value::Null)).collect();
        let name: PlSmallStr = key.as_str().into();
        let column = if cells.iter().all(|v| v.is_null() || v.is_boolean()) && cells.iter().any(|v| v.is_boolean()) {
            Column::new(name, cells.iter().map(|v| v.as_bool()).collect::<Vec<_>>())
        } else if cells.iter().all(|v| v.is_null() || v.is_i64() || v.is_u64()) && cells.iter().any(|v| !v.is_null()) {
            Column::new(name, cells.iter().map(|v| v.as_i64()).collect::<Vec<_>>())
        } else if cells.iter().all(|v| v.is_null() || v.is_number()) {
            Column::new(name, cells.iter().map(|v| v.as_f64()).collect::<Vec<_>>())
        } else {
            Column::new(name, cells.iter().map(|v| v.as_str().map(str::to_string)).collect::<Vec<_>>())
        };
        columns.push(column);
    }
    DataFrame::new(values.len(), columns)
}

#[derive(Serialize)]
struct CacheRow<'a> {
    source: &'a str,
    conversation: &'a str,
    request: usize,
    predicted_cached_share: f64,
    recorded_cached_share: f64,
    after_compaction: bool,
}

#[derive(Serialize)]
struct Sourced<'a, T: Serialize> {
    source: &'a str,
    #[serde(flatten)]
    row: &'a T,
}

/// Writes `results/rework.csv` (one row per compaction), `results/rework_files.csv` (one per (compaction,
/// file) pair) and `results/cache_requests.csv` (one per request the cache check compares).
pub fn write_results(reading: &[SourceReading], dir: &Path) -> polars::prelude::PolarsResult<()> {
    use polars::prelude::*;
    std::fs::create_dir_all(dir)?;
    let rows: Vec<Sourced<CompactionRework>> =
        reading.iter().flat_map(|s| s.rows.iter().map(|row| Sourced { source: &s.source, row })).collect();
    let files: Vec<Sourced<FileAfterCompaction>> =
        reading.iter().flat_map(|s| s.files.iter().map(|row| Sourced { source: &s.source, row })).collect();
    let cache: Vec<CacheRow> = reading
        .iter()
        .flat_map(|s| {
            s.cache.iter().map(|(conversation, q)| CacheRow {
                source: &s.source,
                conversation,
                request: q.request,
                predicted_cached_share: q.predicted,
                recorded_cached_share: q.recorded,
                after_compaction: q.after_compaction,
            })
        })
        .collect();
    for (name, mut df) in
        [("rework.csv", frame(&rows)?), ("rework_files.csv", frame(&files)?), ("cache_requests.csv", frame(&cache)?)]
    {
        CsvWriter::new(std::fs::File::create(dir.join(name))?).finish(&mut df)?;
    }
    Ok(())
}

/// A session's id as the table shows it: its first 8 characters, after the project where the id names one
/// (`project--uuid`).
fn short_id(id: &str) -> String {
    match id.rsplit_once("--") {
        Some((project, rest)) => format!("{project}--{}", rest.chars().take(8).collect::<String>()),
        None => id.chars().take(8).collect(),
    }
}

/// The sources, then all of them pooled as one corpus where there are several (a corpus of several
/// projects has one source per project, each with a few compactions).
fn with_pooled(reading: &[SourceReading]) -> Vec<SourceReading> {
    let mut out = reading.to_vec();
    if reading.len() > 1 {
        out.push(SourceReading {
            source: "all sources".into(),
            rows: reading.iter().flat_map(|s| s.rows.iter().cloned()).collect(),
            files: reading.iter().flat_map(|s| s.files.iter().cloned()).collect(),
            cache: reading.iter().flat_map(|s| s.cache.iter().cloned()).collect(),
        });
    }
    out
}

/// A table with `header` and no rows yet.
fn table(header: &[&str]) -> Table {
    Table { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
}

/// The page (`compactions.md`): each section by its own function, in page order.
pub fn markdown(plan: &Plan, reading: &[SourceReading]) -> String {
    let pooled = with_pooled(reading);
    let mut md = String::new();
    let _ = writeln!(md, "# compactbench report: {}, after each compaction\n", plan.name);
    md.push_str(
        "What the agent did after each of its own compactions, read from the recordings (not from a replay): \
         files it read again, commands it ran again, prompts the user typed again, how long it took to change a \
         file again, what each summary carried over from the one before, and what the compaction cost in the \
         prompt cache. Every figure is defined in `harness/docs/rework.md`; the rows are in `results/rework.csv` \
         (one per compaction), `results/rework_files.csv` (one per compaction and file read or changed before \
         it) and `results/cache_requests.csv`. Intervals: bootstrap 95 % over compactions (seeded).\n\n\
         *Control span*: as many model turns just before the compaction, counted against what came before it. \
         Agents re-read and re-run as they work; *added* is after minus control.\n\n",
    );
    let figures: Vec<(&SourceReading, ReworkFigures)> =
        pooled.iter().map(|s| (s, rework_figures(&s.rows, &s.files))).collect();
    rework_section(&mut md, &figures);
    named_section(&mut md, &figures);
    chain_section(&mut md, &pooled);
    cache_section(&mut md, plan, &pooled);
    every_compaction_section(&mut md, plan, reading);
    md
}

fn rework_section(md: &mut String, figures: &[(&SourceReading, ReworkFigures)]) {
    md.push_str("## Rework after a compaction\n\n");
    let mut t = table(&[
        "source",
        "compactions",
        "re-reads /10 turns after",
        "control",
        "added",
        "repeated commands /10 turns after",
        "control",
        "added",
        "prompts restating an earlier one",
        "turns to first edit (median)",
        "tokens to first edit (median)",
        "re-read share of them (median)",
    ]);
    for (s, f) in figures {
        let shown = |id: FigureId| f.figures.shown(id);
        let n = |id: FigureId| f.figures.get(id).n;
        t.rows.push(vec![
            s.source.clone(),
            f.compactions.to_string(),
            shown(FigureId::ReworkRereadsAfter),
            shown(FigureId::ReworkRereadsControl),
            shown(FigureId::ReworkRereadsAdded),
            shown(FigureId::ReworkRepeatsAfter),
            shown(FigureId::ReworkRepeatsControl),
            shown(FigureId::ReworkRepeatsAdded),
            format!(
                "{} (of {} prompts)",
                shown(FigureId::ReworkRestatedPromptShare),
                s.rows.iter().map(|r| r.prompts_after).sum::<usize>()
            ),
            format!("{} (n={})", shown(FigureId::ReworkTurnsToFirstEdit), n(FigureId::ReworkTurnsToFirstEdit)),
            shown(FigureId::ReworkTokensToFirstEdit),
            shown(FigureId::ReworkRereadShareToFirstEdit),
        ]);
    }
    md.push_str(&t.markdown());
}

fn named_section(md: &mut String, figures: &[(&SourceReading, ReworkFigures)]) {
    md.push_str("\n\n## Is a file the summary did not name re-read more often?\n\n");
    md.push_str(
        "Each (compaction, file) pair: a file read or changed before the compaction, and whether the agent read \
         it again before its next compaction. A summary names the files the work is about, and those are the \
         files an agent goes back to, so the raw difference is confounded. The *stratified* difference compares \
         like with like: within strata of how often the file was touched (1, 2–3, 4+ reads and changes), how \
         recently (last 10 model turns, 11–50, longer) and whether it was changed, pooled with Mantel–Haenszel \
         weights. Negative: files the summary leaves out are re-read more often than similar files it names.\n\n",
    );
    let mut t = table(&[
        "source",
        "pairs named / not",
        "re-read: named",
        "not named",
        "raw difference",
        "stratified difference",
    ]);
    for (s, f) in figures {
        let shown = |id: FigureId| f.figures.shown(id);
        let n = |id: FigureId| f.figures.get(id).n;
        t.rows.push(vec![
            s.source.clone(),
            format!("{} / {}", n(FigureId::ReworkRereadRateNamed), n(FigureId::ReworkRereadRateNotNamed)),
            shown(FigureId::ReworkRereadRateNamed),
            shown(FigureId::ReworkRereadRateNotNamed),
            shown(FigureId::ReworkNamedMinusNotRaw),
            shown(FigureId::ReworkNamedMinusNotStratified),
        ]);
    }
    md.push_str(&t.markdown());
}

fn chain_section(md: &mut String, reading: &[SourceReading]) {
    md.push_str("\n\n## Chains of compactions\n\n");
    let _ = writeln!(
        md,
        "Per compaction ordinal ({POOLED_ORDINAL} pools the {POOLED_ORDINAL}rd and later): the summary's size (o200k), the share of the files changed since the session's start it names, and of what the previous summary named (files; the user's typed prompts it echoed: half their key words in it) the share this one drops.\n"
    );
    let mut t = table(&[
        "source",
        "ordinal",
        "compactions",
        "summary tokens (median)",
        "files changed named",
        "previous files dropped",
        "previous prompts dropped",
    ]);
    for s in reading {
        for o in ordinal_figures(&s.rows) {
            let ordinal = if o.ordinal == POOLED_ORDINAL { format!("{}+", o.ordinal) } else { o.ordinal.to_string() };
            let shown = |id: FigureId| o.figures.shown(id);
            t.rows.push(vec![
                s.source.clone(),
                ordinal,
                o.compactions.to_string(),
                shown(FigureId::ChainSummaryTokens),
                shown(FigureId::ChainEditedFilesNamed),
                shown(FigureId::ChainPreviousFilesDropped),
                shown(FigureId::ChainPreviousPromptsDropped),
            ]);
        }
    }
    md.push_str(&t.markdown());
}

/// Every compaction, one row each (the sources apart, not pooled).
fn every_compaction_section(md: &mut String, plan: &Plan, every: &[SourceReading]) {
    md.push_str("\n\n## Every compaction\n\n");
    let mut t = table(&[
        "source",
        "session",
        "#",
        "tokens before → after",
        "summary",
        "turns after",
        "re-reads (named / not)",
        "repeated commands",
        "restated prompts",
        "turns to first edit",
        "break-even request",
    ]);
    let price = plan.cost.pricing(None).map(|p| p.agent);
    for s in every {
        for r in &s.rows {
            let cost = price.as_ref().and_then(|p| compaction_cost(r, p));
            t.rows.push(vec![
                s.source.clone(),
                short_id(&r.conversation),
                r.ordinal.to_string(),
                format!(
                    "{} → {}",
                    r.tokens_before.map_or("–".into(), |x| x.to_string()),
                    r.tokens_after.map_or("–".into(), |x| x.to_string())
                ),
                if r.summary_readable { r.summary_tokens.to_string() } else { "unreadable".into() },
                r.turns_after.to_string(),
                match (r.rereads_named, r.rereads_not_named) {
                    (Some(n), Some(o)) => format!("{} ({n} / {o})", r.rereads),
                    _ => format!("{} (summary unreadable)", r.rereads),
                },
                format!("{} of {}", r.repeated_commands, r.commands_after),
                format!("{} of {}", r.restated_prompts, r.prompts_after),
                r.turns_to_first_edit.map_or("–".into(), |x| x.to_string()),
                cost.and_then(|c| c.break_even_requests).map_or("–".into(), |x| x.to_string()),
            ]);
        }
    }
    md.push_str(&t.markdown());
    md.push('\n');
}

fn cache_section(md: &mut String, plan: &Plan, reading: &[SourceReading]) {
    md.push_str("\n\n## The cache model against the recorded usage\n\n");
    let _ = writeln!(
        md,
        "The replay's cache model serves a request the prefix it shares with the previous one (`cache_hit_share`, `cached_usd_vs_none`). Replaying the agent's own history (`recorded`), each request's predicted cached share is set beside the recorded `cache_read / (input + cache_read + cache_creation)`; the first request of a session is left out, and so is the first request after its first compaction, whose recorded cache read the model takes as the prefix that survives a compaction in that session (in-sample; where a session records none, the system prompt and tools). The model agrees when the median request is within {:.0} pp. One row per API response (parallel tool calls repeat one response's usage; repeats are left out); the *hard* requests, where the provider served under 90 % (an expired cache, a prefix not yet written), and the first request after each compaction, are where a cache model can be wrong, so they are given apart, beside the trivial predictor that takes each response's share to be the previous one's.\n",
        CACHE_AGREEMENT_PP * 100.0
    );
    let mut t = table(&[
        "source",
        "API responses",
        "median |error|",
        "mean error (model − recorded)",
        "within 10 pp",
        "first request after a later compaction (out of sample): median |error|",
        "hard requests (recorded < 90 %): median |error|",
        "trivial predictor (previous share): median |error|, all / hard",
    ]);
    for s in reading.iter().filter(|s| !s.cache.is_empty()) {
        let (requests, previous) = one_per_response(s.cache.iter().map(|(c, q)| (c.as_str(), *q)));
        let c = cache_check(&requests, &previous);
        let shown = |id: FigureId| c.figures.shown(id);
        let n = |id: FigureId| c.figures.get(id).n;
        t.rows.push(vec![
            s.source.clone(),
            c.requests.to_string(),
            shown(FigureId::CacheModelMedianAbsError),
            shown(FigureId::CacheModelMeanError),
            shown(FigureId::CacheModelWithin10pp),
            format!(
                "{} (n={})",
                shown(FigureId::CacheModelAfterCompactionError),
                n(FigureId::CacheModelAfterCompactionError)
            ),
            format!("{} (n={})", shown(FigureId::CacheModelHardError), n(FigureId::CacheModelHardError)),
            format!("{} / {}", shown(FigureId::CacheTrivialError), shown(FigureId::CacheTrivialHardError)),
        ]);
    }
    if t.rows.is_empty() {
        md.push_str("No conversation of this run records its cache traffic (Claude Code's usage does).\n");
        return;
    }
    md.push_str(&t.markdown());
    md.push_str(
        "\n\nWhere they part: a request after an idle gap longer than the provider keeps its cache finds it \
         expired and reads little (the model, which has no clock, predicts the full prefix), and a request whose \
         prefix the provider had not yet written. The recordings hold the times but the replay does not model \
         them, so the tail is reported, not fitted.\n\n",
    );
    cost_section(md, plan, reading);
}

fn cost_section(md: &mut String, plan: &Plan, reading: &[SourceReading]) {
    let Some(price) = plan.cost.pricing(None).map(|p| p.agent) else { return };
    md.push_str("### What each compaction cost\n\n");
    let _ = writeln!(
        md,
        "At the run's agent prices (`[cost]`, {} input, {} cached input, {} output per million tokens; a cache write at {}× input): the summary call (the history before it read from the cache, the summary as output), the cache written by the first request after it (recorded `cache_creation_input_tokens`), and the request at which the saving (each later request reads `tokens before − tokens after` fewer cached tokens) has paid for both. Medians over compactions with the recorded counts.\n",
        price.input_per_mtok,
        price.cached_input_per_mtok,
        price.output_per_mtok,
        rework::CACHE_WRITE_MULTIPLIER
    );
    let mut t = table(&[
        "source",
        "compactions",
        "summary call (USD)",
        "cache write after (USD)",
        "saving per request (USD)",
        "break-even request",
        "paid back before the span ended",
    ]);
    for s in reading {
        let c = cost_figures(&s.rows, &price);
        if c.compactions == 0 {
            continue;
        }
        let shown = |id: FigureId| c.figures.shown(id);
        t.rows.push(vec![
            s.source.clone(),
            c.compactions.to_string(),
            shown(FigureId::CompactionSummaryCallUsd),
            shown(FigureId::CompactionCacheWriteUsd),
            shown(FigureId::CompactionSavingPerRequestUsd),
            shown(FigureId::CompactionBreakEvenRequest),
            format!("{} of {}", shown(FigureId::CompactionPaidBack), c.compactions),
        ]);
    }
    md.push_str(&t.markdown());
}
