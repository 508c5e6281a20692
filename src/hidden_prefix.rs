//! Logs that do not show the whole request: a system prompt or tools left as
//! placeholders (`"system": "{{system}}"`, `"tools": []` while the provider
//! reported thousands of prompt tokens), as in recorded test fixtures.
//!
//! The part the log does not show stands at the head of every request, so
//! it is estimated as an **offset**, not a ratio: the prompt size the
//! provider reported for the session's first request with usage, less the
//! size dsh computes for it. Growth between requests is unaffected by it;
//! positions (and so the provider's prefix-cache hits, counted in whole
//! blocks from the start) are, which is why [`analyse`] adds it to the
//! system prompt of every request and keeps the figures without it beside.

use crate::cache::{
    Analysis, CacheError, CacheOptions, CacheReport, Totals, analyse as cache_analyse,
};
use crate::json::Value;
use crate::log::{LoadOptions, LoadedLog, LogSource};

/// An offset smaller than this, with only the tools empty, is no sign of
/// hidden tools (a session may have none).
const TOOLS_MIN: u64 = 1000;

/// The estimated hidden prefix of a log.
#[derive(Debug, Clone, PartialEq)]
pub struct HiddenPrefix {
    /// What the header leaves out: `"system"` (a `{{…}}` placeholder),
    /// `"tools"` (none, or a placeholder).
    pub placeholders: Vec<&'static str>,
    /// The estimate: `reported - computed` on the first request with usage.
    pub tokens: u64,
    /// That request's seq, and the two sizes.
    pub seq: u64,
    /// The provider's prompt size there.
    pub reported: u64,
    /// dsh's prompt size there, without the prefix.
    pub computed: u64,
    /// The session's totals without the prefix.
    pub without: Totals,
}

/// The header's parts that are placeholders (`system` holding `{{…}}`,
/// `tools` missing, empty or a `{{…}}` string).
pub(crate) fn placeholders(header: Option<&Value<'_>>) -> Vec<&'static str> {
    let mut out = Vec::new();
    let is_placeholder = |v: &Value<'_>| {
        v.as_str()
            .is_some_and(|s| s.contains("{{") && s.contains("}}"))
    };
    if header
        .and_then(|h| h.get("system"))
        .is_some_and(is_placeholder)
    {
        out.push("system");
    }
    match header.and_then(|h| h.get("tools")) {
        None => out.push("tools"),
        Some(Value::Arr(a)) if a.is_empty() => out.push("tools"),
        Some(v) if is_placeholder(v) => out.push("tools"),
        _ => {}
    }
    out
}

/// The estimate from an analysis without a prefix, if the header has
/// placeholders and the provider saw more than dsh computes.
pub(crate) fn estimate(
    placeholders: Vec<&'static str>,
    report: &CacheReport,
) -> Option<HiddenPrefix> {
    if placeholders.is_empty() {
        return None;
    }
    let first = report
        .requests
        .iter()
        .find(|r| !r.inherited && r.failed.is_none() && r.reported.is_some())?;
    let reported = first.reported.as_ref()?.prompt().round() as u64;
    let tokens = reported.checked_sub(first.prompt_tokens)?;
    if tokens == 0 || (!placeholders.contains(&"system") && tokens < TOOLS_MIN) {
        return None;
    }
    Some(HiddenPrefix {
        placeholders,
        tokens,
        seq: first.seq,
        reported,
        computed: first.prompt_tokens,
        without: report.totals(),
    })
}

/// The estimate alone, from one analysis without a prefix (for a command
/// that sizes requests but does not report the cache: `simulate`). `None`
/// when `opts` already has a prefix, the log is standard input (read once)
/// or it hides nothing.
pub(crate) fn estimate_for(
    src: &LogSource,
    load: &LoadOptions,
    opts: &CacheOptions,
) -> Result<Option<HiddenPrefix>, CacheError> {
    if opts.hidden_prefix.is_some() || matches!(src, LogSource::Stdin) {
        return Ok(None);
    }
    Ok(analyse_once(src, load, opts)?.1)
}

/// [`crate::cache::analyse`], with the hidden prefix estimated and added
/// when the log has one (a log read from standard input is read once: no
/// estimate).
pub fn analyse(
    src: &LogSource,
    load: &LoadOptions,
    opts: &CacheOptions,
) -> Result<(CacheReport, Option<HiddenPrefix>), CacheError> {
    let (report, hidden) = analyse_once(src, load, opts)?;
    let Some(hidden) = hidden else {
        return Ok((report, None));
    };
    let with = CacheOptions {
        hidden_prefix: Some(hidden.tokens),
        ..opts.clone()
    };
    Ok((cache_analyse(src, load, &with)?, Some(hidden)))
}

