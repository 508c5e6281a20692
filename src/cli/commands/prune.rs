//! `dsh prune`: the reference's tool-result pruner, appended to the log.

use std::borrow::Borrow;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use dsh::append::{AppendTarget, Appender};
use dsh::json::{OwnedValue, Value};
use dsh::meter::tokenizer::Encoding;
use dsh::prune::{PruneConfig, PruneError, PrunePlan};
use dsh::prune_write::{self, BpeSavings, Outcome, PrepareError, Request};

use crate::cli::ctx::load_config;
use crate::cli::ctx::{Ctx, SCHEMA_VERSION};
use crate::cli::exit::{Status, StatusError, UsageError};
use crate::cli::render;
use crate::cli::render::{Out, num, outln, outp};
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

/// The events as a JSON array that borrows their strings (the report is
/// written and dropped; copying megabytes of results for it was a tenth of
/// a dry run).
fn events_json<E: Borrow<dsh::OwnedEvent>>(evs: &[E]) -> Value<'_> {
    Value::Arr(evs.iter().map(|e| e.borrow().value.borrowed()).collect())
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

/// What the run did, for the JSON report.
struct Facts<'a> {
    file: &'a str,
    refused: &'a Option<String>,
    session: &'a str,
    written: bool,
    out: Option<&'a std::path::PathBuf>,
    events: u64,
    bytes: u64,
    turn_open: bool,
    file_turn_open: bool,
    lifecycle: dsh::append::Lifecycle,
}

/// The `--json` document.
/// `plan` comes with its events (moved out of it into the batch).
fn report_json<'p>(
    (plan, appended): (&'p dsh::prune::PrunePlan, &'p [Arc<dsh::OwnedEvent>]),
    reference: Option<&'p dsh::prune::PrunePlan>,
    prefix: &'p [dsh::OwnedEvent],
    bpe: &[BpeSavings],
    o: &Facts<'_>,
    args: &PruneArgs,
    config_path: Option<&std::path::Path>,
) -> Value<'p> {
    let path_json = |p: Option<&std::path::Path>| {
        p.map(|p| Value::from(p.display().to_string()))
            .unwrap_or(Value::Null)
    };
    let reported = match reference {
        Some(r) => to_json((r, &r.events[..]), prefix),
        None => to_json((plan, appended), prefix),
    };
    let v = reported
        .with(
            "write",
            Value::obj()
                .with("baseSeq", plan.base_seq.into())
                .with("appended", events_json(appended)),
        )
        .with("lifecycle", o.lifecycle.as_str().into())
        .with("surfaceTokens", tokens_json(plan))
        .with("openTurn", o.turn_open.into())
        .with("fileTurnOpen", o.file_turn_open.into())
        .with("allowClosedTurn", args.allow_closed_turn.into())
        .with(
            "refused",
            o.refused.clone().map(Value::from).unwrap_or(Value::Null),
        )
        .with("dryRun", args.dry_run.into())
        .with("written", o.written.into())
        .with("file", o.file.to_string().into())
        .with("session", o.session.into())
        .with("out", path_json(o.out.map(|p| p.as_path())))
        .with("events", o.events.into())
        .with("bytes", o.bytes.into())
        .with("configFile", path_json(config_path));
    let v = if bpe.is_empty() {
        v
    } else {
        v.with("tokenizers", Value::Arr(bpe.iter().map(bpe_json).collect()))
    };
    v.with("schema_version", SCHEMA_VERSION.into())
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
            };
            let v = report_json(
                (plan, appended),
                run.reference.as_ref(),
                prefix,
                &run.bpe,
                &outcome,
                args,
                config.path.as_deref(),
            );
            ctx.print_json(&v)?;
            return Ok(());
        }
        print_readable(
            &ctx.out,
            (plan, appended),
            &run.bpe,
            prefix,
            &file,
            args,
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

/// One encoding's savings as JSON.
fn bpe_json(b: &BpeSavings) -> OwnedValue {
    let pruned: Vec<OwnedValue> = b
        .pruned
        .iter()
        .map(|&(seq, before, after)| {
            Value::obj()
                .with("originalSeq", seq.into())
                .with("before", before.into())
                .with("after", after.into())
        })
        .collect();
    Value::obj()
        .with("encoding", b.encoding.name().into())
        .with("before", b.surface_before.into())
        .with("after", b.surface_after().into())
        .with("saved", b.saved().into())
        .with("pruned", Value::Arr(pruned))
}

/// The reference's prune output plus the lifecycle prefix (`plan` with its
/// events).
fn to_json<'p, E: Borrow<dsh::OwnedEvent>>(
    (plan, events): (&'p PrunePlan, &'p [E]),
    prefix: &'p [dsh::OwnedEvent],
) -> Value<'p> {
    let pruned: Vec<OwnedValue> = plan
        .pruned
        .iter()
        .map(|p| {
            p.to_json()
                .with("tokensBefore", p.tokens_before.into())
                .with("tokensAfter", p.tokens_after.into())
        })
        .collect();
    Value::obj()
        .with("config", plan.config.to_json())
        .with("baseSeq", plan.base_seq.into())
        .with("appended", events_json(events))
        .with("pruned", Value::Arr(pruned))
        .with("charsRemoved", plan.chars_removed.into())
        .with("lifecycleEvents", events_json(prefix))
}

fn tokens_json(plan: &PrunePlan) -> OwnedValue {
    Value::obj()
        .with("before", plan.surface_tokens_before.into())
        .with("after", plan.surface_tokens_after.into())
        .with(
            "saved",
            (plan.surface_tokens_before - plan.surface_tokens_after).into(),
        )
}

