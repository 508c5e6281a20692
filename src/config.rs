//! The dsh configuration file (compaction §10): TOML, with the reference's key
//! names so values can be copied from a DSH composition file.
//!
//! ```toml
//! [meter]                      # no settings (any key is rejected, as the reference does)
//!
//! [compaction]                 # @deepseek-ai/dsh-compaction-basic
//! thresholdRatio = 0.8         # (0, 1]
//! retainRatio    = 0.16        # (0, 1], < thresholdRatio; or retainTokens = 20000
//! summarizationProvider = ""   # "" = the routed target
//! summarizationModel    = ""
//! maxTokens          = 8192
//! compactionRetries  = 1
//! maxOverflowRetries = 1
//! auto               = true
//!
//! [[compaction.modelPolicies]] # exact provider/model overrides
//! provider = "deepseek-official"
//! model    = "deepseek-v4-flash"
//! thresholdRatio = 0.75
//!
//! [pruner]                     # @deepseek-ai/dsh-compaction-tool-result-pruner
//! thresholdChars = 8192
//! headChars      = 4096
//! tailChars      = 1024
//!
//! [[routes]]                   # capacity table and wire settings per provider
//! provider = "deepseek-official"
//! kind = "deepseek"            # dsh extension: "deepseek" (default) | "anthropic"
//! defaultContextWindow = 1000000
//! models = [ { id = "deepseek-v4-flash", contextWindow = 1000000 } ]
//! baseURL = "https://api.deepseek.com"
//! apiKeyEnv = "DEEPSEEK_API_KEY"  # the NAME of the variable; never read here
//! reasoningEffort = "high"
//!
//! [cache]                      # dsh cache's defaults
//! anthropicBreakpoints = "tools:1h,system:1h,last"  # read by dsh cache (cache::Breakpoints::parse)
//! ```
//!
//! Validation mirrors the reference (`BasicCompactionConfig: …`,
//! `ToolResultPruneConfig: …`, `TokenMeterConfig: …`) with its messages;
//! `[[routes]]` and unknown sections are dsh's own (`dsh config: …`).
//!
//! API: [`Config::load`] (a path) and [`Config::from_toml_str`] (a text) give
//! a [`Config`]; [`Config::policy_for`] resolves the per-route [`Policy`];
//! [`Config::pruner`] holds the pruner budgets. [`default_path`] computes
//! the location from values the caller read from the environment
//! (`--config`, else `$DSH_CONFIG`, else `$XDG_CONFIG_HOME/dsh/config.toml`,
//! else `~/.config/dsh/config.toml`); the library never reads the environment
//! nor any API key.

use std::path::{Path, PathBuf};

use toml::{Table, Value as T};

use crate::json::{OwnedValue, Value, js_number};
use crate::policy::{
    Budgets, Capacity, CapacityInputs, CapacitySource, ModelPolicy, Policy, PolicyConfig,
    PolicyError, Retention, resolve_capacity,
};
use crate::provider::Protocol;

/// The policy resolved for one log.
#[derive(Debug, Clone)]
pub struct PolicyReport {
    /// The routed target's compaction policy.
    pub policy: Policy,
    /// Its context window and where it came from.
    pub capacity: Capacity,
    /// The threshold and retained budgets in that window.
    pub budgets: Budgets,
    /// The `request/context` the window was read from, when it was logged.
    pub logged_seq: Option<u64>,
}

/// Why a log has no policy to be measured against.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoPolicy {
    /// The log names no provider/model and none was given.
    #[error("no routed target: the log has no request/header (use --route)")]
    NoRoute,
    /// The route's context window is neither configured nor logged.
    #[error("{}", crate::policy::no_capacity_message(.provider, .model))]
    NoCapacity {
        /// The routed provider.
        provider: String,
        /// The routed model.
        model: String,
    },
    /// The policy's budgets do not fit the window.
    #[error(transparent)]
    Budgets(#[from] PolicyError),
}

/// The pruner marker length in code points (`"\n\n[... tool result middle pruned ...]\n\n"`).
const PRUNE_MARKER_CHARS: u64 = 39;

/// A configuration that could not be read or is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
pub struct ConfigError {
    /// The file, when it came from one.
    pub path: Option<PathBuf>,
    /// What is wrong (the reference's message where it has one).
    pub message: String,
}

fn cerr(message: impl Into<String>) -> ConfigError {
    ConfigError {
        path: None,
        message: message.into(),
    }
}

/// `[pruner]`: the tool-result pruner's budgets, in Unicode code points (reference names:
/// `thresholdChars`, `headChars`, `tailChars`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PruneConfig {
    /// Prune when a result's text exceeds this (strictly greater).
    pub threshold_chars: u64,
    /// Leading code points kept.
    pub head_chars: u64,
    /// Trailing code points kept.
    pub tail_chars: u64,
}

impl Default for PruneConfig {
    fn default() -> Self {
        PruneConfig {
            threshold_chars: 8192,
            head_chars: 4096,
            tail_chars: 1024,
        }
    }
}

/// One `models` entry of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteModel {
    /// Model id.
    pub id: String,
    /// Its capacity.
    pub context_window: Option<u64>,
}

