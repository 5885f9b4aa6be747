//! JSON with JavaScript semantics: the data model every history, vector and request is held in.
//!
//! `serde_json` cannot hold lone UTF-16 surrogates, which the reference produces when it slices tool
//! output through an emoji, and it prints `1.0` where `JSON.stringify` prints `1`; both matter for a
//! byte-faithful port, so histories use this model. Everything else in the crate uses serde.

mod number;
mod parse;
mod path;
mod string;
mod value;
mod write;

pub use number::{js_format, JsNumber};
pub use parse::{parse, parse_str, ParseError};
pub use path::{JsonPath, PathSeg};
pub use string::{JsStr, StrMetrics};
pub use value::{Map, Value};
pub use write::{
    jslen, non_ascii16, pretty_len, str_jslen, to_string, to_string_pretty, to_string_pretty_source, to_string_source,
    utf8_len, write_compact, write_pretty, Numbers,
};
