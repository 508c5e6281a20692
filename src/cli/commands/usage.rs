//! `dsh usage`: provider-reported tokens and their cost, by period,
//! session or project.

use anyhow::Result;
use dsh::doc::error::LogRefusal;
use dsh::doc::usage as doc;
use dsh::sessions::ScanOptions;
use dsh::usage::{GroupBy, SessionRequests, Window};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::many;
use crate::cli::render::usage as show;

/// Token usage and cost, by day, week, month, session or project.
///
/// Sums what the providers reported in the logs: the `usage` of every
/// `assistant/message` (uncached input, cache read, cache write, output,
/// reasoning) plus the compaction summariser's own calls (the `usage` of
/// `compaction/summary`), counted as the `summariser` requests. Nothing is
/// estimated: a request without reported usage is not counted.
///
/// Cost comes from a dated price table (`--prices` shows it with the page
/// each figure was read from): a request is priced by its own time, at
/// DeepSeek's peak or off-peak rate where those apply. A model with no price,
/// or a request whose price depends on a time the log does not record, shows
/// its tokens and `—` for cost (the "no price" column counts them); nothing
/// is guessed and nothing is fetched. Add or correct prices with `[[prices]]`
/// in the config file (docs/usage.md).
///
/// Times that are not plausible dates (recorded logs hold zeros) are grouped
/// as `unknown`, last; --since/--until leave such requests out.
///
/// With --json: `{"groupBy", "tz", "groups": [{"key", "known", "session"?,
/// "file"?, "project"?, "requests", "summariserRequests", "inputTokens",
/// "cacheReadTokens", "cacheWriteTokens", "outputTokens", "reasoningTokens",
/// "totalTokens", "costUsd" (null when nothing is priced), "pricedRequests",
/// "unpricedRequests", "untimedRequests", "unconfirmedRequests" (priced with
/// an entry `--prices` marks unconfirmed), "models"?: [{"provider", "model",
/// …the same sums}]}], "totals": {…the same sums, "models"}, "leftOutUnknownTime",
/// "logs": [refused logs: {"file", "error", …}], "schema_version"}`; with
/// --prices: `{"prices": [{"provider", "model", "from", "fromMs", "input",
/// "cacheHit", "cacheWrite", "output", "offPeak", "peakWindows", "origin",
/// "source", "confirmed"}], "schema_version"}` (USD per million tokens).
///
/// Exit status: 0; 3 when a log was refused.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh usage                                      # per day, every session under $DSH_HOME\n  dsh usage --monthly --breakdown                # per month and model\n  dsh usage --session --since 7d --cwd .         # this project's sessions this week\n  dsh usage --prices                             # the price table in use"
)]
pub struct UsageArgs {
    /// DSH homes, directories of sessions, or logs (default: $DSH_HOME).
    #[arg(value_name = "HOME|DIR|LOG")]
    pub paths: Vec<String>,
    /// Per day (the default).
    #[arg(long, group = "by")]
    pub daily: bool,
    /// Per week (Monday to Sunday, labelled with its Monday).
    #[arg(long, group = "by")]
    pub weekly: bool,
    /// Per month.
    #[arg(long, group = "by")]
    pub monthly: bool,
    /// Per session.
    #[arg(long, group = "by")]
    pub session: bool,
    /// Per project (the header's cwd).
    #[arg(long, group = "by")]
    pub project: bool,
    /// Also show each group per provider and model.
    #[arg(long)]
    pub breakdown: bool,
    /// Only sessions recorded in this directory (the header's cwd) or below it.
    #[arg(long, value_name = "PATH")]
    pub cwd: Option<String>,
    #[command(flatten)]
    pub time: many::TimeArgs,
    /// Print CSV (a header row, then one row per group, or per group and
    /// model with --breakdown).
    #[arg(long)]
    pub csv: bool,
    /// With CSV: write cells that begin with = + - @ tab or CR as they
    /// are. By default such a cell (a number aside) gets a leading `'` so a
    /// spreadsheet shows it as text instead of evaluating it (OWASP's advice
    /// against CSV injection).
    #[arg(long)]
    pub csv_formulas: bool,
    /// Show the price table (built in and from the config) instead.
    #[arg(long)]
    pub prices: bool,
    /// Accepted and always in effect: prices are never fetched.
    #[arg(long)]
    pub offline: bool,
    /// The dsh config file ([[prices]]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Logs read at once (0: one per core).
    #[arg(long, short, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
}

impl UsageArgs {
    fn by(&self) -> GroupBy {
        if self.weekly {
            GroupBy::Week
        } else if self.monthly {
            GroupBy::Month
        } else if self.session {
            GroupBy::Session
        } else if self.project {
            GroupBy::Project
        } else {
            GroupBy::Day
        }
    }
}

/// Run it: gather, group, then one of the three outputs.
pub fn run(ctx: &mut Ctx, args: &UsageArgs) -> Result<Status> {
    if args.csv && ctx.json {
        return Err(UsageError("--csv and --json: choose one".into()).into());
    }
    let times = args.time.parse()?;
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let table = config.price_table();
    if args.prices {
        return show::print_prices(ctx, &table);
    }
    let opts = ScanOptions {
        load: ctx.load_options(),
        no_meter: true,
        config,
    };
    let scanned = many::scan_all(ctx, &args.paths, &opts, args.jobs)?;
    let (project, project_alias) = many::project_filter(args.cwd.as_deref());
    let filter = dsh::sessions::Filter {
        project,
        project_alias,
        ..Default::default()
    };
    let (sessions, refused, _) = filter.split(scanned);
    let status = Status::of_refusals(refused.len());
    let sr: Vec<SessionRequests<'_>> = sessions
        .iter()
        .map(|s| SessionRequests {
            file: &s.file,
            session: &s.id,
            project: s.project.as_deref(),
            requests: &s.requests,
        })
        .collect();
    let by = args.by();
    let window = Window {
        since: times.since,
        until: times.until,
    };
    let rep = dsh::usage::group(&sr, by, &times.tz, window, &table);
    if ctx.json {
        let logs = refused
            .iter()
            .map(|r| LogRefusal::of(&r.error, &r.file, true))
            .collect();
        let tz = times.tz.to_string();
        ctx.print_doc(&doc::Usage::of(&rep, by, tz, args.breakdown, logs))?;
        return Ok(status);
    }
    if args.csv {
        show::print_csv(ctx, &rep, by, args.breakdown, !args.csv_formulas)?;
        return Ok(status);
    }
    show::print_table(ctx, &rep, by, args.breakdown)?;
    ctx.say_refused(&refused, "")?;
    Ok(status)
}
