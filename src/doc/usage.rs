//! `dsh usage --json` and `dsh usage --prices --json`: usage and cost by
//! group, and the price table.

use schemars::JsonSchema;
use serde::Serialize;

use super::error::LogRefusal;
use super::{Document, SchemaVersion};
use crate::price::{Origin, Price, Rates, Windows};
use crate::usage::{Group, GroupBy, Report, Sums};

/// Provider usage and its cost summed by day, week, month, session or
/// project (with --breakdown, per model too), with the logs that were
/// refused.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage<'a> {
    /// What the groups are.
    pub group_by: GroupBy,
    /// The time zone days, weeks and months are counted in.
    pub tz: String,
    /// The groups, in order: periods by time, others by cost then key;
    /// unknown keys last.
    pub groups: Vec<GroupSums<'a>>,
    /// Everything counted, and per provider and model.
    pub totals: Totals<'a>,
    /// Requests left out by --since/--until because their time is unknown.
    pub left_out_unknown_time: u64,
    /// The logs that were refused.
    pub logs: Vec<LogRefusal>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Usage<'_> {
    const NAME: &'static str = "usage";
    const TITLE: &'static str = "dsh usage --json";
}

/// One group's sums.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GroupSums<'a> {
    /// The label: `2026-07-09`, `2026-07` (weeks: their Monday), a session
    /// id, a project path; `unknown` for requests without a recorded time
    /// or sessions without a `cwd`.
    pub key: &'a str,
    /// Whether `key` is a real value (not `unknown`).
    pub known: bool,
    /// Grouped by session: which session.
    #[serde(flatten)]
    pub session: Option<SessionKeys<'a>>,
    /// The sums.
    #[serde(flatten)]
    pub sums: SumsDoc,
    /// With --breakdown: per provider and model.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<ModelSums<'a>>")]
    pub models: Option<Vec<ModelSums<'a>>>,
}

/// A session group's session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionKeys<'a> {
    /// The session id.
    pub session: &'a str,
    /// The log as given on the command line (`-` for standard input).
    pub file: Option<&'a str>,
    /// Its project.
    pub project: Option<&'a str>,
}

/// Everything counted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Totals<'a> {
    /// The sums.
    #[serde(flatten)]
    pub sums: SumsDoc,
    /// Per provider and model.
    pub models: Vec<ModelSums<'a>>,
}

/// One provider's model's sums.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelSums<'a> {
    /// The provider.
    pub provider: &'a str,
    /// The model.
    pub model: &'a str,
    /// The sums.
    #[serde(flatten)]
    pub sums: SumsDoc,
}

/// Requests, tokens and cost.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SumsDoc {
    /// Requests of the agent.
    pub requests: u64,
    /// Requests of the compaction summariser.
    pub summariser_requests: u64,
    /// Uncached input tokens.
    #[schemars(with = "u64")]
    pub input_tokens: f64,
    /// Input tokens read from the cache.
    #[schemars(with = "u64")]
    pub cache_read_tokens: f64,
    /// Input tokens written to the cache.
    #[schemars(with = "u64")]
    pub cache_write_tokens: f64,
    /// Output tokens (reasoning included).
    #[schemars(with = "u64")]
    pub output_tokens: f64,
    /// Reasoning tokens (a part of the output).
    #[schemars(with = "u64")]
    pub reasoning_tokens: f64,
    /// All of them.
    #[schemars(with = "u64")]
    pub total_tokens: f64,
    /// The cost of the priced requests, USD; null when no request has a
    /// cost and some have none.
    pub cost_usd: Option<f64>,
    /// Requests with a cost.
    pub priced_requests: u64,
    /// Requests with no price for their model (at their date).
    pub unpriced_requests: u64,
    /// Requests whose price depends on a time the log does not record.
    pub untimed_requests: u64,
    /// Priced requests whose price entry is not confirmed on the
    /// provider's own page (`dsh usage --prices`).
    pub unconfirmed_requests: u64,
}

impl From<&Sums> for SumsDoc {
    fn from(s: &Sums) -> SumsDoc {
        let t = &s.tokens;
        SumsDoc {
            requests: s.requests,
            summariser_requests: s.summariser_requests,
            input_tokens: t.input,
            cache_read_tokens: t.cache_read,
            cache_write_tokens: t.cache_write,
            output_tokens: t.output,
            reasoning_tokens: t.reasoning,
            total_tokens: t.total(),
            cost_usd: s.cost(),
            priced_requests: s.priced,
            unpriced_requests: s.unpriced,
            untimed_requests: s.untimed,
            unconfirmed_requests: s.unconfirmed,
        }
    }
}

