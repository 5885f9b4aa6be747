//! The corpus figures of the rework reading, computed here and defined in the figure table (`FigureId`s of
//! level `compaction` in `metrics/definitions.rs`, glossary in `harness/docs/metrics.md`): rates after a
//! compaction beside the control span, the named / not-named re-read comparison within strata of similar
//! files, the chain of summaries by ordinal, the cache model against the recording, and each compaction's
//! cost in the prompt cache.

use super::{CompactionRework, FileAfterCompaction, CACHE_WRITE_MULTIPLIER};
use crate::metrics::{CompactionFigure, CompactionFigures, FigureId};
use crate::pricing::Price;
use crate::stats::{self, median};
use std::collections::BTreeMap;

/// A statistic over compactions (the indices resampled) with its bootstrap interval.
fn bootstrapped(n: usize, stat: impl Fn(&[usize]) -> Option<f64>) -> CompactionFigure {
    let all: Vec<usize> = (0..n).collect();
    let value = stat(&all);
    let interval = value.and_then(|_| stats::bootstrap(n, &stat));
    CompactionFigure { value, interval, n }
}

/// A value with no interval (a median, a pooled share) over `n` items.
fn plain(value: Option<f64>, n: usize) -> CompactionFigure {
    CompactionFigure { value, interval: None, n }
}

/// The median of `xs`, over as many items as it holds.
fn median_of(xs: Vec<f64>) -> CompactionFigure {
    let n = xs.len();
    plain(median(xs), n)
}

fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

/// Per 10 model turns: the figure's unit for re-reads and repeated commands.
const PER_TURNS: f64 = 10.0;

/// The rework figures of one corpus: re-reads and repeated commands after and over the control span, restated
/// prompts, the way to the first edit, and the named / not-named re-read comparison.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReworkFigures {
    pub compactions: usize,
    /// Each figure with its n: the medians to the first edit are over the compactions with a change of a file
    /// in their span, the named / not-named rates over the (compaction, file) pairs of each side.
    pub figures: CompactionFigures,
}

/// How many times a file was touched before the compaction: 1, 2–3, 4 or more.
fn weight_stratum(f: &FileAfterCompaction) -> usize {
    match f.reads_before + f.edits_before {
        0 | 1 => 0,
        2 | 3 => 1,
        _ => 2,
    }
}

/// How recently: within the last 10 model turns, 11–50, longer ago.
fn recency_stratum(f: &FileAfterCompaction) -> usize {
    match f.turns_since_touch {
        0..=10 => 0,
        11..=50 => 1,
        _ => 2,
    }
}

/// The stratum of a (compaction, file) pair: weight × recency × whether the file was changed.
pub fn stratum(f: &FileAfterCompaction) -> (usize, usize, bool) {
    (weight_stratum(f), recency_stratum(f), f.edits_before > 0)
}

/// Mantel–Haenszel risk difference of re-reading, named minus not named, over strata; `None` when no stratum
/// holds both.
pub fn stratified_difference(files: &[&FileAfterCompaction]) -> Option<f64> {
    let mut strata: BTreeMap<(usize, usize, bool), [f64; 4]> = BTreeMap::new(); // named reread, named, not reread, not
    for f in files {
        let s = strata.entry(stratum(f)).or_default();
        let Some(named) = f.named else { continue };
        if named {
            s[0] += f.reread as u8 as f64;
            s[1] += 1.0;
        } else {
            s[2] += f.reread as u8 as f64;
            s[3] += 1.0;
        }
    }
    let (mut num, mut den) = (0.0, 0.0);
    for [a, n1, c, n0] in strata.values() {
        if *n1 == 0.0 || *n0 == 0.0 {
            continue;
        }
        let w = n1 * n0 / (n1 + n0);
        num += w * (a / n1 - c / n0);
        den += w;
    }
    ratio(num, den)
}

/// The re-read rate of the pairs whose summary names the file (`named`) or does not, and how many pairs
/// that side holds.
fn reread_rate(files: &[&FileAfterCompaction], named: bool) -> (Option<f64>, usize) {
    let side: Vec<_> = files.iter().filter(|f| f.named == Some(named)).collect();
    (ratio(side.iter().filter(|f| f.reread).count() as f64, side.len() as f64), side.len())
}

