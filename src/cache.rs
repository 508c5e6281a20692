//! Provider prompt caching, offline: what each model request could reuse from
//! the provider's prompt cache, why it missed, and what every replacement
//! (compaction, prune) cost in recomputed prompt.
//!
//! A model request is the folded request header (system prompt, tools) plus
//! the surface as it stood when the attempt that produced an
//! `assistant/message` began (session-log §8.3). Each request is a list of
//! **segments** — a route root (provider/model, no tokens), the system prompt
//! and the tools (in the provider's order: tools first on Anthropic routes,
//! whose prompt is tools → system → messages), then one segment per derived
//! message — each with an identity (a node is its seq; an image offload
//! gives it a new identity) and a token count (the meter's heuristic, or an
//! exact BPE count with [`CacheOptions::tokenizer`]). Positions are token
//! offsets into that list.
//!
//! For every request [`analyse`] reports:
//!
//! * the **first changed position** against the previous request extended by
//!   its output (what that request left in the cache), and its [`Cause`];
//! * the tokens **recomputed** because of the change (old content after the
//!   first changed position; fresh input appended since is not counted);
//! * the **predicted cache hit** under DeepSeek's prefix-unit rule
//!   ([`DeepSeekRule`]) or, on Anthropic routes, Anthropic's breakpoint rule
//!   ([`AnthropicRule`], with its cache writes per TTL), next to the
//!   `cacheReadTokens` the provider reported.
//!
//! For every replacement: the tokens it made the next request recompute, the
//! summariser's usage, the prompt tokens it saved on every later request and
//! its break-even, in tokens and (with a [`Prices`] source) in money.
//!
//! Predictions are what the published rules imply, computed on dsh's token
//! positions; they are not the provider's bill: the provider decides what it
//! keeps, for how long, and at which granularity.

use std::collections::HashMap;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::attempt::{Attempts, Outcome};
use crate::event::{Event, Kind, SurfaceOp};
use crate::json::Value;
use crate::log::{ChunkRun, Folded, LoadError, LoadOptions, LoadedLog, LogSource, Observer};
use crate::meter::estimate::{system_tokens, tools_tokens};
use crate::meter::tokenizer::{Counter, Encoding};
use crate::request_header::canonical;
use crate::surface::project;

/// How to analyse.
#[derive(Debug, Clone, Default)]
pub struct CacheOptions {
    /// Count positions exactly with this encoding instead of the heuristic.
    pub tokenizer: Option<Encoding>,
    /// DeepSeek's rule.
    pub deepseek: DeepSeekRule,
    /// Anthropic's rule.
    pub anthropic: AnthropicRule,
    /// How long an unused cache entry lives (ms); `None`: entries never
    /// expire (DeepSeek publishes no fixed lifetime). Applied only when the
    /// log's times are real.
    pub lifetime_ms: Option<u64>,
    /// Rescale token figures by the session's measured ratio of reported to
    /// computed prompt size (`CacheReport::calibrate`).
    pub calibrate: bool,
    /// Tokens the log does not show at the head of every request (a system
    /// prompt or tools left as placeholders), counted with the system
    /// prompt ([`crate::hidden_prefix`]).
    pub hidden_prefix: Option<u64>,
}

/// DeepSeek's context cache on disk (api-docs.deepseek.com, "Context
/// Caching"): every request persists two **prefix units**, at the end of its
/// input and at the end of its output; a common prefix detected across
/// requests is persisted as a unit of its own (usable by later requests, not
/// by the one that revealed it). A request hits the longest unit it matches
/// **completely**. The output unit holds the output as generated: a later
/// request matches it only if it reads the message back unchanged, which an
/// answer with reasoning and no tool call never is (DeepSeek's history
/// leaves that reasoning out), so such a request leaves no output unit.
/// Units carved at fixed token intervals inside long inputs
/// are not modelled (the interval is not published). Hits are rounded down
/// to whole `block`s: every `cacheReadTokens` in the recorded DeepSeek logs
/// is a multiple of 128.
#[derive(Debug, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(description = "DeepSeek's prefix units as the analysis modelled them.")]
pub struct DeepSeekRule {
    /// Storage granularity in tokens (1 for none): hits are whole multiples
    /// of it (--block).
    pub block: u64,
    /// Persist detected common prefixes as units.
    pub common_prefix_units: bool,
}

impl Default for DeepSeekRule {
    fn default() -> Self {
        DeepSeekRule {
            block: 128,
            common_prefix_units: true,
        }
    }
}

/// How long an Anthropic cache entry lives after its last use: the two
/// lifetimes `cache_control` offers (`{"type": "ephemeral"}` is 5 minutes,
/// `"ttl": "1h"` one hour). Every read refreshes an entry for its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Ttl {
    /// 5 minutes (the default); written at 1.25× the base input price.
    #[default]
    FiveMinutes,
    /// 1 hour (`"ttl": "1h"`); written at 2× the base input price.
    OneHour,
}

impl Ttl {
    /// `5m`, `1h`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Ttl::FiveMinutes => "5m",
            Ttl::OneHour => "1h",
        }
    }

    /// The lifetime in milliseconds.
    pub(crate) fn ms(self) -> u64 {
        match self {
            Ttl::FiveMinutes => 300_000,
            Ttl::OneHour => 3_600_000,
        }
    }

    /// `5m` or `1h` (also `300s`, `60m`, `3600s`: the same lifetimes).
    pub fn parse(s: &str) -> Option<Ttl> {
        match s {
            "5m" | "300s" => Some(Ttl::FiveMinutes),
            "1h" | "60m" | "3600s" => Some(Ttl::OneHour),
            _ => None,
        }
    }
}

/// Where a `cache_control` breakpoint sits, in Anthropic's prompt order
/// (tools → system → messages). A place a request does not have (no tools,
/// a single user message) puts no breakpoint in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Place {
    /// After the tool definitions (on the last tool).
    Tools,
    /// After the system prompt (generation 3: after the leading
    /// `system/message` nodes).
    System,
    /// On the first user-role message (a user message or a tool result):
    /// the context a session starts with.
    FirstUser,
    /// On the user-role message before the last one: where the previous
    /// request's `last` breakpoint usually was.
    PrevUser,
    /// On the last message (incremental caching of the conversation).
    Last,
}

impl Place {
    /// Every place, in prompt order.
    const ALL: [Place; 5] = [
        Place::Tools,
        Place::System,
        Place::FirstUser,
        Place::PrevUser,
        Place::Last,
    ];

    /// `tools`, `system`, `first-user`, `prev-user`, `last`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Place::Tools => "tools",
            Place::System => "system",
            Place::FirstUser => "first-user",
            Place::PrevUser => "prev-user",
            Place::Last => "last",
        }
    }

    fn parse(s: &str) -> Option<Place> {
        Place::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// One `cache_control` breakpoint: where, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Breakpoint {
    /// Its place.
    pub at: Place,
    /// Its lifetime.
    pub ttl: Ttl,
}

/// Anthropic's limit of `cache_control` breakpoints per request.
const MAX_BREAKPOINTS: usize = 4;

/// A breakpoint layout that Anthropic's API would refuse, or that does not
/// parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Nothing given.
    #[error("no breakpoints given (use `none` for none)")]
    Empty,
    /// A place dsh does not know.
    #[error("unknown breakpoint place {0:?} (tools, system, first-user, prev-user, last; or none)")]
    UnknownPlace(String),
    /// A TTL Anthropic does not offer.
    #[error("unknown TTL {0:?}: Anthropic offers 5m and 1h")]
    UnknownTtl(String),
    /// The same place twice.
    #[error("breakpoint {0} given twice")]
    Duplicate(&'static str),
    /// `none` with other places.
    #[error("`none` cannot be combined with breakpoints")]
    NoneWithOthers,
    /// More than `MAX_BREAKPOINTS`.
    #[error(
        "{0} breakpoints given: Anthropic accepts at most {MAX_BREAKPOINTS} cache_control breakpoints per request"
    )]
    TooMany(usize),
    /// A shorter TTL before a longer one in prompt order.
    #[error(
        "{first}:{first_ttl} comes before {then}:{then_ttl} in the prompt (tools → system → messages), and Anthropic requires longer TTLs before shorter ones"
    )]
    TtlOrder {
        /// The earlier place.
        first: &'static str,
        /// Its (shorter) TTL.
        first_ttl: &'static str,
        /// The later place.
        then: &'static str,
        /// Its (longer) TTL.
        then_ttl: &'static str,
    },
}

/// Where `cache_control` breakpoints sit in a request, in prompt order (at
/// most `MAX_BREAKPOINTS`, TTLs never increasing). Empty: what DSH's
/// Anthropic-compatible adapters send (no `cache_control` anywhere), so
/// nothing is cached.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Breakpoints {
    list: Vec<Breakpoint>,
}

impl Breakpoints {
    /// No breakpoints (DSH's adapters).
    pub fn none() -> Breakpoints {
        Breakpoints::default()
    }

    /// One 5-minute breakpoint on the last message.
    #[cfg(test)]
    fn last() -> Breakpoints {
        Breakpoints {
            list: vec![Breakpoint {
                at: Place::Last,
                ttl: Ttl::FiveMinutes,
            }],
        }
    }

    /// A validated layout: sorted into prompt order, then refused when it
    /// names a place twice, has more than [`MAX_BREAKPOINTS`], or puts a
    /// shorter TTL before a longer one.
    fn new(mut list: Vec<Breakpoint>) -> Result<Breakpoints, LayoutError> {
        list.sort_by_key(|b| b.at);
        if let Some(w) = list.windows(2).find(|w| w[0].at == w[1].at) {
            return Err(LayoutError::Duplicate(w[0].at.as_str()));
        }
        if list.len() > MAX_BREAKPOINTS {
            return Err(LayoutError::TooMany(list.len()));
        }
        if let Some(w) = list.windows(2).find(|w| w[0].ttl < w[1].ttl) {
            return Err(LayoutError::TtlOrder {
                first: w[0].at.as_str(),
                first_ttl: w[0].ttl.as_str(),
                then: w[1].at.as_str(),
                then_ttl: w[1].ttl.as_str(),
            });
        }
        Ok(Breakpoints { list })
    }

    /// Parse `none`, or a comma-separated list of `PLACE[:TTL]` (places
    /// `tools`, `system`, `first-user`, `prev-user`, `last`; TTL `5m` or
    /// `1h`, `default` when absent), in any order.
    ///
    /// ```
    /// use dsh::cache::{Breakpoints, Ttl};
    /// let b = Breakpoints::parse("last, tools:1h,system:1h", Ttl::FiveMinutes).unwrap();
    /// assert_eq!(b.to_string(), "tools:1h,system:1h,last:5m");
    /// assert!(Breakpoints::parse("tools,system:1h", Ttl::FiveMinutes).is_err());
    /// ```
    pub fn parse(spec: &str, default: Ttl) -> Result<Breakpoints, LayoutError> {
        let items: Vec<&str> = spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if items.is_empty() {
            return Err(LayoutError::Empty);
        }
        if items.contains(&"none") {
            return if items.len() == 1 {
                Ok(Breakpoints::none())
            } else {
                Err(LayoutError::NoneWithOthers)
            };
        }
        let mut list = Vec::with_capacity(items.len());
        for it in items {
            let (place, ttl) = match it.split_once(':') {
                Some((p, t)) => (
                    p.trim(),
                    Ttl::parse(t.trim()).ok_or_else(|| LayoutError::UnknownTtl(t.into()))?,
                ),
                None => (it, default),
            };
            let at = Place::parse(place).ok_or_else(|| LayoutError::UnknownPlace(place.into()))?;
            list.push(Breakpoint { at, ttl });
        }
        Breakpoints::new(list)
    }

    /// The breakpoints, in prompt order.
    pub(crate) fn list(&self) -> &[Breakpoint] {
        &self.list
    }

    /// No breakpoint at all.
    pub fn is_none(&self) -> bool {
        self.list.is_empty()
    }

    /// The shortest TTL of the layout (`None` without breakpoints).
    fn shortest_ttl(&self) -> Option<Ttl> {
        self.list.iter().map(|b| b.ttl).min()
    }
}

impl std::fmt::Display for Breakpoints {
    /// `none`, or `PLACE:TTL,…` in prompt order.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.list.is_empty() {
            return f.write_str("none");
        }
        let list: Vec<String> = self
            .list
            .iter()
            .map(|b| format!("{}:{}", b.at.as_str(), b.ttl.as_str()))
            .collect();
        f.write_str(&list.join(","))
    }
}

/// Anthropic's prompt cache, as its prompt-caching documentation describes
/// it. The prompt is laid out tools → system → messages; each
/// `cache_control` breakpoint writes the prefix up to it as an entry that
/// lives its [`Ttl`] after its last use. Each breakpoint looks for the
/// longest live entry ending at one of the `lookback` block boundaries
/// before it (or at itself), and reading an entry refreshes it; the request
/// reads the longest of those hits (A). Breakpoints beyond A whose prefix
/// reaches `min_tokens` are written, billed as the documentation's mixed-TTL
/// rule says: 1-hour writes from A to the last 1-hour breakpoint beyond it
/// (B), 5-minute writes from B to the last breakpoint (C); the rest is
/// uncached input. Blocks are dsh's segments (tools, system, one per
/// message), and TTLs count only when the log's times are real.
#[derive(Debug, Clone)]
pub struct AnthropicRule {
    /// Where the breakpoints are.
    pub breakpoints: Breakpoints,
    /// Shortest cacheable prefix, tokens.
    pub min_tokens: u64,
    /// Blocks looked back from a breakpoint for an earlier entry.
    pub lookback: usize,
}

