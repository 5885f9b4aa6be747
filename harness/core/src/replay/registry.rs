//! The registry of strategies: the built-ins of `replay/strategies/`, then any added at run time with
//! [`register`]. Kept apart from the interface (`strategy.rs`) so that the strategies, which implement the
//! interface, and the list of them import in one direction only.

use crate::replay::strategies;
use crate::replay::strategy::{label, Compressor, Knob, Role, Strategy, StrategyError, StrategySpec};
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, RwLock};

impl StrategySpec {
    /// The compressor, configured by its registry entry.
    pub fn build(&self) -> Result<Box<dyn Compressor>, StrategyError> {
        match entry(&self.name) {
            Some(s) => s.configure(&self.params),
            None => Err(find(&self.name)
                .err()
                .unwrap_or(StrategyError::Unknown { name: self.name.clone(), known: String::new() })),
        }
    }

    /// The request size at which this point's trigger fires ([`Strategy::trigger_tokens`]).
    pub fn trigger_tokens(&self) -> Option<u64> {
        entry(&self.name)?.trigger_tokens(&self.params)
    }

    /// Whether this point's strategy writes a summary of what it removes ([`Strategy::summarizes`]).
    pub fn summarizes(&self) -> bool {
        entry(&self.name).is_some_and(|s| s.summarizes())
    }

    /// This point's strategy's part in comparisons ([`Strategy::role`]); `None` when it is not registered.
    pub fn role(&self) -> Option<Role> {
        entry(&self.name).map(|s| s.role())
    }

    /// Whether this point's strategy rewrites Contents in place at most requests ([`Strategy::edits_in_place`]).
    pub fn edits_in_place(&self) -> bool {
        entry(&self.name).is_some_and(|s| s.edits_in_place())
    }

    /// The agent this point's strategy models ([`Strategy::system`]).
    pub fn system(&self) -> Option<&'static str> {
        entry(&self.name)?.system()
    }

    /// `NAME short=value …` for the knobs its strategy shows in labels ([`Knob::labelled`]), in the order
    /// the strategy declares them; `axes` holds the point's values.
    pub fn label(&self, axes: &std::collections::BTreeMap<String, String>) -> String {
        let mut s = self.name.clone();
        for knob in entry(&self.name).map(|e| e.knobs()).unwrap_or_default() {
            if let (Some(short), Some(v)) = (knob.short, axes.get(knob.name)) {
                let _ = write!(s, " {short}={v}");
            }
        }
        s
    }
}

/// The registry entry named `name` (the part before `:` for strategies that take an argument).
pub fn entry(name: &str) -> Option<Arc<dyn Strategy>> {
    registry().into_iter().find(|s| s.name() == name)
}

/// The name of the first registered strategy with this role (the reference, `none`).
pub fn role_name(role: Role) -> Option<&'static str> {
    registry().into_iter().find(|s| s.role() == role).map(|s| s.name())
}

/// The knob named `name` as the first strategy declaring it has it: what reports type and head an axis
/// column by. `None` for the grid's own axes (`strategy`, `summarizer`, `token_limit`).
pub fn knob(name: &str) -> Option<Knob> {
    registry().into_iter().find_map(|s| s.knobs().into_iter().find(|k| k.name == name))
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
                k.kind.name(),
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
