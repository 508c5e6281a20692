//! Model providers for the summariser call (compaction §6.3–§6.7).
//!
//! A [`Summarizer`] takes one provider-neutral [`CompletionRequest`] (system,
//! tools, DSH messages, generation cap) and returns the assembled reply
//! ([`Completion`]): content blocks in the order the stream opened them, the
//! finish reason and the provider usage in DSH's disjoint form. Two wire
//! protocols are spoken, both streaming over Server-Sent Events:
//!
//! * DeepSeek chat completions (internal `deepseek` module), exactly as the rc.8 adapter
//!   speaks it: request body, SSE translation, usage mapping (cache hits) and
//!   error normalisation (`CONTEXT_WINDOW_EXCEEDED`);
//! * the Anthropic-compatible Messages protocol (internal `anthropic` module, §6.7).
//!
//! The HTTP layer (`provider::http`, internal) adds timeouts and bounded retries with backoff.
//! The API key is passed in by the caller (the library never reads the
//! environment) as an [`ApiKey`], which never prints and is scrubbed from every
//! error message.
//!
//! ```no_run
//! use dsh::provider::{ApiKey, Endpoint, HttpSummarizer, Protocol};
//! let key = std::env::var("DEEPSEEK_API_KEY").unwrap_or_default();
//! let endpoint = Endpoint::new(Protocol::DeepSeek, "https://api.deepseek.com", ApiKey::new(key));
//! // Give it to `dsh::compact::run` as the summariser.
//! let summarizer = HttpSummarizer { endpoint };
//! # let _ = summarizer;
//! ```

pub(crate) mod anthropic;
pub(crate) mod assemble;
pub(crate) mod classify;
pub(crate) mod deepseek;
pub(crate) mod http;
pub(crate) mod sse;

use std::time::Duration;

use crate::cancel::{Cancel, INTERRUPTED};
use crate::json::{JStr, OwnedValue, Value};

pub use assemble::Finish;

/// An API key. Its `Debug` never shows the value and it has no `Display`.
#[derive(Clone, Default)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wrap a key.
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key itself, for the one header that carries it.
    fn expose(&self) -> &str {
        &self.0
    }

    /// Whether no key was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the key is long enough to scrub from text
    /// ([`MIN_SCRUB_CHARS`]): a shorter one (a local server's dummy key,
    /// `a`, `text`) would match ordinary words.
    pub fn scrubbable(&self) -> bool {
        self.0.chars().count() >= MIN_SCRUB_CHARS
    }

    /// Replace every whole-token occurrence of the key in `text` with
    /// `[REDACTED]`: one not touching a letter, digit, `-` or `_` on a side
    /// where the key itself ends in one (so `sk-abc123` inside
    /// `sk-abc1234` is left alone). A key shorter than [`MIN_SCRUB_CHARS`]
    /// is not scrubbed at all: it would corrupt text it happens to occur in.
    fn scrub(&self, text: &str) -> String {
        match self.find_in(text) {
            None => text.to_string(),
            Some(_) => scrub_tokens(text, &self.0),
        }
    }

    /// Where the key first occurs in `text` as a whole token (`None` also
    /// for a key too short to scrub).
    fn find_in(&self, text: &str) -> Option<usize> {
        if !self.scrubbable() {
            return None;
        }
        text.match_indices(self.0.as_str())
            .map(|(i, _)| i)
            .find(|&i| whole_token(text, i, &self.0))
    }
}

/// The shortest API key dsh scrubs from text (characters).
pub const MIN_SCRUB_CHARS: usize = 8;

fn token_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

/// Whether `key` at byte `i` of `text` stands as a whole token.
fn whole_token(text: &str, i: usize, key: &str) -> bool {
    let starts_token = key.chars().next().is_some_and(token_char);
    let ends_token = key.chars().next_back().is_some_and(token_char);
    let before = text[..i].chars().next_back();
    let after = text[i + key.len()..].chars().next();
    let glued_before = starts_token && before.is_some_and(token_char);
    let glued_after = ends_token && after.is_some_and(token_char);
    !glued_before && !glued_after
}

fn scrub_tokens(text: &str, key: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(key) {
        if i < last || !whole_token(text, i, key) {
            continue;
        }
        out.push_str(&text[last..i]);
        out.push_str("[REDACTED]");
        last = i + key.len();
    }
    out.push_str(&text[last..]);
    out
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([REDACTED])")
    }
}

