//! A strict RFC 8259 parser into [`Value`] that accepts what `JSON.parse` accepts, including lone
//! surrogate escapes (`"\ud800"`), and reports errors with line, column and JSON path.

use super::number::JsNumber;
use super::path::{JsonPath, PathSeg};
use super::string::{push_surrogate, JsStr};
use super::value::{Map, Value};
use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub path: String,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {} (at {}): {}", self.line, self.column, self.path, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Nesting limit: deeper input is rejected instead of overflowing the stack.
const MAX_DEPTH: usize = 512;

pub fn parse(input: &[u8]) -> Result<Value, ParseError> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let mut p = Parser { b: input, i: 0, path: JsonPath::default(), short: HashMap::new() };
    p.ws();
    let v = p.value()?;
    p.ws();
    if p.i != p.b.len() {
        return Err(p.err("unexpected data after the JSON value"));
    }
    Ok(v)
}

pub fn parse_str(input: &str) -> Result<Value, ParseError> {
    parse(input.as_bytes())
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    path: JsonPath,
    /// Short strings seen so far (keys such as `role`, `parts`, `text`, values such as `user`): each is
    /// allocated once and shared, which keeps a parsed history close to the size of its text.
    short: HashMap<&'a [u8], JsStr>,
}

/// Strings up to this many bytes are interned.
const SHORT_STRING: usize = 24;

impl Parser<'_> {
    fn err(&self, message: impl Into<String>) -> ParseError {
        let upto = &self.b[..self.i.min(self.b.len())];
        let line = upto.iter().filter(|&&c| c == b'\n').count() + 1;
        let line_start = upto.iter().rposition(|&c| c == b'\n').map(|p| p + 1).unwrap_or(0);
        let column = String::from_utf8_lossy(&upto[line_start..]).chars().count() + 1;
        ParseError { line, column, path: self.path.to_string(), message: message.into() }
    }

    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        if self.path.depth() > MAX_DEPTH {
            return Err(self.err("nesting deeper than 512 levels"));
        }
        match self.b.get(self.i) {
            None => Err(self.err("unexpected end of input, expected a value")),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(&c) => Err(self.err(format!("unexpected character {}", describe(c)))),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, ParseError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err(format!("invalid literal, expected `{word}`")))
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                    self.i += 1;
                }
            }
            _ => return Err(self.err("invalid number")),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return Err(self.err("invalid number: expected a digit after the decimal point"));
            }
            while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return Err(self.err("invalid number: expected a digit in the exponent"));
            }
            while matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        // The lexeme is ASCII by construction.
        let lexeme = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("0");
        Ok(Value::Number(JsNumber::parse_lexeme(lexeme)))
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let h = self.b.get(self.i..self.i + 4).ok_or_else(|| self.err("truncated \\u escape"))?;
        let s = std::str::from_utf8(h).map_err(|_| self.err("invalid \\u escape"))?;
        let v = u16::from_str_radix(s, 16).map_err(|_| self.err("invalid \\u escape"))?;
        if !h.iter().all(u8::is_ascii_hexdigit) {
            return Err(self.err("invalid \\u escape"));
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<JsStr, ParseError> {
        debug_assert_eq!(self.b[self.i], b'"');
        self.i += 1;
        let start = self.i;
        match self.unescaped_string(start)? {
            Some(s) => Ok(s),
            None => self.escaped_string(start),
        }
    }

    /// Fast path: a string without escapes, valid UTF-8, up to its closing quote. `None`, at the first
    /// escape or control character (or the end of the input), when the slow path must take over.
    fn unescaped_string(&mut self, start: usize) -> Result<Option<JsStr>, ParseError> {
        while let Some(&c) = self.b.get(self.i) {
            if c == b'"' {
                let raw = &self.b[start..self.i];
                let s = std::str::from_utf8(raw).map_err(|e| {
                    self.i = start + e.valid_up_to();
                    self.err("invalid UTF-8 in string")
                })?;
                self.i += 1;
                if raw.len() <= SHORT_STRING {
                    return Ok(Some(self.short.entry(raw).or_insert_with(|| JsStr::new(s)).clone()));
                }
                return Ok(Some(JsStr::new(s)));
            }
            if c == b'\\' || c < 0x20 {
                break;
            }
            self.i += 1;
        }
        Ok(None)
    }

    /// Slow path: the string from `start` (opening quote consumed) with its escapes decoded, continuing where
    /// the fast path stopped.
    fn escaped_string(&mut self, start: usize) -> Result<JsStr, ParseError> {
        // Escapes only shorten the text, so the raw length up to the closing quote bounds the decoded one:
        // sized once, the buffer never doubles (a large output would otherwise peak at 3× its size here).
        let mut bound = self.i;
        while let Some(&c) = self.b.get(bound) {
            match c {
                b'"' => break,
                b'\\' => bound += 2,
                _ => bound += 1,
            }
        }
        let mut out: Vec<u8> = Vec::with_capacity(bound.min(self.b.len()) - start);
        out.extend_from_slice(&self.b[start..self.i]);
        let mut pending_high: Option<u16> = None;
        loop {
            let Some(&c) = self.b.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            if c != b'\\' {
                if let Some(h) = pending_high.take() {
                    push_surrogate(&mut out, h);
                }
            }
            match c {
                b'"' => {
                    self.i += 1;
                    break;
                }
                b'\\' => self.escape(&mut out, &mut pending_high)?,
                0..=0x1F => return Err(self.err("control character in string (must be escaped)")),
                _ => self.plain_run(&mut out)?,
            }
        }
        // SAFETY: raw runs were checked as UTF-8 above and escapes were encoded as UTF-8 or, for lone
        // surrogates, as WTF-8: `out` is well-formed WTF-8.
        Ok(unsafe { JsStr::from_wtf8_unchecked(out) })
    }

    /// One escape, at its backslash, decoded into `out`. A high surrogate waits in `pending_high` for the low
    /// one that may follow; anything else first writes it out alone.
    fn escape(&mut self, out: &mut Vec<u8>, pending_high: &mut Option<u16>) -> Result<(), ParseError> {
        self.i += 1;
        let Some(&e) = self.b.get(self.i) else {
            return Err(self.err("unterminated string"));
        };
        self.i += 1;
        let simple = match e {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(0x08),
            b'f' => Some(0x0C),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'u' => None,
            _ => {
                self.i -= 1;
                return Err(self.err(format!("invalid escape `\\{}`", e as char)));
            }
        };
        if let Some(ch) = simple {
            if let Some(h) = pending_high.take() {
                push_surrogate(out, h);
            }
            out.push(ch);
            return Ok(());
        }
        let u = self.hex4()?;
        push_code_unit(out, pending_high, u);
        Ok(())
    }

    /// Copies a run of plain bytes into `out`, validating UTF-8.
    fn plain_run(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        let run_start = self.i;
        while let Some(&d) = self.b.get(self.i) {
            if d == b'"' || d == b'\\' || d < 0x20 {
                break;
            }
            self.i += 1;
        }
        let run = &self.b[run_start..self.i];
        if let Err(e) = std::str::from_utf8(run) {
            self.i = run_start + e.valid_up_to();
            return Err(self.err("invalid UTF-8 in string"));
        }
        out.extend_from_slice(run);
        Ok(())
    }

    fn array(&mut self) -> Result<Value, ParseError> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.path.push(PathSeg::Index(items.len()));
            self.ws();
            let v = self.value()?;
            items.push(v);
            self.ws();
            self.path.pop();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    items.shrink_to_fit();
                    return Ok(Value::Array(items));
                }
                None => return Err(self.err("unexpected end of input inside an array")),
                Some(&c) => return Err(self.err(format!("expected `,` or `]`, found {}", describe(c)))),
            }
        }
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.i += 1;
        let mut map = Map::default();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Object(std::sync::Arc::new(map)));
        }
        loop {
            self.ws();
            match self.b.get(self.i) {
                Some(b'"') => {}
                None => return Err(self.err("unexpected end of input inside an object")),
                Some(&c) => return Err(self.err(format!("expected a string key, found {}", describe(c)))),
            }
            let key = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err("expected `:` after an object key"));
            }
            self.i += 1;
            self.ws();
            self.path.push(PathSeg::Key(key.clone()));
            let v = self.value()?;
            self.path.pop();
            // JS: the last duplicate wins, at the position of the first.
            map.insert(key, v);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    // Growth leaves up to half of a small map's slots empty; histories hold many small maps.
                    map.shrink_to_fit();
                    return Ok(Value::Object(std::sync::Arc::new(map)));
                }
                None => return Err(self.err("unexpected end of input inside an object")),
                Some(&c) => return Err(self.err(format!("expected `,` or `}}`, found {}", describe(c)))),
            }
        }
    }
}

