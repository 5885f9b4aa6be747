//! Scoring probes during a replay: after every compression event and at the end, on the history the agent
//! would send (and on the first-pass history when a verification pass replaced the first summary).

use super::figures;
use super::grader::{Grader, Matcher};
use super::text_match;
use super::{inject, Probe};
use crate::compress::prompts::PromptFile;
use crate::data::{
    ActionGrade, AnswerResult, Checkpoint, InjectionResult, NextAction, ProbeResults, ProbeScore, ProbesConfig,
};
use crate::history::{self, Content};
use crate::llm::{GenerationParams, LanguageModel, LlmRequest, RequestLabel};
use crate::replay::{CompressionEvent, ReplayObserver};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, LazyLock};

/// The answerer's and the judge's prompts (`configs/prompts/answerer.txt`, `judge.txt`), embedded.
static ANSWERER_PROMPT: LazyLock<PromptFile> = LazyLock::new(|| {
    PromptFile::parse("answerer", include_str!("../../../configs/prompts/answerer.txt")).expect("answerer prompt")
});
/// The next-action question (open-loop stand-in for task success).
const NEXT_ACTION_SYSTEM: &str = "You are the coding agent of this conversation. Reply with your next tool call \
only, as one JSON object {\"tool\": \"<tool name>\", \"args\": {...}} and nothing else.";
static JUDGE_PROMPT: LazyLock<PromptFile> = LazyLock::new(|| {
    PromptFile::parse("judge", include_str!("../../../configs/prompts/judge.txt")).expect("judge prompt")
});

/// Longest answer text kept in results (grades use the whole answer).
const KEPT_ANSWER_CHARS: usize = 400;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProbeOptions {
    /// Ask the answerer after every compression event, not only at the end.
    pub answer_at_events: bool,
    /// Also ask the answerer on the first-pass history when verification changed the summary.
    pub verification_accuracy: bool,
    pub max_output_tokens: Option<u32>,
    /// After each compression, ask the answerer model for the next action on the compressed and on the
    /// uncompressed history and compare both with the recorded one (needs the recording; off by default).
    pub next_action: bool,
}

impl ProbeOptions {
    /// The options of a run's `[probes]` table; `at_end_only` for a slice that asks only at the end.
    pub fn of(config: &ProbesConfig, at_end_only: bool) -> ProbeOptions {
        ProbeOptions {
            answer_at_events: config.answer_at_events && !at_end_only,
            verification_accuracy: config.verification_accuracy,
            max_output_tokens: config.max_answer_tokens,
            next_action: config.next_action,
        }
    }
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            answer_at_events: true,
            verification_accuracy: false,
            max_output_tokens: Some(128),
            next_action: false,
        }
    }
}

/// The first tool call of a model turn: name and arguments as JSON text.
fn tool_call_of(c: &Content) -> Option<(String, String)> {
    history::parts(c).iter().find_map(|p| {
        let fc = history::function_call(p)?;
        let name = fc.get("name").and_then(|v| v.as_js_str()).map(|s| s.to_str_lossy().into_owned())?;
        Some((name, fc.get("args").map(crate::json::to_string).unwrap_or_default()))
    })
}

/// Reads `{"tool": …, "args": …}` from a model's reply (the first JSON object in it).
fn parse_action(text: &str) -> Option<(String, String)> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    let v: serde_json::Value = serde_json::from_str(text.get(start..=end)?).ok()?;
    let tool = v.get("tool")?.as_str()?.to_string();
    Some((tool, v.get("args").map(|a| a.to_string()).unwrap_or_default()))
}

/// A [`ReplayObserver`] that scores probes; with a canary, also watches summaries for it.
pub struct ProbeObserver {
    conversation: String,
    probes: Vec<Probe>,
    /// The grading rule for this session, and each probe compiled against it (same order as `probes`).
    grader: Arc<Grader>,
    matchers: Arc<Vec<Matcher>>,
    /// The grader came from the caller (the session's working directory and files), not from the recording.
    grader_given: bool,
    answerer: Option<Arc<dyn LanguageModel>>,
    judge: Option<Arc<dyn LanguageModel>>,
    options: ProbeOptions,
    results: ProbeResults,
    /// What the recording says about each probe (absent: early-only and at-risk are not scored).
    recording: Option<Arc<figures::RecordingIndex>>,
    /// The recorded history (kept only when next actions are asked for).
    recorded: Option<Vec<Content>>,
    compressions: u32,
    injection: Option<inject::Injection>,
}

