//! Running one job over many logs: in parallel, with a progress bar on a
//! terminal, and without letting one bad file stop the rest.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh::LogSource;
use dsh::sessions::{Refused, ScanOptions, Session};

use super::ctx::Ctx;

/// Run `job` on every source, `jobs` at a time (0: one per core), and return
/// the results in input order. A progress bar is drawn on stderr only when it
/// is a terminal and there is more than one log.
pub fn run_many<T: Send, E: Send>(
    ctx: &Ctx,
    sources: &[LogSource],
    jobs: usize,
    what: &str,
    job: &(dyn Fn(&LogSource) -> Result<T, E> + Sync),
) -> Vec<Result<T, E>> {
    let n = sources.len();
    let workers = workers(jobs).min(n.max(1));
    match sources {
        [] => {}
        [one] => crate::keep_freed_pages_for(one),
        _ => crate::keep_freed_pages_longer(),
    }
    let bar = ctx.progress(n, what);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<T, E>>>> = Mutex::new((0..n).map(|_| None).collect());
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= n {
                break;
            }
            let r = job(&sources[i]);
            results.lock().unwrap()[i] = Some(r);
            bar.inc(1);
        }
    };
    std::thread::scope(|s| {
        // This thread works too; a thread that cannot start (a process short
        // of memory or threads) leaves its share to the others.
        for _ in 1..workers {
            if std::thread::Builder::new().spawn_scoped(s, work).is_err() {
                break;
            }
        }
        work();
    });
    bar.finish_and_clear();
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// `--jobs N`: N, or one per core for 0.
pub fn workers(jobs: usize) -> usize {
    match jobs {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    }
}

/// Every log the arguments name (no argument: every session under the
/// home), in input order. An argument that names nothing at all (no such
/// home, directory, file, session id or working directory) is a one-line
/// usage error (exit 2), as a missing home is; a log that is there but
/// cannot be read is a refusal.
pub fn sources_of(ctx: &Ctx, paths: &[String]) -> anyhow::Result<Vec<Result<LogSource, Refused>>> {
    let mut items: Vec<Result<LogSource, Refused>> = Vec::new();
    if paths.is_empty() {
        let root = ctx.home_sessions()?;
        items.extend(
            dsh::log::source::discover(&root)
                .into_iter()
                .map(|p| Ok(LogSource::File(p))),
        );
    }
    // An ambiguous id prefix stops the run (exit 2) listing the candidates.
    for (a, found) in paths.iter().zip(ctx.resolve_each(paths)?) {
        match found {
            Ok(s) => items.extend(s.into_iter().map(Ok)),
            Err(e) if e.kind == dsh::LoadErrorKind::NotFound => {
                return Err(super::exit::UsageError(ctx.describe_load_error(&e)).into());
            }
            Err(e) => items.push(Err(Refused {
                file: a.clone(),
                size: None,
                error: Box::new(e),
            })),
        }
    }
    Ok(items)
}

/// A log and what a job made of it, or an item that named no log.
pub type Ran<T, E, I> = Result<(LogSource, Result<T, E>), I>;

/// Run `job` on the logs among `items`, `jobs` at a time, each result in
/// its log's place; the other items (arguments that named no readable log)
/// are kept as they are.
pub fn run_items<I, T: Send, E: Send>(
    ctx: &Ctx,
    items: Vec<Result<LogSource, I>>,
    jobs: usize,
    what: &str,
    job: &(dyn Fn(&LogSource) -> Result<T, E> + Sync),
) -> Vec<Ran<T, E, I>> {
    let sources: Vec<LogSource> = items
        .iter()
        .filter_map(|i| i.as_ref().ok().cloned())
        .collect();
    let mut results = run_many(ctx, &sources, jobs, what, job).into_iter();
    items
        .into_iter()
        .map(|i| i.map(|src| (src, results.next().expect("one result per source"))))
        .collect()
}

/// Run `job` on every log the arguments name (see [`sources_of`]), `jobs`
/// at a time, in input order: each result with its log; an argument that
/// names nothing readable is its refusal.
pub fn run_named<T: Send>(
    ctx: &Ctx,
    paths: &[String],
    jobs: usize,
    what: &str,
    job: &(dyn Fn(&LogSource) -> Result<T, Refused> + Sync),
) -> anyhow::Result<Vec<Result<(LogSource, T), Refused>>> {
    let items = sources_of(ctx, paths)?;
    Ok(run_items(ctx, items, jobs, what, job)
        .into_iter()
        .map(|i| {
            let (src, r) = i?;
            Ok((src, r?))
        })
        .collect())
}

/// Every session the arguments name (no argument: every session under
/// the home), scanned as `dsh sessions` does, in parallel, in input order.
pub fn scan_all(
    ctx: &Ctx,
    paths: &[String],
    opts: &ScanOptions,
    jobs: usize,
) -> anyhow::Result<Vec<Result<Session, Refused>>> {
    let scanned = run_named(ctx, paths, jobs, "reading sessions", &|s| {
        dsh::sessions::scan(s, opts)
    })?;
    Ok(scanned.into_iter().map(|r| r.map(|(_, s)| s)).collect())
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
    pub tz: dsh::civil::Zone,
    /// `--since` (epoch ms).
    pub since: Option<i64>,
    /// `--until` (epoch ms).
    pub until: Option<i64>,
}

impl TimeArgs {
    /// Parse against the clock.
    pub fn parse(&self) -> anyhow::Result<Times> {
        let tz = super::zone::of_flags(self.tz.as_deref(), self.utc)?;
        let now = super::writes::now_ms() as i64;
        let bound = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<i64>> {
            v.as_deref()
                .map(|s| tz.parse_bound(s, now))
                .transpose()
                .map_err(|e| super::exit::UsageError(format!("--{flag} {e}")).into())
        };
        let since = bound("since", &self.since)?;
        let until = bound("until", &self.until)?;
        Ok(Times { tz, since, until })
    }
}
