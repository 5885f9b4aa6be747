//! The registry of strategies: the built-ins of `replay/strategies/`, then any added at run time with
//! [`register`]. Kept apart from the interface (`strategy.rs`) so that the strategies, which implement the
//! interface, and the list of them import in one direction only.

use crate::replay::strategies;
use crate::replay::strategy::{
    label, to_params, Knob, Params, Role, Strategy, StrategyError, StrategySpec, WindowInIds, WINDOW_KEYS,
};
use crate::replay::window::TokenLimit;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, RwLock};

impl StrategySpec {
    /// The spec of the registry entry `name` with these parameters, configured: parsed once, here.
    pub fn configure(name: &str, params: Params) -> Result<StrategySpec, StrategyError> {
        let def = entry(name).ok_or_else(|| {
            find(name).err().unwrap_or(StrategyError::Unknown { name: name.into(), known: String::new() })
        })?;
        let compressor = def.configure(&params)?;
        Ok(StrategySpec::from_parts(name.into(), params, compressor))
    }

    /// A spec from a strategy's typed parameters.
    pub fn new<P: Serialize>(name: &str, params: &P) -> Result<StrategySpec, StrategyError> {
        StrategySpec::configure(name, to_params(name, params)?)
    }

    /// The spec as point ids hash it: as plans stored it before issue #35, so that ids made since name the
    /// same points as before: the window where its strategy stored it ([`WindowInIds`]; a strategy that stored
    /// none and calls the summarizer with its output limit last: another limit, another point), and renamed
    /// knobs under their former names ([`Knob::former_name`]).
    pub fn id_form(&self, window: TokenLimit, max_output_tokens: Option<u32>) -> Json {
        let [token_limit, output_limit] = WINDOW_KEYS.map(String::from);
        let mut params = self.params().clone();
        // A window relative to each conversation was stored as 0 (it was resolved per replay).
        let tokens = match window {
            TokenLimit::Tokens(n) => n,
            _ => 0,
        };
        let def = entry(self.kind());
        for knob in def.as_ref().map(|d| d.knobs()).unwrap_or_default() {
            if let Some(former) = knob.former_name {
                rename_key(&mut params, knob.name, former);
            }
        }
        let calls_summarizer = def.as_ref().is_some_and(|d| d.uses_llm());
        match def.as_ref().map_or(WindowInIds::Absent, |d| d.window_in_ids()) {
            WindowInIds::Absent => {
                if calls_summarizer {
                    params.insert(output_limit, Json::from(max_output_tokens));
                }
            }
            WindowInIds::At(at) => {
                let at = at.min(params.len());
                params.shift_insert(at, token_limit, Json::from(tokens));
                if calls_summarizer {
                    params.shift_insert(at + 1, output_limit, Json::from(max_output_tokens));
                }
            }
            WindowInIds::InSettings => {
                if let Some(Json::Object(settings)) = params.get_mut("settings") {
                    let at = settings.keys().position(|k| k == "tool_output_chars_limit").unwrap_or(settings.len());
                    settings.shift_insert(at, token_limit, Json::from(tokens));
                    settings.insert(output_limit, Json::from(max_output_tokens));
                }
            }
        }
        let mut form = serde_json::Map::new();
        form.insert("strategy".into(), Json::from(self.kind()));
        form.extend(params);
        Json::Object(form)
    }

    /// The request size at which this point's trigger fires in a window of `token_limit` tokens
    /// ([`Compressor::trigger_tokens`](crate::replay::strategy::Compressor::trigger_tokens)).
    pub fn trigger_tokens(&self, token_limit: u64) -> Option<u64> {
        self.compressor().trigger_tokens(token_limit)
    }

    /// Whether this point's strategy writes a summary of what it removes ([`Strategy::summarizes`]).
    pub fn summarizes(&self) -> bool {
        entry(self.kind()).is_some_and(|s| s.summarizes())
    }

    /// This point's strategy's part in comparisons ([`Strategy::role`]); `None` when it is not registered.
    pub fn role(&self) -> Option<Role> {
        entry(self.kind()).map(|s| s.role())
    }

    /// Whether this point's strategy rewrites Contents in place at most requests ([`Strategy::edits_in_place`]).
    pub fn edits_in_place(&self) -> bool {
        entry(self.kind()).is_some_and(|s| s.edits_in_place())
    }

    /// The agent this point's strategy models ([`Strategy::system`]).
    pub fn system(&self) -> Option<&'static str> {
        entry(self.kind())?.system()
    }

    /// `NAME short=value …` for the knobs its strategy shows in labels ([`Knob::labelled`]), in the order
    /// the strategy declares them; `axes` holds the point's values.
    pub fn label(&self, axes: &std::collections::BTreeMap<String, String>) -> String {
        let mut s = self.kind().to_string();
        for knob in entry(self.kind()).map(|e| e.knobs()).unwrap_or_default() {
            if let (Some(short), Some(v)) = (knob.short, axes.get(knob.name)) {
                let _ = write!(s, " {short}={v}");
            }
        }
        s
    }
}

/// Two specs are the same point when they name the same strategy with the same parameters. Plans written
/// before issue #35 keep the window among them (at the top, or in the reference's `settings`), which is the
/// replay's and left out here, and renamed knobs under their former names: a spec read from one equals the
/// spec its config makes now.
impl PartialEq for StrategySpec {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind() && self.comparable() == other.comparable()
    }
}