fn raw_difference(files: &[&FileAfterCompaction]) -> Option<f64> {
    Some(reread_rate(files, true).0? - reread_rate(files, false).0?)
}

/// The corpus figures over its compactions and their (compaction, file) pairs.
pub fn rework_figures(rows: &[CompactionRework], files: &[FileAfterCompaction]) -> ReworkFigures {
    let n = rows.len();
    let sum = |s: &[usize], f: fn(&CompactionRework) -> usize| s.iter().map(|&i| f(&rows[i]) as f64).sum::<f64>();
    let per = |num: fn(&CompactionRework) -> usize, den: fn(&CompactionRework) -> usize| {
        move |s: &[usize]| ratio(PER_TURNS * sum(s, num), sum(s, den))
    };
    let after_rr = per(|r| r.rereads, |r| r.turns_after);
    let control_rr = per(|r| r.control_rereads, |r| r.control_turns);
    let after_rc = per(|r| r.repeated_commands, |r| r.turns_after);
    let control_rc = per(|r| r.control_repeated_commands, |r| r.control_turns);
    let with_edit: Vec<&CompactionRework> = rows.iter().filter(|r| r.turns_to_first_edit.is_some()).collect();
    // The (compaction, file) pairs of each compaction, to resample compactions as whole clusters.
    let key = |r: &CompactionRework| (r.conversation.clone(), r.ordinal);
    let by_compaction: BTreeMap<(String, usize), Vec<&FileAfterCompaction>> =
        files.iter().fold(BTreeMap::new(), |mut m, f| {
            m.entry((f.conversation.clone(), f.ordinal)).or_default().push(f);
            m
        });
    let pairs_of = |s: &[usize]| -> Vec<&FileAfterCompaction> {
        s.iter().flat_map(|&i| by_compaction.get(&key(&rows[i])).cloned().unwrap_or_default()).collect()
    };
    let all_pairs = pairs_of(&(0..n).collect::<Vec<_>>());
    let ((named_rate, named_pairs), (not_named_rate, not_named_pairs)) =
        (reread_rate(&all_pairs, true), reread_rate(&all_pairs, false));
    let firsts = |f: fn(&CompactionRework) -> Option<f64>| {
        plain(median(with_edit.iter().filter_map(|r| f(r)).collect()), with_edit.len())
    };
    let figures = BTreeMap::from([
        (FigureId::ReworkRereadsAfter, bootstrapped(n, after_rr)),
        (FigureId::ReworkRereadsControl, bootstrapped(n, control_rr)),
        (FigureId::ReworkRereadsAdded, bootstrapped(n, |s| Some(after_rr(s)? - control_rr(s)?))),
        (FigureId::ReworkRepeatsAfter, bootstrapped(n, after_rc)),
        (FigureId::ReworkRepeatsControl, bootstrapped(n, control_rc)),
        (FigureId::ReworkRepeatsAdded, bootstrapped(n, |s| Some(after_rc(s)? - control_rc(s)?))),
        (
            FigureId::ReworkRestatedPromptShare,
            bootstrapped(n, |s| ratio(sum(s, |r| r.restated_prompts), sum(s, |r| r.prompts_after))),
        ),
        (FigureId::ReworkTurnsToFirstEdit, firsts(|r| r.turns_to_first_edit.map(|x| x as f64))),
        (FigureId::ReworkTokensToFirstEdit, firsts(|r| r.tokens_to_first_edit.map(|x| x as f64))),
        (FigureId::ReworkRereadShareToFirstEdit, firsts(|r| r.reread_share_to_first_edit)),
        (FigureId::ReworkNamedMinusNotStratified, bootstrapped(n, |s| stratified_difference(&pairs_of(s)))),
        (FigureId::ReworkNamedMinusNotRaw, bootstrapped(n, |s| raw_difference(&pairs_of(s)))),
        (FigureId::ReworkRereadRateNamed, plain(named_rate, named_pairs)),
        (FigureId::ReworkRereadRateNotNamed, plain(not_named_rate, not_named_pairs)),
    ]);
    ReworkFigures { compactions: n, figures: CompactionFigures(figures) }
}

