//! `dsh statusline`: one short line for a shell prompt or the harness's
//! status bar.

use std::path::{Path, PathBuf};

use anyhow::Result;
use dsh::log::LogSource;
use dsh::sessions::ScanOptions;
use dsh::status::cache::{Cache, Entry, Reading};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::gauge::{DEFAULT_FORMAT, bar, check_template, compact_tokens, fill, tone};
use crate::cli::render::{self, outln};

/// One line for a prompt or a status bar: pressure, the next compaction, cost.
///
/// The session's pressure (DSH's own token figure against the routed window,
/// as a percentage and a bar), the tokens left before the compaction
/// threshold, what the session cost, and what every session of the home cost
/// today (local time unless --tz/--utc), e.g.
///
///   ███░░░░░░░ 27% · 67.2k to compaction · $0.0041 session · $0.0133 today
///
/// LOG defaults to `.`: the newest session (by its last event) of the
/// project this directory is. Unlike other commands it does not say which
/// on stderr (a prompt would show it every time): put `{session}` in
/// --format to see it.
///
/// Fast at every prompt: the figures of a whole read are kept in
/// $XDG_CACHE_HOME/dsh (else ~/.cache/dsh: statusline.json, and
/// statusline-days.json for the other sessions' costs per day), per file
/// (device and inode) with its size; a log that has not changed is answered
/// from there, one that grew by streamed chunks only after reading just the
/// new bytes, anything else is read whole once. Today's cost reads only the
/// sessions written to today. --no-cache reads everything whole.
///
/// --format takes a template: {bar} {pressure} {tokens} {window}
/// {threshold} {left} (tokens to the threshold) {next} ("67.2k to
/// compaction" or "compaction due") {cost} {today} {session} {project}
/// {provider} {model}; `{{` and `}}` for braces. Unknown values show `?`.
///
/// Exit status: 0; 2 bad flags or template; 3 no session, or it was refused
/// (one line on stderr, nothing on stdout).
///
/// With --json: `{"file", "session", "project", "route": {"provider",
/// "model"}|null, "tokens", "contextWindow", "thresholdTokens",
/// "pressurePercent", "toCompaction", "costUsd", "unpricedRequests",
/// "today": {"date", "costUsd", "unpricedRequests"}, "tz", "source"
/// ("cached", "followed" or "read"), "line", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh statusline                       # this project's newest session\n  dsh statusline --format '{pressure} {next}'\n  dsh statusline --format '{session} {bar} {cost}' 5b1d\n  PS1='$(dsh statusline 2>/dev/null) \\$ '   # bash prompt\n  dsh statusline --json | jq .pressurePercent"
)]
pub struct StatuslineArgs {
    /// The session: a log, session directory or id, or a working directory
    /// (`.`, the default: its project's newest session).
    #[arg(value_name = "LOG|.", default_value = ".")]
    pub log: String,
    /// The line's template (see above).
    #[arg(long, value_name = "TEMPLATE")]
    pub format: Option<String>,
    /// Read everything whole; neither use nor update the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// The dsh config file (routes' context windows and policies, [[prices]]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The zone "today" is in (default: the local one): UTC, +08:00, or a
    /// zone name.
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// Count today in UTC.
    #[arg(long, conflicts_with = "tz")]
    pub utc: bool,
}

/// The cache directory: `$XDG_CACHE_HOME/dsh`, else `~/.cache/dsh`.
fn cache_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("dsh"))
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &StatuslineArgs) -> Result<Status> {
    let template = args.format.as_deref().unwrap_or(DEFAULT_FORMAT);
    check_template(template)?;
    let zone = crate::cli::zone::of_flags(args.tz.as_deref(), args.utc)?;
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let prices = dsh::price::PriceTable::builtin().with(&config.prices);
    // Quietly: a prompt would show the note every time.
    let path = match dsh::log::lookup::resolve(&args.log, ctx.home.as_deref()) {
        Ok(LogSource::File(p)) => p,
        Ok(_) => {
            return Err(
                UsageError("statusline reads a log file, not standard input".into()).into(),
            );
        }
        Err(dsh::log::lookup::LookupError::NotFound(e)) => return Ok(ctx.report_load_error(&e)),
        Err(e) => return Err(UsageError(e.to_string()).into()),
    };
    let now_ms = crate::cli::writes::now_ms() as i64;
    let mut cache = match cache_dir().filter(|_| !args.no_cache) {
        Some(dir) => Cache::open(&dir, now_ms / 1000),
        None => Cache::none(now_ms / 1000),
    };
    let opts = ScanOptions {
        load: ctx.load_options(),
        no_meter: false,
        config,
    };
    let how = Reading {
        opts: &opts,
        prices: &prices,
        zone: &zone,
    };
    let (e, fresh) = match cache.entry(&path, true, &how) {
        Ok(x) => x,
        Err(r) => return Ok(ctx.report_load_error(&r.error)),
    };
    let (day, start) = dsh::status::today(&zone, now_ms);
    let logs = ctx
        .home
        .as_deref()
        .map(|h| dsh::log::source::discover(&h.join("sessions")))
        .unwrap_or_default();
    let (today, today_unpriced) = cache.day_cost(&logs, Some(&path), (&day, start), &how);
    // A cache that cannot be written only makes the next line slower.
    let _ = cache.save();
    let money = |c: Option<f64>| {
        c.map_or_else(
            || "$?".to_string(),
            |c| format!("${}", render::usd(Some(c))),
        )
    };
    let value = |name: &str| -> String { field(&e, name, &money, money(Some(today))) };
    let mut line = fill(template, &value);
    if ctx.json {
        use dsh::doc::status::{Statusline, Today};
        let today = Today {
            date: day,
            cost_usd: today,
            unpriced_requests: today_unpriced,
        };
        let doc = Statusline::of(
            path.display().to_string(),
            &e,
            today,
            zone.to_string(),
            fresh,
            line,
        );
        ctx.print_doc(&doc)?;
        return Ok(Status::Ok);
    }
    if let Some(t) = tone(e.to_compaction(), e.threshold) {
        line = render::paint(&line, t);
    }
    outln!(ctx.out, "{line}")?;
    Ok(Status::Ok)
}

/// One placeholder's value.
fn field(e: &Entry, name: &str, money: &dyn Fn(Option<f64>) -> String, today: String) -> String {
    let tokens = |x: Option<f64>| x.map_or_else(|| "?".into(), compact_tokens);
    match name {
        "bar" => bar(e.pressure(), 10),
        "pressure" => e
            .pressure()
            .map_or_else(|| "?%".into(), |p| format!("{p:.0}%")),
        "tokens" => tokens(e.tokens),
        "window" => tokens(e.window),
        "threshold" => tokens(e.threshold),
        "left" => tokens(e.to_compaction()),
        "next" => match e.to_compaction() {
            Some(l) if l <= 0.0 => "compaction due".into(),
            Some(l) => format!("{} to compaction", compact_tokens(l)),
            None => "? to compaction".into(),
        },
        "cost" => money(e.cost),
        "today" => today,
        "session" => e.session.chars().take(8).collect(),
        "project" => e
            .project
            .as_deref()
            .and_then(|p| Path::new(p).file_name())
            .map_or_else(|| "?".into(), |n| n.to_string_lossy().into_owned()),
        "provider" => e.route.as_ref().map_or_else(|| "?".into(), |r| r.0.clone()),
        "model" => e.route.as_ref().map_or_else(|| "?".into(), |r| r.1.clone()),
        _ => String::new(),
    }
}
