//! `dsh messages`: the derived model-visible messages.

use std::io::Write;

use anyhow::Result;

use crate::cli::ctx::{Ctx, block_fields, truncate};
use crate::cli::exit::Status;
use crate::cli::render::escape;
use crate::cli::rows::{RowWindow, Rows};

/// Show the messages the model sees (deriveMessages), in surface order.
///
/// With --json: a JSON array of the messages exactly as stored (`id`, `role`,
/// `source`, `content`), byte for byte what the reference's
/// `JSON.stringify(session.deriveMessages())` prints.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh messages session.jsonl\n  dsh messages --system --width 200 5b1d\n  dsh messages --json session.jsonl > messages.json\n  zstd -dc s.jsonl.zstd | dsh messages --tail 5 -"
)]
pub struct MessagesArgs {
    /// The log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    #[arg(value_name = "LOG")]
    pub log: String,
    /// Also print the folded system prompt first (readable view only).
    #[arg(long)]
    pub system: bool,
    /// Show the request projection: offloaded images (generation 3) become
    /// the placeholder text the model receives instead of the stored block.
    #[arg(long)]
    pub request: bool,
    /// Cut each text block to this many characters in the readable view (0: no limit).
    #[arg(long, default_value_t = 2000, value_name = "CHARS")]
    pub width: usize,
    #[command(flatten)]
    pub rows: RowWindow,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &MessagesArgs) -> Result<Status> {
    args.rows.whole_json_only(ctx.json)?;
    let log = ctx.load(&args.log)?;
    if ctx.json && !args.request {
        // Unbuffered: the writer hands over large vectored writes itself.
        let mut out = ctx.out.raw();
        match dsh::derive::write_messages_json(&log, &mut out) {
            Ok(()) => {}
            Err(dsh::derive::WriteMessagesError::Load(e)) => return Err(e.into()),
            Err(dsh::derive::WriteMessagesError::Write(e)) => return Err(e.into()),
        }
        out.flush()?;
        return Ok(Status::Ok);
    }
    if ctx.json {
        let doc = dsh::doc::messages::Messages::of(&log, true);
        if let Err(e) = ctx.print_doc(&doc) {
            return Err(doc.take_error().map_or_else(|| e.into(), Into::into));
        }
        return Ok(Status::Ok);
    }
    ctx.page();
    let mut out = ctx.out.stream();
    let cut = |s: &str| {
        if args.width == 0 {
            s.to_string()
        } else {
            truncate(s, args.width)
        }
    };
    if args.system
        && let Some(sys) = log
            .headers
            .header
            .as_ref()
            .and_then(|h| h.get("system"))
            .and_then(|s| s.as_jstr())
    {
        let sys = cut(&sys.to_lossy());
        writeln!(out, "── system ──\n{}\n", escape::text(&sys))?;
    }
    let mut rows = Rows::new(args.rows, out);
    dsh::derive::for_each_message(&log, &mut |ev, m| -> anyhow::Result<()> {
        if !rows.admit() {
            return Ok(());
        }
        let role = m
            .get("role")
            .and_then(|r| r.as_str())
            .unwrap_or_default()
            .into_owned();
        let kind = m
            .get("source")
            .and_then(|s| s.get("kind"))
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .into_owned();
        let mut s = format!("── {role} · seq {} · {} ──\n", ev.seq, kind);
        if let Some(blocks) = m.get("content").and_then(|c| c.as_arr()) {
            for b in blocks {
                render_block(b, &mut s, "", &cut);
            }
        }
        s.push('\n');
        rows.push(escape::text(&s).into_owned())?;
        Ok(())
    })?;
    let n = rows.seen();
    let mut out = rows.finish()?;
    match args.rows.note(n, "messages") {
        Some(note) => writeln!(out, "{note}")?,
        None => writeln!(out, "{} message(s)", crate::cli::render::num(n as u64))?,
    }
    out.flush()?;
    Ok(Status::Ok)
}

fn render_block(b: &dsh::Value<'_>, s: &mut String, indent: &str, cut: &dyn Fn(&str) -> String) {
    let (ty, text) = block_fields(b);
    match ty.as_str() {
        "text" => s.push_str(&format!("{indent}{}\n", cut(&text("text")))),
        "reasoning" => s.push_str(&format!("{indent}(thinking) {}\n", cut(&text("text")))),
        "tool-call" => s.push_str(&format!(
            "{indent}→ call {} {} {}\n",
            text("id"),
            text("name"),
            cut(&text("arguments"))
        )),
        "tool-result" => {
            let err = if b.get("isError").is_some_and(|e| e.is_true()) {
                " (error)"
            } else {
                ""
            };
            s.push_str(&format!(
                "{indent}← result for {}{err}\n",
                text("toolCallId")
            ));
            if let Some(inner) = b.get("content").and_then(|c| c.as_arr()) {
                let ind = format!("{indent}  ");
                for x in inner {
                    render_block(x, s, &ind, cut);
                }
            }
        }
        "image" if b.get("offloaded").is_some_and(|o| o.is_true()) => {
            s.push_str(&format!(
                "{indent}{}\n",
                dsh::derive::offloaded_image_text(b)
            ));
        }
        "image" => {
            let a = b.get("attachment");
            let name = a
                .and_then(|a| a.get("name"))
                .and_then(|n| n.as_str())
                .unwrap_or_default()
                .into_owned();
            let mt = a
                .and_then(|a| a.get("mediaType"))
                .and_then(|n| n.as_str())
                .unwrap_or_default()
                .into_owned();
            s.push_str(&format!("{indent}[image {name} {mt}]\n"));
        }
        other => s.push_str(&format!("{indent}[{other} block]\n")),
    }
}