/// The wire protocol a route speaks (a config route's `kind`, spelt
/// `deepseek` / `anthropic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// DeepSeek chat completions (`POST {base}/chat/completions`).
    #[default]
    DeepSeek,
    /// Anthropic-compatible Messages (`POST {base}/v1/messages`).
    Anthropic,
}

/// Where and how to reach a provider.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Wire protocol.
    pub protocol: Protocol,
    /// Base URL without the endpoint path (`https://api.deepseek.com`).
    pub base_url: String,
    /// The key (may be empty for a local server that needs none).
    pub api_key: ApiKey,
    /// The route's default reasoning effort for summary calls (`off`, `low`,
    /// `high`, `max`); `None` means the adapter default, `high`.
    pub reasoning_effort: Option<String>,
    /// `user-agent` header.
    pub user_agent: String,
    /// How long to wait for the TCP/TLS connection.
    pub connect_timeout: Duration,
    /// The stream idle watchdog: the longest silence between two reads
    /// (reference default 300 000 ms).
    pub idle_timeout: Duration,
    /// Extra attempts after a retryable failure (HTTP 429, 5xx, a connection
    /// failure before any response).
    pub max_retries: u32,
    /// First backoff delay; doubled per retry.
    pub retry_base: Duration,
    /// Cap on any one delay (also caps `retry-after`).
    pub retry_max_delay: Duration,
}

impl Endpoint {
    /// An endpoint with dsh's defaults: 30 s connect, 300 s idle, 2 retries
    /// from 1 s, delays capped at 30 s.
    pub fn new(protocol: Protocol, base_url: impl Into<String>, api_key: ApiKey) -> Endpoint {
        Endpoint {
            protocol,
            base_url: base_url.into(),
            api_key,
            reasoning_effort: None,
            user_agent: format!(
                "dsh/{} (+https://github.com/deepseek-ai/deepseek-harness)",
                env!("CARGO_PKG_VERSION")
            ),
            connect_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(300),
            max_retries: 2,
            retry_base: Duration::from_secs(1),
            retry_max_delay: Duration::from_secs(30),
        }
    }

    /// The effort a summary call uses: the route's, else `high` (§6.1).
    fn effort(&self) -> &str {
        self.reasoning_effort.as_deref().unwrap_or("high")
    }

    /// Whether the provider's host accepts a TCP connection at all (name
    /// resolved, port open), within the connect timeout (at most 10 s):
    /// what a caller can learn before it records anything. Sends nothing.
    pub(crate) fn probe(&self) -> Result<(), ProviderError> {
        use std::net::{TcpStream, ToSocketAddrs};
        let url = &self.base_url;
        let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let default_port = if scheme.eq_ignore_ascii_case("http") {
            80
        } else {
            443
        };
        let (host, port) = match host_port.strip_prefix('[') {
            Some(v6) => {
                let (h, rest) = v6.split_once(']').unwrap_or((v6, ""));
                (h, rest.strip_prefix(':').and_then(|p| p.parse().ok()))
            }
            None => match host_port.rsplit_once(':') {
                Some((h, p)) => (h, p.parse().ok()),
                None => (host_port, None),
            },
        };
        let port: u16 = port.unwrap_or(default_port);
        let shown = redact_url(url);
        let fail = |why: String| {
            let mut e = ProviderError::new(
                ErrorCode::Network,
                format!("cannot reach the provider at {shown}: {why}"),
            );
            e.retryable = true;
            e
        };
        let addrs: Vec<_> = (host, port)
            .to_socket_addrs()
            .map_err(|e| fail(format!("cannot resolve {host}: {e}")))?
            .collect();
        let timeout = self.connect_timeout.min(Duration::from_secs(10));
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, timeout) {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(fail(match last {
            Some(e) => format!("{host}:{port}: {e}"),
            None => format!("{host} has no address"),
        }))
    }
}

