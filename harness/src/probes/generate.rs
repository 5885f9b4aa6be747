//! LLM-drafted probes for review: the model reads a rendering of the conversation and answers with a JSON
//! array; the answer is parsed leniently (code fences, prose around the array, bad elements skipped) and
//! each kept draft is checked against the conversation. Drafts are stored apart (`*.llm.json`).

use super::{text_match, Probe, ProbeFile, PROBE_FORMAT};
use crate::compress::prompts::PromptFile;
use crate::data::{ProbeKind, ProbeOrigin};
use crate::datasets::Conversation;
use crate::history;
use crate::llm::{GenerationParams, LanguageModel, LlmError, LlmRequest, RequestLabel};

pub const MAX_CONTENT_CHARS: usize = 1500;
pub const MAX_PROMPT_CHARS: usize = 60_000;

pub fn generator_prompt() -> PromptFile {
    PromptFile::parse("probe-generator", include_str!("../../../configs/prompts/probe-generator.txt"))
        .expect("probe generator prompt")
}

/// `[i] role: text` per Content, each clipped, the whole clipped to fit a prompt.
pub fn render_conversation(conv: &Conversation) -> String {
    let mut out = String::new();
    for (i, c) in conv.history.iter().enumerate() {
        let text = text_match::content_text(c);
        let clipped: String = text.chars().take(MAX_CONTENT_CHARS).collect();
        let line = format!("[{i}] {}: {}\n", history::role(c).unwrap_or("?"), clipped.trim());
        if out.len() + line.len() > MAX_PROMPT_CHARS {
            out.push_str("[…]\n");
            break;
        }
        out.push_str(&line);
    }
    out
}

/// Drafts kept and drafts dropped (with the reason), from a model's answer.
#[derive(Debug, Default)]
pub struct Drafts {
    pub probes: Vec<Probe>,
    pub rejected: Vec<String>,
}

/// The first JSON array in a text (inside a code fence or prose).
fn json_array(text: &str) -> Option<serde_json::Value> {
    let mut from = 0;
    while let Some(off) = text[from..].find('[') {
        let start = from + off;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
        if let Some(Ok(v @ serde_json::Value::Array(_))) = stream.next() {
            return Some(v);
        }
        from = start + 1;
    }
    None
}

/// Parses a generator answer into draft probes for `conv`.
pub fn parse_drafts(answer: &str, conv: &Conversation) -> Drafts {
    let mut drafts = Drafts::default();
    let Some(serde_json::Value::Array(items)) = json_array(answer) else {
        drafts.rejected.push("the answer holds no JSON array".into());
        return drafts;
    };
    let hay = text_match::history_haystack(&conv.history);
    let grader = super::grader::Grader::of_conversation(conv, &[]);
    for (i, item) in items.iter().enumerate() {
        let s = |k: &str| item.get(k).and_then(|v| v.as_str()).map(str::trim).unwrap_or("").to_string();
        let kind: Option<ProbeKind> = item.get("kind").and_then(|k| serde_json::from_value(k.clone()).ok());
        let (question, gold) = (s("question"), s("gold"));
        let accept: Vec<String> = item
            .get("accept")
            .and_then(|a| a.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let evidence: Vec<usize> = match item.get("evidence") {
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_u64().map(|n| n as usize)).collect(),
            Some(serde_json::Value::Number(n)) => n.as_u64().map(|n| vec![n as usize]).unwrap_or_default(),
            _ => Vec::new(),
        };
        let Some(kind) = kind else {
            drafts.rejected.push(format!("item {i}: kind missing or unknown"));
            continue;
        };
        let probe = Probe {
            id: format!("llm-{}", drafts.probes.len() + 1),
            conversation: conv.meta.id.clone(),
            kind,
            question,
            gold,
            accept,
            terms: Vec::new(),
            evidence,
            source: ProbeOrigin::Llm,
            note: None,
        };
        // The grader vets the draft as it will grade it: the answer must be found in the conversation by the
        // rule that scores the probe later, and not in the question alone.
        let matcher = grader.matcher(&probe);
        let reason = if probe.question.is_empty() || text_match::normalize(&probe.gold).is_empty() {
            Some("empty question or gold answer")
        } else if probe.evidence.is_empty() || probe.evidence.iter().any(|&e| e >= conv.history.len()) {
            Some("evidence missing or out of range")
        } else if grader.kept_one(&hay, &matcher).is_none() {
            Some("the grader does not find the gold answer in the conversation")
        } else if grader.kept_one(&text_match::Haystack::new(&probe.question), &matcher).is_some() {
            Some("the question gives the answer away")
        } else {
            None
        };
        match reason {
            None => drafts.probes.push(probe),
            Some(reason) => drafts.rejected.push(format!("item {i}: {reason}")),
        }
    }
    drafts
}

