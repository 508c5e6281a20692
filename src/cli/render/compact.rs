//! `dsh compact`'s output: the run's `--json` document and its readable
//! report, a dry run's would-fail problems, the spinner's lines.

use std::time::Duration;

use dsh::OwnedEvent;
use dsh::append::{Blocker, Lifecycle};
use dsh::compact::outcome::{Ending, Refusal};
use dsh::compact::plan::{Plan, Problem};
use dsh::compact::{self, BracketReport, Failure, Mode, Outcome, Report, Session, Unsaved};
use dsh::doc::compact as doc;
use dsh::json::Value;
use dsh::provider::{ApiKey, Progress};

use crate::cli::ctx::Ctx;
use crate::cli::render::{Out, error_tag, outln, warning_tag};

/// A refusal before anything was written: with --json its document; the
/// message and a one-line hint on stderr.
pub fn print_refusal(ctx: &Ctx, file: &str, error: &Refusal) -> std::io::Result<()> {
    if ctx.json {
        ctx.print_doc(&doc::Compact::Refused(doc::Refused {
            file,
            written: false,
            error,
            schema_version: dsh::doc::SchemaVersion,
        }))?;
    }
    eprintln!("{} {file}: {}; nothing written", error_tag(), error.message);
    eprintln!("dsh: hint: {}", error.hint);
    Ok(())
}

/// How a run ended: its document, or the readable report (with what the
/// real run would fail at, for a dry run, paged: the exact request can be
/// long), then a failure's error on stderr. `to`: the file written.
pub fn print_ending(
    ctx: &mut Ctx,
    e: &Ending<'_>,
    run: doc::Run<'_>,
    plan: &Plan,
    lifecycle: Lifecycle,
    to: &str,
) -> anyhow::Result<()> {
    let (report, written) = match e {
        Ending::Report {
            report,
            would_fail: Some(_),
        } => {
            ctx.page();
            (*report, &[][..])
        }
        Ending::Report { report, .. } => (*report, &report.appended[..]),
        Ending::Failed { failure, .. } => (&*failure.report, &failure.report.appended[..]),
    };
    let printed = if ctx.json {
        ctx.print_doc(&doc::Compact::Run(Box::new(run)))
    } else {
        print_human(
            &ctx.out,
            report,
            plan,
            lifecycle,
            run.would_append.is_some(),
        )
        .and_then(|()| print_would_fail(&ctx.out, run.would_fail.unwrap_or_default()))
    };
    landed(printed, to, written)?;
    if let Ending::Failed {
        failure,
        hint,
        unsaved,
    } = e
    {
        say_failure(failure, hint.as_deref(), unsaved.as_ref());
    }
    Ok(())
}

/// A report that failed to print after events were appended: the error
/// says the write landed (exit 70 is about the report, not the log). A
/// closed pipe stays quiet.
fn landed(printed: std::io::Result<()>, to: &str, appended: &[OwnedEvent]) -> anyhow::Result<()> {
    match printed {
        Err(e) if !appended.is_empty() && e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(crate::cli::exit::StatusError {
                status: crate::cli::exit::Status::Internal,
                message: format!(
                    "{to}: the write landed ({} event(s) appended, seq {}–{}); only printing the report failed: {e}",
                    appended.len(),
                    appended[0].seq,
                    appended[appended.len() - 1].seq
                ),
            }
            .into())
        }
        r => r.map_err(Into::into),
    }
}

/// A failed run, on stderr: the error, the next step, and where a summary
/// received but not appended is kept.
fn say_failure(f: &Failure, hint: Option<&str>, unsaved: Option<&Unsaved>) {
    eprintln!("dsh: compact failed: {}", f.message);
    if let Some(h) = hint {
        eprintln!("dsh: hint: {h}");
    }
    match unsaved {
        Some(Unsaved {
            saved_to: Some(p), ..
        }) => eprintln!(
            "dsh: the summary was received but not appended; it is kept in {p} (the events that would have been appended); `dsh locks` on the log tells whether its compaction/start is held"
        ),
        Some(u) => eprintln!(
            "dsh: the summary was received but not appended, and could not be kept beside the log: it is in `unsavedSummary` of --json; here it is:\n{}",
            u.text
        ),
        None => {}
    }
}

