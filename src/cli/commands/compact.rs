//! `dsh compact`: summarise old history through a model and commit the
//! compaction bracket.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use dsh::compact::anchor::AnchorMeter;
use dsh::compact::pruning::ToolResultPruner;
use dsh::compact::sink::FileSink;
use dsh::compact::{
    self, BracketReport, Env, Failure, FailureKind, Mode, Options, Outcome, Report, Session,
};
use dsh::json::{OwnedValue, Value};
use dsh::provider::{ApiKey, Endpoint, HttpSummarizer, Progress, Protocol};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION};
use crate::cli::exit::{Status, StatusError, UsageError};

/// Compact a session log: summarise its oldest history through a model and
/// replace it with one checkpoint.
///
/// A log whose last turn is closed gets manual compaction (owner `null`,
/// keeps only the newest indivisible unit, no pruning). A log with an open
/// turn gets automatic compaction: `--mode pressure` (default: only when the
/// routed target is over its threshold; prunes oversized tool results first,
/// keeps the recent-tail budget, retries while still over) or `--mode
/// overflow` (prune, then one maximal head reduction).
///
/// `compaction/start` is written before the model is called; every failure
/// closes the bracket with its error and leaves the surface unchanged. The
/// API key is read from the environment variable named by `--api-key-env`
/// (default `DEEPSEEK_API_KEY`) and is never printed or written.
///
/// Exit status: 0 done (also when nothing needed doing), 1 the surface
/// changed or pressure remains, 2 usage/configuration, 3 invalid log,
/// 4 compaction lock held (see `dsh locks`), 5 summarisation failed (the
/// failed bracket is recorded in the log).
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The session log.
    pub log: String,
    /// Summarisation target `PROVIDER/MODEL` (default: the route of the
    /// latest request/header).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub route: Option<String>,
    /// Semantics for a log with an open turn (ignored otherwise: manual).
    #[arg(long, value_enum, default_value_t = ModeArg::Auto)]
    pub mode: ModeArg,
    /// Show the range, the tokens it would shadow and the exact request;
    /// call no one, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write to a copy of the log at FILE (must not exist) instead of the log.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Wire protocol of the route.
    #[arg(long, value_enum, default_value_t = KindArg::Deepseek)]
    pub kind: KindArg,
    /// Base URL (default `$DEEPSEEK_BASE_URL`, else `https://api.deepseek.com`,
    /// plus `/anthropic` for `--kind anthropic`).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    #[arg(long, value_name = "VAR", default_value = "DEEPSEEK_API_KEY")]
    pub api_key_env: String,
    /// Reasoning effort for the summary call (`off`, `low`, `high`, `max`;
    /// default `high`).
    #[arg(long, value_name = "EFFORT")]
    pub reasoning_effort: Option<String>,
    /// Context window of the routed target (default: the latest matching
    /// request/context, else 1000000 for deepseek-official).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// `thresholdRatio`.
    #[arg(long, value_name = "RATIO", default_value_t = 0.8)]
    pub threshold_ratio: f64,
    /// `retainRatio` (mutually exclusive with --retain-tokens).
    #[arg(long, value_name = "RATIO", conflicts_with = "retain_tokens")]
    pub retain_ratio: Option<f64>,
    /// `retainTokens`: absolute recent-tail budget.
    #[arg(long, value_name = "TOKENS")]
    pub retain_tokens: Option<u64>,
    /// `maxTokens`: the summary generation cap.
    #[arg(long, value_name = "TOKENS", default_value_t = 8192)]
    pub max_tokens: u64,
    /// `compactionRetries`: extra pressure attempts.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub compaction_retries: u64,
    /// `sourceCommandId` to record (manual compaction).
    #[arg(long, value_name = "ID")]
    pub source_command_id: Option<String>,
    /// Stream idle timeout in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub timeout: f64,
    /// Retries after HTTP 429 / 5xx / connection failures.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// Release a held compaction lock left by a crashed compaction: append
    /// what a resuming harness writes (crash-repair closers of an open turn,
    /// then `session/end-seed`), which turns the orphaned `compaction/start`
    /// into stale crash evidence. Compacts nothing.
    #[arg(long, conflicts_with_all = ["dry_run", "route"])]
    pub release_lock: bool,
    /// First retry delay in seconds (doubles per retry).
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub retry_delay: f64,
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

fn split_route(s: &str) -> anyhow::Result<(String, String)> {
    match s.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok((p.to_string(), m.to_string())),
        _ => Err(UsageError(format!("--route must be PROVIDER/MODEL, got \"{s}\"")).into()),
    }
}

