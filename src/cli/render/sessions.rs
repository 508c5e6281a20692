//! `dsh sessions`' output: the `--json` document, CSV and the table with
//! its footnotes.

use anyhow::Result;
use dsh::civil::{self, Zone};
use dsh::doc::sessions as doc;
use dsh::lock::LockState;
use dsh::sessions::{Refused, Session};
use dsh::usage::Sums;

use crate::cli::csv;
use crate::cli::ctx::Ctx;
use crate::cli::render::{self, Tone, outln, usd};

/// A time for a table: `2026-07-09 12:37`, or `unknown`.
fn when(t: Option<i64>, tz: &Zone) -> String {
    t.map_or_else(|| "unknown".into(), |t| tz.date_time(t))
}

fn size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 {
        let tenths = (b / 1024.0 / 1024.0 * 10.0).round() as u64;
        format!("{}.{} MB", render::num(tenths / 10), tenths % 10)
    } else {
        format!("{:.1} KB", b / 1024.0)
    }
}

/// A scanned session with its cost.
pub struct Row {
    pub s: Session,
    pub sums: Sums,
}

/// A log's name for a table: its session directory for a
/// `session.jsonl[.zstd]`, else its file name (JSON and CSV have the path).
fn short_file(file: &str) -> String {
    let p = std::path::Path::new(file);
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
    match (name.as_deref(), p.parent().and_then(|d| d.file_name())) {
        (Some(n), Some(d)) if n.starts_with("session.jsonl") => d.to_string_lossy().into_owned(),
        (Some(n), _) => n.to_string(),
        _ => file.to_string(),
    }
}

fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

const CSV_HEAD: [&str; 24] = [
    "file",
    "session",
    "project",
    "title",
    "started",
    "last_activity",
    "turns",
    "events",
    "size_bytes",
    "surface_tokens",
    "context_window",
    "pressure_percent",
    "compactions",
    "prunes",
    "lock",
    "busy_locks",
    "stale_locks",
    "generation",
    "requests",
    "cost_usd",
    "unpriced_requests",
    "refused",
    "fork_of",
    "inherited_requests",
];

fn csv_row(r: &Row, guard: bool) -> String {
    let s = &r.s;
    let t = |x: Option<i64>| x.map(civil::rfc3339).unwrap_or_default();
    csv::record(
        &[
            s.file.clone(),
            s.id.clone(),
            s.project.clone().unwrap_or_default(),
            s.title.clone().unwrap_or_default(),
            t(s.started),
            t(s.last_activity),
            s.turns.to_string(),
            s.events.to_string(),
            s.size.to_string(),
            csv::num(s.surface_tokens),
            csv::num(s.context_window),
            csv::num(s.pressure.map(|p| (p * 100.0).round() / 100.0)),
            s.compactions.to_string(),
            s.prunes.to_string(),
            s.lock.as_str().into(),
            s.busy_locks.to_string(),
            s.stale_locks.to_string(),
            s.generation.to_string(),
            (r.sums.requests + r.sums.summariser_requests).to_string(),
            csv::num(r.sums.cost()),
            r.sums.without_cost().to_string(),
            String::new(),
            s.fork_of.clone().unwrap_or_default(),
            s.inherited_requests.to_string(),
        ],
        guard,
    )
}

fn csv_refused(r: &Refused, guard: bool) -> String {
    let mut f = vec![String::new(); CSV_HEAD.len()];
    f[0] = r.file.clone();
    f[8] = r.size.map(|s| s.to_string()).unwrap_or_default();
    f[21] = r.error.message().to_string();
    csv::record(&f, guard)
}

/// What the filters left: the rows to show, the refused logs, and the
/// counts the footers need.
pub struct Listing {
    pub rows: Vec<Row>,
    pub refused: Vec<Refused>,
    /// Refused logs before --limit.
    pub refused_all: usize,
    /// Rows and refusals before --limit.
    pub matched: usize,
    /// Sessions left out by --since/--until because their times are unknown.
    pub unknown_time: u64,
    /// Every shown row's sums, merged.
    pub total: Sums,
}

impl Listing {
    fn sum(&self, f: fn(&Session) -> u64) -> u64 {
        self.rows.iter().map(|r| f(&r.s)).sum()
    }
}

pub fn print_json(ctx: &mut Ctx, l: &Listing) -> Result<()> {
    let mut logs: Vec<doc::Entry> = l
        .rows
        .iter()
        .map(|r| doc::Entry::Session(Box::new(doc::Row::of(&r.s, &r.sums))))
        .collect();
    logs.extend(
        l.refused
            .iter()
            .map(|r| doc::Entry::Refused(doc::Refused::of(r))),
    );
    let summary = doc::Summary {
        sessions: l.rows.len() as u64,
        refused: l.refused_all as u64,
        turns: l.sum(|s| s.turns),
        events: l.sum(|s| s.events),
        size_bytes: l.sum(|s| s.size),
        cost_usd: l.total.cost(),
        unpriced_requests: l.total.without_cost(),
        busy: l.sum(|s| s.busy_locks),
        stale: l.sum(|s| s.stale_locks),
    };
    ctx.print_doc(&doc::Sessions {
        logs,
        summary,
        matched: l.matched as u64,
        left_out_unknown_time: l.unknown_time,
        schema_version: dsh::doc::SchemaVersion,
    })?;
    Ok(())
}

