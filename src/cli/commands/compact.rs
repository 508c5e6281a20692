//! `dsh compact`: summarise old history through a model and commit the
//! compaction bracket.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use dsh::append::{AppendOptions, AppendTarget, Blocker, Lifecycle};
use dsh::compact::outcome;
use dsh::compact::plan::{Plan, PlanInputs};
use dsh::compact::{self, Env, Failure, FailureKind, Mode, OpenError, Options, Report, Session};
use dsh::json::{OwnedValue, Value};
use dsh::provider::{ApiKey, Endpoint, HttpSummarizer, Progress, Protocol};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, load_config};
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::compact::{
    opt, print_human, print_would_fail, report_json, show_progress, would_fail_json,
};
use crate::cli::signals;
use crate::cli::writes::{append_error, now_ms};

/// Compact a session log: summarise its oldest history through a model and
/// replace it with one checkpoint.
///
/// The log's tail decides the semantics and the lifecycle of the write:
///
/// * last turn closed → manual compaction (owner `null`, keeps only the
///   newest indivisible unit, no pruning, one bracket). It is maintenance of
///   a resumed session, so the write starts a new lifecycle: the
///   `session/end-seed` marker first (unless the log already ends with one),
///   then the bracket with `turn: null`.
///
/// * last turn open → automatic compaction, continuing that live turn: no
///   crash-repair closers, no end-seed; the prune pairs and the bracket
///   (owned by the open turn) land where the agent would have written them.
///   `--mode pressure` (default: only when the routed target is at or over
///   its threshold; prunes oversized tool results first, keeps the
///   recent-tail budget, retries while still over) or `--mode overflow`
///   (prune, then one maximal head reduction; `maxOverflowRetries = 0`
///   disables it).
///
/// `compaction/start` is written before the model is called; every failure
/// closes the bracket with its error and leaves the surface unchanged. Writes
/// go through dsh's append-only writer: an exclusive lock, complete lines
/// (or one Zstandard frame per batch for `.jsonl.zstd`), refusal of a torn
/// tail, a damaged region, a live compaction lock or another writer. If a
/// compaction crashed between start and end, `dsh locks --release --yes LOG`
/// ends its lock the way a resuming harness does.
///
/// Settings come from the dsh config (`--config FILE`, else `$DSH_CONFIG`,
/// else `$XDG_CONFIG_HOME/dsh/config.toml`, else `~/.config/dsh/config.toml`),
/// flags overriding: `[compaction]` (thresholdRatio, retainRatio or
/// retainTokens, maxTokens, compactionRetries, maxOverflowRetries,
/// summarizationProvider/Model, modelPolicies for the routed target),
/// `[pruner]` (thresholdChars, headChars, tailChars) and the summarisation
/// target's `[[routes]]` entry (kind, baseURL, apiKeyEnv, reasoningEffort;
/// the routed target's contextWindow). The summarisation target is
/// `--route`, else the config's summarization pair, else the route of the
/// latest request/header. The API key is read from the environment variable
/// the route names (default `DEEPSEEK_API_KEY`) and is never printed or
/// written.
///
/// With --json: `{"mode", "lifecycle", "outcome", "route", "routedTarget",
/// "openTurn", "contextWindow", "contextWindowSource", "thresholdTokens",
/// "retainTokens", "policy", "summarizer", "config", "tokensBefore",
/// "tokensAfterPrune", "tokensAfter", "surfaceTokensBefore",
/// "surfaceTokensAfter", "replaceGenerationBefore", "replaceGenerationAfter",
/// "pruned": [{originalSeq, replacementSeq, callId, charsBefore,
/// charsAfter}], "brackets": [{compactionId, turn, shadowedRange,
/// shadowedSeqs, shadowedTokenCount, startSeq, summarySeq, checkpointSeq,
/// endSeq, checkpointTokens, usage, attempts, error, request?}],
/// "appendedSeqs", "endSeedSeq", "declined"?, "retryAuthorized"?,
/// "wouldAppend"?, "wouldFail"? (dry runs: [{message, hint}]),
/// "summarizerWindow": {tokens, source} | null, "warnings" (a range that
/// does not fit that window), "error"?: {message, kind,
/// code, hint?}, "file", "session", "schema_version"}`; each bracket also has "requestTokens",
/// "fits" and "imagesReplaced". A refusal before the first byte prints
/// `{"file", "written": false, "error": {message, kind, hint}, "schema_version"}`.
///
/// Before the first byte a real run checks that the log is writable, the API
/// key variable is set and non-empty, the target has a route (a [[routes]]
/// entry, the built-in deepseek-official, or --base-url), the base URL
/// parses (each exit 2), and, playing the run dry, that the request can be
/// sent (images need --images placeholder on the text-only routes) and
/// fits the summarising model's window when known (exit 1), and that the
/// provider's host accepts a connection (exit 2): one error line,
/// one hint, nothing appended. --images placeholder (a dsh extension) sends
/// each image as the harness's image-offload placeholder text. A dry run
/// reports the request's tokens against that window (a warning when they do
/// not fit) and everything the real run would fail at as "would fail: …"
/// (exit 1; never 5).
///
/// Exit status: 0 done (also when nothing needed doing), 1 the surface
/// changed, pressure remains, or the request cannot be sent or does not fit
/// (nothing written), 2 usage/configuration, 3 invalid log,
/// 4 compaction lock held or the log busy (see `dsh locks`), 5 summarisation
/// failed (the failed bracket is recorded in the log), 70 a write failed,
/// 130 / 143 / 129 stopped by SIGINT (Ctrl-C) / SIGTERM / SIGHUP. A signal
/// after `compaction/start` stops the model call and closes the bracket with
/// one `compaction/end {error: "interrupted"}`, so no lock is left held;
/// before it, nothing more is written.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  dsh compact -n --route deepseek/deepseek-chat session.jsonl\n  dsh compact --route deepseek/deepseek-chat session.jsonl\n  dsh compact --mode pressure --wait 30 --json 5b1d\n  dsh compact --out copy.jsonl --route deepseek/deepseek-chat s.jsonl"
)]
pub struct CompactArgs {
    /// The session log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    pub log: String,
    /// Summarisation target `PROVIDER/MODEL` (default: the config's
    /// summarization pair, else the route of the latest request/header).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub route: Option<String>,
    /// Semantics for a log with an open turn (ignored otherwise: manual).
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    pub mode: ModeArg,
    /// Show the range, the tokens it would shadow and the exact request;
    /// call no one, write nothing (events it would append are stamped with
    /// the log's last event time, so the output is reproducible).
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Write to a copy of the log at FILE (must not exist) instead of the log.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The dsh config file (default: $DSH_CONFIG, else
    /// $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Wire protocol of the route (default: the route's `kind`, else deepseek).
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// Base URL (default: the route's `baseURL`, else `$DEEPSEEK_BASE_URL`,
    /// else `https://api.deepseek.com`, plus `/anthropic` for `--kind
    /// anthropic`).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Environment variable holding the API key (default: the route's
    /// `apiKeyEnv`, else DEEPSEEK_API_KEY).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Reasoning effort for the summary call (`off`, `low`, `high`, `max`;
    /// default: the route's `reasoningEffort`, else `high`).
    #[arg(long, value_name = "EFFORT")]
    pub reasoning_effort: Option<String>,
    /// Context window of the routed target (default: the config's model
    /// entry, else the latest matching request/context, else the config's
    /// route default, else 1000000 for deepseek-official).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// `thresholdRatio` (default: the config's, else 0.8).
    #[arg(long, value_name = "RATIO")]
    pub threshold_ratio: Option<f64>,
    /// `retainRatio` (mutually exclusive with --retain-tokens; default: the
    /// config's, else 0.16).
    #[arg(long, value_name = "RATIO", conflicts_with = "retain_tokens")]
    pub retain_ratio: Option<f64>,
    /// `retainTokens`: absolute recent-tail budget.
    #[arg(long, value_name = "TOKENS")]
    pub retain_tokens: Option<u64>,
    /// `maxTokens`: the summary generation cap (default: the config's, else 8192).
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u64>,
    /// `compactionRetries`: extra pressure attempts (default: the config's, else 1).
    #[arg(long, value_name = "N")]
    pub compaction_retries: Option<u64>,
    /// `maxOverflowRetries`: 0 disables `--mode overflow` (default: the
    /// config's, else 1).
    #[arg(long, value_name = "N")]
    pub max_overflow_retries: Option<u64>,
    /// `sourceCommandId` to record (manual compaction).
    #[arg(long, value_name = "ID")]
    pub source_command_id: Option<String>,
    /// Stream idle timeout in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub timeout: f64,
    /// Retries after HTTP 429 / 5xx / connection failures.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// First retry delay in seconds (doubles per retry).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub retry_delay: f64,
    /// Wait up to SECONDS for another dsh writer holding the log.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
    /// Images in the summarised range: `refuse` (the reference: a
    /// text-only route cannot send them, so nothing is written) or
    /// `placeholder` (a dsh extension: each image is sent as the harness's
    /// image-offload placeholder text, so the summariser knows one was
    /// there).
    #[arg(long, value_enum, default_value_t = ImagesArg::Refuse)]
    pub images: ImagesArg,
    /// Context window of the summarising model (default: --context-window
    /// when it is the routed target, else the config's model entry, else
    /// the latest matching request/context, else the route default, else
    /// 1000000 for deepseek-official).
    #[arg(long, value_name = "TOKENS")]
    pub summarizer_context_window: Option<u64>,
}

/// `--images`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImagesArg {
    /// Refuse a range with images (nothing is written).
    Refuse,
    /// Send each image as the image-offload placeholder text.
    Placeholder,
}

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Manual without an open turn, pressure with one.
    Auto,
    /// Threshold, prune, retain budget, retries.
    Pressure,
    /// Prune, retain 0, one bracket.
    Overflow,
}

