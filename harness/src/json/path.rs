//! JSON paths for error messages (`$[3].parts[0].functionResponse`).

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSeg {
    Index(usize),
    Key(String),
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
        p.push(PathSeg::Key(k.to_string()));
        p
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for seg in &self.0 {
            match seg {
                PathSeg::Index(i) => write!(f, "[{i}]")?,
                PathSeg::Key(k) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                    write!(f, ".{k}")?
                }
                PathSeg::Key(k) => write!(f, "[{}]", serde_json::Value::String(k.clone()))?,
            }
        }
        Ok(())
    }
}
