//! The stored history the replay sends, kept curated as the reference keeps it, with each Content's figures
//! and running totals: every Content is measured once, and a strategy's rewrite re-measures only what it
//! changed.

use super::counting::Counting;
use super::model_counter::CountError;
use crate::compress::curated;
use crate::history::Content;
use crate::json::Value;
use crate::tokens::Estimator;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// A running total over a list whose last element may still change (a curated merge rewrites it). Keeps
/// the sum of all but the last element, so the total is the same `f64` as summing the list in order, and
/// reading it costs O(1) per request instead of O(history).
#[derive(Clone, Copy, Debug, Default)]
struct RunningSum<T> {
    before_last: T,
    last: Option<T>,
}

impl<T: Copy + std::ops::Add<Output = T> + Default> RunningSum<T> {
    fn push(&mut self, v: T) {
        if let Some(last) = self.last.replace(v) {
            self.before_last = self.before_last + last;
        }
    }

    fn set_last(&mut self, v: T) {
        self.last = Some(v);
    }

    fn total(&self) -> T {
        match self.last {
            Some(last) => self.before_last + last,
            None => self.before_last,
        }
    }
}

/// The stored history with running token totals, kept curated (thoughts stripped, same roles merged) as
/// the reference's `getHistory(curated = true)` would return it.
pub(super) struct Stored<'c> {
    pub(super) contents: Vec<Content>,
    /// Each Content's figures, aligned with `contents`.
    measures: Vec<Measure>,
    est: RunningSum<f64>,
    tokens: RunningSum<u64>,
    media: RunningSum<u64>,
    counting: Counting<'c>,
}

/// The figures of one Content: reference heuristic (unfloored), tokens by the tokenizer (o200k or the
/// model's; 0 with the heuristic tokenizer), and a serial number that changes whenever the Content does (a
/// request's cacheable prefix is the run of leading serials it shares with the previous request). `tokens`
/// includes `media`, the tokens of its images and PDFs as the provider bills them (0 with the heuristic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Measure {
    est: f64,
    tokens: u64,
    media: u64,
    serial: u64,
}

fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl<'c> Stored<'c> {
    pub(super) fn new(counting: Counting<'c>) -> Self {
        Stored {
            contents: Vec::new(),
            measures: Vec::new(),
            est: RunningSum::default(),
            tokens: RunningSum::default(),
            media: RunningSum::default(),
            counting,
        }
    }

    async fn measure(&self, c: &Content) -> Result<Measure, CountError> {
        let tokens = self.counting.content(c).await?;
        let media = self.counting.media(c);
        Ok(Measure { est: Estimator::Current.content_raw(c), tokens, media, serial: next_serial() })
    }

    /// Appends with the curated-history rules applied incrementally. `known` is the Content's measure when
    /// the caller already has it (the first pass measured it). Returns the Content's own measure when it
    /// was appended, `None` when it was merged into the previous one (or dropped).
    pub(super) async fn push(&mut self, c: &Content, known: Option<Measure>) -> Result<Option<Measure>, CountError> {
        self.push_owned(c.clone(), known).await
    }

    async fn push_owned(&mut self, mut c: Content, known: Option<Measure>) -> Result<Option<Measure>, CountError> {
        if !curated::strip_thoughts(&mut c) {
            return Ok(None);
        }
        if let Some(last) = self.contents.last_mut() {
            if curated::coalesce_into(last, &c) {
                let m = self.measure(self.contents.last().expect("just merged")).await?;
                *self.measures.last_mut().expect("aligned with contents") = m;
                self.est.set_last(m.est);
                self.tokens.set_last(m.tokens);
                self.media.set_last(m.media);
                return Ok(None);
            }
        }
        let m = match known {
            Some(m) => m,
            None => self.measure(&c).await?,
        };
        self.contents.push(c);
        self.measures.push(m);
        self.est.push(m.est);
        self.tokens.push(m.tokens);
        self.media.push(m.media);
        Ok(Some(m))
    }

    /// Replaces the history with a strategy's new one. Contents it kept as they were (the same shared
    /// object: masking rewrites a few outputs, drop-oldest keeps a suffix) keep their figures, so a strategy
    /// that rewrites the history at every request does not re-tokenise all of it each time.
    pub(super) async fn replace(&mut self, contents: Vec<Content>) -> Result<(), CountError> {
        let old = std::mem::take(&mut self.contents);
        let old_measures = std::mem::take(&mut self.measures);
        let mut known = KnownMeasures::new(&old, &old_measures);
        self.est = RunningSum::default();
        self.tokens = RunningSum::default();
        self.media = RunningSum::default();
        // Moved, not cloned; `old` stays alive until the end, so no new object can reuse an old address.
        for (i, c) in contents.into_iter().enumerate() {
            let m = known.get(i, &c);
            self.push_owned(c, m).await?;
        }
        drop(old);
        Ok(())
    }

    /// Rewrites a few Contents in place (a strategy's edits), measuring only those; the totals are summed
    /// again in order, so they are the same figures a rebuilt history would give.
    pub(super) async fn edit(&mut self, edits: Vec<(usize, Content)>) -> Result<(), CountError> {
        for (i, c) in edits {
            if i < self.contents.len() {
                self.measures[i] = self.measure(&c).await?;
                self.contents[i] = c;
            }
        }
        self.est = RunningSum::default();
        self.tokens = RunningSum::default();
        self.media = RunningSum::default();
        for m in &self.measures {
            self.est.push(m.est);
            self.tokens.push(m.tokens);
            self.media.push(m.media);
        }
        Ok(())
    }

    /// Tokens of one Content's measure, by the tokenizer (unfloored for the heuristic).
    fn tokens_of(&self, m: &Measure) -> f64 {
        if self.counting.is_heuristic() {
            m.est
        } else {
            m.tokens as f64
        }
    }

    /// Tokens of another history by the tokenizer, reusing the figures of Contents it shares with this one:
    /// a candidate that rewrote a few Contents costs only those.
    pub(super) async fn measured_of(&self, h: &[Content]) -> Result<u64, CountError> {
        let mut known = KnownMeasures::new(&self.contents, &self.measures);
        let mut total = 0.0;
        for (i, c) in h.iter().enumerate() {
            let m = match known.get(i, c) {
                Some(m) => m,
                None => self.measure(c).await?,
            };
            total += self.tokens_of(&m);
        }
        Ok(f64::floor(total) as u64)
    }

    pub(super) fn heuristic(&self) -> u64 {
        self.est.total().floor() as u64
    }

    /// The history's tokens by the tokenizer.
    pub(super) fn measured(&self) -> u64 {
        if self.counting.is_heuristic() {
            self.heuristic()
        } else {
            self.tokens.total()
        }
    }

    /// The part of [`measured`](Self::measured) that is the history's media as the provider bills them (0
    /// with the heuristic).
    pub(super) fn media(&self) -> u64 {
        if self.counting.is_heuristic() {
            0
        } else {
            self.media.total()
        }
    }

    pub(super) fn serials(&self) -> Vec<u64> {
        self.measures.iter().map(|m| m.serial).collect()
    }

    /// Tokens of the leading Contents whose serials equal `previous`'s: the part of the history a provider
    /// could serve from its prompt cache.
    pub(super) fn shared_prefix_tokens(&self, previous: &[u64]) -> u64 {
        let shared = self.measures.iter().zip(previous).take_while(|(m, p)| m.serial == **p).count();
        self.measures[..shared].iter().map(|m| self.tokens_of(m)).sum::<f64>().floor() as u64
    }
}

/// Figures of a history's Contents, found for the Contents of a new history that are the same shared
/// objects: first at the same index (masking rewrites a few in place), else by address (drop-oldest keeps
/// a shifted suffix; the map is built only then).
struct KnownMeasures<'a> {
    contents: &'a [Content],
    measures: &'a [Measure],
    by_address: Option<HashMap<usize, Measure>>,
}

