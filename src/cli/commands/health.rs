//! `dsh health`: the sessions compaction is hurting, and what it cost.

use anyhow::Result;
use dsh::doc::error::LogRefusal;
use dsh::doc::health as doc;
use dsh::health::{HealthOptions, SessionHealth, Severity, Summary, Thresholds};
use dsh::sessions::{Refused, ScanOptions};

use crate::cli::ctx::Ctx;
use crate::cli::exit::Status;
use crate::cli::render::{self, Tone, outln};

/// Find what hurts sessions: compaction loops, lost context read again,
/// failed summaries, overflows, cache churn, stale locks, abandoned turns.
///
/// Reads every session under $DSH_HOME (default) or under the given homes,
/// directories or logs, in parallel, and lists per session its findings:
/// the kind, the severity (warn or error), the seqs of the events that
/// show it (`dsh events LOG` around them, `dsh view --at SEQ LOG`) and what
/// it cost in tokens and USD from the price table. Then the home-wide
/// summary: which kind costs most, which projects. Kinds and thresholds
/// are in docs/health.md.
///
/// Exit status: 0; 1 with --fail-on when a finding at or above that
/// severity was found; 3 when a log was refused (the others are read).
///
/// With --json: `{"sessions": [{"file", "session", "project", "worst",
/// "cost": {"tokens", "costUsd", "unpriced"}, "findings": [{"kind",
/// "severity", "seqs", "message", "cost"}]}], "refused": [{"file", "error",
/// …}], "summary": {"sessions", "withFindings", "findings", "errors",
/// "cost", "kinds": [{"kind", "findings", "errors", "sessions", "cost"}],
/// "projects": [{"project", "sessions", "withFindings", "findings",
/// "cost"}]}, "thresholds", "failOn", "schema_version"}`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh health                                  # every session under $DSH_HOME\n  dsh health --fail-on error ~/.dsh           # CI: exit 1 on an error finding\n  dsh health --loop-compactions 2 --loop-requests 5 LOG\n  dsh health --json | jq '.summary.kinds'"
)]
pub struct HealthArgs {
    /// DSH homes, directories of sessions or logs (default: $DSH_HOME).
    #[arg(value_name = "HOME|DIR|LOG")]
    pub paths: Vec<String>,
    /// Exit 1 when a finding of this severity or worse is found.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// compaction-loop: this many landed compactions…
    #[arg(long, value_name = "N", default_value_t = Thresholds::default().loop_compactions)]
    pub loop_compactions: u64,
    /// …within this many agent requests.
    #[arg(long, value_name = "M", default_value_t = Thresholds::default().loop_requests)]
    pub loop_requests: u64,
    /// lost-context-reread: only results of at least this many tokens.
    #[arg(long, value_name = "TOKENS", default_value_t = Thresholds::default().reread_min_tokens)]
    pub reread_min_tokens: u64,
    /// cache-churn: more prefix-breaking header changes than this.
    #[arg(long, value_name = "K", default_value_t = Thresholds::default().churn_breaks)]
    pub churn_breaks: u64,
    /// abandoned-turn: a turn open at the end counts after the log has been
    /// idle this long (300s, 30m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = crate::cli::parse_duration)]
    pub idle: u64,
    /// List sessions without findings too.
    #[arg(long)]
    pub all: bool,
    /// The dsh config file (routes' context windows and policies, [[prices]]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Logs read at once (0: one per core).
    #[arg(long, short, value_name = "N", default_value_t = 0)]
    pub jobs: usize,
}

/// `--fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Any finding.
    Warn,
    /// An error finding.
    Error,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Warn => Severity::Warn,
            FailOn::Error => Severity::Error,
        }
    }
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &HealthArgs) -> Result<Status> {
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let opts = HealthOptions {
        prices: config.price_table(),
        scan: ScanOptions {
            load: ctx.load_options(),
            no_meter: false,
            config,
        },
        thresholds: Thresholds {
            loop_compactions: args.loop_compactions,
            loop_requests: args.loop_requests,
            reread_min_tokens: args.reread_min_tokens,
            churn_breaks: args.churn_breaks,
            idle_ms: args.idle as i64,
        },
        now: Some(crate::cli::writes::now_ms() as i64),
    };
    let results =
        crate::cli::many::run_named(ctx, &args.paths, args.jobs, "checking sessions", &|s| {
            dsh::health::scan(s, &opts)
        })?;
    let (mut sessions, mut refused) = (Vec::new(), Vec::new());
    for r in results {
        match r {
            Ok((_, h)) => sessions.push(h),
            Err(r) => refused.push(r),
        }
    }
    let summary = dsh::health::summarise(&sessions);
    let failed = args.fail_on.is_some_and(|f| {
        sessions
            .iter()
            .any(|s| s.worst().is_some_and(|w| w >= f.severity()))
    });
    if ctx.json {
        print_json(ctx, args, &sessions, &refused, &summary, &opts.thresholds)?;
    } else {
        print_text(ctx, args, &sessions, &refused, &summary)?;
    }
    let findings = if failed { Status::Findings } else { Status::Ok };
    Ok(Status::of_refusals(refused.len()).worst(findings))
}

