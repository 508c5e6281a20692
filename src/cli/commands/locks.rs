//! `dsh locks`: compaction locks, and the way out of a crashed one.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use dsh::LogSource;
use dsh::append::{AppendTarget, Appender};
use dsh::doc::error::Refused;
use dsh::doc::locks::{Entry, Locks, LogLocks, Release, Released, True};
use dsh::lock::{LockReport, LockScan, LockState, LockStatus};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::many::run_many;
use crate::cli::render;
use crate::cli::render::locks::{
    add_rows, print_nothing_to_release, print_released, print_summary, release_plan, released,
};
use crate::cli::render::outln;
use crate::cli::writes::{append_error, append_options, is_broken_pipe, now_ms};

/// List compaction locks (matched, stale, busy) and release a crashed one.
///
/// Every compaction/start of each log is listed with its status: matched (closed
/// by a compaction/end, ok or failed), stale (unmatched, but a later
/// session/end-seed shows its process ended: crash evidence that blocks
/// nothing), busy (unmatched after the newest session/end-seed: a live lock
/// the reference answers with "busy" to every compaction), or orphaned
/// (superseded by another start: an anomaly). Also lists bracket anomalies
/// (nested starts, ends without a start, id or owner mismatches, turn
/// boundaries crossing a bracket).
///
/// The table lists what is worth a look (busy, stale and orphaned locks,
/// anomalies, unreadable logs); --all lists every bracket and every log.
///
/// Without LOG: every session under $DSH_HOME. Exit 1 when any log has a
/// busy lock, an anomaly or a damaged end (a cut last Zstandard frame, a
/// torn last line: writers refuse it until `dsh repair`), so a script can
/// refuse to compact; 3 when a log is unreadable.
///
/// --release LOG: the way out after a crashed compaction. When no other dsh
/// process holds the log, append what a resuming harness writes: the
/// crash-repair closers of an interrupted last turn, then the
/// session/end-seed marker, which turns the busy compaction/start into stale
/// crash evidence. The compaction/start itself is never edited or removed.
/// It says what it will do and asks on a terminal; scripts pass --yes. Do not
/// release a session a running harness has open.
///
/// With --json: `{"logs": [{"file", "session", "state", "lastBracketSeq",
/// "lastEndSeedSeq", "lastSeq", "brackets": [{"seq", "compactionId",
/// "sourceCommandId"?, "turn", "openTurn", "time", "ageMs"?, "status",
/// "outcome", "endSeq", "error", "endSeedSeq", "supersededBy", "summarySeq",
/// "checkpointSeq"}], "anomalies": [{"seq","message"}], "damage"} |
/// {"file","error",…}], "summary": {"logs", "busy", "stale", "anomalies",
/// "errors", "damaged"}, "now"?,
/// "schema_version"}`; with --release: `{"file", "session", "out",
/// "released", "state", "bracket", "appended", "schema_version"}` (with
/// --dry-run: `"released": false, "dryRun": true` and what would be
/// appended, stamped with the log's last event time unless --time). The
/// JSON holds no clock reading unless asked: `ageMs` (never negative; a
/// start stamped ahead of the clock adds `clockSkewMs`; and the `now` it is
/// measured from) only with --age or --now.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh locks                             # every session under $DSH_HOME\n  dsh locks session.jsonl\n  dsh locks --release --yes session.jsonl"
)]
pub struct LocksArgs {
    /// Logs, session directories or directory trees; a working directory
    /// (`.`) means all of its project's sessions (default: all sessions
    /// under $DSH_HOME; with --release, one LOG: `.` is the project's
    /// newest session).
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// Release the live lock of one LOG (append the session/end-seed marker).
    #[arg(long)]
    pub release: bool,
    /// Do not ask before releasing.
    #[arg(long, short = 'y', requires = "release")]
    pub yes: bool,
    /// With --release: wait up to SECONDS for another dsh writer.
    #[arg(long, value_name = "SECONDS", requires = "release")]
    pub wait: Option<f64>,
    /// With --release: show what would be appended; write nothing.
    #[arg(long, short = 'n', requires = "release")]
    pub dry_run: bool,
    /// With --release: append to a copy of the log at FILE (must not
    /// exist) instead of the log itself; no confirmation is asked.
    #[arg(
        long,
        value_name = "FILE",
        requires = "release",
        conflicts_with = "dry_run"
    )]
    pub out: Option<std::path::PathBuf>,
    /// With --release: stamp the marker with this time (epoch ms) instead of now.
    #[arg(long, value_name = "MS", requires = "release")]
    pub time: Option<u64>,
    /// With --json: give each lock's age (`ageMs`), measured from the
    /// clock (or from --now). The table always shows ages.
    #[arg(long)]
    pub age: bool,
    /// Measure ages from this time (epoch ms) instead of the clock; with
    /// --json it implies --age.
    #[arg(long, value_name = "MS")]
    pub now: Option<u64>,
    /// List every bracket and every log, matched and free ones too (the
    /// table lists only busy, stale and orphaned locks by default; --json
    /// always holds every log).
    #[arg(long, conflicts_with = "release")]
    pub all: bool,
    /// Logs read in parallel (0: one per core).
    #[arg(long, short = 'j', default_value_t = 0)]
    pub jobs: usize,
}

