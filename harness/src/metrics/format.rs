//! How figures are printed (a share as a percentage: [`percent`]; a difference of shares in percentage
//! points: [`percentage_points`]; the only places that write one), and the glossary
//! (`harness/docs/metrics.md`) generated from [`super::METRICS`].

use super::{Aggregation, CompactionFigure, Figure, FigureId, Level, Metric, Unit, METRICS};
use serde::Serialize;

/// A share to print with [`percent`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Share {
    /// A fraction of 1: `0.123` is 12.3 %.
    Fraction(f64),
    /// `part` of `whole`, printed as 100 × part ÷ whole, which stays exact where the fraction does not (23 of
    /// 80 is 28.75, printed 28.8 %; the fraction 0.2875 × 100 is 28.749… and would print 28.7 %).
    Of(f64, f64),
}

/// How [`percent`] writes a share: the places that print one differ in the digits, the space before `%`
/// and what stands for no value, each kept as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PercentStyle {
    /// Digits after the decimal point.
    pub decimals: usize,
    /// A space before `%`.
    pub spaced: bool,
    /// What is printed where there is no share.
    pub missing: &'static str,
}

impl PercentStyle {
    /// Table cells, pages and the terminal: `12.3%`, `–` for no value.
    pub const TABLE: PercentStyle = PercentStyle { decimals: 1, spaced: false, missing: "–" };
    /// The run summary's tables (what `run` and `report` print, the headline tables): `12.3%`, `-` for no
    /// value, as every other empty cell of those tables (their per-kind table drops a column that holds `-`
    /// only).
    pub const SUMMARY_TABLE: PercentStyle = PercentStyle { missing: "-", ..PercentStyle::TABLE };
    /// Sentences: `12.3 %`.
    pub const PROSE: PercentStyle = PercentStyle { spaced: true, ..PercentStyle::TABLE };
    /// Sentences, in whole percent (thresholds, a share of the weight): `90 %`.
    pub const PROSE_WHOLE: PercentStyle = PercentStyle { decimals: 0, ..PercentStyle::PROSE };
}

/// A share as a percentage, in `style`: the one percent formatter of the reports, the view and the CLI.
pub fn percent(share: Option<Share>, style: PercentStyle) -> String {
    let value = match share {
        None => return style.missing.to_string(),
        Some(Share::Fraction(v)) => v * 100.0,
        Some(Share::Of(part, whole)) => 100.0 * part / whole,
    };
    format!("{:.*}{}%", style.decimals, value, if style.spaced { " " } else { "" })
}

/// How [`percentage_points`] writes a difference: the places that print one differ in the digits and in
/// whether `pp` follows the value, each kept as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointsStyle {
    /// Digits after the decimal point.
    pub decimals: usize,
    /// ` pp` after the value (before the interval).
    pub unit: bool,
}

impl PointsStyle {
    /// Table cells: `+1.2 [-0.3, +2.5]`.
    pub const TABLE: PointsStyle = PointsStyle { decimals: 1, unit: false };
    /// Sentences: `+1.2 pp [-0.3, +2.5]`.
    pub const PROSE: PointsStyle = PointsStyle { decimals: 1, unit: true };
    /// Sentences and cells on small differences (the verification gain, the cache model's error):
    /// `+0.25 pp [-0.30, +0.80]`.
    pub const PROSE_FINE: PointsStyle = PointsStyle { decimals: 2, ..PointsStyle::PROSE };
}

/// A difference of two shares (fractions of 1) in signed percentage points, with its interval (`low`,
/// `high`) when given, in `style`: the one formatter of such differences in the reports.
pub fn percentage_points(difference: f64, interval: Option<(f64, f64)>, style: PointsStyle) -> String {
    let signed = |v: f64| format!("{:+.*}", style.decimals, v * 100.0);
    let mut s = signed(difference);
    if style.unit {
        s.push_str(" pp");
    }
    if let Some((low, high)) = interval {
        s = format!("{s} [{}, {}]", signed(low), signed(high));
    }
    s
}