/// One model call, provider-neutral.
#[derive(Debug, Clone)]
pub struct CompletionRequest<'a> {
    /// Model id on the route.
    pub model: String,
    /// System prompt (a JSON string value, kept exact).
    pub system: Option<OwnedValue>,
    /// Tool schemas as logged: `[{name, description, parameters}, …]`.
    pub tools: Option<OwnedValue>,
    /// DSH messages `{role, content, …}` in order (borrowing the log
    /// lines they were read from, when they were).
    pub messages: Vec<Value<'a>>,
    /// Generation cap (`max_tokens`).
    pub max_tokens: u64,
    /// The session id (`x-deepseek-harness-session-id`).
    pub session_id: String,
    /// `purpose: "compaction"`: adds `x-deepseek-harness-compact: 1`.
    pub compaction: bool,
}

impl CompletionRequest<'_> {
    /// A copy that borrows nothing (for a thread that may outlive the
    /// lines the messages were read from).
    fn to_owned_request(&self) -> CompletionRequest<'static> {
        CompletionRequest {
            model: self.model.clone(),
            system: self.system.clone(),
            tools: self.tools.clone(),
            messages: self.messages.iter().map(Value::to_owned_value).collect(),
            max_tokens: self.max_tokens,
            session_id: self.session_id.clone(),
            compaction: self.compaction,
        }
    }
}

/// Headers every wire protocol sends: content negotiation, the user agent, and
/// the harness's session and compaction attribution.
pub(crate) fn push_common_headers(
    headers: &mut Vec<(String, String)>,
    endpoint: &Endpoint,
    req: &CompletionRequest,
) {
    headers.push(("content-type".into(), "application/json".into()));
    headers.push(("accept".into(), "text/event-stream".into()));
    headers.push(("user-agent".into(), endpoint.user_agent.clone()));
    headers.push((
        "x-deepseek-harness-session-id".into(),
        req.session_id.clone(),
    ));
    if req.compaction {
        headers.push(("x-deepseek-harness-compact".into(), "1".into()));
    }
}

/// An HTTP request exactly as it is (or would be) sent.
#[derive(Debug, Clone)]
pub struct WireRequest {
    /// `POST`.
    pub method: &'static str,
    /// Full URL.
    pub url: String,
    /// Headers in sending order, lowercase names. The key header holds the
    /// real key: print [`WireRequest::redacted_headers`] instead.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: OwnedValue,
}

impl WireRequest {
    /// The path part of the URL.
    pub(crate) fn path(&self) -> &str {
        let rest = self.url.split_once("://").map_or(&*self.url, |(_, r)| r);
        rest.find('/').map_or("/", |i| &rest[i..])
    }

    /// Headers with the credential replaced by `[REDACTED]`.
    pub fn redacted_headers(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .map(|(k, v)| {
                let v = match k.as_str() {
                    "authorization" => "Bearer [REDACTED]".to_string(),
                    "x-api-key" => "[REDACTED]".to_string(),
                    _ => v.clone(),
                };
                (k.clone(), v)
            })
            .collect()
    }
}

/// The userinfo (`user:password`) of a URL's authority, if it has one.
fn url_userinfo(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority.rfind('@').map(|i| &authority[..i])
}

/// A URL safe to print: any userinfo in its authority becomes `***`
/// (`http://user:secret@host/` → `http://***@host/`).
pub fn redact_url(url: &str) -> String {
    redact_userinfo(url, url)
}

/// `text` with the userinfo of `url` (if any) replaced by `***` wherever it
/// occurs, for messages that may quote the URL.
fn redact_userinfo(text: &str, url: &str) -> String {
    match url_userinfo(url) {
        Some(u) if !u.is_empty() => text.replace(u, "***"),
        _ => text.to_string(),
    }
}

/// Provider usage in DSH's disjoint form (§6.4 `mapUsage`, §6.7).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Uncached prompt tokens.
    pub input_tokens: f64,
    /// Generated tokens (reasoning included).
    pub output_tokens: f64,
    /// Prompt tokens served from the cache, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub cache_read_tokens: Option<f64>,
    /// Prompt tokens written to the cache, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub cache_write_tokens: Option<f64>,
    /// Reasoning share of the output, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub reasoning_tokens: Option<f64>,
}

