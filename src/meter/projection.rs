//! The three O(1) shadow-price projections of compaction §1.8
//! (`contextBreakdown`, `contextPressure`, `tokenUsage`), folded exactly as
//! `@deepseek-ai/dsh-token-meter` rc.8 folds them.
//!
//! Numbers here are JavaScript numbers (`f64`): provider usage is whatever the
//! log holds, and the folds add and subtract it as the reference does.

use schemars::JsonSchema;
use serde::Serialize;

use crate::event::{Event, Kind};
use crate::json::{OwnedValue, Value};
use crate::meter::assemble::Scalar;
use crate::meter::estimate::{system_tokens, tools_tokens};
use crate::request_header::canonical;

/// A claim armed by a `compaction/summary` or `compaction/prune` event.
#[derive(Debug, Clone)]
struct Claim {
    start: Scalar,
    end: Scalar,
    tokens: f64,
}

/// `{systemTokens, toolsTokens, messageTokens}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextBreakdown {
    /// System prompt price of the latest header.
    pub system_tokens: u64,
    /// Tool schema price of the latest header.
    pub tools_tokens: u64,
    /// The claim-fold surface total.
    pub message_tokens: f64,
}

/// `{contextWindow?, pressureTokens?, projectedTokens?}`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextPressure {
    /// Last-wins `request/context.data.contextWindow`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub context_window: Option<OwnedValue>,
    /// Prompt-side tokens of the latest usage sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub pressure_tokens: Option<f64>,
    /// `max(0, pressure + surface − sampledSurface)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub projected_tokens: Option<f64>,
}

/// Cumulative usage buckets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Σ `inputTokens`.
    pub uncached_input_tokens: f64,
    /// Σ `outputTokens`.
    pub output_tokens: f64,
    /// Σ `cacheReadTokens`.
    pub cache_read_tokens: f64,
    /// Σ `cacheWriteTokens`.
    pub cache_write_tokens: f64,
}

/// The projections' views at the end of the fold.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Projections {
    /// `contextBreakdown`.
    pub context_breakdown: ContextBreakdown,
    /// `contextPressure`.
    pub context_pressure: ContextPressure,
    /// `tokenUsage`.
    pub token_usage: TokenUsage,
}

/// Running state of the three folds.
#[derive(Debug, Default)]
pub(crate) struct ProjectionFold {
    claim: Option<Claim>,
    // contextBreakdown
    system_tokens: u64,
    /// A G3 `system/message` head's price: G0's `header.system`, moved.
    head_tokens: u64,
    tools_tokens: u64,
    message_tokens: f64,
    // contextPressure
    context_window: Option<OwnedValue>,
    pressure_tokens: Option<f64>,
    surface_tokens: f64,
    sampled_surface_tokens: Option<f64>,
    // tokenUsage
    totals: TokenUsage,
    last: Option<(Scalar, Scalar, TokenUsage)>,
    error: Option<(u64, String)>,
}

/// A JavaScript number member (`NaN` for anything else, as arithmetic on it gives).
fn num(v: Option<&Value<'_>>) -> f64 {
    match v {
        Some(Value::Num(n)) => *n,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => *b as u8 as f64,
        _ => f64::NAN,
    }
}

/// `x ?? 0` then used as a number.
fn num_or_zero(v: Option<&Value<'_>>) -> f64 {
    match v {
        None | Some(Value::Null) => 0.0,
        other => num(other),
    }
}

/// JavaScript's TypeError for `of.prop` when `of` is null or undefined.
fn read_err(of: Option<&Value<'_>>, prop: &str) -> String {
    let what = if matches!(of, Some(Value::Null)) {
        "null"
    } else {
        "undefined"
    };
    format!("Cannot read properties of {what} (reading '{prop}')")
}

fn buckets(usage: &Value<'_>) -> Result<TokenUsage, String> {
    if matches!(usage, Value::Null) {
        return Err(read_err(Some(usage), "inputTokens"));
    }
    Ok(TokenUsage {
        uncached_input_tokens: num(usage.get("inputTokens")),
        output_tokens: num(usage.get("outputTokens")),
        cache_read_tokens: num_or_zero(usage.get("cacheReadTokens")),
        cache_write_tokens: num_or_zero(usage.get("cacheWriteTokens")),
    })
}

