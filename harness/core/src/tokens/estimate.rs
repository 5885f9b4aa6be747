//! The reference's token heuristic (`estimateTokenCountSync` in `packages/core/src/utils/tokenCalculation.ts`) and its
//! historical variants.

use crate::history::{self, Content};
use crate::json::{self, JsStr, Value};
use serde::{Deserialize, Serialize};

pub const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;
pub const NON_ASCII_TOKENS_PER_CHAR: f64 = 1.5;
pub const IMAGE_TOKEN_ESTIMATE: f64 = 3000.0;
pub const PDF_TOKEN_ESTIMATE: f64 = 25800.0;
pub const MAX_CHARS_FOR_FULL_HEURISTIC: usize = 100_000;
pub const MAX_RECURSION_DEPTH: usize = 3;

/// A named estimator, as it stood from a given upstream commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(try_from = "String", into = "String")]
pub enum Estimator {
    /// `floor(Σ jslen(content) / 4)` over whole Contents (2025-09-27 `ffcd996366`).
    ContentJslen,
    /// Per code point, ASCII 0.25 / non-ASCII 1.3, non-text parts `jslen/4` (2025-11-26 `e1d2653a7a`).
    V20251126,
    /// + images 3000 (2026-01-06 `c31f05356a`).
    V20260106,
    /// + PDFs 25800 (2026-01-14 `c8d7c09ca4`).
    V20260114,
    /// + text over 100 000 chars counted `len/4` (2026-01-16 `ee8d425603`).
    V20260116,
    /// Per UTF-16 unit; functionResponse rule with nested parts (2026-01-30 `f605628624`).
    V20260130,
    /// Non-ASCII 1.5, ASCII 0.33 (2026-05-01 `de8fdcfa16`).
    V20260501,
    /// ASCII `1/charsPerToken` (2026-05-12 `07792f98cd`): the current estimator.
    #[default]
    Current,
}

crate::named_variants!(Estimator, "estimator", {
    ContentJslen => "content-jslen",
    V20251126 => "2025-11-26",
    V20260106 => "2026-01-06",
    V20260114 => "2026-01-14",
    V20260116 => "2026-01-16",
    V20260130 => "2026-01-30",
    V20260501 => "2026-05-01",
    Current => "current",
});

impl Estimator {
    fn rules(self) -> Rules {
        let base = Rules {
            per_code_point: false,
            ascii: AsciiWeight::PerCpt,
            non_ascii: NON_ASCII_TOKENS_PER_CHAR,
            images: true,
            pdfs: true,
            long_text_cutoff: true,
            function_response_rule: true,
        };
        let old = Rules {
            per_code_point: true,
            ascii: AsciiWeight::PerCpt,
            non_ascii: 1.3,
            images: false,
            pdfs: false,
            long_text_cutoff: false,
            function_response_rule: false,
        };
        match self {
            Estimator::ContentJslen | Estimator::Current => base,
            Estimator::V20251126 => old,
            Estimator::V20260106 => Rules { images: true, ..old },
            Estimator::V20260114 => Rules { images: true, pdfs: true, ..old },
            Estimator::V20260116 => Rules { images: true, pdfs: true, long_text_cutoff: true, ..old },
            Estimator::V20260130 => Rules { non_ascii: 1.3, ..base },
            Estimator::V20260501 => Rules { ascii: AsciiWeight::Fixed(0.33), ..base },
        }
    }

    /// Tokens of a set of parts (`estimateTokenCountSync(parts, 0, cpt)`).
    pub fn parts<'a>(self, parts: impl IntoIterator<Item = &'a Value>, chars_per_token: f64) -> u64 {
        self.rules().estimate(parts, 0, chars_per_token)
    }

    /// Tokens of a whole history (all parts of all Contents; Contents for `content-jslen`).
    pub fn history(self, history: &[Content]) -> u64 {
        match self {
            Estimator::ContentJslen => {
                let total: usize = history.iter().map(json::jslen).sum();
                (total as f64 / 4.0).floor() as u64
            }
            _ => self.parts(history::all_parts(history), DEFAULT_CHARS_PER_TOKEN),
        }
    }

    /// The unfloored figure of one Content: the reference floors once per call, so running totals over a
    /// growing history add these and floor the sum (exact for the current estimator's dyadic weights).
    pub fn content_raw(self, c: &Content) -> f64 {
        match self {
            Estimator::ContentJslen => json::jslen(c) as f64 / 4.0,
            _ => self.rules().estimate_raw(history::parts(c).iter(), 0, DEFAULT_CHARS_PER_TOKEN),
        }
    }

    /// Tokens of one Content.
    pub fn content(self, c: &Content) -> u64 {
        self.history(std::slice::from_ref(c))
    }

    /// Tokens of a plain text (`estimateTokenCountSync([{text}])`).
    pub fn text(self, s: &JsStr) -> u64 {
        let r = self.rules();
        r.text_tokens(s, DEFAULT_CHARS_PER_TOKEN).floor() as u64
    }

    /// Tokens of a text given only its UTF-16 length and non-ASCII unit count (for strings never built).
    /// Exact for the estimators that weigh per UTF-16 unit with dyadic weights (`current`, `2026-01-30`
    /// for ASCII-only text); others fall back to building nothing and assume no astral characters.
    pub fn text_from_counts(self, len16: usize, non_ascii16: usize) -> u64 {
        let r = self.rules();
        let cpt = DEFAULT_CHARS_PER_TOKEN;
        if r.long_text_cutoff && len16 > MAX_CHARS_FOR_FULL_HEURISTIC {
            return (len16 as f64 / cpt).floor() as u64;
        }
        let ascii = (len16 - non_ascii16) as f64;
        (ascii * r.ascii_weight(cpt) + non_ascii16 as f64 * r.non_ascii).floor() as u64
    }
}