impl Usage {
    /// `{inputTokens, outputTokens, cacheReadTokens?, cacheWriteTokens?, reasoningTokens?}`.
    pub fn to_value(&self) -> OwnedValue {
        let mut v = Value::obj()
            .with("inputTokens", self.input_tokens.into())
            .with("outputTokens", self.output_tokens.into());
        if let Some(c) = self.cache_read_tokens {
            v = v.with("cacheReadTokens", c.into());
        }
        if let Some(c) = self.cache_write_tokens {
            v = v.with("cacheWriteTokens", c.into());
        }
        if let Some(r) = self.reasoning_tokens {
            v = v.with("reasoningTokens", r.into());
        }
        v
    }
}

/// The assembled reply of one call.
#[derive(Debug, Clone)]
pub struct Completion {
    /// Assembled blocks (`text`, `reasoning`, `tool-call`, …) in stream order.
    pub blocks: Vec<OwnedValue>,
    /// How the stream finished.
    pub finish: Finish,
    /// The last usage reported.
    pub usage: Option<Usage>,
    /// The provider's request id, when it sent one.
    pub request_id: Option<String>,
    /// HTTP attempts made (1 without retries).
    pub attempts: u32,
}

/// A provider failure, normalised (§6.4, §6.5). The message never contains
/// the API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    /// What kind of failure it is; written into the log as its wire name.
    pub code: ErrorCode,
    /// The message (the provider's own where it gave one).
    pub message: String,
    /// HTTP status, for HTTP failures.
    pub status: Option<u16>,
    /// `retry-after`, when sent.
    pub retry_after: Option<Duration>,
    /// `x-request-id` / `x-deepseek-request-id`, when sent.
    pub request_id: Option<String>,
    /// Whether a retry may succeed (429, 5xx, connection failures before a
    /// response).
    pub retryable: bool,
}

/// The kind of a provider failure (§6.4, §6.5). Its [`Display`] is the
/// reference's wire name (`AUTH`, `HTTP_404`, …), which is what the log's
/// `compaction/end` records and what scripts match on.
///
/// [`Display`]: std::fmt::Display
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `AUTH`: the key was refused (401, 403).
    Auth,
    /// `QUOTA`: the account is out of balance or quota.
    Quota,
    /// `RATE_LIMIT`: too many requests (429); retryable.
    RateLimit,
    /// `CONTEXT_WINDOW_EXCEEDED`: the request is larger than the model's window.
    ContextWindowExceeded,
    /// `INVALID_REQUEST`: the provider refused the request as malformed.
    InvalidRequest,
    /// `SERVER`: a provider-side failure (5xx, or an error inside the stream); retryable.
    Server,
    /// `HTTP_<status>`: any other non-2xx status.
    Http(u16),
    /// `TIMEOUT`: the stream stayed idle too long.
    Timeout,
    /// `STREAM_CLOSED`: the stream ended without its end marker.
    StreamClosed,
    /// `MALFORMED_RESPONSE`: a stream event was not what the protocol allows.
    MalformedResponse,
    /// `EMPTY_RESPONSE`: the stream ended with no content.
    EmptyResponse,
    /// `NETWORK`: the connection failed or was lost.
    Network,
    /// `UNSUPPORTED_CONTENT`: the route cannot send some content (images on a text-only path).
    UnsupportedContent,
    /// `CONTENT_FILTER`: the provider stopped the reply for its content policy.
    ContentFilter,
    /// `ABORTED`: the call was cancelled.
    Aborted,
    /// `MAX_TOKENS`: the summary hit the output cap.
    MaxTokens,
    /// `EMPTY_SUMMARY`: the reply held no summary text.
    EmptySummary,
    /// `SUMMARY_NOT_SMALLER`: the checkpoint would not be smaller than what it replaces.
    SummaryNotSmaller,
    /// A stop reason no protocol names, upper-cased as the reference does
    /// (`foo_bar` → `FOO_BAR`).
    Stopped(String),
}

impl ErrorCode {
    /// Whether a retry may succeed for this kind of failure by itself.
    fn is_retryable(&self) -> bool {
        matches!(self, ErrorCode::RateLimit | ErrorCode::Server)
    }

