//! Helpers shared by the strategies that model other agents: token estimates, transcripts in each
//! system's serialisation, one summarizer call recorded as the reference records its calls, and the
//! trace a summarising strategy hands back.

use crate::compress::{CompressTrace, LlmCallRecord};
use crate::history::{self, Content};
use crate::json::{self, JsStr, Value};
use crate::llm::{GenerationParams, LanguageModel, LlmRequest, RequestLabel};
use crate::replay::strategy::{prompt_section, StrategyError, TurnOutcome};
use crate::tokens::Estimator;

/// The reference heuristic's tokens of a history (what the strategies' token budgets count).
pub fn tokens(h: &[Content]) -> u64 {
    Estimator::Current.history(h)
}

/// The reference heuristic's tokens of one Content.
pub fn content_tokens(c: &Content) -> u64 {
    Estimator::Current.content(c)
}

/// The reference heuristic's tokens of a text.
pub fn text_tokens(s: &str) -> u64 {
    Estimator::Current.text(&JsStr::new(s))
}

/// A user turn that is a request, not a tool response.
pub fn is_plain_user(c: &Content) -> bool {
    history::is_user(c) && !history::has_function_response(c)
}

/// A prompt section (`FILE:SECTION`) as a strategy error.
pub fn section(strategy: &str, spec: &str) -> Result<String, StrategyError> {
    prompt_section(spec).map_err(|e| StrategyError::Failed { strategy: strategy.into(), message: e.to_string() })
}

/// The text of a tool response's payload (`output`, `content`, or the JSON).
pub fn response_text(fr: &Value) -> String {
    let r = fr.get("response").unwrap_or(&Value::Null);
    match r.get("output").or_else(|| r.get("content")).or_else(|| r.get("result")) {
        Some(Value::String(s)) => s.to_str_lossy().into_owned(),
        Some(other) => json::to_string(other),
        None => json::to_string(r),
    }
}

/// One part of a transcript: who said it and what.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    User(String),
    Assistant(String),
    ToolCall { name: String, args: String },
    ToolResult { name: String, text: String },
}

/// A history as a list of pieces, in order (thoughts are already stripped from stored histories).
pub fn pieces(h: &[Content]) -> Vec<Piece> {
    let mut out = Vec::new();
    for c in h {
        let model = history::is_model(c);
        for p in history::parts(c) {
            if let Some(fc) = history::function_call(p) {
                let name = fc.get("name").and_then(Value::as_str).map(|s| s.to_string()).unwrap_or_default();
                let args = fc.get("args").map(json::to_string).unwrap_or_else(|| "{}".into());
                out.push(Piece::ToolCall { name, args });
            } else if let Some(fr) = history::function_response(p) {
                let name = fr.get("name").and_then(Value::as_str).map(|s| s.to_string()).unwrap_or_default();
                out.push(Piece::ToolResult { name, text: response_text(fr) });
            } else if let Some(Value::String(t)) = p.get("text") {
                let t = t.to_str_lossy().into_owned();
                out.push(if model { Piece::Assistant(t) } else { Piece::User(t) });
            }
        }
    }
    out
}

/// The first `max` characters of a text, and whether it was cut.
pub fn clip_chars(s: &str, max: usize) -> (String, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].to_string(), true),
        None => (s.to_string(), false),
    }
}

/// One summarizer call: sends the request, records it as the reference records its calls.
pub async fn call(
    llm: &dyn LanguageModel,
    system: Option<String>,
    contents: Vec<Content>,
    prompt_id: &str,
    max_output_tokens: Option<u32>,
) -> Result<(String, LlmCallRecord), StrategyError> {
    let req = LlmRequest {
        system_instruction: system,
        contents,
        params: GenerationParams { max_output_tokens, ..GenerationParams::default() },
        label: RequestLabel { prompt_id: prompt_id.into(), role: "utility_compressor".into(), model_alias: None },
    };
    let resp = llm.generate(&req).await?;
    let record = LlmCallRecord {
        model_alias: llm.spec().to_string(),
        prompt_id: prompt_id.into(),
        role: req.label.role.clone(),
        system_instruction: req.system_instruction.clone(),
        n_contents: req.contents.len(),
        last_content: req.contents.last().cloned().unwrap_or(Value::Null),
        usage: resp.usage,
        prompt_estimate: tokens(&req.contents) + req.system_instruction.as_deref().map(text_tokens).unwrap_or(0),
        response_chars: resp.text.len(),
    };
    Ok((resp.text, record))
}

/// What a summarising compression did: the new history `new` (measured with [`tokens`]) replacing `orig`
/// tokens, with the trace of its summary and model calls; `summarized` Contents went into the summary,
/// `kept` stayed verbatim.
pub fn summarized(
    orig: u64,
    summary: &str,
    calls: Vec<LlmCallRecord>,
    summarized: usize,
    kept: usize,
    new: Vec<Content>,
) -> TurnOutcome {
    let trace = CompressTrace {
        first_summary: Some(summary.to_string()),
        final_summary: Some(summary.to_string()),
        llm_calls: calls,
        candidate_history: Some(new.clone()),
        summarized_contents: summarized,
        kept_contents: kept,
        ..CompressTrace::default()
    };
    TurnOutcome::summarized(orig, tokens(&new), new, trace)
}

