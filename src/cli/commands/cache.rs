//! `dsh cache`: why each model request missed the provider's prompt cache,
//! and what each replacement cost.

use anyhow::Result;
use dsh::LogSource;
use dsh::cache::{AnthropicRule, Breakpoints, CacheOptions, CacheReport, DeepSeekRule, Ttl};
use dsh::meter::tokenizer::Encoding;

use dsh::doc::cache::Cache;

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::many::run_many;
use crate::cli::render;
use crate::cli::render::cache::{print_many, print_one};

/// Show what each model request could reuse from the provider's prompt cache.
///
/// Every `assistant/message` is one model request: the folded request header
/// (system prompt, tools) plus the surface as it stood when its attempt
/// began. For each request: its prompt size, the first position that differs
/// from what the previous request left in the cache (its prompt plus its
/// output), down to the content block (`TOKENS @ pos P #B`, `#B.I` for item
/// I of a tool result, `@ system`, `@ tools:NAME`), the cause (append,
/// compaction at seq S, prune at seq S, a header change naming system or
/// tools, image offload, route change, new lifecycle after
/// `session/end-seed`, first request, idle beyond the cache's lifetime when
/// the log's times are real: --lifetime, or on Anthropic routes the shortest
/// breakpoint TTL), the old tokens sent again after that position
/// ("recomputed"), and the cache hit the route's rule predicts next to the
/// `cacheReadTokens` the provider reported: DeepSeek's prefix units (at the
/// end of every request's input and output and at detected common
/// prefixes, matched whole, rounded down to --block tokens), or on
/// Anthropic routes Anthropic's breakpoints (--anthropic-breakpoints).
///
/// Anthropic's prompt is tools → system → messages (so a system-prompt
/// change keeps an entry at the tools, and a tools change loses everything).
/// Each `cache_control` breakpoint writes the prefix up to it (from 1,024
/// tokens) as an entry living 5 minutes or, with `:1h`, an hour after its
/// last use; each reads the longest live entry ending at it or up to 20
/// blocks (tools, system, one per message) before it, and every read
/// refreshes. Writes are 1-hour from the hit to the last 1-hour breakpoint,
/// 5-minute from there to the last one; priced at 2× and 1.25× the base
/// input, hits at 0.1×. Places: `tools`, `system`, `first-user` (the first
/// user or tool-result message), `prev-user` (the one before the last),
/// `last` (the last message); at most 4, longer TTLs first. For each compaction and
/// prune: the tokens it made the next request recompute, the summariser's
/// usage, the prompt tokens it saved on every later request and when it paid
/// for itself ("break-even"). Positions use the meter's heuristic, or
/// --tokenizer for exact BPE counts; the reported prompt size is shown beside
/// (calibration).
///
/// Predictions are what the rule implies, not the provider's bill: the
/// provider decides what it keeps. Costs need a dated price table; without a
/// price the cost columns show `—`. Prices come from the dated price table
/// of `dsh usage` (built in, plus [[prices]] from the config): a request's
/// prompt costs its hit × the hit rate, its cache writes × their rates and
/// the rest × the uncached rate; a replacement costs its recomputed tokens ×
/// (the rate they are billed at − the hit rate: written ones at their write
/// rate, the others uncached) plus its summariser call, and saves its saved
/// tokens × the hit rate; a cause's misses cost their writes and uncached
/// input. A request whose price needs a time the log does not record
/// (normalised times, DeepSeek's peak hours) has no price; totals sum the
/// priced requests and count the rest (unpricedRequests, a footnote).
///
/// LOG may be a file, `-`, a session directory or id, or a directory tree;
/// with no LOG every session under $DSH_HOME is analysed, one row per log,
/// then the misses by cause across them. Several logs share one provider
/// cache (DeepSeek's is per account, keyed by prefix): requests are ordered
/// by time across them and may hit what an earlier session left, for
/// --cross-session-lifetime after its last use (an assumption); such a
/// first request's cause is `cross-session`. One log alone cannot see those
/// hits, and says so.
///
/// A failed attempt is a request too when the provider received it (it
/// streamed something, or failed with EMPTY_RESPONSE, MALFORMED_RESPONSE,
/// STREAM_CLOSED or LLM_STREAM_IDLE_TIMEOUT): DeepSeek keeps the prompt it
/// read. Attempts refused before any answer are counted apart.
///
/// A fork child's inherited seed holds its parent's requests: they are shown
/// `inherited` and left out of totals, and the child's first own request,
/// which starts on what the parent left in the cache (same route; the same
/// account is assumed), has the cause `fork of <parent>`.
///
/// --calibrate rescales every token figure of a session by its measured
/// ratio of reported to computed prompt size (said in the output and in
/// `"calibrated"`); by default figures are dsh's own.
///
/// With --json, one log prints `{"file", "session", "timesReal",
/// "attemptsNotSent", "calibrated", "tokenizer", "rule", "requests": [{"index","seq",
/// "failed","turn","step","route",
/// "promptTokens","messages","firstChanged": {"tokens","segment","block",
/// "blockTokens","seq"?,"position"?}|null,"cause": {"kind","seq"?,"part"?,"from"?,"to"?},
/// "headerChanges","freshTokens","recomputedTokens","predictedHit","rule",
/// "predicted": {"deepseek","anthropic": {"hit","write","write5m","write1h"}},
/// "predictedMiss","predictedCost": {"hit","write","uncached","total",
/// "currency"}|null,"reported": {…}|null,"idle"}], "replacements": [{"seq",
/// "kind","position","shadowedTokens","replacementTokens","nextRequest",
/// "recomputedTokens","recomputedWrite5m","recomputedWrite1h","coveredBy",
/// "summary","savedTokens","savedRequests","supersededBy","breakEven",
/// "cost": {"recompute","recomputeWrite","summary","saved","breakEven",
/// "currency"}|null}], "totals": {…,"predictedWrite5m","predictedWrite1h",
/// "predictedCost","byCause"}, "note", "hiddenPrefix" (with --tokenizer deepseek-v4:
/// {"placeholders","tokens","seq","reported","computed","without"} or null),
/// "schema_version"}`;
/// several print `{"logs": [those], "summary": {"logs","errors","totals"},
/// "note", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh cache session.jsonl                 # requests, replacements, totals\n  dsh cache --by cause ~/.dsh/sessions    # which causes cost the most, across sessions\n  dsh cache --tokenizer deepseek-v4 --json s.jsonl   # positions in DeepSeek's own tokens\n  dsh cache --lifetime 5m session.jsonl   # idle gaps beyond 5 minutes expire the cache\n  dsh cache --anthropic-breakpoints last s.jsonl\n      # one 5-minute breakpoint on the last message (incremental caching)\n  dsh cache --anthropic-breakpoints tools:1h,system:1h,last s.jsonl\n      # tools and system kept an hour, the conversation 5 minutes\n  dsh cache --anthropic-breakpoints system:1h,first-user:1h,prev-user,last s.jsonl\n      # also the opening context, and the previous turn past the 20-block lookback"
)]
pub struct CacheArgs {
    /// Logs to analyse; a directory or a working directory (`.`) means every
    /// session under it or of its project (default: every session under
    /// $DSH_HOME).
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// Count positions with a real tokenizer instead of the heuristic
    /// (deepseek-v4: the request as DeepSeek renders it, in its tokens).
    #[arg(long, value_name = "ENCODING", value_parser = ["o200k", "cl100k", "deepseek-v4"])]
    pub tokenizer: Option<String>,
    /// Group: `cause` prints only the misses by cause.
    #[arg(long, value_name = "WHAT", value_parser = ["cause"])]
    pub by: Option<String>,
    /// Cache lifetime of an unused entry (e.g. 300s, 5m, 1h); idle gaps longer
    /// than this expire it, when the log's times are real. Default: never.
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::parse_duration)]
    pub lifetime: Option<u64>,
    /// With several logs (a home, a directory, many LOGs): how long a prefix
    /// one session left stays usable by another after its last use (e.g.
    /// 30m, 6h, 2d; 0 turns the cross-session cache off). DeepSeek's cache
    /// is per account and publishes no lifetime: this is an assumption.
    #[arg(long, value_name = "DURATION", value_parser = crate::cli::parse_duration, default_value = "6h")]
    pub cross_session_lifetime: u64,
    /// DeepSeek's storage granularity: hits are whole multiples of this.
    #[arg(long, value_name = "TOKENS", default_value_t = 128)]
    pub block: u64,
    /// Where the `cache_control` breakpoints of Anthropic requests sit:
    /// `none` (what DSH's adapters send: nothing is cached), or up to 4 of
    /// `tools`, `system`, `first-user`, `prev-user`, `last`, comma-separated,
    /// each with an optional TTL (`last:5m`, `tools:1h`). Anthropic's prompt
    /// is tools → system → messages, and longer TTLs must come first in it.
    /// Default: `anthropicBreakpoints` in the config's [cache], else none.
    #[arg(long, value_name = "LAYOUT", value_hint = clap::ValueHint::Other)]
    pub anthropic_breakpoints: Option<String>,
    /// The TTL of breakpoints given without one (here or in the config): 5m
    /// (the API's default) or 1h.
    #[arg(
        long,
        value_name = "TTL",
        default_value = "5m",
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::PossibleValuesParser::new(["5m", "1h"]),
            |s: String| Ttl::parse(&s).unwrap_or_default()
        )
    )]
    pub anthropic_ttl: Ttl,
    /// The dsh config file whose [[prices]] join the built-in price table and
    /// whose [cache] anthropicBreakpoints is the default layout (default:
    /// $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else
    /// ~/.config/dsh/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Rescale token positions and sizes by each session's measured ratio of
    /// the provider-reported prompt size to dsh's (over its requests with
    /// usage); the output says so. Sessions without usage stay unscaled.
    #[arg(long)]
    pub calibrate: bool,
    /// Logs analysed at once (0: one per core).
    #[arg(long, short = 'j', default_value_t = 0, value_name = "N")]
    pub jobs: usize,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &CacheArgs) -> Result<Status> {
    let encoding = match args.tokenizer.as_deref() {
        None => None,
        Some(t) => {
            Some(Encoding::parse(t).ok_or_else(|| UsageError(format!("unknown tokenizer {t:?}")))?)
        }
    };
    if args.block == 0 {
        return Err(UsageError("--block must be at least 1".into()).into());
    }
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let opts = CacheOptions {
        tokenizer: encoding,
        deepseek: DeepSeekRule {
            block: args.block,
            ..DeepSeekRule::default()
        },
        anthropic: AnthropicRule {
            breakpoints: breakpoints(args, &config)?,
            ..AnthropicRule::default()
        },
        lifetime_ms: args.lifetime,
        calibrate: args.calibrate,
        hidden_prefix: None,
    };
    let many = ctx.as_many(&args.logs, false)?;
    let single = many.is_none();
    let inputs = many.unwrap_or_else(|| args.logs.clone());
    // A LOG that names nothing is a refused row of a many-log report, as
    // in verify; alone, it is the refusal.
    let mut sources: Vec<LogSource> = Vec::new();
    let mut errors = Vec::new();
    for (arg, found) in inputs.iter().zip(ctx.resolve_each(&inputs)?) {
        match found {
            Ok(found) => sources.extend(found),
            Err(e) if single => return Ok(ctx.report_load_error(&e)),
            Err(e) => errors.push((arg.clone(), e)),
        }
    }
    let load = ctx.load_options();
    // The provider's own tokenizer makes positions absolute: a log that
    // hides its system prompt or tools gets the hidden part estimated.
    let estimate = encoding.is_some_and(|e| e == Encoding::DeepSeekV4);
    let job = |s: &LogSource| {
        if estimate {
            dsh::hidden_prefix::analyse(s, &load, &opts)
        } else {
            dsh::cache::analyse(s, &load, &opts).map(|r| (r, None))
        }
    };
    let results = run_many(ctx, &sources, args.jobs, "analysing", &job);
    let prices = config.price_table();
    if !ctx.quiet || ctx.json {
        for (_, e) in &errors {
            eprintln!("{} {}", render::error_tag(), ctx.describe_load_error(e));
        }
    }
    let (mut reports, hidden) = match collect(ctx, &sources, results, single, &mut errors) {
        Ok(r) => r,
        Err(refused) => return Ok(refused),
    };
    let status = Status::of_refusals(errors.len());
    let cross = (!single && reports.len() > 1 && args.cross_session_lifetime > 0)
        .then_some(args.cross_session_lifetime);
    if let Some(lt) = cross {
        dsh::cache::cross_session(&mut reports, lt);
    }
    let by_cause = args.by.is_some();
    if ctx.json {
        let doc = if single {
            Cache::one(&reports[0], &hidden[0], &prices)
        } else {
            Cache::many(&reports, &hidden, &errors, cross, &prices)
        };
        ctx.print_doc(&doc)?;
        return Ok(status);
    }
    ctx.page();
    if single {
        print_one(ctx, &reports[0], &hidden[0], by_cause, &prices)?;
    } else {
        print_many(ctx, &reports, errors.len(), cross, by_cause, &prices)?;
    }
    Ok(status)
}