fn models(models: &[(String, String, Sums)]) -> Vec<ModelSums<'_>> {
    models
        .iter()
        .map(|(p, m, s)| ModelSums {
            provider: p,
            model: m,
            sums: s.into(),
        })
        .collect()
}

impl<'a> GroupSums<'a> {
    /// One group of a report grouped `by`.
    fn of(g: &'a Group, by: GroupBy, breakdown: bool) -> GroupSums<'a> {
        GroupSums {
            key: &g.key,
            known: g.known,
            session: (by == GroupBy::Session).then(|| SessionKeys {
                session: &g.key,
                file: g.file.as_deref(),
                project: g.project.as_deref(),
            }),
            sums: (&g.sums).into(),
            models: breakdown.then(|| models(&g.models)),
        }
    }
}

impl<'a> Usage<'a> {
    /// The document of a report grouped `by` in zone `tz`, with the logs
    /// refused.
    pub fn of(
        rep: &'a Report,
        by: GroupBy,
        tz: String,
        breakdown: bool,
        logs: Vec<LogRefusal>,
    ) -> Usage<'a> {
        Usage {
            group_by: by,
            tz,
            groups: rep
                .groups
                .iter()
                .map(|g| GroupSums::of(g, by, breakdown))
                .collect(),
            totals: Totals {
                sums: (&rep.totals).into(),
                models: models(&rep.models),
            },
            left_out_unknown_time: rep.outside_unknown_time,
            logs,
            schema_version: SchemaVersion,
        }
    }
}

/// The dated price table `dsh usage` prices requests with (USD per million
/// tokens).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Prices<'a> {
    /// Every entry.
    pub prices: Vec<PriceRow<'a>>,
    /// Providers with no entries of their own whose base URL reaches the
    /// endpoint (host) of a priced provider: priced as it.
    pub aliases: Vec<Alias>,
    /// Version of this document's shape; bumped on a breaking change.
    #[serde(rename = "schema_version")]
    pub schema_version: SchemaVersion,
}

impl Document for Prices<'_> {
    const NAME: &'static str = "usage-prices";
    const TITLE: &'static str = "dsh usage --prices --json";
}

/// A provider priced as another.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Alias {
    /// The provider without entries.
    pub provider: String,
    /// The provider whose entries price it.
    pub priced_as: String,
}

/// One dated price of one provider's model.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PriceRow<'a> {
    /// The provider.
    pub provider: &'a str,
    /// The model.
    pub model: &'a str,
    /// From when (RFC 3339); null: always.
    pub from: Option<String>,
    /// The same, in epoch milliseconds.
    pub from_ms: Option<i64>,
    /// The rates (off-peak aside).
    #[serde(flatten)]
    pub rates: Rates,
    /// The off-peak rates, if any.
    pub off_peak: Option<Rates>,
    /// When offPeak is set, which hours the other rates apply in:
    /// `deepseek` (V4 peak hours: weekdays 01:00–04:00 and 06:00–10:00
    /// UTC) or `night` (the 2025 night discount: offPeak applies daily
    /// 16:30–00:30 UTC); null without offPeak.
    pub peak_windows: Option<Windows>,
    /// Where the entry comes from.
    pub origin: Origin,
    /// The page or file it was read from.
    pub source: &'a str,
    /// When the source was read (YYYY-MM-DD); null for a config entry that
    /// does not say.
    pub read: Option<&'a str>,
    /// Whether the figures and the date were read on the provider's own
    /// page (false: read in third-party summaries, or the effective date
    /// is assumed).
    pub confirmed: bool,
}

impl<'a> PriceRow<'a> {
    /// The row of one entry.
    fn of(p: &'a Price) -> PriceRow<'a> {
        PriceRow {
            provider: &p.provider,
            model: &p.model,
            from: p.from_ms.map(crate::civil::rfc3339),
            from_ms: p.from_ms,
            rates: p.rates,
            off_peak: p.off_peak,
            peak_windows: p.off_peak.map(|_| p.windows),
            origin: p.origin,
            source: &p.source,
            read: p.read.as_deref(),
            confirmed: p.confirmed,
        }
    }
}

impl<'a> Prices<'a> {
    /// The table's entries and its aliases (provider, priced as).
    pub fn of(entries: &[&'a Price], aliases: Vec<(String, String)>) -> Prices<'a> {
        Prices {
            prices: entries.iter().map(|p| PriceRow::of(p)).collect(),
            aliases: aliases
                .into_iter()
                .map(|(provider, priced_as)| Alias {
                    provider,
                    priced_as,
                })
                .collect(),
            schema_version: SchemaVersion,
        }
    }
}
