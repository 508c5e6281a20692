//! Tables that fit the terminal: the real width of a terminal on standard
//! output (no limit into a pipe, unless `$COLUMNS` asks for one), low-value
//! columns dropped first, the widest column cut with `…`, one line per row,
//! numbers right-aligned.

use std::fmt;
use std::io::IsTerminal;
use std::sync::OnceLock;

use comfy_table::{
    CellAlignment, ColumnConstraint, ContentArrangement, Table, Width, presets::UTF8_FULL_CONDENSED,
};

/// The width to fit, in columns: the terminal's when standard output is
/// one, else `$COLUMNS` when set, else none (a pipe gets whole rows).
pub fn width() -> Option<usize> {
    static WIDTH: OnceLock<Option<usize>> = OnceLock::new();
    *WIDTH.get_or_init(|| {
        if std::io::stdout().is_terminal() {
            // comfy-table's own detection (crossterm's ioctl), so the table
            // and everything printed beside it agree.
            if let Some(w) = Table::new().width().filter(|&w| w > 0) {
                return Some(usize::from(w));
            }
        }
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .filter(|&w: &usize| w > 0)
    })
}

/// The fewest columns the column that gives way keeps before others are dropped.
const MIN_FLEX: usize = 24;

/// A table in dsh's house style; printing it fits it to [`width`].
#[derive(Clone)]
pub struct Tbl {
    table: Table,
    headers: Vec<String>,
    drop: Vec<String>,
}

/// A table with these column headers.
pub fn table(header: &[&str]) -> Tbl {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header({
            let mut r = comfy_table::Row::from(header.iter().copied());
            r.max_height(1);
            r
        });
    Tbl {
        table: t,
        headers: header.iter().map(|h| h.to_string()).collect(),
        drop: Vec::new(),
    }
}

impl Tbl {
    /// Columns (by header) to leave out, in this order, when the table is
    /// wider than the terminal.
    pub fn drop_first(&mut self, headers: &[&str]) -> &mut Self {
        self.drop = headers.iter().map(|h| h.to_string()).collect();
        self
    }

    /// Add a row of cells. Their text passes the escaping rule
    /// ([`super::escape::line`]; dsh's own colors are the cells' tones): a control character in a cell is shown,
    /// never sent to the terminal nor counted wrong by the layout.
    pub fn add_row<T: Into<comfy_table::Row>>(&mut self, row: T) -> &mut Self {
        let row: comfy_table::Row = row.into();
        let cells: Vec<comfy_table::Cell> = row
            .cell_iter()
            .map(|c| comfy_table::Cell::new(super::escape::line(&c.content())))
            .collect();
        self.table.add_row(cells);
        self
    }

    /// Add a row whose cells may carry a tone (colored when stdout gets color).
    pub fn add_toned_row(&mut self, cells: Vec<(String, Option<super::Tone>)>) -> &mut Self {
        let row: Vec<comfy_table::Cell> = cells
            .into_iter()
            .map(|(s, tone)| {
                let cell = comfy_table::Cell::new(super::escape::line(&s));
                match tone.and_then(|t| t.cell_color()) {
                    Some(c) if super::color::on() => cell.fg(c),
                    _ => cell,
                }
            })
            .collect();
        self.table.add_row(row);
        self
    }

    /// The table laid out for `width` columns (`None`: no limit).
    pub fn fitted(&self, width: Option<usize>) -> Table {
        self.fit(width).0
    }

