//! `dsh sessions`: one row per session log of a home or directory.

use anyhow::Result;
use dsh::LogSource;
use dsh::civil::{self, Zone};
use dsh::doc::sessions as doc;
use dsh::lock::LockState;
use dsh::price::PriceTable;
use dsh::sessions::{Filter, Refused, ScanOptions, Session, SortKey};
use dsh::usage::{Sums, session_sums};

use crate::cli::csv;
use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::{self, Tone, outln};

/// List sessions: project, id, title, times, size, pressure, locks, cost.
///
/// One row per session under $DSH_HOME (default) or under the given homes,
/// directories or logs: project (the header's cwd), short id, title (the first
/// user message), started (the header's createdAt), last activity (the latest
/// event time), turns, events, size on disk, DSH's own token figure and its
/// pressure as a percentage of the route's context window, landed compactions,
/// prunes, the compaction lock (busy: a live lock; stale: crash evidence),
/// format generation, the cost of the provider-reported usage (see `dsh usage`)
/// and, for a log the reader refuses, the one-line reason.
///
/// Recorded logs can hold normalised times (0, jumps backwards): a time that
/// is not a plausible date (2000 to 2100) is shown `unknown`, never guessed,
/// and sorts last either way. With --since/--until a session whose times are
/// unknown is left out (the footer counts it).
///
/// Exit status: 0; 3 when a log was refused (its row says why).
///
/// With --json: `{"logs": [{"file", "session", "project", "parent", "title",
/// "started", "startedMs", "lastActivity", "lastActivityMs", "turns", "events",
/// "sizeBytes", "surfaceTokens", "contextWindow", "pressurePercent",
/// "overThreshold", "route":
/// {"provider","model"}|null, "compactions", "prunes", "lock": {"state",
/// "busy", "stale"}, "generation", "olderGenerations"?, "requests" (agent + summariser),
/// "agentRequests", "summariserRequests", "costUsd", "unpricedRequests",
/// "forkOf", "inheritedRequests",
/// "meterError"?, "warnings"?} | {"file", "error", "kind", "stage", …}], "summary":
/// {"sessions", "refused", "turns", "events", "sizeBytes", "costUsd",
/// "unpricedRequests",
/// "busy", "stale"}, "matched", "leftOutUnknownTime", "schema_version"}`.
/// Times are RFC 3339 UTC strings (null when unknown).
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh sessions                                   # every session under $DSH_HOME\n  dsh sessions --project . --since 7d            # this project, this week\n  dsh sessions --busy                            # which session holds a live lock\n  dsh sessions --tree                            # who spawned whom, subtree cost rolled up"
)]
pub struct SessionsArgs {
    /// DSH homes, directories of sessions or logs (default: $DSH_HOME).
    #[arg(value_name = "HOME|DIR")]
    pub paths: Vec<String>,
    /// Only sessions recorded in this directory (the header's cwd) or below it.
    #[arg(long, visible_alias = "cwd", value_name = "PATH")]
    pub project: Option<String>,
    /// Only sessions holding a live compaction lock (see `dsh locks`).
    #[arg(long)]
    pub busy: bool,
    #[command(flatten)]
    pub time: TimeArgs,
    /// Order: started and activity oldest first; pressure, size and cost
    /// largest first. Unknown values last.
    #[arg(long, value_enum, default_value_t = Sort::Started)]
    pub sort: Sort,
    /// Turn the order round (unknown values stay last).
    #[arg(long)]
    pub reverse: bool,
    /// Show only the first N rows of the order (refused logs, which come
    /// last, count too).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Print CSV (a header row, then one row per session).
    #[arg(long)]
    pub csv: bool,
    /// With CSV: write cells that begin with = + - @ tab or CR as they
    /// are. By default such a cell (a number aside) gets a leading `'` so a
    /// spreadsheet shows it as text instead of evaluating it (OWASP's advice
    /// against CSV injection).
    #[arg(long)]
    pub csv_formulas: bool,
    /// Draw the delegation forest: each session under its parent (forks,
    /// subagents), with each subtree's requests and cost rolled up.
    #[arg(long, conflicts_with = "csv")]
    pub tree: bool,
    /// The dsh config file (routes' context windows, [[prices]]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Logs read at once (0: one per core).
    #[arg(long, short, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
}

/// `--sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sort {
    /// Start time.
    Started,
    /// Last activity.
    Activity,
    /// Pressure.
    Pressure,
    /// Size on disk.
    Size,
    /// Cost.
    Cost,
}