impl Default for AnthropicRule {
    fn default() -> Self {
        AnthropicRule {
            breakpoints: Breakpoints::none(),
            min_tokens: 1024,
            lookback: 20,
        }
    }
}

/// Which rule predicts a route's hits: Anthropic's for providers named
/// `anthropic…`, DeepSeek's otherwise.
pub fn rule_for(provider: &str) -> &'static str {
    if provider.starts_with("anthropic") {
        "anthropic"
    } else {
        "deepseek"
    }
}

/// Which part of the request header changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HeaderPart {
    /// The system prompt.
    System,
    /// The tool schemas.
    Tools,
    /// `adapterDefaults` markers.
    AdapterDefaults,
    /// Other call config (effort, temperature, max tokens, stop).
    Config,
}

impl HeaderPart {
    /// `system`, `tools`, `adapterDefaults`, `config`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HeaderPart::System => "system",
            HeaderPart::Tools => "tools",
            HeaderPart::AdapterDefaults => "adapterDefaults",
            HeaderPart::Config => "config",
        }
    }
}

/// Why a request's prompt differs from what the previous one left cached.
#[derive(Debug, Clone, PartialEq)]
pub enum Cause {
    /// The first request of the log.
    First,
    /// Nothing changed before the new suffix.
    Append,
    /// A compaction checkpoint (the replacing event's seq).
    Compaction {
        /// The checkpoint `user/message`.
        seq: u64,
    },
    /// A pruned tool result (the replacing `tool/result`'s seq).
    Prune {
        /// The replacing `tool/result`.
        seq: u64,
    },
    /// A replacement with no metering event before it.
    Replacement {
        /// The replacing event.
        seq: u64,
    },
    /// The request header changed inside the prompt.
    Header {
        /// Which part the first changed position falls in.
        part: HeaderPart,
    },
    /// An `image/offload` changed a node.
    ImageOffload {
        /// The `image/offload` event.
        seq: u64,
    },
    /// Provider or model changed: a different cache.
    Route {
        /// `provider/model` before.
        from: String,
        /// `provider/model` now.
        to: String,
    },
    /// A new lifecycle began (`session/end-seed`) and the prompt changed for
    /// no other logged reason.
    Lifecycle {
        /// The `session/end-seed`.
        seq: u64,
    },
    /// Nothing changed, but the idle gap exceeds the cache lifetime.
    Idle {
        /// Milliseconds since the previous request.
        gap_ms: u64,
    },
    /// The first request of a fork child after its inherited seed: the
    /// seed's requests were the parent's, so the child starts on what the
    /// parent left in the cache.
    Fork {
        /// The parent session (`parentSession`).
        parent: String,
    },
    /// The first request of a session hit a prefix an earlier session's
    /// request left in the provider's cache ([`cross_session`]).
    CrossSession {
        /// That session.
        session: String,
    },
    /// The change has no logged explanation.
    Unknown,
}

impl Cause {
    /// A stable key for grouping: `first`, `append`, `compaction`, `prune`,
    /// `replacement`, `header:system`, `header:tools`, `image-offload`,
    /// `route`, `lifecycle`, `idle`, `fork`, `cross-session`, `unknown`.
    pub(crate) fn key(&self) -> String {
        match self {
            Cause::First => "first".into(),
            Cause::Append => "append".into(),
            Cause::Compaction { .. } => "compaction".into(),
            Cause::Prune { .. } => "prune".into(),
            Cause::Replacement { .. } => "replacement".into(),
            Cause::Header { part } => format!("header:{}", part.as_str()),
            Cause::ImageOffload { .. } => "image-offload".into(),
            Cause::Route { .. } => "route".into(),
            Cause::Lifecycle { .. } => "lifecycle".into(),
            Cause::Idle { .. } => "idle".into(),
            Cause::Fork { .. } => "fork".into(),
            Cause::CrossSession { .. } => "cross-session".into(),
            Cause::Unknown => "unknown".into(),
        }
    }

    /// The seq the cause names, if any.
    pub(crate) fn seq(&self) -> Option<u64> {
        match self {
            Cause::Compaction { seq }
            | Cause::Prune { seq }
            | Cause::Replacement { seq }
            | Cause::ImageOffload { seq }
            | Cause::Lifecycle { seq } => Some(*seq),
            _ => None,
        }
    }

    /// One short phrase.
    pub fn describe(&self) -> String {
        match self {
            Cause::First => "first request".into(),
            Cause::Append => "append".into(),
            Cause::Compaction { seq } => format!("compaction at seq {seq}"),
            Cause::Prune { seq } => format!("prune at seq {seq}"),
            Cause::Replacement { seq } => format!("replacement at seq {seq}"),
            Cause::Header { part } => format!("header change: {}", part.as_str()),
            Cause::ImageOffload { seq } => format!("image offload at seq {seq}"),
            Cause::Route { from, to } => format!("route {from} → {to}"),
            Cause::Lifecycle { seq } => format!("new lifecycle after end-seed {seq}"),
            Cause::Idle { gap_ms } => format!("idle {}s beyond the cache lifetime", gap_ms / 1000),
            Cause::Fork { parent } => format!("fork of {parent}"),
            Cause::CrossSession { session } => format!("hit session {session}'s prefix"),
            Cause::Unknown => "unknown".into(),
        }
    }
}

/// What a segment is.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// The route root (provider/model); no tokens.
    Route,
    /// The system prompt.
    System,
    /// The tool schemas.
    Tools,
    /// A surface node's message.
    Node {
        /// Its seq.
        seq: u64,
        /// Its event type.
        kind: Kind,
        /// Its surface position.
        position: usize,
    },
    /// The end of the prompt (the change is past every segment).
    End,
}

impl Segment {
    /// `route`, `system`, `tools`, `node`, `end`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Segment::Route => "route",
            Segment::System => "system",
            Segment::Tools => "tools",
            Segment::Node { .. } => "node",
            Segment::End => "end",
        }
    }
}

/// The content block of a segment the first change falls in.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "part", rename_all = "lowercase")]
pub enum Block {
    /// The system prompt part of the header.
    System,
    /// The tool schemas part of the header; `tool` names the first schema
    /// that differs (by its `name`), when one does.
    Tools {
        /// The first differing tool's name.
        tool: Option<String>,
    },
    /// A content block of a node's message.
    #[serde(rename_all = "camelCase")]
    Content {
        /// Its index in the message's `content`.
        #[schemars(with = "u64")]
        index: usize,
        /// Its `type` (`text`, `reasoning`, `tool-call`, `tool-result`,
        /// `image`, …).
        #[serde(rename = "type")]
        kind: String,
        /// For a `tool-call`: its index among the message's tool calls.
        #[schemars(with = "Option<u64>")]
        tool_call: Option<usize>,
        /// For a `tool-result`: the index of the first differing item of its
        /// `content`.
        #[schemars(with = "Option<u64>")]
        result_content: Option<usize>,
    },
}

/// The first changed position of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    /// Token index (0-based) where the first changed segment starts.
    pub tokens: u64,
    /// The segment it falls in.
    pub segment: Segment,
    /// The block inside that segment where the change begins (`None` when
    /// the change is past every segment, or at the route root).
    pub block: Option<Block>,
    /// Token index (0-based) of that block's start: the segment's start plus
    /// the blocks (and, inside a tool result, the content items) before it,
    /// counted as [`Position::tokens`] is (heuristic or exact). Equal to
    /// `tokens` without a block.
    pub block_tokens: u64,
}

pub use crate::attempt::Reported;

/// The idle gap before a request (`--json`: null, `"unknown"` or the gap).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Idle {
    /// Normalised times: the gap cannot be known.
    Unknown,
    /// The first request, or no lifetime to compare with.
    #[serde(untagged)]
    None,
    /// Real times: the gap in ms and whether it exceeds the lifetime.
    #[serde(untagged)]
    Gap {
        /// Milliseconds since the previous request.
        #[serde(rename = "gapMs")]
        ms: u64,
        /// Beyond the cache lifetime.
        expired: bool,
    },
}

/// A model attempt that failed after the provider received it.
///
/// **Rule.** A failed attempt (how attempts begin and end, and which the
/// log shows the provider received: `crate::attempt`) is a request for
/// the cache when the provider received it. DeepSeek persists a request's
/// input prefix unit once it has processed the input, whatever happens to
/// the answer, so such an attempt leaves its prompt in the cache (its
/// output, incomplete and never logged whole, leaves nothing). An attempt
/// refused before any byte came back (`AUTH`, `RATE_LIMIT`,
/// `CONTEXT_WINDOW_EXCEEDED`, `TRANSPORT`, …, or an abort before the first
/// chunk) may never have reached the model, so it is not counted (see
/// [`CacheReport::attempts_not_sent`]): counting it would predict hits the
/// provider has no reason to give.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The failure code (`LlmFailure.code`), or `unfinished` for an attempt
    /// the process never finished, or `aborted`.
    pub code: String,
}

/// One model request.
#[derive(Debug, Clone)]
pub struct Request {
    /// A request inside a fork child's inherited seed: the parent sent it
    /// (it is the parent's, so totals leave it out; see `fork`).
    pub inherited: bool,
    /// `Some` for a failed attempt the provider received ([`Failure`]):
    /// `seq` is then its last chunk (or its `assistant/attempt`).
    pub failed: Option<Failure>,
    /// 0-based index in the log.
    pub index: usize,
    /// The `assistant/message` the request produced.
    pub seq: u64,
    /// Its turn.
    pub turn: Option<f64>,
    /// Its step.
    pub step: Option<f64>,
    /// Its `time`.
    pub time: f64,
    /// `provider/model`.
    pub route: String,
    /// Provider.
    pub provider: String,
    /// Model.
    pub model: String,
    /// Prompt size in tokens (system + tools + messages).
    pub prompt_tokens: u64,
    /// Messages in the prompt.
    pub messages: usize,
    /// The first changed position (`None` for the first request).
    pub first_changed: Option<Position>,
    /// Why it changed.
    pub cause: Cause,
    /// Header parts that differ from the previous request's header.
    pub header_changes: Vec<HeaderPart>,
    /// Input appended since the previous request (new messages).
    pub fresh_tokens: u64,
    /// Old content at or after the first changed position, sent again.
    pub recomputed_tokens: u64,
    /// Predicted cache hit under the route's rule ([`rule_for`]).
    pub predicted_hit: u64,
    /// Predicted hit under [`DeepSeekRule`].
    pub deepseek_hit: u64,
    /// The length of the DeepSeek unit hit, before rounding to blocks.
    pub deepseek_unit: u64,
    /// Predicted read and writes under [`AnthropicRule`] (zero on routes
    /// it does not predict, see [`rule_for`]).
    pub anthropic: AnthropicPrediction,
    /// The provider's usage, when logged.
    pub reported: Option<Reported>,
    /// The idle gap.
    pub idle: Idle,
    /// Tokens of the request's output message (its output-end unit).
    pub output_tokens: u64,
    /// The session whose units the predicted hit reads, when it is another
    /// session's ([`cross_session`]).
    pub cross_session: Option<String>,
}

impl Request {
    /// `prompt − predicted hit`.
    pub fn predicted_miss(&self) -> u64 {
        self.prompt_tokens - self.predicted_hit
    }
}

/// What [`AnthropicRule`] predicts for one request: hit + writes ≤ prompt;
/// the rest of the prompt is uncached input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AnthropicPrediction {
    /// Tokens read from the cache (`cache_read_input_tokens`).
    pub hit: u64,
    /// Tokens written to 5-minute entries.
    pub write_5m: u64,
    /// Tokens written to 1-hour entries.
    pub write_1h: u64,
    /// Of the request's recomputed tokens, those written to 5-minute entries.
    pub recomputed_5m: u64,
    /// Of the request's recomputed tokens, those written to 1-hour entries.
    pub recomputed_1h: u64,
}

impl AnthropicPrediction {
    /// All tokens written (`cache_creation_input_tokens`).
    pub(crate) fn write(&self) -> u64 {
        self.write_5m + self.write_1h
    }
}

/// The kind of a replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaceKind {
    /// A compaction checkpoint (after `compaction/summary`).
    Compaction,
    /// A pruned tool result (after `compaction/prune`).
    Prune,
    /// A replacement with no metering event before it.
    Other,
    /// A generation-3 system-head rewrite (`system/message` replacing node 0).
    SystemHead,
}

impl ReplaceKind {
    /// `compaction`, `prune`, `replacement`, `system-head`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplaceKind::Compaction => "compaction",
            ReplaceKind::Prune => "prune",
            ReplaceKind::Other => "replacement",
            ReplaceKind::SystemHead => "system-head",
        }
    }
}

/// The summariser call of a compaction (`compaction/summary`).
#[derive(Debug, Clone)]
pub struct SummaryCall {
    /// The `compaction/summary` seq.
    pub seq: u64,
    /// Its provider.
    pub provider: String,
    /// Its model.
    pub model: String,
    /// Its time.
    pub time: f64,
    /// Its usage, when logged.
    pub usage: Option<Reported>,
}

impl SummaryCall {
    /// All its tokens (prompt + output), 0 without usage.
    pub fn tokens(&self) -> f64 {
        self.usage
            .map(|u| u.prompt() + u.output_tokens)
            .unwrap_or(0.0)
    }
}