/// Start of the newest suffix whose tokens fit `budget`, cut at a plain user turn (`len` when none fits).
pub fn tail_start_by_tokens(h: &[Content], budget: u64) -> usize {
    let mut sum = 0u64;
    let mut cut = h.len();
    for (i, c) in h.iter().enumerate().rev() {
        sum += content_tokens(c);
        if sum > budget {
            break;
        }
        if is_plain_user(c) {
            cut = i;
        }
    }
    cut
}

/// Each stored Content's unfloored estimate, kept up to date from `changed_from` on, so a strategy that
/// sizes the whole history at every request does not re-estimate all of it.
#[derive(Default)]
pub struct RunningEstimates {
    raw: Vec<f64>,
}

impl RunningEstimates {
    pub fn update(&mut self, stored: &[Content], changed_from: usize) {
        self.raw.truncate(changed_from.min(self.raw.len()));
        let from = self.raw.len();
        self.raw.extend(stored[from..].iter().map(|c| Estimator::Current.content_raw(c)));
    }

    /// Tokens of `stored[range]` (floored once, as the reference floors a history).
    pub fn tokens(&self, range: std::ops::Range<usize>) -> u64 {
        self.raw[range].iter().sum::<f64>().floor() as u64
    }

    pub fn of(&self, i: usize) -> u64 {
        self.raw[i].floor() as u64
    }
}

#[cfg(test)]
pub mod fixtures {
    //! Small handmade histories for the strategies' unit tests.
    use super::*;
    use crate::json::parse_str;

    pub fn user(t: &str) -> Content {
        history::user_text(t)
    }

    pub fn model(t: &str) -> Content {
        history::model_text(t)
    }

    pub fn call(name: &str, arg: &str) -> Content {
        parse_str(&format!(
            r#"{{"role":"model","parts":[{{"functionCall":{{"name":"{name}","args":{{"path":"{arg}"}}}}}}]}}"#
        ))
        .expect("valid fixture")
    }

    pub fn result(name: &str, output: &str) -> Content {
        let out = serde_json::to_string(output).expect("string");
        parse_str(&format!(
            r#"{{"role":"user","parts":[{{"functionResponse":{{"name":"{name}","response":{{"output":{out}}}}}}}]}}"#
        ))
        .expect("valid fixture")
    }

    /// `rounds` × [user request, tool call, tool result of `result_chars`, model answer].
    pub fn session(rounds: usize, result_chars: usize) -> Vec<Content> {
        let mut h = Vec::new();
        for i in 0..rounds {
            h.push(user(&format!("request {i}: fix src/file{i}.rs")));
            h.push(call("read_file", &format!("src/file{i}.rs")));
            h.push(result("read_file", &format!("{i}:{}", "x".repeat(result_chars))));
            h.push(model(&format!("answer {i}")));
        }
        h
    }

    /// A model that records every request and answers with a fixed text.
    pub struct Recorder {
        pub requests: std::sync::Mutex<Vec<LlmRequest>>,
        pub answer: String,
    }

    impl Recorder {
        pub fn new(answer: &str) -> Self {
            Recorder { requests: Default::default(), answer: answer.into() }
        }
        pub fn sent(&self) -> Vec<LlmRequest> {
            self.requests.lock().expect("not poisoned").clone()
        }
    }

    #[async_trait::async_trait]
    impl LanguageModel for Recorder {
        fn spec(&self) -> &str {
            "recorder"
        }
        async fn generate(&self, req: &LlmRequest) -> Result<crate::llm::LlmResponse, crate::llm::LlmError> {
            self.requests.lock().expect("not poisoned").push(req.clone());
            Ok(crate::llm::LlmResponse { text: self.answer.clone(), ..Default::default() })
        }
    }

    /// One request to a session, as the replay makes it.
    pub fn turn(stored: &[Content], last_prompt_tokens: u64) -> crate::replay::strategy::TurnInput<'_> {
        crate::replay::strategy::TurnInput {
            stored,
            pending: &[],
            last_prompt_tokens,
            force: false,
            prompt_id: "t-1".into(),
            changed_from: 0,
            turn: stored.len(),
        }
    }

    /// A strategy's session from knob values (the rest default), through the registry as a sweep builds it, in a
    /// window of `token_limit` tokens.
    pub fn session_of(
        name: &str,
        knobs: serde_json::Value,
        token_limit: u64,
    ) -> Box<dyn crate::replay::strategy::CompressorSession> {
        spec_of(name, knobs)
            .compressor()
            .start(crate::replay::strategy::Window { token_limit, max_output_tokens: None }.into())
    }

    /// A strategy's spec from knob values (the rest default).
    pub fn spec_of(name: &str, knobs: serde_json::Value) -> crate::replay::strategy::StrategySpec {
        let def = crate::replay::registry::find(name).expect("registered");
        let mut params = crate::replay::strategy::Params::new();
        for k in def.knobs() {
            params.insert(k.name.into(), knobs.get(k.name).cloned().unwrap_or(k.default.clone()));
        }
        crate::replay::strategy::StrategySpec::configure(name, params).expect("valid params")
    }

    pub fn text_of(c: &Content) -> String {
        history::visible_text(c)
    }

    pub fn run(
        s: &mut dyn crate::replay::strategy::CompressorSession,
        stored: &[Content],
        last: u64,
        llm: &dyn LanguageModel,
    ) -> crate::replay::strategy::TurnOutcome {
        futures::executor::block_on(s.before_request(turn(stored, last), llm)).expect("no error")
    }
}