impl Sort {
    fn key(self) -> SortKey {
        match self {
            Sort::Started => SortKey::Started,
            Sort::Activity => SortKey::Activity,
            Sort::Pressure => SortKey::Pressure,
            Sort::Size => SortKey::Size,
            Sort::Cost => SortKey::Cost,
        }
    }
}

/// `--since`, `--until`, `--tz`: shared by `sessions` and `usage`.
#[derive(Debug, Clone, clap::Args)]
pub struct TimeArgs {
    /// From this date or time on (2026-07-01 or 20260701, 2026-07-01T09:30Z),
    /// or this long back from now (7d, 2w, 12h).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Before this date or time (or this long back from now).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// The time zone dates are shown and typed in (default: the local one,
    /// from $TZ, else the system's): UTC, a fixed offset such as +08:00, or
    /// a zone name such as Asia/Shanghai (read from $TZDIR, else
    /// /usr/share/zoneinfo).
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// Show and type dates in UTC (the same as --tz UTC).
    #[arg(long, conflicts_with = "tz")]
    pub utc: bool,
}

/// The parsed time flags.
pub struct Times {
    /// `--tz` / `--utc`, else the local zone.
    pub tz: Zone,
    /// `--since` (epoch ms).
    pub since: Option<i64>,
    /// `--until` (epoch ms).
    pub until: Option<i64>,
}

impl TimeArgs {
    /// Parse against the clock.
    pub fn parse(&self) -> Result<Times> {
        let tz = crate::cli::zone::of_flags(self.tz.as_deref(), self.utc)?;
        let now = crate::cli::writes::now_ms() as i64;
        let bound = |flag: &str, v: &Option<String>| -> Result<Option<i64>> {
            v.as_deref()
                .map(|s| tz.parse_bound(s, now))
                .transpose()
                .map_err(|e| UsageError(format!("--{flag} {e}")).into())
        };
        let since = bound("since", &self.since)?;
        let until = bound("until", &self.until)?;
        Ok(Times { tz, since, until })
    }
}

/// Every log the arguments name (no argument: every session under the
/// home), scanned in parallel, in input order. An argument that names
/// nothing is a refused row.
pub fn scan_all(
    ctx: &Ctx,
    paths: &[String],
    opts: &ScanOptions,
    jobs: usize,
) -> Result<Vec<Result<Session, Refused>>> {
    let items = crate::cli::many::sources_of(ctx, paths)?;
    let sources: Vec<LogSource> = items
        .iter()
        .filter_map(|i| i.as_ref().ok().cloned())
        .collect();
    let mut results = crate::cli::many::run_many(ctx, &sources, jobs, "reading sessions", &|s| {
        dsh::sessions::scan(s, opts)
    })
    .into_iter();
    Ok(items
        .into_iter()
        .map(|i| match i {
            Ok(_) => results.next().expect("one result per source"),
            Err(r) => Err(r),
        })
        .collect())
}

/// `--project` / `--cwd PATH`: the path made absolute, and its canonical
/// spelling when that differs (the harness records the cwd it started in,
/// usually canonical).
pub fn project_filter(arg: Option<&str>) -> (Option<String>, Option<String>) {
    let Some(p) = arg else {
        return (None, None);
    };
    let abs = std::path::absolute(p)
        .map(|a| a.display().to_string())
        .unwrap_or_else(|_| p.to_string());
    let canonical = std::fs::canonicalize(p)
        .ok()
        .map(|c| c.display().to_string())
        .filter(|c| *c != abs);
    (Some(abs), canonical)
}

/// The price table: built in, with the config's `[[prices]]`.
pub fn prices(config: &dsh::config::Config) -> PriceTable {
    config.price_table()
}

/// A time for a table: `2026-07-09 12:37`, or `unknown`.
pub fn when(t: Option<i64>, tz: &Zone) -> String {
    t.map_or_else(|| "unknown".into(), |t| tz.date_time(t))
}

