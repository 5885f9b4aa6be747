//! JavaScript strings: UTF-16 semantics over a WTF-8 byte buffer.
//!
//! JS strings are sequences of UTF-16 code units and may hold lone surrogates (the reference's truncation
//! slices through surrogate pairs). We store them as WTF-8 (UTF-8 that also encodes lone surrogates as
//! three-byte sequences) and compute, once at construction, the figures every hot path needs: UTF-16
//! length, non-ASCII unit count, astral count and the extra characters `JSON.stringify` adds as escapes.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Per-string figures computed once when the string is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StrMetrics {
    /// Length in UTF-16 code units (JS `.length`).
    pub len16: u32,
    /// Code units above 127 (the token heuristic weighs these differently).
    pub non_ascii16: u32,
    /// Characters outside the BMP (each is two code units).
    pub astral: u32,
    /// Characters `JSON.stringify` adds beyond `len16` when escaping (quotes excluded).
    pub escape_extra: u32,
    /// Number of lone surrogates.
    pub lone: u32,
}

/// An immutable JS string. The bytes are shared: cloning a string (as truncation and `compress` do with
/// every kept part, and requests with every Content they send) bumps a count instead of copying the text.
/// The metrics live in the same allocation, ahead of the text, so a string is two words: a parsed history
/// holds thousands of short keys and values, and their size is most of its overhead over the text.
#[derive(Clone)]
pub struct JsStr {
    buf: Arc<[u8]>,
}

/// Bytes of the metrics header: five little-endian `u32`.
const HEADER: usize = 20;

impl StrMetrics {
    fn encode(&self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        for (i, v) in [self.len16, self.non_ascii16, self.astral, self.escape_extra, self.lone].into_iter().enumerate()
        {
            h[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        h
    }

    /// Adds the metrics of a string appended to this one (whole characters, no lone surrogates: every
    /// figure of a concatenation is then the sum of its pieces').
    fn add(&mut self, other: StrMetrics) {
        self.len16 += other.len16;
        self.non_ascii16 += other.non_ascii16;
        self.astral += other.astral;
        self.escape_extra += other.escape_extra;
    }

    fn decode(h: &[u8]) -> StrMetrics {
        let at = |i: usize| u32::from_le_bytes([h[i * 4], h[i * 4 + 1], h[i * 4 + 2], h[i * 4 + 3]]);
        StrMetrics { len16: at(0), non_ascii16: at(1), astral: at(2), escape_extra: at(3), lone: at(4) }
    }
}

/// One allocation holding the header and the concatenated pieces.
fn alloc_with_header(metrics: StrMetrics, pieces: &[&[u8]]) -> Arc<[u8]> {
    let len = HEADER + pieces.iter().map(|p| p.len()).sum::<usize>();
    let mut buf = Arc::<[u8]>::new_uninit_slice(len);
    let dst = Arc::get_mut(&mut buf).expect("a new Arc is not shared");
    let mut at = 0;
    for piece in std::iter::once(&metrics.encode()[..]).chain(pieces.iter().copied()) {
        let room = &mut dst[at..at + piece.len()];
        // SAFETY: `room` is exactly `piece.len()` bytes of a fresh allocation, so the two cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(piece.as_ptr(), room.as_mut_ptr().cast::<u8>(), piece.len()) };
        at += piece.len();
    }
    // SAFETY: the loop wrote every byte: the header and the pieces fill `len` exactly.
    unsafe { buf.assume_init() }
}

impl JsStr {
    /// Builds from a Rust string (always well formed).
    pub fn new(s: &str) -> Self {
        let metrics = measure_utf8(s.as_bytes());
        JsStr { buf: alloc_with_header(metrics, &[s.as_bytes()]) }
    }

    /// Builds from UTF-16 code units, keeping lone surrogates.
    pub fn from_utf16(units: &[u16]) -> Self {
        let mut bytes = Vec::with_capacity(units.len());
        for r in char::decode_utf16(units.iter().copied()) {
            match r {
                Ok(c) => {
                    let mut buf = [0u8; 4];
                    bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Err(e) => push_surrogate(&mut bytes, e.unpaired_surrogate()),
            }
        }
        // SAFETY: UTF-8 encodings of scalar values and WTF-8 encodings of lone surrogates: well-formed WTF-8.
        unsafe { Self::from_wtf8_unchecked(bytes) }
    }

    /// Builds from WTF-8 bytes produced by this module (parser, slicing).
    ///
    /// # Safety
    ///
    /// `bytes` must be well-formed WTF-8: UTF-8 in which lone surrogates (only) may appear, encoded as
    /// three-byte sequences. [`JsStr::as_str`] and [`JsStr::to_str_lossy`] hand out the bytes as `&str`
    /// without checking when the measured string holds no lone surrogate.
    pub(crate) unsafe fn from_wtf8_unchecked(bytes: Vec<u8>) -> Self {
        let metrics = measure_utf8(&bytes);
        JsStr { buf: alloc_with_header(metrics, &[&bytes]) }
    }

    pub fn metrics(&self) -> StrMetrics {
        StrMetrics::decode(&self.buf[..HEADER])
    }

    /// The WTF-8 text after the header.
    fn bytes(&self) -> &[u8] {
        &self.buf[HEADER..]
    }

    /// JS `.length`.
    pub fn len16(&self) -> usize {
        self.metrics().len16 as usize
    }

    pub fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// True when the string holds a lone surrogate (not representable as `&str`).
    pub fn has_lone_surrogate(&self) -> bool {
        self.metrics().lone > 0
    }

    /// The WTF-8 bytes (UTF-8 when there is no lone surrogate).
    pub fn as_wtf8(&self) -> &[u8] {
        self.bytes()
    }

    /// The string as Rust text; lone surrogates become U+FFFD (as when JS writes the string to a UTF-8 file).
    pub fn to_str_lossy(&self) -> Cow<'_, str> {
        if self.metrics().lone == 0 {
            // SAFETY: without lone surrogates WTF-8 is UTF-8; every constructor measured the bytes.
            Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(self.bytes()) })
        } else {
            let units = self.to_utf16();
            Cow::Owned(String::from_utf16_lossy(&units))
        }
    }

