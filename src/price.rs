//! The price table: what a provider charged for a model request, by date.
//!
//! One table shared by `dsh usage` and, later, the cache and simulation
//! reports. Every entry is dated (it applies from its `from` instant until
//! the next entry of the same provider and model), names the four rates in
//! USD per million tokens (uncached input, cache-hit input, cache write,
//! output) and, for DeepSeek's later pricing, the off-peak rates that apply
//! outside the peak windows. A request is priced by its own recorded time.
//!
//! Never a guess: a model with no entry, a request before a model's first
//! entry, and a request whose time is unknown while its price depends on
//! the time (dated entries, peak windows) have no cost ([`Priced`] says
//! which), and their tokens are still counted.
//!
//! Token classes follow the session log's `TokenUsage` (session-log §6.7):
//! `inputTokens` is uncached input only; `cacheReadTokens` and
//! `cacheWriteTokens` are disjoint from it; `reasoningTokens` are part of
//! `outputTokens` and are not charged again.
//!
//! ```
//! use dsh::price::{PriceTable, Priced, Tokens};
//! let table = PriceTable::builtin();
//! let t = dsh::civil::parse_instant("2026-07-09T12:00Z", dsh::civil::Offset::UTC).unwrap();
//! let tokens = Tokens { input: 1_000_000.0, output: 1_000_000.0, ..Tokens::default() };
//! match table.price("deepseek-official", "deepseek-v4-flash", Some(t), &tokens) {
//!     Priced::Cost { usd, .. } => assert!((usd - 0.42).abs() < 1e-9),
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(table.price("local", "my-model", Some(t), &tokens), Priced::NoPrice);
//! ```

use crate::civil;

/// Token counts of one request or a sum of them (JavaScript numbers, as
/// logged: they are summed as recorded, never clamped).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    /// `inputTokens`: uncached input.
    pub input: f64,
    /// `cacheReadTokens`.
    pub cache_read: f64,
    /// `cacheWriteTokens`.
    pub cache_write: f64,
    /// `outputTokens` (reasoning included).
    pub output: f64,
    /// `reasoningTokens` (a part of `output`).
    pub reasoning: f64,
}

impl Tokens {
    /// Add another count.
    pub(crate) fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.output += o.output;
        self.reasoning += o.reasoning;
    }

    /// Input of every class plus output (reasoning is inside output).
    pub fn total(&self) -> f64 {
        self.input + self.cache_read + self.cache_write + self.output
    }
}

/// Four rates, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rates {
    /// Uncached input ("cache miss").
    pub input: f64,
    /// Input read from the cache ("cache hit").
    pub cache_hit: f64,
    /// Input written to the cache (Anthropic: 5-minute entries, the
    /// default TTL; a logged `cacheWriteTokens` is priced at this rate).
    pub cache_write: f64,
    /// Input written to 1-hour cache entries (Anthropic's `"ttl": "1h"`);
    /// `None` where no such write exists or its price is not known. Only
    /// `dsh cache`'s predictions split writes by TTL: a session log's
    /// `cacheWriteTokens` does not say which TTL they were written with.
    #[serde(rename = "cacheWrite1h")]
    pub cache_write_1h: Option<f64>,
    /// Output (reasoning included).
    pub output: f64,
}

impl Rates {
    /// The cost of `t` at these rates, in USD.
    fn cost(&self, t: &Tokens) -> f64 {
        (t.input * self.input
            + t.cache_read * self.cache_hit
            + t.cache_write * self.cache_write
            + t.output * self.output)
            / 1_000_000.0
    }
}

/// Where an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// dsh's table (this module).
    BuiltIn,
    /// A `[[prices]]` entry of the config file.
    Config,
}

impl Origin {
    /// `built-in` / `config`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::BuiltIn => "built-in",
            Origin::Config => "config",
        }
    }
}