fn buckets_eq(a: &TokenUsage, b: &TokenUsage) -> bool {
    a.uncached_input_tokens == b.uncached_input_tokens
        && a.output_tokens == b.output_tokens
        && a.cache_read_tokens == b.cache_read_tokens
        && a.cache_write_tokens == b.cache_write_tokens
}

/// Prompt-side pressure: input plus cache traffic, no output.
fn pressure_from(usage: &Value<'_>) -> f64 {
    num(usage.get("inputTokens"))
        + num_or_zero(usage.get("cacheReadTokens"))
        + num_or_zero(usage.get("cacheWriteTokens"))
}

impl ProjectionFold {
    /// The first error a projection threw, with the seq of its event. After
    /// it the folds stop (the reference's projection would refuse the event).
    pub(crate) fn error(&self) -> Option<&(u64, String)> {
        self.error.as_ref()
    }

    /// Fold one event; `node_tokens` is its node price when it is a surface event.
    pub(crate) fn apply(&mut self, ev: &Event<'_>, node_tokens: Option<u64>) {
        if self.error.is_some() {
            return;
        }
        if let Err(m) = self.apply_inner(ev, node_tokens) {
            self.error = Some((ev.seq, m));
        }
    }

    /// [`Self::apply`] for a G3 `system/message` that became the surface
    /// head: the system prompt changed, as a G0 request header's `system`
    /// would, so it prices the breakdown's system part, not the messages.
    pub(crate) fn apply_head(&mut self, tokens: u64) {
        if self.error.is_none() {
            self.head_tokens = tokens;
            self.claim = None;
        }
    }

    /// [`Self::apply`] for delta chunks (never a usage sample, never a
    /// surface change): all they do is disarm a shadow-price claim.
    pub(crate) fn apply_delta_chunks(&mut self) {
        if self.error.is_none() {
            self.claim = None;
        }
    }

    /// [`Self::apply`] for a usage chunk the loader described by its facts
    /// (`usage` holds the members the projections read): a usage sample,
    /// never a surface change.
    pub(crate) fn apply_usage_chunk(&mut self, seq: u64, turn: f64, step: f64, usage: &Value<'_>) {
        if self.error.is_some() {
            return;
        }
        match self.sample(Scalar::Num(turn), Scalar::Num(step), usage) {
            Ok(()) => self.claim = None,
            Err(m) => self.error = Some((seq, m)),
        }
    }

    /// A usage sample of step `turn`/`step`: pressure and token usage.
    fn sample(&mut self, turn: Scalar, step: Scalar, usage: &Value<'_>) -> Result<(), String> {
        if matches!(usage, Value::Null) {
            return Err(read_err(Some(usage), "inputTokens"));
        }
        self.pressure_tokens = Some(pressure_from(usage));
        self.sampled_surface_tokens = Some(self.surface_tokens);
        // tokenUsage
        let b = buckets(usage)?;
        let previous = match &self.last {
            Some((t, s, prev)) if t.strict_eq(&turn) && s.strict_eq(&step) => Some(*prev),
            _ => None,
        };
        let unchanged = previous.is_some_and(|p| buckets_eq(&p, &b));
        if !unchanged {
            let p = previous.unwrap_or_default();
            let t = &mut self.totals;
            t.uncached_input_tokens =
                t.uncached_input_tokens - p.uncached_input_tokens + b.uncached_input_tokens;
            t.output_tokens = t.output_tokens - p.output_tokens + b.output_tokens;
            t.cache_read_tokens = t.cache_read_tokens - p.cache_read_tokens + b.cache_read_tokens;
            t.cache_write_tokens =
                t.cache_write_tokens - p.cache_write_tokens + b.cache_write_tokens;
            self.last = Some((turn, step, b));
        }
        Ok(())
    }

