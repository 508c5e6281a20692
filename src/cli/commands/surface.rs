//! `dsh surface`: the ordered surface.

use anyhow::Result;

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, preview};
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
        // Written piece by piece: a surface can have many thousand nodes and
        // the document should not be built as values first. The first keys
        // are `Surface::to_json`'s, in its order.
        let mut out = String::with_capacity(64 * s.nodes.len() + 256);
        out.push_str("{\"nodes\":[");
        for (i, n) in s.nodes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_u64(&mut out, n.seq);
        }
        out.push_str("],\"replaceGeneration\":");
        push_u64(&mut out, s.replace_generation);
        out.push_str(",\"replacements\":");
        s.replacements_json().write_json(&mut out);
        out.push_str(",\"positions\":[");
        for (i, n) in s.nodes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // Written by hand: one row per node, and `format!` per row
            // shows in profiles of large surfaces.
            out.push_str("{\"position\":");
            push_u64(&mut out, i as u64);
            out.push_str(",\"seq\":");
            push_u64(&mut out, n.seq);
            out.push_str(",\"type\":\"");
            out.push_str(render::kind_name(n.kind));
            out.push_str("\",\"tokens\":");
            push_u64(&mut out, n.tokens);
            out.push_str(if n.derives {
                ",\"derives\":true}"
            } else {
                ",\"derives\":false}"
            });
        }
        let cg = log
            .content_generation
            .map(|c| c.to_string())
            .unwrap_or_else(|| "null".into());
        out.push_str(&format!(
            "],\"version\":{},\"contentGeneration\":{cg},",
            log.header.version
        ));
        out.push_str("\"file\":");
        dsh::Value::from(log.source.display()).write_json(&mut out);
        out.push_str(",\"session\":");
        dsh::Value::from(log.header.id.as_str()).write_json(&mut out);
        out.push_str(&format!(",\"schema_version\":{SCHEMA_VERSION}}}\n"));
        ctx.out.write_all(out.as_bytes())?;
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
            preview(ev.message(), preview_chars),
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

/// Append `n` in decimal.
fn push_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(buf[i..].iter().map(|&d| d as char));
}