    /// [`Self::fitted`], with the headers of the columns left out that had
    /// something in them (empty columns go without a word).
    pub fn fit(&self, width: Option<usize>) -> (Table, Vec<String>) {
        let mut t = self.table.clone();
        if super::color::on() {
            t.enforce_styling();
        }
        right_align_numbers(&mut t);
        for r in t.row_iter_mut() {
            r.max_height(1);
        }
        let Some(width) = width else {
            return (t, Vec::new());
        };
        let natural: Vec<usize> = t
            .column_max_content_widths()
            .into_iter()
            .map(usize::from)
            .collect();
        // Each column costs its content, one space either side and a border.
        let cost = |shown: &[bool]| {
            1 + natural
                .iter()
                .zip(shown)
                .filter(|(_, s)| **s)
                .map(|(w, _)| w + 3)
                .sum::<usize>()
        };
        let mut shown = vec![true; natural.len()];
        // Columns with nothing in them go first, then the named ones.
        let mut empty = vec![true; natural.len()];
        for r in t.row_iter() {
            for (i, c) in r.cell_iter().enumerate() {
                if !c.content().trim().is_empty() {
                    empty[i] = false;
                }
            }
        }
        let empties: Vec<String> = (0..natural.len())
            .filter(|&i| empty[i])
            .filter_map(|i| self.headers.get(i).cloned())
            .collect();
        // The widest shown column gives way; the others keep their content.
        let flex = |shown: &[bool]| {
            (0..natural.len())
                .filter(|&i| shown[i])
                .max_by_key(|&i| natural[i])
        };
        // Drop columns until the one that gives way keeps a useful width.
        for name in empties.iter().chain(&self.drop) {
            let need = match flex(&shown) {
                Some(f) => cost(&shown) - natural[f] + natural[f].min(MIN_FLEX),
                None => break,
            };
            if need <= width {
                break;
            }
            if let Some(i) = self.headers.iter().position(|h| h == name) {
                shown[i] = false;
            }
        }
        let dropped: Vec<String> = (0..natural.len())
            .filter(|&i| !shown[i] && !empty[i])
            .filter_map(|i| self.headers.get(i).cloned())
            .collect();
        let flex = flex(&shown);
        let total = cost(&shown);
        for (i, col) in t.column_iter_mut().enumerate() {
            if !shown[i] {
                col.set_constraint(ColumnConstraint::Hidden);
            } else if total > width && Some(i) == flex {
                let rest = total - natural[i];
                let room = width.saturating_sub(rest).max(4);
                col.set_constraint(ColumnConstraint::Absolute(Width::Fixed(
                    u16::try_from(room).unwrap_or(u16::MAX),
                )));
            } else {
                col.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
        t.set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(u16::try_from(width).unwrap_or(u16::MAX));
        (t, dropped)
    }
}

impl fmt::Display for Tbl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, dropped) = self.fit(width());
        // The fitted table can still be wider than a very narrow terminal;
        // cut its lines rather than let the terminal wrap them.
        match width() {
            Some(w) => {
                let text = t.to_string();
                for (i, line) in text.lines().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    f.write_str(&super::cut(line, w))?;
                }
                if !dropped.is_empty() {
                    f.write_str("\n")?;
                    f.write_str(&super::cut(&dropped_notice(&dropped, w), w))?;
                }
                Ok(())
            }
            None => write!(f, "{t}"),
        }
    }
}

/// The one line under a table that lost columns to the width.
pub fn dropped_notice(dropped: &[String], width: usize) -> String {
    format!("left out at {width} columns: {}", dropped.join(", "))
}

/// Whether a cell reads as a number (`1,234`, `-3`, `65.6%`, `12.0 KB`).
fn numeric(s: &str) -> bool {
    let s = s.trim();
    let s = s
        .strip_suffix('%')
        .or_else(|| s.strip_suffix(" KB"))
        .or_else(|| s.strip_suffix(" MB"))
        .unwrap_or(s);
    let s = s.strip_prefix(['<', '>']).unwrap_or(s);
    let s = s.strip_prefix(['-', '+', '−']).unwrap_or(s);
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == '.')
}

/// Right-align the columns whose every non-empty cell is a number.
fn right_align_numbers(t: &mut Table) {
    let n = t.column_count();
    let mut num = vec![true; n];
    let mut any = vec![false; n];
    for r in t.row_iter() {
        for (i, c) in r.cell_iter().enumerate() {
            let s = c.content();
            if s.trim().is_empty() || s.trim() == "-" || s.trim() == "—" {
                continue;
            }
            any[i] = true;
            if !numeric(&s) {
                num[i] = false;
            }
        }
    }
    for (i, col) in t.column_iter_mut().enumerate() {
        if num[i] && any[i] {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_table_fits_by_dropping_then_cutting() {
        let mut t = table(&["pos", "seq", "preview", "shadows"]);
        t.drop_first(&["shadows"]);
        t.add_row(vec!["1", "2", &"x".repeat(200), "[1, 2, 3]"]);
        let s = t.fitted(Some(80)).to_string();
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
        assert!(s.contains("shadows"), "room enough to keep it: {s}");
        let s = t.fitted(Some(40)).to_string();
        assert!(s.lines().all(|l| l.chars().count() <= 40), "{s}");
        assert!(!s.contains("shadows"), "{s}");
        assert_eq!(t.fit(Some(40)).1, ["shadows"]);
        assert!(t.fit(Some(80)).1.is_empty());
        assert!(s.contains('…'), "{s}");
        assert_eq!(s.lines().count(), 5, "one line per row: {s}");
        let wide = t.fitted(Some(300)).to_string();
        assert!(wide.contains("shadows") && wide.contains(&"x".repeat(200)));
    }

    #[test]
    fn numbers_are_right_aligned() {
        let mut t = table(&["name", "tokens"]);
        t.add_row(vec!["a", "1,234"]).add_row(vec!["b", "5"]);
        let s = t.fitted(None).to_string();
        assert!(s.contains("┆      5 │"), "{s}");
        assert!(numeric("65.6%") && numeric("1,234") && !numeric("abc") && !numeric("t1"));
    }
}