fn print_json(
    ctx: &Ctx,
    args: &HealthArgs,
    sessions: &[SessionHealth],
    refused: &[Refused],
    summary: &Summary,
    thresholds: &Thresholds,
) -> Result<()> {
    ctx.print_doc(&doc::Health {
        sessions: sessions
            .iter()
            .filter(|s| args.all || !s.findings.is_empty())
            .map(doc::Session::of)
            .collect(),
        refused: refused
            .iter()
            .map(|r| LogRefusal::of(&r.error, &r.file, true))
            .collect(),
        summary,
        thresholds: *thresholds,
        fail_on: args.fail_on.map(|f| f.severity()),
        schema_version: dsh::doc::SchemaVersion,
    })?;
    Ok(())
}

fn tone(s: Severity) -> Tone {
    match s {
        Severity::Error => Tone::Bad,
        Severity::Warn => Tone::Warn,
    }
}

fn usd(c: &dsh::health::Cost) -> String {
    let u = render::usd(Some(c.usd));
    if c.unpriced > 0 { format!("{u}+") } else { u }
}

fn seqs(v: &[u64]) -> String {
    let shown: Vec<String> = v.iter().take(8).map(u64::to_string).collect();
    let more = v.len().saturating_sub(8);
    if more > 0 {
        format!("{} …+{more}", shown.join(","))
    } else {
        shown.join(",")
    }
}

/// A log's name for a table: its session directory (the session id, cut
/// to 8 characters) for a `session.jsonl[.zstd]`, else its file name (JSON
/// has the path).
fn short_file(file: &str) -> String {
    let p = std::path::Path::new(file);
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
    match (name.as_deref(), p.parent().and_then(|d| d.file_name())) {
        (Some(n), Some(d)) if n.starts_with("session.") => {
            d.to_string_lossy().chars().take(8).collect()
        }
        (Some(n), _) => render::cut(n, 24),
        _ => file.to_string(),
    }
}

fn print_text(
    ctx: &mut Ctx,
    args: &HealthArgs,
    sessions: &[SessionHealth],
    refused: &[Refused],
    summary: &Summary,
) -> Result<()> {
    let o = &ctx.out;
    let mut t = render::table(&["session", "kind", "sev", "seqs", "tokens", "cost $", "what"]);
    t.drop_first(&["seqs", "tokens"]);
    for s in sessions {
        let name = short_file(&s.file);
        if s.findings.is_empty() && args.all {
            t.add_toned_row(vec![(name.clone(), None), ("—".into(), Some(Tone::Good))]);
        }
        for f in &s.findings {
            t.add_toned_row(vec![
                (name.clone(), None),
                (f.kind.as_str().into(), None),
                (f.severity.as_str().into(), Some(tone(f.severity))),
                (seqs(&f.seqs), None),
                (render::num_f64(f.cost.tokens), None),
                (usd(&f.cost), None),
                (f.message.clone(), None),
            ]);
        }
    }
    if summary.findings > 0 || args.all {
        outln!(o, "{t}")?;
    }
    outln!(
        o,
        "{} session(s) read, {} with findings: {} finding(s), {} error(s), {} tokens, {} USD",
        render::num(summary.sessions),
        render::num(summary.with_findings),
        render::num(summary.findings),
        render::num(summary.errors),
        render::num_f64(summary.cost.tokens),
        usd(&summary.cost)
    )?;
    if !summary.kinds.is_empty() {
        let mut k = render::table(&[
            "kind (costliest first)",
            "findings",
            "errors",
            "sessions",
            "tokens",
            "cost $",
        ]);
        for x in &summary.kinds {
            k.add_row(vec![
                x.kind.as_str().to_string(),
                render::num(x.findings),
                render::num(x.errors),
                render::num(x.sessions),
                render::num_f64(x.cost.tokens),
                usd(&x.cost),
            ]);
        }
        outln!(o, "{k}")?;
        let mut p = render::table(&["project", "sessions", "with findings", "findings", "cost $"]);
        for x in summary.projects.iter().take(10) {
            p.add_row(vec![
                x.project.clone().unwrap_or_else(|| "—".into()),
                render::num(x.sessions),
                render::num(x.with_findings),
                render::num(x.findings),
                usd(&x.cost),
            ]);
        }
        outln!(o, "{p}")?;
    }
    if summary.cost.unpriced > 0 {
        outln!(
            o,
            "cost: a + marks costs with parts that have no price (no entry for their model at their date); their tokens are counted"
        )?;
    }
    ctx.say_refused(refused, "")?;
    Ok(())
}
