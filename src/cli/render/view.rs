//! `dsh view`'s readable output: the log beside the model's view, and the
//! survival figures.

use std::io::Write;

use anyhow::Result;
use dsh::hidden_prefix::ProviderCount;
use dsh::survival::{Category, Survival};
use dsh::view::{ModelSide, ReplacementKind, Row, SurfaceEntry, View};

use crate::cli::render::{self, Tone, escape, paint};
use crate::cli::rows::RowWindow;

fn pad(s: &str, w: usize) -> String {
    let s = render::cut(s, w);
    let n = render::display_width(&s);
    format!("{s}{}", " ".repeat(w.saturating_sub(n)))
}

fn seqs(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}

fn kind_word(k: ReplacementKind) -> &'static str {
    match k {
        ReplacementKind::Checkpoint => "checkpoint",
        ReplacementKind::Pruned => "pruned result",
        ReplacementKind::SystemPrompt => "system prompt",
        ReplacementKind::Other => "replacement",
    }
}

/// A surface entry in `w` columns: position, role, and its text (a pruned
/// result as head, marker and tail, each given its share).
fn entry_text(e: &SurfaceEntry, w: usize) -> String {
    let role = escape::line(e.role.as_deref().unwrap_or("-"));
    let head = match e.replacement {
        Some(ReplacementKind::Pruned) => format!("#{} ⟲ pruned {}: ", e.position, e.seq),
        Some(k) => format!("#{} ⟲ {} {}: ", e.position, kind_word(k), e.seq),
        None => format!("#{} {role}: ", e.position),
    };
    let room = w.saturating_sub(render::display_width(&head));
    let body = match &e.pruned {
        Some(p) => {
            // A narrow column keeps room for head and tail: the marker shrinks.
            let marker = if room >= render::display_width(&p.marker) + 24 {
                format!(" {} ", p.marker)
            } else {
                " [… pruned …] ".to_string()
            };
            let share = room.saturating_sub(render::display_width(&marker)) / 2;
            let h = p.head.chars().rev().take(share).collect::<Vec<_>>();
            let h: String = h.into_iter().rev().collect();
            let h = escape::line(&h);
            let t = render::cut(&escape::line(&p.tail), share.max(1));
            format!("{h}{}{t}", paint(&marker, Tone::Warn))
        }
        None => escape::line(&e.preview).into_owned(),
    };
    format!("{head}{body}")
}

fn right_cell(row: &Row, view: &View, w: usize) -> String {
    let entry = |p: Option<usize>| p.and_then(|p| view.surface.get(p));
    match &row.model {
        ModelSide::Shown { position, derives } => match entry(Some(*position)) {
            Some(e) if *derives => entry_text(e, w),
            Some(e) => format!("#{} (derives no message)", e.position),
            None => String::new(),
        },
        ModelSide::Replaced {
            by,
            position,
            replacement,
            via,
            first,
            ..
        } => {
            let route = if via.is_empty() {
                String::new()
            } else {
                format!(" via {}", seqs(via))
            };
            let link = format!(
                "→ #{} {} {by}{route}",
                position.map_or("?".into(), |p| p.to_string()),
                kind_word(*replacement)
            );
            match (first, entry(*position)) {
                (true, Some(e)) => format!("→ {}", entry_text(e, w.saturating_sub(2))),
                _ => paint(&format!("  ┆ {link}"), Tone::Warn),
            }
        }
        ModelSide::Marker { replacement } => {
            let what = match row.event_type.as_str() {
                "compaction/prune" => "prune",
                "compaction/start" => "compaction starts",
                "compaction/summary" => "compaction summary",
                "compaction/end" => "compaction ends",
                other => other,
            };
            let r = replacement.and_then(|s| view.replacements.iter().find(|r| r.seq == s));
            let text = match r {
                Some(r) => format!(
                    "── {what}: [{}] → {} {} ──",
                    seqs(&r.shadowed),
                    kind_word(r.kind),
                    r.seq
                ),
                None => format!("── {what} (no replacement) ──"),
            };
            paint(&text, Tone::Good)
        }
        ModelSide::Hidden => String::new(),
    }
}