/// A value in a metric's unit, for tables.
pub fn format_value(m: &Metric, v: f64) -> String {
    match m.unit {
        Unit::Share => percent(Some(Share::Fraction(v)), PercentStyle::TABLE),
        Unit::Count | Unit::Tokens => format!("{}", v.round() as i64),
        Unit::Usd => format!("{v:.4}"),
        Unit::PerHundred | Unit::PerTenTurns => format!("{v:.1}"),
        Unit::Turns | Unit::Requests => format!("{}", v.round() as i64),
        Unit::Points => percentage_points(v, None, PointsStyle::TABLE),
    }
}

/// Digits of a compaction-level figure in percentage points: the cache model's overall error and bias sit
/// near 1 pp against a 10 pp bar, so they keep two; every other one keeps one.
fn points_decimals(id: FigureId) -> usize {
    match id {
        FigureId::CacheModelMedianAbsError | FigureId::CacheModelMeanError => 2,
        _ => 1,
    }
}

/// A compaction-level figure ([`Level::Compaction`]) as `compactions.md` prints it, in its metric's unit:
/// rates per 10 turns `2.3 [1.1, 3.4]` (a difference signed: `+0.4 [-0.2, +1.0]`), shares `12.3% [8.0,
/// 17.1]`, differences of shares `+1.2 pp [-0.3, +2.5]`, errors `0.84 pp`, medians of counts and tokens
/// whole, of USD to three decimals; `–` where there is no value.
pub fn format_compaction_figure(m: &Metric, f: &CompactionFigure) -> String {
    let Some(v) = f.value else { return "–".into() };
    let signed = matches!(m.aggregation, Aggregation::Difference | Aggregation::Mean);
    let number = |x: f64, decimals: usize| {
        if signed {
            format!("{x:+.decimals$}")
        } else {
            format!("{x:.decimals$}")
        }
    };
    let with_interval = |value: String, scale: f64| match f.interval {
        Some((low, high)) => format!("{value} [{}, {}]", number(low * scale, 1), number(high * scale, 1)),
        None => value,
    };
    match m.unit {
        Unit::PerTenTurns | Unit::PerHundred => with_interval(number(v, 1), 1.0),
        Unit::Share => with_interval(percent(Some(Share::Fraction(v)), PercentStyle::TABLE), 100.0),
        Unit::Points => {
            let decimals = points_decimals(m.id);
            match f.interval {
                Some(interval) if signed => percentage_points(v, Some(interval), PointsStyle { decimals, unit: true }),
                _ => format!("{} pp", number(v * 100.0, decimals)),
            }
        }
        Unit::Count | Unit::Tokens | Unit::Turns | Unit::Requests => format!("{v:.0}"),
        Unit::Usd => format!("{v:.3}"),
    }
}

/// A figure with its n (event-level) and interval (when asked and not degenerate).
pub fn format_figure(m: &Metric, f: &Figure, with_ci: bool) -> String {
    let mut s = format_value(m, f.value);
    if with_ci && f.low < f.high && m.unit == Unit::Share {
        s = format!("{s} [{:.1}, {:.1}]", f.low * 100.0, f.high * 100.0);
    }
    if matches!(m.level, Level::Event | Level::Probe) {
        s = format!("{s} (n={})", f.n);
    }
    s
}

