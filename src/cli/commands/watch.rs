//! `dsh watch`: a live view of a session while the harness writes it.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use dsh::civil::Zone;
use dsh::log::LogSource;
use dsh::price::{PriceTable, Priced};
use dsh::sessions::ScanOptions;
use dsh::status::follow::{Follower, Update};
use dsh::status::{Forecast, Snapshot, hit_rate};

use crate::cli::ctx::Ctx;
use crate::cli::exit::{Status, UsageError};
use crate::cli::gauge::{bar, compact_tokens, tone};
use crate::cli::render;
use crate::cli::render::out::Control;

/// Follow a session as it is written: pressure, the next compaction, cost.
///
/// Redraws, while the harness appends to the log (plain or Zstandard): the
/// pressure (DSH's own token figure against the routed window), the tokens
/// left before the compaction threshold and the forecast of the next
/// compaction at the current growth ("in ~N requests", from the growth of
/// the provider-reported prompts since the last compaction or prune), the
/// last request's cache hit and cost, and the session's cost.
///
/// It only reads. A log that grew by streamed chunks is followed by reading
/// just the new bytes; any other change (a new event, a compaction, a new
/// lifecycle, a replaced file) is read whole again. A line still being
/// written is waited on ("a line is being written"), never taken for
/// damage; a read that fails is reported only once the file stands still.
///
/// LOG defaults to `.`: the newest session (by its last event) of this
/// directory's project, said on stderr. On a terminal the view is redrawn
/// in place; into a pipe or file each change is one plain line (--json: one
/// JSON object a line). Ctrl-C ends it (exit 0).
///
/// With --json, each line: `{"file", "session", "project", "route",
/// "tokens", "contextWindow", "thresholdTokens", "pressurePercent",
/// "toCompaction", "forecast": {"due", "requests", "perRequest"},
/// "lastRequest": {"seq", "cacheHit", "costUsd"}|null, "costUsd",
/// "requests", "compactions", "prunes", "lifecycles", "events",
/// "lastEventMs", "writing", "busy", "error", "schema_version"}`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  dsh watch                            # this project's newest session\n  dsh watch ~/.dsh/sessions/--home-me-proj--/5b1d/session.jsonl.zstd\n  dsh watch --interval 2s 5b1d\n  dsh watch . | tee pressure.log       # one line per change"
)]
pub struct WatchArgs {
    /// The session: a log, session directory or id, or a working directory
    /// (`.`, the default: its project's newest session).
    #[arg(value_name = "LOG|.", default_value = ".")]
    pub log: String,
    /// How often to look at the log (e.g. 250ms, 2s).
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = crate::cli::parse_duration)]
    pub interval: u64,
    /// The dsh config file (routes' context windows and policies, [[prices]]).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// What the view shows besides the snapshot.
#[derive(Default)]
struct State {
    streamed: u64,
    waiting: bool,
    error: Option<String>,
}

/// The terminal's width now (it may be resized while watching).
fn columns() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize; on failure it is left unread.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    if unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) } == 0 && ws.ws_col > 0 {
        usize::from(ws.ws_col)
    } else {
        80
    }
}

/// Log text for the terminal, by the one escaping rule.
fn clean(s: &str) -> String {
    render::escape::line(s).into_owned()
}

fn forecast_text(s: &Snapshot) -> String {
    match s.forecast() {
        Forecast::Due => "compaction due before the next request".into(),
        Forecast::In {
            requests,
            per_request,
        } => format!(
            "at the current growth (+{} a request), in ~{requests} request{}",
            compact_tokens(per_request),
            if requests == 1 { "" } else { "s" }
        ),
        Forecast::NotGrowing => "not growing over the last requests".into(),
        Forecast::Unknown => "too few requests since the last compaction to tell".into(),
    }
}

fn last_text(s: &Snapshot, prices: &PriceTable) -> String {
    let Some(r) = s.last_request() else {
        return "no request yet".into();
    };
    let hit = hit_rate(&r.tokens).map_or_else(|| "?".into(), |h| format!("{:.1}%", h * 100.0));
    let cost = match prices.price(&r.provider, &r.model, r.time, &r.tokens) {
        Priced::Cost { usd, .. } => format!("{} USD", render::usd(Some(usd))),
        _ => "no price".into(),
    };
    format!("seq {}: cache hit {hit}, {cost}", r.seq)
}

fn log_text(s: &Snapshot, st: &State, zone: &Zone) -> String {
    let mut parts = vec![format!("{} events", render::num(s.events))];
    if let Some(t) = s.last_time {
        parts.push(format!("last event {}", zone.date_time(t)));
    }
    if s.busy {
        parts.push("a compaction is running (live lock)".into());
    }
    if s.torn > 0 {
        parts.push(format!("writing a line ({} B)", render::num(s.torn)));
    } else if st.streamed > 0 {
        parts.push(format!("streaming ({} chunks)", render::num(st.streamed)));
    }
    if st.waiting {
        parts.push("reading again when the write settles".into());
    }
    parts.join(" · ")
}