    /// The code for a provider's stop reason that means an error
    /// (`content_filter` → [`ErrorCode::ContentFilter`]).
    fn from_stop_reason(reason: &str) -> ErrorCode {
        match reason.to_uppercase().as_str() {
            "CONTENT_FILTER" => ErrorCode::ContentFilter,
            other => ErrorCode::Stopped(other.to_string()),
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            ErrorCode::Auth => "AUTH",
            ErrorCode::Quota => "QUOTA",
            ErrorCode::RateLimit => "RATE_LIMIT",
            ErrorCode::ContextWindowExceeded => "CONTEXT_WINDOW_EXCEEDED",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::Server => "SERVER",
            ErrorCode::Http(status) => return write!(f, "HTTP_{status}"),
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::StreamClosed => "STREAM_CLOSED",
            ErrorCode::MalformedResponse => "MALFORMED_RESPONSE",
            ErrorCode::EmptyResponse => "EMPTY_RESPONSE",
            ErrorCode::Network => "NETWORK",
            ErrorCode::UnsupportedContent => "UNSUPPORTED_CONTENT",
            ErrorCode::ContentFilter => "CONTENT_FILTER",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::MaxTokens => "MAX_TOKENS",
            ErrorCode::EmptySummary => "EMPTY_SUMMARY",
            ErrorCode::SummaryNotSmaller => "SUMMARY_NOT_SMALLER",
            ErrorCode::Stopped(reason) => reason,
        };
        f.write_str(name)
    }
}

/// Compare with a wire name (`code == "AUTH"`), as tests and scripts think of it.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        *other == self.to_string().as_str()
    }
}

impl ProviderError {
    /// A failure with a code and message, not retryable.
    fn new(code: ErrorCode, message: impl Into<String>) -> ProviderError {
        ProviderError {
            code,
            message: message.into(),
            status: None,
            retry_after: None,
            request_id: None,
            retryable: false,
        }
    }

    /// Scrub the key out of the message.
    fn scrubbed(mut self, key: &ApiKey) -> ProviderError {
        self.message = key.scrub(&self.message);
        self
    }
}

/// What a call reports while it runs (for a spinner).
#[derive(Debug, Clone)]
pub enum Progress {
    /// Request sent (attempt is 1-based).
    Sending {
        /// Attempt number.
        attempt: u32,
    },
    /// A retryable failure; waiting before the next attempt.
    Retrying {
        /// The attempt that failed.
        attempt: u32,
        /// The wait.
        delay: Duration,
        /// Why.
        reason: String,
    },
    /// Stream data arrived.
    Receiving {
        /// Bytes received so far.
        bytes: u64,
    },
}

/// Something that can run one completion call.
pub trait Summarizer {
    /// The request exactly as it would be sent (for `--dry-run` and logs).
    fn wire_request(&self, req: &CompletionRequest) -> Result<WireRequest, ProviderError>;

    /// Run the call, reporting progress.
    fn complete(
        &self,
        req: &CompletionRequest,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Completion, ProviderError>;

    /// Run the call, giving up with an `ABORTED` error as soon as `cancel`
    /// is requested. The default checks only before the call.
    fn complete_cancellable(
        &self,
        req: &CompletionRequest,
        progress: &mut dyn FnMut(&Progress),
        cancel: &Cancel,
    ) -> Result<Completion, ProviderError> {
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        self.complete(req, progress)
    }
}

/// The error of a cancelled call.
fn aborted() -> ProviderError {
    ProviderError::new(ErrorCode::Aborted, INTERRUPTED)
}

/// What the call's worker thread reports.
enum Worker {
    Progress(Progress),
    Done(Result<Completion, ProviderError>),
}

/// How often a waiting caller looks at the cancellation request.
const CANCEL_POLL: Duration = Duration::from_millis(25);

/// The HTTP summariser for an [`Endpoint`].
#[derive(Debug, Clone)]
pub struct HttpSummarizer {
    /// Where to send.
    pub endpoint: Endpoint,
}

impl Summarizer for HttpSummarizer {
    fn wire_request(&self, req: &CompletionRequest) -> Result<WireRequest, ProviderError> {
        match self.endpoint.protocol {
            Protocol::DeepSeek => deepseek::wire_request(&self.endpoint, req),
            Protocol::Anthropic => anthropic::wire_request(&self.endpoint, req),
        }
    }