#[derive(Clone, Copy, Debug)]
enum AsciiWeight {
    PerCpt,
    Fixed(f64),
}

#[derive(Clone, Copy, Debug)]
struct Rules {
    per_code_point: bool,
    ascii: AsciiWeight,
    non_ascii: f64,
    images: bool,
    pdfs: bool,
    long_text_cutoff: bool,
    function_response_rule: bool,
}

fn is_dyadic(x: f64) -> bool {
    // Exactly representable with few mantissa bits: sums of such weights are exact in any order.
    (x * 1024.0).fract() == 0.0
}

impl Rules {
    fn ascii_weight(&self, cpt: f64) -> f64 {
        match self.ascii {
            AsciiWeight::PerCpt => 1.0 / cpt,
            AsciiWeight::Fixed(w) => w,
        }
    }

    fn text_tokens(&self, s: &JsStr, cpt: f64) -> f64 {
        let m = s.metrics();
        let len16 = m.len16 as usize;
        if self.long_text_cutoff && len16 > MAX_CHARS_FOR_FULL_HEURISTIC {
            return len16 as f64 / cpt;
        }
        let aw = self.ascii_weight(cpt);
        let ascii = (m.len16 - m.non_ascii16) as f64;
        let non_ascii_units = if self.per_code_point {
            // A surrogate pair is one code point; lone surrogates count one each.
            (m.non_ascii16 - m.astral) as f64
        } else {
            m.non_ascii16 as f64
        };
        if is_dyadic(aw) && is_dyadic(self.non_ascii) {
            return ascii * aw + non_ascii_units * self.non_ascii;
        }
        // Inexact weights: add in string order, as the reference does, to get the same rounding.
        let mut total = 0.0f64;
        if self.per_code_point {
            let units = s.to_utf16();
            for r in char::decode_utf16(units.iter().copied()) {
                let ascii_char = matches!(r, Ok(c) if (c as u32) <= 127);
                total += if ascii_char { aw } else { self.non_ascii };
            }
        } else {
            s.for_each_unit(|u| total += if u <= 127 { aw } else { self.non_ascii });
        }
        total
    }

    fn media_tokens(&self, part: &Value) -> Option<f64> {
        let inline = part.get("inlineData");
        let file = part.get("fileData");
        if inline.is_none() && file.is_none() {
            return None;
        }
        fn mime_of(v: Option<&Value>) -> Option<&str> {
            v.and_then(|d| d.get("mimeType")).and_then(Value::as_str).filter(|m| !m.is_empty())
        }
        let mime = mime_of(inline).or_else(|| mime_of(file))?;
        if self.images && mime.starts_with("image/") {
            Some(IMAGE_TOKEN_ESTIMATE)
        } else if self.pdfs && mime.starts_with("application/pdf") {
            Some(PDF_TOKEN_ESTIMATE)
        } else {
            None
        }
    }

    fn function_response_tokens(&self, fr: &Value, depth: usize, cpt: f64) -> f64 {
        let name = fr.get("name").and_then(Value::as_js_str).map(|n| n.len16() as f64 / cpt).unwrap_or(0.0);
        let response = match fr.get("response") {
            Some(Value::String(s)) => s.len16() as f64 / cpt,
            Some(Value::Null) | None => 0.0,
            Some(v) => json::jslen(v) as f64 / cpt,
        };
        let nested = match fr.get("parts").and_then(Value::as_array) {
            Some(ps) if !ps.is_empty() => self.estimate(ps.iter(), depth + 1, cpt) as f64,
            _ => 0.0,
        };
        name + response + nested
    }

    fn estimate<'a>(&self, parts: impl IntoIterator<Item = &'a Value>, depth: usize, cpt: f64) -> u64 {
        self.estimate_raw(parts, depth, cpt).floor() as u64
    }

    fn estimate_raw<'a>(&self, parts: impl IntoIterator<Item = &'a Value>, depth: usize, cpt: f64) -> f64 {
        if depth > MAX_RECURSION_DEPTH {
            return 0.0;
        }
        let mut total = 0.0f64;
        for part in parts {
            if let Some(Value::String(s)) = part.get("text") {
                total += self.text_tokens(s, cpt);
            } else if let Some(fr) = history::function_response(part).filter(|_| self.function_response_rule) {
                // A truthy non-object has no name/response/parts members: it adds 0, as in JS.
                total += self.function_response_tokens(fr, depth, cpt);
            } else if let Some(t) = self.media_tokens(part) {
                total += t;
            } else {
                total += json::jslen(part) as f64 / cpt;
            }
        }
        total
    }
}

/// `estimateTokenCountSync(parts, 0, charsPerToken)` with the current estimator.
pub fn estimate_parts<'a>(parts: impl IntoIterator<Item = &'a Value>, chars_per_token: f64) -> u64 {
    Estimator::Current.parts(parts, chars_per_token)
}

/// `estimateTokenCountSync(history.flatMap(c => c.parts))` with the current estimator.
pub fn estimate_history(history: &[Content]) -> u64 {
    Estimator::Current.history(history)
}
