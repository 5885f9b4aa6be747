//! Writers: `JSON.stringify(x)` (compact), `JSON.stringify(x, null, 2)` (pretty), and lengths of both
//! computed without building the string.

use super::value::Value;

/// How numbers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbers {
    /// As JavaScript prints the double (`1.0` → `1`).
    Js,
    /// The lexeme read from the source file when there was one (byte-faithful re-export).
    Source,
}

/// `JSON.stringify(v)`.
pub fn to_string(v: &Value) -> String {
    let mut out = String::with_capacity(jslen(v));
    write_compact(v, Numbers::Js, &mut out);
    out
}

/// `JSON.stringify(v, null, 2)`.
pub fn to_string_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_pretty(v, Numbers::Js, 0, &mut out);
    out
}

/// Compact output keeping source number lexemes.
pub fn to_string_source(v: &Value) -> String {
    let mut out = String::new();
    write_compact(v, Numbers::Source, &mut out);
    out
}

/// Pretty (2-space) output keeping source number lexemes.
pub fn to_string_pretty_source(v: &Value) -> String {
    let mut out = String::new();
    write_pretty(v, Numbers::Source, 0, &mut out);
    out
}

fn write_number(n: &super::number::JsNumber, numbers: Numbers, out: &mut String) {
    match (numbers, n.raw()) {
        (Numbers::Source, Some(raw)) => out.push_str(raw),
        _ => n.write_js(out),
    }
}

pub fn write_compact(v: &Value, numbers: Numbers, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, numbers, out),
        Value::String(s) => s.write_json(out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(x, numbers, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                k.write_json(out);
                out.push(':');
                write_compact(x, numbers, out);
            }
            out.push('}');
        }
    }
}

fn indent(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

pub fn write_pretty(v: &Value, numbers: Numbers, level: usize, out: &mut String) {
    match v {
        Value::Array(a) if !a.is_empty() => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                write_pretty(x, numbers, level + 1, out);
            }
            indent(out, level);
            out.push(']');
        }
        Value::Object(m) if !m.is_empty() => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, level + 1);
                k.write_json(out);
                out.push_str(": ");
                write_pretty(x, numbers, level + 1, out);
            }
            indent(out, level);
            out.push('}');
        }
        _ => write_compact(v, numbers, out),
    }
}

/// Length of `JSON.stringify(v)` in UTF-16 code units, without building it.
pub fn jslen(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => n.js_len(),
        Value::String(s) => str_jslen(s),
        Value::Array(a) => 2 + a.len().saturating_sub(1) + a.iter().map(jslen).sum::<usize>(),
        Value::Object(m) => {
            2 + m.len().saturating_sub(1) + m.iter().map(|(k, x)| str_jslen(k) + 1 + jslen(x)).sum::<usize>()
        }
    }
}

#[inline]
pub fn str_jslen(s: &super::string::JsStr) -> usize {
    let m = s.metrics();
    2 + m.len16 as usize + m.escape_extra as usize
}

/// Length of `JSON.stringify(v)` in UTF-8 bytes (`to_string(v).len()`), without building it: from the
/// strings' cached metrics, so its cost is per node, not per byte.
pub fn utf8_len(v: &Value) -> usize {
    match v {
        Value::String(s) => str_utf8_len(s),
        Value::Array(a) => 2 + a.len().saturating_sub(1) + a.iter().map(utf8_len).sum::<usize>(),
        Value::Object(m) => {
            2 + m.len().saturating_sub(1) + m.iter().map(|(k, x)| str_utf8_len(k) + 1 + utf8_len(x)).sum::<usize>()
        }
        // Literals and numbers are ASCII: bytes and code units agree.
        _ => jslen(v),
    }
}

/// Bytes of a JSON string literal: the quotes, the text's WTF-8 bytes and what escaping adds. Escapes
/// replace ASCII characters with ASCII, so they add as many bytes as code units, except a lone surrogate:
/// 3 WTF-8 bytes written as the 6 of `\udxxx` (+3), which the metrics count as 1 unit growing to 6 (+5).
fn str_utf8_len(s: &super::string::JsStr) -> usize {
    let m = s.metrics();
    2 + s.as_wtf8().len() + m.escape_extra as usize - 2 * m.lone as usize
}

/// Length of `JSON.stringify(v, null, 2)` in UTF-16 code units.
pub fn pretty_len(v: &Value) -> usize {
    pretty_len_at(v, 0)
}

fn pretty_len_at(v: &Value, level: usize) -> usize {
    match v {
        Value::Array(a) if !a.is_empty() => {
            // "[" + per item: newline + indent + item, commas between, then newline + indent + "]"
            let inner: usize = a.iter().map(|x| 1 + 2 * (level + 1) + pretty_len_at(x, level + 1)).sum();
            2 + inner + (a.len() - 1) + 1 + 2 * level
        }
        Value::Object(m) if !m.is_empty() => {
            let inner: usize =
                m.iter().map(|(k, x)| 1 + 2 * (level + 1) + str_jslen(k) + 2 + pretty_len_at(x, level + 1)).sum();
            2 + inner + (m.len() - 1) + 1 + 2 * level
        }
        _ => jslen(v),
    }
}

/// UTF-16 code units above 127 in `JSON.stringify(v)` (escapes are ASCII, so compact and pretty agree).
pub fn non_ascii16(v: &Value) -> usize {
    match v {
        Value::String(s) => s.metrics().non_ascii16 as usize,
        Value::Array(a) => a.iter().map(non_ascii16).sum(),
        Value::Object(m) => m.iter().map(|(k, x)| k.metrics().non_ascii16 as usize + non_ascii16(x)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_str;
    use super::*;

    #[test]
    fn oracle_string_length() {
        // measured on the original TypeScript: "\u007f\u2028\u0001\u001f\ud800/<>&é😀" → 29
        let v = parse_str(r#""\u007f\u2028\u0001\u001f\ud800/<>&é😀""#).unwrap();
        assert_eq!(jslen(&v), 29);
        assert_eq!(to_string(&v).encode_utf16().count(), 29);
    }

    #[test]
    fn pretty_matches_js() {
        let v = parse_str(r#"{"a":1,"b":[1,2],"c":{},"d":[],"e":"é"}"#).unwrap();
        let s = to_string_pretty(&v);
        assert_eq!(s, "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ],\n  \"c\": {},\n  \"d\": [],\n  \"e\": \"é\"\n}");
        assert_eq!(pretty_len(&v), s.encode_utf16().count());
        assert_eq!(non_ascii16(&v), 1);
    }

    #[test]
    fn source_numbers_round_trip() {
        let text = r#"{"x":1.0,"y":[1e21,-0.0,5e-324]}"#;
        let v = parse_str(text).unwrap();
        assert_eq!(to_string_source(&v), text);
        assert_eq!(to_string(&v), r#"{"x":1,"y":[1e+21,0,5e-324]}"#);
        assert_eq!(jslen(&v), to_string(&v).len());
    }
}