/// One dated price of one provider's model.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// Provider name as the session log records it (`deepseek-official`).
    pub provider: String,
    /// Model name as the session log records it.
    pub model: String,
    /// Epoch ms from which it applies; `None`: from the model's first use.
    pub from_ms: Option<i64>,
    /// The rates (the peak rates when `off_peak` is set).
    pub rates: Rates,
    /// DeepSeek's off-peak rates: when set, `rates` apply only inside the
    /// peak hours of `windows` and these everywhere else.
    pub off_peak: Option<Rates>,
    /// Which hours are peak when `off_peak` is set.
    pub windows: Windows,
    /// The page the figures were read from.
    pub source: String,
    /// When `source` was read (`YYYY-MM-DD`); `None` for a config entry
    /// that does not say.
    pub read: Option<String>,
    /// Built in or from the config.
    pub origin: Origin,
    /// Whether the figures and the date were read on the provider's own
    /// page. `false` for built-in entries read only in third-party
    /// summaries, or whose effective date is assumed; a config entry is
    /// the user's word and counts as confirmed.
    pub confirmed: bool,
}

/// Which hours an entry's `rates` (not its `off_peak` rates) apply in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Windows {
    /// DeepSeek V4's peak hours (`deepseek_peak`), from mid-2026.
    #[default]
    #[serde(rename = "deepseek")]
    Peak,
    /// DeepSeek's 2025 night discount: the discount (`off_peak`) applies
    /// daily 16:30–00:30 UTC (`deepseek_night`), the standard rates the
    /// rest of the day.
    Night,
}

impl Windows {
    /// Whether `rates` (not `off_peak`) apply at `ms`.
    fn standard(self, ms: i64) -> bool {
        match self {
            Windows::Peak => deepseek_peak(ms),
            Windows::Night => !deepseek_night(ms),
        }
    }
}

impl Price {
    /// The rates in force at `time` (`None`: they depend on the hour and
    /// the time is unknown), and whether they are the standard (peak) ones
    /// when the entry has off-peak rates.
    pub(crate) fn rates_at(&self, time: Option<i64>) -> Option<(Rates, Option<bool>)> {
        match (&self.off_peak, time) {
            (None, _) => Some((self.rates, None)),
            (Some(off), Some(t)) => Some(if self.windows.standard(t) {
                (self.rates, Some(true))
            } else {
                (*off, Some(false))
            }),
            (Some(_), None) => None,
        }
    }
}

/// DeepSeek's 2025 night discount hours: every day 16:30–00:30 UTC
/// (00:30–08:30 Beijing time).
fn deepseek_night(ms: i64) -> bool {
    let minute = ms.rem_euclid(civil::DAY_MS) / 60_000;
    !(30..16 * 60 + 30).contains(&minute)
}

/// What one request costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Priced {
    /// Priced. `peak` says which DeepSeek window applied, when one did.
    Cost {
        /// USD.
        usd: f64,
        /// Peak (`Some(true)`), off-peak (`Some(false)`) or no windows.
        peak: Option<bool>,
        /// Whether the entry used is confirmed ([`Price::confirmed`]).
        confirmed: bool,
    },
    /// No price for this provider and model (at that date).
    NoPrice,
    /// The price depends on the date or the hour and the request's time is
    /// unknown (a normalised time in the log).
    NeedsTime,
}

/// DeepSeek's peak windows: Monday to Friday, 01:00–04:00 and 06:00–10:00
/// UTC (09:00–12:00 and 14:00–18:00 Beijing time). Chinese public holidays,
/// which the pricing page bills off-peak, are not modelled: a request on one
/// is priced at the peak rate.
fn deepseek_peak(ms: i64) -> bool {
    let d = civil::date(ms, civil::Offset::UTC);
    if d.weekday() >= 5 {
        return false;
    }
    let hour = ms.rem_euclid(civil::DAY_MS) / 3_600_000;
    (1..4).contains(&hour) || (6..10).contains(&hour)
}

/// The table: built-in entries, then the config's, per provider and model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriceTable {
    entries: Vec<Price>,
    /// Provider → the host its base URL reaches.
    endpoints: Vec<(String, String)>,
}