/// `--kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// DeepSeek chat completions.
    Deepseek,
    /// Anthropic-compatible Messages.
    Anthropic,
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn failure_status(f: &Failure) -> Status {
    match f.kind {
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

/// A refusal before anything was written: the message, a one-line hint,
/// and the status (text on stderr; with --json one document).
fn refuse(
    ctx: &mut Ctx,
    file: &str,
    kind: &str,
    message: &str,
    hint: &str,
    status: Status,
) -> anyhow::Result<Status> {
    if ctx.json {
        ctx.print_json(
            &Value::obj()
                .with("file", file.to_string().into())
                .with("written", false.into())
                .with(
                    "error",
                    Value::obj()
                        .with("message", message.to_string().into())
                        .with("kind", kind.into())
                        .with("hint", hint.to_string().into()),
                )
                .with("schema_version", SCHEMA_VERSION.into()),
        )?;
    }
    eprintln!(
        "{} {file}: {message}; nothing written",
        crate::cli::render::error_tag()
    );
    eprintln!("dsh: hint: {hint}");
    Ok(status)
}

impl From<ImagesArg> for compact::Images {
    fn from(a: ImagesArg) -> compact::Images {
        match a {
            ImagesArg::Refuse => compact::Images::Refuse,
            ImagesArg::Placeholder => compact::Images::Placeholder,
        }
    }
}

/// The flags as the library's plan inputs.
fn plan_inputs(args: &CompactArgs) -> PlanInputs {
    PlanInputs {
        mode: Some(match args.mode {
            ModeArg::Auto => Mode::Auto,
            ModeArg::Pressure => Mode::Pressure,
            ModeArg::Overflow => Mode::Overflow,
        }),
        route: args.route.clone(),
        protocol: args.kind.map(|k| match k {
            KindArg::Deepseek => Protocol::DeepSeek,
            KindArg::Anthropic => Protocol::Anthropic,
        }),
        base_url: args.base_url.clone(),
        default_base_url: std::env::var("DEEPSEEK_BASE_URL").ok(),
        api_key_env: args.api_key_env.clone(),
        reasoning_effort: args.reasoning_effort.clone(),
        context_window: args.context_window,
        threshold_ratio: args.threshold_ratio,
        retain_ratio: args.retain_ratio,
        retain_tokens: args.retain_tokens,
        max_tokens: args.max_tokens,
        compaction_retries: args.compaction_retries,
        max_overflow_retries: args.max_overflow_retries,
        summarizer_context_window: args.summarizer_context_window,
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

/// A real run first plays the run dry (on the log it holds locked): a
/// request the route cannot send, or one too large for the summarising
/// model, is refused before the first byte (the prune pairs of an automatic
/// run included), and so is a provider that does not accept a connection
/// when a bracket is due. `Some`: refused, with this status.
fn rehearse(
    ctx: &mut Ctx,
    src: &dsh::LogSource,
    opts: &AppendOptions,
    summarizer: &HttpSummarizer,
    options: &Options,
) -> anyhow::Result<Option<Status>> {
    let mut dry = open_session(src, AppendTarget::DryRun, opts)?;
    let mut ids = String::new;
    let clock = now_ms;
    let mut quiet = |_: &Progress| {};
    let mut env = Env {
        summarizer,
        clock: &clock,
        ids: &mut ids,
        progress: &mut quiet,
        cancel: &signals::CANCEL,
    };
    match compact::run(&mut dry, &mut env, options) {
        Err(f) if let Some(hint) = outcome::refusal_hint(&f) => {
            let kind = format!("{:?}", f.kind).to_lowercase();
            let status = failure_status(&f);
            return refuse(ctx, &src.display(), &kind, &f.message, &hint, status).map(Some);
        }
        // A bracket is due: the provider must at least accept a
        // connection, or the attempt would only record its failure.
        Ok(r) if !r.brackets.is_empty() => {
            if let Err(e) = summarizer.endpoint.probe() {
                return refuse(
                    ctx,
                    &src.display(),
                    "unreachable",
                    &e.message,
                    "check --base-url (or the route's baseURL) and that the provider is reachable from here",
                    Status::Usage,
                )
                .map(Some);
            }
        }
        _ => {}
    }
    Ok(None)
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
    let wait = args
        .wait
        .map(|s| crate::cli::writes::seconds("--wait", s))
        .transpose()?;
    let idle_timeout = crate::cli::writes::seconds("--timeout", args.timeout)?;
    let retry_base = crate::cli::writes::seconds("--retry-delay", args.retry_delay)?;
    let opts = AppendOptions {
        wait,
        load: ctx.load_options(),
        ..AppendOptions::default()
    };
    let mut session = open_session(&src, target, &opts)?;
    ctx.warn_all(session.appender().log());
    let who = Who {
        file: src.display(),
        session: session.appender().log().header.id.clone(),
    };
    if session.is_dry_run() && !ctx.quiet {
        warn_refusals(&session);
    }
    let inputs = plan_inputs(args);
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
    let file = src.display();
    if !args.dry_run
        && let Some(p) = problems.first()
    {
        return refuse(ctx, &file, "config", &p.message, &p.hint, Status::Usage);
    }
    let key = ApiKey::new(key_var.unwrap_or_default());
    warn_before_sending(ctx, &plan, &key);
    let summarizer = summarizer(&plan, key, args.retries, (idle_timeout, retry_base));
    let options = plan.options(args.source_command_id.clone(), args.images.into());
    if !args.dry_run
        && let Some(refused) = rehearse(ctx, &src, &opts, &summarizer, &options)?
    {
        return Ok(refused);
    }
    let spinner = (ctx.stderr_tty && !ctx.json && !args.dry_run).then(|| spinner(&plan));
    let mut progress = |p: &Progress| {
        if let Some(pb) = &spinner {
            show_progress(pb, p);
        }
    };
    let mut ids = uuid;
    // A dry run reads no clock: what it would append is stamped with the
    // log's last event time, as `prune --dry-run` does, so equal logs give
    // equal output.
    let last_time = session.appender().log().last_time;
    let dry_run = args.dry_run;
    let clock = move || if dry_run { last_time } else { now_ms() };
    let mut env = Env {
        summarizer: &summarizer,
        clock: &clock,
        ids: &mut ids,
        progress: &mut progress,
        cancel: &signals::CANCEL,
    };
    let guard = (!args.dry_run).then(signals::guard);
    let result = compact::run(&mut session, &mut env, &options);
    if let Some(pb) = &spinner {
        pb.finish_and_clear();
    }
    let lifecycle = session.lifecycle();
    // Publish a copy (--out) with whatever was written, a failed bracket
    // included (a run refused before writing anything publishes nothing),
    // and release the writer lock.
    let wrote = match &result {
        Ok(_) => true,
        Err(f) => !f.report.appended.is_empty(),
    };
    if wrote {
        session.finish().map_err(append_error)?;
    }
    drop(guard);
    let interrupted = signals::status();
    match result {
        Ok(report) if args.dry_run => report_dry(ctx, &report, &plan, lifecycle, &problems, &who),
        Ok(report) => {
            let printed = if ctx.json {
                let v = report_json(&report, &plan, lifecycle, args.dry_run)
                    .with("file", who.file.as_str().into())
                    .with("session", who.session.as_str().into())
                    .with("schema_version", SCHEMA_VERSION.into());
                ctx.print_json(&v)
            } else {
                print_human(&ctx.out, &report, &plan, lifecycle, args.dry_run)
            };
            landed(printed, args, &report.appended)?;
            // A signal that came while the bracket was being committed.
            Ok(interrupted.unwrap_or(Status::Ok))
        }
        Err(f) => report_failure(ctx, args, &plan, lifecycle, &f, problems, &who),
    }
}

/// What a real run would refuse, said by a dry run (a compaction lock is
/// the run's own report).
fn warn_refusals(session: &Session) {
    for b in session.blockers() {
        if !matches!(b, Blocker::CompactionLock { .. }) {
            eprintln!(
                "{} a real run would refuse: {b}",
                crate::cli::render::warning_tag()
            );
        }
    }
}

/// The summariser the plan names, with the key and the flags' timing
/// (`(idle timeout, first retry delay)`).
fn summarizer(
    plan: &Plan,
    key: ApiKey,
    retries: u32,
    (idle_timeout, retry_base): (Duration, Duration),
) -> HttpSummarizer {
    let mut endpoint = Endpoint::new(plan.protocol, plan.base_url.clone(), key);
    endpoint.reasoning_effort = plan.reasoning_effort.clone();
    endpoint.idle_timeout = idle_timeout.max(Duration::from_millis(1));
    endpoint.max_retries = retries;
    endpoint.retry_base = retry_base;
    HttpSummarizer { endpoint }
}

/// Said before anything is sent: a key too short to scrub, and where the
/// key would go.
fn warn_before_sending(ctx: &Ctx, plan: &Plan, key: &ApiKey) {
    if !key.is_empty() && !key.scrubbable() && !ctx.quiet {
        eprintln!(
            "{} the API key in ${} is shorter than {} characters: dsh does not scrub it from what the provider returns (it would corrupt every word it occurs in); dsh itself never prints it",
            crate::cli::render::warning_tag(),
            plan.key_env,
            dsh::provider::MIN_SCRUB_CHARS
        );
    }
    if !ctx.quiet {
        // Said before anything is sent: where the key would go.
        for w in compact::plan::base_url_warnings(&plan.base_url) {
            eprintln!("{} {w}", crate::cli::render::warning_tag());
        }
    }
}

/// The spinner shown while the summariser works.
fn spinner(plan: &Plan) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.enable_steady_tick(Duration::from_millis(120));
    pb.set_message(format!(
        "summarising with {}/{}",
        plan.target.0, plan.target.1
    ));
    pb
}

/// A dry run's report: what it would do, and what the real run would
/// refuse (exit 1, never 5).
fn report_dry(
    ctx: &mut Ctx,
    report: &Report,
    plan: &Plan,
    lifecycle: Lifecycle,
    problems: &[compact::plan::Problem],
    who: &Who,
) -> anyhow::Result<Status> {
    // What the real run would refuse: exit 1, never 5.
    let status = if problems.is_empty() {
        Status::Ok
    } else {
        Status::Findings
    };
    if ctx.json {
        let v = report_json(report, plan, lifecycle, true)
            .with("wouldFail", would_fail_json(problems))
            .with("file", who.file.as_str().into())
            .with("session", who.session.as_str().into())
            .with("schema_version", SCHEMA_VERSION.into());
        ctx.print_json(&v)?;
    } else {
        // The exact request can be long: paged like a report.
        ctx.page();
        print_human(&ctx.out, report, plan, lifecycle, true)?;
        print_would_fail(&ctx.out, problems)?;
    }
    Ok(status)
}

/// A report that failed to print after events were appended: the error
/// says the write landed (exit 70 is about the report, not the log). A
/// closed pipe stays quiet.
fn landed(
    printed: std::io::Result<()>,
    args: &CompactArgs,
    appended: &[dsh::OwnedEvent],
) -> anyhow::Result<()> {
    match printed {
        Err(e) if !appended.is_empty() && e.kind() != std::io::ErrorKind::BrokenPipe => {
            let to = args
                .out
                .as_ref()
                .map_or(args.log.clone(), |o| o.display().to_string());
            Err(crate::cli::exit::StatusError {
                status: Status::Internal,
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

/// The log a run compacts, for its JSON document.
struct Who {
    file: String,
    session: String,
}

/// A failed run: the report of what was written, the error (with a next
/// step where one is known), and the exit status of its class.
fn report_failure(
    ctx: &mut Ctx,
    args: &CompactArgs,
    plan: &Plan,
    lifecycle: Lifecycle,
    f: &Failure,
    mut problems: Vec<compact::plan::Problem>,
    who: &Who,
) -> anyhow::Result<Status> {
    let status = failure_status(f);
    // A dry run calls no one: what it cannot do is what the real run would
    // fail at (exit 1, never 5).
    if args.dry_run
        && let Some(more) = outcome::would_fail(f, plan)
    {
        problems.extend(more);
        if ctx.json {
            let v = report_json(&f.report, plan, lifecycle, true)
                .with("wouldFail", would_fail_json(&problems))
                .with("file", who.file.as_str().into())
                .with("session", who.session.as_str().into())
                .with("schema_version", SCHEMA_VERSION.into());
            ctx.print_json(&v)?;
        } else {
            print_human(&ctx.out, &f.report, plan, lifecycle, true)?;
            print_would_fail(&ctx.out, &problems)?;
        }
        return Ok(Status::Findings);
    }
    let hint = outcome::failure_hint(f, plan, &args.log);
    let unsaved = keep_unsaved(who, f);
    if ctx.json {
        let mut err = Value::obj()
            .with("message", f.message.clone().into())
            .with("kind", format!("{:?}", f.kind).to_lowercase().into())
            .with("code", opt(f.code.as_ref().map(ToString::to_string)));
        if let Some(h) = &hint {
            err = err.with("hint", h.clone().into());
        }
        let v = report_json(&f.report, plan, lifecycle, args.dry_run)
            .with("error", err)
            .with("unsavedSummary", unsaved.clone().unwrap_or(Value::Null))
            .with("file", who.file.as_str().into())
            .with("session", who.session.as_str().into())
            .with("schema_version", SCHEMA_VERSION.into());
        landed(ctx.print_json(&v), args, &f.report.appended)?;
    } else {
        let printed = print_human(&ctx.out, &f.report, plan, lifecycle, args.dry_run);
        landed(printed, args, &f.report.appended)?;
    }
    eprintln!("dsh: compact failed: {}", f.message);
    if let Some(h) = hint {
        eprintln!("dsh: hint: {h}");
    }
    if let Some(u) = &unsaved {
        let saved = u.get("savedTo").and_then(|p| p.as_str());
        match saved {
            Some(p) => eprintln!(
                "dsh: the summary was received but not appended; it is kept in {p} (the events that would have been appended); `dsh locks` on the log tells whether its compaction/start is held"
            ),
            None => eprintln!(
                "dsh: the summary was received but not appended, and could not be kept beside the log: it is in `unsavedSummary` of --json; here it is:\n{}",
                u.get("text").and_then(|t| t.as_str()).unwrap_or_default()
            ),
        }
    }
    Ok(status)
}

/// A summary paid for but not appended: kept beside the log; the JSON
/// `unsavedSummary` (`compactionId`, `savedTo` or null, `text`).
fn keep_unsaved(who: &Who, f: &Failure) -> Option<OwnedValue> {
    let b = f.report.brackets.iter().find(|b| b.unsaved.is_some())?;
    let batch = b.unsaved.as_deref()?;
    let saved = compact::save_unsaved(std::path::Path::new(&who.file), &b.compaction_id, batch)
        .ok()
        .map(|p| p.display().to_string());
    Some(
        Value::obj()
            .with("compactionId", b.compaction_id.clone().into())
            .with("savedTo", opt(saved))
            .with("text", compact::unsaved_text(batch).into()),
    )
}