/// The chain of summaries at one compaction ordinal (`3` stands for 3rd and later): the summary's size, the
/// share of the files changed it names, and what it dropped of the previous summary's files and prompts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OrdinalFigures {
    pub ordinal: usize,
    pub compactions: usize,
    pub figures: CompactionFigures,
}

/// Ordinals at and past this one are pooled in one row.
pub const POOLED_ORDINAL: usize = 3;

pub fn ordinal_figures(rows: &[CompactionRework]) -> Vec<OrdinalFigures> {
    let mut out = Vec::new();
    for ordinal in 1..=POOLED_ORDINAL {
        let at: Vec<&CompactionRework> = rows
            .iter()
            .filter(|r| if ordinal == POOLED_ORDINAL { r.ordinal >= ordinal } else { r.ordinal == ordinal })
            .collect();
        if at.is_empty() {
            continue;
        }
        let sum = |f: fn(&CompactionRework) -> Option<usize>| at.iter().filter_map(|r| f(r)).sum::<usize>() as f64;
        let readable: Vec<f64> = at.iter().filter(|r| r.summary_readable).map(|r| r.summary_tokens as f64).collect();
        let share = |num: f64, den: f64| plain(ratio(num, den), den as usize);
        let figures = BTreeMap::from([
            (FigureId::ChainSummaryTokens, median_of(readable)),
            (
                FigureId::ChainEditedFilesNamed,
                share(sum(|r| r.files_edited_named), sum(|r| r.files_edited_named.map(|_| r.files_edited_before))),
            ),
            (
                FigureId::ChainPreviousFilesDropped,
                share(sum(|r| r.previous_named_files_dropped), sum(|r| r.previous_named_files)),
            ),
            (
                FigureId::ChainPreviousPromptsDropped,
                share(sum(|r| r.previous_echoed_prompts_dropped), sum(|r| r.previous_echoed_prompts)),
            ),
        ]);
        out.push(OrdinalFigures { ordinal, compactions: at.len(), figures: CompactionFigures(figures) });
    }
    out
}

/// What one compaction cost in the prompt cache and when it paid for itself (Claude Code's recorded usage).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompactionCost {
    /// The summary call: the history before it read from the cache, the summary written as output (USD).
    pub summary_call_usd: f64,
    /// The first request after it writing its new prefix to the cache (USD).
    pub cache_write_usd: f64,
    /// Each later request reads `tokens_before − tokens_after` fewer tokens from the cache (USD).
    pub saving_per_request_usd: f64,
    /// Requests after the compaction until the saving covers the two costs; `None` when it saves nothing.
    pub break_even_requests: Option<u64>,
}

/// The cost of a compaction at these prices, where its row has the recorded counts it needs.
pub fn compaction_cost(r: &CompactionRework, price: &Price) -> Option<CompactionCost> {
    let (before, after, written) = (r.tokens_before?, r.tokens_after?, r.cache_written_after?);
    let m = 1e-6;
    let summary_call_usd =
        before as f64 * price.cached_input_per_mtok * m + r.summary_tokens as f64 * price.output_per_mtok * m;
    let cache_write_usd = written as f64 * price.input_per_mtok * CACHE_WRITE_MULTIPLIER * m;
    let saving_per_request_usd = before.saturating_sub(after) as f64 * price.cached_input_per_mtok * m;
    let break_even_requests = (saving_per_request_usd > 0.0)
        .then(|| ((summary_call_usd + cache_write_usd) / saving_per_request_usd).ceil() as u64);
    Some(CompactionCost { summary_call_usd, cache_write_usd, saving_per_request_usd, break_even_requests })
}

/// One request where both the cache model and the recording give a cached share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CacheRequest {
    /// Request index in the conversation.
    pub request: usize,
    /// The model's share: the prefix shared with the previous request / the replayed request.
    pub predicted: f64,
    /// The recording's: `cache_read / (input + cache_read + cache_creation)`.
    pub recorded: f64,
    /// The first request after one of the agent's compactions.
    pub after_compaction: bool,
}

