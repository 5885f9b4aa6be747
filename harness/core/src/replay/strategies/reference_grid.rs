//! The reference's settings and grid, shared by the strategies built on them (`truncation_only` takes its
//! tool-output truncation knobs and axes; `drop_oldest` and every strategy whose trigger is a share of the
//! window take [`THRESHOLD`]), and the two axes reports lay the reference's grid out over.

use crate::compress::{CompressSettings, CompressionPrompts, TruncationVariant};
use crate::replay::strategy::*;
use std::collections::BTreeMap;

pub(crate) fn names<T: Copy + Into<String>>(all: &[T]) -> Vec<String> {
    all.iter().map(|v| (*v).into()).collect()
}

pub(crate) fn refs(v: &[String]) -> Vec<&str> {
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
