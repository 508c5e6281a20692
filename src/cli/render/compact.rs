//! `dsh compact`'s output: the run's `--json` document and its readable
//! report, a dry run's would-fail problems, the spinner's lines.

use dsh::append::Lifecycle;
use dsh::compact::plan::Plan;
use dsh::compact::{self, BracketReport, Mode, Outcome, Report};
use dsh::json::{OwnedValue, Value};
use dsh::policy::{Policy, Retention};
use dsh::provider::Progress;

use crate::cli::render::{Out, outln};

pub fn outcome_name(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Compacted) => "compacted",
        Some(Outcome::BelowThreshold) => "below-threshold",
        Some(Outcome::PrunedBelowThreshold) => "pruned-below-threshold",
        Some(Outcome::Declined(_)) => "declined",
        Some(Outcome::DryRun) => "dry-run",
        Some(Outcome::OverflowDisabled) => "overflow-disabled",
        None => "failed",
    }
}

pub fn opt<T: Into<OwnedValue>>(v: Option<T>) -> OwnedValue {
    v.map(Into::into).unwrap_or(Value::Null)
}

pub fn bracket_json(b: &BracketReport, with_request: bool) -> OwnedValue {
    let mut v = Value::obj()
        .with("compactionId", b.compaction_id.clone().into())
        .with("turn", opt(b.turn))
        .with(
            "shadowedRange",
            Value::obj()
                .with("start", b.start.into())
                .with("end", b.end.into()),
        )
        .with("shadowedSeqs", b.shadowed_seqs.clone().into())
        .with("shadowedTokenCount", b.shadowed_tokens.into())
        .with("startSeq", opt(b.start_seq))
        .with("summarySeq", opt(b.summary_seq))
        .with("checkpointSeq", opt(b.checkpoint_seq))
        .with("endSeq", opt(b.end_seq))
        .with("checkpointTokens", opt(b.checkpoint_tokens))
        .with(
            "usage",
            b.usage
                .as_ref()
                .map(|u| u.to_value())
                .unwrap_or(Value::Null),
        )
        .with("attempts", u64::from(b.attempts).into())
        .with("error", opt(b.error.clone()))
        .with("requestTokens", b.request_tokens.into())
        .with("fits", opt(b.fits))
        .with("imagesReplaced", b.images_replaced.into());
    if with_request && let Some(r) = &b.request {
        v = v.with("request", r.to_value());
    }
    v
}

pub fn policy_json(p: &Policy) -> OwnedValue {
    let v = Value::obj().with("thresholdRatio", p.threshold_ratio.into());
    let v = match p.retention {
        Retention::Ratio(r) => v.with("retainRatio", r.into()),
        Retention::Tokens(t) => v.with("retainTokensAbsolute", t.into()),
    };
    v.with("maxTokens", p.max_tokens.into())
        .with("compactionRetries", p.compaction_retries.into())
        .with("maxOverflowRetries", p.max_overflow_retries.into())
        .with(
            "summarizationProvider",
            p.summarization_provider.clone().into(),
        )
        .with("summarizationModel", p.summarization_model.clone().into())
        .with("modelPolicy", p.overridden.into())
}

