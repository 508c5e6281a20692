//! `dsh events`: the human transcript of the raw log.

use std::collections::HashSet;
use std::io::Write;

use anyhow::Result;
use dsh::doc::events::EventRow;
use dsh::event::{Event, Kind, SurfaceOp};
use dsh::log::Folded;
use dsh::view::Origin;

use crate::cli::ctx::Ctx;
use crate::cli::exit::Status;
use crate::cli::render;
use crate::cli::render::events::{Shape, human_line, human_parts, json_row, mark};
use crate::cli::rows::{RowWindow, Rows};

/// Show the raw log as a human transcript.
///
/// The append-origin message events in log order, marking those the surface
/// no longer shows, with replacements (checkpoints, pruned results) as
/// annotations; `--all` shows every event.
///
/// With --json: one JSON object per line (JSON Lines):
/// `{"seq","line","type","turn","origin":"append"|"replace"|"log",
/// "onSurface","synthetic","event","file","schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh events session.jsonl\n  dsh events --type compaction/ --turn 3 session.jsonl\n  dsh events --all --tail 50 session.jsonl\n  dsh events --json session.jsonl | jq -c 'select(.onSurface|not)'"
)]
pub struct EventsArgs {
    /// The log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    #[arg(value_name = "LOG")]
    pub log: String,
    /// Only events of these types (a trailing `/` matches a family, e.g. `tool/`).
    #[arg(long = "type", short = 't', value_name = "TYPE")]
    pub types: Vec<String>,
    /// Only events of this turn.
    #[arg(long, value_name = "N")]
    pub turn: Option<u64>,
    /// Show every event, log-only ones (chunks, steps, headers…) included.
    #[arg(long, short)]
    pub all: bool,
    /// Cut previews to this many characters (default: what fits the
    /// terminal, 100 into a pipe).
    #[arg(long, value_name = "CHARS")]
    pub width: Option<usize>,
    #[command(flatten)]
    pub rows: RowWindow,
    /// Test hook: rows the one-pass view may hold (bytes) before it reads
    /// the log a second time.
    #[arg(long, hide = true, value_name = "BYTES", default_value_t = HOLD_BYTES)]
    pub debug_hold_bytes: usize,
}

/// Rows held at most by the one-pass view before it falls back to reading
/// the log a second time.
const HOLD_BYTES: usize = 16 << 20;

/// A row waiting for the end of the log, which says whether its event is
/// still on the surface. As small as it can be: the rows a log may hold are
/// counted in bytes, these included.
enum Held {
    /// A human row: the text before and after the mark column.
    Human {
        seq: u64,
        /// A message event (the mark says whether the surface still shows it).
        message: bool,
        synthetic: bool,
        head: String,
        tail: String,
    },
    /// A `--json` row, whole or up to its event.
    Json {
        seq: u64,
        row: String,
        /// Where its `onSurface` value, written `false`, starts.
        at: usize,
        /// Where the row's event is in the log's plaintext (offset,
        /// length), when the event is its line as the log holds it: the
        /// row then ends at `"event":`, and the line is read again when
        /// the row is written. `None`: the row is whole.
        line: Option<(u64, u32)>,
    },
}

// No larger than a held row was before `--json` rows kept their line's
// place: the budget holds as many human rows as it did.
const _: () = assert!(std::mem::size_of::<Held>() <= 72);

/// Which events are shown, and the turn each falls in.
struct Selection<'a> {
    args: &'a EventsArgs,
    turn: Option<u64>,
}

impl Selection<'_> {
    /// The event's type name, turn and origin if it is shown (`None`
    /// otherwise); keeps the current turn.
    fn select(
        &mut self,
        ev: &Event<'_>,
        folded: &Folded<'_>,
    ) -> Option<(String, Option<u64>, Origin)> {
        let args = self.args;
        if ev.kind == Kind::TurnStart {
            self.turn = ev.turn().map(|t| t as u64);
        }
        let ev_turn = self.turn.or_else(|| ev.turn().map(|t| t as u64));
        if ev.kind == Kind::TurnEnd {
            self.turn = None;
        }
        let name = ev.type_name().into_owned();
        let origin = match folded.applied.map(|a| a.op) {
            Some(SurfaceOp::Append) => Origin::Append,
            Some(SurfaceOp::Replace(_)) => Origin::Replace,
            None => Origin::Log,
        };
        let wanted_type = args.types.is_empty()
            || args.types.iter().any(|t| {
                if t.ends_with('/') {
                    name.starts_with(t.as_str())
                } else {
                    &name == t
                }
            });
        let wanted_turn = args.turn.is_none_or(|t| ev_turn == Some(t));
        let shown_by_default = ev.kind.is_surface()
            || matches!(
                ev.kind,
                Kind::CompactionStart
                    | Kind::CompactionEnd
                    | Kind::CompactionPrune
                    | Kind::CompactionSummary
                    | Kind::TurnStart
                    | Kind::TurnEnd
            );
        (wanted_type && wanted_turn && (args.all || !args.types.is_empty() || shown_by_default))
            .then_some((name, ev_turn, origin))
    }
}

