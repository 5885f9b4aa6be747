//! The upstream test cases of `../shared/spec/gemini-cli-test-cases.md`, as vectors (section numbers refer
//! to that file). Values marked [oracle] there are asserted exactly.

use compactbench::compress::callers::{overflow_check, Caller, CallerKind, HistoryUpdate, Latch, OverflowGuard};
use compactbench::compress::truncate::{truncate_history_to_budget, TruncationSettings, TruncationVariant};
use compactbench::compress::{
    compress, find_compress_split_point, CompressEnv, CompressOutcome, CompressRequest, CompressSettings,
    CompressionInfo, CompressionStatus, MemoryToolOutputStore,
};
use compactbench::history::{self, model_text as m, user_text as u, Content};
use compactbench::json::{self, parse_str, Value};
use compactbench::llm::ScriptedModel;
use compactbench::tokens::{estimate_parts, Estimator};

fn fr(name: &str, resp: Value) -> Content {
    Value::object([
        ("role", Value::str("user")),
        (
            "parts",
            Value::Array(vec![Value::object([(
                "functionResponse",
                Value::object([("name", Value::str(name)), ("response", resp)]),
            )])]),
        ),
    ])
}

fn fc(name: &str) -> Content {
    parse_str(&format!(r#"{{"role":"model","parts":[{{"functionCall":{{"name":"{name}","args":{{}}}}}}]}}"#)).unwrap()
}

fn obj(key: &str, s: String) -> Value {
    Value::object([(key, Value::from(s))])
}

fn five() -> Vec<Content> {
    vec![
        u("This is the first message."),
        m("This is the second message."),
        u("This is the third message."),
        m("This is the fourth message."),
        u("This is the fifth message."),
    ]
}

fn parts(j: &str) -> Vec<Value> {
    parse_str(j).unwrap().as_array().unwrap().to_vec()
}

// chatCompressionService.test.ts: findCompressSplitPoint
#[test]
fn split_point_cases() {
    assert_eq!(find_compress_split_point(&[], 0.0).unwrap_err().to_string(), "Fraction must be between 0 and 1");
    assert!(find_compress_split_point(&[], 1.0).is_err());
    assert_eq!(find_compress_split_point(&[], 0.5).unwrap(), 0);
    let sizes: Vec<usize> = five().iter().map(json::jslen).collect();
    assert_eq!(sizes, [63, 65, 63, 65, 63]);
    assert_eq!(find_compress_split_point(&five(), 0.5).unwrap(), 4);
    assert_eq!(find_compress_split_point(&five(), 0.9).unwrap(), 4);
    assert_eq!(find_compress_split_point(&five()[..4], 0.8).unwrap(), 4);
    let mut with_call = five()[..3].to_vec();
    with_call.push(fc("foo"));
    assert_eq!(find_compress_split_point(&with_call, 0.99).unwrap(), 2);
    assert_eq!(find_compress_split_point(&[u("Message 1")], 0.5).unwrap(), 0);
    let media = vec![
        u("Message 1"),
        parse_str(r#"{"role":"model","parts":[{"fileData":{"fileUri":"derp","mimeType":"text/plain"}}]}"#).unwrap(),
        u("Message 2"),
    ];
    assert_eq!(media.iter().map(json::jslen).collect::<Vec<_>>(), [46, 82, 46]);
    assert_eq!(find_compress_split_point(&media, 0.5).unwrap(), 2);
}

// Extra split vectors (original code run on these inputs)
#[test]
fn split_point_extra_vectors() {
    let h = vec![u(&"a".repeat(100)), m("b"), fc("ls"), fr("ls", obj("output", "x".into()))];
    assert_eq!(find_compress_split_point(&h, 0.7).unwrap(), 0);
    assert_eq!(find_compress_split_point(&[m("x"), m("y")], 0.7).unwrap(), 2);
    let no_parts = parse_str(r#"[{"role":"user"},{"role":"model","parts":[{"text":"PLACEHOLDER"}]},{"role":"user"},{"role":"model","parts":[{"text":"z"}]}]"#)
        .unwrap();
    let mut no_parts = no_parts.as_array().unwrap().to_vec();
    no_parts[1] = m(&"y".repeat(100));
    assert_eq!(find_compress_split_point(&no_parts, 0.7).unwrap(), 2);
    let mixed = vec![
        u(&"a".repeat(50)),
        m(&"b".repeat(50)),
        parse_str(r#"{"role":"user","parts":[{"text":"q"},{"functionResponse":{"name":"ls","response":{}}}]}"#)
            .unwrap(),
        fc("ls"),
    ];
    assert_eq!(find_compress_split_point(&mixed, 0.7).unwrap(), 0);
    // Two user turns of jslen 140 and 60: cum 140 >= 140 (equality counts).
    let a = u(&"a".repeat(140 - 37));
    let b = u(&"b".repeat(60 - 37));
    assert_eq!((json::jslen(&a), json::jslen(&b)), (140, 60));
    assert_eq!(find_compress_split_point(&[a, b], 0.7).unwrap(), 1);
}

/// The shared fixture of chatCompressionService.test.ts's `compress` tests: `tokenLimit` mocked to `undefined`
/// (threshold never blocks, high-fidelity check `x < NaN` fails), `getInitialChatHistory` returns `[...extra]`,
/// truncation threshold 40000.
fn fixture() -> CompressSettings {
    CompressSettings {
        model: "gemini-2.5-pro".into(),
        token_limit: Some(0),
        tool_output_chars_limit: Some(40_000),
        approved_plan_path: Some("/path/to/plan.md".into()),
        env_text: None,
        ..CompressSettings::default()
    }
}

fn with_limit(limit: u64) -> CompressSettings {
    CompressSettings { token_limit: Some(limit), ..fixture() }
}

struct Run {
    out: CompressOutcome,
    llm: ScriptedModel,
    store: MemoryToolOutputStore,
}

const TMP: &str = "/tmp/chat-compression-test-abcdef";

async fn run(history: &[Content], orig: u64, force: bool, settings: &CompressSettings, answers: &[&str]) -> Run {
    run_with_store(history, orig, force, settings, answers, MemoryToolOutputStore::new(TMP)).await
}

async fn run_with_store(
    history: &[Content],
    orig: u64,
    force: bool,
    settings: &CompressSettings,
    answers: &[&str],
    mut store: MemoryToolOutputStore,
) -> Run {
    let llm = ScriptedModel::new(answers.iter().copied());
    let req = CompressRequest {
        prompt_id: "test-prompt".into(),
        force,
        has_failed: false,
        last_prompt_tokens: orig,
        ui_last_prompt_tokens: orig,
    };
    let mut ids = 0;
    let mut env = CompressEnv { next_truncation_id: &mut ids, tool_outputs: &mut store };
    let out = compress(history, &req, settings, &mut env, &llm).await.unwrap();
    Run { out, llm, store }
}

fn info(o: u64, n: u64, s: CompressionStatus) -> CompressionInfo {
    CompressionInfo { original_token_count: o, new_token_count: n, compression_status: s }
}

const SUMMARIES: [&str; 2] = ["Initial Summary", "Verified Summary"];

fn msgs4() -> Vec<Content> {
    vec![u("msg1"), m("msg2"), u("msg3"), m("msg4")]
}

#[tokio::test]
async fn compress_cases_1_to_11() {
    use CompressionStatus::*;
    // 1: empty history.
    let r = run(&[], 500, false, &fixture(), &SUMMARIES).await;
    assert_eq!((r.out.info, r.out.new_history.is_none()), (info(0, 0, Noop), true));
    // 2: one user turn: split 0 → NOOP.
    let r = run(&[u("hi")], 500, false, &fixture(), &SUMMARIES).await;
    assert_eq!(r.out.info, info(500, 500, Noop));
    // 3: below threshold 0.7 × 1000.
    let s = CompressSettings { threshold: Some(0.7), ..with_limit(1000) };
    let r = run(&[u("hi")], 600, false, &s, &SUMMARIES).await;
    assert_eq!(r.out.info, info(600, 600, Noop));
    // 4: compress everything, verified summary wins, exactly two calls.
    let r = run(&msgs4(), 600_000, false, &fixture(), &SUMMARIES).await;
    assert_eq!(r.out.info, info(600_000, 14, Compressed));
    assert_eq!(
        r.out.new_history.unwrap(),
        vec![u("Verified Summary"), m("Got it. Thanks for the additional context!")]
    );
    assert_eq!(r.llm.requests().len(), 2);
    // 5: blank verification falls back to the first summary.
    let r = run(&msgs4()[..2], 600_000, false, &fixture(), &["Initial Summary", "   "]).await;
    assert_eq!(r.out.info, info(600_000, 14, Compressed));
    assert_eq!(history::visible_text(&r.out.new_history.unwrap()[0]), "Initial Summary");
    // 6: a previous snapshot anchors the instruction.
    let h = vec![u("<state_snapshot>old</state_snapshot>"), m("msg2"), u("msg3"), m("msg4")];
    let r = run(&h, 800, false, &with_limit(1000), &SUMMARIES).await;
    let first = &r.llm.requests()[0];
    assert_eq!(first.contents.len(), 5);
    assert!(history::visible_text(first.contents.last().unwrap()).contains("A previous <state_snapshot> exists"));
    // 7: modern active model + plan path → plan block.
    let s = CompressSettings {
        approved_plan_path: Some("/custom/plan/path.md".into()),
        active_model: Some("gemini-3.1-pro-preview".into()),
        ..fixture()
    };
    let r = run(&msgs4()[..2], 600_000, false, &s, &SUMMARIES).await;
    let sys = r.llm.requests()[0].system_instruction.clone().unwrap();
    assert!(sys.contains("### APPROVED PLAN PRESERVATION") && sys.contains("/custom/plan/path.md"));
    // 8: no plan path → no block.
    let s =
        CompressSettings { approved_plan_path: None, active_model: Some("gemini-3.1-pro-preview".into()), ..fixture() };
    let r = run(&msgs4()[..2], 600_000, false, &s, &SUMMARIES).await;
    assert!(!r.llm.requests()[0].system_instruction.clone().unwrap().contains("### APPROVED PLAN PRESERVATION"));
    // 9: forced below threshold.
    let r = run(&msgs4(), 100, true, &fixture(), &SUMMARIES).await;
    assert_eq!(r.out.info, info(100, 14, Compressed));
    // 10: inflation. Upstream stubs the new count to 10000; unstubbed, 1000 'a' + the ack give 260 > 100.
    let long = "a".repeat(1000);
    let r = run(&msgs4()[..2], 100, true, &fixture(), &[&long]).await;
    assert_eq!(r.out.info, info(100, 260, FailedInflatedTokenCount));
    assert!(r.out.new_history.is_none());
    // 11: blank answers → empty summary.
    let r = run(&msgs4()[..2], 800, false, &with_limit(1000), &["   "]).await;
    assert_eq!(r.out.info, info(800, 800, FailedEmptySummary));
}

fn response_of(c: &Content) -> &Value {
    history::parts(c)[0].get("functionResponse").unwrap().get("response").unwrap()
}

#[tokio::test]
async fn reverse_token_budget_cases_12_to_17() {
    use CompressionStatus::*;
    let a170 = "a".repeat(170_000);
    // 12: the older grep is truncated and saved; the newest is untouched.
    let h = vec![
        u("old msg"),
        m("old resp"),
        u("msg 1"),
        fr("grep", obj("content", a170.clone())),
        m("resp 2"),
        fr("grep", obj("content", a170.clone())),
    ];
    let s = CompressSettings { threshold: Some(0.5), ..fixture() };
    let r = run(&h, 600_000, true, &s, &SUMMARIES).await;
    assert_eq!(r.out.info.compression_status, Compressed);
    assert_eq!(r.out.trace.split_point, Some(2));
    let nh = r.out.new_history.unwrap();
    assert_eq!(nh.len(), 6);
    let older = response_of(&nh[2 + 1]).get("output").and_then(Value::as_str).unwrap();
    assert!(older.contains("Output too large."));
    assert!(response_of(&nh[2 + 3]).get("content").is_some());
    assert_eq!(r.store.files.keys().collect::<Vec<_>>(), ["tool-outputs/grep_1.txt"]);
    // With a temp-dir path as long as the oracle's, the new count is the oracle's.
    assert_eq!(r.out.info.new_token_count, 52573);

    // 13: two shell outputs; the kept short one carries the 8,000/32,000 placeholder.
    let mut h: Vec<Content> = (1..=3).flat_map(|i| [u(&format!("old msg {i}")), m(&format!("old resp {i}"))]).collect();
    h.push(u("msg 1"));
    h.push(fr("shell", obj("output", a170.clone())));
    h.push(fr("shell", obj("output", a170.clone())));
    let r = run(&h, 600_000, true, &s, &SUMMARIES).await;
    let nh = r.out.new_history.unwrap();
    assert_eq!(nh.len() - 2, 3);
    let placeholder = nh
        .iter()
        .filter(|c| history::has_function_response(c))
        .filter_map(|c| response_of(c).get("output").and_then(Value::as_js_str))
        .find(|o| o.len16() < 100_000)
        .unwrap()
        .clone();
    assert!(placeholder.to_string().contains("Showing first 8,000 and last 32,000 characters"));
    assert_eq!(placeholder.len16(), 40186);
    assert!(r.store.files.contains_key("tool-outputs/shell_1.txt"));

    // 14: raw_tool with `content`.
    let mut h: Vec<Content> = (1..=2).flat_map(|i| [u(&format!("old msg {i}")), m(&format!("old resp {i}"))]).collect();
    h.push(u("msg 1"));
    let c170 = "c".repeat(170_000);
    h.push(fr("raw_tool", obj("content", c170.clone())));
    h.push(fr("raw_tool", obj("content", c170)));
    let r = run(&h, 600_000, true, &s, &SUMMARIES).await;
    let nh = r.out.new_history.unwrap();
    assert_eq!(nh.len() - 2, 3);
    let out = response_of(&nh[3]).get("output").and_then(Value::as_js_str).unwrap();
    assert_eq!(out.len16(), 40189);

    // 15: the save fails ("Disk Full"): the original part is kept.
    let d170 = "d".repeat(170_000);
    let mut h15 = h[..5].to_vec();
    h15.push(fr("grep", obj("content", d170.clone())));
    h15.push(fr("grep", obj("content", d170.clone())));
    let mut failing = MemoryToolOutputStore::new(TMP);
    failing.fail_with = Some("Disk Full".into());
    let r = run_with_store(&h15, 600_000, true, &s, &SUMMARIES, failing).await;
    assert_eq!(r.out.info, info(600_000, 85024, Compressed));
    let nh = r.out.new_history.unwrap();
    assert_eq!(nh.len() - 2, 3);
    assert_eq!(response_of(&nh[3]), &obj("content", d170));

    // 16: the summarizer gets the original head; the kept massive output is truncated.
    let a300 = "a".repeat(300_000);
    let h = vec![
        fr("grep", obj("content", a300.clone())),
        u("msg 2"),
        m("resp 2"),
        u("preserved msg"),
        fr("massive_preserved", obj("content", a300.clone())),
    ];
    let r = run(&h, 600_000, true, &with_limit(1_000_000), &SUMMARIES).await;
    assert_eq!(r.out.info, info(600_000, 10076, Compressed));
    assert_eq!(r.out.trace.split_point, Some(3));
    let req0 = &r.llm.requests()[0];
    assert_eq!(req0.contents.len(), 4);
    assert_eq!(response_of(&req0.contents[0]), &obj("content", a300));
    let nh = r.out.new_history.unwrap();
    assert_eq!(nh.len() - 2, 2);
    assert!(response_of(&nh[3]).get("output").and_then(Value::as_str).unwrap().contains("Output too large."));

    // 17: the original head does not fit the window: the truncated head is sent.
    let h = vec![fr("grep", obj("content", "a".repeat(5_000_000))), u("msg 2"), m("resp 2")];
    let r = run(&h, 500, true, &with_limit(1_000_000), &SUMMARIES).await;
    assert_eq!(r.out.info, info(500, 17, Compressed));
    assert_eq!(r.out.trace.split_point, Some(1));
    let req0 = &r.llm.requests()[0];
    assert_eq!(req0.contents.len(), 2);
    assert!(response_of(&req0.contents[0])
        .get("output")
        .and_then(Value::as_str)
        .unwrap()
        .contains("Output too large."));
    assert_eq!(r.out.new_history.unwrap().len(), 4);
}

// tokenCalculation.test.ts (the countTokens API cases use the offline fallback: media → fixed estimates)
#[test]
fn token_calculation_cases() {
    let est = |j: &str| estimate_parts(parts(j).iter(), 4.0);
    assert_eq!(est(r#"[{"functionCall":{"name":"foo","args":{"bar":"baz"}}}]"#), 13);
    assert_eq!(est(r#"[{"text":"Hello world!"}]"#), 3);
    assert_eq!(est(r#"[{"text":"你好"}]"#), 3);
    assert_eq!(est(r#"[{"text":"Hi你好"}]"#), 3);
    assert_eq!(est(r#"[{"text":""}]"#), 0);
    assert_eq!(est(r#"[{"text":"Hello"},{"inlineData":{"mimeType":"image/png","data":"data"}}]"#), 3001);
    assert_eq!(est(r#"[{"inlineData":{"mimeType":"image/png","data":"large_data"}}]"#), 3000);
    assert_eq!(est(r#"[{"inlineData":{"mimeType":"application/pdf","data":"large_pdf_data"}}]"#), 25800);
    let a200k = format!(r#"[{{"text":"{}"}}]"#, "a".repeat(200_000));
    assert_eq!(est(&a200k), 50000);
    let my_tool = format!(
        r#"[{{"functionResponse":{{"name":"my_tool","id":"123","response":{{"output":"{}"}}}}}}]"#,
        "result".repeat(1000)
    );
    assert_eq!(est(&my_tool), 1505);
    assert_eq!(
        est(
            r#"[{"functionResponse":{"name":"multimodal_tool","id":"456","response":{"status":"success"},"parts":[{"inlineData":{"mimeType":"image/png","data":"base64..."}},{"text":"Look at this image"}]}}]"#
        ),
        3012
    );
    // Nested five levels deep: d0–d3 counted, d4 dropped.
    let mut nested = r#"{"functionResponse":{"name":"d4","response":{"val":"a"}}}"#.to_string();
    for d in (0..4).rev() {
        nested = format!(r#"{{"functionResponse":{{"name":"d{d}","response":{{"val":"a"}},"parts":[{nested}]}}}}"#);
    }
    assert_eq!(est(&format!("[{nested}]")), 12);
    let abc = parts(r#"[{"text":"abcdefghijkl"}]"#);
    assert_eq!(
        (estimate_parts(abc.iter(), 4.0), estimate_parts(abc.iter(), 3.0), estimate_parts(abc.iter(), 2.0)),
        (3, 4, 6)
    );
    let a120k = parts(&format!(r#"[{{"text":"{}"}}]"#, "a".repeat(120_000)));
    assert_eq!((estimate_parts(a120k.iter(), 4.0), estimate_parts(a120k.iter(), 3.0)), (30000, 40000));
    assert_eq!(est("[]"), 0);
    assert_eq!(est("[{}]"), 0);
}

// Extra estimator vectors (original code run on these inputs)
#[test]
fn estimator_extra_vectors() {
    let est = |j: &str| estimate_parts(parts(j).iter(), 4.0);
    assert_eq!(est(r#"[{"text":"😀"}]"#), 3);
    assert_eq!(est(r#"[{"text":"é"}]"#), 1);
    assert_eq!(est(r#"[{"text":"abcdefgh","thought":true}]"#), 2);
    let rep = |c: &str, n: usize| format!(r#"[{{"text":"{}"}}]"#, c.repeat(n));
    assert_eq!((est(&rep("a", 100_000)), est(&rep("a", 100_001))), (25000, 25000));
    assert_eq!((est(&rep("é", 100_000)), est(&rep("é", 100_001))), (150000, 25000));
    assert_eq!(est(r#"[{"text":"abc"},{"text":"abc"}]"#), 1);
    assert_eq!(
        est(r#"[{"functionCall":{"name":"foo","args":{}},"thoughtSignature":"skip_thought_signature_validator"}]"#),
        23
    );
    assert_eq!(est(&format!(r#"[{{"functionResponse":{{"name":"abcd","response":"{}"}}}}]"#, "x".repeat(40))), 11);
    assert_eq!(est(r#"[{"functionResponse":{"name":"abcd","response":null}}]"#), 1);
    assert_eq!(est(r#"[{"inlineData":{"mimeType":"image/jpeg","data":"x"}}]"#), 3000);
    assert_eq!(est(r#"[{"fileData":{"mimeType":"application/pdf","fileUri":"x"}}]"#), 25800);
    assert_eq!(est(r#"[{"fileData":{"mimeType":"text/plain","fileUri":"derp"}}]"#), 13);
    // Historical estimators differ where the spec says they do.
    let e = parts(r#"[{"text":"é😀"}]"#);
    assert_eq!(Estimator::V20251126.parts(e.iter(), 4.0), 2); // per code point, 1.3 each
    assert_eq!(Estimator::V20260130.parts(e.iter(), 4.0), 3); // per UTF-16 unit, 1.3 each = 3.9
    assert_eq!(Estimator::V20260501.parts(parts(r#"[{"text":"abcdefghijklmnopqrstuvwxyz0123"}]"#).iter(), 4.0), 9);
}

// Extra truncation vector (original code run on this input)
#[test]
fn truncation_extra_vector() {
    let h = vec![
        fr("small", obj("output", "abcdefgh".into())),
        fr("tiny", obj("output", "x".into())),
        fr("obj", parse_str(r#"{"a":1,"b":[1,2]}"#).unwrap()),
        fr("exact", obj("content", "a".repeat(200_000))),
        parse_str(r#"{"role":"model"}"#).unwrap(),
    ];
    let settings = TruncationSettings {
        variant: TruncationVariant::Current,
        budget: 50_000,
        max_chars: 40_000,
        estimator: Estimator::Current,
    };
    let mut ids = 0;
    let mut store = MemoryToolOutputStore::new("/tmp/x");
    let t = truncate_history_to_budget(&h, &settings, &mut ids, &mut store);
    assert_eq!(response_of(&t.history[3]), &obj("content", "a".repeat(200_000)));
    assert_eq!(response_of(&t.history[2]), &obj("output", "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}".into()));
    assert_eq!(response_of(&t.history[1]), &obj("output", "x".into()));
    assert_eq!(response_of(&t.history[0]), &obj("output", "abcdefgh".into()));
    assert_eq!(
        store.files.keys().collect::<Vec<_>>(),
        ["tool-outputs/obj_1.txt", "tool-outputs/small_3.txt", "tool-outputs/tiny_2.txt"]
    );
    assert_eq!(json::to_string(&t.history[4]), r#"{"role":"model","parts":[]}"#);
}

fn outcome(o: u64, n: u64, s: CompressionStatus, h: Option<Vec<Content>>) -> CompressOutcome {
    CompressOutcome { new_history: h, info: info(o, n, s), trace: Default::default() }
}

// client.test.ts tryCompressChat and local-executor.test.ts "Chat Compression"
#[test]
fn caller_state_machines() {
    use CompressionStatus::*;
    let env = u("env");
    // forced after failure succeeds and resets the flag
    let mut c = Caller::new(CallerKind::Interactive, Latch::Latched);
    assert_eq!(
        c.apply(&outcome(100, 200, FailedInflatedTokenCount, None), false, Some(&env)),
        HistoryUpdate::Unchanged
    );
    assert!(c.has_failed);
    let upd = c.apply(&outcome(100, 50, Compressed, Some(vec![u("s")])), true, Some(&env));
    assert_eq!(upd, HistoryUpdate::Replaced(vec![env.clone(), u("s")]));
    assert!(!c.has_failed);
    // latch: a forced failure never clears the flag
    let mut c = Caller::new(CallerKind::Interactive, Latch::Latched);
    c.apply(&outcome(100, 200, FailedInflatedTokenCount, None), false, Some(&env));
    c.apply(&outcome(100, 200, FailedInflatedTokenCount, None), true, Some(&env));
    assert!(c.has_failed);
    // the 2025-08-27 rule: a forced failure clears it
    let mut c = Caller::new(CallerKind::Interactive, Latch::SetIfNotForced);
    c.apply(&outcome(100, 200, FailedInflatedTokenCount, None), false, Some(&env));
    c.apply(&outcome(100, 200, FailedInflatedTokenCount, None), true, Some(&env));
    assert!(!c.has_failed);
    // EMPTY_SUMMARY and NOOP leave everything alone; CONTENT_TRUNCATED replaces without touching the flag
    let mut c = Caller::new(CallerKind::Interactive, Latch::Latched);
    c.has_failed = true;
    assert_eq!(c.apply(&outcome(800, 800, FailedEmptySummary, None), false, Some(&env)), HistoryUpdate::Unchanged);
    assert_eq!(c.apply(&outcome(699, 699, Noop, None), false, Some(&env)), HistoryUpdate::Unchanged);
    let upd = c.apply(&outcome(800, 700, ContentTruncated, Some(vec![env.clone(), u("t")])), false, Some(&env));
    assert_eq!(upd, HistoryUpdate::Replaced(vec![env.clone(), u("t")]));
    assert!(c.has_failed);
    // sub-agent: flag false, true, false over INFLATED, COMPRESSED, NOOP; no env turn prepended
    let mut s = Caller::new(CallerKind::SubAgent, Latch::Latched);
    let mut flags = vec![s.has_failed_argument()];
    s.apply(&outcome(1, 2, FailedInflatedTokenCount, None), false, None);
    flags.push(s.has_failed_argument());
    let upd = s.apply(&outcome(1, 1, Compressed, Some(vec![u("compressed")])), false, None);
    assert_eq!(upd, HistoryUpdate::Replaced(vec![u("compressed")]));
    flags.push(s.has_failed_argument());
    assert_eq!(flags, [false, true, false]);
}

// client.test.ts overflow guard
#[test]
fn overflow_guard_cases() {
    let req = parts(&format!(r#"[{{"text":"{}"}}]"#, "a".repeat(404)));
    let o = overflow_check(OverflowGuard::After, 1000, 900, &req).unwrap();
    assert_eq!((o.estimated_request_token_count, o.remaining_token_count), (101, 100));
    let small = parts(&format!(r#"[{{"text":"{}"}}]"#, "a".repeat(240)));
    assert!(overflow_check(OverflowGuard::After, 1000, 400, &small).is_none());
    // An 11 MiB PDF counts as its fixed estimate, not by size.
    let pdf = parts(&format!(
        r#"[{{"text":"summarise"}},{{"inlineData":{{"mimeType":"application/pdf","data":"{}"}}}}]"#,
        "A".repeat(11 * 1024 * 1024)
    ));
    assert!(overflow_check(OverflowGuard::After, 1_000_000, 10_000, &pdf).is_none());
    assert!(overflow_check(OverflowGuard::None, 1000, 999, &req).is_none());
    // The 2025 guard fired at 95 % of the room left.
    let big = parts(&format!(r#"[{{"text":"{}"}}]"#, "a".repeat(400)));
    assert!(overflow_check(OverflowGuard::Before95, 1000, 900, &big).is_some()); // 103 > 95
    assert!(overflow_check(OverflowGuard::After, 1000, 900, &big).is_none()); // 100 is not > 100
}
