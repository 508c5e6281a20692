//! `dsh prune`'s output: the `--json` document (the reference's fields
//! and dsh's write) and the readable report.

use std::path::PathBuf;
use std::sync::Arc;

use dsh::doc::SchemaVersion;
use dsh::doc::prune::{Events, Prune, Reported, SurfaceTokens, Tokenizer, Write};
use dsh::prune::PrunePlan;
use dsh::prune_write::BpeSavings;

use super::{Out, num, outln};

/// What the run did, for the JSON report.
pub struct Facts<'a> {
    pub file: &'a str,
    pub refused: &'a Option<String>,
    pub session: &'a str,
    pub written: bool,
    pub out: Option<&'a std::path::PathBuf>,
    pub events: u64,
    pub bytes: u64,
    pub turn_open: bool,
    pub file_turn_open: bool,
    pub lifecycle: dsh::append::Lifecycle,
    pub dry_run: bool,
    pub allow_closed_turn: bool,
}

/// The `--json` document.
/// `plan` comes with its events (moved out of it into the batch).
pub fn report_json<'p>(
    (plan, appended): (&'p PrunePlan, &'p [Arc<dsh::OwnedEvent>]),
    reference: Option<&'p PrunePlan>,
    prefix: &'p [dsh::OwnedEvent],
    bpe: &[BpeSavings],
    o: &Facts<'p>,
    config_path: Option<&std::path::Path>,
) -> Prune<'p> {
    let path = |p: Option<&std::path::Path>| p.map(|p| p.display().to_string());
    Prune {
        reference: match reference {
            Some(r) => Reported::of(r, Events::Owned(&r.events), prefix),
            None => Reported::of(plan, Events::Shared(appended), prefix),
        },
        write: Write {
            base_seq: plan.base_seq,
            appended: Events::Shared(appended),
        },
        lifecycle: o.lifecycle,
        surface_tokens: SurfaceTokens::of(plan),
        open_turn: o.turn_open,
        file_turn_open: o.file_turn_open,
        allow_closed_turn: o.allow_closed_turn,
        refused: o.refused.clone(),
        dry_run: o.dry_run,
        written: o.written,
        file: o.file,
        session: o.session,
        out: path(o.out.map(|p| p.as_path())),
        events: o.events,
        bytes: o.bytes,
        config_file: path(config_path),
        tokenizers: bpe.iter().map(Tokenizer::from).collect(),
        schema_version: SchemaVersion,
    }
}

#[allow(clippy::too_many_arguments)]
pub fn print_readable(
    o: &Out,
    (plan, events): (&PrunePlan, &[Arc<dsh::OwnedEvent>]),
    bpe: &[BpeSavings],
    prefix: &[dsh::OwnedEvent],
    file: &str,
    (dry_run, to_copy): (bool, bool),
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
    let mut t = super::table(&head);
    for (i, p) in plan.pruned.iter().enumerate() {
        let call = super::text_or_json(&p.call_id);
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
            Some(path) if to_copy => outln!(
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
    } else if dry_run {
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
                .map_or_else(|| seqs("shadowedTokenCount"), num)
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
                num(price)
            )
        }
        dsh::Kind::SessionEndSeed => format!("seq {} session/end-seed (a new lifecycle)", e.seq),
        _ => format!("seq {} {} (crash-repair closer)", e.seq, e.type_name()),
    }
}
