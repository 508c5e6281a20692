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

use crate::cache::{CacheError, CacheOptions, CacheReport, Totals, analyse as cache_analyse};
use crate::json::Value;
use crate::log::{LoadOptions, LogSource};

/// An offset smaller than this, with only the tools empty, is no sign of
/// hidden tools (a session may have none).
pub const TOOLS_MIN: u64 = 1000;

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
pub fn placeholders(header: Option<&Value<'_>>) -> Vec<&'static str> {
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
pub fn estimate(placeholders: Vec<&'static str>, report: &CacheReport) -> Option<HiddenPrefix> {
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
pub fn estimate_for(
    src: &LogSource,
    load: &LoadOptions,
    opts: &CacheOptions,
) -> Result<Option<HiddenPrefix>, CacheError> {
    if opts.hidden_prefix.is_some() || matches!(src, LogSource::Stdin) {
        return Ok(None);
    }
    let mut a = crate::cache::Analysis::new(opts);
    let log = crate::log::load(src, load, &mut a)?;
    let report = a.finish(&log);
    Ok(estimate(placeholders(log.headers.header.as_ref()), &report))
}

/// [`crate::cache::analyse`], with the hidden prefix estimated and added
/// when the log has one (a log read from standard input is read once: no
/// estimate).
pub fn analyse(
    src: &LogSource,
    load: &LoadOptions,
    opts: &CacheOptions,
) -> Result<(CacheReport, Option<HiddenPrefix>), CacheError> {
    let mut a = crate::cache::Analysis::new(opts);
    let log = crate::log::load(src, load, &mut a)?;
    let report = a.finish(&log);
    if opts.hidden_prefix.is_some() || matches!(src, LogSource::Stdin) {
        return Ok((report, None));
    }
    let Some(hidden) = estimate(placeholders(log.headers.header.as_ref()), &report) else {
        return Ok((report, None));
    };
    let with = CacheOptions {
        hidden_prefix: Some(hidden.tokens),
        ..opts.clone()
    };
    Ok((cache_analyse(src, load, &with)?, Some(hidden)))
}