/// Each log's report and hidden prefix, in order; a refused log's error is
/// said and added to `errors`, or, for a single LOG, is the answer (`Err`:
/// its status).
type Analysed = (CacheReport, Option<dsh::hidden_prefix::HiddenPrefix>);
fn collect(
    ctx: &Ctx,
    sources: &[LogSource],
    results: Vec<Result<Analysed, dsh::cache::CacheError>>,
    single: bool,
    errors: &mut Vec<(String, dsh::LoadError)>,
) -> std::result::Result<
    (
        Vec<CacheReport>,
        Vec<Option<dsh::hidden_prefix::HiddenPrefix>>,
    ),
    Status,
> {
    let mut reports = Vec::new();
    let mut hidden = Vec::new();
    for (src, r) in sources.iter().zip(results) {
        match r {
            Ok((rep, h)) => {
                hidden.push(h);
                if !ctx.quiet && !ctx.json {
                    for w in &rep.warnings {
                        eprintln!("{} {}: {w}", render::warning_tag(), rep.file);
                    }
                }
                reports.push(rep)
            }
            Err(dsh::cache::CacheError::Load(e)) => {
                if single {
                    return Err(ctx.report_load_error(&e));
                }
                if !ctx.quiet || ctx.json {
                    eprintln!("{} {e}", render::error_tag());
                }
                errors.push((src.display(), e));
            }
        }
    }
    Ok((reports, hidden))
}

/// The Anthropic breakpoints: the flag's, else the config's, else none.
fn breakpoints(args: &CacheArgs, config: &dsh::config::Config) -> Result<Breakpoints> {
    Ok(match &args.anthropic_breakpoints {
        Some(spec) => Breakpoints::parse(spec, args.anthropic_ttl)
            .map_err(|e| UsageError(format!("--anthropic-breakpoints {spec:?}: {e}")))?,
        None => match config.cache.anthropic_breakpoints.as_deref() {
            Some(spec) => Breakpoints::parse(spec, args.anthropic_ttl).map_err(|e| {
                UsageError(format!(
                    "config: [cache] anthropicBreakpoints {spec:?}: {e}"
                ))
            })?,
            None => Breakpoints::none(),
        },
    })
}