/// The UTF-16 code unit of a `\u` escape, into `out`: a low surrogate completes a pending high one into one
/// character; a surrogate left alone is kept as `JSON.parse` keeps it (WTF-8).
fn push_code_unit(out: &mut Vec<u8>, pending_high: &mut Option<u16>, u: u16) {
    match u {
        0xD800..=0xDBFF => {
            if let Some(h) = pending_high.replace(u) {
                push_surrogate(out, h);
            }
        }
        0xDC00..=0xDFFF => {
            if let Some(h) = pending_high.take() {
                let c = 0x10000 + (((h as u32) - 0xD800) << 10) + (u as u32 - 0xDC00);
                let ch = char::from_u32(c).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            } else {
                push_surrogate(out, u);
            }
        }
        _ => {
            if let Some(h) = pending_high.take() {
                push_surrogate(out, h);
            }
            let ch = char::from_u32(u as u32).unwrap_or('\u{FFFD}');
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
    }
}

fn describe(c: u8) -> String {
    if c.is_ascii_graphic() {
        format!("`{}`", c as char)
    } else {
        format!("byte 0x{c:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_line_column_and_path() {
        let e = parse_str("[{\"role\": \"user\",\n \"parts\": [{\"text\": tru}]}]").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.path, "$[0].parts[0].text");
        assert!(e.message.contains("literal"));
        let e = parse_str("[1, 2").unwrap_err();
        assert!(e.message.contains("end of input"), "{e}");
        assert!(parse(b"\"\xff\"").unwrap_err().message.contains("UTF-8"));
    }

    #[test]
    fn lone_surrogates_survive() {
        let v = parse_str(r#""a\ud83d""#).unwrap();
        let s = v.as_js_str().unwrap();
        assert!(s.has_lone_surrogate());
        assert_eq!(s.len16(), 2);
        let v = parse_str(r#""\ud83d\ude00""#).unwrap();
        assert_eq!(v.as_str(), Some("😀"));
        let v = parse_str(r#""\udc00\ud800""#).unwrap();
        assert_eq!(v.as_js_str().unwrap().metrics().lone, 2);
    }

    #[test]
    fn duplicate_keys_last_wins_first_position() {
        let v = parse_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(v.get("a").unwrap().as_f64(), Some(3.0));
    }
}
