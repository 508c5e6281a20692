//! `dsh measure`: DSH's own pressure figure, the routed policy, and exact
//! tokenizer counts beside it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dsh::doc::error::LogRefusal;
use dsh::doc::measure as doc;
use dsh::json::{OwnedValue, Value};
use dsh::measure::Job;
use dsh::meter::MeasureError;
use dsh::meter::tokenizer::Encoding;

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::many;
use crate::cli::render::measure::{Outcome, print_many, print_report};

/// Measure context pressure exactly as the DSH harness does.
///
/// The harness's own token meter and its routed compaction policy: context window, threshold, retention, headroom.
///
/// The figure is the harness's own heuristic (4 UTF-16 units per token,
/// anchored on the provider's reported usage), so it equals the number that
/// triggers compaction. `--tokenizer` adds a real BPE count of the same text.
///
/// Several LOGs, a directory of sessions (e.g. `~/.dsh/sessions`) or a
/// working directory (`.`: every session of that project) give one row per
/// log, measured in parallel, and a line `N of M over the compaction
/// threshold`; a bad log is reported on stderr (the reason and what to do)
/// and the scan goes on.
///
/// With --json, one log prints the reference's `measure` object
/// (`logRevision`, `baseline {kind, tokens, usage?}`, `surfaceDeltaTokens`,
/// `totalTokens`, `surfaceTokens`, `nodes [{seq, tokens}]`) plus `file`,
/// `session`, `composition`, `projections {contextBreakdown,
/// contextPressure, tokenUsage}`, `policy {provider, model, contextWindow,
/// contextWindowSource, thresholdRatio, retainRatio|retainTokensAbsolute,
/// thresholdTokens, retainTokens, overThreshold, headroomTokens,
/// percentOfWindow, modelPolicy}` (or `{error}`), `tokenizer` (with
/// --tokenizer), `fill` (with --fill), `anchorSeq`, `headerSeq`, `at`, `schema_version`. A refused
/// log or a replay error prints `{"error", "stage", …}` and exits 3. Many
/// logs: `{"logs": [{"file", "session", …measure…} | {"file", "error",
/// "kind"?, "stage", …}], "summary": {"logs", "measured", "overThreshold",
/// "refused"}, "schema_version"}`.
///
/// Exit status: 0 ok; 1 with --fail-over when a log is at or over its
/// threshold; 2 bad flags or config; 3 a log refused or not replayable
/// (with --fail-over: only when no log could be measured).
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh measure session.jsonl\n  dsh measure                          # every session under $DSH_HOME\n  dsh measure --tokenizer deepseek-v4 s.jsonl   # DeepSeek's own count of the request\n  dsh measure --fail-over --json ~/.dsh/sessions   # CI: exit 1 when over"
)]
pub struct MeasureArgs {
    /// Logs: files, `-`, session directories or ids, directories of
    /// sessions, or working directories (`.`: all of that project's
    /// sessions). With none: every session under $DSH_HOME.
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// Show the per-node table (position, seq, type, tokens).
    #[arg(long)]
    pub nodes: bool,
    /// Where the tokens go: the surface by what fills it (conversation,
    /// summaries, reasoning, tool calls and results by tool name with the
    /// largest results and their seqs); adds `fill` to --json.
    #[arg(long)]
    pub fill: bool,
    /// Also count with a real tokenizer: the envelope and surface text
    /// (o200k, cl100k), or the request as DeepSeek renders it (deepseek-v4).
    #[arg(long, value_name = "ENCODING", value_parser = ["o200k", "cl100k", "deepseek-v4"])]
    pub tokenizer: Option<String>,
    /// Measure the log as it stood after the event with this seq.
    #[arg(long, value_name = "SEQ")]
    pub at: Option<u64>,
    /// Measure against this request header instead of the latest logged one
    /// (JSON text, or @FILE): `{"config": {...}, "system"?, "tools"?}`.
    #[arg(long, value_name = "JSON|@FILE")]
    pub header_json: Option<String>,
    /// Resolve the policy for this PROVIDER/MODEL instead of the routed target.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub route: Option<String>,
    /// Context window to use instead of the config / logged one.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// The dsh config file (default: $DSH_CONFIG, else
    /// $XDG_CONFIG_HOME/dsh/config.toml, else ~/.config/dsh/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Exit 1 when any log is at or over its compaction threshold (refused
    /// logs then exit 3 only when none could be measured).
    #[arg(long)]
    pub fail_over: bool,
    /// Logs measured at once when there are many (0: one per core).
    #[arg(long, short, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
}

