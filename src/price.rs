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
    pub fn add(&mut self, o: &Tokens) {
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
#[derive(Debug, Clone, Copy, PartialEq)]
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
    pub cache_write_1h: Option<f64>,
    /// Output (reasoning included).
    pub output: f64,
}

impl Rates {
    /// The cost of `t` at these rates, in USD.
    pub fn cost(&self, t: &Tokens) -> f64 {
        (t.input * self.input
            + t.cache_read * self.cache_hit
            + t.cache_write * self.cache_write
            + t.output * self.output)
            / 1_000_000.0
    }
}

/// Where an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// peak windows ([`deepseek_peak`]) and these everywhere else.
    pub off_peak: Option<Rates>,
    /// The page the figures were read from.
    pub source: String,
    /// Built in or from the config.
    pub origin: Origin,
    /// Whether the figures and the date were read on the provider's own
    /// page. `false` for built-in entries read only in third-party
    /// summaries, or whose effective date is assumed; a config entry is
    /// the user's word and counts as confirmed.
    pub confirmed: bool,
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
pub fn deepseek_peak(ms: i64) -> bool {
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
}

const DEEPSEEK_LEGACY_PAGE: &str = "https://api-docs.deepseek.com/quick_start/pricing-details-usd";
const DEEPSEEK_PAGE: &str = "https://api-docs.deepseek.com/quick_start/pricing";
const ANTHROPIC_PAGE: &str = "https://platform.claude.com/docs/en/docs/about-claude/pricing";

fn at(s: &str) -> Option<i64> {
    Some(civil::parse_instant(s, civil::Offset::UTC).expect("a valid built-in date"))
}

