//! `dsh measure`: DSH's own pressure figure, the routed policy, and exact
//! tokenizer counts beside it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use dsh::config::Config;
use dsh::json::{OwnedValue, Value};
use dsh::log::{LoadOptions, LoadedLog, LogSource};
use dsh::meter::tokenizer::{self, Encoding, TokenCounts};
use dsh::meter::{MeasureError, Measurement};
use dsh::policy::{Budgets, Capacity, Policy, Retention};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION, load_error_json};
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::{Out, Tone, outln, paint};
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

/// The policy resolved for one log.
struct PolicyReport {
    policy: Policy,
    capacity: Capacity,
    budgets: Budgets,
    logged_seq: Option<u64>,
}

/// Everything measured for one log.
struct Report {
    file: String,
    session: String,
    m: Measurement,
    node_kinds: Vec<dsh::Kind>,
    policy: Result<PolicyReport, String>,
    tokens: Option<(TokenCounts, f64)>,
    /// With DeepSeek's tokenizer on a log whose system prompt or tools are
    /// placeholders: the hidden prefix estimated from the first usage.
    hidden: Option<u64>,
    fill: Option<dsh::fill::Fill>,
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
        print_report(&ctx.out, &r, args)?;
    }
    Ok(if args.fail_over && over {
        Status::Findings
    } else {
        Status::Ok
    })
}

fn num(x: f64) -> OwnedValue {
    Value::Num(x)
}

