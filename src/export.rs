//! Tidy tables of many session logs, for DuckDB, pandas or a spreadsheet.
//!
//! [`rows_of`] reads one log (the [`sessions`](crate::sessions) scan and the
//! [`health`](crate::health) detectors, with the compaction
//! and prune facts gathered in the same pass, then the [`cache`] analysis
//! for each request's prompt size) into [`LogRows`]: rows of the six
//! [`TABLES`] — `sessions`, `requests`, `compactions`, `prunes`, `locks`,
//! `findings` — whose column names and types are fixed here. A [`TableWriter`] writes
//! rows of one table in one format ([`Format`]): CSV, JSON Lines, or
//! Parquet (cargo feature `parquet`). [`export_many`] reads logs in
//! parallel and hands their rows over in input order, one log at a time,
//! so a writer streams them out and no fleet-wide table is held.
//!
//! ```
//! let src = dsh::LogSource::File("samples/compacted.jsonl".into());
//! let place = dsh::export::Place { home: "me".into(), log: "compacted.jsonl".into() };
//! let rows = dsh::export::rows_of(&src, &place, &dsh::export::ExportOptions::default()).unwrap();
//! assert_eq!(rows.tables[0].len(), 1, "one session row");
//! assert!(!rows.tables[2].is_empty(), "its compactions");
//! let mut csv = Vec::new();
//! let mut w = dsh::export::Format::Csv.writer(&dsh::export::TABLES[0], &mut csv).unwrap();
//! w.write_rows(&rows.tables[0]).unwrap();
//! w.finish().unwrap();
//! assert!(String::from_utf8(csv).unwrap().starts_with("home,log,key,session,"));
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::attempt::{Attempts, CompactionMode, Modes};
use crate::cache::{self, CacheOptions};
use crate::civil;
use crate::event::{Event, Kind};
use crate::health::{HealthOptions, SessionHealth, Thresholds};
use crate::json::{OwnedValue, Value};
use crate::lock::LockReport;
use crate::log::LogSource;
use crate::price::{PriceTable, Priced};
use crate::sessions::{Extra, Refused, ScanOptions, Session};
use crate::usage::{Caller, session_sums};

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub enum ColumnType {
    /// UTF-8 text.
    #[serde(rename = "string")]
    Str,
    /// 64-bit integer.
    #[serde(rename = "int64")]
    Int,
    /// 64-bit float (token counts are JavaScript numbers, as logged).
    #[serde(rename = "float64")]
    Float,
    /// Boolean.
    #[serde(rename = "bool")]
    Bool,
    /// An instant: epoch milliseconds, UTC (Parquet `TIMESTAMP(MILLIS)`,
    /// RFC 3339 text in CSV and JSON Lines).
    #[serde(rename = "timestamp")]
    Time,
}

/// One column: a stable snake-case name and its type. Every column may be
/// null.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Column {
    /// Its snake-case name.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub name: &'static str,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: ColumnType,
}

/// One table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSpec {
    /// Name (the file's stem).
    pub name: &'static str,
    /// Columns in order.
    pub columns: &'static [Column],
}

const fn c(name: &'static str, ty: ColumnType) -> Column {
    Column { name, ty }
}
use ColumnType::{Bool, Float, Int, Str, Time};