/// A `[[routes]]` entry as written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RouteConfig {
    /// Provider name (unique).
    pub provider: String,
    /// Wire protocol.
    pub kind: Protocol,
    /// Capacity of models not listed.
    pub default_context_window: Option<u64>,
    /// The model catalog.
    pub models: Vec<RouteModel>,
    /// `baseURL`.
    pub base_url: Option<String>,
    /// `apiKeyEnv`: the name of the environment variable holding the key.
    pub api_key_env: Option<String>,
    /// `reasoningEffort` for summary calls.
    pub reasoning_effort: Option<String>,
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// The file it came from.
    pub path: Option<PathBuf>,
    /// `[compaction]`.
    pub compaction: PolicyConfig,
    /// `[pruner]`.
    pub pruner: PruneConfig,
    /// `[[routes]]`.
    pub routes: Vec<RouteConfig>,
    /// `[[prices]]`: price entries added to (or replacing) the built-in table.
    pub prices: Vec<crate::price::Price>,
    /// `[cache]`.
    pub cache: CacheConfig,
}

/// `[cache]`: `dsh cache`'s defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CacheConfig {
    /// `anthropicBreakpoints`: the `cache_control` layout of the user's
    /// Anthropic requests, as written; `dsh cache` reads it with
    /// `cache::Breakpoints::parse` (the cache module sits above this one).
    pub anthropic_breakpoints: Option<String>,
}

fn cache_section(v: &T) -> Result<CacheConfig, ConfigError> {
    const NAME: &str = "dsh config: cache";
    let T::Table(t) = v else {
        return Err(cerr("dsh config: [cache] must be a table"));
    };
    check_keys(t, &["anthropicBreakpoints"], NAME)?;
    Ok(CacheConfig {
        anthropic_breakpoints: string(t, "anthropicBreakpoints", NAME)?,
    })
}

/// Where the config file is: `flag`, else `dsh_config` (`$DSH_CONFIG`), else
/// `xdg_config_home/dsh/config.toml`, else `home/.config/dsh/config.toml`.
/// The boolean says whether the location was given explicitly (a missing
/// explicit file is an error; a missing default file means defaults).
pub fn default_path(
    flag: Option<&Path>,
    dsh_config: Option<&Path>,
    xdg_config_home: Option<&Path>,
    home: Option<&Path>,
) -> Option<(PathBuf, bool)> {
    if let Some(p) = flag.or(dsh_config).filter(|p| !p.as_os_str().is_empty()) {
        return Some((p.to_path_buf(), true));
    }
    if let Some(x) = xdg_config_home.filter(|p| p.is_absolute()) {
        return Some((x.join("dsh").join("config.toml"), false));
    }
    home.map(|h| (h.join(".config").join("dsh").join("config.toml"), false))
}

/// JavaScript `String(value)` of a TOML value, as the reference's messages
/// show a rejected value: [`crate::json::js_string`] of the value as JSON
/// would hold it, except that a TOML integer keeps its exact digits (even
/// past 2^53, where a JavaScript number would round) and a date-time is
/// its TOML text.
fn js_string(v: &T) -> String {
    fn as_json(v: &T) -> OwnedValue {
        match v {
            T::String(s) => Value::str(s.clone()),
            T::Integer(i) if i.unsigned_abs() <= 1 << 53 => Value::Num(*i as f64),
            T::Integer(i) => Value::str(i.to_string()),
            T::Float(f) => Value::Num(*f),
            T::Boolean(b) => Value::Bool(*b),
            T::Datetime(d) => Value::str(d.to_string()),
            T::Array(a) => Value::Arr(a.iter().map(as_json).collect()),
            T::Table(_) => Value::obj(),
        }
    }
    crate::json::js_string(Some(&as_json(v)))
}

/// A TOML number as a JavaScript number.
fn number(v: &T) -> Option<f64> {
    match v {
        T::Integer(i) => Some(*i as f64),
        T::Float(f) => Some(*f),
        _ => None,
    }
}

fn is_integer(v: &T) -> Option<f64> {
    number(v).filter(|n| n.is_finite() && n.fract() == 0.0)
}

fn check_keys(t: &Table, allowed: &[&str], name: &str) -> Result<(), ConfigError> {
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(cerr(format!("{name}: unknown key \"{k}\"")));
        }
    }
    Ok(())
}

fn ratio(t: &Table, key: &str, name: &str) -> Result<Option<f64>, ConfigError> {
    let Some(v) = t.get(key) else { return Ok(None) };
    match number(v) {
        Some(n) if n.is_finite() && n > 0.0 && n <= 1.0 => Ok(Some(n)),
        _ => Err(cerr(format!(
            "{name}.{key} ({}) must be a number in (0, 1]",
            js_string(v)
        ))),
    }
}

fn count(t: &Table, key: &str, name: &str, positive: bool) -> Result<Option<u64>, ConfigError> {
    let Some(v) = t.get(key) else { return Ok(None) };
    match is_integer(v) {
        Some(n) if (positive && n > 0.0) || (!positive && n >= 0.0) => Ok(Some(n as u64)),
        _ => Err(cerr(format!(
            "{name}.{key} ({}) must be a {} integer",
            js_string(v),
            if positive { "positive" } else { "non-negative" }
        ))),
    }
}