/// One analysis as `opts` says, and the hidden prefix it shows (none when
/// `opts` already has one or the log is standard input, read once).
fn analyse_once(
    src: &LogSource,
    load: &LoadOptions,
    opts: &CacheOptions,
) -> Result<(CacheReport, Option<HiddenPrefix>), CacheError> {
    let mut a = Analysis::new(opts);
    let log = crate::log::load(src, load, &mut a)?;
    if opts.hidden_prefix.is_some() || matches!(src, LogSource::Stdin) {
        return Ok((a.finish(&log), None));
    }
    Ok(shown(a, &log))
}

/// The report of an analysis without a prefix that saw `log` load
/// ([`crate::log::Tee`]), and the hidden prefix it shows.
pub(crate) fn shown(a: Analysis, log: &LoadedLog) -> (CacheReport, Option<HiddenPrefix>) {
    let placeholders = placeholders(log.headers.header.as_ref());
    let report = a.finish(log);
    let hidden = estimate(placeholders, &report);
    (report, hidden)
}

/// A log's request as it stands, counted in a provider's own tokens: the
/// envelope and every surface node under `enc`, and (with DeepSeek's
/// encoding) the hidden prefix of a placeholder log beside, so that the
/// request's size is `counts.total_tokens + hidden`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderCount {
    /// The counts of what the log shows.
    pub counts: crate::meter::tokenizer::TokenCounts,
    /// The estimated hidden prefix (`estimate_for`), if the log hides one.
    pub hidden: Option<u64>,
}

impl ProviderCount {
    /// The request's size: what the log shows and the hidden prefix.
    pub fn total(&self) -> u64 {
        self.counts.total_tokens + self.hidden.unwrap_or(0)
    }
}

/// The JSON `measure`, `view` give it: `{"encoding", "systemTokens",
/// "toolsTokens", "messageTokens", "totalTokens", "hiddenPrefixTokens",
/// "requestTokens", "textBytes", "nodes": [{"seq", "tokens"}]}`.
impl serde::Serialize for ProviderCount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct Node {
            seq: u64,
            tokens: u64,
        }
        let c = &self.counts;
        let nodes: Vec<Node> = c
            .nodes
            .iter()
            .map(|n| Node {
                seq: n.seq,
                tokens: n.tokens,
            })
            .collect();
        let mut st = s.serialize_struct("ProviderCount", 9)?;
        st.serialize_field("encoding", c.encoding.name())?;
        st.serialize_field("systemTokens", &c.system_tokens)?;
        st.serialize_field("toolsTokens", &c.tools_tokens)?;
        st.serialize_field("messageTokens", &c.message_tokens)?;
        st.serialize_field("totalTokens", &c.total_tokens)?;
        st.serialize_field("hiddenPrefixTokens", &self.hidden)?;
        st.serialize_field("requestTokens", &self.total())?;
        st.serialize_field("textBytes", &c.text_bytes)?;
        st.serialize_field("nodes", &nodes)?;
        st.end()
    }
}

/// Count `log` (loaded from `src` with `load`) under `enc` with the log's
/// own header; with DeepSeek's encoding, estimate the hidden prefix of a
/// placeholder log from its first reported usage, wherever `load` stops
/// (none when the log is standard input, read once).
pub fn provider_count(
    src: &LogSource,
    load: &LoadOptions,
    log: &crate::log::LoadedLog,
    enc: crate::meter::tokenizer::Encoding,
) -> Result<ProviderCount, crate::log::LoadError> {
    use crate::meter::tokenizer::{Encoding, count};
    enc.load();
    let counts = count(log, log.headers.header.as_ref(), enc)?;
    let hidden = match enc {
        Encoding::DeepSeekV4 => {
            let opts = CacheOptions {
                tokenizer: Some(enc),
                ..Default::default()
            };
            // The log's prefix, from its first usage wherever it stands.
            let whole = LoadOptions {
                upto: None,
                ..load.clone()
            };
            estimate_for(src, &whole, &opts)
                .ok()
                .flatten()
                .map(|h| h.tokens)
        }
        _ => None,
    };
    Ok(ProviderCount { counts, hidden })
}
