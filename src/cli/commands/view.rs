//! `dsh view`: the human transcript beside the model's view.

use std::io::Write;

use anyhow::Result;
use dsh::meter::tokenizer::Encoding;
use dsh::view::ViewOptions;

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::render::{self, view as show};
use crate::cli::rows::RowWindow;

/// Show the log's transcript beside what the model sees at one point.
///
/// Two columns: left, every event as `dsh events` shows it (replaced spans
/// shaded with `▒`); right, what the model sees of it at that point (as
/// `dsh messages` gives it): the node itself with its surface position, the
/// checkpoint or pruned result that stands for it now (`→ #0 checkpoint 43`),
/// pruned results as head, marker and tail, and the compactions and prunes
/// marked where they happened. The columns fit the terminal (160 columns
/// into a pipe unless `COLUMNS` is set).
///
/// --limit N / --tail N: only the first or last N events of the transcript
/// (the footer says how many there are).
///
/// --survival: for each compaction, which file paths, commands, identifiers,
/// numbers and URLs of the replaced span its summary holds, and the session
/// totals (the extraction rules are in docs/view.md).
///
/// --tokenizer ENCODING: the model's view also in a provider's own tokens
/// (as `dsh measure --tokenizer` counts it: deepseek-v4 renders the request
/// as DeepSeek does, and estimates a placeholder log's hidden prefix), on
/// a last line beside DSH's estimate (and per surface entry in --json).
///
/// With --json: `{"file","session","at","lastSeq","rows":[…],"surface":[…],
/// "replacements":[…],"survival":{"compactions":[…],"totals":{…}},
/// "tokenizer"?,"schema_version"}` (`schemas/view.schema.json`), with or without
/// --survival; one whole document, so --limit and --tail are refused with
/// it, as for `surface` and `messages` (filter with jq).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh view session.jsonl\n  dsh view --at 40 session.jsonl            # the model's view as it stood after seq 40\n  dsh view --tail 40 session.jsonl          # the last 40 events beside the model's view\n  dsh view --survival session.jsonl         # what each compaction summary kept\n  dsh view --tokenizer deepseek-v4 s.jsonl  # the view in DeepSeek's own tokens too\n  dsh view --all session.jsonl | less -S    # chunks and steps too\n  dsh view --json session.jsonl | jq '.survival.totals'"
)]
pub struct ViewArgs {
    /// The log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    #[arg(value_name = "LOG")]
    pub log: String,
    /// The log as it stood after this seq.
    #[arg(long, value_name = "SEQ")]
    pub at: Option<u64>,
    /// Print the survival figures of each compaction instead of the columns.
    #[arg(long)]
    pub survival: bool,
    /// Every event on the left, chunks and steps included.
    #[arg(long, short)]
    pub all: bool,
    /// Also count the model's view with a real tokenizer: the envelope and
    /// surface text (o200k, cl100k), or the request as DeepSeek renders it
    /// (deepseek-v4).
    #[arg(long, value_name = "ENCODING", value_parser = ["o200k", "cl100k", "deepseek-v4"])]
    pub tokenizer: Option<String>,
    #[command(flatten)]
    pub rows: RowWindow,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &ViewArgs) -> Result<Status> {
    args.rows.whole_json_only(ctx.json)?;
    if args.survival && !args.rows.is_all() {
        return Err(UsageError(
            "--limit and --tail pick events of the transcript; --survival prints the compactions instead"
                .into(),
        )
        .into());
    }
    let src = ctx.resolve(&args.log)?;
    let opts = dsh::LoadOptions {
        upto: args.at,
        ..ctx.load_options()
    };
    let vopts = ViewOptions {
        all_events: args.all,
        ..ViewOptions::default()
    };
    let (log, view) = dsh::view::align_log(&src, &opts, &vopts)?;
    ctx.warn_all(&log);
    if let Some(at) = args.at
        && log.truncated_at.is_none()
        && at >= log.stored_events
    {
        let last = match log.stored_events {
            0 => "it has no events".to_string(),
            n => format!("its last seq is {}", n - 1),
        };
        return Err(dsh::LoadError::invalid(format!(
            "--at {at} is past the end of the log ({last}): give a seq up to the last one"
        ))
        .file(src.display())
        .into());
    }
    let provider = match args.tokenizer.as_deref().and_then(Encoding::parse) {
        Some(enc) => Some(dsh::hidden_prefix::provider_count(&src, &opts, &log, enc)?),
        None => None,
    };
    let provider = provider.as_ref();
    if ctx.json {
        let survival = dsh::survival::of_view(&log, &view)?;
        let (file, id) = (src.display(), &log.header.id);
        let doc = dsh::doc::view::View::of(&view, &survival, file, id, provider);
        ctx.print_doc(&doc)?;
        return Ok(Status::Ok);
    }
    ctx.page();
    let width = render::width().unwrap_or(160).max(40);
    let mut out = ctx.out.stream();
    if args.survival {
        // Extracting terms reads every replaced span: only when asked.
        let survival = dsh::survival::of_view(&log, &view)?;
        show::write_survival(&mut out, &survival, width)?;
    } else {
        show::write_columns(&mut out, &view, width, args.at, args.rows, provider)?;
    }
    out.flush()?;
    Ok(Status::Ok)
}

/// The document is the one a `serde_json` map of the whole view makes
/// (every field, its keys sorted, the same bytes): the order the view's
/// keys always had. A field added out of order fails this.
#[cfg(test)]
#[test]
fn the_document_is_the_whole_view_as_one_sorted_value() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    for name in [
        "compacted.jsonl",
        "coding-session.jsonl",
        "prune-closed.jsonl",
    ] {
        let src = dsh::LogSource::File(root.join(name));
        let (log, view) =
            dsh::view::align_log(&src, &dsh::LoadOptions::default(), &ViewOptions::default())
                .unwrap();
        let survival = dsh::survival::of_view(&log, &view).unwrap();
        let mut doc = serde_json::Map::new();
        doc.insert("file".into(), src.display().into());
        doc.insert("session".into(), log.header.id.clone().into());
        let serde_json::Value::Object(m) = serde_json::to_value(&view).unwrap() else {
            panic!("a view is an object");
        };
        doc.extend(m);
        doc.insert("survival".into(), serde_json::to_value(&survival).unwrap());
        doc.insert("schema_version".into(), 1.into());
        let want = serde_json::to_string(&doc).unwrap();
        let got = dsh::doc::to_string(&dsh::doc::view::View::of(
            &view,
            &survival,
            src.display(),
            &log.header.id,
            None,
        ));
        assert_eq!(got, want, "{name}");
        assert!(!view.surface.is_empty(), "{name}");
    }
}
