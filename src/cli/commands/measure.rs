//! `dsh measure`: DSH's own pressure figure, the routed policy, and exact
//! tokenizer counts beside it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use dsh::config::Config;
use dsh::json::{OwnedValue, Value};
use dsh::log::{LoadOptions, LoadedLog, LogSource};
use dsh::meter::tokenizer::{self, Encoding};
use dsh::meter::{MeasureError, Measurement};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, load_error_json};
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::Tone;
use crate::cli::render::measure::{
    PolicyReport, Report, fmt_tokens, policy_cells, print_many, print_report, report_json,
    short_name,
};
use crate::cli::{many, render};

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

/// Options shared by every job.
struct Job<'a> {
    opts: LoadOptions,
    header: Option<OwnedValue>,
    route: Option<(String, String)>,
    context_window: Option<u64>,
    config: &'a Config,
    encoding: Option<Encoding>,
    fill: bool,
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

impl Job<'_> {
    fn policy(&self, log: &LoadedLog, m: &Measurement) -> Result<PolicyReport, String> {
        let (provider, model) = match self.route.clone().or_else(|| log.headers.route()) {
            Some(r) if !r.0.is_empty() && !r.1.is_empty() => r,
            _ => {
                return Err("no routed target: the log has no request/header (use --route)".into());
            }
        };
        let policy = self.config.policy_for(&provider, &model);
        let logged = m.logged_context_window(&provider, &model);
        let capacity = self
            .config
            .capacity(&provider, &model, self.context_window, logged.map(|l| l.0))
            .ok_or_else(|| dsh::policy::no_capacity_message(&provider, &model))?;
        let budgets = policy
            .budgets(capacity.context_window)
            .map_err(|e| e.message)?;
        Ok(PolicyReport {
            logged_seq: logged
                .filter(|_| capacity.source == dsh::policy::CapacitySource::Logged)
                .map(|l| l.1),
            policy,
            capacity,
            budgets,
        })
    }

    fn run(&self, src: &LogSource) -> Result<(Report, Vec<String>), MeasureError> {
        let (log, m) = dsh::meter::measure(src, &self.opts, self.header.clone())?;
        // `--at` names a seq of this log; past its end there is nothing it
        // could mean (the full log would silently be measured).
        if let Some(at) = self.opts.upto
            && log.truncated_at.is_none()
            && at >= log.stored_events
        {
            let last = match log.stored_events {
                0 => "it has no events".to_string(),
                n => format!("its last seq is {}", n - 1),
            };
            return Err(MeasureError::Load(
                dsh::LoadError::invalid(format!(
                    "--at {at} is past the end of the log ({last}): give a seq up to the last one"
                ))
                .file(src.display()),
            ));
        }
        let policy = self.policy(&log, &m);
        let tokens = match self.encoding {
            None => None,
            Some(enc) => {
                let header = self
                    .header
                    .clone()
                    .map(|h| dsh::request_header::canonical(&h));
                let header = header.as_ref().or(log.headers.header.as_ref());
                enc.load();
                let t0 = Instant::now();
                let counts = tokenizer::count(&log, header, enc)?;
                Some((counts, t0.elapsed().as_secs_f64()))
            }
        };
        let hidden = match (&tokens, &self.header) {
            (Some((c, _)), None) if c.encoding == Encoding::DeepSeekV4 => {
                let opts = dsh::cache::CacheOptions {
                    tokenizer: Some(c.encoding),
                    ..Default::default()
                };
                dsh::hidden_prefix::analyse(src, &self.opts, &opts)
                    .ok()
                    .and_then(|(_, h)| h)
                    .map(|h| h.tokens)
            }
            _ => None,
        };
        let fill = match self.fill {
            true => Some(dsh::fill::measure(src, &self.opts)?.1),
            false => None,
        };
        let report = Report {
            fill,
            file: src.display(),
            session: log.header.id.clone(),
            node_kinds: log.surface.nodes.iter().map(|n| n.kind).collect(),
            m,
            policy,
            tokens,
            hidden,
        };
        Ok((report, log.warnings.clone()))
    }
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
        opts: LoadOptions {
            upto: args.at,
            ..ctx.load_options()
        },
        header,
        route,
        context_window: args.context_window,
        config: &config,
        encoding: args.tokenizer.as_deref().and_then(Encoding::parse),
        fill: args.fill,
    };
    if args.logs.is_empty() {
        let mut all = MeasureArgs::clone(args);
        all.logs = vec![ctx.home_sessions()?.display().to_string()];
        return run_many(ctx, &all, &job);
    }
    let single =
        args.logs.len() == 1 && !dsh::log::lookup::is_tree(&args.logs[0], ctx.home.as_deref());
    if single {
        run_one(ctx, args, &job)
    } else {
        run_many(ctx, args, &job)
    }
}

fn meter_error_json(e: &dsh::meter::MeterError, file: &str) -> OwnedValue {
    Value::obj()
        .with("error", e.to_string().into())
        .with("kind", "replay".into())
        .with("stage", "measure".into())
        .with("file", file.into())
        .with("seq", e.seq().into())
        .with("schema_version", SCHEMA_VERSION.into())
}

