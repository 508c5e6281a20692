//! `dsh simulate`: replay a recorded session under other compaction policies.

use anyhow::Result;
use dsh::json::{OwnedValue, Value};
use dsh::policy::Retention;
use dsh::prune::PruneConfig;
use dsh::simulate::{Ranking, Row, SimOptions, SimPolicy, Simulation, SummarySize, SummarySource};

use crate::cli::ctx::{Ctx, SCHEMA_VERSION};
use crate::cli::exit::{Status, UsageError};
use crate::cli::render;
use crate::cli::render::outln;

/// The sentence every report carries.
pub const OPEN_LOOP: &str = "Open-loop replay: the agent's behaviour is taken as recorded; a different policy would have changed what the agent did next.";

/// Replay a recorded session under another compaction policy.
///
/// The log's model requests are walked in order. The simulated surface is the
/// recorded content (every event the agent appended) with the simulated
/// policy's own replacements instead of the recorded ones. Before each step
/// the reference's automatic path runs as `dsh compact --mode pressure` would:
/// prune, then at or over the threshold select the range with the retain
/// budget and replace it with a summary (retries as the policy allows); a
/// request over the window where it is sent takes the overflow path (prune,
/// one maximal bracket, up to maxOverflowRetries times). Every attempt is a
/// request, sized where it was sent (the log before its first record:
/// `dsh measure --at SEQ-1`), failed ones included; the recorded row counts
/// attempts refused with CONTEXT_WINDOW_EXCEEDED as overflows and names
/// each bracket's mode (p/o/m: pressure, overflow, manual). Cache misses
/// follow the DeepSeek prefix-unit rule of `dsh cache`, priced with the
/// table of `dsh usage`; costs sum what is priced (unpricedRequests counts
/// the rest). With --tokenizer deepseek-v4 each request is also counted as
/// DeepSeek renders it (a placeholder log's hidden head estimated as in
/// `dsh cache`): that count judges overflows and positions the cache, and
/// each row gives it as `provider`; thresholds stay on DSH's estimate.
///
/// Summaries are sized like the recorded ones (their checkpoint ÷ shadowed
/// tokens; a recorded range keeps its recorded checkpoint), else by
/// --summary-tokens / --summary-ratio, else the policy's summary cap.
///
/// The first row is the recorded run. --sweep gives a grid and marks (*) the
/// cheapest policy that never overflows: by total cost when every row has
/// one, else by cache-missed plus summariser tokens (cheapestBy says which).
/// With --json: `{"file", "session", "summary": {"source", "ratio"?,
/// "tokens"?}, "tokenizer", "hiddenPrefix", "rows": [{"label", "recorded", "thresholdRatio",
/// "retainTokens", "contextWindow", "requests", "compactions",
/// "compactionModes", "failedAttempts", "inheritedRequests", "prunes",
/// "overflows", "unrecovered", "peakPressure", "meanPressure",
/// "billedInputTokens", "cacheMissedTokens", "cacheHitTokens", "missCost",
/// "hitCost", "summariserTokens", "summariserCost", "totalCost",
/// "unpricedRequests", "summariserCalls", "currency",
/// "aboveThresholdAfter", "unbalanced", "provider", "notes", "steps"?}], "cheapest",
/// "cheapestBy", "note", "schema_version"}`. Details: docs/simulate.md.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh simulate session.jsonl                          # recorded vs the default policy\n  dsh simulate --threshold-ratio 0.6 --retain-ratio 0.1 session.jsonl\n  dsh simulate --no-prune --steps session.jsonl       # pressure before/after each compaction\n  dsh simulate --sweep threshold=0.5:0.9:0.1,retain=0.08:0.24:0.08 session.jsonl\n  dsh simulate --context-window 64000 --summary-tokens 2000 --json session.jsonl\n  dsh simulate --tokenizer deepseek-v4 session.jsonl  # overflows and cache in DeepSeek's tokens"
)]
pub struct SimulateArgs {
    /// Logs to replay; a directory or a working directory (`.`) means every
    /// session under it or of its project.
    #[arg(value_name = "LOG", required = true)]
    pub logs: Vec<String>,
    /// Threshold as a share of the window (≥ 1: never fires below the window).
    #[arg(long, value_name = "R")]
    pub threshold_ratio: Option<f64>,
    /// Retained tail as a share of the window.
    #[arg(long, value_name = "R", conflicts_with = "retain_tokens")]
    pub retain_ratio: Option<f64>,
    /// Retained tail in tokens.
    #[arg(long, value_name = "N")]
    pub retain_tokens: Option<u64>,
    /// The routed target's context window.
    #[arg(long, value_name = "N")]
    pub context_window: Option<u64>,
    /// Do not prune.
    #[arg(long, conflicts_with_all = ["threshold_chars", "head_chars", "tail_chars"])]
    pub no_prune: bool,
    /// Pruner: results longer than this many code points are pruned.
    #[arg(long, value_name = "N")]
    pub threshold_chars: Option<u64>,
    /// Pruner: code points kept at the head.
    #[arg(long, value_name = "N")]
    pub head_chars: Option<u64>,
    /// Pruner: code points kept at the tail.
    #[arg(long, value_name = "N")]
    pub tail_chars: Option<u64>,
    /// Every simulated summary is this many tokens.
    #[arg(long, value_name = "N", conflicts_with = "summary_ratio")]
    pub summary_tokens: Option<u64>,
    /// Every simulated summary is this share of the tokens it shadows.
    #[arg(long, value_name = "R")]
    pub summary_ratio: Option<f64>,
    /// A grid: `threshold=FROM:TO:STEP,retain=FROM:TO:STEP`.
    #[arg(long, value_name = "GRID")]
    pub sweep: Option<String>,
    /// Per-step detail: pressure before and after each replacement.
    #[arg(long)]
    pub steps: bool,
    /// The dsh config file (policy, pruner, [[prices]]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Count requests as the provider does for overflows, cache and billed
    /// input (deepseek-v4: the request as DeepSeek renders it, in its
    /// tokens); compaction thresholds stay on DSH's estimate.
    #[arg(long, value_name = "ENCODING", value_parser = ["o200k", "cl100k", "deepseek-v4"])]
    pub tokenizer: Option<String>,
}