/// Scan one log (stored events only: closers and the in-memory end-seed are
/// not in the file).
fn scan(ctx: &Ctx, src: &LogSource) -> Result<Scanned, dsh::LoadError> {
    let mut s = LockScan::new();
    // Chunks change no lock: they are counted, not built.
    let opts = dsh::LoadOptions {
        skip_chunk_events: true,
        ..ctx.load_options()
    };
    let log = dsh::log::load(src, &opts, &mut s)?;
    Ok(Scanned {
        report: s.report(),
        session: log.header.id.clone(),
        damage: dsh::verify::damaged_end(&log),
        warnings: log.warnings,
    })
}

/// What scanning one log found.
struct Scanned {
    report: LockReport,
    session: String,
    /// What a crash left at the end of the log (writers refuse it).
    damage: Option<String>,
    warnings: Vec<String>,
}

/// The reference time of the ages in JSON: none unless asked for.
fn json_now(args: &LocksArgs) -> Option<f64> {
    match args.now {
        Some(t) => Some(t as f64),
        None if args.age => Some(now_ms()),
        None => None,
    }
}

/// The logs to scan: those named, else every session of the home (`None`
/// once an empty home has been reported).
fn sources(ctx: &mut Ctx, args: &LocksArgs) -> Result<Option<Vec<LogSource>>> {
    if !args.logs.is_empty() {
        return Ok(Some(ctx.resolve_many(&args.logs)?));
    }
    let root = ctx.home_sessions()?;
    let found = dsh::log::source::discover(&root);
    if found.is_empty() {
        if ctx.json {
            ctx.print_doc(&Locks::of(Vec::new(), [0; 5], json_now(args)))?;
        } else {
            outln!(ctx.out, "no session logs under {}", root.display())?;
        }
        return Ok(None);
    }
    Ok(Some(found.into_iter().map(LogSource::File).collect()))
}

pub fn run(ctx: &mut Ctx, args: &LocksArgs) -> Result<Status> {
    if args.release {
        return release(ctx, args);
    }
    let Some(sources) = sources(ctx, args)? else {
        return Ok(Status::Ok);
    };
    let c: &Ctx = ctx;
    let results = run_many(c, &sources, args.jobs, "scanning locks", &|s| scan(c, s));
    let asked = json_now(args);
    let now = asked.unwrap_or_else(now_ms);
    let mut status = Status::Ok;
    let (mut busy, mut stale, mut anomalies, mut errors) = (0u64, 0u64, 0u64, 0u64);
    let mut damaged = 0u64;
    let mut logs = Vec::new();
    let mut t = render::table(&[
        "log",
        "seq",
        "compactionId",
        "owner",
        "status",
        "age",
        "detail",
    ]);
    t.drop_first(&["compactionId", "owner", "seq"]);
    let mut notes = Vec::new();
    let (mut rows, mut quiet_logs) = (0usize, 0usize);
    for (src, r) in sources.iter().zip(results) {
        let file = src.display();
        match r {
            Err(e) => {
                errors += 1;
                status = status.worst(Status::InvalidLog);
                if !ctx.quiet || ctx.json {
                    ctx.say_load_error(&e);
                }
                logs.push(Entry::Refused(Refused::of(file, &e)));
            }
            Ok(Scanned {
                report: rep,
                session,
                damage,
                warnings,
            }) => {
                if !ctx.quiet {
                    for w in &warnings {
                        eprintln!("{} {file}: {w}", crate::cli::render::warning_tag());
                    }
                }
                busy += rep
                    .brackets
                    .iter()
                    .filter(|b| b.status == LockStatus::Busy)
                    .count() as u64;
                stale += rep
                    .brackets
                    .iter()
                    .filter(|b| b.status == LockStatus::Stale)
                    .count() as u64;
                anomalies += rep.anomalies.len() as u64;
                if rep.state == LockState::Busy || !rep.anomalies.is_empty() {
                    status = status.worst(Status::Findings);
                }
                let added = add_rows(
                    &mut t,
                    &render::log_label(&file, ctx.home.as_deref()),
                    &rep,
                    now,
                    args.all,
                );
                rows += added;
                quiet_logs += usize::from(added == 0);
                for a in &rep.anomalies {
                    notes.push(format!("{file}: anomaly at seq {}: {}", a.seq, a.message));
                }
                if let Some(d) = &damage {
                    damaged += 1;
                    status = status.worst(Status::Findings);
                    notes.push(format!("{file}: damaged end: {d}"));
                }
                logs.push(Entry::Scanned(LogLocks::of(
                    src.display(),
                    &rep,
                    session,
                    damage,
                    asked,
                )));
            }
        }
    }
    if ctx.json {
        ctx.print_doc(&Locks::of(
            logs,
            [busy, stale, anomalies, errors, damaged],
            asked,
        ))?;
        return Ok(status);
    }
    if rows > 0 {
        outln!(ctx.out, "{t}")?;
    }
    for n in &notes {
        outln!(ctx.out, "{n}")?;
    }
    let counts = [busy, stale, anomalies, errors, damaged];
    print_summary(ctx, sources.len(), quiet_logs, counts)?;
    Ok(status)
}

