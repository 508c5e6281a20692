//! `dsh compact`: summarise old history through a model and commit the
//! compaction bracket.

mod args;

pub use args::CompactArgs;

use std::path::Path;

use dsh::append::{AppendOptions, AppendTarget, Lifecycle};
use dsh::compact::outcome::{self, Ending};
use dsh::compact::plan::Plan;
use dsh::compact::{self, Env, Failure, FailureKind, OpenError, Options, Report, Session};
use dsh::doc::compact::Run;
use dsh::provider::{ApiKey, HttpSummarizer, Progress};

use crate::cli::ctx::{Ctx, load_config};
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::compact as render;
use crate::cli::signals;
use crate::cli::writes::{append_error, now_ms, seconds};

/// The exit status of a failed run, by its class.
fn failure_status(kind: FailureKind) -> Status {
    match kind {
        FailureKind::Busy => Status::Busy,
        FailureKind::Mode | FailureKind::Config => Status::Usage,
        FailureKind::Summary => Status::Provider,
        FailureKind::Changed | FailureKind::StillAboveThreshold => Status::Findings,
        FailureKind::Corrupt => Status::InvalidLog,
        FailureKind::Commit => Status::Internal,
        FailureKind::Cancelled => signals::status().unwrap_or(Status::Interrupted),
        FailureKind::Unsendable | FailureKind::TooLarge => Status::Findings,
    }
}

/// Open the session, with the errors as exit statuses.
fn open_session(
    src: &dsh::LogSource,
    target: AppendTarget,
    opts: &AppendOptions,
) -> anyhow::Result<Session> {
    match Session::open(src, target, opts) {
        Ok(s) => Ok(s),
        Err(OpenError::Append(e)) => Err(append_error(e)),
        Err(OpenError::Meter(e)) => Err(dsh::LoadError::invalid(e.to_string())
            .seq(e.seq())
            .file(src.display())
            .into()),
    }
}

/// A refusal before the first byte, printed; its status.
fn refuse(ctx: &Ctx, file: &str, r: &outcome::Refusal) -> anyhow::Result<Status> {
    render::print_refusal(ctx, file, r)?;
    Ok(r.failure.map_or(Status::Usage, failure_status))
}

/// Run `dsh compact`.
pub fn run(ctx: &mut Ctx, args: &CompactArgs) -> anyhow::Result<Status> {
    // A signal exits 128 + its number; once the run may write, it closes
    // what is open first (see `signals`).
    signals::catch();
    let config = load_config(args.config.as_deref())?;
    // Read twice when step labels repeat (see `Session::open`).
    let src = ctx.resolve_rereadable(&args.log)?;
    let target = match (&args.out, args.dry_run) {
        (_, true) => AppendTarget::DryRun,
        (Some(out), false) => AppendTarget::Copy(out.clone()),
        (None, false) => AppendTarget::InPlace,
    };
    let wait = args.wait.map(|s| seconds("--wait", s)).transpose()?;
    let timing = (
        seconds("--timeout", args.timeout)?,
        seconds("--retry-delay", args.retry_delay)?,
    );
    let opts = AppendOptions {
        wait,
        load: ctx.load_options(),
        ..AppendOptions::default()
    };
    let session = open_session(&src, target, &opts)?;
    ctx.warn_all(session.appender().log());
    let file = src.display();
    let session_id = session.appender().log().header.id.clone();
    if session.is_dry_run() && !ctx.quiet {
        render::warn_refusals(&session);
    }
    let inputs = args.plan_inputs();
    let plan = compact::plan::plan(&inputs, &config, &session).map_err(|e| UsageError(e.0))?;
    let key_var = std::env::var(&plan.key_env).ok();
    // Before the first byte: the configuration a real run needs. A real run
    // refuses (exit 2) at the first problem; a dry run reports them all.
    let mut problems = compact::plan::preflight(&plan, &config, &inputs, key_var.as_deref());
    if args.dry_run
        && args.out.is_none()
        && let dsh::LogSource::File(p) = &src
        && !outcome::writable(p)
    {
        problems.push(outcome::unwritable());
    }
    if !args.dry_run
        && let Some(p) = problems.first()
    {
        return refuse(ctx, &file, &outcome::Refusal::config(p));
    }
    let key = ApiKey::new(key_var.unwrap_or_default());
    render::warn_before_sending(ctx, &plan, &key);
    let summarizer = plan.summarizer(key, args.retries, timing);
    let options = plan.options(args.source_command_id.clone(), args.images.into());
    if !args.dry_run {
        let mut dry = open_session(&src, AppendTarget::DryRun, &opts)?;
        let rehearsal =
            outcome::rehearse(&mut dry, &summarizer, &options, &now_ms, &signals::CANCEL);
        if let Some(r) = rehearsal {
            return refuse(ctx, &file, &r);
        }
    }
    let (result, lifecycle) = compact(ctx, session, &plan, &summarizer, &options, args.dry_run)?;
    let interrupted = signals::status();
    let ending = outcome::ending(
        &result,
        &plan,
        problems,
        args.dry_run,
        (&args.log, Path::new(&file)),
    );
    let run = Run::ending(
        &ending,
        &plan,
        lifecycle,
        args.dry_run,
        (&file, &session_id),
    );
    let to = args
        .out
        .as_ref()
        .map_or(args.log.clone(), |o| o.display().to_string());
    render::print_ending(ctx, &ending, run, &plan, lifecycle, &to)?;
    Ok(match ending {
        Ending::Report {
            would_fail: Some(p),
            ..
        } if !p.is_empty() => Status::Findings,
        Ending::Report {
            would_fail: Some(_),
            ..
        } => Status::Ok,
        // A signal that came while the bracket was being committed.
        Ending::Report { .. } => interrupted.unwrap_or(Status::Ok),
        Ending::Failed { failure, .. } => failure_status(failure.kind),
    })
}

/// The run itself, with a spinner on a terminal and the signal guard of a
/// real run; a copy (--out) is published with whatever was written (a
/// failed bracket included; a run refused before writing anything
/// publishes nothing), and the writer lock released.
fn compact(
    ctx: &Ctx,
    mut session: Session,
    plan: &Plan,
    summarizer: &HttpSummarizer,
    options: &Options,
    dry_run: bool,
) -> anyhow::Result<(Result<Report, Box<Failure>>, Lifecycle)> {
    let spinner = (ctx.stderr_tty && !ctx.json && !dry_run).then(|| render::spinner(plan));
    let mut progress = |p: &Progress| {
        if let Some(pb) = &spinner {
            render::show_progress(pb, p);
        }
    };
    let mut ids = || uuid::Uuid::new_v4().to_string();
    // A dry run reads no clock: what it would append is stamped with the
    // log's last event time, as `prune --dry-run` does, so equal logs give
    // equal output.
    let last_time = session.appender().log().last_time;
    let clock = move || if dry_run { last_time } else { now_ms() };
    let mut env = Env {
        summarizer,
        clock: &clock,
        ids: &mut ids,
        progress: &mut progress,
        cancel: &signals::CANCEL,
    };
    let guard = (!dry_run).then(signals::guard);
    let result = compact::run(&mut session, &mut env, options);
    if let Some(pb) = &spinner {
        pb.finish_and_clear();
    }
    let lifecycle = session.lifecycle();
    let wrote = match &result {
        Ok(_) => true,
        Err(f) => !f.report.appended.is_empty(),
    };
    if wrote {
        session.finish().map_err(append_error)?;
    }
    drop(guard);
    Ok((result, lifecycle))
}