/// What a real run would refuse, said by a dry run (a compaction lock is
/// the run's own report).
pub fn warn_refusals(session: &Session) {
    for b in session.blockers() {
        if !matches!(b, Blocker::CompactionLock { .. }) {
            eprintln!("{} a real run would refuse: {b}", warning_tag());
        }
    }
}

/// Said before anything is sent: a key too short to scrub, and where the
/// key would go.
pub fn warn_before_sending(ctx: &Ctx, plan: &Plan, key: &ApiKey) {
    if ctx.quiet {
        return;
    }
    if !key.is_empty() && !key.scrubbable() {
        eprintln!(
            "{} the API key in ${} is shorter than {} characters: dsh does not scrub it from what the provider returns (it would corrupt every word it occurs in); dsh itself never prints it",
            warning_tag(),
            plan.key_env,
            dsh::provider::MIN_SCRUB_CHARS
        );
    }
    for w in compact::plan::base_url_warnings(&plan.base_url) {
        eprintln!("{} {w}", warning_tag());
    }
}

/// The spinner shown while the summariser works.
pub fn spinner(plan: &Plan) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.enable_steady_tick(Duration::from_millis(120));
    pb.set_message(format!(
        "summarising with {}/{}",
        plan.target.0, plan.target.1
    ));
    pb
}

pub fn print_human(
    o: &Out,
    r: &Report,
    plan: &Plan,
    lifecycle: Lifecycle,
    dry_run: bool,
) -> std::io::Result<()> {
    let route = format!("{}/{}", plan.target.0, plan.target.1);
    outln!(
        o,
        "mode: {} ({} lifecycle)   summarizer: {route}",
        r.mode.name(),
        lifecycle.as_str()
    )?;
    if let (Some(b), Some(c)) = (plan.budgets, plan.capacity) {
        outln!(
            o,
            "capacity {} tokens ({}), threshold {}, retain {}",
            c.context_window,
            c.source.as_str(),
            b.threshold_tokens,
            b.retain_tokens
        )?;
    }
    for e in &r.appended {
        if e.kind == dsh::Kind::SessionEndSeed {
            outln!(o, "new lifecycle: session/end-seed seq {}", e.seq)?;
        }
    }
    for p in &r.pruned {
        outln!(
            o,
            "pruned tool result seq {} -> replacement seq {} ({} -> {} code points)",
            p.original_seq,
            p.replacement_seq,
            p.chars_before,
            p.chars_after
        )?;
    }
    for b in &r.brackets {
        print_bracket(o, b, plan, &route, dry_run)?;
    }
    print_outcome(o, r, plan)?;
    if r.tokens_before.is_some() {
        outln!(
            o,
            "tokens before {} after {}",
            tokens(r.tokens_before),
            tokens(r.tokens_after)
        )?;
    }
    outln!(
        o,
        "surface tokens before {} after {}",
        r.surface_before,
        r.surface_after
    )?;
    if r.mode == Mode::Overflow {
        outln!(
            o,
            "retry of the failed request authorised: {}",
            r.retry_authorized()
        )?;
    }
    Ok(())
}