/// When a replacement paid for itself (`--json`: the request, a sentence,
/// or null).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub enum BreakEven {
    /// Not paid back by the end of the log.
    #[serde(rename = "not paid back by the end of the log")]
    NotPaidBack,
    /// At this request (index), after this many requests counted from the
    /// first one after the replacement (1 = that request itself).
    #[serde(untagged)]
    At {
        /// Request index.
        #[schemars(with = "u64")]
        request: usize,
        /// Requests from the replacement's next request, inclusive.
        #[schemars(with = "u64")]
        after: usize,
    },
    /// Cannot be computed (no request after it, or no prices).
    #[serde(untagged)]
    Unknown,
}

/// One replacement and what it cost and saved.
#[derive(Debug, Clone)]
pub struct Replacement {
    /// The replacing event.
    pub seq: u64,
    /// Compaction, prune or other.
    pub kind: ReplaceKind,
    /// Its surface position.
    pub position: usize,
    /// Tokens of the nodes it shadowed.
    pub shadowed_tokens: u64,
    /// Tokens of the replacing node.
    pub replacement_tokens: u64,
    /// The first request after it.
    pub next_request: Option<usize>,
    /// Tokens recomputed at that request because of it (0 when another
    /// change earlier in the prompt caused the miss: see `covered_by`).
    pub recomputed_tokens: u64,
    /// The cause of the next request's miss when it was not this replacement.
    pub covered_by: Option<Cause>,
    /// The summariser call (compactions).
    pub summary: Option<SummaryCall>,
    /// Per later request (index): prompt tokens saved.
    pub saved: Vec<(usize, i64)>,
    /// Where a later replacement shadowed it (its savings end there).
    pub superseded_by: Option<u64>,
    /// Break-even in tokens (recomputed + summariser tokens vs saved tokens).
    pub break_even_tokens: BreakEven,
}

impl Replacement {
    /// Σ saved tokens.
    pub fn saved_tokens(&self) -> i64 {
        self.saved.iter().map(|(_, t)| t).sum()
    }

    /// What it cost in tokens: recomputed prompt + the summariser call.
    fn cost_tokens(&self) -> f64 {
        self.recomputed_tokens as f64 + self.summary.as_ref().map_or(0.0, |s| s.tokens())
    }
}

/// Prices per million tokens for one provider/model at one time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Uncached input.
    pub miss: f64,
    /// Cache hit.
    pub hit: f64,
    /// Cache write (where the provider bills it; else `miss`); Anthropic's
    /// 5-minute entries.
    pub write: f64,
    /// Anthropic's 1-hour cache write, when known.
    pub write_1h: Option<f64>,
    /// Output.
    pub output: f64,
    /// Currency, e.g. `USD`.
    pub currency: &'static str,
}

impl Rates {
    /// What a call with this reported usage cost.
    pub(crate) fn usage_cost(&self, u: &Reported) -> f64 {
        (u.input_tokens * self.miss
            + u.cache_read_tokens * self.hit
            + u.cache_write_tokens * self.write
            + u.output_tokens * self.output)
            / 1e6
    }
}

/// Where prices come from: a dated price table. `None` means no known
/// price, shown as `—`, never guessed.
pub trait Prices: Sync {
    /// Rates for a provider/model at a time (ms since epoch, `None` if the
    /// log's times are not real).
    fn rates(&self, provider: &str, model: &str, time_ms: Option<i64>) -> Option<Rates>;
}

/// No prices at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPrices;

impl Prices for NoPrices {
    fn rates(&self, _: &str, _: &str, _: Option<i64>) -> Option<Rates> {
        None
    }
}

impl Prices for crate::price::PriceTable {
    fn rates(&self, provider: &str, model: &str, time_ms: Option<i64>) -> Option<Rates> {
        let e = self.entry(provider, model, time_ms).ok()?;
        // `None`: the rate depends on the hour and the time is unknown.
        let (r, _) = e.rates_at(time_ms)?;
        Some(Rates {
            miss: r.input,
            hit: r.cache_hit,
            write: r.cache_write,
            write_1h: r.cache_write_1h,
            output: r.output,
            currency: "USD",
        })
    }
}

/// What a request's prompt costs as predicted: its hit, its cache writes
/// and the rest (uncached input), each at its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestCost {
    /// Predicted hit × the hit rate.
    pub hit: f64,
    /// Predicted cache writes × their rates (Anthropic's rule: 5-minute
    /// writes at the write rate, 1-hour writes at the 1-hour rate; 0 under
    /// DeepSeek's rule, which bills no writes).
    pub write: f64,
    /// The rest of the prompt × the uncached input rate.
    pub uncached: f64,
    /// Currency.
    pub currency: &'static str,
    /// Requests left out of a sum: no known price (for their route at
    /// their time). A single request's cost has 0.
    pub unpriced: usize,
}

impl RequestCost {
    /// Nothing yet.
    fn zero() -> RequestCost {
        RequestCost {
            hit: 0.0,
            write: 0.0,
            uncached: 0.0,
            currency: "USD",
            unpriced: 0,
        }
    }

    /// The prompt's whole cost.
    pub fn total(&self) -> f64 {
        self.hit + self.write + self.uncached
    }

    /// What the miss costs: writes and uncached input.
    pub(crate) fn miss(&self) -> f64 {
        self.write + self.uncached
    }

    /// Add another cost (same currency assumed: every rate is USD).
    fn add(&mut self, o: &RequestCost) {
        self.hit += o.hit;
        self.write += o.write;
        self.uncached += o.uncached;
        self.unpriced += o.unpriced;
    }
}

impl Request {
    /// Predicted cache writes (5-minute, 1-hour): Anthropic's when its rule
    /// predicts the route, else none.
    pub fn predicted_writes(&self) -> (u64, u64) {
        if rule_for(&self.provider) == "anthropic" {
            (self.anthropic.write_5m, self.anthropic.write_1h)
        } else {
            (0, 0)
        }
    }

    /// Of the recomputed tokens, those predicted written to the cache
    /// (5-minute, 1-hour): Anthropic's rule only.
    pub(crate) fn recomputed_writes(&self) -> (u64, u64) {
        if rule_for(&self.provider) == "anthropic" {
            let a = &self.anthropic;
            let w1 = a.recomputed_1h.min(self.recomputed_tokens);
            (a.recomputed_5m.min(self.recomputed_tokens - w1), w1)
        } else {
            (0, 0)
        }
    }
}

impl CacheReport {
    /// What request `q`'s prompt costs as predicted, `None` without a known
    /// price (or without a 1-hour write rate for its predicted 1-hour
    /// writes).
    pub fn request_cost(&self, q: &Request, prices: &dyn Prices) -> Option<RequestCost> {
        let r = prices.rates(&q.provider, &q.model, self.time_ms(q.time))?;
        let (w5, w1) = q.predicted_writes();
        let w1_cost = match w1 {
            0 => 0.0,
            n => n as f64 * r.write_1h?,
        };
        let uncached = q.prompt_tokens.saturating_sub(q.predicted_hit + w5 + w1);
        Some(RequestCost {
            hit: q.predicted_hit as f64 * r.hit / 1e6,
            write: (w5 as f64 * r.write + w1_cost) / 1e6,
            uncached: uncached as f64 * r.miss / 1e6,
            currency: r.currency,
            unpriced: 0,
        })
    }

    /// The predicted prompt cost of every own request (inherited ones are
    /// the parent's): the sum over the priced ones, with the count of those
    /// left out for want of a price ([`RequestCost::unpriced`]). `None`
    /// only when there are requests and none has a price.
    pub fn predicted_cost(&self, prices: &dyn Prices) -> Option<RequestCost> {
        let mut sum = RequestCost::zero();
        let mut priced = 0;
        for q in self.requests.iter().filter(|q| !q.inherited) {
            match self.request_cost(q, prices) {
                Some(c) => {
                    sum.add(&c);
                    priced += 1;
                }
                None => sum.unpriced += 1,
            }
        }
        (priced > 0 || sum.unpriced == 0).then_some(sum)
    }

    /// What the predicted misses of each cause cost (cache writes at their
    /// rates, the rest at the uncached input rate), per cause key: the sum
    /// over its priced requests (`None` for a cause none of whose requests
    /// has a price), and how many of its requests had no price.
    pub(crate) fn miss_cost_by_cause(&self, prices: &dyn Prices) -> CauseCosts {
        let mut out: HashMap<String, (f64, usize, usize)> = HashMap::new();
        for q in self.requests.iter().filter(|q| !q.inherited) {
            let e = out.entry(q.cause.key()).or_default();
            match self.request_cost(q, prices) {
                Some(c) => {
                    e.0 += c.miss();
                    e.1 += 1;
                }
                None => e.2 += 1,
            }
        }
        out.into_iter()
            .map(|(k, (c, priced, unpriced))| {
                (k, ((priced > 0 || unpriced == 0).then_some(c), unpriced))
            })
            .collect()
    }
}

/// Money figures of a replacement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplacementCost {
    /// Recomputed tokens × (the rate they are billed at − hit): under
    /// Anthropic's rule the ones written to the cache at their write rate
    /// (5-minute or 1-hour), the rest at the uncached input rate.
    pub recompute: f64,
    /// The part of `recompute` of the tokens written to the cache (0 where
    /// nothing is written).
    pub recompute_write: f64,
    /// The summariser call.
    pub summary: f64,
    /// Saved tokens × hit price, over every later request.
    pub saved: f64,
    /// When the savings covered recompute + summary.
    pub break_even: BreakEven,
    /// Currency.
    pub currency: &'static str,
}

/// The analysis of one log.
#[derive(Debug, Clone)]
pub struct CacheReport {
    /// The log as given.
    pub file: String,
    /// The session id.
    pub session: String,
    /// Whether the log's times look real (all plausible epoch milliseconds,
    /// never going backwards); normalised times make idle gaps unknown.
    pub times_real: bool,
    /// The encoding positions are counted with (`None`: the heuristic).
    pub tokenizer: Option<Encoding>,
    /// DeepSeek's rule.
    pub deepseek: DeepSeekRule,
    /// Anthropic's rule.
    pub anthropic: AnthropicRule,
    /// Every request.
    pub requests: Vec<Request>,
    /// Every replacement.
    pub replacements: Vec<Replacement>,
    /// The loader's warnings (dropped torn tail, tolerances).
    pub warnings: Vec<String>,
    /// Failed attempts not counted as requests: nothing shows the provider
    /// received them ([`Failure`]).
    pub attempts_not_sent: usize,
    /// The factor token figures were rescaled by (`CacheReport::calibrate`).
    pub calibrated: Option<f64>,
    /// Per request: its content prefixes, for [`cross_session`].
    pub(crate) prefixes: Vec<Prefix>,
}

/// Session (or many-session) totals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Requests.
    pub requests: usize,
    /// Σ prompt tokens.
    pub prompt_tokens: u64,
    /// Σ predicted hits.
    pub predicted_hit: u64,
    /// Σ predicted writes to 5-minute cache entries (Anthropic's rule).
    pub predicted_write_5m: u64,
    /// Σ predicted writes to 1-hour cache entries (Anthropic's rule).
    pub predicted_write_1h: u64,
    /// Failed attempts among the requests.
    pub failed_requests: usize,
    /// Requests with usage.
    pub reported_requests: usize,
    /// Σ reported prompt (input + cache read + write) of requests with usage.
    pub reported_prompt: f64,
    /// Σ reported cache read.
    pub reported_hit: f64,
    /// Σ prompt tokens of the requests with usage (for calibration).
    pub prompt_tokens_reported: u64,
    /// Σ predicted hits of the requests with usage.
    pub predicted_hit_reported: u64,
    /// Per cause key: (requests, predicted miss tokens, recomputed tokens).
    pub by_cause: Vec<(String, usize, u64, u64)>,
}

impl Totals {
    /// Predicted hit rate (0..1) over all requests.
    pub fn predicted_rate(&self) -> Option<f64> {
        (self.prompt_tokens > 0).then(|| self.predicted_hit as f64 / self.prompt_tokens as f64)
    }

    /// Reported hit rate over the requests with usage.
    pub fn reported_rate(&self) -> Option<f64> {
        (self.reported_prompt > 0.0).then(|| self.reported_hit / self.reported_prompt)
    }

    /// Reported prompt size ÷ computed prompt size, over requests with usage.
    pub fn calibration(&self) -> Option<f64> {
        (self.prompt_tokens_reported > 0)
            .then(|| self.reported_prompt / self.prompt_tokens_reported as f64)
    }

    /// Add a report.
    pub fn add(&mut self, r: &CacheReport) {
        let mut by: HashMap<String, (usize, u64, u64)> = self
            .by_cause
            .drain(..)
            .map(|(k, a, b, c)| (k, (a, b, c)))
            .collect();
        for q in r.requests.iter().filter(|q| !q.inherited) {
            self.requests += 1;
            self.failed_requests += q.failed.is_some() as usize;
            self.prompt_tokens += q.prompt_tokens;
            self.predicted_hit += q.predicted_hit;
            let (w5, w1) = q.predicted_writes();
            self.predicted_write_5m += w5;
            self.predicted_write_1h += w1;
            if let Some(u) = q.reported {
                self.reported_requests += 1;
                self.reported_prompt += u.prompt();
                self.reported_hit += u.cache_read_tokens;
                self.prompt_tokens_reported += q.prompt_tokens;
                self.predicted_hit_reported += q.predicted_hit;
            }
            let e = by.entry(q.cause.key()).or_default();
            e.0 += 1;
            e.1 += q.predicted_miss();
            e.2 += q.recomputed_tokens;
        }
        let mut v: Vec<_> = by.into_iter().map(|(k, (a, b, c))| (k, a, b, c)).collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        self.by_cause = v;
    }
}

