//! Requests a provider would reject (issue #38): a request whose function calls and responses do not pair
//! up, whose roles do not alternate, that holds an empty part, or that does not fit the window.
//!
//! [`violations`] checks one request as it would be sent (the stored history with its pending turns; the
//! curated history, so same-role turns are merged and thoughts stripped before it sees them). Recorded
//! histories are not always valid themselves (an interrupted tool call without its result, a result kept
//! without its call), so the replay counts against a compressed request only what the compression
//! introduced: [`introduced`] takes away, kind by kind and call by call, the violations of the uncompressed
//! request at the same point.

use crate::history::{self, Content};
use crate::json::Value;
use serde::{Deserialize, Serialize};

/// What is wrong with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// A `functionCall` whose `functionResponse` is not in the Content right after the model Content
    /// holding it.
    MissingResponse,
    /// A `functionResponse` whose `functionCall` is not in the model Content right before it.
    OrphanResponse,
    /// The first Content is not the user's.
    FirstNotUser,
    /// A Content with the role of the Content before it (roles must alternate user/model).
    RepeatedRole,
    /// A role other than `user` or `model` (or none).
    UnknownRole,
    /// A Content without parts.
    EmptyContent,
    /// A text part whose text is empty.
    EmptyText,
    /// The request is larger than the window.
    OverWindow,
}

/// One violation: its kind, the index of the Content it is in (for [`ViolationKind::OverWindow`], the last
/// Content: the request as a whole), and for a call or response the call it names (its `id`, else its
/// `name`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Violation {
    pub kind: ViolationKind,
    pub content: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

impl Violation {
    fn at(kind: ViolationKind, content: usize) -> Violation {
        Violation { kind, content, call: None }
    }

    /// What identifies it across two versions of one request (Content indices differ between them).
    fn key(&self) -> (ViolationKind, Option<String>) {
        (self.kind, self.call.clone())
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = serde_json::to_value(self.kind).ok();
        let kind = kind.as_ref().and_then(|k| k.as_str()).unwrap_or("?");
        write!(f, "{kind} at Content {}", self.content)?;
        match &self.call {
            Some(call) => write!(f, " ({call})"),
            None => Ok(()),
        }
    }
}

/// A call or a response: its `id` (when it carries a non-empty one) and its `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CallRef {
    id: Option<String>,
    name: String,
}

impl CallRef {
    fn of(v: &Value) -> CallRef {
        let text = |key: &str| v.get(key).and_then(Value::as_js_str).map(|s| s.to_str_lossy().into_owned());
        CallRef { id: text("id").filter(|id| !id.is_empty()), name: text("name").unwrap_or_default() }
    }

    /// How a violation names it: the id, else the name.
    fn label(&self) -> String {
        self.id.clone().unwrap_or_else(|| self.name.clone())
    }
}

fn calls(c: &Content) -> Vec<CallRef> {
    history::parts(c).iter().filter_map(history::function_call).map(CallRef::of).collect()
}

fn responses(c: &Content) -> Vec<CallRef> {
    history::parts(c).iter().filter_map(history::function_response).map(CallRef::of).collect()
}

/// Pairs calls with responses: by `id` where both carry one, else by `name`, as multisets. Returns the
/// calls without a response and the responses without a call.
fn unpaired(calls: &[CallRef], responses: &[CallRef]) -> (Vec<usize>, Vec<usize>) {
    let mut answered = vec![false; calls.len()];
    let mut used = vec![false; responses.len()];
    let mut pair = |same: &dyn Fn(&CallRef, &CallRef) -> bool| {
        for (i, c) in calls.iter().enumerate() {
            if answered[i] {
                continue;
            }
            if let Some(j) = (0..responses.len()).find(|&j| !used[j] && same(c, &responses[j])) {
                answered[i] = true;
                used[j] = true;
            }
        }
    };
    pair(&|c, r| c.id.is_some() && c.id == r.id);
    pair(&|c, r| (c.id.is_none() || r.id.is_none()) && c.name == r.name);
    let left = |done: &[bool]| (0..done.len()).filter(|&i| !done[i]).collect();
    (left(&answered), left(&used))
}

