//! The reference: Gemini CLI's `ChatCompressionService.compress()` driven by the interactive or sub-agent
//! caller, every historical variant of its pieces a knob.

use crate::compress::{
    compress, Caller, CallerKind, CompressEnv, CompressOutcome, CompressRequest, CompressSettings, CompressionPrompts,
    FailurePath, HistoryUpdate, Latch, MemoryToolOutputStore, SplitVariant, TruncationVariant,
};
use crate::history::{self, Content};
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use crate::tokens::Estimator;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

pub struct Gemini;

/// Stored parameters (the field order is part of the point id).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct GeminiParams {
    settings: CompressSettings,
    caller: CallerKind,
    latch: Latch,
}

fn names<T: Copy + Into<String>>(all: &[T]) -> Vec<String> {
    all.iter().map(|v| (*v).into()).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The knobs shared with `truncation-only`: tool-output truncation.
pub(crate) fn truncation_knobs() -> Vec<Knob> {
    let t = names(TruncationVariant::ALL);
    vec![
        Knob::choice("truncation", TruncationVariant::Current, &refs(&t), "tool-output truncation variant"),
        Knob::integer("function_response_budget", 50_000, 0, "tool-output budget (tokens, newest first)")
            .headed("fr budget"),
        Knob::integer("truncate_tool_output_threshold", 40_000, -1, "truncation placeholder size (chars)")
            .headed("trunc thr"),
    ]
}

/// The trigger fraction: compress when the last prompt reaches this share of the window. One name in every
/// strategy whose trigger is a share of the window (each strategy's doc says what its agent calls it).
/// Reports lay the reference's grid out over it and [`PRESERVE_FRACTION`].
pub const THRESHOLD: &str = "threshold";
/// The share of the history the reference keeps verbatim.
pub const PRESERVE_FRACTION: &str = "preserve_fraction";

pub(crate) fn threshold_knob(default: f64) -> Knob {
    Knob::number(THRESHOLD, default, Bound::Open(0.0), Bound::Closed(1.0), "trigger: last prompt ≥ threshold × window")
        .labelled("t")
        .headed("thr")
}

/// The trigger of strategies built on the reference's settings, in a window of `token_limit` tokens.
pub(crate) fn settings_trigger(settings: &CompressSettings, token_limit: u64) -> Option<u64> {
    settings.threshold.map(|t| threshold_trigger(t, token_limit))
}

/// The reference's settings in one conversation's window (whatever window they held: the parameters of plans
/// written before issue #35 hold one).
pub(crate) fn in_window(settings: &CompressSettings, conversation: SessionContext<'_>) -> CompressSettings {
    CompressSettings {
        token_limit: Some(conversation.window.token_limit),
        max_output_tokens: conversation.window.max_output_tokens,
        ..settings.clone()
    }
}

/// `[base]` → the reference's settings before the knobs.
pub(crate) fn base_settings(g: &GridContext<'_>, verification: bool) -> CompressSettings {
    let base = g.base;
    CompressSettings {
        model: base.model.clone(),
        active_model: base.active_model.clone(),
        approved_plan_path: base.approved_plan_path.clone(),
        threshold: Some(0.5),
        preserve_fraction: 0.3,
        model_table: base.model_table,
        high_fidelity: base.high_fidelity,
        inflation_guard: base.inflation_guard,
        verification,
        prompts: CompressionPrompts::current(),
        env_text: base.env_text.clone(),
        ..CompressSettings::default()
    }
}

pub(crate) type Variants = Vec<(CompressSettings, BTreeMap<String, String>)>;

/// One more grid axis: every variant so far times every value of the knob.
pub(crate) fn axis<T: serde::de::DeserializeOwned + Clone>(
    g: &GridContext<'_>,
    variants: Variants,
    name: &str,
    apply: impl Fn(&mut CompressSettings, &T),
) -> Result<Variants, StrategyError> {
    let values = g.values::<T>(name)?;
    Ok(variants
        .into_iter()
        .flat_map(|(settings, axes)| values.iter().map(move |v| (settings.clone(), axes.clone(), v.clone())))
        .map(|(mut settings, mut axes, (v, shown))| {
            apply(&mut settings, &v);
            axes.insert(name.to_string(), shown);
            (settings, axes)
        })
        .collect())
}

/// The tool-output truncation axes, shared by the reference and the truncation-only strategy.
pub(crate) fn truncation_axes(g: &GridContext<'_>, v: Variants) -> Result<Variants, StrategyError> {
    let v = axis(g, v, "truncation", |s, x: &TruncationVariant| s.truncation = *x)?;
    let v = axis(g, v, "function_response_budget", |s, x: &u64| s.function_response_budget = *x)?;
    axis(g, v, "truncate_tool_output_threshold", |s, x: &i64| s.truncate_tool_output_threshold = *x)
}

impl Strategy for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn about(&self) -> &'static str {
        "Gemini CLI's ChatCompressionService (the reference port), every historical variant a knob"
    }

    fn system(&self) -> Option<&'static str> {
        Some("Gemini CLI (reference)")
    }
    fn role(&self) -> Role {
        Role::Reference
    }
    fn window_in_ids(&self) -> WindowInIds {
        WindowInIds::InSettings
    }
    fn uses_llm(&self) -> bool {
        true
    }

    fn knobs(&self) -> Vec<Knob> {
        let split = names(SplitVariant::ALL);
        let est = names(Estimator::ALL);
        let mut k = vec![
            threshold_knob(0.5),
            Knob::number(
                PRESERVE_FRACTION,
                0.3,
                Bound::Open(0.0),
                Bound::Open(1.0),
                "share of the history kept verbatim",
            )
            .labelled("keep")
            .headed("keep"),
            Knob::text("prompt", "v5", "v0…v5 | FILE:SECTION", "prompt version or another system's prompt", |s| {
                crate::replay::strategy::refuse_prompt_path(s)?;
                CompressionPrompts::from_spec(s).map(|_| ())
            })
            .labelled("prompt"),
            Knob::boolean("verification", true, "second \"critically evaluate\" pass (moot without one)")
                .labelled("verify")
                .headed("verify"),
            Knob::choice("split", SplitVariant::Current, &refs(&split), "split-point variant").labelled("split"),
            Knob::choice("estimator", Estimator::Current, &refs(&est), "token estimator variant"),
        ];
        k.extend(truncation_knobs());
        k.extend([
            Knob::choice(
                "failure_path",
                FailurePath::TruncateOnly,
                &["truncate-only", "noop", "ignore"],
                "after a failed summary",
            ),
            Knob::choice("caller", CallerKind::Interactive, &["interactive", "sub-agent"], "which caller drives it"),
            Knob::choice("latch", Latch::Latched, &["latched", "set-if-not-forced"], "failure latch"),
        ]);
        k
    }

    fn expand(&self, g: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        let mut variants: Variants = vec![(base_settings(g, true), BTreeMap::new())];
        variants = axis(g, variants, THRESHOLD, |s, v: &f64| s.threshold = Some(*v))?;
        variants = axis(g, variants, PRESERVE_FRACTION, |s, v: &f64| s.preserve_fraction = *v)?;
        let prompts: Vec<(CompressionPrompts, String)> = g
            .values::<String>("prompt")?
            .into_iter()
            .map(|(p, shown)| {
                CompressionPrompts::from_spec(&p).map(|c| (c, shown)).map_err(|e| StrategyError::Knob {
                    strategy: "gemini".into(),
                    knob: "prompt".into(),
                    message: e.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        variants = variants
            .into_iter()
            .flat_map(|(s, a)| prompts.iter().map(move |p| (s.clone(), a.clone(), p.clone())))
            .map(|(mut s, mut a, (p, shown))| {
                s.prompts = p;
                a.insert("prompt".into(), shown);
                (s, a)
            })
            .collect();
        variants = axis(g, variants, "verification", |s, v: &bool| s.verification = *v)?;
        variants = axis(g, variants, "split", |s, v: &SplitVariant| s.split = *v)?;
        variants = axis(g, variants, "estimator", |s, v: &Estimator| s.estimator = *v)?;
        variants = truncation_axes(g, variants)?;
        variants = axis(g, variants, "failure_path", |s, v: &FailurePath| s.failure_path = *v)?;
        // Prompts without a verification turn make the verification axis moot: one point, not two.
        for (settings, axes) in variants.iter_mut() {
            if settings.prompts.verification.is_none() {
                settings.verification = false;
                axes.insert("verification".into(), "n/a".into());
            }
        }
        let callers = g.values::<CallerKind>("caller")?;
        let latches = g.values::<Latch>("latch")?;
        let mut out = Vec::new();
        for summarizer in g.summarizers {
            for (settings, axes) in &variants {
                for (caller, caller_shown) in &callers {
                    for (latch, latch_shown) in &latches {
                        let mut axes = axes.clone();
                        axes.insert("caller".into(), caller_shown.clone());
                        axes.insert("latch".into(), latch_shown.clone());
                        let p = GeminiParams { settings: settings.clone(), caller: *caller, latch: *latch };
                        out.push(Variant {
                            params: to_params("gemini", &p)?,
                            axes,
                            summarizer: Some(summarizer.clone()),
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(parse_params::<GeminiParams>(self.name(), params)?))
    }
}

impl Compressor for GeminiParams {
    fn start(&self, conversation: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(GeminiSession {
            settings: in_window(&self.settings, conversation),
            caller: Caller::new(self.caller, self.latch),
            next_id: 0,
            store: MemoryToolOutputStore::new("/tmp/compactbench/project"),
        })
    }
    fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        settings_trigger(&self.settings, token_limit)
    }
}

/// A spec of the reference with these settings (tests, benches); the window and output limit are the
/// replay's.
pub fn spec(settings: CompressSettings, caller: CallerKind, latch: Latch) -> StrategySpec {
    let p = GeminiParams { settings, caller, latch };
    StrategySpec::new("gemini", &p).expect("the reference's settings serialize")
}

struct GeminiSession {
    settings: CompressSettings,
    caller: Caller,
    next_id: u64,
    store: MemoryToolOutputStore,
}

#[async_trait]
impl CompressorSession for GeminiSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        // The sub-agent caller never forces.
        let force = turn.force && self.caller.kind == CallerKind::Interactive;
        let req = CompressRequest {
            prompt_id: turn.prompt_id,
            force,
            has_failed: self.caller.has_failed_argument(),
            last_prompt_tokens: turn.last_prompt_tokens,
            ui_last_prompt_tokens: turn.last_prompt_tokens,
        };
        let mut env = CompressEnv { next_truncation_id: &mut self.next_id, tool_outputs: &mut self.store };
        let out: CompressOutcome = compress(turn.stored, &req, &self.settings, &mut env, llm).await?;
        // Outputs are only needed for their paths; keep memory flat over long replays.
        self.store.files.clear();
        let env_turn = self.settings.env_text.as_deref().map(history::user_text);
        let replaced = match self.caller.apply(&out, force, env_turn.as_ref()) {
            HistoryUpdate::Replaced(h) => Some(h),
            HistoryUpdate::Unchanged => None,
        };
        let candidate = out.trace.candidate_history.clone().map(|h| {
            let mut full: Vec<Content> = Vec::with_capacity(h.len() + 1);
            if self.caller.kind == CallerKind::Interactive {
                full.extend(env_turn.clone());
            }
            full.extend(h);
            full
        });
        Ok(TurnOutcome {
            info: out.info,
            replaced,
            edits: Vec::new(),
            trace: Some(out.trace),
            candidate,
            covers_until: None,
        })
    }
}
