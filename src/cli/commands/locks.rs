//! `dsh locks`: compaction locks, and the way out of a crashed one.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use dsh::LogSource;
use dsh::append::{AppendTarget, Appender};
use dsh::json::{OwnedValue, Value};
use dsh::lock::{Bracket, LockReport, LockScan, LockState, LockStatus};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, load_error_json};
use crate::cli::exit::{Status, UsageError};
use crate::cli::many::run_many;
use crate::cli::render;
use crate::cli::render::{Tone, outln};
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

/// A human age: `3d 4h`, `5m 2s`.
pub fn age(ms: f64) -> String {
    if !ms.is_finite() {
        return "unknown".into();
    }
    if ms < 0.0 {
        // Never a negative age: a time ahead of this clock is clock skew.
        return format!("{} ahead (clock skew)", duration(-ms));
    }
    duration(ms)
}

/// `3d 4h`, `2h 5m`, `4m 10s`, `12s`.
fn duration(ms: f64) -> String {
    let s = (ms / 1000.0) as u64;
    let (d, h, m) = (s / 86400, s / 3600 % 24, s / 60 % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {}s", s % 60)
    } else {
        format!("{s}s")
    }
}

fn opt_seq(v: Option<u64>) -> OwnedValue {
    v.map(Value::from).unwrap_or(Value::Null)
}

/// One bracket; `ageMs` only when a reference time is given.
fn bracket_json(b: &Bracket, now: Option<f64>) -> OwnedValue {
    let mut v = Value::obj()
        .with("seq", b.seq.into())
        .with("compactionId", b.compaction_id.clone());
    if let Some(s) = &b.source_command_id {
        v = v.with("sourceCommandId", s.clone());
    }
    let outcome = match b.status {
        LockStatus::Matched if b.error.is_some() => Value::from("failed"),
        LockStatus::Matched => Value::from("ok"),
        _ => Value::Null,
    };
    v = v
        .with("turn", b.turn.clone())
        .with(
            "openTurn",
            b.open_turn.map(Value::from).unwrap_or(Value::Null),
        )
        .with("time", b.time.into());
    if let Some(now) = now {
        // Never negative: a start stamped ahead of this clock has age 0 and
        // says by how much it is ahead.
        let age = now - b.time;
        v = v.with("ageMs", age.max(0.0).into());
        if age < 0.0 {
            v = v.with("clockSkewMs", (-age).into());
        }
    }
    v.with("status", b.status.as_str().into())
        .with("outcome", outcome)
        .with("endSeq", opt_seq(b.end_seq))
        .with("error", b.error.clone().unwrap_or(Value::Null))
        .with("endSeedSeq", opt_seq(b.end_seed_seq))
        .with("supersededBy", opt_seq(b.superseded_by))
        .with("summarySeq", opt_seq(b.summary_seq))
        .with("checkpointSeq", opt_seq(b.checkpoint_seq))
}

fn report_json(
    src: &LogSource,
    r: &LockReport,
    session: Option<String>,
    damage: Option<String>,
    now: Option<f64>,
) -> OwnedValue {
    let anomalies: Vec<OwnedValue> = r
        .anomalies
        .iter()
        .map(|a| {
            Value::obj()
                .with("seq", a.seq.into())
                .with("message", a.message.clone().into())
        })
        .collect();
    Value::obj()
        .with("file", src.display().into())
        .with("session", session.into())
        .with("state", r.state.as_str().into())
        .with("lastBracketSeq", opt_seq(r.last_bracket_seq))
        .with("lastEndSeedSeq", opt_seq(r.last_end_seed_seq))
        .with("lastSeq", opt_seq(r.last_seq))
        .with(
            "brackets",
            Value::Arr(r.brackets.iter().map(|b| bracket_json(b, now)).collect()),
        )
        .with("anomalies", Value::Arr(anomalies))
        .with("damage", damage.map_or(Value::Null, Value::from))
}

