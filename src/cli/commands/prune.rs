//! `dsh prune`: the reference's tool-result pruner, appended to the log.

use std::path::PathBuf;

use anyhow::Result;
use dsh::append::{AppendTarget, Appender};
use dsh::json::Value;
use dsh::meter::tokenizer::Encoding;
use dsh::prune::{PruneConfig, PruneError};
use dsh::prune_write::{self, Outcome, PrepareError, Request};

use crate::cli::ctx::Ctx;
use crate::cli::ctx::load_config;
use crate::cli::exit::{Status, StatusError, UsageError};
use crate::cli::render::outp;
use crate::cli::render::prune::{Facts, print_readable, report_json};
use crate::cli::writes::{append_error, append_options, is_broken_pipe, now_ms, time_ms};

/// Prune oversized tool results exactly as the reference does, appended to the log.
///
/// The write is append-only, crash-safe and made under a writer lock. Every current tool/result whose text exceeds --threshold-chars code
/// points keeps its first --head-chars and last --tail-chars code points
/// around the marker "[... tool result middle pruned ...]"; each rewrite is
/// appended as a compaction/prune shadow-price event plus a content-only
/// tool/result replacement of that node.
///
/// The lifecycle of the write follows the log's tail, as for `dsh compact`:
///
/// * last turn open → the write continues that turn, as the live agent's
///   pre-step pruning does: no crash-repair closers, no session/end-seed;
///   the pairs land inside the open turn (the spec's worked example appends
///   exactly its seq 10–13).
///
/// * last turn closed → the reference prunes only inside an open turn, and
///   its session invariant rejects a replacement appended outside one, so
///   dsh refuses (exit 1) unless --allow-closed-turn is given. Then the write
///   starts a new lifecycle, as a resuming harness does (session/end-seed
///   first), and `dsh verify` will flag the result.
///
/// --resume starts a new lifecycle even on an open turn (its crash-repair
/// closers, then session/end-seed, then the pairs outside any turn): the
/// reference's pruneSession on a resumed session, which the reference's
/// own tooling reports; a write needs --allow-closed-turn too. --dry-run reports
/// a refusal but still shows the plan.
///
/// A log with a torn tail, a damaged region, or a live compaction lock is
/// refused (exit 4), as is one another dsh writer holds (unless --wait).
///
/// --dry-run stamps new events with the log's last event time (so the
/// output is reproducible and matches the reference's); a write stamps the current
/// time; --time overrides both.
///
/// Budgets: the [pruner] table of the dsh config (--config, else
/// $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml or
/// ~/.config/dsh/config.toml; the reference defaults 8192/4096/1024 when
/// there is none), each overridden by its flag; the combination must pass
/// the reference's checks (exit 2 otherwise).
///
/// Savings are DSH heuristic tokens (what the meter and compaction see);
/// --tokenizer o200k|cl100k (repeatable, or comma-separated) also counts
/// the same text with a real BPE encoding, before and after, per pruned
/// result and for the whole surface.
///
/// With --json: the reference's `{"config", "baseSeq", "appended",
/// "pruned", "charsRemoved"}` (its pruneSession on the session as it
/// resumes, whatever dsh's lifecycle), `"write": {"baseSeq", "appended"}`
/// (the pairs dsh appends, or would: the same pairs, at the seqs of the
/// lifecycle it writes in), `"lifecycle"` (`"continue"` or
/// `"resume"`), `"lifecycleEvents"` (closers and end-seed written first),
/// `"surfaceTokens": {"before","after","saved"}`,
/// `"openTurn"`, `"fileTurnOpen"`, `"refused"` (why a write does not or
/// would not happen, or null), `"dryRun"`, `"written"`, `"file"`, `"session"`,
/// `"events"`, `"bytes"`, `"configFile"` (the config read, or null),
/// `"tokenizers"` (with --tokenizer: `[{"encoding", "before", "after",
/// "saved", "pruned": [{"originalSeq", "before", "after"}]}]`, surface BPE
/// tokens), `"schema_version"`. With --dry-run --events: the
/// batch exactly as it would be appended, as JSON lines.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh prune -n session.jsonl            # show what would be pruned\n  dsh prune session.jsonl               # append the prune pairs\n  dsh prune --out pruned.jsonl session.jsonl"
)]
pub struct PruneArgs {
    /// The log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    #[arg(value_name = "LOG")]
    pub log: String,
    /// Show what would be appended; write nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Write a copy of the log with the appends to FILE (which must not
    /// exist) instead of touching the log.
    #[arg(long, value_name = "FILE", conflicts_with = "dry_run")]
    pub out: Option<PathBuf>,
    /// Prune a result whose text exceeds this many code points (reference
    /// `thresholdChars`; overrides the config's).
    #[arg(long, value_name = "N")]
    pub threshold_chars: Option<f64>,
    /// Code points kept at the head (reference `headChars`; overrides the
    /// config's).
    #[arg(long, value_name = "N")]
    pub head_chars: Option<f64>,
    /// Code points kept at the tail (reference `tailChars`; overrides the
    /// config's).
    #[arg(long, value_name = "N")]
    pub tail_chars: Option<f64>,
    /// The dsh config file whose [pruner] budgets apply (default:
    /// $DSH_CONFIG, else $XDG_CONFIG_HOME/dsh/config.toml, else
    /// ~/.config/dsh/config.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also count the tokens saved with a real BPE encoding (repeatable).
    #[arg(
        long,
        value_name = "ENCODING",
        value_parser = ["o200k", "cl100k", "deepseek-v4"],
        value_delimiter = ','
    )]
    pub tokenizer: Vec<String>,
    /// Write even though no turn is open at the end of the log (the result
    /// is a log the reference's session invariant flags).
    #[arg(long)]
    pub allow_closed_turn: bool,
    /// Start a new lifecycle even when the last turn is open (crash-repair
    /// closers and session/end-seed first, as the reference's resumed
    /// session; the pairs then land outside any turn).
    #[arg(long)]
    pub resume: bool,
    /// Wait up to SECONDS for another dsh writer to release the log.
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<f64>,
    /// Stamp appended events with this time (epoch milliseconds).
    #[arg(long, value_name = "MS")]
    pub time: Option<u64>,
    /// With --dry-run: print the batch as the JSON lines it would append.
    #[arg(long, requires = "dry_run")]
    pub events: bool,
    /// Test hook: pause this long between the steps of the write.
    #[arg(long, hide = true, value_name = "MS")]
    pub debug_write_pause_ms: Option<u64>,
}

