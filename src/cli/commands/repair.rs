//! `dsh repair`: cut a log whose end a crash damaged back to its last whole
//! frame or line.

use anyhow::Result;
use dsh::append::repair::{self, RepairOptions, RepairPlan};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::outln;
use crate::cli::writes::{append_error, seconds};

/// Cut a log whose end a crash damaged back to its last whole frame or line.
///
/// A crash (or a writer killed mid-write) can leave a Zstandard artifact
/// whose last frame is cut short, or a plain log whose last line is torn or
/// followed by a damaged region. Readers read the whole part (and say what
/// they ignored); writers refuse the log until its end is whole. `dsh
/// repair` is the remedy: under the writer's lock it cuts the file back to
/// the end of its last whole frame (or line), after keeping the bytes cut
/// off beside the log as `NAME.cut-OFFSET`. A log whose end is whole is
/// left as it is (exit 0).
///
/// It refuses (exit 4) while a writer may be live: another dsh holds the
/// writer lock (--wait to wait for it), or the log was modified less than 10
/// seconds ago, as a running harness (which takes no lock) would have it;
/// --force skips the second check only. Do not repair a session a running
/// harness has open.
///
/// With --json: `{"file", "damage": {"kind": "cut-frame" | "torn-line" |
/// "dropped-region", "message"} | null, "fileLen", "keepLen",
/// "removedBytes", "eventsKept", "eventsDropped", "refusal", "savedTo", "repaired",
/// "dryRun", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh repair --dry-run session.jsonl.zstd   # what would be cut, at which file byte\n  dsh repair session.jsonl.zstd             # cut it back; the cut bytes are kept beside it\n  dsh repair --wait 30 session.jsonl        # wait for another dsh writer first"
)]
pub struct RepairArgs {
    /// The log (a file, a session directory, a session id or a working
    /// directory).
    #[arg(value_name = "LOG")]
    pub log: String,
    /// Say what would be cut; write nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Wait up to SECONDS for another dsh writer's lock.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
    /// Repair even though the log was modified in the last 10 seconds (never
    /// while another dsh holds its lock).
    #[arg(long)]
    pub force: bool,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &RepairArgs) -> Result<Status> {
    let src = ctx.resolve(&args.log)?;
    let Some(path) = src.path().map(|p| p.to_path_buf()) else {
        return Err(UsageError("repair needs a file, not standard input".into()).into());
    };
    let opts = RepairOptions {
        load: ctx.load_options(),
        wait: args.wait.map(|s| seconds("--wait", s)).transpose()?,
        min_age: if args.force {
            std::time::Duration::ZERO
        } else {
            RepairOptions::default().min_age
        },
    };
    let file = path.display().to_string();
    let (plan, saved) = if args.dry_run {
        (repair::plan(&path, &opts).map_err(append_error)?, None)
    } else {
        match repair::repair(&path, &opts).map_err(append_error)? {
            Some(r) => (Some(r.plan), Some(r.saved_to)),
            None => (None, None),
        }
    };
    let saved = saved.map(|p| p.display().to_string());
    if ctx.json {
        ctx.print_doc(&dsh::doc::repair::Repair::of(
            &file,
            plan.as_ref(),
            saved.as_deref(),
            args.dry_run,
        ))?;
    } else {
        human(ctx, &file, plan.as_ref(), saved.as_deref(), args.dry_run)?;
    }
    Ok(match plan {
        // A dry run that a real run would refuse: a finding (as `compact
        // --dry-run`'s "would fail").
        Some(p) if args.dry_run && p.refusal.is_some() => Status::Findings,
        _ => Status::Ok,
    })
}

fn human(
    ctx: &Ctx,
    file: &str,
    plan: Option<&RepairPlan>,
    saved: Option<&str>,
    dry_run: bool,
) -> Result<()> {
    let Some(p) = plan else {
        outln!(ctx.out, "{file}: its end is whole; nothing to repair")?;
        return Ok(());
    };
    let removed = p.file_len - p.keep_len;
    outln!(ctx.out, "{file}: {}", p.damage)?;
    let verb = if dry_run { "would cut" } else { "cut" };
    outln!(
        ctx.out,
        "  {verb} the file back from {} to {} bytes (file byte {}): {removed} byte(s) off, {} event(s) kept",
        p.file_len,
        p.keep_len,
        p.keep_len,
        p.events_kept
    )?;
    if p.events_dropped > 0 {
        outln!(
            ctx.out,
            "  {} event(s) that readers take from the cut frame's whole blocks go with it (they stay in the bytes kept)",
            p.events_dropped
        )?;
    }
    match (saved, dry_run) {
        (Some(s), _) => outln!(ctx.out, "  the bytes cut off are kept in {s}")?,
        (None, true) => outln!(
            ctx.out,
            "  (dry run: nothing written; the bytes cut off would be kept in {file}.cut-{})",
            p.keep_len
        )?,
        (None, false) => {}
    }
    if let Some(r) = &p.refusal {
        outln!(ctx.out, "  a real run would refuse: {r}")?;
    }
    Ok(())
}