/// The glossary (Markdown), generated from [`METRICS`].
pub fn glossary_markdown() -> String {
    let mut s = String::from(
        "# Metrics\n\n<!-- Generated from harness/src/metrics/definitions.rs (`compactbench::metrics::glossary_markdown`); a test \
         checks this file. -->\n\n\
         Every token figure is a request as it would be sent (system prompt + tool declarations + stored history + \
         pending turn), counted with the replay's tokenizer (`[replay] tokenizer`, o200k by default), on both sides of \
         every event and for every strategy; `none` is the same conversation replayed without compression. With a \
         model's tokenizer (`tokenizer = \"gemini:<model>\"`, the `countTokens` API) each part is counted alone \
         (each Content, the system prompt, the tool declarations) and a request's size is the sum of its parts' \
         counts, which may differ from one count of the whole request by a few tokens per message. The reference's \
         own counts are kept as `reference_original_tokens` / `reference_new_tokens`.\n\n\
         A point's figure is Σ numerators / Σ denominators over its conversations (*ratio of sums*: token-weighted, or \
         a mean pooled over events or conversations) or a *total*. Intervals: 95 % cluster bootstrap over \
         conversations. Direction: ↓ lower is better, ↑ higher is better. Figures of level `compaction` are what the agent \
         did after each of its own recorded compactions (`compactions.md`), read from the recordings, not from \
         cells, per source and over compactions (n = compactions, or the requests or pairs the row names); the \
         columns they sum (`results/rework*.csv`, `results/cache_requests.csv`) are defined in \
         `harness/docs/rework.md`.\n\n\
         | name | header | formula | unit | better | level | aggregation |\n|---|---|---|---|---|---|---|\n",
    );
    for m in METRICS {
        let ser = |v: &dyn SerdeName| v.text();
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            m.name,
            m.title(),
            m.formula.replace('|', "\\|"),
            ser(&m.unit),
            ser(&m.better),
            ser(&m.level),
            ser(&m.aggregation)
        ));
    }
    s.push_str(&format!(
        "\n## Columns derived from every figure\n\n\
         | column | what it is |\n|---|---|\n\
         | `NAME_n` | events, probe scorings or conversations the figure is over (see *level*) |\n\
         | `NAME_ci_low`, `NAME_ci_high` | 95 % cluster-bootstrap interval: conversations resampled with replacement, {} resamples, seed {:#x} |\n\
         | `NAME_diff_vs_none`, `NAME_diff_vs_reference` (+ `_ci_low`, `_ci_high`) | the point's figure minus `none`'s (the same slice's, else the main grid's) or the reference point's (the first `gemini` point of the main grid), over the conversations both have, the interval from resampling those conversations jointly (a paired cluster bootstrap: the same conversations and probes on both sides); totals are compared as a mean per conversation |\n\
         | `loo_low`, `loo_high` (`results/claims.*`) | the paired difference recomputed with each one conversation left out: its smallest and largest value (percentage points as a fraction, like `difference`) |\n\
         | `top_conversation`, `top_share` (`results/claims.*`) | the conversation with the largest share of the difference's weight, and that share: its denominators (both sides) over Σ denominators for a ratio of sums, its \\|difference\\| over Σ \\|differences\\| for a total |\n\
         | `without_source` (`results/claims.*`) | the paired difference with each source (or project, with `source_by = \"project\"`) left out in turn, `NAME=value;…`, when the claim spans several |\n\
         | `verdict` (`results/claims.*`) | `established`: the 95 % interval excludes 0, no leave-one-conversation-out value and no leave-one-source-out value is 0 or of the other sign; `not established`: otherwise (the reason is in `reason`); `did not act`: the point never compressed, so it equals `none` and makes no claim |\n\
         | `retained`, `held`, `after_overflow` (`results/probes.*`) | `held`: the history held an accepted answer at that moment; `after_overflow`: the moment is at or after the conversation's first request over the window (the end always is, when there was one); `retained` = `held` and not `after_overflow`, what every probe figure counts |\n\
         | `scope` (`results/scopes.*`) | which conversations a row is over: `pooled` (all), `actionable` (those the strategy can act on: it compressed, or the uncompressed replay reaches `trigger_tokens` at a request the trigger sees, i.e. not the last, and has a split candidate after its first Content; a paired difference is over those either point can act on), `source:NAME` |\n\
         | `first_request_tokens` (conversations) | the first request: system prompt + tool declarations + first turn, the fixed part of every request |\n\
         | `trigger_tokens` (conversations) | the smallest last prompt count at which the strategy compresses (its own trigger: ⌈threshold × window⌉ for the reference), null where the trigger is not a token count |\n\
         | `window_tokens` (conversations) | the simulated window of this replay: a number, `peak:F` (F × the largest uncompressed request) or `overhead+peak:F` (the first request + F × the growth beyond it, at least 4 × the first request) resolved for the conversation |\n",
        crate::stats::BOOTSTRAP_RESAMPLES,
        crate::stats::BOOTSTRAP_SEED
    ));
    s
}

/// Serde's lowercase name of a unit-like enum.
trait SerdeName {
    fn text(&self) -> String;
}