    fn complete(
        &self,
        req: &CompletionRequest,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Completion, ProviderError> {
        let wire = self.wire_request(req)?;
        let key = &self.endpoint.api_key;
        let out = match self.endpoint.protocol {
            Protocol::DeepSeek => http::call(&self.endpoint, &wire, progress, &mut || {
                Box::new(deepseek::Decoder::default())
            }),
            Protocol::Anthropic => http::call(&self.endpoint, &wire, progress, &mut || {
                Box::new(anthropic::Decoder::default())
            }),
        };
        out.map(|c| scrub_completion(c, key))
            .map_err(|e| e.scrubbed(key))
    }

    /// The blocking HTTP call runs on a worker thread; this thread relays
    /// its progress and, once `cancel` is requested, stops waiting (the
    /// worker is abandoned; its connection ends with the process).
    fn complete_cancellable(
        &self,
        req: &CompletionRequest,
        progress: &mut dyn FnMut(&Progress),
        cancel: &Cancel,
    ) -> Result<Completion, ProviderError> {
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let me = self.clone();
        let owned = req.to_owned_request();
        let spawned = std::thread::Builder::new()
            .name("dsh-summarise".into())
            .spawn(move || {
                let relay = tx.clone();
                let mut report = |p: &Progress| {
                    let _ = relay.send(Worker::Progress(p.clone()));
                };
                let out = me.complete(&owned, &mut report);
                let _ = tx.send(Worker::Done(out));
            });
        if spawned.is_err() {
            return self.complete(req, progress);
        }
        loop {
            match rx.recv_timeout(CANCEL_POLL) {
                Ok(Worker::Progress(p)) => progress(&p),
                Ok(Worker::Done(out)) => return out,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ProviderError::new(
                        ErrorCode::Network,
                        "the summariser call ended without a result",
                    ));
                }
            }
            if cancel.is_cancelled() {
                return Err(aborted());
            }
        }
    }
}

/// A completion with every occurrence of the key (a provider may echo it in
/// the summary) replaced by `[REDACTED]`, so that nothing derived from it
/// and appended to the log (summary, checkpoint) carries the key.
fn scrub_completion(mut c: Completion, key: &ApiKey) -> Completion {
    if !key.scrubbable() {
        return c;
    }
    for b in &mut c.blocks {
        scrub_value(b, key);
    }
    if let Some(id) = &c.request_id {
        c.request_id = Some(key.scrub(id));
    }
    c
}

/// Scrub the key out of every string of `v` (keys of objects included),
/// leaving strings without it exactly as they were.
fn scrub_value(v: &mut OwnedValue, key: &ApiKey) {
    let scrub_str = |s: &mut crate::json::JStr<'static>| {
        let text = s.to_lossy();
        if key.find_in(&text).is_some() {
            let scrubbed = key.scrub(&text);
            if let Value::Str(j) = Value::from(scrubbed) {
                *s = j;
            }
        }
    };
    match v {
        Value::Str(s) => scrub_str(s),
        Value::Arr(a) => a.iter_mut().for_each(|x| scrub_value(x, key)),
        Value::Obj(o) => o.iter_mut().for_each(|(k, x)| {
            scrub_str(k);
            scrub_value(x, key);
        }),
        _ => {}
    }
}

