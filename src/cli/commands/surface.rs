//! `dsh surface`: the ordered surface.

use anyhow::Result;
use dsh::json::Value;

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, preview};
use crate::cli::exit::Status;
use crate::cli::render;

/// Show the current surface: position, seq, type, role, tokens and a preview
/// of every node the model sees, and which raw seqs each replacement shadows.
///
/// With --json: `{"nodes": [seq…], "replaceGeneration", "replacements":
/// [{"seq","start","end","shadowedSeqs"}], "positions": [{"position","seq",
/// "type","role","tokens","derives"}], "schema_version"}`.
#[derive(Debug, clap::Args)]
pub struct SurfaceArgs {
    /// The log.
    #[arg(value_name = "LOG")]
    pub log: String,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &SurfaceArgs) -> Result<Status> {
    let log = ctx.load(&args.log)?;
    let s = &log.surface;
    if ctx.json {
        let positions: Vec<Value<'static>> = s
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                Value::obj()
                    .with("position", i.into())
                    .with("seq", n.seq.into())
                    .with("type", kind_name(n.kind).into())
                    .with("tokens", n.tokens.into())
                    .with("derives", n.derives.into())
            })
            .collect();
        let v = s
            .to_json()
            .with("positions", Value::Arr(positions))
            .with("version", log.header.version.into())
            .with(
                "contentGeneration",
                log.content_generation
                    .map(Value::from)
                    .unwrap_or(Value::Null),
            )
            .with("schema_version", SCHEMA_VERSION.into());
        ctx.print_json(&v)?;
        return Ok(Status::Ok);
    }
    let events = log.node_events(&s.seqs())?;
    let mut t = render::table(&["pos", "seq", "type", "role", "tokens", "preview", "shadows"]);
    for (i, (n, ev)) in s.nodes.iter().zip(&events).enumerate() {
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
            kind_name(n.kind).to_string(),
            role,
            n.tokens.to_string(),
            preview(ev.message(), 60),
            shadows,
        ]);
    }
    println!("{t}");
    println!(
        "{} node(s), {} token(s) by the DSH heuristic, replaceGeneration {}, {} event(s) in the log",
        s.nodes.len(),
        s.tokens,
        s.replace_generation,
        log.event_count()
    );
    Ok(Status::Ok)
}

/// The event type name of a surface kind.
pub fn kind_name(k: dsh::Kind) -> &'static str {
    match k {
        dsh::Kind::UserMessage => "user/message",
        dsh::Kind::AssistantMessage => "assistant/message",
        dsh::Kind::ToolResult => "tool/result",
        dsh::Kind::SystemMessage => "system/message",
        _ => "other",
    }
}