/// The run's errors as exit statuses: an unreadable node is a load error,
/// content the pruner cannot rewrite an invalid log.
fn prepare_error(e: PrepareError) -> anyhow::Error {
    match e {
        PrepareError::Append(e) => append_error(e),
        PrepareError::Prune(PruneError::Read(le)) | PrepareError::Count(le) => le.into(),
        PrepareError::Prune(e) => StatusError {
            status: Status::InvalidLog,
            message: e.to_string(),
        }
        .into(),
    }
}

/// Run it.
/// The pruner's settings: the config's `[pruner]`, flags overriding.
fn pruner_config(args: &PruneArgs, config: &dsh::config::Config) -> Result<PruneConfig> {
    let base = config.pruner;
    let pick = |flag: Option<f64>, configured: u64| Value::from(flag.unwrap_or(configured as f64));
    let (t, h, l) = (
        pick(args.threshold_chars, base.threshold_chars),
        pick(args.head_chars, base.head_chars),
        pick(args.tail_chars, base.tail_chars),
    );
    Ok(
        PruneConfig::resolve(Some(&t), Some(&h), Some(&l))
            .map_err(|e| UsageError(e.to_string()))?,
    )
}

/// The `--tokenizer` encodings asked for, each once, in order.
fn tokenizers(args: &PruneArgs) -> Vec<Encoding> {
    args.tokenizer
        .iter()
        .filter_map(|e| Encoding::parse(e))
        .fold(Vec::new(), |mut v, e| {
            if !v.contains(&e) {
                v.push(e);
            }
            v
        })
}