fn rates(cache_hit: f64, input: f64, output: f64) -> Rates {
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

impl PriceTable {
    /// The built-in table.
    ///
    /// Figures read on 2026-12-03 (dsh's own reading of stored copies of the
    /// pages; nothing is fetched at run time). What could not be confirmed on
    /// the provider's own page is marked *unconfirmed*; a `[[prices]]` entry
    /// in the config corrects any of it.
    pub fn builtin() -> PriceTable {
        let mut e = Vec::new();
        let mut add = |provider: &str,
                       model: &str,
                       from: Option<i64>,
                       r: Rates,
                       off: Option<Rates>,
                       src: &str,
                       confirmed: bool| {
            e.push(Price {
                provider: provider.into(),
                model: model.into(),
                from_ms: from,
                rates: r,
                off_peak: off,
                source: src.into(),
                origin: Origin::BuiltIn,
                confirmed,
            })
        };
        // Entries not confirmed on the provider's own page (see below).
        const UNCONFIRMED: bool = false;
        const CONFIRMED: bool = true;
        const DS: &str = "deepseek-official";
        // --- DeepSeek ----------------------------------------------------
        // Legacy names, USD table of DEEPSEEK_LEGACY_PAGE (read 2026-12-03):
        // deepseek-chat 0.07 hit / 0.27 miss / 1.10 output, deepseek-reasoner
        // 0.14 / 0.55 / 2.19. The page carries no effective date: the entry
        // applies from the model's first use (start date unconfirmed).
        add(
            DS,
            "deepseek-chat",
            None,
            rates(0.07, 0.27, 1.10),
            None,
            DEEPSEEK_LEGACY_PAGE,
            CONFIRMED,
        );
        add(
            DS,
            "deepseek-reasoner",
            None,
            rates(0.14, 0.55, 2.19),
            None,
            DEEPSEEK_LEGACY_PAGE,
            CONFIRMED,
        );
        // V4 launch, 2026-04-24: deepseek-v4-flash 0.14 miss / 0.28 output
        // with cache hits at ten times the later price (0.028); the legacy
        // names map to V4-Flash from then on. Unconfirmed on DeepSeek's own
        // page: read in third-party summaries of it (dev.to, tokenmix.ai,
        // chat-deep.ai, 2026-04), which also give V4-Pro's launch promotion
        // (75% off 0.145 / 1.74 / 3.48) as 0.03625? / 0.435 / 0.87.
        let v4_launch = at("2026-04-24");
        for m in ["deepseek-v4-flash", "deepseek-chat", "deepseek-reasoner"] {
            add(
                DS,
                m,
                v4_launch,
                rates(0.028, 0.14, 0.28),
                None,
                DEEPSEEK_PAGE,
                UNCONFIRMED,
            );
        }
        add(
            DS,
            "deepseek-v4-pro",
            v4_launch,
            rates(0.036_25, 0.435, 0.87),
            None,
            DEEPSEEK_PAGE,
            UNCONFIRMED,
        );
        // 2026-04-26 12:15 UTC: every cache-hit price cut to a tenth:
        // V4-Flash 0.0028 / 0.14 / 0.28, V4-Pro 0.003625 / 0.435 / 0.87 (the
        // figures issue 14 quotes from DeepSeek's pages; the date and the
        // Pro figures unconfirmed on the official page, read in the same
        // third-party summaries).
        let cache_cut = at("2026-04-26T12:15Z");
        for m in ["deepseek-v4-flash", "deepseek-chat", "deepseek-reasoner"] {
            add(
                DS,
                m,
                cache_cut,
                rates(0.0028, 0.14, 0.28),
                None,
                DEEPSEEK_PAGE,
                UNCONFIRMED,
            );
        }
        add(
            DS,
            "deepseek-v4-pro",
            cache_cut,
            rates(0.003_625, 0.435, 0.87),
            None,
            DEEPSEEK_PAGE,
            UNCONFIRMED,
        );
        // DEEPSEEK_PAGE as read 2026-12-03 (model versions
        // DeepSeek-V4.1-Flash-1017 and DeepSeek-V4-Pro-0813): peak / off-peak
        // per 1M tokens, cache hit / miss / output:
        //   deepseek-flash   peak 0.006 / 0.30 / 1.20, off-peak 0.003 / 0.15 / 0.60
        //   deepseek-v4-pro  peak 0.044 / 1.32 / 3.96, off-peak 0.022 / 0.66 / 1.98
        // "The legacy names deepseek-v4-flash and deepseek-v4-flash-vision-exp
        // are still accepted ... billed at Flash prices." Off-peak is half of
        // peak; peak is weekdays 01:00–04:00 and 06:00–10:00 UTC. The page
        // gives no effective date; 2026-10-17 (the Flash version's date) is
        // assumed (unconfirmed), so requests between the cache cut and it
        // take the cache-cut prices.
        let v41 = at("2026-10-17");
        let flash_peak = rates(0.006, 0.30, 1.20);
        let flash_off = rates(0.003, 0.15, 0.60);
        for m in [
            "deepseek-flash",
            "deepseek-v4-flash",
            "deepseek-v4-flash-vision-exp",
        ] {
            add(
                DS,
                m,
                v41,
                flash_peak,
                Some(flash_off),
                DEEPSEEK_PAGE,
                UNCONFIRMED,
            );
        }
        add(
            DS,
            "deepseek-v4-pro",
            v41,
            rates(0.044, 1.32, 3.96),
            Some(rates(0.022, 0.66, 1.98)),
            DEEPSEEK_PAGE,
            UNCONFIRMED,
        );
        // --- Anthropic -----------------------------------------------------
        // ANTHROPIC_PAGE as read 2026-12-03, "Model pricing" (base input /
        // output per MTok; the page lists 5m writes at 1.25×, 1h writes at
        // 2×, hits at 0.1× of base input). No effective dates on the page.
        // The prompt-caching page's pricing table (a stored copy of its
        // Korean edition, https://docs.claude.com/ko/docs/build-with-claude/prompt-caching,
        // read for the 1-hour write rate) gives the same multipliers, e.g.
        // Sonnet 4.5 3 / 3.75 (5m write) / 6 (1h write) / 0.30 (hit) / 15,
        // Haiku 4.5 1 / 1.25 / 2 / 0.10 / 5, Opus 4.1 15 / 18.75 / 30 / 1.50
        // / 75. Model names are the API aliases; dated snapshot ids can be
        // added with [[prices]].
        const AN: &str = "anthropic";
        for (m, i, o) in [
            ("claude-opus-4-6", 5.0, 25.0),
            ("claude-opus-4-5", 5.0, 25.0),
            ("claude-opus-4-1", 15.0, 75.0),
            ("claude-sonnet-4-6", 3.0, 15.0),
            ("claude-sonnet-4-5", 3.0, 15.0),
            ("claude-haiku-4-5", 1.0, 5.0),
        ] {
            add(
                AN,
                m,
                None,
                anthropic(i, o),
                None,
                ANTHROPIC_PAGE,
                CONFIRMED,
            );
        }
        PriceTable { entries: e }
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

    /// Whether any entry exists for this provider and model.
    pub fn knows(&self, provider: &str, model: &str) -> bool {
        self.entries
            .iter()
            .any(|p| p.provider == provider && p.model == model)
    }

    /// The entry in force at `time` (`None`: the time is unknown — then
    /// only a model with one undated-in-effect entry has one).
    pub fn entry(&self, provider: &str, model: &str, time: Option<i64>) -> Result<&Price, Priced> {
        let mut cands: Vec<&Price> = self
            .entries
            .iter()
            .filter(|p| p.provider == provider && p.model == model)
            .collect();
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
            Ok(e) => match (&e.off_peak, time) {
                (None, _) => Priced::Cost {
                    usd: e.rates.cost(tokens),
                    peak: None,
                    confirmed: e.confirmed,
                },
                (Some(off), Some(t)) => {
                    let peak = deepseek_peak(t);
                    Priced::Cost {
                        usd: if peak {
                            e.rates.cost(tokens)
                        } else {
                            off.cost(tokens)
                        },
                        peak: Some(peak),
                        confirmed: e.confirmed,
                    }
                }
                (Some(_), None) => Priced::NeedsTime,
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
            source: "my contract".into(),
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
        assert!(confirmed(ds("deepseek-chat", "2026-01-09T12:00Z")));
        assert!(confirmed(table.price(
            "anthropic",
            "claude-haiku-4-5",
            None,
            &one
        )));
    }

    #[test]
    fn peak_windows() {
        let p = |s: &str| deepseek_peak(t(s).unwrap());
        assert!(p("2026-12-01T01:00Z") && p("2026-12-01T03:59Z") && p("2026-12-01T09:30Z"));
        assert!(!p("2026-12-01T04:00Z") && !p("2026-12-01T05:59Z") && !p("2026-12-01T10:00Z"));
        assert!(!p("2026-12-06T02:00Z"), "Sunday");
    }
}
