//! A JSON value with JavaScript semantics: numbers are doubles (`1.0 == 1`), strings are UTF-16, and
//! object key order is kept (duplicate keys: the last value wins at the first key's position, as in JS).

use super::number::JsNumber;
use super::string::JsStr;
use indexmap::IndexMap;
use std::sync::Arc;

/// Objects keep insertion order (the index map), and hash their keys with FxHash: every part lookup of
/// every Content hashes a key, and SipHash's DoS resistance buys nothing on recorded histories.
pub type Map = IndexMap<JsStr, Value, rustc_hash::FxBuildHasher>;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(JsNumber),
    String(JsStr),
    Array(Vec<Value>),
    /// Shared: cloning a Content (as replay, truncation and every request do) bumps a count; the first
    /// mutation of a shared object copies that object only (its members stay shared).
    Object(Arc<Map>),
}

impl Value {
    /// True when both are the same shared object (cloned from one another, unchanged since): equal without
    /// looking inside. False says nothing: equal values may be separate objects.
    pub fn same_as(&self, other: &Value) -> bool {
        matches!((self, other), (Value::Object(a), Value::Object(b)) if Arc::ptr_eq(a, b))
    }

    pub fn str(s: &str) -> Value {
        Value::String(JsStr::new(s))
    }

    pub fn num(n: f64) -> Value {
        Value::Number(JsNumber::from_f64(n))
    }

    pub fn object<I, K>(entries: I) -> Value
    where
        I: IntoIterator<Item = (K, Value)>,
        K: Into<JsStr>,
    {
        Value::Object(Arc::new(entries.into_iter().map(|(k, v)| (k.into(), v)).collect()))
    }

    pub fn empty_object() -> Value {
        Value::Object(Arc::default())
    }

    /// Member lookup on an object; `None` for missing keys and non-objects.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.get(key.as_bytes()),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Value::Object(m) => Arc::make_mut(m).get_mut(key.as_bytes()),
            _ => None,
        }
    }

    /// Sets a member (appending a new key at the end), on objects only.
    pub fn insert(&mut self, key: &str, value: Value) {
        if let Value::Object(m) = self {
            Arc::make_mut(m).insert(JsStr::new(key), value);
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(Arc::make_mut(m)),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_js_str(&self) -> Option<&JsStr> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The string value when it is a well-formed string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => s.as_str(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(n.value()),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// JavaScript truthiness (`if (x)`).
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => {
                let v = n.value();
                v != 0.0 && !v.is_nan()
            }
            Value::String(s) => !s.is_empty(),
            Value::Array(_) | Value::Object(_) => true,
        }
    }

    /// The JS `typeof`-style kind name, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Converts to `serde_json` (lone surrogates become U+FFFD; numbers keep their double value).
    pub fn to_serde(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => {
                let v = n.value();
                if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
                    serde_json::Value::from(v as i64)
                } else {
                    serde_json::Number::from_f64(v).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)
                }
            }
            Value::String(s) => serde_json::Value::String(s.to_str_lossy().into_owned()),
            Value::Array(a) => serde_json::Value::Array(a.iter().map(Value::to_serde).collect()),
            Value::Object(m) => serde_json::Value::Object(
                m.iter().map(|(k, v)| (k.to_str_lossy().into_owned(), v.to_serde())).collect(),
            ),
        }
    }

    /// Converts from `serde_json` (key order is kept: serde_json is built with `preserve_order`).
    pub fn from_serde(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Number(JsNumber::parse_lexeme(&n.to_string())),
            serde_json::Value::String(s) => Value::str(s),
            serde_json::Value::Array(a) => Value::Array(a.iter().map(Value::from_serde).collect()),
            serde_json::Value::Object(m) => {
                Value::Object(Arc::new(m.iter().map(|(k, v)| (JsStr::new(k), Value::from_serde(v))).collect()))
            }
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::str(s)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(JsStr::from(s))
    }
}
impl From<JsStr> for Value {
    fn from(s: JsStr) -> Self {
        Value::String(s)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Value::num(n)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::Array(v)
    }
}

impl serde::Serialize for Value {
    /// Serialises through serde (lossy for lone surrogates); use `json::to_string` for exact output.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_serde().serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(deserializer)?;
        Ok(Value::from_serde(&v))
    }
}
