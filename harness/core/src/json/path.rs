//! JSON paths for error messages (`$[3].parts[0].functionResponse`).

use super::string::JsStr;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSeg {
    Index(usize),
    /// Shares the key's bytes: the parser pushes one per member and must not copy it.
    Key(JsStr),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonPath(Vec<PathSeg>);

impl JsonPath {
    pub fn root() -> Self {
        JsonPath(Vec::new())
    }
    pub fn push(&mut self, seg: PathSeg) {
        self.0.push(seg);
    }
    pub fn pop(&mut self) {
        self.0.pop();
    }
    pub fn depth(&self) -> usize {
        self.0.len()
    }
    /// A new path one index deeper.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.push(PathSeg::Index(i));
        p
    }
    /// A new path one key deeper.
    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.push(PathSeg::Key(JsStr::new(k)));
        p
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for seg in &self.0 {
            match seg {
                PathSeg::Index(i) => write!(f, "[{i}]")?,
                PathSeg::Key(k) => {
                    let k = k.to_str_lossy();
                    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        write!(f, ".{k}")?
                    } else {
                        write!(f, "[{}]", serde_json::Value::String(k.into_owned()))?
                    }
                }
            }
        }
        Ok(())
    }
}