/// DeepSeek's pricing page, as read on 2026-12-03.
const DEEPSEEK_PAGE: (&str, &str) = (
    "https://api-docs.deepseek.com/quick_start/pricing",
    "2026-12-03",
);
const ANTHROPIC_PAGE: &str = "https://platform.claude.com/docs/en/docs/about-claude/pricing";

fn at(s: &str) -> Option<i64> {
    Some(civil::parse_instant(s, civil::Offset::UTC).expect("a valid built-in date"))
}

const fn rates(cache_hit: f64, input: f64, output: f64) -> Rates {
    // DeepSeek reports no cache writes; a write is billed as the uncached
    // input it is.
    Rates {
        input,
        cache_hit,
        cache_write: input,
        cache_write_1h: None,
        output,
    }
}

/// Anthropic's rates from the base input price: 5-minute cache writes at
/// 1.25×, 1-hour cache writes at 2×, cache hits (and refreshes) at 0.1×.
/// A session log's `cacheWriteTokens` does not say which TTL it was written
/// with, so `dsh usage` prices it at the 5-minute default; `dsh cache`
/// prices its predicted 1-hour writes at the 2× rate.
fn anthropic(input: f64, output: f64) -> Rates {
    Rates {
        input,
        cache_hit: input / 10.0,
        cache_write: input * 1.25,
        cache_write_1h: Some(input * 2.0),
        output,
    }
}

/// One built-in DeepSeek entry before it is a [`Price`]: what was read,
/// where and when, and whether on the provider's own page. [`row`] makes
/// one with no off-peak rates, unconfirmed; [`Row::off_peak`],
/// [`Row::night`] and [`Row::confirmed`] say otherwise.
struct Row {
    models: &'static [&'static str],
    from: &'static str,
    rates: Rates,
    off_peak: Option<Rates>,
    windows: Windows,
    /// The page and when it was read.
    source: (&'static str, &'static str),
    confirmed: bool,
}

const LEGACY: &[&str] = &["deepseek-chat", "deepseek-reasoner"];
const FLASH: &[&str] = &[
    "deepseek-v4-flash",
    "deepseek-chat",
    "deepseek-reasoner",
    "deepseek-v4-flash-vision-exp",
];
const V4_FLASH: &[&str] = &["deepseek-v4-flash", "deepseek-v4-flash-vision-exp"];
const PRO: &[&str] = &["deepseek-v4-pro"];

const fn row(
    models: &'static [&'static str],
    from: &'static str,
    rates: Rates,
    source: (&'static str, &'static str),
) -> Row {
    Row {
        models,
        from,
        rates,
        off_peak: None,
        windows: Windows::Peak,
        source,
        confirmed: false,
    }
}

impl Row {
    /// `rates` in DeepSeek's peak hours, `off` outside them.
    const fn off_peak(self, off: Rates) -> Row {
        Row {
            off_peak: Some(off),
            windows: Windows::Peak,
            ..self
        }
    }
    /// `night` in the 2025 night-discount hours, `rates` outside them.
    const fn night(self, night: Rates) -> Row {
        Row {
            off_peak: Some(night),
            windows: Windows::Night,
            ..self
        }
    }
    /// Figures and date read on DeepSeek's own page.
    const fn confirmed(self) -> Row {
        Row {
            confirmed: true,
            ..self
        }
    }
}