/// Run it.
///
/// Every view reads the log once and holds its rows until the surface at
/// the end says which events it no longer shows (the mark column, a JSON
/// row's `onSurface`); rows that outgrow [`HOLD_BYTES`] (`--json` rows are
/// whole events) make it read the log twice instead: the surface first,
/// then the rows, streamed.
pub fn run(ctx: &mut Ctx, args: &EventsArgs) -> Result<Status> {
    // Standard input is spooled so that a second pass can read it again.
    let src = ctx.resolve_rereadable(&args.log)?;
    // Chunks change no turn and no surface: unless one can be shown, they
    // are counted, not built.
    let names_chunks = |t: &String| match t.strip_suffix('/') {
        Some(_) => "assistant/chunk".starts_with(t.as_str()),
        None => t == "assistant/chunk",
    };
    let chunks_shown = (args.all || !args.types.is_empty())
        && (args.types.is_empty() || args.types.iter().any(names_chunks));
    let term = render::width();
    let file = src.display();
    let shape = Shape {
        json: ctx.json,
        // seq, turn, type and mark take about 47 columns before the preview.
        width: args
            .width
            .unwrap_or_else(|| term.map_or(100, |w| w.saturating_sub(47).max(20))),
        term,
        tail: EventRow::tail(&file),
        file,
    };
    let (log, held) = first_pass(ctx, args, &src, &shape, chunks_shown)?;
    // The loader's warnings once, from the first pass.
    ctx.warn_all(&log);
    let current: HashSet<u64> = log.surface.nodes.iter().map(|n| n.seq).collect();
    ctx.page();
    let mut rows = Rows::new(args.rows, ctx.out.stream());
    match held {
        Some(held) => write_held(&mut rows, held, &log, &src, &shape, &current)?,
        None => {
            let opts = dsh::log::LoadOptions {
                skip_chunk_events: !chunks_shown,
                ..ctx.load_options()
            };
            second_pass(&mut rows, args, &src, &opts, &shape, &current)?
        }
    }
    let shown = rows.seen();
    let mut out = rows.finish()?;
    if !ctx.json {
        match args.rows.note(shown, "events") {
            Some(note) => writeln!(out, "{note}")?,
            None => writeln!(out, "{} event(s) shown", render::num(shown as u64))?,
        }
    }
    out.flush()?;
    Ok(Status::Ok)
}