impl<T: Serialize> SerdeName for T {
    fn text(&self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => s,
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each style prints as the call sites it replaced did.
    #[test]
    fn percent_prints_each_style_as_before() {
        let share = |v| Some(Share::Fraction(v));
        assert_eq!(percent(share(0.123), PercentStyle::TABLE), "12.3%");
        assert_eq!(percent(None, PercentStyle::TABLE), "–");
        assert_eq!(percent(None, PercentStyle::SUMMARY_TABLE), "-");
        assert_eq!(percent(share(0.4751), PercentStyle::PROSE), "47.5 %");
        assert_eq!(percent(share(0.9), PercentStyle::PROSE_WHOLE), "90 %");
        // A count of a total rounds from 100 × part ÷ whole, as the first-prompt table and `replay` did.
        assert_eq!(percent(Some(Share::Of(23.0, 80.0)), PercentStyle::TABLE), "28.8%");
        assert_eq!(percent(share(23.0 / 80.0), PercentStyle::TABLE), "28.7%");
    }

    /// Each unit of a compaction-level figure prints as `compactions.md` printed it before its figures
    /// joined the table: rates and shares with their interval, differences signed, errors in pp (the cache
    /// model's overall ones to two decimals), medians of counts whole, of USD to three decimals.
    #[test]
    fn compaction_figures_print_as_the_rework_page_did() {
        let f = |value: f64, interval: Option<(f64, f64)>| CompactionFigure { value: Some(value), interval, n: 3 };
        let shown = |id: FigureId, fig: CompactionFigure| format_compaction_figure(id.metric(), &fig);
        assert_eq!(shown(FigureId::ReworkRereadsAfter, f(2.345, Some((1.11, 3.46)))), "2.3 [1.1, 3.5]");
        assert_eq!(shown(FigureId::ReworkRereadsAdded, f(0.41, Some((-0.2, 1.0)))), "+0.4 [-0.2, +1.0]");
        assert_eq!(shown(FigureId::ReworkRestatedPromptShare, f(0.123, Some((0.08, 0.171)))), "12.3% [8.0, 17.1]");
        assert_eq!(shown(FigureId::ReworkRereadRateNamed, f(0.5, None)), "50.0%");
        assert_eq!(
            shown(FigureId::ReworkNamedMinusNotStratified, f(0.012, Some((-0.003, 0.025)))),
            "+1.2 pp [-0.3, +2.5]"
        );
        assert_eq!(shown(FigureId::ReworkNamedMinusNotRaw, f(-0.05, None)), "-5.0 pp");
        assert_eq!(shown(FigureId::CacheModelMedianAbsError, f(0.0084, None)), "0.84 pp");
        assert_eq!(shown(FigureId::CacheModelMeanError, f(0.0025, None)), "+0.25 pp");
        assert_eq!(shown(FigureId::CacheModelHardError, f(0.045, None)), "4.5 pp");
        assert_eq!(shown(FigureId::ChainSummaryTokens, f(1234.4, None)), "1234");
        assert_eq!(shown(FigureId::CompactionSummaryCallUsd, f(0.0931, None)), "0.093");
        assert_eq!(shown(FigureId::CompactionBreakEvenRequest, f(6.5, None)), "6");
        assert_eq!(format_compaction_figure(FigureId::ReworkRereadsAfter.metric(), &CompactionFigure::default()), "–");
    }

    /// Each style prints as the call sites it replaced did (`{:+.1}` of the value × 100, ` pp`, `[low, high]`).
    #[test]
    fn percentage_points_print_each_style_as_before() {
        assert_eq!(percentage_points(0.0123, None, PointsStyle::TABLE), "+1.2");
        assert_eq!(percentage_points(-0.0004, None, PointsStyle::TABLE), "-0.0");
        assert_eq!(percentage_points(0.0123, Some((-0.003, 0.025)), PointsStyle::TABLE), "+1.2 [-0.3, +2.5]");
        assert_eq!(percentage_points(0.0123, Some((-0.003, 0.025)), PointsStyle::PROSE), "+1.2 pp [-0.3, +2.5]");
        assert_eq!(
            percentage_points(0.0025, Some((-0.003, 0.008)), PointsStyle::PROSE_FINE),
            "+0.25 pp [-0.30, +0.80]"
        );
        assert_eq!(percentage_points(-0.5, None, PointsStyle::PROSE), "-50.0 pp");
    }
}