impl ProbeObserver {
    pub fn new(
        conversation: &str,
        probes: Vec<Probe>,
        answerer: Option<Arc<dyn LanguageModel>>,
        judge: Option<Arc<dyn LanguageModel>>,
        options: ProbeOptions,
    ) -> Self {
        let results = ProbeResults {
            probes: probes.len(),
            answerer: answerer.as_ref().map(|m| m.spec().to_string()),
            ..Default::default()
        };
        let grader = Arc::new(Grader::new(&[], None, &probes));
        let matchers = Arc::new(probes.iter().map(|p| grader.matcher(p)).collect());
        ProbeObserver {
            conversation: conversation.into(),
            probes,
            grader,
            matchers,
            grader_given: false,
            answerer,
            judge,
            options,
            results,
            recording: None,
            recorded: None,
            compressions: 0,
            injection: None,
        }
    }

    /// Grades with the session's grader ([`Grader::of_conversation`]: its working directory and files);
    /// call before [`Self::with_recording`]. Without it the grader knows the files of the recording only.
    pub fn with_grader(mut self, grader: Grader) -> Self {
        self.matchers = Arc::new(self.probes.iter().map(|p| grader.matcher(p)).collect());
        self.grader = Arc::new(grader);
        self.grader_given = true;
        self
    }

    /// The session's grader, the probes compiled against it (same order as the probes) and the recording's
    /// index, prepared once for every cell of a conversation (`sweep::runner`): [`Self::with_grader`] and
    /// [`Self::with_recording`]'s index, not made again. The recording is still needed for next actions.
    pub fn with_prepared(
        mut self,
        grader: Arc<Grader>,
        matchers: Arc<Vec<Matcher>>,
        recording: Arc<figures::RecordingIndex>,
    ) -> Self {
        self.grader = grader;
        self.matchers = matchers;
        self.grader_given = true;
        self.recording = Some(recording);
        self
    }

    /// Scores early-only and at-risk against the recorded history the replay is fed.
    pub fn with_recording(mut self, recorded: &[Content]) -> Self {
        if !self.grader_given {
            let grader = Grader::new(recorded, None, &self.probes);
            self.matchers = Arc::new(self.probes.iter().map(|p| grader.matcher(p)).collect());
            self.grader = Arc::new(grader);
        }
        if self.recording.is_none() {
            let index = figures::RecordingIndex::new(recorded, &self.probes, &self.grader, &self.matchers);
            self.recording = Some(Arc::new(index));
        }
        if self.options.next_action {
            self.recorded = Some(recorded.to_vec());
        }
        self
    }

    /// Watches summaries for the canary of a planted instruction.
    pub fn with_injection(mut self, injection: &inject::Injection) -> Self {
        self.results.injection = Some(InjectionResult {
            canary: injection.canary.clone(),
            planted_at: injection.at,
            carrier: injection.carrier.clone(),
            ..Default::default()
        });
        self.injection = Some(injection.clone());
        self
    }

    pub fn into_results(self) -> ProbeResults {
        self.results
    }

    async fn answer(&self, probe: &Probe, stored: &[Content]) -> Option<AnswerResult> {
        let model = self.answerer.as_ref()?;
        let mut contents = stored.to_vec();
        if contents.last().is_some_and(history::is_user) {
            // Keep the turns alternating: the question must be its own last user turn.
            contents.push(history::model_text("OK."));
        }
        let question =
            ANSWERER_PROMPT.section("question").unwrap_or("{question}").replace("{question}", &probe.question);
        contents.push(history::user_text(&question));
        let request = LlmRequest {
            system_instruction: ANSWERER_PROMPT.section("system").ok().map(str::to_string),
            contents,
            params: GenerationParams {
                max_output_tokens: self.options.max_output_tokens,
                temperature: Some(0.0),
                stop: Vec::new(),
            },
            label: RequestLabel {
                prompt_id: format!("probe-{}-{}", self.conversation, probe.id),
                role: "answerer".into(),
                model_alias: None,
            },
        };
        let text = match model.generate(&request).await {
            Ok(r) => r.text,
            Err(e) => return Some(AnswerResult { error: Some(e.to_string()), ..Default::default() }),
        };
        let mut result = AnswerResult {
            grade: text_match::grade_answer(&text, probe.answers()),
            text: text.chars().take(KEPT_ANSWER_CHARS).collect(),
            ..Default::default()
        };
        if let Some(judge) = &self.judge {
            match judge_score(judge.as_ref(), probe, &text, &self.conversation).await {
                Ok(score) => result.judge = score,
                Err(e) => result.error = Some(format!("judge: {e}")),
            }
        }
        Some(result)
    }

