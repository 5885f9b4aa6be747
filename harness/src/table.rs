//! The one table type of the reports and the CLI: a header and rows of text, rendered for the terminal or
//! as Markdown. Every table a page or a command prints goes through it (`tables.rs` builds the report's;
//! `summary.rs` fits the run summary's to the width of a terminal).

/// A table defined once and rendered for the terminal or as Markdown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn build(&self) -> tabled::Table {
        let mut b = tabled::builder::Builder::default();
        b.push_record(self.header.clone());
        for r in &self.rows {
            b.push_record(r.clone());
        }
        b.build()
    }

    /// Box-drawn (`tabled`'s sharp style), for the terminal.
    pub fn terminal(&self) -> String {
        let mut t = self.build();
        t.with(tabled::settings::Style::sharp());
        t.to_string()
    }

    pub fn markdown(&self) -> String {
        let mut t = self.build();
        t.with(tabled::settings::Style::markdown());
        t.to_string()
    }

    /// [`Table::markdown`] or [`Table::terminal`].
    pub fn render(&self, markdown: bool) -> String {
        if markdown {
            self.markdown()
        } else {
            self.terminal()
        }
    }
}
