//! A real tokenizer (OpenAI o200k, embedded in `tiktoken-rs`) to measure what a request really costs,
//! independently of the reference's character heuristic.

use super::images::{self, ImageBilling};
use crate::history::{self, Content};
use crate::json::{self, Value};
use crate::memo::DigestMemo;
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

fn o200k() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().expect("o200k vocabulary is embedded in tiktoken-rs"))
}

/// Texts are encoded in pieces of about this many bytes, so counting a large tool output does not hold
/// its whole token list (4 bytes a token, about the text's own size) at once.
const CHUNK_BYTES: usize = 16 * 1024;

/// Each text's o200k count by its digest: about 50 MB of digests and counts at most.
static COUNTS: DigestMemo<u64> = DigestMemo::new(1 << 20, |_| 1);

/// o200k tokens of a text (recorded texts are counted once per process: [`DigestMemo`]; a run also starts
/// from the counts earlier runs kept: [`preload_o200k_counts`]).
pub fn o200k_count_text(text: &str) -> u64 {
    COUNTS.get(text, |t| count_in_chunks(t, CHUNK_BYTES))
}

/// The o200k counts this process knows, by each text's SHA-256, in digest order: what the caller keeps
/// between runs (the sweep keeps them beside its import cache).
pub fn known_o200k_counts() -> Vec<([u8; 32], u64)> {
    COUNTS.entries()
}

/// Starts from counts an earlier process computed (from [`known_o200k_counts`]); the caller vouches that
/// they were counted by this tokenizer ([`o200k_fingerprint`]).
pub fn preload_o200k_counts(pairs: impl IntoIterator<Item = ([u8; 32], u64)>) {
    COUNTS.preload(pairs)
}

/// The counts of a few fixed texts (letters, digits, punctuation, code, whitespace runs, non-ASCII), counted
/// now and not from the memo: a stored set of counts is used only under the same fingerprint, so counts
/// kept by another version of the tokenizer that would count these differently are never read.
pub fn o200k_fingerprint() -> [u64; 4] {
    [
        "The quick brown fox jumps over the lazy dog, 1234567 times!",
        "fn main() {\n    println!(\"{:?}\", vec![1, 2, 3]);\n}\n\n\t  ",
        "Ünïcödé — “quotes”, emoji 🚀, CJK 中文字符, and a URL https://example.com/a_b-c?d=e",
        "    else:\r\n        return self._cache[key] # TODO(x): 0x1F2E3D\r\n",
    ]
    .map(|t| count_in_chunks(t, CHUNK_BYTES))
}

/// The o200k count of `text`, encoded piecewise at cuts where the tokenizer's pre-split always cuts, so the
/// sum equals the count of the whole text.
fn count_in_chunks(text: &str, chunk: usize) -> u64 {
    let bpe = o200k();
    let mut total = 0;
    let mut rest = text;
    while rest.len() > chunk {
        let Some(cut) = safe_cut(rest.as_bytes(), chunk) else { break };
        total += bpe.encode_ordinary(&rest[..cut]).len() as u64;
        rest = &rest[cut..];
    }
    total + bpe.encode_ordinary(rest).len() as u64
}

