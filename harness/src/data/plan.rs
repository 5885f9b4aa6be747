//! The plan of a run: its points (a strategy with every setting), its conversations and the settings
//! every cell shares; and the unit of work, the cell.

use crate::replay::strategy::Role;
use crate::replay::{registry, ReplaySettings, StrategySpec, TokenLimit};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// A conversation of the run, as listed in the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedConversation {
    pub id: String,
    pub path: PathBuf,
    pub source: String,
    /// Set when the file could not be loaded (its cells record the error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything a run will do, written first so shards and merges can check they belong together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    pub points: Vec<ConfigPoint>,
    pub conversations: Vec<PlannedConversation>,
    pub repeats: u32,
    pub replay: ReplaySettings,
    /// Probe settings when probes are enabled (part of the plan: changing them needs a new run directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<ProbesConfig>,
    /// Prices for the USD cost figures (reports read them from here).
    #[serde(default)]
    pub cost: crate::pricing::CostConfig,
}

/// One unit of work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub point: String,
    pub conversation: String,
    pub repeat: u32,
}

impl Cell {
    /// File of the cell's result, relative to the run directory.
    pub fn relative_path(&self) -> PathBuf {
        let file = if self.repeat == 0 {
            format!("{}.json", self.conversation)
        } else {
            format!("{}.r{}.json", self.conversation, self.repeat)
        };
        PathBuf::from("cells").join(&self.point).join(file)
    }
}

/// The `[probes]` table: which probe sets to score, and with which models.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProbesConfig {
    pub enabled: bool,
    /// Probe directory (`<dir>/<dataset>/<id>.<source>.json`), relative to the working directory.
    pub dir: PathBuf,
    /// Probe sources used: `auto`, `manual`, `llm`.
    pub sources: Vec<crate::data::ProbeOrigin>,
    /// Model spec of the answerer (`None`: retention only).
    pub answerer: Option<String>,
    /// Model spec of the 0–5 judge (`None`: no judge grading).
    pub judge: Option<String>,
    /// Also replay a copy of each conversation with an instruction planted in an early tool output, and
    /// count summaries that obey it (strategies that write summaries only).
    pub injection: bool,
    /// Ask the answerer after every compression event too, not only at the end of the replay.
    pub answer_at_events: bool,
    /// Also ask the answerer on the first-pass history when verification changed the summary.
    pub verification_accuracy: bool,
    pub max_answer_tokens: Option<u32>,
    /// Ask the answerer for the next action after each compression (compressed vs uncompressed history).
    pub next_action: bool,
    /// Conversations without a stored `auto` probe file get the extractor's probes derived in memory
    /// (raw sessions read in place, whose probes must not be written into the repository).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub derive_auto: bool,
    /// Labels of (probe, compression) pairs (`compactbench.labels/1`, relative to the working
    /// directory) the report checks the grader against (`report::grader_check`); the file may not exist yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<PathBuf>,
    /// The probe kinds scored (empty: every kind). A run with no labels of its own names here the kinds the
    /// grader is trusted on for its sessions (e.g. a policy run over a corpus another run labels), so that
    /// its pooled figures count only those, as a labelled run's report does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<crate::data::ProbeKind>,
}

impl Default for ProbesConfig {
    fn default() -> Self {
        ProbesConfig {
            enabled: true,
            dir: PathBuf::from("datasets/probes"),
            sources: vec![crate::data::ProbeOrigin::Auto, crate::data::ProbeOrigin::Manual],
            answerer: Some("extractive".into()),
            judge: None,
            injection: true,
            answer_at_events: true,
            verification_accuracy: false,
            next_action: false,
            derive_auto: false,
            max_answer_tokens: Some(128),
            labels: None,
            kinds: Vec::new(),
        }
    }
}

/// One point of the grid: a strategy with all its settings, and the summarizer it uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigPoint {
    /// Short stable hash of the point.
    pub id: String,
    /// Axis values, for reports (only the axes this strategy reads).
    pub axes: BTreeMap<String, String>,
    pub strategy: StrategySpec,
    /// Model spec of the summarizer (`None` for strategies without one).
    pub summarizer: Option<String>,
    /// Simulated context window (tokens, or relative to each conversation, e.g. a fraction of its
    /// uncompressed peak, resolved per conversation by the replay and handed to the strategy's session).
    pub token_limit: TokenLimit,
    /// The slice this point belongs to (`None`: the main grid), which limits its conversations.
    pub slice: Option<String>,
    pub max_conversations: Option<usize>,
    /// Only conversations of this source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The probe answerer of this point's slice, when it overrides `[probes].answerer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_answerer: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe_answers_at_end_only: bool,
    /// A slice point that skips the injection replays.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe_no_injection: bool,
}

impl ConfigPoint {
    /// A compact label for reports: the strategy and the values of the knobs it labels points by (its
    /// registry entry says which, [`crate::replay::strategy::Knob::labelled`]), then the slice.
    pub fn short_label(&self) -> String {
        let mut s = self.strategy.label(&self.axes);
        if let Some(sl) = &self.slice {
            s.push_str(&format!(" [{sl}]"));
        }
        s
    }
}

/// The grid's own axes, beside the strategies' knobs, in every point's `axes`: the strategy as written, its
/// summarizer and the simulated window.
pub const STRATEGY_AXIS: &str = "strategy";
pub const SUMMARIZER_AXIS: &str = "summarizer";
pub const WINDOW_AXIS: &str = "token_limit";

