//! The reference: Gemini CLI's `ChatCompressionService.compress()` driven by the interactive or sub-agent
//! caller, every historical variant of its pieces a knob.

use super::reference_grid::{
    axis, base_settings, in_window, names, refs, settings_trigger, threshold_knob, truncation_axes, truncation_knobs,
    Variants, PRESERVE_FRACTION, THRESHOLD,
};
use crate::compress::{
    compress, Caller, CallerKind, CompressEnv, CompressOutcome, CompressRequest, CompressSettings, CompressionPrompts,
    FailurePath, HistoryUpdate, Latch, MemoryToolOutputStore, SplitVariant,
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