/// The tables, in [`LogRows::tables`] order.
///
/// Every table begins with `home` (the label of the home the log was found
/// in), `log` (its path relative to that home) and `key`, a stable row key
/// (`HOME:LOG` for a session, `HOME:LOG#SEQ` for a request, prune or lock,
/// `HOME:LOG#cSEQ` for a compaction, `HOME:LOG#KIND@SEQ` for a finding);
/// the others carry `session_key`, the session row's `key`, to join on.
pub const TABLES: [TableSpec; 6] = [
    TableSpec {
        name: "sessions",
        columns: &[
            c("home", Str),
            c("log", Str),
            c("key", Str),
            c("session", Str),
            c("file", Str),
            c("project", Str),
            c("parent", Str),
            c("fork_of", Str),
            c("title", Str),
            c("started", Time),
            c("last_activity", Time),
            c("turns", Int),
            c("events", Int),
            c("size_bytes", Int),
            c("generation", Int),
            c("provider", Str),
            c("model", Str),
            c("surface_tokens", Float),
            c("context_window", Float),
            c("pressure_percent", Float),
            c("over_threshold", Bool),
            c("compactions", Int),
            c("prunes", Int),
            c("lock", Str),
            c("busy_locks", Int),
            c("stale_locks", Int),
            c("requests", Int),
            c("agent_requests", Int),
            c("summariser_requests", Int),
            c("inherited_requests", Int),
            c("input_tokens", Float),
            c("cache_read_tokens", Float),
            c("cache_write_tokens", Float),
            c("output_tokens", Float),
            c("reasoning_tokens", Float),
            c("cost_usd", Float),
            c("agent_cost_usd", Float),
            c("summariser_cost_usd", Float),
            c("unpriced_requests", Int),
            c("findings", Int),
            c("meter_error", Str),
        ],
    },
    TableSpec {
        name: "requests",
        columns: &[
            c("home", Str),
            c("log", Str),
            c("key", Str),
            c("session_key", Str),
            c("session", Str),
            c("seq", Int),
            c("caller", Str),
            c("turn", Int),
            c("step", Int),
            c("time", Time),
            c("provider", Str),
            c("model", Str),
            c("input_tokens", Float),
            c("cache_read_tokens", Float),
            c("cache_write_tokens", Float),
            c("output_tokens", Float),
            c("reasoning_tokens", Float),
            c("cost_usd", Float),
            c("price_confirmed", Bool),
            c("surface_tokens", Float),
            c("pressure_percent", Float),
            c("tokenizer", Str),
            c("provider_prompt_tokens", Float),
            c("provider_pressure_percent", Float),
        ],
    },
    TableSpec {
        name: "compactions",
        columns: &[
            c("home", Str),
            c("log", Str),
            c("key", Str),
            c("session_key", Str),
            c("session", Str),
            c("compaction_id", Str),
            c("start_seq", Int),
            c("end_seq", Int),
            c("summary_seq", Int),
            c("checkpoint_seq", Int),
            c("time", Time),
            c("turn", Int),
            c("mode", Str),
            c("status", Str),
            c("shadowed_start", Int),
            c("shadowed_end", Int),
            c("shadowed_nodes", Int),
            c("shadowed_tokens", Float),
            c("summary_tokens", Float),
            c("summariser_provider", Str),
            c("summariser_model", Str),
            c("summariser_input_tokens", Float),
            c("summariser_output_tokens", Float),
            c("summariser_cost_usd", Float),
            c("error", Str),
        ],
    },
    TableSpec {
        name: "prunes",
        columns: &[
            c("home", Str),
            c("log", Str),
            c("key", Str),
            c("session_key", Str),
            c("session", Str),
            c("seq", Int),
            c("time", Time),
            c("turn", Int),
            c("shadowed_start", Int),
            c("shadowed_end", Int),
            c("shadowed_nodes", Int),
            c("shadowed_tokens", Float),
        ],
    },
    TableSpec {
        name: "locks",
        columns: &[
            c("home", Str),
            c("log", Str),
            c("key", Str),
            c("session_key", Str),
            c("session", Str),
            c("start_seq", Int),
            c("compaction_id", Str),
            c("time", Time),
            c("turn", Int),
            c("status", Str),
            c("end_seq", Int),
            c("error", Str),
            c("end_seed_seq", Int),
            c("superseded_by", Int),
            c("summary_seq", Int),
            c("checkpoint_seq", Int),
        ],
    },
    TableSpec {
        name: "findings",
        columns: &[
            c("home", Str),
            c("log", Str),
            c("key", Str),
            c("session_key", Str),
            c("session", Str),
            c("project", Str),
            c("kind", Str),
            c("severity", Str),
            c("first_seq", Int),
            c("seqs", Str),
            c("message", Str),
            c("tokens", Float),
            c("cost_usd", Float),
            c("unpriced", Int),
        ],
    },
];

/// Where a log was found: the label of its home and its path there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Place {
    /// The home's label (`--home-label NAME=PATH`, else the home
    /// directory's name).
    pub home: String,
    /// The log's path relative to the home, `/`-separated.
    pub log: String,
}

impl Place {
    /// The session row's key: `HOME:LOG`.
    pub(crate) fn key(&self) -> String {
        format!("{}:{}", self.home, self.log)
    }
}

/// One value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Null.
    Null,
    /// Text.
    Str(String),
    /// Integer.
    Int(i64),
    /// Float.
    Float(f64),
    /// Boolean.
    Bool(bool),
    /// Epoch milliseconds.
    Time(i64),
}

impl Cell {
    fn str(s: Option<impl Into<String>>) -> Cell {
        s.map_or(Cell::Null, |s| Cell::Str(s.into()))
    }
    fn int(n: Option<u64>) -> Cell {
        n.map_or(Cell::Null, |n| Cell::Int(n as i64))
    }
    fn float(x: Option<f64>) -> Cell {
        x.map_or(Cell::Null, Cell::Float)
    }
    fn time(t: Option<i64>) -> Cell {
        t.map_or(Cell::Null, Cell::Time)
    }
    /// As JSON (times as RFC 3339 strings).
    fn to_value(&self) -> OwnedValue {
        match self {
            Cell::Null => Value::Null,
            Cell::Str(s) => s.as_str().into(),
            Cell::Int(n) => (*n).into(),
            Cell::Float(x) => Value::Num(*x),
            Cell::Bool(b) => (*b).into(),
            Cell::Time(t) => civil::rfc3339(*t).into(),
        }
    }
}

/// One row: one [`Cell`] per column of its table.
pub(crate) type Row = Vec<Cell>;

/// The rows of one log, per table ([`TABLES`] order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogRows {
    /// Rows per table.
    pub tables: [Vec<Row>; 6],
    /// The last seq the reader folded (what an incremental export
    /// remembers).
    pub last_seq: Option<u64>,
}

/// How [`rows_of`] reads.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The sessions scan (loader options, config).
    pub scan: ScanOptions,
    /// Prices for the cost columns.
    pub prices: PriceTable,
    /// The health thresholds of the `findings` table (no clock: a turn
    /// still open at the end of a log is not called abandoned).
    pub thresholds: Thresholds,
    /// Also count each agent request's prompt in a provider's own tokens
    /// (the requests table's `provider_*` columns; null without).
    pub tokenizer: Option<crate::meter::tokenizer::Encoding>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            scan: ScanOptions::default(),
            prices: PriceTable::builtin(),
            thresholds: Thresholds::default(),
            tokenizer: None,
        }
    }
}

/// A `compaction/summary` or `compaction/prune`, as logged.
#[derive(Debug, Clone, Default)]
struct Shadowing {
    seq: u64,
    time: Option<i64>,
    turn: Option<u64>,
    compaction_id: Option<String>,
    start: Option<u64>,
    end: Option<u64>,
    nodes: Option<u64>,
    tokens: Option<f64>,
    provider: Option<String>,
    model: Option<String>,
    input: Option<f64>,
    output: Option<f64>,
}