fn budgets(cw: u64, threshold_ratio: f64, retain: Retain, key: &str) -> anyhow::Result<(u64, u64)> {
    let threshold = (cw as f64 * threshold_ratio).floor() as u64;
    let retain = match retain {
        Retain::Tokens(t) => t,
        Retain::Ratio(r) => (cw as f64 * r).floor() as u64,
    };
    if retain >= threshold {
        return Err(UsageError(format!(
            "BasicCompactionConfig: {key} retainTokens ({retain}) must be less than threshold tokens {threshold}"
        ))
        .into());
    }
    Ok((threshold, retain))
}

#[derive(Clone, Copy)]
enum Retain {
    Ratio(f64),
    Tokens(u64),
}

fn capacity(
    args: &CompactArgs,
    session: &Session,
    provider: &str,
    model: &str,
) -> Option<(u64, &'static str)> {
    if let Some(cw) = args.context_window {
        return Some((cw, "flag"));
    }
    if let Some(c) = &session.headers.context
        && c.get("provider").is_some_and(|p| p.is_str(provider))
        && c.get("model").is_some_and(|m| m.is_str(model))
        && let Some(cw) = c.get("contextWindow").and_then(|w| w.as_count())
    {
        return Some((cw, "request/context"));
    }
    (provider == "deepseek-official").then_some((1_000_000, "adapter-default"))
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

fn outcome_name(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Compacted) => "compacted",
        Some(Outcome::BelowThreshold) => "below-threshold",
        Some(Outcome::PrunedBelowThreshold) => "pruned-below-threshold",
        Some(Outcome::Declined(_)) => "declined",
        Some(Outcome::DryRun) => "dry-run",
        None => "failed",
    }
}

fn opt<T: Into<OwnedValue>>(v: Option<T>) -> OwnedValue {
    v.map(Into::into).unwrap_or(Value::Null)
}

fn bracket_json(b: &BracketReport, with_request: bool) -> OwnedValue {
    let mut v = Value::obj()
        .with("compactionId", b.compaction_id.clone().into())
        .with("turn", opt(b.turn))
        .with(
            "shadowedRange",
            Value::obj()
                .with("start", b.start.into())
                .with("end", b.end.into()),
        )
        .with("shadowedSeqs", b.shadowed_seqs.clone().into())
        .with("shadowedTokenCount", b.shadowed_tokens.into())
        .with("startSeq", opt(b.start_seq))
        .with("summarySeq", opt(b.summary_seq))
        .with("checkpointSeq", opt(b.checkpoint_seq))
        .with("endSeq", opt(b.end_seq))
        .with("checkpointTokens", opt(b.checkpoint_tokens))
        .with(
            "usage",
            b.usage
                .as_ref()
                .map(|u| u.to_value())
                .unwrap_or(Value::Null),
        )
        .with("attempts", u64::from(b.attempts).into())
        .with("error", opt(b.error.clone()));
    if with_request && let Some(r) = &b.request {
        v = v.with("request", r.to_value());
    }
    v
}

fn report_json(r: &Report, extra: &Extra, dry_run: bool) -> OwnedValue {
    let pruned: Vec<OwnedValue> = r
        .pruned
        .iter()
        .map(|(o, n)| {
            Value::obj()
                .with("originalSeq", (*o).into())
                .with("replacementSeq", (*n).into())
        })
        .collect();
    let mut v = Value::obj()
        .with("mode", r.mode.name().into())
        .with("outcome", outcome_name(r.outcome).into())
        .with(
            "route",
            format!("{}/{}", extra.target.0, extra.target.1).into(),
        )
        .with("routedTarget", opt(extra.routed.clone()))
        .with("openTurn", opt(r.open_turn))
        .with("contextWindow", opt(extra.context_window))
        .with("thresholdTokens", opt(extra.threshold))
        .with("retainTokens", extra.retain.into())
        .with("tokensBefore", opt(r.tokens_before))
        .with("tokensAfterPrune", opt(r.tokens_after_prune))
        .with("tokensAfter", opt(r.tokens_after))
        .with("surfaceTokensBefore", r.surface_before.into())
        .with("surfaceTokensAfter", r.surface_after.into())
        .with("replaceGenerationBefore", r.generation_before.into())
        .with("replaceGenerationAfter", r.generation_after.into())
        .with("pruned", Value::Arr(pruned))
        .with(
            "brackets",
            Value::Arr(
                r.brackets
                    .iter()
                    .map(|b| bracket_json(b, dry_run))
                    .collect(),
            ),
        )
        .with(
            "appendedSeqs",
            r.appended
                .iter()
                .map(|e| e.seq)
                .collect::<Vec<u64>>()
                .into(),
        );
    if let Some(Outcome::Declined(d)) = r.outcome {
        v = v.with("declined", d.explain().into());
    }
    if r.mode == Mode::Overflow {
        v = v.with("retryAuthorized", r.retry_authorized().into());
    }
    if dry_run {
        v = v.with(
            "wouldAppend",
            Value::Arr(r.appended.iter().map(|e| e.value.clone()).collect()),
        );
    }
    v
}

