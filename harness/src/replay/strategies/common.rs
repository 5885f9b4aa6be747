//! Helpers shared by the strategies that model other agents.
