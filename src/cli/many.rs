//! Running one job over many logs: in parallel, with a progress bar on a
//! terminal, and without letting one bad file stop the rest.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh::LogSource;
use dsh::sessions::Refused;

use super::ctx::Ctx;
use super::render;

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
    let workers = if jobs == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        jobs
    }
    .min(n.max(1));
    match sources {
        [] => {}
        [one] => crate::keep_freed_pages_for(one),
        _ => crate::keep_freed_pages_longer(),
    }
    let bar = render::progress(ctx.stderr_tty && !ctx.quiet, n as u64, what);
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
            if let Some(b) = &bar {
                b.inc(1);
            }
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
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
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
