//! A process-wide memo of values computed from texts, keyed by the text's SHA-256. A sweep replays each
//! conversation once per grid point, so the same recorded texts are tokenised and normalised again and
//! again; hashing runs two orders of magnitude faster than either, and no two texts share a digest in
//! practice.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Texts shorter than this are computed directly (as fast as hashing them).
pub const MEMO_MIN_BYTES: usize = 48;

/// Values of `compute(text)` kept by the text's digest until `budget` units of `cost` are kept; the memo then
/// forgets everything at once rather than grow without end in a long-lived process.
pub struct DigestMemo<V> {
    budget: usize,
    cost: fn(&V) -> usize,
    /// The kept values and the cost they add up to; `None` until the first is kept (a `const` start).
    entries: Mutex<Option<Kept<V>>>,
}

type Kept<V> = (HashMap<[u8; 32], V>, usize);

impl<V: Clone> DigestMemo<V> {
    pub const fn new(budget: usize, cost: fn(&V) -> usize) -> Self {
        DigestMemo { budget, cost, entries: Mutex::new(None) }
    }

    /// `compute(text)`, from the memo when the same text was computed before.
    pub fn get(&self, text: &str, compute: impl FnOnce(&str) -> V) -> V {
        if text.len() < MEMO_MIN_BYTES {
            return compute(text);
        }
        let key: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let lock = || self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(hit) = lock().as_ref().and_then(|(map, _)| map.get(&key)) {
            return hit.clone();
        }
        let value = compute(text);
        let mut entries = lock();
        let (map, spent) = entries.get_or_insert_with(Default::default);
        if *spent >= self.budget {
            map.clear();
            *spent = 0;
        }
        *spent += (self.cost)(&value);
        map.insert(key, value.clone());
        value
    }

    /// Every kept (digest, value) pair, in digest order: what a caller keeps between processes.
    pub fn entries(&self) -> Vec<([u8; 32], V)> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<([u8; 32], V)> =
            entries.as_ref().map(|(map, _)| map.iter().map(|(k, v)| (*k, v.clone())).collect()).unwrap_or_default();
        out.sort_by_key(|e| e.0);
        out
    }

    /// Keeps `pairs` as if computed here (values an earlier process computed for the texts of those digests),
    /// up to the budget.
    pub fn preload(&self, pairs: impl IntoIterator<Item = ([u8; 32], V)>) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, spent) = entries.get_or_insert_with(Default::default);
        for (key, value) in pairs {
            if *spent >= self.budget {
                break;
            }
            *spent += (self.cost)(&value);
            map.insert(key, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_computed_once_until_the_budget_is_spent() {
        static MEMO: DigestMemo<usize> = DigestMemo::new(2, |_| 1);
        let calls = std::cell::Cell::new(0);
        let count = |t: &str| {
            calls.set(calls.get() + 1);
            t.len()
        };
        let (a, b, c) = ("a".repeat(MEMO_MIN_BYTES), "b".repeat(MEMO_MIN_BYTES), "c".repeat(MEMO_MIN_BYTES));
        assert_eq!(MEMO.get(&a, count), MEMO_MIN_BYTES);
        assert_eq!(MEMO.get(&a, count), MEMO_MIN_BYTES);
        assert_eq!(calls.get(), 1);
        // Short texts are never kept.
        MEMO.get("short", count);
        MEMO.get("short", count);
        assert_eq!(calls.get(), 3);
        MEMO.get(&b, count);
        MEMO.get(&c, count);
        // The budget of two was spent by `a` and `b`: `c` started the memo afresh, `d` filled it, and `a`,
        // forgotten, is computed again.
        MEMO.get(&"d".repeat(MEMO_MIN_BYTES), count);
        MEMO.get(&a, count);
        assert_eq!(calls.get(), 7);
    }
}