#[derive(Default)]
struct Facts {
    summaries: Vec<Shadowing>,
    prunes: Vec<Shadowing>,
    attempts: Attempts,
    modes: Modes,
    /// Each bracket's mode as the log records it, by its start seq.
    bracket_modes: HashMap<u64, CompactionMode>,
    last_seq: Option<u64>,
}

fn whole(x: Option<f64>) -> Option<u64> {
    x.filter(|t| *t >= 0.0 && t.fract() == 0.0 && *t < 9.0e15)
        .map(|t| t as u64)
}

fn id_text(v: &Value<'_>) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Str(_) => v.as_str().map(|s| s.into_owned()),
        other => Some(other.to_json()),
    }
}

impl Extra for Facts {
    fn event(&mut self, ev: &Event<'_>) {
        self.last_seq = Some(ev.seq);
        let seen = self.attempts.event(ev);
        if let Some(mode) = self.modes.event(ev, &seen) {
            self.bracket_modes.insert(ev.seq, mode);
        }
        if !matches!(ev.kind, Kind::CompactionSummary | Kind::CompactionPrune) {
            return;
        }
        let d = ev.data();
        let range = d.get("shadowedRange");
        let num = |v: Option<&Value<'_>>| v.and_then(|x| x.as_f64());
        let text = |k: &str| d.get(k).and_then(|x| x.as_str()).map(|s| s.into_owned());
        let usage = d.get("usage").filter(|u| u.is_obj());
        let s = Shadowing {
            seq: ev.seq,
            time: civil::recorded(ev.time()),
            turn: whole(ev.turn()),
            compaction_id: d.get("compactionId").and_then(id_text),
            start: whole(num(range.and_then(|r| r.get("start")))),
            end: whole(num(range.and_then(|r| r.get("end")))),
            nodes: d
                .get("shadowedSeqs")
                .and_then(|a| a.as_arr())
                .map(|a| a.len() as u64),
            tokens: num(d.get("shadowedTokenCount")),
            provider: text("provider"),
            model: text("model"),
            input: usage.map(|u| {
                let t = crate::usage::tokens_of(u);
                t.input + t.cache_read + t.cache_write
            }),
            output: usage.map(|u| crate::usage::tokens_of(u).output),
        };
        match ev.kind {
            Kind::CompactionSummary => self.summaries.push(s),
            _ => self.prunes.push(s),
        }
    }

    fn restart(&mut self) {
        *self = Facts::default();
    }
}

/// With `opts.tokenizer`: each request's prompt, by seq, as `dsh cache
/// --tokenizer` sizes it (the request as the provider renders it where it
/// was sent, with a placeholder log's hidden prefix); empty without, or
/// where the analysis fails (the columns stay null).
fn provider_prompts(src: &LogSource, opts: &ExportOptions) -> HashMap<u64, u64> {
    let Some(enc) = opts.tokenizer else {
        return HashMap::new();
    };
    enc.load();
    let copts = CacheOptions {
        tokenizer: Some(enc),
        ..CacheOptions::default()
    };
    match crate::hidden_prefix::analyse(src, &opts.scan.load, &copts) {
        Ok((report, _)) => report
            .requests
            .iter()
            .map(|r| (r.seq, r.prompt_tokens))
            .collect(),
        Err(_) => HashMap::new(),
    }
}