impl<'a> KnownMeasures<'a> {
    fn new(contents: &'a [Content], measures: &'a [Measure]) -> Self {
        KnownMeasures { contents, measures, by_address: None }
    }

    fn get(&mut self, index: usize, c: &Content) -> Option<Measure> {
        let id = object_id(c)?;
        if self.contents.get(index).and_then(object_id) == Some(id) {
            return self.measures.get(index).copied();
        }
        let (contents, measures) = (self.contents, self.measures);
        let map = self.by_address.get_or_insert_with(|| {
            contents.iter().zip(measures).filter_map(|(c, m)| Some((object_id(c)?, *m))).collect()
        });
        map.get(&id).copied()
    }
}

/// The address of a Content's shared object: equal addresses, same unchanged Content.
fn object_id(c: &Content) -> Option<usize> {
    match c {
        Value::Object(m) => Some(std::sync::Arc::as_ptr(m) as usize),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history;
    use crate::tokens;
    use proptest::prelude::*;

    proptest! {
        /// The running total is the same `f64` as summing the list in order, whatever was rewritten last.
        #[test]
        fn running_sum_equals_the_ordered_sum(ops in prop::collection::vec((any::<bool>(), 0.0f64..1e6), 0..60)) {
            let (mut run, mut list) = (RunningSum::<f64>::default(), Vec::<f64>::new());
            for (rewrite_last, v) in ops {
                if rewrite_last && !list.is_empty() {
                    *list.last_mut().unwrap() = v;
                    run.set_last(v);
                } else {
                    list.push(v);
                    run.push(v);
                }
            }
            // Bit for bit, but for the empty list's sign of zero (`0.0` here, `-0.0` from `sum`).
            let sum = list.iter().sum::<f64>();
            prop_assert!(run.total().to_bits() == sum.to_bits() || (list.is_empty() && run.total() == sum));
        }
    }

    fn text(role: &str, t: &str) -> Content {
        history::text_content(role, t)
    }

    /// A strategy's rewrite keeps the figures of the Contents it did not touch and measures the others:
    /// the totals equal a fresh measurement of the new history.
    #[test]
    fn replace_reuses_figures_of_unchanged_contents_and_totals_match() {
        futures::executor::block_on(async {
            let mut stored = Stored::new(Counting::o200k());
            for (i, t) in ["read src/a.rs", "ok: 12 lines", "now fix the test", "done, 3 passed"].iter().enumerate() {
                stored.push(&text(if i % 2 == 0 { "user" } else { "model" }, t), None).await.unwrap();
            }
            let serials_before = stored.serials();
            let mut new = stored.contents.clone();
            new[1] = text("model", "[masked]");
            new.push(text("user", "next"));
            stored.replace(new.clone()).await.unwrap();
            let mut fresh = Stored::new(Counting::o200k());
            for c in &new {
                fresh.push(c, None).await.unwrap();
            }
            assert_eq!(stored.heuristic(), fresh.heuristic());
            assert_eq!(stored.measured(), fresh.measured());
            let figures = |s: &Stored| s.measures.iter().map(|m| (m.est, m.tokens)).collect::<Vec<_>>();
            assert_eq!(figures(&stored), figures(&fresh));
            assert_eq!(
                stored.measured_of(&new).await.unwrap(),
                tokens::o200k_count_history(&new, crate::tokens::ImageBilling::Gemini)
            );
            assert_eq!(stored.measured(), tokens::o200k_count_history(&new, crate::tokens::ImageBilling::Gemini));
            // Unchanged Contents are the same shared objects, not copies, and keep their serials: the shared
            // prefix with the history before is the first Content only.
            assert_eq!(object_id(&stored.contents[0]), object_id(&new[0]));
            assert_eq!(stored.serials()[0], serials_before[0]);
            assert_eq!(
                stored.shared_prefix_tokens(&serials_before),
                tokens::o200k_count_history(&new[..1], crate::tokens::ImageBilling::Gemini)
            );
        });
    }
}