    /// Asks the answerer model for the next action on a history and grades it against the recorded one.
    async fn predict(&self, history_to: &[Content], recorded: &(String, String), label: &str) -> ActionGrade {
        let Some(model) = &self.answerer else { return ActionGrade::default() };
        let mut contents = history_to.to_vec();
        if contents.last().is_some_and(history::is_model) {
            contents.push(history::user_text("Continue."));
        }
        let request = LlmRequest {
            system_instruction: Some(NEXT_ACTION_SYSTEM.to_string()),
            contents,
            params: GenerationParams {
                max_output_tokens: self.options.max_output_tokens,
                temperature: Some(0.0),
                stop: Vec::new(),
            },
            label: RequestLabel {
                prompt_id: format!("next-action-{}-{label}", self.conversation),
                role: "next-action".into(),
                model_alias: None,
            },
        };
        match model.generate(&request).await {
            Ok(r) => match parse_action(&r.text) {
                Some((tool, args)) => ActionGrade {
                    tool_match: tool == recorded.0,
                    argument_similarity: text_match::token_f1(&args, &recorded.1),
                    error: None,
                },
                None => {
                    ActionGrade { error: Some("no {\"tool\": …} object in the reply".into()), ..Default::default() }
                }
            },
            Err(e) => ActionGrade { error: Some(e.to_string()), ..Default::default() },
        }
    }

    async fn next_action(&self, turn: usize, stored: &[Content], event_index: usize) -> Option<NextAction> {
        let recorded_history = self.recorded.as_ref()?;
        let recorded = tool_call_of(recorded_history.get(turn)?)?;
        let compressed = self.predict(stored, &recorded, &format!("{event_index}-compressed")).await;
        let uncompressed =
            self.predict(&recorded_history[..turn], &recorded, &format!("{event_index}-uncompressed")).await;
        Some(NextAction { recorded_tool: recorded.0, compressed, uncompressed })
    }

    async fn score(
        &self,
        stored: &[Content],
        first_pass: Option<&[Content]>,
        upto: usize,
        ask: bool,
    ) -> Vec<ProbeScore> {
        let askable: Vec<usize> =
            (0..self.probes.len()).filter(|&i| self.probes[i].available_before() <= upto).collect();
        if askable.is_empty() {
            return Vec::new();
        }
        let g = &self.grader;
        let kept = g.kept_some(&text_match::history_haystack(stored), &self.matchers, &askable);
        let first_kept = first_pass.map(|fp| g.kept_some(&text_match::history_haystack(fp), &self.matchers, &askable));
        let view = self.recording.as_ref().map(|r| r.view(stored, g, &self.matchers));
        let mut scores = Vec::new();
        for (k, i) in askable.into_iter().enumerate() {
            let p = &self.probes[i];
            let kept_by = kept[k];
            let early_only = self.recording.as_ref().map(|r| r.early_only(i));
            let at_risk = match (&self.recording, &view) {
                (Some(r), Some(v)) => Some(r.at_risk(i, v)),
                _ => None,
            };
            let answer = if ask { self.answer(p, stored).await } else { None };
            let first_pass_answer = match first_pass {
                Some(fp) if ask && self.options.verification_accuracy => self.answer(p, fp).await,
                _ => None,
            };
            scores.push(ProbeScore {
                probe: p.id.clone(),
                kind: p.kind,
                source: p.source,
                retained: kept_by.is_some(),
                kept_by,
                in_first_prompt: self.recording.as_ref().is_some_and(|r| r.in_first_prompt(i)),
                early_only,
                at_risk,
                answer,
                first_pass_retained: first_kept.as_ref().map(|f| f[k].is_some()),
                first_pass_answer,
            });
        }
        scores
    }
}

