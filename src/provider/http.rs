//! The HTTP call: one streaming POST, with a connect timeout, the stream idle
//! watchdog (every read, comments included, resets it) and bounded retries
//! with exponential backoff on retryable failures (HTTP 429, 5xx, and
//! connection failures before any response). Nothing is retried once the
//! reply started streaming.

use super::ErrorCode;
use std::io::Read;
use std::time::Duration;

use super::assemble::Finish;
use super::classify::{self, ErrorBody};
use super::sse::{SseEvent, SseItem, SseParser};
use super::{Completion, Endpoint, Progress, ProviderError, Usage, WireRequest};
use crate::json::OwnedValue;

/// Assembled blocks, the finish and the last usage.
type Assembled = (Vec<OwnedValue>, Finish, Option<Usage>);

/// A protocol's stream translation.
pub(crate) trait StreamDecoder {
    /// `DeepSeek`, … (used in messages).
    fn label(&self) -> &'static str;
    /// The payload or event that ends a complete stream (`[DONE]`).
    fn end_marker(&self) -> &'static str;
    /// One SSE event; `Ok(true)` when the stream is complete.
    fn event(&mut self, ev: &SseEvent) -> Result<bool, ProviderError>;
    /// Normalise a non-2xx response.
    fn http_error(&self, status: u16, body: &ErrorBody) -> ProviderError;
    /// The assembled result of a complete stream.
    fn finish(self: Box<Self>) -> Assembled;
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

fn idle_timeout(label: &str, idle: Duration) -> ProviderError {
    ProviderError::new(
        ErrorCode::Timeout,
        format!("{label} stream idle timeout after {}ms", idle.as_millis()),
    )
}

fn transport_error(t: &ureq::Transport, label: &str, ep: &Endpoint) -> ProviderError {
    let io = std::error::Error::source(t).and_then(|s| s.downcast_ref::<std::io::Error>());
    if let Some(io) = io
        && is_timeout(io)
    {
        return if t.kind() == ureq::ErrorKind::ConnectionFailed {
            let mut e = ProviderError::new(
                ErrorCode::Network,
                format!(
                    "{label} connection timed out after {}ms",
                    ep.connect_timeout.as_millis()
                ),
            );
            e.retryable = true;
            e
        } else {
            idle_timeout(label, ep.idle_timeout)
        };
    }
    let retryable = matches!(
        t.kind(),
        ureq::ErrorKind::ConnectionFailed | ureq::ErrorKind::Io | ureq::ErrorKind::BadStatus
    );
    let msg = super::redact_userinfo(&format!("{label} request failed: {t}"), &ep.base_url);
    let mut e = ProviderError::new(ErrorCode::Network, msg);
    e.retryable = retryable;
    e
}

fn header(resp: &ureq::Response, name: &str) -> Option<String> {
    resp.header(name).map(str::to_string)
}

fn request_id(resp: &ureq::Response) -> Option<String> {
    header(resp, "x-request-id").or_else(|| header(resp, "x-deepseek-request-id"))
}

fn http_failure(dec: &dyn StreamDecoder, resp: ureq::Response) -> ProviderError {
    let status = resp.status();
    let retry_after = classify::retry_after(resp.header("retry-after"));
    let rid = request_id(&resp);
    let mut text = String::new();
    let _ = resp.into_reader().take(1 << 20).read_to_string(&mut text);
    let mut e = dec.http_error(status, &ErrorBody::parse(&text));
    e.retry_after = retry_after;
    e.request_id = rid;
    e
}

fn stream(
    ep: &Endpoint,
    resp: ureq::Response,
    mut dec: Box<dyn StreamDecoder>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<(Assembled, Option<String>), ProviderError> {
    let label = dec.label();
    let rid = request_id(&resp);
    let mut reader = resp.into_reader();
    let mut parser = SseParser::default();
    let mut buf = vec![0u8; 16 * 1024];
    let mut items = Vec::new();
    let mut received: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) => return Err(idle_timeout(label, ep.idle_timeout)),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(ProviderError::new(
                    ErrorCode::StreamClosed,
                    format!(
                        "SSE stream ended without {} (the connection closed mid-transfer)",
                        dec.end_marker()
                    ),
                ));
            }
            Err(e) => {
                return Err(ProviderError::new(
                    ErrorCode::Network,
                    format!("{label} connection lost while streaming the reply: {e}"),
                ));
            }
        };
        if n == 0 {
            parser.finish(&mut items);
        } else {
            received += n as u64;
            progress(&Progress::Receiving { bytes: received });
            parser.feed(&buf[..n], &mut items);
        }
        for it in items.drain(..) {
            if let SseItem::Event(ev) = it
                && dec.event(&ev)?
            {
                return Ok((dec.finish(), rid));
            }
        }
        if n == 0 {
            return Err(ProviderError::new(
                ErrorCode::StreamClosed,
                format!("SSE stream ended without {}", dec.end_marker()),
            ));
        }
    }
}

/// Send `wire` and decode the streamed reply, retrying retryable failures
/// up to `ep.max_retries` times.
pub(crate) fn call(
    ep: &Endpoint,
    wire: &WireRequest,
    progress: &mut dyn FnMut(&Progress),
    make: &mut dyn FnMut() -> Box<dyn StreamDecoder>,
) -> Result<Completion, ProviderError> {
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(ep.connect_timeout)
        .timeout_read(ep.idle_timeout)
        .timeout_write(ep.idle_timeout)
        .redirects(0)
        .build();
    let body = wire.body.to_json();
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        progress(&Progress::Sending { attempt });
        let dec = make();
        let mut req = agent.request(wire.method, &wire.url);
        for (k, v) in &wire.headers {
            req = req.set(k, v);
        }
        let result = match req.send_bytes(body.as_bytes()) {
            Ok(resp) if (200..300).contains(&resp.status()) => stream(ep, resp, dec, progress),
            Ok(resp) => Err(http_failure(&*dec, resp)),
            Err(ureq::Error::Status(_, resp)) => Err(http_failure(&*dec, resp)),
            Err(ureq::Error::Transport(t)) => Err(transport_error(&t, dec.label(), ep)),
        };
        match result {
            Ok(((blocks, finish, usage), request_id)) => {
                return Ok(Completion {
                    blocks,
                    finish,
                    usage,
                    request_id,
                    attempts: attempt,
                });
            }
            Err(e) if e.retryable && attempt <= ep.max_retries => {
                let backoff = ep.retry_base.saturating_mul(1u32 << (attempt - 1).min(16));
                let delay = e.retry_after.unwrap_or(backoff).min(ep.retry_max_delay);
                let reason = match e.status {
                    Some(s) => format!("HTTP {s} {}", e.code),
                    None => e.code.to_string(),
                };
                progress(&Progress::Retrying {
                    attempt,
                    delay,
                    reason,
                });
                std::thread::sleep(delay);
            }
            Err(e) => return Err(e),
        }
    }
}
