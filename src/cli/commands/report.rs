//! `dsh report`: a self-contained HTML page per session, and a dashboard
//! for many.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use dsh::civil::Zone;
use dsh::log::LogSource;
use dsh::meter::tokenizer::Encoding;
use dsh::report::fleet::{Entry, Fleet, RefusedLog};
use dsh::report::html::PageOptions;
use dsh::report::{ReportError, ReportOptions};
use dsh::sessions::{ScanOptions, Session};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::{self, report as show};

/// Write a session as one self-contained HTML page, or a home as a
/// dashboard with one page per session.
///
/// A session's page: pressure per model request (the heuristic, the
/// reported prompt, threshold and window as step lines; compactions,
/// prunes and requests over the window marked), the prompt cache and the
/// cost over the session, what each compaction cost and saved and when it
/// paid back (as `dsh cache`), prunes, locks, verify findings, and the
/// transcript beside the model's view (as `dsh view`). Charts run over time
/// when the log's times are real, else over turns; each has a description
/// and a data table. Pages need no network, follow the light or dark mode,
/// fit a phone and print cleanly. Series longer than --max-points are
/// downsampled (each point the largest of its bucket), and the page says so.
///
/// One LOG: OUT is the page (`-` for standard output). Several LOGs, a
/// directory, a home or no LOG (every session under $DSH_HOME): OUT is a
/// directory that receives `index.html`, the dashboard (totals, cost per
/// day by model, the sessions nearest their window, the costliest
/// compactions, health flags, a sortable and filterable sessions table with
/// the figures of `dsh sessions`, the refused logs and why), and one
/// `<session>.html` per session. Existing files are refused without --force.
/// More in docs/report.md.
///
/// Exit status: 0; 3 when a log was refused (the dashboard lists it).
///
/// With --json: `{"out", "index", "pages": [{"file", "session", "path",
/// "bytes", "requests", "compactions", "prunes", "downsampled"}],
/// "refused": [{"file", "error"}], "bytes", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh report session.jsonl -o report.html\n  dsh report -o - session.jsonl > report.html\n  dsh report ~/.dsh -o reports/            # reports/index.html + one page per session\n  dsh report --tz Europe/Paris -o reports/ # every session under $DSH_HOME, Paris time\n  dsh report --json a.jsonl b.jsonl -o out/ --force\n  dsh report --tokenizer deepseek-v4 -o page.html s.jsonl  # DeepSeek's own count too"
)]
pub struct ReportArgs {
    /// Logs, session directories or homes; a working directory (`.`) means
    /// all of its project's sessions (default: every session under
    /// $DSH_HOME).
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// The page (one LOG; `-` for standard output) or the directory (many).
    #[arg(long, short, value_name = "OUT")]
    pub out: PathBuf,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
    /// Draw at most N points per per-request chart (downsampling beyond).
    #[arg(long, value_name = "N", default_value_t = dsh::report::DEFAULT_MAX_POINTS as u64,
          value_parser = clap::value_parser!(u64).range(10..=1_000_000))]
    pub max_points: u64,
    /// Leave out the side-by-side view and the survival figures (the
    /// replaced spans are not read again).
    #[arg(long)]
    pub no_view: bool,
    /// The time zone of the pages' times and days: UTC, a fixed offset
    /// such as +08:00, or a zone name such as Asia/Shanghai (default: $TZ,
    /// else the system's zone).
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// A dsh config file (policy, capacities, prices).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also chart each request's prompt counted with a real tokenizer
    /// (deepseek-v4: the request as DeepSeek renders it) beside DSH's
    /// estimate and the reported prompt.
    #[arg(long, value_name = "ENCODING", value_parser = ["o200k", "cl100k", "deepseek-v4"])]
    pub tokenizer: Option<String>,
    /// Logs read at once (0: one per core).
    #[arg(long, short, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &ReportArgs) -> Result<Status> {
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let zone = crate::cli::zone::resolve(args.tz.as_deref(), ctx.quiet)?;
    let opts = ReportOptions {
        load: ctx.load_options(),
        prices: config.price_table(),
        config,
        max_points: args.max_points as usize,
        side_by_side: !args.no_view,
        tokenizer: args.tokenizer.as_deref().and_then(Encoding::parse),
    };
    let single =
        args.logs.len() == 1 && !dsh::log::lookup::is_tree(&args.logs[0], ctx.home.as_deref());
    let to_stdout = args.out.as_os_str() == "-";
    if to_stdout && ctx.json {
        return Err(
            UsageError("--json needs -o FILE (standard output carries the page)".into()).into(),
        );
    }
    if !single {
        return many(ctx, args, &opts, zone);
    }
    let src = ctx.resolve(&args.logs[0])?;
    let r = match dsh::report::build(&src, &opts) {
        Ok(r) => r,
        Err(ReportError::Load(e)) => return Ok(ctx.report_load_error(&e)),
        Err(e) => return Err(e.into()),
    };
    show::warn(ctx, &r.file, &r.warnings);
    let html = dsh::report::html::session_page(
        &r,
        &[],
        &PageOptions {
            zone: &zone,
            index: None,
        },
    );
    if to_stdout {
        let mut w = ctx.out.stream();
        w.write_all(html.as_bytes())?;
        w.flush()?;
        return Ok(Status::Ok);
    }
    crate::cli::writes::write_whole(&args.out, src.path(), args.force, html.as_bytes())?;
    let page = show::page_of(&r, &args.out, html.len());
    show::finish(ctx, &args.out, None, &[page], &[])?;
    Ok(Status::Ok)
}