struct Extra {
    target: (String, String),
    routed: Option<String>,
    context_window: Option<u64>,
    threshold: Option<u64>,
    retain: u64,
    key_env: String,
}

fn print_human(r: &Report, extra: &Extra, dry_run: bool) {
    let route = format!("{}/{}", extra.target.0, extra.target.1);
    println!("mode: {}   summarizer: {route}", r.mode.name());
    if let (Some(t), Some(cw)) = (extra.threshold, extra.context_window) {
        println!(
            "capacity {cw} tokens, threshold {t}, retain {}",
            extra.retain
        );
    }
    for (o, n) in &r.pruned {
        println!("pruned tool result seq {o} -> replacement seq {n}");
    }
    for b in &r.brackets {
        println!(
            "range seqs {}..{} ({} nodes, {} tokens): {:?}",
            b.start,
            b.end,
            b.shadowed_seqs.len(),
            b.shadowed_tokens,
            b.shadowed_seqs
        );
        if dry_run {
            if let Some(req) = &b.request {
                println!("request: {} {}", req.method, req.url);
                for (k, v) in req.redacted_headers() {
                    println!("  {k}: {v}");
                }
                println!("{}", req.body.to_json());
            }
            continue;
        }
        if !b.compaction_id.is_empty() {
            println!("compaction id: {}", b.compaction_id);
        }
        if let Some(cp) = b.checkpoint_seq {
            println!(
                "checkpoint seq {cp}: {} tokens (shadowed {})",
                b.checkpoint_tokens.unwrap_or(0),
                b.shadowed_tokens
            );
        }
        if let Some(u) = &b.usage {
            println!("provider usage: {}", u.to_value().to_json());
        }
        if let Some(e) = &b.error {
            println!("bracket failed: {e}");
        }
    }
    let tokens = |t: Option<u64>| t.map(|x| x.to_string()).unwrap_or_else(|| "?".into());
    match r.outcome {
        Some(Outcome::Declined(d)) => {
            if r.mode == Mode::Manual {
                println!("No compactable history yet.");
            }
            println!("nothing to compact: {}", d.explain());
        }
        Some(Outcome::BelowThreshold) => println!(
            "below threshold: {} tokens < {}; nothing written",
            tokens(r.tokens_before),
            tokens(extra.threshold)
        ),
        Some(Outcome::PrunedBelowThreshold) => println!(
            "pruning alone brought it below threshold: {} -> {} tokens",
            tokens(r.tokens_before),
            tokens(r.tokens_after_prune)
        ),
        Some(Outcome::DryRun) => println!("dry run: nothing written, no one called"),
        _ => {}
    }
    if r.tokens_before.is_some() {
        println!(
            "tokens before {} after {}",
            tokens(r.tokens_before),
            tokens(r.tokens_after)
        );
    }
    println!(
        "surface tokens before {} after {}",
        r.surface_before, r.surface_after
    );
    if r.mode == Mode::Overflow {
        println!(
            "retry of the failed request authorised: {}",
            r.retry_authorized()
        );
    }
    let _ = &extra.key_env;
}

fn failure_status(f: &Failure) -> Status {
    match f.kind {
        FailureKind::Busy => Status::Busy,
        FailureKind::Mode | FailureKind::Config => Status::Usage,
        FailureKind::Summary => Status::Provider,
        FailureKind::Changed | FailureKind::StillAboveThreshold => Status::Findings,
        FailureKind::Corrupt => Status::InvalidLog,
        FailureKind::Commit => Status::Internal,
    }
}