/// The requests of one replay of the agent's own history (`recorded`) that both sides measure:
/// `cached`/`requests` from the cache model, `read`/`recorded` from the usage, aligned; `compaction_requests`:
/// indices of the first request after each compaction. The first of those with a recorded read is left out:
/// the cache model takes the prefix that survives a compaction from its read (in-sample; see
/// `Uncompressed::cache_stable_overhead`), so only later compactions test it.
pub fn cache_requests(
    requests: &[u64],
    cached: &[u64],
    recorded: &[Option<u64>],
    read: &[Option<u64>],
    compaction_requests: &[usize],
) -> Vec<CacheRequest> {
    let in_sample = compaction_requests.iter().copied().filter(|&k| matches!(read.get(k), Some(Some(_)))).min();
    let mut out = Vec::new();
    for (k, (&req, &c)) in requests.iter().zip(cached).enumerate() {
        let (Some(Some(total)), Some(Some(r))) = (recorded.get(k), read.get(k)) else { continue };
        if Some(k) == in_sample {
            continue;
        }
        // The first request has no previous one: the model serves nothing and the agent's cache holds its
        // system prompt from earlier sessions; it says nothing about the model.
        if k == 0 || req == 0 || *total == 0 {
            continue;
        }
        out.push(CacheRequest {
            request: k,
            predicted: c as f64 / req as f64,
            recorded: *r as f64 / *total as f64,
            after_compaction: compaction_requests.contains(&k),
        });
    }
    out
}

/// One row per API response: Claude Code writes one response with several parallel tool calls as one request
/// per call, each repeating the response's usage, so a request whose recorded share equals the one just
/// before it in the same conversation repeats that response and is left out (`(conversation, request)`
/// pairs in order). Each kept request comes with the recorded share of the response before it in the same
/// conversation (the trivial predictor's guess), where there is one.
pub fn one_per_response<'a>(
    requests: impl IntoIterator<Item = (&'a str, CacheRequest)>,
) -> (Vec<CacheRequest>, Vec<Option<f64>>) {
    let (mut kept, mut previous) = (Vec::new(), Vec::new());
    let mut last: Option<(&str, CacheRequest)> = None;
    let mut last_kept: Option<(&str, f64)> = None;
    for (conversation, r) in requests {
        let repeat = last.is_some_and(|(c, prev)| {
            c == conversation && prev.request + 1 == r.request && prev.recorded.to_bits() == r.recorded.to_bits()
        });
        if !repeat {
            previous.push(last_kept.filter(|(c, _)| *c == conversation).map(|(_, share)| share));
            kept.push(r);
            last_kept = Some((conversation, r.recorded));
        }
        last = Some((conversation, r));
    }
    (kept, previous)
}

/// Recorded cached shares under this make a request *hard*: the provider served much less than a full
/// prefix (an expired cache, a prefix not yet written), where a constant near 1 would be wrong.
pub const HARD_REQUEST_SHARE: f64 = 0.90;

/// The cache model against the recorded usage over a corpus's requests: its error over all of them, over
/// the first requests after a later compaction and over the hard ones ([`HARD_REQUEST_SHARE`]), beside the
/// trivial predictor (each request's share is the previous request's recorded one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheCheck {
    pub requests: usize,
    /// Each figure with its n: the after-compaction and hard medians are over those requests only.
    pub figures: CompactionFigures,
}

/// How far the cache model may be from the recording on the median request and still count as agreeing.
pub const CACHE_AGREEMENT_PP: f64 = 0.10;

/// The check over a corpus's requests (one per API response: [`one_per_response`]). The trivial predictor
/// needs the previous request of the same conversation: `previous[i]` is the recorded share of the request
/// before `requests[i]`, where there is one.
pub fn cache_check(requests: &[CacheRequest], previous: &[Option<f64>]) -> CacheCheck {
    let error = |r: &CacheRequest| (r.predicted - r.recorded).abs();
    let errors: Vec<f64> = requests.iter().map(error).collect();
    let after: Vec<f64> = requests.iter().filter(|r| r.after_compaction).map(error).collect();
    let hard = |r: &CacheRequest| r.recorded < HARD_REQUEST_SHARE;
    let hard_errors: Vec<f64> = requests.iter().filter(|r| hard(r)).map(error).collect();
    let trivial: Vec<(bool, f64)> =
        requests.iter().zip(previous).filter_map(|(r, p)| p.map(|p| (hard(r), (p - r.recorded).abs()))).collect();
    let n = requests.len();
    let figures = BTreeMap::from([
        (FigureId::CacheModelMedianAbsError, median_of(errors.clone())),
        (
            FigureId::CacheModelMeanError,
            plain(ratio(requests.iter().map(|r| r.predicted - r.recorded).sum(), n as f64), n),
        ),
        (
            FigureId::CacheModelWithin10pp,
            plain(ratio(errors.iter().filter(|e| **e <= CACHE_AGREEMENT_PP).count() as f64, n as f64), n),
        ),
        (FigureId::CacheModelAfterCompactionError, median_of(after)),
        (FigureId::CacheModelHardError, median_of(hard_errors)),
        (FigureId::CacheTrivialError, median_of(trivial.iter().map(|t| t.1).collect())),
        (FigureId::CacheTrivialHardError, median_of(trivial.iter().filter(|t| t.0).map(|t| t.1).collect())),
    ]);
    CacheCheck { requests: n, figures: CompactionFigures(figures) }
}

