//! A model that answers from a script and records what it was asked: the reference's unit tests mock the
//! LLM client this way, and the golden vectors were produced with fixed summary texts.

use super::types::{LanguageModel, LlmError, LlmRequest, LlmResponse};
use async_trait::async_trait;
use std::sync::Mutex;

#[derive(Debug)]
pub struct ScriptedModel {
    spec: String,
    answers: Vec<Result<String, LlmError>>,
    /// Answer returned once the script is used up (`None`: an error).
    repeat_last: bool,
    state: Mutex<ScriptState>,
}

#[derive(Debug, Default)]
struct ScriptState {
    next: usize,
    requests: Vec<LlmRequest>,
}

impl ScriptedModel {
    /// Answers `answers` in order; after the last one, repeats it.
    pub fn new<I, S>(answers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ScriptedModel {
            spec: "scripted".into(),
            answers: answers.into_iter().map(|s| Ok(s.into())).collect(),
            repeat_last: true,
            state: Mutex::default(),
        }
    }

    /// Answers with the given results (errors included) in order; a call past the end is an error.
    pub fn with_results(answers: Vec<Result<String, LlmError>>) -> Self {
        ScriptedModel { spec: "scripted".into(), answers, repeat_last: false, state: Mutex::default() }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.state.lock().expect("script lock").requests.clone()
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn spec(&self) -> &str {
        &self.spec
    }

    async fn generate(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut st = self.state.lock().expect("script lock");
        st.requests.push(req.clone());
        let i = st.next;
        st.next += 1;
        let answer = match self.answers.get(i) {
            Some(a) => a.clone(),
            None if self.repeat_last && !self.answers.is_empty() => self.answers[self.answers.len() - 1].clone(),
            None => Err(LlmError::Other(format!("scripted model has no answer for call {}", i + 1))),
        };
        answer.map(|text| LlmResponse { text, ..Default::default() })
    }
}
