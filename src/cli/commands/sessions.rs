//! `dsh sessions`: one row per session log of a home or directory.

use anyhow::Result;
use dsh::sessions::{Filter, Refused, ScanOptions, SortKey};
use dsh::usage::{Sums, session_sums};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::many;
use crate::cli::render::sessions::{self as show, Listing, Row};

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
    pub time: many::TimeArgs,
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

/// Run it: filter, then the tree, or order and one of the three outputs.
pub fn run(ctx: &mut Ctx, args: &SessionsArgs) -> Result<Status> {
    if args.csv && ctx.json {
        return Err(UsageError("--csv and --json: choose one".into()).into());
    }
    let times = args.time.parse()?;
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let prices = config.price_table();
    let opts = ScanOptions {
        load: ctx.load_options(),
        no_meter: false,
        config,
    };
    let (project, project_alias) = many::project_filter(args.project.as_deref());
    let filter = Filter {
        project,
        project_alias,
        since: times.since,
        until: times.until,
        busy: args.busy,
    };
    let scanned = many::scan_all(ctx, &args.paths, &opts, args.jobs)?;
    let (sessions, refused, unknown_time) = filter.split(scanned);
    if args.tree {
        crate::cli::render::tree::show(ctx, &sessions, &prices, &refused)?;
        return Ok(Status::of_refusals(refused.len()));
    }
    let rows = sessions
        .into_iter()
        .map(|s| Row {
            sums: session_sums(&s.requests, &prices),
            s,
        })
        .collect();
    let listing = ordered(ctx, args, rows, refused, unknown_time);
    if ctx.json {
        show::print_json(ctx, &listing)?;
    } else if args.csv {
        show::print_csv(ctx, &listing, !args.csv_formulas)?;
    } else {
        show::print_table(ctx, &listing, &times.tz)?;
    }
    Ok(Status::of_refusals(listing.refused_all))
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
