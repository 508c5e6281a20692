//! `measure().totalTokens` as a fold (compaction §1.5–§1.6), for the
//! pressure path: the latest canonical header, the open step and the
//! provider-usage anchor, including rc.8's step-start double count.

use super::session::PressureMeter;
use crate::event::{Event, Kind};
use crate::json::{OwnedValue, Value};
use crate::log::Folded;
use crate::meter::estimate::{price_blocks, system_tokens, tools_tokens};
use crate::provider::assemble::{Assembler, Chunk, Finish, units_of};
use crate::request_header::{canonical, headers_equal};

struct Anchor {
    header: Option<OwnedValue>,
    surface: u64,
    baseline: f64,
}

/// The anchor meter.
#[derive(Default)]
pub struct AnchorMeter {
    header: Option<OwnedValue>,
    step: Option<(f64, f64, u64)>,
    chunks: Vec<(u64, f64, f64, OwnedValue)>,
    anchor: Option<Anchor>,
    surface: u64,
}

fn estimate_header(h: Option<&Value<'_>>) -> u64 {
    match h {
        Some(h) => system_tokens(h.get("system")) + tools_tokens(h.get("tools")),
        None => 0,
    }
}

fn usage_tokens(u: &Value<'_>) -> f64 {
    let n = |k: &str| u.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    n("inputTokens") + n("cacheReadTokens") + n("cacheWriteTokens") + n("outputTokens")
}

/// A logged `assistant/chunk.data.chunk` as an assembler chunk.
pub fn logged_chunk(c: &Value<'_>) -> Option<Chunk> {
    let index = c.get("index").and_then(|i| i.as_count()).unwrap_or(0);
    let s = |k: &str| c.get(k).and_then(|v| v.as_str()).map(|v| v.into_owned());
    Some(match &*c.get("type")?.as_str()? {
        "block-start" => Chunk::BlockStart {
            index,
            block_type: s("blockType").unwrap_or_default(),
        },
        "text-delta" => Chunk::TextDelta {
            index,
            text: units_of(c.get("text")),
        },
        "reasoning-delta" => Chunk::ReasoningDelta {
            index,
            text: units_of(c.get("text")),
        },
        "tool-call-delta" => Chunk::ToolCallDelta {
            index,
            id: s("id"),
            name: s("name"),
            arguments: units_of(c.get("argumentsDelta")),
        },
        "block-end" => Chunk::BlockEnd {
            index,
            block: c.get("block").map(|b| b.to_owned_value()),
        },
        "finish" => Chunk::Finish(
            match &*c
                .get("reason")
                .and_then(|r| r.get("kind"))
                .and_then(|k| k.as_str())
                .unwrap_or_default()
            {
                "max-tokens" => Finish::MaxTokens,
                "tool-calls" => Finish::ToolCalls,
                _ => Finish::Stop,
            },
        ),
        _ => return None,
    })
}

impl PressureMeter for AnchorMeter {
    fn observe(&mut self, ev: &Event<'_>, folded: &Folded<'_>) -> Result<(), String> {
        let seq = ev.seq;
        let ts = (ev.turn().unwrap_or(f64::NAN), ev.step().unwrap_or(f64::NAN));
        match ev.kind {
            Kind::RequestHeader => {
                self.header = Some(canonical(ev.data().get("header").unwrap_or(&Value::Null)));
            }
            Kind::StepStart => {
                if let Some((t, s, _)) = self.step {
                    return Err(format!(
                        "token meter: step/start at seq {seq} arrived before turn {t}/step {s} ended"
                    ));
                }
                self.step = Some((ts.0, ts.1, self.surface));
                self.chunks.clear();
            }
            Kind::StepEnd => {
                match self.step {
                    Some((t, s, _)) if t == ts.0 && s == ts.1 => {}
                    _ => {
                        return Err(format!(
                            "token meter: step/end at seq {seq} has no matching step/start event"
                        ));
                    }
                }
                self.step = None;
                self.chunks.clear();
            }
            Kind::AssistantChunk => {
                if let Some(c) = ev.data().get("chunk") {
                    self.chunks.push((seq, ts.0, ts.1, c.to_owned_value()));
                }
            }
            Kind::AssistantMessage => {
                let Some((t, s, at_start)) = self.step.filter(|(t, s, _)| *t == ts.0 && *s == ts.1)
                else {
                    return Err(format!(
                        "token meter: assistant/message at seq {seq} has no matching step/start event"
                    ));
                };
                let event_tokens = folded.applied.map_or(0, |a| a.tokens);
                let usage = ev.data().get("usage").filter(|u| u.is_obj());
                let (anchor_surface, baseline) = match (usage, &self.header) {
                    (Some(u), Some(h)) => {
                        let output = match ev.sources() {
                            None => event_tokens,
                            Some(srcs) => {
                                let mut asm = Assembler::default();
                                for src in srcs {
                                    let Some((_, ct, cs, c)) =
                                        self.chunks.iter().find(|(cq, ..)| *cq == src)
                                    else {
                                        return Err(format!(
                                            "token meter: assistant/message at seq {seq} source seq {src} is not assistant/chunk"
                                        ));
                                    };
                                    if *ct != t || *cs != s {
                                        return Err(format!(
                                            "token meter: assistant/message at seq {seq} source seq {src} belongs to another step"
                                        ));
                                    }
                                    if let Some(ch) = logged_chunk(c) {
                                        asm.push(ch);
                                    }
                                }
                                let (blocks, _, _) = asm.finish();
                                if blocks.is_empty() {
                                    0
                                } else {
                                    price_blocks(Some(&Value::Arr(blocks))) + 4
                                }
                            }
                        };
                        let anchor_surface = at_start + output;
                        let provider = usage_tokens(u);
                        let estimated = (estimate_header(Some(h)) + anchor_surface) as f64;
                        (
                            anchor_surface,
                            if provider >= estimated {
                                provider
                            } else {
                                estimated
                            },
                        )
                    }
                    _ => {
                        let anchor_surface = at_start + event_tokens;
                        let b = estimate_header(self.header.as_ref()) + anchor_surface;
                        (anchor_surface, b as f64)
                    }
                };
                self.anchor = Some(Anchor {
                    header: self.header.clone(),
                    surface: anchor_surface,
                    baseline,
                });
            }
            _ => {}
        }
        self.surface = folded.surface.tokens;
        Ok(())
    }

    fn total_tokens(&self) -> u64 {
        if let Some(a) = &self.anchor
            && headers_equal(a.header.as_ref(), self.header.as_ref())
        {
            let t = a.baseline + self.surface as f64 - a.surface as f64;
            return t.max(0.0) as u64;
        }
        match &self.header {
            None if self.surface == 0 => 0,
            h => estimate_header(h.as_ref()) + self.surface,
        }
    }
}