/// What building one session's page gave.
type Built = (Entry, show::Page, Vec<String>);

/// A session to write: its log, its page's name, its `sessions` row and
/// its `dsh health` findings.
type Todo = (LogSource, String, Session, dsh::health::SessionHealth);

/// `-o DIR` for many sessions: not standard output, not a file, and its
/// index replaced only with --force. Gives the index's path.
fn index_path(args: &ReportArgs) -> Result<PathBuf> {
    let dir = &args.out;
    if dir.as_os_str() == "-" {
        return Err(UsageError(
            "many sessions make a directory of pages: give -o DIR, not -o -".into(),
        )
        .into());
    }
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError(format!(
            "{}: many sessions make a directory of pages, and this is a file",
            dir.display()
        ))
        .into());
    }
    let index = dir.join("index.html");
    if !args.force && index.exists() {
        return Err(UsageError(format!(
            "{}: already exists (--force replaces it)",
            index.display()
        ))
        .into());
    }
    Ok(index)
}

/// Scan every log as `dsh sessions` does (in parallel) and name the pages
/// in input order; a log the reader refuses is listed with its reason.
fn plan(
    ctx: &Ctx,
    args: &ReportArgs,
    opts: &ReportOptions,
) -> Result<(Vec<Todo>, Vec<RefusedLog>)> {
    if args.logs.iter().any(|l| l == "-") {
        return Err(UsageError(
            "standard input is read twice for a dashboard: give it as the one LOG with -o FILE"
                .into(),
        )
        .into());
    }
    let scan = ScanOptions {
        load: opts.load.clone(),
        no_meter: false,
        config: opts.config.clone(),
    };
    // The sessions' rows and `dsh health`'s findings, in one pass each.
    let health = dsh::health::HealthOptions {
        scan,
        prices: opts.prices.clone(),
        now: Some(crate::cli::writes::now_ms() as i64),
        ..dsh::health::HealthOptions::default()
    };
    let scanned =
        crate::cli::many::run_named(ctx, &args.logs, args.jobs, "reading sessions", &|s| {
            dsh::health::scan_with(s, &health, None).map(|(h, s, _)| (s, h))
        })?;
    let mut todo = Vec::new();
    let mut refused = Vec::new();
    let mut used = std::collections::HashSet::new();
    for r in scanned {
        match r {
            Ok((src, (s, h))) => {
                let name = dsh::report::fleet::page_name(&s.id, &mut used);
                todo.push((src, name, s, h));
            }
            Err(e) => refused.push(RefusedLog {
                file: e.file.clone(),
                reason: ctx.describe_load_error(&e.error),
            }),
        }
    }
    Ok((todo, refused))
}

/// Many sessions: one page each, then the dashboard. The logs are scanned
/// first (as `dsh sessions`), which names the pages in input order, then
/// each page is built and written, in parallel.
fn many(ctx: &mut Ctx, args: &ReportArgs, opts: &ReportOptions, zone: Zone) -> Result<Status> {
    let index = index_path(args)?;
    let dir = &args.out;
    let (todo, mut refused) = plan(ctx, args, opts)?;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let sources: Vec<LogSource> = todo.iter().map(|t| t.0.clone()).collect();
    let job = |src: &LogSource| -> Result<Built, Result<String, anyhow::Error>> {
        let i = sources
            .iter()
            .position(|s| std::ptr::eq(s, src))
            .expect("one of ours");
        let (_, name, session, health) = &todo[i];
        let r = dsh::report::build(src, opts).map_err(|e| match e {
            ReportError::Load(le) => Ok(ctx.describe_load_error(&le)),
            e => Ok(e.to_string()),
        })?;
        let path = dir.join(name);
        let page = PageOptions {
            zone: &zone,
            index: Some("index.html"),
        };
        let html = dsh::report::html::session_page(&r, &[], &page);
        crate::cli::writes::write_whole(&path, src.path(), args.force, html.as_bytes())
            .map_err(Err)?;
        let entry = Entry::new(
            name.clone(),
            &r,
            session.clone(),
            Some(health),
            &opts.prices,
        );
        Ok((
            entry,
            show::page_of(&r, &path, html.len()),
            r.warnings.clone(),
        ))
    };
    let built = crate::cli::many::run_many(ctx, &sources, args.jobs, "writing pages", &job);
    let mut pages = Vec::new();
    let mut entries = Vec::new();
    for (b, src) in built.into_iter().zip(&sources) {
        match b {
            Ok((entry, page, warnings)) => {
                show::warn(ctx, &page.file, &warnings);
                entries.push(entry);
                pages.push(page);
            }
            Err(Ok(reason)) => refused.push(RefusedLog {
                file: src.display(),
                reason,
            }),
            Err(Err(e)) => return Err(e),
        }
    }
    if !ctx.quiet || ctx.json {
        for r in &refused {
            eprintln!("{} {}", render::error_tag(), r.reason);
        }
    }
    let fleet = Fleet::new(entries, refused, &opts.prices, zone);
    let html = dsh::report::dashboard::index_page(&fleet);
    crate::cli::writes::write_whole(&index, None, args.force, html.as_bytes())?;
    show::finish(ctx, dir, Some((&index, html.len())), &pages, &fleet.refused)?;
    Ok(Status::of_refusals(fleet.refused.len()))
}