    /// The string when it is well-formed Unicode.
    pub fn as_str(&self) -> Option<&str> {
        if self.metrics().lone == 0 {
            // SAFETY: as in `to_str_lossy`.
            Some(unsafe { std::str::from_utf8_unchecked(self.bytes()) })
        } else {
            None
        }
    }

    /// The UTF-16 code units.
    pub fn to_utf16(&self) -> Vec<u16> {
        let mut out = Vec::with_capacity(self.len16());
        self.for_each_unit(|u| out.push(u));
        out
    }

    /// Calls `f` with each UTF-16 code unit in order.
    pub fn for_each_unit(&self, mut f: impl FnMut(u16)) {
        let b = self.bytes();
        let mut i = 0;
        while i < b.len() {
            let x = b[i];
            if x < 0x80 {
                f(x as u16);
                i += 1;
            } else if x < 0xE0 {
                f((((x & 0x1F) as u16) << 6) | (b[i + 1] & 0x3F) as u16);
                i += 2;
            } else if x < 0xF0 {
                f((((x & 0x0F) as u16) << 12) | (((b[i + 1] & 0x3F) as u16) << 6) | (b[i + 2] & 0x3F) as u16);
                i += 3;
            } else {
                let c = (((x & 0x07) as u32) << 18)
                    | (((b[i + 1] & 0x3F) as u32) << 12)
                    | (((b[i + 2] & 0x3F) as u32) << 6)
                    | (b[i + 3] & 0x3F) as u32;
                let c = c - 0x10000;
                f(0xD800 | (c >> 10) as u16);
                f(0xDC00 | (c & 0x3FF) as u16);
                i += 4;
            }
        }
    }

    /// JS `s.slice(start, end)` with both bounds already clamped to `0..=len16` and `start <= end`.
    /// Cutting through a surrogate pair leaves a lone surrogate, as in JS.
    pub fn slice16(&self, start: usize, end: usize) -> JsStr {
        if start == 0 && end == self.len16() {
            return self.clone();
        }
        if self.metrics().astral == 0 && self.metrics().lone == 0 && self.metrics().non_ascii16 == 0 {
            // SAFETY: an all-ASCII string: any byte range of it is ASCII.
            return unsafe { JsStr::from_wtf8_unchecked(self.bytes()[start..end].to_vec()) };
        }
        // Both bounds on character boundaries: a byte slice of well-formed WTF-8 is the same string.
        if let (Some(a), Some(b)) = (self.byte_offset16(start), self.byte_offset16(end)) {
            // SAFETY: both offsets fall on code point boundaries of well-formed WTF-8.
            return unsafe { JsStr::from_wtf8_unchecked(self.bytes()[a..b].to_vec()) };
        }
        let units = self.to_utf16();
        JsStr::from_utf16(&units[start..end])
    }