/// `t.key`, a string that must be there and not empty.
fn nonempty(t: &Table, key: &str, name: &str) -> Result<String, ConfigError> {
    match t.get(key) {
        Some(T::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(cerr(format!("{name}.{key} must be a non-empty string"))),
    }
}

/// The entries of `[[what]]`, each with its name for messages
/// (`dsh config: what[i]`), in order: one that is not a table is an error
/// when it is reached.
fn tables<'a>(
    v: &'a T,
    what: &'a str,
) -> Result<impl Iterator<Item = Result<(String, &'a Table), ConfigError>>, ConfigError> {
    let T::Array(a) = v else {
        return Err(cerr(format!(
            "dsh config: {what} must be an array of tables ([[{what}]])"
        )));
    };
    Ok(a.iter().enumerate().map(move |(i, entry)| {
        let name = format!("dsh config: {what}[{i}]");
        match entry {
            T::Table(t) => Ok((name, t)),
            _ => Err(cerr(format!("{name} must be a table"))),
        }
    }))
}

fn string(t: &Table, key: &str, name: &str) -> Result<Option<String>, ConfigError> {
    match t.get(key) {
        None => Ok(None),
        Some(T::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(cerr(format!("{name}.{key} must be a string"))),
    }
}

/// `validatePolicy`: the fields shared by the top level and overrides.
fn policy_fields(t: &Table, name: &str) -> Result<ModelPolicy, ConfigError> {
    let threshold_ratio = ratio(t, "thresholdRatio", name)?;
    let retain_ratio = ratio(t, "retainRatio", name)?;
    let retain_tokens = count(t, "retainTokens", name, false)?;
    if retain_ratio.is_some() && retain_tokens.is_some() {
        return Err(cerr(format!(
            "{name}: retainRatio and retainTokens are mutually exclusive"
        )));
    }
    let max_tokens = count(t, "maxTokens", name, true)?;
    let compaction_retries = count(t, "compactionRetries", name, false)?;
    let max_overflow_retries = count(t, "maxOverflowRetries", name, false)?;
    let summarization_provider = string(t, "summarizationProvider", name)?;
    let summarization_model = string(t, "summarizationModel", name)?;
    match (&summarization_provider, &summarization_model) {
        (None, None) => {}
        (Some(p), Some(m)) if p.is_empty() == m.is_empty() => {}
        _ => {
            return Err(cerr(format!(
                "{name}: summarizationProvider and summarizationModel must be set together as an empty or non-empty pair"
            )));
        }
    }
    Ok(ModelPolicy {
        provider: String::new(),
        model: String::new(),
        threshold_ratio,
        retain_ratio,
        retain_tokens,
        summarization_provider,
        summarization_model,
        max_tokens,
        compaction_retries,
        max_overflow_retries,
    })
}

const POLICY_KEYS: [&str; 8] = [
    "thresholdRatio",
    "retainRatio",
    "retainTokens",
    "summarizationProvider",
    "summarizationModel",
    "maxTokens",
    "compactionRetries",
    "maxOverflowRetries",
];

fn retention_of(p: &ModelPolicy, fallback: Retention) -> Retention {
    match (p.retain_tokens, p.retain_ratio) {
        (Some(t), _) => Retention::Tokens(t),
        (None, Some(r)) => Retention::Ratio(r),
        _ => fallback,
    }
}

fn ratio_retention(threshold: f64, retention: Retention, name: &str) -> Result<(), ConfigError> {
    if let Retention::Ratio(r) = retention
        && r >= threshold
    {
        let (mut a, mut b) = (String::new(), String::new());
        js_number(r, &mut a);
        js_number(threshold, &mut b);
        return Err(cerr(format!(
            "{name}: retainRatio ({a}) must be less than the resolved thresholdRatio ({b})"
        )));
    }
    Ok(())
}

/// `resolveConfig` of compaction-basic over a `[compaction]` table.
fn compaction(t: &Table) -> Result<PolicyConfig, ConfigError> {
    const NAME: &str = "BasicCompactionConfig";
    let mut allowed: Vec<&str> = POLICY_KEYS.to_vec();
    allowed.extend(["modelPolicies", "auto"]);
    check_keys(t, &allowed, NAME)?;
    let top = policy_fields(t, NAME)?;
    let auto = match t.get("auto") {
        None => true,
        Some(T::Boolean(b)) => *b,
        Some(_) => return Err(cerr(format!("{NAME}: auto must be a boolean"))),
    };
    let threshold_ratio = top
        .threshold_ratio
        .unwrap_or(crate::policy::DEFAULT_THRESHOLD_RATIO);
    let retention = retention_of(&top, Retention::Ratio(crate::policy::DEFAULT_RETAIN_RATIO));
    ratio_retention(threshold_ratio, retention, NAME)?;
    let mut model_policies = Vec::new();
    match t.get("modelPolicies") {
        None => {}
        Some(T::Array(a)) => {
            let mut seen = std::collections::HashSet::new();
            for (i, entry) in a.iter().enumerate() {
                let name = format!("{NAME}: modelPolicies[{i}]");
                let T::Table(e) = entry else {
                    return Err(cerr(format!("{name} must be an object")));
                };
                let mut keys: Vec<&str> = vec!["provider", "model"];
                keys.extend(POLICY_KEYS);
                check_keys(e, &keys, &name)?;
                let provider = nonempty(e, "provider", &name)?;
                let model = nonempty(e, "model", &name)?;
                let mut p = policy_fields(e, &name)?;
                if !seen.insert((provider.clone(), model.clone())) {
                    return Err(cerr(format!(
                        "{NAME}: duplicate model policy for {provider}/{model}"
                    )));
                }
                p.provider = provider;
                p.model = model;
                model_policies.push(p);
            }
        }
        Some(_) => return Err(cerr(format!("{NAME}: modelPolicies must be an array"))),
    }
    for (i, p) in model_policies.iter().enumerate() {
        ratio_retention(
            p.threshold_ratio.unwrap_or(threshold_ratio),
            retention_of(p, retention),
            &format!("{NAME}: modelPolicies[{i}]"),
        )?;
    }
    Ok(PolicyConfig {
        threshold_ratio,
        retention,
        summarization_provider: top.summarization_provider.unwrap_or_default(),
        summarization_model: top.summarization_model.unwrap_or_default(),
        max_tokens: top.max_tokens.unwrap_or(crate::policy::DEFAULT_MAX_TOKENS),
        compaction_retries: top
            .compaction_retries
            .unwrap_or(crate::policy::DEFAULT_COMPACTION_RETRIES),
        max_overflow_retries: top
            .max_overflow_retries
            .unwrap_or(crate::policy::DEFAULT_MAX_OVERFLOW_RETRIES),
        model_policies,
        auto,
    })
}

/// `resolveConfig` of the tool-result pruner over a `[pruner]` table.
fn pruner(t: &Table) -> Result<PruneConfig, ConfigError> {
    const NAME: &str = "ToolResultPruneConfig";
    for k in t.keys() {
        if !["thresholdChars", "headChars", "tailChars"].contains(&k.as_str()) {
            return Err(cerr(format!(
                "{NAME}: unknown key \"{k}\" (allowed: thresholdChars, headChars, tailChars)"
            )));
        }
    }
    let d = PruneConfig::default();
    let get = |k: &str, default: u64, positive: bool| -> Result<u64, ConfigError> {
        let Some(v) = t.get(k) else {
            return Ok(default);
        };
        match is_integer(v) {
            Some(n) if (positive && n > 0.0) || (!positive && n >= 0.0) => Ok(n as u64),
            _ => Err(cerr(format!(
                "{NAME}: {k} ({}) must be a {} integer",
                js_string(v),
                if positive { "positive" } else { "non-negative" }
            ))),
        }
    };
    let p = PruneConfig {
        threshold_chars: get("thresholdChars", d.threshold_chars, true)?,
        head_chars: get("headChars", d.head_chars, false)?,
        tail_chars: get("tailChars", d.tail_chars, false)?,
    };
    let emitted = p.head_chars + PRUNE_MARKER_CHARS + p.tail_chars;
    if emitted > p.threshold_chars {
        return Err(cerr(format!(
            "{NAME}: headChars + marker + tailChars ({emitted}) must be at most thresholdChars ({})",
            p.threshold_chars
        )));
    }
    Ok(p)
}

fn routes(v: &T) -> Result<Vec<RouteConfig>, ConfigError> {
    let mut out: Vec<RouteConfig> = Vec::new();
    for entry in tables(v, "routes")? {
        let (name, t) = entry?;
        check_keys(
            t,
            &[
                "provider",
                "kind",
                "defaultContextWindow",
                "models",
                "baseURL",
                "apiKeyEnv",
                "reasoningEffort",
            ],
            &name,
        )?;
        let provider = nonempty(t, "provider", &name)?;
        if out.iter().any(|r| r.provider == provider) {
            return Err(cerr(format!(
                "dsh config: duplicate route for provider {provider}"
            )));
        }
        let kind = match t.get("kind") {
            None => Protocol::DeepSeek,
            Some(T::String(s)) if s == "deepseek" => Protocol::DeepSeek,
            Some(T::String(s)) if s == "anthropic" => Protocol::Anthropic,
            Some(v) => {
                return Err(cerr(format!(
                    "{name}.kind ({}) must be \"deepseek\" or \"anthropic\"",
                    js_string(v)
                )));
            }
        };
        let default_context_window = count(t, "defaultContextWindow", &name, true)?;
        let mut models = Vec::new();
        match t.get("models") {
            None => {}
            Some(T::Array(ms)) => {
                for (j, m) in ms.iter().enumerate() {
                    let mname = format!("{name}.models[{j}]");
                    let T::Table(mt) = m else {
                        return Err(cerr(format!(
                            "{mname} must be a table {{id, contextWindow}}"
                        )));
                    };
                    check_keys(mt, &["id", "contextWindow"], &mname)?;
                    let id = nonempty(mt, "id", &mname)?;
                    if models.iter().any(|x: &RouteModel| x.id == id) {
                        return Err(cerr(format!("{name}: duplicate model {id}")));
                    }
                    models.push(RouteModel {
                        id,
                        context_window: count(mt, "contextWindow", &mname, true)?,
                    });
                }
            }
            Some(_) => return Err(cerr(format!("{name}.models must be an array"))),
        }
        out.push(RouteConfig {
            provider,
            kind,
            default_context_window,
            models,
            base_url: string(t, "baseURL", &name)?,
            api_key_env: string(t, "apiKeyEnv", &name)?,
            reasoning_effort: string(t, "reasoningEffort", &name)?,
        });
    }
    Ok(out)
}

// ---- [[prices]] -----------------------------------------------------------
//
// ```toml
// [[prices]]
// provider   = "deepseek-official"    # as the session log records it
// model      = "deepseek-v4-flash"
// from       = "2026-04-26T12:15Z"    # optional: a date (UTC) or an RFC 3339 instant
// input      = 0.14                   # USD per 1M uncached input tokens
// cacheHit   = 0.0028                 # USD per 1M cache-hit input tokens
// cacheWrite = 0.14                   # optional, default = input (Anthropic: 5-minute writes)
// cacheWrite1h = 6                    # optional: Anthropic's 1-hour writes (no default: unpriced)
// output     = 0.28
// offPeak    = { input = 0.07, cacheHit = 0.0014, output = 0.14 }  # optional: the figures
//                                     # above are then DeepSeek's peak rates
// source     = "my contract"          # optional
// read       = "2026-12-05"           # optional: when the source was read
// ```

/// The highest price a config may give, in USD per million tokens: a dollar
/// a token, far above any model's, low enough that no sum of a home's
/// tokens times it leaves the finite numbers.
const MAX_PRICE_PER_MILLION: f64 = 1_000_000.0;

fn rates_of(t: &Table, name: &str) -> Result<crate::price::Rates, ConfigError> {
    let rate = |k: &str| -> Result<Option<f64>, ConfigError> {
        match t.get(k) {
            None => Ok(None),
            Some(v) => match number(v) {
                Some(n) if (0.0..=MAX_PRICE_PER_MILLION).contains(&n) => Ok(Some(n)),
                _ => Err(cerr(format!(
                    "{name}.{k} ({}) must be a number from 0 to {MAX_PRICE_PER_MILLION} (USD per million tokens)",
                    js_string(v)
                ))),
            },
        }
    };
    let need = |k: &str| -> Result<f64, ConfigError> {
        rate(k)?.ok_or_else(|| cerr(format!("{name}.{k} is required (USD per million tokens)")))
    };
    let input = need("input")?;
    Ok(crate::price::Rates {
        input,
        cache_hit: need("cacheHit")?,
        cache_write: rate("cacheWrite")?.unwrap_or(input),
        cache_write_1h: rate("cacheWrite1h")?,
        output: need("output")?,
    })
}

fn prices(v: &T) -> Result<Vec<crate::price::Price>, ConfigError> {
    let mut out: Vec<crate::price::Price> = Vec::new();
    for entry in tables(v, "prices")? {
        let (name, t) = entry?;
        check_keys(
            t,
            &[
                "provider",
                "model",
                "from",
                "input",
                "cacheHit",
                "cacheWrite",
                "cacheWrite1h",
                "output",
                "offPeak",
                "source",
            ],
            &name,
        )?;
        let provider = nonempty(t, "provider", &name)?;
        let model = nonempty(t, "model", &name)?;
        let instant = |s: &str| {
            crate::civil::parse_instant(s, crate::civil::Offset::UTC)
                .map_err(|e| cerr(format!("{name}.from: {e}")))
        };
        let from_ms = match t.get("from") {
            None => None,
            Some(T::String(s)) => Some(instant(s)?),
            Some(T::Datetime(d)) => Some(instant(&d.to_string())?),
            Some(_) => {
                return Err(cerr(format!(
                    "{name}.from must be a date such as \"2026-04-26\""
                )));
            }
        };
        let rates = rates_of(t, &name)?;
        let off_peak = match t.get("offPeak") {
            None => None,
            Some(T::Table(o)) => {
                let oname = format!("{name}.offPeak");
                check_keys(
                    o,
                    &["input", "cacheHit", "cacheWrite", "cacheWrite1h", "output"],
                    &oname,
                )?;
                Some(rates_of(o, &oname)?)
            }
            Some(_) => return Err(cerr(format!("{name}.offPeak must be a table"))),
        };
        if out
            .iter()
            .any(|p| p.provider == provider && p.model == model && p.from_ms == from_ms)
        {
            return Err(cerr(format!(
                "dsh config: duplicate price for {provider}/{model} from the same date"
            )));
        }
        out.push(crate::price::Price {
            provider,
            model,
            from_ms,
            rates,
            off_peak,
            windows: crate::price::Windows::Peak,
            source: string(t, "source", &name)?.unwrap_or_else(|| "config".into()),
            read: string(t, "read", &name)?,
            origin: crate::price::Origin::Config,
            confirmed: true,
        });
    }
    Ok(out)
}

impl Config {
    /// The price table in force: the built-in one, the `[[prices]]`
    /// entries, and the configured routes' base URLs (a provider reaching
    /// a priced provider's endpoint shares its prices).
    pub fn price_table(&self) -> crate::price::PriceTable {
        crate::price::PriceTable::builtin()
            .with(&self.prices)
            .with_endpoints(
                self.routes
                    .iter()
                    .filter_map(|r| r.base_url.as_deref().map(|u| (r.provider.as_str(), u))),
            )
    }

    /// Parse and validate a TOML text.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let table: Table = text
            .parse()
            .map_err(|e: toml::de::Error| cerr(format!("invalid TOML: {}", e.message())))?;
        let mut cfg = Config::default();
        for (k, v) in &table {
            match k.as_str() {
                "meter" => {
                    let T::Table(t) = v else {
                        return Err(cerr("dsh config: [meter] must be a table"));
                    };
                    if let Some(key) = t.keys().next() {
                        return Err(cerr(format!(
                            "TokenMeterConfig: unknown key \"{key}\" (no settings are supported)"
                        )));
                    }
                }
                "compaction" => {
                    let T::Table(t) = v else {
                        return Err(cerr("dsh config: [compaction] must be a table"));
                    };
                    cfg.compaction = compaction(t)?;
                }
                "pruner" => {
                    let T::Table(t) = v else {
                        return Err(cerr("dsh config: [pruner] must be a table"));
                    };
                    cfg.pruner = pruner(t)?;
                }
                "routes" => cfg.routes = routes(v)?,
                "prices" => cfg.prices = prices(v)?,
                "cache" => cfg.cache = cache_section(v)?,
                other => {
                    return Err(cerr(format!(
                        "dsh config: unknown section \"{other}\" (allowed: meter, compaction, pruner, routes, prices, cache)"
                    )));
                }
            }
        }
        Ok(cfg)
    }

    /// Read and validate a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let with_path = |mut e: ConfigError| {
            e.path = Some(path.to_path_buf());
            e
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| with_path(cerr(format!("cannot read: {e}"))))?;
        let mut cfg = Config::from_toml_str(&text).map_err(with_path)?;
        cfg.path = Some(path.to_path_buf());
        Ok(cfg)
    }

    /// The policy for a routed target (compaction §2.2).
    pub fn policy_for(&self, provider: &str, model: &str) -> Policy {
        self.compaction.resolve(provider, model)
    }

    /// The configured `[[routes]]` entry of a provider.
    pub(crate) fn route_config(&self, provider: &str) -> Option<&RouteConfig> {
        self.routes.iter().find(|r| r.provider == provider)
    }

    /// The context window of a target (`resolve_capacity`'s order): the
    /// `flag` (`--context-window`), this config's model entry, the `logged`
    /// `request/context` window, this config's route default, the built-in
    /// table; `None` when none of them has one.
    pub fn capacity(
        &self,
        provider: &str,
        model: &str,
        flag: Option<u64>,
        logged: Option<f64>,
    ) -> Option<Capacity> {
        let (config_model, config_route_default) = self.configured_capacity(provider, model);
        let inputs = CapacityInputs {
            flag,
            config_model,
            logged,
            config_route_default,
        };
        resolve_capacity(provider, &inputs)
    }

    /// The compaction policy of the routed target (`route`, `None` when
    /// the log names none) in its context window: `flag` and the window
    /// `logged` for a provider/model (with the seq that logged it) as
    /// [`Config::capacity`] takes them.
    pub fn policy_report(
        &self,
        route: Option<(String, String)>,
        flag: Option<u64>,
        logged: impl Fn(&str, &str) -> Option<(f64, u64)>,
    ) -> Result<PolicyReport, NoPolicy> {
        let (provider, model) = match route {
            Some(r) if !r.0.is_empty() && !r.1.is_empty() => r,
            _ => return Err(NoPolicy::NoRoute),
        };
        let policy = self.policy_for(&provider, &model);
        let logged = logged(&provider, &model);
        let capacity = self
            .capacity(&provider, &model, flag, logged.map(|l| l.0))
            .ok_or_else(|| NoPolicy::NoCapacity {
                provider: provider.clone(),
                model: model.clone(),
            })?;
        let budgets = policy.budgets(capacity.context_window)?;
        Ok(PolicyReport {
            logged_seq: logged
                .filter(|_| capacity.source == CapacitySource::Logged)
                .map(|l| l.1),
            policy,
            capacity,
            budgets,
        })
    }

    /// Capacity facts from the config for a target: (model entry, route default).
    fn configured_capacity(&self, provider: &str, model: &str) -> (Option<u64>, Option<u64>) {
        match self.route_config(provider) {
            None => (None, None),
            Some(r) => (
                r.models
                    .iter()
                    .find(|m| m.id == model)
                    .and_then(|m| m.context_window),
                r.default_context_window,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{DEEPSEEK_DEFAULT_CONTEXT_WINDOW, DEEPSEEK_PROVIDER};

    fn err(text: &str) -> String {
        Config::from_toml_str(text).unwrap_err().message
    }

    /// A rejected value is shown as JavaScript's `String` would show it,
    /// with a TOML integer's exact digits and a date-time's TOML text.
    #[test]
    fn rejected_values_read_as_javascript_strings() {
        let shown = |text: &str| {
            let t: Table = toml::from_str(&format!("v = {text}")).unwrap();
            js_string(&t["v"])
        };
        assert_eq!(shown("2"), "2");
        assert_eq!(shown("-7"), "-7");
        assert_eq!(shown("1_000_000_000_000_000"), "1000000000000000");
        assert_eq!(shown("9007199254740993"), "9007199254740993");
        assert_eq!(shown("-9223372036854775808"), "-9223372036854775808");
        assert_eq!(shown("1.5"), "1.5");
        assert_eq!(shown("-0.0"), "0");
        assert_eq!(shown("1e21"), "1e+21");
        assert_eq!(shown("nan"), "NaN");
        assert_eq!(shown("inf"), "Infinity");
        assert_eq!(shown("-inf"), "-Infinity");
        assert_eq!(shown("true"), "true");
        assert_eq!(shown(r#""x""#), "x");
        assert_eq!(shown("1979-05-27T07:32:00Z"), "1979-05-27T07:32:00Z");
        assert_eq!(
            shown(r#"[1, "a", [2, 3], {b = 1}]"#),
            "1,a,2,3,[object Object]"
        );
        assert_eq!(shown("{b = 1}"), "[object Object]");
        let e = err("[pruner]\nthresholdChars = nan\n");
        assert!(
            e.contains("thresholdChars (NaN) must be a positive integer"),
            "{e}"
        );
    }

    #[test]
    fn the_spec_example_parses() {
        let cfg = Config::from_toml_str(
            r#"
[meter]
[compaction]
thresholdRatio   = 0.8
retainRatio      = 0.16
summarizationProvider = ""
summarizationModel    = ""
maxTokens        = 8192
compactionRetries  = 1
maxOverflowRetries = 1

[[compaction.modelPolicies]]
provider = "deepseek-official"
model    = "deepseek-v4-flash"
thresholdRatio = 0.75

[pruner]
thresholdChars = 8192
headChars      = 4096
tailChars      = 1024

[[routes]]
provider = "deepseek-official"
defaultContextWindow = 1000000
models = [ { id = "deepseek-v4-flash", contextWindow = 1000000 },
           { id = "deepseek-v4-pro",   contextWindow = 1000000 } ]
baseURL = "https://api.deepseek.com"
apiKeyEnv = "DEEPSEEK_API_KEY"
reasoningEffort = "high"
"#,
        )
        .unwrap();
        let p = cfg.policy_for("deepseek-official", "deepseek-v4-flash");
        assert_eq!(p.threshold_ratio, 0.75);
        assert_eq!(p.retention, Retention::Ratio(0.16));
        assert_eq!(p.budgets(1e6).unwrap().threshold_tokens, 750_000);
        assert_eq!(cfg.policy_for("x", "y").threshold_ratio, 0.8);
        assert_eq!(cfg.pruner, PruneConfig::default());
    }

    #[test]
    fn reference_validation_messages() {
        assert_eq!(
            err("[compaction]\nthreshold = 1"),
            "BasicCompactionConfig: unknown key \"threshold\""
        );
        assert_eq!(
            err("[compaction]\nthresholdRatio = 1.5"),
            "BasicCompactionConfig.thresholdRatio (1.5) must be a number in (0, 1]"
        );
        assert_eq!(
            err("[compaction]\nretainRatio = 0.1\nretainTokens = 5"),
            "BasicCompactionConfig: retainRatio and retainTokens are mutually exclusive"
        );
        assert_eq!(
            err("[compaction]\nthresholdRatio = 0.5\nretainRatio = 0.5"),
            "BasicCompactionConfig: retainRatio (0.5) must be less than the resolved thresholdRatio (0.5)"
        );
        assert_eq!(
            err("[compaction]\nretainTokens = -1"),
            "BasicCompactionConfig.retainTokens (-1) must be a non-negative integer"
        );
        assert_eq!(
            err("[compaction]\nmaxTokens = 0"),
            "BasicCompactionConfig.maxTokens (0) must be a positive integer"
        );
        assert_eq!(
            err("[compaction]\nsummarizationProvider = \"p\""),
            "BasicCompactionConfig: summarizationProvider and summarizationModel must be set together as an empty or non-empty pair"
        );
        assert_eq!(
            err("[compaction]\nauto = 1"),
            "BasicCompactionConfig: auto must be a boolean"
        );
        assert_eq!(
            err(
                "[[compaction.modelPolicies]]\nprovider = \"p\"\nmodel = \"m\"\n[[compaction.modelPolicies]]\nprovider = \"p\"\nmodel = \"m\""
            ),
            "BasicCompactionConfig: duplicate model policy for p/m"
        );
        assert_eq!(
            err("[[compaction.modelPolicies]]\nprovider = \"\"\nmodel = \"m\""),
            "BasicCompactionConfig: modelPolicies[0].provider must be a non-empty string"
        );
        assert_eq!(
            err(
                "[compaction]\nthresholdRatio = 0.3\n[[compaction.modelPolicies]]\nprovider = \"p\"\nmodel = \"m\"\nretainRatio = 0.3"
            ),
            "BasicCompactionConfig: modelPolicies[0]: retainRatio (0.3) must be less than the resolved thresholdRatio (0.3)"
        );
        assert_eq!(
            err("[pruner]\nheadChars = 8000\ntailChars = 200"),
            "ToolResultPruneConfig: headChars + marker + tailChars (8239) must be at most thresholdChars (8192)"
        );
        assert_eq!(
            err("[pruner]\nmiddle = 1"),
            "ToolResultPruneConfig: unknown key \"middle\" (allowed: thresholdChars, headChars, tailChars)"
        );
        assert_eq!(
            err("[pruner]\nthresholdChars = 2.5"),
            "ToolResultPruneConfig: thresholdChars (2.5) must be a positive integer"
        );
        assert_eq!(
            err("[meter]\ndensity = 3"),
            "TokenMeterConfig: unknown key \"density\" (no settings are supported)"
        );
        assert!(err("[routes]\nprovider = \"x\"").contains("routes must be an array"));
        assert!(err("[[routes]]\nprovider = \"x\"\nkind = \"openai\"").contains("kind (openai)"));
        assert!(err("[weird]").contains("unknown section \"weird\""));
        assert!(err("not toml =").starts_with("invalid TOML"));
    }

    #[test]
    fn integral_floats_are_integers_as_in_javascript() {
        let cfg = Config::from_toml_str("[compaction]\nretainTokens = 20000.0").unwrap();
        assert_eq!(cfg.compaction.retention, Retention::Tokens(20_000));
    }

    #[test]
    fn one_hour_write_rates() {
        let cfg = Config::from_toml_str(
            "[[prices]]\nprovider = \"anthropic\"\nmodel = \"m\"\ninput = 3\ncacheHit = 0.3\ncacheWrite = 3.75\ncacheWrite1h = 6\noutput = 15\n",
        )
        .unwrap();
        assert_eq!(cfg.prices[0].rates.cache_write_1h, Some(6.0));
        let cfg = Config::from_toml_str(
            "[[prices]]\nprovider = \"p\"\nmodel = \"m\"\ninput = 3\ncacheHit = 0.3\noutput = 15\n",
        )
        .unwrap();
        assert_eq!(cfg.prices[0].rates.cache_write_1h, None, "never guessed");
    }

    #[test]
    fn cache_section() {
        let cfg =
            Config::from_toml_str("[cache]\nanthropicBreakpoints = \"last, tools:1h\"\n").unwrap();
        assert_eq!(
            cfg.cache.anthropic_breakpoints.as_deref(),
            Some("last, tools:1h")
        );
        assert_eq!(Config::default().cache.anthropic_breakpoints, None);
        assert!(err("[cache]\nanthropicBreakpoints = 4").contains("must be a string"));
        assert!(err("[cache]\nttl = \"1h\"").contains("unknown key \"ttl\""));
        assert!(err("cache = 1").contains("[cache] must be a table"));
    }

    #[test]
    fn anthropic_route_and_capacity() {
        let cfg = Config::from_toml_str(
            "[[routes]]\nprovider = \"anth\"\nkind = \"anthropic\"\ndefaultContextWindow = 200000\nmodels = [{id = \"big\", contextWindow = 500000}]",
        )
        .unwrap();
        assert_eq!(
            cfg.configured_capacity("anth", "big"),
            (Some(500_000), Some(200_000))
        );
        // One resolution for every reader: flag, model entry, logged window,
        // route default, built-in table.
        let window = |p: &str, m: &str, flag, logged| {
            cfg.capacity(p, m, flag, logged)
                .map(|c| (c.context_window, c.source.as_str()))
        };
        assert_eq!(
            window("anth", "big", Some(7), Some(9.0)),
            Some((7.0, "flag"))
        );
        assert_eq!(
            window("anth", "big", None, Some(9.0)),
            Some((500_000.0, "config-model"))
        );
        assert_eq!(
            window("anth", "small", None, Some(9.0)),
            Some((9.0, "request/context"))
        );
        assert_eq!(
            window("anth", "small", None, None),
            Some((200_000.0, "config-route"))
        );
        assert_eq!(
            window(DEEPSEEK_PROVIDER, "x", None, None),
            Some((DEEPSEEK_DEFAULT_CONTEXT_WINDOW as f64, "built-in"))
        );
        assert_eq!(window("other", "x", None, None), None);
    }

    #[test]
    fn location_order() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            default_path(Some(&p("/f.toml")), Some(&p("/e.toml")), None, None),
            Some((p("/f.toml"), true))
        );
        assert_eq!(
            default_path(None, Some(&p("/e.toml")), Some(&p("/x")), None),
            Some((p("/e.toml"), true))
        );
        assert_eq!(
            default_path(None, None, Some(&p("/x")), Some(&p("/h"))),
            Some((p("/x/dsh/config.toml"), false))
        );
        assert_eq!(
            default_path(None, None, None, Some(&p("/h"))),
            Some((p("/h/.config/dsh/config.toml"), false))
        );
    }
}
