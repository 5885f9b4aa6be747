//! The page's data, built by pure functions from what a run directory holds (plan, verified cells) and the
//! recordings: an index the page decodes on opening (points with their figures, conversations, every cell's
//! request sizes and events) and one chunk per conversation, decoded when it is first opened (its Contents,
//! probes, summaries and answers). Strings from a run pass through the [`Sanitizer`] here.

use super::recording::{self, Recording, Sanitizer, ShownContent, ShownProbe};
use super::spans::{self, Span};
use crate::compress::CompressionStatus;
use crate::data::{CellResult, Plan};
use crate::metrics::probe_figures::conversation_tally;
use crate::metrics::{self, Better, Figure, FigureId, Unit, VIEW_CELL_FIGURES, VIEW_POINT_FIGURES};
use crate::probes::figures as probe_figures;
use crate::replay::strategy::Role;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Format tag of the page's data.
pub const FORMAT: &str = "compactbench.view/1";

/// One run directory as the page reads it.
pub struct RunData<'a> {
    /// As the user named it (shown, never opened by the page).
    pub dir: &'a Path,
    pub plan: &'a Plan,
    /// Verified cells, in plan order.
    pub cells: &'a [CellResult],
    /// Missing and damaged cells, one line each (at most a few, then a count).
    pub problems: &'a [String],
}

#[derive(Debug, Serialize)]
pub struct Index {
    pub format: &'static str,
    pub runs: Vec<RunInfo>,
    pub metrics: Vec<MetricInfo>,
    pub points: Vec<PointInfo>,
    pub conversations: Vec<ConversationInfo>,
    pub cells: Vec<CellInfo>,
    /// With `--compare`: what the regression gate flagged between the two runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<super::compare::GateFlags>,
}

#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub name: String,
    /// The run directory as named on the command line; only on a comparison's page (a run's own page holds
    /// no path, so the same run gives the same page wherever it lies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    pub cells: usize,
    pub problems: Vec<String>,
    /// The tokenizer of the Contents' token counts.
    pub tokenizer: &'static str,
    /// The run kept summary texts in its cells.
    pub summaries: bool,
    /// The axes whose values differ between the run's points (the knob columns).
    pub axes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct MetricInfo {
    pub name: &'static str,
    pub header: &'static str,
    pub title: String,
    pub unit: Unit,
    pub better: Better,
}

#[derive(Debug, Serialize)]
pub struct PointInfo {
    pub run: usize,
    pub id: String,
    /// Its `#` in the run's report.
    pub number: usize,
    pub strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice: Option<String>,
    /// The run's varying axes, with this point's values.
    pub axes: BTreeMap<String, String>,
    /// The strategy's default point (the first of its kind in the main grid).
    pub default: bool,
    pub figures: BTreeMap<FigureId, Figure>,
}

