//! The registry of strategies: the built-ins of `replay/strategies/`, then any added at run time with
//! [`register`]. Kept apart from the interface (`strategy.rs`) so that the strategies, which implement the
//! interface, and the list of them import in one direction only.

use crate::replay::strategies;
use crate::replay::strategy::{label, Compressor, Strategy, StrategyError, StrategySpec};
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, RwLock};

impl StrategySpec {
    /// The compressor, configured by its registry entry.
    pub fn build(&self) -> Result<Box<dyn Compressor>, StrategyError> {
        let entry = registry().into_iter().find(|s| s.name() == self.name);
        match entry {
            Some(s) => s.configure(&self.params),
            None => Err(find(&self.name)
                .err()
                .unwrap_or(StrategyError::Unknown { name: self.name.clone(), known: String::new() })),
        }
    }

    /// The request size at which this point's trigger fires ([`Strategy::trigger_tokens`]).
    pub fn trigger_tokens(&self) -> Option<u64> {
        registry().into_iter().find(|s| s.name() == self.name)?.trigger_tokens(&self.params)
    }

    /// Whether this point's strategy writes a summary of what it removes ([`Strategy::summarizes`]).
    pub fn summarizes(&self) -> bool {
        registry().into_iter().find(|s| s.name() == self.name).is_some_and(|s| s.summarizes())
    }
}

static REGISTRY: LazyLock<RwLock<Vec<Arc<dyn Strategy>>>> = LazyLock::new(|| RwLock::new(strategies::builtin()));

/// Every registered strategy, built-ins first, in registration order.
pub fn registry() -> Vec<Arc<dyn Strategy>> {
    REGISTRY.read().map(|r| r.clone()).unwrap_or_else(|e| e.into_inner().clone())
}

/// Adds a strategy to the registry (an error when its name is taken).
pub fn register(strategy: Arc<dyn Strategy>) -> Result<(), StrategyError> {
    let mut r = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if r.iter().any(|s| s.name() == strategy.name()) {
        return Err(StrategyError::Duplicate { strategy: strategy.name().into() });
    }
    r.push(strategy);
    Ok(())
}

/// The registry entry for a strategy as written in a grid (`gemini`, `exec:python3 x.py`).
pub fn find(written: &str) -> Result<Arc<dyn Strategy>, StrategyError> {
    let all = registry();
    if let Some(s) = all.iter().find(|s| s.name() == written && !s.takes_argument()) {
        return Ok(s.clone());
    }
    if let Some((prefix, arg)) = written.split_once(':') {
        if let Some(s) = all.iter().find(|s| s.name() == prefix && s.takes_argument() && !arg.trim().is_empty()) {
            return Ok(s.clone());
        }
    }
    let known = all
        .iter()
        .map(|s| if s.takes_argument() { format!("{}:…", s.name()) } else { s.name().to_string() })
        .collect::<Vec<_>>()
        .join(", ");
    Err(StrategyError::Unknown { name: written.into(), known })
}

/// `compactbench strategies`: every registered strategy with its one line and knobs.
pub fn describe() -> String {
    let mut out = String::new();
    for s in registry() {
        let name = if s.takes_argument() { format!("{}:COMMAND", s.name()) } else { s.name().to_string() };
        let model = if s.uses_llm() { " (calls the summarizer)" } else { "" };
        let _ = writeln!(out, "{name}{model}\n    {}", s.about());
        for k in s.knobs() {
            let _ = writeln!(
                out,
                "    {:<32} {:<7} default {:<24} {}  — {}",
                k.name,
                k.kind,
                label(&k.default),
                k.range,
                k.help
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_is_found_by_prefix_and_unknown_names_list_the_registry() {
        assert_eq!(find("exec:python3 x.py").unwrap().name(), "exec");
        assert!(find("exec:").is_err() && find("exec").is_err());
        let e = find("magic").err().unwrap().to_string();
        assert!(e.contains("unknown strategy `magic`") && e.contains("gemini") && e.contains("exec:…"), "{e}");
    }
}