/// One bracket: its range, the summariser request (in full when dry), what
/// it appended.
pub fn print_bracket(
    o: &Out,
    b: &BracketReport,
    plan: &Plan,
    route: &str,
    dry_run: bool,
) -> std::io::Result<()> {
    outln!(
        o,
        "range seqs {}..{} ({} nodes, {} tokens): {}",
        b.shadowed_range.start,
        b.shadowed_range.end,
        b.shadowed_seqs.len(),
        b.shadowed_tokens,
        seq_list(&b.shadowed_seqs)
    )?;
    match plan.summarizer_capacity {
        Some(c) => outln!(
            o,
            "summariser request: {} tokens (DSH estimate; output cap {}) against the {} window of {route} ({})",
            b.request_tokens,
            plan.policy.max_tokens,
            c.context_window,
            c.source.as_str()
        )?,
        None => outln!(
            o,
            "summariser request: {} tokens (DSH estimate; output cap {}); the window of {route} is not known (--summarizer-context-window)",
            b.request_tokens,
            plan.policy.max_tokens
        )?,
    }
    if b.fits == Some(false) {
        let window = plan.summarizer_capacity.map_or(0.0, |c| c.context_window);
        let warning = compact::too_wide_warning(b.request_tokens, window);
        outln!(o, "{} {warning}", warning_tag())?;
    }
    if b.images_replaced > 0 {
        outln!(
            o,
            "{} image(s) sent as the image-offload placeholder text",
            b.images_replaced
        )?;
    }
    if dry_run {
        if let Some(req) = &b.request {
            outln!(
                o,
                "request: {} {}",
                req.method,
                dsh::provider::redact_url(&req.url)
            )?;
            for (k, v) in req.redacted_headers() {
                outln!(o, "  {k}: {v}")?;
            }
            outln!(o, "{}", req.body.to_json())?;
        }
        return Ok(());
    }
    if !b.compaction_id.is_empty() {
        outln!(o, "compaction id: {}", b.compaction_id)?;
    }
    if let Some(cp) = b.checkpoint_seq {
        outln!(
            o,
            "checkpoint seq {cp}: {} tokens (shadowed {})",
            b.checkpoint_tokens.unwrap_or(0),
            b.shadowed_tokens
        )?;
    }
    if let Some(u) = &b.usage {
        outln!(o, "provider usage: {}", u.to_value().to_json())?;
    }
    if let Some(e) = &b.error {
        outln!(o, "bracket failed: {e}")?;
    }
    Ok(())
}

/// A token figure, or `?`.
pub fn tokens(t: Option<f64>) -> String {
    t.map(|x| Value::from(x).to_json())
        .unwrap_or_else(|| "?".into())
}

/// Why nothing, or only pruning, was written.
pub fn print_outcome(o: &Out, r: &Report, plan: &Plan) -> std::io::Result<()> {
    let threshold = plan
        .budgets
        .map(|b| b.threshold_tokens.to_string())
        .unwrap_or_else(|| "?".into());
    match r.outcome {
        Some(Outcome::Declined(d)) => {
            if r.mode == Mode::Manual {
                outln!(o, "No compactable history yet.")?;
            }
            outln!(o, "nothing to compact: {}", d.explain())?;
        }
        Some(Outcome::BelowThreshold) => outln!(
            o,
            "below threshold: {} tokens < {threshold}; nothing written",
            tokens(r.tokens_before),
        )?,
        Some(Outcome::PrunedBelowThreshold) => outln!(
            o,
            "pruning alone brought it below threshold: {} -> {} tokens",
            tokens(r.tokens_before),
            tokens(r.tokens_after_prune)
        )?,
        Some(Outcome::OverflowDisabled) => outln!(
            o,
            "overflow recovery is disabled (maxOverflowRetries = 0); nothing written"
        )?,
        Some(Outcome::DryRun) => outln!(o, "dry run: nothing written, no one called")?,
        _ => {}
    }
    Ok(())
}

/// A list of seqs for a terminal: all of a short one, the ends of a long one.
pub fn seq_list(seqs: &[u64]) -> String {
    let show = |s: &[u64]| s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    if seqs.len() <= 12 {
        return format!("[{}]", show(seqs));
    }
    format!(
        "[{}, … {} more …, {}]",
        show(&seqs[..5]),
        seqs.len() - 10,
        show(&seqs[seqs.len() - 5..])
    )
}

pub fn print_would_fail(o: &Out, problems: &[Problem]) -> std::io::Result<()> {
    for p in problems {
        outln!(o, "would fail: {}", p.message)?;
        outln!(o, "  hint: {}", p.hint)?;
    }
    Ok(())
}

/// The spinner's line for a step of the summariser call.
pub fn show_progress(pb: &indicatif::ProgressBar, p: &Progress) {
    match p {
        Progress::Sending { attempt } if *attempt > 1 => {
            pb.set_message(format!("summarising (attempt {attempt})"))
        }
        Progress::Retrying { delay, reason, .. } => pb.set_message(format!(
            "{}; retrying in {:.1}s",
            crate::cli::render::escape::line(reason),
            delay.as_secs_f64()
        )),
        Progress::Receiving { bytes } => {
            pb.set_message(format!("receiving the summary ({bytes} bytes)"))
        }
        _ => {}
    }
}