fn release_lock(ctx: &Ctx, session: &Session) -> anyhow::Result<Status> {
    let start_seq = match session.lock() {
        compact::LockState::Busy { start_seq } => start_seq,
        other => {
            let state = match other {
                compact::LockState::Stale { .. } => "stale",
                _ => "free",
            };
            if ctx.json {
                ctx.print_json(
                    &Value::obj()
                        .with("released", false.into())
                        .with("lock", state.into())
                        .with("schema_version", SCHEMA_VERSION.into()),
                )?;
            } else {
                println!("the compaction lock is not held ({state}); nothing written");
            }
            return Ok(Status::Ok);
        }
    };
    let log = session.loaded().expect("loaded from a file");
    let mut events = log.closers.clone();
    let seq = log.event_count();
    let v = Value::obj()
        .with("type", "session/end-seed".into())
        .with("seq", seq.into())
        .with("time", now_ms().into())
        .with("data", Value::obj());
    events.push(dsh::event::owned_event(dsh::Kind::SessionEndSeed, seq, v));
    let mut sink = FileSink::open(log).map_err(|e| StatusError {
        status: Status::Busy,
        message: e.to_string(),
    })?;
    compact::Sink::append(&mut sink, &events).map_err(|e| StatusError {
        status: Status::Internal,
        message: e.to_string(),
    })?;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    if ctx.json {
        ctx.print_json(
            &Value::obj()
                .with("released", true.into())
                .with("orphanStartSeq", start_seq.into())
                .with("appendedSeqs", seqs.into())
                .with("schema_version", SCHEMA_VERSION.into()),
        )?;
    } else {
        println!(
            "released the compaction lock held by compaction/start seq {start_seq}: appended {} event(s) ending with session/end-seed seq {seq}",
            events.len()
        );
    }
    Ok(Status::Ok)
}