/// DeepSeek's price history as dsh knows it, one row per change (docs/prices.md gives the
/// reading behind each row and what stays unknown). `from` is when the
/// row took effect (UTC); a row applies until the next row of the same
/// model.
#[rustfmt::skip] // a table: each row on a line or two, not ten
const DEEPSEEK_ROWS: &[Row] = &[
    // V3 (deepseek-chat) after its launch promotion, R1
    // (deepseek-reasoner) from its launch: the figures are the
    // official page's "standard price" (stored copy of 2025-09); the
    // start dates are the launches', read in news coverage.
    row(&["deepseek-chat"], "2025-02-08T16:00Z", rates(0.07, 0.27, 1.10), DEEPSEEK_PAGE_2025),
    row(&["deepseek-reasoner"], "2025-01-20", rates(0.14, 0.55, 2.19), DEEPSEEK_PAGE_2025),
    // The night discount, 16:30–00:30 UTC daily: V3 50% off, R1 75% off,
    // both 0.035 / 0.135 / 0.55 (official page); from the night of
    // 2025-02-26 (news coverage).
    row(&["deepseek-chat"], "2025-02-26T16:30Z", rates(0.07, 0.27, 1.10), DEEPSEEK_PAGE_2025)
        .night(rates(0.035, 0.135, 0.55)),
    row(&["deepseek-reasoner"], "2025-02-26T16:30Z", rates(0.14, 0.55, 2.19), DEEPSEEK_PAGE_2025)
        .night(rates(0.035, 0.135, 0.55)),
    // V3.1: one price for both names and no night discount "starting
    // from 16:00 UTC on Sept 5th, 2025" (official page, figures and time).
    row(LEGACY, "2025-09-05T16:00Z", rates(0.07, 0.56, 1.68), DEEPSEEK_PAGE_2025).confirmed(),
    // V3.2-Exp: "API prices drop 50%+, effective immediately" on
    // 2025-09-29 (the hour is not known: the day's start is used).
    row(LEGACY, "2025-09-29", rates(0.028, 0.28, 0.42), V32_NEWS),
    // V4 preview, 2026-04-24: the legacy names map to V4-Flash; Pro at
    // its launch list price.
    row(FLASH, "2026-04-24", rates(0.028, 0.14, 0.28), V4_SUMMARY),
    row(PRO, "2026-04-24", rates(0.145, 1.74, 3.48), V4_SUMMARY),
    // 2026-04-26 12:15 UTC: every cache-hit price cut to a tenth of
    // launch; Pro at 75% off (made permanent on 2026-05-22; when the
    // discount began, within those two days, is not known).
    row(FLASH, "2026-04-26T12:15Z", rates(0.0028, 0.14, 0.28), V4_SUMMARY),
    row(PRO, "2026-04-26T12:15Z", rates(0.003_625, 0.435, 0.87), V4_SUMMARY),
    // V4 official, "mid-July" 2026: peak hours (09:00–12:00 and
    // 14:00–18:00 Beijing) at twice the unchanged off-peak price. The
    // day is not known: the legacy names' retirement (2026-07-24
    // 15:59 UTC) is used; the USD peak figures are the CNY notice's
    // doubling applied to the USD off-peak ones.
    row(V4_FLASH, "2026-07-24T16:00Z", rates(0.0056, 0.28, 0.56), V4_PEAK_NEWS)
        .off_peak(rates(0.0028, 0.14, 0.28)),
    row(PRO, "2026-07-24T16:00Z", rates(0.007_25, 0.87, 1.74), V4_PEAK_NEWS)
        .off_peak(rates(0.003_625, 0.435, 0.87)),
    // The page as read 2026-12-03 (DeepSeek-V4.1-Flash-1017,
    // DeepSeek-V4-Pro-0813), peak / off-peak: flash 0.006 / 0.30 / 1.20
    // and 0.003 / 0.15 / 0.60, pro 0.044 / 1.32 / 3.96 and 0.022 / 0.66
    // / 1.98; the legacy Flash names billed at Flash prices. No
    // effective date on the page: the Flash version's 2026-10-17 is
    // assumed.
    row(&["deepseek-flash", "deepseek-v4-flash", "deepseek-v4-flash-vision-exp"], "2026-10-17",
        rates(0.006, 0.30, 1.20), DEEPSEEK_PAGE).off_peak(rates(0.003, 0.15, 0.60)),
    row(PRO, "2026-10-17", rates(0.044, 1.32, 3.96), DEEPSEEK_PAGE)
        .off_peak(rates(0.022, 0.66, 1.98)),
];