fn release(ctx: &mut Ctx, args: &LocksArgs) -> Result<Status> {
    let [log] = args.logs.as_slice() else {
        return Err(UsageError("--release takes exactly one LOG".into()).into());
    };
    let opts = append_options(ctx, args.wait, None)?;
    let src = ctx.resolve(log)?;
    let mut noop = |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {};
    let target = match (&args.out, args.dry_run) {
        (_, true) => AppendTarget::DryRun,
        (Some(out), false) => AppendTarget::Copy(out.clone()),
        (None, false) => AppendTarget::InPlace,
    };
    let in_place = matches!(target, AppendTarget::InPlace);
    let mut app = Appender::open(&src, target, &opts, &mut noop).map_err(append_error)?;
    dsh::lifecycle::apply(&mut app, dsh::lifecycle::Writer::ReleaseLock, false)
        .map_err(append_error)?;
    ctx.warn_all(app.log());
    let file = src.display();
    let report = app.compaction_lock();
    let session = app.log().header.id.clone();
    let asked = json_now(args);
    let now = asked.unwrap_or_else(now_ms);
    let Some(b) = report.busy().cloned() else {
        print_nothing_to_release(ctx, file, session, report.state)?;
        return Ok(Status::Ok);
    };
    // A dry run is reproducible: stamped with the log's last event time,
    // as `prune --dry-run` does.
    let time = match args.time {
        Some(t) => crate::cli::writes::time_ms(t)?,
        None if args.dry_run => app.log().last_time,
        None => now_ms(),
    };
    let prefix = app.lifecycle_prefix(time);
    let plan = release_plan(&file, &b, &prefix, now, args.dry_run);
    if args.dry_run {
        if ctx.json {
            ctx.print_doc(&Release::Done(Box::new(Released {
                dry_run: Some(True),
                ..released(&file, &session, &b, asked, report.state, &prefix)
            })))?;
        } else {
            outln!(
                ctx.out,
                "{plan}
(dry run: nothing written)"
            )?;
        }
        return Ok(Status::Ok);
    }
    if in_place && !args.yes {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            eprintln!("{plan}");
            return Err(UsageError(
                "--release changes the log: confirm on a terminal, or pass --yes".into(),
            )
            .into());
        }
        eprint!("{plan}\nAppend? [y/N] ");
        std::io::stderr().flush().ok();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            eprintln!("nothing written");
            return Ok(Status::Findings);
        }
    } else if in_place && !ctx.json && !ctx.quiet {
        eprintln!("{plan}");
    }
    let rep = app
        .release_compaction_lock(time)
        .map_err(append_error)?
        .expect("the lock is busy");
    let after = app.compaction_lock().state;
    app.finish().map_err(append_error)?;
    let written = args
        .out
        .as_ref()
        .map_or_else(|| file.clone(), |o| o.display().to_string());
    // The write has landed: a failure to print the report must say so.
    let report = || -> Result<()> {
        print_released(
            ctx,
            args.out.as_ref(),
            &file,
            &session,
            &b,
            asked,
            after,
            &prefix,
            &rep,
            &written,
        )
    };
    match report() {
        Ok(()) => Ok(Status::Ok),
        Err(e) if !is_broken_pipe(&e) => Err(crate::cli::exit::StatusError {
            status: Status::Internal,
            message: format!(
                "{file}: the write landed ({} event(s) appended to {written}); only printing the report failed: {e:#}",
                rep.events
            ),
        }
        .into()),
        Err(e) => Err(e),
    }
}