/// Asks `model` for drafts about `conv`.
pub async fn generate(model: &dyn LanguageModel, conv: &Conversation, max_probes: usize) -> Result<Drafts, LlmError> {
    let prompt = generator_prompt();
    let user = prompt
        .section("user")
        .map_err(|e| LlmError::Config(e.to_string()))?
        .replace("{max_probes}", &max_probes.to_string())
        .replace("{conversation}", &render_conversation(conv));
    let request = LlmRequest {
        system_instruction: prompt.section("system").ok().map(str::to_string),
        contents: vec![history::user_text(&user)],
        params: GenerationParams { max_output_tokens: Some(2048), temperature: Some(0.0), stop: Vec::new() },
        label: RequestLabel {
            prompt_id: format!("probe-generator-{}", conv.meta.id),
            role: "probe-generator".into(),
            model_alias: None,
        },
    };
    let answer = model.generate(&request).await?;
    Ok(parse_drafts(&answer.text, conv))
}

pub fn drafts_file(conv: &Conversation, probes: Vec<Probe>) -> ProbeFile {
    ProbeFile {
        format: PROBE_FORMAT.into(),
        conversation: conv.meta.id.clone(),
        dataset: conv.meta.source.clone(),
        probes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ScriptedModel;

    fn conv() -> Conversation {
        let mut c = Conversation::default();
        c.meta.id = "c".into();
        c.meta.source = "d".into();
        c.history = vec![
            history::user_text("Please fix the parser in src/parse.rs, and never touch the lexer."),
            history::model_text("I changed src/parse.rs because the loop was off by one."),
        ];
        c
    }

    #[tokio::test]
    async fn drafts_are_parsed_leniently_and_checked() {
        let answer = r#"Here are the probes:
```json
[
  {"kind": "artifact", "question": "Which file was fixed?", "gold": "./src/parse.rs", "evidence": [1]},
  {"kind": "constraint", "question": "What must not be touched?", "gold": "the lexer", "accept": ["lexer"], "evidence": 0},
  {"kind": "opinion", "question": "?", "gold": "x", "evidence": [0]},
  {"kind": "recall", "question": "What colour?", "gold": "purple", "evidence": [0]},
  {"kind": "recall", "question": "Was src/parse.rs changed?", "gold": "src/parse.rs", "evidence": [1]},
  {"kind": "decision", "question": "Why?", "gold": "off by one", "evidence": [7]}
]
```"#;
        let model = ScriptedModel::new([answer]);
        let drafts = generate(&model, &conv(), 5).await.unwrap();
        let golds: Vec<&str> = drafts.probes.iter().map(|p| p.gold.as_str()).collect();
        assert_eq!(golds, ["./src/parse.rs", "the lexer"]);
        assert!(drafts.probes.iter().all(|p| p.source == ProbeOrigin::Llm));
        assert_eq!(drafts.rejected.len(), 4, "{:?}", drafts.rejected);
        let req = &model.requests()[0];
        assert!(history::visible_text(&req.contents[0]).contains("[1] model: I changed src/parse.rs"));
        assert_eq!(req.label.role, "probe-generator");
        let none = parse_drafts("I cannot help with that.", &conv());
        assert!(none.probes.is_empty() && none.rejected[0].contains("no JSON array"));
    }
}
