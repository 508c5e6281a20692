//! `dsh load`: what the loader made of a log (what the reference's loader reports).

use anyhow::Result;
use dsh::json::Value;

use crate::cli::ctx::{Ctx, SCHEMA_VERSION};
use crate::cli::exit::Status;
use crate::cli::render;
use crate::cli::render::outln;

/// Show what reading produced: header, event counts, closers, tolerances.
///
/// The validated header, stored events (after legacy upgrades, torn tail
/// dropped), the synthetic closers of an open final turn, whether the
/// reference would append its end-seed marker, an event-type histogram, and
/// every tolerance applied.
///
/// With --json: `{"header", "storedEvents", "closers": [event…], "events",
/// "endSeedAppended", "eventTypes": {type: n}, "container", "tornTail",
/// "dropped", "warnings", "file", "session", "schema_version"}` (the reference loader's keys plus dsh's).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh load session.jsonl\n  dsh load --json session.jsonl | jq .eventTypes"
)]
pub struct LoadArgs {
    /// The log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    #[arg(value_name = "LOG")]
    pub log: String,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &LoadArgs) -> Result<Status> {
    let log = ctx.load(&args.log)?;
    let h = &log.header;
    let mut header = Value::obj()
        .with("version", h.version.into())
        .with("id", h.id.as_str().into())
        .with("createdAt", h.created_at.into());
    if let Some(c) = &h.cwd {
        header = header.with("cwd", c.as_str().into());
    }
    if let Some(p) = &h.parent_session {
        header = header.with("parentSession", p.as_str().into());
    }
    if let Some(s) = h.seed_length {
        header = header.with("seedLength", s.into());
    }
    if let Some(o) = &h.origin {
        header = header.with("origin", o.as_str().into());
    }
    header = header.with("delegationDepth", h.delegation_depth.into());
    if let Some(a) = &h.agent_preset {
        header = header.with("agentPreset", a.as_str().into());
    }
    let mut types = Value::obj();
    for (k, n) in &log.event_types {
        types = types.with(k, (*n).into());
    }
    let container = match log.container {
        dsh::log::Container::Plain => "jsonl",
        dsh::log::Container::Zstd => "zstd",
    };
    if ctx.json {
        let v = Value::obj()
            .with("header", header)
            .with("storedEvents", log.stored_events.into())
            .with(
                "closers",
                Value::Arr(log.closers.iter().map(|c| c.value.clone()).collect()),
            )
            .with("events", log.event_count().into())
            .with("endSeedAppended", log.end_seed_appended().into())
            .with("eventTypes", types)
            .with("container", container.into())
            .with(
                "tornTail",
                log.torn
                    .map(|t| {
                        Value::obj()
                            .with("offset", t.offset.into())
                            .with("bytes", t.len.into())
                    })
                    .unwrap_or(Value::Null),
            )
            .with(
                "dropped",
                log.dropped
                    .as_ref()
                    .map(|d| {
                        Value::obj()
                            .with("line", d.line.into())
                            .with("lines", d.lines.into())
                            .with("reason", d.reason.as_str().into())
                    })
                    .unwrap_or(Value::Null),
            )
            .with(
                "warnings",
                Value::Arr(log.warnings.iter().map(|w| w.as_str().into()).collect()),
            )
            .with("file", log.source.display().into())
            .with("session", log.header.id.as_str().into())
            .with("schema_version", SCHEMA_VERSION.into());
        ctx.print_json(&v)?;
        return Ok(Status::Ok);
    }
    let mut t = render::table(&["field", "value"]);
    t.add_row(vec!["session".to_string(), h.id.clone()]);
    t.add_row(vec![
        "format".to_string(),
        format!("generation {} ({container})", h.version),
    ]);
    t.add_row(vec![
        "stored events".to_string(),
        render::num(log.stored_events),
    ]);
    t.add_row(vec![
        "synthetic closers".to_string(),
        render::num(log.closers.len() as u64),
    ]);
    t.add_row(vec![
        "surface nodes".to_string(),
        render::num(log.surface.nodes.len() as u64),
    ]);
    t.add_row(vec![
        "legacy upgrades".to_string(),
        log.upgraded.to_string(),
    ]);
    t.add_row(vec![
        "torn tail".to_string(),
        log.torn
            .map(|t| format!("{} byte(s) at {}", t.len, t.offset))
            .unwrap_or_else(|| "none".into()),
    ]);
    for (k, n) in &log.event_types {
        t.add_row(vec![k.clone(), render::num(*n)]);
    }
    outln!(ctx.out, "{t}")?;
    Ok(Status::Ok)
}
