//! `dsh load`: what the loader made of a log (what the reference's loader reports).

use anyhow::Result;

use crate::cli::ctx::Ctx;
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
    if ctx.json {
        ctx.print_doc(&dsh::doc::load::Load::of(&log, log.source.display()))?;
        return Ok(Status::Ok);
    }
    let h = &log.header;
    let container = match log.container {
        dsh::log::Container::Plain => "jsonl",
        dsh::log::Container::Zstd => "zstd",
    };
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