fn policy_json(p: &Result<PolicyReport, String>, total: f64) -> OwnedValue {
    match p {
        Err(e) => Value::obj().with("error", e.as_str().into()),
        Ok(p) => {
            let b = &p.budgets;
            let mut v = Value::obj()
                .with("provider", p.policy.provider.as_str().into())
                .with("model", p.policy.model.as_str().into())
                .with("modelPolicy", p.policy.overridden.into())
                .with("contextWindow", num(p.capacity.context_window))
                .with("contextWindowSource", p.capacity.source.as_str().into());
            if let Some(s) = p.logged_seq {
                v = v.with("contextSeq", s.into());
            }
            v = v.with("thresholdRatio", num(p.policy.threshold_ratio));
            v = match p.policy.retention {
                Retention::Ratio(r) => v.with("retainRatio", num(r)),
                Retention::Tokens(t) => v.with("retainTokensAbsolute", t.into()),
            };
            v.with("thresholdTokens", b.threshold_tokens.into())
                .with("retainTokens", b.retain_tokens.into())
                .with("overThreshold", b.over_threshold(total).into())
                .with("headroomTokens", num(b.headroom(total)))
                .with(
                    "percentOfWindow",
                    num(round2(total / b.context_window as f64 * 100.0)),
                )
        }
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn tokenizer_json(t: &(TokenCounts, f64)) -> OwnedValue {
    let (c, _elapsed) = t;
    let nodes: Vec<OwnedValue> = c
        .nodes
        .iter()
        .map(|n| {
            Value::obj()
                .with("seq", n.seq.into())
                .with("tokens", n.tokens.into())
        })
        .collect();
    Value::obj()
        .with("encoding", c.encoding.name().into())
        .with("systemTokens", c.system_tokens.into())
        .with("toolsTokens", c.tools_tokens.into())
        .with("messageTokens", c.message_tokens.into())
        .with("totalTokens", c.total_tokens.into())
        .with("textBytes", c.text_bytes.into())
        .with("nodes", Value::Arr(nodes))
}

fn report_json(r: &Report, at: Option<u64>, with_schema: bool) -> OwnedValue {
    let mut v = r.m.to_value();
    v = v
        .with("file", r.file.as_str().into())
        .with("session", r.session.as_str().into())
        .with("composition", r.m.composition_value())
        .with(
            "projections",
            match &r.m.projections {
                Ok(p) => p.to_value(),
                Err((seq, msg)) => Value::obj()
                    .with("error", msg.as_str().into())
                    .with("seq", (*seq).into()),
            },
        )
        .with("policy", policy_json(&r.policy, r.m.total_tokens))
        .with("anchorSeq", r.m.anchor_seq.into())
        .with("headerSeq", r.m.header_seq.into())
        .with("headerOverride", r.m.header_override.into());
    if let Some(a) = at {
        v = v.with("at", a.into());
    }
    if let Some(t) = &r.tokens {
        v = v.with(
            "tokenizer",
            tokenizer_json(t).with("hiddenPrefixTokens", r.hidden.into()),
        );
    }
    if let Some(f) = &r.fill {
        v = v.with("fill", f.to_value());
    }
    if with_schema {
        v = v.with("schema_version", SCHEMA_VERSION.into());
    }
    v
}

fn fmt_tokens(x: f64) -> String {
    render::num_f64(x)
}

fn fmt_u(x: u64) -> String {
    render::num(x)
}

fn bar(fraction: f64, width: usize) -> String {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let filled = (f * width as f64).round() as usize;
    format!("[{}{}]", "█".repeat(filled), "░".repeat(width - filled))
}

fn kind_name(k: dsh::Kind) -> &'static str {
    render::kind_name(k)
}

// About 130 lines on purpose: the rest is the composition table, row by row in the order it prints.
fn print_report(o: &Out, r: &Report, args: &MeasureArgs) -> std::io::Result<()> {
    let m = &r.m;
    outln!(o, "session {}  ({})", r.session, r.file)?;
    if let Some(at) = args.at {
        outln!(o, "as it stood at seq {at}")?;
    }
    let total = m.total_tokens;
    print_pressure(o, r, total)?;
    print_baseline(o, m)?;
    let c = &m.composition;
    let bpe = r.tokens.as_ref().map(|t| &t.0);
    let enc_head = bpe.map(|t| format!("{} tokens", t.encoding.name()));
    outln!(o, "{}", composition_table(r, enc_head.as_deref()))?;
    print_projections(o, m)?;
    if let Some((b, secs)) = &r.tokens {
        outln!(
            o,
            "{}: {} tokens exactly vs {} by the heuristic (system + tools + surface); {} bytes in {:.2}s",
            b.encoding.name(),
            fmt_u(b.total_tokens),
            fmt_u(c.system_tokens + c.tools_tokens + c.message_tokens),
            fmt_u(b.text_bytes),
            secs
        )?;
        provider_line(o, r, b.encoding, b.total_tokens, r.hidden)?;
    }
    outln!(
        o,
        "{}",
        paint_dim(
            "how to read it: `tokens` is the harness's own estimate (about 4 characters a token, corrected by the provider's last reported usage: the \"provider anchor adjustment\" row), the figure compaction compares with the threshold; the provider lines are what the provider reported; --tokenizer o200k adds an exact count of the same text, --tokenizer deepseek-v4 DeepSeek's count of the whole request"
        )
    )?;
    if let Some(f) = &r.fill {
        render::fill::print(o, f)?;
    }
    if args.nodes {
        print_nodes(o, r, bpe, enc_head.as_deref())?;
    }
    Ok(())
}

/// The surface by part: nodes, heuristic tokens, share (and BPE tokens
/// under `enc_head`, with --tokenizer).
fn composition_table(r: &Report, enc_head: Option<&str>) -> render::table::Tbl {
    let m = &r.m;
    let total = m.total_tokens;
    let c = &m.composition;
    let bpe = r.tokens.as_ref().map(|t| &t.0);
    let mut head = vec!["part", "nodes", "tokens", "share"];
    if let Some(h) = enc_head {
        head.push(h);
    }
    let mut t = render::table(&head);
    let share = |x: f64| {
        if total > 0.0 {
            format!("{:.1}%", x / total * 100.0)
        } else {
            "-".into()
        }
    };
    let sum_kind = |k: dsh::Kind| -> u64 {
        bpe.map_or(0, |b| {
            b.nodes
                .iter()
                .zip(&r.node_kinds)
                .filter(|(_, nk)| **nk == k)
                .map(|(n, _)| n.tokens)
                .sum()
        })
    };
    let rows: Vec<(&str, String, f64, Option<u64>)> = vec![
        (
            "system prompt",
            "".into(),
            c.system_tokens as f64,
            bpe.map(|b| b.system_tokens),
        ),
        (
            "tool schemas",
            "".into(),
            c.tools_tokens as f64,
            bpe.map(|b| b.tools_tokens),
        ),
        (
            "user messages",
            c.user_nodes.to_string(),
            c.user_tokens as f64,
            bpe.map(|_| sum_kind(dsh::Kind::UserMessage)),
        ),
        (
            "assistant messages",
            c.assistant_nodes.to_string(),
            c.assistant_tokens as f64,
            bpe.map(|_| sum_kind(dsh::Kind::AssistantMessage)),
        ),
        (
            "tool results",
            c.tool_result_nodes.to_string(),
            c.tool_result_tokens as f64,
            bpe.map(|_| sum_kind(dsh::Kind::ToolResult)),
        ),
        (
            "provider anchor adjustment",
            "".into(),
            c.anchor_adjustment,
            None,
        ),
    ];
    for (name, nodes, tokens, b) in rows {
        let mut row = vec![name.to_string(), nodes, fmt_tokens(tokens), share(tokens)];
        if bpe.is_some() {
            row.push(b.map(fmt_u).unwrap_or_default());
        }
        t.add_row(row);
    }
    let mut row = vec![
        "total".to_string(),
        m.nodes.len().to_string(),
        fmt_tokens(total),
        share(total),
    ];
    if let Some(b) = bpe {
        row.push(fmt_u(b.total_tokens));
    }
    t.add_row(row);
    t
}

/// The provider's usage so far and the projections, or where they failed.
fn print_projections(o: &Out, m: &dsh::meter::Measurement) -> std::io::Result<()> {
    match &m.projections {
        Ok(p) => {
            let u = &p.token_usage;
            let cp = &p.context_pressure;
            outln!(
                o,
                "provider usage so far: {} uncached input, {} cache read, {} cache write, {} output",
                fmt_tokens(u.uncached_input_tokens),
                fmt_tokens(u.cache_read_tokens),
                fmt_tokens(u.cache_write_tokens),
                fmt_tokens(u.output_tokens)
            )?;
            if let (Some(pr), Some(pj)) = (cp.pressure_tokens, cp.projected_tokens) {
                outln!(
                    o,
                    "last request prompt: {} tokens; projected next prompt: {}",
                    fmt_tokens(pr),
                    fmt_tokens(pj)
                )?;
            }
            let drift = m.surface_tokens as f64 - p.context_breakdown.message_tokens;
            if drift != 0.0 {
                outln!(
                    o,
                    "note: the shadow-price projection differs from the surface by {} tokens (a replace without an adjacent metering event)",
                    fmt_tokens(drift)
                )?;
            }
        }
        Err((seq, msg)) => outln!(o, "projections: error at seq {seq}: {msg}")?,
    }
    Ok(())
}

/// Secondary text: dimmed when standard output gets color.
fn paint_dim(s: &str) -> String {
    if render::color::on() {
        let st = anstyle::Style::new().dimmed();
        format!("{st}{s}{st:#}")
    } else {
        s.to_string()
    }
}

/// With the route's provider's own tokenizer: its count against the window
/// (beside DSH's estimate, which stays the pressure figure the harness acts
/// on).
fn provider_line(
    o: &Out,
    r: &Report,
    enc: Encoding,
    counted: u64,
    hidden: Option<u64>,
) -> std::io::Result<()> {
    let Ok(p) = &r.policy else { return Ok(()) };
    if !enc.is_provider_of(&p.policy.provider) {
        return Ok(());
    }
    let window = p.budgets.context_window;
    let total = counted + hidden.unwrap_or(0);
    let left = window as i64 - total as i64;
    let what = match hidden {
        Some(h) => format!(
            "{} + {} hidden (the log's system prompt or tools are placeholders; estimated from the first usage) = {}",
            fmt_u(counted),
            fmt_u(h),
            fmt_u(total)
        ),
        None => fmt_u(total),
    };
    outln!(
        o,
        "provider  {} {} tokens: {:.2}% of the {} window, {}",
        what,
        enc.name(),
        total as f64 / window as f64 * 100.0,
        fmt_u(window),
        if left >= 0 {
            format!("{} left", fmt_u(left as u64))
        } else {
            format!("OVER by {}", fmt_u(left.unsigned_abs()))
        }
    )
}

/// The route, the pressure bar, the threshold and the retained budget (or
/// why there is no policy).
fn print_pressure(o: &Out, r: &Report, total: f64) -> std::io::Result<()> {
    match &r.policy {
        Ok(p) => {
            let b = &p.budgets;
            let window = b.context_window as f64;
            let src = match p.logged_seq {
                Some(s) => format!("request/context seq {s}"),
                None => p.capacity.source.as_str().to_string(),
            };
            outln!(
                o,
                "route     {}{}",
                p.policy.target_key(),
                if p.policy.overridden {
                    "  (model policy)"
                } else {
                    ""
                }
            )?;
            let tone = if b.over_threshold(total) {
                Tone::Bad
            } else {
                Tone::Good
            };
            outln!(
                o,
                "pressure  {} {} of the {} window ({src})",
                paint(&bar(total / window, 30), tone),
                paint(&format!("{:.2}%", total / window * 100.0), tone),
                fmt_u(b.context_window)
            )?;
            outln!(
                o,
                "tokens    {} (DSH estimate) · threshold {} ({}%) · {} {}",
                fmt_tokens(total),
                fmt_u(b.threshold_tokens),
                Value::Num(round2(b.threshold_ratio * 100.0)).to_json(),
                if b.over_threshold(total) {
                    paint("OVER by", Tone::Bad)
                } else {
                    "headroom".to_string()
                },
                fmt_tokens(b.headroom(total).abs())
            )?;
            outln!(
                o,
                "retain    {} tokens kept verbatim when compacting",
                fmt_u(b.retain_tokens)
            )?;
        }
        Err(e) => {
            outln!(o, "tokens    {} (DSH estimate)", fmt_tokens(total))?;
            outln!(o, "policy    {e}")?;
        }
    }
    Ok(())
}

/// Where the figure is anchored: the provider's reported usage, or an estimate.
fn print_baseline(o: &Out, m: &dsh::meter::Measurement) -> std::io::Result<()> {
    let anchor = match (m.baseline.kind, m.anchor_seq) {
        (dsh::meter::BaselineKind::Usage, Some(s)) => {
            format!(
                "provider usage {} at assistant/message seq {s}",
                fmt_tokens(m.baseline.tokens)
            )
        }
        (dsh::meter::BaselineKind::Estimated, Some(s)) => format!(
            "estimate {} anchored at assistant/message seq {s}",
            fmt_tokens(m.baseline.tokens)
        ),
        (k, _) => format!("{} {}", k.as_str(), fmt_tokens(m.baseline.tokens)),
    };
    outln!(
        o,
        "baseline  {anchor}, surface delta {}{}",
        if m.surface_delta_tokens >= 0 { "+" } else { "" },
        m.surface_delta_tokens
    )?;
    Ok(())
}

/// `--nodes`: one row per surface node.
fn print_nodes(
    o: &Out,
    r: &Report,
    bpe: Option<&TokenCounts>,
    enc_head: Option<&str>,
) -> std::io::Result<()> {
    let m = &r.m;
    let mut head = vec!["pos", "seq", "type", "tokens"];
    if let Some(h) = &enc_head {
        head.push(h);
    }
    let mut t = render::table(&head);
    for (i, (n, k)) in m.nodes.iter().zip(&r.node_kinds).enumerate() {
        let mut row = vec![
            i.to_string(),
            n.seq.to_string(),
            kind_name(*k).to_string(),
            fmt_u(n.tokens),
        ];
        if let Some(b) = bpe {
            row.push(fmt_u(b.nodes[i].tokens));
        }
        t.add_row(row);
    }
    outln!(o, "{t}")?;
    Ok(())
}

// About 125 lines on purpose: the many-log table and its totals are built in the one loop over the results, in output order.
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

/// The many-log output: the JSON document, or the table, the policy
/// errors and the closing line (`counts`: measured, over the threshold,
/// refused).
fn print_many(
    ctx: &Ctx,
    json_rows: Vec<OwnedValue>,
    table: &render::table::Tbl,
    errors: &[String],
    counts: [u64; 3],
) -> Result<()> {
    let [measured, over_threshold, refused] = counts;
    if ctx.json {
        let summary = Value::obj()
            .with("logs", (json_rows.len() as u64).into())
            .with("measured", measured.into())
            .with("overThreshold", over_threshold.into())
            .with("refused", refused.into());
        ctx.print_json(
            &Value::obj()
                .with("logs", Value::Arr(json_rows))
                .with("summary", summary)
                .with("schema_version", SCHEMA_VERSION.into()),
        )?;
    } else {
        outln!(ctx.out, "{table}")?;
        for e in errors {
            outln!(ctx.out, "{e}")?;
        }
        outln!(ctx.out, "{}", over_line(over_threshold, measured, refused))?;
    }
    Ok(())
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

/// The route, window, %, threshold and headroom cells of a measured log.
fn policy_cells(policy: &Result<PolicyReport, String>, total: f64) -> [String; 5] {
    match policy {
        Ok(p) => {
            let b = &p.budgets;
            [
                p.policy.target_key(),
                fmt_u(b.context_window),
                format!("{:.2}%", total / b.context_window as f64 * 100.0),
                fmt_u(b.threshold_tokens),
                if b.over_threshold(total) {
                    format!("OVER {}", fmt_tokens(-b.headroom(total)))
                } else {
                    fmt_tokens(b.headroom(total))
                },
            ]
        }
        Err(_) => [
            "(no policy, below)".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ],
    }
}

/// `2 of 5 over the compaction threshold (1 refused, reasons on stderr)`.
fn over_line(over: u64, measured: u64, refused: u64) -> String {
    let mut s = format!("{over} of {measured} over the compaction threshold",);
    if refused > 0 {
        s.push_str(&format!(" ({refused} refused, reasons on stderr)"));
    }
    s
}

/// A log's path relative to the directory argument it was found under
/// (`dirs`: the arguments that are directories, found once, so that many
/// file arguments stay linear).
fn short_name(file: &str, dirs: &[&Path]) -> String {
    for dir in dirs {
        if let Ok(rest) = Path::new(file).strip_prefix(dir)
            && !rest.as_os_str().is_empty()
        {
            return rest.display().to_string();
        }
    }
    file.to_string()
}