/// Run `dsh compact`.
pub fn run(ctx: &mut Ctx, args: &CompactArgs) -> anyhow::Result<Status> {
    let mut src = ctx.resolve(&args.log)?;
    if let Some(out) = &args.out {
        let from = src
            .path()
            .ok_or_else(|| UsageError("--out needs a log file, not standard input".into()))?
            .to_path_buf();
        if out.exists() {
            return Err(UsageError(format!("{}: already exists", out.display())).into());
        }
        if !args.dry_run {
            std::fs::copy(&from, out)
                .with_context(|| format!("cannot copy the log to {}", out.display()))?;
            src = dsh::log::LogSource::File(out.clone());
        }
    }
    let meter: Box<dyn compact::PressureMeter> = Box::new(AnchorMeter::default());
    let mut session = Session::load(&src, &ctx.load_options(), Some(meter))?;
    if let Some(log) = session.loaded() {
        ctx.warn_all(log);
    }
    if args.release_lock {
        return release_lock(ctx, &session);
    }
    let routed = session.headers.route();
    let target = match &args.route {
        Some(r) => split_route(r)?,
        None => routed
            .clone()
            .ok_or_else(|| UsageError(compact::NO_TARGET.to_string()))?,
    };
    let mode = match (args.mode, session.open_turn()) {
        (_, None) => Mode::Manual,
        (ModeArg::Auto | ModeArg::Pressure, Some(_)) => Mode::Pressure,
        (ModeArg::Overflow, Some(_)) => Mode::Overflow,
    };
    let retain_policy = match (args.retain_tokens, args.retain_ratio) {
        (Some(t), _) => Retain::Tokens(t),
        (None, Some(r)) => Retain::Ratio(r),
        (None, None) => Retain::Ratio(0.16),
    };
    let (mut context_window, mut threshold, mut retain) = (None, None, 0);
    if mode == Mode::Pressure {
        let (p, m) = routed.clone().ok_or_else(|| {
            UsageError(
                "pressure compaction needs a routed target (no request/header in the log)".into(),
            )
        })?;
        let (cw, _) = capacity(args, &session, &p, &m).ok_or_else(|| {
            UsageError(format!(
                "compaction-basic: no context capacity for {p}/{m}; configure contextWindow on that adapter model"
            ))
        })?;
        let (t, r) = budgets(cw, args.threshold_ratio, retain_policy, &format!("{p}/{m}"))?;
        context_window = Some(cw);
        threshold = Some(t);
        retain = r;
    }
    let protocol = match args.kind {
        KindArg::Deepseek => Protocol::DeepSeek,
        KindArg::Anthropic => Protocol::Anthropic,
    };
    let base_url = args.base_url.clone().unwrap_or_else(|| {
        let root = std::env::var("DEEPSEEK_BASE_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "https://api.deepseek.com".into());
        match protocol {
            Protocol::DeepSeek => root,
            Protocol::Anthropic => format!("{}/anthropic", root.trim_end_matches('/')),
        }
    });
    let key = std::env::var(&args.api_key_env).unwrap_or_default();
    if key.is_empty() && !args.dry_run {
        return Err(UsageError(format!(
            "no API key: set ${} (the key is read from the environment only)",
            args.api_key_env
        ))
        .into());
    }
    let mut endpoint = Endpoint::new(protocol, base_url, ApiKey::new(key));
    endpoint.reasoning_effort = args.reasoning_effort.clone();
    endpoint.idle_timeout = Duration::from_secs_f64(args.timeout.max(0.001));
    endpoint.max_retries = args.retries;
    endpoint.retry_base = Duration::from_secs_f64(args.retry_delay.max(0.0));
    let summarizer = HttpSummarizer { endpoint };
    let opts = Options {
        mode,
        threshold_tokens: threshold,
        retain_tokens: retain,
        compaction_retries: args.compaction_retries,
        max_tokens: args.max_tokens,
        target: target.clone(),
        source_command_id: args.source_command_id.clone(),
        dry_run: args.dry_run,
    };
    let extra = Extra {
        target,
        routed: routed.map(|(p, m)| format!("{p}/{m}")),
        context_window,
        threshold,
        retain,
        key_env: args.api_key_env.clone(),
    };
    let spinner = (ctx.stderr_tty && !ctx.json && !args.dry_run).then(|| {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.enable_steady_tick(Duration::from_millis(120));
        pb.set_message(format!(
            "summarising with {}/{}",
            extra.target.0, extra.target.1
        ));
        pb
    });
    let mut progress = |p: &Progress| {
        if let Some(pb) = &spinner {
            match p {
                Progress::Sending { attempt } if *attempt > 1 => {
                    pb.set_message(format!("summarising (attempt {attempt})"))
                }
                Progress::Retrying { delay, reason, .. } => {
                    pb.set_message(format!("{reason}; retrying in {:.1}s", delay.as_secs_f64()))
                }
                Progress::Receiving { bytes } => {
                    pb.set_message(format!("receiving the summary ({bytes} bytes)"))
                }
                _ => {}
            }
        }
    };
    let mut ids = uuid;
    let clock = now_ms;
    let pruner = ToolResultPruner::default();
    let mut env = Env {
        summarizer: &summarizer,
        pruner: Some(&pruner),
        clock: &clock,
        ids: &mut ids,
        progress: &mut progress,
    };
    let mut memory = compact::MemorySink::default();
    let mut file_sink;
    let sink: &mut dyn compact::Sink = if args.dry_run {
        &mut memory
    } else {
        let log = session.loaded().expect("loaded from a file");
        file_sink = FileSink::open(log).map_err(|e| StatusError {
            status: Status::Busy,
            message: e.to_string(),
        })?;
        &mut file_sink
    };
    let result = compact::run(&mut session, sink, &mut env, &opts);
    if let Some(pb) = &spinner {
        pb.finish_and_clear();
    }
    match result {
        Ok(report) => {
            if ctx.json {
                let v = report_json(&report, &extra, args.dry_run)
                    .with("schema_version", SCHEMA_VERSION.into());
                ctx.print_json(&v)?;
            } else {
                print_human(&report, &extra, args.dry_run);
            }
            Ok(Status::Ok)
        }
        Err(f) => {
            let status = failure_status(&f);
            let hint = match (&f.provider, f.kind) {
                (Some(p), _) if p.code == "AUTH" => Some(format!(
                    "the provider rejected the API key (HTTP {}): check ${}",
                    p.status.unwrap_or(401),
                    args.api_key_env
                )),
                (_, FailureKind::Busy) => Some(
                    "a compaction/start has no compaction/end (see `dsh locks`); if the compacting process is gone, run `dsh compact --release-lock LOG` (appends session/end-seed, as a resumed harness does)".into(),
                ),
                _ => None,
            };
            if ctx.json {
                let mut err = Value::obj()
                    .with("message", f.message.clone().into())
                    .with("kind", format!("{:?}", f.kind).to_lowercase().into())
                    .with("code", opt(f.code.clone()));
                if let Some(h) = &hint {
                    err = err.with("hint", h.clone().into());
                }
                let v = report_json(&f.report, &extra, args.dry_run)
                    .with("error", err)
                    .with("schema_version", SCHEMA_VERSION.into());
                ctx.print_json(&v)?;
            } else {
                print_human(&f.report, &extra, args.dry_run);
            }
            eprintln!("dsh: compact failed: {}", f.message);
            if let Some(h) = hint {
                eprintln!("dsh: hint: {h}");
            }
            Ok(status)
        }
    }
}