    /// Byte offset of UTF-16 unit `u` (`u <= len16`); `None` when `u` falls between the two halves of a
    /// surrogate pair. Whole 64-byte blocks are counted at once (a block's units are its bytes that start
    /// a character, plus one for each four-byte lead), then the last stretch is walked character by
    /// character: placeholders cut 8 000 and 32 000 units into every large output.
    fn byte_offset16(&self, u: usize) -> Option<usize> {
        const BLOCK: usize = 64;
        let b = self.bytes();
        if self.metrics().non_ascii16 == 0 {
            return Some(u);
        }
        let (mut units, mut i) = (0, 0);
        while let Some(block) = b.get(i..i + BLOCK) {
            // u8 lanes: at most 2 × 64 per block, and the loop vectorises.
            let n = usize::from(block.iter().fold(0u8, |n, &x| n + u8::from(x & 0xC0 != 0x80) + u8::from(x >= 0xF0)));
            if units + n > u {
                break;
            }
            units += n;
            i += BLOCK;
        }
        // The last skipped block may end inside a character it already counted.
        while i < b.len() && b[i] & 0xC0 == 0x80 {
            i += 1;
        }
        while units < u {
            let (bytes, width) = match b[i] {
                0..=0x7F => (1, 1),
                0x80..=0xDF => (2, 1),
                0xE0..=0xEF => (3, 1),
                _ => (4, 2),
            };
            units += width;
            i += bytes;
        }
        (units == u).then_some(i)
    }

    /// JS `String.prototype.slice` with JS index rules (negative from the end, clamped).
    pub fn js_slice(&self, start: i64, end: Option<i64>) -> JsStr {
        let (s, e) = self.js_range(start, end);
        if s >= e {
            return JsStr::new("");
        }
        self.slice16(s, e)
    }

    /// The UTF-16 range `s.slice(start, end)` takes (empty when `start >= end`).
    pub fn js_range(&self, start: i64, end: Option<i64>) -> (usize, usize) {
        let len = self.len16() as i64;
        let norm = |i: i64| if i < 0 { (len + i).max(0) } else { i.min(len) };
        let s = norm(start);
        let e = end.map(norm).unwrap_or(len);
        (s as usize, e.max(s) as usize)
    }

    /// Concatenates UTF-16 ranges of strings (each `(string, start, end)`, clamped as `slice16` wants) in
    /// one allocation: the same string as `concat` of the `slice16`s, without building the slices. Used
    /// for truncation placeholders, which cut 40 000 characters out of every large output.
    pub fn concat_ranges(pieces: &[(&JsStr, usize, usize)]) -> JsStr {
        let mut bytes: Vec<&[u8]> = Vec::with_capacity(pieces.len());
        let mut m = StrMetrics::default();
        for &(p, start, end) in pieces {
            let pm = p.metrics();
            let whole = start == 0 && end == p.len16();
            let range = if pm.lone > 0 {
                None
            } else if whole {
                Some((0, p.bytes().len()))
            } else {
                p.byte_offset16(start).zip(p.byte_offset16(end))
            };
            // A cut through a surrogate pair or a lone surrogate: the general path re-pairs halves.
            let Some((a, b)) = range else {
                let slices: Vec<JsStr> = pieces.iter().map(|&(p, s, e)| p.slice16(s, e)).collect();
                return JsStr::concat(&slices.iter().collect::<Vec<_>>());
            };
            let part = &p.bytes()[a..b];
            m.add(if whole { pm } else { measure_utf8(part) });
            bytes.push(part);
        }
        let out = JsStr { buf: alloc_with_header(m, &bytes) };
        debug_assert_eq!(m, measure_utf8(out.bytes()));
        out
    }

