//! The environment-context turn (`getInitialChatHistory`, `packages/core/src/utils/environmentContext.ts`). Date and
//! platform are inputs, never read from the clock or the machine.

use crate::history::{self, Content};

/// Inputs of the `<session_context>` text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvContext {
    /// Already formatted, e.g. `Friday, October 24, 2025` (see [`format_en_us_date`]).
    pub date: String,
    /// `process.platform`: `linux`, `darwin`, `win32`.
    pub platform: String,
    pub project_temp_dir: String,
    pub directory_context: String,
    pub session_memory: String,
}

impl EnvContext {
    /// The trimmed `<session_context>` text.
    pub fn text(&self) -> String {
        format!(
            "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nToday's date is {} (formatted according to the user's locale).\nMy operating system is: {}\nThe project's temporary directory is: {}\n{}\n\n{}\n</session_context>",
            self.date, self.platform, self.project_temp_dir, self.directory_context, self.session_memory
        )
        .trim()
        .to_string()
    }

    pub fn turn(&self) -> Content {
        history::user_text(&self.text())
    }
}

/// `toLocaleDateString('en-US', {weekday:'long', year:'numeric', month:'long', day:'numeric'})` of an ISO
/// date `YYYY-MM-DD`.
pub fn format_en_us_date(iso: &str) -> Option<String> {
    let mut it = iso.split('-');
    let y: i64 = it.next()?.parse().ok()?;
    let m: usize = it.next()?.parse().ok()?;
    let d: i64 = it.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
    // Sakamoto's weekday algorithm.
    const T: [i64; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let yy = if m < 3 { y - 1 } else { y };
    let w = (yy + yy / 4 - yy / 100 + yy / 400 + T[m - 1] + d).rem_euclid(7) as usize;
    Some(format!("{}, {} {}, {}", DAYS[w], MONTHS[m - 1], d, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_and_text() {
        assert_eq!(format_en_us_date("2025-10-24").as_deref(), Some("Friday, October 24, 2025"));
        assert_eq!(format_en_us_date("2026-11-22").as_deref(), Some("Sunday, November 22, 2026"));
        let env = EnvContext {
            date: "Friday, October 24, 2025".into(),
            platform: "linux".into(),
            project_temp_dir: "/tmp/p".into(),
            ..Default::default()
        };
        let t = env.text();
        assert!(t.starts_with("<session_context>\nThis is the Gemini CLI."));
        assert!(t.ends_with("/tmp/p\n\n\n\n</session_context>"));
    }
}
