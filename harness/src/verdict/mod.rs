//! Judgement, apart from rendering: the CI gate (`gate`: a run against a baseline, rule by rule), the
//! claims' verdicts (`claims`: established, not established, did not act) and the grader against its labels
//! (`labels`: agreement per probe kind and strategy, which kinds are gradable offline, and the cells every
//! probe figure reads). `report` renders what these decide; `view` and `audit` read them here.

pub mod claims;
pub mod gate;
pub mod labels;
