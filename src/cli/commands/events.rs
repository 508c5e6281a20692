//! `dsh events`: the human transcript of the raw log.

use std::collections::HashSet;
use std::io::Write;

use anyhow::Result;
use dsh::event::{Event, Kind, SurfaceOp};
use dsh::json::Value;
use dsh::log::Folded;

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, preview};
use crate::cli::exit::Status;
use crate::cli::render;
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
    /// The log.
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
}

/// Run it.
// About 125 lines on purpose: the printing observer keeps its state (turn, width, count) in one closure beside the load it observes.
pub fn run(ctx: &mut Ctx, args: &EventsArgs) -> Result<Status> {
    // Pass 1: which nodes are still on the surface at the end. Standard
    // input is spooled so that pass 2 can read it again.
    let src = ctx.resolve_rereadable(&args.log)?;
    let opts = ctx.load_options();
    let first = dsh::log::load(
        &src,
        &dsh::log::LoadOptions {
            skip_chunk_events: true,
            ..opts.clone()
        },
        &mut |_: &Event<'_>, _: &Folded<'_>| {},
    )?;
    // The loader's warnings once, from the first pass.
    ctx.warn_all(&first);
    let current: HashSet<u64> = first.surface.nodes.iter().map(|n| n.seq).collect();
    drop(first);
    ctx.page();
    let mut rows = Rows::new(args.rows, ctx.out.stream());
    let term = render::width();
    // seq, turn, type and mark take about 47 columns before the preview.
    let width = args
        .width
        .unwrap_or_else(|| term.map_or(100, |w| w.saturating_sub(47).max(20)));
    let file = src.display();
    let mut turn: Option<u64> = None;
    let mut werr: Option<std::io::Error> = None;
    let mut obs = |ev: &Event<'_>, folded: &Folded<'_>| {
        if werr.is_some() {
            return;
        }
        if ev.kind == Kind::TurnStart {
            turn = ev.turn().map(|t| t as u64);
        }
        let ev_turn = turn.or_else(|| ev.turn().map(|t| t as u64));
        let name = ev.type_name().into_owned();
        let origin = match folded.applied.map(|a| a.op) {
            Some(SurfaceOp::Append) => "append",
            Some(SurfaceOp::Replace(_)) => "replace",
            None => "log",
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
        let is_message = ev.kind.is_surface();
        let shown_by_default = is_message
            || matches!(
                ev.kind,
                Kind::CompactionStart
                    | Kind::CompactionEnd
                    | Kind::CompactionPrune
                    | Kind::CompactionSummary
                    | Kind::TurnStart
                    | Kind::TurnEnd
            );
        if !(wanted_type && wanted_turn && (args.all || !args.types.is_empty() || shown_by_default))
        {
            if ev.kind == Kind::TurnEnd {
                turn = None;
            }
            return;
        }
        if !rows.admit() {
            if ev.kind == Kind::TurnEnd {
                turn = None;
            }
            return;
        }
        let on_surface = current.contains(&ev.seq);
        let row = if ctx.json {
            let v = Value::obj()
                .with("seq", ev.seq.into())
                .with(
                    "line",
                    if ev.line > 0 {
                        Value::from(ev.line)
                    } else {
                        Value::Null
                    },
                )
                .with("type", name.as_str().into())
                .with("turn", ev_turn.map(Value::from).unwrap_or(Value::Null))
                .with("origin", origin.into())
                .with("onSurface", on_surface.into())
                .with("synthetic", folded.synthetic.into())
                .with("event", ev.value.to_owned_value())
                .with("file", file.as_str().into())
                .with("schema_version", SCHEMA_VERSION.into());
            let mut s = v.to_json();
            s.push('\n');
            s
        } else {
            let mark = if folded.synthetic {
                "synthetic"
            } else if ev.kind.is_surface() && !on_surface {
                "shadowed"
            } else {
                ""
            };
            let detail = describe(ev, folded, width);
            let t = ev_turn
                .map(|t| format!("t{t}"))
                .unwrap_or_else(|| "-".into());
            let line = match origin {
                "replace" => format!(
                    "{:>7}  {:<4} ⟲ {:<20} {:<9} {}\n",
                    ev.seq, t, name, mark, detail
                ),
                _ => format!(
                    "{:>7}  {:<4}   {:<20} {:<9} {}\n",
                    ev.seq, t, name, mark, detail
                ),
            };
            match term {
                // One line per event: cut, never wrapped by the terminal.
                Some(w) => render::cut(line.trim_end_matches('\n'), w) + "\n",
                None => line,
            }
        };
        if let Err(e) = rows.push(row) {
            werr = Some(e);
        }
        if ev.kind == Kind::TurnEnd {
            turn = None;
        }
    };
    // Chunks change no turn and no surface: unless one can be shown, they
    // are counted, not built.
    let names_chunks = |t: &String| match t.strip_suffix('/') {
        Some(_) => "assistant/chunk".starts_with(t.as_str()),
        None => t == "assistant/chunk",
    };
    let chunks_shown = (args.all || !args.types.is_empty())
        && (args.types.is_empty() || args.types.iter().any(names_chunks));
    let opts = dsh::log::LoadOptions {
        skip_chunk_events: !chunks_shown,
        ..opts
    };
    dsh::log::load(&src, &opts, &mut obs)?;
    if let Some(e) = werr {
        return Err(e.into());
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

fn describe(ev: &Event<'_>, folded: &Folded<'_>, width: usize) -> String {
    match ev.kind {
        Kind::UserMessage | Kind::AssistantMessage | Kind::ToolResult => {
            let mut s = preview(ev.message(), width);
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