/// Whether an axis names what a point is (its strategy and summarizer, shown in their own columns) rather
/// than a value it was swept over.
pub fn is_identity_axis(axis: &str) -> bool {
    axis == STRATEGY_AXIS || axis == SUMMARIZER_AXIS
}

/// Axes whose value differs between points (the columns worth showing).
pub fn varying_axes(points: &[&ConfigPoint]) -> Vec<String> {
    let all: BTreeSet<&String> = points.iter().flat_map(|p| p.axes.keys()).collect();
    all.into_iter()
        .filter(|a| !is_identity_axis(a))
        .filter(|a| points.iter().filter_map(|p| p.axes.get(*a)).collect::<BTreeSet<_>>().len() > 1)
        .cloned()
        .collect()
}

/// Largest plan a run accepts, in cells; checked before any cell list is allocated.
pub const MAX_PLAN_CELLS: u64 = 1_000_000;

/// A plan larger than [`MAX_PLAN_CELLS`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the plan has {cells} cells ({points} configurations, {conversations} conversations, {repeats} repeat(s)), \
     more than the limit of {limit}; lower `repeats`, the grid or `max_conversations`"
)]
pub struct PlanTooLarge {
    pub cells: u128,
    pub points: usize,
    pub conversations: usize,
    pub repeats: u32,
    pub limit: u64,
}

impl Plan {
    /// A point's number in reports (1-based, in plan order): the `#` by which every table of a report names
    /// its points.
    pub fn point_number(&self, id: &str) -> Option<usize> {
        self.points.iter().position(|p| p.id == id).map(|i| i + 1)
    }

    /// The main grid's points of a role (slices left out), in plan order.
    pub fn points_of_role(&self, role: Role) -> impl Iterator<Item = &ConfigPoint> {
        self.points.iter().filter(move |p| p.slice.is_none() && p.strategy.role() == Some(role))
    }

    /// The main grid's first point of a role.
    pub fn point_of_role(&self, role: Role) -> Option<&ConfigPoint> {
        self.points_of_role(role).next()
    }

    /// Whether any point, slices included, plays a role.
    pub fn has_role(&self, role: Role) -> bool {
        self.points.iter().any(|p| p.strategy.role() == Some(role))
    }

    /// The reference point (the main grid's first point of the reference strategy): what `vs_reference`
    /// differences subtract.
    pub fn reference_point(&self) -> Option<&ConfigPoint> {
        self.point_of_role(Role::Reference)
    }

    /// The `none` point comparisons with `of` are made against: the same slice's, else the main grid's (a
    /// replay without compression does not depend on the window, so any `none` of the same conversations
    /// pairs).
    pub fn none_point(&self, of: &ConfigPoint) -> Option<&ConfigPoint> {
        let none = |slice: Option<&String>| {
            self.points
                .iter()
                .find(move |p| p.strategy.role() == Some(Role::NoCompression) && p.slice.as_ref() == slice)
        };
        none(of.slice.as_ref()).or_else(|| none(None))
    }

    /// The default point of each strategy: the index of the first main-grid point of each kind, in plan
    /// order.
    pub fn default_points(&self) -> Vec<usize> {
        let mut seen = BTreeSet::new();
        (0..self.points.len())
            .filter(|&i| self.points[i].slice.is_none() && seen.insert(self.points[i].strategy.kind()))
            .collect()
    }

    /// The default point of the strategy named `strategy` (the reference point for the reference).
    pub fn default_point(&self, strategy: &str) -> Option<&ConfigPoint> {
        let is_reference = registry::has_role(strategy, Role::Reference);
        self.default_points().into_iter().map(|i| &self.points[i]).find(|p| {
            if is_reference {
                self.reference_point().is_some_and(|r| r.id == p.id)
            } else {
                p.strategy.kind() == strategy
            }
        })
    }

    /// The number of cells, computed without listing them.
    pub fn cell_count(&self) -> u128 {
        self.points
            .iter()
            .map(|p| {
                let of_source =
                    self.conversations.iter().filter(|c| p.source.as_ref().is_none_or(|s| &c.source == s)).count();
                of_source.min(p.max_conversations.unwrap_or(usize::MAX)) as u128 * u128::from(self.repeats)
            })
            .sum()
    }

    /// Refuses plans larger than [`MAX_PLAN_CELLS`], before anything is allocated for them.
    pub fn check_size(&self) -> Result<(), PlanTooLarge> {
        let cells = self.cell_count();
        if cells > u128::from(MAX_PLAN_CELLS) {
            return Err(PlanTooLarge {
                cells,
                points: self.points.len(),
                conversations: self.conversations.len(),
                repeats: self.repeats,
                limit: MAX_PLAN_CELLS,
            });
        }
        Ok(())
    }

    /// The plan as stored in `plan.json`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Short digest of the stored plan, carried by every cell run under it.
    pub fn digest(&self) -> String {
        hex::encode(&Sha256::digest(self.to_bytes())[..8])
    }

    /// All cells in their canonical order (point, conversation, repeat); shards take every Nth.
    /// Call [`Plan::check_size`] first on a plan from outside (`make_plan` and `load_plan` do).
    pub fn cells(&self) -> Vec<Cell> {
        let mut out = Vec::new();
        for p in &self.points {
            let limit = p.max_conversations.unwrap_or(usize::MAX);
            let of_source = self.conversations.iter().filter(|c| p.source.as_ref().is_none_or(|s| &c.source == s));
            for c in of_source.take(limit) {
                for r in 0..self.repeats {
                    out.push(Cell { point: p.id.clone(), conversation: c.id.clone(), repeat: r });
                }
            }
        }
        out
    }
}