/// Read one log into its rows, found at `place`.
pub fn rows_of(src: &LogSource, place: &Place, opts: &ExportOptions) -> Result<LogRows, Refused> {
    let mut facts = Facts::default();
    let health_opts = HealthOptions {
        scan: opts.scan.clone(),
        prices: opts.prices.clone(),
        thresholds: opts.thresholds,
        now: None,
    };
    let (health, s, locks) = crate::health::scan_with(src, &health_opts, Some(&mut facts))?;
    // Each request's prompt as the cache analysis prices it: the surface
    // as it stood when the attempt began, with the header (one pass).
    let analysis = cache::analyse(src, &opts.scan.load, &CacheOptions::default()).ok();
    let mut prompt: HashMap<u64, u64> = HashMap::new();
    let mut checkpoint: HashMap<u64, u64> = HashMap::new();
    if let Some(a) = &analysis {
        prompt.extend(a.requests.iter().map(|r| (r.seq, r.prompt_tokens)));
        checkpoint.extend(
            a.replacements
                .iter()
                .filter(|r| r.kind == cache::ReplaceKind::Compaction)
                .map(|r| (r.seq, r.replacement_tokens)),
        );
    }
    let provider = provider_prompts(src, opts);
    let ctx = RowCtx {
        place,
        session_key: place.key(),
        session: &s,
    };
    let mut out = LogRows {
        last_seq: facts.last_seq,
        ..LogRows::default()
    };
    out.tables[0].push(session_row(&ctx, &opts.prices, health.findings.len()));
    for r in &s.requests {
        let (priced, confirmed) = match opts.prices.price(&r.provider, &r.model, r.time, &r.tokens)
        {
            Priced::Cost { usd, confirmed, .. } => (Some(usd), Some(confirmed)),
            _ => (None, None),
        };
        let surface = (r.caller == Caller::Agent)
            .then(|| prompt.get(&r.seq).map(|p| *p as f64))
            .flatten();
        let percent = |tokens: Option<f64>| match (tokens, s.context_window) {
            (Some(t), Some(w)) if w > 0.0 => Some(t / w * 100.0),
            _ => None,
        };
        let pressure = percent(surface);
        let theirs = (r.caller == Caller::Agent)
            .then(|| provider.get(&r.seq).map(|p| *p as f64))
            .flatten();
        let t = &r.tokens;
        let mut row = ctx.head(format!("#{}", r.seq));
        row.extend([
            Cell::Int(r.seq as i64),
            Cell::Str(r.caller.as_str().into()),
            Cell::int(r.turn),
            Cell::int(r.step),
            Cell::time(r.time),
            Cell::Str(r.provider.clone()),
            Cell::Str(r.model.clone()),
            Cell::Float(t.input),
            Cell::Float(t.cache_read),
            Cell::Float(t.cache_write),
            Cell::Float(t.output),
            Cell::Float(t.reasoning),
            Cell::float(priced),
            confirmed.map_or(Cell::Null, Cell::Bool),
            Cell::float(surface),
            Cell::float(pressure),
            match opts.tokenizer {
                Some(enc) => Cell::Str(enc.name().into()),
                None => Cell::Null,
            },
            Cell::float(theirs),
            Cell::float(percent(theirs)),
        ]);
        out.tables[1].push(row);
    }
    compaction_rows(&ctx, &locks, &facts, &checkpoint, opts, &mut out.tables[2]);
    for p in &facts.prunes {
        let mut row = ctx.head(format!("#{}", p.seq));
        row.extend([
            Cell::Int(p.seq as i64),
            Cell::time(p.time),
            Cell::int(p.turn),
            Cell::int(p.start),
            Cell::int(p.end),
            Cell::int(p.nodes),
            Cell::float(p.tokens),
        ]);
        out.tables[3].push(row);
    }
    for b in &locks.brackets {
        let mut row = ctx.head(format!("#{}", b.seq));
        row.extend([
            Cell::Int(b.seq as i64),
            Cell::str(id_text(&b.compaction_id)),
            Cell::time(civil::recorded(b.time)),
            Cell::int(whole(b.turn.as_f64())),
            Cell::Str(b.status.as_str().into()),
            Cell::int(b.end_seq),
            Cell::str(b.error.as_ref().and_then(id_text)),
            Cell::int(b.end_seed_seq),
            Cell::int(b.superseded_by),
            Cell::int(b.summary_seq),
            Cell::int(b.checkpoint_seq),
        ]);
        out.tables[4].push(row);
    }
    finding_rows(&ctx, &health, &mut out.tables[5]);
    Ok(out)
}

/// What every row of one log begins with.
struct RowCtx<'a> {
    place: &'a Place,
    session_key: String,
    session: &'a Session,
}

impl RowCtx<'_> {
    /// `home, log, key, session_key, session` of a row keyed `suffix`.
    fn head(&self, suffix: String) -> Row {
        vec![
            Cell::Str(self.place.home.clone()),
            Cell::Str(self.place.log.clone()),
            Cell::Str(format!("{}{suffix}", self.session_key)),
            Cell::Str(self.session_key.clone()),
            Cell::Str(self.session.id.clone()),
        ]
    }
}

fn finding_rows(ctx: &RowCtx<'_>, health: &SessionHealth, rows: &mut Vec<Row>) {
    for f in &health.findings {
        let first = f.seqs.first().copied();
        let mut row = ctx.head(format!("#{}@{}", f.kind.as_str(), first.unwrap_or(0)));
        let seqs: Vec<String> = f.seqs.iter().map(u64::to_string).collect();
        row.extend([
            Cell::str(ctx.session.project.clone()),
            Cell::Str(f.kind.as_str().into()),
            Cell::Str(f.severity.as_str().into()),
            Cell::int(first),
            Cell::Str(seqs.join(",")),
            Cell::Str(f.message.clone()),
            Cell::Float(f.cost.tokens),
            Cell::Float(f.cost.usd),
            Cell::Int(f.cost.unpriced as i64),
        ]);
        rows.push(row);
    }
}

fn session_row(ctx: &RowCtx<'_>, prices: &PriceTable, findings: usize) -> Row {
    let s = ctx.session;
    let sums = session_sums(&s.requests, prices);
    let by = |caller: Caller| {
        let mine: Vec<crate::usage::Request> = s
            .requests
            .iter()
            .filter(|r| r.caller == caller)
            .cloned()
            .collect();
        session_sums(&mine, prices).cost
    };
    let t = &sums.tokens;
    vec![
        Cell::Str(ctx.place.home.clone()),
        Cell::Str(ctx.place.log.clone()),
        Cell::Str(ctx.session_key.clone()),
        Cell::Str(s.id.clone()),
        Cell::Str(s.file.clone()),
        Cell::str(s.project.clone()),
        Cell::str(s.parent.clone()),
        Cell::str(s.fork_of.clone()),
        Cell::str(s.title.clone()),
        Cell::time(s.started),
        Cell::time(s.last_activity),
        Cell::Int(s.turns as i64),
        Cell::Int(s.events as i64),
        Cell::Int(s.size as i64),
        Cell::Int(s.generation as i64),
        Cell::str(s.route.as_ref().map(|r| r.0.clone())),
        Cell::str(s.route.as_ref().map(|r| r.1.clone())),
        Cell::float(s.surface_tokens),
        Cell::float(s.context_window),
        Cell::float(s.pressure),
        s.over_threshold.map_or(Cell::Null, Cell::Bool),
        Cell::Int(s.compactions as i64),
        Cell::Int(s.prunes as i64),
        Cell::Str(s.lock.as_str().into()),
        Cell::Int(s.busy_locks as i64),
        Cell::Int(s.stale_locks as i64),
        Cell::Int((sums.requests + sums.summariser_requests) as i64),
        Cell::Int(sums.requests as i64),
        Cell::Int(sums.summariser_requests as i64),
        Cell::Int(s.inherited_requests as i64),
        Cell::Float(t.input),
        Cell::Float(t.cache_read),
        Cell::Float(t.cache_write),
        Cell::Float(t.output),
        Cell::Float(t.reasoning),
        Cell::float(sums.cost()),
        Cell::Float(by(Caller::Agent)),
        Cell::Float(by(Caller::Summariser)),
        Cell::Int(sums.without_cost() as i64),
        Cell::Int(findings as i64),
        Cell::str(s.meter_error.clone()),
    ]
}

