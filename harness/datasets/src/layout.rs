//! JSON text layouts (separators, indentation, ASCII escaping, final newline) and a writer for each, so a
//! `Content[]` file written by JavaScript (`JSON.stringify`) or Python (`json.dumps`) can be re-exported
//! byte for byte after import.

use crate::json::{self, Value};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Spaces per level; `None` writes everything on one line.
    pub indent: Option<usize>,
    /// Between array items / object members (`","` or `", "`); on indented output the newline follows.
    pub item_separator: String,
    /// Between a key and its value (`":"` or `": "`).
    pub key_separator: String,
    /// Python's default `ensure_ascii=True`: every non-ASCII UTF-16 unit written as `\uXXXX`.
    pub ascii_only: bool,
    pub trailing_newline: bool,
}

impl Layout {
    /// `JSON.stringify(v)`.
    pub fn js_compact() -> Self {
        Layout {
            indent: None,
            item_separator: ",".into(),
            key_separator: ":".into(),
            ascii_only: false,
            trailing_newline: false,
        }
    }

    /// `JSON.stringify(v, null, 2)` (also Python's `json.dumps(v, indent=2, ensure_ascii=False)`).
    pub fn js_pretty() -> Self {
        Layout { indent: Some(2), key_separator: ": ".into(), ..Layout::js_compact() }
    }

    /// Candidate layouts, most common first.
    fn candidates(trailing_newline: bool, indent_hint: Option<usize>) -> Vec<Layout> {
        let mut out = Vec::new();
        for ascii_only in [false, true] {
            match indent_hint {
                Some(n) => out.push(Layout { indent: Some(n), ascii_only, trailing_newline, ..Layout::js_pretty() }),
                None => {
                    out.push(Layout { ascii_only, trailing_newline, ..Layout::js_compact() });
                    out.push(Layout {
                        item_separator: ", ".into(),
                        key_separator: ": ".into(),
                        ascii_only,
                        trailing_newline,
                        ..Layout::js_compact()
                    });
                }
            }
        }
        out
    }

    /// The layout that reproduces `bytes` exactly when `value` (parsed from them) is written with it.
    pub fn detect(bytes: &[u8], value: &Value) -> Option<Layout> {
        let trailing_newline = bytes.ends_with(b"\n");
        let indent_hint = match bytes.iter().position(|&b| b == b'\n') {
            Some(nl) if nl + 1 < bytes.len() => {
                let spaces = bytes[nl + 1..].iter().take_while(|&&b| b == b' ').count();
                (spaces > 0).then_some(spaces)
            }
            _ => None,
        };
        Layout::candidates(trailing_newline, indent_hint).into_iter().find(|l| l.write(value).as_bytes() == bytes)
    }

    /// Writes `v` in this layout (numbers keep their source lexemes).
    pub fn write(&self, v: &Value) -> String {
        let mut out = String::new();
        self.write_value(v, 0, &mut out);
        if self.trailing_newline {
            out.push('\n');
        }
        out
    }

    fn newline(&self, level: usize, out: &mut String) {
        if let Some(n) = self.indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', n * level));
        }
    }

    fn write_value(&self, v: &Value, level: usize, out: &mut String) {
        match v {
            Value::Array(items) if !items.is_empty() => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.push_item_separator(out);
                    }
                    self.newline(level + 1, out);
                    self.write_value(item, level + 1, out);
                }
                self.newline(level, out);
                out.push(']');
            }
            Value::Object(map) if !map.is_empty() => {
                out.push('{');
                for (i, (k, item)) in map.iter().enumerate() {
                    if i > 0 {
                        self.push_item_separator(out);
                    }
                    self.newline(level + 1, out);
                    self.write_string(k, out);
                    out.push_str(&self.key_separator);
                    self.write_value(item, level + 1, out);
                }
                self.newline(level, out);
                out.push('}');
            }
            Value::String(s) => self.write_string(s, out),
            scalar => out.push_str(&json::to_string_source(scalar)),
        }
    }

    fn push_item_separator(&self, out: &mut String) {
        if self.indent.is_some() {
            // The newline that follows replaces any trailing space (Python ≥ 3.4 behaviour with indent).
            out.push_str(self.item_separator.trim_end());
        } else {
            out.push_str(&self.item_separator);
        }
    }

    fn write_string(&self, s: &json::JsStr, out: &mut String) {
        if !self.ascii_only {
            s.write_json(out);
            return;
        }
        let mut plain = String::new();
        s.write_json(&mut plain);
        for c in plain.chars() {
            // Python's ASCII mode escapes DEL too (it keeps only ' '..='~' unescaped).
            if c.is_ascii() && c != '\u{7f}' {
                out.push(c);
            } else {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
}
