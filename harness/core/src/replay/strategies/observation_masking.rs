//! Observation masking (SWE-agent's `LastNObservations`, JetBrains' study): keep the last `keep_last` tool
//! outputs, replace older ones with a placeholder.
//!
//! The session is incremental: it remembers where the tool outputs are and which are masked, reads only the
//! Contents appended since the previous request, and hands back the few Contents it rewrites as in-place
//! edits, so a replay costs time linear in the conversation's length.

use crate::compress::CompressionStatus;
use crate::history::{self, Content};
use crate::json::Value;
use crate::llm::LanguageModel;
use crate::replay::strategy::*;
use crate::tokens::Estimator;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub struct ObservationMasking;

/// Stored parameters (the field order is part of the point id).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MaskingParams {
    pub keep_last: usize,
    pub placeholder: String,
}

impl Strategy for ObservationMasking {
    fn name(&self) -> &'static str {
        "observation-masking"
    }
    fn about(&self) -> &'static str {
        "keep the last N tool outputs, older ones become a one-line placeholder (SWE-agent; no model)"
    }
    fn uses_llm(&self) -> bool {
        false
    }
    fn edits_in_place(&self) -> bool {
        true
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![Knob::integer("mask_keep_last", 5, 0, "tool outputs kept verbatim").labelled("mask").headed("mask last")]
    }
    fn expand(&self, g: &GridContext<'_>) -> Result<Vec<Variant>, StrategyError> {
        g.values::<usize>("mask_keep_last")?
            .into_iter()
            .map(|(keep_last, shown)| {
                let p = MaskingParams { keep_last, placeholder: g.base.mask_placeholder.clone() };
                Ok(Variant {
                    params: to_params(self.name(), &p)?,
                    axes: [("mask_keep_last".to_string(), shown)].into_iter().collect(),
                    summarizer: None,
                })
            })
            .collect()
    }
    fn configure(&self, params: &Params) -> Result<Box<dyn Compressor>, StrategyError> {
        let p: MaskingParams = parse_params(self.name(), params)?;
        Ok(Box::new(move || Box::new(MaskingSession::new(p.clone())) as Box<dyn CompressorSession>))
    }
}

/// The spec of `observation-masking` (tests, benches).
pub fn spec(keep_last: usize, placeholder: &str) -> StrategySpec {
    StrategySpec::new("observation-masking", &MaskingParams { keep_last, placeholder: placeholder.into() })
        .expect("plain values serialize")
}

/// A tool output: Content index, part index, masked yet.
#[derive(Clone, Copy, Debug)]
struct Output {
    content: usize,
    part: usize,
    masked: bool,
}

struct MaskingSession {
    params: MaskingParams,
    /// Every tool output of the stored history, oldest first.
    outputs: Vec<Output>,
    /// Outputs before this index are masked.
    first_unmasked: usize,
    /// Each stored Content's unfloored estimate (the reference heuristic), for the new count.
    estimates: Vec<f64>,
}

fn line_count(v: &Value) -> usize {
    match v {
        Value::String(s) => s.to_str_lossy().lines().count(),
        Value::Object(_) => v.get("output").or_else(|| v.get("content")).map(line_count).unwrap_or(1),
        _ => 1,
    }
}

fn response_of(c: &Content, part: usize) -> Option<&Value> {
    let fr = history::function_response(history::parts(c).get(part)?)?;
    Some(fr.get("response").unwrap_or(&Value::Null))
}

impl MaskingSession {
    fn new(params: MaskingParams) -> Self {
        MaskingSession { params, outputs: Vec::new(), first_unmasked: 0, estimates: Vec::new() }
    }

    /// Forgets what it knew about `stored[from..]` and reads it again.
    fn rescan(&mut self, stored: &[Content], from: usize) {
        let from = from.min(self.estimates.len());
        let keep = self.outputs.partition_point(|o| o.content < from);
        self.outputs.truncate(keep);
        self.first_unmasked = self.first_unmasked.min(keep);
        self.estimates.truncate(from);
        for (ci, c) in stored.iter().enumerate().skip(from) {
            self.estimates.push(Estimator::Current.content_raw(c));
            for (pi, p) in history::parts(c).iter().enumerate() {
                if let Some(fr) = history::function_response(p) {
                    let masked = fr.get("response").is_some_and(|r| r.get("masked").is_some());
                    self.outputs.push(Output { content: ci, part: pi, masked });
                }
            }
        }
    }
}