/// One row per compaction bracket, joined with its summary; a summary with
/// no bracket gets a row of its own.
fn compaction_rows(
    ctx: &RowCtx<'_>,
    locks: &LockReport,
    facts: &Facts,
    checkpoint: &HashMap<u64, u64>,
    opts: &ExportOptions,
    rows: &mut Vec<Row>,
) {
    let s = ctx.session;
    let by_seq: BTreeMap<u64, &Shadowing> = facts.summaries.iter().map(|x| (x.seq, x)).collect();
    let mut used: Vec<u64> = Vec::new();
    let mut push = |b: Option<&crate::lock::Bracket>, sum: Option<&Shadowing>| {
        let cp = b.and_then(|b| b.checkpoint_seq);
        let mode = b.and_then(|b| facts.bracket_modes.get(&b.seq));
        let cost = sum.and_then(|x| {
            let r = s.requests.iter().find(|r| r.seq == x.seq)?;
            match opts.prices.price(&r.provider, &r.model, r.time, &r.tokens) {
                Priced::Cost { usd, .. } => Some(usd),
                _ => None,
            }
        });
        let key = b.map_or_else(
            || format!("#s{}", sum.map_or(0, |x| x.seq)),
            |b| format!("#c{}", b.seq),
        );
        let mut row = ctx.head(key);
        row.extend([
            Cell::str(
                b.and_then(|b| id_text(&b.compaction_id))
                    .or_else(|| sum.and_then(|x| x.compaction_id.clone())),
            ),
            Cell::int(b.map(|b| b.seq)),
            Cell::int(b.and_then(|b| b.end_seq)),
            Cell::int(sum.map(|x| x.seq)),
            Cell::int(cp),
            Cell::time(
                b.and_then(|b| civil::recorded(b.time))
                    .or_else(|| sum.and_then(|x| x.time)),
            ),
            Cell::int(
                b.and_then(|b| whole(b.turn.as_f64()))
                    .or_else(|| sum.and_then(|x| x.turn)),
            ),
            Cell::str(mode.map(|m| m.as_str())),
            Cell::str(b.map(|b| b.status.as_str())),
            Cell::int(sum.and_then(|x| x.start)),
            Cell::int(sum.and_then(|x| x.end)),
            Cell::int(sum.and_then(|x| x.nodes)),
            Cell::float(sum.and_then(|x| x.tokens)),
            Cell::float(cp.and_then(|c| checkpoint.get(&c)).map(|t| *t as f64)),
            Cell::str(sum.and_then(|x| x.provider.clone())),
            Cell::str(sum.and_then(|x| x.model.clone())),
            Cell::float(sum.and_then(|x| x.input)),
            Cell::float(sum.and_then(|x| x.output)),
            Cell::float(cost),
            Cell::str(b.and_then(|b| b.error.as_ref()).and_then(id_text)),
        ]);
        rows.push(row);
    };
    for b in &locks.brackets {
        let sum = b.summary_seq.and_then(|q| by_seq.get(&q).copied());
        if let Some(x) = sum {
            used.push(x.seq);
        }
        push(Some(b), sum);
    }
    for x in &facts.summaries {
        if !used.contains(&x.seq) {
            push(None, Some(x));
        }
    }
}

/// Read back the rows of a Parquet file written for `table` (an
/// incremental export rewrites the files that held a changed log's rows).
pub(crate) fn read_parquet(
    path: &std::path::Path,
    table: &TableSpec,
) -> Result<Vec<Row>, ExportError> {
    #[cfg(feature = "parquet")]
    {
        parquet_writer::read(path, table)
    }
    #[cfg(not(feature = "parquet"))]
    {
        let _ = (path, table);
        Err(ExportError::NoParquet)
    }
}

/// An export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Writing failed (the OS's message; the caller names the file).
    #[error("{0}")]
    Io(std::io::Error),
    /// This build has no Parquet writer.
    #[error(
        "--format parquet: this dsh was built without the `parquet` feature (rebuild with `cargo install --path . --features parquet`, or use --format csv|jsonl)"
    )]
    NoParquet,
    /// The Parquet writer refused.
    #[error("parquet: {0}")]
    Parquet(String),
}

impl From<std::io::Error> for ExportError {
    fn from(e: std::io::Error) -> Self {
        ExportError::Io(e)
    }
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Comma-separated values, a header row, RFC 4180 quoting.
    Csv,
    /// One JSON object per line.
    Jsonl,
    /// Apache Parquet (Snappy-compressed row groups).
    Parquet,
}

