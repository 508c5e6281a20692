//! `dsh locks`' output: the locks' JSON and table rows, the closing lines,
//! and what a release says before and after it writes.

use anyhow::Result;
use dsh::doc::SchemaVersion;
use dsh::doc::locks::{Bracket, False, NothingToRelease, Release, Released};
use dsh::lock::{LockReport, LockStatus};

use super::{Tone, outln};
use crate::cli::ctx::Ctx;

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
pub fn duration(ms: f64) -> String {
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

pub fn detail(b: &dsh::lock::Bracket) -> String {
    let landed = |b: &dsh::lock::Bracket| {
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
                let text = super::text_or_json(e);
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

/// The table rows of one log: one per bracket, or one "free" row; without
/// `all`, only the brackets worth a look (busy, stale, orphaned). Returns
/// how many rows it added.
pub fn add_rows(
    t: &mut super::table::Tbl,
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
        let id = super::text_or_json(&b.compaction_id);
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

/// The closing lines of the default output: logs left out, the counts
/// (`[busy, stale, anomalies, unreadable, damaged]`), what a busy lock means.
pub fn print_summary(ctx: &Ctx, logs: usize, quiet_logs: usize, counts: [u64; 5]) -> Result<()> {
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
pub fn release_plan(
    file: &str,
    b: &dsh::lock::Bracket,
    prefix: &[dsh::OwnedEvent],
    now: f64,
    dry_run: bool,
) -> String {
    let id = super::text_or_json(&b.compaction_id);
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

/// The report of a release that was written.
#[allow(clippy::too_many_arguments)]
pub fn print_released(
    ctx: &Ctx,
    out: Option<&std::path::PathBuf>,
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
        ctx.print_doc(&Release::Done(Box::new(Released {
            out: Some(out.map(|o| o.display().to_string())),
            released: true,
            ..released(file, session, b, asked, after, prefix)
        })))?;
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

/// `--release` on a log whose lock is not busy: nothing to do.
pub fn print_nothing_to_release(
    ctx: &Ctx,
    file: String,
    session: String,
    state: dsh::lock::LockState,
) -> Result<()> {
    if ctx.json {
        ctx.print_doc(&Release::Nothing(NothingToRelease {
            file,
            session,
            released: False,
            state,
            bracket: (),
            appended: [],
            schema_version: SchemaVersion,
        }))?;
    } else {
        outln!(
            ctx.out,
            "{file}: nothing to release: the compaction lock is {}",
            state.as_str()
        )?;
    }
    Ok(())
}

/// What `--release --json` prints in its dry run and its real run alike:
/// the file, the lock state after the run, the bracket and the events
/// appended (the caller sets `out`, `released` and `dryRun`).
pub fn released(
    file: &str,
    session: &str,
    b: &dsh::lock::Bracket,
    now: Option<f64>,
    state: dsh::lock::LockState,
    appended: &[dsh::OwnedEvent],
) -> Released {
    Released {
        file: file.to_string(),
        session: session.to_string(),
        state,
        bracket: Bracket::of(b, now),
        appended: appended.iter().map(|e| e.value.clone()).collect(),
        out: None,
        released: false,
        dry_run: None,
        schema_version: SchemaVersion,
    }
}