#[async_trait]
impl CompressorSession for MaskingSession {
    async fn before_request(
        &mut self,
        turn: TurnInput<'_>,
        _llm: &dyn LanguageModel,
    ) -> Result<TurnOutcome, StrategyError> {
        let orig = turn.last_prompt_tokens;
        self.rescan(turn.stored, turn.changed_from);
        let mask_count = self.outputs.len().saturating_sub(self.params.keep_last);
        let mut edits: Vec<(usize, Content)> = Vec::new();
        for o in self.outputs[self.first_unmasked.min(mask_count)..mask_count].iter_mut() {
            if o.masked {
                continue;
            }
            let Some(response) = response_of(&turn.stored[o.content], o.part) else { continue };
            let text = self.params.placeholder.replace("{num_text_lines}", &line_count(response).to_string());
            o.masked = true;
            // Several outputs of one Content share one edit.
            if edits.last().is_none_or(|(ci, _)| *ci != o.content) {
                edits.push((o.content, turn.stored[o.content].clone()));
            }
            let Some((_, c)) = edits.last_mut() else { continue };
            let Some(Value::Array(parts)) = c.get_mut("parts") else { continue };
            let Some(fr) = parts[o.part].get_mut("functionResponse") else { continue };
            fr.insert("response", Value::object([("output", Value::str(&text)), ("masked", Value::Bool(true))]));
        }
        self.first_unmasked = self.first_unmasked.max(mask_count);
        if edits.is_empty() {
            return Ok(TurnOutcome::noop(orig));
        }
        for (ci, c) in &edits {
            self.estimates[*ci] = Estimator::Current.content_raw(c);
        }
        // Summed in order, as the reference sums a history: the same figure as estimating the new history.
        let new = self.estimates.iter().sum::<f64>().floor() as u64;
        Ok(TurnOutcome::edited(orig, new, CompressionStatus::ContentTruncated, edits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_str;
    use crate::llm::ScriptedModel;

    fn tool_round(i: usize) -> [Content; 2] {
        let call =
            format!(r#"{{"role":"model","parts":[{{"functionCall":{{"name":"sh","args":{{"cmd":"ls {i}"}}}}}}]}}"#);
        let resp = format!(
            r#"{{"role":"user","parts":[{{"functionResponse":{{"name":"sh","response":{{"output":"a\nb\nfile{i}"}}}}}}]}}"#
        );
        [parse_str(&call).unwrap(), parse_str(&resp).unwrap()]
    }

    /// Incremental masking gives the history and count a full rewrite would: the oldest outputs masked,
    /// the last `keep_last` kept, each masked once.
    #[test]
    fn masks_all_but_the_last_outputs_incrementally() {
        let model = ScriptedModel::new(["unused"]);
        let mut session =
            MaskingSession::new(MaskingParams { keep_last: 2, placeholder: "({num_text_lines} lines)".into() });
        let mut stored = vec![history::user_text("task")];
        let mut changed_from = 0;
        let mut masked_total = 0;
        for i in 0..6 {
            stored.extend(tool_round(i));
            let turn = TurnInput {
                stored: &stored,
                pending: &[],
                last_prompt_tokens: 100,
                force: false,
                prompt_id: "t".into(),
                changed_from,
                turn: stored.len(),
            };
            let out = futures::executor::block_on(session.before_request(turn, &model)).unwrap();
            masked_total += out.edits.len();
            if !out.edits.is_empty() {
                let mut after = stored.clone();
                for (ci, c) in &out.edits {
                    after[*ci] = c.clone();
                }
                assert_eq!(out.info.new_token_count, Estimator::Current.history(&after));
                stored = after;
            }
            changed_from = stored.len();
        }
        // 6 outputs, 2 kept: 4 masked, each exactly once.
        assert_eq!(masked_total, 4);
        let texts: Vec<String> =
            stored.iter().filter(|c| history::has_function_response(c)).map(crate::json::to_string).collect();
        assert!(texts[..4].iter().all(|t| t.contains("(3 lines)") && t.contains("masked")), "{texts:?}");
        assert!(texts[4..].iter().all(|t| t.contains("file")), "{texts:?}");
        assert_eq!(Estimator::Current.history(&stored), session.estimates.iter().sum::<f64>().floor() as u64);
    }
}
