//! `--limit N` / `--tail N`: which rows of a long listing to show.

/// The rows of a listing to show: all, the first N, or the last N.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct RowWindow {
    /// Show only the first N rows.
    #[arg(long, value_name = "N", conflicts_with = "tail")]
    pub limit: Option<usize>,
    /// Show only the last N rows.
    #[arg(long, value_name = "N")]
    pub tail: Option<usize>,
}

impl RowWindow {
    /// Whether every row is shown.
    pub fn is_all(&self) -> bool {
        self.limit.is_none() && self.tail.is_none()
    }

    /// Refuse `--limit`/`--tail` where a command prints one whole JSON
    /// document (a cut document would not be the documented shape).
    pub fn whole_json_only(&self, json: bool) -> Result<(), super::exit::UsageError> {
        if json && !self.is_all() {
            return Err(super::exit::UsageError(
                "--limit and --tail shape the readable view; with --json the whole document is printed (filter it with jq)".into(),
            ));
        }
        Ok(())
    }

    /// The indices to show out of `total` rows.
    pub fn range(&self, total: usize) -> std::ops::Range<usize> {
        match (self.limit, self.tail) {
            (Some(n), _) => 0..n.min(total),
            (None, Some(n)) => total.saturating_sub(n)..total,
            (None, None) => 0..total,
        }
    }

    /// A note for the footer when rows were left out, e.g.
    /// `showing the last 20 of 1,050 nodes`.
    pub fn note(&self, total: usize, what: &str) -> Option<String> {
        let shown = self.range(total).len();
        if shown == total {
            return None;
        }
        let which = if self.limit.is_some() {
            "first"
        } else {
            "last"
        };
        Some(format!(
            "showing the {which} {} of {} {what}",
            super::render::num(shown as u64),
            super::render::num(total as u64)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::RowWindow;

    #[test]
    fn limit_and_tail_pick_the_ends() {
        let all = RowWindow::default();
        assert_eq!(all.range(5), 0..5);
        assert_eq!(all.note(5, "rows"), None);
        let first = RowWindow {
            limit: Some(2),
            tail: None,
        };
        assert_eq!(first.range(5), 0..2);
        assert_eq!(first.range(1), 0..1);
        assert_eq!(
            first.note(1_500, "rows").as_deref(),
            Some("showing the first 2 of 1,500 rows")
        );
        let last = RowWindow {
            limit: None,
            tail: Some(2),
        };
        assert_eq!(last.range(5), 3..5);
        assert_eq!(last.range(1), 0..1);
        assert_eq!(last.note(1, "rows"), None);
    }
}