impl CacheReport {
    /// Totals of this log.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        t.add(self);
        t
    }

    /// The time of a request as epoch ms, when times are real.
    fn time_ms(&self, t: f64) -> Option<i64> {
        self.times_real.then_some(t as i64)
    }

    /// Money figures of replacement `i`, when every needed price is known.
    pub fn replacement_cost(&self, i: usize, prices: &dyn Prices) -> Option<ReplacementCost> {
        let r = self.replacements.get(i)?;
        let next = self.requests.get(r.next_request?)?;
        let rates = prices.rates(&next.provider, &next.model, self.time_ms(next.time))?;
        let (w5, w1) = match r.covered_by {
            None => next.recomputed_writes(),
            Some(_) => (0, 0),
        };
        let rest = r.recomputed_tokens.saturating_sub(w5 + w1);
        let w1_rate = match w1 {
            0 => 0.0,
            _ => rates.write_1h?,
        };
        let recompute_write =
            (w5 as f64 * (rates.write - rates.hit) + w1 as f64 * (w1_rate - rates.hit)) / 1e6;
        let recompute = rest as f64 * (rates.miss - rates.hit) / 1e6 + recompute_write;
        let summary = match &r.summary {
            Some(SummaryCall {
                usage: Some(u),
                provider,
                model,
                time,
                ..
            }) => prices
                .rates(provider, model, self.time_ms(*time))?
                .usage_cost(u),
            _ => 0.0,
        };
        let cost = recompute + summary;
        let mut saved = 0.0;
        let mut break_even = if cost <= 0.0 {
            BreakEven::At {
                request: next.index,
                after: 1,
            }
        } else {
            BreakEven::NotPaidBack
        };
        for (n, &(q, tokens)) in r.saved.iter().enumerate() {
            let req = &self.requests[q];
            let rr = prices.rates(&req.provider, &req.model, self.time_ms(req.time))?;
            saved += tokens as f64 * rr.hit / 1e6;
            if break_even == BreakEven::NotPaidBack && saved >= cost {
                break_even = BreakEven::At {
                    request: q,
                    after: n + 1,
                };
            }
        }
        Some(ReplacementCost {
            recompute,
            recompute_write,
            summary,
            saved,
            break_even,
            currency: rates.currency,
        })
    }
}

fn break_even_in_tokens(replacements: &mut [Replacement]) {
    for r in replacements {
        if r.next_request.is_none() {
            continue;
        }
        let cost = r.cost_tokens();
        let mut cum = 0i64;
        r.break_even_tokens = BreakEven::NotPaidBack;
        let first = r.next_request.unwrap_or(0);
        for &(q, t) in &r.saved {
            cum += t;
            if cum as f64 >= cost {
                r.break_even_tokens = BreakEven::At {
                    request: q,
                    after: q - first + 1,
                };
                break;
            }
        }
    }
}

impl CacheReport {
    /// Rescale every token figure of the report (prompt sizes, positions,
    /// fresh and recomputed tokens, predicted hits, replacement sizes and
    /// savings) by this session's measured ratio of the prompt size the
    /// provider reported to the one dsh computed, over the requests with
    /// usage ([`Totals::calibration`]); DeepSeek hits are the rescaled unit
    /// rounded down to whole blocks again. Returns the factor, or `None`
    /// (and changes nothing) when no request has usage. Reported figures
    /// are never touched.
    fn calibrate(&mut self) -> Option<f64> {
        let k = self
            .totals()
            .calibration()
            .filter(|k| k.is_finite() && *k > 0.0)?;
        let s = |x: u64| (x as f64 * k).round() as u64;
        let block = self.deepseek.block.max(1);
        for q in &mut self.requests {
            let prompt = s(q.prompt_tokens);
            q.prompt_tokens = prompt;
            if let Some(p) = &mut q.first_changed {
                p.tokens = s(p.tokens).min(prompt);
                p.block_tokens = s(p.block_tokens).min(prompt).max(p.tokens);
            }
            q.fresh_tokens = s(q.fresh_tokens).min(prompt);
            q.recomputed_tokens = s(q.recomputed_tokens).min(prompt);
            q.deepseek_unit = s(q.deepseek_unit).min(prompt);
            q.deepseek_hit = (q.deepseek_unit / block * block).min(prompt);
            let a = &mut q.anthropic;
            a.hit = s(a.hit).min(prompt);
            a.write_1h = s(a.write_1h).min(prompt - a.hit);
            a.write_5m = s(a.write_5m).min(prompt - a.hit - a.write_1h);
            a.recomputed_1h = s(a.recomputed_1h).min(a.write_1h);
            a.recomputed_5m = s(a.recomputed_5m).min(a.write_5m);
            q.predicted_hit = if rule_for(&q.provider) == "anthropic" {
                q.anthropic.hit
            } else {
                q.deepseek_hit
            };
            q.output_tokens = s(q.output_tokens);
        }
        let si = |x: i64| (x as f64 * k).round() as i64;
        for r in &mut self.replacements {
            r.shadowed_tokens = s(r.shadowed_tokens);
            r.replacement_tokens = s(r.replacement_tokens);
            r.recomputed_tokens = s(r.recomputed_tokens);
            for x in &mut r.saved {
                x.1 = si(x.1);
            }
        }
        break_even_in_tokens(&mut self.replacements);
        self.calibrated = Some(k);
        Some(k)
    }
}

/// Fork children (session-log §10.3, §13.6): a child's log begins with the
/// parent's first `cut` events, copied with their seqs (G0 `seedLength`, G2+
/// the `session/end-seed {inherited: true}` marker), so the requests inside
/// that seed are the parent's own requests, and the prefix units they
/// persisted are the parent's. The child's first own request can hit them
/// when it runs on the same route (the route is part of every unit's
/// identity here) and the same account, which a log does not record: a
/// fork runs under its parent's credentials, and that is assumed. So the
/// seed is replayed as the parent's cache (the prediction is the same
/// whether the parent's log is given or not), its requests are marked
/// `inherited` and left out of totals (with a home or several logs they are
/// counted once, with the parent), and the first own request's cause is
/// `fork of <parent>` where the prompt only grew from what the seed left.
///
/// Sessions that merely share a prefix (same system prompt, tools and first
/// messages, no fork) are not matched across logs: units are identified by
/// event seq within a log, which only a seed makes common to two logs, and
/// whether two sessions share a provider account (and so a cache) is in no
/// log. A prediction resting on that guess would not be honest.
pub(crate) fn fork(r: &mut CacheReport, cut: u64, parent: &str) {
    for q in &mut r.requests {
        if q.seq < cut {
            q.inherited = true;
            continue;
        }
        if matches!(
            q.cause,
            Cause::First | Cause::Append | Cause::Lifecycle { .. } | Cause::Unknown
        ) {
            q.cause = Cause::Fork {
                parent: parent.to_string(),
            };
        }
        break;
    }
}

/// One unit of the shared cache: when it was last used, and the session
/// whose request persisted it.
struct Shared {
    used: f64,
    session: usize,
}

/// The sentence every report carries.
pub const NOT_A_BILL: &str = "Predictions are what the provider's published cache rule implies on dsh's token positions, not the provider's bill: the provider decides what it keeps.";

/// What one log cannot see.
pub const ONE_LOG: &str = "one log alone: hits on prefixes other sessions left in the provider's cache are invisible to it (give several logs or a home)";

/// Requests whose predicted hit is another session's prefix.
pub fn cross_hits(reports: &[CacheReport]) -> usize {
    reports
        .iter()
        .flat_map(|r| &r.requests)
        .filter(|q| q.cross_session.is_some())
        .count()
}

/// The predicted prompt cost of many reports: the sum over the priced
/// requests and the count of the rest; `None` when requests exist and none
/// has a price.
pub fn predicted_cost(reports: &[CacheReport], prices: &dyn Prices) -> Option<RequestCost> {
    let mut all = RequestCost::zero();
    let mut any = false;
    for r in reports {
        match r.predicted_cost(prices) {
            Some(c) => {
                all.add(&c);
                any |= c.unpriced < r.totals().requests || r.totals().requests == 0;
            }
            None => all.unpriced += r.totals().requests,
        }
    }
    (any || all.unpriced == 0).then_some(all)
}

/// Per cause: what its priced requests' predicted misses cost, over many
/// reports (`None`: none of them priced), and how many had no price.
pub type CauseCosts = HashMap<String, (Option<f64>, usize)>;

/// [`CauseCosts`] of many reports.
pub fn cause_costs(reports: &[CacheReport], prices: &dyn Prices) -> CauseCosts {
    let mut out = CauseCosts::new();
    for r in reports {
        for (k, (c, n)) in r.miss_cost_by_cause(prices) {
            let e = out.entry(k).or_insert((None, 0));
            e.0 = match (e.0, c) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            e.1 += n;
        }
    }
    out
}

/// Cache across sessions. Analysed one by one, each log starts with an
/// empty cache: every session's first request is predicted a miss. A
/// provider's cache is not per session, though: DeepSeek keeps one per
/// account, keyed by prefix. When several logs are analysed together (a
/// home, a directory, many LOGs), this orders every request by time across
/// them and lets a request hit the units any earlier request of the same
/// route left, identified by content (system prompt, tools, each message's
/// role and blocks, whatever the session), while they are younger than
/// `lifetime_ms` since their last use (module doc's DeepSeek rule: input
/// end, output end, common prefixes). Where that hit is longer than the
/// session's own prediction it replaces it, the request names the session
/// (`cross_session`), and a session's first request takes the cause
/// `cross-session`.
///
/// Assumed: the logs share one provider account (a log does not record
/// which account it ran under). Left out: requests whose time is not a
/// plausible date and logs whose clock is not real (times out of order:
/// they cannot be ordered), requests inside a fork's
/// inherited seed (the parent's), and Anthropic routes (explicit breakpoints, a 5-minute or
/// 1-hour life: their cache is modelled within a session only).
pub fn cross_session(reports: &mut [CacheReport], lifetime_ms: u64) {
    let mut order: Vec<(f64, usize, usize)> = Vec::new();
    for (r, rep) in reports.iter().enumerate() {
        // A log whose clock runs backwards cannot be ordered among others.
        if rep.prefixes.len() != rep.requests.len() || !rep.times_real {
            continue;
        }
        for (i, q) in rep.requests.iter().enumerate() {
            if !q.inherited && q.time >= REAL_TIME_MIN && rule_for(&q.provider) != "anthropic" {
                order.push((q.time, r, i));
            }
        }
    }
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut units: FxHashMap<u64, Shared> = FxHashMap::default();
    let mut seen: FxHashSet<u64> = FxHashSet::default();
    let live = |u: &Shared, now: f64| now - u.used <= lifetime_ms as f64;
    let mut first_done: FxHashSet<usize> = FxHashSet::default();
    for (now, r, i) in order {
        let (hit, k, block) = {
            let rep = &reports[r];
            let p = &rep.prefixes[i];
            // The longest unit this prompt matches completely.
            let hit = (1..p.chain.len())
                .rev()
                .find(|&j| units.get(&p.chain[j]).is_some_and(|u| live(u, now)))
                .map(|j| (p.chain[j], p.ptok[j], units[&p.chain[j]].session));
            (
                hit,
                rep.calibrated.unwrap_or(1.0),
                rep.deepseek.block.max(1),
            )
        };
        let first = first_done.insert(r);
        if let Some((key, unit_tokens, from)) = hit {
            let unit = (unit_tokens as f64 * k).round() as u64;
            let tokens = unit / block * block;
            if from != r && tokens > reports[r].requests[i].predicted_hit {
                let name = reports[from].session.clone();
                let q = &mut reports[r].requests[i];
                q.predicted_hit = tokens.min(q.prompt_tokens);
                q.deepseek_hit = q.predicted_hit;
                q.deepseek_unit = unit.min(q.prompt_tokens);
                q.cross_session = Some(name.clone());
                if first || matches!(q.cause, Cause::First | Cause::Fork { .. }) {
                    q.cause = Cause::CrossSession { session: name };
                }
            }
            if let Some(u) = units.get_mut(&key) {
                u.used = now;
            }
        }
        // Persist: the common prefix with anything seen before, the input
        // end, the output end.
        let p = &reports[r].prefixes[i];
        let n = p.chain.len();
        let common = (1..n)
            .rev()
            .find(|&j| p.lo + j >= 2 && seen.contains(&p.chain[j]));
        for key in common
            .map(|j| p.chain[j])
            .into_iter()
            .chain([p.chain[n - 1]])
            .chain(p.out)
        {
            units.insert(
                key,
                Shared {
                    used: now,
                    session: r,
                },
            );
        }
        seen.extend(p.chain.iter().copied().chain(p.out));
    }
}

/// Loading failed.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The log was refused.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Analyse one log.
pub fn analyse(
    src: &LogSource,
    load: &LoadOptions,
    opts: &CacheOptions,
) -> Result<CacheReport, CacheError> {
    let mut a = Analysis::new(opts);
    let log = crate::log::load(src, load, &mut a)?;
    Ok(a.finish(&log))
}

/// The analysis as an observer of a log's loading ([`crate::log::load`]),
/// for a caller that reads the log once for several purposes
/// ([`crate::log::Tee`]); [`analyse`] is one fed alone.
pub(crate) struct Analysis(Collector);

impl Analysis {
    /// Ready to see a log's events.
    pub(crate) fn new(opts: &CacheOptions) -> Analysis {
        Analysis(Collector::new(opts))
    }

