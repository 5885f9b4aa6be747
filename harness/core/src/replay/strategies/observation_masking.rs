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
use std::sync::Arc;

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
    fn configure(&self, params: &Params) -> Result<Arc<dyn Compressor>, StrategyError> {
        Ok(Arc::new(parse_params::<MaskingParams>(self.name(), params)?))
    }
}

impl Compressor for MaskingParams {
    fn start(&self, _: SessionContext<'_>) -> Box<dyn CompressorSession> {
        Box::new(MaskingSession::new(self.clone()))
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

impl MaskingSession {
    /// The part indices of Content `ci`'s outputs, read again from its rewritten parts (dropped images moved
    /// the outputs after them).
    fn reindex(&mut self, ci: usize, c: &Content) {
        let at: Vec<usize> = history::parts(c)
            .iter()
            .enumerate()
            .filter(|(_, p)| history::function_response(p).is_some())
            .map(|(i, _)| i)
            .collect();
        let mine = self.outputs.iter_mut().filter(|o| o.content == ci);
        for (o, i) in mine.zip(at) {
            o.part = i;
        }
    }
}

/// Drops the media parts (images) that follow a masked tool output, up to the next other part: they are
/// that output's (a tool result's images come right after its functionResponse). Returns whether any was.
fn drop_masked_media(c: &mut Content) -> bool {
    let Some(Value::Array(parts)) = c.get_mut("parts") else { return false };
    let before = parts.len();
    let mut in_masked = false;
    parts.retain(|p| {
        if let Some(fr) = history::function_response(p) {
            in_masked = fr.get("response").is_some_and(|r| r.get("masked").is_some());
            true
        } else if crate::tokens::images::is_media_part(p) {
            !in_masked
        } else {
            in_masked = false;
            true
        }
    });
    parts.len() != before
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
            // The output's images (nested, or the media parts right after it) go with it.
            fr.as_object_mut().map(|m| m.shift_remove("parts".as_bytes()));
        }
        self.first_unmasked = self.first_unmasked.max(mask_count);
        if edits.is_empty() {
            return Ok(TurnOutcome::noop(orig));
        }
        for (ci, c) in edits.iter_mut() {
            if drop_masked_media(c) {
                self.reindex(*ci, c);
            }
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

    /// A tool result's images (the media parts right after its functionResponse) go with the masked output;
    /// a second output of the same Content is still found and masked later; the user's own images stay.
    #[test]
    fn masking_an_output_drops_its_images() {
        let img = r#"{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAgAAAAFACAYAAAA"}}"#;
        let call = parse_str(r#"{"role":"model","parts":[{"functionCall":{"name":"shot","args":{}}},{"functionCall":{"name":"shot","args":{}}}]}"#).unwrap();
        let resp = parse_str(&format!(
            r#"{{"role":"user","parts":[{{"functionResponse":{{"name":"shot","response":{{"output":"a"}}}}}},{img},{{"functionResponse":{{"name":"shot","response":{{"output":"b"}}}}}},{img}]}}"#
        ))
        .unwrap();
        let user = parse_str(&format!(r#"{{"role":"user","parts":[{{"text":"look"}},{img}]}}"#)).unwrap();
        let model = ScriptedModel::new(["unused"]);
        let stored = vec![user, call, resp];
        let mut session = MaskingSession::new(MaskingParams { keep_last: 1, placeholder: "[gone]".into() });
        fn turn(stored: &[Content], changed_from: usize) -> TurnInput<'_> {
            TurnInput {
                stored,
                pending: &[],
                last_prompt_tokens: 100,
                force: false,
                prompt_id: "t".into(),
                changed_from,
                turn: stored.len(),
            }
        }
        let out = futures::executor::block_on(session.before_request(turn(&stored, 0), &model)).unwrap();
        let [(2, edited)] = out.edits.as_slice() else { panic!("{:?}", out.edits) };
        let kinds: Vec<&str> = history::parts(edited)
            .iter()
            .map(|p| if crate::tokens::images::is_media_part(p) { "image" } else { "response" })
            .collect();
        assert_eq!(kinds, ["response", "response", "image"], "the first output's image went with it");
        let mut after = stored.clone();
        after[2] = edited.clone();
        // Nothing new: the second output is still the last one kept.
        let again = futures::executor::block_on(session.before_request(turn(&after, 3), &model)).unwrap();
        assert!(again.edits.is_empty());
        session.params.keep_last = 0;
        let last = futures::executor::block_on(session.before_request(turn(&after, 3), &model)).unwrap();
        let [(2, edited)] = last.edits.as_slice() else { panic!("{:?}", last.edits) };
        assert_eq!(history::parts(edited).len(), 2, "both outputs masked, both images gone");
        assert!(crate::tokens::images::has_media(&after[0]), "the user's own image stays");
    }
}
