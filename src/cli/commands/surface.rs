//! `dsh surface`: the ordered surface.

use anyhow::Result;

use crate::cli::ctx::Ctx;
use crate::cli::exit::Status;
use crate::cli::render;
use crate::cli::render::outln;
use crate::cli::rows::RowWindow;

/// Show the current surface: the ordered nodes the model sees.
///
/// One row per node: position, seq, type, role, tokens and a preview, and
/// which raw seqs each replacement shadows.
///
/// With --json: `{"nodes": [seq…], "replaceGeneration", "replacements":
/// [{"seq","start","end","shadowedSeqs"}], "positions": [{"position","seq",
/// "type","tokens","derives"}], "version", "contentGeneration", "file",
/// "session", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh surface session.jsonl\n  dsh surface .                      # newest session of this directory\n  dsh surface 5b1d --tail 20          # id prefix, last 20 nodes\n  dsh surface --json s.jsonl | jq '.positions | length'"
)]
pub struct SurfaceArgs {
    /// The log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    #[arg(value_name = "LOG")]
    pub log: String,
    #[command(flatten)]
    pub rows: RowWindow,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &SurfaceArgs) -> Result<Status> {
    args.rows.whole_json_only(ctx.json)?;
    let log = ctx.load(&args.log)?;
    let s = &log.surface;
    if ctx.json {
        ctx.print_doc(&dsh::doc::surface::Surface::of(&log, log.source.display()))?;
        return Ok(Status::Ok);
    }
    ctx.page();
    let mut file = None;
    let mut t = render::table(&["pos", "seq", "type", "role", "tokens", "preview", "shadows"]);
    t.drop_first(&["role", "shadows", "pos"]);
    // The table cuts previews to the terminal; into a pipe they stay short.
    let preview_chars = render::width().unwrap_or(60).max(60);
    let shown = args.rows.range(s.nodes.len());
    for (i, n) in s
        .nodes
        .iter()
        .enumerate()
        .skip(shown.start)
        .take(shown.len())
    {
        let ev = log.read_body(&n.body, n.seq, &mut file)?;
        let role = ev
            .message()
            .and_then(|m| m.get("role"))
            .and_then(|r| r.as_str())
            .unwrap_or_default()
            .into_owned();
        let shadows = s
            .replacements
            .iter()
            .find(|r| r.seq == n.seq)
            .map(|r| format!("{:?}", r.shadowed))
            .unwrap_or_default();
        t.add_row(vec![
            i.to_string(),
            n.seq.to_string(),
            render::kind_name(n.kind).to_string(),
            role,
            render::num(n.tokens),
            dsh::view::preview(ev.message(), preview_chars),
            shadows,
        ]);
    }
    outln!(ctx.out, "{t}")?;
    if let Some(note) = args.rows.note(s.nodes.len(), "nodes") {
        outln!(ctx.out, "{note}")?;
    }
    outln!(
        ctx.out,
        "{} node(s), {} token(s) by the DSH heuristic, replaceGeneration {}, {} event(s) in the log",
        render::num(s.nodes.len() as u64),
        render::num(s.tokens),
        s.replace_generation,
        render::num(log.event_count())
    )?;
    Ok(Status::Ok)
}
