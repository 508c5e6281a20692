//! `dsh statusline --json` and `dsh watch --json`: a session now.

use schemars::JsonSchema;
use serde::Serialize;

use super::sessions::{Route, percent};
use super::{Document, SchemaVersion};
use crate::price::{PriceTable, Priced};
use crate::status::cache::{Entry, Fresh};
use crate::status::{Forecast as Forecasting, Snapshot};

/// One session's pressure, the tokens left before its compaction
/// threshold, its cost and today's cost over the home, for a prompt or a
/// status bar.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Statusline<'a> {
    /// The log shown.
    pub file: String,
    /// The session id of the log's header.
    pub session: &'a str,
    /// The project (the header's working directory).
    pub project: Option<&'a str>,
    /// The routed provider/model (the latest request/header).
    pub route: Option<Route<'a>>,
    /// DSH's own token figure for the next request (measure's totalTokens).
    pub tokens: Option<f64>,
    /// The routed window.
    pub context_window: Option<f64>,
    /// The compaction threshold of the route's policy.
    pub threshold_tokens: Option<f64>,
    /// tokens as a percentage of contextWindow, two decimals.
    pub pressure_percent: Option<f64>,
    /// thresholdTokens minus tokens (negative when over).
    pub to_compaction: Option<f64>,
    /// The session's cost (null when no request has a price).
    pub cost_usd: Option<f64>,
    /// Requests without a price.
    pub unpriced_requests: u64,
    /// Today's cost over every session of the home.
    pub today: Today,
    /// The zone today is in.
    pub tz: String,
    /// Where the figures came from.
    pub source: Fresh,
    /// The line as printed without --json.
    pub line: String,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Statusline<'_> {
    const NAME: &'static str = "statusline";
    const TITLE: &'static str = "dsh statusline --json";
}

/// Today's cost.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Today {
    /// Today in tz.
    #[schemars(regex(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
    pub date: String,
    /// The cost of today's requests over every session of the home written
    /// to today.
    pub cost_usd: f64,
    /// Today's requests without a price.
    pub unpriced_requests: u64,
}

impl<'a> Statusline<'a> {
    /// The document of a cached entry, today's cost and the line shown.
    pub fn of(
        file: String,
        e: &'a Entry,
        today: Today,
        tz: String,
        source: Fresh,
        line: String,
    ) -> Statusline<'a> {
        Statusline {
            file,
            session: &e.session,
            project: e.project.as_deref(),
            route: Route::of(&e.route),
            tokens: e.tokens,
            context_window: e.window,
            threshold_tokens: e.threshold,
            pressure_percent: percent(e.pressure()),
            to_compaction: e.to_compaction(),
            cost_usd: e.cost,
            unpriced_requests: e.unpriced,
            today,
            tz,
            source,
            line,
            schema_version: SchemaVersion,
        }
    }
}

/// A session as it stands after each change while it is being written.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Watch<'a> {
    /// The log watched.
    pub file: &'a str,
    /// The session id of the log's header.
    pub session: &'a str,
    /// The project (the header's working directory).
    pub project: Option<&'a str>,
    /// The routed provider/model (the latest request/header).
    pub route: Option<Route<'a>>,
    /// DSH's own token figure for the next request.
    pub tokens: Option<f64>,
    /// The routed window.
    pub context_window: Option<f64>,
    /// The compaction threshold.
    pub threshold_tokens: Option<f64>,
    /// tokens as a percentage of contextWindow, two decimals.
    pub pressure_percent: Option<f64>,
    /// thresholdTokens minus tokens (negative when over).
    pub to_compaction: Option<f64>,
    /// When the next compaction comes.
    pub forecast: Forecast,
    /// The last model request.
    pub last_request: Option<LastRequest>,
    /// The session's cost (null when no request has a price).
    pub cost_usd: Option<f64>,
    /// Model requests, the summariser's included.
    pub requests: u64,
    /// Compactions completed.
    pub compactions: u64,
    /// Prune passes.
    pub prunes: u64,
    /// Lifecycles (the first and every resume).
    #[schemars(range(min = 1))]
    pub lifecycles: u64,
    /// Events in the log.
    pub events: u64,
    /// The last event's time (milliseconds since the epoch).
    pub last_event_ms: Option<i64>,
    /// A line (or frame) is being written after the last complete one.
    pub writing: bool,
    /// A compaction holds a live lock.
    pub busy: bool,
    /// Why the log cannot be read now (once the file stands still).
    pub error: Option<&'a str>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Watch<'_> {
    const NAME: &'static str = "watch";
    const TITLE: &'static str = "dsh watch --json (one document a line)";
}

/// When the next compaction comes.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Forecast {
    /// At or over the threshold: a compaction comes before the next request.
    pub due: bool,
    /// At the current growth, the next compaction comes in this many
    /// requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64", range(min = 1))]
    pub requests: Option<u64>,
    /// Tokens a request adds, on average over the recent ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub per_request: Option<f64>,
}

/// The last model request.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastRequest {
    /// Its seq.
    pub seq: u64,
    /// The share of the prompt the provider read from its cache (reported).
    pub cache_hit: Option<f64>,
    /// What it cost (null without a price).
    pub cost_usd: Option<f64>,
}

impl<'a> Watch<'a> {
    /// The document of a snapshot (`error`: why the log cannot be read now).
    pub fn of(s: &'a Snapshot, error: Option<&'a str>, prices: &PriceTable) -> Watch<'a> {
        let forecast = match s.forecast() {
            Forecasting::Due => Forecast {
                due: true,
                requests: None,
                per_request: None,
            },
            Forecasting::In {
                requests,
                per_request,
            } => Forecast {
                due: false,
                requests: Some(requests),
                per_request: Some(per_request),
            },
            _ => Forecast {
                due: false,
                requests: None,
                per_request: None,
            },
        };
        let last_request = s.last_request().map(|r| LastRequest {
            seq: r.seq,
            cache_hit: crate::status::hit_rate(&r.tokens),
            cost_usd: match prices.price(&r.provider, &r.model, r.time, &r.tokens) {
                Priced::Cost { usd, .. } => Some(usd),
                _ => None,
            },
        });
        let cost = s.cost(prices);
        Watch {
            file: &s.file,
            session: &s.session,
            project: s.project.as_deref(),
            route: Route::of(&s.route),
            tokens: s.tokens,
            context_window: s.window,
            threshold_tokens: s.threshold,
            pressure_percent: percent(s.pressure()),
            to_compaction: s.to_compaction(),
            forecast,
            last_request,
            cost_usd: cost.cost(),
            requests: cost.requests + cost.summariser_requests,
            compactions: s.compactions,
            prunes: s.prunes,
            lifecycles: s.lifecycles,
            events: s.events,
            last_event_ms: s.last_time,
            writing: s.torn > 0,
            busy: s.busy,
            error,
            schema_version: SchemaVersion,
        }
    }
}