/// What a corpus's compactions cost in the prompt cache, at the run's agent prices: medians over the
/// compactions with the recorded counts ([`compaction_cost`]), and how many paid for themselves before
/// their span ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostFigures {
    pub compactions: usize,
    pub figures: CompactionFigures,
}

pub fn cost_figures(rows: &[CompactionRework], price: &Price) -> CostFigures {
    let costs: Vec<(&CompactionRework, CompactionCost)> =
        rows.iter().filter_map(|r| Some((r, compaction_cost(r, price)?))).collect();
    let n = costs.len();
    let m =
        |f: &dyn Fn(&CompactionCost) -> Option<f64>| plain(median(costs.iter().filter_map(|(_, c)| f(c)).collect()), n);
    let paid = costs.iter().filter(|(r, c)| c.break_even_requests.is_some_and(|b| b as usize <= r.turns_after)).count();
    let figures = BTreeMap::from([
        (FigureId::CompactionSummaryCallUsd, m(&|c| Some(c.summary_call_usd))),
        (FigureId::CompactionCacheWriteUsd, m(&|c| Some(c.cache_write_usd))),
        (FigureId::CompactionSavingPerRequestUsd, m(&|c| Some(c.saving_per_request_usd))),
        (FigureId::CompactionBreakEvenRequest, m(&|c| c.break_even_requests.map(|b| b as f64))),
        (FigureId::CompactionPaidBack, plain(Some(paid as f64), n)),
    ]);
    CostFigures { compactions: n, figures: CompactionFigures(figures) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(named: bool, touches: usize, reread: bool, conversation: &str) -> FileAfterCompaction {
        FileAfterCompaction {
            conversation: conversation.into(),
            ordinal: 1,
            file: String::new(),
            named: Some(named),
            reads_before: touches,
            edits_before: 0,
            turns_since_touch: 5,
            reread,
        }
    }

    #[test]
    fn the_stratified_difference_compares_named_and_unnamed_files_of_the_same_weight_only() {
        // Heavy files are re-read whether named or not, light ones never; the summary names mostly heavy
        // ones. Raw: named re-read far more; within strata: no difference.
        let mut files = Vec::new();
        for _ in 0..8 {
            files.push(pair(true, 5, true, "a"));
        }
        files.push(pair(false, 5, true, "a"));
        files.push(pair(true, 1, false, "a"));
        for _ in 0..8 {
            files.push(pair(false, 1, false, "a"));
        }
        let refs: Vec<&FileAfterCompaction> = files.iter().collect();
        assert!(raw_difference(&refs).unwrap() > 0.7);
        assert_eq!(stratified_difference(&refs), Some(0.0));
        // Unnamed files of the same weight re-read more: negative.
        files.push(pair(false, 1, true, "a"));
        files.push(pair(false, 1, true, "a"));
        let refs: Vec<&FileAfterCompaction> = files.iter().collect();
        assert!(stratified_difference(&refs).unwrap() < 0.0);
        // No stratum with both sides: no figure.
        assert_eq!(stratified_difference(&[&pair(true, 1, true, "a"), &pair(false, 5, true, "a")]), None);
    }

    #[test]
    fn a_compaction_pays_for_itself_when_the_smaller_requests_have_saved_its_cost() {
        let price = Price { input_per_mtok: 3.0, cached_input_per_mtok: 0.3, output_per_mtok: 15.0 };
        let r = CompactionRework {
            tokens_before: Some(160_000),
            tokens_after: Some(50_000),
            summary_tokens: 3_000,
            cache_written_after: Some(30_000),
            ..Default::default()
        };
        let c = compaction_cost(&r, &price).unwrap();
        assert!((c.summary_call_usd - (0.048 + 0.045)).abs() < 1e-9);
        assert!((c.cache_write_usd - 0.1125).abs() < 1e-9);
        assert!((c.saving_per_request_usd - 0.033).abs() < 1e-9);
        assert_eq!(c.break_even_requests, Some(7)); // 0.2055 / 0.033 = 6.2
        assert!(compaction_cost(&CompactionRework { tokens_after: None, ..r.clone() }, &price).is_none());
        let none_saved = CompactionRework { tokens_after: Some(170_000), ..r };
        assert_eq!(compaction_cost(&none_saved, &price).unwrap().break_even_requests, None);
    }

    /// Parallel tool calls repeat one API response's usage: each response counts once, and the trivial
    /// predictor guesses the previous response's share, within the same conversation only.
    #[test]
    fn a_response_counts_once_and_the_trivial_predictor_reads_the_previous_response() {
        let r = |request, recorded| CacheRequest { request, predicted: 0.95, recorded, after_compaction: false };
        let rows = [("a", r(1, 0.5)), ("a", r(2, 0.5)), ("a", r(3, 0.97)), ("b", r(1, 0.97)), ("b", r(3, 0.97))];
        let (kept, previous) = one_per_response(rows);
        assert_eq!(
            kept.iter().map(|k| (k.request, k.recorded)).collect::<Vec<_>>(),
            [(1, 0.5), (3, 0.97), (1, 0.97), (3, 0.97)]
        );
        assert_eq!(previous, [None, Some(0.5), None, Some(0.97)]);
        let c = cache_check(&kept, &previous);
        assert_eq!((c.requests, c.figures.get(FigureId::CacheModelHardError).n), (4, 1));
        assert!((c.figures.value(FigureId::CacheModelHardError).unwrap() - 0.45).abs() < 1e-12);
        // Trivial errors: |0.5 − 0.97| and |0.97 − 0.97|.
        assert!((c.figures.value(FigureId::CacheTrivialError).unwrap() - 0.235).abs() < 1e-12);
        assert_eq!(c.figures.value(FigureId::CacheTrivialHardError), None, "the hard request has no previous response");
    }

    #[test]
    fn the_cache_check_compares_requests_both_sides_measure_and_skips_the_first() {
        // Request 3 follows the first compaction: the model's stable prefix is its read (in-sample), so it is
        // left out; request 4 follows a later one.
        let q = cache_requests(
            &[100, 200, 300, 50, 50],
            &[0, 100, 200, 10, 10],
            &[Some(100), Some(200), None, Some(60), Some(60)],
            &[Some(90), Some(100), Some(5), Some(30), Some(30)],
            &[4, 3],
        );
        assert_eq!(q.iter().map(|r| r.request).collect::<Vec<_>>(), [1, 4]);
        assert!((q[0].predicted - 0.5).abs() < 1e-12 && (q[0].recorded - 0.5).abs() < 1e-12);
        assert!(q[1].after_compaction && (q[1].predicted - 0.2).abs() < 1e-12 && (q[1].recorded - 0.5).abs() < 1e-12);
        let c = cache_check(&q, &[None, None]);
        assert_eq!((c.requests, c.figures.get(FigureId::CacheModelAfterCompactionError).n), (2, 1));
        // Both requests are hard (the provider served 50 %); the trivial predictor has no previous share.
        assert_eq!(c.figures.get(FigureId::CacheModelHardError).n, 2);
        assert_eq!(c.figures.value(FigureId::CacheTrivialError), None);
        assert!((c.figures.value(FigureId::CacheModelMedianAbsError).unwrap() - 0.15).abs() < 1e-12);
        assert!((c.figures.value(FigureId::CacheModelWithin10pp).unwrap() - 0.5).abs() < 1e-12);
        assert!((c.figures.value(FigureId::CacheModelMeanError).unwrap() + 0.15).abs() < 1e-12);
    }
}
