//! `dsh verify`: audit logs against every check of compaction spec §7.

use std::convert::Infallible;

use anyhow::Result;
use dsh::LogSource;
use dsh::doc::verify as doc;
use dsh::verify::{CheckId, Report, Verdict, VerifyOptions};

use crate::cli::ctx::Ctx;
use crate::cli::ctx::load_config;
use crate::cli::exit::{Status, UsageError};
use crate::cli::many::run_items;
use crate::cli::render::{self, verify as show};

/// Audit logs against every check of the compaction spec (all violations).
///
/// Runs every check of the compaction spec's §7 checklist and reports all
/// violations (not just the first), each with a stable check id, a severity,
/// the file, seq and line, and one sentence.
///
/// Checks: V-LOG-1…3 and V-ENV-1…4, V-SURF-1…5 (load boundary: the log is
/// refused), V-SESS-1…6 (turn/step enclosure, tool call/result pairing),
/// V-CMP-1…7 (compaction brackets), V-CMD-1…3 (command pairing), V-MTR-1…4
/// (the token meter cannot replay the log), all errors; V-MTR-5 (the
/// meter's projections drift from its measurement), V-PRV-1…13
/// (provenance the reference writers guarantee) and V-TAIL-1 (the log's end
/// is damaged: a torn last line or a cut last Zstandard frame, which writers
/// refuse until `dsh repair`), warnings. Error checks are
/// exactly those the reference enforces, so a log has violations for dsh
/// exactly when the reference's verification reports one or its meter cannot
/// replay the log. One streaming pass; V-PRV-10 then re-reads the two lines
/// of each prune pair and re-runs the pruner with the [pruner] budgets of the
/// dsh config (--config, else $DSH_CONFIG, else
/// $XDG_CONFIG_HOME/dsh/config.toml or ~/.config/dsh/config.toml; defaults
/// 8192/4096/1024 when there is none).
///
/// LOG may be a file, `-`, a session directory or id, or a directory tree
/// (every session under it); `--all` audits every session under $DSH_HOME.
/// Logs are checked in parallel; a bad file is reported and the rest go on.
///
/// Exit status: 0 clean, 1 violations (errors; with --deny-warnings also
/// warnings), 3 a log is unreadable or refused, 2 usage or a bad config.
///
/// `--list-checks` prints the full list with what each check requires.
///
/// With --json, one log prints `{"file", "session", "verdict", "checked", "violations",
/// "findings": [{"check","severity","section","package"?,"file","seq","line",
/// "synthetic","message"}], "counts": {"error","warning"}, "events",
/// "closers", "endSeedAppended", "loadWarnings", "schema_version"}`, where
/// `checked`/`violations` are the reference's shape (its first violation per
/// invariant package); a refused log prints `{"error", "kind", "stage",
/// "file", "line"?, "seq"?, "verdict": "refused", "findings", …}`. Several
/// logs print `{"logs": [those], "summary": {"logs","clean","violations",
/// "refused","errors","warnings"}, "verdict", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh verify session.jsonl\n  dsh verify                            # every session under $DSH_HOME\n  dsh verify --format github --deny-warnings logs/   # CI annotations\n  dsh verify --list-checks"
)]
pub struct VerifyArgs {
    /// Logs to audit; a directory or a working directory (`.`) means every
    /// session under it or of its project.
    #[arg(value_name = "LOG")]
    pub logs: Vec<String>,
    /// Audit every session under $DSH_HOME.
    #[arg(long)]
    pub all: bool,
    /// Output: a grouped report, JSON (same as --json), or GitHub workflow
    /// annotations (`::error file=…,line=…::…`).
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// Warnings count as violations (exit 1).
    #[arg(long)]
    pub deny_warnings: bool,
    /// Exit 0 even when violations are found (refused logs still exit 3),
    /// for report-only CI steps and comparisons with the reference, whose
    /// verification succeeds with a list of violations.
    #[arg(long)]
    pub exit_zero: bool,
    /// Logs checked at once (0: one per core).
    #[arg(long, short = 'j', default_value_t = 0, value_name = "N")]
    pub jobs: usize,
    /// Print every check (id, severity, spec section, reference package,
    /// what it requires) and exit.
    #[arg(long)]
    pub list_checks: bool,
    /// The dsh config file whose [pruner] budgets V-PRV-10 uses (default:
    /// $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else
    /// ~/.config/dsh/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Grouped, readable report.
    Human,
    /// One JSON document.
    Json,
    /// GitHub Actions workflow commands.
    Github,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &VerifyArgs) -> Result<Status> {
    let format = match (ctx.json, args.format) {
        (true, Format::Github) => {
            return Err(UsageError("--json and --format github exclude each other".into()).into());
        }
        (true, _) => Format::Json,
        (false, f) => f,
    };
    if args.list_checks {
        list_checks(ctx, format)?;
        return Ok(Status::Ok);
    }
    let many = ctx.as_many(&args.logs, args.all)?;
    let single = many.is_none();
    // What to audit: each a log, or an argument that did not resolve.
    let rows = ctx.resolve_rows(many.as_deref().unwrap_or(&args.logs))?;
    let config = load_config(args.config.as_deref())?;
    let options = VerifyOptions {
        pruner: config.pruner,
    };
    let opts = ctx.load_options();
    let job = |s: &LogSource| Ok::<_, Infallible>(dsh::verify::verify_with(s, &opts, &options));
    let reports: Vec<Report> = run_items(ctx, rows, args.jobs, "verifying", &job)
        .into_iter()
        .map(|row| match row {
            Ok((_, Ok(report))) => report,
            Ok((_, Err(never))) => match never {},
            Err((arg, e)) => Report::refused(arg, e),
        })
        .collect();

    let mut status = Status::Ok;
    for r in &reports {
        status = status.worst(match r.verdict(args.deny_warnings) {
            Verdict::Clean => Status::Ok,
            Verdict::Violations if args.exit_zero => Status::Ok,
            Verdict::Violations => Status::Findings,
            Verdict::Refused => Status::InvalidLog,
        });
    }
    if !ctx.quiet && format != Format::Json {
        for r in &reports {
            for n in &r.notes {
                eprintln!("{} {}: {n}", crate::cli::render::warning_tag(), r.file);
            }
        }
    }
    // A refusal's reason and what to do, on stderr as every command says it.
    if !ctx.quiet || format == Format::Json {
        for e in reports.iter().filter_map(|r| r.refusal.as_ref()) {
            ctx.say_load_error(e);
        }
    }
    match format {
        Format::Json => {
            if single {
                ctx.print_doc(&doc::One::of(&reports[0], args.deny_warnings))?;
            } else {
                ctx.print_doc(&doc::Many::of(&reports, args.deny_warnings))?;
            }
        }
        Format::Github => ctx
            .out
            .write_all(show::github(&reports, args.deny_warnings).as_bytes())?,
        Format::Human => {
            ctx.page();
            ctx.out.text(&show::human(
                &reports,
                args.deny_warnings,
                ctx.home.as_deref(),
            ))?
        }
    }
    Ok(status)
}

/// `--list-checks`.
fn list_checks(ctx: &Ctx, format: Format) -> Result<()> {
    if format == Format::Json {
        ctx.print_doc(&doc::Checks::all())?;
        return Ok(());
    }
    let mut t = render::table(&["check", "severity", "section", "requires"]);
    for c in CheckId::ALL {
        t.add_row(vec![
            c.as_str().to_string(),
            c.severity().to_string(),
            c.section().to_string(),
            c.title().to_string(),
        ]);
    }
    ctx.out.write_all(format!("{t}\n").as_bytes())?;
    Ok(())
}