    /// Concatenates pieces (WTF-8 concatenation re-pairs adjacent halves, as JS concatenation does).
    pub fn concat(pieces: &[&JsStr]) -> JsStr {
        if pieces.iter().all(|p| p.metrics().lone == 0) {
            // Whole characters and no lone surrogates: every metric of the result is the sum of the pieces'.
            let mut m = StrMetrics::default();
            for p in pieces {
                m.add(p.metrics());
            }
            let parts: Vec<&[u8]> = pieces.iter().map(|p| p.bytes()).collect();
            let out = JsStr { buf: alloc_with_header(m, &parts) };
            debug_assert_eq!(m, measure_utf8(out.bytes()));
            return out;
        }
        let mut units = Vec::new();
        for p in pieces {
            p.for_each_unit(|u| units.push(u));
        }
        JsStr::from_utf16(&units)
    }

    /// Appends the JSON string literal (with quotes) as `JSON.stringify` writes it.
    pub fn write_json(&self, out: &mut String) {
        out.push('"');
        let m = self.metrics();
        if m.escape_extra == 0 && m.lone == 0 && !needs_escape_any(self.bytes()) {
            out.push_str(self.as_str().unwrap_or_default());
        } else {
            self.write_escaped(out);
        }
        out.push('"');
    }

    fn write_escaped(&self, out: &mut String) {
        let b = self.bytes();
        let mut i = 0;
        let mut run_start = 0;
        while i < b.len() {
            let x = b[i];
            let esc: Option<&str> = match x {
                b'"' => Some("\\\""),
                b'\\' => Some("\\\\"),
                0x08 => Some("\\b"),
                0x09 => Some("\\t"),
                0x0A => Some("\\n"),
                0x0C => Some("\\f"),
                0x0D => Some("\\r"),
                _ => None,
            };
            if let Some(e) = esc {
                push_bytes(out, &b[run_start..i]);
                out.push_str(e);
                i += 1;
                run_start = i;
            } else if x < 0x20 {
                push_bytes(out, &b[run_start..i]);
                out.push_str(&format!("\\u{:04x}", x));
                i += 1;
                run_start = i;
            } else if x == 0xED && i + 1 < b.len() && b[i + 1] >= 0xA0 {
                // A lone surrogate encoded in WTF-8.
                push_bytes(out, &b[run_start..i]);
                let u = (((x & 0x0F) as u16) << 12) | (((b[i + 1] & 0x3F) as u16) << 6) | (b[i + 2] & 0x3F) as u16;
                out.push_str(&format!("\\u{:04x}", u));
                i += 3;
                run_start = i;
            } else {
                i += 1;
            }
        }
        push_bytes(out, &b[run_start..]);
    }
}

fn push_bytes(out: &mut String, bytes: &[u8]) {
    // SAFETY-free path: runs between escapes are valid UTF-8 (surrogates are cut out above).
    out.push_str(std::str::from_utf8(bytes).expect("WTF-8 run without surrogates is UTF-8"));
}

fn needs_escape_any(b: &[u8]) -> bool {
    b.iter().any(|&x| x < 0x20 || x == b'"' || x == b'\\')
}

pub(crate) fn push_surrogate(bytes: &mut Vec<u8>, u: u16) {
    bytes.push(0xE0 | (u >> 12) as u8);
    bytes.push(0x80 | ((u >> 6) & 0x3F) as u8);
    bytes.push(0x80 | (u & 0x3F) as u8);
}