fn run_one(ctx: &mut Ctx, args: &MeasureArgs, job: &Job<'_>) -> Result<Status> {
    // Read twice when step labels repeat (see `dsh::meter::measure`).
    let src = ctx.resolve_rereadable(&args.logs[0])?;
    let (r, warnings) = match job.run(&src) {
        Ok(x) => x,
        Err(MeasureError::Load(e)) => return Err(e.into()),
        Err(MeasureError::Meter(e)) => {
            eprintln!(
                "{} {}: {e} (seq {})",
                crate::cli::render::error_tag(),
                src.display(),
                e.seq()
            );
            if ctx.json {
                ctx.print_json(&meter_error_json(&e, &src.display()))?;
            }
            return Ok(Status::InvalidLog);
        }
    };
    if !ctx.quiet {
        for w in &warnings {
            eprintln!("{} {}: {w}", crate::cli::render::warning_tag(), r.file);
        }
    }
    let over = r
        .policy
        .as_ref()
        .is_ok_and(|p| p.budgets.over_threshold(r.m.total_tokens));
    if ctx.json {
        ctx.print_json(&report_json(&r, args.at, true))?;
    } else {
        print_report(&ctx.out, &r, args.at, args.nodes)?;
    }
    Ok(if args.fail_over && over {
        Status::Findings
    } else {
        Status::Ok
    })
}

fn run_many(ctx: &mut Ctx, args: &MeasureArgs, job: &Job<'_>) -> Result<Status> {
    // Resolve every argument; one that names nothing is a bad row, not a stop.
    let mut items: Vec<Result<LogSource, (String, dsh::LoadError)>> = Vec::new();
    for (a, found) in args.logs.iter().zip(ctx.resolve_each(&args.logs)?) {
        match found {
            Ok(s) => items.extend(s.into_iter().map(Ok)),
            Err(e) => items.push(Err((a.clone(), e))),
        }
    }
    let sources: Vec<LogSource> = items
        .iter()
        .filter_map(|i| i.as_ref().ok().cloned())
        .collect();
    let results = many::run_many(ctx, &sources, args.jobs, "measuring", &|s| job.run(s));
    let mut results = results.into_iter();
    let dir_args: Vec<&Path> = args
        .logs
        .iter()
        .map(Path::new)
        .filter(|p| p.is_dir())
        .collect();
    let mut status = Status::Ok;
    let (mut measured, mut over_threshold, mut refused) = (0u64, 0u64, 0u64);
    let mut json_rows = Vec::new();
    let mut errors = Vec::new();
    let mut table = render::table(&[
        "log",
        "route",
        "tokens",
        "window",
        "%",
        "threshold",
        "headroom",
        "baseline",
    ]);
    table.drop_first(&["baseline", "route", "window", "threshold"]);
    for item in &items {
        let (file, outcome) = match item {
            Err((arg, e)) => (
                arg.clone(),
                Err((load_error_json(e), ctx.describe_load_error(e))),
            ),
            Ok(src) => {
                let r = results.next().expect("one result per source");
                (src.display(), outcome_of(ctx, src, r))
            }
        };
        let shown = match render::log_label(&file, ctx.home.as_deref()) {
            label if label != file => label,
            _ => short_name(&file, &dir_args),
        };
        match outcome {
            Err((mut ev, msg)) => {
                refused += 1;
                // The reason and what to do, on one line, naming the file once.
                if msg.starts_with(&format!("{file}: ")) {
                    eprintln!("{} {msg}", crate::cli::render::error_tag());
                } else {
                    eprintln!("{} {file}: {msg}", crate::cli::render::error_tag());
                }
                ev.remove("schema_version");
                ev.set("file", file.as_str().into());
                json_rows.push(ev);
                // The reason is on stderr, once; the row only marks the log.
                // (In the tokens column, which a narrow terminal keeps.)
                table.add_toned_row(vec![
                    (shown.clone(), None),
                    (String::new(), None),
                    ("refused".into(), Some(Tone::Bad)),
                ]);
            }
            Ok((r, warnings)) => {
                if !ctx.quiet {
                    for w in &warnings {
                        eprintln!("{} {}: {w}", crate::cli::render::warning_tag(), r.file);
                    }
                }
                let total = r.m.total_tokens;
                let over = r
                    .policy
                    .as_ref()
                    .is_ok_and(|p| p.budgets.over_threshold(total));
                if let Err(e) = &r.policy {
                    errors.push(format!("{shown}: policy: {e}"));
                }
                let [route, window, pct, thr, head] = policy_cells(&r.policy, total);
                measured += 1;
                over_threshold += u64::from(over);
                let hot = over.then_some(Tone::Bad);
                table.add_toned_row(vec![
                    (shown, None),
                    (route, None),
                    (fmt_tokens(total), hot),
                    (window, None),
                    (pct, hot),
                    (thr, None),
                    (head, hot),
                    (r.m.baseline.kind.as_str().to_string(), None),
                ]);
                json_rows.push(report_json(&r, args.at, false));
            }
        }
    }
    // Over the threshold decides --fail-over; refused logs are reported
    // on stderr and fail the run only when nothing could be measured.
    if args.fail_over && over_threshold > 0 {
        status = Status::Findings;
    } else if refused > 0 && (measured == 0 || !args.fail_over) {
        status = Status::InvalidLog;
    }
    let counts = [measured, over_threshold, refused];
    print_many(ctx, json_rows, &table, &errors, counts)?;
    Ok(status)
}

/// A log's measurement, or its refusal: the JSON row and the message.
fn outcome_of(
    ctx: &Ctx,
    src: &LogSource,
    r: Result<(Report, Vec<String>), MeasureError>,
) -> Result<(Report, Vec<String>), (OwnedValue, String)> {
    match r {
        Ok(x) => Ok(x),
        Err(MeasureError::Load(e)) => Err((load_error_json(&e), ctx.describe_load_error(&e))),
        Err(MeasureError::Meter(e)) => Err((
            meter_error_json(&e, &src.display()),
            format!("{}: {e} (seq {})", src.display(), e.seq()),
        )),
    }
}