/// The view, one string per line.
fn screen(s: &Snapshot, st: &State, prices: &PriceTable, zone: &Zone, width: usize) -> Vec<String> {
    let route = s
        .route
        .as_ref()
        .map_or_else(|| "no route".into(), |(p, m)| format!("{p}/{m}"));
    let pct = s.pressure();
    let pressure = match (s.tokens, s.window) {
        (Some(t), Some(w)) => format!(
            "{:.1}% of {} ({} tokens)",
            pct.unwrap_or(0.0),
            render::num(w as u64),
            render::num(t as u64)
        ),
        (Some(t), None) => format!("{} tokens, window unknown", render::num(t as u64)),
        _ => format!(
            "unknown: {}",
            s.meter_error.as_deref().unwrap_or("not measured")
        ),
    };
    let next = match (s.to_compaction(), s.threshold) {
        (Some(l), Some(t)) if l <= 0.0 => format!(
            "over the compaction threshold ({}) by {}",
            render::num(t as u64),
            render::num(-l as u64)
        ),
        (Some(l), Some(t)) => format!(
            "{} tokens to the compaction threshold ({})",
            render::num(l as u64),
            render::num(t as u64)
        ),
        _ => "threshold unknown".into(),
    };
    let cost = s.cost(prices);
    let mut lines = vec![
        clean(&format!(
            "dsh watch · session {} · {}",
            s.session,
            s.project.as_deref().unwrap_or("no cwd")
        )),
        clean(&s.file),
        String::new(),
        clean(&format!("route     {route}")),
        format!(
            "pressure  {} {pressure}",
            render::paint(
                &bar(pct, 20),
                tone(s.to_compaction(), s.threshold).unwrap_or(render::Tone::Good)
            )
        ),
        format!("next      {next}"),
        format!("forecast  {}", forecast_text(s)),
        format!("last      {}", clean(&last_text(s, prices))),
        format!(
            "session   {} requests · {} USD · {} compaction(s), {} prune(s) · lifecycle {}",
            render::num(cost.requests + cost.summariser_requests),
            render::usd(cost.cost()),
            s.compactions,
            s.prunes,
            s.lifecycles
        ),
        format!("log       {}", log_text(s, st, zone)),
    ];
    if let Some(e) = &st.error {
        lines.push(format!("error     {}", clean(e)));
    }
    lines.push(String::new());
    lines.push("Ctrl-C to stop".into());
    lines.into_iter().map(|l| render::cut(&l, width)).collect()
}

/// One plain line of the view, for a pipe.
fn plain(s: &Snapshot, st: &State, prices: &PriceTable) -> String {
    let pressure = s
        .pressure()
        .map_or_else(|| "?%".into(), |p| format!("{p:.1}%"));
    let next = match s.to_compaction() {
        Some(l) if l <= 0.0 => "compaction due".to_string(),
        Some(l) => format!("{} to compaction", render::num(l as u64)),
        None => "threshold unknown".into(),
    };
    let mut line = format!(
        "{} {pressure} · {next} · {} · last {} · session {} USD · {} compaction(s) · lifecycle {}",
        clean(&s.session),
        forecast_text(s),
        clean(&last_text(s, prices)),
        render::usd(s.cost(prices).cost()),
        s.compactions,
        s.lifecycles
    );
    if s.torn > 0 {
        line.push_str(" · a line is being written");
    }
    if let Some(e) = &st.error {
        line.push_str(&format!(" · error: {}", clean(e)));
    }
    line
}

/// Run it.
pub fn run(ctx: &mut Ctx, args: &WatchArgs) -> Result<Status> {
    let path = match ctx.resolve(&args.log)? {
        LogSource::File(p) if !dsh::log::source::is_stream(&p) => p,
        _ => return Err(UsageError("watch follows a log file, not a stream".into()).into()),
    };
    let config = crate::cli::ctx::load_config(args.config.as_deref())?;
    let prices = dsh::price::PriceTable::builtin().with(&config.prices);
    let zone = crate::cli::zone::local();
    let opts = ScanOptions {
        load: ctx.load_options(),
        no_meter: false,
        config,
    };
    let tty = std::io::stdout().is_terminal() && !ctx.json;
    let _guard = crate::cli::signals::guard();
    let mut follower = Follower::new(path, opts);
    let mut st = State::default();
    let mut shown = String::new();
    if tty {
        ctx.out.control(Control::HideCursor)?;
    }
    let interval = Duration::from_millis(args.interval.max(20));
    loop {
        match follower.poll(Instant::now()) {
            Update::Unchanged => {}
            Update::Streamed(n) => {
                st.streamed += n;
                st.waiting = false;
            }
            Update::Read => st = State::default(),
            Update::Waiting => st.waiting = true,
            Update::Failed(r) => {
                st.waiting = false;
                st.error = Some(ctx.describe_load_error(&r.error));
            }
        }
        let text = match follower.snapshot() {
            None => st
                .error
                .clone()
                .map(|e| format!("dsh watch: {e}"))
                .unwrap_or_else(|| "reading…".into()),
            Some(s) if tty => screen(s, &st, &prices, &zone, columns()).join("\n"),
            Some(s) if ctx.json => dsh::doc::to_string(&dsh::doc::status::Watch::of(
                s,
                st.error.as_deref(),
                &prices,
            )),
            Some(s) => plain(s, &st, &prices),
        };
        if text != shown {
            if tty {
                ctx.out.control(Control::Home)?;
                ctx.out.write_all(text.as_bytes())?;
            } else {
                ctx.out.write_all(format!("{text}\n").as_bytes())?;
            }
            shown = text;
        }
        if ctx.out.closed() {
            break;
        }
        let until = Instant::now() + interval;
        while Instant::now() < until && crate::cli::signals::status().is_none() {
            std::thread::sleep(Duration::from_millis(20).min(interval));
        }
        if crate::cli::signals::status().is_some() {
            break;
        }
    }
    if tty {
        ctx.out.control(Control::ShowCursor)?;
        ctx.out.write_all(b"\n")?;
    }
    Ok(match crate::cli::signals::status() {
        Some(Status::Interrupted) | None => Status::Ok,
        Some(other) => other,
    })
}