/// Open the log for the write (or the dry run) `args` ask for.
fn open(ctx: &mut Ctx, args: &PruneArgs, cfg: &PruneConfig) -> Result<Appender> {
    let target = if args.dry_run {
        AppendTarget::DryRun
    } else if let Some(out) = &args.out {
        AppendTarget::Copy(out.clone())
    } else {
        AppendTarget::InPlace
    };
    let mut opts = append_options(ctx, args.wait, args.debug_write_pause_ms)?;
    // Nothing here looks at chunks (they change no surface, lock or turn):
    // they are counted, not built.
    opts.load.skip_chunk_events = true;
    // The results the plan reads again stay in memory when reading them
    // again would mean decompressing an artifact again.
    opts.load.keep_results_over = Some(cfg.threshold_chars);
    let src = ctx.resolve(&args.log)?;
    let mut noop = |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {};
    Appender::open(&src, target, &opts, &mut noop).map_err(append_error)
}

pub fn run(ctx: &mut Ctx, args: &PruneArgs) -> Result<Status> {
    let config = load_config(args.config.as_deref())?;
    let cfg = pruner_config(args, &config)?;
    let mut app = open(ctx, args, &cfg)?;
    ctx.warn_all(app.log());
    let time = match args.time {
        Some(t) => time_ms(t)?,
        None if args.dry_run => app.log().last_time,
        None => now_ms(),
    };
    let req = Request {
        resume: args.resume,
        allow_closed_turn: args.allow_closed_turn,
        time,
        encodings: tokenizers(args),
    };
    let mut run = prune_write::prepare(&mut app, &cfg, &req).map_err(prepare_error)?;
    let (status, written, bytes) = match run.write(&mut app, args.dry_run).map_err(append_error)? {
        Outcome::Nothing => (Status::Ok, false, 0),
        Outcome::Checked { bytes } => (Status::Ok, false, bytes),
        Outcome::Written { bytes } => (Status::Ok, true, bytes),
        Outcome::Busy(why) => {
            return Err(StatusError {
                status: Status::Busy,
                message: format!("{}: refusing to prune: {why}", app.log().source.display()),
            }
            .into());
        }
        Outcome::Refused(why) => {
            if !ctx.json {
                eprintln!(
                    "dsh: {}: refusing to prune: {why}",
                    app.log().source.display()
                );
            }
            (Status::Findings, false, 0)
        }
    };
    let mut wrote_to = None;
    let file = app.log().source.display();
    let session = app.log().header.id.clone();
    let turn_open = app.turn_open();
    let file_turn_open = app.file_turn_open();
    if written {
        wrote_to = app.finish().map_err(append_error)?;
    }
    let events = run.batch.len();
    let (plan, appended, prefix) = (&run.plan, run.appended(), &run.prefix[..]);
    let report = || -> Result<()> {
        if args.events {
            // The batch as it would be appended: JSON lines, for programs.
            ctx.out.set_bytes();
            let mut out = String::new();
            for e in &run.batch {
                out.push_str(&e.value.to_json());
                out.push('\n');
            }
            outp!(ctx.out, "{out}")?;
            return Ok(());
        }
        if ctx.json {
            let outcome = Facts {
                file: &file,
                refused: &run.refused,
                session: &session,
                written,
                out: wrote_to.as_ref().filter(|_| args.out.is_some()),
                events: events as u64,
                bytes,
                turn_open,
                file_turn_open,
                lifecycle: run.lifecycle,
                dry_run: args.dry_run,
                allow_closed_turn: args.allow_closed_turn,
            };
            let v = report_json(
                (plan, appended),
                run.reference.as_ref(),
                prefix,
                &run.bpe,
                &outcome,
                config.path.as_deref(),
            );
            ctx.print_doc(&v)?;
            return Ok(());
        }
        print_readable(
            &ctx.out,
            (plan, appended),
            &run.bpe,
            prefix,
            &file,
            (args.dry_run, args.out.is_some()),
            written,
            wrote_to.as_ref(),
            &run.refused,
            turn_open,
        )?;
        Ok(())
    };
    match report() {
        Ok(()) => Ok(status),
        Err(e) if written && !is_broken_pipe(&e) => Err(crate::cli::exit::StatusError {
            status: Status::Internal,
            message: format!(
                "{file}: the write landed ({events} event(s) appended{}); only printing the report failed: {e:#}",
                wrote_to
                    .as_ref()
                    .filter(|_| args.out.is_some())
                    .map(|p| format!(" to {}", p.display()))
                    .unwrap_or_default()
            ),
        }
        .into()),
        Err(e) => Err(e),
    }
}