/// Concatenate the `text` of every block of type `ty` (JavaScript string
/// concatenation, so split surrogate pairs rejoin).
pub(crate) fn concat_text(blocks: &[Value<'_>], ty: &str) -> JStr<'static> {
    let texts: Vec<&JStr<'_>> = blocks
        .iter()
        .filter(|b| b.get("type").is_some_and(|t| t.is_str(ty)))
        .filter_map(|b| b.get("text").and_then(|t| t.as_jstr()))
        .collect();
    JStr::concat(&texts)
}

/// Whether a block list holds an `image` block, at any tool-result depth.
pub(crate) fn has_image(blocks: &[Value<'_>]) -> bool {
    blocks.iter().any(|b| {
        b.get("type").is_some_and(|t| t.is_str("image"))
            || b.get("content")
                .and_then(|c| c.as_arr())
                .is_some_and(|c| has_image(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_print_their_wire_names() {
        let cases = [
            (ErrorCode::Auth, "AUTH"),
            (ErrorCode::ContextWindowExceeded, "CONTEXT_WINDOW_EXCEEDED"),
            (ErrorCode::Http(404), "HTTP_404"),
            (ErrorCode::SummaryNotSmaller, "SUMMARY_NOT_SMALLER"),
            (
                ErrorCode::from_stop_reason("content_filter"),
                "CONTENT_FILTER",
            ),
            (ErrorCode::from_stop_reason("pause_turn"), "PAUSE_TURN"),
        ];
        for (code, name) in cases {
            assert_eq!(code.to_string(), name);
            assert!(code == name);
        }
        assert_eq!(
            ErrorCode::from_stop_reason("content_filter"),
            ErrorCode::ContentFilter
        );
        assert!(ErrorCode::Server.is_retryable() && !ErrorCode::Auth.is_retryable());
    }

    #[test]
    fn scrubbing_takes_whole_tokens_of_long_keys_only() {
        let k = ApiKey::new("sk-abc12345");
        assert_eq!(k.scrub("key=sk-abc12345&x"), "key=[REDACTED]&x");
        assert_eq!(k.scrub("\"sk-abc12345\"."), "\"[REDACTED]\".");
        assert_eq!(
            k.scrub("sk-abc123456 xsk-abc12345"),
            "sk-abc123456 xsk-abc12345"
        );
        assert_eq!(k.scrub("sk-abc12345sk-abc12345"), "sk-abc12345sk-abc12345");
        // Keys of 1 to 7 characters are never scrubbed: they would corrupt text.
        let text = "Summary: the parser reads text; DeepSeek e a";
        for key in ["a", "e", "ab", "text", "Seek", "parser", "Summary"] {
            let k = ApiKey::new(key);
            assert!(!k.scrubbable(), "{key}");
            assert_eq!(k.scrub(text), text, "{key}");
            let mut v: OwnedValue = Value::parse(r#"[{"type":"text","text":"Summary a"}]"#)
                .unwrap()
                .into_owned();
            scrub_value(&mut v, &k);
            assert_eq!(v.to_json(), r#"[{"type":"text","text":"Summary a"}]"#);
        }
        // In a reply's blocks: every string, escapes and all.
        let k = ApiKey::new("sk-abc12345");
        let mut v: OwnedValue =
            Value::parse(r#"{"text":"line\nsk-abc12345\tend","sk-abc12345":["x sk-abc12345"]}"#)
                .unwrap()
                .into_owned();
        scrub_value(&mut v, &k);
        assert_eq!(
            v.to_json(),
            r#"{"text":"line\n[REDACTED]\tend","[REDACTED]":["x [REDACTED]"]}"#
        );
    }

    #[test]
    fn api_key_never_prints() {
        let k = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{k:?}"), "ApiKey([REDACTED])");
        assert_eq!(
            k.scrub("bad key sk-secret-123 given"),
            "bad key [REDACTED] given"
        );
        let e = ProviderError::new(ErrorCode::Auth, "Invalid key sk-secret-123").scrubbed(&k);
        assert!(!format!("{e:?} {e}").contains("sk-secret"));
    }

    #[test]
    fn usage_key_order() {
        let u = Usage {
            input_tokens: 172.0,
            output_tokens: 140.0,
            cache_read_tokens: Some(3328.0),
            cache_write_tokens: None,
            reasoning_tokens: Some(6.0),
        };
        assert_eq!(
            u.to_value().to_json(),
            r#"{"inputTokens":172,"outputTokens":140,"cacheReadTokens":3328,"reasoningTokens":6}"#
        );
    }

    #[test]
    fn wire_path_and_redaction() {
        let w = WireRequest {
            method: "POST",
            url: "http://127.0.0.1:9/chat/completions".into(),
            headers: vec![("authorization".into(), "Bearer sk-x".into())],
            body: Value::obj(),
        };
        assert_eq!(w.path(), "/chat/completions");
        assert!(!format!("{:?}", w.redacted_headers()).contains("sk-x"));
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn userinfo_is_redacted_from_urls() {
        assert_eq!(
            redact_url("http://user:secret@host:8/p?a@b"),
            "http://***@host:8/p?a@b"
        );
        assert_eq!(
            redact_url("https://api.deepseek.com"),
            "https://api.deepseek.com"
        );
        assert_eq!(redact_url("https://h/x@y"), "https://h/x@y");
        assert_eq!(
            redact_userinfo("POST http://u:pw@h/v1: refused", "http://u:pw@h"),
            "POST http://***@h/v1: refused"
        );
    }
}