pub fn report_json(r: &Report, plan: &Plan, lifecycle: Lifecycle, dry_run: bool) -> OwnedValue {
    let pruned: Vec<OwnedValue> = r.pruned.iter().map(|p| p.to_json()).collect();
    let end_seed = r
        .appended
        .iter()
        .find(|e| e.kind == dsh::Kind::SessionEndSeed)
        .map(|e| e.seq);
    let mut v = Value::obj()
        .with("mode", r.mode.name().into())
        .with("lifecycle", lifecycle.as_str().into())
        .with("outcome", outcome_name(r.outcome).into())
        .with(
            "route",
            format!("{}/{}", plan.target.0, plan.target.1).into(),
        )
        .with(
            "routedTarget",
            opt(plan.routed.as_ref().map(|(p, m)| format!("{p}/{m}"))),
        )
        .with("openTurn", opt(r.open_turn))
        .with(
            "contextWindow",
            opt(plan.capacity.map(|c| c.context_window)),
        )
        .with(
            "contextWindowSource",
            opt(plan.capacity.map(|c| c.source.as_str())),
        )
        .with(
            "thresholdTokens",
            opt(plan.budgets.map(|b| b.threshold_tokens)),
        )
        .with(
            "retainTokens",
            plan.budgets.map_or(0, |b| b.retain_tokens).into(),
        )
        .with("policy", policy_json(&plan.policy))
        .with(
            "summarizer",
            Value::obj()
                .with("kind", plan.protocol.as_str().into())
                .with("baseURL", dsh::provider::redact_url(&plan.base_url).into())
                .with("apiKeyEnv", plan.key_env.clone().into())
                .with("reasoningEffort", opt(plan.reasoning_effort.clone())),
        )
        .with(
            "summarizerWindow",
            plan.summarizer_capacity.map_or(Value::Null, |c| {
                Value::obj()
                    .with("tokens", c.context_window.into())
                    .with("source", c.source.as_str().into())
            }),
        )
        .with(
            "config",
            opt(plan.config_path.as_ref().map(|p| p.display().to_string())),
        )
        .with("tokensBefore", opt(r.tokens_before))
        .with("tokensAfterPrune", opt(r.tokens_after_prune))
        .with("tokensAfter", opt(r.tokens_after))
        .with("surfaceTokensBefore", r.surface_before.into())
        .with("surfaceTokensAfter", r.surface_after.into())
        .with("replaceGenerationBefore", r.generation_before.into())
        .with("replaceGenerationAfter", r.generation_after.into())
        .with("pruned", Value::Arr(pruned))
        .with(
            "brackets",
            Value::Arr(
                r.brackets
                    .iter()
                    .map(|b| bracket_json(b, dry_run))
                    .collect(),
            ),
        )
        .with(
            "appendedSeqs",
            r.appended
                .iter()
                .map(|e| e.seq)
                .collect::<Vec<u64>>()
                .into(),
        )
        .with("endSeedSeq", opt(end_seed));
    let warnings: Vec<OwnedValue> = r
        .brackets
        .iter()
        .filter(|b| b.fits == Some(false))
        .map(|b| {
            format!(
                "the range does not fit the summarising model's window: {} > {} tokens",
                b.request_tokens,
                plan.summarizer_capacity.map_or(0.0, |c| c.context_window)
            )
            .into()
        })
        .collect();
    v = v.with("warnings", Value::Arr(warnings));
    if let Some(Outcome::Declined(d)) = r.outcome {
        v = v.with("declined", d.explain().into());
    }
    if r.mode == Mode::Overflow {
        v = v.with("retryAuthorized", r.retry_authorized().into());
    }
    if dry_run {
        v = v.with(
            "wouldAppend",
            Value::Arr(r.appended.iter().map(|e| e.value.clone()).collect()),
        );
    }
    v
}

pub fn print_human(
    o: &Out,
    r: &Report,
    plan: &Plan,
    lifecycle: Lifecycle,
    dry_run: bool,
) -> std::io::Result<()> {
    let route = format!("{}/{}", plan.target.0, plan.target.1);
    outln!(
        o,
        "mode: {} ({} lifecycle)   summarizer: {route}",
        r.mode.name(),
        lifecycle.as_str()
    )?;
    if let (Some(b), Some(c)) = (plan.budgets, plan.capacity) {
        outln!(
            o,
            "capacity {} tokens ({}), threshold {}, retain {}",
            c.context_window,
            c.source.as_str(),
            b.threshold_tokens,
            b.retain_tokens
        )?;
    }
    for e in &r.appended {
        if e.kind == dsh::Kind::SessionEndSeed {
            outln!(o, "new lifecycle: session/end-seed seq {}", e.seq)?;
        }
    }
    for p in &r.pruned {
        outln!(
            o,
            "pruned tool result seq {} -> replacement seq {} ({} -> {} code points)",
            p.original_seq,
            p.replacement_seq,
            p.chars_before,
            p.chars_after
        )?;
    }
    for b in &r.brackets {
        print_bracket(o, b, plan, &route, dry_run)?;
    }
    print_outcome(o, r, plan)?;
    if r.tokens_before.is_some() {
        outln!(
            o,
            "tokens before {} after {}",
            tokens(r.tokens_before),
            tokens(r.tokens_after)
        )?;
    }
    outln!(
        o,
        "surface tokens before {} after {}",
        r.surface_before,
        r.surface_after
    )?;
    if r.mode == Mode::Overflow {
        outln!(
            o,
            "retry of the failed request authorised: {}",
            r.retry_authorized()
        )?;
    }
    Ok(())
}