/// A text part whose text is empty (and that carries nothing else a provider reads), or an image part
/// without bytes (a provider rejects an empty image as it rejects an empty text).
fn is_empty_text(p: &Value) -> bool {
    let empty_text = history::part_text(p).is_some_and(|t| t.is_empty())
        && history::function_call(p).is_none()
        && history::function_response(p).is_none();
    let empty_media = crate::tokens::images::is_media_part(p)
        && p.get("inlineData").and_then(|d| d.get("data")).and_then(Value::as_str).is_none_or(str::is_empty);
    empty_text || empty_media
}

/// Every violation of `request` (the Contents as sent), of `tokens` tokens, in a window of `token_limit`:
/// in Content order, the window last. Empty: a provider accepts it.
pub fn violations(request: &[Content], tokens: u64, token_limit: u64) -> Vec<Violation> {
    use ViolationKind::*;
    let mut out = Vec::new();
    for (i, c) in request.iter().enumerate() {
        let role = history::role(c);
        if !matches!(role, Some("user" | "model")) {
            out.push(Violation::at(UnknownRole, i));
        } else if i == 0 && role != Some("user") {
            out.push(Violation::at(FirstNotUser, i));
        }
        if i > 0 && role == history::role(&request[i - 1]) {
            out.push(Violation::at(RepeatedRole, i));
        }
        let parts = history::parts(c);
        if parts.is_empty() {
            out.push(Violation::at(EmptyContent, i));
        }
        out.extend(parts.iter().filter(|p| is_empty_text(p)).map(|_| Violation::at(EmptyText, i)));
        // Responses pair with the calls of the model Content right before.
        let answers = responses(c);
        if !answers.is_empty() {
            let asked = match i.checked_sub(1).map(|j| &request[j]) {
                Some(prev) if history::is_model(prev) => calls(prev),
                _ => Vec::new(),
            };
            let (_, orphans) = unpaired(&asked, &answers);
            out.extend(
                orphans
                    .into_iter()
                    .map(|j| Violation { call: Some(answers[j].label()), ..Violation::at(OrphanResponse, i) }),
            );
        }
        // Calls pair with the responses of the Content right after (a user one).
        if history::is_model(c) {
            let asked = calls(c);
            if !asked.is_empty() {
                let answers = match request.get(i + 1) {
                    Some(next) if history::is_user(next) => responses(next),
                    _ => Vec::new(),
                };
                let (missing, _) = unpaired(&asked, &answers);
                out.extend(
                    missing
                        .into_iter()
                        .map(|j| Violation { call: Some(asked[j].label()), ..Violation::at(MissingResponse, i) }),
                );
            }
        }
    }
    if tokens > token_limit {
        out.push(Violation::at(OverWindow, request.len().saturating_sub(1)));
    }
    out
}

/// The violations of `after` that `before` (the same request without compression) does not have: matched
/// by kind and call (not by Content index, which compression shifts), as multisets, so a violation the
/// recorded history already had is not the compression's doing however far it moved.
pub fn introduced(after: Vec<Violation>, before: &[Violation]) -> Vec<Violation> {
    let mut already: std::collections::HashMap<(ViolationKind, Option<String>), usize> = Default::default();
    for v in before {
        *already.entry(v.key()).or_default() += 1;
    }
    let mut new = Vec::new();
    for v in after {
        match already.get_mut(&v.key()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => new.push(v),
        }
    }
    new
}

/// The recorded history as the uncompressed replay sends it (curated: thoughts stripped, same roles
/// merged, as the stored history keeps it), built only as far as asked: the request without compression at
/// any point of the replay, to tell what a compression introduced from what the recording already had.
pub(super) struct AsRecorded<'a> {
    recorded: &'a [Content],
    contents: Vec<Content>,
    appended: usize,
}

impl<'a> AsRecorded<'a> {
    /// `env`: the environment text the replay sends first, if any.
    pub(super) fn new(recorded: &'a [Content], env: Option<&str>) -> Self {
        let mut u = AsRecorded { recorded, contents: Vec::new(), appended: 0 };
        if let Some(env) = env {
            u.push(history::user_text(env));
        }
        u
    }

    fn push(&mut self, mut c: Content) {
        if !crate::compress::curated::strip_thoughts(&mut c) {
            return;
        }
        if let Some(last) = self.contents.last_mut() {
            if crate::compress::curated::coalesce_into(last, &c) {
                return;
            }
        }
        self.contents.push(c);
    }

    /// The request for recorded model turn `turn` (every recorded Content before it). Turns are asked in
    /// order.
    pub(super) fn request(&mut self, turn: usize) -> &[Content] {
        let end = turn.min(self.recorded.len());
        while self.appended < end {
            self.push(self.recorded[self.appended].clone());
            self.appended += 1;
        }
        &self.contents
    }
}

