//! The side-by-side section of a report: the transcript beside the model's
//! view ([`crate::view`]), one collapsible `<details>` per turn, and the
//! survival figures of each compaction ([`crate::survival`]).

use std::fmt::Write;

use super::markup::{Section, escape};
use crate::survival::{Category, Survival};
use crate::view::{ModelSide, ReplacementKind, Row, View};

/// Transcript rows shown at most; beyond, the last turns that fit are shown
/// and the page says so (`dsh view` shows everything).
const MAX_ROWS: usize = 3000;

/// Survival in words, from each category's kept and total terms:
/// `paths 3/10 · commands 0/2 …`.
fn survival_text(counts: impl Fn(Category) -> (usize, usize)) -> String {
    Category::ALL
        .iter()
        .map(|&c| {
            let (kept, total) = counts(c);
            format!("{} {kept}/{total}", c.name())
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The survival text of the compaction whose summary is `summary_seq`.
pub(crate) fn survival_of(s: &Survival, summary_seq: u64) -> Option<String> {
    s.compactions
        .iter()
        .find(|c| c.summary_seq == Some(summary_seq))
        .map(|c| survival_text(|k| (c.categories.get(k).kept, c.categories.get(k).total)))
}

fn kind(k: ReplacementKind) -> &'static str {
    match k {
        ReplacementKind::Checkpoint => "compaction checkpoint",
        ReplacementKind::Pruned => "pruned result",
        ReplacementKind::SystemPrompt => "system prompt",
        ReplacementKind::Other => "replacement",
    }
}

/// A row's right-hand cell: what the model sees of the event.
fn model_cell(v: &View, r: &Row) -> String {
    match &r.model {
        ModelSide::Shown { position, .. } => match v.surface.get(*position) {
            Some(e) => match &e.pruned {
                Some(p) => format!(
                    "#{position} {} <span class=\"muted\">({} tokens)</span><br>{} <strong>{}</strong> {}",
                    escape(&e.event_type),
                    e.tokens,
                    escape(&p.head),
                    escape(&p.marker),
                    escape(&p.tail)
                ),
                None => format!(
                    "#{position} {} <span class=\"muted\">({} tokens)</span> {}",
                    escape(&e.event_type),
                    e.tokens,
                    escape(&e.preview)
                ),
            },
            None => format!("#{position}"),
        },
        ModelSide::Replaced {
            by,
            replacement,
            first,
            ..
        } => {
            let mut s = format!("replaced: stands as {} seq {by}", kind(*replacement));
            if *first && let Some(e) = v.surface.iter().find(|e| e.seq == *by) {
                let _ = write!(s, "<br>{}", escape(&e.preview));
            }
            s
        }
        ModelSide::Marker { replacement } => match replacement {
            Some(x) => format!("marker of seq {x}"),
            None => "marker (no replacement)".into(),
        },
        ModelSide::Hidden => "<span class=\"muted\">—</span>".into(),
    }
}

/// The section.
pub(crate) fn section(v: &View, survival: Option<&Survival>) -> Section {
    let mut h = String::new();
    if let Some(s) = survival {
        let t = &s.totals;
        let _ = write!(
            h,
            "<p id=\"survival-totals\">Survival over {} compaction(s): {} of {} terms of the replaced spans appear in their summaries ({}).</p>",
            t.compactions,
            t.all.kept,
            t.all.total,
            survival_text(|c| (t.get(c).kept, t.get(c).total))
        );
    }
    let rows = &v.rows;
    let skip = rows.len().saturating_sub(MAX_ROWS);
    // Start at a turn boundary.
    let start = if skip == 0 {
        0
    } else {
        let t = rows[skip].turn;
        rows[skip..]
            .iter()
            .position(|r| r.turn != t)
            .map_or(skip, |p| skip + p)
    };
    if start > 0 {
        let _ = write!(
            h,
            "<p class=\"note\" id=\"view-cut\">The transcript has {} events; the last {} are shown (from seq {}). <code>dsh view</code> shows them all.</p>",
            rows.len(),
            rows.len() - start,
            rows[start].seq
        );
    }
    h.push_str("<p class=\"muted\">Left: the log (every transcript event). Right: what the model sees of it now.</p>");
    let mut i = start;
    while i < rows.len() {
        let turn = rows[i].turn;
        let j = rows[i..]
            .iter()
            .position(|r| r.turn != turn)
            .map_or(rows.len(), |p| i + p);
        let label = match turn {
            Some(t) => format!("Turn {t}"),
            None => "Between turns".to_string(),
        };
        let _ = write!(
            h,
            "<details class=\"turn\"><summary>{} — {} event(s), seqs {}…{}</summary><table class=\"side\"><thead><tr><th>log</th><th>model</th></tr></thead><tbody>",
            escape(&label),
            j - i,
            rows[i].seq,
            rows[j - 1].seq
        );
        for r in &rows[i..j] {
            let class = match &r.model {
                ModelSide::Replaced { .. } => " class=\"replaced\"",
                ModelSide::Marker { .. } => " class=\"mark\"",
                _ => "",
            };
            let right = model_cell(v, r);
            let _ = write!(
                h,
                "<tr{class}><td><span class=\"muted\">{} {}</span> {}</td><td>{right}</td></tr>",
                r.seq,
                escape(&r.event_type),
                escape(&r.preview)
            );
        }
        h.push_str("</tbody></table></details>");
        i = j;
    }
    Section {
        id: "side-by-side".into(),
        title: "Transcript and model view".into(),
        html: h,
    }
}