/// The two columns, their header and the footer.
pub fn write_columns(
    out: &mut dyn Write,
    view: &View,
    width: usize,
    at: Option<u64>,
    window: RowWindow,
    provider: Option<&ProviderCount>,
) -> Result<()> {
    let left_w = (width - 3) / 2;
    let right_w = width - 3 - left_w;
    let tokens: u64 = view.surface.iter().map(|e| e.tokens).sum();
    let point = match at {
        Some(a) => format!("at seq {a}"),
        None => "now".to_string(),
    };
    let rows = &view.rows[window.range(view.rows.len())];
    // Seqs and turns past six digits and three characters widen their
    // columns, so that the rows stay aligned.
    let seq_w = rows
        .iter()
        .map(|r| r.seq.to_string().len())
        .max()
        .unwrap_or(0)
        .max(6);
    let turn_label = |t: Option<u64>| t.map_or("-".into(), |t| format!("t{t}"));
    let turn_w = rows
        .iter()
        .map(|r| turn_label(r.turn).len())
        .max()
        .unwrap_or(0)
        .max(3);
    writeln!(
        out,
        "{} │ {}",
        pad(&format!("{:>seq_w$}  log (what happened)", "seq"), left_w),
        render::cut(
            &format!(
                "the model's view {point}: {} nodes, {} tokens",
                view.surface.len(),
                render::num(tokens)
            ),
            right_w
        )
    )?;
    writeln!(
        out,
        "{}┼{}",
        "─".repeat(left_w + 1),
        "─".repeat(right_w + 1)
    )?;
    for row in rows {
        let replaced = matches!(row.model, ModelSide::Replaced { .. });
        let shade = if replaced { "▒" } else { " " };
        let left = format!(
            "{:>seq_w$}{shade}{:<turn_w$} {} {}",
            row.seq,
            turn_label(row.turn),
            short_type(&row.event_type),
            row.preview
        );
        // Log text, escaped before it is measured (see render::escape).
        let left = pad(&escape::line(&left), left_w);
        let left = if replaced {
            paint(&left, Tone::Warn)
        } else {
            left
        };
        let right = render::cut(&right_cell(row, view, right_w), right_w);
        writeln!(out, "{left} │ {right}")?;
    }
    let compactions = view
        .replacements
        .iter()
        .filter(|r| r.kind == ReplacementKind::Checkpoint)
        .count();
    let prunes = view
        .replacements
        .iter()
        .filter(|r| r.kind == ReplacementKind::Pruned)
        .count();
    let replaced = view
        .rows
        .iter()
        .filter(|r| matches!(r.model, ModelSide::Replaced { .. }))
        .count();
    if let Some(note) = window.note(view.rows.len(), "events") {
        writeln!(out, "{note}")?;
    }
    let footer = format!(
        "{} event(s) · {} replaced (▒) · {} compaction(s), {} prune(s) · {} node(s) the model sees",
        render::num(view.rows.len() as u64),
        render::num(replaced as u64),
        compactions,
        prunes,
        view.surface.len()
    );
    writeln!(out, "{}", render::wrap(&footer, width))?;
    if let Some(p) = provider {
        // A provider's count, beside DSH's estimate, on a line of its own
        // (the header's column is cut at 80 columns).
        let hidden = p.hidden.map_or(String::new(), |h| {
            format!(", a {}-token hidden prefix included", render::num(h))
        });
        let line = format!(
            "{}: {} tokens{hidden} (DSH's estimate: {})",
            p.counts.encoding.name(),
            render::num(p.total()),
            render::num(tokens)
        );
        writeln!(out, "{}", render::wrap(&line, width))?;
    }
    Ok(())
}

/// `user/message` → `user`, and so on: the type in a few columns.
fn short_type(t: &str) -> String {
    let s = match t {
        "user/message" => "user",
        "assistant/message" => "assistant",
        "tool/result" => "result",
        "turn/start" => "turn ▶",
        "turn/end" => "turn ■",
        "compaction/start" => "compact ▶",
        "compaction/summary" => "summary",
        "compaction/end" => "compact ■",
        "compaction/prune" => "prune",
        other => other,
    };
    format!("{s:<9}")
}

/// `--survival`: per compaction, which terms its summary kept.
pub fn write_survival(out: &mut dyn Write, s: &Survival, width: usize) -> Result<()> {
    if s.compactions.is_empty() {
        writeln!(out, "no compaction in this log: nothing to compare")?;
        return Ok(());
    }
    let pct = |k: usize, t: usize| {
        if t == 0 {
            "-".to_string()
        } else {
            format!("{:.0}%", k as f64 / t as f64 * 100.0)
        }
    };
    for c in &s.compactions {
        let id = c.compaction_id.as_deref().unwrap_or("-");
        let summary = c.summary_seq.map_or("the checkpoint's text".into(), |q| {
            format!("summary seq {q}")
        });
        writeln!(
            out,
            "{}",
            render::cut(
                &format!(
                    "compaction {id} · checkpoint seq {} · replaced [{}] · {summary}",
                    c.checkpoint_seq,
                    seqs(&c.replaced)
                ),
                width
            )
        )?;
        for cat in Category::ALL {
            let f = c.categories.get(cat);
            let head = format!(
                "  {:<12} {:>4}/{:<4} {:>4}",
                cat.name(),
                f.kept,
                f.total,
                pct(f.kept, f.total)
            );
            writeln!(out, "{head}")?;
            for (label, list, tone) in [
                ("kept", &f.survived, Tone::Good),
                ("lost", &f.lost, Tone::Bad),
            ] {
                if list.is_empty() {
                    continue;
                }
                let line = format!("      {}: {}", label, list.join(" · "));
                let line = render::cut(&line, width);
                writeln!(out, "{}", paint(&line, tone))?;
            }
        }
        writeln!(out)?;
    }
    let t = &s.totals;
    let cats: Vec<String> = Category::ALL
        .iter()
        .map(|c| {
            let n = t.get(*c);
            format!("{} {}/{}", c.name(), n.kept, n.total)
        })
        .collect();
    let line = format!(
        "session: {} compaction(s) · {}/{} terms kept ({}) · {}",
        t.compactions,
        t.all.kept,
        t.all.total,
        pct(t.all.kept, t.all.total),
        cats.join(" · ")
    );
    writeln!(out, "{}", render::wrap(&line, width))?;
    Ok(())
}
