//! Images as image parts (issue #36, part 5): each agent format's images stay in the canonical history as
//! Gemini `inlineData` parts, and a replayed request counts them as the agent's provider bills them. The
//! fixtures are made up, of the real formats' shapes; sizes are computed by hand in each test.

use super::*;
use crate::history::{self, Content};
use crate::replay::{ReplayInput, ReplaySettings, Uncompressed};
use crate::tokens::images;
use base64::Engine;

/// The base64 of a PNG of `w` × `h`: signature, IHDR and a made-up body (the size is all a header reader
/// needs; the body makes the base64 as long as a real screenshot's would be at a few kB).
fn png(w: u32, h: u32) -> String {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend(w.to_be_bytes());
    b.extend(h.to_be_bytes());
    b.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b.extend((0..6000u32).map(|i| (i * 31 % 251) as u8));
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The image parts of a Content, as (MIME type, width, height).
fn images_of(c: &Content) -> Vec<(String, u32, u32)> {
    history::parts(c)
        .iter()
        .filter_map(images::media_of)
        .map(|m| match m.kind {
            images::MediaKind::Image(Some((w, h))) => (m.mime, w, h),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// The requests of the conversation replayed without compression, minus those of the same conversation with
/// its images taken out: what the images add to each request.
fn image_share_of_requests(c: &Conversation) -> Vec<u64> {
    let requests = |c: &Conversation| {
        let input = c.replay_input(&c.meta.id);
        futures::executor::block_on(Uncompressed::new(&input, &ReplaySettings::default())).unwrap().requests
    };
    let mut text_only = c.clone();
    text_only.history = c.history.iter().map(|h| images::without_media(h).unwrap_or(h.clone())).collect();
    let with = requests(c);
    let without = requests(&text_only);
    assert_eq!(with.len(), without.len());
    with.iter().zip(&without).map(|(a, b)| a - b).collect()
}

/// The base64 never reaches a request as text: a request counts no more than its text and its images.
fn assert_base64_not_counted(c: &Conversation) {
    let input: ReplayInput<'_> = c.replay_input(&c.meta.id);
    let requests = futures::executor::block_on(Uncompressed::new(&input, &ReplaySettings::default())).unwrap().requests;
    let chars: usize = c.history.iter().map(crate::json::jslen).sum();
    assert!(requests.iter().all(|&r| r < chars as u64 / 4), "{requests:?} against {chars} characters of JSON");
}

/// Claude Code: a user turn with a screenshot among its text, and a Read tool_result holding a text block
/// and an image block; Anthropic bills w × h / 750.
#[test]
fn claude_code_images_are_image_parts_billed_as_anthropic_bills_them() {
    let (shot, read) = (png(1280, 720), png(512, 320));
    let lines = [
        format!(
            r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{{"role":"user","content":[{{"type":"text","text":"The button is misaligned, see:"}},{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{shot}"}}}}]}}}}"#
        ),
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"docs/layout.png"}}],"usage":{"input_tokens":3000,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}"#.to_string(),
        format!(
            r#"{{"type":"user","uuid":"u2","parentUuid":"a1","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":[{{"type":"text","text":"Read image (6kB)"}},{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{read}"}}}}]}}]}}}}"#
        ),
        r#"{"type":"assistant","uuid":"a2","parentUuid":"u2","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"The flex gap is wrong."}],"usage":{"input_tokens":3300,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}"#.to_string(),
    ];
    let imported = Format::ClaudeCode.parse(lines.join("\n").as_bytes(), "shots.jsonl").unwrap();
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let c = only(imported);
    assert_eq!(outline(&c), "user:text,image model:call:Read user:response:Read,image model:text");
    assert_eq!(images_of(&c.history[0]), [("image/png".to_string(), 1280, 720)]);
    assert_eq!(images_of(&c.history[2]), [("image/png".to_string(), 512, 320)]);
    // The functionResponse keeps the result's text; the image part follows it in the same Content.
    let fr = history::function_response(&history::parts(&c.history[2])[0]).unwrap();
    assert_eq!(fr.get("response").unwrap().get("output").and_then(Value::as_str), Some("Read image (6kB)"));
    assert_valid(&c);
    // `datasets stats` counts the images, and no base64 among the characters.
    let stats = crate::ConversationStats::of(&c);
    assert_eq!(stats.images, 2);
    assert!(stats.characters < 300, "{stats:?}");
    // By hand: 1280 × 720 / 750 = 1228.8 → 1229; 512 × 320 / 750 = 218.45 → 219.
    assert_eq!(image_share_of_requests(&c), [1229, 1229 + 219]);
    assert_base64_not_counted(&c);
}

/// Claude Code: a document block (a PDF) is an inlineData part with its media type; an image whose header
/// says nothing is kept and warned about.
#[test]
fn claude_code_documents_and_unreadable_images() {
    let pdf = base64::engine::general_purpose::STANDARD.encode(b"%PDF-1.4 <</Type /Pages>> <</Type /Page>>");
    let line = format!(
        r#"{{"type":"user","uuid":"u1","parentUuid":null,"message":{{"role":"user","content":[{{"type":"document","source":{{"type":"base64","media_type":"application/pdf","data":"{pdf}"}}}},{{"type":"image","source":{{"type":"base64","media_type":"image/jpeg","data":"AAAA"}}}},{{"type":"text","text":"summarise"}}]}}}}"#
    );
    let imported = Format::ClaudeCode.parse(line.as_bytes(), "doc.jsonl").unwrap();
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    assert!(
        imported.warnings[0].contains("image/jpeg") && imported.warnings[0].contains("most"),
        "{:?}",
        imported.warnings
    );
    let c = only(imported);
    assert_eq!(outline(&c), "user:image,image,text");
    let media = images::content_media(&c.history[0]);
    assert_eq!(media[0].mime, "application/pdf");
    assert_eq!(media[0].kind, images::MediaKind::Pdf(Some(1)));
    // One PDF page and one image of unknown size, each counted as the most Anthropic bills for one image.
    assert_eq!(images::content_media_tokens(&c.history[0], images::ImageBilling::Anthropic), 2 * 1534);
}

/// Codex: a user message's `input_image` (a data URL) among its text, and a `view_image` call whose
/// `function_call_output` is a content-item list holding the image; OpenAI's tile rule, GPT-5 figures.
#[test]
fn codex_images_are_image_parts_billed_as_openai_bills_them() {
    let (shot, viewed) = (png(1280, 720), png(512, 320));
    let lines = [
        r#"{"timestamp":"2026-01-05T10:00:00.000Z","type":"session_meta","payload":{"id":"0199","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.140.0"}}"#.to_string(),
        format!(
            r#"{{"timestamp":"2026-01-05T10:00:01.000Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"Match this mockup:"}},{{"type":"input_image","image_url":"data:image/png;base64,{shot}"}},{{"type":"input_text","text":"and keep the colours."}}]}}}}"#
        ),
        r#"{"timestamp":"2026-01-05T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"view_image","arguments":"{\"path\":\"out/render.png\"}","call_id":"call_1"}}"#.to_string(),
        r#"{"timestamp":"2026-01-05T10:00:02.100Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":4000},"model_context_window":258400}}}"#.to_string(),
        format!(
            r#"{{"timestamp":"2026-01-05T10:00:03.000Z","type":"response_item","payload":{{"type":"function_call_output","call_id":"call_1","output":[{{"type":"input_image","image_url":"data:image/png;base64,{viewed}"}}]}}}}"#
        ),
        r#"{"timestamp":"2026-01-05T10:00:04.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The render matches."}]}}"#.to_string(),
        r#"{"timestamp":"2026-01-05T10:00:04.100Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5200}}}}"#.to_string(),
    ];
    let bytes = lines.join("\n");
    assert_eq!(crate::import::detect(bytes.as_bytes(), "r.jsonl").unwrap(), Format::Codex);
    let imported = Format::Codex.parse(bytes.as_bytes(), "r.jsonl").unwrap();
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let c = only(imported);
    assert_eq!(outline(&c), "user:text,image,text model:call:view_image user:response:view_image,image model:text");
    assert_eq!(history::visible_text(&c.history[0]), "Match this mockup:and keep the colours.");
    assert_eq!(images_of(&c.history[0]), [("image/png".to_string(), 1280, 720)]);
    assert_eq!(images_of(&c.history[2]), [("image/png".to_string(), 512, 320)]);
    assert_valid(&c);
    // By hand: 1280×720 keeps its size (short side 720 ≤ 768): 3 × 2 tiles → 70 + 6 × 140 = 910;
    // 512×320: 1 tile → 70 + 140 = 210.
    assert_eq!(image_share_of_requests(&c), [910, 910 + 210]);
    assert_base64_not_counted(&c);
}

/// Gemini CLI: a user message with an inlineData part among its text, and a tool call whose recorded
/// result is a part list (functionResponse, then the image) are kept as they are; Gemini bills 258 a
/// 768-px tile (258 for an image within 384 × 384).
#[test]
fn gemini_cli_inline_data_parts_are_kept_and_billed_as_gemini_bills_them() {
    let (shot, small) = (png(1280, 720), png(300, 200));
    let lines = [
        r#"{"sessionId":"s-1","projectHash":"p","startTime":"2026-01-05T10:00:00.000Z","kind":"main"}"#.to_string(),
        format!(
            r#"{{"id":"u1","type":"user","content":[{{"text":"What is wrong here?"}},{{"inlineData":{{"mimeType":"image/png","data":"{shot}"}}}}]}}"#
        ),
        format!(
            r#"{{"id":"g1","type":"gemini","content":[{{"text":"Let me look at the icon."}}],"toolCalls":[{{"id":"read-1","name":"read_file","args":{{"absolute_path":"/w/icon.png"}},"status":"success","result":[{{"functionResponse":{{"id":"read-1","name":"read_file","response":{{"output":"Binary content provided (1 item)."}}}}}},{{"inlineData":{{"mimeType":"image/png","data":"{small}"}}}}]}}],"tokens":{{"input":2000}}}}"#
        ),
        r#"{"id":"g2","type":"gemini","content":"The icon is clipped.","tokens":{"input":2700}}"#.to_string(),
    ];
    let c = only(Format::GeminiJsonl.parse(lines.join("\n").as_bytes(), "chat.jsonl").unwrap());
    assert_eq!(outline(&c), "user:text,image model:text,call:read_file user:response:read_file,image model:text");
    assert_eq!(images_of(&c.history[0]), [("image/png".to_string(), 1280, 720)]);
    assert_eq!(images_of(&c.history[2]), [("image/png".to_string(), 300, 200)]);
    assert_valid(&c);
    // By hand: 1280×720 → ⌈1280/768⌉ × ⌈720/768⌉ = 2 tiles → 516; 300×200 → 258.
    assert_eq!(image_share_of_requests(&c), [516, 516 + 258]);
    assert_base64_not_counted(&c);
}