fn parse_header(arg: &str) -> Result<OwnedValue> {
    let text = match arg.strip_prefix('@') {
        Some(f) => std::fs::read_to_string(f)
            .with_context(|| format!("cannot read --header-json file {f}"))
            .map_err(|e| UsageError(format!("{e:#}")))?,
        None => arg.to_string(),
    };
    let v = Value::parse(&text)
        .map_err(|e| UsageError(format!("--header-json is not JSON: {e}")))?
        .into_owned();
    let v = match (v.get("config"), v.get("header")) {
        (None, Some(h)) => h.clone(),
        _ => v,
    };
    if !v.get("config").is_some_and(|c| c.is_obj()) {
        return Err(
            UsageError("--header-json needs a header object with a \"config\"".into()).into(),
        );
    }
    Ok(v)
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &MeasureArgs) -> Result<Status> {
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let route = match &args.route {
        None => None,
        Some(r) => match r.split_once('/') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => Some((p.to_string(), m.to_string())),
            _ => return Err(UsageError(format!("--route {r}: expected PROVIDER/MODEL")).into()),
        },
    };
    if args.context_window == Some(0) {
        return Err(
            UsageError("--context-window 0: expected a positive number of tokens".into()).into(),
        );
    }
    let header = args.header_json.as_deref().map(parse_header).transpose()?;
    let job = Job {
        header,
        route,
        context_window: args.context_window,
        encoding: args.tokenizer.as_deref().and_then(Encoding::parse),
        fill: args.fill,
        ..Job::new(
            dsh::LoadOptions {
                upto: args.at,
                ..ctx.load_options()
            },
            &config,
        )
    };
    match ctx.as_many(&args.logs, false)? {
        None => run_one(ctx, args, &job),
        Some(inputs) => run_many(ctx, args, &job, &inputs),
    }
}

fn run_one(ctx: &mut Ctx, args: &MeasureArgs, job: &Job<'_>) -> Result<Status> {
    // Read twice when step labels repeat (see `dsh::meter::measure`).
    let src = ctx.resolve_rereadable(&args.logs[0])?;
    let (r, warnings) = match job.run(&src) {
        Ok(x) => x,
        Err(MeasureError::Load(e)) => return Err(e.into()),
        Err(MeasureError::Meter(e)) => {
            let file = src.display();
            eprintln!(
                "{} {file}: {e} (seq {})",
                crate::cli::render::error_tag(),
                e.seq()
            );
            if ctx.json {
                ctx.print_doc(&doc::replay_refusal(&e, &file))?;
            }
            return Ok(Status::InvalidLog);
        }
    };
    if !ctx.quiet {
        for w in &warnings {
            eprintln!("{} {}: {w}", crate::cli::render::warning_tag(), r.file);
        }
    }
    if ctx.json {
        ctx.print_doc(&doc::One::of(&r))?;
    } else {
        print_report(&ctx.out, &r, args.nodes)?;
    }
    Ok(if args.fail_over && r.over_threshold() {
        Status::Findings
    } else {
        Status::Ok
    })
}

fn run_many(ctx: &mut Ctx, args: &MeasureArgs, job: &Job<'_>, inputs: &[String]) -> Result<Status> {
    // An argument that names nothing is a bad row, not a stop.
    let rows = ctx.resolve_rows(inputs)?;
    let ran = many::run_items(ctx, rows, args.jobs, "measuring", &|s| job.run(s));
    let logs: Vec<(String, Outcome)> = ran
        .into_iter()
        .map(|row| match row {
            Err((arg, e)) => {
                let refused = refusal(ctx, &e, &arg);
                (arg, Err(refused))
            }
            Ok((src, r)) => {
                let file = src.display();
                let outcome = r.map_err(|e| match e {
                    MeasureError::Load(e) => refusal(ctx, &e, &file),
                    MeasureError::Meter(e) => (
                        doc::unreplayable(&e, &file),
                        format!("{file}: {e} (seq {})", e.seq()),
                    ),
                });
                (file, outcome)
            }
        })
        .collect();
    let dirs: Vec<&Path> = inputs
        .iter()
        .map(Path::new)
        .filter(|p| p.is_dir())
        .collect();
    let s = print_many(ctx, &logs, &dirs)?;
    // Over the threshold decides --fail-over; refused logs are reported
    // on stderr and fail the run only when nothing could be measured.
    Ok(if args.fail_over && s.over_threshold > 0 {
        Status::Findings
    } else if s.refused > 0 && (s.measured == 0 || !args.fail_over) {
        Status::InvalidLog
    } else {
        Status::Ok
    })
}

/// A log refused while loading: its JSON entry and the message.
fn refusal(ctx: &Ctx, e: &dsh::LoadError, file: &str) -> (LogRefusal, String) {
    (LogRefusal::of(e, file, true), ctx.describe_load_error(e))
}