    /// The report, once the log it saw is loaded.
    pub(crate) fn finish(self, log: &LoadedLog) -> CacheReport {
        let c = self.0;
        let calibrate = c.opts.calibrate;
        let inherited_cut = c.inherited_cut;
        let mut r = c.finish(log.source.display(), log.header.id.clone());
        r.warnings = log.warnings.iter().map(|w| w.to_string()).collect();
        let cut = inherited_cut.or(log.header.seed_length);
        if let (Some(cut), Some(parent)) = (cut, &log.header.parent_session) {
            fork(&mut r, cut, parent);
        }
        if calibrate {
            r.calibrate();
        }
        r
    }
}

impl Observer for Analysis {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        self.0.event(ev, folded);
    }

    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        self.0.chunks(run, folded);
    }
}

// ---------------------------------------------------------------------------
// The fold.

/// One segment of a request: identity, tokens, what it is.
#[derive(Debug, Clone)]
struct Seg {
    id: u64,
    /// What the provider sees: the header part's hash, or a node's message
    /// (role and content blocks) hashed, whatever its seq. Units matched
    /// across sessions are identified by these ([`cross_session`]).
    content: u64,
    tokens: u64,
    what: Segment,
}

fn mix(h: u64, x: u64) -> u64 {
    // splitmix64 over the pair.
    let mut z = h ^ x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn hash_str(tag: u64, s: &str) -> u64 {
    // Identities are only compared, never shown: any sound 64-bit hash
    // serves. Fx takes the text eight bytes at a time (a byte-at-a-time
    // hash was most of the cost of reading a session's content); the
    // length and the tag are mixed in after.
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(s.as_bytes());
    mix(mix(tag, s.len() as u64), h.finish())
}

/// A node segment's identity before its image-offload version is mixed in
/// (`mix(node_base(seq), version)`).
fn node_base(seq: u64) -> u64 {
    mix(7, seq)
}

const ROOT: u64 = 0x5eed;

/// What a `compaction/summary` at time `t` meters: its replacement, and
/// the summarising call.
fn summary_meter(ev: &Event<'_>, t: f64) -> (u64, ReplaceKind, Option<SummaryCall>) {
    let d = ev.data();
    let s = |k: &str| {
        d.get(k)
            .and_then(|v| v.as_str())
            .map(|v| v.into_owned())
            .unwrap_or_default()
    };
    (
        ev.seq,
        ReplaceKind::Compaction,
        Some(SummaryCall {
            seq: ev.seq,
            provider: s("provider"),
            model: s("model"),
            time: t,
            usage: Reported::in_data(d),
        }),
    )
}

/// The header parts that changed between two requests.
fn header_changes(p: &HeaderState, now: &HeaderState) -> Vec<HeaderPart> {
    let mut hc = Vec::new();
    if p.system.map(|s| s.0) != now.system.map(|s| s.0) {
        hc.push(HeaderPart::System);
    }
    if p.tools.map(|s| s.0) != now.tools.map(|s| s.0) {
        hc.push(HeaderPart::Tools);
    }
    if p.adapter != now.adapter {
        hc.push(HeaderPart::AdapterDefaults);
    }
    if p.config != now.config {
        hc.push(HeaderPart::Config);
    }
    hc
}

/// The folded header, as segments.
#[derive(Debug, Clone, Default)]
struct HeaderState {
    provider: String,
    model: String,
    system: Option<(u64, u64)>,
    tools: Option<(u64, u64)>,
    /// Each tool schema: its name and the hash of its JSON.
    tool_list: Vec<(String, u64)>,
    adapter: u64,
    config: u64,
}

/// A request's output: the node it appended, and whether the provider's
/// output-end unit can ever be matched (the message is read back as the
/// model generated it: [`crate::meter::tokenizer::chat::resent_as_generated`]).
#[derive(Debug)]
struct Output {
    seg: Seg,
    unit: bool,
}

/// The request a `assistant/message` will be, taken when its attempt began.
#[derive(Debug, Clone)]
struct Snapshot {
    segs: Vec<Seg>,
    header: HeaderState,
}

#[derive(Debug)]
struct Prev {
    /// Segments plus the output node, if any.
    ext: Vec<Seg>,
    /// The prefix hashes of `ext` (`chain[k]` covers `ext[..k]`) and their
    /// token offsets: the next request's common prefix takes them as they
    /// are.
    chain: Vec<u64>,
    ptok: Vec<u64>,
    /// The content prefix hashes of `ext` (`cchain[k]` covers `ext[..k]`).
    cchain: Vec<u64>,
    header: HeaderState,
    time: f64,
}

/// A request's content prefixes, for matching units across sessions: the
/// content hash and token offset of every prefix from `lo` segments on
/// (`chain[k]` covers the first `lo + k` segments; shorter ones were the
/// previous request's, persisted and seen already), and the hash of its
/// output end.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prefix {
    lo: usize,
    chain: Vec<u64>,
    ptok: Vec<u64>,
    out: Option<u64>,
}

#[derive(Debug, Clone)]
struct Change {
    seq: u64,
    kind: ReplaceKind,
    shadowed: Vec<u64>,
}

struct Unit {
    used: f64,
}

/// An Anthropic cache entry: its last use and its lifetime.
struct Entry {
    used: f64,
    ttl_ms: u64,
}

/// One content block of a node: its identity, tokens and type, and for a
/// tool result the identity and tokens of each content item.
#[derive(Debug)]
struct BlockRec {
    hash: u64,
    tokens: u64,
    kind: String,
    items: Vec<(u64, u64)>,
}

/// The surface's message-deriving nodes as a snapshot reads them, kept in
/// step with the surface (its first `covered` nodes): appended nodes are
/// copied in as they come, and a replace (a new `replace_generation`)
/// rebuilds it. Reading a few fields of every (large) surface node afresh
/// for every request was most of a snapshot's time. The surface changes
/// its nodes only by appending and by replacing ranges; a generation-3
/// image offload edits a node's body, none of the fields kept here.
#[derive(Default)]
struct NodeMirror {
    nodes: Vec<MirrorNode>,
    covered: usize,
    generation: u64,
    /// The seq of the last node covered: a check that the surface grew
    /// from the one mirrored.
    last_seq: Option<u64>,
}

struct MirrorNode {
    seq: u64,
    /// The node's identity before its image-offload version is mixed in.
    base: u64,
    tokens: u64,
    position: usize,
    kind: Kind,
}

impl NodeMirror {
    fn sync(&mut self, surface: &crate::surface::Surface) {
        let grew = self.generation == surface.replace_generation
            && self.covered <= surface.nodes.len()
            && (self.covered == 0 || Some(surface.nodes[self.covered - 1].seq) == self.last_seq);
        if !grew {
            self.nodes.clear();
            self.covered = 0;
            self.generation = surface.replace_generation;
        }
        for (position, n) in surface.nodes.iter().enumerate().skip(self.covered) {
            if n.derives {
                self.nodes.push(MirrorNode {
                    seq: n.seq,
                    base: node_base(n.seq),
                    tokens: n.tokens,
                    position,
                    kind: n.kind,
                });
            }
        }
        self.covered = surface.nodes.len();
        self.last_seq = surface.nodes.last().map(|n| n.seq);
    }
}

/// The fold itself ([`Collector::new`]: its `Default` is no starting state).
#[derive(Default)]
pub(crate) struct Collector {
    opts: CacheOptions,
    mirror: NodeMirror,
    counter: Option<Counter>,
    exact: FxHashMap<u64, u64>,
    blocks: FxHashMap<u64, Vec<BlockRec>>,
    header: HeaderState,
    has_header: bool,
    /// The attempts and their sent points ([`crate::attempt`]).
    attempts: Attempts,
    pending: Option<Snapshot>,
    attempts_not_sent: usize,
    /// The last `session/end-seed {inherited: true}` (G2+ fork cut).
    inherited_cut: Option<u64>,
    prev: Option<Prev>,
    units: FxHashMap<u64, Unit>,
    seen: FxHashSet<u64>,
    anthropic: FxHashMap<u64, Entry>,
    changes: Vec<Change>,
    offloads: FxHashMap<u64, u64>,
    offload_version: FxHashMap<u64, u64>,
    end_seed: Option<u64>,
    fresh: FxHashSet<u64>,
    /// The least of `fresh` (`u64::MAX` when empty).
    fresh_min: u64,
    meter: Option<(u64, ReplaceKind, Option<SummaryCall>)>,
    requests: Vec<Request>,
    /// Per request: its content prefixes ([`Prefix`]).
    prefixes: Vec<Prefix>,
    /// Node seq → its message's content identity.
    contents: FxHashMap<u64, u64>,
    replacements: Vec<Replacement>,
    live: Vec<usize>,
    last_time: f64,
    times_real: bool,
}

/// Earliest plausible real time: 2001-09-09 (1e12 ms).
const REAL_TIME_MIN: f64 = 1e12;

impl Collector {
    pub(crate) fn new(opts: &CacheOptions) -> Collector {
        Collector {
            opts: opts.clone(),
            counter: opts.tokenizer.map(Counter::new),
            fresh_min: u64::MAX,
            last_time: f64::NEG_INFINITY,
            times_real: true,
            ..Collector::default()
        }
    }

    /// The last `session/end-seed {inherited: true}`: where a G2+ fork
    /// child's own events begin.
    pub(crate) fn inherited_cut(&self) -> Option<u64> {
        self.inherited_cut
    }

    /// A node's content identity (its seq's, for a node with no message).
    fn content_of(&self, seq: u64) -> u64 {
        self.contents
            .get(&seq)
            .copied()
            .unwrap_or_else(|| node_base(seq))
    }

    /// Whether the node `seq` joined the surface since the last request.
    /// Most nodes of a prompt are older than every fresh one: those are
    /// told by a comparison, not a lookup.
    fn is_fresh(&self, seq: u64) -> bool {
        seq >= self.fresh_min && self.fresh.contains(&seq)
    }

    fn node_tokens(&self, seq: u64, heuristic: u64) -> u64 {
        if self.counter.is_some() {
            self.exact.get(&seq).copied().unwrap_or(0)
        } else {
            heuristic
        }
    }

    fn block_tokens(&mut self, b: &Value<'_>) -> u64 {
        match &mut self.counter {
            Some(c) => c.count_block(b),
            None => crate::heuristic::price_block(b),
        }
    }