/// USD for a table (see [`render::usd`]).
pub fn usd(x: Option<f64>) -> String {
    render::usd(x)
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
struct Row {
    s: Session,
    sums: Sums,
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
struct Listing {
    rows: Vec<Row>,
    refused: Vec<Refused>,
    /// Refused logs before --limit.
    refused_all: usize,
    /// Rows and refusals before --limit.
    matched: usize,
    /// Sessions left out by --since/--until because their times are unknown.
    unknown_time: u64,
    /// Every shown row's sums, merged.
    total: Sums,
}

impl Listing {
    fn status(&self) -> Status {
        if self.refused_all == 0 {
            Status::Ok
        } else {
            Status::InvalidLog
        }
    }

    fn sum(&self, f: fn(&Session) -> u64) -> u64 {
        self.rows.iter().map(|r| f(&r.s)).sum()
    }
}

/// Run it: filter, then the tree, or order and one of the three outputs.
pub fn run(ctx: &mut Ctx, args: &SessionsArgs) -> Result<Status> {
    if args.csv && ctx.json {
        return Err(UsageError("--csv and --json: choose one".into()).into());
    }
    let times = args.time.parse()?;
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let prices = prices(&config);
    let opts = ScanOptions {
        load: ctx.load_options(),
        no_meter: false,
        config,
    };
    let (project, project_alias) = project_filter(args.project.as_deref());
    let filter = Filter {
        project,
        project_alias,
        since: times.since,
        until: times.until,
        busy: args.busy,
    };
    let scanned = scan_all(ctx, &args.paths, &opts, args.jobs)?;
    let (rows, refused, unknown_time) = filtered(scanned, &filter, &prices);
    if args.tree {
        let sessions: Vec<Session> = rows.into_iter().map(|r| r.s).collect();
        crate::cli::render::tree::show(ctx, &sessions, &prices, &refused)?;
        return Ok(if refused.is_empty() {
            Status::Ok
        } else {
            Status::InvalidLog
        });
    }
    let listing = ordered(ctx, args, rows, refused, unknown_time);
    if ctx.json {
        print_json(ctx, &listing)?;
    } else if args.csv {
        print_csv(ctx, &listing, !args.csv_formulas)?;
    } else {
        print_table(ctx, &listing, &times.tz)?;
    }
    Ok(listing.status())
}

/// The sessions the filter admits, with their costs; the refused logs a
/// filter could not have left out; how many sessions were left out for
/// unknown times.
fn filtered(
    scanned: Vec<std::result::Result<Session, Refused>>,
    filter: &Filter,
    prices: &PriceTable,
) -> (Vec<Row>, Vec<Refused>, u64) {
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    let mut unknown_time = 0u64;
    for r in scanned {
        match r {
            Ok(s) => {
                if !filter.admits(&s) {
                    if filter.has_time() && s.started.is_none() && s.last_activity.is_none() {
                        unknown_time += 1;
                    }
                    continue;
                }
                let sums = session_sums(&s.requests, prices);
                rows.push(Row { s, sums });
            }
            // A refused log has no project or time to filter by: it is shown
            // unless a filter could only have left it out.
            Err(e) if filter.project.is_none() && !filter.has_time() && !filter.busy => {
                refused.push(e)
            }
            Err(_) => {}
        }
    }
    (rows, refused, unknown_time)
}

/// Sorts the rows, says every refusal's reason on stderr, and applies
/// --limit to rows and refusals alike.
fn ordered(
    ctx: &Ctx,
    args: &SessionsArgs,
    mut rows: Vec<Row>,
    mut refused: Vec<Refused>,
    unknown_time: u64,
) -> Listing {
    let key = args.sort.key();
    dsh::sessions::sort(&mut rows, key, args.reverse, |r| match key {
        SortKey::Cost => r.sums.cost(),
        k => r.s.sort_value(k),
    });
    // Every refusal's reason and what to do, on stderr, shown or not.
    if !ctx.quiet || ctx.json {
        for r in &refused {
            ctx.say_load_error(&r.error);
        }
    }
    // --limit counts every row, refused ones (which sort last) included.
    let matched = rows.len() + refused.len();
    let refused_all = refused.len();
    if let Some(n) = args.limit {
        rows.truncate(n);
        refused.truncate(n - rows.len());
    }
    let mut total = Sums::default();
    for r in &rows {
        total.merge(&r.sums);
    }
    Listing {
        rows,
        refused,
        refused_all,
        matched,
        unknown_time,
        total,
    }
}

fn print_json(ctx: &mut Ctx, l: &Listing) -> Result<()> {
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

fn print_csv(ctx: &mut Ctx, l: &Listing, guard: bool) -> Result<()> {
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

fn print_table(ctx: &mut Ctx, l: &Listing, tz: &Zone) -> Result<()> {
    if l.rows.is_empty() && l.refused.is_empty() {
        outln!(ctx.out, "no sessions match")?;
        if l.unknown_time > 0 {
            outln!(
                ctx.out,
                "{} session(s) with unknown times were left out by --since/--until",
                l.unknown_time
            )?;
        }
        return Ok(());
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
    if l.unknown_time > 0 {
        outln!(
            ctx.out,
            "{} session(s) with unknown times were left out by --since/--until",
            l.unknown_time
        )?;
    }
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