impl Format {
    /// `csv`, `jsonl`, `parquet`: also the file extension.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
            Format::Parquet => "parquet",
        }
    }

    /// Whether this build can write it.
    pub fn available(self) -> bool {
        self != Format::Parquet || cfg!(feature = "parquet")
    }

    /// A writer of `table` into `out` (CSV cells a spreadsheet would
    /// evaluate neutralised: see [`csv_record_with`]).
    pub fn writer<'w, W: Write + Send + 'w>(
        self,
        table: &'static TableSpec,
        out: W,
    ) -> Result<Box<dyn TableWriter + 'w>, ExportError> {
        self.writer_with(table, out, true)
    }

    /// [`Format::writer`], saying whether CSV cells are guarded against
    /// formula injection (`csv_guard`; other formats ignore it).
    pub fn writer_with<'w, W: Write + Send + 'w>(
        self,
        table: &'static TableSpec,
        out: W,
        csv_guard: bool,
    ) -> Result<Box<dyn TableWriter + 'w>, ExportError> {
        match self {
            Format::Csv => {
                let mut w = std::io::BufWriter::new(out);
                let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
                w.write_all(csv_record_with(&names, csv_guard).as_bytes())?;
                Ok(Box::new(CsvWriter {
                    out: w,
                    guard: csv_guard,
                }))
            }
            Format::Jsonl => Ok(Box::new(JsonlWriter {
                out: std::io::BufWriter::new(out),
                table,
            })),
            #[cfg(feature = "parquet")]
            Format::Parquet => Ok(Box::new(parquet_writer::ParquetWriter::new(table, out)?)),
            #[cfg(not(feature = "parquet"))]
            Format::Parquet => Err(ExportError::NoParquet),
        }
    }
}

/// Writes rows of one table in one format. Rows are taken as they come;
/// a writer keeps at most one row group.
pub trait TableWriter {
    /// Write these rows.
    fn write_rows(&mut self, rows: &[Row]) -> Result<(), ExportError>;
    /// Flush and close (a Parquet file writes its footer).
    fn finish(self: Box<Self>) -> Result<(), ExportError>;
}

/// Whether a spreadsheet would read this CSV cell as a formula: it starts
/// with `=`, `+`, `-`, `@`, a tab or a carriage return (OWASP's list) and
/// is not a plain number (`-3`, `-0.25`, `-1e-7` stay numbers).
fn csv_formula(f: &str) -> bool {
    f.starts_with(['=', '+', '-', '@', '\t', '\r']) && !plain_number(f)
}

fn plain_number(f: &str) -> bool {
    let body = f.strip_prefix(['-', '+']).unwrap_or(f);
    body.starts_with(|c: char| c.is_ascii_digit())
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && f.parse::<f64>().is_ok_and(f64::is_finite)
}

/// One CSV record of `fields` (RFC 4180: a field with a comma, quote or
/// line break is quoted), with its line end. With `guard`, a cell a spreadsheet would
/// evaluate (`csv_formula`) gets a leading `'` and is quoted, as OWASP
/// recommends against CSV injection: `=HYPERLINK(…)` is written
/// `"'=HYPERLINK(…)"` and shows as text. Without it, every cell is written
/// as it is (for pipelines that want the raw values).
pub fn csv_record_with<S: AsRef<str>>(fields: &[S], guard: bool) -> String {
    let mut out = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let f = f.as_ref();
        let neutralise = guard && csv_formula(f);
        if neutralise || f.contains([',', '"', '\n', '\r']) {
            out.push('"');
            if neutralise {
                out.push('\'');
            }
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
    out
}

struct CsvWriter<W: Write> {
    out: std::io::BufWriter<W>,
    guard: bool,
}

impl<W: Write> TableWriter for CsvWriter<W> {
    fn write_rows(&mut self, rows: &[Row]) -> Result<(), ExportError> {
        for r in rows {
            let fields: Vec<String> = r
                .iter()
                .map(|c| match c {
                    Cell::Null => String::new(),
                    Cell::Str(s) => s.clone(),
                    Cell::Int(n) => n.to_string(),
                    Cell::Float(x) => Value::Num(*x).to_json(),
                    Cell::Bool(b) => b.to_string(),
                    Cell::Time(t) => civil::rfc3339(*t),
                })
                .collect();
            self.out
                .write_all(csv_record_with(&fields, self.guard).as_bytes())?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        self.out.flush()?;
        Ok(())
    }
}

struct JsonlWriter<W: Write> {
    out: std::io::BufWriter<W>,
    table: &'static TableSpec,
}

impl<W: Write> TableWriter for JsonlWriter<W> {
    fn write_rows(&mut self, rows: &[Row]) -> Result<(), ExportError> {
        for r in rows {
            let mut v = Value::obj();
            for (col, cell) in self.table.columns.iter().zip(r) {
                v = v.with(col.name, cell.to_value());
            }
            self.out.write_all(v.to_json().as_bytes())?;
            self.out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        self.out.flush()?;
        Ok(())
    }
}

/// Read `sources` with `jobs` threads (at least one) and hand each log's
/// rows to `each` in input order, as soon as it and every log before it
/// are read. `each` returning an error stops the run (logs being read are
/// finished, none is started).
pub fn export_many<E>(
    sources: &[(LogSource, Place)],
    opts: &ExportOptions,
    jobs: usize,
    each: &mut dyn FnMut(usize, Result<LogRows, Refused>) -> Result<(), E>,
) -> Result<(), E> {
    read_in_order(sources, opts, jobs.clamp(1, sources.len().max(1)), each)
}

/// [`export_many`] on up to `jobs` reading threads; when none starts (or
/// `jobs` is 0) this thread reads each log in turn.
fn read_in_order<E>(
    sources: &[(LogSource, Place)],
    opts: &ExportOptions,
    jobs: usize,
    each: &mut dyn FnMut(usize, Result<LogRows, Refused>) -> Result<(), E>,
) -> Result<(), E> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Result<LogRows, Refused>)>(jobs * 2);
    std::thread::scope(|scope| {
        let mut started = 0;
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            let reading = move || {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((src, place)) = sources.get(i) else {
                        break;
                    };
                    if tx.send((i, rows_of(src, place, opts))).is_err() {
                        break;
                    }
                }
            };
            // A thread that cannot start (a process short of memory or
            // threads) leaves its share to the others.
            if std::thread::Builder::new()
                .spawn_scoped(scope, reading)
                .is_err()
            {
                break;
            }
            started += 1;
        }
        drop(tx);
        if started == 0 {
            // None started: this thread reads each log in turn.
            for (i, (src, place)) in sources.iter().enumerate() {
                each(i, rows_of(src, place, opts))?;
            }
            return Ok(());
        }
        let mut pending: BTreeMap<usize, Result<LogRows, Refused>> = BTreeMap::new();
        let mut want = 0usize;
        let mut result = Ok(());
        for (i, r) in rx {
            if result.is_err() {
                continue;
            }
            pending.insert(i, r);
            while let Some(r) = pending.remove(&want) {
                if let Err(e) = each(want, r) {
                    stop.store(true, Ordering::Relaxed);
                    result = Err(e);
                    break;
                }
                want += 1;
            }
        }
        result
    })
}