#[cfg(test)]
mod tests {
    use super::ViolationKind::*;
    use super::*;
    use crate::json::parse_str;
    use proptest::prelude::*;

    fn content(json: &str) -> Content {
        parse_str(json).unwrap()
    }

    fn user(text: &str) -> Content {
        history::user_text(text)
    }

    fn model(text: &str) -> Content {
        history::model_text(text)
    }

    fn call(name: &str, id: Option<&str>) -> Value {
        let id = id.map(|i| format!(r#","id":"{i}""#)).unwrap_or_default();
        parse_str(&format!(r#"{{"functionCall":{{"name":"{name}","args":{{}}{id}}}}}"#)).unwrap()
    }

    fn response(name: &str, id: Option<&str>) -> Value {
        let id = id.map(|i| format!(r#","id":"{i}""#)).unwrap_or_default();
        parse_str(&format!(r#"{{"functionResponse":{{"name":"{name}","response":{{"output":"ok"}}{id}}}}}"#)).unwrap()
    }

    fn with_parts(role: &str, parts: Vec<Value>) -> Content {
        Value::object([("role", Value::str(role)), ("parts", Value::Array(parts))])
    }

    fn kinds(v: &[Violation]) -> Vec<(ViolationKind, usize, Option<&str>)> {
        v.iter().map(|v| (v.kind, v.content, v.call.as_deref())).collect()
    }

    /// A task, a model turn with two parallel calls (ids), their responses, a call by name only, its response,
    /// and a final answer: valid.
    fn valid() -> Vec<Content> {
        vec![
            user("fix the bug"),
            with_parts("model", vec![history::text_part("looking"), call("read", Some("a")), call("grep", Some("b"))]),
            with_parts("user", vec![response("grep", Some("b")), response("read", Some("a"))]),
            with_parts("model", vec![call("edit", None)]),
            with_parts("user", vec![response("edit", None)]),
            model("done"),
            user("thanks"),
        ]
    }

    #[test]
    fn a_valid_request_has_no_violation() {
        assert_eq!(violations(&valid(), 100, 100), []);
    }

    #[test]
    fn calls_pair_with_responses_by_id_else_by_name() {
        // Without the model Content holding the calls, both responses are orphans; the user turns repeat.
        let mut h = valid();
        h.remove(1);
        assert_eq!(
            kinds(&violations(&h, 0, 1)),
            [(RepeatedRole, 1, None), (OrphanResponse, 1, Some("b")), (OrphanResponse, 1, Some("a"))]
        );
        // Without the responses, both calls are missing theirs.
        let mut h = valid();
        h.remove(2);
        let v = violations(&h, 0, 1);
        assert_eq!(
            kinds(&v),
            [(MissingResponse, 1, Some("a")), (MissingResponse, 1, Some("b")), (RepeatedRole, 2, None)]
        );
        // Ids that differ do not pair by name; a response without an id pairs with a call that has one.
        let h = vec![
            user("go"),
            with_parts("model", vec![call("read", Some("a")), call("read", Some("c"))]),
            with_parts("user", vec![response("read", Some("x")), response("read", None)]),
        ];
        assert_eq!(kinds(&violations(&h, 0, 1)), [(MissingResponse, 1, Some("c")), (OrphanResponse, 2, Some("x"))]);
        // By name, as multisets: two calls of one tool need two responses.
        let h = vec![
            user("go"),
            with_parts("model", vec![call("ls", None), call("ls", None)]),
            with_parts("user", vec![response("ls", None)]),
        ];
        assert_eq!(kinds(&violations(&h, 0, 1)), [(MissingResponse, 1, Some("ls"))]);
        // A call the request ends with has no response.
        let h = vec![user("go"), with_parts("model", vec![call("ls", None)])];
        assert_eq!(kinds(&violations(&h, 0, 1)), [(MissingResponse, 1, Some("ls"))]);
        // Responses two Contents after their calls are not where a provider looks.
        let h = vec![
            user("go"),
            with_parts("model", vec![call("ls", Some("a"))]),
            user("wait"),
            with_parts("model", vec![history::text_part("ok")]),
            with_parts("user", vec![response("ls", Some("a"))]),
        ];
        assert_eq!(kinds(&violations(&h, 0, 1)), [(MissingResponse, 1, Some("a")), (OrphanResponse, 4, Some("a"))]);
    }

    #[test]
    fn roles_alternate_from_the_user_and_no_part_is_empty() {
        let h = vec![
            model("I start"),
            user("hi"),
            content(r#"{"role":"system","parts":[{"text":"x"}]}"#),
            content(r#"{"role":"model","parts":[]}"#),
            content(r#"{"role":"user"}"#),
            content(r#"{"role":"model","parts":[{"text":""},{"text":"","functionCall":{"name":"ls"}}]}"#),
            user("ok"),
        ];
        assert_eq!(
            kinds(&violations(&h, 10, 9)),
            [
                (FirstNotUser, 0, None),
                (UnknownRole, 2, None),
                (EmptyContent, 3, None),
                (EmptyContent, 4, None),
                (EmptyText, 5, None),
                (MissingResponse, 5, Some("ls")),
                (OverWindow, 6, None),
            ]
        );
        assert_eq!(violations(&[], 0, 0), []);
    }

    #[test]
    fn only_what_the_compression_introduced_counts() {
        let v = |kind, content, call: Option<&str>| Violation { kind, content, call: call.map(String::from) };
        // The recording already had an orphan result for call `a` and one empty text: moved, they are not new.
        let before = [v(OrphanResponse, 9, Some("a")), v(EmptyText, 4, None)];
        let after = vec![v(OrphanResponse, 2, Some("a")), v(OrphanResponse, 2, Some("b")), v(EmptyText, 1, None)];
        assert_eq!(introduced(after, &before), [v(OrphanResponse, 2, Some("b"))]);
        // As multisets: a second empty text is new.
        let after = vec![v(EmptyText, 1, None), v(EmptyText, 3, None)];
        assert_eq!(introduced(after, &before), [v(EmptyText, 3, None)]);
        assert_eq!(introduced(Vec::new(), &before), []);
    }

    #[test]
    fn violations_are_stored_compactly() {
        let v = Violation { kind: OrphanResponse, content: 3, call: Some("toolu_1".into()) };
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text, r#"{"kind":"orphan_response","content":3,"call":"toolu_1"}"#);
        assert_eq!(serde_json::from_str::<Violation>(&text).unwrap(), v);
        let w = Violation::at(OverWindow, 7);
        assert_eq!(serde_json::to_string(&w).unwrap(), r#"{"kind":"over_window","content":7}"#);
        assert_eq!(v.to_string(), "orphan_response at Content 3 (toolu_1)");
    }

    /// Rewrites the stored history at every request from the second on: `drop_calls` takes out the model
    /// Contents holding function calls (keeping their responses), else it returns the history unchanged.
    struct Rewrite {
        drop_calls: bool,
    }

    #[async_trait::async_trait]
    impl crate::replay::strategy::CompressorSession for Rewrite {
        async fn before_request(
            &mut self,
            turn: crate::replay::strategy::TurnInput<'_>,
            _: &dyn crate::llm::LanguageModel,
        ) -> Result<crate::replay::strategy::TurnOutcome, crate::replay::strategy::StrategyError> {
            let orig = turn.last_prompt_tokens;
            if turn.stored.len() < 3 {
                return Ok(crate::replay::strategy::TurnOutcome::noop(orig));
            }
            let kept: Vec<Content> =
                turn.stored.iter().filter(|c| !(self.drop_calls && history::has_function_call(c))).cloned().collect();
            let status = crate::compress::CompressionStatus::Compressed;
            Ok(crate::replay::strategy::TurnOutcome::replaced(orig, orig, status, kept))
        }
    }

    impl crate::replay::strategy::Compressor for Rewrite {
        fn start(
            &self,
            _: crate::replay::strategy::SessionContext<'_>,
        ) -> Box<dyn crate::replay::strategy::CompressorSession> {
            Box::new(Rewrite { drop_calls: self.drop_calls })
        }
    }

    fn replay_with(h: &[Content], drop_calls: bool) -> crate::replay::results::ConversationResult {
        let compressor = Rewrite { drop_calls };
        let settings = crate::replay::settings::ReplaySettings::default();
        let llm = crate::llm::ScriptedModel::new(["unused"]);
        let input = crate::replay::input::ReplayInput::history("t", h);
        futures::executor::block_on(crate::replay::run::replay(input, &compressor, &settings, &llm))
    }

    /// The replay checks the request after every change of the history against the same request without
    /// compression: an interrupted call the recording holds is not counted; responses orphaned by the
    /// compressor are, on the event and in the conversation's count.
    #[test]
    fn the_replay_counts_only_what_the_compression_broke() {
        let mut h = valid();
        // The agent was interrupted: a call without its response, then the user's next message.
        h.extend([with_parts("model", vec![call("deploy", Some("z"))]), user("stop that"), model("stopped")]);
        let same = replay_with(&h, false);
        assert_eq!(same.error, None);
        assert!(same.events.len() >= 3, "{:?}", same.events_by_status);
        assert_eq!(same.invalid_requests, 0);
        assert!(same.events.iter().all(|e| e.request_violations.is_empty()));
        // Without the calls, every request after a change has orphaned responses.
        let broken = replay_with(&h, true);
        let flagged: Vec<_> = broken.events.iter().filter(|e| !e.request_violations.is_empty()).collect();
        assert_eq!(broken.invalid_requests, flagged.len() as u64);
        assert!(!flagged.is_empty());
        let all: Vec<&Violation> = flagged.iter().flat_map(|e| &e.request_violations).collect();
        assert!(all.iter().any(|v| v.kind == OrphanResponse && v.call.as_deref() == Some("a")), "{all:?}");
        // The interrupted call is gone with its model Content, and was the recording's anyway.
        assert!(all.iter().all(|v| v.call.as_deref() != Some("z")), "{all:?}");
        // Valid results keep their stored form: neither field is written.
        let text = serde_json::to_string(&same).unwrap();
        assert!(!text.contains("invalid_requests") && !text.contains("request_violations"), "{text}");
        let text = serde_json::to_string(&broken).unwrap();
        assert!(text.contains("\"invalid_requests\":") && text.contains("\"request_violations\":[{\"kind\":"));
    }

    /// One step of an agent: a model turn, with text and/or calls (with ids or by name), then the user turn
    /// answering every call (in any order) or, without calls, the user's next message.
    /// Whether the model also writes text, its calls (name, with an id), whether the responses come reversed.
    type Step = (bool, Vec<(String, bool)>, bool);

    fn step() -> impl Strategy<Value = Step> {
        let calls = prop::collection::vec(("[a-c]", any::<bool>()), 0..4);
        (any::<bool>(), calls, any::<bool>())
    }

    fn history_of(steps: &[Step]) -> Vec<Content> {
        let mut h = vec![user("the task")];
        for (k, (text, step_calls, reversed)) in steps.iter().enumerate() {
            let mut parts = Vec::new();
            if *text || step_calls.is_empty() {
                parts.push(history::text_part("thinking aloud"));
            }
            let id = |j: usize, with_id: bool| with_id.then(|| format!("call-{k}-{j}"));
            parts.extend(
                step_calls.iter().enumerate().map(|(j, (name, with_id))| call(name, id(j, *with_id).as_deref())),
            );
            h.push(with_parts("model", parts));
            if step_calls.is_empty() {
                h.push(user("go on"));
            } else {
                let mut answers: Vec<Value> = step_calls
                    .iter()
                    .enumerate()
                    .map(|(j, (name, with_id))| response(name, id(j, *with_id).as_deref()))
                    .collect();
                if *reversed {
                    answers.reverse();
                }
                h.push(with_parts("user", answers));
            }
        }
        h
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Histories shaped like recorded ones are valid; taking out a model Content that holds calls leaves
        /// their responses orphaned.
        #[test]
        fn a_recorded_shape_is_valid_and_dropping_calls_breaks_it(
            steps in prop::collection::vec(step(), 1..8),
            pick in any::<prop::sample::Index>(),
        ) {
            let h = history_of(&steps);
            prop_assert_eq!(violations(&h, 1, 1), vec![]);
            let with_calls: Vec<usize> = (0..h.len()).filter(|&i| history::has_function_call(&h[i])).collect();
            if !with_calls.is_empty() {
                let i = with_calls[pick.index(with_calls.len())];
                let mut broken = h.clone();
                broken.remove(i);
                let v = violations(&broken, 1, 1);
                prop_assert!(v.iter().any(|v| v.kind == OrphanResponse && v.content == i), "{:?}", v);
                // None of it was in the recording.
                prop_assert_eq!(introduced(v.clone(), &violations(&h, 1, 1)), v);
            }
        }
    }
}
