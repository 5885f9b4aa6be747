//! `findCompressSplitPoint` (`packages/core/src/context/chatCompressionService.ts`) and its historical variants.

use crate::history::{self, Content};
use crate::json;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Fraction must be between 0 and 1")]
pub struct FractionError;

/// Split-point algorithms, named by the date they took effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum SplitVariant {
    /// 2025-06-03: no split, the whole history is summarised.
    None,
    /// 2025-07-07: first index whose cumulative size *including* it reaches the target, then forward to a
    /// user turn.
    V20250707,
    /// 2025-07-14: as above, also skipping user turns made only of function responses.
    V20250714,
    /// 2025-09-10: cumulative size checked *before* adding the index.
    V20250910,
    /// 2025-09-18: candidate/last/compress-all rules, cumulative including the index.
    V20250918,
    /// 2025-09-27: candidate rules, cumulative excluding the index (current).
    #[default]
    Current,
}

crate::named_variants!(SplitVariant, "split variant", {
    None => "none",
    V20250707 => "2025-07-07",
    V20250714 => "2025-07-14",
    V20250910 => "2025-09-10",
    V20250918 => "2025-09-18",
    Current => "current",
});

impl SplitVariant {
    /// Index of the oldest Content to keep: `contents[..idx]` is summarised, `contents[idx..]` kept.
    pub fn split(self, contents: &[Content], fraction: f64) -> Result<usize, FractionError> {
        if fraction <= 0.0 || fraction >= 1.0 || fraction.is_nan() {
            return Err(FractionError);
        }
        Ok(match self {
            SplitVariant::None => contents.len(),
            SplitVariant::V20250707 => advance(contents, index_after_fraction(contents, fraction, true), false),
            SplitVariant::V20250714 => advance(contents, index_after_fraction(contents, fraction, true), true),
            SplitVariant::V20250910 => advance(contents, index_after_fraction(contents, fraction, false), true),
            SplitVariant::V20250918 => candidate_split(contents, fraction, true),
            SplitVariant::Current => candidate_split(contents, fraction, false),
        })
    }
}

/// `findCompressSplitPoint(contents, fraction)` at the reference commit.
pub fn find_compress_split_point(contents: &[Content], fraction: f64) -> Result<usize, FractionError> {
    SplitVariant::Current.split(contents, fraction)
}

/// A split candidate: a user turn with no truthy functionResponse part (no `parts` at all qualifies).
fn is_candidate(c: &Content) -> bool {
    history::is_user(c) && !history::has_function_response(c)
}

fn candidate_split(contents: &[Content], fraction: f64, include_current: bool) -> usize {
    // One pass computes every size once; the scan reads them back.
    let sizes: Vec<usize> = contents.iter().map(json::jslen).collect();
    let total: usize = sizes.iter().sum();
    let target = total as f64 * fraction;
    let mut last = 0;
    let mut cum = 0usize;
    for (i, c) in contents.iter().enumerate() {
        if include_current {
            cum += sizes[i];
        }
        if is_candidate(c) {
            if cum as f64 >= target {
                return i;
            }
            last = i;
        }
        if !include_current {
            cum += sizes[i];
        }
    }
    if let Some(lastc) = contents.last() {
        if history::is_model(lastc) && !history::has_function_call(lastc) {
            return contents.len();
        }
    }
    last
}

/// The 2025 `findIndexAfterFraction`.
fn index_after_fraction(contents: &[Content], fraction: f64, include_current: bool) -> usize {
    let sizes: Vec<usize> = contents.iter().map(json::jslen).collect();
    let total: usize = sizes.iter().sum();
    let target = total as f64 * fraction;
    let mut cum = 0usize;
    for (i, size) in sizes.iter().enumerate() {
        if include_current {
            cum += size;
        }
        if cum as f64 >= target {
            return i;
        }
        if !include_current {
            cum += size;
        }
    }
    contents.len()
}

/// `isFunctionResponse`: a user turn whose parts (an array) are all function responses.
fn is_function_response_turn(c: &Content) -> bool {
    history::is_user(c)
        && history::has_parts_array(c)
        && history::parts(c).iter().all(|p| history::function_response(p).is_some())
}

fn advance(contents: &[Content], mut idx: usize, skip_tool_turns: bool) -> usize {
    while idx < contents.len() {
        let c = &contents[idx];
        let go_on =
            if skip_tool_turns { history::is_model(c) || is_function_response_turn(c) } else { !history::is_user(c) };
        if !go_on {
            break;
        }
        idx += 1;
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{model_text as m, user_text as u};
    use crate::json::parse_str;

    fn fr() -> Content {
        parse_str(r#"{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{"output":"x"}}}]}"#).unwrap()
    }

    fn fc() -> Content {
        parse_str(r#"{"role":"model","parts":[{"functionCall":{"name":"ls","args":{}}}]}"#).unwrap()
    }

    #[test]
    fn historical_variants_differ_where_the_spec_says() {
        let h: Vec<Content> = vec![u("a"), m("b"), u("c"), fc(), fr(), m("d"), u("e"), m("f")];
        let sizes: Vec<usize> = h.iter().map(json::jslen).collect();
        let total: usize = sizes.iter().sum();
        assert_eq!(SplitVariant::None.split(&h, 0.7).unwrap(), h.len());
        // 2025-07-07: first index whose cumulative size including it reaches 70 %, then forward to a user turn.
        let target = total as f64 * 0.7;
        let mut cum = 0;
        let first = sizes.iter().position(|s| {
            cum += s;
            cum as f64 >= target
        });
        let mut expect = first.unwrap();
        while expect < h.len() && !history::is_user(&h[expect]) {
            expect += 1;
        }
        assert_eq!(SplitVariant::V20250707.split(&h, 0.7).unwrap(), expect);
        // 2025-07-14 skips the functionResponse turn the 07-07 variant could stop at.
        let at_tool = vec![u("a"), fc(), fr(), m("d"), u("e")];
        let s0707 = SplitVariant::V20250707.split(&at_tool, 0.5).unwrap();
        let s0714 = SplitVariant::V20250714.split(&at_tool, 0.5).unwrap();
        assert!(history::is_user(&at_tool[s0707]));
        assert!(s0714 == at_tool.len() || !history::has_function_response(&at_tool[s0714]));
        assert_eq!(s0714, 4);
        assert_eq!(s0707, 2);
        // The candidate rule: ending with a model text turn allows compressing everything in both variants.
        assert_eq!(SplitVariant::V20250918.split(&h, 0.99).unwrap(), h.len());
        assert_eq!(SplitVariant::Current.split(&h, 0.99).unwrap(), h.len());
        // Counting the current item (2025-09-18) or not (current) moves the split on [60, 140, model].
        let a = u(&"a".repeat(23));
        let b = u(&"b".repeat(103));
        assert_eq!((json::jslen(&a), json::jslen(&b)), (60, 140));
        let h2 = vec![a, b, m("z")];
        assert_ne!(SplitVariant::V20250918.split(&h2, 0.2).unwrap(), SplitVariant::Current.split(&h2, 0.2).unwrap());
        for &v in SplitVariant::ALL {
            assert_eq!(v.name().parse::<SplitVariant>().unwrap(), v);
            assert!(v.split(&h, 1.0).is_err());
        }
    }
}
