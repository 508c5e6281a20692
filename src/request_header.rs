//! The request-header fold and the latest `request/context` (session-log §9).
//!
//! Every `request/header` is a full snapshot; the fold keeps the latest one in
//! canonical form (empty `system`/`tools` and all-false `adapterDefaults`
//! dropped, unknown keys dropped).
//!
//! ```
//! let src = dsh::LogSource::File("samples/measure-example.jsonl".into());
//! let log = dsh::log::load(&src, &dsh::LoadOptions::default(), &mut |_: &dsh::Event<'_>, _: &dsh::log::Folded<'_>| {})?;
//! // The folded header names the routed target.
//! let (provider, model) = log.headers.route().expect("a request/header");
//! println!("routed to {provider}/{model}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::event::{Event, Kind};
use crate::json::{OwnedValue, Value};

/// One `request/header` event: where and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct HeaderEvent {
    /// Its seq.
    pub seq: u64,
    /// Why the header was sent again: `initial`, `resume`, `change` (as
    /// logged).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
}

/// The folded request header and context.
#[derive(Debug, Clone, Default)]
pub struct HeaderFold {
    /// Canonical form of the latest header (`foldRequestHeader`).
    pub header: Option<OwnedValue>,
    /// Seq of the latest header.
    pub header_seq: Option<u64>,
    /// Every header event.
    pub events: Vec<HeaderEvent>,
    /// The latest `request/context` data, as logged.
    pub context: Option<OwnedValue>,
    /// Its seq.
    pub context_seq: Option<u64>,
}

/// JavaScript `x?.length > 0` for a string or array.
fn has_length(v: Option<&Value<'_>>) -> bool {
    match v {
        Some(Value::Arr(a)) => !a.is_empty(),
        Some(Value::Str(s)) => !s.is_empty(),
        _ => false,
    }
}

/// Canonicalise a logged `header` object (§9.3).
pub fn canonical(h: &Value<'_>) -> OwnedValue {
    let mut out = Value::obj();
    if let Some(c) = h.get("config") {
        out = out.with("config", c.to_owned_value());
    }
    if let Some(ad) = h.get("adapterDefaults")
        && (ad.get("reasoningEffort").is_some_and(|v| v.is_true())
            || ad.get("maxTokens").is_some_and(|v| v.is_true()))
    {
        out = out.with("adapterDefaults", ad.to_owned_value());
    }
    if let Some(s @ Value::Str(j)) = h.get("system")
        && !j.is_empty()
    {
        out = out.with("system", s.to_owned_value());
    }
    if has_length(h.get("tools")) {
        out = out.with("tools", h.get("tools").unwrap().to_owned_value());
    }
    out
}

/// `headersEqual` of the token meter (compaction §1.6): config fields,
/// adapter-default markers, system, and tools by their JSON text.
pub(crate) fn headers_equal(a: Option<&Value<'_>>, b: Option<&Value<'_>>) -> bool {
    let (a, b) = match (a, b) {
        (None, None) => return true,
        (Some(a), Some(b)) => (a, b),
        _ => return false,
    };
    let field_eq = |x: Option<&Value<'_>>, y: Option<&Value<'_>>| match (x, y) {
        (None, None) => true,
        (Some(x), Some(y)) => js_strict_eq(x, y),
        _ => false,
    };
    let ca = a.get("config");
    let cb = b.get("config");
    for f in [
        "provider",
        "model",
        "reasoningEffort",
        "temperature",
        "maxTokens",
    ] {
        if !field_eq(ca.and_then(|c| c.get(f)), cb.and_then(|c| c.get(f))) {
            return false;
        }
    }
    let sa = ca.and_then(|c| c.get("stop"));
    let sb = cb.and_then(|c| c.get("stop"));
    match (sa, sb) {
        (None, None) => {}
        (Some(Value::Arr(x)), Some(Value::Arr(y))) => {
            if x.len() != y.len() || !x.iter().zip(y).all(|(p, q)| js_strict_eq(p, q)) {
                return false;
            }
        }
        _ => return false,
    }
    for m in ["reasoningEffort", "maxTokens"] {
        let x = a.get("adapterDefaults").and_then(|d| d.get(m));
        let y = b.get("adapterDefaults").and_then(|d| d.get(m));
        if !field_eq(x, y) {
            return false;
        }
    }
    if !field_eq(a.get("system"), b.get("system")) {
        return false;
    }
    match (
        a.get("tools").and_then(|t| t.as_arr()),
        b.get("tools").and_then(|t| t.as_arr()),
    ) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_json() == q.to_json())
        }
        (Some(x), None) | (None, Some(x)) => x.is_empty(),
    }
}

/// JavaScript `===` for scalars; objects compare by identity, which for two
/// separately parsed values means never equal.
fn js_strict_eq(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Num(x), Value::Num(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        _ => false,
    }
}

impl HeaderFold {
    /// The oracle's `header` shape: `{"header", "headerSeq", "headerEvents":
    /// [{"seq","reason"}], "context", "contextSeq"}` (`null` when absent).
    pub fn to_json(&self) -> OwnedValue {
        let opt = |v: Option<u64>| v.map(Value::from).unwrap_or(Value::Null);
        let events: Vec<Value<'static>> = self
            .events
            .iter()
            .map(|e| {
                let mut v = Value::obj().with("seq", e.seq.into());
                if let Some(r) = &e.reason {
                    v = v.with("reason", r.as_str().into());
                }
                v
            })
            .collect();
        Value::obj()
            .with("header", self.header.clone().unwrap_or(Value::Null))
            .with("headerSeq", opt(self.header_seq))
            .with("headerEvents", Value::Arr(events))
            .with("context", self.context.clone().unwrap_or(Value::Null))
            .with("contextSeq", opt(self.context_seq))
    }

    /// Observe one event.
    pub(crate) fn observe(&mut self, ev: &Event<'_>) {
        match ev.kind {
            Kind::RequestHeader => {
                let d = ev.data();
                self.header = Some(canonical(d.get("header").unwrap_or(&Value::Null)));
                self.header_seq = Some(ev.seq);
                self.events.push(HeaderEvent {
                    seq: ev.seq,
                    reason: d
                        .get("reason")
                        .and_then(|r| r.as_str())
                        .map(|r| r.into_owned()),
                });
            }
            Kind::RequestContext => {
                self.context = Some(ev.data().to_owned_value());
                self.context_seq = Some(ev.seq);
            }
            _ => {}
        }
    }

    /// `{provider, model}` of the routed target.
    pub fn route(&self) -> Option<(String, String)> {
        let c = self.header.as_ref()?.get("config")?;
        Some((
            c.get("provider")?.as_str()?.into_owned(),
            c.get("model")?.as_str()?.into_owned(),
        ))
    }
}