/// Measures WTF-8 bytes in one branch-free pass the compiler vectorises: each byte class is counted in
/// 16 `u8` lanes over blocks of at most 255 iterations, then widened. Only strings holding a `0xED` lead
/// byte (U+D000..U+DFFF, which includes WTF-8 lone surrogates) take a second, scalar look for surrogates.
pub(crate) fn measure_utf8(b: &[u8]) -> StrMetrics {
    const LANES: usize = 16;
    // Per block: non-continuation bytes, 4-byte leads, ASCII, control characters, controls with a short
    // escape (\b \t \n \f \r), `"` or `\\`, and 0xED leads.
    let mut totals = [0u64; 7];
    let mut blocks = b.chunks_exact(LANES * 255);
    let count_block = |block: &[u8], totals: &mut [u64; 7]| {
        let mut acc = [[0u8; LANES]; 7];
        for c in block.chunks_exact(LANES) {
            for j in 0..LANES {
                let x = c[j];
                acc[0][j] += ((x as i8) >= -64) as u8;
                acc[1][j] += (x >= 0xF0) as u8;
                acc[2][j] += (x < 0x80) as u8;
                acc[3][j] += (x < 0x20) as u8;
                acc[4][j] += (((x.wrapping_sub(8)) < 6) & (x != 0x0B)) as u8;
                acc[5][j] += ((x == b'"') | (x == b'\\')) as u8;
                acc[6][j] += (x == 0xED) as u8;
            }
        }
        for (t, a) in totals.iter_mut().zip(acc.iter()) {
            *t += a.iter().map(|&v| v as u64).sum::<u64>();
        }
    };
    for block in &mut blocks {
        count_block(block, &mut totals);
    }
    let rest = blocks.remainder();
    let whole = rest.len() / LANES * LANES;
    count_block(&rest[..whole], &mut totals);
    for &x in &rest[whole..] {
        totals[0] += ((x as i8) >= -64) as u64;
        totals[1] += (x >= 0xF0) as u64;
        totals[2] += (x < 0x80) as u64;
        totals[3] += (x < 0x20) as u64;
        totals[4] += (((x.wrapping_sub(8)) < 6) & (x != 0x0B)) as u64;
        totals[5] += ((x == b'"') | (x == b'\\')) as u64;
        totals[6] += (x == 0xED) as u64;
    }
    let [non_cont, four, ascii, ctrl, short, quote_bs, ed] = totals;
    // `"` and `\\` and the five short escapes add one character, other controls `\u00XX` add five.
    let mut escape_extra = 5 * ctrl - 4 * short + quote_bs;
    let mut lone = 0u64;
    if ed > 0 {
        for w in b.windows(2) {
            if w[0] == 0xED && w[1] >= 0xA0 {
                // A lone surrogate: one UTF-16 unit written as a 6-character escape.
                lone += 1;
                escape_extra += 5;
            }
        }
    }
    let len16 = non_cont + four;
    StrMetrics {
        len16: len16 as u32,
        non_ascii16: (len16 - ascii) as u32,
        astral: four as u32,
        escape_extra: escape_extra as u32,
        lone: lone as u32,
    }
}

/// The metrics as the previous two-pass scalar code computed them (kept to check the vectorised one).
#[cfg(test)]
fn measure_scalar(b: &[u8]) -> StrMetrics {
    let (mut len16, mut non_ascii16, mut astral, mut escape_extra, mut lone) = (0u32, 0u32, 0u32, 0u32, 0u32);
    let mut i = 0;
    while i < b.len() {
        let x = b[i];
        match x {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0A | 0x0C | 0x0D => escape_extra += 1,
            0..=0x1F => escape_extra += 5,
            0xED if i + 1 < b.len() && b[i + 1] >= 0xA0 => {
                lone += 1;
                escape_extra += 5;
            }
            _ => {}
        }
        let (n, w) = match x {
            0..=0x7F => (1, 1),
            0x80..=0xDF => (2, 1),
            0xE0..=0xEF => (3, 1),
            _ => (4, 2),
        };
        len16 += w;
        if x >= 0x80 {
            non_ascii16 += w;
        }
        if n == 4 {
            astral += 1;
        }
        i += n;
    }
    StrMetrics { len16, non_ascii16, astral, escape_extra, lone }
}

impl PartialEq for JsStr {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}
impl Eq for JsStr {}

impl Hash for JsStr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bytes().hash(state)
    }
}

impl Borrow<[u8]> for JsStr {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

impl PartialOrd for JsStr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for JsStr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.bytes().cmp(other.bytes())
    }
}

impl fmt::Debug for JsStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.to_str_lossy(), f)
    }
}

impl fmt::Display for JsStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_str_lossy())
    }
}

impl From<&str> for JsStr {
    fn from(s: &str) -> Self {
        JsStr::new(s)
    }
}
impl From<String> for JsStr {
    fn from(s: String) -> Self {
        JsStr::new(&s)
    }
}

impl serde::Serialize for JsStr {
    /// Lossy for lone surrogates (serde strings are UTF-8); use `json::to_string` for exact output.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_str_lossy())
    }
}

