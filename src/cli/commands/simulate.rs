//! `dsh simulate`: replay a recorded session under other compaction policies.

use anyhow::Result;
use dsh::doc::simulate::Simulate;
use dsh::policy::Retention;
use dsh::prune::PruneConfig;
use dsh::simulate::{SimError, SimOptions, SimPolicy, SummarySize};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::render;
use crate::cli::render::simulate::human;

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

/// The simulation's options from the flags and the config.
fn options(args: &SimulateArgs, config: dsh::config::Config) -> Result<SimOptions> {
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
        Some(s) => dsh::simulate::sweep(s, &base).map_err(|e| UsageError(e.to_string()))?,
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
    Ok(SimOptions {
        tokenizer,
        policies,
        context_window: args.context_window,
        summary: match (args.summary_tokens, args.summary_ratio) {
            (Some(n), _) => Some(SummarySize::Tokens(n)),
            (_, Some(r)) => Some(SummarySize::Ratio(r)),
            _ => None,
        },
        config,
    })
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &SimulateArgs) -> Result<Status> {
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let prices = config.price_table();
    let opts = options(args, config)?;
    let load = ctx.load_options();
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
    let mut runs = Vec::new();
    for src in sources {
        let started = std::time::Instant::now();
        let sim = match dsh::simulate::simulate(&src, &load, &opts, &prices) {
            Ok(s) => s,
            Err(SimError::Load(e)) => return Ok(ctx.report_load_error(&e)),
            Err(SimError::Policy(m)) => return Err(UsageError(m).into()),
            Err(SimError::Meter(e)) => {
                let file = src.display();
                eprintln!("{} {file}: {e} (seq {})", render::error_tag(), e.seq());
                if ctx.json {
                    ctx.print_doc(&dsh::doc::measure::replay_refusal(&e, &file))?;
                }
                return Ok(Status::InvalidLog);
            }
        };
        if ctx.json {
            runs.push((src.display(), sim));
        } else {
            human(ctx, &src.display(), &sim, args.steps, started.elapsed())?;
        }
    }
    if ctx.json {
        ctx.print_doc(&Simulate::new(&runs, args.steps, many))?;
    }
    Ok(Status::Ok)
}