fn detail(b: &Bracket) -> String {
    let landed = |b: &Bracket| {
        let mut l = Vec::new();
        if let Some(s) = b.summary_seq {
            l.push(format!("summary @{s}"));
        }
        if let Some(s) = b.checkpoint_seq {
            l.push(format!("checkpoint @{s} (in effect)"));
        }
        if l.is_empty() {
            "nothing landed".to_string()
        } else {
            l.join(", ")
        }
    };
    match b.status {
        LockStatus::Matched => match &b.error {
            Some(e) => {
                let text = e
                    .as_jstr()
                    .map(|s| s.to_lossy().into_owned())
                    .unwrap_or_else(|| e.to_json());
                let stage = if b.summary_seq.is_some() {
                    " (after the summary: commit stage)"
                } else {
                    ""
                };
                format!(
                    "failed, end @{}{stage}: {}",
                    b.end_seq.unwrap_or(0),
                    crate::cli::ctx::truncate(&text, 60)
                )
            }
            None => format!("ok, end @{}", b.end_seq.unwrap_or(0)),
        },
        LockStatus::Stale => format!("end-seed @{}; {}", b.end_seed_seq.unwrap_or(0), landed(b)),
        LockStatus::Busy => format!("no end, no later end-seed; {}", landed(b)),
        LockStatus::Orphaned => format!(
            "superseded by compaction/start @{}",
            b.superseded_by.unwrap_or(0)
        ),
    }
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

/// The many-log envelope: `{"logs", "summary", "now"?, "schema_version"}`.
fn envelope(logs: Vec<OwnedValue>, counts: [u64; 5], now: Option<f64>) -> OwnedValue {
    let [busy, stale, anomalies, errors, damaged] = counts;
    let summary = Value::obj()
        .with("logs", (logs.len() as u64).into())
        .with("busy", busy.into())
        .with("stale", stale.into())
        .with("anomalies", anomalies.into())
        .with("errors", errors.into())
        .with("damaged", damaged.into());
    let mut v = Value::obj()
        .with("logs", Value::Arr(logs))
        .with("summary", summary);
    if let Some(now) = now {
        v = v.with("now", now.into());
    }
    v.with("schema_version", SCHEMA_VERSION.into())
}

/// Run it.
/// The table rows of one log: one per bracket, or one "free" row; without
/// `all`, only the brackets worth a look (busy, stale, orphaned). Returns
/// how many rows it added.
fn add_rows(
    t: &mut render::table::Tbl,
    file: &str,
    rep: &LockReport,
    now: f64,
    all: bool,
) -> usize {
    let mut added = 0;
    if rep.brackets.is_empty() && all {
        added += 1;
        t.add_row(vec![
            file.to_string(),
            "—".into(),
            "—".into(),
            "—".into(),
            "free".into(),
            "".into(),
            "no compaction/start".into(),
        ]);
    }
    for b in &rep.brackets {
        if !all && b.status == LockStatus::Matched {
            continue;
        }
        added += 1;
        let id = b
            .compaction_id
            .as_jstr()
            .map(|s| s.to_lossy().into_owned())
            .unwrap_or_else(|| b.compaction_id.to_json());
        let tone = match b.status {
            LockStatus::Busy => Some(Tone::Bad),
            LockStatus::Stale | LockStatus::Orphaned => Some(Tone::Warn),
            _ => None,
        };
        t.add_toned_row(vec![
            (file.to_string(), None),
            (b.seq.to_string(), None),
            (id, None),
            (b.owner(), None),
            (b.status.as_str().to_string(), tone),
            (age(now - b.time), None),
            (detail(b), None),
        ]);
    }
    added
}

pub fn run(ctx: &mut Ctx, args: &LocksArgs) -> Result<Status> {
    if args.release {
        return release(ctx, args);
    }
    let sources = if args.logs.is_empty() {
        let root = ctx.home_sessions()?;
        let found = dsh::log::source::discover(&root);
        if found.is_empty() {
            if ctx.json {
                ctx.print_json(&envelope(Vec::new(), [0; 5], json_now(args)))?;
            } else {
                outln!(ctx.out, "no session logs under {}", root.display())?;
            }
            return Ok(Status::Ok);
        }
        found.into_iter().map(LogSource::File).collect()
    } else {
        ctx.resolve_many(&args.logs)?
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
                    eprintln!(
                        "{} {}",
                        crate::cli::render::error_tag(),
                        ctx.describe_load_error(&e)
                    );
                }
                logs.push(refused_json(file, &e));
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
                logs.push(report_json(src, &rep, Some(session), damage, asked));
            }
        }
    }
    if ctx.json {
        ctx.print_json(&envelope(
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

/// A refused log's entry: the same as a refused log of `measure` and
/// `verify`.
fn refused_json(file: String, e: &dsh::LoadError) -> OwnedValue {
    let mut entry = Value::obj().with("file", file.into());
    if let Value::Obj(o) = load_error_json(e) {
        for (k, v) in o {
            if !k.eq_str("schema_version") && !k.eq_str("file") {
                entry = entry.with(&k.to_lossy(), v);
            }
        }
    }
    entry
}

/// The closing lines of the default output: logs left out, the counts
/// (`[busy, stale, anomalies, unreadable, damaged]`), what a busy lock means.
fn print_summary(ctx: &Ctx, logs: usize, quiet_logs: usize, counts: [u64; 5]) -> Result<()> {
    let [busy, stale, anomalies, errors, damaged] = counts;
    if quiet_logs > 0 {
        outln!(
            ctx.out,
            "{quiet_logs} log(s) with nothing to report not listed (--all lists them)"
        )?;
    }
    outln!(
        ctx.out,
        "{logs} log(s): {busy} busy lock(s), {stale} stale, {anomalies} anomal{}, {damaged} damaged end(s), {errors} unreadable",
        if anomalies == 1 { "y" } else { "ies" }
    )?;
    if busy > 0 {
        outln!(
            ctx.out,
            "a busy lock blocks every compaction; if that compaction crashed, `dsh locks --release LOG` ends it"
        )?;
    }
    Ok(())
}

/// What a release appends, said before it does (or, dry, instead).
fn release_plan(
    file: &str,
    b: &Bracket,
    prefix: &[dsh::OwnedEvent],
    now: f64,
    dry_run: bool,
) -> String {
    let id = b
        .compaction_id
        .as_jstr()
        .map(|s| s.to_lossy().into_owned())
        .unwrap_or_else(|| b.compaction_id.to_json());
    let closers = prefix
        .iter()
        .filter(|e| e.kind != dsh::Kind::SessionEndSeed)
        .map(|e| format!("{} @{}", e.type_name(), e.seq))
        .collect::<Vec<_>>();
    let seed = prefix
        .iter()
        .find(|e| e.kind == dsh::Kind::SessionEndSeed)
        .map(|e| e.seq);
    let mut plan = format!(
        "{file}: compaction/start at seq {} (compactionId {id}, {}, {}) holds a live compaction lock.\nAs a resuming harness does, dsh {} append:",
        b.seq,
        b.owner(),
        match now - b.time {
            ms if ms < 0.0 => format!("stamped {} ahead of this clock: clock skew", duration(-ms)),
            ms => format!("started {} ago", age(ms)),
        },
        if dry_run { "would" } else { "will" }
    );
    if !closers.is_empty() {
        plan.push_str(&format!(
            "\n  the crash-repair closers of the interrupted turn: {}",
            closers.join(", ")
        ));
    }
    if let Some(s) = seed {
        plan.push_str(&format!("\n  session/end-seed at seq {s}"));
    }
    plan.push_str(
        "\nThe compaction/start stays in the log as stale crash evidence. Do this only if no harness has the session open.",
    );
    plan
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
        if ctx.json {
            ctx.print_json(
                &Value::obj()
                    .with("file", file.into())
                    .with("session", session.into())
                    .with("released", false.into())
                    .with("state", report.state.as_str().into())
                    .with("bracket", Value::Null)
                    .with("appended", Value::Arr(Vec::new()))
                    .with("schema_version", SCHEMA_VERSION.into()),
            )?;
        } else {
            outln!(
                ctx.out,
                "{file}: nothing to release: the compaction lock is {}",
                report.state.as_str()
            )?;
        }
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
            ctx.print_json(
                &release_json(&file, &session, &b, asked, report.state.as_str(), &prefix)
                    .with("released", false.into())
                    .with("dryRun", true.into())
                    .with("schema_version", SCHEMA_VERSION.into()),
            )?;
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
            ctx, args, &file, &session, &b, asked, after, &prefix, &rep, &written,
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

/// The report of a release that was written.
#[allow(clippy::too_many_arguments)]
fn print_released(
    ctx: &Ctx,
    args: &LocksArgs,
    file: &str,
    session: &str,
    b: &dsh::lock::Bracket,
    asked: Option<f64>,
    after: dsh::lock::LockState,
    prefix: &[dsh::OwnedEvent],
    rep: &dsh::append::AppendReport,
    written: &str,
) -> Result<()> {
    if ctx.json {
        ctx.print_json(
            &release_json(file, session, b, asked, after.as_str(), prefix)
                .with(
                    "out",
                    args.out.as_ref().map(|o| o.display().to_string()).into(),
                )
                .with("released", true.into())
                .with("schema_version", SCHEMA_VERSION.into()),
        )?;
    } else {
        outln!(
            ctx.out,
            "released: appended {} event(s) (seq {}–{}) to {written}; compaction/start @{} is now {} crash evidence",
            rep.events,
            rep.first_seq,
            rep.first_seq + rep.events - 1,
            b.seq,
            after.as_str()
        )?;
    }
    Ok(())
}

/// What `--release --json` prints in its dry run and its real run alike:
/// the file, the lock state after the run, the bracket and the events
/// appended (the caller adds its own keys and `schema_version`).
fn release_json(
    file: &str,
    session: &str,
    b: &dsh::lock::Bracket,
    now: Option<f64>,
    state: &str,
    appended: &[dsh::OwnedEvent],
) -> OwnedValue {
    Value::obj()
        .with("file", file.into())
        .with("session", session.into())
        .with("state", state.into())
        .with("bracket", bracket_json(b, now))
        .with(
            "appended",
            Value::Arr(appended.iter().map(|e| e.value.clone()).collect()),
        )
}