/// The first index at or after `from` between an ASCII letter and a digit (base64 and hex blobs have no
/// line breaks), or just after the last line break of a whitespace run that goes on with spaces or tabs (or
/// nothing) and then an ASCII character that is neither whitespace nor, right after the break, `/`. No
/// piece of the o200k pre-split pattern crosses such a point: the letter and digit alternatives never hold
/// `\r`/`\n`, the punctuation one ends in `[\r\n/]*` (greedy), and `\s*[\r\n]+` (tried before the other
/// whitespace alternatives) ends at the run's last line break. Nor does any alternative look behind, so
/// the pieces after the cut are the same with or without the text before it.
fn safe_cut(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from.max(1);
    while i < b.len() {
        // A letter run ends where a digit starts, whatever follows; the digit run starts there too.
        if b[i - 1].is_ascii_alphabetic() && b[i].is_ascii_digit() {
            return Some(i);
        }
        if (b[i - 1] == b'\n' || b[i - 1] == b'\r') && b[i] != b'/' {
            let blanks = b[i..].iter().take_while(|&&c| c == b' ' || c == b'\t').count();
            // (`b[i]` itself is not `/`: a slash right after the break would join the break's piece.)
            if b.get(i + blanks).is_some_and(|&c| c.is_ascii() && !c.is_ascii_whitespace() && c != 0x0B) {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// The text a chat template would put on the wire for one part: text as is, calls and responses as JSON.
/// A medium (an `inlineData` image or PDF) puts nothing: its provider bills it by its own rule
/// ([`super::images`]), not as the JSON of its base64; media nested in a `functionResponse.parts` are left
/// out of the response's JSON likewise.
pub fn render_for_tokenizer(part: &Value, out: &mut String) {
    if images::is_media_part(part) {
        return;
    }
    if let Some(t) = history::part_text(part) {
        out.push_str(&t.to_str_lossy());
    } else if let Some(fr) = history::function_response(part) {
        let nested = fr.get("parts").and_then(Value::as_array);
        if nested.is_some_and(|ps| ps.iter().any(images::is_media_part)) {
            let wrapped = Value::object([("role", Value::str("user")), ("parts", Value::Array(vec![part.clone()]))]);
            let stripped = images::without_media(&wrapped).unwrap_or(wrapped);
            let inner = history::parts(&stripped).first().and_then(history::function_response).unwrap_or(fr);
            json::write_compact(inner, json::Numbers::Js, out);
        } else {
            json::write_compact(fr, json::Numbers::Js, out);
        }
    } else {
        let v = history::function_call(part).unwrap_or(part);
        json::write_compact(v, json::Numbers::Js, out);
    }
    out.push('\n');
}

/// o200k tokens of a history's text, plus 4 tokens per Content for role markers (as OpenAI's chat format
/// counts); media count nothing here ([`o200k_count_history`] adds them).
pub fn o200k_count_history_text(history: &[Content]) -> u64 {
    let mut total = 0;
    let mut buf = String::new();
    for c in history {
        buf.clear();
        // Sized once (UTF-16 length of the JSON: the rendered text's size for ASCII), so a large output is
        // not copied through doubling buffers.
        buf.reserve(json::jslen(c));
        for p in history::parts(c) {
            render_for_tokenizer(p, &mut buf);
        }
        total += 4 + o200k_count_text(&buf);
    }
    total
}

/// o200k tokens of a history ([`o200k_count_history_text`]) plus the tokens its media cost as `billing`'s
/// provider bills them.
pub fn o200k_count_history(history: &[Content], billing: ImageBilling) -> u64 {
    o200k_count_history_text(history) + history.iter().map(|c| images::content_media_tokens(c, billing)).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn whole(text: &str) -> u64 {
        o200k().encode_ordinary(text).len() as u64
    }

    /// Texts made of the characters that decide where the pre-split cuts: line breaks, spaces, tabs, `/`,
    /// punctuation, letters of both cases, digits, contractions, non-ASCII letters and spaces, emoji.
    fn tricky_text() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "\n", "\r\n", "\n\n", " ", "  ", "\n  ", "\n\t", "    ", " \n ", "\t", "/", "//", ".", ";", "\"", "'s",
            "'LL", "a", "Foo", "bar", "HTTP", "123", "4567", "abc1", "Z9", "x1y2", "iVBOR0w", "'s1", "é1", "é", "中文",
            "😀", "\u{a0}", "\u{2003}", "\u{85}", "-", "_", "\u{b}", "\u{c}", "x\n/",
        ]);
        prop::collection::vec(atoms, 0..200).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Cutting at `safe_cut` points, even every few bytes, never changes the count.
        #[test]
        fn chunked_count_equals_whole_count(text in tricky_text(), chunk in 1usize..64) {
            prop_assert_eq!(count_in_chunks(&text, chunk), whole(&text));
        }
    }

    #[test]
    fn chunked_count_on_real_tool_output() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/mini-swe-agent/django__django-13265.json");
        let text = std::fs::read_to_string(path).unwrap();
        for chunk in [1, 7, 100, 4096] {
            assert_eq!(count_in_chunks(&text, chunk), whole(&text), "chunk {chunk}");
        }
    }
}