/// A stored copy of DeepSeek's pricing page from September 2025 (the V3.1
/// table, the standard and night prices in force before it).
const DEEPSEEK_PAGE_2025: (&str, &str) = (
    "https://api-docs.deepseek.com/quick_start/pricing (stored copy, 2025-09)",
    "2026-12-05",
);
/// Coverage of the V3.2-Exp announcement quoting DeepSeek's API news.
const V32_NEWS: (&str, &str) = (
    "https://skywork.ai/blog/?p=10736; https://benchlm.ai/blog/posts/deepseek-api-pricing",
    "2026-12-05",
);
/// Summaries of the V4 pricing page (April–May 2026).
const V4_SUMMARY: (&str, &str) = (
    "https://tokenmix.ai/blog/deepseek-api-pricing; https://nerova.ai/costs-roi/deepseek-v4-pricing-explained-2026; https://dev.to/super_jarvis_76aa3fc6035d/deepseek-v4-price-pro-vs-flash-api-costs-4lba",
    "2026-12-05",
);
/// Coverage of DeepSeek's 2026-06-29 notice of peak pricing.
const V4_PEAK_NEWS: (&str, &str) = (
    "https://en.5iter.com/keji/76653.html; https://yangtzeer.com/?p=5149; https://ai-tldr.dev/releases/deepseek-v4-peak-off-peak-pricing/",
    "2026-12-05",
);

/// Where each built-in provider's requests go: providers whose base URL
/// has the same host share prices ([`PriceTable::entry`]). `deepseek` is
/// the harness's other DeepSeek route; with no `baseURL` configured the
/// DeepSeek adapter calls `https://api.deepseek.com` (compaction §6.3).
const ENDPOINTS: &[(&str, &str)] = &[
    ("deepseek-official", "https://api.deepseek.com"),
    ("deepseek", "https://api.deepseek.com"),
    ("anthropic", "https://api.anthropic.com"),
];

/// The host a base URL reaches (`https://api.deepseek.com/anthropic` →
/// `api.deepseek.com`).
fn endpoint_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

impl PriceTable {
    /// The built-in table: DeepSeek's dated history (docs/prices.md)
    /// and Anthropic's current list prices. Every entry names its source
    /// page and the date it was read; what could not be confirmed on the
    /// provider's own page (figures, or the date they took effect) is
    /// marked *unconfirmed*. Nothing is fetched at run time; a
    /// `[[prices]]` entry in the config corrects any of it.
    pub fn builtin() -> PriceTable {
        let mut e = Vec::new();
        for r in DEEPSEEK_ROWS {
            for m in r.models {
                e.push(Price {
                    provider: "deepseek-official".into(),
                    model: (*m).into(),
                    from_ms: at(r.from),
                    rates: r.rates,
                    off_peak: r.off_peak,
                    windows: r.windows,
                    source: r.source.0.into(),
                    read: Some(r.source.1.into()),
                    origin: Origin::BuiltIn,
                    confirmed: r.confirmed,
                });
            }
        }
        // --- Anthropic -----------------------------------------------------
        // ANTHROPIC_PAGE as read 2026-12-03, "Model pricing" (base input /
        // output per MTok; the page lists 5m writes at 1.25×, 1h writes at
        // 2×, hits at 0.1× of base input). No effective dates on the page:
        // each applies from the model's release. The prompt-caching page's
        // table (a stored copy of its Korean edition,
        // https://docs.claude.com/ko/docs/build-with-claude/prompt-caching,
        // read for the 1-hour write rate) gives the same multipliers.
        // Model names are the API aliases; dated snapshot ids can be added
        // with [[prices]].
        for (m, i, o) in [
            ("claude-opus-4-6", 5.0, 25.0),
            ("claude-opus-4-5", 5.0, 25.0),
            ("claude-opus-4-1", 15.0, 75.0),
            ("claude-sonnet-4-6", 3.0, 15.0),
            ("claude-sonnet-4-5", 3.0, 15.0),
            ("claude-haiku-4-5", 1.0, 5.0),
        ] {
            e.push(Price {
                provider: "anthropic".into(),
                model: m.into(),
                from_ms: None,
                rates: anthropic(i, o),
                off_peak: None,
                windows: Windows::Peak,
                source: ANTHROPIC_PAGE.into(),
                read: Some("2026-12-03".into()),
                origin: Origin::BuiltIn,
                confirmed: true,
            });
        }
        PriceTable {
            entries: e,
            endpoints: ENDPOINTS
                .iter()
                .map(|(p, u)| (p.to_string(), endpoint_host(u)))
                .collect(),
        }
    }

