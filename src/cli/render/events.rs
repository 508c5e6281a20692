//! `dsh events`' rows: a human row's columns and its mark, a `--json`
//! row.

use std::collections::HashSet;

use dsh::doc::SchemaVersion;
use dsh::doc::events::{EventRow, Stored};
use dsh::event::{Event, Kind};
use dsh::json::Value;
use dsh::log::Folded;
use dsh::view::Origin;

use crate::cli::render::{self, escape};

/// How rows are drawn: JSON or text, the preview's width, the terminal's.
pub struct Shape {
    pub json: bool,
    pub width: usize,
    pub term: Option<usize>,
    pub file: String,
    /// A JSON row's closing text (after its event).
    pub tail: String,
}

impl Shape {
    /// A row as it is read, marked by the final surface `current`.
    pub fn row(
        &self,
        ev: &Event<'_>,
        folded: &Folded<'_>,
        (name, turn, origin): (&str, Option<u64>, Origin),
        current: &HashSet<u64>,
    ) -> String {
        if self.json {
            let on_surface = current.contains(&ev.seq);
            return json_row(ev, folded, (name, turn, origin), &self.file, on_surface)
                .line()
                .0;
        }
        let (head, tail) = human_parts(ev, folded, name, turn, origin, self.width);
        let m = mark(current, ev.seq, ev.kind.is_surface(), folded.synthetic);
        human_line(&head, m, &tail, self.term)
    }
}

/// A `--json` row of `file`, its event not copied yet.
pub fn json_row<'a>(
    ev: &'a Event<'_>,
    folded: &Folded<'a>,
    (kind, turn, origin): (&'a str, Option<u64>, Origin),
    file: &'a str,
    on_surface: bool,
) -> EventRow<'a> {
    EventRow {
        seq: ev.seq,
        line: (ev.line > 0).then_some(ev.line),
        kind,
        turn,
        origin,
        on_surface,
        synthetic: folded.synthetic,
        // The event is copied from its line when the line is what
        // serialising it would write (nearly always).
        event: folded
            .canonical_line
            .map_or(Stored::Value(&ev.value), Stored::Line),
        file,
        schema_version: SchemaVersion,
    }
}

/// A human row: the seq, turn and type columns before the mark, the detail
/// after it.
pub fn human_parts(
    ev: &Event<'_>,
    folded: &Folded<'_>,
    name: &str,
    turn: Option<u64>,
    origin: Origin,
    width: usize,
) -> (String, String) {
    let t = turn.map(|t| format!("t{t}")).unwrap_or_else(|| "-".into());
    let arrow = if origin == Origin::Replace {
        "⟲"
    } else {
        " "
    };
    (
        format!(
            "{:>7}  {:<4} {arrow} {:<20} ",
            ev.seq,
            t,
            escape::line(name)
        ),
        format!(" {}", escape::line(&describe(ev, folded, width))),
    )
}

/// The row's line: cut to the terminal, never wrapped by it.
pub fn human_line(head: &str, mark: &str, tail: &str, term: Option<usize>) -> String {
    let line = format!("{head}{mark:<9}{tail}");
    match term {
        Some(w) => render::cut(line.trim_end_matches('\n'), w) + "\n",
        None => line + "\n",
    }
}

/// The mark column: what the current surface says of an event.
pub fn mark(current: &HashSet<u64>, seq: u64, message: bool, synthetic: bool) -> &'static str {
    if synthetic {
        "synthetic"
    } else if message && !current.contains(&seq) {
        "shadowed"
    } else {
        ""
    }
}

pub fn describe(ev: &Event<'_>, folded: &Folded<'_>, width: usize) -> String {
    match ev.kind {
        Kind::UserMessage | Kind::AssistantMessage | Kind::ToolResult => {
            let mut s = dsh::view::preview(ev.message(), width);
            if let Some(a) = folded.applied
                && !a.shadowed.is_empty()
            {
                let seqs: Vec<String> = a.shadowed.iter().map(|n| n.seq.to_string()).collect();
                s = format!("replaces [{}]: {s}", seqs.join(", "));
            }
            s
        }
        // Token counts with their thousands grouped, as every table here.
        _ => dsh::view::describe(ev, width, &|v: &Value<'_>| {
            v.as_f64().map_or_else(|| v.to_json(), render::num_f64)
        }),
    }
}