/// Asks the judge for a 0–5 score; `None` when its answer holds no score.
pub async fn judge_score(
    judge: &dyn LanguageModel,
    probe: &Probe,
    answer: &str,
    conversation: &str,
) -> Result<Option<u8>, crate::llm::LlmError> {
    let accepted = probe.answers().collect::<Vec<_>>().join(" | ");
    let user = JUDGE_PROMPT
        .section("user")
        .unwrap_or("{question}\n{gold}\n{answer}")
        .replace("{question}", &probe.question)
        .replace("{gold}", &accepted)
        .replace("{answer}", answer);
    let request = LlmRequest {
        system_instruction: JUDGE_PROMPT.section("system").ok().map(str::to_string),
        contents: vec![history::user_text(&user)],
        params: GenerationParams { max_output_tokens: Some(16), temperature: Some(0.0), stop: Vec::new() },
        label: RequestLabel {
            prompt_id: format!("judge-{conversation}-{}", probe.id),
            role: "judge".into(),
            model_alias: None,
        },
    };
    Ok(parse_judge_score(&judge.generate(&request).await?.text))
}

/// The first standalone digit 0–5 of a judge's answer (`Score: 4`, `4/5`, `**3**`).
pub fn parse_judge_score(text: &str) -> Option<u8> {
    let chars: Vec<char> = text.chars().collect();
    chars.iter().enumerate().find_map(|(i, c)| {
        let standalone = (i == 0 || !(chars[i - 1].is_ascii_digit() || chars[i - 1] == '.'))
            && !chars.get(i + 1).is_some_and(|n| n.is_ascii_digit() || *n == '.');
        c.to_digit(10).filter(|d| *d <= 5 && standalone).map(|d| d as u8)
    })
}

#[async_trait::async_trait]
impl ReplayObserver for ProbeObserver {
    async fn after_event(
        &mut self,
        event_index: usize,
        event: &CompressionEvent,
        stored: &[Content],
        first_pass: Option<&[Content]>,
    ) {
        if let Some(inj) = &mut self.results.injection {
            if let (Some(summary), Some(planted), true) =
                (&event.final_summary, &self.injection, event.turn > inj.planted_at)
            {
                let treatment = inject::classify(summary, planted);
                inj.snapshots += 1;
                inj.obeyed_snapshots += (treatment == inject::Treatment::Obeyed) as u32;
                inj.flagged_snapshots += (treatment == inject::Treatment::QuotedAndFlagged) as u32;
                inj.final_obeyed = treatment == inject::Treatment::Obeyed;
            }
        }
        let replaced = matches!(
            event.status,
            crate::compress::CompressionStatus::Compressed | crate::compress::CompressionStatus::ContentTruncated
        );
        self.compressions += replaced as u32;
        let next_action = if self.options.next_action && replaced {
            self.next_action(event.turn, stored, event_index).await
        } else {
            None
        };
        if self.probes.is_empty() && next_action.is_none() {
            return;
        }
        let scores = self.score(stored, first_pass, event.turn, self.options.answer_at_events).await;
        if !scores.is_empty() || next_action.is_some() {
            self.results.checkpoints.push(Checkpoint {
                event: Some(event_index),
                turn: Some(event.turn),
                ordinal: self.recording.is_some().then_some(self.compressions),
                replaced,
                scores,
                next_action,
            });
        }
    }

    async fn at_end(&mut self, stored: &[Content]) {
        if let Some(inj) = &mut self.results.injection {
            inj.in_final_history = text_match::history_haystack(stored).contains(&inj.canary);
        }
        if self.probes.is_empty() {
            return;
        }
        let scores = self.score(stored, None, usize::MAX, true).await;
        let ordinal = self.recording.is_some().then_some(self.compressions);
        self.results.checkpoints.push(Checkpoint {
            event: None,
            turn: None,
            ordinal,
            replaced: false,
            scores,
            next_action: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_scores_parse() {
        assert_eq!(parse_judge_score("Score: 4"), Some(4));
        assert_eq!(parse_judge_score("**3**/5"), Some(3));
        assert_eq!(parse_judge_score("10 points, I'd say 2"), Some(2));
        assert_eq!(parse_judge_score("2.5"), None);
        assert_eq!(parse_judge_score("none"), None);
    }
}
