//! Error normalisation (compaction §6.5, §6.7): HTTP status plus the
//! provider's `{error:{message?, type?, code?}}` body → a DSH error code.

use super::ErrorCode;
use std::sync::OnceLock;
use std::time::Duration;

use regex::Regex;

use super::ProviderError;
use crate::json::Value;

fn context_patterns() -> &'static [Regex] {
    static P: OnceLock<Vec<Regex>> = OnceLock::new();
    P.get_or_init(|| {
        [
            r"(?i)(?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-](?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)(?:$|[^a-z0-9])",
            r"(?i)(?:maximum|max)(?:\s+allowed|\s+supported)?\s+context\s+(?:length|window)",
            r"(?i)(?:request|prompt|input|messages?)\s+(?:(?:is|are)\s+)?too\s+(?:large|long)\s+for\s+(?:(?:this|the)\s+)?(?:model(?:'s)?\s+)?context(?:\s+window)?",
            r"(?i)(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model",
            r"(?i)(?:input|prompt|request|messages?).{0,40}(?:exceed(?:s|ed)?|overflows?|is larger than).{0,40}(?:the\s+)?(?:model(?:'s)?\s+)?context(?:\s+length|\s+window)?",
        ]
        .iter()
        .map(|p| Regex::new(p).expect("valid pattern"))
        .collect()
    })
}

fn quota_patterns() -> &'static [Regex] {
    static P: OnceLock<Vec<Regex>> = OnceLock::new();
    P.get_or_init(|| {
        [
            r"(?i)insufficient\s+(?:quota|balance|credits?)",
            r"(?i)(?:quota|usage\s+limit)\s+(?:exceeded|exhausted|reached)",
            r"(?i)exceed(?:ed|s)?\s+(?:(?:your|the)\s+)?(?:current\s+)?quota",
            r"(?i)(?:balance|credits?)\s+(?:exhausted|depleted)",
            r"(?i)out\s+of\s+(?:credits?|budget)",
        ]
        .iter()
        .map(|p| Regex::new(p).expect("valid pattern"))
        .collect()
    })
}

/// `isContextWindowExceededError` on a message.
fn is_context_window_exceeded(text: &str) -> bool {
    context_patterns().iter().any(|r| r.is_match(text))
}

/// The quota wording check.
fn is_quota(text: &str) -> bool {
    quota_patterns().iter().any(|r| r.is_match(text))
}

/// The parts of an error body.
#[derive(Debug, Default, Clone)]
pub(crate) struct ErrorBody {
    /// `error.message`
    pub message: Option<String>,
    /// `error.type`
    pub kind: Option<String>,
    /// `error.code` (string or number)
    pub code: Option<String>,
}

impl ErrorBody {
    /// Read `{error:{message, type, code}}` from a body text (anything else
    /// gives empty parts).
    pub(crate) fn parse(body: &str) -> ErrorBody {
        let Ok(v) = Value::parse(body) else {
            return ErrorBody::default();
        };
        Self::from_value(v.get("error").unwrap_or(&Value::Null))
    }

    /// Read the parts from an `error` object.
    pub(crate) fn from_value(e: &Value<'_>) -> ErrorBody {
        let s = |k: &str| match e.get(k) {
            Some(Value::Str(s)) if !s.is_empty() => Some(s.to_lossy().into_owned()),
            Some(Value::Num(n)) => Some(Value::Num(*n).to_json()),
            _ => None,
        };
        ErrorBody {
            message: s("message"),
            kind: s("type"),
            code: s("code"),
        }
    }

