//! `--limit N` / `--tail N`: which rows of a long listing to show, and
//! [`Rows`], which applies them to rows streamed one at a time.

use std::collections::VecDeque;
use std::io::{self, Write};

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

/// Rows streamed through a [`RowWindow`] into a writer: without `--tail`
/// each row is written as it comes; with `--tail N` the last N are kept
/// until [`Rows::finish`], since how many rows there are is known only at
/// the end.
pub struct Rows<W: Write> {
    window: RowWindow,
    out: W,
    seen: usize,
    tail: VecDeque<String>,
}

impl<W: Write> Rows<W> {
    /// Stream rows into `out`.
    pub fn new(window: RowWindow, out: W) -> Rows<W> {
        Rows {
            window,
            out,
            seen: 0,
            tail: VecDeque::new(),
        }
    }

    /// Count one more row; `false` when it is past `--limit`, so it need
    /// not even be rendered.
    pub fn admit(&mut self) -> bool {
        self.seen += 1;
        self.window.limit.is_none_or(|l| self.seen <= l)
    }

    /// The rows counted so far, shown or not.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// Write an admitted row now, or keep it for `--tail`.
    pub fn push(&mut self, row: String) -> io::Result<()> {
        match self.window.tail {
            Some(0) => Ok(()),
            Some(n) => {
                if self.tail.len() == n {
                    self.tail.pop_front();
                }
                self.tail.push_back(row);
                Ok(())
            }
            None => self.out.write_all(row.as_bytes()),
        }
    }

    /// Write the rows kept for `--tail`; the writer back, for a footer.
    pub fn finish(mut self) -> io::Result<W> {
        for row in std::mem::take(&mut self.tail) {
            self.out.write_all(row.as_bytes())?;
        }
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::{RowWindow, Rows};

    fn streamed(window: RowWindow, n: usize) -> (String, usize) {
        let mut rows = Rows::new(window, Vec::new());
        for i in 0..n {
            if rows.admit() {
                rows.push(format!("{i}\n")).unwrap();
            }
        }
        let seen = rows.seen();
        (String::from_utf8(rows.finish().unwrap()).unwrap(), seen)
    }

    #[test]
    fn rows_stream_the_window() {
        let all = RowWindow::default();
        assert_eq!(streamed(all, 3), ("0\n1\n2\n".into(), 3));
        let first = RowWindow {
            limit: Some(2),
            tail: None,
        };
        assert_eq!(streamed(first, 5), ("0\n1\n".into(), 5));
        let last = RowWindow {
            limit: None,
            tail: Some(2),
        };
        assert_eq!(streamed(last, 5), ("3\n4\n".into(), 5));
        assert_eq!(streamed(last, 1), ("0\n".into(), 1));
        let none = RowWindow {
            limit: None,
            tail: Some(0),
        };
        assert_eq!(streamed(none, 4), (String::new(), 4));
    }

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