#[derive(Debug, Serialize)]
pub struct ConversationInfo {
    pub id: String,
    pub source: String,
    /// Id of the chunk holding its Contents, probes and the cells' texts.
    pub chunk: String,
    /// Why its recording could not be read (the page shows the cells' figures only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CellInfo {
    /// Index into `points` and `conversations`.
    pub point: usize,
    pub conversation: usize,
    pub repeat: u32,
    /// Every request's size, in order.
    pub requests: Vec<u64>,
    pub window: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_overflow: Option<usize>,
    pub figures: BTreeMap<FigureId, f64>,
    /// Early-only probes kept at the end, of how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_only: Option<[f64; 2]>,
    /// Probes scored at the end, and lost there.
    pub probes: usize,
    pub lost: usize,
    pub events: Vec<EventInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct EventInfo {
    pub request: usize,
    pub turn: usize,
    pub status: CompressionStatus,
    pub before: u64,
    pub after: u64,
    /// A compression that left the request at or above the trigger.
    pub storm: bool,
    pub summary_tokens: u64,
    /// A verification pass ran; whether it changed the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification_changed: Option<bool>,
    pub span: Span,
    /// Probes scored right after this event, and lost there.
    pub probes: usize,
    pub lost: usize,
}

/// One conversation's chunk.
#[derive(Debug, Default, Serialize)]
pub struct ConversationChunk {
    pub contents: Vec<ShownContent>,
    /// Each request's model turn (index into `contents`).
    pub turns: Vec<usize>,
    pub probes: BTreeMap<String, ShownProbe>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_problem: Option<String>,
    /// Summaries and answers, each once (cells refer to them by index).
    pub strings: Vec<String>,
    /// By cell index.
    pub cells: BTreeMap<usize, CellDetail>,
    /// What the agent did after each of its own recorded compactions (`crate::rework`), read from the
    /// recording; empty where it recorded none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rework: Vec<crate::rework::CompactionRework>,
}

#[derive(Debug, Default, Serialize)]
pub struct CellDetail {
    pub events: Vec<EventDetail>,
    /// Probe outcomes at the end of the replay.
    pub end: Vec<ProbeOutcome>,
}

#[derive(Debug, Default, Serialize)]
pub struct EventDetail {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<usize>,
    /// The first-pass summary, when a verification pass changed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_pass: Option<usize>,
    pub probes: Vec<ProbeOutcome>,
}

#[derive(Debug, Serialize)]
pub struct ProbeOutcome {
    pub probe: String,
    /// Counted as kept: the history held an accepted answer, before any overflow.
    pub kept: bool,
    /// The history held an accepted answer (also after an overflow, which loses it anyway).
    pub held: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_risk: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
}

/// Each distinct string once, in first-use order (deterministic).
#[derive(Default)]
struct Strings {
    index: BTreeMap<String, usize>,
    list: Vec<String>,
}

impl Strings {
    fn add(&mut self, s: String) -> usize {
        if let Some(&i) = self.index.get(&s) {
            return i;
        }
        self.list.push(s.clone());
        self.index.insert(s, self.list.len() - 1);
        self.list.len() - 1
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Reference => "reference",
        Role::NoCompression => "no-compression",
        Role::Recorded => "agent-recorded",
        Role::Baseline => "baseline",
        Role::Ablation => "ablation",
        Role::OtherSystem => "other-system",
    }
}

fn metric_info(id: FigureId) -> MetricInfo {
    let m = id.metric();
    MetricInfo { name: m.name, header: m.header, title: m.title(), unit: m.unit, better: m.better }
}

/// A point's figures over its cells, with the report's bootstrap intervals.
fn point_figures(plan: &Plan, point: &crate::data::ConfigPoint, cells: &[CellResult]) -> BTreeMap<FigureId, Figure> {
    let pricing = metrics::point_pricing(plan, point);
    let parts = metrics::point_parts(cells.iter().filter(|c| c.cell.point == point.id), pricing.as_ref());
    VIEW_POINT_FIGURES
        .iter()
        .filter_map(|&id| {
            let parts: Vec<metrics::Parts> = parts.get(&id)?.iter().map(|(_, p)| *p).collect();
            Some((id, metrics::figure(id.metric(), &parts)?))
        })
        .collect()
}

/// The points of one run with their figures. The bootstraps are most of the page's build time, so the
/// points are shared out over the machine's threads (each figure is the same whichever thread draws it:
/// the bootstrap's seed is fixed).
fn points(run_index: usize, run: &RunData<'_>) -> Vec<PointInfo> {
    let plan = run.plan;
    let refs: Vec<&crate::data::ConfigPoint> = plan.points.iter().collect();
    let varying = crate::data::plan::varying_axes(&refs);
    let defaults = plan.default_points();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let per_thread = plan.points.len().div_ceil(threads).max(1);
    let figures: Vec<BTreeMap<FigureId, Figure>> = std::thread::scope(|scope| {
        let workers: Vec<_> = plan
            .points
            .chunks(per_thread)
            .map(|chunk| {
                scope.spawn(move || chunk.iter().map(|p| point_figures(plan, p, run.cells)).collect::<Vec<_>>())
            })
            .collect();
        // A worker that panicked re-raises its panic here: no point is left without its figures.
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    plan.points
        .iter()
        .zip(figures)
        .enumerate()
        .map(|(i, (p, figures))| PointInfo {
            run: run_index,
            id: p.id.clone(),
            number: i + 1,
            strategy: p.strategy.kind().to_string(),
            role: p.strategy.role().map(role_name),
            label: p.short_label(),
            summarizer: p.summarizer.clone(),
            slice: p.slice.clone(),
            axes: varying.iter().filter_map(|a| Some((a.clone(), p.axes.get(a)?.clone()))).collect(),
            default: defaults.contains(&i),
            figures,
        })
        .collect()
}

fn outcome(row: &probe_figures::ProbeRow, answer: Option<usize>) -> ProbeOutcome {
    ProbeOutcome {
        probe: row.probe_id.clone(),
        kept: row.retained,
        held: row.held,
        at_risk: row.at_risk,
        early_only: row.early_only,
        answer,
        correct: row.retrieval_correct.or(row.answer_score.map(|s| s > 0.0)),
    }
}

/// A cell's index entry and its chunk detail.
fn cell(
    c: &CellResult,
    plan: &Plan,
    (point, conversation): (usize, usize),
    recording: Option<&Recording>,
    strings: &mut Strings,
    clean: &Sanitizer,
) -> (CellInfo, CellDetail) {
    let r = &c.result;
    let spec = plan.points.iter().find(|p| p.id == c.cell.point);
    let pricing = spec.and_then(|p| metrics::point_pricing(plan, p));
    let values = metrics::conversation_values(c, pricing.as_ref());
    let strategy = spec.map(|p| p.strategy.kind().to_string()).unwrap_or_default();
    let rows = probe_figures::cell_rows(c, &strategy);
    let answers: Vec<Option<&crate::data::AnswerResult>> = c
        .probes
        .iter()
        .flat_map(|p| &p.checkpoints)
        .flat_map(|cp| cp.scores.iter().map(|s| s.answer.as_ref()))
        .collect();
    let mut detail = CellDetail { events: r.events.iter().map(|_| EventDetail::default()).collect(), end: Vec::new() };
    for (row, answer) in rows.iter().zip(&answers) {
        let answer = answer.map(|a| strings.add(clean.clean(&a.text)));
        let target = match row.moment {
            probe_figures::Moment::End => Some(&mut detail.end),
            probe_figures::Moment::Event(e) => detail.events.get_mut(e).map(|d| &mut d.probes),
        };
        if let Some(list) = target {
            list.push(outcome(row, answer));
        }
    }
    let spans = match recording {
        Some(rec) => spans::event_spans(&rec.conversation.history, &r.events),
        None => spans::event_spans(&[], &r.events),
    };
    let storm = |e: &crate::replay::CompressionEvent| {
        e.reduced() && r.trigger_tokens.is_some_and(|t| e.request_tokens_after >= t)
    };
    let events = r
        .events
        .iter()
        .zip(&spans)
        .zip(&mut detail.events)
        .map(|((e, span), d)| {
            d.summary = e.final_summary.as_ref().map(|s| strings.add(clean.clean(s)));
            d.first_pass = e
                .first_summary
                .as_ref()
                .filter(|f| Some(*f) != e.final_summary.as_ref())
                .map(|s| strings.add(clean.clean(s)));
            EventInfo {
                request: e.request,
                turn: e.turn,
                status: e.status,
                before: e.request_tokens_before,
                after: e.request_tokens_after,
                storm: storm(e),
                summary_tokens: e.summary_tokens,
                verification_changed: e.verification.as_ref().map(|v| !v.identical),
                span: *span,
                probes: d.probes.len(),
                lost: d.probes.iter().filter(|p| !p.kept).count(),
            }
        })
        .collect();
    let info = CellInfo {
        point,
        conversation,
        repeat: c.cell.repeat,
        requests: r.request_tokens.clone(),
        window: r.token_limit,
        trigger: r.trigger_tokens,
        first_overflow: r.first_overflow_request(),
        figures: VIEW_CELL_FIGURES.iter().filter_map(|&id| Some((id, *values.get(&id)?))).collect(),
        early_only: conversation_tally(c, FigureId::EarlyOnlyRetention).map(|(hits, n)| [hits, n]),
        probes: detail.end.len(),
        lost: detail.end.iter().filter(|p| !p.kept).count(),
        events,
        error: r.error.as_ref().map(|e| clean.clean(&e.to_string())),
    };
    (info, detail)
}

/// The page's data for one or more runs (the first is the one viewed; a second is what it is compared
/// with). `recordings` holds every conversation of the runs by id, read or with the reason it could not be.
pub fn build(
    runs: &[RunData<'_>],
    recordings: &BTreeMap<String, Result<Recording, String>>,
    clean: &Sanitizer,
) -> (Index, Vec<(String, ConversationChunk)>) {
    let mut conversations: Vec<ConversationInfo> = Vec::new();
    let mut chunks: Vec<(String, ConversationChunk)> = Vec::new();
    let mut strings: Vec<Strings> = Vec::new();
    let mut conversation_index: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs {
        for planned in &run.plan.conversations {
            if conversation_index.contains_key(&planned.id) {
                continue;
            }
            let i = conversations.len();
            conversation_index.insert(planned.id.clone(), i);
            let chunk_id = format!("c{i}");
            let mut chunk = ConversationChunk::default();
            let problem = match recordings.get(&planned.id) {
                Some(Ok(rec)) => {
                    let tokenizer = &run.plan.replay.tokenizer;
                    let billing = rec.conversation.image_billing();
                    chunk.contents = rec
                        .conversation
                        .history
                        .iter()
                        .map(|c| recording::shown_content(c, tokenizer, billing, clean))
                        .collect();
                    chunk.turns = spans::request_turns(&rec.conversation.history);
                    chunk.probes =
                        rec.probes.iter().map(|p| (p.id.clone(), recording::shown_probe(p, clean))).collect();
                    chunk.probe_problem = rec.probe_problem.as_ref().map(|p| clean.clean(p));
                    chunk.rework = crate::rework::conversation_rework(&rec.conversation).compactions;
                    None
                }
                Some(Err(e)) => Some(clean.clean(e)),
                None => Some("not read".to_string()),
            };
            conversations.push(ConversationInfo {
                id: planned.id.clone(),
                source: planned.source.clone(),
                chunk: chunk_id.clone(),
                problem,
            });
            chunks.push((chunk_id, chunk));
            strings.push(Strings::default());
        }
    }
    let mut points_out = Vec::new();
    let mut cells_out = Vec::new();
    let mut runs_out = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        let offset = points_out.len();
        points_out.extend(points(ri, run));
        let refs: Vec<&crate::data::ConfigPoint> = run.plan.points.iter().collect();
        runs_out.push(RunInfo {
            name: run.plan.name.clone(),
            dir: (runs.len() > 1).then(|| run.dir.display().to_string()),
            cells: run.cells.len(),
            problems: run.problems.to_vec(),
            tokenizer: recording::shown_tokenizer(&run.plan.replay.tokenizer),
            summaries: run.plan.replay.keep_summaries,
            axes: crate::data::plan::varying_axes(&refs),
        });
        for c in run.cells {
            let (Some(pi), Some(&ci)) = (
                run.plan.points.iter().position(|p| p.id == c.cell.point),
                conversation_index.get(&c.cell.conversation),
            ) else {
                continue;
            };
            let recording = recordings.get(&c.cell.conversation).and_then(|r| r.as_ref().ok());
            let (info, detail) = cell(c, run.plan, (offset + pi, ci), recording, &mut strings[ci], clean);
            chunks[ci].1.cells.insert(cells_out.len(), detail);
            cells_out.push(info);
        }
    }
    for ((_, chunk), s) in chunks.iter_mut().zip(strings) {
        chunk.strings = s.list;
    }
    let index = Index {
        format: FORMAT,
        runs: runs_out,
        metrics: VIEW_POINT_FIGURES.iter().map(|&id| metric_info(id)).collect(),
        points: points_out,
        conversations,
        cells: cells_out,
        gate: None,
    };
    (index, chunks)
}