impl<'de> serde::Deserialize<'de> for JsStr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(JsStr::from)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// UTF-16 strings with ASCII, non-ASCII, astral characters and lone surrogates.
    fn units() -> impl Strategy<Value = Vec<u16>> {
        let unit = prop::sample::select(vec![0x61u16, 0x22, 0x0A, 0xE9, 0x4E2D, 0xD83D, 0xDE00, 0xDC00, 0xD800]);
        prop::collection::vec(unit, 0..40)
    }

    proptest! {
        /// One allocation or not, the concatenation of ranges is the concatenation of the slices.
        #[test]
        fn concat_ranges_equals_concat_of_slices(a in units(), b in units(), cuts in prop::collection::vec(0usize..41, 4)) {
            let (a, b) = (JsStr::from_utf16(&a), JsStr::from_utf16(&b));
            let range = |s: &JsStr, x: usize, y: usize| {
                let (x, y) = (x.min(s.len16()), y.min(s.len16()));
                (x.min(y), x.max(y))
            };
            let (a0, a1) = range(&a, cuts[0], cuts[1]);
            let (b0, b1) = range(&b, cuts[2], cuts[3]);
            let fast = JsStr::concat_ranges(&[(&a, a0, a1), (&b, b0, b1), (&a, 0, a.len16())]);
            let slow = JsStr::concat(&[&a.slice16(a0, a1), &b.slice16(b0, b1), &a]);
            prop_assert_eq!(fast.to_utf16(), slow.to_utf16());
            prop_assert_eq!(fast.metrics(), slow.metrics());
        }
    }

    use super::*;

    #[test]
    fn metrics_of_mixed_text() {
        let s = JsStr::new("a\"é😀\u{1}\n");
        let m = s.metrics();
        assert_eq!(m.len16, 7);
        assert_eq!(m.non_ascii16, 3);
        assert_eq!(m.astral, 1);
        assert_eq!(m.escape_extra, 1 + 5 + 1);
    }

    #[test]
    fn slicing_through_a_pair_leaves_a_lone_surrogate() {
        let s = JsStr::new("x😀y");
        let head = s.slice16(0, 2);
        assert!(head.has_lone_surrogate());
        assert_eq!(head.len16(), 2);
        let mut out = String::new();
        head.write_json(&mut out);
        assert_eq!(out, "\"x\\ud83d\"");
        assert_eq!(head.metrics().escape_extra, 5);
        let tail = s.slice16(2, 4);
        let joined = JsStr::concat(&[&head, &tail]);
        assert_eq!(joined, s);
    }

    #[test]
    fn slicing_by_bytes_matches_slicing_units() {
        let pieces = ["a", "é", "中", "😀", "\u{1}", "\""];
        let mut s = JsStr::new("");
        for i in 0..24 {
            s = JsStr::concat(&[&s, &JsStr::new(pieces[(i * 7 + i / 3) % pieces.len()])]);
        }
        let lone = JsStr::concat(&[&s.slice16(0, 5), &JsStr::new("x"), &JsStr::new("😀").slice16(1, 2), &s]);
        for s in [s, lone] {
            let units = s.to_utf16();
            for start in 0..=units.len() {
                for end in start..=units.len() {
                    let got = s.slice16(start, end);
                    let want = JsStr::from_utf16(&units[start..end]);
                    assert_eq!(got, want, "{start}..{end}");
                    assert_eq!(got.metrics(), want.metrics(), "{start}..{end}");
                }
            }
        }
    }

    #[test]
    fn vectorised_metrics_match_the_scalar_count() {
        let pieces: [&[u8]; 12] = [
            b"a",
            "é".as_bytes(),
            "中".as_bytes(),
            "😀".as_bytes(),
            b"\x01",
            b"\"",
            b"\\",
            b"\n",
            b"\x0b",
            b"\x1f",
            "\u{D55C}".as_bytes(),
            b"\xED\xA0\x80",
        ];
        let mut bytes = Vec::new();
        for n in 0..9000usize {
            if n % 97 == 0 || n > 8990 {
                assert_eq!(measure_utf8(&bytes), measure_scalar(&bytes), "after {n} pieces");
            }
            bytes.extend_from_slice(pieces[(n * 5 + n / 11) % pieces.len()]);
        }
    }

    #[test]
    fn js_slice_rules() {
        let s = JsStr::new("abcdefghij");
        assert_eq!(s.js_slice(0, Some(-1)).to_str_lossy(), "abcdefghi");
        assert_eq!(s.js_slice(4, None).to_str_lossy(), "efghij");
        assert_eq!(s.js_slice(-0, None).to_str_lossy(), "abcdefghij");
        assert_eq!(s.js_slice(-3, None).to_str_lossy(), "hij");
    }
}
