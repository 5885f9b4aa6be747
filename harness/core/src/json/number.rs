//! JS numbers: an IEEE double, plus the source lexeme so files round-trip unchanged.

/// A JSON number with JavaScript semantics: equality and `jslen` use the double (`1.0 == 1`, written `1`),
/// while `raw` keeps the lexeme read from a file for a byte-faithful re-export.
#[derive(Clone, Debug)]
pub struct JsNumber {
    value: f64,
    raw: Option<Box<str>>,
    js_len: u16,
}

impl JsNumber {
    pub fn from_f64(value: f64) -> Self {
        let js_len = js_format(value).len() as u16;
        JsNumber { value, raw: None, js_len }
    }

    /// Parses a JSON number lexeme (already validated by the caller) the way `JSON.parse` does:
    /// to the nearest double (so integers above 2^53 are rounded).
    pub fn parse_lexeme(lexeme: &str) -> Self {
        let value: f64 = lexeme.parse().unwrap_or(f64::NAN);
        let formatted = js_format(value);
        let raw = if formatted == lexeme { None } else { Some(lexeme.into()) };
        JsNumber { value, raw, js_len: formatted.len() as u16 }
    }

    pub fn value(&self) -> f64 {
        self.value
    }

    /// Length of `JSON.stringify(value)`.
    pub fn js_len(&self) -> usize {
        self.js_len as usize
    }

    /// The lexeme this number was read from, when it differs from JS formatting.
    pub fn raw(&self) -> Option<&str> {
        self.raw.as_deref()
    }

    pub fn write_js(&self, out: &mut String) {
        out.push_str(&js_format(self.value));
    }
}

impl PartialEq for JsNumber {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

/// ECMAScript `Number::toString` as used by `JSON.stringify` (non-finite numbers become `null`).
pub fn js_format(v: f64) -> String {
    if !v.is_finite() {
        return "null".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let mut buf = ryu_js::Buffer::new();
    buf.format_finite(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_javascript() {
        for (input, js) in [
            ("1.0", "1"),
            ("-0.0", "0"),
            ("1e21", "1e+21"),
            ("1e-7", "1e-7"),
            ("5e-324", "5e-324"),
            ("9007199254740993", "9007199254740992"),
            ("123456789012345680000", "123456789012345680000"),
            ("0.1", "0.1"),
            ("1.5e300", "1.5e+300"),
        ] {
            let n = JsNumber::parse_lexeme(input);
            let mut out = String::new();
            n.write_js(&mut out);
            assert_eq!(out, js, "{input}");
            assert_eq!(n.js_len(), js.len());
        }
        assert_eq!(JsNumber::parse_lexeme("1.0"), JsNumber::parse_lexeme("1"));
    }
}