pub fn print_csv(ctx: &mut Ctx, l: &Listing, guard: bool) -> Result<()> {
    let mut out = csv::record(&CSV_HEAD, guard);
    for r in &l.rows {
        out.push_str(&csv_row(r, guard));
    }
    for r in &l.refused {
        out.push_str(&csv_refused(r, guard));
    }
    ctx.out.write_all(out.as_bytes())?;
    Ok(())
}

pub fn print_table(ctx: &mut Ctx, l: &Listing, tz: &Zone) -> Result<()> {
    if l.rows.is_empty() && l.refused.is_empty() {
        outln!(ctx.out, "no sessions match")?;
        return unknown_time_note(ctx, l);
    }
    ctx.page();
    let mut t = render::table(&[
        "project", "id", "title", "started", "activity", "turns", "events", "size", "tokens", "%",
        "cmp", "prunes", "lock", "gen", "cost $", "fork of",
    ]);
    t.drop_first(&[
        "fork of", "gen", "events", "prunes", "cmp", "size", "turns", "started", "tokens",
        "project",
    ]);
    for r in &l.rows {
        t.add_toned_row(session_cells(r, tz));
    }
    for r in &l.refused {
        let mut cells = vec![
            ("—".into(), None),
            ("—".into(), None),
            (
                format!("refused {} (reason on stderr)", short_file(&r.file)),
                Some(Tone::Bad),
            ),
        ];
        cells.extend((0..13).map(|_| (String::new(), None)));
        t.add_toned_row(cells);
    }
    t.add_row(total_cells(l));
    outln!(ctx.out, "{t}")?;
    print_footnotes(ctx, l)
}

/// A session's row of the table, with the tones of its lock and pressure.
fn session_cells(r: &Row, tz: &Zone) -> Vec<(String, Option<Tone>)> {
    let s = &r.s;
    let lock = match s.lock {
        LockState::Busy => ("busy".to_string(), Some(Tone::Bad)),
        LockState::Stale => ("stale".to_string(), Some(Tone::Warn)),
        LockState::Free if s.stale_locks > 0 => ("stale".to_string(), Some(Tone::Warn)),
        LockState::Free => (String::new(), None),
    };
    let hot = (s.over_threshold == Some(true)).then_some(Tone::Bad);
    vec![
        (s.project.clone().unwrap_or_else(|| "—".into()), None),
        (short_id(&s.id), None),
        (s.title.clone().unwrap_or_default(), None),
        (when(s.started, tz), None),
        (when(s.last_activity, tz), None),
        (render::num(s.turns), None),
        (render::num(s.events), None),
        (size(s.size), None),
        (s.surface_tokens.map_or("—".into(), render::num_f64), None),
        (s.pressure.map_or("—".into(), |p| format!("{p:.1}%")), hot),
        (render::num(s.compactions), None),
        (render::num(s.prunes), None),
        lock,
        (s.generation.to_string(), None),
        (usd(r.sums.cost()), None),
        (s.fork_of.as_deref().map(short_id).unwrap_or_default(), None),
    ]
}

fn total_cells(l: &Listing) -> Vec<String> {
    vec![
        String::new(),
        "total".into(),
        format!("{} session(s)", render::num(l.rows.len() as u64)),
        String::new(),
        String::new(),
        render::num(l.sum(|s| s.turns)),
        render::num(l.sum(|s| s.events)),
        size(l.sum(|s| s.size)),
        String::new(),
        String::new(),
        render::num(l.sum(|s| s.compactions)),
        render::num(l.sum(|s| s.prunes)),
        match l.sum(|s| s.busy_locks) {
            0 => String::new(),
            n => format!("{n} busy"),
        },
        String::new(),
        usd(l.total.cost()),
        String::new(),
    ]
}

/// The lines under the table: what --limit, the time filters, prices,
/// forks, older generations and refusals left out or changed.
fn print_footnotes(ctx: &mut Ctx, l: &Listing) -> Result<()> {
    let shown = l.rows.len() + l.refused.len();
    if l.matched > shown {
        outln!(
            ctx.out,
            "showing the first {} of {} rows (--limit)",
            render::num(shown as u64),
            render::num(l.matched as u64)
        )?;
    }
    unknown_time_note(ctx, l)?;
    if l.total.without_cost() > 0 {
        outln!(
            ctx.out,
            "cost: {} request(s) have no price (none for their model at their date, or one that depends on a time the log does not record); their tokens are in `dsh usage`",
            render::num(l.total.without_cost())
        )?;
    }
    let inherited = l.sum(|s| s.inherited_requests);
    if inherited > 0 {
        outln!(
            ctx.out,
            "fork of: the session began as a copy of that one; the {} request(s) of the copied part are counted once, in the session that made them",
            render::num(inherited)
        )?;
    }
    let older = l
        .rows
        .iter()
        .filter(|r| !r.s.older_generations.is_empty())
        .count();
    if older > 0 {
        outln!(
            ctx.out,
            "{older} session(s) also keep older format generations beside the newest (DSH keeps the file it migrated from); each is listed once, from its newest file"
        )?;
    }
    if l.refused_all > 0 {
        outln!(
            ctx.out,
            "{} log(s) refused to load (reasons on stderr)",
            l.refused_all
        )?;
    }
    Ok(())
}

/// How many sessions --since/--until left out for their unknown times.
fn unknown_time_note(ctx: &Ctx, l: &Listing) -> Result<()> {
    if l.unknown_time > 0 {
        outln!(
            ctx.out,
            "{} session(s) with unknown times were left out by --since/--until",
            l.unknown_time
        )?;
    }
    Ok(())
}
