//! A real tokenizer (OpenAI o200k, embedded in `tiktoken-rs`) to measure what a request really costs,
//! independently of the reference's character heuristic.

use crate::history::{self, Content};
use crate::json::{self, Value};
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

fn o200k() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().expect("o200k vocabulary is embedded in tiktoken-rs"))
}

/// o200k tokens of a text.
pub fn o200k_count_text(text: &str) -> u64 {
    o200k().encode_ordinary(text).len() as u64
}

/// The text a chat template would put on the wire for one part: text as is, calls and responses as JSON.
pub fn render_for_tokenizer(part: &Value, out: &mut String) {
    if let Some(t) = history::part_text(part) {
        out.push_str(&t.to_str_lossy());
    } else if let Some(fc) = history::function_call(part) {
        out.push_str(&json::to_string(fc));
    } else if let Some(fr) = history::function_response(part) {
        out.push_str(&json::to_string(fr));
    } else {
        out.push_str(&json::to_string(part));
    }
    out.push('\n');
}

/// o200k tokens of a history, plus 4 tokens per Content for role markers (as OpenAI's chat format counts).
pub fn o200k_count_history(history: &[Content]) -> u64 {
    let mut total = 0;
    let mut buf = String::new();
    for c in history {
        buf.clear();
        for p in history::parts(c) {
            render_for_tokenizer(p, &mut buf);
        }
        total += 4 + o200k_count_text(&buf);
    }
    total
}