fn range(spec: &str) -> Result<Vec<f64>, UsageError> {
    let bad = || UsageError(format!("--sweep: {spec:?} must be FROM:TO:STEP"));
    let p: Vec<f64> = spec
        .split(':')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let [from, to, step] = p[..] else {
        return Err(bad());
    };
    if !(step > 0.0 && from > 0.0 && to >= from) {
        return Err(bad());
    }
    let n = ((to - from) / step + 1e-9).floor() as usize + 1;
    if n > 200 {
        return Err(UsageError("--sweep: at most 200 values per axis".into()));
    }
    Ok((0..n)
        .map(|i| ((from + step * i as f64) * 1e6).round() / 1e6)
        .collect())
}

fn sweep(spec: &str, base: &SimPolicy) -> Result<Vec<SimPolicy>, UsageError> {
    let (mut ts, mut rs) = (None, None);
    for part in spec.split(',') {
        match part.split_once('=') {
            Some(("threshold", r)) => ts = Some(range(r)?),
            Some(("retain", r)) => rs = Some(range(r)?),
            _ => {
                return Err(UsageError(format!(
                    "--sweep: {part:?}: expected threshold=FROM:TO:STEP or retain=FROM:TO:STEP"
                )));
            }
        }
    }
    let ts: Vec<Option<f64>> = ts.map_or(vec![base.threshold_ratio], |v| {
        v.into_iter().map(Some).collect()
    });
    let rs: Vec<Option<Retention>> = rs.map_or(vec![base.retention], |v| {
        v.into_iter().map(|r| Some(Retention::Ratio(r))).collect()
    });
    let mut out = Vec::new();
    for t in &ts {
        for r in &rs {
            if let (Some(t), Some(Retention::Ratio(r))) = (t, r)
                && r >= t
            {
                continue;
            }
            out.push(SimPolicy {
                threshold_ratio: *t,
                retention: *r,
                ..base.clone()
            });
        }
    }
    Ok(out)
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &SimulateArgs) -> Result<Status> {
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let prices = config.price_table();
    let pc = config.pruner;
    let pruner =
        (args.threshold_chars.is_some() || args.head_chars.is_some() || args.tail_chars.is_some())
            .then(|| PruneConfig {
                threshold_chars: args.threshold_chars.unwrap_or(pc.threshold_chars),
                head_chars: args.head_chars.unwrap_or(pc.head_chars),
                tail_chars: args.tail_chars.unwrap_or(pc.tail_chars),
            });
    let base = SimPolicy {
        threshold_ratio: args.threshold_ratio,
        retention: match (args.retain_ratio, args.retain_tokens) {
            (Some(r), _) => Some(Retention::Ratio(r)),
            (_, Some(n)) => Some(Retention::Tokens(n)),
            _ => None,
        },
        pruner,
        no_prune: args.no_prune,
    };
    let policies = match &args.sweep {
        Some(s) => sweep(s, &base)?,
        None => vec![base],
    };
    if let Some(r) = args.summary_ratio
        && !(r.is_finite() && r > 0.0)
    {
        return Err(UsageError("--summary-ratio must be a positive number".into()).into());
    }
    let tokenizer = match args.tokenizer.as_deref() {
        None => None,
        Some(t) => Some(
            dsh::meter::tokenizer::Encoding::parse(t)
                .ok_or_else(|| UsageError(format!("unknown tokenizer {t:?}")))?,
        ),
    };
    let opts = SimOptions {
        tokenizer,
        policies,
        context_window: args.context_window,
        summary: match (args.summary_tokens, args.summary_ratio) {
            (Some(n), _) => Some(SummarySize::Tokens(n)),
            (_, Some(r)) => Some(SummarySize::Ratio(r)),
            _ => None,
        },
        config,
    };
    let load = ctx.load_options();
    let mut docs = Vec::new();
    // A directory or a working directory means every log it names.
    let mut sources = Vec::new();
    let mut many = args.logs.len() > 1;
    for arg in &args.logs {
        if dsh::log::lookup::is_tree(arg, ctx.home.as_deref()) {
            many = true;
            sources.extend(ctx.resolve_many(std::slice::from_ref(arg))?);
        } else {
            sources.push(ctx.resolve_rereadable(arg)?);
        }
    }
    for src in sources {
        let started = std::time::Instant::now();
        let sim = match dsh::simulate::simulate(&src, &load, &opts, &prices) {
            Ok(s) => s,
            Err(dsh::simulate::SimError::Load(e)) => return Ok(ctx.report_load_error(&e)),
            Err(dsh::simulate::SimError::Policy(m)) => return Err(UsageError(m).into()),
            Err(dsh::simulate::SimError::Meter(e)) => {
                eprintln!(
                    "{} {}: {e} (seq {})",
                    render::error_tag(),
                    src.display(),
                    e.seq()
                );
                if ctx.json {
                    ctx.print_json(
                        &Value::obj()
                            .with("error", e.to_string().into())
                            .with("kind", "replay".into())
                            .with("stage", "measure".into())
                            .with("file", src.display().into())
                            .with("seq", e.seq().into())
                            .with("schema_version", SCHEMA_VERSION.into()),
                    )?;
                }
                return Ok(Status::InvalidLog);
            }
        };
        let elapsed = started.elapsed();
        if ctx.json {
            docs.push(sim_json(&src.display(), &sim, args.steps));
        } else {
            human(ctx, &src.display(), &sim, args.steps, elapsed)?;
        }
    }
    if ctx.json {
        let v = if !many && docs.len() == 1 {
            docs.pop().unwrap_or(Value::Null)
        } else {
            Value::obj().with("logs", Value::Arr(docs))
        };
        ctx.print_json(&v.with("schema_version", SCHEMA_VERSION.into()))?;
    }
    Ok(Status::Ok)
}