    /// `foldSurfaceProjection`: (delta, claim after).
    fn surface_fold(
        &self,
        ev: &Event<'_>,
        node_tokens: Option<u64>,
    ) -> Result<(f64, Option<Claim>), String> {
        if matches!(ev.kind, Kind::CompactionSummary | Kind::CompactionPrune) {
            let data = ev.data();
            let range = data.get("shadowedRange");
            let Some(range) = range.filter(|r| !matches!(r, Value::Null)) else {
                return Err(read_err(range, "start"));
            };
            return Ok((
                0.0,
                Some(Claim {
                    start: Scalar::of(range.get("start")),
                    end: Scalar::of(range.get("end")),
                    tokens: num(data.get("shadowedTokenCount")),
                }),
            ));
        }
        let Some(tokens) = node_tokens else {
            return Ok((0.0, None));
        };
        let tokens = tokens as f64;
        match ev.surface_op() {
            Some(crate::event::SurfaceOp::Append) | None => Ok((tokens, None)),
            Some(crate::event::SurfaceOp::Replace(op)) => match &self.claim {
                None => Ok((0.0, None)),
                Some(c) => {
                    let (s, e) = (Scalar::Num(op.start as f64), Scalar::Num(op.end as f64));
                    if !c.start.strict_eq(&s) || !c.end.strict_eq(&e) {
                        return Err(format!(
                            "token surface: replace at seq {} over range {}-{} has no adjacent shadow price (armed claim covers {}-{})",
                            ev.seq,
                            op.start,
                            op.end,
                            c.start.display(),
                            c.end.display()
                        ));
                    }
                    Ok((tokens - c.tokens, None))
                }
            },
        }
    }

    fn apply_inner(&mut self, ev: &Event<'_>, node_tokens: Option<u64>) -> Result<(), String> {
        let (delta, claim) = self.surface_fold(ev, node_tokens)?;
        // contextBreakdown
        if ev.kind == Kind::RequestHeader {
            let h = canonical(ev.data().get("header").unwrap_or(&Value::Null));
            self.system_tokens = system_tokens(h.get("system"));
            self.tools_tokens = tools_tokens(h.get("tools"));
        }
        self.message_tokens += delta;
        // contextPressure
        if ev.kind == Kind::RequestContext {
            self.context_window = ev.data().get("contextWindow").map(|c| c.to_owned_value());
        }
        let sample: Option<(Scalar, Scalar, &Value<'_>)> = match ev.kind {
            Kind::AssistantChunk => {
                let chunk = ev.data().get("chunk");
                match chunk {
                    None | Some(Value::Null) => {
                        return Err(read_err(chunk, "type"));
                    }
                    Some(c) if c.get("type").is_some_and(|t| t.is_str("usage")) => {
                        match c.get("usage") {
                            Some(u) => Some((
                                Scalar::of(ev.data().get("turn")),
                                Scalar::of(ev.data().get("step")),
                                u,
                            )),
                            None => return Err(read_err(None, "inputTokens")),
                        }
                    }
                    _ => None,
                }
            }
            Kind::AssistantMessage => ev.data().get("usage").map(|u| {
                (
                    Scalar::of(ev.data().get("turn")),
                    Scalar::of(ev.data().get("step")),
                    u,
                )
            }),
            _ => None,
        };
        // G2+ embed their chunks: an attempt's or message's usage chunks
        // are sampled where G0 would have met them, just before it.
        for r in ev.stream() {
            if let crate::event::StreamRecord::Chunk(c) = r
                && c.get("type").is_some_and(|t| t.is_str("usage"))
            {
                let Some(u) = c.get("usage") else {
                    return Err(read_err(None, "inputTokens"));
                };
                let turn = Scalar::of(ev.data().get("turn"));
                let step = Scalar::of(ev.data().get("step"));
                self.sample(turn, step, u)?;
            }
        }
        if let Some((turn, step, usage)) = sample {
            self.sample(turn, step, usage)?;
        }
        if delta != 0.0 {
            self.surface_tokens += delta;
        }
        self.claim = claim;
        Ok(())
    }