    fn block_recs(&mut self, content: Option<&Value<'_>>) -> Vec<BlockRec> {
        let Some(a) = content.and_then(|c| c.as_arr()) else {
            return Vec::new();
        };
        a.iter()
            .map(|b| {
                let kind = b
                    .get("type")
                    .and_then(|t| t.as_str())
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                let items = if kind == "tool-result" {
                    b.get("content")
                        .and_then(|c| c.as_arr())
                        .map(|items| {
                            items
                                .iter()
                                .map(|i| (hash_str(9, &i.to_json()), self.block_tokens(i)))
                                .collect()
                        })
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                BlockRec {
                    hash: hash_str(8, &b.to_json()),
                    tokens: self.block_tokens(b),
                    kind,
                    items,
                }
            })
            .collect()
    }

    /// Where inside segment `now` (against `before`, what stood there in the
    /// previous request) the change begins: the block and its offset from
    /// the segment's start.
    fn block_at(
        &self,
        now: &Seg,
        before: Option<&Seg>,
        ph: &HeaderState,
        nh: &HeaderState,
    ) -> (Option<Block>, u64) {
        match &now.what {
            Segment::System => (Some(Block::System), 0),
            Segment::Tools => {
                let tool = nh
                    .tool_list
                    .iter()
                    .enumerate()
                    .find(|(i, t)| ph.tool_list.get(*i).is_none_or(|o| o.1 != t.1))
                    .map(|(_, t)| t.0.clone())
                    .or_else(|| ph.tool_list.get(nh.tool_list.len()).map(|t| t.0.clone()));
                (Some(Block::Tools { tool }), 0)
            }
            Segment::Node { seq, .. } => {
                let empty = Vec::new();
                let new = self.blocks.get(seq).unwrap_or(&empty);
                let old = match before.map(|b| &b.what) {
                    Some(Segment::Node { seq: o, .. }) => self.blocks.get(o).unwrap_or(&empty),
                    _ => &empty,
                };
                let differs = new
                    .iter()
                    .zip(old.iter())
                    .position(|(a, b)| a.hash != b.hash);
                // Same blocks (an image offload keeps the logged content):
                // the first image, else the first block.
                let k = match differs {
                    Some(k) => k,
                    None if new.len() != old.len() => new.len().min(old.len()),
                    None => new.iter().position(|b| b.kind == "image").unwrap_or(0),
                };
                let Some(b) = new.get(k) else {
                    let at: u64 = new.iter().map(|b| b.tokens).sum();
                    return (None, at.min(now.tokens));
                };
                let mut at: u64 = new[..k].iter().map(|b| b.tokens).sum();
                let result_content = (b.kind == "tool-result").then(|| {
                    let olds = old.get(k).map_or(&[][..], |o| &o.items[..]);
                    let j = b
                        .items
                        .iter()
                        .zip(olds)
                        .position(|(x, y)| x.0 != y.0)
                        .unwrap_or(b.items.len().min(olds.len()));
                    at += b.items[..j.min(b.items.len())]
                        .iter()
                        .map(|i| i.1)
                        .sum::<u64>();
                    j
                });
                let tool_call = (b.kind == "tool-call")
                    .then(|| new[..k].iter().filter(|x| x.kind == "tool-call").count());
                (
                    Some(Block::Content {
                        index: k,
                        kind: b.kind.clone(),
                        tool_call,
                        result_content,
                    }),
                    at.min(now.tokens),
                )
            }
            _ => (None, 0),
        }
    }

    fn observe_header(&mut self, ev: &Event<'_>) {
        let h = canonical(ev.data().get("header").unwrap_or(&Value::Null));
        let config = h.get("config");
        let s = |k: &str| {
            config
                .and_then(|c| c.get(k))
                .and_then(|v| v.as_str())
                .map(|v| v.into_owned())
                .unwrap_or_default()
        };
        let (provider, model) = (s("provider"), s("model"));
        let system_text = match h.get("system") {
            Some(Value::Str(text)) => Some(text.to_lossy()),
            _ => None,
        };
        let system = system_text.as_deref().map(|t| {
            let tokens = match &mut self.counter {
                Some(c) => c.count_system(t),
                None => system_tokens(h.get("system")),
            };
            (hash_str(1, t), tokens)
        });
        let tool_list = h
            .get("tools")
            .and_then(|t| t.as_arr())
            .map(|a| {
                a.iter()
                    .map(|t| {
                        let name = t
                            .get("name")
                            .and_then(|n| n.as_str())
                            .map(|n| n.into_owned())
                            .unwrap_or_default();
                        (name, hash_str(2, &t.to_json()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let tools = h.get("tools").map(|t| {
            let json = t.to_json();
            let tokens = match &mut self.counter {
                Some(c) => c.count_tools(system_text.as_deref().unwrap_or_default(), t),
                None => tools_tokens(Some(t)),
            };
            (hash_str(2, &json), tokens)
        });
        let mut rest = config.map(|c| c.to_owned_value()).unwrap_or(Value::Null);
        if let Value::Obj(_) = rest {
            rest.remove("provider");
            rest.remove("model");
        }
        self.header = HeaderState {
            provider,
            model,
            system,
            tools,
            tool_list,
            adapter: hash_str(
                3,
                &h.get("adapterDefaults")
                    .map(|a| a.to_json())
                    .unwrap_or_default(),
            ),
            config: hash_str(4, &rest.to_json()),
        };
        self.has_header = true;
    }

    /// The size of the request `surface` would be now (its node `skip` left
    /// out), as this analysis counts positions: the header with any hidden
    /// prefix, and every message (what `simulate --tokenizer` judges a
    /// window by).
    pub(crate) fn prompt_tokens(
        &mut self,
        surface: &crate::surface::Surface,
        skip: Option<u64>,
    ) -> u64 {
        self.snapshot(surface, skip)
            .segs
            .iter()
            .map(|s| s.tokens)
            .sum()
    }

    /// The exact count of node `seq`, with a tokenizer.
    pub(crate) fn exact_tokens(&self, seq: u64) -> Option<u64> {
        self.exact.get(&seq).copied()
    }

    /// Count node `seq` as `tokens` (with a tokenizer): a node whose text
    /// stands in for content nobody wrote (a simulated summary).
    pub(crate) fn assume_tokens(&mut self, seq: u64, tokens: u64) {
        if self.counter.is_some() {
            self.exact.insert(seq, tokens);
        }
    }

    fn snapshot(&mut self, surface: &crate::surface::Surface, skip: Option<u64>) -> Snapshot {
        self.mirror.sync(surface);
        let h = &self.header;
        // Route, system, tools, the nodes, and room for the output a request
        // appends (`Prev::ext`) without a copy.
        let mut segs = Vec::with_capacity(surface.nodes.len() + 4);
        let route = hash_str(0, &format!("{}/{}", h.provider, h.model));
        segs.push(Seg {
            id: route,
            content: route,
            tokens: 0,
            what: Segment::Route,
        });
        // The header in the provider's order: Anthropic's prompt is tools →
        // system → messages, DeepSeek's (as dsh lays it out) system → tools.
        // A hidden head is part of the system prompt's identity: logs whose
        // placeholders hide heads of different sizes hide different prompts
        // (the same size is no proof of the same prompt, but different
        // sizes prove different ones).
        let hidden = self.opts.hidden_prefix.unwrap_or(0);
        let system = match h.system {
            Some((id, tokens)) if hidden > 0 => Some((mix(id, hidden), tokens + hidden)),
            Some((id, tokens)) => Some((id, tokens)),
            None if hidden > 0 => Some((hash_str(1, ""), hidden)),
            None => None,
        }
        .map(|(id, tokens)| Seg {
            id,
            content: id,
            tokens,
            what: Segment::System,
        });
        let tools = h.tools.map(|(id, tokens)| Seg {
            id,
            content: id,
            tokens,
            what: Segment::Tools,
        });
        if rule_for(&h.provider) == "anthropic" {
            segs.extend(tools);
            segs.extend(system);
        } else {
            segs.extend(system);
            segs.extend(tools);
        }
        for n in &self.mirror.nodes {
            if Some(n.seq) == skip {
                continue;
            }
            let v = if self.offload_version.is_empty() {
                0
            } else {
                self.offload_version.get(&n.seq).copied().unwrap_or(0)
            };
            segs.push(Seg {
                id: mix(n.base, v),
                content: mix(self.content_of(n.seq), v),
                tokens: self.node_tokens(n.seq, n.tokens),
                what: Segment::Node {
                    seq: n.seq,
                    kind: n.kind,
                    position: n.position,
                },
            });
        }
        Snapshot {
            segs,
            header: h.clone(),
        }
    }

    /// Anthropic's rule on this request ([`AnthropicRule`]): the
    /// prediction (without its recomputed split) and the token offsets of
    /// A (the hit), B (the end of the 1-hour writes) and C (the end of all
    /// writes).
    fn anthropic_rule(
        &mut self,
        segs: &[Seg],
        chain: &[u64],
        ptok: &[u64],
        now: f64,
    ) -> (AnthropicPrediction, [u64; 3]) {
        let rule = &self.opts.anthropic;
        if rule.breakpoints.is_none() {
            return (AnthropicPrediction::default(), [0; 3]);
        }
        let n = segs.len();
        let users: Vec<usize> = segs
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                matches!(
                    s.what,
                    Segment::Node {
                        kind: Kind::UserMessage | Kind::ToolResult,
                        ..
                    }
                )
            })
            .map(|(k, _)| k)
            .collect();
        // Generation 3 has no header system prompt: its leading
        // `system/message` nodes are the system part.
        let leading_system = || {
            let first = segs
                .iter()
                .position(|s| matches!(s.what, Segment::Node { .. }))?;
            segs[first..]
                .iter()
                .take_while(|s| {
                    matches!(
                        s.what,
                        Segment::Node {
                            kind: Kind::SystemMessage,
                            ..
                        }
                    )
                })
                .count()
                .checked_sub(1)
                .map(|j| first + j)
        };
        // Breakpoints as block boundaries (segment k ends at boundary k + 1),
        // sorted; two places on one block are one breakpoint (the longer
        // TTL, which the layout's order puts first).
        let mut bps: Vec<(usize, Ttl)> = Vec::with_capacity(MAX_BREAKPOINTS);
        for b in rule.breakpoints.list() {
            let k = match b.at {
                Place::Tools => segs.iter().position(|s| s.what == Segment::Tools),
                Place::System => segs
                    .iter()
                    .position(|s| s.what == Segment::System)
                    .or_else(leading_system),
                Place::FirstUser => users.first().copied(),
                Place::PrevUser => users.len().checked_sub(2).map(|i| users[i]),
                Place::Last => n.checked_sub(1),
            };
            if let Some(k) = k {
                match bps.iter_mut().find(|x| x.0 == k + 1) {
                    Some(x) => x.1 = x.1.max(b.ttl),
                    None => bps.push((k + 1, b.ttl)),
                }
            }
        }
        bps.sort();
        let times_real = self.times_real;
        let live = |e: &Entry| !times_real || now - e.used <= e.ttl_ms as f64;
        // Each breakpoint's hit: the longest live entry in its window.
        let mut a = 0;
        let mut read = Vec::with_capacity(bps.len());
        for &(b, _) in &bps {
            let lo = b.saturating_sub(rule.lookback).max(1);
            if let Some(i) = (lo..=b)
                .rev()
                .find(|&i| self.anthropic.get(&chain[i]).is_some_and(live))
            {
                read.push(i);
                a = a.max(i);
            }
        }
        for i in read {
            if let Some(e) = self.anthropic.get_mut(&chain[i]) {
                e.used = now;
            }
        }
        // Writes: every cacheable breakpoint beyond the hit.
        let (mut b1, mut c) = (a, a);
        let min = rule.min_tokens;
        for &(b, ttl) in &bps {
            if b > a && ptok[b] >= min {
                self.anthropic.insert(
                    chain[b],
                    Entry {
                        used: now,
                        ttl_ms: ttl.ms(),
                    },
                );
                if ttl == Ttl::OneHour {
                    b1 = b;
                }
                c = b;
            }
        }
        let (ta, tb, tc) = (ptok[a], ptok[b1], ptok[c]);
        (
            AnthropicPrediction {
                hit: ta,
                write_1h: tb - ta,
                write_5m: tc - tb,
                ..AnthropicPrediction::default()
            },
            [ta, tb, tc],
        )
    }

    /// The cache lifetime idle gaps are measured against on a route:
    /// Anthropic's shortest breakpoint TTL where breakpoints are set (an
    /// idle gap beyond it expires part of the cache), else `lifetime_ms`.
    fn lifetime(&self, provider: &str) -> Option<u64> {
        match self.opts.anthropic.breakpoints.shortest_ttl() {
            Some(t) if rule_for(provider) == "anthropic" => Some(t.ms()),
            _ => self.opts.lifetime_ms,
        }
    }

    fn expired(&self, used: f64, now: f64) -> bool {
        match self.opts.lifetime_ms {
            Some(l) if self.times_real => now - used > l as f64,
            _ => false,
        }
    }

    /// The request an `assistant/message` produced.
    fn request(
        &mut self,
        at: (u64, f64, Option<f64>, Option<f64>),
        snap: Snapshot,
        out: Option<Output>,
        reported: Option<Reported>,
        failed: Option<Failure>,
    ) {
        // The output unit exists only where the output is read back as generated.
        let out_unit = out.as_ref().is_some_and(|o| o.unit);
        let out = out.map(|o| o.seg);
        let (at_seq, now, turn, step) = at;
        let segs = snap.segs;
        let n = segs.len();
        let (chain, ptok, cchain, same) = self.prefix_chains(&segs);
        let prompt = ptok[n];
        let (hit, hit_at) = self.deepseek_hit(&chain, &ptok, now);
        // Anthropic's rule only where it applies: its entries belong to
        // Anthropic routes, laid out in Anthropic's order.
        let (mut anthropic, spans) = if rule_for(&snap.header.provider) == "anthropic" {
            self.anthropic_rule(&segs, &chain, &ptok, now)
        } else {
            (AnthropicPrediction::default(), [0; 3])
        };
        let lifetime = self.lifetime(&snap.header.provider);
        // The first changed position against the previous request + output.
        let index = self.requests.len();
        let (first_changed, cause, header_changes, recomputed, idle) = match &self.prev {
            None => (None, Cause::First, Vec::new(), 0, Idle::None),
            Some(p) => {
                // The first segment whose identity changed: past the
                // common prefix (same identities and tokens), found above.
                let idx = same
                    + segs[same..]
                        .iter()
                        .zip(&p.ext[same..])
                        .position(|(a, b)| a.id != b.id)
                        .unwrap_or(n.min(p.ext.len()) - same);
                let idle = self.idle(now - p.time, lifetime);
                let hc = header_changes(&p.header, &snap.header);
                let (block, offset) = match segs.get(idx) {
                    Some(now) => self.block_at(now, p.ext.get(idx), &p.header, &snap.header),
                    None => (None, 0),
                };
                let pos = Position {
                    tokens: ptok[idx],
                    segment: segs.get(idx).map_or(Segment::End, |s| s.what.clone()),
                    block,
                    block_tokens: ptok[idx] + offset,
                };
                let cause = if idx >= p.ext.len() {
                    match idle {
                        Idle::Gap { ms, expired: true } => Cause::Idle { gap_ms: ms },
                        _ => Cause::Append,
                    }
                } else {
                    self.cause_at(&segs, &p.ext, idx, &p.header, &snap.header)
                };
                let recomputed = if idx < p.ext.len() {
                    self.recomputed(&segs, &ptok, idx, spans, &mut anthropic)
                } else {
                    0
                };
                (Some(pos), cause, hc, recomputed, idle)
            }
        };
        let (messages, fresh_tokens) = self.messages(&segs);
        let out_tokens = out.as_ref().map_or(0, |o| o.tokens);
        let out_chain = self.persist_units(
            (&chain, &ptok, &cchain),
            same.min(hit_at),
            hit_at,
            out.as_ref().map(|o| (o, out_unit)),
            now,
        );

        let h = &snap.header;
        let req = Request {
            inherited: false,
            failed,
            index,
            seq: at_seq,
            turn,
            step,
            time: now,
            route: format!("{}/{}", h.provider, h.model),
            provider: h.provider.clone(),
            model: h.model.clone(),
            prompt_tokens: prompt,
            messages,
            first_changed,
            cause: cause.clone(),
            header_changes,
            fresh_tokens,
            recomputed_tokens: recomputed,
            predicted_hit: if rule_for(&h.provider) == "anthropic" {
                anthropic.hit
            } else {
                hit.min(prompt)
            },
            deepseek_hit: hit.min(prompt),
            deepseek_unit: if hit_at > 0 { ptok[hit_at] } else { 0 },
            anthropic,
            reported,
            idle,
            output_tokens: out_tokens,
            cross_session: None,
        };
        self.track_replacements(index, &cause, recomputed);
        self.requests.push(req);
        self.remember(
            segs,
            (chain, ptok, cchain),
            out,
            out_chain,
            snap.header,
            now,
        );
    }

    /// Keep this request (and its output) as the one the next is compared
    /// with, and start a new gap.
    fn remember(
        &mut self,
        segs: Vec<Seg>,
        (mut chain, mut ptok, mut cchain): (Vec<u64>, Vec<u64>, Vec<u64>),
        out: Option<Seg>,
        out_chain: Option<u64>,
        header: HeaderState,
        now: f64,
    ) {
        let n = segs.len();
        let mut ext = segs;
        if let (Some(o), Some(oc)) = (&out, out_chain) {
            chain.push(oc);
            ptok.push(ptok[n] + o.tokens);
            cchain.push(mix(cchain[n], o.content));
        }
        ext.extend(out);
        self.prev = Some(Prev {
            ext,
            chain,
            ptok,
            cchain,
            header,
            time: now,
        });
        self.changes.clear();
        self.offloads.clear();
        self.fresh.clear();
        self.fresh_min = u64::MAX;
        self.end_seed = None;
    }

    /// The prefix hashes (identity and content) and token offsets of
    /// `segs`, and how many segments lead the previous request unchanged.
    /// A prompt mostly repeats the previous one (and its output): over
    /// the segments both share, identity and tokens alike, the prefix
    /// hashes and offsets are the previous request's, so only the rest
    /// is hashed (hashing every segment of every request is quadratic
    /// in a session's length).
    fn prefix_chains(&mut self, segs: &[Seg]) -> (Vec<u64>, Vec<u64>, Vec<u64>, usize) {
        let n = segs.len();
        let (mut chain, mut ptok, mut cchain, same) = match self.prev.as_mut() {
            Some(p) => {
                let same = segs
                    .iter()
                    .zip(&p.ext)
                    .take_while(|(a, b)| a.id == b.id && a.tokens == b.tokens)
                    .count();
                let (mut chain, mut ptok, mut cchain) = (
                    std::mem::take(&mut p.chain),
                    std::mem::take(&mut p.ptok),
                    std::mem::take(&mut p.cchain),
                );
                chain.truncate(same + 1);
                ptok.truncate(same + 1);
                cchain.truncate(same + 1);
                (chain, ptok, cchain, same)
            }
            None => (vec![ROOT], vec![0u64], vec![ROOT], 0),
        };
        for s in &segs[same..] {
            cchain.push(mix(*cchain.last().unwrap(), s.content));
        }
        chain.reserve(n + 2 - chain.len());
        ptok.reserve(n + 2 - ptok.len());
        for s in &segs[same..] {
            chain.push(mix(*chain.last().unwrap(), s.id));
            ptok.push(ptok.last().unwrap() + s.tokens);
        }
        (chain, ptok, cchain, same)
    }

    /// DeepSeek: the longest persisted unit this prompt matches completely
    /// (its tokens, in whole blocks, and its segment count).
    fn deepseek_hit(&self, chain: &[u64], ptok: &[u64], now: f64) -> (u64, usize) {
        let n = chain.len() - 1;
        let block = self.opts.deepseek.block.max(1);
        let mut hit = 0;
        let mut hit_at = 0;
        for i in (1..=n).rev() {
            if let Some(u) = self.units.get(&chain[i])
                && !self.expired(u.used, now)
            {
                hit = ptok[i] / block * block;
                hit_at = i;
                break;
            }
        }
        (hit, hit_at)
    }

    /// Whether the gap since the previous request outlived the cache.
    fn idle(&self, gap: f64, lifetime: Option<u64>) -> Idle {
        if !self.times_real {
            Idle::Unknown
        } else {
            Idle::Gap {
                ms: gap.max(0.0) as u64,
                expired: lifetime.is_some_and(|l| gap > l as f64),
            }
        }
    }

    /// Old content from the first change (`idx`) on; under Anthropic's
    /// rule, the part of it that falls in the 1-hour (A..B) and 5-minute
    /// (B..C) writes.
    fn recomputed(
        &self,
        segs: &[Seg],
        ptok: &[u64],
        idx: usize,
        spans: [u64; 3],
        anthropic: &mut AnthropicPrediction,
    ) -> u64 {
        let mut recomputed = 0;
        let [ta, tb, tc] = spans;
        let overlap = |s: u64, e: u64, lo: u64, hi: u64| e.min(hi).saturating_sub(s.max(lo));
        for (k, sg) in segs.iter().enumerate().skip(idx) {
            if let Segment::Node { seq, .. } = sg.what
                && self.is_fresh(seq)
            {
                continue;
            }
            recomputed += sg.tokens;
            let (s, e) = (ptok[k], ptok[k + 1]);
            anthropic.recomputed_1h += overlap(s, e, ta, tb);
            anthropic.recomputed_5m += overlap(s, e, tb, tc);
        }
        recomputed
    }

    /// The messages, and the tokens of those fresh since the last request.
    fn messages(&self, segs: &[Seg]) -> (usize, u64) {
        let (mut messages, mut fresh_tokens) = (0, 0);
        for s in segs {
            if let Segment::Node {
                seq,
                kind,
                position,
            } = s.what
            {
                // A G3 system head is the system prompt, as G0's header holds it.
                messages += usize::from(!(kind == Kind::SystemMessage && position == 0));
                if self.is_fresh(seq) {
                    fresh_tokens += s.tokens;
                }
            }
        }
        (messages, fresh_tokens)
    }

    /// Persist a request's units: input end, output end, and the common
    /// prefix it shares with anything sent before (from segment `lo`).
    /// `out`: the output and whether it is a unit. Returns the output's
    /// chain hash.
    fn persist_units(
        &mut self,
        (chain, ptok, cchain): (&[u64], &[u64], &[u64]),
        lo: usize,
        hit_at: usize,
        out: Option<(&Seg, bool)>,
        now: f64,
    ) -> Option<u64> {
        let n = chain.len() - 1;
        let out_unit = out.is_some_and(|(_, u)| u);
        let out = out.map(|(o, _)| o);
        let out_chain = out.map(|o| mix(chain[n], o.id));
        self.prefixes.push(Prefix {
            lo,
            chain: cchain[lo..=n].to_vec(),
            ptok: ptok[lo..=n].to_vec(),
            out: out.filter(|_| out_unit).map(|o| mix(cchain[n], o.content)),
        });
        if self.opts.deepseek.common_prefix_units
            && let Some(i) = (2..=n).rev().find(|&i| self.seen.contains(&chain[i]))
        {
            self.units.insert(chain[i], Unit { used: now });
        }
        // The units this request read are refreshed: only where units
        // expire (a lifetime, on real times; `times_real` never comes back
        // once lost), since `used` is read by nothing else.
        if hit_at > 0 && self.opts.lifetime_ms.is_some() && self.times_real {
            for c in &chain[1..=hit_at] {
                if let Some(u) = self.units.get_mut(c) {
                    u.used = now;
                }
            }
        }
        self.units.insert(chain[n], Unit { used: now });
        if let Some(oc) = out_chain.filter(|_| out_unit) {
            self.units.insert(oc, Unit { used: now });
            self.seen.insert(oc);
        }
        // `seen` is prefix-closed: once a prefix is known, so are all shorter.
        for c in chain[1..].iter().rev() {
            if !self.seen.insert(*c) {
                break;
            }
        }
        out_chain
    }

    /// Replacements: the first request after one, and savings after. A
    /// live replacement is a current node (it leaves `live` when shadowed).
    fn track_replacements(&mut self, index: usize, cause: &Cause, recomputed: u64) {
        for &ri in &self.live {
            let r = &mut self.replacements[ri];
            if r.next_request.is_none() {
                r.next_request = Some(index);
                if cause.seq() == Some(r.seq) {
                    r.recomputed_tokens = recomputed;
                } else {
                    r.covered_by = Some(cause.clone());
                }
            }
            r.saved.push((
                index,
                r.shadowed_tokens as i64 - r.replacement_tokens as i64,
            ));
        }
    }

    fn cause_at(
        &self,
        segs: &[Seg],
        prev: &[Seg],
        idx: usize,
        ph: &HeaderState,
        nh: &HeaderState,
    ) -> Cause {
        let now = segs.get(idx).map(|s| &s.what);
        let before = prev.get(idx).map(|s| &s.what);
        if matches!(now, Some(Segment::Route)) || matches!(before, Some(Segment::Route)) {
            return Cause::Route {
                from: format!("{}/{}", ph.provider, ph.model),
                to: format!("{}/{}", nh.provider, nh.model),
            };
        }
        for w in [now, before].into_iter().flatten() {
            match w {
                Segment::System => {
                    return Cause::Header {
                        part: HeaderPart::System,
                    };
                }
                Segment::Tools => {
                    return Cause::Header {
                        part: HeaderPart::Tools,
                    };
                }
                _ => {}
            }
        }
        let of = |c: &Change| match c.kind {
            ReplaceKind::Compaction => Cause::Compaction { seq: c.seq },
            ReplaceKind::Prune => Cause::Prune { seq: c.seq },
            ReplaceKind::Other => Cause::Replacement { seq: c.seq },
            ReplaceKind::SystemHead => Cause::Header {
                part: HeaderPart::System,
            },
        };
        if let Some(Segment::Node { seq, .. }) = now {
            if let Some(c) = self.changes.iter().find(|c| c.seq == *seq) {
                return of(c);
            }
            if let Some(o) = self.offloads.get(seq) {
                return Cause::ImageOffload { seq: *o };
            }
        }
        if let Some(Segment::Node { seq, .. }) = before
            && let Some(c) = self.changes.iter().find(|c| c.shadowed.contains(seq))
        {
            return of(c);
        }
        match self.end_seed {
            Some(seq) => Cause::Lifecycle { seq },
            None => Cause::Unknown,
        }
    }

    fn fold(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        // A G2+ event's embedded chunks carry the times G0's chunk events do.
        let t = ev.time();
        for t in ev.stream_times().chain([t]) {
            if !(t >= REAL_TIME_MIN && t >= self.last_time) {
                self.times_real = false;
            }
            self.last_time = t;
        }
        // Exact counts and content blocks, node by node, as they join the
        // surface.
        if folded.applied.is_some()
            && let Some(m) = project(ev)
        {
            if let Some(c) = &mut self.counter {
                let n = c.count_message(m);
                self.exact.insert(ev.seq, n);
            }
            let recs = self.block_recs(m.get("content"));
            let role = m.get("role").and_then(|r| r.as_str()).unwrap_or_default();
            let content = recs.iter().fold(hash_str(10, &role), |h, b| mix(h, b.hash));
            self.contents.insert(ev.seq, content);
            self.blocks.insert(ev.seq, recs);
        }
        // Attempts and their sent points (`crate::attempt`): one ended
        // without its message is a request if the provider received it.
        let seen = self.attempts.event(ev);
        if let Some(o) = seen.closed {
            self.attempt_over(o);
        }
        if seen.begins && ev.kind != Kind::AssistantMessage {
            self.pending = Some(self.snapshot(folded.surface, None));
        }
        if let Some(o @ Outcome::Failed(_)) = seen.ended {
            self.attempt_over(o);
        }
        match ev.kind {
            Kind::RequestHeader => self.observe_header(ev),
            Kind::SessionEndSeed => {
                self.end_seed = Some(ev.seq);
                if ev
                    .data()
                    .get("inherited")
                    .is_some_and(|v| matches!(v, Value::Bool(true)))
                {
                    self.inherited_cut = Some(ev.seq);
                }
            }
            Kind::CompactionSummary => self.meter = Some(summary_meter(ev, t)),
            Kind::CompactionPrune => self.meter = Some((ev.seq, ReplaceKind::Prune, None)),
            Kind::ImageOffload => {
                if let Some(targets) = ev.data().get("targets").and_then(|t| t.as_arr()) {
                    for t in targets {
                        if let Some(s) = t.get("seq").and_then(|s| s.as_count()) {
                            *self.offload_version.entry(s).or_default() += 1;
                            self.offloads.insert(s, ev.seq);
                        }
                    }
                }
            }
            _ => {}
        }
        if let Some(a) = folded.applied {
            match a.op {
                SurfaceOp::Append => {
                    if ev.kind != Kind::AssistantMessage {
                        self.fresh.insert(ev.seq);
                        self.fresh_min = self.fresh_min.min(ev.seq);
                    }
                }
                SurfaceOp::Replace(_) => self.replaced(ev, a),
            }
        }
        if ev.kind == Kind::AssistantMessage {
            self.message(ev, folded, t);
        }
    }

    /// An `assistant/message`: its request (from the snapshot taken when
    /// its attempt began, else now) and its output.
    #[inline]
    fn message(&mut self, ev: &Event<'_>, folded: &Folded<'_>, t: f64) {
        let snap = match self.pending.take() {
            Some(s) => s,
            None => self.snapshot(folded.surface, Some(ev.seq)),
        };
        let surface = folded.surface;
        // DeepSeek persists the output as generated; the next request
        // reads it back as re-sent. A message whose reasoning the
        // history drops (no tool call) never matches that unit.
        let resent = project(ev).is_none_or(crate::meter::tokenizer::chat::resent_as_generated);
        let out = surface
            .position(ev.seq)
            .map(|position| (position, &surface.nodes[position]))
            .and_then(|(position, n)| {
                n.derives.then(|| Seg {
                    id: mix(node_base(n.seq), 0),
                    content: mix(self.content_of(n.seq), 0),
                    tokens: self.node_tokens(n.seq, n.tokens),
                    what: Segment::Node {
                        seq: n.seq,
                        kind: n.kind,
                        position,
                    },
                })
            })
            .map(|seg| Output { seg, unit: resent });
        if self.has_header {
            let reported = Reported::in_data(ev.data());
            self.request((ev.seq, t, ev.turn(), ev.step()), snap, out, reported, None);
        }
    }

    /// An attempt ended without its message: a request if the provider
    /// received it.
    fn attempt_over(&mut self, o: Outcome) {
        let snap = self.pending.take();
        let Outcome::Failed(f) = o else {
            return;
        };
        match (snap, f.last) {
            (Some(snap), Some(at)) if f.reached && self.has_header => {
                self.request(
                    (at.seq, at.time, at.turn, at.step),
                    snap,
                    None,
                    f.usage,
                    Some(Failure { code: f.code }),
                );
            }
            _ => self.attempts_not_sent += 1,
        }
    }

    fn replaced(&mut self, ev: &Event<'_>, a: &crate::surface::Applied) {
        let (kind, summary) = match self.meter.take() {
            Some((m, k, s)) if m + 1 == ev.seq => (k, s),
            _ if ev.kind == Kind::SystemMessage => (ReplaceKind::SystemHead, None),
            _ => (ReplaceKind::Other, None),
        };
        let shadowed: Vec<u64> = a.shadowed.iter().map(|n| n.seq).collect();
        let shadowed_tokens = a
            .shadowed
            .iter()
            .map(|n| self.node_tokens(n.seq, n.tokens))
            .sum();
        let replacement_tokens = self.node_tokens(ev.seq, a.tokens);
        // A replacement shadowing an earlier one's node ends its savings.
        let seq = ev.seq;
        self.live.retain(|&i| {
            let r = &mut self.replacements[i];
            if shadowed.contains(&r.seq) {
                r.superseded_by = Some(seq);
                false
            } else {
                true
            }
        });
        self.changes.push(Change {
            seq,
            kind,
            shadowed,
        });
        if kind == ReplaceKind::SystemHead {
            // A new system prompt: a header change, as in G0 (the requests'
            // causes say so), not a replacement that saves or costs tokens.
            return;
        }
        self.live.push(self.replacements.len());
        self.replacements.push(Replacement {
            seq,
            kind,
            position: a.position,
            shadowed_tokens,
            replacement_tokens,
            next_request: None,
            recomputed_tokens: 0,
            covered_by: None,
            summary,
            saved: Vec::new(),
            superseded_by: None,
            break_even_tokens: BreakEven::Unknown,
        });
    }

    pub(crate) fn finish(mut self, file: String, session: String) -> CacheReport {
        break_even_in_tokens(&mut self.replacements);
        CacheReport {
            file,
            session,
            times_real: self.times_real,
            tokenizer: self.opts.tokenizer,
            deepseek: self.opts.deepseek,
            anthropic: self.opts.anthropic,
            requests: self.requests,
            replacements: self.replacements,
            warnings: Vec::new(),
            attempts_not_sent: self.attempts_not_sent,
            calibrated: None,
            prefixes: self.prefixes,
        }
    }
}

impl Observer for Collector {
    fn event(&mut self, ev: &Event<'_>, folded: &Folded<'_>) {
        self.fold(ev, folded);
    }

    /// Delta chunks never change the surface: what they do is what
    /// [`Self::fold`] does for each, the clock's checks, the attempt they
    /// begin or go on with, and where that attempt got to. Other chunks
    /// are folded as events.
    fn chunks(&mut self, run: &ChunkRun<'_>, folded: &Folded<'_>) {
        let Some(labels) = run.deltas() else {
            return run.each_event(folded, |ev, f| self.fold(ev, f));
        };
        if !run.times_rise_from(self.last_time, REAL_TIME_MIN) {
            self.times_real = false;
        }
        self.last_time = run.last_time;
        let at = crate::attempt::At {
            seq: run.last_seq(),
            time: run.last_time,
            turn: Some(labels.turn),
            step: Some(labels.step),
        };
        let (closed, begins) = self.attempts.chunk_row(run.count, at);
        if let Some(o) = closed {
            self.attempt_over(o);
        }
        if begins {
            self.pending = Some(self.snapshot(folded.surface, None));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl Prices for Fixed {
        fn rates(&self, _: &str, model: &str, _: Option<i64>) -> Option<Rates> {
            (model == "m").then_some(Rates {
                miss: 2.0,
                hit: 0.5,
                write: 2.5,
                write_1h: Some(4.0),
                output: 8.0,
                currency: "USD",
            })
        }
    }

    fn request(index: usize, model: &str) -> Request {
        Request {
            inherited: false,
            failed: None,
            index,
            seq: index as u64,
            turn: None,
            step: None,
            time: 0.0,
            route: format!("p/{model}"),
            provider: "p".into(),
            model: model.into(),
            prompt_tokens: 0,
            messages: 0,
            first_changed: None,
            cause: Cause::Append,
            header_changes: Vec::new(),
            fresh_tokens: 0,
            recomputed_tokens: 0,
            predicted_hit: 0,
            deepseek_hit: 0,
            deepseek_unit: 0,
            anthropic: AnthropicPrediction::default(),
            reported: None,
            idle: Idle::None,
            output_tokens: 0,
            cross_session: None,
        }
    }

    /// A report of these requests and one replacement.
    fn report(requests: Vec<Request>, replacement: Replacement) -> CacheReport {
        CacheReport {
            file: "f".into(),
            session: "s".into(),
            times_real: false,
            tokenizer: None,
            deepseek: DeepSeekRule::default(),
            anthropic: AnthropicRule::default(),
            requests,
            replacements: vec![replacement],
            warnings: Vec::new(),
            attempts_not_sent: 0,
            calibrated: None,
            prefixes: Vec::new(),
        }
    }

    #[test]
    fn replacement_costs_are_tokens_times_rates_and_break_even_is_where_savings_cover_them() {
        let summary = SummaryCall {
            seq: 1,
            provider: "p".into(),
            model: "m".into(),
            time: 0.0,
            usage: Some(Reported {
                input_tokens: 1000.0,
                cache_read_tokens: 2000.0,
                cache_write_tokens: 0.0,
                output_tokens: 100.0,
            }),
        };
        let r = report(
            (0..4).map(|i| request(i, "m")).collect(),
            Replacement {
                seq: 2,
                kind: ReplaceKind::Compaction,
                position: 0,
                shadowed_tokens: 5000,
                replacement_tokens: 200,
                next_request: Some(1),
                recomputed_tokens: 10_000,
                covered_by: None,
                summary: Some(summary),
                saved: vec![(1, 4800), (2, 4800), (3, 4800)],
                superseded_by: None,
                break_even_tokens: BreakEven::Unknown,
            },
        );
        let c = r.replacement_cost(0, &Fixed).unwrap();
        // 10 000 × (2 − 0.5) / 1e6
        assert!((c.recompute - 0.015).abs() < 1e-12);
        // (1000 × 2 + 2000 × 0.5 + 100 × 8) / 1e6
        assert!((c.summary - 0.0038).abs() < 1e-12);
        // 3 × 4800 × 0.5 / 1e6 = 0.0072 < 0.0188: never paid back.
        assert!((c.saved - 0.0072).abs() < 1e-12);
        assert_eq!(c.break_even, BreakEven::NotPaidBack);
        // In tokens: 10 000 + 3 100 = 13 100 ≤ 3 × 4 800 at the third request.
        assert_eq!(r.replacements[0].cost_tokens(), 13_100.0);
        // An unknown model: no price, no cost.
        let mut r2 = r.clone();
        r2.requests[1].model = "other".into();
        assert!(r2.replacement_cost(0, &Fixed).is_none());
        assert!(r.replacement_cost(0, &NoPrices).is_none());
    }

    #[test]
    fn anthropic_writes_are_priced_by_their_ttl_and_recomputed_writes_by_theirs() {
        // A request on an Anthropic route: 10 000 prompt tokens, 2 000 read,
        // 4 000 written to 1-hour entries, 3 000 to 5-minute ones.
        let mut q = request(1, "m");
        q.provider = "anthropic".into();
        q.prompt_tokens = 10_000;
        q.predicted_hit = 2_000;
        q.recomputed_tokens = 5_000;
        q.anthropic = AnthropicPrediction {
            hit: 2_000,
            write_5m: 3_000,
            write_1h: 4_000,
            recomputed_5m: 1_000,
            recomputed_1h: 2_000,
        };
        let mut r = report(
            vec![request(0, "m"), q],
            Replacement {
                seq: 2,
                kind: ReplaceKind::Prune,
                position: 0,
                shadowed_tokens: 6_000,
                replacement_tokens: 1_000,
                next_request: Some(1),
                recomputed_tokens: 5_000,
                covered_by: None,
                summary: None,
                saved: vec![(1, 5_000)],
                superseded_by: None,
                break_even_tokens: BreakEven::Unknown,
            },
        );
        let c = r.request_cost(&r.requests[1], &Fixed).unwrap();
        // 2 000 × 0.5 / 1e6
        assert!((c.hit - 0.001).abs() < 1e-12);
        // (3 000 × 2.5 + 4 000 × 4) / 1e6
        assert!((c.write - 0.0235).abs() < 1e-12);
        // 1 000 uncached × 2 / 1e6
        assert!((c.uncached - 0.002).abs() < 1e-12);
        assert!((c.total() - 0.0265).abs() < 1e-12);
        assert!((c.miss() - 0.0255).abs() < 1e-12);
        // The prune's recompute: 1 000 re-written at 5 minutes, 2 000 at 1
        // hour, 2 000 sent uncached, each against the hit price:
        // (1 000 × 2 + 2 000 × 3.5) / 1e6 = 0.009 for the writes,
        // + 2 000 × 1.5 / 1e6 = 0.012.
        let rc = r.replacement_cost(0, &Fixed).unwrap();
        assert!((rc.recompute_write - 0.009).abs() < 1e-12, "{rc:?}");
        assert!((rc.recompute - 0.012).abs() < 1e-12, "{rc:?}");
        // Totals count the writes; by cause, the miss costs writes and
        // uncached input.
        let t = r.totals();
        assert_eq!((t.predicted_write_5m, t.predicted_write_1h), (3_000, 4_000));
        let by = r.miss_cost_by_cause(&Fixed);
        assert!((by["append"].0.unwrap() - 0.0255).abs() < 1e-12);
        // Without a 1-hour rate, 1-hour writes have no price.
        struct No1h;
        impl Prices for No1h {
            fn rates(&self, p: &str, m: &str, t: Option<i64>) -> Option<Rates> {
                Fixed.rates(p, m, t).map(|r| Rates {
                    write_1h: None,
                    ..r
                })
            }
        }
        assert!(r.request_cost(&r.requests[1], &No1h).is_none());
        assert!(r.replacement_cost(0, &No1h).is_none());
        assert!(r.request_cost(&r.requests[0], &No1h).is_some());
        // Under DeepSeek's rule the same request writes nothing.
        r.requests[1].provider = "deepseek-official".into();
        r.requests[1].predicted_hit = 2_048;
        let c = r.request_cost(&r.requests[1], &Fixed).unwrap();
        assert_eq!(c.write, 0.0);
        assert!((c.uncached - 7_952.0 * 2.0 / 1e6).abs() < 1e-12);
        let rc = r.replacement_cost(0, &Fixed).unwrap();
        assert_eq!(rc.recompute_write, 0.0);
        assert!((rc.recompute - 5_000.0 * 1.5 / 1e6).abs() < 1e-12);
    }

    #[test]
    fn layouts_parse_in_prompt_order_and_refuse_what_anthropic_refuses() {
        let p = |s| Breakpoints::parse(s, Ttl::FiveMinutes);
        assert_eq!(p("none").unwrap(), Breakpoints::none());
        assert_eq!(p("last").unwrap(), Breakpoints::last());
        assert_eq!(
            p(" last ,prev-user, system:1h,tools:1h ")
                .unwrap()
                .to_string(),
            "tools:1h,system:1h,prev-user:5m,last:5m"
        );
        assert_eq!(
            Breakpoints::parse("tools,last:5m", Ttl::OneHour)
                .unwrap()
                .to_string(),
            "tools:1h,last:5m"
        );
        assert_eq!(p(""), Err(LayoutError::Empty));
        assert_eq!(p("none,last"), Err(LayoutError::NoneWithOthers));
        assert_eq!(p("last,last:1h"), Err(LayoutError::Duplicate("last")));
        assert_eq!(
            p("tools,system,first-user,prev-user,last"),
            Err(LayoutError::TooMany(5))
        );
        assert_eq!(p("last:2h"), Err(LayoutError::UnknownTtl("2h".into())));
        assert_eq!(p("end"), Err(LayoutError::UnknownPlace("end".into())));
        let e = p("system:1h,tools:5m").unwrap_err();
        assert_eq!(
            e,
            LayoutError::TtlOrder {
                first: "tools",
                first_ttl: "5m",
                then: "system",
                then_ttl: "1h"
            }
        );
        assert!(e.to_string().contains("longer TTLs before shorter"));
        assert_eq!(
            p("first-user:1h,last").unwrap().shortest_ttl(),
            Some(Ttl::FiveMinutes)
        );
    }

    #[test]
    fn causes_have_stable_keys() {
        assert_eq!(
            Cause::Header {
                part: HeaderPart::Tools
            }
            .key(),
            "header:tools"
        );
        assert_eq!(Cause::Prune { seq: 3 }.seq(), Some(3));
        assert_eq!(Cause::Append.seq(), None);
    }
}