impl StrategySpec {
    /// The parameters without a window, each knob under its current name.
    fn comparable(&self) -> Params {
        let mut params = self.params().clone();
        for key in WINDOW_KEYS {
            params.shift_remove(key);
            if let Some(Json::Object(settings)) = params.get_mut("settings") {
                settings.shift_remove(key);
            }
        }
        for knob in entry(self.kind()).map(|d| d.knobs()).unwrap_or_default() {
            if let Some(former) = knob.former_name {
                rename_key(&mut params, former, knob.name);
            }
        }
        params
    }
}

/// `params` with the key `from` renamed `to`, in its place.
fn rename_key(params: &mut Params, from: &str, to: &str) {
    if let Some(at) = params.keys().position(|k| k == from) {
        if let Some(v) = params.shift_remove(from) {
            params.shift_insert(at, to.into(), v);
        }
    }
}

/// Plans keep the parameters as they were written: their cells are verified against the plan's bytes. (Those
/// written before issue #35 hold the window among them, which configuring ignores and comparing leaves out.)
impl<'de> Deserialize<'de> for StrategySpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut params = Params::deserialize(d)?;
        let name = match params.shift_remove("strategy") {
            Some(Json::String(s)) => s,
            _ => return Err(serde::de::Error::custom("missing string field `strategy`")),
        };
        StrategySpec::configure(&name, params).map_err(serde::de::Error::custom)
    }
}

/// The registry entry named `name` (the part before `:` for strategies that take an argument).
pub fn entry(name: &str) -> Option<Arc<dyn Strategy>> {
    registry().into_iter().find(|s| s.name() == name)
}

/// Whether the strategy named `name` plays `role` (false for a name the registry does not hold).
pub fn has_role(name: &str, role: Role) -> bool {
    entry(name).is_some_and(|s| s.role() == role)
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
            let former = k.former_name.map(|f| format!(" (formerly `{f}`)")).unwrap_or_default();
            let _ = writeln!(
                out,
                "    {:<32} {:<7} default {:<24} {}  — {}{former}",
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
    use crate::compress::{CallerKind, CompressSettings, Latch};
    use crate::replay::strategies;

    /// Plans written before the window left the parameters read as the spec the same config makes now, and
    /// point ids still hash the parameters as those plans stored them.
    #[test]
    fn old_plans_read_as_the_points_of_today_and_ids_hash_them_as_then() {
        let old = r#"{"strategy":"drop-oldest","threshold":0.5,"keep_fraction":0.3,"token_limit":0}"#;
        let read: StrategySpec = serde_json::from_str(old).unwrap();
        let now = strategies::drop_oldest::spec(strategies::drop_oldest::DropOldestParams {
            threshold: 0.5,
            keep_fraction: 0.3,
        });
        assert_eq!(read, now, "the same point");
        assert_eq!(serde_json::to_string(&read).unwrap(), old, "kept as written");
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            r#"{"strategy":"drop-oldest","threshold":0.5,"keep_fraction":0.3}"#
        );
        assert_eq!(now.id_form(TokenLimit::PeakFraction(0.6), Some(128)).to_string(), old);
        assert_eq!(now.id_form(TokenLimit::Tokens(4096), Some(128))["token_limit"], 4096);

        // Codex's trigger fraction had a name of its own, which ids still hash.
        let codex = r#"{"strategy":"codex","token_limit":140000,"max_output_tokens":2048,"trigger_fraction":0.8,"user_message_budget":20000,"summary_prompt":"codex:prompt_handoff"}"#;
        let read: StrategySpec = serde_json::from_str(codex).unwrap();
        assert_eq!(read.trigger_tokens(1000), Some(800));
        let now = strategies::common::fixtures::spec_of("codex", serde_json::json!({"threshold": 0.8}));
        assert_eq!(read, now);
        assert_eq!(now.id_form(TokenLimit::Tokens(140_000), Some(2048)).to_string(), codex);

        // The reference's settings held them in their own places.
        let reference = strategies::gemini::spec(CompressSettings::default(), CallerKind::Interactive, Latch::Latched);
        let held =
            CompressSettings { token_limit: Some(0), max_output_tokens: Some(128), ..CompressSettings::default() };
        let form = reference.id_form(TokenLimit::FixedPlusGrowth(0.6), Some(128));
        assert_eq!(form["settings"].to_string(), serde_json::to_value(&held).unwrap().to_string());
        let stored = serde_json::to_value(&reference).unwrap();
        assert!(stored["settings"].get("token_limit").is_none(), "{stored}");
        assert_eq!(serde_json::from_value::<StrategySpec>(form).unwrap(), reference);
        assert_eq!(
            strategies::none::spec().id_form(TokenLimit::Tokens(10), None).to_string(),
            r#"{"strategy":"none"}"#
        );
    }

    /// A spec's parameters are parsed when it is made or read: a bad one is an error naming the parameter.
    #[test]
    fn bad_parameters_name_the_parameter() {
        let e = serde_json::from_str::<StrategySpec>(
            r#"{"strategy":"codex","threshold":"high","user_message_budget":1,"summary_prompt":"codex:prompt_handoff"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("strategy `codex`") && e.contains("threshold"), "{e}");
    }

    #[test]
    fn exec_is_found_by_prefix_and_unknown_names_list_the_registry() {
        assert_eq!(find("exec:python3 x.py").unwrap().name(), "exec");
        assert!(find("exec:").is_err() && find("exec").is_err());
        let e = find("magic").err().unwrap().to_string();
        assert!(e.contains("unknown strategy `magic`") && e.contains("gemini") && e.contains("exec:…"), "{e}");
    }
}
