//! `dsh header`: the folded request header and the latest context.

use anyhow::Result;
use dsh::json::Value;

use crate::cli::ctx::Ctx;
use crate::cli::exit::Status;
use crate::cli::render;
use crate::cli::render::outln;

/// Show the folded request header and the latest route / context window.
///
/// The header is the latest `request/header` in canonical form (config,
/// tools, adapterDefaults, system prompt); the context is the latest
/// `request/context`.
///
/// In a generation-3 log the system prompt is the `system/message` at the
/// head of the surface, not a header field: it is shown from there.
///
/// With --json: `{"header", "headerSeq", "headerEvents": [{"seq","reason"}],
/// "context", "contextSeq", "sessionHeader": {…header line…},
/// "systemMessage"?: {"seq","text","tokens"} (G3), "file", "session", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh header session.jsonl\n  dsh header --json session.jsonl | jq .system"
)]
pub struct HeaderArgs {
    /// The log: a file, `-`, a session directory or id, or a working
    /// directory (`.`: its project's newest session by its last event, said
    /// on stderr).
    #[arg(value_name = "LOG")]
    pub log: String,
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &HeaderArgs) -> Result<Status> {
    let log = ctx.load(&args.log)?;
    let h = &log.headers;
    let head = log.system_prompt()?.filter(|p| p.seq.is_some());
    if ctx.json {
        let doc = dsh::doc::header::Header::of(&log, log.source.display(), head.as_ref());
        ctx.print_doc(&doc)?;
        return Ok(Status::Ok);
    }
    let mut t = render::table(&["field", "value"]);
    t.add_row(vec!["session id".to_string(), log.header.id.clone()]);
    if let Some(c) = &log.header.cwd {
        t.add_row(vec!["cwd".to_string(), c.clone()]);
    }
    match &h.header {
        None => {
            t.add_row(vec![
                "request header".to_string(),
                "none logged".to_string(),
            ]);
        }
        Some(hd) => {
            if let Some(cfg) = hd.get("config").and_then(|c| c.as_obj()) {
                for (k, v) in cfg {
                    let val = match v {
                        Value::Str(s) => s.to_lossy().into_owned(),
                        other => other.to_json(),
                    };
                    t.add_row(vec![format!("config.{}", k.to_lossy()), val]);
                }
            }
            if let Some(ad) = hd.get("adapterDefaults") {
                t.add_row(vec!["adapterDefaults".to_string(), ad.to_json()]);
            }
            let sys = hd.get("system").and_then(|s| s.as_jstr());
            t.add_row(vec![
                "system prompt".to_string(),
                match (sys, &head) {
                    (_, Some(p)) => format!(
                        "system/message seq {}: {} chars (UTF-16), {} tokens",
                        p.seq.unwrap_or_default(),
                        p.text.encode_utf16().count(),
                        p.tokens
                    ),
                    (Some(s), None) => format!(
                        "{} chars (UTF-16), {} tokens",
                        s.len16(),
                        dsh::meter::estimate::system_tokens(hd.get("system"))
                    ),
                    (None, None) => "none".to_string(),
                },
            ]);
            let tools: Vec<String> = hd
                .get("tools")
                .and_then(|t| t.as_arr())
                .map(|a| {
                    a.iter()
                        .map(|t| {
                            t.get("name")
                                .and_then(|n| n.as_str())
                                .unwrap_or_default()
                                .into_owned()
                        })
                        .collect()
                })
                .unwrap_or_default();
            t.add_row(vec![
                format!(
                    "tools ({}, {} tokens)",
                    tools.len(),
                    dsh::meter::estimate::tools_tokens(hd.get("tools"))
                ),
                tools.join(", "),
            ]);
            t.add_row(vec![
                "header seq".to_string(),
                format!("{:?}", h.header_seq.unwrap_or(0)),
            ]);
        }
    }
    let reasons: Vec<String> = h
        .events
        .iter()
        .map(|e| format!("{}@{}", e.reason.clone().unwrap_or_default(), e.seq))
        .collect();
    t.add_row(vec!["header events".to_string(), reasons.join(", ")]);
    match &h.context {
        Some(c) => {
            let p = c
                .get("provider")
                .and_then(|p| p.as_str())
                .unwrap_or_default()
                .into_owned();
            let m = c
                .get("model")
                .and_then(|p| p.as_str())
                .unwrap_or_default()
                .into_owned();
            t.add_row(vec!["route".to_string(), format!("{p}/{m}")]);
            t.add_row(vec![
                "context window".to_string(),
                c.get("contextWindow")
                    .map(|w| w.as_f64().map_or_else(|| w.to_json(), render::num_f64))
                    .unwrap_or_else(|| "unknown".into()),
            ]);
        }
        None => {
            t.add_row(vec![
                "context".to_string(),
                "no request/context logged".to_string(),
            ]);
        }
    }
    outln!(ctx.out, "{t}")?;
    Ok(Status::Ok)
}