    /// The views.
    pub(crate) fn view(&self) -> Projections {
        Projections {
            context_breakdown: ContextBreakdown {
                system_tokens: self.system_tokens + self.head_tokens,
                tools_tokens: self.tools_tokens,
                message_tokens: self.message_tokens,
            },
            context_pressure: ContextPressure {
                context_window: self.context_window.clone(),
                pressure_tokens: self.pressure_tokens,
                projected_tokens: match (self.pressure_tokens, self.sampled_surface_tokens) {
                    (Some(p), Some(s)) => Some(js_max0(p + self.surface_tokens - s)),
                    _ => None,
                },
            },
            token_usage: self.totals,
        }
    }
}

/// `Math.max(0, x)` (NaN stays NaN).
pub(crate) fn js_max0(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x < 0.0 {
        0.0
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::owned_event;

    fn ev(seq: u64, json: &str) -> crate::event::OwnedEvent {
        let v = Value::parse(json).unwrap().into_owned();
        let kind = Kind::of(&v.get("type").unwrap().as_str().unwrap());
        owned_event(kind, seq, v)
    }

    const USER: &str = r#"{"type":"user/message","surfaceOp":"append","data":{}}"#;

    #[test]
    fn claims_price_adjacent_replacements_and_drift_without_one() {
        let mut f = ProjectionFold::default();
        f.apply(&ev(0, USER), Some(10));
        f.apply(&ev(1, USER), Some(20));
        f.apply(
            &ev(2, r#"{"type":"compaction/prune","data":{"shadowedRange":{"start":1,"end":1},"shadowedTokenCount":20}}"#),
            None,
        );
        f.apply(
            &ev(3, r#"{"type":"tool/result","surfaceOp":{"op":"replace","start":1,"end":1},"data":{}}"#),
            Some(7),
        );
        assert_eq!(f.view().context_breakdown.message_tokens, 17.0);
        // A replace with no armed claim folds with zero delta (drift).
        f.apply(
            &ev(4, r#"{"type":"user/message","surfaceOp":{"op":"replace","start":0,"end":3},"data":{}}"#),
            Some(5),
        );
        assert_eq!(f.view().context_breakdown.message_tokens, 17.0);
        assert!(f.error().is_none());
    }

    #[test]
    fn a_claim_for_another_range_is_the_reference_error() {
        let mut f = ProjectionFold::default();
        f.apply(&ev(0, USER), Some(10));
        f.apply(
            &ev(1, r#"{"type":"compaction/summary","data":{"shadowedRange":{"start":7,"end":9},"shadowedTokenCount":3}}"#),
            None,
        );
        f.apply(
            &ev(2, r#"{"type":"user/message","surfaceOp":{"op":"replace","start":0,"end":0},"data":{}}"#),
            Some(4),
        );
        assert_eq!(
            f.error(),
            Some(&(
                2,
                "token surface: replace at seq 2 over range 0-0 has no adjacent shadow price (armed claim covers 7-9)".to_string()
            ))
        );
    }

    #[test]
    fn usage_samples_replace_within_a_step_and_pressure_is_prompt_side() {
        let mut f = ProjectionFold::default();
        f.apply(
            &ev(0, r#"{"type":"request/context","data":{"provider":"p","model":"m","contextWindow":4000}}"#),
            None,
        );
        f.apply(&ev(1, USER), Some(30));
        f.apply(
            &ev(2, r#"{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":100,"outputTokens":5,"cacheReadTokens":20}}}}"#),
            None,
        );
        f.apply(
            &ev(3, r#"{"type":"assistant/message","surfaceOp":"append","data":{"turn":1,"step":1,"usage":{"inputTokens":100,"outputTokens":9,"cacheReadTokens":20}}}"#),
            Some(12),
        );
        let v = f.view();
        // The message replaces the chunk sample of the same turn/step.
        assert_eq!(v.token_usage.output_tokens, 9.0);
        assert_eq!(v.token_usage.uncached_input_tokens, 100.0);
        // Pressure 120 sampled at surface 30, surface now 42: 132.
        assert_eq!(v.context_pressure.pressure_tokens, Some(120.0));
        assert_eq!(v.context_pressure.projected_tokens, Some(132.0));
        // A later request/context without a window removes it.
        f.apply(
            &ev(
                4,
                r#"{"type":"request/context","data":{"provider":"p","model":"m"}}"#,
            ),
            None,
        );
        assert!(f.view().context_pressure.context_window.is_none());
    }
}