    /// This table with the base URLs of configured routes: a provider
    /// whose base URL reaches the host of a priced provider shares its
    /// prices (a configured base URL replaces the built-in one).
    pub(crate) fn with_endpoints<'a>(
        mut self,
        routes: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> PriceTable {
        for (provider, url) in routes {
            self.endpoints.retain(|(p, _)| p != provider);
            self.endpoints
                .push((provider.to_string(), endpoint_host(url)));
        }
        self
    }

    /// Provider → the host its base URL reaches, as the table knows them.
    pub fn endpoints(&self) -> &[(String, String)] {
        &self.endpoints
    }

    /// The providers that share `provider`'s endpoint (its base URL's
    /// host), itself first.
    pub fn aliases(&self, provider: &str) -> Vec<String> {
        let mut out = vec![provider.to_string()];
        if let Some((_, host)) = self.endpoints.iter().find(|(p, _)| p == provider) {
            out.extend(
                self.endpoints
                    .iter()
                    .filter(|(p, h)| h == host && p != provider)
                    .map(|(p, _)| p.clone()),
            );
        }
        out
    }

    /// This table with `user` entries added: a user entry for the same
    /// provider, model and `from` replaces the built-in one; others join the
    /// model's timeline.
    pub fn with(mut self, user: &[Price]) -> PriceTable {
        for u in user {
            self.entries.retain(|b| {
                !(b.origin == Origin::BuiltIn
                    && b.provider == u.provider
                    && b.model == u.model
                    && b.from_ms == u.from_ms)
            });
            self.entries.push(u.clone());
        }
        self
    }

    /// Every entry, by provider, model and date.
    pub fn entries(&self) -> Vec<&Price> {
        let mut v: Vec<&Price> = self.entries.iter().collect();
        v.sort_by(|a, b| {
            (&a.provider, &a.model, a.from_ms).cmp(&(&b.provider, &b.model, b.from_ms))
        });
        v
    }

    /// The entry in force at `time` (`None`: the time is unknown — then
    /// only a model with one undated-in-effect entry has one).
    pub(crate) fn entry(
        &self,
        provider: &str,
        model: &str,
        time: Option<i64>,
    ) -> Result<&Price, Priced> {
        // The provider's own entries, else those of the first provider that
        // reaches the same endpoint and has some for the model.
        let mut cands: Vec<&Price> = Vec::new();
        for p in self.aliases(provider) {
            cands = self
                .entries
                .iter()
                .filter(|e| e.provider == p && e.model == model)
                .collect();
            if !cands.is_empty() {
                break;
            }
        }
        if cands.is_empty() {
            return Err(Priced::NoPrice);
        }
        // Latest `from` last; a config entry after a built-in one of the same date.
        cands.sort_by_key(|p| (p.from_ms, p.origin == Origin::Config));
        match time {
            Some(t) => cands
                .into_iter()
                .rev()
                .find(|p| p.from_ms.is_none_or(|f| f <= t))
                .ok_or(Priced::NoPrice),
            None if cands.len() == 1 && cands[0].off_peak.is_none() => Ok(cands[0]),
            None => Err(Priced::NeedsTime),
        }
    }