/// One bracket: its range, the summariser request (in full when dry), what
/// it appended.
pub fn print_bracket(
    o: &Out,
    b: &BracketReport,
    plan: &Plan,
    route: &str,
    dry_run: bool,
) -> std::io::Result<()> {
    outln!(
        o,
        "range seqs {}..{} ({} nodes, {} tokens): {}",
        b.start,
        b.end,
        b.shadowed_seqs.len(),
        b.shadowed_tokens,
        seq_list(&b.shadowed_seqs)
    )?;
    match plan.summarizer_capacity {
        Some(c) => outln!(
            o,
            "summariser request: {} tokens (DSH estimate; output cap {}) against the {} window of {route} ({})",
            b.request_tokens,
            plan.policy.max_tokens,
            c.context_window,
            c.source.as_str()
        )?,
        None => outln!(
            o,
            "summariser request: {} tokens (DSH estimate; output cap {}); the window of {route} is not known (--summarizer-context-window)",
            b.request_tokens,
            plan.policy.max_tokens
        )?,
    }
    if b.fits == Some(false) {
        outln!(
            o,
            "{} the range does not fit the summarising model's window: {} > {} tokens",
            crate::cli::render::warning_tag(),
            b.request_tokens,
            plan.summarizer_capacity.map_or(0.0, |c| c.context_window)
        )?;
    }
    if b.images_replaced > 0 {
        outln!(
            o,
            "{} image(s) sent as the image-offload placeholder text",
            b.images_replaced
        )?;
    }
    if dry_run {
        if let Some(req) = &b.request {
            outln!(
                o,
                "request: {} {}",
                req.method,
                dsh::provider::redact_url(&req.url)
            )?;
            for (k, v) in req.redacted_headers() {
                outln!(o, "  {k}: {v}")?;
            }
            outln!(o, "{}", req.body.to_json())?;
        }
        return Ok(());
    }
    if !b.compaction_id.is_empty() {
        outln!(o, "compaction id: {}", b.compaction_id)?;
    }
    if let Some(cp) = b.checkpoint_seq {
        outln!(
            o,
            "checkpoint seq {cp}: {} tokens (shadowed {})",
            b.checkpoint_tokens.unwrap_or(0),
            b.shadowed_tokens
        )?;
    }
    if let Some(u) = &b.usage {
        outln!(o, "provider usage: {}", u.to_value().to_json())?;
    }
    if let Some(e) = &b.error {
        outln!(o, "bracket failed: {e}")?;
    }
    Ok(())
}

/// A token figure, or `?`.
pub fn tokens(t: Option<f64>) -> String {
    t.map(|x| Value::from(x).to_json())
        .unwrap_or_else(|| "?".into())
}

/// Why nothing, or only pruning, was written.
pub fn print_outcome(o: &Out, r: &Report, plan: &Plan) -> std::io::Result<()> {
    let threshold = plan
        .budgets
        .map(|b| b.threshold_tokens.to_string())
        .unwrap_or_else(|| "?".into());
    match r.outcome {
        Some(Outcome::Declined(d)) => {
            if r.mode == Mode::Manual {
                outln!(o, "No compactable history yet.")?;
            }
            outln!(o, "nothing to compact: {}", d.explain())?;
        }
        Some(Outcome::BelowThreshold) => outln!(
            o,
            "below threshold: {} tokens < {threshold}; nothing written",
            tokens(r.tokens_before),
        )?,
        Some(Outcome::PrunedBelowThreshold) => outln!(
            o,
            "pruning alone brought it below threshold: {} -> {} tokens",
            tokens(r.tokens_before),
            tokens(r.tokens_after_prune)
        )?,
        Some(Outcome::OverflowDisabled) => outln!(
            o,
            "overflow recovery is disabled (maxOverflowRetries = 0); nothing written"
        )?,
        Some(Outcome::DryRun) => outln!(o, "dry run: nothing written, no one called")?,
        _ => {}
    }
    Ok(())
}

/// A list of seqs for a terminal: all of a short one, the ends of a long one.
pub fn seq_list(seqs: &[u64]) -> String {
    let show = |s: &[u64]| s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    if seqs.len() <= 12 {
        return format!("[{}]", show(seqs));
    }
    format!(
        "[{}, … {} more …, {}]",
        show(&seqs[..5]),
        seqs.len() - 10,
        show(&seqs[seqs.len() - 5..])
    )
}

pub fn would_fail_json(problems: &[compact::plan::Problem]) -> OwnedValue {
    Value::Arr(
        problems
            .iter()
            .map(|p| {
                Value::obj()
                    .with("message", p.message.clone().into())
                    .with("hint", p.hint.clone().into())
            })
            .collect(),
    )
}

pub fn print_would_fail(o: &Out, problems: &[compact::plan::Problem]) -> std::io::Result<()> {
    for p in problems {
        outln!(o, "would fail: {}", p.message)?;
        outln!(o, "  hint: {}", p.hint)?;
    }
    Ok(())
}

/// The spinner's line for a step of the summariser call.
pub fn show_progress(pb: &indicatif::ProgressBar, p: &Progress) {
    match p {
        Progress::Sending { attempt } if *attempt > 1 => {
            pb.set_message(format!("summarising (attempt {attempt})"))
        }
        Progress::Retrying { delay, reason, .. } => pb.set_message(format!(
            "{}; retrying in {:.1}s",
            crate::cli::render::escape::line(reason),
            delay.as_secs_f64()
        )),
        Progress::Receiving { bytes } => {
            pb.set_message(format!("receiving the summary ({bytes} bytes)"))
        }
        _ => {}
    }
}