fn summary_line(s: SummarySource) -> String {
    match s {
        SummarySource::RecordedRatio(r) => {
            format!(
                "summaries sized as the recorded ones ({:.1}% of the tokens they shadow)",
                r * 100.0
            )
        }
        SummarySource::Tokens(n) => {
            format!("summaries of {} tokens (--summary-tokens)", render::num(n))
        }
        SummarySource::Ratio(r) => format!(
            "summaries at {:.1}% of the tokens they shadow (--summary-ratio)",
            r * 100.0
        ),
        SummarySource::Cap => {
            "no recorded summary: every summary at the policy's summary token cap".into()
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn human(
    ctx: &mut Ctx,
    file: &str,
    sim: &Simulation,
    steps: bool,
    elapsed: std::time::Duration,
) -> Result<()> {
    outln!(ctx.out, "session {}  ({file})", sim.session)?;
    outln!(ctx.out, "{}", summary_line(sim.summary))?;
    let cheapest = sim.cheapest();
    let tok = sim.tokenizer.map(|e| e.name());
    let t = policy_table(sim, cheapest.map(|c| c.0), tok);
    outln!(ctx.out, "{}", t.fitted(render::table::width()))?;
    if let Some((_, by)) = cheapest {
        let by = match by {
            Ranking::Cost => "ranked by total cost",
            Ranking::Tokens => "a row has no cost: ranked by cache-missed plus summariser tokens",
        };
        outln!(ctx.out, "* the cheapest policy that never overflows ({by})")?;
    }
    let unpriced = sim
        .rows
        .iter()
        .map(|r| r.unpriced_requests)
        .max()
        .unwrap_or(0);
    if unpriced > 0 {
        outln!(
            ctx.out,
            "¹ up to {} requests (agent or summariser) have no known price for their route at their time: costs sum the priced ones (`dsh usage --prices`)",
            render::num(unpriced as u64)
        )?;
    }
    for r in &sim.rows {
        row_details(ctx, r, steps)?;
    }
    outln!(
        ctx.out,
        "cmp: compaction brackets, p/o/m: of them pressure/overflow/manual; ovf: requests over the window where they were sent (recorded: or refused with CONTEXT_WINDOW_EXCEEDED); cost: cache misses and hits at the route's rates plus the summariser calls; billed in: the sum of the request sizes (DSH's estimate)."
    )?;
    if let Some(tok) = tok {
        outln!(
            ctx.out,
            "{tok}: ovf, missed, cost and the provider columns count each request as the provider does ({tok} tokens); peak, mean and billed in are DSH's estimate, which the compaction threshold is judged by."
        )?;
    }
    if let Some(h) = &sim.hidden_prefix {
        outln!(ctx.out, "{}", crate::cli::render::hidden::hidden_line(h))?;
    }
    outln!(ctx.out, "{OPEN_LOOP}")?;
    if !ctx.quiet {
        eprintln!("replayed in {:.2}s", elapsed.as_secs_f64());
    }
    Ok(())
}

/// One row per policy; the provider's columns with a tokenizer.
fn policy_table(sim: &Simulation, best: Option<usize>, tok: Option<&str>) -> render::table::Tbl {
    let mut head = vec![
        "policy",
        "cmp",
        "p/o/m",
        "prune",
        "ovf",
        "peak",
        "mean",
        "billed in",
        "missed",
        "summ.",
        "cost",
    ];
    if tok.is_some() {
        head.splice(7..7, ["peak (provider)", "billed (provider)"]);
    }
    let mut t = render::table(&head);
    t.drop_first(&["mean", "p/o/m", "summ.", "billed in", "billed (provider)"]);
    for (i, r) in sim.rows.iter().enumerate() {
        let mark = if Some(i) == best { " *" } else { "" };
        let mut cells = vec![
            format!("{}{mark}", r.label),
            render::num(r.compactions as u64),
            modes(r),
            render::num(r.prunes as u64),
            render::num(r.overflows as u64),
            pct(r.peak_pressure),
            pct(r.mean_pressure),
            render::num(r.billed_input as u64),
            render::num(r.cache_missed),
            render::num(r.summariser_tokens as u64),
            format!(
                "{}{}",
                render::usd(r.total_cost),
                if r.unpriced_requests > 0 { " ¹" } else { "" }
            ),
        ];
        if tok.is_some() {
            let p = r.provider.unwrap_or_default();
            cells.splice(7..7, [pct(p.peak_pressure), render::num(p.billed_input)]);
        }
        t.add_row(cells);
    }
    t
}

/// A policy's first notes and, with --steps, its compactions and prunes.
fn row_details(ctx: &mut Ctx, r: &Row, steps: bool) -> Result<()> {
    for n in r.notes.iter().take(2) {
        outln!(ctx.out, "{}: {n}", r.label)?;
    }
    if r.notes.len() > 2 {
        outln!(
            ctx.out,
            "{}: … {} more notes (--json)",
            r.label,
            r.notes.len() - 2
        )?;
    }
    if steps {
        let mut t = render::table(&[
            "request", "seq", "what", "before", "after", "shadowed", "tokens",
        ]);
        for s in &r.steps {
            let w = r.context_window.unwrap_or(0).max(1) as f64;
            t.add_row(vec![
                s.request.to_string(),
                s.request_seq.to_string(),
                s.kind.as_str().to_string(),
                pct(s.tokens_before / w),
                pct(s.tokens_after / w),
                shadow_range(&s.shadowed),
                render::num(s.shadowed_tokens),
            ]);
        }
        if !r.steps.is_empty() {
            outln!(ctx.out, "{}:", r.label)?;
            outln!(ctx.out, "{}", t.fitted(render::table::width()))?;
        }
    }
    Ok(())
}

/// Compactions by mode: pressure/overflow/manual.
fn modes(r: &Row) -> String {
    let m = r.compaction_modes;
    format!("{}/{}/{}", m.pressure, m.overflow, m.manual)
}

fn shadow_range(s: &[u64]) -> String {
    let show = |x: u64| {
        if x >= 1 << 48 {
            format!("sim{}", x - (1 << 48))
        } else {
            x.to_string()
        }
    };
    match s {
        [] => "—".into(),
        [a] => show(*a),
        [a, .., b] => format!("{}–{} ({})", show(*a), show(*b), s.len()),
    }
}

fn opt_f(x: Option<f64>) -> OwnedValue {
    x.map_or(Value::Null, Value::from)
}

fn row_json(r: &Row, steps: bool) -> OwnedValue {
    let mut v = Value::obj()
        .with("label", r.label.clone().into())
        .with("recorded", r.policy.is_none().into())
        .with("thresholdRatio", opt_f(r.threshold_ratio))
        .with(
            "retainTokens",
            r.retain_tokens.map_or(Value::Null, Value::from),
        )
        .with(
            "contextWindow",
            r.context_window.map_or(Value::Null, Value::from),
        )
        .with("requests", (r.requests as u64).into())
        .with("compactions", (r.compactions as u64).into())
        .with(
            "compactionModes",
            Value::obj()
                .with("pressure", (r.compaction_modes.pressure as u64).into())
                .with("overflow", (r.compaction_modes.overflow as u64).into())
                .with("manual", (r.compaction_modes.manual as u64).into()),
        )
        .with("failedAttempts", (r.failed as u64).into())
        .with("inheritedRequests", (r.inherited_requests as u64).into())
        .with("prunes", (r.prunes as u64).into())
        .with("overflows", (r.overflows as u64).into())
        .with("unrecovered", (r.unrecovered as u64).into())
        .with("peakPressure", r.peak_pressure.into())
        .with("meanPressure", r.mean_pressure.into())
        .with("billedInputTokens", r.billed_input.into())
        .with("cacheMissedTokens", r.cache_missed.into())
        .with("cacheHitTokens", r.cache_hit.into())
        .with("missCost", opt_f(r.miss_cost))
        .with("hitCost", opt_f(r.hit_cost))
        .with("summariserTokens", r.summariser_tokens.into())
        .with("summariserCost", opt_f(r.summariser_cost))
        .with("totalCost", opt_f(r.total_cost))
        .with("unpricedRequests", (r.unpriced_requests as u64).into())
        .with("summariserCalls", (r.summariser_calls as u64).into())
        .with("currency", r.currency.map_or(Value::Null, |c| c.into()))
        .with("aboveThresholdAfter", (r.above_after as u64).into())
        .with(
            "provider",
            r.provider.map_or(Value::Null, |p| {
                Value::obj()
                    .with("billedInputTokens", p.billed_input.into())
                    .with("peakPressure", p.peak_pressure.into())
                    .with("meanPressure", p.mean_pressure.into())
            }),
        )
        .with("unbalanced", (r.unbalanced as u64).into())
        .with(
            "notes",
            Value::Arr(r.notes.iter().map(|n| n.clone().into()).collect()),
        );
    if steps {
        let s: Vec<OwnedValue> = r
            .steps
            .iter()
            .map(|s| {
                Value::obj()
                    .with("kind", s.kind.as_str().into())
                    .with("request", (s.request as u64).into())
                    .with("requestSeq", s.request_seq.into())
                    .with("tokensBefore", s.tokens_before.into())
                    .with("tokensAfter", s.tokens_after.into())
                    .with("shadowedSeqs", s.shadowed.clone().into())
                    .with("shadowedTokens", s.shadowed_tokens.into())
                    .with("replacementTokens", s.replacement_tokens.into())
            })
            .collect();
        v = v.with("steps", Value::Arr(s));
    }
    v
}

fn sim_json(file: &str, sim: &Simulation, steps: bool) -> OwnedValue {
    let mut summary = Value::obj().with("source", sim.summary.as_str().into());
    match sim.summary {
        SummarySource::RecordedRatio(r) | SummarySource::Ratio(r) => {
            summary = summary.with("ratio", r.into())
        }
        SummarySource::Tokens(n) => summary = summary.with("tokens", n.into()),
        SummarySource::Cap => {}
    }
    Value::obj()
        .with("file", file.to_string().into())
        .with("session", sim.session.clone().into())
        .with("summary", summary)
        .with("tokenizer", sim.tokenizer.map(|e| e.name()).into())
        .with(
            "hiddenPrefix",
            crate::cli::render::hidden::hidden_json(&sim.hidden_prefix),
        )
        .with(
            "rows",
            Value::Arr(sim.rows.iter().map(|r| row_json(r, steps)).collect()),
        )
        .with(
            "cheapest",
            sim.cheapest().map_or(Value::Null, |c| (c.0 as u64).into()),
        )
        .with(
            "cheapestBy",
            sim.cheapest().map_or(Value::Null, |c| c.1.as_str().into()),
        )
        .with("note", OPEN_LOOP.into())
}