    /// What `tokens` cost at `time` (epoch ms, `None` when unknown).
    pub fn price(&self, provider: &str, model: &str, time: Option<i64>, tokens: &Tokens) -> Priced {
        match self.entry(provider, model, time) {
            Err(p) => p,
            Ok(e) => match e.rates_at(time) {
                Some((r, peak)) => Priced::Cost {
                    usd: r.cost(tokens),
                    peak,
                    confirmed: e.confirmed,
                },
                None => Priced::NeedsTime,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::civil::{Offset, parse_instant};

    fn t(s: &str) -> Option<i64> {
        Some(parse_instant(s, Offset::UTC).unwrap())
    }

    fn usd(p: Priced) -> f64 {
        match p {
            Priced::Cost { usd, .. } => usd,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requests_are_priced_by_their_own_date_and_window() {
        let table = PriceTable::builtin();
        let hit = Tokens {
            cache_read: 1e6,
            ..Tokens::default()
        };
        let f = |when| usd(table.price("deepseek-official", "deepseek-v4-flash", t(when), &hit));
        assert!((f("2026-04-25T00:00Z") - 0.028).abs() < 1e-12);
        assert!((f("2026-07-09T12:00Z") - 0.0028).abs() < 1e-12);
        // 2026-12-03 is a Thursday: 02:00 UTC is peak, 12:00 off-peak.
        assert!((f("2026-12-03T02:00Z") - 0.006).abs() < 1e-12);
        assert!((f("2026-12-03T12:00Z") - 0.003).abs() < 1e-12);
        assert!((f("2026-12-05T02:00Z") - 0.003).abs() < 1e-12, "Saturday");
        assert_eq!(
            table.price("deepseek-official", "deepseek-v4-flash", None, &hit),
            Priced::NeedsTime
        );
        assert_eq!(
            table.price("deepseek-official", "deepseek-flash", t("2026-05-01"), &hit),
            Priced::NoPrice,
            "no entry before the model's first"
        );
        assert_eq!(
            table.price("x", "y", t("2026-05-01"), &hit),
            Priced::NoPrice
        );
    }

    #[test]
    fn anthropic_cache_multipliers_and_overrides() {
        let table = PriceTable::builtin();
        let all = Tokens {
            input: 1e6,
            cache_read: 1e6,
            cache_write: 1e6,
            output: 1e6,
            reasoning: 5e5,
        };
        let c = usd(table.price("anthropic", "claude-sonnet-4-5", None, &all));
        assert!((c - (3.0 + 0.3 + 3.75 + 15.0)).abs() < 1e-9, "{c}");
        // 1-hour writes at 2× the base input; DeepSeek has none.
        let e = table.entry("anthropic", "claude-sonnet-4-5", None).unwrap();
        assert_eq!(e.rates.cache_write_1h, Some(6.0));
        let e = table.entry("anthropic", "claude-haiku-4-5", None).unwrap();
        assert_eq!(e.rates.cache_write_1h, Some(2.0));
        let e = table
            .entry("deepseek-official", "deepseek-chat", t("2026-01-09T12:00Z"))
            .unwrap();
        assert_eq!(e.rates.cache_write_1h, None);
        let mine = Price {
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            from_ms: None,
            rates: Rates {
                input: 1.0,
                cache_hit: 0.0,
                cache_write: 0.0,
                cache_write_1h: None,
                output: 0.0,
            },
            off_peak: None,
            windows: Windows::Peak,
            source: "my contract".into(),
            read: None,
            origin: Origin::Config,
            confirmed: true,
        };
        let table = table.with(&[mine]);
        let c = usd(table.price("anthropic", "claude-sonnet-4-5", None, &all));
        assert!((c - 1.0).abs() < 1e-12);
    }

    #[test]
    fn unconfirmed_entries_are_flagged() {
        let table = PriceTable::builtin();
        let one = Tokens {
            input: 1.0,
            ..Tokens::default()
        };
        let confirmed = |p: Priced| match p {
            Priced::Cost { confirmed, .. } => confirmed,
            other => panic!("{other:?}"),
        };
        let ds = |m, when| table.price("deepseek-official", m, t(when), &one);
        assert!(!confirmed(ds("deepseek-v4-flash", "2026-04-25T00:00Z")));
        assert!(!confirmed(ds("deepseek-v4-flash", "2026-07-09T12:00Z")));
        assert!(!confirmed(ds("deepseek-v4-pro", "2026-12-03T12:00Z")));
        assert!(confirmed(ds("deepseek-chat", "2025-09-10T12:00Z")));
        assert!(!confirmed(ds("deepseek-chat", "2026-01-09T12:00Z")));
        assert!(confirmed(table.price(
            "anthropic",
            "claude-haiku-4-5",
            None,
            &one
        )));
    }

    /// Issue 42: no built-in figure without where and when it was read,
    /// and no DeepSeek entry without the time it took effect.
    #[test]
    fn every_builtin_entry_names_its_source_and_when_it_was_read() {
        let table = PriceTable::builtin();
        assert!(table.entries().len() > 20);
        for e in table.entries() {
            let what = format!("{}/{} from {:?}", e.provider, e.model, e.from_ms);
            assert!(
                !e.source.is_empty() && e.source.split("; ").all(|u| u.starts_with("https://")),
                "{what}: source {:?}",
                e.source
            );
            let read = e
                .read
                .as_deref()
                .unwrap_or_else(|| panic!("{what}: no read date"));
            assert!(
                parse_instant(read, Offset::UTC).is_ok(),
                "{what}: read {read:?} is not a date"
            );
            if e.provider.starts_with("deepseek") {
                assert!(e.from_ms.is_some(), "{what}: no effective time");
            }
        }
    }

    #[test]
    fn legacy_names_follow_the_dated_history() {
        let table = PriceTable::builtin();
        let hit = Tokens {
            cache_read: 1e6,
            ..Tokens::default()
        };
        let f = |m, when| usd(table.price("deepseek-official", m, t(when), &hit));
        assert!((f("deepseek-chat", "2025-03-03T12:00Z") - 0.07).abs() < 1e-12);
        // The 2025 night discount: 16:30–00:30 UTC.
        assert!((f("deepseek-chat", "2025-03-03T17:00Z") - 0.035).abs() < 1e-12);
        assert!((f("deepseek-reasoner", "2025-03-04T00:10Z") - 0.035).abs() < 1e-12);
        assert!((f("deepseek-reasoner", "2025-03-04T00:40Z") - 0.14).abs() < 1e-12);
        assert!((f("deepseek-chat", "2025-09-10T17:00Z") - 0.07).abs() < 1e-12);
        assert!((f("deepseek-chat", "2025-11-01T12:00Z") - 0.028).abs() < 1e-12);
        assert!((f("deepseek-chat", "2026-05-01T12:00Z") - 0.0028).abs() < 1e-12);
        assert_eq!(
            table.price("deepseek-official", "deepseek-chat", t("2024-12-01"), &hit),
            Priced::NoPrice,
            "before the first dated entry"
        );
        // V4 peak pricing from its assumed start: peak hours at twice.
        assert!((f("deepseek-v4-flash", "2026-08-04T02:00Z") - 0.0056).abs() < 1e-12);
        assert!((f("deepseek-v4-flash", "2026-08-04T12:00Z") - 0.0028).abs() < 1e-12);
    }

    #[test]
    fn providers_reaching_the_same_endpoint_share_prices() {
        let table = PriceTable::builtin();
        let one = Tokens {
            input: 1e6,
            ..Tokens::default()
        };
        let when = t("2026-05-01T12:00Z");
        let official = table.price("deepseek-official", "deepseek-v4-flash", when, &one);
        assert!(matches!(official, Priced::Cost { .. }));
        assert_eq!(
            table.price("deepseek", "deepseek-v4-flash", when, &one),
            official
        );
        assert_eq!(
            table.price("my-proxy", "deepseek-v4-flash", when, &one),
            Priced::NoPrice
        );
        // A configured route whose base URL reaches DeepSeek's host.
        let table = table.with_endpoints([("my-proxy", "https://API.deepseek.com/anthropic/")]);
        assert_eq!(
            table.price("my-proxy", "deepseek-v4-flash", when, &one),
            official
        );
        assert_eq!(
            endpoint_host("https://api.deepseek.com/v1?x"),
            "api.deepseek.com"
        );
    }

    #[test]
    fn peak_windows() {
        let p = |s: &str| deepseek_peak(t(s).unwrap());
        assert!(p("2026-12-01T01:00Z") && p("2026-12-01T03:59Z") && p("2026-12-01T09:30Z"));
        assert!(!p("2026-12-01T04:00Z") && !p("2026-12-01T05:59Z") && !p("2026-12-01T10:00Z"));
        assert!(!p("2026-12-06T02:00Z"), "Sunday");
    }
}