    /// `[code, type, message]` joined by spaces, empty parts skipped.
    fn detail(&self) -> String {
        [&self.code, &self.kind, &self.message]
            .iter()
            .filter_map(|p| p.as_deref())
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Parse a `retry-after` header (seconds; HTTP dates are not used by these
/// providers and are ignored).
pub(crate) fn retry_after(value: Option<&str>) -> Option<Duration> {
    let s = value?.trim();
    let secs: f64 = s.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

fn error(code: ErrorCode, message: String, status: u16) -> ProviderError {
    let retryable = code.is_retryable();
    ProviderError {
        code,
        message,
        status: Some(status),
        retry_after: None,
        request_id: None,
        retryable,
    }
}

/// The DeepSeek chat-completions classification of a non-2xx response.
pub(crate) fn deepseek_http(status: u16, body: &ErrorBody) -> ProviderError {
    let detail = body.detail();
    let code = if status == 401 || status == 403 {
        ErrorCode::Auth
    } else if status == 413 {
        ErrorCode::InvalidRequest
    } else if is_quota(&detail) {
        ErrorCode::Quota
    } else if status == 429 {
        ErrorCode::RateLimit
    } else if status == 400 && is_context_window_exceeded(&detail) {
        ErrorCode::ContextWindowExceeded
    } else if status == 400 {
        ErrorCode::InvalidRequest
    } else if status >= 500 {
        ErrorCode::Server
    } else {
        ErrorCode::Http(status)
    };
    let message = body
        .message
        .clone()
        .unwrap_or_else(|| format!("DeepSeek API error (HTTP {status})"));
    error(code, message, status)
}

/// The Anthropic-compatible classification (§6.7): the error `type` counts
/// too, and context wording wins for any status.
pub(crate) fn anthropic_http(status: u16, body: &ErrorBody) -> ProviderError {
    let detail = body.detail();
    let kind = body.kind.as_deref().unwrap_or("");
    let code = if matches!(kind, "authentication_error" | "permission_error")
        || status == 401
        || status == 403
    {
        ErrorCode::Auth
    } else if status == 402 || is_quota(&detail) {
        ErrorCode::Quota
    } else if kind == "rate_limit_error" || status == 429 {
        ErrorCode::RateLimit
    } else if is_context_window_exceeded(&detail) {
        ErrorCode::ContextWindowExceeded
    } else if kind == "invalid_request_error" || status == 400 || status == 413 {
        ErrorCode::InvalidRequest
    } else if matches!(kind, "api_error" | "overloaded_error") || status >= 500 {
        ErrorCode::Server
    } else {
        ErrorCode::Http(status)
    };
    let message = body
        .message
        .clone()
        .unwrap_or_else(|| format!("Anthropic-compatible API error (HTTP {status})"));
    error(code, message, status)
}

/// Classify an error object that arrived inside a stream (no status).
pub(crate) fn stream_error(body: &ErrorBody, anthropic: bool) -> ProviderError {
    let detail = body.detail();
    let kind = body.kind.as_deref().unwrap_or("");
    let code = if is_context_window_exceeded(&detail) {
        ErrorCode::ContextWindowExceeded
    } else if is_quota(&detail) {
        ErrorCode::Quota
    } else if anthropic && matches!(kind, "authentication_error" | "permission_error") {
        ErrorCode::Auth
    } else if anthropic && kind == "rate_limit_error" {
        ErrorCode::RateLimit
    } else if anthropic && kind == "invalid_request_error" {
        ErrorCode::InvalidRequest
    } else {
        ErrorCode::Server
    };
    ProviderError::new(
        code,
        body.message
            .clone()
            .unwrap_or_else(|| "the provider reported an error in the stream".to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(msg: &str) -> ErrorBody {
        ErrorBody {
            message: Some(msg.to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn context_wording() {
        for yes in [
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens.",
            "context_length_exceeded",
            "Context window exceeded",
            "prompt is too long for the model's context window",
            "Input is too long for this model",
            "The input (140000 tokens) exceeds the model's context length",
            "max supported context window reached",
        ] {
            assert!(is_context_window_exceeded(yes), "{yes}");
        }
        for no in ["rate limited", "invalid json", "contextual lengthy"] {
            assert!(!is_context_window_exceeded(no), "{no}");
        }
    }

    #[test]
    fn deepseek_order() {
        let ctx = body("This model's maximum context length is 131072 tokens.");
        assert_eq!(deepseek_http(400, &ctx).code, "CONTEXT_WINDOW_EXCEEDED");
        assert_eq!(
            deepseek_http(400, &ctx).message,
            ctx.message.clone().unwrap()
        );
        assert_eq!(deepseek_http(413, &ctx).code, "INVALID_REQUEST");
        assert_eq!(deepseek_http(401, &ctx).code, "AUTH");
        assert_eq!(deepseek_http(429, &body("slow down")).code, "RATE_LIMIT");
        assert!(deepseek_http(429, &body("slow down")).retryable);
        assert_eq!(
            deepseek_http(429, &body("Insufficient Balance")).code,
            ErrorCode::Quota
        );
        assert_eq!(
            deepseek_http(402, &body("Insufficient Balance")).code,
            ErrorCode::Quota
        );
        assert_eq!(deepseek_http(400, &body("bad")).code, "INVALID_REQUEST");
        let e = deepseek_http(503, &ErrorBody::default());
        assert_eq!(
            (e.code.to_string().as_str(), e.message.as_str()),
            ("SERVER", "DeepSeek API error (HTTP 503)")
        );
        assert!(e.retryable);
        assert_eq!(deepseek_http(404, &ErrorBody::default()).code, "HTTP_404");
    }

    #[test]
    fn detail_and_parse() {
        let b = ErrorBody::parse(r#"{"error":{"message":"m","type":"t","code":42}}"#);
        assert_eq!(b.detail(), "42 t m");
        assert_eq!(ErrorBody::parse("not json").detail(), "");
        assert_eq!(retry_after(Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(Some("soon")), None);
    }

    #[test]
    fn anthropic_types() {
        let t = |kind: &str, status: u16| {
            anthropic_http(
                status,
                &ErrorBody {
                    kind: Some(kind.into()),
                    message: Some("x".into()),
                    code: None,
                },
            )
            .code
        };
        assert_eq!(t("authentication_error", 400), "AUTH");
        assert_eq!(t("rate_limit_error", 400), "RATE_LIMIT");
        assert_eq!(t("overloaded_error", 529), "SERVER");
        assert_eq!(t("invalid_request_error", 422), "INVALID_REQUEST");
        let ctx = ErrorBody {
            kind: Some("invalid_request_error".into()),
            message: Some("prompt is too long for the model's context window".into()),
            code: None,
        };
        assert_eq!(anthropic_http(413, &ctx).code, "CONTEXT_WINDOW_EXCEEDED");
    }
}