#[cfg(feature = "parquet")]
mod parquet_writer {
    //! Parquet through the low-level column writers of the `parquet` crate.
    use std::io::Write;
    use std::sync::Arc;

    use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical};
    use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, DoubleType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
    use parquet::schema::types::Type;

    use super::{Cell, ColumnType, ExportError, Row, TableSpec, TableWriter};

    /// Rows per row group.
    const GROUP_ROWS: usize = 65_536;

    fn perr(e: parquet::errors::ParquetError) -> ExportError {
        ExportError::Parquet(e.to_string())
    }

    /// One optional column of physical type `T`: the present values (as
    /// `value` picks them out of their cells) and a definition level per row.
    fn write_column<'c, T: DataType>(
        w: &mut SerializedColumnWriter<'_>,
        cells: impl Iterator<Item = &'c Cell>,
        levels: &[i16],
        value: impl Fn(&Cell) -> Option<T::T>,
    ) -> Result<(), ExportError> {
        let values: Vec<T::T> = cells.filter_map(value).collect();
        w.typed::<T>()
            .write_batch(&values, Some(levels), None)
            .map_err(perr)?;
        Ok(())
    }

    pub(super) struct ParquetWriter<W: Write + Send> {
        file: SerializedFileWriter<W>,
        table: &'static TableSpec,
        buf: Vec<Row>,
    }

    impl<W: Write + Send> ParquetWriter<W> {
        pub(super) fn new(table: &'static TableSpec, out: W) -> Result<Self, ExportError> {
            let fields = table
                .columns
                .iter()
                .map(|c| {
                    let (phys, logical) = match c.ty {
                        ColumnType::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                        ColumnType::Int => (Physical::INT64, None),
                        ColumnType::Float => (Physical::DOUBLE, None),
                        ColumnType::Bool => (Physical::BOOLEAN, None),
                        ColumnType::Time => (
                            Physical::INT64,
                            Some(LogicalType::timestamp(true, TimeUnit::MILLIS)),
                        ),
                    };
                    Type::primitive_type_builder(c.name, phys)
                        .with_repetition(Repetition::OPTIONAL)
                        .with_logical_type(logical)
                        .build()
                        .map(Arc::new)
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(perr)?;
            let schema = Type::group_type_builder("schema")
                .with_fields(fields)
                .build()
                .map_err(perr)?;
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_created_by(format!("dsh {}", env!("CARGO_PKG_VERSION")))
                .build();
            let file =
                SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props)).map_err(perr)?;
            Ok(ParquetWriter {
                file,
                table,
                buf: Vec::new(),
            })
        }

        fn flush_group(&mut self) -> Result<(), ExportError> {
            if self.buf.is_empty() {
                return Ok(());
            }
            let mut group = self.file.next_row_group().map_err(perr)?;
            for (i, col) in self.table.columns.iter().enumerate() {
                let mut w = group
                    .next_column()
                    .map_err(perr)?
                    .ok_or_else(|| ExportError::Parquet("missing column writer".into()))?;
                let cells = || self.buf.iter().map(|r| &r[i]);
                let levels: Vec<i16> = cells().map(|c| i16::from(*c != Cell::Null)).collect();
                match col.ty {
                    ColumnType::Str => {
                        write_column::<ByteArrayType>(&mut w, cells(), &levels, |c| match c {
                            Cell::Str(s) => Some(ByteArray::from(s.as_str())),
                            _ => None,
                        })?
                    }
                    ColumnType::Int | ColumnType::Time => {
                        write_column::<Int64Type>(&mut w, cells(), &levels, |c| match c {
                            Cell::Int(n) | Cell::Time(n) => Some(*n),
                            _ => None,
                        })?
                    }
                    ColumnType::Float => {
                        write_column::<DoubleType>(&mut w, cells(), &levels, |c| match c {
                            Cell::Float(x) => Some(*x),
                            _ => None,
                        })?
                    }
                    ColumnType::Bool => {
                        write_column::<BoolType>(&mut w, cells(), &levels, |c| match c {
                            Cell::Bool(b) => Some(*b),
                            _ => None,
                        })?
                    }
                }
                w.close().map_err(perr)?;
            }
            group.close().map_err(perr)?;
            self.buf.clear();
            Ok(())
        }
    }

    /// Read back the rows of a Parquet file this module wrote for `table`.
    pub(super) fn read(path: &std::path::Path, table: &TableSpec) -> Result<Vec<Row>, ExportError> {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::Field;
        let file = std::fs::File::open(path)?;
        let reader = SerializedFileReader::new(file).map_err(perr)?;
        let mut out = Vec::new();
        for row in reader.get_row_iter(None).map_err(perr)? {
            let row = row.map_err(perr)?;
            let mut cells = Vec::with_capacity(table.columns.len());
            for ((_, field), col) in row.get_column_iter().zip(table.columns) {
                cells.push(match (field, col.ty) {
                    (Field::Null, _) => Cell::Null,
                    (Field::Str(s), _) => Cell::Str(s.clone()),
                    (Field::Long(n), ColumnType::Time) => Cell::Time(*n),
                    (Field::Long(n), _) => Cell::Int(*n),
                    (Field::TimestampMillis(n), _) => Cell::Time(*n),
                    (Field::Double(x), _) => Cell::Float(*x),
                    (Field::Bool(b), _) => Cell::Bool(*b),
                    (other, _) => {
                        return Err(ExportError::Parquet(format!(
                            "{}: unexpected value {other} in column {}",
                            path.display(),
                            col.name
                        )));
                    }
                });
            }
            out.push(cells);
        }
        Ok(out)
    }

    impl<W: Write + Send> TableWriter for ParquetWriter<W> {
        fn write_rows(&mut self, rows: &[Row]) -> Result<(), ExportError> {
            self.buf.extend_from_slice(rows);
            if self.buf.len() >= GROUP_ROWS {
                self.flush_group()?;
            }
            Ok(())
        }

        fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
            self.flush_group()?;
            self.file.close().map_err(perr)?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_read_on_this_thread_come_as_threads_give_them() {
        // No reading thread could start: the same rows, in the same order.
        let sources: Vec<(LogSource, Place)> = [
            "samples/compacted.jsonl",
            "samples/nope.jsonl",
            "samples/compacted.jsonl",
        ]
        .iter()
        .map(|p| (LogSource::File(p.into()), Place::default()))
        .collect();
        let opts = ExportOptions::default();
        let run = |jobs| {
            let mut got = Vec::new();
            read_in_order(&sources, &opts, jobs, &mut |i, r| {
                got.push((i, r.map_err(|e| e.file)));
                Ok::<(), ()>(())
            })
            .unwrap();
            got
        };
        let here = run(0);
        assert_eq!(here.len(), 3);
        assert!(here[0].1.as_ref().is_ok_and(|r| !r.tables[0].is_empty()));
        assert!(here[1].1.is_err());
        assert_eq!(here, run(2));
    }

    #[test]
    fn rows_match_their_columns() {
        for f in ["samples/compacted.jsonl", "samples/coding-session.jsonl"] {
            let rows = rows_of(
                &LogSource::File(f.into()),
                &Place::default(),
                &ExportOptions::default(),
            )
            .unwrap();
            for (t, spec) in rows.tables.iter().zip(&TABLES) {
                for r in t {
                    assert_eq!(r.len(), spec.columns.len(), "{}", spec.name);
                    for (cell, col) in r.iter().zip(spec.columns) {
                        let ok = matches!(
                            (cell, col.ty),
                            (Cell::Null, _)
                                | (Cell::Str(_), ColumnType::Str)
                                | (Cell::Int(_), ColumnType::Int)
                                | (Cell::Float(_), ColumnType::Float)
                                | (Cell::Bool(_), ColumnType::Bool)
                                | (Cell::Time(_), ColumnType::Time)
                        );
                        assert!(ok, "{}.{}: {cell:?}", spec.name, col.name);
                    }
                }
            }
        }
    }

    #[test]
    fn csv_cells_a_spreadsheet_would_evaluate_are_neutralised() {
        for t in [
            "=1+1",
            "+cmd|' /C calc'!A0",
            "-2+3",
            "@SUM(A1)",
            "\tx",
            "\rx",
            "=HYPERLINK(\"http://x\",\"y\")",
        ] {
            let guarded = csv_record_with(&[t], true);
            assert!(guarded.starts_with("\"'"), "{t:?} -> {guarded:?}");
            let raw = csv_record_with(&[t], false);
            assert!(
                !raw.starts_with("\"'") && !raw.starts_with('\''),
                "{t:?} -> {raw:?}"
            );
            assert_eq!(
                raw.trim_end_matches('\n')
                    .trim_matches('"')
                    .replace("\"\"", "\""),
                t
            );
        }
        for plain in [
            "-3",
            "-0.25",
            "+7",
            "-1e-7",
            "abc",
            "",
            "a=b",
            "2026-01-01T00:00:00Z",
        ] {
            assert!(!csv_formula(plain), "{plain:?}");
            assert_eq!(csv_record_with(&[plain], true), format!("{plain}\n"));
        }
    }

    #[test]
    fn csv_quotes() {
        assert_eq!(
            csv_record_with(&["a", "b,c", "d\"e"], true),
            "a,\"b,c\",\"d\"\"e\"\n"
        );
    }
}