#[allow(clippy::too_many_arguments)]
fn print_readable(
    o: &Out,
    (plan, events): (&PrunePlan, &[Arc<dsh::OwnedEvent>]),
    bpe: &[BpeSavings],
    prefix: &[dsh::OwnedEvent],
    file: &str,
    args: &PruneArgs,
    written: bool,
    out: Option<&PathBuf>,
    refused: &Option<String>,
    turn_open: bool,
) -> std::io::Result<()> {
    if plan.pruned.is_empty() {
        outln!(
            o,
            "{file}: nothing to prune: no tool result on the surface exceeds {} code points",
            plan.config.threshold_chars
        )?;
        return Ok(());
    }
    let mut head = vec!["seq", "→ seq", "callId", "chars", "tokens"];
    let names: Vec<String> = bpe
        .iter()
        .map(|b| format!("{} tokens", b.encoding.name()))
        .collect();
    head.extend(names.iter().map(String::as_str));
    let mut t = render::table(&head);
    for (i, p) in plan.pruned.iter().enumerate() {
        let call = p
            .call_id
            .as_jstr()
            .map(|s| s.to_lossy().into_owned())
            .unwrap_or_else(|| p.call_id.to_json());
        let mut row = vec![
            p.original_seq.to_string(),
            p.replacement_seq.to_string(),
            call,
            format!("{} → {}", num(p.chars_before), num(p.chars_after)),
            format!("{} → {}", num(p.tokens_before), num(p.tokens_after)),
        ];
        for b in bpe {
            let (_, before, after) = b.pruned[i];
            row.push(format!("{} → {}", num(before), num(after)));
        }
        t.add_row(row);
    }
    outln!(o, "{t}")?;
    let n = plan.pruned.len();
    let verb = if written { "pruned" } else { "would prune" };
    outln!(
        o,
        "{verb} {n} tool result(s): {} code point(s) removed; surface {} → {} tokens by the DSH heuristic ({} saved)",
        num(plan.chars_removed),
        num(plan.surface_tokens_before),
        num(plan.surface_tokens_after),
        num(plan.surface_tokens_before - plan.surface_tokens_after)
    )?;
    for b in bpe {
        outln!(
            o,
            "  {}: surface {} → {} tokens ({} saved)",
            b.encoding.name(),
            num(b.surface_before),
            num(b.surface_after()),
            num(b.saved())
        )?;
    }
    let first = prefix.first().map_or(plan.base_seq, |e| e.seq);
    let last = plan.base_seq + events.len() as u64 - 1;
    let closers = prefix
        .iter()
        .filter(|e| e.kind != dsh::Kind::SessionEndSeed)
        .count();
    let seed = prefix.iter().any(|e| e.kind == dsh::Kind::SessionEndSeed);
    let mut parts = Vec::new();
    if closers > 0 {
        parts.push(format!("{closers} crash-repair closer(s)"));
    }
    if seed {
        parts.push("the session/end-seed marker".to_string());
    }
    parts.push(format!("{n} prune pair(s)"));
    let mut what = format!(
        "{} event(s) (seq {first}–{last}: {})",
        prefix.len() + events.len(),
        parts.join(", ")
    );
    if turn_open && prefix.is_empty() {
        what.push_str(" inside the open turn");
    }
    if written {
        match out {
            Some(path) if args.out.is_some() => outln!(
                o,
                "wrote a copy of {file} with {what} appended to {}",
                path.display()
            )?,
            _ => outln!(o, "appended {what} to {file}")?,
        }
        if !turn_open {
            outln!(
                o,
                "note: written outside an open turn (--allow-closed-turn): the reference's dsh-session invariant flags it (\"tool/result surface replacement appended outside any open turn\")"
            )?;
        }
    } else if args.dry_run {
        outln!(o, "dry run: would append {what}:")?;
        for e in prefix.iter().chain(events.iter().map(|e| &**e)) {
            outln!(o, "  {}", describe(e))?;
        }
        if let Some(why) = refused {
            outln!(o, "a write would be refused: {why}")?;
        }
    }
    Ok(())
}

/// One line about an appended event.
fn describe(e: &dsh::OwnedEvent) -> String {
    let d = e.data();
    let seqs = |k: &str| d.get(k).map(|v| v.to_json()).unwrap_or_default();
    match e.kind {
        dsh::Kind::CompactionPrune => format!(
            "seq {} compaction/prune: shadows {} (price {})",
            e.seq,
            seqs("shadowedSeqs"),
            d.get("shadowedTokenCount")
                .and_then(|n| n.as_count())
                .map_or_else(|| seqs("shadowedTokenCount"), crate::cli::render::num)
        ),
        dsh::Kind::ToolResult
            if e.value.has("sourceEventSeqs")
                && e.line == 0
                && e.value.get("surfaceOp").is_some_and(|o| o.is_obj()) =>
        {
            let price = e
                .data()
                .get("message")
                .map(dsh::meter::estimate::price_message)
                .unwrap_or(0);
            format!(
                "seq {} tool/result: replaces {} (price {})",
                e.seq,
                e.value
                    .get("sourceEventSeqs")
                    .map(|v| v.to_json())
                    .unwrap_or_default(),
                crate::cli::render::num(price)
            )
        }
        dsh::Kind::SessionEndSeed => format!("seq {} session/end-seed (a new lifecycle)", e.seq),
        _ => format!("seq {} {} (crash-repair closer)", e.seq, e.type_name()),
    }
}