/// One pass: the rows wait (up to `debug_hold_bytes`) for the surface at
/// the end, which says which events it still shows. Past that, the pass
/// only finds the surface (no rows held: `None`), and a second one writes
/// the rows. A `--json` row waits without its event when the event is its
/// line as the log holds it (nearly always): the line is read again when
/// the row is written, which costs a fraction of a second pass. Chunk rows
/// are one per chunk: then a file larger than that budget (compressed or
/// not) goes straight to two passes, the first building no rows.
fn first_pass(
    ctx: &Ctx,
    args: &EventsArgs,
    src: &dsh::LogSource,
    shape: &Shape,
    chunks_shown: bool,
) -> Result<(dsh::LoadedLog, Option<Vec<Held>>)> {
    let reread = src.reread_path();
    let lines_again = reread.is_some();
    let too_large = chunks_shown
        && reread.is_some_and(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.len() > args.debug_hold_bytes as u64)
        });
    let mut overflow = too_large;
    let one_pass = dsh::log::LoadOptions {
        skip_chunk_events: !chunks_shown || too_large,
        ..ctx.load_options()
    };
    let mut rows: Vec<Held> = Vec::new();
    let mut bytes = 0usize;
    let mut sel = Selection { args, turn: None };
    let log = dsh::log::load(
        src,
        &one_pass,
        &mut |ev: &Event<'_>, folded: &Folded<'_>| {
            let Some((name, turn, origin)) = sel.select(ev, folded) else {
                return;
            };
            if overflow {
                return;
            }
            let shown = (name.as_str(), turn, origin);
            let held = if !shape.json {
                let (head, tail) = human_parts(ev, folded, &name, turn, origin, shape.width);
                Held::Human {
                    seq: ev.seq,
                    message: ev.kind.is_surface(),
                    synthetic: folded.synthetic,
                    head,
                    tail,
                }
            } else {
                let line = match (folded.canonical_line, folded.canonical_offset) {
                    (Some(text), Some(offset)) if lines_again => {
                        u32::try_from(text.len()).ok().map(|len| (offset, len))
                    }
                    _ => None,
                };
                let row = json_row(ev, folded, shown, &shape.file, false);
                let (row, at) = match line {
                    Some(_) => row.head(),
                    None => row.line(),
                };
                Held::Json {
                    seq: ev.seq,
                    row,
                    at,
                    line,
                }
            };
            bytes += std::mem::size_of::<Held>()
                + match &held {
                    Held::Human { head, tail, .. } => head.len() + tail.len(),
                    Held::Json { row, .. } => row.len(),
                };
            if bytes > args.debug_hold_bytes {
                overflow = true;
                rows = Vec::new();
                return;
            }
            rows.push(held);
        },
    )?;
    Ok((log, (!overflow).then_some(rows)))
}

/// Writes the rows the first pass held, marked by the final surface; a
/// held `--json` row gets its event's line read again from the log.
fn write_held<W: Write>(
    rows: &mut Rows<W>,
    held: Vec<Held>,
    log: &dsh::LoadedLog,
    src: &dsh::LogSource,
    shape: &Shape,
    current: &HashSet<u64>,
) -> Result<()> {
    let mut lines = None;
    for h in held {
        if !rows.admit() {
            continue;
        }
        rows.push(match h {
            Held::Human {
                seq,
                message,
                synthetic,
                head,
                tail,
            } => human_line(
                &head,
                mark(current, seq, message, synthetic),
                &tail,
                shape.term,
            ),
            Held::Json {
                seq,
                mut row,
                at,
                line,
            } => {
                if current.contains(&seq) {
                    row.replace_range(at..at + "false".len(), "true");
                }
                if let Some((offset, len)) = line {
                    let len = len as usize;
                    let lines = match &mut lines {
                        Some(w) => w,
                        None => lines.insert(log.span_window().ok_or_else(|| {
                            anyhow::anyhow!("{}: cannot read the log again", src.display())
                        })?),
                    };
                    if !lines.holds(offset, len) {
                        lines.fill(offset, len)?;
                    }
                    // The line was read as UTF-8 text (`canonical_offset`);
                    // an append-only log keeps it so.
                    let text = std::str::from_utf8(lines.slice(offset, len)).map_err(|_| {
                        anyhow::anyhow!(
                            "{}: the log changed while it was being read",
                            src.display()
                        )
                    })?;
                    row.reserve(text.len() + shape.tail.len());
                    row.push_str(text);
                    row.push_str(&shape.tail);
                }
                row
            }
        })?;
    }
    Ok(())
}

/// The second pass, when the rows did not fit: each row written as it is
/// read, marked by the surface the first pass found.
fn second_pass<W: Write>(
    rows: &mut Rows<W>,
    args: &EventsArgs,
    src: &dsh::LogSource,
    opts: &dsh::log::LoadOptions,
    shape: &Shape,
    current: &HashSet<u64>,
) -> Result<()> {
    let mut sel = Selection { args, turn: None };
    let mut werr: Option<std::io::Error> = None;
    let mut obs = |ev: &Event<'_>, folded: &Folded<'_>| {
        if werr.is_some() {
            return;
        }
        let Some((name, turn, origin)) = sel.select(ev, folded) else {
            return;
        };
        if !rows.admit() {
            return;
        }
        let row = shape.row(ev, folded, (name.as_str(), turn, origin), current);
        if let Err(e) = rows.push(row) {
            werr = Some(e);
        }
    };
    dsh::log::load(src, opts, &mut obs)?;
    match werr {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
